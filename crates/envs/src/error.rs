use thiserror::Error;

/// Errors from `kestrel-envs` (construction and loading; stepping never fails).
#[derive(Debug, Error)]
pub enum EnvError {
    /// A parameter is out of range.
    #[error("invalid {field} = {value}: {accepted}")]
    Invalid {
        /// The parameter.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        accepted: &'static str,
    },
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
