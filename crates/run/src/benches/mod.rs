//! The benches: each system's hot paths timed (`kestrel <system> bench`, the
//! `tools/compare/*.py` side-by-side scripts, `BENCHMARKS.md`). Each is one [`Bench`]: a config
//! (serde, a doc comment per field, so every key is a flag of its command as a run's are) and a
//! function that times and reports, built from the algorithm crates' `bench` modules. A bench
//! writes no folder: it prints lines for a person or JSON for a script.
//!
//! Adding a bench: one file here with its `impl Bench`, one line in the CLI's commands.

use crate::RunError;
use kestrel_core::{Documented, Invalid};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod actdyn;
pub mod allo;
pub mod arc;
pub mod evo;
pub mod hunt;
pub mod mppi;
pub mod nn;

/// One bench: its config and what it times.
pub trait Bench {
    /// The command that runs it (`evo bench`).
    const COMMAND: &'static str;
    /// The config; its `Default` is the workload `BENCHMARKS.md` reports.
    type Config: Serialize + DeserializeOwned + Default + Documented;
    /// Times the workload `c` names (a bad value is refused before any timing).
    fn run(c: &Self::Config) -> Result<Report, RunError>;
}

/// What a bench measured: lines for a person, and JSON objects for a script (`--json` prints
/// them one per line).
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The human-readable table.
    pub text: Vec<String>,
    /// The same numbers as JSON objects.
    pub json: Vec<Value>,
}

impl Report {
    /// A report of one line and one object.
    pub fn one(text: String, json: Value) -> Report {
        Report { text: vec![text], json: vec![json] }
    }
}

/// A pool of `threads` workers (0: every core), at most 1,024.
pub(crate) fn pool(threads: usize) -> Result<rayon::ThreadPool, RunError> {
    let n = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    };
    if n > 1024 {
        return Err(Invalid::new("threads", n, "1 to 1024 (0: every core)").into());
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .map_err(|e| RunError::Failed(format!("cannot start {n} threads: {e}")))
}

/// Refuses a `value` of 0 or above `max`, naming `field`.
pub(crate) fn at_least_1(field: &'static str, value: u64, max: u64) -> Result<(), RunError> {
    if value == 0 || value > max {
        return Err(Invalid::new(field, value, format!("1 to {max}")).into());
    }
    Ok(())
}
