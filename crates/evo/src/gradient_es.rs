//! Antithetic gradient estimators with an interface of their own: Persistent ES and Noise-Reuse
//! ES over unrolled inner problems, Guided ES with the surrogate gradient the caller gives, and
//! ASEBO with the gradient subspace it learns. All four draw mirrored pairs `m ± ε` (the first
//! `λ/2` rows `+ε`, the last `−ε`), estimate the gradient of the raw fitness (evosax's identity
//! shaping) and move the mean with an optimiser; they differ in where `ε` comes from.
//!
//! | rule | perturbation `ε` | gradient | paper | evosax 0.3.2 |
//! |---|---|---|---|---|
//! | [`GradientRule::Persistent`] | `σ z`, summed over the partial unrolls of one inner problem | `Σ f_i A_i / (σ² λ)`, `A` the sums | Vicol, Metz & Sohl-Dickstein, "Unbiased Gradient Estimation in Unrolled Computation Graphs with Persistent Evolution Strategies", ICML 2021 | `distribution_based/persistent_es.py` |
//! | [`GradientRule::NoiseReuse`] | `σ z`, drawn when an inner problem starts and reused until it ends | `Σ f_i ε_i / (σ² λ)` | Li et al., "Noise-Reuse in Online Evolution Strategies", NeurIPS 2023 | `distribution_based/noise_reuse_es.py` |
//! | [`GradientRule::Guided`] | `σ √(α/n) ε_n + σ √((1−α)/k) Q ε_k`, `Q` an orthonormal basis of the last `k` gradients given | `β Σ (f⁺ − f⁻) ε⁺ / (2σ²)` | Maheswaranathan et al., "Guided evolutionary strategies: augmenting random search with surrogate gradients", ICML 2019 | `distribution_based/guided_es.py` |
//! | [`GradientRule::Asebo`] | `σ L z`, `L Lᵀ = (α/n) I + ((1−α)/k') U Uᵀ + 10⁻⁶ I`, `U` the top right singular vectors of the last `k + 1` estimates | `½ Σ (f⁺ − f⁻) ε⁺ / σ²`, scaled to norm `n` | Choromanski et al., "From Complexity to Simplicity: Adaptive ES-Active Subspaces for Blackbox Optimization", NeurIPS 2019 | `distribution_based/asebo.py` |
//!
//! evosax's defaults: σ constant 1 (`std_schedule`); OpenEsAdam with learning rate 1e-3 (PES, NRES,
//! ASEBO) or SGD with 1e-3 (Guided ES); inner problems of `T = 100` steps unrolled `K = 10` at
//! a time (PES, NRES); `α = 0.5`, `β = 1` (Guided ES); one subspace dimension (Guided ES,
//! ASEBO). The population is even.
//!
//! **The inner problem** (PES, NRES): each generation evaluates the next `K` steps of every
//! candidate's unroll; [`GradientEsState::inner_step`] counts the steps done, and at 0 a new
//! inner problem starts (the caller resets its unrolls), as evosax's `inner_step_counter`.
//! **The surrogate gradient** (Guided ES): give it before `ask` with
//! [`Strategy::set_gradient`]; an `ask` without one uses zeros, as evosax does with its NaN
//! default. PES, NRES and Guided ES estimate from the perturbations they keep, not from the
//! rows told (as evosax's `tell`); ASEBO from the rows, taking the asked step, exact in f64,
//! for each row that is its f32 rounding. Non-finite fitness reads as the generation's worst
//! finite value (evosax's mean turns NaN).

use crate::cma_es::MEAN_BOUND;
use crate::eigen::{CholWork, EigenWork};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::open_es::OpenEsAdam;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, finite_or_worst, is_rounding, to_f32, to_row,
};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// Which estimator a [`GradientEs`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradientRule {
    /// Persistent ES (PES).
    Persistent,
    /// Noise-Reuse ES (NRES).
    NoiseReuse,
    /// Guided ES.
    Guided,
    /// ASEBO.
    Asebo,
}

/// PES, NRES, Guided ES or ASEBO over `num_dims` with an even `pop_size`.
#[derive(Clone, Debug)]
pub struct GradientEs {
    pop_size: usize,
    num_dims: usize,
    rule: GradientRule,
    subspace_dims: usize,
}

