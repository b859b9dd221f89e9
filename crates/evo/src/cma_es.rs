//! CMA-ES with rank-μ, rank-one and negative-weight (active) updates, Hansen's tutorial
//! defaults, and a lazy eigendecomposition.
//!
//! Paper: N. Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772 (eqs. 38–58).
//! Reference implementation for the golden tests: evosax 0.3.2 `CMA_ES` (its `tell` is
//! reproduced, including its `h_σ` exponent `2(g + 2)` where the tutorial has `2(g + 1)`).
//! Differences, by design: evosax decomposes `C` in every `ask`; Kestrel decomposes after
//! `tell` once `lazy_gap / (n (c₁ + c_μ))` generations have passed since the last
//! decomposition (`lazy_eigen`, default on), with evosax's regularisation (symmetrise, clip,
//! `+1e-8 I`).
//!
//! # The lazy gap
//!
//! Between decompositions the samples come from the `C` of the last one while `C` itself keeps
//! every update, so a gap only delays when what was learnt is used; Hansen's tutorial (and
//! pycma) use `lazy_gap = 0.1`, pyribs 0.5. At d = 100 (λ = 64) the decomposition of a CMA
//! covariance costs ~550 µs, 3.4 times the rest of a generation, so Kestrel's default is 2.5
//! (every 9th generation there; every 2nd at d = 10 with λ = 64, every 4th with λ = 10), chosen
//! by evaluations to 1e-8 against the 0.1 rule, 15 seeds each (7 at d = 100): sphere, ellipsoid,
//! rotated ellipsoid and Rosenbrock at d = 10 (λ 10), 40 (λ 15) and 100 (λ 64) all within
//! −4% … +3% (`tests/lazy_gap.rs` keeps a short version of that comparison).
//!
//! # Left running
//!
//! The population is f32 and the state f64. Once σ is below the f32 resolution of the mean, the
//! rounding of a row, `(x − m) / σ`, is noise of order one or more; fed back through the paths
//! it drove σ up to `sigma_max` after convergence (5-D sphere: σ = 1e8 and a generation's best
//! near 1e18 within 5,000 generations past the optimum). So `tell` takes the step that `ask`
//! drew, exact in f64, for every row that is its f32 rounding (a row changed by the caller,
//! bounds repair or injection, is read as it is), and σ never falls below [`SIGMA_FLOOR`] nor
//! the mean leaves f32's range ([`MEAN_BOUND`]): with finite fitness and finite rows the state
//! stays finite however long it runs (`tests/long_runs.rs`). pycma's stop conditions, which
//! would have ended such a run near the optimum, are [`crate::termination`]'s.

use crate::eigen::EigenWork;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::strategy::Scales;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, is_rounding, min_max, to_f32, to_row,
};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use kestrel_core::Key;
use kestrel_core::fill_normal_f32;
use kestrel_core::linalg::norm;

/// The smallest step size any CMA-ES keeps, whatever `sigma_min` says: below f32's smallest
/// subnormal step (1.4e-45, times the axis scales, which are at least 1e-4) no sample can
/// differ from the mean, and above it `(x − m) / σ` of any finite f32 row stays below 1e99, so
/// the rank-μ update cannot overflow.
pub(crate) const SIGMA_FLOOR: f64 = 1e-60;

/// The mean stays inside f32's range (an f32 population drawn around a larger mean would be
/// infinite): only a told population far outside the search distribution can push it there.
pub(crate) const MEAN_BOUND: f64 = f32::MAX as f64;

/// CMA-ES over `num_dims` with `pop_size` samples per generation.
#[derive(Clone, Debug)]
pub struct CmaEs {
    pop_size: usize,
    num_dims: usize,
    negative_weights: bool,
}

/// CMA-ES hyper-parameters (Hansen's tutorial defaults from [`Strategy::default_params`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CmaParams {
    /// Initial step size.
    pub sigma_init: f64,
    /// Lower clip of the step size.
    pub sigma_min: f64,
    /// Upper clip of the step size.
    pub sigma_max: f64,
    /// Recombination weights by rank (negative ones for the active update).
    pub weights: Vec<f64>,
    /// Variance-effective selection mass of the positive weights.
    pub mu_eff: f64,
    /// Learning rate of the mean.
    pub c_mean: f64,
    /// Step-size path learning rate (`c_σ`).
    pub c_sigma: f64,
    /// Step-size damping (`d_σ`).
    pub d_sigma: f64,
    /// Covariance path learning rate.
    pub c_c: f64,
    /// Rank-one learning rate.
    pub c_1: f64,
    /// Rank-μ learning rate.
    pub c_mu: f64,
    /// Expected norm of an `n`-dimensional standard normal.
    pub chi_n: f64,
    /// Decompose `C` only every `lazy_gap / (n (c₁ + c_μ))` generations (at least 1); off:
    /// every generation.
    pub lazy_eigen: bool,
    /// The lazy rule's constant (default 2.5; the tutorial's and pycma's 0.1; see the module
    /// notes).
    pub lazy_gap: f64,
}

