//! Rust errors as Python exceptions (the CLI's messages).

use pyo3::PyErr;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};

/// A `ValueError` with the error's message (bad input: shape, range, unknown key).
pub(crate) fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A run's error as the matching Python exception: bad config or input → `ValueError`, a file
/// that cannot be read or written → `OSError`, anything else → `RuntimeError`.
pub(crate) fn run_error(e: kestrel_run::RunError) -> PyErr {
    use kestrel_run::RunError as R;
    match e {
        R::Io { .. } => PyOSError::new_err(e.to_string()),
        R::Failed(_) | R::Plot(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}
