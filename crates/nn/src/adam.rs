//! Adam (Kingma & Ba, 2015) fused into one pass over a flat parameter vector, with optional
//! global gradient-norm clipping (PyTorch's `clip_grad_norm_`) before the update.

use crate::error::NnError;
use kestrel_core::FromInvalid;
use kestrel_core::simd::Real;
use kestrel_core::simd::{Simd, WithSimd};

/// Adam hyper-parameters (PyTorch/optax defaults: β₁ 0.9, β₂ 0.999, ε 1e-8).
#[derive(Clone, Debug, PartialEq)]
pub struct Adam {
    /// Learning rate.
    pub lr: f64,
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// Added to `√v̂`.
    pub eps: f64,
    /// Scale the gradient down to this global L2 norm when it is larger (`None`: no clipping).
    pub max_grad_norm: Option<f64>,
}

impl Adam {
    /// Defaults with learning rate `lr`.
    pub fn new(lr: f64) -> Self {
        Adam { lr, beta1: 0.9, beta2: 0.999, eps: 1e-8, max_grad_norm: None }
    }

    /// Checks the hyper-parameters.
    pub fn validate(&self) -> Result<(), NnError> {
        let ok = |v: f64, lo: f64, hi: f64| v.is_finite() && v >= lo && v < hi;
        let checks = [
            ("lr", self.lr, ok(self.lr, 0.0, f64::INFINITY), "finite and >= 0"),
            ("beta1", self.beta1, ok(self.beta1, 0.0, 1.0), "in [0, 1)"),
            ("beta2", self.beta2, ok(self.beta2, 0.0, 1.0), "in [0, 1)"),
            ("eps", self.eps, ok(self.eps, 0.0, f64::INFINITY), "finite and >= 0"),
        ];
        for (field, v, good, accepted) in checks {
            if !good {
                return Err(NnError::invalid(field, v.to_string(), accepted));
            }
        }
        if let Some(m) = self.max_grad_norm
            && !(m.is_finite() && m > 0.0)
        {
            return Err(NnError::invalid("max_grad_norm", m.to_string(), "finite and > 0"));
        }
        Ok(())
    }

    /// One update of `params` from `grads`; returns the gradient's global norm before
    /// clipping. A non-finite norm is an error and changes nothing.
    ///
    /// # Panics
    /// If the lengths of `params`, `grads` and the state differ.
    pub fn step<T: Real>(
        &self,
        st: &mut AdamState<T>,
        params: &mut [T],
        grads: &[T],
    ) -> Result<f64, NnError> {
        assert!(
            params.len() == grads.len() && params.len() == st.m.len(),
            "Adam::step: params {}, grads {}, state {}",
            params.len(),
            grads.len(),
            st.m.len()
        );
        let norm = kestrel_core::simd::dispatch(SumSquares(grads)).sqrt();
        if !norm.is_finite() {
            return Err(NnError::NonFinite { what: "gradient norm", value: norm });
        }
        let scale = match self.max_grad_norm {
            Some(m) if m / (norm + 1e-6) < 1.0 => m / (norm + 1e-6),
            _ => 1.0,
        };
        st.t += 1;
        let t = st.t as i32;
        let bc1 = 1.0 - self.beta1.powi(t);
        let bc2 = 1.0 - self.beta2.powi(t);
        let (b1, b2) = (T::from_f64(self.beta1), T::from_f64(self.beta2));
        let (c1, c2) = (T::from_f64(1.0 - self.beta1), T::from_f64(1.0 - self.beta2));
        let step = T::from_f64(self.lr / bc1);
        let inv_sqrt_bc2 = T::from_f64(1.0 / bc2.sqrt());
        let (eps, s) = (T::from_f64(self.eps), T::from_f64(scale));
        kestrel_core::simd::dispatch(Update {
            params,
            grads,
            m: &mut st.m,
            v: &mut st.v,
            k: [s, b1, c1, b2, c2, step, inv_sqrt_bc2, eps],
        });
        Ok(norm)
    }
}

// The two sweeps as `WithSimd` operations (see `kestrel_core::simd::dispatch`; as closures they had stayed
// out of line, compiled for the baseline).

/// `Σ g²` (see [`sum_squares`]).
struct SumSquares<'a, T>(&'a [T]);

