//! Rm-ES, the rank-m evolution strategy: CMA-ES's mean update and evolution path, with the
//! covariance replaced by the `m` most recent (and most spread out in time) evolution paths,
//! `C = (1 − c₁)^m I + c₁ Σ_j (1 − c₁)^(m−1−j) p_j p_jᵀ`, sampled in linear time, and the step
//! size adapted by the rank-based success rule (RSR): the `μ` best fitness values of this
//! generation ranked against the last generation's.
//!
//! Paper: Y. Li and Q. Zhang, "A Simple Yet Efficient Rank One Update for Covariance Matrix
//! Adaptation" / "A simple yet efficient evolution strategy for large-scale black-box
//! optimization", IEEE TEVC 22(5), 2018 (Rm-ES, Algorithm 1, Table 1). Reference
//! implementation (golden): evosax 0.3.2 `algorithms/distribution_based/rm_es.py` (`Rm_ES`),
//! whose defaults are CMA-ES's without negative weights ([`CmaParams`]) with `σ_min = 10⁻³`,
//! `c_σ = 0.3`, `d_σ = 1`, `c_c = 2 / (n + 7)`, `c₁ = 1 / (3√n + 5)`, `T = 20`, `q* = 0.3` and
//! one path (`m = 1`).
//!
//! evosax's bugs (`bugs = "all"` reproduces them, [`BugsKind`]):
//! - its RSR ranks the *shaped* fitness: `tell` receives the rank weights (larger is better,
//!   the worse half all 0) and sorts them ascending, so the "elite" values it keeps are the
//!   worse half's zeros in every generation; the ranks of the two generations always tie,
//!   `q = 0`, and the step size shrinks by `e^{−0.3}` a generation to `σ_min` whatever the
//!   fitness. Kestrel's default ranks the raw fitness (the paper's `F`), NaN worst.
//! - its `ask` draws the path coefficients `r` once for the whole population (`r` has shape
//!   `(m,)`), so every candidate is moved along the paths by the same amount and the rank-m
//!   covariance is never sampled. Kestrel's default draws `r` per candidate, as the paper.

use crate::cma_es::{CmaEs, CmaParams, MEAN_BOUND, SIGMA_FLOOR};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::strategy::{
    BugsKind, Progress, Strategy, TellMetrics, check_lens, is_rounding, to_f32, to_row,
};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// Rm-ES over `num_dims` with `pop_size` samples and `num_paths` evolution paths.
#[derive(Clone, Debug)]
pub struct RmEs {
    inner: CmaEs,
    num_paths: usize,
}

/// Rm-ES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RmParams {
    /// CMA-ES's weights and rates: `c_1` weighs the paths, `c_c` is the path's rate, `c_sigma`
    /// and `d_sigma` the RSR's smoothing and damping (`c_mu` and `chi_n` unused).
    pub cma: CmaParams,
    /// The smallest generation gap between two kept paths before the closest pair is thinned
    /// (evosax's `T`, default 20).
    pub path_gap: f64,
    /// The RSR's target success rate (`q*`, default 0.3).
    pub q_star: f64,
    /// evosax's bugs (see the module notes).
    pub bugs: BugsKind,
}

/// Rm-ES state.
#[derive(Clone, Debug)]
pub struct RmState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Step size.
    pub sigma: f64,
    /// The evolution path.
    pub p_c: Vec<f64>,
    /// The RSR's smoothed success (`s`).
    pub success: f64,
    /// The kept paths, `num_paths × n` row-major, oldest first.
    pub paths: Vec<f64>,
    /// The generation each kept path was stored at.
    pub path_times: Vec<f64>,
    /// The last generation's `μ` best values as the RSR ranks them, ascending (−inf at first).
    pub elite_fitness: Vec<f64>,
    /// The last `ask`'s standard normals (`λ × n`).
    pub z: Vec<f64>,
    /// The last `ask`'s path coefficients (`λ × m`; one row shared with evosax's bug).
    pub r: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    d: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    yw: Vec<f64>,
    ranked: Vec<f64>,
    both: Vec<f64>,
}

