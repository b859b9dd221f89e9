//! CMA-anchored LES: a separable CMA-ES (one step size and one axis scale per coordinate)
//! whose recombination weights, step-size and mean rates and per-axis covariance rates are
//! multiplied by meta-learned gates in `[1/2, 2]`, with antithetic sampling budgeted by the
//! success rate, pair-corrected evolution paths and a capped re-expansion after a stall.
//!
//! Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/cma_anchored_les.py` (`CMAAnchoredLES`) with
//! `learned_evolution/cma_anchored_les_tools.py` (its constants, `cma_constants`,
//! `RecombinationResidual`, `GlobalGates`, `DimensionGate`, `bounded_gate`); the CMA-ES core
//! is Hansen's sep-CMA-ES (N. Hansen, "The CMA Evolution Strategy: A Tutorial",
//! arXiv:1604.00772; R. Ros and N. Hansen, PPSN 2008), the learned gates follow LES (Lange et
//! al., ICLR 2023, arXiv:2211.11260). **Weights**: evosax's checkpoint
//! `ckpt/cma_anchored_les/2026_10_cma_anchored_les.pkl` (364 parameters), read from the path
//! given ([`CalesNet::read`]); Kestrel ships none. evosax's default step size is 0.05
//! (`INNER_STD_INIT`), and σ stays within `[1e-9 σ₀, 1e5 σ₀]`.
//!
//! **Rows**: the first `⌈λ/2⌉` are `m + σ a ∘ z_i`; row `⌈λ/2⌉ + i` mirrors row `i` while
//! `i < (1 − λ s₀ / ⌊λ/2⌋) ⌊λ/2⌋` (`s₀` the slowest success average) and is an independent
//! draw otherwise. A NaN or infinite fitness is read as the generation's worst finite one
//! (evosax's minimum and ranks would carry the NaN into its stall counter).

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::learned_ckpt::Checkpoint;
use crate::les::Dense;
use crate::shaping::ordinal_ranks;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, finite_or_worst, to_f32, to_row,
};
use kestrel_core::{Key, fill_normal_f32};
use std::path::Path;
use std::sync::Arc;

const HIDDEN: usize = 8;
const SUCCESS_RATES: [f64; 3] = [0.05, 0.2, 0.6];
const C_MEAN: f64 = 1.0;
/// evosax's default step size (`INNER_STD_INIT`).
pub const CALES_SIGMA_INIT: f64 = 0.05;
const RESTART_EXPANSION: f64 = 3.0;
const GATE_GAIN: f64 = 3.0;
const LOG_SIGMA_STEP_BOUND: f64 = 1.0;
const LOG_AXIS_STEP_BOUND: f64 = 1.0;
const LOG_AXIS_BOUND: f64 = 15.0;
const SIGMA_MIN_FACTOR: f64 = 1e-9;
const SIGMA_MAX_FACTOR: f64 = 1e5;
const EPS: f64 = 1e-8;

/// `exp(ln 2 · tanh(3 v))`: a network output as a multiplicative gate in `[1/2, 2]`.
fn bounded_gate(v: f64) -> f64 {
    (std::f64::consts::LN_2 * (GATE_GAIN * v).tanh()).exp()
}

