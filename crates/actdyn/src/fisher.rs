//! Fisher information of the RBF dynamics weights along predicted rollouts, and the batched
//! trajectory costs the planner minimises (`shared/reference/actdyn.md` §1.6; golden schema
//! in `actdyn-golden/README.md` §5).
//!
//! For one action sequence `X` (`H × 2`) from the belief `z_0`, the noise-free rollout is
//! `z_{h+1} = μ′(z_h, X_h)`. The sensitivities `S_t = ∂z_t/∂W` (`2 × 2C`, parameter
//! `p = d·C + c` ↔ `W[c][d]`) follow the forward recursion `S_{t+1} = κ·I₂⊗Φ(z_t)ᵀ +
//! J_t·S_t`, and the diagonal planned information is `I^plan_p = Σ_t Σ_d S_t[d][p]²·G_t[d][d]`,
//! with `G_t` the projector onto the row space of the decoder Jacobian at `z_t`
//! ([`LogLinearDecoder::projector_diag`]). With the accumulated information `I^acc`,
//! `I = max(I^plan + discount·I^acc, floor)`; A-optimality is `Σ_p 1/I_p` and D-optimality
//! `−Σ_p ln(1 + I_p)`.
//!
//! [`FisherBugs`] selects between the reference as it runs (`FAITHFUL`) and the intended
//! math (`FIXED`), one switch per defect. Φ is computed once per (sequence, step) and reused
//! for the mean, the Jacobian, `S` and the information; `S` lives in per-thread scratch.

use crate::error::ActdynError;
use crate::rbf::{LogLinearDecoder, RbfDynamics, RbfGrid};
use kestrel_core::{FromInvalid, Invalid};
use kestrel_mppi::TrajectoryCost;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// The reference's defects in the Fisher sensitivities, each on its own switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FisherBugs {
    /// The reference's linearisation: `Ĵ_t[d][d′] = 1 + Σ_c Φ_{t,c}(c_{c,d} − z_{t,d})W[c][d′]`
    /// (the 2γ factor dropped, transposed, an all-ones matrix added instead of `I`, and the
    /// same for the residual form) with the direct term `I₂⊗Φ` (never `dt·I₂⊗Φ`). Off: the
    /// true Jacobian of `μ′` (`J[d′][d] = 2γ Σ_c W[c][d′]Φ_c(c_{c,d} − z_d)`, `I + dt·J` when
    /// residual) and the true direct term (`dt·I₂⊗Φ` when residual).
    pub reference_jacobian: bool,
    /// The reference's indexing: `S_0 = I₂⊗Φ_0`, `S_t = I₂⊗Φ_{t−1} + Ĵ_{t−1}S_{t−1}`
    /// (`Φ_0` counted twice), information from the points `z_0..z_{H−1}`. Off: `S_0 = 0`
    /// (the belief does not depend on `W`), information from `z_1..z_H`.
    pub off_by_one: bool,
}

impl FisherBugs {
    /// The reference as it runs (the golden fixtures' profile).
    pub const FAITHFUL: FisherBugs = FisherBugs { reference_jacobian: true, off_by_one: true };
    /// The intended math: forward sensitivities with the true Jacobian.
    pub const FIXED: FisherBugs = FisherBugs { reference_jacobian: false, off_by_one: false };
}

impl Default for FisherBugs {
    /// [`FisherBugs::FAITHFUL`].
    fn default() -> Self {
        FisherBugs::FAITHFUL
    }
}

/// Which scalar of the diagonal information a cost is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimality {
    /// `Σ_p 1/I_p`.
    A,
    /// `−Σ_p ln(1 + I_p)`.
    D,
}

/// The Fisher metric: the dynamics, the decoder and the reference's hard defaults.
#[derive(Clone, Debug)]
pub struct FisherMetric<'a> {
    /// The RBF dynamics whose weights are being identified.
    pub model: &'a RbfDynamics,
    /// The decoder that defines `G_t`.
    pub decoder: &'a LogLinearDecoder,
    /// Which defects to reproduce.
    pub bugs: FisherBugs,
    /// Weight of the accumulated information (0.99).
    pub discount: f64,
    /// Floor of each information value (1e-12).
    pub floor: f64,
}

