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
//!
//! # Batches
//!
//! Besides one state at a time, [`Dynamics`] steps and costs `n` samples at once in structure
//! of arrays ([`Dynamics::step_batch`]: component `i` of sample `j` at `x[i·n + j]`), in f64 and
//! in f32 ([`Dynamics::step_batch_f32`]). Every built-in system writes its physics once over
//! [`Real`] and runs one lane per sample in both: the f64 batch is bit-identical to the scalar
//! step (same operations, `std`'s `sin`), the f32 batch uses `kestrel_core::simd`'s polynomial
//! `sin`/`cos`/`exp` (errors stated there) and vectorises. Dynamics without batch code get
//! defaults that loop over the scalar methods.

use kestrel_core::simd::Real;

/// Largest state size of the batched defaults (their per-sample scratch is on the stack).
pub const MAX_NX: usize = 32;
/// Largest control size of the batched defaults.
pub const MAX_NU: usize = 8;

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
/// Generic over the precision `R` (f64: the MPPI peers' and Gymnasium's; f32: the batched
/// f32 mode, where `Torque::F32` is the same as `Torque::F64`).
#[inline(always)]
pub fn pendulum_step<R: Real>(p: &PendulumPhysics, x: [R; 2], u: R, torque: Torque) -> [R; 2] {
    let [th, thdot] = x;
    let torque = match torque {
        Torque::F64 => {
            R::from_f64(3.0 / (p.m * p.l * p.l))
                * u.clamp(R::from_f64(-p.max_torque), R::from_f64(p.max_torque))
        }
        Torque::F32 => {
            let mt = p.max_torque as f32;
            R::from_f32((3.0 / (p.m * p.l * p.l)) as f32 * (u.to_f64() as f32).clamp(-mt, mt))
        }
    };
    let thdot = (thdot
        + (R::from_f64(3.0 * p.g / (2.0 * p.l)) * th.sin() + torque) * R::from_f64(p.dt))
    .clamp(R::from_f64(-p.max_speed), R::from_f64(p.max_speed));
    [th + thdot * R::from_f64(p.dt), thdot]
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
/// Generic over the precision `R`.
#[inline(always)]
pub fn cartpole_step<R: Real>(p: &CartPolePhysics, x: [R; 4], force: R) -> [R; 4] {
    let [pos, vel, theta, theta_dot] = x;
    let (sin, cos) = (theta.sin(), theta.cos());
    let total = R::from_f64(p.mass_pole + p.mass_cart);
    let pml = R::from_f64(p.mass_pole * p.length);
    let temp = (force + pml * theta_dot * theta_dot * sin) / total;
    let theta_acc = (R::from_f64(p.gravity) * sin - cos * temp)
        / (R::from_f64(p.length)
            * (R::from_f64(4.0 / 3.0) - R::from_f64(p.mass_pole) * cos * cos / total));
    let x_acc = temp - pml * theta_acc * cos / total;
    let tau = R::from_f64(p.tau);
    [pos + tau * vel, vel + tau * x_acc, theta + tau * theta_dot, theta_dot + tau * theta_acc]
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

    /// [`Dynamics::step`] of `n` samples in structure of arrays: component `i` of sample `j`
    /// is `x[i·n + j]` (likewise `u` and `next`), all at horizon step `t`. Same values as
    /// `step` per sample. The default loops over `step` (`nx ≤` [`MAX_NX`], `nu ≤` [`MAX_NU`]).
    fn step_batch(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64], n: usize) {
        per_sample_step(self, x, u, t, next, n)
    }
    /// Adds [`Dynamics::running_cost`] of each of `n` samples (layout of
    /// [`Dynamics::step_batch`]) to `cost[j]`.
    fn running_cost_batch(&self, x: &[f64], u: &[f64], t: usize, cost: &mut [f64], n: usize) {
        per_sample_cost(self, x, u, t, cost, n)
    }
    /// Adds [`Dynamics::terminal_cost`] of each of `n` samples to `cost[j]`.
    fn terminal_cost_batch(&self, x: &[f64], cost: &mut [f64], n: usize) {
        per_sample_terminal(self, x, cost, n)
    }
    /// [`Dynamics::step_batch`] in f32 (MPPI's f32 precision mode). The default computes each
    /// sample's [`Dynamics::step`] in f64 and rounds the result; built-in systems run in f32.
    fn step_batch_f32(&self, x: &[f32], u: &[f32], t: usize, next: &mut [f32], n: usize) {
        per_sample_step(self, x, u, t, next, n)
    }
    /// [`Dynamics::running_cost_batch`] in f32 (default: f64 per sample, rounded).
    fn running_cost_batch_f32(&self, x: &[f32], u: &[f32], t: usize, cost: &mut [f32], n: usize) {
        per_sample_cost(self, x, u, t, cost, n)
    }
    /// [`Dynamics::terminal_cost_batch`] in f32 (default: f64 per sample, rounded).
    fn terminal_cost_batch_f32(&self, x: &[f32], cost: &mut [f32], n: usize) {
        per_sample_terminal(self, x, cost, n)
    }
}

