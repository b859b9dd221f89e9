//! Improved cross-entropy method (iCEM) over action sequences, in f64.
//!
//! Paper: C. Pinneri et al., "Sample-efficient Cross-Entropy Method for Real-time Planning",
//! CoRL 2020. The step order follows the actdyn reference's `MpcICem.get_action`
//! (`shared/reference/actdyn.md` §1.5; golden schema in `actdyn-golden/README.md` §6):
//!
//! 1. sample counts `n_0 = N`, `n_i = max(2K_e, ⌊n_{i−1}/f⌋)`;
//! 2. `X = clip(M + Σ⊙P, lo, hi)` with `P` pink noise along the time axis;
//! 3. on the last iteration `X[0] = M`; on the first, when elites exist, `⌊ρK_e⌋` shifted
//!    elites are appended, each ending in the last step of a fresh clipped pink sample;
//! 4. costs of all rows from one batched [`TrajectoryCost`] call; on later iterations the
//!    previous iteration's first `⌊ρK_e⌋` elites join the candidates with their stored costs;
//! 5. the `K_e` cheapest candidates (ascending, ties by lower index, NaN last) are the elites;
//!    the first action of the best elite seen in the call is the answer;
//! 6. `M ← (1−α)·mean(E) + α·M`, `Σ ← (1−α)·std(E) + α·Σ` (unbiased std).
//!
//! After the iterations `M` shifts left one step (last row repeated), `Σ` resets, and the
//! elites are kept for the next call. Everything that carries over is in [`IcemState`]
//! (serialisable for checkpoints); [`Icem`] holds the parameters, the pink-noise map and
//! scratch buffers.
//!
//! Noise comes from a [`NoiseSource`]: [`KeyedPink`] draws Gaussians from a [`Key`] and maps
//! them through [`PinkNoise`]; a golden test can replay recorded noise instead.

use crate::params::MppiError;
use kestrel_core::{FromInvalid, Invalid, Key};
use serde::{Deserialize, Serialize};

/// A cost over a batch of action sequences that need not be a sum of per-step costs
/// (A- and D-optimality of a Fisher information are not).
pub trait TrajectoryCost: Sync {
    /// Checks that this cost accepts sequences of `horizon` steps of `action_dim` actions
    /// (called once per planner call, before any [`TrajectoryCost::cost`]).
    fn validate(&self, horizon: usize, action_dim: usize) -> Result<(), Invalid> {
        let _ = (horizon, action_dim);
        Ok(())
    }

    /// Writes the cost of each of the `out.len()` sequences in `x` (row-major
    /// `out.len() × horizon × action_dim`) into `out`. Lower is better. Each row's cost must
    /// not depend on the other rows or on scheduling.
    fn cost(&self, x: &[f64], horizon: usize, action_dim: usize, out: &mut [f64]);
}

/// Where the planner's standardised noise comes from.
pub trait NoiseSource {
    /// Fills `out` (row-major `rows × H × action_dim`, `H = pink.horizon()`,
    /// `rows = out.len() / (H·action_dim)`) with noise for planner iteration `iteration`;
    /// `draw` is 0 for the main sample and 1 for the tails of the shifted elites.
    fn fill(
        &mut self,
        pink: &PinkNoise,
        action_dim: usize,
        iteration: usize,
        draw: usize,
        out: &mut [f64],
    );
}

/// Colored (power-law) Gaussian noise along the time axis as a fixed linear map of standard
/// normals: `y = L·g`, `L` of shape `H × 2K` with `K = ⌊H/2⌋ + 1` frequencies, `g` = the real
/// parts then the imaginary parts of the spectrum.
///
/// The construction is that of the `colorednoise` package (`powerlaw_psd_gaussian`): scale
/// `s_k = max(k/H, 1/H)^{−β/2}`; the spectrum's DC term and (for even `H`) its Nyquist term
/// are real and multiplied by √2; `y = irfft(spectrum) / σ` with
/// `σ = 2·√(Σ_{k≥1} w_k²)/H`, `w_k = s_k` except `w = s/2` at the Nyquist term for even `H`.
/// `β = 1` is pink noise.
#[derive(Clone, Debug, PartialEq)]
pub struct PinkNoise {
    horizon: usize,
    freqs: usize,
    /// `L` row-major `[H][2K]`.
    l: Vec<f64>,
}

