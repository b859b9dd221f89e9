//! Layers: the [`Layer`] trait (explicit forward and backward over flat parameter slices),
//! [`Dense`] and the element-wise [`Activation`]s.

use crate::error::NnError;
use crate::matmul::{Op, matmul};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::simd::Real;
use kestrel_core::simd::{Simd, WithSimd};

/// One layer over a batch of row-major rows (`batch × in_dim` in, `batch × out_dim` out).
///
/// Parameters live outside the layer, in a slice of [`Layer::num_params`] values (a model's
/// parameters are one flat vector, which is what a fused optimiser and a checkpoint want).
/// `backward` receives the layer's own input and output from the forward pass and *adds* the
/// parameter gradient to `dparams` (so several passes through one model accumulate; zero the
/// gradient before a step), and writes the input gradient to `dx` when asked.
///
/// Layers that need more than this (a recurrent cell over time, a distribution head with a
/// sampled output) are expected to extend it with their own state slices; the flat-parameter
/// and accumulate conventions stay the same.
pub trait Layer<T: Real>: Send + Sync + std::fmt::Debug {
    /// Input width.
    fn in_dim(&self) -> usize;
    /// Output width.
    fn out_dim(&self) -> usize;
    /// Parameters this layer owns.
    fn num_params(&self) -> usize {
        0
    }
    /// Names and shapes of the parameter tensors, in slice order (for checkpoints).
    fn param_shapes(&self) -> Vec<(&'static str, Vec<usize>)> {
        Vec::new()
    }
    /// Fresh parameters.
    fn init(&self, _key: Key, _params: &mut [T]) {}
    /// `y = f(x)`.
    fn forward(&self, params: &[T], x: &[T], y: &mut [T], batch: usize);
    /// `dparams += ∂L/∂params`; `dx = ∂L/∂x` if given.
    #[allow(clippy::too_many_arguments)]
    fn backward(
        &self,
        params: &[T],
        x: &[T],
        y: &[T],
        dy: &[T],
        dparams: &mut [T],
        dx: Option<&mut [T]>,
        batch: usize,
    );
}

/// How a [`Dense`] layer's parameters start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Init {
    /// PyTorch's `nn.Linear` default: weight and bias `U[−1/√in, 1/√in]`.
    #[default]
    TorchUniform,
    /// Haiku's `hk.Linear` default: weight `σ·z` with `z` a standard normal truncated to
    /// [−2, 2] and `σ = 1/√in` (Haiku does not rescale for the truncation, so the standard
    /// deviation is `0.88/√in`); bias 0.
    TruncatedNormal,
    /// Flax's `nn.Dense` default, `lecun_normal()`: a standard normal truncated to [−2, 2],
    /// rescaled to standard deviation 1 (÷ 0.8796…, `jax.nn.initializers.variance_scaling`),
    /// times `1/√in`; bias 0.
    LecunNormal,
    /// Glorot/Xavier uniform weight `U[−√(6/(in+out)), √(6/(in+out))]`; bias 0.
    GlorotUniform,
}

/// `y = x W + b` with `W` stored `in × out` row-major, then `b` (`out`).
#[derive(Clone, Debug, PartialEq)]
pub struct Dense {
    /// Input width.
    pub input: usize,
    /// Output width.
    pub output: usize,
    /// Initialisation.
    pub init: Init,
}

impl Dense {
    /// A layer `input → output`.
    pub fn new(input: usize, output: usize, init: Init) -> Result<Self, NnError> {
        if input == 0 || output == 0 {
            return Err(NnError::invalid(
                "dense size",
                format!("{input} -> {output}"),
                "at least 1 input and 1 output",
            ));
        }
        Ok(Dense { input, output, init })
    }
}

