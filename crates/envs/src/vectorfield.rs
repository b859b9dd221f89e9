//! Latent 2-D vector-field systems observed through a (possibly nonlinear) map: the "true
//! environment" of actdyn (Active Dynamics, github `hyungju-jeon/active-dynamics`; reference
//! commit `ceeba42`, called C below, and `main` `d406ea6`, called H). See
//! `reference/actdyn.md` §1.1 and the golden fixtures `actdyn-golden/env_*.json`.
//!
//! | | |
//! |---|---|
//! | latent state | `z ∈ ℝ²` (f64) |
//! | observation | `y = h(z) (+ noise)`, `N_y` f64 values ([`ObservationModel`]; default log-linear, 50 outputs, noiseless) |
//! | action | `u ∈ ℝ²` (`[f64; 2]`), mapped through the [`ActionModel`] (default identity) |
//! | action box | `[−0.1, 0.1]²`, **not applied by the env**: in actdyn only the policy clips |
//! | reward | 0 |
//! | terminated | never |
//! | truncated | `max_episode_steps` (default none: one long episode, as in actdyn) |
//! | reset | `z₀ = 2·U[0, 1)² − 1` |
//!
//! The step is Euler–Maruyama with injected noise `ε ~ N(0, I)` ([`step_latent`]):
//! `z' = (z + (F(z) + g(u))·dt) + (ε·√Q)·dt` under C's convention
//! ([`NoiseConvention::SqrtQTimesDt`], σ = √Q·dt, the default), or
//! `z' = (z + (F(z) + g(u))·dt) + ε·√(Q·dt)` under H's ([`NoiseConvention::SqrtOfQDt`]).
//!
//! Fields ([`VectorField`]): the limit cycle (C's default, α auto-scaled over the grid exactly
//! as C does), the double limit cycle, the GP multi-attractor (grids interpolated bilinearly
//! with C's axis transposition, `[v, u]` swap and float32 output), and H's Van der Pol and
//! Duffing oscillators.

use crate::EnvError;
use kestrel_core::{Env, FromInvalid, Key, Rng, Space, Spec, check_bytes};

/// Latent dimension (actdyn's `D`).
pub const LATENT_DIM: usize = 2;
/// Widest hidden layer of an [`Mlp`] observation map (its activations live on the stack).
pub const MAX_HIDDEN: usize = 256;
/// Largest input or output size of a [`Linear`] map.
pub const MAX_DIM: usize = 1 << 20;
/// Largest `n_grid` of a field's grid (α scaling or stored multi-attractor grids).
pub const MAX_GRID: usize = 4096;
/// Largest `n_grid` for which a multi-attractor is *generated* (the GP covariance has
/// `n_grid⁴` entries and is eigendecomposed).
pub const MAX_GP_GRID: usize = 64;

fn finite(field: &'static str, v: f64) -> Result<(), EnvError> {
    if v.is_finite() { Ok(()) } else { Err(EnvError::invalid(field, v, "a finite number")) }
}

fn positive(field: &'static str, v: f64) -> Result<(), EnvError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(EnvError::invalid(field, v, "a finite number > 0"))
    }
}

fn grid_size(field: &'static str, n: usize, max: usize) -> Result<(), EnvError> {
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

/// Largest speed `‖f(x, y)‖` over the `n × n` grid `linspace(−x_range, x_range)²`.
fn max_speed(x_range: f64, n: usize, f: impl Fn(f64, f64) -> [f64; 2]) -> f64 {
    let g = linspace(-x_range, x_range, n);
    let mut best = 0.0f64;
    for &y in &g {
        for &x in &g {
            let [a, b] = f(x, y);
            let s = (a * a + b * b).sqrt();
            if s > best || s.is_nan() {
                best = s;
            }
        }
    }
    best
}

/// `r² = (√(x² + y²))²`, the radius taken as a square root and squared again, as actdyn does
/// (this is why C's α is 0.09999999999999996 and not 0.1).
#[inline(always)]
fn r_squared(x: f64, y: f64) -> f64 {
    let r = (x * x + y * y).sqrt();
    r * r
}

/// The limit cycle `F = α·[x(d − r²) − w·y, y(d − r²) + w·x]` (radius `√d`, angular speed
/// `α·w`). Default: C's, `w = 1`, `d = x_range/2 = 1`, `α = 2/max‖F_{α=1}‖` over the 40 × 40
/// grid = 0.09999999999999996.
#[derive(Clone, Debug, PartialEq)]
pub struct LimitCycle {
    /// Scale α.
    pub alpha: f64,
    /// Angular speed w.
    pub w: f64,
    /// `d` (the cycle's radius squared).
    pub d: f64,
}

impl LimitCycle {
    /// C's construction: `d = x_range/2` and `α = 2 / max‖F_{α=1}‖` over the `n_grid × n_grid`
    /// grid [`linspace`]`(−x_range, x_range)²`.
    pub fn from_range(x_range: f64, n_grid: usize, w: f64) -> Result<Self, EnvError> {
        positive("x_range", x_range)?;
        grid_size("n_grid", n_grid, MAX_GRID)?;
        finite("w", w)?;
        let unit = LimitCycle { alpha: 1.0, w, d: x_range / 2.0 };
        let m = max_speed(x_range, n_grid, |x, y| unit.eval([x, y]));
        let alpha = 2.0 / m;
        positive("alpha (2 / max speed)", alpha)?;
        Ok(LimitCycle { alpha, ..unit })
    }

    /// The same field with a given α instead (H uses `env_alpha` = 0.25).
    pub fn with_alpha(self, alpha: f64) -> Result<Self, EnvError> {
        finite("alpha", alpha)?;
        Ok(LimitCycle { alpha, ..self })
    }

    /// `F(z)`.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        let [x, y] = z;
        let s = self.d - r_squared(x, y);
        [self.alpha * (x * s - self.w * y), self.alpha * (y * s + self.w * x)]
    }
}