/// `erf(x)` by its Taylor series (|x| ≤ 3: the terms' cancellation costs ~4 of 16 digits).
fn erf_series(x: f64) -> f64 {
    let (x2, mut term, mut sum) = (x * x, x, x);
    for n in 1..120 {
        term *= -x2 / n as f64;
        let add = term / (2 * n + 1) as f64;
        sum += add;
        if add.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

/// `clip(√2 erfinv(2p − 1), −3, 3)`: the standard normal quantile of `p`, clipped as evosax's
/// member feature is (Newton's method on the series above).
fn clipped_quantile(p: f64) -> f64 {
    let y = 2.0 * p - 1.0;
    let x_max = 3.0 / std::f64::consts::SQRT_2;
    if y.abs() >= erf_series(x_max) {
        return 3.0f64.copysign(y);
    }
    // Start from Winitzki's approximation, then Newton on erf(x) = y.
    let a = 0.147;
    let l = (1.0 - y * y).ln();
    let t = 2.0 / (std::f64::consts::PI * a) + l / 2.0;
    let mut x = ((t * t - l / a).sqrt() - t).sqrt().copysign(y);
    for _ in 0..30 {
        let step = (erf_series(x) - y) / (2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp());
        x -= step;
        if step.abs() < 1e-15 {
            break;
        }
    }
    (std::f64::consts::SQRT_2 * x).clamp(-3.0, 3.0)
}

/// The three gate networks, as evosax's checkpoint holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct CalesNet {
    rec0: Dense,
    rec1: Dense,
    rec2: Dense,
    glob0: Dense,
    glob1: Dense,
    dim0: Dense,
    dim1: Dense,
    /// Where the weights were read from.
    pub source: String,
}

impl CalesNet {
    /// Reads evosax's CMA-anchored LES checkpoint (`recombination`, `global_gates`,
    /// `dimension_gate`); a file of another layout is an error naming the array.
    pub fn read(path: &Path) -> Result<Self, EvoError> {
        Self::from_checkpoint(&Checkpoint::read(path)?)
    }

    /// The networks from a parsed checkpoint.
    pub fn from_checkpoint(c: &Checkpoint) -> Result<Self, EvoError> {
        let d = |net: &str, layer: usize, i: usize, o: usize| {
            Dense::read(c, &format!("{net}/params/Dense_{layer}"), i, o)
        };
        Ok(CalesNet {
            rec0: d("recombination", 0, 6, HIDDEN)?,
            rec1: d("recombination", 1, 2 * HIDDEN, HIDDEN)?,
            rec2: d("recombination", 2, HIDDEN, 1)?,
            glob0: d("global_gates", 0, 9, HIDDEN)?,
            glob1: d("global_gates", 1, HIDDEN, 2)?,
            dim0: d("dimension_gate", 0, 6, HIDDEN)?,
            dim1: d("dimension_gate", 1, HIDDEN, 1)?,
            source: c.source.clone(),
        })
    }
}

/// The sep-CMA-ES constants for `n` dimensions and `λ` rows (`cma_constants`).
#[derive(Clone, Debug, PartialEq)]
struct Constants {
    base_weights: Vec<f64>,
    c_sigma: f64,
    d_sigma: f64,
    c_c: f64,
    c_1: f64,
    c_mu: f64,
    chi_d: f64,
    stall_patience: f64,
    /// The member feature `clip(√2 erfinv(2 (r + ½) / λ − 1), −3, 3) / 2` by rank `r` (it
    /// depends on the rank alone).
    half_quantiles: Vec<f64>,
    /// The member feature `tanh(λ w_r − 1)` of the base weight by rank `r`.
    weight_features: Vec<f64>,
}

impl Constants {
    fn new(n: usize, lam: usize) -> Self {
        let dims = n as f64;
        let mu = (lam / 2).max(1);
        let raw: Vec<f64> =
            (0..mu).map(|i| (mu as f64 + 0.5).ln() - (i as f64 + 1.0).ln()).collect();
        let total: f64 = raw.iter().sum();
        let pos: Vec<f64> = raw.iter().map(|w| w / total).collect();
        let mu_eff = 1.0 / pos.iter().map(|w| w * w).sum::<f64>();
        let c_sigma = (mu_eff + 2.0) / (dims + mu_eff + 5.0);
        let d_sigma = 1.0 + 2.0 * (((mu_eff - 1.0) / (dims + 1.0)).sqrt() - 1.0).max(0.0) + c_sigma;
        let c_c = (4.0 + mu_eff / dims) / (dims + 4.0 + 2.0 * mu_eff / dims);
        let alpha_cov = (dims + 2.0) / 3.0;
        let mut c_1 = alpha_cov * 2.0 / ((dims + 1.3).powi(2) + mu_eff);
        let mut c_mu = alpha_cov * 2.0 * (mu_eff - 2.0 + 1.0 / mu_eff).max(0.0)
            / ((dims + 2.0).powi(2) + mu_eff);
        if c_1 + c_mu > 1.0 {
            let r = 1.0 / (c_1 + c_mu);
            (c_1, c_mu) = (c_1 * r, c_mu * r);
        }
        let chi_d = dims.sqrt() * (1.0 - 1.0 / (4.0 * dims) + 1.0 / (21.0 * dims * dims));
        let mut base_weights: Vec<f64> = pos.iter().map(|&w| w as f32 as f64).collect();
        base_weights.resize(lam, 0.0);
        Constants {
            c_sigma,
            d_sigma,
            c_c,
            c_1,
            c_mu,
            chi_d,
            stall_patience: 120.0 + 30.0 * dims / lam as f64,
            half_quantiles: (0..lam)
                .map(|r| clipped_quantile((r as f64 + 0.5) / lam as f64) / 2.0)
                .collect(),
            weight_features: base_weights.iter().map(|w| (lam as f64 * w - 1.0).tanh()).collect(),
            base_weights,
        }
    }
}

/// CMA-anchored LES over `num_dims` with `pop_size` rows, with its gate networks.
#[derive(Clone, Debug)]
pub struct CmaAnchoredLes {
    pop_size: usize,
    num_dims: usize,
    net: Arc<CalesNet>,
    k: Constants,
}

/// CMA-anchored LES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct CalesParams {
    /// Initial step size σ₀ (evosax's `std_init`, default 0.05); σ stays within
    /// `[1e-9 σ₀, 1e5 σ₀]`.
    pub sigma_init: f64,
}

