//! CR-FM-NES, the cost-reduced fast-moving natural evolution strategy: a natural-gradient
//! search over `N(m, σ² D (I + v vᵀ) D)` (a diagonal `D` and one direction `v`, linear time
//! and memory), with FM-NES's distance-weighted recombination while the step-size path is long
//! (the distribution is moving) and three step-size learning rates for moving, stagnating and
//! converging phases. Mirrored samples (the population is even).
//!
//! Papers: M. Nomura and I. Ono, "Fast Moving Natural Evolution Strategy for High-Dimensional
//! Problems", IEEE CEC 2022 (arXiv:2201.11422), and "Towards a Principled Learning Rate
//! Adaptation for Natural Evolution Strategies" / FM-NES, IEEE CEC 2021. Reference
//! implementation (golden): evosax 0.3.2 `algorithms/distribution_based/cr_fm_nes.py`
//! (`CR_FM_NES`), whose defaults follow the authors' `crfmnes`: `w_rank = ŵ / Σ ŵ⁺ − 1/λ` with
//! `ŵ_i = ln(λ/2 + 1) − ln i`, CMA-ES's `c_σ` and `c_c`, `c₁ = c₁,CMA (n − 5)/6`, the
//! distance weights' `α = h⁻¹ min(1, √(λ/n))` with `h⁻¹` the Newton root of
//! `(1 + a²) e^{a²/2} / 0.24 − 10 − n`, and the `tanh` learning rates of the papers.
//!
//! evosax's bug (`bugs = "all"` reproduces it, [`BugsKind`]): `tell` clips the rank weights
//! at 0 (`jnp.clip(fitness, min=0.0)`, "remove negative weights") before the step-size path
//! and, while not moving, before the update of the mean, `v`, `D` and σ, where the papers and
//! `crfmnes` use `w_rank` with its negative half: the worse samples then push nothing away and
//! the weights no longer sum to 0. Kestrel's default keeps `w_rank`.
//!
//! As evosax, `tell` updates the shape from the draws of the last `ask` (`z`, `y`, kept in the
//! state) and the mean from the rows told (the asked step, exact in f64, where a row is its
//! f32 rounding). A non-finite shape update (a degenerate `v` or `D`) keeps the old shape.

use crate::cma_es::{MEAN_BOUND, SIGMA_FLOOR};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights_pair;
use crate::strategy::{
    BugsKind, Progress, Strategy, TellMetrics, check_lens, is_rounding, to_f32, to_row,
};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// CR-FM-NES over `num_dims` with an even `pop_size`.
#[derive(Clone, Debug)]
pub struct CrFmNes {
    pop_size: usize,
    num_dims: usize,
}

/// CR-FM-NES hyper-parameters (evosax's names in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct CrFmNesParams {
    /// Initial step size (`std_init`, default 1).
    pub sigma_init: f64,
    /// The rank weights `w_rank` (`weights`, summing to 0).
    pub weights: Vec<f64>,
    /// The positive rank weights `ŵ⁺` the distance weights scale (`weights_hat`).
    pub weights_hat: Vec<f64>,
    /// Variance-effective selection mass (`mu_eff`).
    pub mu_eff: f64,
    /// Step-size path rate (`c_std`).
    pub c_sigma: f64,
    /// Covariance path rate (`c_c`).
    pub c_c: f64,
    /// The path's rate in the shape update (`c1`).
    pub c_1: f64,
    /// Expected norm of an `n`-dimensional standard normal (`chi_n`).
    pub chi_n: f64,
    /// `h⁻¹` (`h_inv`).
    pub h_inv: f64,
    /// The distance weights' exponent (`alpha_dist`).
    pub alpha_dist: f64,
    /// Learning rate of the mean (`lr_mean`, 1).
    pub lr_mean: f64,
    /// Step-size rate while moving (`lr_move_std`, 1).
    pub lr_move_sigma: f64,
    /// Step-size rate while stagnating (`lr_stag_std`).
    pub lr_stag_sigma: f64,
    /// Step-size rate while converging (`lr_conv_std`).
    pub lr_conv_sigma: f64,
    /// Learning rate of the shape `v`, `D` (`lr_B`).
    pub lr_b: f64,
    /// evosax's bug (see the module notes).
    pub bugs: BugsKind,
}

