use thiserror::Error;

/// Errors from `kestrel-envs` (construction and loading; stepping never fails).
#[derive(Debug, Error)]
pub enum EnvError {
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A map is malformed.
    #[error("{path}: {what}")]
    Map {
        /// The file (or `builtin:NAME`).
        path: String,
        /// What is wrong, naming the line or value.
        what: String,
    },
}
