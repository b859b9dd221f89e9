//! Dynamics for MPPI: the systems of both peers' tests and examples (navigation around the
//! hill, jax-mppi's basic linear system), a double integrator, a continuous-force cart-pole and
//! a differential-drive robot. These are `Dynamics` (state slices, costs); the `Env` versions
//! in `kestrel-envs` exist so far for Pendulum and discrete CartPole only.

use crate::mppi::Dynamics;

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
    fn nx(&self) -> usize {
        2
    }
    fn nu(&self) -> usize {
        2
    }
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        next[0] = x[0] + 0.5 * u[0];
        next[1] = x[1] - 0.5 * u[1];
    }
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::state_cost(x) + 0.01 * (u[0] * u[0] + u[1] * u[1])
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * Self::state_cost(x)
    }
}

/// jax-mppi's basic tuning example: `x' = x + 0.1 u` (`u` broadcast over the 2 states), cost
/// `|x|² + 0.01 u²`, terminal `10 |x|²`, start `(1, −0.5)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct BasicLinear;

impl Dynamics for BasicLinear {
    fn nx(&self) -> usize {
        2
    }
    fn nu(&self) -> usize {
        1
    }
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        next[0] = x[0] + 0.1 * u[0];
        next[1] = x[1] + 0.1 * u[0];
    }
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        x[0] * x[0] + x[1] * x[1] + 0.01 * u[0] * u[0]
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * (x[0] * x[0] + x[1] * x[1])
    }
}

/// A double integrator in `d` dimensions: state `[positions, velocities]`, control
/// accelerations, `dt = 0.1`; cost `|p − goal|² + 0.1 |v|² + 0.01 |u|²` with the goal at 1.
#[derive(Clone, Copy, Debug)]
pub struct DoubleIntegrator {
    /// Dimensions (1 to 4).
    pub dims: usize,
}

impl Dynamics for DoubleIntegrator {
    fn nx(&self) -> usize {
        2 * self.dims
    }
    fn nu(&self) -> usize {
        self.dims
    }
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        let d = self.dims;
        for i in 0..d {
            next[d + i] = x[d + i] + 0.1 * u[i];
            next[i] = x[i] + 0.1 * next[d + i];
        }
    }
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        let d = self.dims;
        (0..d).map(|i| (x[i] - 1.0).powi(2) + 0.1 * x[d + i] * x[d + i] + 0.01 * u[i] * u[i]).sum()
    }
}

/// Gymnasium's cart-pole equations (CartPole-v1 constants, Euler, `τ = 0.02`) with a continuous
/// force `u` in newtons, clamped to `±10` (CartPole-v1's `force_mag`). State `[x, ẋ, θ, θ̇]`,
/// θ = 0 upright. Balancing cost `θ² + 0.1 θ̇² + 0.1 x² + 0.01 ẋ² + 1e-4 u²`, terminal `10 ×`
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
    fn nx(&self) -> usize {
        4
    }
    fn nu(&self) -> usize {
        1
    }
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
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::state_cost(x) + 1e-4 * u[0] * u[0]
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * Self::state_cost(x)
    }
}

/// A differential-drive (unicycle) robot: state `[x, y, heading]`, control `[v, ω]` (forward
/// speed, turn rate), `dt = 0.1`; cost `|p − goal|² + 0.01 |u|²` with the goal at `(2, 1)`,
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
    fn nx(&self) -> usize {
        3
    }
    fn nu(&self) -> usize {
        2
    }
    fn step(&self, x: &[f64], u: &[f64], _t: usize, next: &mut [f64]) {
        let dt = 0.1;
        let (s, c) = x[2].sin_cos();
        next[0] = x[0] + dt * u[0] * c;
        next[1] = x[1] + dt * u[0] * s;
        next[2] = x[2] + dt * u[1];
    }
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        Self::state_cost(x) + 0.01 * (u[0] * u[0] + u[1] * u[1])
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * Self::state_cost(x)
    }
}
