//! Rust errors as Python exceptions (the CLI's messages).

use pyo3::PyErr;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};

/// The CLI's message with the Python way named first where it names a `kestrel config`
/// command (a pip user has both; the Python call is the one at hand).
pub(crate) fn python_first(msg: String) -> String {
    msg.replace(
        "(`kestrel config <kind>` lists every key)",
        "(`kestrel.config(kind)` lists every key; on the command line, `kestrel config <kind>`)",
    )
    .replace(
        "(`kestrel config` lists both)",
        "(`kestrel.run_kinds()` and `kestrel.list_envs()` list them; on the command line, \
         `kestrel config`)",
    )
}

/// A `ValueError` with the error's message (bad input: shape, range, unknown key).
pub(crate) fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(python_first(e.to_string()))
}

/// A run's error as the matching Python exception: bad config or input → `ValueError`, a file
/// that does not exist → `FileNotFoundError` (as `open` raises), one that cannot be read or
/// written → `OSError`, anything else → `RuntimeError`.
pub(crate) fn run_error(e: kestrel_run::RunError) -> PyErr {
    use kestrel_run::RunError as R;
    let msg = python_first(e.to_string());
    if not_found(&e) {
        return PyFileNotFoundError::new_err(msg);
    }
    match e {
        R::Io { .. } => PyOSError::new_err(msg),
        R::Failed(_) | R::Plot(_) => PyRuntimeError::new_err(msg),
        _ => PyValueError::new_err(msg),
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