impl PinkNoise {
    /// The map for `horizon` steps and exponent `beta` (1 = pink, 0 = white).
    pub fn new(horizon: usize, beta: f64) -> Result<Self, MppiError> {
        if horizon < 2 {
            return Err(MppiError::invalid("horizon", horizon, "at least 2 for colored noise"));
        }
        if !(beta.is_finite() && beta >= 0.0) {
            return Err(MppiError::invalid("noise_beta", beta, "a finite number ≥ 0"));
        }
        let h = horizon;
        let k_n = h / 2 + 1;
        let even = h.is_multiple_of(2);
        let hf = h as f64;
        let s: Vec<f64> =
            (0..k_n).map(|k| (k as f64 / hf).max(1.0 / hf).powf(-beta / 2.0)).collect();
        let mut sum_w2 = 0.0;
        for k in 1..k_n {
            let w = if even && k == k_n - 1 { s[k] / 2.0 } else { s[k] };
            sum_w2 += w * w;
        }
        let sigma = 2.0 * sum_w2.sqrt() / hf;
        let mut l = vec![0.0; h * 2 * k_n];
        for j in 0..h {
            for k in 0..k_n {
                let real_only = k == 0 || (even && k == k_n - 1);
                let angle = std::f64::consts::TAU * (k * j % h) as f64 / hf;
                let (re, im) = if real_only {
                    // irfft weight 1 on the self-conjugate bins, spectrum scaled by √2.
                    (std::f64::consts::SQRT_2 * s[k] * angle.cos() / hf, 0.0)
                } else {
                    (2.0 * s[k] * angle.cos() / hf, -2.0 * s[k] * angle.sin() / hf)
                };
                l[j * 2 * k_n + k] = re / sigma;
                l[j * 2 * k_n + k_n + k] = im / sigma;
            }
        }
        Ok(PinkNoise { horizon, freqs: k_n, l })
    }

    /// Steps `H`.
    pub fn horizon(&self) -> usize {
        self.horizon
    }

    /// Number of standard normals per series (`2K`, real parts then imaginary parts).
    pub fn inputs(&self) -> usize {
        2 * self.freqs
    }

    /// `L` row-major `[H][2K]`.
    pub fn matrix(&self) -> &[f64] {
        &self.l
    }

    /// `out[h·stride] = Σ_k L[h][k]·g[k]` for one series (`g.len() = 2K`).
    pub fn apply(&self, g: &[f64], out: &mut [f64], stride: usize) {
        let m = self.inputs();
        for h in 0..self.horizon {
            let row = &self.l[h * m..(h + 1) * m];
            out[h * stride] = row.iter().zip(g).map(|(a, b)| a * b).sum();
        }
    }
}

/// Pink noise from standard normals drawn from a [`Key`]: row `r` of draw `d` in iteration
/// `i` uses `key.fold_in(i).fold_in(d).fold_in(r)` (per action dimension, the `2K` real then
/// imaginary normals in order), so values do not depend on threads or batch layout. Pass a
/// fresh key per planner call (e.g. `run.fold_in(step)`).
#[derive(Clone, Copy, Debug)]
pub struct KeyedPink {
    /// The key of this planner call.
    pub key: Key,
    /// Round each noise value to f32, as the reference does (it casts its noise to float32).
    pub round_f32: bool,
}

impl NoiseSource for KeyedPink {
    fn fill(
        &mut self,
        pink: &PinkNoise,
        action_dim: usize,
        iteration: usize,
        draw: usize,
        out: &mut [f64],
    ) {
        let h = pink.horizon;
        let m = pink.inputs();
        let k = self.key.fold_in(iteration as u64).fold_in(draw as u64);
        for (r, row) in out.chunks_exact_mut(h * action_dim).enumerate() {
            let mut rng = k.fold_in(r as u64).rng();
            row.fill(0.0);
            for a in 0..action_dim {
                // y = L·g accumulated column by column: no scratch for g.
                for q in 0..m {
                    let g = rng.standard_normal();
                    for t in 0..h {
                        row[t * action_dim + a] += pink.l[t * m + q] * g;
                    }
                }
            }
            if self.round_f32 {
                for v in row.iter_mut() {
                    *v = *v as f32 as f64;
                }
            }
        }
    }
}