/// The batched defaults in either precision: each sample gathered into f64, the scalar method,
/// the result rounded back (exact for f64).
fn per_sample_step<D: Dynamics + ?Sized, R: Real>(
    d: &D,
    x: &[R],
    u: &[R],
    t: usize,
    next: &mut [R],
    n: usize,
) {
    let (nx, nu) = (d.nx(), d.nu());
    let (mut xs, mut us, mut ns) = ([0.0; MAX_NX], [0.0; MAX_NU], [0.0; MAX_NX]);
    for j in 0..n {
        (0..nx).for_each(|i| xs[i] = x[i * n + j].to_f64());
        (0..nu).for_each(|i| us[i] = u[i * n + j].to_f64());
        d.step(&xs[..nx], &us[..nu], t, &mut ns[..nx]);
        (0..nx).for_each(|i| next[i * n + j] = R::from_f64(ns[i]));
    }
}

/// See [`per_sample_step`]: `cost[j] +=` each sample's running cost.
fn per_sample_cost<D: Dynamics + ?Sized, R: Real>(
    d: &D,
    x: &[R],
    u: &[R],
    t: usize,
    cost: &mut [R],
    n: usize,
) {
    let (nx, nu) = (d.nx(), d.nu());
    let (mut xs, mut us) = ([0.0; MAX_NX], [0.0; MAX_NU]);
    for (j, c) in cost[..n].iter_mut().enumerate() {
        (0..nx).for_each(|i| xs[i] = x[i * n + j].to_f64());
        (0..nu).for_each(|i| us[i] = u[i * n + j].to_f64());
        *c += R::from_f64(d.running_cost(&xs[..nx], &us[..nu], t));
    }
}

/// See [`per_sample_step`]: `cost[j] +=` each sample's terminal cost.
fn per_sample_terminal<D: Dynamics + ?Sized, R: Real>(d: &D, x: &[R], cost: &mut [R], n: usize) {
    let nx = d.nx();
    let mut xs = [0.0; MAX_NX];
    for (j, c) in cost[..n].iter_mut().enumerate() {
        (0..nx).for_each(|i| xs[i] = x[i * n + j].to_f64());
        *c += R::from_f64(d.terminal_cost(&xs[..nx]));
    }
}

/// The rows of a structure-of-arrays buffer: `N` slices of `n` values.
#[inline(always)]
fn rows<R, const N: usize>(v: &[R], n: usize) -> [&[R]; N] {
    std::array::from_fn(|i| &v[i * n..(i + 1) * n])
}

/// One lane per sample: `next[·, j] = f(x[·, j], u[·, j])` over `n` samples in structure of
/// arrays (the batched step of a system with `NX` states and `NU` controls). Branch-free
/// `f` vectorises.
#[inline(always)]
pub fn lanes_step<R: Real, const NX: usize, const NU: usize>(
    x: &[R],
    u: &[R],
    next: &mut [R],
    n: usize,
    f: impl Fn([R; NX], [R; NU]) -> [R; NX],
) {
    if n == 0 {
        return;
    }
    let (xr, ur) = (rows::<R, NX>(x, n), rows::<R, NU>(u, n));
    let mut it = next[..NX * n].chunks_exact_mut(n);
    let nr: [&mut [R]; NX] = std::array::from_fn(|_| it.next().expect("NX rows"));
    for j in 0..n {
        let y = f(std::array::from_fn(|i| xr[i][j]), std::array::from_fn(|i| ur[i][j]));
        for i in 0..NX {
            nr[i][j] = y[i];
        }
    }
}

