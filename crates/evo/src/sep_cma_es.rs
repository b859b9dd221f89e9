//! Sep-CMA-ES: CMA-ES restricted to a diagonal covariance (linear time and space).
//!
//! Paper: R. Ros and N. Hansen, "A Simple Modification in CMA-ES Achieving Linear Time and
//! Space Complexity", PPSN 2008. Reference implementation (golden): evosax 0.3.2
//! `Sep_CMA_ES`, which keeps the full-CMA learning rates and no negative weights; so does
//! Kestrel (Ros & Hansen's `(n+2)/3` larger covariance rates are not applied).

use crate::cma_es::{CmaEs, CmaParams, MEAN_BOUND, SIGMA_FLOOR};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::strategy::Scales;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, is_rounding, min_max, to_f32, to_row,
};
use kestrel_core::Key;
use kestrel_core::fill_normal_f32;
use kestrel_core::linalg::norm;

/// Sep-CMA-ES over `num_dims` with `pop_size` samples per generation.
#[derive(Clone, Debug)]
pub struct SepCmaEs {
    inner: CmaEs,
}

/// Sep-CMA-ES state: the diagonal of `C` and its square root `d`.
#[derive(Clone, Debug)]
pub struct SepCmaState {
    /// Distribution mean.
    pub mean: Vec<f64>,
    /// Step size.
    pub sigma: f64,
    /// Step-size path.
    pub p_sigma: Vec<f64>,
    /// Covariance path.
    pub p_c: Vec<f64>,
    /// Diagonal covariance.
    pub c: Vec<f64>,
    /// `sqrt(c)` after regularisation.
    pub d: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    y: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    rank_mu: Vec<f64>,
    y_w: Vec<f64>,
}

impl SepCmaEs {
    /// Sep-CMA-ES; `pop_size ≥ 4`.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 4)?;
        Ok(SepCmaEs { inner: CmaEs::new(pop_size, num_dims)?.without_negative_weights() })
    }

    /// `x_i = mean + σ D ∘ z_i` from given standard normals.
    pub fn ask_from_normals(&self, state: &SepCmaState, z: &[f64], population: &mut [f32]) {
        kestrel_core::simd::dispatch(SepAsk { es: self, state, z, population })
    }

    #[inline(always)]
    fn ask_body(&self, state: &SepCmaState, z: &[f64], population: &mut [f32]) {
        let n = self.num_dims();
        check_lens("SepCmaEs::ask", self.pop_size(), n, population, None);
        for (row, zr) in population.chunks_exact_mut(n).zip(z.chunks_exact(n)) {
            for (((x, m), d), z) in row.iter_mut().zip(&state.mean).zip(&state.d).zip(zr) {
                *x = to_row(m + state.sigma * d * z);
            }
        }
    }
}

/// [`SepCmaEs`]'s ask and tell, compiled for the best vector extension the CPU has (as
/// [`CmaEs`]'s: element-wise arithmetic in the same order, never contracted into FMAs, so the
/// values do not depend on it).
struct SepAsk<'a> {
    es: &'a SepCmaEs,
    state: &'a SepCmaState,
    z: &'a [f64],
    population: &'a mut [f32],
}

impl kestrel_core::simd::WithSimd for SepAsk<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) {
        let SepAsk { es, state, z, population } = self;
        es.ask_body(state, z, population)
    }
}

struct SepTell<'a> {
    es: &'a SepCmaEs,
    population: &'a [f32],
    fitness: &'a [f32],
    s: &'a mut SepCmaState,
    p: &'a CmaParams,
}

impl kestrel_core::simd::WithSimd for SepTell<'_> {
    type Output = TellMetrics;
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) -> TellMetrics {
        let SepTell { es, population, fitness, s, p } = self;
        es.tell_body(population, fitness, s, p)
    }
}

/// evosax's diagonal regularisation: `C ← clip(C, 0, 1e8) + 1e-8`, `D = sqrt(C)`.
#[inline(always)]
fn regularise(c: &mut [f64], d: &mut [f64]) {
    for (ci, di) in c.iter_mut().zip(d.iter_mut()) {
        *ci = ci.clamp(0.0, 1e8) + 1e-8;
        *di = ci.sqrt();
    }
}

impl Strategy for SepCmaEs {
    type Params = CmaParams;
    type State = SepCmaState;

    fn pop_size(&self) -> usize {
        self.inner.pop_size()
    }
    fn num_dims(&self) -> usize {
        self.inner.num_dims()
    }
    fn default_params(&self) -> CmaParams {
        self.inner.default_params()
    }