/// iCEM parameters (the actdyn reference's defaults with `num_elites = 10`, see
/// [`IcemParams::new`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IcemParams {
    /// Steps per sequence `H`.
    pub horizon: usize,
    /// Action dimension `A`.
    pub action_dim: usize,
    /// Samples of the first iteration `N`.
    pub num_samples: usize,
    /// Iterations per call `I`.
    pub iterations: usize,
    /// Elites kept per iteration `K_e` (2 ≤ K_e ≤ N).
    pub num_elites: usize,
    /// Weight of the old mean and std in the update (`α`, in [0, 1]).
    pub alpha: f64,
    /// Initial std as a fraction of the box half-width: `Σ_init = (hi − lo)/2 · init_std`.
    pub init_std: f64,
    /// Exponent of the colored noise (1 = pink).
    pub noise_beta: f64,
    /// Sample-count decrease factor `f` (≥ 1).
    pub factor_decrease: f64,
    /// Fraction `ρ` of the elites carried over (shifted into the next call, kept between
    /// iterations), in [0, 1].
    pub frac_elites_reused: f64,
    /// Lower bound per action dimension.
    pub action_low: Vec<f64>,
    /// Upper bound per action dimension.
    pub action_high: Vec<f64>,
}

impl IcemParams {
    /// The reference's planner for `action_dim` actions in the box `[low, high]` per
    /// dimension: H = 10, N = 32, 10 iterations, K_e = 10, α = 0.1, init_std 0.5, pink
    /// noise, f = 1.25, ρ = 0.3.
    pub fn new(action_dim: usize, low: f64, high: f64) -> Self {
        IcemParams {
            horizon: 10,
            action_dim,
            num_samples: 32,
            iterations: 10,
            num_elites: 10,
            alpha: 0.1,
            init_std: 0.5,
            noise_beta: 1.0,
            factor_decrease: 1.25,
            frac_elites_reused: 0.3,
            action_low: vec![low; action_dim],
            action_high: vec![high; action_dim],
        }
    }

    /// Samples drawn in iteration `i` (without appended elites).
    pub fn samples_at(&self, i: usize) -> usize {
        let mut n = self.num_samples;
        for _ in 0..i {
            n = (2 * self.num_elites).max((n as f64 / self.factor_decrease).floor() as usize);
        }
        n
    }

    /// Elites carried over (`⌊ρ·K_e⌋`).
    pub fn reused_elites(&self) -> usize {
        ((self.frac_elites_reused * self.num_elites as f64).floor() as usize).min(self.num_elites)
    }