/// CMA-anchored LES state.
#[derive(Clone, Debug)]
pub struct CalesState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Global step size.
    pub sigma: f64,
    /// Per-axis scales (geometric mean 1).
    pub axis: Vec<f64>,
    /// Step-size path.
    pub p_sigma: Vec<f64>,
    /// Covariance path.
    pub p_c: Vec<f64>,
    /// Success averages at rates 0.05, 0.2, 0.6.
    pub success: Vec<f64>,
    /// Best fitness since the last re-expansion.
    pub epoch_best: f64,
    /// Generations without improving on it.
    pub stall: f64,
    /// The best row so far (where a re-expansion re-anchors).
    pub best_row: Vec<f64>,
    /// Its fitness (evosax's `best_fitness_shaped`).
    pub best_shaped: f64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    fit: Vec<f64>,
    fit32: Vec<f32>,
    order: Vec<usize>,
    ranks: Vec<f64>,
    w: Vec<f64>,
    feats: Vec<f64>,
    hidden: Vec<f64>,
    noise_sq: Vec<f64>,
    wd: Vec<f64>,
    wn: Vec<f64>,
    rank_mu: Vec<f64>,
    log_axis: Vec<f64>,
}

impl CmaAnchoredLes {
    /// The strategy with the networks given ([`CalesNet::read`]); `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize, net: Arc<CalesNet>) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(CmaAnchoredLes { pop_size, num_dims, net, k: Constants::new(num_dims, pop_size) })
    }

    fn pairs(&self) -> (usize, usize) {
        let base = self.pop_size.div_ceil(2);
        (base, self.pop_size - base)
    }

    /// How many of the `⌊λ/2⌋` pairs mirror, from the slowest success average.
    fn mirrored(&self, success0: f64) -> usize {
        let (_, count) = self.pairs();
        let gate = (1.0 - self.pop_size as f64 * success0 / count.max(1) as f64).clamp(0.0, 1.0);
        (0..count).filter(|&i| (i as f64) < gate * count as f64).count()
    }

    /// The population from given standard normals: `base` (`⌈λ/2⌉ × n`) and `alt` (`⌊λ/2⌋ ×
    /// n`, the unmirrored rows' draws), as evosax's `_ask` splits them.
    pub fn ask_from_normals(
        &self,
        s: &mut CalesState,
        base: &[f64],
        alt: &[f64],
        population: &mut [f32],
    ) {
        let n = self.num_dims;
        let (pb, pc) = self.pairs();
        assert!(base.len() == pb * n && alt.len() == pc * n, "CmaAnchoredLes: normals' sizes");
        s.z[..pb * n].copy_from_slice(base);
        let m = self.mirrored(s.success[0]);
        for i in 0..pc {
            let row = &mut s.z[(pb + i) * n..(pb + i + 1) * n];
            if i < m {
                row.iter_mut().zip(&base[i * n..(i + 1) * n]).for_each(|(r, b)| *r = -b);
            } else {
                row.copy_from_slice(&alt[i * n..(i + 1) * n]);
            }
        }
        self.fill(s, population);
    }

    fn fill(&self, s: &CalesState, population: &mut [f32]) {
        let n = self.num_dims;
        check_lens("CmaAnchoredLes::ask", self.pop_size, n, population, None);
        for (i, row) in population.chunks_exact_mut(n).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = to_row(s.mean[j] + s.sigma * s.axis[j] * s.z[i * n + j]);
            }
        }
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

impl Strategy for CmaAnchoredLes {
    type Params = CalesParams;
    type State = CalesState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> CalesParams {
        CalesParams { sigma_init: CALES_SIGMA_INIT }
    }

