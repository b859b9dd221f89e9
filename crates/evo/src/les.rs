//! LES, the learned evolution strategy: a diagonal Gaussian search whose recombination
//! weights come from a self-attention layer over fitness features and whose per-coordinate
//! learning rates come from a small MLP over evolution paths, both meta-learned.
//!
//! Paper: R. T. Lange, T. Schaul, Y. Chen, T. Zahavy, V. Dalibard, C. Lu, S. Singh and
//! S. Flennerhag, "Discovering Evolution Strategies via Meta-Black-Box Optimization", ICLR
//! 2023 (arXiv:2211.11260). Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/learned_es.py` (`LearnedES`, registry name `LES`) with
//! `learned_evolution/les_tools.py` (`FitnessFeatures`, `AttentionWeights`, `EvoPathMLP`,
//! `EvolutionPath`, `tanh_timestamp`).
//!
//! **Weights**: evosax's meta-learned checkpoint, `ckpt/les/2023_10_les_v2.pkl` (its default;
//! `2023_03_les_v1.pkl` has the same layout), read from the path the user gives
//! ([`LesNet::read`]); Kestrel ships none.
//!
//! One generation: features `[f_i < f*, centred rank, z-score]` per row (`f*` the best so
//! far); keys, queries (8 each) and values (1) by dense layers; `A = softmax(Q Kᵀ / √λ)` by
//! rows and `w = softmax(A v)` over the population; paths `p ← (1 − c) p + c Σ w_i (x_i − m)`
//! (and over `(x_i − m) / σ`) at `c ∈ {0.1, 0.5, 0.9}`; per coordinate, an MLP over both
//! paths and the generation's tanh embedding gives `α_m, α_σ ∈ (0, 1)`; `m ← m + α_m (Σ w_i
//! x_i − m)`, `σ ← max(σ + α_σ (√(Σ w_i (x_i − m)² + 1e-8) − σ), 0)`.
//!
//! Differences, by design: a NaN or infinite fitness is read as the generation's worst
//! finite one (evosax's features turn NaN and with them every weight), and σ stays above
//! [`SIGMA_FLOOR`] (evosax's may reach 0, where `(x − m) / σ` divides by zero).

use crate::cma_es::{MEAN_BOUND, SIGMA_FLOOR};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::learned_ckpt::Checkpoint;
use crate::shaping::ordinal_ranks;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, diagonal_rows, finite_or_worst, to_f32,
};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};
use std::path::Path;
use std::sync::Arc;

/// `tanh_timestamp`'s timescales (Metz et al., 2022, as evosax adapts them).
pub(crate) const TIMESCALES: [f64; 13] =
    [1.0, 3.0, 10.0, 30.0, 50.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 1250.0, 1500.0, 2000.0];

/// The evolution paths' rates.
const PATH_RATES: [f64; 3] = [0.1, 0.5, 0.9];

/// `tanh(g / τ − 1)` for each timescale `τ`: the generation's embedding.
pub(crate) fn time_embedding(generation: u64) -> [f64; 13] {
    TIMESCALES.map(|t| (generation as f64 / t - 1.0).tanh())
}

/// A checkpoint's dense layer `y = x W + b` (flax `Dense`: `kernel` is `inputs × outputs`),
/// evaluated by `kestrel-nn`: batches of rows through its [`kestrel_nn::Dense`] layer (whose
/// parameter layout, `W` row-major `inputs × outputs` then `b`, is flax's), single rows through
/// its [`kestrel_nn::row::dense_row`] (which takes `W` by output).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Dense {
    layer: kestrel_nn::Dense,
    /// `W` then `b`, `kestrel-nn`'s layer layout.
    params: Vec<f64>,
    /// `W` as `outputs × inputs`, the one-row layout.
    by_output: Vec<f64>,
}

impl Dense {
    pub(crate) fn read(
        c: &Checkpoint,
        at: &str,
        inputs: usize,
        outputs: usize,
    ) -> Result<Self, EvoError> {
        let kernel = c.get_f64(&format!("{at}/kernel"), &[inputs, outputs])?;
        let bias = c.get_f64(&format!("{at}/bias"), &[outputs])?;
        Self::from_parts(kernel, &bias, inputs, outputs)
    }

