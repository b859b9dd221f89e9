//! Radial-basis dynamics on a 2-D grid of centres (`shared/reference/actdyn.md` §1.2).
//!
//! Centre `c = n·i + j` sits at `(g_i, g_j)` with `g = linspace(−z_max, z_max, n)`, and
//! `Φ_c(z) = α·exp(−γ‖z − c_c‖²)`. Because the grid is a product, `Φ_c(z)` factors as
//! `α·exp(−γ(z₀ − g_i)²)·exp(−γ(z₁ − g_j)²)`: [`RbfGrid::features`] takes `2n` exponentials per
//! point instead of `n²`.
//!
//! The dynamics mean is `m(z) = Φ(z)ᵀW` with `W` stored `[C][2]` row-major (`W[c][d]` at
//! `2c + d`), and the transition mean is `μ′(z, u) = m(z) + u·dt` (non-residual, the reference's
//! default) or `z + m(z)·dt + u·dt` (residual).

use crate::error::ActdynError;
use kestrel_core::FromInvalid;
use serde::{Deserialize, Serialize};

/// Latent dimension of the RBF dynamics (the grid is 2-D).
pub const LATENT_DIM: usize = 2;

/// An `n × n` grid of Gaussian radial-basis centres over `[−z_max, z_max]²`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RbfGrid {
    n: usize,
    z_max: f64,
    alpha: f64,
    gamma: f64,
    axis: Vec<f64>,
}

impl Default for RbfGrid {
    /// The reference's grid: `n = 25`, `z_max = 2`, `α = 0.1`, `γ = 1`.
    fn default() -> Self {
        RbfGrid::new(25, 2.0, 0.1, 1.0).expect("the default grid is valid")
    }
}

impl RbfGrid {
    /// A grid of `n × n` centres on `linspace(−z_max, z_max, n)²`, amplitude `alpha` and
    /// inverse squared width `gamma`.
    pub fn new(n: usize, z_max: f64, alpha: f64, gamma: f64) -> Result<Self, ActdynError> {
        if !(2..=4096).contains(&n) {
            return Err(ActdynError::invalid("num_grid_pts", n, "an integer from 2 to 4096"));
        }
        if !(z_max.is_finite() && z_max > 0.0) {
            return Err(ActdynError::invalid("z_max", z_max, "a finite number > 0"));
        }
        if !alpha.is_finite() {
            return Err(ActdynError::invalid("rbf_alpha", alpha, "a finite number"));
        }
        if !(gamma.is_finite() && gamma > 0.0) {
            return Err(ActdynError::invalid("rbf_gamma", gamma, "a finite number > 0"));
        }
        // torch.linspace: the first half counts up from −z_max, the second half down from
        // z_max, so the grid is symmetric to the last bit.
        let step = 2.0 * z_max / (n - 1) as f64;
        let axis: Vec<f64> = (0..n)
            .map(|k| {
                if k < n / 2 { -z_max + k as f64 * step } else { z_max - (n - 1 - k) as f64 * step }
            })
            .collect();
        Ok(RbfGrid { n, z_max, alpha, gamma, axis })
    }

    /// A grid on an explicit axis (`n ≥ 2` strictly increasing finite values; centre
    /// `c = n·i + j` at `(axis[i], axis[j])`), e.g. the exact coordinates a fixture stores
    /// (the reference's own linspace differs from [`RbfGrid::new`]'s in the last bit).
    pub fn with_axis(axis: Vec<f64>, alpha: f64, gamma: f64) -> Result<Self, ActdynError> {
        let n = axis.len();
        if !(2..=4096).contains(&n) {
            return Err(ActdynError::invalid(
                "grid_axis",
                format!("{n} points"),
                "2 to 4096 points",
            ));
        }
        if axis.iter().any(|v| !v.is_finite()) || axis.windows(2).any(|w| w[0] >= w[1]) {
            return Err(ActdynError::invalid(
                "grid_axis",
                format!("{axis:?}"),
                "strictly increasing finite values",
            ));
        }
        let mut g = RbfGrid::new(n, axis[n - 1].abs().max(axis[0].abs()), alpha, gamma)?;
        g.axis = axis;
        Ok(g)
    }

