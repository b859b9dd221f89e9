//! Pendulum swing-up, exactly Gymnasium's `Pendulum-v1` (reference implementation
//! `gymnasium/envs/classic_control/pendulum.py`, 1.4.0).
//!
//! | | |
//! |---|---|
//! | observation | `[cos θ, sin θ, θ̇]` as f32 |
//! | action | torque, f32, clipped to `[-2, 2]` |
//! | reward | `−(norm(θ)² + 0.1 θ̇² + 0.001 u²)` |
//! | terminated | never |
//! | truncated | 200 steps (`max_episode_steps`, applied by `VecEnv`) |
//! | reset | `θ ~ U[−π, π]`, `θ̇ ~ U[−1, 1]` |
//!
//! Numerics follow Gymnasium's NumPy 2 promotion: the state is f64, but with a float32
//! action the torque term `3/(m l²)·u` and the cost `0.001·u²` are computed in f32. A NaN
//! action is treated as 0 (Gymnasium would propagate NaN into the state).

use kestrel_core::{Env, Key, Space, Spec};
use kestrel_dynamics::{PendulumPhysics, Torque, pendulum_step};

/// Physical constants (Gymnasium's defaults, `pendulum.py`'s `__init__`).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct PendulumParams {
    /// Gravity (Gymnasium's `g`, 10.0).
    pub g: f64,
    /// Mass (1.0).
    pub m: f64,
    /// Length (1.0).
    pub l: f64,
    /// Time step (0.05).
    pub dt: f64,
    /// Largest |θ̇| (8.0).
    pub max_speed: f64,
    /// Largest |u|: the action space's bound (2.0).
    pub max_torque: f32,
    /// Steps before truncation (Pendulum-v1's 200).
    pub max_episode_steps: u32,
}

impl PendulumParams {
    /// Checks every constant is finite and positive and the limit at least 1.
    pub fn validate(&self) -> Result<(), crate::error::EnvError> {
        let p = self;
        for (field, v) in [
            ("g", p.g),
            ("m", p.m),
            ("l", p.l),
            ("dt", p.dt),
            ("max_speed", p.max_speed),
            ("max_torque", f64::from(p.max_torque)),
        ] {
            crate::error::positive(field, v)?;
        }
        crate::error::limit(p.max_episode_steps)
    }
}

impl Default for PendulumParams {
    fn default() -> Self {
        PendulumParams {
            g: 10.0,
            m: 1.0,
            l: 1.0,
            dt: 0.05,
            max_speed: 8.0,
            max_torque: 2.0,
            max_episode_steps: 200,
        }
    }
}

/// `[θ, θ̇]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PendulumState(pub [f64; 2]);

/// The pendulum kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct Pendulum;

/// `((x + π) mod 2π) − π` with NumPy's floored modulo.
pub fn angle_normalize(x: f64) -> f64 {
    (x + std::f64::consts::PI).rem_euclid(2.0 * std::f64::consts::PI) - std::f64::consts::PI
}

impl Pendulum {
    /// One step; returns the cost (the negative reward) in f64.
    pub fn advance(p: &PendulumParams, s: &mut PendulumState, u: f32) -> f64 {
        let [th, thdot] = s.0;
        let u = if u.is_nan() { 0.0 } else { u.clamp(-p.max_torque, p.max_torque) };
        let torque_cost = 0.001f32 * (u * u);
        let cost = angle_normalize(th).powi(2) + 0.1 * thdot * thdot + torque_cost as f64;
        let physics = PendulumPhysics {
            g: p.g,
            m: p.m,
            l: p.l,
            dt: p.dt,
            max_speed: p.max_speed,
            max_torque: p.max_torque as f64,
        };
        s.0 = pendulum_step(&physics, s.0, u as f64, Torque::F32);
        cost
    }

    /// The observation of a state.
    pub fn observe(s: &PendulumState, obs: &mut [f32]) {
        let [th, thdot] = s.0;
        obs[0] = th.cos() as f32;
        obs[1] = th.sin() as f32;
        obs[2] = thdot as f32;
    }
}

impl Env for Pendulum {
    type Params = PendulumParams;
    type State = PendulumState;
    type Obs = f32;
    type Action = f32;

    fn spec(&self, p: &PendulumParams) -> Spec {
        Spec {
            obs_space: Space::Box {
                low: -(p.max_speed.max(1.0)),
                high: p.max_speed.max(1.0),
                shape: vec![3],
            },
            action_space: Space::Box {
                low: -p.max_torque as f64,
                high: p.max_torque as f64,
                shape: vec![1],
            },
            num_agents: 1,
            max_episode_steps: Some(p.max_episode_steps),
        }
    }

    fn reset(&self, _p: &PendulumParams, key: Key, obs: &mut [f32]) -> PendulumState {
        let mut r = key.rng();
        let th = std::f64::consts::PI * (2.0 * r.uniform_f64() - 1.0);
        let s = PendulumState([th, 2.0 * r.uniform_f64() - 1.0]);
        Self::observe(&s, obs);
        s
    }

    fn step(
        &self,
        p: &PendulumParams,
        s: &mut PendulumState,
        a: &[f32],
        _key: Key,
        obs: &mut [f32],
        r: &mut [f32],
    ) -> bool {
        r[0] = -Self::advance(p, s, a[0]) as f32;
        Self::observe(s, obs);
        false
    }

    fn observe(&self, _p: &PendulumParams, s: &PendulumState, obs: &mut [f32]) -> bool {
        Self::observe(s, obs);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_testkit::{Conformance, check_env};

    #[test]
    fn conformance() {
        check_env(
            &Pendulum,
            &PendulumParams { max_episode_steps: 50, ..Default::default() },
            &Conformance::default(),
            |k, _, a| a[0] = 4.0 * k.rng().uniform_f32() - 2.0,
        );
    }

    #[test]
    fn angle_normalize_is_floored() {
        assert!(
            (angle_normalize(3.5 * std::f64::consts::PI) - (-0.5 * std::f64::consts::PI)).abs()
                < 1e-12
        );
        assert!(
            (angle_normalize(-3.5 * std::f64::consts::PI) - 0.5 * std::f64::consts::PI).abs()
                < 1e-12
        );
        let mut s = PendulumState([0.0, 0.0]);
        assert_eq!(Pendulum::advance(&PendulumParams::default(), &mut s, f32::NAN), 0.0);
    }
}