    /// The layer from its kernel (`inputs × outputs`, row-major) and bias (`outputs`).
    pub(crate) fn from_parts(
        mut params: Vec<f64>,
        bias: &[f64],
        inputs: usize,
        outputs: usize,
    ) -> Result<Self, EvoError> {
        let by_output =
            (0..outputs * inputs).map(|k| params[(k % inputs) * outputs + k / inputs]).collect();
        params.extend_from_slice(bias);
        let layer =
            kestrel_nn::Dense::new(inputs, outputs, kestrel_nn::Init::default()).map_err(|e| {
                match e {
                    kestrel_nn::NnError::Invalid(v) => EvoError::Invalid(v),
                    other => EvoError::invalid("dense layer", other.to_string(), "a valid layer"),
                }
            })?;
        Ok(Dense { layer, params, by_output })
    }

    /// `out = X W + 1 bᵀ` for the rows `x` (row-major, `inputs` each) at once.
    pub(crate) fn apply_rows(&self, x: &[f64], out: &mut [f64]) {
        use kestrel_nn::Layer;
        self.layer.forward(&self.params, x, out, x.len() / self.layer.input);
    }

    /// `out = x W + b` for one row `x`.
    #[inline]
    pub(crate) fn apply(&self, x: &[f64], out: &mut [f64]) {
        let bias = &self.params[self.layer.input * self.layer.output..];
        kestrel_nn::row::dense_row(&self.by_output, bias, x, out);
    }
}

/// `v ← softmax(v)`, shifted by the maximum.
pub(crate) fn softmax(v: &mut [f64]) {
    let m = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let mut s = 0.0;
    for x in v.iter_mut() {
        *x = (*x - m).exp();
        s += *x;
    }
    v.iter_mut().for_each(|x| *x /= s);
}

/// Features `[f < best, centred ordinal rank, z-score]` of `fit` into `out` (`stride` values
/// per row, these three first), as `les_tools.FitnessFeatures(centered_rank=True,
/// z_score=True)` computes them.
pub(crate) fn fitness_features(
    fit: &[f32],
    best: f64,
    order: &mut [usize],
    ranks: &mut [f64],
    out: &mut [f64],
    stride: usize,
) {
    let n = fit.len();
    ordinal_ranks(fit, &mut order[..n], &mut ranks[..n]);
    let mean = fit.iter().map(|&f| f as f64).sum::<f64>() / n as f64;
    let var = fit.iter().map(|&f| (f as f64 - mean) * (f as f64 - mean)).sum::<f64>() / n as f64;
    let sd = var.sqrt();
    let denom = (n.max(2) - 1) as f64;
    for i in 0..n {
        let f = fit[i] as f64;
        out[i * stride] = if f < best { 1.0 } else { 0.0 };
        out[i * stride + 1] = ranks[i] / denom - 0.5;
        out[i * stride + 2] = (f - mean) / (sd + 1e-10);
    }
}

/// LES's two networks, as evosax's checkpoint holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct LesNet {
    keys: Dense,
    queries: Dense,
    values: Dense,
    hidden: Dense,
    lr_mean: Dense,
    lr_sigma: Dense,
    /// Where the weights were read from.
    pub source: String,
}

impl LesNet {
    /// Reads evosax's LES checkpoint (`recomb_weights` and `lrate_modulation`, flax's
    /// `Dense_0..2` each); a file of another layout is an error naming the array.
    pub fn read(path: &Path) -> Result<Self, EvoError> {
        Self::from_checkpoint(&Checkpoint::read(path)?)
    }

    /// The networks from a parsed checkpoint.
    pub fn from_checkpoint(c: &Checkpoint) -> Result<Self, EvoError> {
        let (r, l) = ("recomb_weights/params", "lrate_modulation/params");
        Ok(LesNet {
            keys: Dense::read(c, &format!("{r}/Dense_0"), 3, 8)?,
            queries: Dense::read(c, &format!("{r}/Dense_1"), 3, 8)?,
            values: Dense::read(c, &format!("{r}/Dense_2"), 3, 1)?,
            hidden: Dense::read(c, &format!("{l}/Dense_0"), 19, 8)?,
            lr_mean: Dense::read(c, &format!("{l}/Dense_1"), 8, 1)?,
            lr_sigma: Dense::read(c, &format!("{l}/Dense_2"), 8, 1)?,
            source: c.source.clone(),
        })
    }
}

