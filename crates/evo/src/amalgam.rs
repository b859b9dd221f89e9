//! iAMaLGaM, the incremental adapted maximum-likelihood Gaussian model IDEA: the mean and
//! covariance re-estimated from the better half each generation (with memory, `η_Σ`), the
//! anticipated mean shift (AMS: a quarter of the samples moved along the last mean shift) and
//! adaptive variance scaling (AVS: the multiplier `c_mult` raised while improvements land far
//! from the mean, measured by the standard deviation ratio, SDR). Full covariance
//! ([`AmalgamKind::Full`]) or one variance per coordinate ([`AmalgamKind::Univariate`]).
//!
//! Paper: P. A. N. Bosman, J. Grahl and D. Thierens, "Benchmarking Parameter-Free AMaLGaM on
//! Functions With and Without Noise", Evolutionary Computation 21(3), 2013 (Table 1's learning
//! rates `η_Σ = 1 − e^{−1.1 μ^1.2 / n^1.6}`, `η_shift = 1 − e^{−1.2 μ^0.31 / n^0.5}`).
//! Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/iamalgam_full.py` (`iAMaLGaM_Full`) and
//! `iamalgam_univariate.py` (`iAMaLGaM_Univariate`), with its defaults: half the population
//! elite, `δ_AMS = 2`, `θ_SDR = 1`, `η_inc = 1/0.9`, `η_dec = 0.9`, 50 generations without
//! improvement before `c_mult` decreases, and a constant extra spread `σ = 1` (its
//! `std_schedule`): the full model samples `N(m, C + σ² I)`.
//!
//! As in evosax, `c_mult` scales the anticipated shift only, not the sampling covariance, and
//! the statistics are computed from the told rows.
//!
//! evosax's bugs (`bugs = "all"` reproduces them, [`BugsKind`]):
//! - the full model's SDR whitens the improvement's distance `d` with the wrong factor:
//!   `jax.scipy.linalg.cholesky(C)` returns the *upper* factor `U = Lᵀ` (scipy's default), so
//!   `inv(U) @ d` is `L⁻ᵀ d`, whose covariance is not the identity, where the paper's SDR is
//!   `L⁻¹ d`. Kestrel's default takes `L⁻¹ d`.
//! - the univariate model samples `m + (σ + √C) z`, not the full model's `N(m, C + σ² I)`
//!   restricted to the diagonal, and its SDR divides `d` by the variance `C` where a
//!   standard deviation `√C` whitens it. Kestrel's default samples `m + √(C + σ²) z` and
//!   divides by `√C`, so the univariate model is the full one with the off-diagonal entries
//!   dropped.

use crate::cma_es::MEAN_BOUND;
use crate::eigen::CholWork;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::strategy::{BugsKind, Progress, Strategy, TellMetrics, check_lens, to_f32, to_row};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use kestrel_core::{Key, fill_normal_f32};

/// Full or per-coordinate covariance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmalgamKind {
    /// `n × n` covariance (evosax `iAMaLGaM_Full`).
    Full,
    /// `n` variances (evosax `iAMaLGaM_Univariate`).
    Univariate,
}

/// iAMaLGaM over `num_dims` with `pop_size` samples.
#[derive(Clone, Debug)]
pub struct Amalgam {
    pop_size: usize,
    num_dims: usize,
    kind: AmalgamKind,
}

/// iAMaLGaM hyper-parameters (evosax's names in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct AmalgamParams {
    /// The constant extra spread `σ` (`std_schedule`, default 1).
    pub sigma: f64,
    /// The covariance's learning rate `η_Σ` (`eta_std`).
    pub eta_std: f64,
    /// The mean shift's learning rate (`eta_shift`).
    pub eta_shift: f64,
    /// AVS's increase factor (`eta_avs_inc`, 1/0.9).
    pub eta_avs_inc: f64,
    /// AVS's decrease factor (`eta_avs_dec`, 0.9).
    pub eta_avs_dec: f64,
    /// Generations without improvement before `c_mult` may fall below 1 (`nis_max_gens`, 50).
    pub nis_max_gens: u64,
    /// AMS's step in mean shifts (`delta_ams`, 2).
    pub delta_ams: f64,
    /// SDR's threshold for increasing `c_mult` (`theta_sdr`, 1).
    pub theta_sdr: f64,
    /// `c_mult`'s initial value (`c_mult_init`, 1).
    pub c_mult_init: f64,
    /// evosax's bugs (see the module notes).
    pub bugs: BugsKind,
}

