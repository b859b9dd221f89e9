//! Learners for Kestrel.
//!
//! - [`allo`]: ALLO Laplacian representation learning on grid maps (and the GGDO baseline),
//!   with data collection over `VecEnv` and the paper's ground truth and metric
//!   ([`laplacian`]).
//! - [`asymexp`]: ALLO as `exp_alcl/allo.py` of `tarod13/asymexp` computes it (its loss,
//!   optimisers, collection rows), with its empirical ground truth in
//!   [`laplacian::empirical`].
//! - [`iqn`]: implicit quantile network agents (sorrel's iRainbow), one learner per agent.
//!
//! Parts only: the whole runs that train them (config, loop, folder) are `kestrel-run`'s
//! `runs::allo` and `runs::hunt`.

pub mod allo;
pub mod asymexp;
pub mod bench;
mod distinct;
pub mod iqn;
pub mod laplacian;

use thiserror::Error;

/// Errors from `kestrel-agents`.
#[derive(Debug, Error)]
pub enum AgentError {
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
    /// A loss or gradient is NaN or infinite; nothing was updated.
    #[error("non-finite {what}: {value}")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// From the network crate (checkpoints, optimiser).
    #[error(transparent)]
    Nn(#[from] kestrel_nn::NnError),
    /// From the replay buffer.
    #[error(transparent)]
    Replay(#[from] kestrel_replay::ReplayError),
    /// From the environments crate (maps).
    #[error(transparent)]
    Env(#[from] kestrel_envs::EnvError),
}
