//! Matrix adaptation: MA-ES (a full transformation matrix `M` in place of CMA-ES's covariance,
//! no eigendecomposition) and LM-MA-ES (`m = 4 + ⌊3 ln n⌋` direction vectors in place of `M`,
//! linear time and memory).
//!
//! Papers: H.-G. Beyer and B. Sendhoff, "Simplify Your Covariance Matrix Adaptation Evolution
//! Strategy", IEEE TEVC 21(5), 2017 (MA-ES, Fig. 3, eq. M11); I. Loshchilov, T. Glasmachers
//! and H.-G. Beyer, "Large Scale Black-box Optimization by Limited-Memory Matrix Adaptation",
//! IEEE TEVC 23(2), 2019 (LM-MA-ES). Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/ma_es.py` (`MA_ES`) and `lm_ma_es.py` (`LM_MA_ES`), whose
//! defaults are CMA-ES's without negative weights ([`CmaParams`]) and, for LM-MA-ES,
//! `c_d,i = 1 / (1.5^i n)` and `c_c,i = λ / (4^i n)`.
//!
//! As in evosax, `tell` updates the path and the matrix from the normals `z` of the last `ask`
//! (kept in the state), so a told population that was not asked moves the mean by its own
//! rows but the shape by the asked draws.
//!
//! evosax's bug (`bugs = "all"` reproduces it, [`BugsKind`]): both matrix updates weigh the
//! normals by `params.weights` in candidate order, not by rank (`ma_es.py`'s `update_M`:
//! `einsum("i,ijk->jk", params.weights, outer(z, z))`; `lm_ma_es.py`'s: `dot(params.weights,
//! z)`), so the shape learns from whichever candidates were drawn first, while the path and
//! the mean use the rank weights. Kestrel's default weighs by rank, as the papers do.
//!
//! One more fix, not a profile: evosax's LM-MA-ES takes `√(μ_eff c_c,i (2 − c_c,i))`, which is NaN once
//! `c_c,0 = λ / n > 2` (λ > 2n, e.g. 64 samples in 10 dimensions), and its matrix then turns
//! NaN in the first generation. Kestrel clips every `c_c,i` at 1 (where the paper's rates
//! live); for λ ≤ n the two agree exactly.

use crate::cma_es::{CmaEs, CmaParams, MEAN_BOUND, SIGMA_FLOOR};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::strategy::Scales;
use crate::strategy::{
    BugsKind, Progress, Strategy, TellMetrics, check_lens, is_rounding, min_max, to_f32, to_row,
};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use kestrel_core::linalg::norm;
use kestrel_core::{Key, fill_normal_f32};

/// Whether the shape is a full matrix or a few direction vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaKind {
    /// MA-ES: `M` is `n × n`.
    Full,
    /// LM-MA-ES: `m` directions.
    LimitedMemory,
}

/// MA-ES or LM-MA-ES over `num_dims` with `pop_size` samples.
#[derive(Clone, Debug)]
pub struct MaEs {
    inner: CmaEs,
    kind: MaKind,
}

/// MA-ES / LM-MA-ES hyper-parameters: CMA-ES's (no negative weights) and LM-MA-ES's rates.
#[derive(Clone, Debug, PartialEq)]
pub struct MaParams {
    /// CMA-ES's learning rates and weights (`c_c` unused; `c_1`, `c_mu` unused by LM-MA-ES).
    pub cma: CmaParams,
    /// LM-MA-ES: each direction's rate in sampling, `1 / (1.5^i n)` (empty for MA-ES).
    pub c_d: Vec<f64>,
    /// LM-MA-ES: each direction's path rate, `min(1, λ / (4^i n))` (empty for MA-ES).
    pub c_c: Vec<f64>,
    /// evosax's bugs (see the module notes).
    pub bugs: BugsKind,
}

