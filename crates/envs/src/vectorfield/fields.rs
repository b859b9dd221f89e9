//! The drifts `F(z)` of the latent systems: C's limit cycle and double limit cycle, H's Van
//! der Pol and Duffing oscillators, the [`VectorField`] that selects one (the GP
//! multi-attractor is in [`super::generator`]), and the Euler–Maruyama step with its two noise
//! conventions.

use super::common::{MAX_GRID, finite, grid_size, linspace, positive};
use super::generator::MultiAttractor;
use crate::EnvError;

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
