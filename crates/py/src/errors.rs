//! Rust errors as Python exceptions (the CLI's messages).

use pyo3::PyErr;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};

/// A `ValueError` with the error's message (bad input: shape, range, unknown key).
pub(crate) fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A run's error as the matching Python exception: bad config or input → `ValueError`, a file
/// that does not exist → `FileNotFoundError` (as `open` raises), one that cannot be read or
/// written → `OSError`, anything else → `RuntimeError`.
pub(crate) fn run_error(e: kestrel_run::RunError) -> PyErr {
    use kestrel_run::RunError as R;
    if not_found(&e) {
        return PyFileNotFoundError::new_err(e.to_string());
    }
    match e {
        R::Io { .. } => PyOSError::new_err(e.to_string()),
        R::Failed(_) | R::Plot(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Whether a file that is not there caused `e` (its own I/O error or one down its chain of
/// sources: an ARC data folder, a map file, a config).
fn not_found(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::NotFound
        {
            return true;
        }
        cur = err.source();
    }
    false
}