    fn init(&self, _key: Key, params: &CalesParams, mean: &[f32]) -> CalesState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "CmaAnchoredLes::init: mean must have num_dims values");
        CalesState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: params.sigma_init,
            axis: vec![1.0; n],
            p_sigma: vec![0.0; n],
            p_c: vec![0.0; n],
            success: vec![0.5; 3],
            epoch_best: f64::INFINITY,
            stall: 0.0,
            best_row: vec![f64::NAN; n],
            best_shaped: f64::INFINITY,
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            fit: vec![0.0; lam],
            fit32: vec![0.0; lam],
            order: vec![0; lam],
            ranks: vec![0.0; lam],
            w: vec![0.0; lam],
            feats: vec![0.0; 6 * lam.max(n)],
            hidden: vec![0.0; HIDDEN * lam.max(n)],
            noise_sq: vec![0.0; lam],
            wd: vec![0.0; n],
            wn: vec![0.0; n],
            rank_mu: vec![0.0; n],
            log_axis: vec![0.0; n],
        }
    }

    fn ask(&self, key: Key, s: &mut CalesState, _p: &CalesParams, population: &mut [f32]) {
        let n = self.num_dims;
        let (pb, pc) = self.pairs();
        // One draw of λ × n normals: the first ⌈λ/2⌉ rows are `base`, the rest `alt`.
        fill_normal_f32(key, &mut s.z);
        let m = self.mirrored(s.success[0]);
        for i in 0..m.min(pc) {
            for j in 0..n {
                s.z[(pb + i) * n + j] = -s.z[i * n + j];
            }
        }
        self.fill(s, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut CalesState,
        p: &CalesParams,
    ) -> TellMetrics {
        let (lam, n, k, net) = (self.pop_size, self.num_dims, &self.k, &*self.net);
        check_lens("CmaAnchoredLes::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        finite_or_worst(fitness, &mut s.fit);
        for (o, &f) in s.fit32.iter_mut().zip(&s.fit) {
            *o = f as f32;
        }
        ordinal_ranks(&s.fit32, &mut s.order, &mut s.ranks);
        let mirror = self.mirrored(s.success[0]);
        let (pb, pc) = self.pairs();
        let mut success_now = 0.0;
        for i in 0..lam {
            if s.fit[i] < s.best_shaped {
                success_now += 1.0;
            }
        }
        success_now /= lam as f64;
        for (e, r) in s.success.iter_mut().zip(SUCCESS_RATES) {
            *e = (1.0 - r) * *e + r * success_now;
        }
        // Member features: centred rank, clipped quantile / 2, improved − ½, radial, base
        // weight, alignment with p_σ; noise = (x − m) / (σ a).
        let dims = n as f64;
        let p_norm = norm(&s.p_sigma);
        // The told rows' noise (x − m) / (σ a) into `z` (the asked normals are not needed
        // again), by one reciprocal per coordinate.
        for j in 0..n {
            s.log_axis[j] = 1.0 / (s.sigma * s.axis[j]);
        }
        for (i, zi) in s.z.chunks_exact_mut(n).enumerate() {
            let row = &population[i * n..(i + 1) * n];
            for (((z, &x), m), inv) in zi.iter_mut().zip(row).zip(&s.mean).zip(&s.log_axis) {
                *z = (x as f64 - m) * inv;
            }
        }
        for i in 0..lam {
            let zi = &s.z[i * n..(i + 1) * n];
            let sq: f64 = zi.iter().map(|z| z * z).sum();
            let dot: f64 = zi.iter().zip(&s.p_sigma).map(|(z, p)| z * p).sum();
            s.noise_sq[i] = sq;
            let r = s.ranks[i];
            let f = &mut s.feats[6 * i..6 * i + 6];
            f[0] = r / (lam - 1).max(1) as f64 - 0.5;
            f[1] = k.half_quantiles[r as usize];
            f[2] = if s.fit[i] < s.best_shaped { 0.5 } else { -0.5 };
            f[3] = (sq / dims - 1.0).tanh();
            f[4] = k.weight_features[r as usize];
            f[5] = (dims.sqrt() * dot / (sq.sqrt() * p_norm + EPS)).tanh();
        }
        // Recombination residual: a two-layer set network with the members' mean as context.
        let mut ctx = [0.0f64; HIDDEN];
        for i in 0..lam {
            let h = &mut s.hidden[HIDDEN * i..HIDDEN * (i + 1)];
            net.rec0.apply(&s.feats[6 * i..6 * i + 6], h);
            h.iter_mut().for_each(|v| *v = v.max(0.0));
            ctx.iter_mut().zip(h.iter()).for_each(|(c, v)| *c += v / lam as f64);
        }
        let mut joined = [0.0f64; 2 * HIDDEN];
        joined[HIDDEN..].copy_from_slice(&ctx);
        let mut h2 = [0.0f64; HIDDEN];
        let mut out = [0.0f64; 2];
        let mut wsum = 0.0;
        for i in 0..lam {
            joined[..HIDDEN].copy_from_slice(&s.hidden[HIDDEN * i..HIDDEN * (i + 1)]);
            net.rec1.apply(&joined, &mut h2);
            h2.iter_mut().for_each(|v| *v = v.max(0.0));
            net.rec2.apply(&h2, &mut out[..1]);
            s.w[i] = k.base_weights[s.ranks[i] as usize] * bounded_gate(out[0]);
            wsum += s.w[i];
        }
        s.w.iter_mut().for_each(|w| *w /= wsum);
        // The path's selection mass, mirrored pairs counted as one.
        let mut mass = 0.0;
        for i in 0..pc {
            let (a, b) = (s.w[i], s.w[pb + i]);
            mass += if i < mirror { (a - b) * (a - b) } else { a * a + b * b };
        }
        for i in pc..pb {
            mass += s.w[i] * s.w[i];
        }
        let mu_path = (1.0 / (mass + EPS)).min(lam as f64);
        // Σ w_i noise_i and Σ w_i noise_i², row by row (the difference (x − m) / σ is a
        // times the noise).
        s.wn.iter_mut().for_each(|v| *v = 0.0);
        s.rank_mu.iter_mut().for_each(|v| *v = 0.0);
        for (zi, &w) in s.z.chunks_exact(n).zip(&s.w) {
            for ((wn, rmu), z) in s.wn.iter_mut().zip(s.rank_mu.iter_mut()).zip(zi) {
                *wn += w * z;
                *rmu += w * z * z;
            }
        }
        for j in 0..n {
            s.wd[j] = s.wn[j] * s.axis[j];
        }
        let cs = (k.c_sigma * (2.0 - k.c_sigma) * mu_path).sqrt();
        let cc = (k.c_c * (2.0 - k.c_c) * mu_path).sqrt();
        for j in 0..n {
            s.p_sigma[j] = (1.0 - k.c_sigma) * s.p_sigma[j] + cs * s.wn[j];
            s.p_c[j] = (1.0 - k.c_c) * s.p_c[j] + cc * s.wd[j];
        }
        let csa = norm(&s.p_sigma) / k.chi_d - 1.0;
        // Global gates from nine features.
        let rms_axis = (s.axis.iter().map(|a| a * a).sum::<f64>() / dims).sqrt();
        let pc_norm = norm(&s.p_c);
        let elite_radial: f64 = s.w.iter().zip(&s.noise_sq).map(|(w, q)| w * q).sum();
        let mean_log = s.axis.iter().map(|a| a.ln()).sum::<f64>() / dims;
        let var_log = s.axis.iter().map(|a| (a.ln() - mean_log).powi(2)).sum::<f64>() / dims;
        let (mut dot, mut rop2) = (0.0, 0.0);
        for j in 0..n {
            let r = s.p_c[j] / s.axis[j];
            dot += s.p_sigma[j] * r;
            rop2 += r * r;
        }
        let ps_norm = norm(&s.p_sigma);
        let g = [
            csa.tanh(),
            (pc_norm / (k.chi_d * rms_axis + EPS) - 1.0).tanh(),
            (elite_radial / dims - 1.0).tanh(),
            var_log.sqrt().tanh(),
            (dims.sqrt() * dot / (ps_norm * rop2.sqrt() + EPS)).tanh(),
            2.0 * s.success[0] - 1.0,
            2.0 * s.success[1] - 1.0,
            2.0 * s.success[2] - 1.0,
            2.0 * success_now - 1.0,
        ];
        let mut gh = [0.0f64; HIDDEN];
        net.glob0.apply(&g, &mut gh);
        gh.iter_mut().for_each(|v| *v = v.max(0.0));
        net.glob1.apply(&gh, &mut out);
        let (sigma_gate, mean_gate) = (bounded_gate(out[0]), bounded_gate(out[1]));
        for j in 0..n {
            s.mean[j] += C_MEAN * mean_gate * s.sigma * s.wd[j];
        }
        // Per-axis gates from six features each; the axis update in logs.
        let mut dh = [0.0f64; HIDDEN];
        let mut gate = [0.0f64; 1];
        for j in 0..n {
            let r1 = (s.p_c[j] / s.axis[j]).powi(2);
            let ratio = (1.0 + k.c_1 * (r1 - 1.0) + k.c_mu * (s.rank_mu[j] - 1.0)).clamp(1e-8, 1e8);
            let f = [
                s.p_sigma[j].tanh(),
                (s.p_c[j] / s.axis[j]).tanh(),
                (s.axis[j].ln() - mean_log).tanh(),
                (s.rank_mu[j] - 1.0).tanh(),
                (r1 - 1.0).tanh(),
                csa.tanh(),
            ];
            net.dim0.apply(&f, &mut dh);
            dh.iter_mut().for_each(|v| *v = v.max(0.0));
            net.dim1.apply(&dh, &mut gate);
            let step = (0.5 * bounded_gate(gate[0]) * ratio.ln())
                .clamp(-LOG_AXIS_STEP_BOUND, LOG_AXIS_STEP_BOUND);
            s.log_axis[j] = s.axis[j].ln() + step;
        }
        let log_sigma_step = (k.c_sigma / k.d_sigma * csa * sigma_gate)
            .clamp(-LOG_SIGMA_STEP_BOUND, LOG_SIGMA_STEP_BOUND);
        let shift = s.log_axis.iter().sum::<f64>() / dims;
        for j in 0..n {
            s.axis[j] = (s.log_axis[j] - shift).clamp(-LOG_AXIS_BOUND, LOG_AXIS_BOUND).exp();
            s.p_c[j] *= (-shift).exp();
        }
        let (lo, hi) = (p.sigma_init * SIGMA_MIN_FACTOR, p.sigma_init * SIGMA_MAX_FACTOR);
        s.sigma = (s.sigma * (shift + log_sigma_step).exp()).clamp(lo, hi);
        // The stall rule (re-anchoring at the incumbent of before this generation), then the
        // incumbent.
        let (at, gen_best) = s
            .fit
            .iter()
            .enumerate()
            .fold((0, f64::INFINITY), |a, (i, &f)| if f < a.1 { (i, f) } else { a });
        if gen_best < s.epoch_best {
            s.epoch_best = gen_best;
            s.stall = 0.0;
        } else {
            s.stall += 1.0;
        }
        if s.stall >= k.stall_patience {
            s.sigma = s.sigma.max((s.sigma * RESTART_EXPANSION).min(p.sigma_init));
            if s.best_row.iter().all(|v| v.is_finite()) {
                s.mean.copy_from_slice(&s.best_row);
            }
            s.axis.iter_mut().for_each(|a| *a = 1.0);
            s.p_sigma.iter_mut().for_each(|v| *v = 0.0);
            s.p_c.iter_mut().for_each(|v| *v = 0.0);
            s.success.iter_mut().for_each(|v| *v = 0.5);
            (s.epoch_best, s.stall) = (f64::INFINITY, 0.0);
        }
        if gen_best < s.best_shaped {
            s.best_shaped = gen_best;
            for j in 0..n {
                s.best_row[j] = population[at * n + j] as f64;
            }
        }
        s.progress.metrics(best, bad, s.sigma)
    }

    fn mean(&self, state: &CalesState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a CalesState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(CalesState {
    vec mean, scalar sigma, vec axis, vec p_sigma, vec p_c, vec success, scalar epoch_best,
    scalar stall, vec best_row, scalar best_shaped
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quantile_is_the_normal_one_clipped() {
        // Φ⁻¹(0.975) = 1.959963984540054; Φ⁻¹(0.5) = 0; beyond ±3 clipped.
        assert!((clipped_quantile(0.975) - 1.959963984540054).abs() < 1e-12);
        assert!((clipped_quantile(0.025) + 1.959963984540054).abs() < 1e-12);
        assert_eq!(clipped_quantile(0.5), 0.0);
        assert_eq!(clipped_quantile(0.9999), 3.0);
        assert!((clipped_quantile(0.841_344_746_068_543) - 1.0).abs() < 1e-10);
    }
}