/// One lane per sample: `cost[j] += f(x[·, j], u[·, j])` (a batched running cost; a terminal
/// cost takes `NU = 0` and an empty `u`).
#[inline(always)]
pub fn lanes_cost<R: Real, const NX: usize, const NU: usize>(
    x: &[R],
    u: &[R],
    cost: &mut [R],
    n: usize,
    f: impl Fn([R; NX], [R; NU]) -> R,
) {
    if n == 0 {
        return;
    }
    let (xr, ur) = (rows::<R, NX>(x, n), rows::<R, NU>(u, n));
    for (j, c) in cost[..n].iter_mut().enumerate() {
        *c += f(std::array::from_fn(|i| xr[i][j]), std::array::from_fn(|i| ur[i][j]));
    }
}

/// The six batched methods of a system with `NX` states and `NU` controls from its generic
/// physics: `$step(x, u) -> [R; NX]`, `$cost(x, u) -> R`, `$term(x) -> R`.
macro_rules! batched {
    ($nx:literal, $nu:literal, $step:expr, $cost:expr, $term:expr) => {
        #[inline(always)]
        fn step_batch(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64], n: usize) {
            lanes_step::<f64, $nx, $nu>(x, u, next, n, |x, u| $step(x, u))
        }
        #[inline(always)]
        fn running_cost_batch(&self, x: &[f64], u: &[f64], _t: usize, c: &mut [f64], n: usize) {
            lanes_cost::<f64, $nx, $nu>(x, u, c, n, |x, u| $cost(x, u))
        }
        #[inline(always)]
        fn terminal_cost_batch(&self, x: &[f64], c: &mut [f64], n: usize) {
            lanes_cost::<f64, $nx, 0>(x, &[], c, n, |x, _| $term(x))
        }
        #[inline(always)]
        fn step_batch_f32(&self, x: &[f32], u: &[f32], _t: usize, next: &mut [f32], n: usize) {
            lanes_step::<f32, $nx, $nu>(x, u, next, n, |x, u| $step(x, u))
        }
        #[inline(always)]
        fn running_cost_batch_f32(&self, x: &[f32], u: &[f32], _t: usize, c: &mut [f32], n: usize) {
            lanes_cost::<f32, $nx, $nu>(x, u, c, n, |x, u| $cost(x, u))
        }
        #[inline(always)]
        fn terminal_cost_batch_f32(&self, x: &[f32], c: &mut [f32], n: usize) {
            lanes_cost::<f32, $nx, 0>(x, &[], c, n, |x, _| $term(x))
        }
    };
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
    #[inline(always)]
    fn step_batch(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64], n: usize) {
        (*self).step_batch(x, u, t, next, n)
    }
    #[inline(always)]
    fn running_cost_batch(&self, x: &[f64], u: &[f64], t: usize, cost: &mut [f64], n: usize) {
        (*self).running_cost_batch(x, u, t, cost, n)
    }
    #[inline(always)]
    fn terminal_cost_batch(&self, x: &[f64], cost: &mut [f64], n: usize) {
        (*self).terminal_cost_batch(x, cost, n)
    }
    #[inline(always)]
    fn step_batch_f32(&self, x: &[f32], u: &[f32], t: usize, next: &mut [f32], n: usize) {
        (*self).step_batch_f32(x, u, t, next, n)
    }
    #[inline(always)]
    fn running_cost_batch_f32(&self, x: &[f32], u: &[f32], t: usize, cost: &mut [f32], n: usize) {
        (*self).running_cost_batch_f32(x, u, t, cost, n)
    }
    #[inline(always)]
    fn terminal_cost_batch_f32(&self, x: &[f32], cost: &mut [f32], n: usize) {
        (*self).terminal_cost_batch_f32(x, cost, n)
    }
}