/// [`GradientEs`]'s hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct GradientEsParams {
    /// Perturbation scale (constant).
    pub sigma: f64,
    /// OpenEsAdam on the mean (PES, NRES, ASEBO); Guided ES steps SGD at `adam.lr`.
    pub adam: OpenEsAdam,
    /// PES, NRES: steps of one inner problem (evosax's `T`).
    pub inner_steps: u64,
    /// PES, NRES: steps unrolled per generation (evosax's `K`).
    pub unroll_steps: u64,
    /// Guided ES: the share of the full space in the sampling covariance (`α`, in [0, 1]).
    pub alpha: f64,
    /// Guided ES: the gradient's scale (`β`).
    pub beta: f64,
}

/// [`GradientEs`]'s state.
#[derive(Clone, Debug)]
pub struct GradientEsState {
    /// Mean.
    pub mean: Vec<f64>,
    /// OpenEsAdam's first moments.
    pub m: Vec<f64>,
    /// OpenEsAdam's second moments.
    pub v: Vec<f64>,
    /// Optimiser updates so far.
    pub adam_steps: u64,
    /// PES, NRES: the inner problem's steps done (0: the next generation starts a new one).
    pub inner_step: u64,
    /// Tells so far (ASEBO's subspace is used after `subspace_dims + 1`).
    pub generation: u64,
    /// ASEBO: the sampling covariance's weight on the full space (`α`, 1 at first).
    pub alpha: f64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    /// The perturbations kept (`pop_size × num_dims`): PES's sums over the unrolls, NRES's
    /// reused draws, Guided ES's and ASEBO's last ones.
    pub pert: Vec<f64>,
    /// Guided ES: the gradients given, `num_dims × subspace_dims` row-major, newest last;
    /// ASEBO: its estimates, `(subspace_dims + 1) × num_dims`, newest last.
    pub archive: Vec<f64>,
    /// Guided ES: the gradient given for the next `ask` (zeros: none, as evosax reads its NaN
    /// default).
    pub guide: Vec<f64>,
    /// ASEBO: the subspace projector `U Uᵀ` of the last ask (`num_dims²`).
    pub projector: Vec<f64>,
    f: Vec<f64>,
    z: Vec<f64>,
    zk: Vec<f64>,
    grad: Vec<f64>,
    r: Vec<f64>,
    taus: Vec<f64>,
    chol: Vec<f64>,
    cov: Vec<f64>,
    gram: Mat<f64>,
    gram_vecs: Mat<f64>,
    gram_vals: Vec<f64>,
    eig: Option<EigenWork>,
    chol_work: Option<CholWork>,
}

/// float32's machine epsilon: evosax's ASEBO rank tolerance (its arrays are float32).
const F32_EPS: f64 = f32::EPSILON as f64;

