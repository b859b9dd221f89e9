//! Latent 2-D vector-field systems observed through a (possibly nonlinear) map: the "true
//! environment" of actdyn (Active Dynamics, github `hyungju-jeon/active-dynamics`; reference
//! commit `ceeba42`, called C below, and `main` `d406ea6`, called H). See
//! `reference/actdyn.md` §1.1 and the golden fixtures `actdyn-golden/env_*.json`.
//!
//! | | |
//! |---|---|
//! | latent state | `z ∈ ℝ²` (f64) |
//! | observation | `y = h(z) (+ noise)`, `N_y` f64 values ([`ObservationModel`]; default log-linear, 50 outputs, noiseless) |
//! | action | `u ∈ ℝ²` (`[f64; 2]`), mapped through the [`ActionModel`] (default identity) |
//! | action box | `[−0.1, 0.1]²`, **not applied by the env**: in actdyn only the policy clips |
//! | reward | 0 |
//! | terminated | never |
//! | truncated | `max_episode_steps` (default none: one long episode, as in actdyn) |
//! | reset | `z₀ = 2·U[0, 1)² − 1` |
//!
//! The step is Euler–Maruyama with injected noise `ε ~ N(0, I)` ([`step_latent`]):
//! `z' = (z + (F(z) + g(u))·dt) + (ε·√Q)·dt` under C's convention
//! ([`NoiseConvention::SqrtQTimesDt`], σ = √Q·dt, the default), or
//! `z' = (z + (F(z) + g(u))·dt) + ε·√(Q·dt)` under H's ([`NoiseConvention::SqrtOfQDt`]).
//!
//! Fields ([`VectorField`]): the limit cycle (C's default, α auto-scaled over the grid exactly
//! as C does), the double limit cycle, the GP multi-attractor (grids interpolated bilinearly
//! with C's axis transposition, `[v, u]` swap and float32 output), and H's Van der Pol and
//! Duffing oscillators.

use crate::error::EnvError;
use kestrel_core::{Env, FromInvalid, Key, Rng, Space, Spec};

mod action;
mod common;
mod fields;
mod generator;
mod observation;

use crate::error::positive;
pub use action::ActionModel;
pub use common::{LATENT_DIM, MAX_DIM, MAX_GP_GRID, MAX_GRID, MAX_HIDDEN, linspace};
pub use fields::{
    DoubleLimitCycle, Duffing, LimitCycle, NoiseConvention, Snowman, VanDerPol, VectorField,
    reset_latent, step_latent,
};
pub use generator::{MultiAttractor, MultiAttractorConfig};
pub use observation::{Linear, Mlp, ObsMap, ObsNoise, ObservationModel, PoissonVariant};

/// Everything one tunes about a [`VectorFieldEnv`]. `Default` is actdyn's main experiment (C):
/// limit cycle, `dt = 0.1`, `Q = 0.1` with σ = √Q·dt, log-linear 50 outputs (weights from a
/// fixed key), identity actions, box `[−0.1, 0.1]²`, no episode limit.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorFieldParams {
    /// The drift F.
    pub field: VectorField,
    /// Time step.
    pub dt: f64,
    /// Process noise scale Q (actdyn's `env_noise_scale`).
    pub noise_scale: f64,
    /// How σ follows from Q and dt.
    pub noise_convention: NoiseConvention,
    /// The observation model.
    pub obs: ObservationModel,
    /// The action model (its input size must be 2, the env's action).
    pub action: ActionModel,
    /// The action box is `[−action_bound, action_bound]²`. Descriptive only: the env does not
    /// clip (in actdyn the policy clips).
    pub action_bound: f64,
    /// Episode limit applied by `VecEnv`; `None` for one endless episode.
    pub max_episode_steps: Option<u32>,
}

impl Default for VectorFieldParams {
    fn default() -> Self {
        VectorFieldParams {
            field: VectorField::default(),
            dt: 0.1,
            noise_scale: 0.1,
            noise_convention: NoiseConvention::SqrtQTimesDt,
            obs: ObservationModel::default(),
            action: ActionModel::Identity,
            action_bound: 0.1,
            max_episode_steps: None,
        }
    }
}

impl VectorFieldParams {
    /// Checks every parameter; the error names the field and the value.
    pub fn validate(&self) -> Result<(), EnvError> {
        self.field.validate()?;
        positive("dt", self.dt)?;
        if !(self.noise_scale.is_finite() && self.noise_scale >= 0.0) {
            return Err(EnvError::invalid("noise_scale", self.noise_scale, "a finite number >= 0"));
        }
        self.obs.validate()?;
        self.action.validate()?;
        if self.action.action_dim() != LATENT_DIM {
            return Err(EnvError::invalid(
                "action in_dim",
                self.action.action_dim(),
                "2 (the env's action is [f64; 2])",
            ));
        }
        positive("action_bound", self.action_bound)?;
        if self.max_episode_steps == Some(0) {
            return Err(EnvError::invalid("max_episode_steps", 0, "None or at least 1"));
        }
        Ok(())
    }