impl RmEs {
    /// The strategy; `pop_size ≥ 4`, `num_paths ≥ 1`.
    pub fn new(pop_size: usize, num_dims: usize, num_paths: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 4)?;
        if num_paths == 0 || num_paths > 1024 {
            return Err(EvoError::invalid("params.num_paths", num_paths, "in 1..=1024"));
        }
        Ok(RmEs { inner: CmaEs::new(pop_size, num_dims)?.without_negative_weights(), num_paths })
    }

    /// The number of evolution paths kept (`m`).
    pub fn num_paths(&self) -> usize {
        self.num_paths
    }

    fn elites(&self) -> usize {
        (self.pop_size() / 2).max(1)
    }

    /// Rows of `r` an `ask` draws: one per candidate, or one for all with evosax's bug.
    pub fn r_rows(&self, p: &RmParams) -> usize {
        if p.bugs == BugsKind::All { 1 } else { self.pop_size() }
    }

    /// The population from given standard normals: `z` (`λ × n`) and `r` (`r_rows × m`).
    pub fn ask_from_normals(
        &self,
        s: &mut RmState,
        p: &RmParams,
        z: &[f64],
        r: &[f64],
        population: &mut [f32],
    ) {
        s.z.copy_from_slice(z);
        s.r[..r.len()].copy_from_slice(r);
        self.fill(s, p, population);
    }

    /// `d_i = a^m z_i + √c₁ Σ_j a^(m−1−j) r_ij p_j`, `a = √(1 − c₁)`, into `d`, then the rows.
    fn fill(&self, s: &mut RmState, p: &RmParams, population: &mut [f32]) {
        let (lam, n, m) = (self.pop_size(), self.num_dims(), self.num_paths);
        check_lens("RmEs::ask", lam, n, population, None);
        let a = (1.0 - p.cma.c_1).sqrt();
        let head = a.powi(m as i32);
        let c1 = p.cma.c_1.sqrt();
        let shared = self.r_rows(p) == 1;
        for i in 0..lam {
            let r = if shared { &s.r[..m] } else { &s.r[i * m..(i + 1) * m] };
            let (d, z) = (&mut s.d[i * n..(i + 1) * n], &s.z[i * n..(i + 1) * n]);
            d.iter_mut().zip(z).for_each(|(d, z)| *d = head * z);
            for (j, rj) in r.iter().enumerate() {
                let c = c1 * a.powi((m - 1 - j) as i32) * rj;
                let path = &s.paths[j * n..(j + 1) * n];
                d.iter_mut().zip(path).for_each(|(d, q)| *d += c * q);
            }
        }
        for (row, di) in population.chunks_exact_mut(n).zip(s.d.chunks_exact(n)) {
            for ((x, m), d) in row.iter_mut().zip(&s.mean).zip(di) {
                *x = to_row(m + s.sigma * d);
            }
        }
    }

    /// Keeps the new path `p_c`: drops the oldest while fewer than `m` generations are done or
    /// while every kept pair is more than `path_gap` generations apart, else the older of the
    /// closest pair; then appends.
    fn store_path(&self, s: &mut RmState, p: &RmParams) {
        let (n, m) = (self.num_dims(), self.num_paths);
        let generation = s.progress.generation - 1;
        // evosax: i' = argmin of the gaps t[1:] − t[:-1] (a zero gap for m = 1); every path
        // shifts when that smallest gap exceeds T or fewer than m generations are done, else
        // the paths from i' on shift (dropping path i').
        let (mut at, mut gap) = (0, 0.0);
        if m > 1 {
            gap = f64::INFINITY;
            for i in 0..m - 1 {
                let g = s.path_times[i + 1] - s.path_times[i];
                if g < gap {
                    (at, gap) = (i, g);
                }
            }
        }
        let from = if gap > p.path_gap || generation < m as u64 { 0 } else { at };
        s.paths.copy_within((from + 1) * n.., from * n);
        s.path_times.copy_within(from + 1.., from);
        s.paths[(m - 1) * n..].copy_from_slice(&s.p_c);
        s.path_times[m - 1] = generation as f64;
    }
}

impl Strategy for RmEs {
    type Params = RmParams;
    type State = RmState;

    fn pop_size(&self) -> usize {
        self.inner.pop_size()
    }
    fn num_dims(&self) -> usize {
        self.inner.num_dims()
    }

    fn default_params(&self) -> RmParams {
        let n = self.num_dims() as f64;
        let cma = CmaParams {
            sigma_min: 1e-3,
            c_sigma: 0.3,
            d_sigma: 1.0,
            c_c: 2.0 / (n + 7.0),
            c_1: 1.0 / (3.0 * n.sqrt() + 5.0),
            ..self.inner.default_params()
        };
        RmParams { cma, path_gap: 20.0, q_star: 0.3, bugs: BugsKind::None }
    }

    fn init(&self, _key: Key, params: &RmParams, mean: &[f32]) -> RmState {
        let (lam, n, m) = (self.pop_size(), self.num_dims(), self.num_paths);
        assert_eq!(mean.len(), n, "RmEs::init: mean must have num_dims values");
        let mu = self.elites();
        RmState {
            mean: mean.iter().map(|&v| v as f64).collect(),
            sigma: params.cma.sigma_init,
            p_c: vec![0.0; n],
            success: 0.0,
            paths: vec![0.0; m * n],
            path_times: vec![0.0; m],
            elite_fitness: vec![f64::NEG_INFINITY; mu],
            z: vec![0.0; lam * n],
            r: vec![0.0; lam * m],
            progress: Progress::new(n),
            d: vec![0.0; lam * n],
            w: vec![0.0; lam],
            order: vec![0; lam],
            yw: vec![0.0; n],
            ranked: vec![0.0; lam],
            both: vec![0.0; 2 * mu],
        }
    }