impl<'a> FisherMetric<'a> {
    /// The metric with the reference's discount 0.99 and floor 1e-12.
    pub fn new(
        model: &'a RbfDynamics,
        decoder: &'a LogLinearDecoder,
        bugs: FisherBugs,
    ) -> FisherMetric<'a> {
        FisherMetric { model, decoder, bugs, discount: 0.99, floor: 1e-12 }
    }

    /// Number of parameters `P = 2C`.
    pub fn num_params(&self) -> usize {
        2 * self.model.num_centres()
    }

    /// Checks discount, floor, and an accumulated vector's length.
    pub fn validate(&self, accumulated: Option<&[f64]>) -> Result<(), ActdynError> {
        if !(self.discount.is_finite() && self.discount >= 0.0) {
            return Err(ActdynError::invalid("discount", self.discount, "a finite number ≥ 0"));
        }
        if !(self.floor.is_finite() && self.floor > 0.0) {
            return Err(ActdynError::invalid("floor", self.floor, "a finite number > 0"));
        }
        if let Some(acc) = accumulated
            && acc.len() != self.num_params()
        {
            return Err(ActdynError::invalid(
                "I_acc",
                format!("{} values", acc.len()),
                format!("2·C = {} values", self.num_params()),
            ));
        }
        Ok(())
    }

    /// The transition mean from `z` without the action term (`m(z)`, or `z + m(z)·dt` when
    /// residual) given the features `phi = Φ(z)`, and the matrix `J` of the
    /// sensitivity recursion `S ← κ·I₂⊗Φ + J·S` (`J[a][b]` multiplies row `b` of `S` into
    /// row `a`): [`FisherBugs::reference_jacobian`] gives the reference's `Ĵ`, otherwise the
    /// true `∂μ′/∂z`. One pass over the centres.
    pub fn step(&self, z: [f64; 2], phi: &[f64]) -> ([f64; 2], [[f64; 2]; 2]) {
        let grid = &self.model.grid;
        let n = grid.points_per_axis();
        let axis = grid.axis();
        let w = &self.model.weights;
        let (mut m0, mut m1) = (0.0, 0.0);
        // k[d][d′] = Σ_c Φ_c (c_{c,d} − z_d) W[c][d′].
        let mut k = [[0.0; 2]; 2];
        for i in 0..n {
            let dz0 = axis[i] - z[0];
            let (mut r0, mut r1, mut q0, mut q1) = (0.0, 0.0, 0.0, 0.0);
            let prow = &phi[i * n..(i + 1) * n];
            let wrow = &w[2 * i * n..2 * (i + 1) * n];
            for ((p, wc), g) in prow.iter().zip(wrow.chunks_exact(2)).zip(axis) {
                let pw0 = p * wc[0];
                let pw1 = p * wc[1];
                let dz1 = g - z[1];
                r0 += pw0;
                r1 += pw1;
                q0 += pw0 * dz1;
                q1 += pw1 * dz1;
            }
            m0 += r0;
            m1 += r1;
            k[0][0] += dz0 * r0;
            k[0][1] += dz0 * r1;
            k[1][0] += q0;
            k[1][1] += q1;
        }
        let dt = self.model.dt;
        let m = [m0, m1];
        let next = if self.model.residual { [z[0] + m[0] * dt, z[1] + m[1] * dt] } else { m };
        let j = if self.bugs.reference_jacobian {
            [[1.0 + k[0][0], 1.0 + k[0][1]], [1.0 + k[1][0], 1.0 + k[1][1]]]
        } else {
            let g2 = 2.0 * grid.gamma();
            // ∂m_{d′}/∂z_d = 2γ k[d][d′].
            let jm = [[g2 * k[0][0], g2 * k[1][0]], [g2 * k[0][1], g2 * k[1][1]]];
            if self.model.residual {
                [[1.0 + dt * jm[0][0], dt * jm[0][1]], [dt * jm[1][0], 1.0 + dt * jm[1][1]]]
            } else {
                jm
            }
        };
        (next, j)
    }

    /// Scale κ of the direct term `κ·I₂⊗Φ`.
    fn direct_scale(&self) -> f64 {
        if self.model.residual && !self.bugs.reference_jacobian { self.model.dt } else { 1.0 }
    }

    /// The planned information `I^plan` of one action sequence `x` (`H × 2`) from `z0`, into
    /// `scratch.info` (length `2C`). `observe(k, z_k, S_k, G_k)` is called at every point
    /// that contributes (`S_k` row-major `2 × 2C`).
    pub fn plan_information(
        &self,
        z0: [f64; 2],
        x: &[f64],
        scratch: &mut FisherScratch,
        mut observe: impl FnMut(usize, [f64; 2], &[f64], [f64; 2]),
    ) {
        let c = self.model.num_centres();
        let p = 2 * c;
        let h = x.len() / 2;
        let FisherScratch { phi, s, info } = scratch;
        debug_assert!(phi.len() == c && s.len() == 2 * p && info.len() == p);
        info.fill(0.0);
        let kappa = self.direct_scale();
        let mut z = z0;
        let off = self.bugs.off_by_one;
        if off {
            self.model.grid.features(z, phi);
            s.fill(0.0);
            s[..c].copy_from_slice(phi);
            s[p + c..].copy_from_slice(phi);
            let g = self.decoder.projector_diag(z);
            let (s0, s1) = s.split_at(p);
            for ((i, a), b) in info.iter_mut().zip(s0).zip(s1) {
                *i += g[0] * a * a + g[1] * b * b;
            }
            observe(0, z, s, g);
        } else {
            s.fill(0.0);
        }
        for t in 0..h {
            if off && t + 1 == h {
                break; // the reference never uses z_H
            }
            if !(off && t == 0) {
                self.model.grid.features(z, phi);
            }
            let (mean, j) = self.step(z, phi);
            let dt = self.model.dt;
            z = [mean[0] + x[2 * t] * dt, mean[1] + x[2 * t + 1] * dt];
            let g = self.decoder.projector_diag(z);
            let (s0, s1) = s.split_at_mut(p);
            // Block d′ = 0 (the direct term enters row 0), then block d′ = 1 (row 1).
            update_block(&mut s0[..c], &mut s1[..c], &mut info[..c], phi, kappa, 0.0, j, g);
            update_block(&mut s0[c..], &mut s1[c..], &mut info[c..], phi, 0.0, kappa, j, g);
            observe(t + 1, z, s, g);
        }
    }

    /// The Fisher information of one observed point `b`: `Φ_c(b)²·G_dd` at `d·C + c`.
    pub fn point_information(&self, b: [f64; 2], phi: &mut [f64], out: &mut [f64]) {
        let c = self.model.num_centres();
        self.model.grid.features(b, phi);
        let g = self.decoder.projector_diag(b);
        for (d, block) in out.chunks_exact_mut(c).enumerate() {
            for (o, f) in block.iter_mut().zip(phi.iter()) {
                *o = f * f * g[d];
            }
        }
    }

    /// The cost of one information vector `info` (`I^plan`) given the accumulated one.
    pub fn objective(&self, which: Optimality, info: &[f64], accumulated: Option<&[f64]>) -> f64 {
        let floor = self.floor;
        let total = |i: usize| {
            let v = info[i] + accumulated.map_or(0.0, |a| self.discount * a[i]);
            v.max(floor)
        };
        match which {
            Optimality::A => (0..info.len()).map(|i| 1.0 / total(i)).sum(),
            Optimality::D => -(0..info.len()).map(|i| total(i).ln_1p()).sum::<f64>(),
        }
    }

    /// Fresh scratch for [`FisherMetric::plan_information`].
    pub fn scratch(&self) -> FisherScratch {
        let c = self.model.num_centres();
        FisherScratch { phi: vec![0.0; c], s: vec![0.0; 4 * c], info: vec![0.0; 2 * c] }
    }
}