/// MA-ES / LM-MA-ES state.
#[derive(Clone, Debug)]
pub struct MaState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Step size.
    pub sigma: f64,
    /// Step-size path.
    pub p_sigma: Vec<f64>,
    /// MA-ES: `M`, `n × n` row-major; LM-MA-ES: the `m` directions, `m × n` row-major.
    pub m: Vec<f64>,
    /// The last `ask`'s standard normals (`λ × n`).
    pub z: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    d: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    zw: Vec<f64>,
    zm: Vec<f64>,
    dots: Vec<f64>,
    yw: Vec<f64>,
    t: Vec<f64>,
    m2: Vec<f64>,
}

impl MaEs {
    /// The strategy; `pop_size ≥ 4`.
    pub fn new(pop_size: usize, num_dims: usize, kind: MaKind) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 4)?;
        Ok(MaEs { inner: CmaEs::new(pop_size, num_dims)?.without_negative_weights(), kind })
    }

    /// LM-MA-ES's number of directions, `4 + ⌊3 ln n⌋`.
    pub fn directions(num_dims: usize) -> usize {
        4 + (3.0 * (num_dims as f64).ln()).floor() as usize
    }

    /// The population from given standard normals `z` (kept for `tell`).
    pub fn ask_from_normals(
        &self,
        state: &mut MaState,
        params: &MaParams,
        z: &[f64],
        population: &mut [f32],
    ) {
        state.z.copy_from_slice(z);
        self.fill(state, params, population);
    }

    /// `d_i` (the step before σ) from `z_i` into `state.d`, then the rows.
    fn fill(&self, s: &mut MaState, p: &MaParams, population: &mut [f32]) {
        let (lam, n) = (self.pop_size(), self.num_dims());
        check_lens("MaEs::ask", lam, n, population, None);
        match self.kind {
            MaKind::Full => {
                // D = Z Mᵀ (evosax: z @ M.T), one product.
                let z = MatRef::from_row_major_slice(&s.z, lam, n);
                let m = MatRef::from_row_major_slice(&s.m, n, n);
                let d = MatMut::from_row_major_slice_mut(&mut s.d, lam, n);
                matmul(d, Accum::Replace, z, m.transpose(), 1.0, Par::Seq);
            }
            MaKind::LimitedMemory => {
                // d = z, then for each direction used so far (i < generation):
                // d ← (1 − c_d,i) d + c_d,i (d · M_i) M_i, all candidates at once.
                let used = (s.progress.generation as usize).min(p.c_d.len());
                s.d.copy_from_slice(&s.z);
                for (i, &cd) in p.c_d.iter().enumerate().take(used) {
                    let mi = &s.m[i * n..(i + 1) * n];
                    let dots = MatMut::from_column_major_slice_mut(&mut s.dots, lam, 1);
                    let d = MatRef::from_row_major_slice(&s.d, lam, n);
                    matmul(
                        dots,
                        Accum::Replace,
                        d,
                        MatRef::from_column_major_slice(mi, n, 1),
                        1.0,
                        Par::Seq,
                    );
                    for (di, &dot) in s.d.chunks_exact_mut(n).zip(&s.dots) {
                        let a = cd * dot;
                        for (d, m) in di.iter_mut().zip(mi) {
                            *d = (1.0 - cd) * *d + a * m;
                        }
                    }
                }
            }
        }
        for (row, di) in population.chunks_exact_mut(n).zip(s.d.chunks_exact(n)) {
            for ((x, m), d) in row.iter_mut().zip(&s.mean).zip(di) {
                *x = to_row(m + s.sigma * d);
            }
        }
    }
}

impl Strategy for MaEs {
    type Params = MaParams;
    type State = MaState;

    fn pop_size(&self) -> usize {
        self.inner.pop_size()
    }
    fn num_dims(&self) -> usize {
        self.inner.num_dims()
    }