    /// Points per axis (`n`).
    pub fn points_per_axis(&self) -> usize {
        self.n
    }

    /// Number of centres `C = n²`.
    pub fn num_centres(&self) -> usize {
        self.n * self.n
    }

    /// Half-width of the grid.
    pub fn z_max(&self) -> f64 {
        self.z_max
    }

    /// Amplitude `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Inverse squared width `γ`.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The grid coordinates `g` (length `n`).
    pub fn axis(&self) -> &[f64] {
        &self.axis
    }

    /// Centre `c` as `(g_i, g_j)` with `c = n·i + j`.
    pub fn centre(&self, c: usize) -> [f64; 2] {
        [self.axis[c / self.n], self.axis[c % self.n]]
    }

    /// Writes `Φ(z)` (length `C`) into `out`, with `2n` exponentials and no allocation.
    ///
    /// # Panics
    /// If `out.len() != C`.
    pub fn features(&self, z: [f64; 2], out: &mut [f64]) {
        let n = self.n;
        assert_eq!(out.len(), n * n, "features: out must hold one value per centre");
        let g = self.gamma;
        // Row 0 of `out` first holds the second-axis factors e₁(j); rows n−1..1 are written
        // from it, then row 0 is scaled in place.
        for (o, &gj) in out[..n].iter_mut().zip(&self.axis) {
            let d = z[1] - gj;
            *o = (-g * d * d).exp();
        }
        let (first, rest) = out.split_at_mut(n);
        for (i, row) in rest.chunks_exact_mut(n).enumerate() {
            let d = z[0] - self.axis[i + 1];
            let e0 = self.alpha * (-g * d * d).exp();
            for (o, &e1) in row.iter_mut().zip(first.iter()) {
                *o = e0 * e1;
            }
        }
        let d = z[0] - self.axis[0];
        let e0 = self.alpha * (-g * d * d).exp();
        for o in first.iter_mut() {
            *o *= e0;
        }
    }
}

/// RBF latent dynamics: a grid, weights `W` `[C][2]` and the transition convention.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RbfDynamics {
    /// The centres and feature shape.
    pub grid: RbfGrid,
    /// `W` row-major `[C][2]`: `W[c][d]` at `2c + d`.
    pub weights: Vec<f64>,
    /// Time step of the transition.
    pub dt: f64,
    /// `μ′ = z + m(z)·dt + u·dt` when true, `μ′ = m(z) + u·dt` (the default) when false.
    pub residual: bool,
}

impl RbfDynamics {
    /// Dynamics on `grid` with weights `W` (`[C][2]` row-major), checked for length and
    /// finiteness.
    pub fn new(
        grid: RbfGrid,
        weights: Vec<f64>,
        dt: f64,
        residual: bool,
    ) -> Result<Self, ActdynError> {
        let c = grid.num_centres();
        if weights.len() != c * LATENT_DIM {
            return Err(ActdynError::invalid(
                "rbf_weights",
                format!("{} values", weights.len()),
                format!("C·2 = {} values ([C][2] row-major)", c * LATENT_DIM),
            ));
        }
        if let Some(w) = weights.iter().find(|w| !w.is_finite()) {
            return Err(ActdynError::invalid("rbf_weights", w, "finite values"));
        }
        if !(dt.is_finite() && dt > 0.0) {
            return Err(ActdynError::invalid("dt", dt, "a finite number > 0"));
        }
        Ok(RbfDynamics { grid, weights, dt, residual })
    }

    /// Replaces the weights by `weights` (checked as [`RbfDynamics::new`] checks them; on
    /// error the old ones stay).
    pub fn set_weights(&mut self, weights: &[f64]) -> Result<(), ActdynError> {
        if weights.len() != self.weights.len() {
            return Err(ActdynError::invalid(
                "rbf_weights",
                format!("{} values", weights.len()),
                format!("C·2 = {} values ([C][2] row-major)", self.weights.len()),
            ));
        }
        if let Some(w) = weights.iter().find(|w| !w.is_finite()) {
            return Err(ActdynError::invalid("rbf_weights", w, "finite values"));
        }
        self.weights.copy_from_slice(weights);
        Ok(())
    }