impl<T: Real> Layer<T> for Dense {
    fn in_dim(&self) -> usize {
        self.input
    }
    fn out_dim(&self) -> usize {
        self.output
    }
    fn num_params(&self) -> usize {
        self.input * self.output + self.output
    }
    fn param_shapes(&self) -> Vec<(&'static str, Vec<usize>)> {
        vec![("weight", vec![self.input, self.output]), ("bias", vec![self.output])]
    }
    fn init(&self, key: Key, params: &mut [T]) {
        let mut r = key.rng();
        let (w, b) = params.split_at_mut(self.input * self.output);
        let fan_in = self.input as f64;
        match self.init {
            Init::TorchUniform => {
                let bound = 1.0 / fan_in.sqrt();
                for v in w.iter_mut().chain(b.iter_mut()) {
                    *v = T::from_f64(bound * (2.0 * r.uniform_f64() - 1.0));
                }
            }
            Init::TruncatedNormal | Init::LecunNormal => {
                // The standard deviation of a standard normal truncated to [−2, 2].
                const TRUNCATED_SD: f64 = 0.879_625_661_034_239_8;
                let scale = match self.init {
                    Init::LecunNormal => 1.0 / (fan_in.sqrt() * TRUNCATED_SD),
                    _ => 1.0 / fan_in.sqrt(),
                };
                for v in w.iter_mut() {
                    let z = loop {
                        let z = r.standard_normal();
                        if z.abs() <= 2.0 {
                            break z;
                        }
                    };
                    *v = T::from_f64(scale * z);
                }
                b.iter_mut().for_each(|v| *v = T::ZERO);
            }
            Init::GlorotUniform => {
                let bound = (6.0 / (fan_in + self.output as f64)).sqrt();
                for v in w.iter_mut() {
                    *v = T::from_f64(bound * (2.0 * r.uniform_f64() - 1.0));
                }
                b.iter_mut().for_each(|v| *v = T::ZERO);
            }
        }
    }
    fn forward(&self, params: &[T], x: &[T], y: &mut [T], batch: usize) {
        let (i, o) = (self.input, self.output);
        let (w, b) = params.split_at(i * o);
        for row in y[..batch * o].chunks_mut(o) {
            row.copy_from_slice(&b[..o]);
        }
        matmul(batch, i, o, x, Op::N, w, Op::N, y, true);
    }
    fn backward(
        &self,
        params: &[T],
        x: &[T],
        _y: &[T],
        dy: &[T],
        dparams: &mut [T],
        dx: Option<&mut [T]>,
        batch: usize,
    ) {
        let (i, o) = (self.input, self.output);
        let (dw, db) = dparams.split_at_mut(i * o);
        // dW += xᵀ dy; db += Σ_rows dy; dx = dy Wᵀ.
        matmul(i, batch, o, x, Op::T, dy, Op::N, dw, true);
        kestrel_core::simd::dispatch(BiasGrad { dy: &dy[..batch * o], db: &mut db[..o] });
        if let Some(dx) = dx {
            matmul(batch, o, i, dy, Op::N, &params[..i * o], Op::T, dx, false);
        }
    }
}

/// Element-wise activations. Branch-free where it matters (a data-dependent branch per element
/// mispredicts half the time on pre-activations centred at 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Activation {
    /// `x`.
    Identity,
    /// `max(x, 0)`.
    Relu,
    /// `x` for `x > 0`, else `slope · x`.
    LeakyRelu(f64),
    /// `tanh x`.
    Tanh,
    /// `1 / (1 + e^{−x})`.
    Sigmoid,
    /// `ln(1 + eˣ)` (computed without overflow).
    Softplus,
    /// `x` for `x > 0`, else `eˣ − 1`.
    Elu,
}

impl Activation {
    /// Parses `identity`, `relu`, `leaky_relu` (slope 0.01), `tanh`, `sigmoid`, `softplus`,
    /// `elu`.
    pub fn parse(s: &str) -> Result<Self, NnError> {
        Ok(match s {
            "identity" | "linear" => Activation::Identity,
            "relu" => Activation::Relu,
            "leaky_relu" => Activation::LeakyRelu(0.01),
            "tanh" => Activation::Tanh,
            "sigmoid" => Activation::Sigmoid,
            "softplus" => Activation::Softplus,
            "elu" => Activation::Elu,
            _ => {
                return Err(NnError::invalid(
                    "activation",
                    s.to_string(),
                    "identity, relu, leaky_relu, tanh, sigmoid, softplus or elu",
                ));
            }
        })
    }