impl GradientEs {
    /// The strategy; `pop_size` even, `subspace_dims` in `1..=num_dims` (read by Guided ES and
    /// ASEBO).
    pub fn new(
        pop_size: usize,
        num_dims: usize,
        rule: GradientRule,
        subspace_dims: usize,
    ) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        if pop_size % 2 == 1 {
            return Err(EvoError::invalid("pop_size", pop_size, "an even number (mirrored pairs)"));
        }
        if subspace_dims == 0 || subspace_dims > num_dims {
            return Err(EvoError::invalid(
                "params.subspace_dims",
                subspace_dims,
                format!("in 1..={num_dims} (num_dims)"),
            ));
        }
        Ok(GradientEs { pop_size, num_dims, rule, subspace_dims })
    }

    /// The rule.
    pub fn rule(&self) -> GradientRule {
        self.rule
    }

    /// The subspace's dimension (Guided ES, ASEBO).
    pub fn subspace_dims(&self) -> usize {
        self.subspace_dims
    }

    fn pairs(&self) -> usize {
        self.pop_size / 2
    }

    /// The population from given standard normals: PES, NRES and ASEBO take `λ/2 × n` (one
    /// row a pair; NRES reads them only when an inner problem starts), Guided ES `n × λ/2`
    /// (its full-space draws) then `k × λ/2` (its subspace draws), as evosax draws them.
    pub fn ask_from_normals(
        &self,
        s: &mut GradientEsState,
        p: &GradientEsParams,
        z: &[f64],
        pop: &mut [f32],
    ) {
        let head = s.z.len();
        s.z.copy_from_slice(&z[..head]);
        if self.rule == GradientRule::Guided {
            s.zk.copy_from_slice(&z[head..]);
        }
        self.fill(s, p, pop);
    }

    fn fill(&self, s: &mut GradientEsState, p: &GradientEsParams, pop: &mut [f32]) {
        let (n, half) = (self.num_dims, self.pairs());
        check_lens("GradientEs::ask", self.pop_size, n, pop, None);
        match self.rule {
            GradientRule::Persistent => {
                // Over row slices: pair k's draw into both running sums and both rows.
                let (head, tail) = s.pert.split_at_mut(half * n);
                let (up, down) = pop.split_at_mut(half * n);
                let rows =
                    s.z.chunks_exact(n)
                        .zip(head.chunks_exact_mut(n).zip(tail.chunks_exact_mut(n)))
                        .zip(up.chunks_exact_mut(n).zip(down.chunks_exact_mut(n)));
                for ((z, (plus, minus)), (xp, xm)) in rows {
                    for (((((z, a), b), xp), xm), m) in
                        z.iter().zip(plus).zip(minus).zip(xp).zip(xm).zip(&s.mean)
                    {
                        let e = p.sigma * z;
                        *a += e;
                        *b -= e;
                        *xp = to_row(m + e);
                        *xm = to_row(m - e);
                    }
                }
            }
            GradientRule::NoiseReuse => {
                if s.inner_step == 0 {
                    for k in 0..half {
                        for j in 0..n {
                            let e = p.sigma * s.z[k * n + j];
                            s.pert[k * n + j] = e;
                            s.pert[(half + k) * n + j] = -e;
                        }
                    }
                }
                self.rows_from_pert(s, pop);
            }
            GradientRule::Guided => {
                self.guided_pert(s, p);
                self.rows_from_pert(s, pop);
            }
            GradientRule::Asebo => {
                self.asebo_chol(s);
                // The first half σ Z Lᵀ in one product, the second its mirror.
                let z = MatRef::from_row_major_slice(&s.z, half, n);
                let l = MatRef::from_column_major_slice(&s.chol, n, n);
                let (head, tail) = s.pert.split_at_mut(half * n);
                let out = MatMut::from_row_major_slice_mut(head, half, n);
                matmul(out, Accum::Replace, z, l.transpose(), p.sigma, Par::Seq);
                tail.iter_mut().zip(head.iter()).for_each(|(t, h)| *t = -h);
                self.rows_from_pert(s, pop);
            }
        }
    }

    fn rows_from_pert(&self, s: &GradientEsState, pop: &mut [f32]) {
        let n = self.num_dims;
        for (row, e) in pop.chunks_exact_mut(n).zip(s.pert.chunks_exact(n)) {
            for ((x, m), e) in row.iter_mut().zip(&s.mean).zip(e) {
                *x = to_row(m + e);
            }
        }
    }

    /// Guided ES: shifts the given gradient into the archive and draws
    /// `ε⁺ = a ε_n + c Q ε_k` into the first half of `pert` (the second half mirrored).
    fn guided_pert(&self, s: &mut GradientEsState, p: &GradientEsParams) {
        let (n, k, half) = (self.num_dims, self.subspace_dims, self.pairs());
        let a = p.sigma * (p.alpha / n as f64).sqrt();
        let c = p.sigma * ((1.0 - p.alpha) / k as f64).sqrt();
        for i in 0..n {
            let row = &mut s.archive[i * k..(i + 1) * k];
            row.rotate_left(1);
            row[k - 1] = s.guide[i];
        }
        s.guide.iter_mut().for_each(|g| *g = 0.0);
        // Q into `cov` (n × k row-major): LAPACK's Householder QR, as `jnp.linalg.qr`.
        householder_q(&s.archive, n, k, &mut s.r, &mut s.taus, &mut s.grad, &mut s.cov[..n * k]);
        for q in 0..half {
            for i in 0..n {
                let sub: f64 = (0..k).map(|j| s.cov[i * k + j] * s.zk[j * half + q]).sum();
                let e = a * s.z[i * half + q] + c * sub;
                s.pert[q * n + i] = e;
                s.pert[(half + q) * n + i] = -e;
            }
        }
    }

    /// ASEBO: the projector onto the archive's top singular directions (zero until
    /// `subspace_dims + 1` tells) and the Cholesky factor of the sampling covariance, into
    /// `projector` and `chol`.
    fn asebo_chol(&self, s: &mut GradientEsState) {
        let (n, k) = (self.num_dims, self.subspace_dims);
        let rows = k + 1;
        s.projector.iter_mut().for_each(|v| *v = 0.0);
        let mut effective = 1.0;
        if s.generation > k as u64 {
            // Centre the archive's rows, then its right singular vectors from the eigenpairs
            // of the small Gram matrix A Aᵀ = U S² Uᵀ: v_i = Aᵀ u_i / s_i.
            let centred = &mut s.cov[..rows * n];
            for j in 0..n {
                let mean = (0..rows).map(|r| s.archive[r * n + j]).sum::<f64>() / rows as f64;
                for r in 0..rows {
                    centred[r * n + j] = s.archive[r * n + j] - mean;
                }
            }
            for a in 0..rows {
                for b in 0..rows {
                    let d: f64 =
                        (0..n).map(|j| centred[a * n + j] * centred[b * n + j]).sum::<f64>();
                    s.gram[(a, b)] = d;
                }
            }
            let eig = s.eig.as_mut().expect("ASEBO's state has its eigen workspace");
            let ok = eig.eigh(&s.gram, &mut s.gram_vecs, &mut s.gram_vals);
            if ok {
                // Descending singular values; the rank tolerance as numpy's (float32 eps ×
                // the larger side × the largest value).
                let sv = |i: usize| s.gram_vals[rows - 1 - i].max(0.0).sqrt();
                let tol = F32_EPS * rows.max(n) as f64 * sv(0);
                let mut count = 0.0;
                for i in 0..k {
                    let si = sv(i);
                    if si <= tol || si == 0.0 {
                        continue;
                    }
                    count += 1.0;
                    let col = rows - 1 - i;
                    for j in 0..n {
                        s.grad[j] = (0..rows)
                            .map(|r| centred[r * n + j] * s.gram_vecs[(r, col)])
                            .sum::<f64>()
                            / si;
                    }
                    for a in 0..n {
                        for b in 0..n {
                            s.projector[a * n + b] += s.grad[a] * s.grad[b];
                        }
                    }
                }
                effective = f64::max(count, 1.0);
            }
        }
        let (w_full, w_sub) = (s.alpha / n as f64, (1.0 - s.alpha) / effective);
        for a in 0..n {
            for b in 0..n {
                let eye = if a == b { w_full + 1e-6 } else { 0.0 };
                s.cov[a * n + b] = eye + w_sub * s.projector[a * n + b];
            }
        }
        // `chol` column-major (faer's blocked factor; the covariance is symmetric, so either
        // layout reads the same matrix).
        s.chol.copy_from_slice(&s.cov);
        let work = s.chol_work.as_mut().expect("ASEBO's state has its Cholesky workspace");
        if !work.factor(&mut s.chol) {
            // Not reachable from finite states (the covariance is ≥ 1e-6 I); sample the
            // full space rather than stop.
            s.chol.iter_mut().for_each(|v| *v = 0.0);
            for a in 0..n {
                s.chol[a * n + a] = (w_full + 1e-6).sqrt();
            }
        }
    }
}

