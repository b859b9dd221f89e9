//! C's GP multi-attractor: the generator (a GP draw over a grid, attractors mixed in) and
//! the bilinear interpolation of the stored grids, with C's quirks kept.

use super::common::{MAX_GP_GRID, MAX_GRID, finite, grid_size, linspace};
use crate::error::EnvError;
use crate::error::positive;
use kestrel_core::{FromInvalid, Key};

/// How a multi-attractor is generated ([`MultiAttractor::generate`]); defaults are actdyn's.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiAttractorConfig {
    /// The grid spans `[−x_range, x_range]` on both axes.
    pub x_range: f64,
    /// Grid points per axis.
    pub grid_points: usize,
    /// RBF length scale ℓ of the GP.
    pub length_scale: f64,
    /// RBF output scale (variance) of the GP.
    pub outputscale: f64,
    /// Diagonal jitter added to the GP covariance before the eigendecomposition (actdyn's
    /// value is not pinned by the fixtures; negative eigenvalues are clamped to 0 as well).
    pub jitter: f64,
    /// Magnitude α of the normalised GP direction.
    pub alpha: f64,
    /// Weight `w_att` of the confining term `−w_att·(x, y)·‖(x, y)‖`.
    pub w_attractor: f64,
}

impl Default for MultiAttractorConfig {
    fn default() -> Self {
        MultiAttractorConfig {
            x_range: 2.0,
            grid_points: 40,
            length_scale: 0.5,
            outputscale: 0.5,
            jitter: 1e-6,
            alpha: 0.25,
            w_attractor: 0.1,
        }
    }
}

/// C's GP multi-attractor: two `n × n` grids `U`, `V` over a common axis, interpolated with
/// scipy's `RegularGridInterpolator` (linear, linear extrapolation outside the grid).
///
/// Quirks kept from C: the interpolator reads `M[i][j]` as the value at (first coordinate =
/// `grid[i]`, second = `grid[j]`) while the grids were built with `M[i][j]` at
/// `(x = grid[j], y = grid[i])`, so the axes are effectively transposed; the output stacks
/// `[bilerp(V), bilerp(U)]`; and each component is rounded to f32 (then widened back to f64).
#[derive(Clone, Debug, PartialEq)]
pub struct MultiAttractor {
    pub(super) grid: Vec<f64>,
    pub(super) u: Vec<f64>,
    pub(super) v: Vec<f64>,
}

impl MultiAttractor {
    /// From stored grids: `grid` (strictly increasing, finite, 2 to [`MAX_GRID`] points) and
    /// `u`, `v` row-major `n × n` (`u[i·n + j]` = C's `U_grid[i][j]`).
    pub fn from_grids(grid: Vec<f64>, u: Vec<f64>, v: Vec<f64>) -> Result<Self, EnvError> {
        let n = grid.len();
        grid_size("grid", n, MAX_GRID)?;
        if grid.iter().any(|g| !g.is_finite()) || grid.windows(2).any(|w| w[1] <= w[0]) {
            return Err(EnvError::invalid(
                "grid",
                format!("{} points from {} to {}", n, grid[0], grid[n - 1]),
                "finite, strictly increasing values",
            ));
        }
        for (name, m) in [("U_grid", &u), ("V_grid", &v)] {
            if m.len() != n * n {
                return Err(EnvError::invalid(
                    name,
                    format!("{} values", m.len()),
                    format!("{} values (grid length squared)", n * n),
                ));
            }
            if let Some(bad) = m.iter().find(|x| !x.is_finite()) {
                return Err(EnvError::invalid(name, bad, "finite values"));
            }
        }
        Ok(MultiAttractor { grid, u, v })
    }

    /// Generates the grids from `key`: `2·n²` standard normals (all of the `U` draw, then the
    /// `V` draw), then [`MultiAttractor::from_gp_noise`].
    pub fn generate(key: Key, cfg: &MultiAttractorConfig) -> Result<Self, EnvError> {
        grid_size("grid_points", cfg.grid_points, MAX_GP_GRID)?;
        let mut eps = vec![0.0; 2 * cfg.grid_points * cfg.grid_points];
        key.rng().fill_standard_normal(&mut eps);
        Self::from_gp_noise(cfg, &eps)
    }

