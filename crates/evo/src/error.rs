use thiserror::Error;

/// Errors of `kestrel-evo`, returned when a strategy, problem or bound is built.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum EvoError {
    /// A parameter is outside what is accepted.
    #[error("invalid {field} = {value}: {accepted}")]
    Invalid {
        /// The parameter.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        accepted: &'static str,
    },
}

impl EvoError {
    pub(crate) fn invalid(
        field: &'static str,
        value: impl ToString,
        accepted: &'static str,
    ) -> Self {
        EvoError::Invalid { field, value: value.to_string(), accepted }
    }
}

/// Checks the sizes every strategy needs.
pub(crate) fn check_sizes(
    pop_size: usize,
    num_dims: usize,
    min_pop: usize,
) -> Result<(), EvoError> {
    if num_dims == 0 {
        return Err(EvoError::invalid("num_dims", num_dims, "at least 1"));
    }
    if pop_size < min_pop {
        return Err(EvoError::invalid("pop_size", pop_size, "at least 2 (4 for CMA-ES)"));
    }
    Ok(())
}
