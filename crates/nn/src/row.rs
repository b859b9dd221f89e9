//! Small MLPs on one row at a time, activations on the stack.
//!
//! For the networks no batch shares: neuroevolution's policies (each candidate has its own
//! weights, and each episode steps alone) and the fixed maps inside an env's step (the vector
//! field's observation MLP, evaluated per row by the env kernel). Batched training goes through
//! [`crate::model::Sequential`] and its matrix kernels instead.
//!
//! Layout and order are PyTorch's `nn.Linear` as the references compute one row: `W` is
//! `[out][in]` row-major, each output is summed over the inputs in increasing order from zero
//! and its bias added last. The vector-field goldens (actdyn's observation model) are bit for
//! bit in this order.

use crate::layer::Activation;
use kestrel_core::simd::Real;

/// `out[o] = (Σ_k W[o][k]·x[k]) + b[o]` for `W` `[out.len()][x.len()]` row-major and `b`
/// (`out.len()`), the sum in increasing `k`.
///
/// # Panics
/// If `weight` is not `out.len() × x.len()` or `bias` not `out.len()` long.
#[inline]
pub fn dense_row<T: Real>(weight: &[T], bias: &[T], x: &[T], out: &mut [T]) {
    assert!(
        weight.len() == out.len() * x.len() && bias.len() == out.len(),
        "dense_row: weight {} and bias {} for {} inputs and {} outputs",
        weight.len(),
        bias.len(),
        x.len(),
        out.len()
    );
    if x.is_empty() {
        out.copy_from_slice(bias);
        return;
    }
    for (o, (w, &b)) in out.iter_mut().zip(weight.chunks_exact(x.len()).zip(bias)) {
        let mut s = T::ZERO;
        for (&wk, &xk) in w.iter().zip(x) {
            s += wk * xk;
        }
        *o = s + b;
    }
}

/// One row `x` through `num_layers` dense layers, `layer(i)` giving layer `i`'s weight
/// (`[out][in]`) and bias, with `hidden` after every layer but the last; the last layer's
/// outputs go to `out`. The input and the hidden activations live in two stack arrays of `W`
/// values, so no layer but the last may be wider than `W`, nor the input.
///
/// # Panics
/// If `num_layers` is 0, a width exceeds `W`, or the layers do not chain (see [`dense_row`]).
#[inline]
pub fn mlp_row<'a, T: Real, const W: usize>(
    num_layers: usize,
    layer: impl Fn(usize) -> (&'a [T], &'a [T]),
    hidden: Activation,
    x: &[T],
    out: &mut [T],
) {
    assert!(num_layers > 0 && x.len() <= W, "mlp_row: {num_layers} layers, input {}", x.len());
    let (mut a, mut b) = ([T::ZERO; W], [T::ZERO; W]);
    let (mut src, mut dst) = (&mut a, &mut b);
    let mut len = x.len();
    src[..len].copy_from_slice(x);
    for i in 0..num_layers {
        let (weight, bias) = layer(i);
        if i + 1 == num_layers {
            dense_row(weight, bias, &src[..len], out);
        } else {
            let n = bias.len();
            assert!(n <= W, "mlp_row: hidden layer {i} has {n} units, more than {W}");
            dense_row(weight, bias, &src[..len], &mut dst[..n]);
            dst[..n].iter_mut().for_each(|v| *v = hidden.apply(*v));
            len = n;
            std::mem::swap(&mut src, &mut dst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-checked 2 → 2 (ReLU) → 1 network, the layout (`[out][in]`), and the order of
    /// the sum: left to right from zero, then the bias (1e16 + 1 − 1e16 is 0 that way, 1 the
    /// other).
    #[test]
    fn rows_are_pytorch_linear_layers_summed_in_order() {
        let (w0, b0) = ([1.0, 0.0, 0.0, -1.0], [0.0, 0.5]);
        let (w1, b1) = ([2.0, 3.0], [1.0]);
        let layers = |i: usize| -> (&[f64], &[f64]) {
            if i == 0 { (&w0[..], &b0[..]) } else { (&w1[..], &b1[..]) }
        };
        let mut y = [0.0];
        mlp_row::<f64, 4>(2, layers, Activation::Relu, &[-1.0, 0.25], &mut y);
        assert_eq!(y[0], 1.0 + 0.0 * 2.0 + 0.25 * 3.0);
        // One tanh unit feeding a 1-input layer: out = 0.5·tanh(x₀ + 2x₁ + 0.1).
        let (w_in, b_in, w_out, b_out) = ([1.0f32, 2.0], [0.1f32], [0.5f32], [0.0f32]);
        let one = |i: usize| -> (&[f32], &[f32]) {
            if i == 0 { (&w_in[..], &b_in[..]) } else { (&w_out[..], &b_out[..]) }
        };
        let mut t = [0.0f32; 1];
        mlp_row::<f32, 2>(2, one, Activation::Tanh, &[0.3, -0.4], &mut t);
        assert_eq!(t[0], 0.5 * (0.3f32 + -0.4 * 2.0 + 0.1).tanh());
        let mut o = [0.0];
        dense_row(&[1e16, 1.0, -1e16], &[0.0], &[1.0, 1.0, 1.0], &mut o);
        assert_eq!(o[0], 0.0);
        let mut e = [0.0; 2];
        dense_row(&[], &[4.0, 5.0], &[], &mut e);
        assert_eq!(e, [4.0, 5.0]);
    }
}