impl Default for LimitCycle {
    fn default() -> Self {
        // Cannot fail for these constants.
        LimitCycle::from_range(2.0, 40, 1.0).unwrap_or(LimitCycle {
            alpha: 0.09999999999999996,
            w: 1.0,
            d: 1.0,
        })
    }
}

/// The double limit cycle `F = α·[x(d − r) − w·y(2d − r), y(d − r) + w·x(2d − r)]`, `r = ‖z‖`.
/// Default: `w = 1`, `d = 1`, `α = 1/max‖F_{α=1}‖` over the 40 × 40 grid = 0.17612978621429448.
#[derive(Clone, Debug, PartialEq)]
pub struct DoubleLimitCycle {
    /// Scale α.
    pub alpha: f64,
    /// Rotation weight w.
    pub w: f64,
    /// `d` (the inner cycle's radius).
    pub d: f64,
}

impl DoubleLimitCycle {
    /// C's construction: `d = x_range/2`, `α = 1 / max‖F_{α=1}‖` over the grid.
    pub fn from_range(x_range: f64, n_grid: usize, w: f64) -> Result<Self, EnvError> {
        positive("x_range", x_range)?;
        grid_size("n_grid", n_grid, MAX_GRID)?;
        finite("w", w)?;
        let unit = DoubleLimitCycle { alpha: 1.0, w, d: x_range / 2.0 };
        let m = max_speed(x_range, n_grid, |x, y| unit.eval([x, y]));
        let alpha = 1.0 / m;
        positive("alpha (1 / max speed)", alpha)?;
        Ok(DoubleLimitCycle { alpha, ..unit })
    }

    /// The same field with a given α instead.
    pub fn with_alpha(self, alpha: f64) -> Result<Self, EnvError> {
        finite("alpha", alpha)?;
        Ok(DoubleLimitCycle { alpha, ..self })
    }

    /// `F(z)`.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        let [x, y] = z;
        let r = (x * x + y * y).sqrt();
        let (inner, outer) = (self.d - r, 2.0 * self.d - r);
        [
            self.alpha * (x * inner - self.w * y * outer),
            self.alpha * (y * inner + self.w * x * outer),
        ]
    }
}

impl Default for DoubleLimitCycle {
    fn default() -> Self {
        DoubleLimitCycle::from_range(2.0, 40, 1.0).unwrap_or(DoubleLimitCycle {
            alpha: 0.17612978621429448,
            w: 1.0,
            d: 1.0,
        })
    }
}

/// H's Van der Pol oscillator `F = α·[y, μ(1 − x²)·y − w·x]`. Default `μ = w = 1`, `α = 0.25`.
#[derive(Clone, Debug, PartialEq)]
pub struct VanDerPol {
    /// Scale α.
    pub alpha: f64,
    /// Damping μ.
    pub mu: f64,
    /// Stiffness w.
    pub w: f64,
}

impl Default for VanDerPol {
    fn default() -> Self {
        VanDerPol { alpha: 0.25, mu: 1.0, w: 1.0 }
    }
}

impl VanDerPol {
    /// `F(z)`.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        let [x, y] = z;
        [self.alpha * y, self.alpha * (self.mu * (1.0 - x * x) * y - self.w * x)]
    }
}

/// H's Duffing oscillator `F = α·[y, a·y − x(b + c·x²)]`. Default `a = 0.1`, `b = −0.1`,
/// `c = 0.1`, `α = 0.25`.
#[derive(Clone, Debug, PartialEq)]
pub struct Duffing {
    /// Scale α.
    pub alpha: f64,
    /// Linear damping a.
    pub a: f64,
    /// Linear stiffness b.
    pub b: f64,
    /// Cubic stiffness c.
    pub c: f64,
}

impl Default for Duffing {
    fn default() -> Self {
        Duffing { alpha: 0.25, a: 0.1, b: -0.1, c: 0.1 }
    }
}

