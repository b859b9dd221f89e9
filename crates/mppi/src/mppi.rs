use crate::controller::Controller;
use kestrel_core::FromInvalid;
use kestrel_core::Key;
pub use kestrel_dynamics::Dynamics;
use rayon::prelude::*;
use thiserror::Error;

/// Largest state size (rollouts keep states on the stack).
pub const MAX_NX: usize = kestrel_dynamics::MAX_NX;
/// Largest control size.
pub const MAX_NU: usize = kestrel_dynamics::MAX_NU;
/// Most rollouts per sample (`rollout_samples`; their states are on the stack).
pub const MAX_M: usize = 16;

/// Errors when building a controller.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum MppiError {
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
}

fn invalid(field: &'static str, value: impl ToString, accepted: &'static str) -> MppiError {
    MppiError::invalid(field, value.to_string(), accepted)
}

/// Every runtime knob of MPPI (what an autotuner may change), pytorch-mppi's defaults.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct MppiParams {
    /// Sampled control sequences (K).
    pub num_samples: usize,
    /// Steps per sequence (T).
    pub horizon: usize,
    /// Temperature λ.
    pub lambda: f64,
    /// Noise covariance Σ, row-major `nu × nu` (symmetric positive definite).
    pub noise_sigma: Vec<f64>,
    /// Noise mean μ.
    pub noise_mu: Vec<f64>,
    /// Lower control bound per dimension (−∞ for none).
    pub u_min: Vec<f64>,
    /// Upper control bound per dimension (+∞ for none).
    pub u_max: Vec<f64>,
    /// Appended when the nominal sequence shifts.
    pub u_init: Vec<f64>,
    /// Controls are multiplied by this before dynamics and costs (the returned one is not).
    pub u_scale: f64,
    /// Leading controls returned by `command`.
    pub u_per_command: usize,
    /// Force sample 0 to be the zero sequence.
    pub sample_null_action: bool,
    /// Use |ε| in the control cost.
    pub noise_abs_cost: bool,
    /// Rollouts per sample (pytorch-mppi's `rollout_samples`, M): each sample's controls are
    /// rolled out through every member of [`Dynamics::step_member`]; its cost is the mean over
    /// members plus `rollout_var_cost · Σ_t rollout_var_discount^t · var_m(c_t)` (unbiased
    /// variance of the running cost across members). 1 to [`MAX_M`]; above 1 needs the
    /// pytorch-mppi convention.
    pub rollout_samples: usize,
    /// Weight of the across-member variance of the running cost.
    pub rollout_var_cost: f64,
    /// Per-step discount of that variance.
    pub rollout_var_discount: f64,
    /// Whose conventions `command` follows (MPPI, and SMPPI/KMPPI through their `mppi` field;
    /// their own rows are documented on [`crate::Smppi`] and [`crate::Kmppi`]).
    pub convention: Convention,
    /// Arithmetic of sampling, rollouts and weights ([`Precision`]; MPPI only, SMPPI and KMPPI
    /// run in f64).
    #[serde(default)]
    pub precision: Precision,
}

/// The arithmetic MPPI's `command` runs in.
///
/// | | `F64` (default) | `F32` |
/// |---|---|---|
/// | sampling, rollout, costs | f64, [`Dynamics::step_batch`] over blocks of 8 samples | f32, [`Dynamics::step_batch_f32`] over blocks of 32 samples, one SIMD lane per sample |
/// | `sin`, `cos`, `exp` | `std` | `kestrel_core::simd` polynomials (max error there) |
/// | weights | f64 | f32 `exp`, normalised in f64 |
/// | keyed normals (`command`) | sample-major ([`Controller::command`]'s definition) | block-major: block `b`'s `T × nu × 32` normals from `key.fold_in(b)` |
/// | golden tests | every one (pytorch-mppi, jax-mppi in x64) | none: checked against f64 within f32 error (`tests/precision.rs`) |
///
/// `F32` is jax-mppi's default arithmetic (JAX without x64); it needs `rollout_samples = 1`.
/// The nominal plan, its update and the returned controls stay f64 in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Precision {
    /// Bit-exact f64 (what the golden tests pin).
    #[default]
    F64,
    /// f32 lanes (vectorised; jax-mppi's float32).
    F32,
}

