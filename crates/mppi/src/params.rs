//! MPPI's knobs and their checks: [`MppiParams`] (every runtime knob, pytorch-mppi's
//! defaults), the arithmetic ([`PrecisionKind`]) and the peers' conventions ([`ConventionKind`]), the
//! crate's error, and the noise covariance's factor and inverse (through
//! [`kestrel_core::linalg`]). Every other module of the crate imports this one; it imports
//! none of them.

use kestrel_core::FromInvalid;
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

pub(crate) fn invalid(
    field: &'static str,
    value: impl ToString,
    accepted: &'static str,
) -> MppiError {
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
    ///
    /// [`Dynamics::step_member`]: kestrel_dynamics::Dynamics::step_member
    pub rollout_samples: usize,
    /// Weight of the across-member variance of the running cost.
    pub rollout_var_cost: f64,
    /// Per-step discount of that variance.
    pub rollout_var_discount: f64,
    /// Whose conventions `command` follows (MPPI, and SMPPI/KMPPI through their `mppi` field;
    /// their own rows are documented on [`crate::smppi::Smppi`] and [`crate::kmppi::Kmppi`]).
    pub convention: ConventionKind,
    /// Arithmetic of sampling, rollouts and weights ([`PrecisionKind`]; MPPI only, SMPPI and KMPPI
    /// run in f64).
    #[serde(default)]
    pub precision: PrecisionKind,
    /// Control sequences tried at every command in place of sampled ones (pytorch-mppi's
    /// `SpecificActionSampler` returning fixed sequences: a trajectory prior, "brake", "hold"):
    /// each `horizon × nu` values, row-major, taking samples 0, 1, … (after the null action
    /// when `sample_null_action`), clamped to the bounds like any sample. Plain MPPI under the
    /// pytorch-mppi convention in f64 (jax-mppi has no such sampler).
    #[serde(default)]
    pub specific_actions: Vec<Vec<f64>>,
}

/// The arithmetic MPPI's `command` runs in.
///
/// | | `F64` (default) | `F32` |
/// |---|---|---|
/// | sampling, rollout, costs | f64, [`Dynamics::step_batch`](kestrel_dynamics::Dynamics::step_batch) over blocks of 8 samples | f32, [`Dynamics::step_batch_f32`](kestrel_dynamics::Dynamics::step_batch_f32) over blocks of 32 samples, one SIMD lane per sample |
/// | `sin`, `cos`, `exp` | `std` | `kestrel_core::simd` polynomials (max error there) |
/// | weights | f64 | f32 `exp`, normalised in f64 |
/// | keyed normals (`command`) | sample-major ([`Controller::command`](crate::controller::Controller::command)'s definition) | block-major: block `b`'s `T × nu × 32` normals from `key.fold_in(b)` |
/// | golden tests | every one (pytorch-mppi, jax-mppi in x64) | none: checked against f64 within f32 error (`tests/precision.rs`) |
///
/// `F32` is jax-mppi's default arithmetic (JAX without x64); it needs `rollout_samples = 1`.
/// The nominal plan, its update and the returned controls stay f64 in both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrecisionKind {
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
/// | specific action sampler | yes (Kestrel: `specific_actions`, [`crate::mppi::Mppi::set_specific`]) | no (Kestrel: refused) |
/// | parallel envs | `MPPI_Batched` (Kestrel: [`Mppi::command_batch`](crate::mppi::Mppi::command_batch)) | user `vmap` |
/// | exposes costs/weights | yes | no (Kestrel: always, in `MppiState`) |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConventionKind {
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
            convention: ConventionKind::PytorchMppi,
            precision: PrecisionKind::F64,
            specific_actions: Vec::new(),
        }
    }
}

/// Lower Cholesky factor of the row-major `n × n` noise covariance (None if not symmetric
/// positive definite), on the stack.
pub(crate) fn cholesky(a: &[f64], n: usize) -> Option<[f64; MAX_NU * MAX_NU]> {
    let mut l = [0.0; MAX_NU * MAX_NU];
    (n <= MAX_NU && kestrel_core::linalg::cholesky(a, n, &mut l[..n * n])).then_some(l)
}

/// Σ⁻¹ from its Cholesky factor, on the stack.
pub(crate) fn inverse_spd(l: &[f64], n: usize) -> [f64; MAX_NU * MAX_NU] {
    let mut inv = [0.0; MAX_NU * MAX_NU];
    kestrel_core::linalg::inverse_spd(l, n, &mut inv[..n * n]);
    inv
}