impl Duffing {
    /// `F(z)`.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        let [x, y] = z;
        [self.alpha * y, self.alpha * (self.a * y - x * (self.b + self.c * (x * x)))]
    }
}

/// How a multi-attractor is generated ([`MultiAttractor::generate`]); defaults are actdyn's.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiAttractorConfig {
    /// The grid spans `[−x_range, x_range]` on both axes.
    pub x_range: f64,
    /// Grid points per axis.
    pub n_grid: usize,
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
            n_grid: 40,
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
    grid: Vec<f64>,
    u: Vec<f64>,
    v: Vec<f64>,
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
        grid_size("n_grid", cfg.n_grid, MAX_GP_GRID)?;
        let mut eps = vec![0.0; 2 * cfg.n_grid * cfg.n_grid];
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
        grid_size("n_grid", cfg.n_grid, MAX_GP_GRID)?;
        positive("length_scale", cfg.length_scale)?;
        positive("outputscale", cfg.outputscale)?;
        if !(cfg.jitter.is_finite() && cfg.jitter >= 0.0) {
            return Err(EnvError::invalid("jitter", cfg.jitter, "a finite number >= 0"));
        }
        finite("alpha", cfg.alpha)?;
        finite("w_attractor", cfg.w_attractor)?;
        let n = cfg.n_grid;
        let np = n * n;
        if eps.len() != 2 * np {
            return Err(EnvError::invalid(
                "gp_eps",
                format!("{} values", eps.len()),
                format!("2 × n_grid² = {} values", 2 * np),
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

/// The drift `F` of a [`VectorFieldEnv`].
#[derive(Clone, Debug, PartialEq)]
pub enum VectorField {
    /// C's default.
    LimitCycle(LimitCycle),
    /// Two nested cycles.
    DoubleLimitCycle(DoubleLimitCycle),
    /// GP multi-attractor on a grid.
    MultiAttractor(MultiAttractor),
    /// H's Van der Pol oscillator.
    VanDerPol(VanDerPol),
    /// H's Duffing oscillator.
    Duffing(Duffing),
}

impl Default for VectorField {
    fn default() -> Self {
        VectorField::LimitCycle(LimitCycle::default())
    }
}

impl VectorField {
    /// `F(z)`.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        match self {
            VectorField::LimitCycle(f) => f.eval(z),
            VectorField::DoubleLimitCycle(f) => f.eval(z),
            VectorField::MultiAttractor(f) => f.eval(z),
            VectorField::VanDerPol(f) => f.eval(z),
            VectorField::Duffing(f) => f.eval(z),
        }
    }

    /// `F` over rows: `z` and `out` are `n × 2` row-major.
    ///
    /// # Panics
    /// If `z.len() != out.len()` or the length is odd.
    pub fn eval_batch(&self, z: &[f64], out: &mut [f64]) {
        assert!(
            z.len() == out.len() && z.len().is_multiple_of(2),
            "eval_batch: z and out must be n × 2"
        );
        for (zi, fi) in z.chunks_exact(2).zip(out.chunks_exact_mut(2)) {
            fi.copy_from_slice(&self.eval([zi[0], zi[1]]));
        }
    }

    /// Checks every parameter is finite.
    pub fn validate(&self) -> Result<(), EnvError> {
        match self {
            VectorField::LimitCycle(f) => {
                finite("alpha", f.alpha)?;
                finite("w", f.w)?;
                finite("d", f.d)
            }
            VectorField::DoubleLimitCycle(f) => {
                finite("alpha", f.alpha)?;
                finite("w", f.w)?;
                finite("d", f.d)
            }
            VectorField::MultiAttractor(f) => {
                MultiAttractor::from_grids(f.grid.clone(), f.u.clone(), f.v.clone()).map(|_| ())
            }
            VectorField::VanDerPol(f) => {
                finite("alpha", f.alpha)?;
                finite("mu", f.mu)?;
                finite("w", f.w)
            }
            VectorField::Duffing(f) => {
                finite("alpha", f.alpha)?;
                finite("a", f.a)?;
                finite("b", f.b)?;
                finite("c", f.c)
            }
        }
    }
}

/// How the process noise scales with `dt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoiseConvention {
    /// C: σ = √Q·dt, `z' = (z + (F + u)·dt) + (ε·√Q)·dt`.
    #[default]
    SqrtQTimesDt,
    /// H: σ = √(Q·dt), `z' = (z + (F + u)·dt) + ε·√(Q·dt)` (Euler–Maruyama proper).
    SqrtOfQDt,
}

/// One latent step with injected noise; returns `(z', F(z))`. `gu` is the action after the
/// action model. The operations run in exactly the order of [`NoiseConvention`]'s formulas.
#[inline]
pub fn step_latent(
    field: &VectorField,
    z: [f64; 2],
    gu: [f64; 2],
    eps: [f64; 2],
    dt: f64,
    noise_scale: f64,
    convention: NoiseConvention,
) -> ([f64; 2], [f64; 2]) {
    let f = field.eval(z);
    let mut next = [0.0; 2];
    for d in 0..2 {
        let drift = z[d] + (f[d] + gu[d]) * dt;
        next[d] = match convention {
            NoiseConvention::SqrtQTimesDt => drift + (eps[d] * noise_scale.sqrt()) * dt,
            NoiseConvention::SqrtOfQDt => drift + eps[d] * (noise_scale * dt).sqrt(),
        };
    }
    (next, f)
}