/// The two peers' MPPI conventions (`shared/reference/mppi-es-qd.md` §4).
///
/// | aspect | `PytorchMppi` (default) | `JaxMppi` |
/// |---|---|---|
/// | running cost on | `x_{t+1}` (after the step) | `x_t` (before, so `x_0` counts) |
/// | terminal cost | `φ(x_T)` | `φ(x_T)` (jax-mppi also passes `u_{T−1}`; Kestrel's `terminal_cost` takes the state only) |
/// | control/noise cost | `λ Σ_t U_tᵀ Σ⁻¹ ε_t`, post-clamp `ε` (`\|ε\|` with `noise_abs_cost`) | `0.5 Σ_t ε_tᵀ Σ⁻¹ ε_t`, pre-clamp `ε`, no `λ` |
/// | weights | `exp(−(S − min S)/λ) / η` | softmax of the same (identical) |
/// | nominal update | `U + Σ ω ε`, not clipped | `U + Σ ω ε`, clipped to `[u_min, u_max] / u_scale` |
/// | shift | before optimising, by 1 | after optimising, by `u_per_command` |
/// | initial `U` | a random `N(μ, Σ)` draw (Kestrel: `u_init`; `reset_random` for the draw) | zeros (`u_init`) |
/// | null-action sample | zero action | zero noise (the nominal `U`) |
/// | bounds | clamp `U + ε` before scaling | clamp `(U + ε) · u_scale` |
/// | returned action | `U[0]`, unscaled | `clip(U[0] · u_scale)` |
/// | stochastic rollouts (M > 1) | variance cost (Kestrel: `rollout_samples`) | none (Kestrel: rejected by `validate`) |
/// | specific action sampler | yes | no (Kestrel: neither yet) |
/// | parallel envs | `MPPI_Batched` (Kestrel: [`Mppi::command_batch`]) | user `vmap` |
/// | exposes costs/weights | yes | no (Kestrel: always, in `MppiState`) |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Convention {
    /// pytorch-mppi 0.9.1.
    #[default]
    PytorchMppi,
    /// jax-mppi 0.3.0.
    JaxMppi,
}

impl MppiParams {
    /// pytorch-mppi defaults for `nu` controls with noise covariance `sigma²·I`.
    pub fn new(nu: usize, sigma: f64) -> Self {
        let mut s = vec![0.0; nu * nu];
        (0..nu).for_each(|i| s[i * nu + i] = sigma * sigma);
        MppiParams {
            num_samples: 100,
            horizon: 15,
            lambda: 1.0,
            noise_sigma: s,
            noise_mu: vec![0.0; nu],
            u_min: vec![f64::NEG_INFINITY; nu],
            u_max: vec![f64::INFINITY; nu],
            u_init: vec![0.0; nu],
            u_scale: 1.0,
            u_per_command: 1,
            sample_null_action: false,
            noise_abs_cost: false,
            rollout_samples: 1,
            rollout_var_cost: 0.0,
            rollout_var_discount: 0.95,
            convention: Convention::PytorchMppi,
            precision: Precision::F64,
        }
    }
}

/// Nominal sequence and reusable buffers.
#[derive(Clone, Debug, Default)]
pub struct MppiState {
    /// Nominal controls, row-major `horizon × nu`.
    pub u: Vec<f64>,
    /// Total cost of each sample in the last `command`.
    pub costs: Vec<f64>,
    /// Normalised weights ω of the last `command`.
    pub weights: Vec<f64>,
    /// Effective (post-clamp) noise of the last `command`, `K × T × nu`.
    pub noise: Vec<f64>,
    normals: Vec<f64>,
    /// Scaled, clamped controls of every sample, `K × T × nu` (scratch reused across commands).
    controls: Vec<f64>,
    /// Scratch of the f32 mode (normals, noise, costs, partial updates; see `lanes.rs`).
    pub(crate) lanes: crate::lanes::Scratch,
}

/// An MPPI controller over dynamics `D`.
pub struct Mppi<D: Dynamics> {
    dynamics: D,
}

impl<D: Dynamics> Mppi<D> {
    /// A controller for `dynamics`.
    pub fn new(dynamics: D) -> Self {
        Mppi { dynamics }
    }

    /// The dynamics.
    pub fn dynamics(&self) -> &D {
        &self.dynamics
    }