/// Gym pendulum dynamics for MPPI (state `[θ, θ̇]`, control torque clamped to ±2; running
/// cost `norm(θ)² + 0.1 θ̇² + 0.001 u²`), as pytorch-mppi's pendulum example uses them; start
/// hanging down, `(π, 0)`. In f64 throughout (the exact Gymnasium env with its float32 action
/// arithmetic is `kestrel_envs::Pendulum`, the [`Torque::F32`] mode of the same step).
#[derive(Clone, Copy, Debug, Default)]
pub struct PendulumDynamics;

impl PendulumDynamics {
    #[inline(always)]
    fn step_r<R: Real>(x: [R; 2], u: [R; 1]) -> [R; 2] {
        pendulum_step(&PendulumPhysics::default(), x, u[0], Torque::F64)
    }

    #[inline(always)]
    fn cost_r<R: Real>(x: [R; 2], u: [R; 1]) -> R {
        // ((θ + π) mod 2π) − π with the floored remainder a − b⌊a/b⌋ (torch.remainder's
        // definition; cheaper than fmod).
        let (pi, tau) = (R::from_f64(std::f64::consts::PI), R::from_f64(std::f64::consts::TAU));
        let a = x[0] + pi;
        let th = a - tau * (a / tau).floor() - pi;
        th * th + R::from_f64(0.1) * x[1] * x[1] + R::from_f64(0.001) * u[0] * u[0]
    }
}

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
        next[..2].copy_from_slice(&Self::step_r([x[0], x[1]], [u[0]]));
    }
    #[inline(always)]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::cost_r([x[0], x[1]], [u[0]])
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&[std::f64::consts::PI, 0.0]);
    }
    batched!(2, 1, Self::step_r, Self::cost_r, no_cost);
}

/// The terminal cost of systems without one (0 in either precision).
#[inline(always)]
fn no_cost<R: Real, const N: usize>(_x: [R; N]) -> R {
    R::ZERO
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
        Self::hill_r([x[0], x[1]])
    }

    #[inline(always)]
    fn hill_r<R: Real>(x: [R; 2]) -> R {
        let (dx, dy) = (R::from_f64(Self::HILL[0]) - x[0], R::from_f64(Self::HILL[1]) - x[1]);
        let q =
            R::from_f64(0.1) * dx * dx + R::from_f64(0.1) * dx * dy + R::from_f64(0.1) * dy * dy;
        R::from_f64(200.0) * (-(R::from_f64(2.5) * q)).exp_lanes()
    }

    #[inline(always)]
    fn state_cost<R: Real>(x: [R; 2]) -> R {
        let (gx, gy) = (R::from_f64(Self::GOAL[0]) - x[0], R::from_f64(Self::GOAL[1]) - x[1]);
        gx * gx + gy * gy + Self::hill_r(x)
    }

    #[inline(always)]
    fn step_r<R: Real>(x: [R; 2], u: [R; 2]) -> [R; 2] {
        [x[0] + R::from_f64(0.5) * u[0], x[1] - R::from_f64(0.5) * u[1]]
    }

    #[inline(always)]
    fn cost_r<R: Real>(x: [R; 2], u: [R; 2]) -> R {
        Self::state_cost(x) + R::from_f64(0.01) * (u[0] * u[0] + u[1] * u[1])
    }

    #[inline(always)]
    fn terminal_r<R: Real>(x: [R; 2]) -> R {
        R::from_f64(10.0) * Self::state_cost(x)
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
        next[..2].copy_from_slice(&Self::step_r([x[0], x[1]], [u[0], u[1]]));
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::cost_r([x[0], x[1]], [u[0], u[1]])
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        Self::terminal_r([x[0], x[1]])
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&Self::START);
    }
    batched!(2, 2, Self::step_r, Self::cost_r, Self::terminal_r);
}

/// jax-mppi's basic tuning example: `x' = x + 0.1 u` (`u` broadcast over the 2 states), cost
/// `|x|² + 0.01 u²`, terminal `10 |x|²`, start `(1, −0.5)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BasicLinear;

impl BasicLinear {
    #[inline(always)]
    fn step_r<R: Real>(x: [R; 2], u: [R; 1]) -> [R; 2] {
        [x[0] + R::from_f64(0.1) * u[0], x[1] + R::from_f64(0.1) * u[0]]
    }