/// The reset state from two uniforms in `[0, 1)`: `z₀ = 2·uniform − 1`.
#[inline]
pub fn reset_latent(uniform: [f64; 2]) -> [f64; 2] {
    [2.0 * uniform[0] - 1.0, 2.0 * uniform[1] - 1.0]
}

/// An affine map `out = W·x + b` with PyTorch `nn.Linear`'s layout (`W` is `[out][in]`,
/// row-major).
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    in_dim: usize,
    out_dim: usize,
    weight: Vec<f64>,
    bias: Vec<f64>,
}

fn check_dims(in_dim: usize, out_dim: usize) -> Result<(), EnvError> {
    for (name, d) in [("in_dim", in_dim), ("out_dim", out_dim)] {
        if !(1..=MAX_DIM).contains(&d) {
            return Err(EnvError::invalid(name, d, format!("1..={MAX_DIM}")));
        }
    }
    check_bytes(
        "in_dim × out_dim",
        format!("{in_dim} × {out_dim}"),
        (in_dim * out_dim) as u128,
        8,
    )?;
    Ok(())
}

impl Linear {
    /// From given weights (`[out_dim][in_dim]` row-major, finite) and bias (`out_dim`).
    pub fn new(
        in_dim: usize,
        out_dim: usize,
        weight: Vec<f64>,
        bias: Vec<f64>,
    ) -> Result<Self, EnvError> {
        check_dims(in_dim, out_dim)?;
        if weight.len() != in_dim * out_dim {
            return Err(EnvError::invalid(
                "weight",
                format!("{} values", weight.len()),
                format!("out_dim × in_dim = {} values", in_dim * out_dim),
            ));
        }
        if bias.len() != out_dim {
            return Err(EnvError::invalid(
                "bias",
                format!("{} values", bias.len()),
                format!("out_dim = {out_dim} values"),
            ));
        }
        if let Some(bad) = weight.iter().find(|x| !x.is_finite()) {
            return Err(EnvError::invalid("weight", bad, "finite values"));
        }
        if let Some(bad) = bias.iter().find(|x| !x.is_finite()) {
            return Err(EnvError::invalid("bias", bad, "finite values"));
        }
        Ok(Linear { in_dim, out_dim, weight, bias })
    }

    /// PyTorch's default `nn.Linear` init from `key`: weight then bias (row-major), every entry
    /// `U(−1/√in_dim, 1/√in_dim)`. Same distribution as PyTorch, different draws.
    pub fn init(key: Key, in_dim: usize, out_dim: usize) -> Result<Self, EnvError> {
        check_dims(in_dim, out_dim)?;
        Ok(Self::init_unchecked(key, in_dim, out_dim))
    }

    fn init_unchecked(key: Key, in_dim: usize, out_dim: usize) -> Self {
        let bound = 1.0 / (in_dim as f64).sqrt();
        let mut r = key.rng();
        let mut draw = |len: usize| -> Vec<f64> {
            (0..len).map(|_| (2.0 * r.uniform_f64() - 1.0) * bound).collect()
        };
        let weight = draw(in_dim * out_dim);
        let bias = draw(out_dim);
        Linear { in_dim, out_dim, weight, bias }
    }

    /// Input size.
    pub fn in_dim(&self) -> usize {
        self.in_dim
    }

    /// Output size.
    pub fn out_dim(&self) -> usize {
        self.out_dim
    }

    /// The weight, `[out_dim][in_dim]` row-major.
    pub fn weight(&self) -> &[f64] {
        &self.weight
    }

    /// The bias.
    pub fn bias(&self) -> &[f64] {
        &self.bias
    }

    /// One row: `out[o] = (Σ_k W[o][k]·x[k]) + b[o]`, the sum in increasing `k`.
    #[inline]
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        for (o, (w, b)) in out.iter_mut().zip(self.weight.chunks_exact(self.in_dim).zip(&self.bias))
        {
            let mut s = 0.0;
            for (wk, xk) in w.iter().zip(x) {
                s += wk * xk;
            }
            *o = s + b;
        }
    }
}

/// A multilayer perceptron: `Linear` layers with ReLU between them (none after the last).
#[derive(Clone, Debug, PartialEq)]
pub struct Mlp {
    layers: Vec<Linear>,
}