    /// Checks params against the dynamics (sizes, λ > 0, Σ positive definite).
    pub fn validate(&self, p: &MppiParams) -> Result<(), MppiError> {
        let (nx, nu) = (self.dynamics.nx(), self.dynamics.nu());
        if nx == 0 || nx > MAX_NX || nu == 0 || nu > MAX_NU {
            return Err(invalid("nx/nu", format!("{nx}/{nu}"), "1..=32 states and 1..=8 controls"));
        }
        if p.num_samples == 0 || p.horizon == 0 {
            return Err(invalid(
                "num_samples/horizon",
                format!("{}/{}", p.num_samples, p.horizon),
                "at least 1 each",
            ));
        }
        // Normals, noise and controls of every sample: three K × T × nu f64 buffers.
        let cells = p.num_samples as u128
            * p.horizon as u128
            * nu as u128
            * p.rollout_samples.max(1) as u128;
        kestrel_core::check_bytes("num_samples", p.num_samples, cells, 24)?;
        if !(p.lambda.is_finite() && p.lambda > 0.0) {
            return Err(invalid("lambda", p.lambda, "finite and > 0"));
        }
        for (f, v, n) in [
            ("noise_sigma", &p.noise_sigma, nu * nu),
            ("noise_mu", &p.noise_mu, nu),
            ("u_min", &p.u_min, nu),
            ("u_max", &p.u_max, nu),
            ("u_init", &p.u_init, nu),
        ] {
            if v.len() != n {
                return Err(invalid(
                    f,
                    format!("{} values", v.len()),
                    "nu (nu × nu for noise_sigma) values",
                ));
            }
        }
        if cholesky(&p.noise_sigma, nu).is_none() {
            return Err(invalid(
                "noise_sigma",
                format!("{:?}", p.noise_sigma),
                "a symmetric positive definite matrix",
            ));
        }
        if let Some(i) =
            (0..nu).find(|&i| p.u_min[i].is_nan() || p.u_max[i].is_nan() || p.u_min[i] > p.u_max[i])
        {
            return Err(invalid(
                "u_min/u_max",
                format!("dimension {i}: [{}, {}]", p.u_min[i], p.u_max[i]),
                "u_min <= u_max",
            ));
        }
        if p.u_per_command == 0 || p.u_per_command > p.horizon {
            return Err(invalid("u_per_command", p.u_per_command, "1 to horizon"));
        }
        validate_rollouts(p)?;
        if p.precision == Precision::F32 {
            // What f32 arithmetic must represent: λ as a normal f32, Σ without overflow.
            if !(1e-30..=1e30).contains(&p.lambda) {
                return Err(invalid("lambda", p.lambda, "1e-30 to 1e30 with precision f32"));
            }
            if let Some(v) = p.noise_sigma.iter().find(|v| v.abs() > 1e30) {
                return Err(invalid("noise_sigma", v, "entries within ±1e30 with precision f32"));
            }
        }
        if p.rollout_samples > 1 && p.precision == Precision::F32 {
            return Err(invalid(
                "rollout_samples",
                p.rollout_samples,
                "1 with precision f32 (stochastic rollouts run in f64)",
            ));
        }
        if p.rollout_samples > 1 && p.convention == Convention::JaxMppi {
            return Err(invalid(
                "rollout_samples",
                p.rollout_samples,
                "1 under the jax-mppi convention (it has no stochastic rollouts)",
            ));
        }
        Ok(())
    }

    /// A fresh state with the nominal sequence `u_init` repeated (pytorch-mppi draws it from
    /// the noise instead; use [`Mppi::reset_random`] for that).
    pub fn init(&self, p: &MppiParams) -> MppiState {
        let (k, t, nu) = (p.num_samples, p.horizon, self.dynamics.nu());
        MppiState {
            u: p.u_init.repeat(t),
            costs: vec![0.0; k],
            weights: vec![0.0; k],
            noise: vec![0.0; k * t * nu],
            normals: Vec::new(),
            controls: Vec::new(),
            lanes: Default::default(),
        }
    }

    /// Nominal sequence drawn from `N(μ, Σ)` (pytorch-mppi's `U_init=None` and `reset()`).
    pub fn reset_random(&self, key: Key, p: &MppiParams, s: &mut MppiState) {
        let nu = self.dynamics.nu();
        let l = cholesky(&p.noise_sigma, nu).expect("validated noise_sigma");
        let mut rng = key.rng();
        for row in s.u.chunks_exact_mut(nu) {
            let mut z = [0.0; MAX_NU];
            z[..nu].iter_mut().for_each(|v| *v = rng.standard_normal());
            for i in 0..nu {
                row[i] = p.noise_mu[i] + (0..=i).map(|j| l[i * nu + j] * z[j]).sum::<f64>();
            }
        }
    }

    /// Batched form (pytorch-mppi's `MPPI_Batched`): one command for each of N environments,
    /// all sharing one draw of standard normals (as pytorch-mppi shares one `K × T × nu` noise
    /// tensor) with per-environment weights. `states` holds N states, `x0s` N × nx rows, `out`
    /// N × u_per_command × nu. Environments run in parallel; env `i` gets exactly what a single
    /// `command_with_normals` with the same normals would give it.
    pub fn command_batch(
        &self,
        key: Key,
        p: &MppiParams,
        states: &mut [MppiState],
        x0s: &[f64],
        out: &mut [f64],
    ) {
        let (nx, nu) = (self.dynamics.nx(), self.dynamics.nu());
        let n = states.len();
        assert_eq!(x0s.len(), n * nx, "Mppi::command_batch: states length");
        let per_out = p.u_per_command * nu;
        assert_eq!(out.len(), n * per_out, "Mppi::command_batch: output length");
        let mut z = Vec::new();
        draw_normals(key, p.num_samples, p.horizon * nu, &mut z);
        states.par_iter_mut().zip(x0s.par_chunks(nx)).zip(out.par_chunks_mut(per_out)).for_each(
            |((s, x0), o)| {
                self.command_with_normals(p, s, x0, &z, o, true);
            },
        );
    }
}

/// Samples per chunk of [`draw_normals`].
const NORMAL_CHUNK: usize = 8;