    fn default_params(&self) -> MaParams {
        let cma = self.inner.default_params();
        let (lam, n) = (self.pop_size() as f64, self.num_dims() as f64);
        match self.kind {
            MaKind::Full => MaParams { cma, c_d: vec![], c_c: vec![], bugs: BugsKind::None },
            MaKind::LimitedMemory => {
                let m = Self::directions(self.num_dims());
                MaParams {
                    cma: CmaParams { c_1: 0.0, c_mu: 0.0, ..cma },
                    c_d: (0..m).map(|i| 1.0 / 1.5f64.powi(i as i32) / n).collect(),
                    c_c: (0..m).map(|i| (lam / 4f64.powi(i as i32) / n).min(1.0)).collect(),
                    bugs: BugsKind::None,
                }
            }
        }
    }

    fn init(&self, _key: Key, params: &MaParams, mean: &[f32]) -> MaState {
        let (lam, n) = (self.pop_size(), self.num_dims());
        assert_eq!(mean.len(), n, "MaEs::init: mean must have num_dims values");
        let m = match self.kind {
            MaKind::Full => (0..n * n).map(|k| if k / n == k % n { 1.0 } else { 0.0 }).collect(),
            MaKind::LimitedMemory => vec![0.0; params.c_d.len() * n],
        };
        let scratch = if self.kind == MaKind::Full { n * n } else { 0 };
        MaState {
            mean: mean.iter().map(|&v| v as f64).collect(),
            sigma: params.cma.sigma_init,
            p_sigma: vec![0.0; n],
            m,
            z: vec![0.0; lam * n],
            progress: Progress::new(n),
            d: vec![0.0; lam * n],
            w: vec![0.0; lam],
            order: vec![0; lam],
            zw: vec![0.0; n],
            zm: vec![0.0; n],
            dots: vec![0.0; lam],
            yw: vec![0.0; n],
            t: vec![0.0; scratch],
            m2: vec![0.0; scratch],
        }
    }

