//! Continuous-control systems: the [`Dynamics`] trait (state slices in f64, running and
//! terminal costs) that `kestrel-mppi`'s controllers roll out, the systems of both MPPI peers'
//! tests and examples, and [`ControlEnv`], which makes any of them an [`Env`] (cheap `Copy`
//! state, observation = the state as f32, reward = −running cost).
//!
//! | system | state | control | start | source |
//! |---|---|---|---|---|
//! | [`PendulumDynamics`] | `[θ, θ̇]` | torque, ±2 | `(π, 0)` | Gymnasium Pendulum-v1 equations (pytorch-mppi's example) |
//! | [`ContinuousCartPole`] | `[x, ẋ, θ, θ̇]` | force, ±10 N | `(0, 0, 0.2, 0)` | Gymnasium CartPole-v1 equations |
//! | [`Nav2d`] | `[x, y]` | velocity | `(−3, −2)` | pytorch-mppi's `Toy2DEnvironment` (Gaussian hill) |
//! | [`DoubleIntegrator`] | `[p, v]` per dimension | acceleration | rest at 0 | — |
//! | [`DiffDrive`] | `[x, y, heading]` | `[v, ω]` | origin, facing +x | — |
//! | [`BasicLinear`] | `[x₁, x₂]` | one input | `(1, −0.5)` | jax-mppi's basic tuning example |

use crate::EnvError;
use kestrel_core::{Env, Key, Space, Spec, math};

/// Largest state size of a [`ControlEnv`] (its state is a fixed array).
pub const ENV_MAX_NX: usize = 16;
/// Largest control size of a [`ControlEnv`].
pub const ENV_MAX_NU: usize = 8;

/// A dynamical system with its costs, one state at a time (pytorch-mppi's `dynamics`,
/// `running_cost` and `terminal_state_cost` for one sample). Controllers in `kestrel-mppi`
/// roll it out; [`ControlEnv`] makes it an [`Env`].
pub trait Dynamics: Send + Sync {
    /// State size.
    fn nx(&self) -> usize;
    /// Control size.
    fn nu(&self) -> usize;
    /// Writes the next state from `x` under control `u` at horizon step `t`.
    fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]);
    /// Step of ensemble member `member` (`0..rollout_samples`), for stochastic or uncertain
    /// dynamics rolled out `rollout_samples` times per sample (pytorch-mppi's `M`; its rows
    /// of member `m` are `m·K..(m+1)·K`). Defaults to [`Dynamics::step`], where every member
    /// is the same model and the variance cost is 0.
    fn step_member(&self, x: &[f64], u: &[f64], t: usize, member: usize, next: &mut [f64]) {
        let _ = member;
        self.step(x, u, t, next)
    }
    /// Cost of the state reached (`x` is the post-transition state, as pytorch-mppi).
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64;
    /// Cost of the final state (0 by default).
    fn terminal_cost(&self, _x: &[f64]) -> f64 {
        0.0
    }
    /// The task's start state (zeros by default); [`ControlEnv`] resets to it.
    fn initial_state(&self, x: &mut [f64]) {
        x.fill(0.0);
    }
    /// Whether `x` ends an episode of [`ControlEnv`] (never by default). Controllers ignore
    /// it: their rollouts always run the whole horizon.
    fn terminated(&self, _x: &[f64]) -> bool {
        false
    }
}

impl<D: Dynamics> Dynamics for &D {
    fn nx(&self) -> usize {
        (*self).nx()
    }
    fn nu(&self) -> usize {
        (*self).nu()
    }
    fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) {
        (*self).step(x, u, t, next)
    }
    fn step_member(&self, x: &[f64], u: &[f64], t: usize, member: usize, next: &mut [f64]) {
        (*self).step_member(x, u, t, member, next)
    }
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64 {
        (*self).running_cost(x, u, t)
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        (*self).terminal_cost(x)
    }
    fn initial_state(&self, x: &mut [f64]) {
        (*self).initial_state(x)
    }
    fn terminated(&self, x: &[f64]) -> bool {
        (*self).terminated(x)
    }
}

/// Episode settings of a [`ControlEnv`].
#[derive(Clone, Debug, PartialEq)]
pub struct ControlParams {
    /// Start state; empty means the system's [`Dynamics::initial_state`].
    pub start: Vec<f64>,
    /// Each start coordinate is perturbed by `U[−reset_noise, reset_noise]`.
    pub reset_noise: f64,
    /// Episode limit (applied by `VecEnv`).
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
        Ok(())
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
}