impl Mlp {
    /// From layers whose sizes chain (`layers[i].out_dim == layers[i+1].in_dim`), the first
    /// taking `in_dim` inputs; hidden widths at most [`MAX_HIDDEN`].
    pub fn new(in_dim: usize, layers: Vec<Linear>) -> Result<Self, EnvError> {
        if layers.is_empty() {
            return Err(EnvError::invalid("layers", 0, "at least one layer"));
        }
        if in_dim > MAX_HIDDEN {
            return Err(EnvError::invalid("in_dim", in_dim, format!("at most {MAX_HIDDEN}")));
        }
        let mut prev = in_dim;
        for (i, l) in layers.iter().enumerate() {
            if l.in_dim != prev {
                return Err(EnvError::invalid(
                    format!("layers[{i}].in_dim"),
                    l.in_dim,
                    format!("{prev} (the previous layer's output)"),
                ));
            }
            if i + 1 < layers.len() && l.out_dim > MAX_HIDDEN {
                return Err(EnvError::invalid(
                    format!("layers[{i}].out_dim"),
                    l.out_dim,
                    format!("at most {MAX_HIDDEN} for a hidden layer"),
                ));
            }
            prev = l.out_dim;
        }
        Ok(Mlp { layers })
    }

    /// PyTorch-default initialised layers `in_dim → hidden[0] → … → out_dim` from `key`
    /// (layer `i` from `key.fold_in(i)`).
    pub fn init(
        key: Key,
        in_dim: usize,
        hidden: &[usize],
        out_dim: usize,
    ) -> Result<Self, EnvError> {
        let mut dims = vec![in_dim];
        dims.extend_from_slice(hidden);
        dims.push(out_dim);
        let layers = dims
            .windows(2)
            .enumerate()
            .map(|(i, w)| Linear::init(key.fold_in(i as u64), w[0], w[1]))
            .collect::<Result<Vec<_>, _>>()?;
        Mlp::new(in_dim, layers)
    }

    /// The layers.
    pub fn layers(&self) -> &[Linear] {
        &self.layers
    }

    /// Input size.
    pub fn in_dim(&self) -> usize {
        self.layers[0].in_dim
    }

    /// Output size.
    pub fn out_dim(&self) -> usize {
        self.layers[self.layers.len() - 1].out_dim
    }

    /// One row (activations on the stack, no allocation).
    #[inline]
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        let mut a = [0.0; MAX_HIDDEN];
        let mut b = [0.0; MAX_HIDDEN];
        let (mut src, mut dst) = (&mut a, &mut b);
        let mut len = x.len();
        src[..len].copy_from_slice(x);
        let last = self.layers.len() - 1;
        for (i, l) in self.layers.iter().enumerate() {
            if i == last {
                l.apply_row(&src[..len], out);
            } else {
                l.apply_row(&src[..len], &mut dst[..l.out_dim]);
                dst[..l.out_dim].iter_mut().for_each(|v| *v = v.max(0.0));
                len = l.out_dim;
                std::mem::swap(&mut src, &mut dst);
            }
        }
    }
}

/// The deterministic part of an observation model.
#[derive(Clone, Debug, PartialEq)]
pub enum ObsMap {
    /// `y = z` (`N_y = 2`).
    Identity,
    /// `y = C·z + b`.
    Linear(Linear),
    /// `y = exp(C·z + b)` (actdyn's default; C, without H's extra factor dt).
    LogLinear(Linear),
    /// `y = MLP(z)`.
    Mlp(Mlp),
}

/// Observation noise.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ObsNoise {
    /// Noiseless (actdyn's default, `obs_noise_scale = 0`).
    #[default]
    None,
    /// `y + scale·ε`, `ε ~ N(0, I)`.
    Gaussian {
        /// Standard deviation.
        scale: f64,
    },
    /// Poisson counts with rate `y`.
    Poisson(PoissonVariant),
}

/// Which Poisson observation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PoissonVariant {
    /// C's bug: returns `y + Poisson(y)`.
    #[default]
    RatePlusCount,
    /// The intended (H): `Poisson(y)`.
    Count,
}

/// An observation model: a batched map of latent rows to observations, then noise.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservationModel {
    /// The deterministic map.
    pub map: ObsMap,
    /// The noise added after it.
    pub noise: ObsNoise,
}

impl Default for ObservationModel {
    /// actdyn's: log-linear, `N_y = 50`, PyTorch-default init from `Key::new(0)`, noiseless.
    fn default() -> Self {
        ObservationModel {
            map: ObsMap::LogLinear(Linear::init_unchecked(Key::new(0), LATENT_DIM, 50)),
            noise: ObsNoise::None,
        }
    }
}

impl ObservationModel {
    /// Log-linear `exp(C·z + b)` from `C` (`[N_y][2]` row-major) and `b` (`N_y`), noiseless.
    pub fn log_linear(c: Vec<f64>, b: Vec<f64>) -> Result<Self, EnvError> {
        let n_y = b.len();
        Ok(ObservationModel {
            map: ObsMap::LogLinear(Linear::new(LATENT_DIM, n_y, c, b)?),
            noise: ObsNoise::None,
        })
    }