    /// Steps rows with injected noise: `z` (`n × 2`) is advanced in place, `u` is `n × A`
    /// (raw actions, mapped by the action model), `eps` is `n × 2`, and `drift` (`n × 2`)
    /// receives `F(z)` before the step.
    ///
    /// # Panics
    /// If the lengths do not describe the same number of rows.
    pub fn step_batch(&self, z: &mut [f64], u: &[f64], eps: &[f64], drift: &mut [f64]) {
        let a = self.action.action_dim();
        let n = z.len() / LATENT_DIM;
        assert!(
            z.len() == n * 2 && eps.len() == n * 2 && drift.len() == n * 2 && u.len() == n * a,
            "step_batch: z, eps, drift must be n × 2 and u n × A"
        );
        for i in 0..n {
            let zi = [z[2 * i], z[2 * i + 1]];
            let gu = self.action.apply_row(&u[i * a..(i + 1) * a]);
            let (next, f) = step_latent(
                &self.field,
                zi,
                gu,
                [eps[2 * i], eps[2 * i + 1]],
                self.dt,
                self.noise_scale,
                self.noise_convention,
            );
            z[2 * i..2 * i + 2].copy_from_slice(&next);
            drift[2 * i..2 * i + 2].copy_from_slice(&f);
        }
    }
}

/// The latent state of a [`VectorFieldEnv`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VectorFieldState {
    /// `z`.
    pub z: [f64; 2],
}

/// actdyn's true environment as an [`Env`] (see the module docs). One agent; observation
/// `N_y` f64 values; action `[f64; 2]`, not clipped; reward 0; never terminates. Validate the
/// params once with [`VectorFieldParams::validate`]; kernels assume valid params.
#[derive(Clone, Copy, Debug, Default)]
pub struct VectorFieldEnv;

impl VectorFieldEnv {
    fn emit(p: &VectorFieldParams, z: [f64; 2], rng: &mut Rng, obs: &mut [f64]) {
        p.obs.observe(&z, obs);
        p.obs.add_noise(obs, rng);
    }
}

impl Env for VectorFieldEnv {
    type Params = VectorFieldParams;
    type State = VectorFieldState;
    type Obs = f64;
    type Action = [f64; 2];

    fn spec(&self, p: &VectorFieldParams) -> Spec {
        Spec {
            obs_space: Space::Box {
                low: f64::NEG_INFINITY,
                high: f64::INFINITY,
                shape: vec![p.obs.obs_dim()],
            },
            action_space: Space::Box {
                low: -p.action_bound,
                high: p.action_bound,
                shape: vec![LATENT_DIM],
            },
            num_agents: 1,
            max_episode_steps: p.max_episode_steps,
        }
    }

    /// `z₀ = 2·U[0, 1)² − 1` (two uniforms from `key`), then the observation (with noise,
    /// drawn after the uniforms).
    fn reset(&self, p: &VectorFieldParams, key: Key, obs: &mut [f64]) -> VectorFieldState {
        let mut r = key.rng();
        let z = reset_latent([r.uniform_f64(), r.uniform_f64()]);
        Self::emit(p, z, &mut r, obs);
        VectorFieldState { z }
    }

    /// Draws `ε` (two standard normals from `key`), steps with [`step_latent`], then observes
    /// (noise drawn after `ε`). The action is used as given (no clipping). Reward 0.
    fn step(
        &self,
        p: &VectorFieldParams,
        s: &mut VectorFieldState,
        actions: &[[f64; 2]],
        key: Key,
        obs: &mut [f64],
        rewards: &mut [f32],
    ) -> bool {
        let mut r = key.rng();
        let eps = [r.standard_normal(), r.standard_normal()];
        let gu = p.action.apply_row(&actions[0]);
        let (z, _) = step_latent(&p.field, s.z, gu, eps, p.dt, p.noise_scale, p.noise_convention);
        s.z = z;
        Self::emit(p, z, &mut r, obs);
        rewards[0] = 0.0;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_testkit::{Conformance, check_env};

    #[test]
    fn conformance() {
        let p = VectorFieldParams { max_episode_steps: Some(50), ..Default::default() };
        p.validate().unwrap();
        check_env(&VectorFieldEnv, &p, &Conformance::default(), |k, _, a| {
            let mut r = k.rng();
            a[0] = [0.2 * r.uniform_f64() - 0.1, 0.2 * r.uniform_f64() - 0.1];
        });
    }
}
