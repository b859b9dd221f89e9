//! What every part of the vector-field systems shares: the size limits, the value checks
//! (each error names the field) and `torch.linspace`'s grid. A leaf: it imports no sibling.

use crate::error::EnvError;
use kestrel_core::FromInvalid;

/// Latent dimension (actdyn's `D`).
pub const LATENT_DIM: usize = 2;
/// Widest hidden layer of an [`Mlp`](super::Mlp) observation map (its activations live on
/// the stack).
pub const MAX_HIDDEN: usize = 256;
/// Largest input or output size of a [`Linear`](super::Linear) map.
pub const MAX_DIM: usize = 1 << 20;
/// Largest `grid_points` of a field's grid (α scaling or stored multi-attractor grids).
pub const MAX_GRID: usize = 4096;
/// Largest `grid_points` for which a multi-attractor is *generated* (the GP covariance has
/// `grid_points⁴` entries and is eigendecomposed).
pub const MAX_GP_GRID: usize = 64;

pub(super) fn finite(field: &'static str, v: f64) -> Result<(), EnvError> {
    if v.is_finite() { Ok(()) } else { Err(EnvError::invalid(field, v, "a finite number")) }
}

pub(super) fn grid_size(field: &'static str, n: usize, max: usize) -> Result<(), EnvError> {
    if (2..=max).contains(&n) {
        Ok(())
    } else {
        Err(EnvError::invalid(field, n, format!("2..={max} grid points per axis")))
    }
}

/// `n` points from `start` to `end` computed as `torch.linspace` does on CPU in f64: with
/// `step = (end − start)/(n − 1)`, the first `n/2` points are `fma(step, i, start)` and the
/// rest `fma(−step, n − 1 − i, end)` (so the grid is symmetric). This reproduces actdyn's grid
/// bit for bit. `n = 1` gives `[start]`.
pub fn linspace(start: f64, end: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![start];
    }
    let step = (end - start) / (n - 1) as f64;
    let half = n / 2;
    (0..n)
        .map(|i| {
            if i < half {
                step.mul_add(i as f64, start)
            } else {
                (-step).mul_add((n - 1 - i) as f64, end)
            }
        })
        .collect()
}