    fn ask(&self, key: Key, state: &mut MaState, params: &MaParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut state.z);
        self.fill(state, params, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut MaState,
        mp: &MaParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size(), self.num_dims());
        check_lens("MaEs::tell", lam, n, population, Some(fitness));
        let p = &mp.cma;
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        // y_w = Σ w_i (x_i − m) / σ (the asked step where the row is its rounding) and
        // z_w = Σ w_i z_i, both by rank; z_m, the matrix update's sum, by rank too unless
        // evosax's bug is on (then by candidate order).
        s.yw.iter_mut().for_each(|v| *v = 0.0);
        s.zw.iter_mut().for_each(|v| *v = 0.0);
        s.zm.iter_mut().for_each(|v| *v = 0.0);
        let by_index = mp.bugs == BugsKind::All;
        let sg = s.sigma;
        for (i, ((row, di), zi)) in
            population.chunks_exact(n).zip(s.d.chunks_exact(n)).zip(s.z.chunks_exact(n)).enumerate()
        {
            let w = s.w[i];
            let wm = if by_index { p.weights[i] } else { w };
            let asked = is_rounding(row, &s.mean, di.iter().map(|d| sg * d));
            for j in 0..n {
                let y = if asked { di[j] } else { (row[j] as f64 - s.mean[j]) / sg };
                s.yw[j] += w.max(0.0) * y;
                s.zw[j] += w * zi[j];
                s.zm[j] += wm * zi[j];
            }
        }
        for j in 0..n {
            s.mean[j] = (s.mean[j] + p.c_mean * sg * s.yw[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
        }
        let cs = (p.c_sigma * (2.0 - p.c_sigma) * p.mu_eff).sqrt();
        for (ps, zw) in s.p_sigma.iter_mut().zip(&s.zw) {
            *ps = (1.0 - p.c_sigma) * *ps + cs * zw;
        }
        let ps_norm = norm(&s.p_sigma);
        s.sigma = (sg * (p.c_sigma / p.d_sigma * (ps_norm / p.chi_n - 1.0)).exp())
            .clamp(p.sigma_min.max(SIGMA_FLOOR), p.sigma_max);
        match self.kind {
            MaKind::Full => {
                // M ← M (I + c₁/2 (p pᵀ − I) + c_μ/2 (Σ w z zᵀ − I))  (eq. M11): Σ w z zᵀ as
                // Zᵀ (W Z), then one product M T. `d` is free again as the W Z scratch.
                for (i, (wz, zi)) in s.d.chunks_exact_mut(n).zip(s.z.chunks_exact(n)).enumerate() {
                    let w = if by_index { p.weights[i] } else { s.w[i] };
                    wz.iter_mut().zip(zi).for_each(|(o, z)| *o = w * z);
                }
                let z = MatRef::from_row_major_slice(&s.z, lam, n);
                let wz = MatRef::from_row_major_slice(&s.d, lam, n);
                let t = MatMut::from_row_major_slice_mut(&mut s.t, n, n);
                matmul(t, Accum::Replace, z.transpose(), wz, 1.0, Par::Seq);
                for a in 0..n {
                    for b in 0..n {
                        let id = if a == b { 1.0 } else { 0.0 };
                        let zz = s.t[a * n + b];
                        s.t[a * n + b] = id
                            + p.c_1 / 2.0 * (s.p_sigma[a] * s.p_sigma[b] - id)
                            + p.c_mu / 2.0 * (zz - id);
                    }
                }
                let m = MatRef::from_row_major_slice(&s.m, n, n);
                let t = MatRef::from_row_major_slice(&s.t, n, n);
                let m2 = MatMut::from_row_major_slice_mut(&mut s.m2, n, n);
                matmul(m2, Accum::Replace, m, t, 1.0, Par::Seq);
                std::mem::swap(&mut s.m, &mut s.m2);
                // The shape stays finite and bounded: M's entries within ±1e8 (C = M Mᵀ's
                // within about ±1e16), as CMA-ES clips its covariance.
                s.m.iter_mut()
                    .for_each(|v| *v = if v.is_finite() { v.clamp(-1e8, 1e8) } else { 0.0 });
            }
            MaKind::LimitedMemory => {
                for (i, &cc) in mp.c_c.iter().enumerate() {
                    let a = (p.mu_eff * cc * (2.0 - cc)).sqrt();
                    for (m, zw) in s.m[i * n..(i + 1) * n].iter_mut().zip(&s.zm) {
                        *m = (1.0 - cc) * *m + a * zw;
                    }
                }
            }
        }
        s.progress.metrics(best, bad, s.sigma)
    }

    fn mean(&self, state: &MaState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a MaState) -> &'a Progress {
        &state.progress
    }

    fn scales(&self, s: &MaState, _axis: usize, out: &mut Scales) -> bool {
        let n = self.num_dims();
        out.sigma = s.sigma;
        out.mean.clone_from(&s.mean);
        out.path.clear();
        out.axis.clear();
        out.coord.clear();
        match self.kind {
            // √(M Mᵀ)_ii: each row's norm.
            MaKind::Full => out.coord.extend(s.m.chunks_exact(n).map(norm)),
            // The directions shrink the identity a little; read the scale as isotropic.
            MaKind::LimitedMemory => out.coord.resize(n, 1.0),
        }
        out.root_eig = min_max(&out.coord);
        true
    }
}

crate::strategy::state_tensors!(MaState { vec mean, scalar sigma, vec p_sigma, vec m, vec z });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lm_rates_follow_the_paper_and_stay_below_one() {
        let es = MaEs::new(64, 10, MaKind::LimitedMemory).unwrap();
        let p = es.default_params();
        assert_eq!(p.c_d.len(), MaEs::directions(10));
        assert_eq!(p.c_d[0], 0.1);
        // 64 / 10 = 6.4 would make evosax's square root NaN; Kestrel clips at 1.
        assert_eq!(p.c_c[0], 1.0);
        assert!(p.c_c.windows(2).all(|w| w[0] >= w[1]));
    }
}