    /// Observation size `N_y`.
    pub fn obs_dim(&self) -> usize {
        match &self.map {
            ObsMap::Identity => LATENT_DIM,
            ObsMap::Linear(l) | ObsMap::LogLinear(l) => l.out_dim,
            ObsMap::Mlp(m) => m.out_dim(),
        }
    }

    /// Checks sizes (the map takes 2 inputs) and the noise scale.
    pub fn validate(&self) -> Result<(), EnvError> {
        let in_dim = match &self.map {
            ObsMap::Identity => LATENT_DIM,
            ObsMap::Linear(l) | ObsMap::LogLinear(l) => {
                Linear::new(l.in_dim, l.out_dim, l.weight.clone(), l.bias.clone())?;
                l.in_dim
            }
            ObsMap::Mlp(m) => {
                for l in &m.layers {
                    Linear::new(l.in_dim, l.out_dim, l.weight.clone(), l.bias.clone())?;
                }
                Mlp::new(m.in_dim(), m.layers.clone())?;
                m.in_dim()
            }
        };
        if in_dim != LATENT_DIM {
            return Err(EnvError::invalid(
                "observation in_dim",
                in_dim,
                "2 (the latent dimension)",
            ));
        }
        if let ObsNoise::Gaussian { scale } = self.noise
            && !(scale.is_finite() && scale >= 0.0)
        {
            return Err(EnvError::invalid("obs_noise_scale", scale, "a finite number >= 0"));
        }
        Ok(())
    }

    /// The noiseless map over rows: `z` is `n × 2`, `y` is `n × N_y`, both row-major.
    ///
    /// # Panics
    /// If the lengths do not describe the same number of rows.
    pub fn observe(&self, z: &[f64], y: &mut [f64]) {
        let n_y = self.obs_dim();
        assert!(
            z.len().is_multiple_of(LATENT_DIM) && y.len() == z.len() / LATENT_DIM * n_y,
            "observe: z must be n × 2 and y n × N_y"
        );
        for (zi, yi) in z.chunks_exact(LATENT_DIM).zip(y.chunks_exact_mut(n_y)) {
            match &self.map {
                ObsMap::Identity => yi.copy_from_slice(zi),
                ObsMap::Linear(l) => l.apply_row(zi, yi),
                ObsMap::LogLinear(l) => {
                    l.apply_row(zi, yi);
                    yi.iter_mut().for_each(|v| *v = v.exp());
                }
                ObsMap::Mlp(m) => m.apply_row(zi, yi),
            }
        }
    }

    /// Adds the noise to noiseless observations `y` (any number of rows) with draws from `rng`.
    pub fn add_noise(&self, y: &mut [f64], rng: &mut Rng) {
        match self.noise {
            ObsNoise::None => {}
            ObsNoise::Gaussian { scale } => {
                for v in y {
                    *v += scale * rng.standard_normal();
                }
            }
            ObsNoise::Poisson(variant) => {
                for v in y {
                    let k = poisson(rng, *v);
                    *v = match variant {
                        PoissonVariant::RatePlusCount => *v + k,
                        PoissonVariant::Count => k,
                    };
                }
            }
        }
    }
}

/// `ln Γ(x)` for `x ≥ 1` (Stirling's series after shifting `x` up to at least 10).
fn ln_gamma(mut x: f64) -> f64 {
    let mut shift = 0.0;
    while x < 10.0 {
        shift += x.ln();
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series = inv
        * (1.0 / 12.0
            - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 * (1.0 / 1680.0 - inv2 / 1188.0))));
    (x - 0.5) * x.ln() - x + 0.5 * std::f64::consts::TAU.ln() + series - shift
}

/// A Poisson draw with rate `lam` as f64: multiplication of uniforms below rate 10, Hörmann's
/// transformed rejection (PTRS, 1993) above. A rate `≤ 0` gives 0; a non-finite rate is
/// returned as is.
fn poisson(rng: &mut Rng, lam: f64) -> f64 {
    if !lam.is_finite() {
        return lam;
    }
    if lam <= 0.0 {
        return 0.0;
    }
    if lam < 10.0 {
        let limit = (-lam).exp();
        let mut prod = 1.0;
        let mut k = 0.0;
        loop {
            prod *= rng.uniform_f64();
            if prod <= limit {
                return k;
            }
            k += 1.0;
        }
    }
    let slam = lam.sqrt();
    let loglam = lam.ln();
    let b = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * b;
    let inv_alpha = 1.1239 + 1.1328 / (b - 3.4);
    let vr = 0.9277 - 3.6224 / (b - 2.0);
    loop {
        let u = rng.uniform_f64() - 0.5;
        let v = rng.uniform_f64();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + b) * u + lam + 0.43).floor();
        if us >= 0.07 && v <= vr {
            return k;
        }
        if k < 0.0 || (us < 0.013 && v > us) {
            continue;
        }
        if v.ln() + inv_alpha.ln() - (a / (us * us) + b).ln()
            <= -lam + k * loglam - ln_gamma(k + 1.0)
        {
            return k;
        }
    }
}

