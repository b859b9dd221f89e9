//! Observation models `y = h(z) (+ noise)`: affine, log-linear and MLP maps in PyTorch's
//! layouts, Gaussian and Poisson noise.

use super::common::{LATENT_DIM, MAX_DIM, MAX_HIDDEN};
use crate::error::EnvError;
use kestrel_core::{FromInvalid, Key, Rng, check_bytes};

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

    /// One row: `out[o] = (Σ_k W[o][k]·x[k]) + b[o]`, the sum in increasing `k`
    /// ([`kestrel_nn::row::dense_row`]).
    #[inline]
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        kestrel_nn::row::dense_row(&self.weight, &self.bias, x, out);
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

    /// One row (activations on the stack, no allocation: [`kestrel_nn::row::mlp_row`]).
    #[inline]
    pub fn apply_row(&self, x: &[f64], out: &mut [f64]) {
        let layer = |i: usize| (&self.layers[i].weight[..], &self.layers[i].bias[..]);
        kestrel_nn::row::mlp_row::<f64, MAX_HIDDEN>(
            self.layers.len(),
            layer,
            kestrel_nn::Activation::Relu,
            x,
            out,
        );
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

#[cfg(test)]
mod tests {
    use super::*;

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