/// Resizes `z` to `k × per` (sample-major) and fills it with standard normals: the rows of
/// samples `8c..8c + 8` (fewer in the last chunk) are one [`kestrel_core::fill_normal_f32`]
/// draw from `key.fold_in(c)` (the one vectorised sampler; the same values on any thread
/// count and CPU). Shared by MPPI, SMPPI and KMPPI.
pub(crate) fn draw_normals(key: Key, k: usize, per: usize, z: &mut Vec<f64>) {
    z.resize(k * per, 0.0);
    let chunk = NORMAL_CHUNK * per.max(1);
    // Split only in tasks of ~4k normals: small K (as in tuning, where many commands already
    // run in parallel) stays on one thread.
    let min = (4096 / chunk).max(1);
    z.par_chunks_mut(chunk).enumerate().with_min_len(min).for_each(|(c, rows)| {
        kestrel_core::fill_normal_f32(key.fold_in(c as u64), rows);
    });
}

/// Checks the stochastic-rollout parameters (shared by MPPI, SMPPI and KMPPI).
pub(crate) fn validate_rollouts(p: &MppiParams) -> Result<(), MppiError> {
    if p.rollout_samples == 0 || p.rollout_samples > MAX_M {
        return Err(invalid("rollout_samples", p.rollout_samples, "1 to 16"));
    }
    if !p.rollout_var_cost.is_finite() {
        return Err(invalid("rollout_var_cost", p.rollout_var_cost, "a finite number"));
    }
    if !p.rollout_var_discount.is_finite() {
        return Err(invalid("rollout_var_discount", p.rollout_var_discount, "a finite number"));
    }
    Ok(())
}

/// Cost of rolling `acts` (`T × nu`, unscaled) out from `x0` with pytorch-mppi's convention:
/// controls scaled by `u_scale`, running cost on the post-transition state, terminal cost on
/// the final state, `rollout_samples` members. No allocation (states and control on the stack).
pub(crate) fn rollout_cost<D: Dynamics>(d: &D, x0: &[f64], acts: &[f64], p: &MppiParams) -> f64 {
    let nu = d.nu();
    rollout_cost_by(d, x0, acts.len() / nu, p, |tt, us| {
        for (u, v) in us.iter_mut().zip(&acts[tt * nu..(tt + 1) * nu]) {
            *u = p.u_scale * v;
        }
    })
}

/// [`rollout_cost`] with the scaled control of step `tt` written by `act(tt, us)` (called once
/// per step, in order). With `M = rollout_samples > 1` (pytorch-mppi's `_compute_rollout_costs`
/// for M > 1): the mean over members of (Σ_t c + terminal) plus
/// `rollout_var_cost · Σ_t rollout_var_discount^t · var_m(c_t)`, unbiased variance.
pub(crate) fn rollout_cost_by<D: Dynamics>(
    d: &D,
    x0: &[f64],
    t: usize,
    p: &MppiParams,
    mut act: impl FnMut(usize, &mut [f64]),
) -> f64 {
    let (nx, nu, m) = (d.nx(), d.nu(), p.rollout_samples);
    let mut us = [0.0f64; MAX_NU];
    if m <= 1 {
        let (mut xa, mut na) = ([0.0f64; MAX_NX], [0.0f64; MAX_NX]);
        let (mut x, mut next) = (&mut xa[..nx], &mut na[..nx]);
        x.copy_from_slice(x0);
        let mut total = 0.0;
        for tt in 0..t {
            act(tt, &mut us[..nu]);
            d.step(x, &us[..nu], tt, next);
            // Swap the buffers (a 16-byte copy here is a libc memmove call).
            std::mem::swap(&mut x, &mut next);
            total += d.running_cost(x, &us[..nu], tt);
        }
        return total + d.terminal_cost(x);
    }
    let mut xs = [[0.0f64; MAX_NX]; MAX_M];
    let mut next = [0.0f64; MAX_NX];
    let (mut sums, mut c) = ([0.0f64; MAX_M], [0.0f64; MAX_M]);
    xs[..m].iter_mut().for_each(|x| x[..nx].copy_from_slice(x0));
    let (mut var_total, mut disc) = (0.0, 1.0);
    for tt in 0..t {
        act(tt, &mut us[..nu]);
        for j in 0..m {
            d.step_member(&xs[j][..nx], &us[..nu], tt, j, &mut next[..nx]);
            xs[j][..nx].copy_from_slice(&next[..nx]);
            c[j] = d.running_cost(&xs[j][..nx], &us[..nu], tt);
            sums[j] += c[j];
        }
        let mean = c[..m].iter().sum::<f64>() / m as f64;
        let var = c[..m].iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (m - 1) as f64;
        var_total += var * disc;
        disc *= p.rollout_var_discount;
    }
    let mean = (0..m).map(|j| sums[j] + d.terminal_cost(&xs[j][..nx])).sum::<f64>() / m as f64;
    mean + var_total * p.rollout_var_cost
}