/// LES over `num_dims` with `pop_size` samples per generation, with its meta-learned
/// networks (evosax keeps them in its params; here they are a constant of the strategy, so
/// that [`Strategy::default_params`] is evosax's default).
#[derive(Clone, Debug)]
pub struct Les {
    pop_size: usize,
    num_dims: usize,
    net: Arc<LesNet>,
}

/// LES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LesParams {
    /// Initial per-coordinate step size (evosax's `std_init`, default 1).
    pub sigma_init: f64,
}

/// LES state.
#[derive(Clone, Debug)]
pub struct LesState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Per-coordinate step sizes.
    pub sigma: Vec<f64>,
    /// Evolution path of the weighted steps, `n × 3` (one column per rate).
    pub p_c: Vec<f64>,
    /// Evolution path of the weighted normalised steps, `n × 3`.
    pub p_sigma: Vec<f64>,
    /// The best fitness so far (evosax's `best_fitness_shaped`, a feature).
    pub best_shaped: f64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    fit: Vec<f32>,
    order: Vec<usize>,
    feats: Vec<f64>,
    k: Vec<f64>,
    q: Vec<f64>,
    v: Vec<f64>,
    a: Vec<f64>,
    w: Vec<f64>,
}

impl Les {
    /// LES with the networks given ([`LesNet::read`]); `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize, net: Arc<LesNet>) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(Les { pop_size, num_dims, net })
    }

    /// The networks.
    pub fn net(&self) -> &LesNet {
        &self.net
    }

    /// The population from given standard normals (`pop_size × num_dims`): `m + σ ∘ z_i`.
    pub fn ask_from_normals(&self, s: &mut LesState, z: &[f64], population: &mut [f32]) {
        s.z.copy_from_slice(z);
        self.fill(s, population);
    }

    fn fill(&self, s: &LesState, population: &mut [f32]) {
        let n = self.num_dims;
        check_lens("Les::ask", self.pop_size, n, population, None);
        diagonal_rows(&s.mean, &s.sigma, &s.z, population);
    }

    /// The recombination weights of a generation (into `s.w`): attention over the fitness
    /// features.
    fn weights(&self, s: &mut LesState, net: &LesNet) {
        let lam = self.pop_size;
        fitness_features(&s.fit, s.best_shaped, &mut s.order, &mut s.a, &mut s.feats, 3);
        let mut key = [0.0f64; 8];
        for i in 0..lam {
            let x = &s.feats[3 * i..3 * i + 3];
            // Keys stored transposed (8 × λ), so a row of logits is eight vector updates.
            net.keys.apply(x, &mut key);
            for (c, k) in key.iter().enumerate() {
                s.k[c * lam + i] = *k;
            }
            net.queries.apply(x, &mut s.q[8 * i..8 * i + 8]);
            net.values.apply(x, &mut s.v[i..i + 1]);
        }
        kestrel_core::simd::dispatch(HeadAttention {
            q: &s.q,
            q_stride: 8,
            q_off: 0,
            kt: &s.k,
            dk: 8,
            v: &s.v,
            v_stride: 1,
            v_off: 0,
            dv: 1,
            scale: 1.0 / (lam as f64).sqrt(),
            row: &mut s.a,
            out: &mut s.w,
            out_stride: 1,
            out_off: 0,
            nq: lam,
        });
        softmax(&mut s.w);
    }
}

/// Each `width`-long row of `data` as `exp(x − max(row))`, the exponentials in f32 (evosax's
/// precision), compiled for the CPU's widest vectors: unnormalised softmax rows.
pub(crate) struct ExpRows<'a> {
    pub(crate) data: &'a mut [f64],
    pub(crate) width: usize,
}

impl kestrel_core::simd::WithSimd for ExpRows<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) {
        for row in self.data.chunks_exact_mut(self.width) {
            let top = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            for r in row.iter_mut() {
                *r = kestrel_core::simd::exp_f32((*r - top) as f32) as f64;
            }
        }
    }
}

