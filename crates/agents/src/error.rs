//! The error of `kestrel-agents`.

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