/// CR-FM-NES state.
#[derive(Clone, Debug)]
pub struct CrFmNesState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Step size.
    pub sigma: f64,
    /// Step-size path.
    pub p_sigma: Vec<f64>,
    /// Covariance path.
    pub p_c: Vec<f64>,
    /// The diagonal scale `D`.
    pub d: Vec<f64>,
    /// The direction `v`.
    pub v: Vec<f64>,
    /// The last `ask`'s mirrored standard normals (`λ × n`).
    pub z: Vec<f64>,
    /// The last `ask`'s `y = z + (√(1 + ‖v‖²) − 1)(z · v̄) v̄` (`λ × n`).
    pub y: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    w: Vec<f64>,
    w_hat: Vec<f64>,
    order: Vec<usize>,
    weights: Vec<f64>,
    wxm: Vec<f64>,
    vbar: Vec<f64>,
    vbb: Vec<f64>,
    inv_h: Vec<f64>,
    ivb: Vec<f64>,
    t: Vec<f64>,
    s: Vec<f64>,
    row: Vec<f64>,
    sum_t: Vec<f64>,
    sum_s: Vec<f64>,
    next_v: Vec<f64>,
    next_d: Vec<f64>,
}

/// `h⁻¹`: the root of `f(a) = (1 + a²) e^{a²/2} / 0.24 − 10 − min(n, 2000)` by half Newton
/// steps from 1, as `crfmnes` and evosax's `get_h_inv` find it (to |f| ≤ 1e-10).
pub fn h_inv(num_dims: usize) -> f64 {
    let dim = num_dims.min(2000) as f64;
    let f = |a: f64| (1.0 + a * a) * (a * a / 2.0).exp() / 0.24 - 10.0 - dim;
    let df = |a: f64| (1.0 / 0.24) * a * (a * a / 2.0).exp() * (3.0 + a * a);
    let mut h = 1.0f64;
    // The iteration converges in a few dozen steps for every n ≤ 2000; the cap only keeps a
    // non-converging float from spinning.
    for _ in 0..10_000 {
        if f(h).abs() <= 1e-10 {
            break;
        }
        h -= 0.5 * f(h) / df(h);
    }
    h
}