    fn ask(&self, key: Key, s: &mut RmState, p: &RmParams, population: &mut [f32]) {
        fill_normal_f32(key.fold_in(0), &mut s.z);
        let rows = self.r_rows(p) * self.num_paths;
        fill_normal_f32(key.fold_in(1), &mut s.r[..rows]);
        self.fill(s, p, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut RmState,
        rp: &RmParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size(), self.num_dims());
        check_lens("RmEs::tell", lam, n, population, Some(fitness));
        let (mu, p) = (self.elites(), &rp.cma);
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        // y_w = Σ w_i (x_i − m) / σ by rank (the asked step where the row is its rounding).
        s.yw.iter_mut().for_each(|v| *v = 0.0);
        let sg = s.sigma;
        for (i, (row, di)) in population.chunks_exact(n).zip(s.d.chunks_exact(n)).enumerate() {
            let w = s.w[i].max(0.0);
            let asked = is_rounding(row, &s.mean, di.iter().map(|d| sg * d));
            for j in 0..n {
                let y = if asked { di[j] } else { (row[j] as f64 - s.mean[j]) / sg };
                s.yw[j] += w * y;
            }
        }
        for j in 0..n {
            s.mean[j] = (s.mean[j] + p.c_mean * sg * s.yw[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
        }
        // RSR: this generation's μ best values (raw fitness, NaN worst; evosax's bug: the
        // shaped weights, ascending) ranked with the last generation's.
        if rp.bugs == BugsKind::All {
            s.ranked.copy_from_slice(&s.w);
        } else {
            for (r, &f) in s.ranked.iter_mut().zip(fitness) {
                *r = if f.is_nan() { f64::INFINITY } else { f as f64 };
            }
        }
        s.ranked.sort_by(f64::total_cmp);
        s.both[..mu].copy_from_slice(&s.elite_fitness);
        s.both[mu..].copy_from_slice(&s.ranked[..mu]);
        // scipy's average rank (0-based): the values below plus half the other ties.
        let rank = |v: f64| {
            let (below, equal) = s.both.iter().fold((0usize, 0usize), |(b, e), &u| {
                (b + usize::from(u < v), e + usize::from(u == v))
            });
            below as f64 + (equal as f64 - 1.0) / 2.0
        };
        let q =
            (0..mu).map(|i| p.weights[i] * (rank(s.both[i]) - rank(s.both[mu + i]))).sum::<f64>()
                / mu as f64;
        s.elite_fitness.copy_from_slice(&s.ranked[..mu]);
        s.success = (1.0 - p.c_sigma) * s.success + p.c_sigma * (q - rp.q_star);
        s.sigma =
            (sg * (s.success / p.d_sigma).exp()).clamp(p.sigma_min.max(SIGMA_FLOOR), p.sigma_max);
        let a = (p.c_c * (2.0 - p.c_c) * p.mu_eff).sqrt();
        for (pc, yw) in s.p_c.iter_mut().zip(&s.yw) {
            *pc = (1.0 - p.c_c) * *pc + a * yw;
        }
        self.store_path(s, rp);
        s.progress.metrics(best, bad, s.sigma)
    }

    fn mean(&self, state: &RmState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a RmState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(RmState {
    vec mean, scalar sigma, vec p_c, scalar success, vec paths, vec path_times,
    vec elite_fitness, vec z, vec r
});

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixed profile draws path coefficients per candidate and ranks raw fitness: on the
    /// sphere its step size follows the success rule instead of falling to σ_min; evosax's
    /// profile shares one `r` and shrinks σ by e^(−0.3) a generation whatever the fitness.
    #[test]
    fn the_fixed_profile_samples_the_paths_per_candidate_and_ranks_raw_fitness() {
        let s = RmEs::new(8, 5, 2).unwrap();
        for bugs in [BugsKind::None, BugsKind::All] {
            let p = RmParams { bugs, ..s.default_params() };
            let mut st = s.init(Key::new(1), &p, &[3.0; 5]);
            let mut pop = vec![0f32; 40];
            let mut fit = vec![0f32; 8];
            for g in 0..40 {
                let key = Key::new(2).fold_in(g);
                s.ask(key, &mut st, &p, &mut pop);
                for (f, row) in fit.iter_mut().zip(pop.chunks_exact(5)) {
                    *f = row.iter().map(|x| x * x).sum();
                }
                s.tell(key, &pop, &fit, &mut st, &p);
            }
            let rows = s.r_rows(&p);
            assert_eq!(rows, if bugs == BugsKind::None { 8 } else { 1 });
            assert!(st.r[..2 * rows].chunks_exact(2).all(|r| r != [0.0, 0.0]));
            if rows > 1 {
                assert!(st.r.chunks_exact(2).any(|r| r != &st.r[..2]), "r per candidate");
            }
            if bugs == BugsKind::All {
                assert_eq!(st.sigma, p.cma.sigma_min, "evosax's profile falls to σ_min");
            } else {
                assert!(st.sigma > 10.0 * p.cma.sigma_min, "σ = {}", st.sigma);
                assert!(st.progress.best_fitness < 1.0, "best {}", st.progress.best_fitness);
            }
        }
    }
}