    /// `f(x)`.
    #[inline(always)]
    pub fn apply<T: Real>(self, x: T) -> T {
        match self {
            Activation::Identity => x,
            Activation::Relu => {
                if x > T::ZERO {
                    x
                } else {
                    T::ZERO
                }
            }
            Activation::LeakyRelu(s) => {
                if x > T::ZERO {
                    x
                } else {
                    T::from_f64(s) * x
                }
            }
            Activation::Tanh => x.tanh(),
            Activation::Sigmoid => T::ONE / (T::ONE + (-x).exp()),
            Activation::Softplus => {
                // max(x, 0) + ln(1 + e^{−|x|})
                let m = if x > T::ZERO { x } else { T::ZERO };
                m + (T::ONE + (-x.abs()).exp()).ln()
            }
            Activation::Elu => {
                if x > T::ZERO {
                    x
                } else {
                    x.exp() - T::ONE
                }
            }
        }
    }

    /// `f'(x)` given `x` and `y = f(x)`.
    #[inline(always)]
    pub fn derivative<T: Real>(self, x: T, y: T) -> T {
        match self {
            Activation::Identity => T::ONE,
            Activation::Relu => {
                if x > T::ZERO {
                    T::ONE
                } else {
                    T::ZERO
                }
            }
            Activation::LeakyRelu(s) => {
                if x > T::ZERO {
                    T::ONE
                } else {
                    T::from_f64(s)
                }
            }
            Activation::Tanh => T::ONE - y * y,
            Activation::Sigmoid => y * (T::ONE - y),
            Activation::Softplus => T::ONE / (T::ONE + (-x).exp()),
            Activation::Elu => {
                if x > T::ZERO {
                    T::ONE
                } else {
                    y + T::ONE
                }
            }
        }
    }
}

/// An [`Activation`] as a layer of width `dim`.
#[derive(Clone, Debug, PartialEq)]
pub struct Act {
    /// The function.
    pub f: Activation,
    /// Width.
    pub dim: usize,
}

impl<T: Real> Layer<T> for Act {
    fn in_dim(&self) -> usize {
        self.dim
    }
    fn out_dim(&self) -> usize {
        self.dim
    }
    fn forward(&self, _params: &[T], x: &[T], y: &mut [T], batch: usize) {
        let n = batch * self.dim;
        kestrel_core::simd::dispatch(ActForward { f: self.f, x: &x[..n], y: &mut y[..n] });
    }
    fn backward(
        &self,
        _params: &[T],
        x: &[T],
        y: &[T],
        dy: &[T],
        _dparams: &mut [T],
        dx: Option<&mut [T]>,
        batch: usize,
    ) {
        let Some(dx) = dx else { return };
        let n = batch * self.dim;
        kestrel_core::simd::dispatch(ActBackward {
            f: self.f,
            x: &x[..n],
            y: &y[..n],
            dy: &dy[..n],
            dx: &mut dx[..n],
        });
    }
}

/// `db += Σ_rows dy` (rows of `db.len()` values).
pub(crate) struct BiasGrad<'a, T> {
    pub(crate) dy: &'a [T],
    pub(crate) db: &'a mut [T],
}

impl<T: Real> WithSimd for BiasGrad<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        for row in self.dy.chunks(self.db.len()) {
            for (g, d) in self.db.iter_mut().zip(row) {
                *g += *d;
            }
        }
    }
}

// The activations' element-wise passes as `WithSimd` operations (see `kestrel_core::simd::dispatch`).

/// `y = f(x)`.
struct ActForward<'a, T> {
    f: Activation,
    x: &'a [T],
    y: &'a mut [T],
}

impl<T: Real> WithSimd for ActForward<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let ActForward { f, x, y } = self;
        // One loop per function so each is a plain (vectorisable) loop.
        match f {
            Activation::Identity => y.copy_from_slice(x),
            Activation::Relu => {
                for (yo, &xi) in y.iter_mut().zip(x) {
                    *yo = if xi > T::ZERO { xi } else { T::ZERO };
                }
            }
            f => {
                for (yo, &xi) in y.iter_mut().zip(x) {
                    *yo = f.apply(xi);
                }
            }
        }
    }
}

/// `dx = dy · f'(x, y)`.
struct ActBackward<'a, T> {
    f: Activation,
    x: &'a [T],
    y: &'a [T],
    dy: &'a [T],
    dx: &'a mut [T],
}