    /// Number of centres `C`.
    pub fn num_centres(&self) -> usize {
        self.grid.num_centres()
    }

    /// `m(z) = Φᵀ W` from precomputed features `phi = Φ(z)`.
    #[inline]
    pub fn mean(&self, phi: &[f64]) -> [f64; 2] {
        let (mut m0, mut m1) = (0.0, 0.0);
        for (p, w) in phi.iter().zip(self.weights.chunks_exact(2)) {
            m0 += p * w[0];
            m1 += p * w[1];
        }
        [m0, m1]
    }

    /// The transition mean `μ′(z, u)` from `z`, its features `phi = Φ(z)` and the action `u`.
    #[inline]
    pub fn transition(&self, z: [f64; 2], phi: &[f64], u: [f64; 2]) -> [f64; 2] {
        let m = self.mean(phi);
        let dt = self.dt;
        if self.residual {
            [z[0] + m[0] * dt + u[0] * dt, z[1] + m[1] * dt + u[1] * dt]
        } else {
            [m[0] + u[0] * dt, m[1] + u[1] * dt]
        }
    }

    /// Noise-free rollout: `z_0 = z0`, `z_{h+1} = μ′(z_h, x_h)` for the `H = x.len()/2`
    /// actions `x` (`[H][2]`); writes `z_0..z_H` (`[H+1][2]`) into `z_out`, using `phi`
    /// (length `C`) as scratch.
    pub fn rollout(&self, z0: [f64; 2], x: &[f64], phi: &mut [f64], z_out: &mut [f64]) {
        let h = x.len() / 2;
        assert_eq!(z_out.len(), 2 * (h + 1), "rollout: z_out must be [H+1][2]");
        let mut z = z0;
        z_out[..2].copy_from_slice(&z);
        for t in 0..h {
            self.grid.features(z, phi);
            z = self.transition(z, phi, [x[2 * t], x[2 * t + 1]]);
            z_out[2 * t + 2..2 * t + 4].copy_from_slice(&z);
        }
    }
}

/// The log-linear decoder `ŷ = exp(C′z + b′)` (rates only; the Fisher metric needs its
/// Jacobian `diag(ŷ)·C′`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogLinearDecoder {
    /// `C′` row-major `[N_y][2]`.
    pub c: Vec<f64>,
    /// `b′` `[N_y]`.
    pub b: Vec<f64>,
}

impl LogLinearDecoder {
    /// A decoder from `C′` (`[N_y][2]` row-major) and `b′` (`[N_y]`).
    pub fn new(c: Vec<f64>, b: Vec<f64>) -> Result<Self, ActdynError> {
        if b.is_empty() || c.len() != 2 * b.len() {
            return Err(ActdynError::invalid(
                "C_dec",
                format!("{} values with {} biases", c.len(), b.len()),
                "[N_y][2] row-major with N_y = len(b_dec) ≥ 1",
            ));
        }
        if let Some(v) = c.iter().chain(&b).find(|v| !v.is_finite()) {
            return Err(ActdynError::invalid("C_dec/b_dec", v, "finite values"));
        }
        Ok(LogLinearDecoder { c, b })
    }

    /// Number of outputs `N_y`.
    pub fn num_outputs(&self) -> usize {
        self.b.len()
    }

    /// The rates `ŷ(z)` (length `N_y`) into `out`.
    pub fn rates(&self, z: [f64; 2], out: &mut [f64]) {
        for ((o, c), b) in out.iter_mut().zip(self.c.chunks_exact(2)).zip(&self.b) {
            *o = (c[0] * z[0] + c[1] * z[1] + b).exp();
        }
    }