/// The `n × k` orthonormal factor `Q` of `a` (row-major `n × k`, `k ≤ n`) by Householder
/// reflections with LAPACK's conventions (`dlarfg`'s `β = −sign(α) ‖(α, x)‖`, no reflection
/// where the column below the diagonal is zero), so its column signs are numpy's and JAX's.
/// `r` (`n × k`) holds the factored copy, `taus` (`k`) and `e` (`n`) are scratch; `q` gets
/// `Q` row-major `n × k`.
fn householder_q(
    a: &[f64],
    n: usize,
    k: usize,
    r: &mut [f64],
    taus: &mut [f64],
    e: &mut [f64],
    q: &mut [f64],
) {
    r.copy_from_slice(&a[..n * k]);
    for j in 0..k {
        let alpha = r[j * k + j];
        let xnorm = (j + 1..n).map(|i| r[i * k + j] * r[i * k + j]).sum::<f64>().sqrt();
        if xnorm == 0.0 {
            taus[j] = 0.0;
            continue;
        }
        // Fortran's SIGN(h, α): +h for α = 0.
        let h = alpha.hypot(xnorm);
        let beta = if alpha < 0.0 { h } else { -h };
        taus[j] = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for i in j + 1..n {
            r[i * k + j] *= scale;
        }
        r[j * k + j] = beta;
        // H = I − τ v vᵀ, v = (1, r[j+1.., j]), on the columns to the right.
        for c in j + 1..k {
            let d = taus[j]
                * (r[j * k + c] + (j + 1..n).map(|i| r[i * k + j] * r[i * k + c]).sum::<f64>());
            r[j * k + c] -= d;
            for i in j + 1..n {
                r[i * k + c] -= d * r[i * k + j];
            }
        }
    }
    // Column c of Q = H_1 ⋯ H_k e_c.
    for c in 0..k {
        e.iter_mut().enumerate().for_each(|(i, v)| *v = if i == c { 1.0 } else { 0.0 });
        for j in (0..k).rev() {
            if taus[j] == 0.0 {
                continue;
            }
            let d = taus[j] * (e[j] + (j + 1..n).map(|i| r[i * k + j] * e[i]).sum::<f64>());
            e[j] -= d;
            for i in j + 1..n {
                e[i] -= d * r[i * k + j];
            }
        }
        for i in 0..n {
            q[i * k + c] = e[i];
        }
    }
}