    /// The grids from given GP noise `eps` (`[2][n²]`, like actdyn's `torch.randn(2, n²)`):
    /// with the points `p_k = (x = grid[k mod n], y = grid[k div n])` and the covariance
    /// `K_kl = s·exp(−‖p_k − p_l‖²/(2ℓ²)) + jitter·δ_kl = V Λ Vᵀ` (symmetric eigendecomposition),
    /// `g = V·√max(Λ, 0)·eps` per component; then at every point
    /// `(U, V) = α·g/‖g‖ − w_att·(x, y)·‖(x, y)‖`.
    ///
    /// Matches actdyn in distribution, not draw for draw: eigenvector signs depend on the
    /// eigensolver (LAPACK there, faer here), so the same `eps` gives a different field.
    pub fn from_gp_noise(cfg: &MultiAttractorConfig, eps: &[f64]) -> Result<Self, EnvError> {
        use faer::{Mat, Side};
        positive("x_range", cfg.x_range)?;
        grid_size("grid_points", cfg.grid_points, MAX_GP_GRID)?;
        positive("length_scale", cfg.length_scale)?;
        positive("outputscale", cfg.outputscale)?;
        if !(cfg.jitter.is_finite() && cfg.jitter >= 0.0) {
            return Err(EnvError::invalid("jitter", cfg.jitter, "a finite number >= 0"));
        }
        finite("alpha", cfg.alpha)?;
        finite("w_attractor", cfg.w_attractor)?;
        let n = cfg.grid_points;
        let np = n * n;
        if eps.len() != 2 * np {
            return Err(EnvError::invalid(
                "gp_eps",
                format!("{} values", eps.len()),
                format!("2 × grid_points² = {} values", 2 * np),
            ));
        }
        if let Some(bad) = eps.iter().find(|x| !x.is_finite()) {
            return Err(EnvError::invalid("gp_eps", bad, "finite values"));
        }
        let grid = linspace(-cfg.x_range, cfg.x_range, n);
        let pt = |k: usize| (grid[k % n], grid[k / n]);
        let inv = 1.0 / (2.0 * cfg.length_scale * cfg.length_scale);
        let cov = Mat::<f64>::from_fn(np, np, |k, l| {
            let ((xk, yk), (xl, yl)) = (pt(k), pt(l));
            let d2 = (xk - xl) * (xk - xl) + (yk - yl) * (yk - yl);
            cfg.outputscale * (-d2 * inv).exp() + if k == l { cfg.jitter } else { 0.0 }
        });
        let evd = cov.as_ref().self_adjoint_eigen(Side::Lower).map_err(|e| {
            EnvError::invalid(
                "GP covariance",
                format!("{e:?}"),
                "a covariance the symmetric eigensolver converges on",
            )
        })?;
        let (s, vecs) = (evd.S(), evd.U());
        let root: Vec<f64> = (0..np).map(|c| s[c].max(0.0).sqrt()).collect();
        let mut g = vec![0.0; 2 * np];
        for comp in 0..2 {
            let e = &eps[comp * np..(comp + 1) * np];
            for c in 0..np {
                let coef = root[c] * e[c];
                if coef == 0.0 {
                    continue;
                }
                for k in 0..np {
                    g[comp * np + k] += vecs[(k, c)] * coef;
                }
            }
        }
        let (mut u, mut v) = (vec![0.0; np], vec![0.0; np]);
        for k in 0..np {
            let (x, y) = pt(k);
            let (gu, gv) = (g[k], g[np + k]);
            let mag = (gu * gu + gv * gv).sqrt();
            let scale = if mag > 0.0 { cfg.alpha / mag } else { 0.0 };
            let r = (x * x + y * y).sqrt();
            u[k] = scale * gu - cfg.w_attractor * x * r;
            v[k] = scale * gv - cfg.w_attractor * y * r;
        }
        Self::from_grids(grid, u, v)
    }

    /// The common grid axis.
    pub fn grid(&self) -> &[f64] {
        &self.grid
    }

    /// The `U` grid, row-major `n × n`.
    pub fn u_grid(&self) -> &[f64] {
        &self.u
    }

    /// The `V` grid, row-major `n × n`.
    pub fn v_grid(&self) -> &[f64] {
        &self.v
    }

    /// Interval index and normalised distance of `p` on the grid (scipy's
    /// `find_interval_ascending` with extrapolation: below the grid → first interval, at or
    /// above the last point → last interval).
    #[inline]
    fn locate(&self, p: f64) -> (usize, f64) {
        let g = &self.grid;
        let n = g.len();
        let i = if p.is_nan() || p < g[0] {
            0
        } else if p >= g[n - 1] {
            n - 2
        } else {
            // Largest i with g[i] <= p (g[0] <= p < g[n-1]).
            g.partition_point(|&x| x <= p) - 1
        };
        (i, (p - g[i]) / (g[i + 1] - g[i]))
    }

    /// scipy's bilinear `RegularGridInterpolator` value of `m` at `(p0, p1)`.
    #[inline]
    fn bilerp(m: &[f64], n: usize, (i0, y0): (usize, f64), (i1, y1): (usize, f64)) -> f64 {
        m[i0 * n + i1] * (1.0 - y0) * (1.0 - y1)
            + m[i0 * n + i1 + 1] * (1.0 - y0) * y1
            + m[(i0 + 1) * n + i1] * y0 * (1.0 - y1)
            + m[(i0 + 1) * n + i1 + 1] * y0 * y1
    }

    /// `F(z) = f32([bilerp(V; z₀, z₁), bilerp(U; z₀, z₁)])` as f64.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        let n = self.grid.len();
        let (a, b) = (self.locate(z[0]), self.locate(z[1]));
        [Self::bilerp(&self.v, n, a, b) as f32 as f64, Self::bilerp(&self.u, n, a, b) as f32 as f64]
    }
}
