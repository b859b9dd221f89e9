use thiserror::Error;

/// Errors returned by `kestrel-core` at construction boundaries.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A batch or buffer had the wrong length.
    #[error("{what}: expected length {expected}, got {got}")]
    Length {
        /// Which buffer.
        what: &'static str,
        /// Length required.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// A size parameter was zero or out of range.
    #[error("invalid {field} = {value}: {accepted}")]
    Invalid {
        /// The parameter name.
        field: &'static str,
        /// The value given, rendered.
        value: String,
        /// What is accepted.
        accepted: &'static str,
    },
}