impl<T: Real> WithSimd for SumSquares<'_, T> {
    type Output = f64;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) -> f64 {
        sum_squares(self.0)
    }
}

/// The update of every parameter; `k` = [gradient scale, β₁, 1 − β₁, β₂, 1 − β₂,
/// lr / (1 − β₁ᵗ), 1 / √(1 − β₂ᵗ), ε].
struct Update<'a, T> {
    params: &'a mut [T],
    grads: &'a [T],
    m: &'a mut [T],
    v: &'a mut [T],
    k: [T; 8],
}

impl<T: Real> WithSimd for Update<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let [s, b1, c1, b2, c2, step, inv_sqrt_bc2, eps] = self.k;
        let Update { params, grads, m, v, .. } = self;
        for (((p, &g), m), v) in params.iter_mut().zip(grads).zip(m).zip(v) {
            let g = g * s;
            *m = flush_subnormal(b1 * *m + c1 * g);
            *v = flush_subnormal(b2 * *v + c2 * g * g);
            // A zero first moment moves nothing, also where `ε = 0` and `v` is zero (0/0).
            let d = step * *m / (v.sqrt() * inv_sqrt_bc2 + eps);
            *p -= if *m == T::ZERO { T::ZERO } else { d };
        }
    }
}

/// `x`, or 0 where `x` is subnormal.
///
/// Why: a parameter whose gradient stays zero (a dead ReLU unit) has its first moment
/// multiplied by β₁ every step, so after a few hundred steps it is subnormal, and rounding
/// keeps it there (0.9 · k · 2⁻¹⁴⁹ rounds back to k · 2⁻¹⁴⁹ for small k). On Intel cores every
/// operation on a subnormal takes a slow assist: in ALLO's asymexp profile a fifth of the
/// encoder's first moments were subnormal after 2,000 steps and its update took twice as long
/// (BENCHMARKS, issue 31). XLA's CPU client, which runs JAX's optax, executes with the
/// flush-to-zero and denormals-are-zero bits set (`tsl::port::ScopedFlushDenormal` in
/// `xla/pjrt/cpu/cpu_client.cc`), so every subnormal there is 0; this flushes only the two
/// moments, which needs no `unsafe` and no thread's float mode. In f32 with ε = 1e-8 the step a
/// first moment below 2⁻¹²⁶ makes is under lr / (1 − β₁) · 2⁻¹²⁶ / ε ≈ lr · 1.2e-29, less than
/// half an ulp of any parameter larger than about lr · 2e-22 in magnitude, so such parameters
/// come out the same as without the flush; a flushed second moment changes the divisor by
/// under 1.1e-19 against ε.
#[inline(always)]
fn flush_subnormal<T: Real>(x: T) -> T {
    if x.abs() < T::MIN_POSITIVE { T::ZERO } else { x }
}

/// `Σ g²` in f64 over 32 interleaved partial sums: four vectors of eight, so four independent
/// chains of adds (one vector of partial sums is still one dependent chain, latency-bound).
#[inline(always)]
fn sum_squares<T: Real>(g: &[T]) -> f64 {
    let mut acc = [0.0f64; 32];
    let chunks = g.chunks_exact(32);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            let v = v.to_f64();
            *a += v * v;
        }
    }
    let tail: f64 = rest.iter().map(|v| v.to_f64() * v.to_f64()).sum();
    acc.iter().sum::<f64>() + tail
}

/// Adam's moments and step count for one parameter vector.
#[derive(Clone, Debug, PartialEq)]
pub struct AdamState<T> {
    /// First moment.
    pub m: Vec<T>,
    /// Second moment.
    pub v: Vec<T>,
    /// Steps taken.
    pub t: u64,
}

impl<T: Real> AdamState<T> {
    /// Zero moments for `n` parameters.
    pub fn new(n: usize) -> Self {
        AdamState { m: vec![T::ZERO; n], v: vec![T::ZERO; n], t: 0 }
    }

    /// Back to [`AdamState::new`]`(n)`, reusing the buffers.
    pub fn reset(&mut self, n: usize) {
        for x in [&mut self.m, &mut self.v] {
            x.clear();
            x.resize(n, T::ZERO);
        }
        self.t = 0;
    }
}