    #[inline(always)]
    fn cost_r<R: Real>(x: [R; 2], u: [R; 1]) -> R {
        x[0] * x[0] + x[1] * x[1] + R::from_f64(0.01) * u[0] * u[0]
    }

    #[inline(always)]
    fn terminal_r<R: Real>(x: [R; 2]) -> R {
        R::from_f64(10.0) * (x[0] * x[0] + x[1] * x[1])
    }
}

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
        next[..2].copy_from_slice(&Self::step_r([x[0], x[1]], [u[0]]));
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::cost_r([x[0], x[1]], [u[0]])
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        Self::terminal_r([x[0], x[1]])
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&[1.0, -0.5]);
    }
    batched!(2, 1, Self::step_r, Self::cost_r, Self::terminal_r);
}

/// A double integrator in `d` dimensions: state `[positions, velocities]`, control
/// accelerations, `dt = 0.1`, start at rest at the origin; cost `|p − goal|² + 0.1 |v|² + 0.01 |u|²` with the goal at 1.
#[derive(Clone, Copy, Debug)]
pub struct DoubleIntegrator {
    /// Dimensions (1 to 4).
    pub dims: usize,
}

impl DoubleIntegrator {
    /// The batched step in either precision: dimension by dimension, one lane per sample.
    #[inline(always)]
    fn step_rows<R: Real>(&self, x: &[R], u: &[R], next: &mut [R], n: usize) {
        let d = self.dims;
        for i in 0..d {
            let (p, v, a) = (&x[i * n..][..n], &x[(d + i) * n..][..n], &u[i * n..][..n]);
            let (np, nv) = next[..2 * d * n].split_at_mut(d * n);
            let (np, nv) = (&mut np[i * n..][..n], &mut nv[i * n..][..n]);
            for j in 0..n {
                nv[j] = v[j] + R::from_f64(0.1) * a[j];
                np[j] = p[j] + R::from_f64(0.1) * nv[j];
            }
        }
    }

