//! A gated recurrent unit over whole sequences, with backpropagation through time.
//!
//! PyTorch's `nn.GRU` (one layer) gate order and equations, for `batch` independent
//! sequences stepped in lockstep (time-major rows: row `t·batch + b`):
//!
//! ```text
//! r = σ(W_ir x + b_ir + W_hr h + b_hr)
//! z = σ(W_iz x + b_iz + W_hz h + b_hz)
//! n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
//! h' = (1 − z) ⊙ n + z ⊙ h
//! ```
//!
//! Parameters in one flat slice, in Kestrel's `x·W` layout: `weight_ih` (`input × 3H`, gate
//! columns r | z | n), `weight_hh` (`H × 3H`), `bias_ih` (`3H`), `bias_hh` (`3H`). PyTorch
//! stores the weights transposed (`3H × input`); loading its tensors transposes them.

use crate::error::NnError;
use crate::matmul::{Op, matmul};
use kestrel_core::simd::Real;
use kestrel_core::{FromInvalid, Key};

/// A one-layer GRU: `input` features in, `hidden` units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gru {
    /// Input width.
    pub input: usize,
    /// Hidden units.
    pub hidden: usize,
}

/// What a forward pass keeps for the backward pass, and the backward pass's scratch; sized by
/// [`Gru::cache`] and reused between calls (a pass allocates nothing once warm).
#[derive(Clone, Debug, Default)]
pub struct GruCache<T> {
    steps: usize,
    batch: usize,
    /// `x·W_ih + b_ih`, `steps·batch × 3H`.
    gi: Vec<T>,
    /// `h·W_hn + b_hn` (the hidden part of the candidate), `steps·batch × H`.
    hn: Vec<T>,
    r: Vec<T>,
    z: Vec<T>,
    n: Vec<T>,
    /// Hidden states: row block 0 is `h₀`, block `t + 1` the output of step `t`.
    h: Vec<T>,
    gh: Vec<T>,
    dgi: Vec<T>,
    dgh: Vec<T>,
    dh: Vec<T>,
}

impl<T: Real> GruCache<T> {
    /// The outputs `h_0 … h_{steps−1}` of the last forward pass (`steps·batch × H`).
    pub fn outputs(&self) -> &[T] {
        &self.h[self.h.len() / (self.steps + 1)..]
    }
}

#[inline]
fn sigmoid<T: Real>(x: T) -> T {
    T::ONE / (T::ONE + (-x).exp())
}

impl Gru {
    /// A GRU `input → hidden`.
    pub fn new(input: usize, hidden: usize) -> Result<Self, NnError> {
        if input == 0 || hidden == 0 {
            return Err(NnError::invalid(
                "gru size",
                format!("{input} -> {hidden}"),
                "at least 1 input and 1 hidden unit",
            ));
        }
        Ok(Gru { input, hidden })
    }

    /// Parameters: `3H·input + 3H·H + 6H`.
    pub fn num_params(&self) -> usize {
        let g = 3 * self.hidden;
        g * self.input + g * self.hidden + 2 * g
    }

    /// Names and shapes of the parameter tensors, in slice order (Kestrel's layout).
    pub fn param_shapes(&self) -> Vec<(&'static str, Vec<usize>)> {
        let g = 3 * self.hidden;
        vec![
            ("weight_ih", vec![self.input, g]),
            ("weight_hh", vec![self.hidden, g]),
            ("bias_ih", vec![g]),
            ("bias_hh", vec![g]),
        ]
    }

    /// PyTorch's default: every parameter `U[−1/√H, 1/√H]`.
    pub fn init<T: Real>(&self, key: Key, params: &mut [T]) {
        let bound = 1.0 / (self.hidden as f64).sqrt();
        let mut r = key.rng();
        for v in params[..self.num_params()].iter_mut() {
            *v = T::from_f64(bound * (2.0 * r.uniform_f64() - 1.0));
        }
    }

    /// A cache for `steps` steps of `batch` sequences.
    pub fn cache<T: Real>(&self, steps: usize, batch: usize) -> GruCache<T> {
        let (h, g) = (self.hidden, 3 * self.hidden);
        let rows = steps * batch;
        GruCache {
            steps,
            batch,
            gi: vec![T::ZERO; rows * g],
            hn: vec![T::ZERO; rows * h],
            r: vec![T::ZERO; rows * h],
            z: vec![T::ZERO; rows * h],
            n: vec![T::ZERO; rows * h],
            h: vec![T::ZERO; (steps + 1) * batch * h],
            gh: vec![T::ZERO; batch * g],
            dgi: vec![T::ZERO; rows * g],
            dgh: vec![T::ZERO; batch * g],
            dh: vec![T::ZERO; batch * h],
        }
    }