/// CMA-ES state. Matrices are `num_dims × num_dims`; `b` holds eigenvectors in columns and
/// `d` the square roots of the eigenvalues of `c` as of the last decomposition.
#[derive(Clone, Debug)]
pub struct CmaState {
    /// Distribution mean.
    pub mean: Vec<f64>,
    /// Step size.
    pub sigma: f64,
    /// Step-size evolution path.
    pub p_sigma: Vec<f64>,
    /// Covariance evolution path.
    pub p_c: Vec<f64>,
    /// Covariance matrix.
    pub c: Mat<f64>,
    /// Eigenvectors of `c` (columns).
    pub b: Mat<f64>,
    /// Square roots of the eigenvalues of `c`.
    pub d: Vec<f64>,
    /// Generation of the last decomposition.
    pub eigen_generation: u64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    y: Mat<f64>,
    tmp: Mat<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    v1: Vec<f64>,
    v2: Vec<f64>,
    v3: Vec<f64>,
    eig: EigenWork,
    /// Added to `y_w` before the mean and paths use it (SV-CMA-ES's kernel term,
    /// `sv_cma_es.rs`); empty for CMA-ES itself.
    pub(crate) y_shift: Vec<f64>,
}

/// Hansen's default population size `4 + floor(3 ln n)`.
pub fn default_pop_size(num_dims: usize) -> usize {
    4 + (3.0 * (num_dims as f64).ln()).floor() as usize
}

impl CmaEs {
    /// CMA-ES; `pop_size ≥ 4`.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 4)?;
        Ok(CmaEs { pop_size, num_dims, negative_weights: true })
    }

    /// Hansen's default population size for `num_dims`.
    pub fn with_default_pop(num_dims: usize) -> Result<Self, EvoError> {
        Self::new(default_pop_size(num_dims), num_dims)
    }

    pub(crate) fn without_negative_weights(mut self) -> Self {
        self.negative_weights = false;
        self
    }

    /// The population from given standard normals `z` (`pop_size × num_dims`, row-major):
    /// `x_i = mean + σ B (D ∘ z_i)`. `ask` draws `z` from its key and calls this.
    pub fn ask_from_normals(&self, state: &mut CmaState, z: &[f64], population: &mut [f32]) {
        check_lens("CmaEs::ask", self.pop_size, self.num_dims, population, None);
        kestrel_core::simd::dispatch(Ask { es: self, state, z, population })
    }

    #[inline(always)]
    fn ask_body(&self, state: &mut CmaState, z: &[f64], population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        // Candidates are columns of `y` (n × λ): contiguous per candidate in a column-major Mat.
        for i in 0..lam {
            let (col, zi) = (state.y.col_as_slice_mut(i), &z[i * n..(i + 1) * n]);
            for ((y, zv), d) in col.iter_mut().zip(zi).zip(&state.d) {
                *y = zv * d;
            }
        }
        // X − m = σ B (D ∘ Z): one n×n by n×λ product.
        matmul(
            state.tmp.as_mut(),
            Accum::Replace,
            state.b.as_ref(),
            state.y.as_ref(),
            1.0,
            Par::Seq,
        );
        let sg = state.sigma;
        for i in 0..lam {
            let (row, col) = (&mut population[i * n..(i + 1) * n], state.tmp.col_as_slice(i));
            for ((x, t), m) in row.iter_mut().zip(col).zip(&state.mean) {
                *x = to_row(m + sg * t);
            }
        }
    }
}

