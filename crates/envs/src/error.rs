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

/// Checks a physical constant or size is finite and positive (every env's params use it).
pub(crate) fn positive(field: &'static str, v: f64) -> Result<(), EnvError> {
    if v.is_finite() && v > 0.0 {
        return Ok(());
    }
    Err(kestrel_core::Invalid::new(field, v, "a finite number > 0").into())
}

/// Checks an episode limit is at least one step.
pub(crate) fn limit(steps: u32) -> Result<(), EnvError> {
    if steps == 0 {
        return Err(kestrel_core::Invalid::new("max_episode_steps", 0, "at least 1").into());
    }
    Ok(())
}