/// `S ← J·S + direct` on one `C`-block of both rows, and `info += G₀S₀² + G₁S₁²`, in one pass.
#[allow(clippy::too_many_arguments)]
#[inline]
fn update_block(
    s0: &mut [f64],
    s1: &mut [f64],
    info: &mut [f64],
    phi: &[f64],
    k0: f64,
    k1: f64,
    j: [[f64; 2]; 2],
    g: [f64; 2],
) {
    for (((a, b), i), f) in s0.iter_mut().zip(s1.iter_mut()).zip(info.iter_mut()).zip(phi) {
        let (x, y) = (*a, *b);
        let na = j[0][0] * x + j[0][1] * y + k0 * f;
        let nb = j[1][0] * x + j[1][1] * y + k1 * f;
        *a = na;
        *b = nb;
        *i += g[0] * na * na + g[1] * nb * nb;
    }
}

/// Per-thread buffers of the information recursion.
#[derive(Clone, Debug, Default)]
pub struct FisherScratch {
    /// `Φ` of the current point (`C`).
    pub phi: Vec<f64>,
    /// `S` row-major `2 × 2C`.
    pub s: Vec<f64>,
    /// `I^plan` (`2C`).
    pub info: Vec<f64>,
}

/// The accumulated information `I^acc ← FIM_point(b) + discount·I^acc` (the first update
/// sets it). Serialisable for checkpoints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AccumulatedFisher {
    /// `I^acc` (`2C`; empty before the first update).
    pub values: Vec<f64>,
    /// Updates so far.
    pub updates: u64,
    #[serde(skip)]
    phi: Vec<f64>,
    #[serde(skip)]
    point: Vec<f64>,
}

