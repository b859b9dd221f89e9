//! The error of `kestrel-replay`.

use thiserror::Error;

/// Errors from `kestrel-replay`.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ReplayError {
    /// The buffer holds no more steps.
    #[error("replay full: {len} of {capacity} steps used, episode of {episode} does not fit")]
    Full {
        /// Steps stored.
        len: usize,
        /// Capacity in steps.
        capacity: usize,
        /// Length of the rejected episode.
        episode: usize,
    },
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
}
