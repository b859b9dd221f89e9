//! Model predictive path integral control (MPPI).
//!
//! Papers: G. Williams et al., "Information Theoretic MPC for Model-Based Reinforcement
//! Learning", ICRA 2017 (Algorithm 2). Reference implementation: pytorch-mppi 0.9.1
//! (`MPPI.command`), whose convention is the default here (see `shared/reference/
//! mppi-es-qd.md` §2.3 for the step-by-step order this module follows).
//!
//! `num_samples` (K in Williams et al.) control sequences of `horizon` (T) steps are sampled
//! around the nominal sequence, rolled out through
//! [`Dynamics`](kestrel_dynamics::Dynamics) in parallel over samples (each sample
//! independent, so results do not depend on the thread count), weighted by
//! `exp(−(S − min S)/λ)`, and averaged into the nominal sequence.
//!
//! [`icem`] adds the improved cross-entropy method over whole action sequences with pink
//! noise, for costs that are not sums of per-step costs ([`TrajectoryCost`]).

pub mod batched;
pub mod bench;
mod controller;
pub mod icem;
mod kmppi;
mod lanes;
mod mppi;
mod params;
pub mod presets;
mod rollout;
mod smppi;
mod state;
pub mod systems;
pub mod tune;

pub use controller::{Controller, Episode, episode};
pub use icem::{
    Icem, IcemIteration, IcemParams, IcemState, KeyedPink, NoiseSource, PinkNoise, TrajectoryCost,
};
pub use kmppi::{Kmppi, KmppiParams, KmppiState};
pub use mppi::{Mppi, Phase};
pub use params::{ConventionKind, MAX_M, MAX_NU, MAX_NX, MppiError, MppiParams, PrecisionKind};
pub use presets::{
    ControllerKind, ControllerVisitor, DynamicsVisitor, KmppiExtras, SmppiExtras, SystemKind,
    with_controller,
};
pub use smppi::{Smppi, SmppiParams, SmppiState};
pub use state::MppiState;
pub use systems::PendulumDynamics;
