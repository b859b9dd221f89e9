//! What every module of `kestrel-run` stands on: its error ([`RunError`]), the build's commit
//! and version, the thread pool, text reads and atomic writes. It imports no other module of
//! the crate, so every module may import it.

use std::path::{Path, PathBuf};
use thiserror::Error;

/// The commit this library was built from (`unknown` outside a git checkout; `-dirty` when
/// tracked files had changes).
pub const COMMIT: &str = env!("KESTREL_COMMIT");
/// Kestrel's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Errors of `kestrel-run`: each names the file, or the config source and field.
#[derive(Debug, Error)]
pub enum RunError {
    /// A file or folder could not be read or written.
    #[error("{path}: {what}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A config (file, flag or `--set`) is malformed or has an unknown or ill-typed key.
    #[error("{source_name}: {message}")]
    Config {
        /// Where the config came from: a file path, `--set`, or `arguments`.
        source_name: String,
        /// What is wrong, naming the field and value.
        message: String,
    },
    /// A value outside what is accepted.
    #[error(transparent)]
    Invalid(#[from] kestrel_core::Invalid),
    /// A run could not go on (a drawing thread died, a resume does not match its folder, no
    /// finite result).
    #[error("{0}")]
    Failed(String),
    /// Stopped by whoever launched it ([`crate::launch::Flow`]): Ctrl-C, a failing callback.
    #[error("stopped: {0}")]
    Stopped(String),
    /// From an evolution-strategy run.
    #[error(transparent)]
    Evo(#[from] kestrel_evo::EvoError),
    /// From an MPPI run.
    #[error(transparent)]
    Mppi(#[from] kestrel_mppi::MppiError),
    /// From an ALLO or treasure-hunt run.
    #[error(transparent)]
    Agent(#[from] kestrel_agents::AgentError),
    /// From an active-dynamics run.
    #[error(transparent)]
    Actdyn(#[from] kestrel_actdyn::ActdynError),
    /// From a checkpoint set (a manifest that does not verify, a file that cannot be read).
    #[error(transparent)]
    Nn(#[from] kestrel_nn::NnError),
    /// From building an env (a map that does not load, params out of range).
    #[error(transparent)]
    Env(#[from] kestrel_envs::EnvError),
    /// From building an ARC env (a task file that does not load, params out of range).
    #[error(transparent)]
    Arc(#[from] kestrel_arc::ArcError),
    /// From the batched driver (a size that does not fit, a mask of the wrong length).
    #[error(transparent)]
    Core(#[from] kestrel_core::CoreError),
    /// From drawing or writing a plot.
    #[error(transparent)]
    Plot(#[from] kestrel_plot::PlotError),
}

impl RunError {
    pub(crate) fn io(path: &Path, what: &'static str, source: std::io::Error) -> Self {
        RunError::Io { path: path.to_path_buf(), what, source }
    }
}

/// The thread pool of a run or a bench (every front end's `threads`): that many workers, or
/// every core when absent; 0 or more than 1,024 is refused by name.
pub fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool, RunError> {
    let n = match threads {
        Some(n) if n == 0 || n > 1024 => {
            let why = "1 to 1024 (leave it out for every core)";
            return Err(kestrel_core::Invalid::new("threads", n, why).into());
        }
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .map_err(|e| RunError::Failed(format!("cannot start {n} threads: {e}")))
}

/// Reads a text file (a config, a spec, a record): an I/O error names the path; bytes that are
/// not UTF-8 are reported by their offset, never echoed.
pub fn read_text(path: &Path) -> Result<String, RunError> {
    let bytes = std::fs::read(path).map_err(|e| RunError::io(path, "cannot read", e))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        RunError::Config {
            source_name: path.display().to_string(),
            message: format!(
                "not UTF-8 text: byte {at} is 0x{:02x} (is this a binary file?)",
                e.as_bytes()[at]
            ),
        }
    })
}

/// Writes a file atomically ([`kestrel_core::write_atomic`]: a temporary file beside it,
/// fsync, rename), with the failing step and file in the error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    kestrel_core::write_atomic(path, bytes).map_err(|e| RunError::io(&e.path, e.doing, e.source))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run error of a failed write names the file and the step (the write itself is
    /// tested in `kestrel_core::write_atomic`).
    #[test]
    fn a_failed_write_names_the_file_and_the_step() {
        let p =
            std::env::temp_dir().join(format!("kestrel-run-missing-{}/a.txt", std::process::id()));
        let e = write_atomic(&p, b"x").unwrap_err().to_string();
        assert!(e.contains(&p.display().to_string()) && e.contains("cannot create"), "{e}");
    }

    #[test]
    fn the_commit_is_embedded() {
        assert!(!COMMIT.is_empty());
    }
}