/// The control cost of one sample before its factor: pytorch-mppi `Σ_t U_tᵀ Σ⁻¹ ε_t`
/// (`|ε|` with `noise_abs_cost`), jax-mppi `Σ_t ε_tᵀ Σ⁻¹ ε_t` (`|ε|ᵀ|Σ⁻¹||ε|` with
/// `noise_abs_cost`). `e` and `u_nom` are `T × nu`.
#[inline]
fn control_cost(e: &[f64], u_nom: &[f64], sinv: &[f64], nu: usize, jax: bool, abs: bool) -> f64 {
    let mut ctrl = 0.0;
    if nu == 1 {
        // One control: a dot product (same terms, same order as the general loop).
        let s = sinv[0];
        for (ei, ui) in e.iter().zip(u_nom) {
            ctrl += match (jax, abs) {
                (true, true) => ei.abs() * s.abs() * ei.abs(),
                (true, false) => ei * s * ei,
                (false, true) => ui * s * ei.abs(),
                (false, false) => ui * s * ei,
            };
        }
        return ctrl;
    }
    for (et, ut) in e.chunks(nu).zip(u_nom.chunks(nu)) {
        for i in 0..nu {
            for j in 0..nu {
                let ej = et[j];
                ctrl += match (jax, abs) {
                    (true, true) => et[i].abs() * sinv[i * nu + j].abs() * ej.abs(),
                    (true, false) => et[i] * sinv[i * nu + j] * ej,
                    (false, true) => ut[i] * sinv[i * nu + j] * ej.abs(),
                    (false, false) => ut[i] * sinv[i * nu + j] * ej,
                };
            }
        }
    }
    ctrl
}

/// Samples rolled out together by [`rollout_block`].
pub(crate) const BLOCK: usize = 8;

/// Rolls out `out.len() ≤ BLOCK` samples from `x0` through [`Dynamics::step_batch`] (states
/// in structure of arrays, one lane per sample) and writes each one's running + terminal cost
/// (`M = 1`); `controls` holds their scaled controls (`sample × step × nu`). `cost_before`:
/// jax-mppi's running cost on the state before each step; otherwise pytorch-mppi's, on the
/// state after. Per sample the arithmetic is that of [`rollout_cost_by`] / [`rollout_cost_jax`].
pub(crate) fn rollout_block<D: Dynamics>(
    d: &D,
    x0: &[f64],
    t: usize,
    cost_before: bool,
    out: &mut [f64],
    controls: &[f64],
) {
    let (nx, nu, nb) = (d.nx(), d.nu(), out.len());
    let mut xa = [0.0f64; MAX_NX * BLOCK];
    let mut xb = [0.0f64; MAX_NX * BLOCK];
    let mut us = [0.0f64; MAX_NU * BLOCK];
    for i in 0..nx {
        xa[i * nb..(i + 1) * nb].fill(x0[i]);
    }
    out.fill(0.0);
    for tt in 0..t {
        // States alternate between the two arrays (no copies).
        let (cur, next) = if tt.is_multiple_of(2) { (&xa, &mut xb) } else { (&xb, &mut xa) };
        for b in 0..nb {
            let u = &controls[(b * t + tt) * nu..(b * t + tt + 1) * nu];
            (0..nu).for_each(|i| us[i * nb + b] = u[i]);
        }
        let (cur, next, u) = (&cur[..nx * nb], &mut next[..nx * nb], &us[..nu * nb]);
        if cost_before {
            d.running_cost_batch(cur, u, tt, out, nb);
        }
        d.step_batch(cur, u, tt, next, nb);
        if !cost_before {
            d.running_cost_batch(next, u, tt, out, nb);
        }
    }
    let fin = if t.is_multiple_of(2) { &xa } else { &xb };
    d.terminal_cost_batch(&fin[..nx * nb], out, nb);
}

/// jax-mppi's rollout: the running cost is charged on the state *before* each step (so `x_0`
/// counts), the terminal cost on `x_T`; the control of step `tt` is written by `act(tt, us)`
/// (called once per step, in order). No allocation.
pub(crate) fn rollout_cost_jax<D: Dynamics>(
    d: &D,
    x0: &[f64],
    t: usize,
    mut act: impl FnMut(usize, &mut [f64]),
) -> f64 {
    let (nx, nu) = (d.nx(), d.nu());
    let (mut xa, mut na) = ([0.0f64; MAX_NX], [0.0f64; MAX_NX]);
    let (mut x, mut next) = (&mut xa[..nx], &mut na[..nx]);
    x.copy_from_slice(x0);
    let mut us = [0.0f64; MAX_NU];
    let mut total = 0.0;
    for tt in 0..t {
        act(tt, &mut us[..nu]);
        total += d.running_cost(x, &us[..nu], tt);
        d.step(x, &us[..nu], tt, next);
        std::mem::swap(&mut x, &mut next);
    }
    total + d.terminal_cost(x)
}