    /// Checks every field; the error names the field and value.
    pub fn validate(&self) -> Result<(), MppiError> {
        let p = self;
        if !(2..=1 << 20).contains(&p.horizon) {
            return Err(MppiError::invalid("horizon", p.horizon, "an integer from 2 to 2^20"));
        }
        if !(1..=1 << 10).contains(&p.action_dim) {
            return Err(MppiError::invalid(
                "action_dim",
                p.action_dim,
                "an integer from 1 to 1024",
            ));
        }
        if !(1..=1 << 24).contains(&p.num_samples) {
            return Err(MppiError::invalid(
                "num_samples",
                p.num_samples,
                "an integer from 1 to 2^24",
            ));
        }
        if !(1..=1 << 20).contains(&p.iterations) {
            return Err(MppiError::invalid(
                "iterations",
                p.iterations,
                "an integer from 1 to 2^20",
            ));
        }
        if p.num_elites < 2 || p.num_elites > p.num_samples {
            return Err(MppiError::invalid(
                "num_elites",
                p.num_elites,
                format!("an integer from 2 (the std needs two) to num_samples = {}", p.num_samples),
            ));
        }
        if !(0.0..=1.0).contains(&p.alpha) {
            return Err(MppiError::invalid("alpha", p.alpha, "a number in [0, 1]"));
        }
        if !(p.init_std.is_finite() && p.init_std > 0.0) {
            return Err(MppiError::invalid("init_std", p.init_std, "a finite number > 0"));
        }
        if !(p.noise_beta.is_finite() && p.noise_beta >= 0.0) {
            return Err(MppiError::invalid("noise_beta", p.noise_beta, "a finite number ≥ 0"));
        }
        if !(p.factor_decrease.is_finite() && p.factor_decrease >= 1.0) {
            return Err(MppiError::invalid(
                "factor_decrease",
                p.factor_decrease,
                "a finite number ≥ 1",
            ));
        }
        if !(0.0..=1.0).contains(&p.frac_elites_reused) {
            return Err(MppiError::invalid(
                "frac_elites_reused",
                p.frac_elites_reused,
                "a number in [0, 1]",
            ));
        }
        for (field, v) in [("action_low", &p.action_low), ("action_high", &p.action_high)] {
            if v.len() != p.action_dim {
                return Err(MppiError::invalid(
                    field,
                    format!("{} values", v.len()),
                    format!("action_dim = {} values", p.action_dim),
                ));
            }
        }
        for (a, (&lo, &hi)) in p.action_low.iter().zip(&p.action_high).enumerate() {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(MppiError::invalid(
                    format!("action_low[{a}]/action_high[{a}]"),
                    format!("[{lo}, {hi}]"),
                    "finite bounds with low < high",
                ));
            }
        }
        let rows = p.num_samples.max(2 * p.num_elites) + p.num_elites;
        kestrel_core::check_bytes(
            "num_samples",
            p.num_samples,
            (rows as u128) * (p.horizon * p.action_dim) as u128,
            16,
        )?;
        Ok(())
    }
}

/// What iCEM carries from one call to the next (checkpoint this).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IcemState {
    /// Mean sequence `M`, row-major `H × A`.
    pub mean: Vec<f64>,
    /// Std sequence `Σ`, row-major `H × A`.
    pub std: Vec<f64>,
    /// Elites of the last iteration, best first, `K_e × H × A` (empty before the first call).
    pub elites: Vec<f64>,
    /// Their costs (empty before the first call).
    pub elite_costs: Vec<f64>,
}

impl IcemState {
    /// Checks the shapes against `params`.
    pub fn validate(&self, params: &IcemParams) -> Result<(), MppiError> {
        let ha = params.horizon * params.action_dim;
        for (field, v) in [("state.mean", &self.mean), ("state.std", &self.std)] {
            if v.len() != ha {
                return Err(MppiError::invalid(
                    field,
                    format!("{} values", v.len()),
                    format!("horizon·action_dim = {ha} values"),
                ));
            }
        }
        let ke = params.num_elites;
        let ok = (self.elites.is_empty() && self.elite_costs.is_empty())
            || (self.elites.len() == ke * ha && self.elite_costs.len() == ke);
        if !ok {
            return Err(MppiError::invalid(
                "state.elites",
                format!("{} values with {} costs", self.elites.len(), self.elite_costs.len()),
                format!("none, or num_elites·horizon·action_dim = {} with {ke} costs", ke * ha),
            ));
        }
        Ok(())
    }
}

/// One iteration as the planner saw it (for tests and diagnostics).
#[derive(Debug)]
pub struct IcemIteration<'a> {
    /// Iteration index.
    pub iteration: usize,
    /// Samples drawn `n_i`.
    pub num_samples: usize,
    /// Simulated rows (samples plus shifted elites), `rows × H × A`.
    pub x: &'a [f64],
    /// Their costs.
    pub costs: &'a [f64],
    /// Previous elites appended as candidates with their stored costs.
    pub kept_elites: usize,
    /// Elite indices into the candidates (the rows of `x`, then the kept elites), best first.
    pub elite_idx: &'a [usize],
    /// Elites `K_e × H × A`.
    pub elites: &'a [f64],
    /// Their costs.
    pub elite_costs: &'a [f64],
    /// Mean after this iteration's update.
    pub mean: &'a [f64],
    /// Std after this iteration's update.
    pub std: &'a [f64],
    /// Best cost seen in this call so far.
    pub best_cost: f64,
    /// First action of the best sequence seen in this call so far.
    pub best_action: &'a [f64],
}

