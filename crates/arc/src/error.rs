use std::path::PathBuf;
use thiserror::Error;

/// Errors of `kestrel-arc`: every one names the file (or source), and for grid problems
/// the task, pair, row and column.
#[derive(Debug, Error)]
pub enum ArcError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not JSON, or not in any accepted ARC layout.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong and what is accepted.
        message: String,
    },
    /// A grid inside a task is malformed.
    #[error("{path}: task {task}, {pair}: {problem}")]
    Grid {
        /// The file.
        path: PathBuf,
        /// The task id.
        task: String,
        /// Which grid, e.g. `train[2].input`.
        pair: String,
        /// What is wrong, with row, column and value where they apply.
        problem: String,
    },
    /// An action in a trace or script is malformed.
    #[error("{at}: {message}")]
    Trace {
        /// Where: file, line, action.
        at: String,
        /// What is wrong, naming the field and value.
        message: String,
    },
    /// A task does not fit the environment's canvas.
    #[error("task {task}: {what} is {h}x{w}, larger than the {s}x{s} canvas")]
    TooLarge {
        /// The task id.
        task: String,
        /// Which grid.
        what: String,
        /// Rows.
        h: usize,
        /// Columns.
        w: usize,
        /// Canvas size.
        s: usize,
    },
    /// A value outside what is accepted (the shared validation error).
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
    /// From the batched driver (a mask or buffer of the wrong length, a bad size).
    #[error(transparent)]
    Core(#[from] kestrel_core::CoreError),
}