/// Normalised weights `exp(−(S − min S)/λ)` (non-finite costs weigh 0; if every cost is
/// infinite no sample is informative and all weights are 0).
pub(crate) fn weights(costs: &[f64], lambda: f64, w: &mut [f64]) {
    let beta = costs.iter().cloned().fold(f64::INFINITY, f64::min);
    for (wk, c) in w.iter_mut().zip(costs) {
        *wk = if beta.is_finite() && c.is_finite() { (-(c - beta) / lambda).exp() } else { 0.0 };
    }
    let eta: f64 = w.iter().sum();
    if eta > 0.0 {
        w.iter_mut().for_each(|x| *x /= eta);
    }
}

/// Lower Cholesky factor of a row-major SPD matrix (None if not positive definite).
pub(crate) fn cholesky(a: &[f64], n: usize) -> Option<[f64; MAX_NU * MAX_NU]> {
    if n > MAX_NU || a.len() < n * n {
        return None;
    }
    let mut l = [0.0; MAX_NU * MAX_NU];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            if i == j {
                let d = a[i * n + i] - s;
                if !(d > 0.0 && d.is_finite())
                    || (a[i * n + j] - a[j * n + i]).abs() > 1e-12 * a[i * n + j].abs().max(1.0)
                {
                    return None;
                }
                l[i * n + i] = d.sqrt();
            } else {
                l[i * n + j] = (a[i * n + j] - s) / l[j * n + j];
            }
        }
    }
    Some(l)
}

/// Σ⁻¹ from its Cholesky factor.
pub(crate) fn inverse_spd(l: &[f64], n: usize) -> [f64; MAX_NU * MAX_NU] {
    // Solve L Lᵀ X = I column by column.
    let mut inv = [0.0; MAX_NU * MAX_NU];
    for c in 0..n {
        let mut y = [0.0; MAX_NU];
        for i in 0..n {
            let s: f64 = (0..i).map(|k| l[i * n + k] * y[k]).sum();
            y[i] = (if i == c { 1.0 } else { 0.0 } - s) / l[i * n + i];
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|k| l[k * n + i] * inv[k * n + c]).sum();
            inv[i * n + c] = (y[i] - s) / l[i * n + i];
        }
    }
    inv
}

impl<D: Dynamics> crate::Controller for Mppi<D> {
    type Params = MppiParams;
    type State = MppiState;
    type Dyn = D;

    fn dynamics(&self) -> &D {
        &self.dynamics
    }
    fn validate(&self, p: &MppiParams) -> Result<(), crate::MppiError> {
        Mppi::validate(self, p)
    }
    fn init(&self, p: &MppiParams) -> MppiState {
        Mppi::init(self, p)
    }
    fn base(p: &MppiParams) -> &MppiParams {
        p
    }
    fn base_mut(p: &mut MppiParams) -> &mut MppiParams {
        p
    }
    fn normals_per_sample(&self, p: &MppiParams) -> usize {
        p.horizon * self.dynamics.nu()
    }
    fn normals_buffer(s: &mut MppiState) -> &mut Vec<f64> {
        &mut s.normals
    }
    /// With [`Precision::F32`], the block-major keyed normals of [`Precision`]'s table, drawn
    /// inside the parallel blocks; with `F64`, the trait's sample-major draw.
    fn command(&self, key: Key, p: &MppiParams, s: &mut MppiState, x0: &[f64], out: &mut [f64]) {
        if p.precision == Precision::F32 {
            let n = crate::lanes::Normals::Keyed(key);
            return crate::lanes::command(&self.dynamics, p, s, x0, n, out, true);
        }
        crate::controller::keyed_command(self, key, p, s, x0, out)
    }
    /// One control step with given standard normals `z` (`K × T × nu`): shift (if asked),
    /// sample `ε = μ + L z`, clamp `U + ε`, roll out, weight, update, return `U[..u_per_command]`.
    /// On return `s.noise` holds the effective noise. [`Precision::F32`] runs `lanes.rs`.
    fn command_with_normals(
        &self,
        p: &MppiParams,
        s: &mut MppiState,
        x0: &[f64],
        z: &[f64],
        out: &mut [f64],
        shift: bool,
    ) {
        let d = &self.dynamics;
        if p.precision == Precision::F32 {
            let n = crate::lanes::Normals::Given(z);
            return crate::lanes::command(d, p, s, x0, n, out, shift);
        }
        assert_eq!(x0.len(), d.nx(), "Mppi::command: state length");
        self.command_by(p, s, z, out, shift, |ph| match ph {
            Phase::Block { ctl, costs } => {
                let t = p.horizon;
                if p.rollout_samples > 1 {
                    let nu = d.nu();
                    for (v, c) in ctl.chunks(t * nu).zip(costs.iter_mut()) {
                        *c = rollout_cost_by(d, x0, t, p, |tt, us| {
                            us.copy_from_slice(&v[tt * nu..(tt + 1) * nu])
                        });
                    }
                } else {
                    rollout_block(d, x0, t, p.convention == Convention::JaxMppi, costs, ctl);
                }
                true
            }
            Phase::All { .. } => true,
        });
    }
}

