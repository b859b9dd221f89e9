use thiserror::Error;

/// Errors from `kestrel-nn`.
#[derive(Debug, Error)]
pub enum NnError {
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
    /// A gradient, loss or parameter is NaN or infinite; nothing was updated.
    #[error("non-finite {what}: {value}")]
    NonFinite {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A checkpoint file is malformed or does not fit the model.
    #[error("{path}: {what}")]
    Format {
        /// The file.
        path: String,
        /// What is wrong, naming the tensor and the values.
        what: String,
    },
}