impl Strategy for GradientEs {
    type Params = GradientEsParams;
    type State = GradientEsState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> GradientEsParams {
        GradientEsParams {
            sigma: 1.0,
            adam: OpenEsAdam { lr: 1e-3, ..OpenEsAdam::default() },
            inner_steps: 100,
            unroll_steps: 10,
            alpha: 0.5,
            beta: 1.0,
        }
    }

    fn init(&self, _key: Key, _params: &GradientEsParams, mean: &[f32]) -> GradientEsState {
        let (lam, n, k) = (self.pop_size, self.num_dims, self.subspace_dims);
        assert_eq!(mean.len(), n, "GradientEs::init: mean must have num_dims values");
        let (guided, asebo) = (self.rule == GradientRule::Guided, self.rule == GradientRule::Asebo);
        let rows = k + 1;
        GradientEsState {
            mean: mean.iter().map(|&v| v as f64).collect(),
            m: vec![0.0; n],
            v: vec![0.0; n],
            adam_steps: 0,
            inner_step: 0,
            generation: 0,
            alpha: 1.0,
            progress: Progress::new(n),
            pert: vec![0.0; lam * n],
            archive: vec![
                0.0;
                if guided {
                    n * k
                } else if asebo {
                    rows * n
                } else {
                    0
                }
            ],
            guide: vec![0.0; if guided { n } else { 0 }],
            projector: vec![0.0; if asebo { n * n } else { 0 }],
            f: vec![0.0; lam],
            z: vec![0.0; self.pairs() * n],
            zk: vec![0.0; if guided { k * self.pairs() } else { 0 }],
            grad: vec![0.0; n],
            r: vec![0.0; if guided { n * k } else { 0 }],
            taus: vec![0.0; if guided { k } else { 0 }],
            chol: vec![0.0; if asebo { n * n } else { 0 }],
            cov: vec![
                0.0;
                if asebo {
                    n * n
                } else if guided {
                    n * k
                } else {
                    0
                }
            ],
            gram: Mat::zeros(if asebo { rows } else { 0 }, if asebo { rows } else { 0 }),
            gram_vecs: Mat::zeros(if asebo { rows } else { 0 }, if asebo { rows } else { 0 }),
            gram_vals: vec![0.0; if asebo { rows } else { 0 }],
            eig: asebo.then(|| EigenWork::new(rows)),
            chol_work: asebo.then(|| CholWork::new(n)),
        }
    }