/// One attention head over all its queries: `out_i = softmax_j(q_i · k_j · scale) v` with
/// `q_i` the `dk` values of row `i` at `q_off` (rows `q_stride` apart), the keys transposed
/// (`dk × nk`), `v_j` the `dv` values of row `j` at `v_off`, and `out_i` written at `out_off`;
/// compiled for the CPU's widest vectors (the `nq × nk` exponentials and products are most of
/// a learned strategy's generation), the exponentials in f32 (evosax's precision).
pub(crate) struct HeadAttention<'a> {
    pub(crate) q: &'a [f64],
    pub(crate) q_stride: usize,
    pub(crate) q_off: usize,
    pub(crate) kt: &'a [f64],
    pub(crate) dk: usize,
    pub(crate) v: &'a [f64],
    pub(crate) v_stride: usize,
    pub(crate) v_off: usize,
    pub(crate) dv: usize,
    pub(crate) scale: f64,
    pub(crate) row: &'a mut [f64],
    pub(crate) out: &'a mut [f64],
    pub(crate) out_stride: usize,
    pub(crate) out_off: usize,
    pub(crate) nq: usize,
}

/// `Σ a_k b_k` in eight interleaved partial sums, added at the end in a fixed order (the same
/// on every CPU, whatever its vector width).
#[inline(always)]
fn lanes_dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ta, tb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for t in 0..8 {
            lanes[t] += x[t] * y[t];
        }
    }
    for (t, (x, y)) in ta.iter().zip(tb).enumerate() {
        lanes[t] += x * y;
    }
    ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
}

/// `Σ a_k`, as [`lanes_dot`] adds.
#[inline(always)]
fn lanes_sum(a: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let c = a.chunks_exact(8);
    let tail = c.remainder();
    for x in c {
        for t in 0..8 {
            lanes[t] += x[t];
        }
    }
    for (t, x) in tail.iter().enumerate() {
        lanes[t] += x;
    }
    ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]))
}

impl kestrel_core::simd::WithSimd for HeadAttention<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) {
        let HeadAttention {
            q,
            q_stride,
            q_off,
            kt,
            dk,
            v,
            v_stride,
            v_off,
            dv,
            scale,
            row,
            out,
            out_stride,
            out_off,
            nq,
        } = self;
        let nk = kt.len() / dk;
        let row = &mut row[..nk];
        for i in 0..nq {
            let qi = &q[i * q_stride + q_off..i * q_stride + q_off + dk];
            // Logits eight keys at a time, the eight sums held in one vector across the `dk`
            // products.
            let full = nk / 8 * 8;
            for jb in (0..full).step_by(8) {
                let mut acc = [0.0f64; 8];
                for (c, &qc) in qi.iter().enumerate() {
                    let k = &kt[c * nk + jb..c * nk + jb + 8];
                    for t in 0..8 {
                        acc[t] += qc * k[t];
                    }
                }
                for t in 0..8 {
                    row[jb + t] = acc[t] * scale;
                }
            }
            for j in full..nk {
                row[j] =
                    qi.iter().enumerate().map(|(c, &qc)| qc * kt[c * nk + j]).sum::<f64>() * scale;
            }
            let top = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            // The exponentials as one branch-free map (it vectorises), then the sums in eight
            // fixed lanes (the same order on every CPU, whatever its vector width).
            for r in row.iter_mut() {
                *r = kestrel_core::simd::exp_f32((*r - top) as f32) as f64;
            }
            let total = lanes_sum(row);
            let o = &mut out[i * out_stride + out_off..i * out_stride + out_off + dv];
            if dv == 1 && v_stride == 1 {
                o[0] = lanes_dot(row, &v[v_off..v_off + nk]);
            } else if dv == 8 {
                // A head's eight sums held in one vector register across the keys.
                let mut acc = [0.0f64; 8];
                for (j, &a) in row.iter().enumerate() {
                    let vj = &v[j * v_stride + v_off..j * v_stride + v_off + 8];
                    for t in 0..8 {
                        acc[t] += a * vj[t];
                    }
                }
                o.copy_from_slice(&acc);
            } else {
                let mut acc = [0.0f64; 16];
                let acc = &mut acc[..dv];
                for (j, &a) in row.iter().enumerate() {
                    let vj = &v[j * v_stride + v_off..j * v_stride + v_off + dv];
                    acc.iter_mut().zip(vj).for_each(|(x, v)| *x += a * v);
                }
                o.copy_from_slice(acc);
            }
            o.iter_mut().for_each(|x| *x /= total);
        }
    }
}

