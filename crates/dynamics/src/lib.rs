//! Dynamical systems for Kestrel: the [`Dynamics`] trait (state slices in f64, running and
//! terminal costs) that `kestrel-mppi`'s controllers roll out and that `kestrel-envs` makes
//! into environments (`ControlEnv`), and the one implementation of each system's physics.
//!
//! The Gymnasium environments `Pendulum-v1` and `CartPole-v1` in `kestrel-envs` step the same
//! physics as [`PendulumDynamics`] and [`ContinuousCartPole`] ([`pendulum_step`],
//! [`cartpole_step`]); Gymnasium's float32 torque arithmetic is the [`Torque::F32`] mode of
//! the pendulum step, f64 throughout ([`Torque::F64`]) is what the MPPI peers use.
//!
//! | system | state | control | start | source |
//! |---|---|---|---|---|
//! | [`PendulumDynamics`] | `[θ, θ̇]` | torque, ±2 | `(π, 0)` | Gymnasium Pendulum-v1 equations (pytorch-mppi's example) |
//! | [`ContinuousCartPole`] | `[x, ẋ, θ, θ̇]` | force, ±10 N | `(0, 0, 0.2, 0)` | Gymnasium CartPole-v1 equations |
//! | [`Nav2d`] | `[x, y]` | velocity | `(−3, −2)` | pytorch-mppi's `Toy2DEnvironment` (Gaussian hill) |
//! | [`DoubleIntegrator`] | `[p, v]` per dimension | acceleration | rest at 0 | — |
//! | [`DiffDrive`] | `[x, y, heading]` | `[v, ω]` | origin, facing +x | — |
//! | [`BasicLinear`] | `[x₁, x₂]` | one input | `(1, −0.5)` | jax-mppi's basic tuning example |

use kestrel_core::math;

/// How the pendulum step computes its torque term `3/(m l²) · u`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Torque {
    /// In f64, like every other term (pytorch-mppi's and jax-mppi's pendulum).
    #[default]
    F64,
    /// In f32 from an f32 action clamped in f32, as Gymnasium's `Pendulum-v1` does under NumPy 2
    /// promotion with a float32 action; the rest of the step stays f64.
    F32,
}

/// Pendulum constants (Gymnasium `Pendulum-v1`'s defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PendulumPhysics {
    /// Gravity.
    pub g: f64,
    /// Mass.
    pub m: f64,
    /// Length.
    pub l: f64,
    /// Time step.
    pub dt: f64,
    /// Angular speed limit.
    pub max_speed: f64,
    /// Torque limit.
    pub max_torque: f64,
}

impl Default for PendulumPhysics {
    fn default() -> Self {
        PendulumPhysics { g: 10.0, m: 1.0, l: 1.0, dt: 0.05, max_speed: 8.0, max_torque: 2.0 }
    }
}

/// The pendulum's one step (the only implementation of its physics): torque `u` clamped to
/// `±max_torque`, `θ̇' = clip(θ̇ + (3g/(2l) sin θ + 3/(m l²) u) dt, ±max_speed)`,
/// `θ' = θ + θ̇' dt`.
#[inline(always)]
pub fn pendulum_step(p: &PendulumPhysics, x: [f64; 2], u: f64, torque: Torque) -> [f64; 2] {
    let [th, thdot] = x;
    let torque = match torque {
        Torque::F64 => 3.0 / (p.m * p.l * p.l) * u.clamp(-p.max_torque, p.max_torque),
        Torque::F32 => {
            let mt = p.max_torque as f32;
            ((3.0 / (p.m * p.l * p.l)) as f32 * (u as f32).clamp(-mt, mt)) as f64
        }
    };
    let thdot = (thdot + (3.0 * p.g / (2.0 * p.l) * th.sin() + torque) * p.dt)
        .clamp(-p.max_speed, p.max_speed);
    [th + thdot * p.dt, thdot]
}

/// Cart-pole constants (Gymnasium `CartPole-v1`'s defaults; `length` is half the pole).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CartPolePhysics {
    /// Gravity.
    pub gravity: f64,
    /// Cart mass.
    pub mass_cart: f64,
    /// Pole mass.
    pub mass_pole: f64,
    /// Half the pole's length.
    pub length: f64,
    /// Time step (explicit Euler).
    pub tau: f64,
}

impl Default for CartPolePhysics {
    fn default() -> Self {
        CartPolePhysics { gravity: 9.8, mass_cart: 1.0, mass_pole: 0.1, length: 0.5, tau: 0.02 }
    }
}

/// The cart-pole's one step (the only implementation of its physics): Gymnasium's equations
/// with explicit Euler, force `force` in newtons on state `[x, ẋ, θ, θ̇]` (θ = 0 upright).
#[inline(always)]
pub fn cartpole_step(p: &CartPolePhysics, x: [f64; 4], force: f64) -> [f64; 4] {
    let [pos, vel, theta, theta_dot] = x;
    let (sin, cos) = (theta.sin(), theta.cos());
    let total = p.mass_pole + p.mass_cart;
    let pml = p.mass_pole * p.length;
    let temp = (force + pml * theta_dot * theta_dot * sin) / total;
    let theta_acc =
        (p.gravity * sin - cos * temp) / (p.length * (4.0 / 3.0 - p.mass_pole * cos * cos / total));
    let x_acc = temp - pml * theta_acc * cos / total;
    [
        pos + p.tau * vel,
        vel + p.tau * x_acc,
        theta + p.tau * theta_dot,
        theta_dot + p.tau * theta_acc,
    ]
}

/// A dynamical system with its costs, one state at a time (pytorch-mppi's `dynamics`,
/// `running_cost` and `terminal_state_cost` for one sample). Controllers in `kestrel-mppi`
/// roll it out; `kestrel_envs::ControlEnv` makes it an environment.
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
    /// The task's start state (zeros by default); `ControlEnv` resets to it.
    fn initial_state(&self, x: &mut [f64]) {
        x.fill(0.0);
    }
    /// Whether `x` ends an episode of `ControlEnv` (never by default). Controllers ignore
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

/// Gym pendulum dynamics for MPPI (state `[θ, θ̇]`, control torque clamped to ±2; running
/// cost `norm(θ)² + 0.1 θ̇² + 0.001 u²`), as pytorch-mppi's pendulum example uses them; start
/// hanging down, `(π, 0)`. In f64 throughout (the exact Gymnasium env with its float32 action
/// arithmetic is `kestrel_envs::Pendulum`, the [`Torque::F32`] mode of the same step).
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
        let n = pendulum_step(&PendulumPhysics::default(), [x[0], x[1]], u[0], Torque::F64);
        next[..2].copy_from_slice(&n);
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
        let force = u[0].clamp(-Self::FORCE_MAG, Self::FORCE_MAG);
        let n = cartpole_step(&CartPolePhysics::default(), [x[0], x[1], x[2], x[3]], force);
        next[..4].copy_from_slice(&n);
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