impl<T: Real> WithSimd for ActBackward<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let ActBackward { f, x, y, dy, dx } = self;
        match f {
            Activation::Identity => dx.copy_from_slice(dy),
            Activation::Relu => {
                for ((g, &d), &yi) in dx.iter_mut().zip(dy).zip(y) {
                    *g = if yi > T::ZERO { d } else { T::ZERO };
                }
            }
            Activation::Tanh => {
                for ((g, &d), &yi) in dx.iter_mut().zip(dy).zip(y) {
                    *g = d * (T::ONE - yi * yi);
                }
            }
            f => {
                for (((g, &d), &xi), &yi) in dx.iter_mut().zip(dy).zip(x).zip(y) {
                    *g = d * f.derivative(xi, yi);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dense_layer_is_x_w_plus_b_and_its_backward_the_transposes() {
        // 2 → 3 on hand-set weights, two rows.
        let d = Dense::new(2, 3, Init::TorchUniform).unwrap();
        let p = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0, 0.5, -0.5, 1.0];
        let x = [1.0, 0.0, -1.0, 2.0];
        let mut y = [0.0; 6];
        Layer::<f64>::forward(&d, &p, &x, &mut y, 2);
        assert_eq!(y, [1.5, 1.5, 4.0, 7.5, 7.5, 10.0]);
        let dy = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0];
        let (mut dp, mut dx) = ([0.0; 9], [0.0; 4]);
        d.backward(&p, &x, &y, &dy, &mut dp, Some(&mut dx), 2);
        // dW = xᵀ dy, db = Σ dy, dx = dy Wᵀ.
        assert_eq!(dp, [1.0, -1.0, -1.0, 0.0, 2.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(dx, [1.0, 4.0, 5.0, 11.0]);
        assert!(Dense::new(0, 3, Init::TorchUniform).is_err());
        assert_eq!(Layer::<f64>::num_params(&d), 9);
    }

    #[test]
    fn inits_stay_in_their_bounds_and_activations_match_their_formulas() {
        let d = Dense::new(16, 8, Init::TorchUniform).unwrap();
        let mut p = vec![0.0f64; 16 * 8 + 8];
        d.init(Key::new(3), &mut p);
        assert!(p.iter().all(|v| v.abs() <= 0.25) && p.iter().any(|v| v.abs() > 0.1));
        let g = Dense { init: Init::GlorotUniform, ..d.clone() };
        g.init(Key::new(3), &mut p);
        let bound = (6.0f64 / 24.0).sqrt();
        assert!(p[..128].iter().all(|v| v.abs() <= bound) && p[128..].iter().all(|&v| v == 0.0));
        let t = Dense { init: Init::TruncatedNormal, ..d };
        t.init(Key::new(3), &mut p);
        assert!(p[..128].iter().all(|v| v.abs() <= 2.0 / 4.0));
        // Flax's lecun_normal: truncated at two standard deviations of the untruncated normal,
        // rescaled so the weights' standard deviation is exactly 1/√in (here 1/16).
        let l = Dense::new(256, 256, Init::LecunNormal).unwrap();
        let mut q = vec![0.0f64; 256 * 257];
        l.init(Key::new(4), &mut q);
        let w = &q[..256 * 256];
        let sd = (w.iter().map(|v| v * v).sum::<f64>() / w.len() as f64).sqrt();
        assert!((sd * 16.0 - 1.0).abs() < 0.01, "sd {sd}");
        assert!(w.iter().all(|v| v.abs() <= 2.0 / (16.0 * 0.8796)) && q[256 * 256..] == [0.0; 256]);
        for (f, x, y) in [
            (Activation::Relu, -1.0f64, 0.0),
            (Activation::Relu, 2.0, 2.0),
            (Activation::LeakyRelu(0.1), -2.0, -0.2),
            (Activation::Tanh, 0.5, 0.5f64.tanh()),
            (Activation::Sigmoid, 0.0, 0.5),
            (Activation::Softplus, 0.0, 2f64.ln()),
            (Activation::Elu, -1.0, (-1f64).exp() - 1.0),
        ] {
            assert!((f.apply(x) - y).abs() < 1e-12, "{f:?}({x}) = {} not {y}", f.apply(x));
        }
        assert_eq!(Activation::parse("leaky_relu").unwrap(), Activation::LeakyRelu(0.01));
        assert!(Activation::parse("swishy").is_err());
    }
}