/// Where [`Mppi::command_by`] asks for rollout costs.
pub enum Phase<'a> {
    /// One block of samples (called in parallel): `ctl` holds their scaled controls
    /// (`sample × step × nu`); write each sample's rollout cost to `costs` and return `true`.
    /// Return `false` to leave the costs to the [`Phase::All`] call.
    Block {
        /// Scaled controls of the block's samples.
        ctl: &'a [f64],
        /// Their rollout costs (running + terminal), to write.
        costs: &'a mut [f64],
    },
    /// Every sample at once (after the blocks, only when a block returned `false`): `ctl` is
    /// `K × T × nu`, `costs` K.
    All {
        /// Scaled controls of every sample.
        ctl: &'a [f64],
        /// Their rollout costs, to write.
        costs: &'a mut [f64],
    },
}

impl<D: Dynamics> Mppi<D> {
    /// [`Controller::command`](crate::Controller::command) with the rollout costs from
    /// `rollout` ([`Mppi::command_by`]): the same normals from `key`, the same plan shift.
    pub fn command_keyed_by(
        &self,
        key: Key,
        p: &MppiParams,
        s: &mut MppiState,
        out: &mut [f64],
        rollout: impl Fn(Phase<'_>) -> bool + Sync,
    ) {
        let mut z = std::mem::take(&mut s.normals);
        draw_normals(key, p.num_samples, p.horizon * self.dynamics.nu(), &mut z);
        self.command_by(p, s, &z, out, true, rollout);
        s.normals = z;
    }

    /// [`Controller::command_with_normals`](crate::Controller::command_with_normals) with the
    /// rollout costs supplied by `rollout` ([`Phase`]): the built-in dynamics cost each block in
    /// parallel; dynamics outside Rust (the Python package's batched callback, called once per
    /// horizon step for all samples) take every sample at once. Shift, sampling, control costs,
    /// weights and the update are the same code either way.
    pub fn command_by(
        &self,
        p: &MppiParams,
        s: &mut MppiState,
        z: &[f64],
        out: &mut [f64],
        shift: bool,
        rollout: impl Fn(Phase<'_>) -> bool + Sync,
    ) {
        let d = &self.dynamics;
        let (k, t, nu) = (p.num_samples, p.horizon, d.nu());
        assert_eq!(z.len(), k * t * nu, "Mppi::command: normals length");
        assert_eq!(
            s.u.len(),
            t * nu,
            "Mppi::command: the state was made for another horizon (call init)"
        );
        let jax = p.convention == Convention::JaxMppi;
        if shift && !jax {
            s.u.copy_within(nu.., 0);
            s.u[(t - 1) * nu..].copy_from_slice(&p.u_init);
        }
        let l = cholesky(&p.noise_sigma, nu).expect("validated noise_sigma");
        let sigma_inv = inverse_spd(&l, nu);
        let (mut eps, mut costs, mut w, mut ctl) = (
            std::mem::take(&mut s.noise),
            std::mem::take(&mut s.costs),
            std::mem::take(&mut s.weights),
            std::mem::take(&mut s.controls),
        );
        eps.resize(k * t * nu, 0.0);
        costs.resize(k, 0.0);
        w.resize(k, 0.0);
        ctl.resize(k * t * nu, 0.0);
        let u_nom = &s.u;
        // Sample, clamp, keep the effective noise; roll out; per-sample cost. Samples are
        // independent; they are rolled out in blocks of `BLOCK` interleaved step by step (the
        // transitions of one sample form a dependency chain, those of a block overlap in the
        // CPU), with states and controls on the stack, so nothing allocates per sample. Each
        // sample's arithmetic is in the same order as one at a time.
        let min_blocks = (4096 / (t.max(1) * BLOCK)).max(1);
        let row = t * nu;
        let control_costs = |e_blk: &[f64], c_blk: &mut [f64]| {
            for (e, cost) in e_blk.chunks(row).zip(c_blk.iter_mut()) {
                let ctrl = control_cost(e, u_nom, &sigma_inv[..nu * nu], nu, jax, p.noise_abs_cost);
                let total = *cost + if jax { 0.5 * ctrl } else { p.lambda * ctrl };
                *cost = if total.is_nan() { f64::INFINITY } else { total };
            }
        };
        let all_done = eps
            .par_chunks_mut(BLOCK * row)
            .zip(ctl.par_chunks_mut(BLOCK * row))
            .zip(costs.par_chunks_mut(BLOCK))
            .enumerate()
            .with_min_len(min_blocks)
            .map(|(blk, ((e_blk, v_blk), c_blk))| {
                // Noise ε = μ + L z, the clamped control (scaled) and the effective noise, for
                // the block's samples (row-major `sample × step × control`, as z).
                let k0 = blk * BLOCK;
                let z_blk = &z[k0 * row..k0 * row + e_blk.len()];
                let nb = c_blk.len();
                for b in 0..nb {
                    let null = p.sample_null_action && k0 + b == 0;
                    for tt in 0..t {
                        let o = (b * t + tt) * nu;
                        let (e, v) = (&mut e_blk[o..o + nu], &mut v_blk[o..o + nu]);
                        let zr = &z_blk[o..o + nu];
                        let un = &u_nom[tt * nu..(tt + 1) * nu];
                        for i in 0..nu {
                            let noise =
                                p.noise_mu[i] + (0..=i).map(|j| l[i * nu + j] * zr[j]).sum::<f64>();
                            if jax {
                                // Raw ε is kept; bounds apply to the scaled action.
                                let ei = if null { 0.0 } else { noise };
                                e[i] = ei;
                                v[i] = (p.u_scale * (un[i] + ei)).max(p.u_min[i]).min(p.u_max[i]);
                            } else {
                                let vi = if null { 0.0 } else { un[i] + noise };
                                let vi = vi.max(p.u_min[i]).min(p.u_max[i]);
                                e[i] = vi - un[i];
                                v[i] = p.u_scale * vi;
                            }
                        }
                    }
                }
                let done = rollout(Phase::Block { ctl: v_blk, costs: c_blk });
                if done {
                    control_costs(e_blk, c_blk);
                }
                done
            })
            .reduce(|| true, |a, b| a && b);
        if !all_done {
            rollout(Phase::All { ctl: &ctl, costs: &mut costs });
            eps.par_chunks(BLOCK * row)
                .zip(costs.par_chunks_mut(BLOCK))
                .with_min_len(min_blocks)
                .for_each(|(e_blk, c_blk)| control_costs(e_blk, c_blk));
        }
        weights(&costs, p.lambda, &mut w);
        for kk in 0..k {
            if w[kk] != 0.0 {
                for (u, e) in s.u.iter_mut().zip(&eps[kk * t * nu..(kk + 1) * t * nu]) {
                    *u += w[kk] * e;
                }
            }
        }
        s.costs = costs;
        s.weights = w;
        s.noise = eps;
        s.controls = ctl;
        finish(p, s, out, shift);
    }
}

/// After the update: jax-mppi clips the plan, returns its scaled, clipped first controls and
/// shifts by `u_per_command`; pytorch-mppi returns the first controls as they are.
pub(crate) fn finish(p: &MppiParams, s: &mut MppiState, out: &mut [f64], shift: bool) {
    let nu = p.u_init.len();
    let t = p.horizon;
    if p.convention == Convention::JaxMppi {
        for (idx, u) in s.u.iter_mut().enumerate() {
            let i = idx % nu;
            *u = u.max(p.u_min[i] / p.u_scale).min(p.u_max[i] / p.u_scale);
        }
        for (idx, o) in out.iter_mut().enumerate() {
            let i = idx % nu;
            *o = (s.u[idx] * p.u_scale).max(p.u_min[i]).min(p.u_max[i]);
        }
        if shift {
            let k_shift = p.u_per_command.min(t) * nu;
            s.u.copy_within(k_shift.., 0);
            for r in 0..p.u_per_command.min(t) {
                s.u[(t - 1 - r) * nu..(t - r) * nu].copy_from_slice(&p.u_init);
            }
        }
    } else {
        out.copy_from_slice(&s.u[..p.u_per_command * nu]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_and_inverse() {
        let a = [4.0, 2.0, 2.0, 3.0];
        let l = cholesky(&a, 2).unwrap();
        let inv = inverse_spd(&l, 2);
        let id = [
            a[0] * inv[0] + a[1] * inv[2],
            a[0] * inv[1] + a[1] * inv[3],
            a[2] * inv[0] + a[3] * inv[2],
            a[2] * inv[1] + a[3] * inv[3],
        ];
        for (x, y) in id.iter().zip([1.0, 0.0, 0.0, 1.0]) {
            assert!((x - y).abs() < 1e-12);
        }
        assert!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2).is_none());
    }

    #[test]
    fn all_infinite_costs_leave_the_plan_alone() {
        struct Bad;
        impl Dynamics for Bad {
            fn nx(&self) -> usize {
                1
            }
            fn nu(&self) -> usize {
                1
            }
            fn step(&self, x: &[f64], _u: &[f64], _t: usize, n: &mut [f64]) {
                n[0] = x[0];
            }
            fn running_cost(&self, _x: &[f64], _u: &[f64], _t: usize) -> f64 {
                f64::NAN
            }
        }
        let m = Mppi::new(Bad);
        // Both precisions (40 samples: two f32 blocks, the second partly padding).
        for precision in [Precision::F64, Precision::F32] {
            let p =
                MppiParams { num_samples: 40, horizon: 4, precision, ..MppiParams::new(1, 1.0) };
            let mut s = m.init(&p);
            let mut out = [0.0];
            m.command(Key::new(1), &p, &mut s, &[0.0], &mut out);
            assert_eq!(out, [0.0], "{precision:?}");
            assert!(s.weights.iter().all(|&w| w == 0.0), "{precision:?}");
            assert!(s.costs.iter().all(|c| c.is_infinite()), "{precision:?}");
        }
    }
}