impl CrFmNes {
    /// The strategy; `pop_size` even and at least 4.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 4)?;
        if pop_size % 2 == 1 {
            return Err(EvoError::invalid("pop_size", pop_size, "an even number (mirrored pairs)"));
        }
        Ok(CrFmNes { pop_size, num_dims })
    }

    /// The population from given standard normals (`λ/2 × n`, mirrored into the second half).
    pub fn ask_from_normals(&self, s: &mut CrFmNesState, z: &[f64], population: &mut [f32]) {
        let half = self.pop_size / 2 * self.num_dims;
        s.z[..half].copy_from_slice(&z[..half]);
        self.fill(s, population);
    }

    fn fill(&self, s: &mut CrFmNesState, population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("CrFmNes::ask", lam, n, population, None);
        let half = lam / 2 * n;
        let (head, tail) = s.z.split_at_mut(half);
        tail.iter_mut().zip(head.iter()).for_each(|(m, z)| *m = -z);
        let nv2: f64 = s.v.iter().map(|x| x * x).sum();
        let nv = nv2.sqrt();
        s.vbar.iter_mut().zip(&s.v).for_each(|(b, v)| *b = v / nv);
        let stretch = (1.0 + nv2).sqrt() - 1.0;
        for (yi, zi) in s.y.chunks_exact_mut(n).zip(s.z.chunks_exact(n)) {
            let dot: f64 = zi.iter().zip(&s.vbar).map(|(a, b)| a * b).sum();
            for ((y, z), b) in yi.iter_mut().zip(zi).zip(&s.vbar) {
                *y = z + stretch * dot * b;
            }
        }
        for (row, yi) in population.chunks_exact_mut(n).zip(s.y.chunks_exact(n)) {
            for (((x, m), d), y) in row.iter_mut().zip(&s.mean).zip(&s.d).zip(yi) {
                *x = to_row(m + s.sigma * d * y);
            }
        }
    }

    /// The shape update: `v`, `D` from the `λ` draws `y` and the path `p_c / D` (evosax's
    /// `exY`), weighted `lr_B w_i` and `c₁`, into `next_v`, `next_d`; false if non-finite.
    fn shape_update(&self, s: &mut CrFmNesState, p: &CrFmNesParams) -> bool {
        let (lam, n) = (self.pop_size, self.num_dims);
        let nv2: f64 = s.v.iter().map(|x| x * x).sum();
        let (nv4, nv) = (nv2 * nv2, nv2.sqrt());
        s.vbar.iter_mut().zip(&s.v).for_each(|(b, v)| *b = v / nv);
        s.vbb.iter_mut().zip(&s.vbar).for_each(|(o, b)| *o = b * b);
        let gamma = 1.0 + nv2;
        let max_vbb = s.vbb.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let alpha =
            f64::min(1.0, (nv4 + (2.0 * gamma - gamma.sqrt()) / max_vbb).sqrt() / (2.0 + nv2));
        let a2 = alpha * alpha;
        let b = -(1.0 - a2) * nv4 / gamma + 2.0 * a2;
        for ((ih, ivb), vbb) in s.inv_h.iter_mut().zip(s.ivb.iter_mut()).zip(&s.vbb) {
            *ih = 1.0 / (2.0 - (b + 2.0 * a2) * vbb);
            *ivb = *ih * vbb;
        }
        let vbb_ivb: f64 = s.vbb.iter().zip(&s.ivb).map(|(a, b)| a * b).sum();
        let shrink = b / (1.0 + b * vbb_ivb);
        s.sum_t.fill(0.0);
        s.sum_s.fill(0.0);
        for r in 0..=lam {
            // Row r of exY: y_r, or p_c / D for the last.
            if r < lam {
                s.row.copy_from_slice(&s.y[r * n..(r + 1) * n]);
            } else {
                s.row.iter_mut().zip(&s.p_c).zip(&s.d).for_each(|((o, pc), d)| *o = pc / d);
            }
            let w = if r < lam { p.lr_b * s.weights[r] } else { p.c_1 };
            let ip: f64 = s.row.iter().zip(&s.vbar).map(|(a, b)| a * b).sum();
            for j in 0..n {
                s.t[j] = s.row[j] * ip - 0.5 * s.vbar[j] * (ip * ip + gamma);
            }
            let ip_vt: f64 = s.t.iter().zip(&s.vbar).map(|(a, b)| a * b).sum();
            for j in 0..n {
                let (y, vb) = (s.row[j], s.vbar[j]);
                let s1 = y * y - nv2 / gamma * (y * vb) * ip - 1.0;
                s.s[j] =
                    s1 - alpha / gamma * ((2.0 + nv2) * (s.t[j] * vb) - nv2 * ip_vt * s.vbb[j]);
            }
            let ip_s: f64 = s.s.iter().zip(&s.ivb).map(|(a, b)| a * b).sum();
            for j in 0..n {
                s.s[j] = s.s[j] * s.inv_h[j] - shrink * ip_s * s.ivb[j];
            }
            let ip_sv: f64 = s.s.iter().zip(&s.vbb).map(|(a, b)| a * b).sum();
            for j in 0..n {
                let t = s.t[j] - alpha * ((2.0 + nv2) * (s.s[j] * s.vbar[j]) - ip_sv * s.vbar[j]);
                s.sum_t[j] += w * t;
                s.sum_s[j] += w * s.s[j];
            }
        }
        for j in 0..n {
            s.next_v[j] = s.v[j] + s.sum_t[j] / nv;
            s.next_d[j] = s.d[j] + s.sum_s[j] * s.d[j];
        }
        // Normalise det(A)^(1/n) to 1.
        let log_d: f64 = s.next_d.iter().map(|d| d.ln()).sum();
        let vv: f64 = s.next_v.iter().map(|x| x * x).sum();
        let root = (log_d / n as f64 + (1.0 + vv).ln() / (2.0 * n as f64)).exp();
        s.next_d.iter_mut().for_each(|d| *d /= root);
        let vv_next: f64 = s.next_v.iter().map(|x| x * x).sum();
        vv_next > 0.0
            && s.next_v.iter().chain(&s.next_d).all(|x| x.is_finite())
            && s.next_d.iter().all(|&d| d > 0.0)
    }
}

