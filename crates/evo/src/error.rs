use kestrel_core::FromInvalid;
use thiserror::Error;

/// Errors of `kestrel-evo`, returned when a strategy, problem or bound is built.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum EvoError {
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
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
    // A population and its sampled noise (f32 and f64), and for full-covariance strategies
    // about five n × n f64 matrices.
    kestrel_core::check_bytes(
        "pop_size × num_dims",
        format!("{pop_size} × {num_dims}"),
        pop_size as u128 * num_dims as u128,
        16,
    )?;
    kestrel_core::check_bytes("num_dims", num_dims, num_dims as u128 * num_dims as u128, 40)?;
    Ok(())
}
