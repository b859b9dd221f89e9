use thiserror::Error;

/// Errors from `kestrel-actdyn`.
#[derive(Debug, Error)]
pub enum ActdynError {
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
    /// From the network crate (checkpoints).
    #[error(transparent)]
    Nn(#[from] kestrel_nn::NnError),
}