impl Strategy for CrFmNes {
    type Params = CrFmNesParams;
    type State = CrFmNesState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> CrFmNesParams {
        let (lam, n) = (self.pop_size as f64, self.num_dims as f64);
        let hat: Vec<f64> =
            (1..=self.pop_size).map(|i| (lam / 2.0 + 1.0).ln() - (i as f64).ln()).collect();
        let pos: f64 = hat.iter().map(|w| w.max(0.0)).sum();
        let weights: Vec<f64> = hat.iter().map(|w| w / pos - 1.0 / lam).collect();
        let mu_eff = 1.0 / weights.iter().map(|w| (w + 1.0 / lam).powi(2)).sum::<f64>();
        let c_sigma = (mu_eff + 2.0) / (n + mu_eff + 5.0);
        let c_c = (4.0 + mu_eff / n) / (n + 4.0 + 2.0 * mu_eff / n);
        let c1_cma = 2.0 / ((n + 1.3).powi(2) + mu_eff);
        let chi_n = n.sqrt() * (1.0 - 1.0 / (4.0 * n) + 1.0 / (21.0 * n * n));
        let h = h_inv(self.num_dims);
        CrFmNesParams {
            sigma_init: 1.0,
            weights,
            weights_hat: hat.iter().map(|w| w.max(0.0)).collect(),
            mu_eff,
            c_sigma,
            c_c,
            c_1: c1_cma * (n - 5.0) / 6.0,
            chi_n,
            h_inv: h,
            alpha_dist: h * f64::min(1.0, (lam / n).sqrt()),
            lr_mean: 1.0,
            lr_move_sigma: 1.0,
            lr_stag_sigma: ((0.024 * lam + 0.7 * n + 20.0) / (n + 12.0)).tanh(),
            lr_conv_sigma: 2.0 * ((0.025 * lam + 0.75 * n + 10.0) / (n + 4.0)).tanh(),
            lr_b: (((0.02 * lam).min(3.0 * n.ln()) + 5.0) / (0.23 * n + 25.0)).tanh(),
            bugs: BugsKind::None,
        }
    }