    fn ask(&self, key: Key, s: &mut GradientEsState, p: &GradientEsParams, pop: &mut [f32]) {
        match self.rule {
            GradientRule::NoiseReuse if s.inner_step != 0 => {}
            GradientRule::Guided => {
                fill_normal_f32(key.fold_in(0), &mut s.z);
                fill_normal_f32(key.fold_in(1), &mut s.zk);
            }
            _ => fill_normal_f32(key, &mut s.z),
        }
        self.fill(s, p, pop);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut GradientEsState,
        p: &GradientEsParams,
    ) -> TellMetrics {
        let (lam, n, half) = (self.pop_size, self.num_dims, self.pairs());
        check_lens("GradientEs::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        finite_or_worst(fitness, &mut s.f);
        s.grad.iter_mut().for_each(|g| *g = 0.0);
        let var = p.sigma * p.sigma;
        match self.rule {
            GradientRule::Persistent | GradientRule::NoiseReuse => {
                for (e, f) in s.pert.chunks_exact(n).zip(&s.f) {
                    s.grad.iter_mut().zip(e).for_each(|(g, e)| *g += f * e);
                }
                s.grad.iter_mut().for_each(|g| *g = *g / var / lam as f64);
            }
            GradientRule::Guided => {
                for q in 0..half {
                    let d = s.f[q] - s.f[half + q];
                    let e = &s.pert[q * n..(q + 1) * n];
                    s.grad.iter_mut().zip(e).for_each(|(g, e)| *g += d * e);
                }
                s.grad.iter_mut().for_each(|g| *g = p.beta * *g / (2.0 * var));
            }
            GradientRule::Asebo => {
                for q in 0..half {
                    let d = s.f[q] - s.f[half + q];
                    let row = &population[q * n..(q + 1) * n];
                    let e = &s.pert[q * n..(q + 1) * n];
                    let asked = is_rounding(row, &s.mean, e.iter().copied());
                    for j in 0..n {
                        let step = if asked { e[j] } else { row[j] as f64 - s.mean[j] };
                        s.grad[j] += d * step / var;
                    }
                }
                s.grad.iter_mut().for_each(|g| *g *= 0.5);
                let k = self.subspace_dims;
                if s.generation > k as u64 {
                    // α = ‖g (I − UUᵀ)‖ / (‖g UUᵀ‖ + 1e-8), clipped to [0, 1].
                    let (mut on, mut off) = (0.0, 0.0);
                    for a in 0..n {
                        let proj: f64 = (0..n).map(|b| s.grad[b] * s.projector[b * n + a]).sum();
                        on += proj * proj;
                        off += (s.grad[a] - proj) * (s.grad[a] - proj);
                    }
                    s.alpha = (off.sqrt() / (on.sqrt() + 1e-8)).clamp(0.0, 1.0);
                } else {
                    s.alpha = 1.0;
                }
                let rows = k + 1;
                s.archive.copy_within(n.., 0);
                s.archive[(rows - 1) * n..].copy_from_slice(&s.grad);
                let norm = kestrel_core::linalg::norm(&s.grad);
                s.grad.iter_mut().for_each(|g| *g /= norm / n as f64 + 1e-8);
            }
        }
        s.adam_steps += 1;
        if self.rule == GradientRule::Guided {
            for j in 0..n {
                s.mean[j] = (s.mean[j] - p.adam.lr * s.grad[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
            }
        } else {
            let t = s.adam_steps.min(i32::MAX as u64) as i32;
            for j in 0..n {
                let d = p.adam.step(p.adam.lr, t, s.grad[j], &mut s.m[j], &mut s.v[j]);
                s.mean[j] = (s.mean[j] - d).clamp(-MEAN_BOUND, MEAN_BOUND);
            }
        }
        if matches!(self.rule, GradientRule::Persistent | GradientRule::NoiseReuse) {
            s.inner_step += p.unroll_steps;
            if s.inner_step >= p.inner_steps {
                s.inner_step = 0;
                if self.rule == GradientRule::Persistent {
                    s.pert.iter_mut().for_each(|v| *v = 0.0);
                }
            }
        }
        s.generation += 1;
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, state: &GradientEsState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a GradientEsState) -> &'a Progress {
        &state.progress
    }

    fn set_gradient(&self, state: &mut GradientEsState, grad: &[f32]) -> Result<(), EvoError> {
        if self.rule != GradientRule::Guided {
            return Err(crate::strategy::takes_no_gradient());
        }
        if grad.len() != self.num_dims {
            return Err(EvoError::invalid(
                "gradient",
                format!("{} values", grad.len()),
                format!("num_dims = {} values", self.num_dims),
            ));
        }
        if let Some(i) = grad.iter().position(|g| !g.is_finite()) {
            return Err(EvoError::invalid(format!("gradient[{i}]"), grad[i], "a finite number"));
        }
        state.guide.iter_mut().zip(grad).for_each(|(d, &g)| *d = g as f64);
        Ok(())
    }
}

crate::strategy::state_tensors!(GradientEsState {
    vec mean, vec m, vec v, count adam_steps, count inner_step, count generation, scalar alpha,
    vec pert, vec archive, vec guide, vec projector
});