/// Gym pendulum dynamics for MPPI (state `[θ, θ̇]`, control torque clamped to ±2; running
/// cost `norm(θ)² + 0.1 θ̇² + 0.001 u²`), as pytorch-mppi's pendulum example uses them; start
/// hanging down, `(π, 0)`. In f64 throughout (the exact Gymnasium env with its float32 action
/// arithmetic is [`crate::Pendulum`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct PendulumDynamics;

impl Dynamics for PendulumDynamics {
    #[inline]
    fn nx(&self) -> usize {
        2
    }
    #[inline]
    fn nu(&self) -> usize {
        1
    }
    #[inline(always)]
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        let (g, m, l, dt) = (10.0, 1.0, 1.0, 0.05);
        let u = u[0].clamp(-2.0, 2.0);
        let thdot = (x[1] + (3.0 * g / (2.0 * l) * x[0].sin() + 3.0 / (m * l * l) * u) * dt)
            .clamp(-8.0, 8.0);
        next[0] = x[0] + thdot * dt;
        next[1] = thdot;
    }
    #[inline(always)]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        // ((θ + π) mod 2π) − π with the floored remainder a − b⌊a/b⌋ (torch.remainder's
        // definition; cheaper than fmod).
        let a = x[0] + std::f64::consts::PI;
        let th = a
            - std::f64::consts::TAU * math::floor(a / std::f64::consts::TAU)
            - std::f64::consts::PI;
        th * th + 0.1 * x[1] * x[1] + 0.001 * u[0] * u[0]
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&[std::f64::consts::PI, 0.0]);
    }
}

/// pytorch-mppi's `Toy2DEnvironment` (also jax-mppi's smoothing benchmark): `x' = x + B u`
/// with `B = [[0.5, 0], [0, −0.5]]`; running cost `|g − x|² + 0.01 |u|²` plus a Gaussian hill
/// `200 exp(−(c − x)ᵀ Q (c − x))`, `Q = 2.5 [[0.1, 0.05], [0.05, 0.1]]`, `c = (−0.5, −1)`,
/// goal `g = (2, 2)`, start `(−3, −2)`; terminal cost `10 ×` the state part of the running cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Nav2d;

impl Nav2d {
    /// Start state.
    pub const START: [f64; 2] = [-3.0, -2.0];
    /// Goal.
    pub const GOAL: [f64; 2] = [2.0, 2.0];
    /// Hill centre.
    pub const HILL: [f64; 2] = [-0.5, -1.0];

    /// The hill term at `x`.
    pub fn hill(x: &[f64]) -> f64 {
        let (dx, dy) = (Self::HILL[0] - x[0], Self::HILL[1] - x[1]);
        200.0 * (-(2.5 * (0.1 * dx * dx + 0.1 * dx * dy + 0.1 * dy * dy))).exp()
    }

    fn state_cost(x: &[f64]) -> f64 {
        let (gx, gy) = (Self::GOAL[0] - x[0], Self::GOAL[1] - x[1]);
        gx * gx + gy * gy + Self::hill(x)
    }
}

impl Dynamics for Nav2d {
    #[inline]
    fn nx(&self) -> usize {
        2
    }
    #[inline]
    fn nu(&self) -> usize {
        2
    }
    #[inline]
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        next[0] = x[0] + 0.5 * u[0];
        next[1] = x[1] - 0.5 * u[1];
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::state_cost(x) + 0.01 * (u[0] * u[0] + u[1] * u[1])
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * Self::state_cost(x)
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&Self::START);
    }
}

/// jax-mppi's basic tuning example: `x' = x + 0.1 u` (`u` broadcast over the 2 states), cost
/// `|x|² + 0.01 u²`, terminal `10 |x|²`, start `(1, −0.5)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BasicLinear;

impl Dynamics for BasicLinear {
    #[inline]
    fn nx(&self) -> usize {
        2
    }
    #[inline]
    fn nu(&self) -> usize {
        1
    }
    #[inline]
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        next[0] = x[0] + 0.1 * u[0];
        next[1] = x[1] + 0.1 * u[0];
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        x[0] * x[0] + x[1] * x[1] + 0.01 * u[0] * u[0]
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * (x[0] * x[0] + x[1] * x[1])
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&[1.0, -0.5]);
    }
}

/// A double integrator in `d` dimensions: state `[positions, velocities]`, control
/// accelerations, `dt = 0.1`, start at rest at the origin; cost `|p − goal|² + 0.1 |v|² + 0.01 |u|²` with the goal at 1.
#[derive(Clone, Copy, Debug)]
pub struct DoubleIntegrator {
    /// Dimensions (1 to 4).
    pub dims: usize,
}