    fn init(&self, key: Key, params: &CrFmNesParams, mean: &[f32]) -> CrFmNesState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "CrFmNes::init: mean must have num_dims values");
        // v ~ N(0, I / n), as evosax's init draws it from its key.
        let mut v = vec![0.0; n];
        fill_normal_f32(key, &mut v);
        v.iter_mut().for_each(|x| *x /= (n as f64).sqrt());
        CrFmNesState {
            mean: mean.iter().map(|&x| x as f64).collect(),
            sigma: params.sigma_init,
            p_sigma: vec![0.0; n],
            p_c: vec![0.0; n],
            d: vec![1.0; n],
            v,
            z: vec![0.0; lam * n],
            y: vec![0.0; lam * n],
            progress: Progress::new(n),
            w: vec![0.0; lam],
            w_hat: vec![0.0; lam],
            order: vec![0; lam],
            weights: vec![0.0; lam],
            wxm: vec![0.0; n],
            vbar: vec![0.0; n],
            vbb: vec![0.0; n],
            inv_h: vec![0.0; n],
            ivb: vec![0.0; n],
            t: vec![0.0; n],
            s: vec![0.0; n],
            row: vec![0.0; n],
            sum_t: vec![0.0; n],
            sum_s: vec![0.0; n],
            next_v: vec![0.0; n],
            next_d: vec![0.0; n],
        }
    }

    fn ask(&self, key: Key, s: &mut CrFmNesState, _p: &CrFmNesParams, population: &mut [f32]) {
        let half = self.pop_size / 2 * self.num_dims;
        fill_normal_f32(key, &mut s.z[..half]);
        self.fill(s, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut CrFmNesState,
        p: &CrFmNesParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("CrFmNes::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        // One sort for both (all zeros when every value failed, as evosax's shaping).
        let weights = (&p.weights[..], &p.weights_hat[..]);
        rank_weights_pair(fitness, weights, &mut s.order, (&mut s.w, &mut s.w_hat));
        if p.bugs == BugsKind::All {
            s.w.iter_mut().for_each(|w| *w = w.max(0.0));
        }
        let cs = (p.c_sigma * (2.0 - p.c_sigma) * p.mu_eff).sqrt();
        s.p_sigma.iter_mut().for_each(|v| *v *= 1.0 - p.c_sigma);
        for (zi, &w) in s.z.chunks_exact(n).zip(&s.w) {
            s.p_sigma.iter_mut().zip(zi).for_each(|(ps, z)| *ps += cs * w * z);
        }
        let ps_norm = kestrel_core::linalg::norm(&s.p_sigma);
        let moving = p.chi_n <= ps_norm;
        if moving {
            let mut total = 0.0;
            for ((o, zi), wh) in s.weights.iter_mut().zip(s.z.chunks_exact(n)).zip(&s.w_hat) {
                *o = wh * (p.alpha_dist * kestrel_core::linalg::norm(zi)).exp();
                total += *o;
            }
            s.weights.iter_mut().for_each(|w| *w = *w / total - 1.0 / lam as f64);
        } else {
            s.weights.copy_from_slice(&s.w);
        }
        let lr_sigma = if moving {
            p.lr_move_sigma
        } else if 0.1 * p.chi_n <= ps_norm {
            p.lr_stag_sigma
        } else {
            p.lr_conv_sigma
        };
        // Σ w_i (x_i − m): the asked step σ D y where the row is its rounding.
        s.wxm.fill(0.0);
        let sg = s.sigma;
        for (i, (row, yi)) in population.chunks_exact(n).zip(s.y.chunks_exact(n)).enumerate() {
            let w = s.weights[i];
            let asked = is_rounding(row, &s.mean, yi.iter().zip(&s.d).map(|(y, d)| sg * d * y));
            for j in 0..n {
                let step = if asked { sg * s.d[j] * yi[j] } else { row[j] as f64 - s.mean[j] };
                s.wxm[j] += w * step;
            }
        }
        let cc = (p.c_c * (2.0 - p.c_c) * p.mu_eff).sqrt();
        for j in 0..n {
            s.p_c[j] = (1.0 - p.c_c) * s.p_c[j] + cc * s.wxm[j] / sg;
            s.mean[j] = (s.mean[j] + p.lr_mean * s.wxm[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
        }
        if self.shape_update(s, p) {
            std::mem::swap(&mut s.v, &mut s.next_v);
            std::mem::swap(&mut s.d, &mut s.next_d);
        }
        let g_s: f64 =
            s.z.chunks_exact(n)
                .zip(&s.weights)
                .map(|(zi, w)| w * zi.iter().map(|z| z * z - 1.0).sum::<f64>())
                .sum::<f64>()
                / n as f64;
        s.sigma = (sg * (lr_sigma / 2.0 * g_s).exp()).clamp(SIGMA_FLOOR, 1e300);
        s.progress.metrics(best, bad, s.sigma)
    }

    fn mean(&self, state: &CrFmNesState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a CrFmNesState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(CrFmNesState {
    vec mean, scalar sigma, vec p_sigma, vec p_c, vec d, vec v, vec z, vec y
});