impl AccumulatedFisher {
    /// `I^acc`, or `None` before the first update.
    pub fn get(&self) -> Option<&[f64]> {
        (self.updates > 0).then_some(&self.values[..])
    }

    /// Adds the information of the observed belief `b`.
    pub fn update(&mut self, metric: &FisherMetric<'_>, b: [f64; 2]) {
        let c = metric.model.num_centres();
        self.phi.resize(c, 0.0);
        self.point.resize(2 * c, 0.0);
        metric.point_information(b, &mut self.phi, &mut self.point);
        if self.updates == 0 || self.values.len() != 2 * c {
            self.values.clear();
            self.values.extend_from_slice(&self.point);
        } else {
            for (v, p) in self.values.iter_mut().zip(&self.point) {
                *v = p + metric.discount * *v;
            }
        }
        self.updates += 1;
    }
}

fn check_shape(horizon: usize, action_dim: usize) -> Result<(), Invalid> {
    if action_dim != 2 {
        return Err(Invalid::new("action_dim", action_dim, "2 (the latent dimension)"));
    }
    if horizon == 0 {
        return Err(Invalid::new("horizon", horizon, "at least 1"));
    }
    Ok(())
}

/// A- or D-optimality of the planned information from a belief, as a batched cost.
#[derive(Clone, Debug)]
pub struct FisherCost<'a> {
    metric: FisherMetric<'a>,
    which: Optimality,
    belief: [f64; 2],
    accumulated: Option<&'a [f64]>,
}

impl<'a> FisherCost<'a> {
    /// The cost of sequences from `belief` with the accumulated information `accumulated`
    /// (`None` before the first update).
    pub fn new(
        metric: FisherMetric<'a>,
        which: Optimality,
        belief: [f64; 2],
        accumulated: Option<&'a [f64]>,
    ) -> Result<Self, ActdynError> {
        metric.validate(accumulated)?;
        if !(belief[0].is_finite() && belief[1].is_finite()) {
            return Err(ActdynError::invalid("belief", format!("{belief:?}"), "finite values"));
        }
        Ok(FisherCost { metric, which, belief, accumulated })
    }
}

impl TrajectoryCost for FisherCost<'_> {
    fn validate(&self, horizon: usize, action_dim: usize) -> Result<(), Invalid> {
        check_shape(horizon, action_dim)
    }

    fn cost(&self, x: &[f64], horizon: usize, _action_dim: usize, out: &mut [f64]) {
        let c = self.metric.model.num_centres();
        out.par_iter_mut().zip(x.par_chunks_exact(2 * horizon)).with_min_len(8).for_each_init(
            || {
                let spare = SPARE.with_borrow_mut(Vec::pop).filter(|s| s.phi.len() == c);
                Spare(spare.unwrap_or_else(|| self.metric.scratch()))
            },
            |scr, (o, row)| {
                self.metric.plan_information(self.belief, row, &mut scr.0, |_, _, _, _| {});
                *o = self.metric.objective(self.which, &scr.0.info, self.accumulated);
            },
        );
    }
}

