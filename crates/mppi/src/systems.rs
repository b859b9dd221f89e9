//! Dynamics used by both peers' tests and examples (as `Dynamics` for MPPI; `Env` versions
//! for rollouts live in `kestrel-envs`, where Pendulum is).

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