/// iAMaLGaM state.
#[derive(Clone, Debug)]
pub struct AmalgamState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Covariance: `n × n` row-major (full) or `n` variances (univariate).
    pub c: Vec<f64>,
    /// The smoothed mean shift.
    pub mean_shift: Vec<f64>,
    /// Generations without improvement.
    pub nis_counter: u64,
    /// The AVS multiplier.
    pub c_mult: f64,
    /// The last `ask`'s standard normals (`λ × n`).
    pub z: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    /// Full: a Cholesky factor, column-major; univariate: the sampling standard deviations.
    chol: Vec<f64>,
    y: Vec<f64>,
    work: Option<CholWork>,
    ams: Vec<usize>,
    order: Vec<usize>,
    avg: Vec<f64>,
    next_mean: Vec<f64>,
    next_c: Vec<f64>,
}

/// `c_mult`'s bounds: AVS multiplies it every generation, so a run left going would otherwise
/// reach 0 or infinity.
const C_MULT_RANGE: (f64, f64) = (1e-30, 1e30);

impl Amalgam {
    /// The strategy; `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize, kind: AmalgamKind) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(Amalgam { pop_size, num_dims, kind })
    }

    /// The model.
    pub fn kind(&self) -> AmalgamKind {
        self.kind
    }

    /// Elites: half the population (at least 1).
    pub fn num_elites(&self) -> usize {
        (self.pop_size / 2).max(1)
    }

    /// Samples AMS moves: `⌊α (λ − 1)⌋`, `α = ½ · ½ λ / (λ − μ)` (evosax's expression, in its
    /// order of operations).
    pub fn ams_size(&self) -> usize {
        let (lam, mu) = (self.pop_size as f64, self.num_elites() as f64);
        let alpha = 0.5 * 0.5 * lam / (lam - mu);
        (alpha * (lam - 1.0)) as usize
    }

    /// The population from given standard normals `z` (`λ × n`) and AMS rows `ams`
    /// (`ams_size` distinct indices).
    pub fn ask_from_normals(
        &self,
        s: &mut AmalgamState,
        p: &AmalgamParams,
        z: &[f64],
        ams: &[usize],
        population: &mut [f32],
    ) {
        s.z.copy_from_slice(z);
        s.ams.copy_from_slice(ams);
        self.fill(s, p, population);
    }

    fn fill(&self, s: &mut AmalgamState, p: &AmalgamParams, population: &mut [f32]) {
        let n = self.num_dims;
        check_lens("Amalgam::ask", self.pop_size, n, population, None);
        let var = p.sigma * p.sigma;
        match self.kind {
            AmalgamKind::Full => {
                // x = m + L z, L Lᵀ = C + σ² I (jax.random.multivariate_normal's Cholesky):
                // all rows at once as Y = Z Lᵀ.
                s.chol.copy_from_slice(&s.c);
                (0..n).for_each(|i| s.chol[i * n + i] += var);
                let work = s.work.as_mut().expect("the full model has its Cholesky workspace");
                if !work.factor(&mut s.chol) {
                    // Only a non-finite covariance gets here (σ² I keeps it definite).
                    s.chol.fill(0.0);
                    (0..n).for_each(|i| s.chol[i * n + i] = p.sigma);
                }
                let z = MatRef::from_row_major_slice(&s.z, self.pop_size, n);
                let l = MatRef::from_column_major_slice(&s.chol, n, n);
                let y = MatMut::from_row_major_slice_mut(&mut s.y, self.pop_size, n);
                matmul(y, Accum::Replace, z, l.transpose(), 1.0, Par::Seq);
                for (row, y) in population.chunks_exact_mut(n).zip(s.y.chunks_exact(n)) {
                    for ((x, m), y) in row.iter_mut().zip(&s.mean).zip(y) {
                        *x = to_row(m + y);
                    }
                }
            }
            AmalgamKind::Univariate => {
                let evosax = p.bugs == BugsKind::All;
                for (sd, &c) in s.chol.iter_mut().zip(&s.c) {
                    *sd = if evosax { p.sigma + c.sqrt() } else { (c + var).sqrt() };
                }
                for (row, z) in population.chunks_exact_mut(n).zip(s.z.chunks_exact(n)) {
                    for (((x, m), sd), z) in row.iter_mut().zip(&s.mean).zip(&s.chol).zip(z) {
                        *x = to_row(m + sd * z);
                    }
                }
            }
        }
        let shift = s.c_mult * p.delta_ams;
        for &i in &s.ams {
            for (x, d) in population[i * n..(i + 1) * n].iter_mut().zip(&s.mean_shift) {
                *x = to_row(*x as f64 + shift * d);
            }
        }
    }

    /// SDR: the largest coordinate of the improvements' average distance from the mean, in
    /// the covariance's units (`L⁻¹ d`, `C = L Lᵀ`); 0 where `C` is not definite.
    fn sdr(&self, s: &mut AmalgamState, p: &AmalgamParams) -> f64 {
        let n = self.num_dims;
        for (a, m) in s.avg.iter_mut().zip(&s.mean) {
            *a -= m;
        }
        match self.kind {
            AmalgamKind::Full => {
                s.chol.copy_from_slice(&s.c);
                let work = s.work.as_mut().expect("the full model has its Cholesky workspace");
                if !work.factor(&mut s.chol) {
                    return 0.0;
                }
                // L[i][k] is chol[k n + i] (column-major).
                let l = |i: usize, k: usize| s.chol[k * n + i];
                if p.bugs == BugsKind::All {
                    // evosax's U⁻¹ d, U = Lᵀ: back substitution, in place.
                    for i in (0..n).rev() {
                        let t: f64 = (i + 1..n).map(|k| l(k, i) * s.avg[k]).sum();
                        s.avg[i] = (s.avg[i] - t) / l(i, i);
                    }
                } else {
                    // L⁻¹ d: forward substitution, in place.
                    for i in 0..n {
                        let t: f64 = (0..i).map(|k| l(i, k) * s.avg[k]).sum();
                        s.avg[i] = (s.avg[i] - t) / l(i, i);
                    }
                }
            }
            AmalgamKind::Univariate => {
                let evosax = p.bugs == BugsKind::All;
                for (a, &c) in s.avg.iter_mut().zip(&s.c) {
                    *a /= if evosax { c } else { c.sqrt() };
                }
            }
        }
        let sdr = s.avg.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        if sdr.is_finite() { sdr } else { 0.0 }
    }

    /// AVS (evosax's `adaptive_variance_scaling`, the paper's lines 14–24).
    fn avs(s: &mut AmalgamState, p: &AmalgamParams, improved: bool, sdr: f64) {
        if improved {
            s.nis_counter = 0;
            if s.c_mult < 1.0 {
                s.c_mult = 1.0;
            }
            if sdr > p.theta_sdr {
                s.c_mult *= p.eta_avs_inc;
            }
        } else {
            if s.c_mult <= 1.0 {
                s.nis_counter += 1;
            }
            if s.c_mult > 1.0 || s.nis_counter >= p.nis_max_gens {
                s.c_mult *= p.eta_avs_dec;
            }
            if s.nis_counter < p.nis_max_gens && s.c_mult < 1.0 {
                s.c_mult = 1.0;
            }
        }
        // With the default factors (η_inc η_dec = 1) `c_mult` is a power of η_inc, and the
        // comparisons with 1 above must see it return to 1 exactly: f64 rounding would leave
        // (1/0.9)² · 0.9 · 0.9 at 1 + 2e-16 (> 1), where float32 (evosax) happens to land on 1.
        if (s.c_mult - 1.0).abs() < 1e-9 {
            s.c_mult = 1.0;
        }
        s.c_mult = s.c_mult.clamp(C_MULT_RANGE.0, C_MULT_RANGE.1);
    }
}