/// The iCEM planner: parameters, the pink-noise map and scratch (allocated once).
#[derive(Clone, Debug)]
pub struct Icem {
    params: IcemParams,
    pink: PinkNoise,
    sigma_init: Vec<f64>,
    /// Candidates: simulated rows then kept elites, `rows × H × A`.
    cand: Vec<f64>,
    costs: Vec<f64>,
    noise: Vec<f64>,
    order: Vec<usize>,
    best_action: Vec<f64>,
}

impl Icem {
    /// A planner for validated `params`.
    pub fn new(params: IcemParams) -> Result<Self, MppiError> {
        params.validate()?;
        let pink = PinkNoise::new(params.horizon, params.noise_beta)?;
        let ha = params.horizon * params.action_dim;
        let max_rows = params.num_samples.max(2 * params.num_elites) + params.reused_elites();
        let sigma_init = (0..ha)
            .map(|q| {
                let a = q % params.action_dim;
                (params.action_high[a] - params.action_low[a]) / 2.0 * params.init_std
            })
            .collect();
        Ok(Icem {
            pink,
            sigma_init,
            cand: vec![0.0; max_rows * ha],
            costs: vec![0.0; max_rows],
            noise: vec![0.0; max_rows * ha],
            order: Vec::with_capacity(max_rows),
            best_action: vec![0.0; params.action_dim],
            params,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &IcemParams {
        &self.params
    }

    /// The noise map.
    pub fn pink(&self) -> &PinkNoise {
        &self.pink
    }

    /// The initial std `(hi − lo)/2 · init_std`, `H × A`.
    pub fn sigma_init(&self) -> &[f64] {
        &self.sigma_init
    }

    /// The state before the first call: `M` = box midpoint, `Σ = Σ_init`, no elites.
    pub fn init_state(&self) -> IcemState {
        let p = &self.params;
        let mean = (0..p.horizon * p.action_dim)
            .map(|q| {
                let a = q % p.action_dim;
                (p.action_low[a] + p.action_high[a]) / 2.0
            })
            .collect();
        IcemState {
            mean,
            std: self.sigma_init.clone(),
            elites: Vec::new(),
            elite_costs: Vec::new(),
        }
    }

    /// One planner call: writes the first action of the best sequence into `action`
    /// (length `A`) and returns its cost.
    pub fn plan(
        &mut self,
        state: &mut IcemState,
        noise: &mut impl NoiseSource,
        cost: &impl TrajectoryCost,
        action: &mut [f64],
    ) -> Result<f64, MppiError> {
        self.plan_traced(state, noise, cost, action, |_| {})
    }

    /// [`Icem::plan`], calling `observe` after every iteration.
    pub fn plan_traced(
        &mut self,
        state: &mut IcemState,
        noise: &mut impl NoiseSource,
        cost: &impl TrajectoryCost,
        action: &mut [f64],
        mut observe: impl FnMut(&IcemIteration<'_>),
    ) -> Result<f64, MppiError> {
        let p = &self.params;
        state.validate(p)?;
        if action.len() != p.action_dim {
            return Err(MppiError::invalid(
                "action",
                format!("{} values", action.len()),
                format!("action_dim = {} values", p.action_dim),
            ));
        }
        cost.validate(p.horizon, p.action_dim)?;
        let (h, a_dim, ke) = (p.horizon, p.action_dim, p.num_elites);
        let ha = h * a_dim;
        let reuse = p.reused_elites();
        let (lo, hi) = (&p.action_low, &p.action_high);
        let clip = |v: f64, a: usize| v.max(lo[a]).min(hi[a]);
        let mut best = f64::INFINITY;
        let mut n = p.num_samples;
        for i in 0..p.iterations {
            if i > 0 {
                n = (2 * ke).max((n as f64 / p.factor_decrease).floor() as usize);
            }
            // 1. X = clip(M + Σ⊙P).
            noise.fill(&self.pink, a_dim, i, 0, &mut self.noise[..n * ha]);
            for (row, prow) in
                self.cand[..n * ha].chunks_exact_mut(ha).zip(self.noise.chunks_exact(ha))
            {
                for q in 0..ha {
                    row[q] = clip(state.mean[q] + state.std[q] * prow[q], q % a_dim);
                }
            }
            // 2. The last iteration evaluates the mean itself.
            if i + 1 == p.iterations {
                self.cand[..ha].copy_from_slice(&state.mean);
            }
            // 3. Shifted elites from the previous call.
            let mut rows = n;
            if i == 0 && !state.elites.is_empty() && reuse > 0 {
                noise.fill(&self.pink, a_dim, i, 1, &mut self.noise[..reuse * ha]);
                for r in 0..reuse {
                    let dst = &mut self.cand[(n + r) * ha..(n + r + 1) * ha];
                    dst[..ha - a_dim].copy_from_slice(&state.elites[r * ha + a_dim..(r + 1) * ha]);
                    for a in 0..a_dim {
                        let q = ha - a_dim + a;
                        dst[q] = clip(state.mean[q] + state.std[q] * self.noise[r * ha + q], a);
                    }
                }
                rows += reuse;
            }
            // 4. Costs, then the previous iteration's best elites as extra candidates.
            cost.cost(&self.cand[..rows * ha], h, a_dim, &mut self.costs[..rows]);
            let kept = if i > 0 { reuse } else { 0 };
            let simulated = rows;
            for r in 0..kept {
                self.cand[(rows + r) * ha..(rows + r + 1) * ha]
                    .copy_from_slice(&state.elites[r * ha..(r + 1) * ha]);
                self.costs[rows + r] = state.elite_costs[r];
            }
            let total = rows + kept;
            // 5. The K_e cheapest, ascending; ties by lower index; NaN counts as +∞.
            let costs = &self.costs[..total];
            let key = |j: usize| if costs[j].is_nan() { f64::INFINITY } else { costs[j] };
            self.order.clear();
            self.order.extend(0..total);
            self.order.sort_unstable_by(|&x, &y| key(x).total_cmp(&key(y)).then(x.cmp(&y)));
            state.elites.resize(ke * ha, 0.0);
            state.elite_costs.resize(ke, 0.0);
            for (e, &j) in self.order[..ke].iter().enumerate() {
                state.elites[e * ha..(e + 1) * ha]
                    .copy_from_slice(&self.cand[j * ha..(j + 1) * ha]);
                state.elite_costs[e] = costs[j];
            }
            if state.elite_costs[0] < best {
                best = state.elite_costs[0];
                self.best_action.copy_from_slice(&state.elites[..a_dim]);
            }
            // 6. Moment update (unbiased std over the elites).
            let kf = ke as f64;
            for q in 0..ha {
                let mut mean = 0.0;
                for e in 0..ke {
                    mean += state.elites[e * ha + q];
                }
                mean /= kf;
                let mut var = 0.0;
                for e in 0..ke {
                    let d = state.elites[e * ha + q] - mean;
                    var += d * d;
                }
                let std = (var / (kf - 1.0)).sqrt();
                state.mean[q] = (1.0 - p.alpha) * mean + p.alpha * state.mean[q];
                state.std[q] = (1.0 - p.alpha) * std + p.alpha * state.std[q];
            }
            observe(&IcemIteration {
                iteration: i,
                num_samples: n,
                x: &self.cand[..simulated * ha],
                costs: &self.costs[..simulated],
                kept_elites: kept,
                elite_idx: &self.order[..ke],
                elites: &state.elites,
                elite_costs: &state.elite_costs,
                mean: &state.mean,
                std: &state.std,
                best_cost: best,
                best_action: &self.best_action,
            });
        }
        // Shift the mean left one step (last row repeated); reset the std.
        state.mean.copy_within(a_dim.., 0);
        state.mean.copy_within(ha - 2 * a_dim..ha - a_dim, ha - a_dim);
        state.std.copy_from_slice(&self.sigma_init);
        action.copy_from_slice(&self.best_action);
        Ok(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Σ‖u‖² (a cost whose optimum is the zero sequence).
    struct Energy;
    impl TrajectoryCost for Energy {
        fn cost(&self, x: &[f64], h: usize, a: usize, out: &mut [f64]) {
            for (o, row) in out.iter_mut().zip(x.chunks_exact(h * a)) {
                *o = row.iter().map(|v| v * v).sum();
            }
        }
    }

    #[test]
    fn pink_noise_variance_matches_its_normalisation() {
        // colorednoise's σ normalises the spectrum without the DC (and Nyquist) terms, so
        // the per-step variance is (2s₀² + 4Σ s_k² [+ 2s_N²]) / (4Σ s_k² [+ s_N²]), not 1.
        for (h, beta) in [(2, 1.0), (3, 1.0), (10, 1.0), (11, 1.0), (64, 1.0), (8, 0.0), (9, 2.0)] {
            let p = PinkNoise::new(h, beta).unwrap();
            let m = p.inputs();
            let s = |k: usize| (k as f64 / h as f64).max(1.0 / h as f64).powf(-beta / 2.0);
            let k_n = h / 2 + 1;
            let even = h.is_multiple_of(2);
            let interior: f64 =
                (1..k_n).filter(|&k| !(even && k == k_n - 1)).map(|k| s(k).powi(2)).sum();
            let nyq = if even { s(k_n - 1).powi(2) } else { 0.0 };
            let want = (2.0 * s(0).powi(2) + 4.0 * interior + 2.0 * nyq) / (4.0 * interior + nyq);
            for t in 0..h {
                let var: f64 = p.matrix()[t * m..(t + 1) * m].iter().map(|v| v * v).sum();
                assert!((var - want).abs() < 1e-12 * want, "H = {h}, t = {t}: {var} vs {want}");
            }
        }
    }

    #[test]
    fn schedule_and_validation() {
        let p = IcemParams::new(2, -0.1, 0.1);
        let n: Vec<usize> = (0..10).map(|i| p.samples_at(i)).collect();
        assert_eq!(n, [32, 25, 20, 20, 20, 20, 20, 20, 20, 20]);
        assert_eq!(p.reused_elites(), 3);
        let bad = IcemParams { num_elites: 100, ..p.clone() };
        let e = Icem::new(bad).unwrap_err().to_string();
        assert!(e.contains("num_elites = 100"), "{e}");
        let bad = IcemParams { action_low: vec![0.2, -0.1], ..p.clone() };
        assert!(Icem::new(bad).unwrap_err().to_string().contains("action_low[0]"));
        let bad = IcemParams { alpha: 1.5, ..p };
        assert!(Icem::new(bad).unwrap_err().to_string().contains("alpha"));
    }

    #[test]
    fn converges_toward_the_optimum_and_is_reproducible() {
        let mut icem = Icem::new(IcemParams::new(2, -1.0, 1.0)).unwrap();
        let run = |icem: &mut Icem| {
            let mut s = icem.init_state();
            s.mean.iter_mut().for_each(|m| *m = 0.8);
            let mut a = [0.0; 2];
            let mut c = 0.0;
            for call in 0..5 {
                let mut noise = KeyedPink { key: Key::new(3).fold_in(call), round_f32: false };
                c = icem.plan(&mut s, &mut noise, &Energy, &mut a).unwrap();
            }
            (a, c, s)
        };
        let (a, c, s) = run(&mut icem);
        assert!(c < 0.5 && a[0].abs() < 0.3 && a[1].abs() < 0.3, "{a:?} {c}");
        assert_eq!(run(&mut icem), (a, c, s));
        let mut bad = icem.init_state();
        bad.mean.pop();
        let e = icem.plan(
            &mut bad,
            &mut KeyedPink { key: Key::new(0), round_f32: true },
            &Energy,
            &mut [0.0; 2],
        );
        assert!(e.unwrap_err().to_string().contains("state.mean"));
    }
}
