//! [`ControlEnv`]: any [`Dynamics`] of `kestrel-dynamics` as an [`Env`] (cheap `Copy` state,
//! observation = the state as f32, reward = −running cost). The systems themselves (pendulum,
//! cart-pole, 2-D navigation, double integrator, differential drive, jax-mppi's basic system)
//! live in `kestrel-dynamics` and are re-exported here.
//!
use crate::error::EnvError;
use kestrel_core::FromInvalid;
use kestrel_core::{Env, Key, Space, Spec};
use kestrel_dynamics::Dynamics;
pub use kestrel_dynamics::{
    BasicLinear, ContinuousCartPole, DiffDrive, DoubleIntegrator, Nav2d, PendulumDynamics,
};

/// Largest state size of a [`ControlEnv`] (its state is a fixed array).
pub const ENV_MAX_NX: usize = 16;
/// Largest control size of a [`ControlEnv`].
pub const ENV_MAX_NU: usize = 8;

/// Episode settings of a [`ControlEnv`].
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct ControlParams {
    /// Start state; empty means the system's initial state.
    pub start: Vec<f64>,
    /// Each start coordinate is perturbed by `U[-reset_noise, reset_noise]`.
    pub reset_noise: f64,
    /// Steps before truncation.
    pub max_episode_steps: u32,
}

impl Default for ControlParams {
    fn default() -> Self {
        ControlParams { start: Vec::new(), reset_noise: 0.0, max_episode_steps: 200 }
    }
}

/// The state of a [`ControlEnv`]: the system state (first `nx` entries) and the step count
/// passed to the step-dependent dynamics and costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControlState {
    /// System state, `nx` entries used.
    pub x: [f64; ENV_MAX_NX],
    /// Steps taken in this episode.
    pub t: u32,
}

/// Any [`Dynamics`] as an [`Env`]: observation = the state (f32, `nx`), action = the control
/// (one `[f32; ENV_MAX_NU]` per agent, the first `nu` entries used; a NaN entry is taken as 0,
/// bounds are the system's own), reward = −running cost
/// of the state reached, `terminated` from [`Dynamics::terminated`] (or a non-finite state).
/// The terminal cost is not paid by the env (it is a planning device); read it from the
/// system when needed.
#[derive(Clone, Copy, Debug)]
pub struct ControlEnv<D> {
    system: D,
}

impl<D: Dynamics> ControlEnv<D> {
    /// Wraps `system` (at most [`ENV_MAX_NX`] states and [`ENV_MAX_NU`] controls).
    pub fn new(system: D) -> Result<Self, EnvError> {
        let (nx, nu) = (system.nx(), system.nu());
        if nx == 0 || nx > ENV_MAX_NX || nu == 0 || nu > ENV_MAX_NU {
            return Err(EnvError::invalid(
                "nx/nu",
                format!("{nx}/{nu}"),
                "1..=16 states and 1..=8 controls for a ControlEnv",
            ));
        }
        Ok(ControlEnv { system })
    }

    /// The wrapped system.
    pub fn system(&self) -> &D {
        &self.system
    }

    /// Checks `params` against the system (start length, finite noise).
    pub fn validate(&self, p: &ControlParams) -> Result<(), EnvError> {
        let nx = self.system.nx();
        if !p.start.is_empty() && (p.start.len() != nx || p.start.iter().any(|v| !v.is_finite())) {
            return Err(EnvError::invalid(
                "start",
                format!("{:?}", p.start),
                "empty (the system's start) or nx finite values",
            ));
        }
        if !(p.reset_noise.is_finite() && p.reset_noise >= 0.0) {
            return Err(EnvError::invalid(
                "reset_noise",
                p.reset_noise.to_string(),
                "finite and >= 0",
            ));
        }
        crate::error::limit(p.max_episode_steps)
    }

    fn observe(&self, s: &ControlState, obs: &mut [f32]) {
        for (o, x) in obs.iter_mut().zip(&s.x[..self.system.nx()]) {
            *o = *x as f32;
        }
    }
}

impl<D: Dynamics + Clone + std::fmt::Debug> Env for ControlEnv<D> {
    type Params = ControlParams;
    type State = ControlState;
    type Obs = f32;
    type Action = [f32; ENV_MAX_NU];

    fn spec(&self, p: &ControlParams) -> Spec {
        Spec {
            obs_space: Space::Box {
                low: f64::NEG_INFINITY,
                high: f64::INFINITY,
                shape: vec![self.system.nx()],
            },
            action_space: Space::Box {
                low: f64::NEG_INFINITY,
                high: f64::INFINITY,
                shape: vec![self.system.nu()],
            },
            num_agents: 1,
            max_episode_steps: Some(p.max_episode_steps),
        }
    }