impl Strategy for CmaEs {
    type Params = CmaParams;
    type State = CmaState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> CmaParams {
        let (lam, n) = (self.pop_size, self.num_dims as f64);
        let mu = (lam / 2).max(1);
        let wp: Vec<f64> =
            (1..=lam).map(|i| ((lam as f64 + 1.0) / 2.0).ln() - (i as f64).ln()).collect();
        let eff = |w: &[f64]| w.iter().sum::<f64>().powi(2) / w.iter().map(|x| x * x).sum::<f64>();
        let mu_eff = eff(&wp[..mu]);
        let mu_eff_minus = if mu < lam { eff(&wp[mu..]) } else { 0.0 };
        let c_c = (4.0 + mu_eff / n) / (n + 4.0 + 2.0 * mu_eff / n);
        let c_1 = 2.0 / ((n + 1.3).powi(2) + mu_eff);
        let c_mu = (1.0 - c_1 - 1e-8)
            .min(2.0 * (mu_eff + 1.0 / mu_eff - 2.0) / ((n + 2.0).powi(2) + mu_eff));
        let min_alpha = (1.0 + c_1 / c_mu)
            .min(1.0 + 2.0 * mu_eff_minus / (mu_eff + 2.0))
            .min((1.0 - c_1 - c_mu) / (n * c_mu));
        let pos: f64 = wp.iter().filter(|&&w| w > 0.0).sum();
        let neg: f64 = wp.iter().filter(|&&w| w < 0.0).map(|w| -w).sum();
        let sign = if self.negative_weights { 1.0 } else { 0.0 };
        let weights = wp
            .iter()
            .map(|&w| if w >= 0.0 { w / pos } else { sign * min_alpha * w / neg })
            .collect();
        let c_sigma = (mu_eff + 2.0) / (n + mu_eff + 5.0);
        CmaParams {
            sigma_init: 1.0,
            sigma_min: 0.0,
            sigma_max: 1e8,
            weights,
            mu_eff,
            c_mean: 1.0,
            c_sigma,
            d_sigma: 1.0 + 2.0 * (((mu_eff - 1.0) / (n + 1.0)).sqrt() - 1.0).max(0.0) + c_sigma,
            c_c,
            c_1,
            c_mu,
            chi_n: n.sqrt() * (1.0 - 1.0 / (4.0 * n) + 1.0 / (21.0 * n * n)),
            lazy_eigen: true,
            lazy_gap: 2.5,
        }
    }

    fn init(&self, _key: Key, params: &CmaParams, mean: &[f32]) -> CmaState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "CmaEs::init: mean must have num_dims values");
        CmaState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: params.sigma_init,
            p_sigma: vec![0.0; n],
            p_c: vec![0.0; n],
            c: Mat::identity(n, n),
            b: Mat::identity(n, n),
            d: vec![1.0; n],
            eigen_generation: 0,
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            y: Mat::zeros(n, lam),
            tmp: Mat::zeros(n, lam),
            w: vec![0.0; lam],
            order: vec![0; lam],
            v1: vec![0.0; n],
            v2: vec![0.0; n],
            v3: vec![0.0; n],
            eig: EigenWork::new(n),
            y_shift: Vec::new(),
        }
    }

    fn ask(&self, key: Key, state: &mut CmaState, _params: &CmaParams, population: &mut [f32]) {
        let mut z = std::mem::take(&mut state.z);
        fill_normal_f32(key, &mut z);
        self.ask_from_normals(state, &z, population);
        state.z = z;
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut CmaState,
        p: &CmaParams,
    ) -> TellMetrics {
        kestrel_core::simd::dispatch(Tell { es: self, population, fitness, s, p })
    }

    fn mean(&self, state: &CmaState) -> Vec<f32> {
        to_f32(&state.mean)
    }

    fn progress<'a>(&self, state: &'a CmaState) -> &'a Progress {
        &state.progress
    }

    fn scales(&self, s: &CmaState, axis: usize, out: &mut Scales) -> bool {
        let n = self.num_dims;
        out.sigma = s.sigma;
        out.mean.clone_from(&s.mean);
        // The coordinates' scales of the distribution sampled from, B D² Bᵀ (C itself keeps the
        // updates since the last decomposition, active ones included, and is only made
        // positive definite when it is decomposed).
        out.coord.clear();
        out.coord.resize(n, 0.0);
        for k in 0..n {
            let dk2 = s.d[k] * s.d[k];
            for (c, b) in out.coord.iter_mut().zip(s.b.col_as_slice(k)) {
                *c += b * b * dk2;
            }
        }
        out.coord.iter_mut().for_each(|c| *c = c.sqrt());
        out.path.clone_from(&s.p_c);
        let a = axis % n;
        out.axis.clear();
        out.axis.extend(s.b.col_as_slice(a).iter().map(|b| s.d[a] * b));
        out.root_eig = min_max(&s.d);
        true
    }
}

/// [`CmaEs`]'s ask after the normals, dispatched as [`Tell`] is.
struct Ask<'a> {
    es: &'a CmaEs,
    state: &'a mut CmaState,
    z: &'a [f64],
    population: &'a mut [f32],
}