/// How an action enters the dynamics: `g(u)`, a batched map of `n × A` rows to `n × 2`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ActionModel {
    /// `g(u) = u` (`A = 2`, actdyn's default).
    #[default]
    Identity,
    /// `g(u) = B·u + c` (`B` is `[2][A]`).
    Linear(Linear),
}

impl ActionModel {
    /// Action size `A`.
    pub fn action_dim(&self) -> usize {
        match self {
            ActionModel::Identity => LATENT_DIM,
            ActionModel::Linear(l) => l.in_dim,
        }
    }

    /// Checks sizes (output 2, values finite).
    pub fn validate(&self) -> Result<(), EnvError> {
        if let ActionModel::Linear(l) = self {
            Linear::new(l.in_dim, l.out_dim, l.weight.clone(), l.bias.clone())?;
            if l.out_dim != LATENT_DIM {
                return Err(EnvError::invalid(
                    "action out_dim",
                    l.out_dim,
                    "2 (the latent dimension)",
                ));
            }
        }
        Ok(())
    }

    /// `g` of one action row (`A` values).
    #[inline]
    pub fn apply_row(&self, u: &[f64]) -> [f64; 2] {
        match self {
            ActionModel::Identity => [u[0], u[1]],
            ActionModel::Linear(l) => {
                let mut out = [0.0; 2];
                l.apply_row(u, &mut out);
                out
            }
        }
    }

    /// `g` over rows: `u` is `n × A`, `out` is `n × 2`.
    ///
    /// # Panics
    /// If the lengths do not describe the same number of rows.
    pub fn apply(&self, u: &[f64], out: &mut [f64]) {
        let a = self.action_dim();
        assert!(
            u.len().is_multiple_of(a) && out.len() == u.len() / a * LATENT_DIM,
            "apply: u must be n × A and out n × 2"
        );
        for (ui, oi) in u.chunks_exact(a).zip(out.chunks_exact_mut(LATENT_DIM)) {
            oi.copy_from_slice(&self.apply_row(ui));
        }
    }
}

/// Everything one tunes about a [`VectorFieldEnv`]. `Default` is actdyn's main experiment (C):
/// limit cycle, `dt = 0.1`, `Q = 0.1` with σ = √Q·dt, log-linear 50 outputs (weights from a
/// fixed key), identity actions, box `[−0.1, 0.1]²`, no episode limit.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorFieldParams {
    /// The drift F.
    pub field: VectorField,
    /// Time step.
    pub dt: f64,
    /// Process noise scale Q (actdyn's `env_noise_scale`).
    pub noise_scale: f64,
    /// How σ follows from Q and dt.
    pub noise_convention: NoiseConvention,
    /// The observation model.
    pub obs: ObservationModel,
    /// The action model (its input size must be 2, the env's action).
    pub action: ActionModel,
    /// The action box is `[−action_bound, action_bound]²`. Descriptive only: the env does not
    /// clip (in actdyn the policy clips).
    pub action_bound: f64,
    /// Episode limit applied by `VecEnv`; `None` for one endless episode.
    pub max_episode_steps: Option<u32>,
}

impl Default for VectorFieldParams {
    fn default() -> Self {
        VectorFieldParams {
            field: VectorField::default(),
            dt: 0.1,
            noise_scale: 0.1,
            noise_convention: NoiseConvention::SqrtQTimesDt,
            obs: ObservationModel::default(),
            action: ActionModel::Identity,
            action_bound: 0.1,
            max_episode_steps: None,
        }
    }
}

impl VectorFieldParams {
    /// Checks every parameter; the error names the field and the value.
    pub fn validate(&self) -> Result<(), EnvError> {
        self.field.validate()?;
        positive("dt", self.dt)?;
        if !(self.noise_scale.is_finite() && self.noise_scale >= 0.0) {
            return Err(EnvError::invalid("noise_scale", self.noise_scale, "a finite number >= 0"));
        }
        self.obs.validate()?;
        self.action.validate()?;
        if self.action.action_dim() != LATENT_DIM {
            return Err(EnvError::invalid(
                "action in_dim",
                self.action.action_dim(),
                "2 (the env's action is [f64; 2])",
            ));
        }
        positive("action_bound", self.action_bound)?;
        if self.max_episode_steps == Some(0) {
            return Err(EnvError::invalid("max_episode_steps", 0, "None or at least 1"));
        }
        Ok(())
    }