impl Strategy for Les {
    type Params = LesParams;
    type State = LesState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> LesParams {
        LesParams { sigma_init: 1.0 }
    }

    fn init(&self, _key: Key, params: &LesParams, mean: &[f32]) -> LesState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "Les::init: mean must have num_dims values");
        LesState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: vec![params.sigma_init; n],
            p_c: vec![0.0; 3 * n],
            p_sigma: vec![0.0; 3 * n],
            best_shaped: f64::INFINITY,
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            fit: vec![0.0; lam],
            order: vec![0; lam],
            feats: vec![0.0; 3 * lam],
            k: vec![0.0; 8 * lam],
            q: vec![0.0; 8 * lam],
            v: vec![0.0; lam],
            a: vec![0.0; lam],
            w: vec![0.0; lam],
        }
    }

    fn ask(&self, key: Key, s: &mut LesState, _p: &LesParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut s.z);
        self.fill(s, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut LesState,
        _p: &LesParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Les::tell", lam, n, population, Some(fitness));
        let generation = s.progress.generation;
        let (best, bad) = s.progress.record(population, fitness);
        // A failed evaluation reads as the generation's worst (through `a`, free until the
        // features' ranks and the attention rows use it).
        finite_or_worst(fitness, &mut s.a);
        s.fit.iter_mut().zip(&s.a).for_each(|(f, &v)| *f = v as f32);
        let net = &*self.net;
        self.weights(s, net);
        let embed = time_embedding(generation);
        let mut x = [0.0f64; 19];
        x[6..].copy_from_slice(&embed);
        let mut hidden = [0.0f64; 8];
        let mut out = [0.0f64; 1];
        for j in 0..n {
            let (m, sg) = (s.mean[j], s.sigma[j]);
            let (mut diff, mut noise, mut wmean, mut wvar) = (0.0, 0.0, 0.0, 0.0);
            for i in 0..lam {
                let xi = population[i * n + j] as f64;
                let w = s.w[i];
                diff += w * (xi - m);
                noise += w * (xi - m) / sg;
                wmean += w * xi;
                wvar += w * (xi - m) * (xi - m);
            }
            for (c, rate) in PATH_RATES.iter().enumerate() {
                let pc = &mut s.p_c[3 * j + c];
                *pc = (1.0 - rate) * *pc + rate * diff;
                let ps = &mut s.p_sigma[3 * j + c];
                *ps = (1.0 - rate) * *ps + rate * noise;
            }
            x[..3].copy_from_slice(&s.p_c[3 * j..3 * j + 3]);
            x[3..6].copy_from_slice(&s.p_sigma[3 * j..3 * j + 3]);
            net.hidden.apply(&x, &mut hidden);
            hidden.iter_mut().for_each(|h| *h = h.max(0.0));
            net.lr_mean.apply(&hidden, &mut out);
            let lr_m = kestrel_nn::Activation::Sigmoid.apply(out[0]);
            net.lr_sigma.apply(&hidden, &mut out);
            let lr_s = kestrel_nn::Activation::Sigmoid.apply(out[0]);
            let wsd = (wvar + 1e-8).sqrt();
            s.mean[j] = (m + lr_m * (wmean - m)).clamp(-MEAN_BOUND, MEAN_BOUND);
            s.sigma[j] = (sg + lr_s * (wsd - sg)).clamp(SIGMA_FLOOR, f32::MAX as f64);
        }
        if (best as f64) < s.best_shaped {
            s.best_shaped = best as f64;
        }
        let sigma = s.sigma.iter().sum::<f64>() / n as f64;
        s.progress.metrics(best, bad, sigma)
    }

    fn mean(&self, state: &LesState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a LesState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(LesState { vec mean, vec sigma, vec p_c, vec p_sigma, scalar best_shaped });
