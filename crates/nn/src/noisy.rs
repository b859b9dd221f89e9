//! Noisy linear layer (Fortunato et al., 2018) with independent Gaussian noise, as sorrel's
//! `NoisyLinear`: `y = x (μ_W + σ_W ⊙ ε_W) + μ_b + σ_b ⊙ ε_b`, `μ ~ U(±√(3/fan_in))`,
//! `σ = σ₀` (0.017). The noise is an explicit argument (`None`: evaluation mode, means
//! only), so a forward pass is a pure function of parameters, input and noise; the caller
//! draws fresh noise per training pass as sorrel does.
//!
//! Parameter layout (flat): `mu_w` (`in × out`, row-major as [`crate::layer::Dense`]), `mu_b`
//! (`out`), `sigma_w` (`in × out`), `sigma_b` (`out`). Noise layout: `eps_w` then `eps_b`.

use crate::error::NnError;
use crate::layer::BiasGrad;
use crate::matmul::{Op, matmul};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::simd::Real;
use kestrel_core::simd::{Simd, WithSimd};

/// The layer's shape and σ₀.
#[derive(Clone, Debug, PartialEq)]
pub struct NoisyDense {
    /// Input width.
    pub input: usize,
    /// Output width.
    pub output: usize,
    /// Initial σ of every weight and bias.
    pub sigma0: f64,
}

impl NoisyDense {
    /// A layer `input → output` with σ₀ = `sigma0`.
    pub fn new(input: usize, output: usize, sigma0: f64) -> Result<Self, NnError> {
        if input == 0 || output == 0 {
            return Err(NnError::invalid(
                "noisy dense size",
                format!("{input} -> {output}"),
                "at least 1 input and 1 output",
            ));
        }
        if !(sigma0.is_finite() && sigma0 >= 0.0) {
            return Err(NnError::invalid("sigma0", sigma0.to_string(), "finite and >= 0"));
        }
        Ok(NoisyDense { input, output, sigma0 })
    }

    /// Weights and biases of one of the two sets (μ or σ).
    fn half(&self) -> usize {
        self.input * self.output + self.output
    }

    /// Length of the flat parameter vector.
    pub fn num_params(&self) -> usize {
        2 * self.half()
    }

    /// Length of a noise vector (one draw per weight and bias).
    pub fn noise_len(&self) -> usize {
        self.half()
    }

    /// Tensor names and shapes in the flat order.
    pub fn param_shapes(&self) -> Vec<(&'static str, Vec<usize>)> {
        let (i, o) = (self.input, self.output);
        vec![
            ("mu_weight", vec![i, o]),
            ("mu_bias", vec![o]),
            ("sigma_weight", vec![i, o]),
            ("sigma_bias", vec![o]),
        ]
    }

    /// μ uniform in ±√(3/fan_in) (weights, then biases), σ = σ₀.
    pub fn init<T: Real>(&self, key: Key, params: &mut [T]) {
        let mut r = key.rng();
        let bound = (3.0 / self.input as f64).sqrt();
        let (mu, sigma) = params.split_at_mut(self.half());
        for v in mu.iter_mut() {
            *v = T::from_f64(bound * (2.0 * r.uniform_f64() - 1.0));
        }
        sigma.iter_mut().for_each(|v| *v = T::from_f64(self.sigma0));
    }

    /// The weights and biases in use: `μ + σ ⊙ ε`, or `μ` without noise, into `eff`
    /// (`noise_len()` values).
    pub fn effective<T: Real>(&self, params: &[T], noise: Option<&[T]>, eff: &mut [T]) {
        let h = self.half();
        let (mu, sigma) = params.split_at(h);
        match noise {
            Some(eps) => {
                kestrel_core::simd::dispatch(Effective { eff: &mut eff[..h], mu, sigma, eps })
            }
            None => eff[..h].copy_from_slice(mu),
        }
    }

    /// `y = x W + b` with the effective weights `eff` from [`NoisyDense::effective`].
    pub fn forward<T: Real>(&self, eff: &[T], x: &[T], y: &mut [T], batch: usize) {
        let (i, o) = (self.input, self.output);
        let (w, b) = eff.split_at(i * o);
        for row in y[..batch * o].chunks_mut(o) {
            row.copy_from_slice(&b[..o]);
        }
        matmul(batch, i, o, x, Op::N, w, Op::N, y, true);
    }

    /// Adds `∂L/∂params` to `dparams` given `dy`, and writes `∂L/∂x` to `dx` if given.
    /// `eff` is the forward's effective weights, `noise` its noise, `scratch` holds
    /// `noise_len()` values.
    #[allow(clippy::too_many_arguments)]
    pub fn backward<T: Real>(
        &self,
        eff: &[T],
        noise: Option<&[T]>,
        x: &[T],
        dy: &[T],
        dparams: &mut [T],
        dx: Option<&mut [T]>,
        batch: usize,
        scratch: &mut [T],
    ) {
        self.backward_dx(eff, noise, x, dy, dparams, dx, false, batch, scratch);
    }

    /// [`NoisyDense::backward`], adding `∂L/∂x` to `dx` instead of overwriting it when
    /// `accumulate_dx` (two heads reading the same input).
    #[allow(clippy::too_many_arguments)]
    pub fn backward_dx<T: Real>(
        &self,
        eff: &[T],
        noise: Option<&[T]>,
        x: &[T],
        dy: &[T],
        dparams: &mut [T],
        dx: Option<&mut [T]>,
        accumulate_dx: bool,
        batch: usize,
        scratch: &mut [T],
    ) {
        let (i, o) = (self.input, self.output);
        let h = self.half();
        // Gradient of the effective weights and biases.
        let (dw, db) = scratch[..h].split_at_mut(i * o);
        matmul(i, batch, o, x, Op::T, dy, Op::N, dw, false);
        db.fill(T::ZERO);
        kestrel_core::simd::dispatch(BiasGrad { dy: &dy[..batch * o], db });
        let (dmu, dsigma) = dparams.split_at_mut(h);
        let g = &scratch[..h];
        kestrel_core::simd::dispatch(NoisyGrad { dmu, dsigma, g, noise });
        if let Some(dx) = dx {
            matmul(batch, o, i, dy, Op::N, &eff[..i * o], Op::T, dx, accumulate_dx);
        }
    }
}

// Element-wise passes as `WithSimd` operations (vectorised for the CPU's widest extension).

/// `eff = μ + σ ⊙ ε`.
struct Effective<'a, T> {
    eff: &'a mut [T],
    mu: &'a [T],
    sigma: &'a [T],
    eps: &'a [T],
}

impl<T: Real> WithSimd for Effective<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let Effective { eff, mu, sigma, eps } = self;
        for (((e, &m), &s), &n) in eff.iter_mut().zip(mu).zip(sigma).zip(eps) {
            *e = m + s * n;
        }
    }
}

/// `dμ += g`, `dσ += g ⊙ ε` (with noise).
struct NoisyGrad<'a, T> {
    dmu: &'a mut [T],
    dsigma: &'a mut [T],
    g: &'a [T],
    noise: Option<&'a [T]>,
}

impl<T: Real> WithSimd for NoisyGrad<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let NoisyGrad { dmu, dsigma, g, noise } = self;
        for (d, &v) in dmu.iter_mut().zip(g) {
            *d += v;
        }
        if let Some(eps) = noise {
            for ((d, &v), &n) in dsigma.iter_mut().zip(g).zip(eps) {
                *d += v * n;
            }
        }
    }
}