impl Strategy for Amalgam {
    type Params = AmalgamParams;
    type State = AmalgamState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> AmalgamParams {
        let (mu, n) = (self.num_elites() as f64, self.num_dims as f64);
        AmalgamParams {
            sigma: 1.0,
            eta_std: 1.0 - (-1.1 * mu.powf(1.2) / n.powf(1.6)).exp(),
            eta_shift: 1.0 - (-1.2 * mu.powf(0.31) / n.powf(0.5)).exp(),
            eta_avs_inc: 1.0 / 0.9,
            eta_avs_dec: 0.9,
            nis_max_gens: 50,
            delta_ams: 2.0,
            theta_sdr: 1.0,
            c_mult_init: 1.0,
            bugs: BugsKind::None,
        }
    }

    fn init(&self, _key: Key, params: &AmalgamParams, mean: &[f32]) -> AmalgamState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "Amalgam::init: mean must have num_dims values");
        let c = match self.kind {
            AmalgamKind::Full => {
                (0..n * n).map(|k| if k / n == k % n { 1.0 } else { 0.0 }).collect()
            }
            AmalgamKind::Univariate => vec![1.0; n],
        };
        let cells = if self.kind == AmalgamKind::Full { n * n } else { n };
        AmalgamState {
            mean: mean.iter().map(|&v| v as f64).collect(),
            c,
            mean_shift: vec![0.0; n],
            nis_counter: 0,
            c_mult: params.c_mult_init,
            z: vec![0.0; lam * n],
            progress: Progress::new(n),
            chol: vec![0.0; cells],
            y: vec![0.0; lam * n],
            work: (self.kind == AmalgamKind::Full).then(|| CholWork::new(n)),
            ams: vec![0; self.ams_size()],
            order: vec![0; lam],
            avg: vec![0.0; n],
            next_mean: vec![0.0; n],
            next_c: vec![0.0; cells],
        }
    }

    fn ask(&self, key: Key, s: &mut AmalgamState, p: &AmalgamParams, population: &mut [f32]) {
        fill_normal_f32(key.fold_in(0), &mut s.z);
        // `ams_size` distinct rows: a partial Fisher–Yates shuffle of 0..λ in `order`.
        let mut rng = key.fold_in(1).rng();
        s.order.iter_mut().enumerate().for_each(|(i, o)| *o = i);
        for i in 0..s.ams.len() {
            let j = i + rng.below((self.pop_size - i) as u32) as usize;
            s.order.swap(i, j);
            s.ams[i] = s.order[i];
        }
        self.fill(s, p, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut AmalgamState,
        p: &AmalgamParams,
    ) -> TellMetrics {
        let (lam, n, mu) = (self.pop_size, self.num_dims, self.num_elites());
        check_lens("Amalgam::tell", lam, n, population, Some(fitness));
        let best_before = s.progress.best_fitness;
        let (best, bad) = s.progress.record(population, fitness);
        // The μ best rows, NaN last, ties in row order (jnp.argsort is stable).
        let key = |i: usize| if fitness[i].is_nan() { f32::INFINITY } else { fitness[i] };
        s.order.iter_mut().enumerate().for_each(|(i, o)| *o = i);
        s.order.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
        let row = |i: usize| &population[i * n..(i + 1) * n];
        // The improvements: elites better than the best before this generation.
        s.avg.fill(0.0);
        let mut improved = 0usize;
        for &i in &s.order[..mu] {
            if fitness[i] < best_before {
                improved += 1;
                s.avg.iter_mut().zip(row(i)).for_each(|(a, &x)| *a += x as f64);
            }
        }
        let sdr = if improved > 0 {
            s.avg.iter_mut().for_each(|a| *a /= improved as f64);
            self.sdr(s, p)
        } else {
            0.0
        };
        Self::avs(s, p, improved > 0, sdr);
        // Mean: the elites' average; the shift smoothed toward the move.
        s.next_mean.fill(0.0);
        for &i in &s.order[..mu] {
            s.next_mean.iter_mut().zip(row(i)).for_each(|(a, &x)| *a += x as f64 / mu as f64);
        }
        // Covariance about the new mean, remembering (1 − η_Σ) of the old: the elites'
        // deviations S̄ (μ × n, in `y`), then (1 − η_Σ) C + η_Σ S̄ᵀ S̄ / μ.
        for (k, &i) in s.order[..mu].iter().enumerate() {
            let d = &mut s.y[k * n..(k + 1) * n];
            d.iter_mut().zip(row(i)).zip(&s.next_mean).for_each(|((d, &x), m)| *d = x as f64 - m);
        }
        let keep = 1.0 - p.eta_std;
        let w = p.eta_std / mu as f64;
        s.next_c.iter_mut().zip(&s.c).for_each(|(o, c)| *o = keep * c);
        match self.kind {
            AmalgamKind::Full => {
                let d = MatRef::from_row_major_slice(&s.y[..mu * n], mu, n);
                let c = MatMut::from_row_major_slice_mut(&mut s.next_c, n, n);
                matmul(c, Accum::Add, d.transpose(), d, w, Par::Seq);
                // Exactly symmetric: the lower triangle mirrored.
                for a in 0..n {
                    for b in 0..a {
                        s.next_c[b * n + a] = s.next_c[a * n + b];
                    }
                }
            }
            AmalgamKind::Univariate => {
                for d in s.y[..mu * n].chunks_exact(n) {
                    s.next_c.iter_mut().zip(d).for_each(|(c, d)| *c += w * d * d);
                }
            }
        }
        // A non-finite estimate (rows near f32's limits) keeps the old model.
        if s.next_c.iter().chain(&s.next_mean).all(|v| v.is_finite()) {
            for j in 0..n {
                let step = s.next_mean[j] - s.mean[j];
                s.mean_shift[j] = (1.0 - p.eta_shift) * s.mean_shift[j] + p.eta_shift * step;
                s.mean[j] = s.next_mean[j].clamp(-MEAN_BOUND, MEAN_BOUND);
            }
            std::mem::swap(&mut s.c, &mut s.next_c);
        }
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, state: &AmalgamState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a AmalgamState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(AmalgamState {
    vec mean, vec c, vec mean_shift, count nis_counter, scalar c_mult, vec z
});