thread_local! {
    /// Scratch of the planner's finished splits on this thread, for the next ones to reuse
    /// (a warm planner call allocates nothing).
    static SPARE: std::cell::RefCell<Vec<FisherScratch>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A split's scratch, handed back to [`SPARE`] when the split ends.
struct Spare(FisherScratch);

impl Drop for Spare {
    fn drop(&mut self) {
        let s = std::mem::take(&mut self.0);
        let _ = SPARE.try_with(|p| p.borrow_mut().push(s));
    }
}

/// `Σ_t ‖u_t‖²`.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActionCost;

impl TrajectoryCost for ActionCost {
    fn cost(&self, x: &[f64], horizon: usize, action_dim: usize, out: &mut [f64]) {
        for (o, row) in out.iter_mut().zip(x.chunks_exact(horizon * action_dim)) {
            *o = row.iter().map(|v| v * v).sum();
        }
    }
}

/// The reference's `GoalDistanceMetric` (`actdyn/metrics/reward.py` at `ceeba42`): the sum
/// of the Euclidean distances `‖z_t − goal‖` along the mean rollout from the belief.
#[derive(Clone, Debug)]
pub struct GoalCost<'a> {
    /// The dynamics.
    pub model: &'a RbfDynamics,
    /// Start of every rollout.
    pub belief: [f64; 2],
    /// The target latent state.
    pub goal: [f64; 2],
    /// Which states count. True: the reference's `z_0 … z_{H−1}` (its `MpcPolicy.simulate`
    /// logs `simulated_paths[:, :-1]` as `model_state`, so the belief counts for every
    /// candidate alike and the last action never counts; the `faithful` profile). False:
    /// `z_1 … z_H`, the states the actions reach (the `fixed` profile).
    pub reference: bool,
}

impl TrajectoryCost for GoalCost<'_> {
    fn validate(&self, horizon: usize, action_dim: usize) -> Result<(), Invalid> {
        check_shape(horizon, action_dim)
    }

    fn cost(&self, x: &[f64], horizon: usize, _action_dim: usize, out: &mut [f64]) {
        let c = self.model.num_centres();
        let dist =
            |z: [f64; 2]| ((z[0] - self.goal[0]).powi(2) + (z[1] - self.goal[1]).powi(2)).sqrt();
        out.par_iter_mut().zip(x.par_chunks_exact(2 * horizon)).with_min_len(8).for_each_init(
            || vec![0.0; c],
            |phi, (o, row)| {
                let mut z = self.belief;
                let mut total = 0.0;
                for u in row.chunks_exact(2) {
                    if self.reference {
                        total += dist(z);
                    }
                    self.model.grid.features(z, phi);
                    z = self.model.transition(z, phi, [u[0], u[1]]);
                    if !self.reference {
                        total += dist(z);
                    }
                }
                *o = total;
            },
        );
    }
}

/// Ensemble disagreement: `−Σ_{t=1}^{H} Σ_d var_m(z^m_{t,d})`, the unbiased variance across
/// members `m` of their mean rollouts from the belief (negative, so that minimising seeks
/// disagreement). All members must share one grid.
#[derive(Clone, Debug)]
pub struct EnsembleDisagreementCost<'a> {
    members: &'a [RbfDynamics],
    belief: [f64; 2],
}

impl<'a> EnsembleDisagreementCost<'a> {
    /// The cost over `members` (at least 2, one grid) from `belief`.
    pub fn new(members: &'a [RbfDynamics], belief: [f64; 2]) -> Result<Self, ActdynError> {
        if members.len() < 2 {
            return Err(ActdynError::invalid("ensemble_size", members.len(), "at least 2"));
        }
        if let Some(k) = members.iter().position(|m| m.grid != members[0].grid) {
            return Err(ActdynError::invalid(
                "ensemble.grid",
                format!("member {k} differs from member 0"),
                "one grid shared by every member",
            ));
        }
        Ok(EnsembleDisagreementCost { members, belief })
    }
}