impl Dynamics for DoubleIntegrator {
    #[inline]
    fn nx(&self) -> usize {
        2 * self.dims
    }
    #[inline]
    fn nu(&self) -> usize {
        self.dims
    }
    #[inline]
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        let d = self.dims;
        for i in 0..d {
            next[d + i] = x[d + i] + 0.1 * u[i];
            next[i] = x[i] + 0.1 * next[d + i];
        }
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        let d = self.dims;
        (0..d).map(|i| (x[i] - 1.0).powi(2) + 0.1 * x[d + i] * x[d + i] + 0.01 * u[i] * u[i]).sum()
    }
}

/// Gymnasium's cart-pole equations (CartPole-v1 constants, Euler, `τ = 0.02`) with a continuous
/// force `u` in newtons, clamped to `±10` (CartPole-v1's `force_mag`). State `[x, ẋ, θ, θ̇]`,
/// θ = 0 upright, start `(0, 0, 0.2, 0)`; as an env it terminates at Gymnasium's limits
/// (`|x| > 2.4`, `|θ| > 12°`). Balancing cost `θ² + 0.1 θ̇² + 0.1 x² + 0.01 ẋ² + 1e-4 u²`, terminal `10 ×`
/// the state part.
#[derive(Clone, Copy, Debug, Default)]
pub struct ContinuousCartPole;

impl ContinuousCartPole {
    /// Largest force magnitude.
    pub const FORCE_MAG: f64 = 10.0;

    fn state_cost(x: &[f64]) -> f64 {
        x[2] * x[2] + 0.1 * x[3] * x[3] + 0.1 * x[0] * x[0] + 0.01 * x[1] * x[1]
    }
}

impl Dynamics for ContinuousCartPole {
    #[inline]
    fn nx(&self) -> usize {
        4
    }
    #[inline]
    fn nu(&self) -> usize {
        1
    }
    #[inline]
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        let (g, m_cart, m_pole, half_len, tau) = (9.8, 1.0, 0.1, 0.5, 0.02);
        let total = m_cart + m_pole;
        let pml = m_pole * half_len;
        let force = u[0].clamp(-Self::FORCE_MAG, Self::FORCE_MAG);
        let (s, c) = x[2].sin_cos();
        let temp = (force + pml * x[3] * x[3] * s) / total;
        let th_acc = (g * s - c * temp) / (half_len * (4.0 / 3.0 - m_pole * c * c / total));
        let x_acc = temp - pml * th_acc * c / total;
        next[0] = x[0] + tau * x[1];
        next[1] = x[1] + tau * x_acc;
        next[2] = x[2] + tau * x[3];
        next[3] = x[3] + tau * th_acc;
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::state_cost(x) + 1e-4 * u[0] * u[0]
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * Self::state_cost(x)
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&[0.0, 0.0, 0.2, 0.0]);
    }
    /// Gymnasium's CartPole-v1 limits: `|x| > 2.4` or `|θ| > 12°`.
    fn terminated(&self, x: &[f64]) -> bool {
        x[0].abs() > 2.4 || x[2].abs() > 12.0 * 2.0 * std::f64::consts::PI / 360.0
    }
}

/// A differential-drive (unicycle) robot: state `[x, y, heading]`, control `[v, ω]` (forward
/// speed, turn rate), `dt = 0.1`, start at the origin facing +x; cost `|p − goal|² + 0.01 |u|²` with the goal at `(2, 1)`,
/// terminal `10 |p − goal|²`. The heading makes it non-holonomic: it must turn to reach a
/// goal off its axis.
#[derive(Clone, Copy, Debug, Default)]
pub struct DiffDrive;

impl DiffDrive {
    /// Goal position.
    pub const GOAL: [f64; 2] = [2.0, 1.0];

    fn state_cost(x: &[f64]) -> f64 {
        let (dx, dy) = (x[0] - Self::GOAL[0], x[1] - Self::GOAL[1]);
        dx * dx + dy * dy
    }
}

impl Dynamics for DiffDrive {
    #[inline]
    fn nx(&self) -> usize {
        3
    }
    #[inline]
    fn nu(&self) -> usize {
        2
    }
    #[inline]
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        let dt = 0.1;
        let (s, c) = x[2].sin_cos();
        next[0] = x[0] + dt * u[0] * c;
        next[1] = x[1] + dt * u[0] * s;
        next[2] = x[2] + dt * u[1];
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::state_cost(x) + 0.01 * (u[0] * u[0] + u[1] * u[1])
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * Self::state_cost(x)
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
