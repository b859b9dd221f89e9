//! The drifts `F(z)` of the latent systems: C's limit cycle and double limit cycle, H's Van
//! der Pol and Duffing oscillators, the [`VectorField`] that selects one (the GP
//! multi-attractor is in [`super::generator`]), and the Euler–Maruyama step with its two noise
//! conventions.

use super::common::{MAX_GRID, finite, grid_size, linspace};
use super::generator::MultiAttractor;
use crate::error::EnvError;
use crate::error::positive;

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
    /// C's construction: `d = x_range/2` and `α = 2 / max‖F_{α=1}‖` over the `grid_points × grid_points`
    /// grid [`linspace`]`(−x_range, x_range)²`.
    pub fn from_range(x_range: f64, grid_points: usize, w: f64) -> Result<Self, EnvError> {
        positive("x_range", x_range)?;
        grid_size("grid_points", grid_points, MAX_GRID)?;
        finite("w", w)?;
        let unit = LimitCycle { alpha: 1.0, w, d: x_range / 2.0 };
        let m = max_speed(x_range, grid_points, |x, y| unit.eval([x, y]));
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
    pub fn from_range(x_range: f64, grid_points: usize, w: f64) -> Result<Self, EnvError> {
        positive("x_range", x_range)?;
        grid_size("grid_points", grid_points, MAX_GRID)?;
        finite("w", w)?;
        let unit = DoubleLimitCycle { alpha: 1.0, w, d: x_range / 2.0 };
        let m = max_speed(x_range, grid_points, |x, y| unit.eval([x, y]));
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

/// actdyn's snowman (`SnowMan` in `actdyn/utils/vectorfield_definition.py`, `main` at
/// `d406ea6`): two limit cycles of radius `d` centred at `(±d, 0)`, turning in opposite
/// senses, blended by a sigmoid of `β·x`:
/// `F = α·[σ(βx)·F₁ + σ(−βx)·F₂]` with, for `r₁ = ‖z − (d, 0)‖` and `r₂ = ‖z + (d, 0)‖`,
/// `F₁ = [(x − d)(d² − r₁²) − w·y, y(d² − r₁²) + w(x − d)]` and
/// `F₂ = [(x + d)(d² − r₂²) + w·y, y(d² − r₂²) − w(x + d)]`.
/// Default `w = 1`, `d = 1`, `β = 10` (its `_set_params` defaults; built without parameters
/// the reference never sets β and fails when evaluated), `α = 1` (its base class's).
#[derive(Clone, Debug, PartialEq)]
pub struct Snowman {
    /// Scale α.
    pub alpha: f64,
    /// Rotation weight w.
    pub w: f64,
    /// Half the distance between the two centres, and their cycles' radius d.
    pub d: f64,
    /// Sharpness β of the blend between the halves.
    pub beta: f64,
}

impl Default for Snowman {
    fn default() -> Self {
        Snowman { alpha: 1.0, w: 1.0, d: 1.0, beta: 10.0 }
    }
}

impl Snowman {
    /// `F(z)`.
    #[inline]
    pub fn eval(&self, z: [f64; 2]) -> [f64; 2] {
        let [x, y] = z;
        let (d, w) = (self.d, self.w);
        let r1 = r_squared(x - d, y);
        let (u1, v1) = ((x - d) * (d * d - r1) - w * y, y * (d * d - r1) + w * (x - d));
        let r2 = r_squared(x + d, y);
        let (u2, v2) = ((x + d) * (d * d - r2) + w * y, y * (d * d - r2) - w * (x + d));
        let sigmoid = |t: f64| 1.0 / (1.0 + (-t).exp());
        let (right, left) = (sigmoid(self.beta * x), sigmoid(-self.beta * x));
        [self.alpha * (right * u1 + left * u2), self.alpha * (right * v1 + left * v2)]
    }
}

/// The drift `F` of a [`VectorFieldEnv`](super::VectorFieldEnv).
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
    /// actdyn's snowman: two opposite cycles side by side.
    Snowman(Snowman),
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
            VectorField::Snowman(f) => f.eval(z),
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
            VectorField::Snowman(f) => {
                finite("alpha", f.alpha)?;
                finite("w", f.w)?;
                finite("d", f.d)?;
                finite("beta", f.beta)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The snowman at points worked by hand: at the origin both halves weigh ½ and give
    /// `(0, −w)`; far right only the right cycle counts.
    #[test]
    fn the_snowman_blends_two_opposite_cycles() {
        let f = Snowman { alpha: 0.5, ..Snowman::default() };
        let [u, v] = f.eval([0.0, 0.0]);
        assert!(u.abs() < 1e-15 && (v + 0.5).abs() < 1e-15, "{u} {v}");
        // (5, 0): r₁² = 16, F₁ = (4·(1 − 16), 4) = (−60, 4); σ(−50)·F₂ is below 1e-19.
        let [u, v] = f.eval([5.0, 0.0]);
        assert!((u + 30.0).abs() < 1e-12 && (v - 2.0).abs() < 1e-12, "{u} {v}");
        // Mirror symmetry, the halves turning in opposite senses: F(−x, y) = (−F_x, F_y)(x, y).
        let (a, b) = (f.eval([0.7, 0.3]), f.eval([-0.7, 0.3]));
        assert!((a[0] + b[0]).abs() < 1e-12 && (a[1] - b[1]).abs() < 1e-12, "{a:?} {b:?}");
        let bad = VectorField::Snowman(Snowman { beta: f64::NAN, ..Snowman::default() });
        assert!(bad.validate().unwrap_err().to_string().contains("beta"));
    }

    #[test]
    fn the_default_scales_are_the_references_constants() {
        // C's α from its 40 × 40 grid, bit for bit (the radius squared after a square root).
        assert_eq!(LimitCycle::default().alpha, 0.09999999999999996);
        assert_eq!(DoubleLimitCycle::default().alpha, 0.17612978621429448);
        // The construction's definition: the largest speed over the grid is 2 (resp. 1).
        let lc = LimitCycle::default();
        let m = max_speed(2.0, 40, |x, y| lc.eval([x, y]));
        assert!((m - 2.0).abs() < 1e-12, "{m}");
        let dl = DoubleLimitCycle::default();
        assert!((max_speed(2.0, 40, |x, y| dl.eval([x, y])) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn each_field_has_its_cycle_or_equilibria_where_the_formula_puts_them() {
        // Limit cycle of radius √d: on it the flow is tangential with speed α·w·√d.
        let lc = LimitCycle { alpha: 0.5, w: 2.0, d: 4.0 };
        for k in 0..8 {
            let t = k as f64 * std::f64::consts::PI / 4.0;
            let z = [2.0 * t.cos(), 2.0 * t.sin()];
            let f = lc.eval(z);
            assert!((f[0] * z[0] + f[1] * z[1]).abs() < 1e-12, "radial part at {z:?}");
            assert!(((f[0] * f[0] + f[1] * f[1]).sqrt() - 0.5 * 2.0 * 2.0).abs() < 1e-12);
            // Inside it the flow points out, outside in.
            let inner = lc.eval([z[0] / 2.0, z[1] / 2.0]);
            assert!(inner[0] * z[0] + inner[1] * z[1] > 0.0);
            let outer = lc.eval([z[0] * 2.0, z[1] * 2.0]);
            assert!(outer[0] * z[0] + outer[1] * z[1] < 0.0);
        }
        // Double limit cycle: no radial flow at r = d.
        let dl = DoubleLimitCycle { alpha: 1.0, w: 1.0, d: 1.5 };
        let f = dl.eval([0.0, 1.5]);
        assert!((f[1]).abs() < 1e-12, "{f:?}");
        // Van der Pol and Duffing: equilibria at the origin (and Duffing's at x² = −b/c).
        assert_eq!(VanDerPol::default().eval([0.0, 0.0]), [0.0, 0.0]);
        let du = Duffing::default();
        assert_eq!(du.eval([0.0, 0.0]), [0.0, 0.0]);
        let x = (-du.b / du.c).sqrt();
        for z in [[x, 0.0], [-x, 0.0]] {
            let f = du.eval(z);
            assert!(f[0].abs() < 1e-15 && f[1].abs() < 1e-12, "{z:?}: {f:?}");
        }
    }

    #[test]
    fn the_step_follows_each_noise_convention_and_batches_agree() {
        let field = VectorField::VanDerPol(VanDerPol::default());
        let (z, gu, eps) = ([0.3, -0.2], [0.01, 0.02], [1.0, -0.5]);
        let f = field.eval(z);
        let (c, _) = step_latent(&field, z, gu, eps, 0.1, 0.04, NoiseConvention::SqrtQTimesDt);
        let (h, fz) = step_latent(&field, z, gu, eps, 0.1, 0.04, NoiseConvention::SqrtOfQDt);
        assert_eq!(fz, f);
        for d in 0..2 {
            let drift = z[d] + (f[d] + gu[d]) * 0.1;
            assert_eq!(c[d], drift + (eps[d] * 0.2) * 0.1);
            assert_eq!(h[d], drift + eps[d] * (0.04f64 * 0.1).sqrt());
        }
        let zs = [0.1, 0.2, -0.3, 0.4, 1.5, -1.0];
        let mut out = [0.0; 6];
        field.eval_batch(&zs, &mut out);
        for i in 0..3 {
            assert_eq!(out[2 * i..2 * i + 2], field.eval([zs[2 * i], zs[2 * i + 1]]));
        }
        assert_eq!(reset_latent([0.0, 0.75]), [-1.0, 0.5]);
        // Non-finite parameters are refused by name.
        let bad = VectorField::Duffing(Duffing { c: f64::NAN, ..Duffing::default() });
        assert!(bad.validate().unwrap_err().to_string().contains('c'));
        assert!(LimitCycle::from_range(0.0, 40, 1.0).is_err());
    }
}