    fn init(&self, _key: Key, params: &CmaParams, mean: &[f32]) -> SepCmaState {
        let (lam, n) = (self.pop_size(), self.num_dims());
        assert_eq!(mean.len(), n, "SepCmaEs::init: mean must have num_dims values");
        SepCmaState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: params.sigma_init,
            p_sigma: vec![0.0; n],
            p_c: vec![0.0; n],
            c: vec![1.0; n],
            d: vec![1.0; n],
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            y: vec![0.0; lam * n],
            w: vec![0.0; lam],
            order: vec![0; lam],
            rank_mu: vec![0.0; n],
            y_w: vec![0.0; n],
        }
    }

    fn ask(&self, key: Key, state: &mut SepCmaState, _params: &CmaParams, population: &mut [f32]) {
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
        s: &mut SepCmaState,
        p: &CmaParams,
    ) -> TellMetrics {
        kestrel_core::simd::dispatch(SepTell { es: self, population, fitness, s, p })
    }

    fn mean(&self, state: &SepCmaState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a SepCmaState) -> &'a Progress {
        &state.progress
    }

    /// The diagonal covariance: no rotation, so no principal axis (pycma's `noeffectaxis`
    /// is skipped under `CMA_diagonal` too).
    fn scales(&self, s: &SepCmaState, _axis: usize, out: &mut Scales) -> bool {
        out.sigma = s.sigma;
        out.mean.clone_from(&s.mean);
        out.coord.clone_from(&s.d);
        out.path.clone_from(&s.p_c);
        out.axis.clear();
        out.root_eig = min_max(&s.d);
        true
    }
}

impl SepCmaEs {
    #[inline(always)]
    fn tell_body(
        &self,
        population: &[f32],
        fitness: &[f32],
        s: &mut SepCmaState,
        p: &CmaParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size(), self.num_dims());
        check_lens("SepCmaEs::tell", lam, n, population, Some(fitness));
        let g = s.progress.generation;
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        let mut y_w = std::mem::take(&mut s.y_w);
        y_w.iter_mut().for_each(|v| *v = 0.0);
        // Over slices of equal length (no bounds checks, so it vectorises); each y_w[j] still
        // sums its candidates in order. A row that is the f32 rounding of the step `ask` drew
        // takes that step exact (as CMA-ES does; see its module notes), others their own.
        let sigma0 = s.sigma;
        for (((prow, yrow), zrow), &wi) in population
            .chunks_exact(n)
            .zip(s.y.chunks_exact_mut(n))
            .zip(s.z.chunks_exact(n))
            .zip(&s.w)
            .take(lam)
        {
            let wi = wi.max(0.0);
            let steps = s.d[..n].iter().zip(zrow).map(|(d, z)| sigma0 * d * z);
            let asked = is_rounding(prow, &s.mean[..n], steps);
            if asked {
                for ((y, &d), &z) in yrow.iter_mut().zip(&s.d[..n]).zip(zrow) {
                    *y = d * z;
                }
            } else {
                for ((y, &x), &m) in yrow.iter_mut().zip(prow).zip(&s.mean[..n]) {
                    *y = (x as f64 - m) / sigma0;
                }
            }
            for (yw, &y) in y_w.iter_mut().zip(yrow.iter()) {
                *yw += wi * y;
            }
        }
        let cs = (p.c_sigma * (2.0 - p.c_sigma) * p.mu_eff).sqrt();
        for j in 0..n {
            s.mean[j] = (s.mean[j] + p.c_mean * s.sigma * y_w[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
            s.p_sigma[j] = (1.0 - p.c_sigma) * s.p_sigma[j] + cs * y_w[j] / s.d[j];
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
        let wsum: f64 = p.weights.iter().sum();
        let a = 1.0 + p.c_1 * delta - p.c_1 - p.c_mu * wsum;
        // Rank-μ sums per coordinate, candidate by candidate (row-wise over `y`; each sum in
        // candidate order). Sep-CMA has no negative weights, so w_o = w.
        let rank_mu = &mut s.rank_mu;
        rank_mu.iter_mut().for_each(|r| *r = 0.0);
        for (wi, yi) in s.w.iter().zip(s.y.chunks_exact(n)) {
            for (r, y) in rank_mu.iter_mut().zip(yi) {
                *r += wi * y * y;
            }
        }
        for j in 0..n {
            s.c[j] = a * s.c[j] + p.c_1 * s.p_c[j] * s.p_c[j] + p.c_mu * rank_mu[j];
        }
        s.y_w = y_w;
        s.sigma = sigma;
        let (c, d) = (&mut s.c, &mut s.d);
        regularise(c, d);
        s.progress.metrics(best, bad, s.sigma)
    }
}

crate::strategy::state_tensors!(SepCmaState { vec mean, scalar sigma, vec p_sigma, vec p_c, vec c, vec d });
