//! Cart-pole balancing, exactly Gymnasium's `CartPole-v1` (Barto, Sutton & Anderson,
//! "Neuronlike adaptive elements that can solve difficult learning control problems", IEEE
//! SMC 1983; reference implementation `gymnasium/envs/classic_control/cartpole.py`, 1.4.0).
//!
//! | | |
//! |---|---|
//! | observation | `[x, x_dot, theta, theta_dot]` as f32 (dynamics in f64, as Gymnasium) |
//! | action | `1` pushes right, anything else left (Gymnasium accepts only 0 and 1) |
//! | reward | 1 every step, the terminating step included |
//! | terminated | `|x| > 2.4` or `|theta| > 12°` |
//! | truncated | 500 steps (`max_episode_steps`, applied by `VecEnv`) |
//! | reset | each state variable uniform in `[-0.05, 0.05)` |
//!
//! Invalid actions: Gymnasium asserts `action in {0, 1}`; Kestrel maps `1` to the right push
//! and every other value to the left push (documented, never a panic).

use kestrel_core::{Env, Key, Space, Spec};
use kestrel_dynamics::{CartPolePhysics, cartpole_step};

/// Physical constants (Gymnasium's defaults, `cartpole.py`'s `__init__`).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct CartPoleParams {
    /// Gravity (m/s²; Gymnasium's 9.8).
    pub gravity: f64,
    /// Cart mass (kg; 1.0).
    pub mass_cart: f64,
    /// Pole mass (kg; 0.1).
    pub mass_pole: f64,
    /// Half the pole length (m; 0.5).
    pub length: f64,
    /// Push force (N; 10.0).
    pub force_mag: f64,
    /// Time step (s; 0.02).
    pub tau: f64,
    /// Steps before truncation (CartPole-v1's 500).
    pub max_episode_steps: u32,
}

impl CartPoleParams {
    /// Checks every constant is finite and positive and the limit at least 1.
    pub fn validate(&self) -> Result<(), crate::error::EnvError> {
        let p = self;
        for (field, v) in [
            ("gravity", p.gravity),
            ("mass_cart", p.mass_cart),
            ("mass_pole", p.mass_pole),
            ("length", p.length),
            ("force_mag", p.force_mag),
            ("tau", p.tau),
        ] {
            crate::error::positive(field, v)?;
        }
        crate::error::limit(p.max_episode_steps)
    }
}

impl Default for CartPoleParams {
    fn default() -> Self {
        CartPoleParams {
            gravity: 9.8,
            mass_cart: 1.0,
            mass_pole: 0.1,
            length: 0.5,
            force_mag: 10.0,
            tau: 0.02,
            max_episode_steps: 500,
        }
    }
}

/// `[x, x_dot, theta, theta_dot]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CartPoleState(pub [f64; 4]);

/// The cart-pole kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct CartPole;

const THETA_LIMIT: f64 = 12.0 * 2.0 * std::f64::consts::PI / 360.0;
const X_LIMIT: f64 = 2.4;

impl CartPole {
    /// One Euler step of Gymnasium's equations; returns `terminated`.
    pub fn advance(p: &CartPoleParams, s: &mut CartPoleState, action: u32) -> bool {
        let force = if action == 1 { p.force_mag } else { -p.force_mag };
        let physics = CartPolePhysics {
            gravity: p.gravity,
            mass_cart: p.mass_cart,
            mass_pole: p.mass_pole,
            length: p.length,
            tau: p.tau,
        };
        s.0 = cartpole_step(&physics, s.0, force);
        let [x, _, theta, _] = s.0;
        !(-X_LIMIT..=X_LIMIT).contains(&x) || !(-THETA_LIMIT..=THETA_LIMIT).contains(&theta)
    }
}

fn write(s: &CartPoleState, obs: &mut [f32]) {
    for (o, v) in obs.iter_mut().zip(s.0) {
        *o = v as f32;
    }
}

impl Env for CartPole {
    type Params = CartPoleParams;
    type State = CartPoleState;
    type Obs = f32;
    type Action = u32;

    fn spec(&self, p: &CartPoleParams) -> Spec {
        Spec {
            obs_space: Space::Box { low: f32::MIN as f64, high: f32::MAX as f64, shape: vec![4] },
            action_space: Space::Discrete { n: 2 },
            num_agents: 1,
            max_episode_steps: Some(p.max_episode_steps),
        }
    }

    fn reset(&self, _p: &CartPoleParams, key: Key, obs: &mut [f32]) -> CartPoleState {
        let mut r = key.rng();
        let s = CartPoleState(std::array::from_fn(|_| -0.05 + 0.1 * r.uniform_f64()));
        write(&s, obs);
        s
    }

    fn step(
        &self,
        p: &CartPoleParams,
        s: &mut CartPoleState,
        a: &[u32],
        _key: Key,
        obs: &mut [f32],
        r: &mut [f32],
    ) -> bool {
        let term = Self::advance(p, s, a[0]);
        write(s, obs);
        r[0] = 1.0;
        term
    }

    fn observe(&self, _p: &CartPoleParams, s: &CartPoleState, obs: &mut [f32]) -> bool {
        write(s, obs);
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
            &CartPole,
            &CartPoleParams { max_episode_steps: 60, ..Default::default() },
            &Conformance::default(),
            |k, _, a| a[0] = k.rng().below(2),
        );
    }

    #[test]
    fn falls_without_control_and_terminates_at_the_limits() {
        let p = CartPoleParams::default();
        let mut s = CartPoleState([0.0, 0.0, 0.01, 0.0]);
        let steps = (1..500).find(|_| CartPole::advance(&p, &mut s, 1)).unwrap();
        assert!(steps < 60, "{steps}");
        assert!(s.0[2].abs() > THETA_LIMIT || s.0[0].abs() > X_LIMIT);
    }
}