    /// The diagonal of `G = Hᵀ(HHᵀ)⁺H` with `H = diag(ŷ(z))·C′`, the orthogonal projector onto
    /// the row space of `H`, in closed form from the 2×2 matrix `HᵀH`: `I₂` at rank 2,
    /// `HᵀH / trace` at rank 1, 0 at rank 0. The rank is decided as `pinv` decides it on
    /// `HHᵀ`: an eigenvalue of `HᵀH` counts when it exceeds `N_y·ε` times the largest.
    pub fn projector_diag(&self, z: [f64; 2]) -> [f64; 2] {
        let (mut a, mut b, mut d) = (0.0, 0.0, 0.0);
        for (c, bias) in self.c.chunks_exact(2).zip(&self.b) {
            let y2 = (2.0 * (c[0] * z[0] + c[1] * z[1] + bias)).exp();
            a += y2 * c[0] * c[0];
            b += y2 * c[0] * c[1];
            d += y2 * c[1] * c[1];
        }
        let tr = a + d;
        if tr.is_nan() || tr <= 0.0 || tr.is_infinite() {
            // Rank 0, or rates that overflow f64: no usable information.
            return [0.0, 0.0];
        }
        // Eigenvalues of [[a, b], [b, d]].
        let half_gap = (0.25 * (a - d) * (a - d) + b * b).sqrt();
        let lmax = 0.5 * tr + half_gap;
        let lmin = (a * d - b * b) / lmax;
        let tol = self.b.len().max(2) as f64 * f64::EPSILON * lmax;
        if lmin > tol { [1.0, 1.0] } else { [a / tr, d / tr] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separable_features_equal_direct() {
        let g = RbfGrid::default();
        let mut phi = vec![0.0; g.num_centres()];
        for z in [[0.3, -1.2], [0.0, 0.0], [2.5, -3.0]] {
            g.features(z, &mut phi);
            for (c, &p) in phi.iter().enumerate() {
                let cc = g.centre(c);
                let r2 = (z[0] - cc[0]).powi(2) + (z[1] - cc[1]).powi(2);
                let direct = g.alpha() * (-g.gamma() * r2).exp();
                // Rounding the exponent's argument costs about |γr²|·ε relative either way.
                let tol = 4.0 * f64::EPSILON * (1.0 + g.gamma() * r2);
                assert!((p - direct).abs() <= tol * direct, "{p} vs {direct}");
            }
        }
    }

    #[test]
    fn bad_parameters_are_errors() {
        assert!(RbfGrid::new(1, 2.0, 0.1, 1.0).is_err());
        assert!(RbfGrid::new(25, -2.0, 0.1, 1.0).is_err());
        assert!(RbfGrid::new(25, 2.0, 0.1, 0.0).is_err());
        let e = RbfDynamics::new(RbfGrid::default(), vec![0.0; 3], 0.1, false).unwrap_err();
        assert!(e.to_string().contains("rbf_weights"), "{e}");
        assert!(LogLinearDecoder::new(vec![0.0; 3], vec![0.0; 2]).is_err());
    }

    #[test]
    fn projector_ranks() {
        // Rank 2.
        let dec = LogLinearDecoder::new(vec![1.0, 0.0, 0.0, 1.0, 0.5, 0.5], vec![0.0; 3]).unwrap();
        assert_eq!(dec.projector_diag([0.2, -0.1]), [1.0, 1.0]);
        // Rank 1: rows parallel to (1, 2): projector (1, 2)(1, 2)ᵀ/5.
        let dec = LogLinearDecoder::new(vec![1.0, 2.0, -0.5, -1.0], vec![0.0, 1.0]).unwrap();
        let g = dec.projector_diag([0.3, 0.1]);
        assert!((g[0] - 0.2).abs() < 1e-15 && (g[1] - 0.8).abs() < 1e-15, "{g:?}");
        // Rank 0.
        let dec = LogLinearDecoder::new(vec![0.0; 4], vec![0.0; 2]).unwrap();
        assert_eq!(dec.projector_diag([0.3, 0.1]), [0.0, 0.0]);
    }
}