    /// The batched running cost in either precision: each sample's sum over dimensions in the
    /// order of the scalar cost, then added to `cost`.
    #[inline(always)]
    fn cost_rows<R: Real>(&self, x: &[R], u: &[R], cost: &mut [R], n: usize) {
        let d = self.dims;
        let mut acc = [R::ZERO; 64];
        for j0 in (0..n).step_by(64) {
            let m = (n - j0).min(64);
            acc[..m].iter_mut().for_each(|a| *a = R::ZERO);
            for i in 0..d {
                let p = &x[i * n + j0..][..m];
                let (v, a) = (&x[(d + i) * n + j0..][..m], &u[i * n + j0..][..m]);
                for j in 0..m {
                    let e = p[j] - R::from_f64(1.0);
                    acc[j] +=
                        e * e + R::from_f64(0.1) * v[j] * v[j] + R::from_f64(0.01) * a[j] * a[j];
                }
            }
            cost[j0..j0 + m].iter_mut().zip(&acc[..m]).for_each(|(c, &a)| *c += a);
        }
    }
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
        self.step_rows(x, u, next, 1)
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        let mut c = [0.0];
        self.cost_rows(x, u, &mut c, 1);
        c[0]
    }
    #[inline(always)]
    fn step_batch(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64], n: usize) {
        self.step_rows(x, u, next, n)
    }
    #[inline(always)]
    fn running_cost_batch(&self, x: &[f64], u: &[f64], _t: usize, cost: &mut [f64], n: usize) {
        self.cost_rows(x, u, cost, n)
    }
    #[inline(always)]
    fn terminal_cost_batch(&self, _x: &[f64], _cost: &mut [f64], _n: usize) {}
    #[inline(always)]
    fn step_batch_f32(&self, x: &[f32], u: &[f32], _t: usize, next: &mut [f32], n: usize) {
        self.step_rows(x, u, next, n)
    }
    #[inline(always)]
    fn running_cost_batch_f32(&self, x: &[f32], u: &[f32], _t: usize, cost: &mut [f32], n: usize) {
        self.cost_rows(x, u, cost, n)
    }
    #[inline(always)]
    fn terminal_cost_batch_f32(&self, _x: &[f32], _cost: &mut [f32], _n: usize) {}
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

    #[inline(always)]
    fn state_cost<R: Real>(x: [R; 4]) -> R {
        x[2] * x[2]
            + R::from_f64(0.1) * x[3] * x[3]
            + R::from_f64(0.1) * x[0] * x[0]
            + R::from_f64(0.01) * x[1] * x[1]
    }

    #[inline(always)]
    fn step_r<R: Real>(x: [R; 4], u: [R; 1]) -> [R; 4] {
        let force = u[0].clamp(R::from_f64(-Self::FORCE_MAG), R::from_f64(Self::FORCE_MAG));
        cartpole_step(&CartPolePhysics::default(), x, force)
    }

    #[inline(always)]
    fn cost_r<R: Real>(x: [R; 4], u: [R; 1]) -> R {
        Self::state_cost(x) + R::from_f64(1e-4) * u[0] * u[0]
    }

    #[inline(always)]
    fn terminal_r<R: Real>(x: [R; 4]) -> R {
        R::from_f64(10.0) * Self::state_cost(x)
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
        next[..4].copy_from_slice(&Self::step_r([x[0], x[1], x[2], x[3]], [u[0]]));
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::cost_r([x[0], x[1], x[2], x[3]], [u[0]])
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        Self::terminal_r([x[0], x[1], x[2], x[3]])
    }
    fn initial_state(&self, x: &mut [f64]) {
        x.copy_from_slice(&[0.0, 0.0, 0.2, 0.0]);
    }
    /// Gymnasium's CartPole-v1 limits: `|x| > 2.4` or `|θ| > 12°`.
    fn terminated(&self, x: &[f64]) -> bool {
        x[0].abs() > 2.4 || x[2].abs() > 12.0 * 2.0 * std::f64::consts::PI / 360.0
    }
    batched!(4, 1, Self::step_r, Self::cost_r, Self::terminal_r);
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

    #[inline(always)]
    fn state_cost<R: Real>(x: [R; 3]) -> R {
        let (dx, dy) = (x[0] - R::from_f64(Self::GOAL[0]), x[1] - R::from_f64(Self::GOAL[1]));
        dx * dx + dy * dy
    }

    #[inline(always)]
    fn step_r<R: Real>(x: [R; 3], u: [R; 2]) -> [R; 3] {
        let dt = R::from_f64(0.1);
        let (s, c) = (x[2].sin(), x[2].cos());
        [x[0] + dt * u[0] * c, x[1] + dt * u[0] * s, x[2] + dt * u[1]]
    }

    #[inline(always)]
    fn cost_r<R: Real>(x: [R; 3], u: [R; 2]) -> R {
        Self::state_cost(x) + R::from_f64(0.01) * (u[0] * u[0] + u[1] * u[1])
    }

    #[inline(always)]
    fn terminal_r<R: Real>(x: [R; 3]) -> R {
        R::from_f64(10.0) * Self::state_cost(x)
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
        next[..3].copy_from_slice(&Self::step_r([x[0], x[1], x[2]], [u[0], u[1]]));
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::cost_r([x[0], x[1], x[2]], [u[0], u[1]])
    }
    #[inline]
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        Self::terminal_r([x[0], x[1], x[2]])
    }
    batched!(3, 2, Self::step_r, Self::cost_r, Self::terminal_r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::{FRAC_PI_2, PI, TAU};

    /// The pendulum step against hand-computed values of `θ̇' = clip(θ̇ + (15 sin θ + 3u) dt,
    /// ±8)`, `θ' = θ + θ̇' dt` (Gymnasium's defaults): gravity alone, a torque beyond the ±2
    /// limit, the speed clip, and the f32 torque mode's rounding of a non-representable action;
    /// and the running cost's angle wrapping `((θ + π) mod 2π) − π`.
    #[test]
    fn pendulum_step_and_cost_match_hand_computed_values() {
        let p = PendulumPhysics::default();
        let close =
            |a: [f64; 2], b: [f64; 2]| (a[0] - b[0]).abs() < 1e-12 && (a[1] - b[1]).abs() < 1e-12;
        // Horizontal, no torque: θ̇' = 15 · 0.05.
        let s = pendulum_step(&p, [FRAC_PI_2, 0.0], 0.0, Torque::F64);
        assert!(close(s, [FRAC_PI_2 + 0.75 * 0.05, 0.75]), "{s:?}");
        // Upright at rest, torque 5 clamps to 2: θ̇' = 6 · 0.05, and -5 mirrors it.
        let s = pendulum_step(&p, [0.0, 0.0], 5.0, Torque::F64);
        assert!(close(s, [0.015, 0.3]), "{s:?}");
        let s = pendulum_step(&p, [0.0, 0.0], -5.0, Torque::F64);
        assert!(close(s, [-0.015, -0.3]), "{s:?}");
        // 7.9 + 21 · 0.05 = 8.95 is clipped to the speed limit 8.
        let s = pendulum_step(&p, [FRAC_PI_2, 7.9], 2.0, Torque::F64);
        assert!(close(s, [FRAC_PI_2 + 0.4, 8.0]), "{s:?}");
        // Torque::F32 forms 3 · u in f32: 0.1 is not an f32, so the two modes differ.
        let f32_thdot = f64::from(3.0f32 * 0.1f32) * 0.05;
        let s32 = pendulum_step::<f64>(&p, [0.0, 0.0], 0.1, Torque::F32);
        let s64 = pendulum_step::<f64>(&p, [0.0, 0.0], 0.1, Torque::F64);
        assert_eq!(s32[1], f32_thdot);
        assert!((s64[1] - 0.015).abs() < 1e-15 && s32[1] != s64[1], "{s32:?} {s64:?}");
        // Cost: the angle is wrapped into [-π, π) before squaring.
        let d = PendulumDynamics;
        assert!((d.running_cost(&[TAU + 0.5, 0.0], &[0.0], 0) - 0.25).abs() < 1e-12);
        assert!(
            (d.running_cost(&[-TAU - 0.5, 2.0], &[1.0], 0) - (0.25 + 0.4 + 0.001)).abs() < 1e-12
        );
        assert!((d.running_cost(&[PI, 0.0], &[0.0], 0) - PI * PI).abs() < 1e-12);
    }

    /// The cart-pole step from rest upright under 1 N against the equations solved by hand
    /// (`temp = 10/11`, `θ̈ = −60/41`, `ẍ = 40/41`), its mirror symmetry (negating state and
    /// force negates the next state), and `ContinuousCartPole`'s force clamp and
    /// termination limits (|x| > 2.4, |θ| > 12°).
    #[test]
    fn cartpole_step_matches_the_equations_and_is_mirror_symmetric() {
        let p = CartPolePhysics::default();
        let s = cartpole_step::<f64>(&p, [0.0; 4], 1.0);
        let want = [0.0, 0.02 * 40.0 / 41.0, 0.0, 0.02 * -60.0 / 41.0];
        for i in 0..4 {
            assert!((s[i] - want[i]).abs() < 1e-14, "component {i}: {s:?} vs {want:?}");
        }
        let x: [f64; 4] = [0.3, -0.7, 0.15, 1.1];
        let a = cartpole_step(&p, x, 3.5);
        let b = cartpole_step(&p, x.map(|v| -v), -3.5);
        for i in 0..4 {
            assert!((a[i] + b[i]).abs() < 1e-15, "component {i}: {a:?} vs {b:?}");
            assert!(a[i] != x[i], "component {i} moved");
        }
        let (cp, mut n1, mut n2) = (ContinuousCartPole, [0.0; 4], [0.0; 4]);
        cp.step(&x, &[25.0], 0, &mut n1);
        cp.step(&x, &[ContinuousCartPole::FORCE_MAG], 0, &mut n2);
        assert_eq!(n1, n2, "a force beyond ±10 N is clamped");
        assert!(!cp.terminated(&[2.4, 0.0, 0.2, 0.0]), "0.2 rad < 12° and |x| = 2.4 is inside");
        assert!(cp.terminated(&[2.41, 0.0, 0.0, 0.0]));
        assert!(cp.terminated(&[0.0, 0.0, -0.21, 0.0]), "12° is 0.2094 rad");
    }

    /// A system without batch code: the defaults must gather sample `j` from `x[i·n + j]`.
    struct Skew;
    impl Dynamics for Skew {
        fn nx(&self) -> usize {
            3
        }
        fn nu(&self) -> usize {
            2
        }
        fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) {
            next[0] = x[0] + u[0] * x[1];
            next[1] = 2.0 * x[1] - u[1] + t as f64;
            next[2] = x[2] * x[0] - u[0];
        }
        fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64 {
            x[0] - 2.0 * x[1] + 3.0 * x[2] * x[2] + u[0] * u[1] + t as f64
        }
        fn terminal_cost(&self, x: &[f64]) -> f64 {
            x[2] - x[0] * x[1]
        }
    }

    /// Every system's batched methods (structure of arrays, `n` samples) against its scalar
    /// methods applied to each sample gathered by hand: bit-identical in f64, within f32
    /// rounding in f32; the cost methods add to what `cost` holds. `n = 70` crosses the
    /// double integrator's 64-sample cost chunks.
    #[test]
    fn batched_methods_agree_with_the_scalar_ones_for_every_system() {
        fn check<D: Dynamics>(d: &D, name: &str) {
            let (nx, nu, n, t) = (d.nx(), d.nu(), 70, 3);
            let x: Vec<f64> = (0..nx * n).map(|k| 1.5 * ((k as f64) * 0.37 + 0.2).sin()).collect();
            let u: Vec<f64> = (0..nu * n).map(|k| 2.5 * ((k as f64) * 0.71).cos()).collect();
            let (mut next, mut cost, mut term) = (vec![0.0; nx * n], vec![1.0; n], vec![-2.0; n]);
            d.step_batch(&x, &u, t, &mut next, n);
            d.running_cost_batch(&x, &u, t, &mut cost, n);
            d.terminal_cost_batch(&x, &mut term, n);
            let (x32, u32): (Vec<f32>, Vec<f32>) =
                (x.iter().map(|&v| v as f32).collect(), u.iter().map(|&v| v as f32).collect());
            let (mut next32, mut cost32, mut term32) =
                (vec![0.0f32; nx * n], vec![1.0f32; n], vec![-2.0f32; n]);
            d.step_batch_f32(&x32, &u32, t, &mut next32, n);
            d.running_cost_batch_f32(&x32, &u32, t, &mut cost32, n);
            d.terminal_cost_batch_f32(&x32, &mut term32, n);
            let near = |a: f32, b: f64| (f64::from(a) - b).abs() <= 1e-4 * (1.0 + b.abs());
            for j in 0..n {
                let xs: Vec<f64> = (0..nx).map(|i| x[i * n + j]).collect();
                let us: Vec<f64> = (0..nu).map(|i| u[i * n + j]).collect();
                let mut ns = vec![0.0; nx];
                d.step(&xs, &us, t, &mut ns);
                let c = 1.0 + d.running_cost(&xs, &us, t);
                let tc = -2.0 + d.terminal_cost(&xs);
                for i in 0..nx {
                    assert_eq!(next[i * n + j], ns[i], "{name}: sample {j}, state {i}");
                    assert!(near(next32[i * n + j], ns[i]), "{name} f32: sample {j}, state {i}");
                }
                assert_eq!(cost[j], c, "{name}: running cost of sample {j}");
                assert_eq!(term[j], tc, "{name}: terminal cost of sample {j}");
                assert!(near(cost32[j], c), "{name} f32: {} vs {c}", cost32[j]);
                assert!(near(term32[j], tc), "{name} f32: {} vs {tc}", term32[j]);
            }
        }
        check(&PendulumDynamics, "pendulum");
        check(&Nav2d, "nav2d");
        check(&BasicLinear, "basic-linear");
        check(&DoubleIntegrator { dims: 3 }, "double-integrator");
        check(&ContinuousCartPole, "cartpole");
        check(&DiffDrive, "diff-drive");
        check(&Skew, "defaults");
        check(&&Nav2d, "a reference");
    }
}
