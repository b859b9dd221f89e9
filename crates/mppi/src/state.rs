//! What an MPPI controller carries between commands: the nominal plan, the last command's
//! costs, weights and noise (exposed, as pytorch-mppi exposes them), and reused buffers of
//! both arithmetics.

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
    pub(crate) normals: Vec<f64>,
    /// Scaled, clamped controls of every sample, `K × T × nu` (scratch reused across commands).
    pub(crate) controls: Vec<f64>,
    /// The sequences the next command tries in place of samples (`rows × T × nu`, before
    /// clamping): [`crate::params::MppiParams::specific_actions`] from `init`, or what
    /// [`crate::mppi::Mppi::set_specific`] put there.
    pub(crate) specific: Vec<f64>,
    /// Scratch of the f32 mode (normals, noise, costs, partial updates; see `lanes.rs`).
    pub(crate) lanes: LaneScratch,
}

/// Reused buffers of the f32 mode.
#[derive(Clone, Debug, Default)]
pub(crate) struct LaneScratch {
    /// Standard normals, block-major (`block × step × control × lane`).
    pub(crate) z: Vec<f32>,
    /// Effective noise, same layout.
    pub(crate) eps: Vec<f32>,
    /// Total cost per lane (padding lanes +∞).
    pub(crate) cost: Vec<f32>,
    /// Normalised weights per lane.
    pub(crate) w: Vec<f32>,
    /// Each block's weighted noise sum (`block × step × control`).
    pub(crate) partial: Vec<f64>,
    /// The nominal plan in f32.
    pub(crate) unom: Vec<f32>,
}