impl kestrel_core::simd::WithSimd for Ask<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) {
        let Ask { es, state, z, population } = self;
        es.ask_body(state, z, population)
    }
}

/// [`CmaEs`]'s tell, compiled for the best vector extension the CPU has (its loops over
/// candidates and coordinates; the values do not depend on it: element-wise arithmetic in
/// the same order, never contracted into FMAs).
struct Tell<'a> {
    es: &'a CmaEs,
    population: &'a [f32],
    fitness: &'a [f32],
    s: &'a mut CmaState,
    p: &'a CmaParams,
}

impl kestrel_core::simd::WithSimd for Tell<'_> {
    type Output = TellMetrics;
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) -> TellMetrics {
        let Tell { es, population, fitness, s, p } = self;
        es.tell_body(population, fitness, s, p)
    }
}

impl CmaEs {
    #[inline(always)]
    fn tell_body(
        &self,
        population: &[f32],
        fitness: &[f32],
        s: &mut CmaState,
        p: &CmaParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("CmaEs::tell", lam, n, population, Some(fitness));
        let g = s.progress.generation;
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        // y_i = (x_i - m) / σ and y_w = Σ max(w_i, 0) y_i.
        let inv_sigma = 1.0 / s.sigma;
        s.v1.iter_mut().for_each(|v| *v = 0.0);
        let (mean, acc, sg) = (&s.mean[..n], &mut s.v1[..n], s.sigma);
        for i in 0..lam {
            let wi = s.w[i].max(0.0);
            let (col, row) = (&mut s.y.col_as_slice_mut(i)[..n], &population[i * n..(i + 1) * n]);
            // The step `ask` drew, exact in f64, when this row is its f32 rounding (the usual
            // case); otherwise the row's own step. Near convergence the rounding of an f32
            // row divided by a small σ is noise of order 1 or more, which drove σ to its
            // upper clip on long runs (see the module notes).
            let asked = &s.tmp.col_as_slice(i)[..n];
            if is_rounding(row, mean, asked.iter().map(|t| sg * t)) {
                col.copy_from_slice(asked);
            } else {
                for j in 0..n {
                    col[j] = (row[j] as f64 - mean[j]) * inv_sigma;
                }
            }
            for j in 0..n {
                acc[j] += wi * col[j];
            }
        }
        // SV-CMA-ES moves y_w by its kernel term (the rank-μ update below keeps the y_i).
        s.v1.iter_mut().zip(&s.y_shift).for_each(|(y, d)| *y += d);
        let y_w = &s.v1;
        for j in 0..n {
            s.mean[j] = (s.mean[j] + p.c_mean * s.sigma * y_w[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
        }
        // C^{-1/2} y_w = B diag(1/D) B^T y_w, over B's contiguous columns (the sums in the
        // same order as row by row).
        for k in 0..n {
            let col = s.b.col_as_slice(k);
            s.v2[k] = col.iter().zip(y_w).fold(0.0, |a, (b, y)| a + b * y) / s.d[k];
        }
        let cs = (p.c_sigma * (2.0 - p.c_sigma) * p.mu_eff).sqrt();
        s.v3.iter_mut().for_each(|v| *v = 0.0);
        for k in 0..n {
            let vk = s.v2[k];
            for (v, b) in s.v3.iter_mut().zip(s.b.col_as_slice(k)) {
                *v += b * vk;
            }
        }
        for (ps, v) in s.p_sigma.iter_mut().zip(&s.v3) {
            *ps = (1.0 - p.c_sigma) * *ps + cs * v;
        }
        let ps_norm = norm(&s.p_sigma);
        let sigma = (s.sigma * (p.c_sigma / p.d_sigma * (ps_norm / p.chi_n - 1.0)).exp())
            .clamp(p.sigma_min.max(SIGMA_FLOOR), p.sigma_max);
        let left = ps_norm / (1.0 - (1.0 - p.c_sigma).powf(2.0 * (g as f64 + 2.0))).sqrt();
        let h = if left < (1.4 + 2.0 / (n as f64 + 1.0)) * p.chi_n { 1.0 } else { 0.0 };
        let cc = h * (p.c_c * (2.0 - p.c_c) * p.mu_eff).sqrt();
        for j in 0..n {
            s.p_c[j] = (1.0 - p.c_c) * s.p_c[j] + cc * y_w[j];
        }
        let delta = (1.0 - h) * p.c_c * (2.0 - p.c_c);
        // Negative weights are rescaled by n / |C^{-1/2} y_i|^2, with |C^{-1/2} y|^2 = |D^{-1} B^T y|^2.
        if s.w.iter().any(|&w| w < 0.0) {
            // |C^{-1/2} y_i|^2 = |D^{-1} Bᵀ y_i|^2, with Bᵀ Y as one product.
            matmul(s.tmp.as_mut(), Accum::Replace, s.b.transpose(), s.y.as_ref(), 1.0, Par::Seq);
            // 1/D once (v2 is free again), not a division per entry.
            for (v, d) in s.v2.iter_mut().zip(&s.d) {
                *v = 1.0 / d;
            }
            for i in 0..lam {
                if s.w[i] < 0.0 {
                    let q: f64 = s
                        .tmp
                        .col_as_slice(i)
                        .iter()
                        .zip(&s.v2)
                        .map(|(t, inv)| (t * inv) * (t * inv))
                        .sum();
                    s.w[i] *= n as f64 / q.max(1e-8);
                }
            }
        }
        for i in 0..lam {
            let wi = s.w[i];
            let (dst, src) = (s.tmp.col_as_slice_mut(i), s.y.col_as_slice(i));
            for (d, y) in dst.iter_mut().zip(src) {
                *d = wi * y;
            }
        }
        let wsum: f64 = p.weights.iter().sum();
        let a = 1.0 + p.c_1 * delta - p.c_1 - p.c_mu * wsum;
        for j in 0..n {
            let pcj = s.p_c[j];
            for (c, pci) in s.c.col_as_slice_mut(j).iter_mut().zip(&s.p_c) {
                *c = a * *c + p.c_1 * pci * pcj;
            }
        }
        // rank-μ: Σ w_i y_i y_iᵀ = Y (W Y)ᵀ with candidates as columns.
        matmul(s.c.as_mut(), Accum::Add, s.y.as_ref(), s.tmp.transpose(), p.c_mu, Par::Seq);
        s.sigma = sigma;
        let gen_now = s.progress.generation;
        let gap_generations = p.lazy_gap / ((p.c_1 + p.c_mu) * n as f64);
        let since = gen_now.saturating_sub(s.eigen_generation) as f64;
        if !p.lazy_eigen || since >= gap_generations.max(1.0) {
            let (c, b, d) = (&mut s.c, &mut s.b, &mut s.d);
            s.eig.decompose(c, b, d);
            s.eigen_generation = gen_now;
        }
        s.progress.metrics(best, bad, s.sigma)
    }
}

crate::strategy::state_tensors!(CmaState { vec mean, scalar sigma, vec p_sigma, vec p_c, mat c, mat b, vec d, count eigen_generation });

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults against Hansen's tutorial (arXiv:1604.00772, Table 1): the population
    /// rule, positive weights summing to 1 and decreasing, the others not positive, μ_eff from
    /// the positive weights, the learning rates inside their ranges, E‖N(0, I)‖'s
    /// approximation.
    #[test]
    fn default_params_follow_the_tutorial() {
        assert_eq!([2, 10, 100].map(default_pop_size), [6, 10, 17]);
        for (lam, n) in [(6, 2), (10, 10), (17, 100), (64, 10)] {
            let es = CmaEs::new(lam, n).unwrap();
            let p = Strategy::default_params(&es);
            let mu = lam / 2;
            let (pos, neg) = p.weights.split_at(mu);
            assert!((pos.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!(pos.windows(2).all(|w| w[0] > w[1]) && pos.iter().all(|&w| w > 0.0));
            assert!(neg.iter().all(|&w| w <= 0.0));
            let mu_eff = 1.0 / pos.iter().map(|w| w * w).sum::<f64>();
            assert!((p.mu_eff - mu_eff).abs() < 1e-9 * mu_eff, "({lam}, {n})");
            assert!(p.c_1 > 0.0 && p.c_mu > 0.0 && p.c_1 + p.c_mu <= 1.0, "({lam}, {n})");
            assert!(p.c_sigma > 0.0 && p.c_sigma < 1.0 && p.c_c > 0.0 && p.c_c <= 1.0);
            assert!(p.d_sigma >= 1.0);
            let nf = n as f64;
            let chi = nf.sqrt() * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (21.0 * nf * nf));
            assert_eq!(p.chi_n, chi);
        }
        assert!(CmaEs::new(3, 2).is_err(), "populations below 4 are refused");
        assert!(CmaEs::new(4, 0).is_err());
    }
}