impl TrajectoryCost for EnsembleDisagreementCost<'_> {
    fn validate(&self, horizon: usize, action_dim: usize) -> Result<(), Invalid> {
        check_shape(horizon, action_dim)
    }

    fn cost(&self, x: &[f64], horizon: usize, _action_dim: usize, out: &mut [f64]) {
        let grid: &RbfGrid = &self.members[0].grid;
        let k = self.members.len();
        out.par_iter_mut().zip(x.par_chunks_exact(2 * horizon)).with_min_len(8).for_each_init(
            || (vec![0.0; grid.num_centres()], vec![[0.0; 2]; k]),
            |(phi, zs), (o, row)| {
                zs.iter_mut().for_each(|z| *z = self.belief);
                let mut total = 0.0;
                for u in row.chunks_exact(2) {
                    for (m, z) in self.members.iter().zip(zs.iter_mut()) {
                        grid.features(*z, phi);
                        *z = m.transition(*z, phi, [u[0], u[1]]);
                    }
                    for d in 0..2 {
                        let mean = zs.iter().map(|z| z[d]).sum::<f64>() / k as f64;
                        let ss: f64 = zs.iter().map(|z| (z[d] - mean).powi(2)).sum();
                        total += ss / (k - 1) as f64;
                    }
                }
                *o = -total;
            },
        );
    }
}

/// `Σ_k w_k·cost_k` over several costs.
pub struct WeightedCost<'a> {
    terms: Vec<(f64, &'a dyn TrajectoryCost)>,
    scratch: Mutex<Vec<f64>>,
}

impl std::fmt::Debug for WeightedCost<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let w: Vec<f64> = self.terms.iter().map(|t| t.0).collect();
        f.debug_struct("WeightedCost").field("weights", &w).finish()
    }
}

impl<'a> WeightedCost<'a> {
    /// The weighted sum of `terms` (finite weights, at least one term).
    pub fn new(terms: Vec<(f64, &'a dyn TrajectoryCost)>) -> Result<Self, ActdynError> {
        if terms.is_empty() {
            return Err(ActdynError::invalid("costs", "none", "at least one weighted cost"));
        }
        if let Some((w, _)) = terms.iter().find(|(w, _)| !w.is_finite()) {
            return Err(ActdynError::invalid("cost_weight", w, "a finite number"));
        }
        Ok(WeightedCost { terms, scratch: Mutex::new(Vec::new()) })
    }
}

impl TrajectoryCost for WeightedCost<'_> {
    fn validate(&self, horizon: usize, action_dim: usize) -> Result<(), Invalid> {
        self.terms.iter().try_for_each(|(_, c)| c.validate(horizon, action_dim))
    }