    fn split<'p, T>(&self, params: &'p [T]) -> (&'p [T], &'p [T], &'p [T], &'p [T]) {
        let g = 3 * self.hidden;
        let (wi, rest) = params.split_at(self.input * g);
        let (wh, rest) = rest.split_at(self.hidden * g);
        let (bi, rest) = rest.split_at(g);
        (wi, wh, bi, &rest[..g])
    }

    /// Runs `steps` steps over `x` (`steps·batch × input`, time-major) from `h0` (`batch × H`;
    /// `None` for zeros). The outputs are [`GruCache::outputs`].
    ///
    /// # Panics
    /// If the cache was sized for other `steps`/`batch` or a slice is short (programming errors).
    pub fn forward<T: Real>(
        &self,
        params: &[T],
        x: &[T],
        h0: Option<&[T]>,
        cache: &mut GruCache<T>,
    ) {
        let (hd, g) = (self.hidden, 3 * self.hidden);
        let (steps, batch) = (cache.steps, cache.batch);
        let rows = steps * batch;
        assert!(x.len() >= rows * self.input, "gru: input has {} values", x.len());
        let (wi, wh, bi, bh) = self.split(params);
        for row in cache.gi.chunks_mut(g) {
            row.copy_from_slice(bi);
        }
        matmul(rows, self.input, g, x, Op::N, wi, Op::N, &mut cache.gi, true);
        match h0 {
            Some(h0) => cache.h[..batch * hd].copy_from_slice(&h0[..batch * hd]),
            None => cache.h[..batch * hd].iter_mut().for_each(|v| *v = T::ZERO),
        }
        for t in 0..steps {
            let (prev, next) = cache.h.split_at_mut((t + 1) * batch * hd);
            let prev = &prev[t * batch * hd..];
            let next = &mut next[..batch * hd];
            for row in cache.gh.chunks_mut(g) {
                row.copy_from_slice(bh);
            }
            matmul(batch, hd, g, prev, Op::N, wh, Op::N, &mut cache.gh, true);
            for b in 0..batch {
                let gi = &cache.gi[(t * batch + b) * g..][..g];
                let gh = &cache.gh[b * g..][..g];
                let o = (t * batch + b) * hd;
                for j in 0..hd {
                    let r = sigmoid(gi[j] + gh[j]);
                    let z = sigmoid(gi[hd + j] + gh[hd + j]);
                    let hn = gh[2 * hd + j];
                    let n = (gi[2 * hd + j] + r * hn).tanh();
                    let hp = prev[b * hd + j];
                    cache.r[o + j] = r;
                    cache.z[o + j] = z;
                    cache.n[o + j] = n;
                    cache.hn[o + j] = hn;
                    next[b * hd + j] = (T::ONE - z) * n + z * hp;
                }
            }
        }
    }

    /// Backpropagation through time for the last [`Gru::forward`]: `dh` (`steps·batch × H`)
    /// is ∂L/∂ each output `h_t`. Adds the parameter gradient to `dparams`, writes ∂L/∂x to
    /// `dx` and ∂L/∂h₀ to `dh0` when given.
    #[allow(clippy::too_many_arguments)]
    pub fn backward<T: Real>(
        &self,
        params: &[T],
        x: &[T],
        dh: &[T],
        cache: &mut GruCache<T>,
        dparams: &mut [T],
        dx: Option<&mut [T]>,
        dh0: Option<&mut [T]>,
    ) {
        let (hd, g) = (self.hidden, 3 * self.hidden);
        let (steps, batch) = (cache.steps, cache.batch);
        let rows = steps * batch;
        let (wi, wh, _, _) = self.split(params);
        let (dwi, rest) = dparams.split_at_mut(self.input * g);
        let (dwh, rest) = rest.split_at_mut(hd * g);
        let (dbi, dbh) = rest.split_at_mut(g);
        cache.dh.iter_mut().for_each(|v| *v = T::ZERO);
        for t in (0..steps).rev() {
            let prev = &cache.h[t * batch * hd..][..batch * hd];
            for b in 0..batch {
                let o = (t * batch + b) * hd;
                let dgi = &mut cache.dgi[(t * batch + b) * g..][..g];
                let dgh = &mut cache.dgh[b * g..][..g];
                for j in 0..hd {
                    let d = dh[o + j] + cache.dh[b * hd + j];
                    let (r, z, n, hn) =
                        (cache.r[o + j], cache.z[o + j], cache.n[o + j], cache.hn[o + j]);
                    let hp = prev[b * hd + j];
                    let dn = d * (T::ONE - z) * (T::ONE - n * n);
                    let dz = d * (hp - n) * z * (T::ONE - z);
                    let dr = dn * hn * r * (T::ONE - r);
                    dgi[j] = dr;
                    dgi[hd + j] = dz;
                    dgi[2 * hd + j] = dn;
                    dgh[j] = dr;
                    dgh[hd + j] = dz;
                    dgh[2 * hd + j] = dn * r;
                    cache.dh[b * hd + j] = d * z;
                }
            }
            // W_hh, b_hh and the carry into h_{t−1}.
            matmul(hd, batch, g, prev, Op::T, &cache.dgh, Op::N, dwh, true);
            for row in cache.dgh.chunks(g) {
                for (s, v) in dbh.iter_mut().zip(row) {
                    *s += *v;
                }
            }
            matmul(batch, g, hd, &cache.dgh, Op::N, wh, Op::T, &mut cache.dh, true);
        }
        matmul(self.input, rows, g, x, Op::T, &cache.dgi, Op::N, dwi, true);
        for row in cache.dgi[..rows * g].chunks(g) {
            for (s, v) in dbi.iter_mut().zip(row) {
                *s += *v;
            }
        }
        if let Some(dx) = dx {
            matmul(rows, g, self.input, &cache.dgi, Op::N, wi, Op::T, dx, false);
        }
        if let Some(dh0) = dh0 {
            dh0[..batch * hd].copy_from_slice(&cache.dh);
        }
    }
}