    /// Starts at `params.start` (or the system's start), each coordinate perturbed by
    /// `U[−reset_noise, reset_noise]`. A `start` of the wrong length is ignored (the
    /// system's start is used); [`ControlEnv::validate`] reports it.
    fn reset(&self, p: &ControlParams, key: Key, obs: &mut [f32]) -> ControlState {
        let nx = self.system.nx();
        let mut s = ControlState { x: [0.0; ENV_MAX_NX], t: 0 };
        if p.start.len() == nx {
            s.x[..nx].copy_from_slice(&p.start);
        } else {
            self.system.initial_state(&mut s.x[..nx]);
        }
        if p.reset_noise > 0.0 {
            let mut r = key.rng();
            for v in &mut s.x[..nx] {
                *v += p.reset_noise * (2.0 * r.uniform_f64() - 1.0);
            }
        }
        self.observe(&s, obs);
        s
    }

    fn step(
        &self,
        _p: &ControlParams,
        s: &mut ControlState,
        a: &[[f32; ENV_MAX_NU]],
        _key: Key,
        obs: &mut [f32],
        r: &mut [f32],
    ) -> bool {
        let (nx, nu) = (self.system.nx(), self.system.nu());
        let mut u = [0.0f64; ENV_MAX_NU];
        for (ui, ai) in u.iter_mut().zip(&a[0][..nu]) {
            *ui = if ai.is_nan() { 0.0 } else { *ai as f64 };
        }
        let mut next = [0.0f64; ENV_MAX_NX];
        let t = s.t as usize;
        self.system.step(&s.x[..nx], &u[..nu], t, &mut next[..nx]);
        s.x[..nx].copy_from_slice(&next[..nx]);
        s.t += 1;
        r[0] = -self.system.running_cost(&s.x[..nx], &u[..nu], t) as f32;
        self.observe(s, obs);
        self.system.terminated(&s.x[..nx]) || s.x[..nx].iter().any(|v| !v.is_finite())
    }

    fn observe(&self, _p: &ControlParams, s: &ControlState, obs: &mut [f32]) -> bool {
        ControlEnv::observe(self, s, obs);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_testkit::{Conformance, check_env};

    fn conform<D: Dynamics + Clone + std::fmt::Debug>(d: D, low: f32, high: f32) {
        let env = ControlEnv::new(d).unwrap();
        let p = ControlParams { reset_noise: 0.1, max_episode_steps: 40, ..Default::default() };
        env.validate(&p).unwrap();
        check_env(&env, &p, &Conformance::default(), |k, _, a| {
            let mut r = k.rng();
            a[0].iter_mut().for_each(|v| *v = low + (high - low) * r.uniform_f32());
        });
    }

    #[test]
    fn every_system_is_a_conforming_env() {
        conform(PendulumDynamics, -2.0, 2.0);
        conform(ContinuousCartPole, -10.0, 10.0);
        conform(Nav2d, -1.0, 1.0);
        conform(DoubleIntegrator { dims: 2 }, -1.0, 1.0);
        conform(DiffDrive, -1.0, 1.0);
        conform(BasicLinear, -1.0, 1.0);
    }

    #[test]
    fn env_step_is_the_dynamics_step() {
        let env = ControlEnv::new(Nav2d).unwrap();
        let p = ControlParams::default();
        let mut obs = [0.0f32; 2];
        let mut s = env.reset(&p, Key::new(0), &mut obs);
        assert_eq!(obs, [-3.0, -2.0]);
        let mut r = [0.0f32];
        let mut a = [[0.0f32; ENV_MAX_NU]];
        a[0][..2].copy_from_slice(&[1.0, -1.0]);
        let done = env.step(&p, &mut s, &a, Key::new(1), &mut obs, &mut r);
        let mut next = [0.0; 2];
        Nav2d.step(&Nav2d::START, &[1.0, -1.0], 0, &mut next);
        assert_eq!(&s.x[..2], &next);
        assert_eq!(r[0], -Nav2d.running_cost(&next, &[1.0, -1.0], 0) as f32);
        assert!(!done);
        assert_eq!(s.t, 1);
    }

    #[test]
    fn cartpole_env_terminates_at_gymnasium_limits() {
        let env = ControlEnv::new(ContinuousCartPole).unwrap();
        let p = ControlParams::default();
        let mut obs = [0.0f32; 4];
        let mut s = env.reset(&p, Key::new(0), &mut obs);
        let mut r = [0.0f32];
        let mut steps = 0;
        while !env.step(&p, &mut s, &[[0.0; ENV_MAX_NU]], Key::new(0), &mut obs, &mut r) {
            steps += 1;
            assert!(steps < 200, "a 0.2 rad tilt with no force must fall past 12 degrees");
        }
        assert!(s.x[2] > 12f64.to_radians());
    }

    #[test]
    fn bad_params_and_sizes_are_reported() {
        let env = ControlEnv::new(Nav2d).unwrap();
        let e = env.validate(&ControlParams { start: vec![1.0], ..Default::default() });
        assert!(e.unwrap_err().to_string().contains("start"));
        let e = env.validate(&ControlParams { reset_noise: f64::NAN, ..Default::default() });
        assert!(e.unwrap_err().to_string().contains("reset_noise"));
        assert!(ControlEnv::new(DoubleIntegrator { dims: 9 }).is_err());
        assert_eq!(ControlEnv::new(DoubleIntegrator { dims: 8 }).unwrap().system().nx(), 16);
    }
}