    fn cost(&self, x: &[f64], horizon: usize, action_dim: usize, out: &mut [f64]) {
        let mut buf = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        buf.resize(out.len(), 0.0);
        out.fill(0.0);
        for (w, c) in &self.terms {
            c.cost(x, horizon, action_dim, &mut buf);
            for (o, v) in out.iter_mut().zip(buf.iter()) {
                *o += w * v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One block step by hand: `S ← J·S + κ ⊗ Φ`, then `info += g₀ S₀² + g₁ S₁²` per centre.
    #[test]
    fn a_block_update_applies_the_jacobian_and_adds_the_weighted_squares() {
        let (mut s0, mut s1, mut info) = (vec![1.0, 2.0], vec![3.0, 4.0], vec![0.5, 0.0]);
        let j = [[1.0, 2.0], [0.0, -1.0]];
        update_block(&mut s0, &mut s1, &mut info, &[1.0, 0.5], 0.5, -1.0, j, [2.0, 3.0]);
        // Centre 0: (1 + 6 + 0.5, -3 - 1) = (7.5, -4); centre 1: (2 + 8 + 0.25, -4 - 0.5).
        assert_eq!((s0, s1), (vec![7.5, 10.25], vec![-4.0, -4.5]));
        assert_eq!(info, vec![0.5 + 2.0 * 56.25 + 3.0 * 16.0, 2.0 * 105.0625 + 3.0 * 20.25]);
    }

    /// A- and D-optimality of planned plus discounted accumulated information, each value
    /// floored; the metric's settings and an accumulated vector of the wrong length are
    /// refused by name.
    #[test]
    fn objectives_add_discounted_accumulated_information_above_the_floor() {
        let grid = RbfGrid::new(2, 1.0, 1.0, 1.0).unwrap();
        let c = grid.num_centres();
        let model = RbfDynamics::new(grid, vec![0.0; 2 * c], 0.1, true).unwrap();
        let decoder = LogLinearDecoder::new(vec![1.0, 0.0], vec![0.0]).unwrap();
        let m = FisherMetric::new(&model, &decoder, FisherBugs::default());
        let info: Vec<f64> = (0..2 * c).map(|i| i as f64).collect();
        let acc: Vec<f64> = (0..2 * c).map(|i| 1.0 + i as f64).collect();
        let total = |i: usize| (info[i] + 0.99 * acc[i]).max(1e-12);
        let a: f64 = (0..2 * c).map(|i| 1.0 / total(i)).sum();
        let d: f64 = -(0..2 * c).map(|i| total(i).ln_1p()).sum::<f64>();
        assert!((m.objective(Optimality::A, &info, Some(&acc)) - a).abs() < 1e-12);
        assert!((m.objective(Optimality::D, &info, Some(&acc)) - d).abs() < 1e-12);
        // Zero information is floored, not divided by.
        assert_eq!(m.objective(Optimality::A, &[0.0], None), 1e12);
        m.validate(Some(&acc)).unwrap();
        let e = m.validate(Some(&acc[1..])).unwrap_err().to_string();
        assert!(e.contains("I_acc"), "{e}");
        let e = FisherMetric { discount: f64::NAN, ..m.clone() }.validate(None).unwrap_err();
        assert!(e.to_string().contains("discount = NaN"), "{e}");
    }

    /// The goal distance sums unsquared distances over the reference's states (`z_0 …
    /// z_{H−1}`) or over the states the actions reach (`z_1 … z_H`).
    #[test]
    fn goal_distance_sums_the_distances_of_the_chosen_states() {
        let grid = RbfGrid::new(2, 1.0, 1.0, 1.0).unwrap();
        let c = grid.num_centres();
        let w: Vec<f64> = (0..2 * c).map(|i| 0.1 * i as f64 - 0.2).collect();
        let model = RbfDynamics::new(grid, w, 0.1, true).unwrap();
        let (belief, goal) = ([0.2, -0.1], [1.0, 0.5]);
        let actions = [0.5, -0.3, 1.0, 0.2, -0.4, 0.8];
        let mut zs = vec![belief];
        let mut phi = vec![0.0; c];
        for u in actions.chunks_exact(2) {
            let z = *zs.last().unwrap();
            model.grid.features(z, &mut phi);
            zs.push(model.transition(z, &phi, [u[0], u[1]]));
        }
        let d = |z: &[f64; 2]| ((z[0] - goal[0]).powi(2) + (z[1] - goal[1]).powi(2)).sqrt();
        for (reference, states) in [(true, &zs[..3]), (false, &zs[1..])] {
            let cost = GoalCost { model: &model, belief, goal, reference };
            let mut out = [0.0];
            cost.cost(&actions, 3, 2, &mut out);
            let want: f64 = states.iter().map(d).sum();
            assert!((out[0] - want).abs() < 1e-12, "{reference}: {} vs {want}", out[0]);
        }
    }

    /// A weighted cost is the weighted sum of its terms; no term or a non-finite weight is
    /// refused, and shapes other than 2-D actions over at least one step too.
    #[test]
    fn weighted_costs_sum_their_terms_and_refuse_bad_weights_and_shapes() {
        let x = [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 1.0, 1.0];
        let mut plain = [0.0; 2];
        ActionCost.cost(&x, 2, 2, &mut plain);
        assert_eq!(plain, [30.0, 2.0]);
        let w = WeightedCost::new(vec![(2.0, &ActionCost), (-0.5, &ActionCost)]).unwrap();
        let mut out = [0.0; 2];
        w.cost(&x, 2, 2, &mut out);
        assert_eq!(out, [45.0, 3.0]);
        assert!(WeightedCost::new(vec![]).unwrap_err().to_string().contains("costs"));
        let e = WeightedCost::new(vec![(f64::NAN, &ActionCost)]).unwrap_err().to_string();
        assert!(e.contains("cost_weight = NaN"), "{e}");
        assert!(check_shape(3, 1).unwrap_err().to_string().contains("action_dim = 1"));
        assert!(check_shape(0, 2).unwrap_err().to_string().contains("horizon = 0"));
    }
}