    /// Steps rows with injected noise: `z` (`n × 2`) is advanced in place, `u` is `n × A`
    /// (raw actions, mapped by the action model), `eps` is `n × 2`, and `drift` (`n × 2`)
    /// receives `F(z)` before the step.
    ///
    /// # Panics
    /// If the lengths do not describe the same number of rows.
    pub fn step_batch(&self, z: &mut [f64], u: &[f64], eps: &[f64], drift: &mut [f64]) {
        let a = self.action.action_dim();
        let n = z.len() / LATENT_DIM;
        assert!(
            z.len() == n * 2 && eps.len() == n * 2 && drift.len() == n * 2 && u.len() == n * a,
            "step_batch: z, eps, drift must be n × 2 and u n × A"
        );
        for i in 0..n {
            let zi = [z[2 * i], z[2 * i + 1]];
            let gu = self.action.apply_row(&u[i * a..(i + 1) * a]);
            let (next, f) = step_latent(
                &self.field,
                zi,
                gu,
                [eps[2 * i], eps[2 * i + 1]],
                self.dt,
                self.noise_scale,
                self.noise_convention,
            );
            z[2 * i..2 * i + 2].copy_from_slice(&next);
            drift[2 * i..2 * i + 2].copy_from_slice(&f);
        }
    }
}

/// The latent state of a [`VectorFieldEnv`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VectorFieldState {
    /// `z`.
    pub z: [f64; 2],
}

/// actdyn's true environment as an [`Env`] (see the module docs). One agent; observation
/// `N_y` f64 values; action `[f64; 2]`, not clipped; reward 0; never terminates. Validate the
/// params once with [`VectorFieldParams::validate`]; kernels assume valid params.
#[derive(Clone, Copy, Debug, Default)]
pub struct VectorFieldEnv;

impl VectorFieldEnv {
    fn emit(p: &VectorFieldParams, z: [f64; 2], rng: &mut Rng, obs: &mut [f64]) {
        p.obs.observe(&z, obs);
        p.obs.add_noise(obs, rng);
    }
}

impl Env for VectorFieldEnv {
    type Params = VectorFieldParams;
    type State = VectorFieldState;
    type Obs = f64;
    type Action = [f64; 2];

    fn spec(&self, p: &VectorFieldParams) -> Spec {
        Spec {
            obs_space: Space::Box {
                low: f64::NEG_INFINITY,
                high: f64::INFINITY,
                shape: vec![p.obs.obs_dim()],
            },
            action_space: Space::Box {
                low: -p.action_bound,
                high: p.action_bound,
                shape: vec![LATENT_DIM],
            },
            num_agents: 1,
            max_episode_steps: p.max_episode_steps,
        }
    }

    /// `z₀ = 2·U[0, 1)² − 1` (two uniforms from `key`), then the observation (with noise,
    /// drawn after the uniforms).
    fn reset(&self, p: &VectorFieldParams, key: Key, obs: &mut [f64]) -> VectorFieldState {
        let mut r = key.rng();
        let z = reset_latent([r.uniform_f64(), r.uniform_f64()]);
        Self::emit(p, z, &mut r, obs);
        VectorFieldState { z }
    }

    /// Draws `ε` (two standard normals from `key`), steps with [`step_latent`], then observes
    /// (noise drawn after `ε`). The action is used as given (no clipping). Reward 0.
    fn step(
        &self,
        p: &VectorFieldParams,
        s: &mut VectorFieldState,
        actions: &[[f64; 2]],
        key: Key,
        obs: &mut [f64],
        rewards: &mut [f32],
    ) -> bool {
        let mut r = key.rng();
        let eps = [r.standard_normal(), r.standard_normal()];
        let gu = p.action.apply_row(&actions[0]);
        let (z, _) = step_latent(&p.field, s.z, gu, eps, p.dt, p.noise_scale, p.noise_convention);
        s.z = z;
        Self::emit(p, z, &mut r, obs);
        rewards[0] = 0.0;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_testkit::{Conformance, check_env};

    #[test]
    fn conformance() {
        let p = VectorFieldParams { max_episode_steps: Some(50), ..Default::default() };
        p.validate().unwrap();
        check_env(&VectorFieldEnv, &p, &Conformance::default(), |k, _, a| {
            let mut r = k.rng();
            a[0] = [0.2 * r.uniform_f64() - 0.1, 0.2 * r.uniform_f64() - 0.1];
        });
    }

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut f = 1.0f64;
        for k in 1..30 {
            f *= k as f64;
            let got = ln_gamma(k as f64 + 1.0);
            assert!((got - f.ln()).abs() < 1e-12 * f.ln().max(1.0), "k = {k}: {got}");
        }
    }

    #[test]
    fn poisson_mean_and_variance() {
        for lam in [0.5, 3.0, 12.0, 150.0] {
            let mut r = Key::new(5).rng();
            let n = 40_000;
            let draws: Vec<f64> = (0..n).map(|_| poisson(&mut r, lam)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|d| (d - mean) * (d - mean)).sum::<f64>() / n as f64;
            let se = (lam / n as f64).sqrt();
            assert!((mean - lam).abs() < 5.0 * se, "lam {lam}: mean {mean}");
            assert!((var / lam - 1.0).abs() < 0.05, "lam {lam}: var {var}");
            assert!(draws.iter().all(|d| *d >= 0.0 && d.fract() == 0.0));
        }
    }
}
