//! Whole runs from Python (`kestrel.evo.run`, `kestrel.mppi.tune`, `kestrel.allo.train`, ...):
//! the same library calls as the CLI, the same run folders, progress through a callback.

use crate::errors::{run_error, value_error};
use kestrel_run::{Launch, Outcome, RunError, Tick};
use pyo3::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// A JSON object (from Python's `json.dumps` of a dict) as a TOML table, the config layer
/// the CLI's flags are.
pub(crate) fn json_table(json: &str) -> PyResult<toml::Table> {
    let v: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| value_error(format!("config: not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(value_error("config: must be a dict"));
    }
    toml::Table::try_from(v).map_err(|e| value_error(format!("config: {e}")))
}

/// The config: `defaults` (or, resuming, the run folder's `config.toml` over them), then the
/// dict's keys, each layer checked as the CLI checks it.
fn config<T: Serialize + DeserializeOwned>(
    defaults: &T,
    json: &str,
    resume: Option<&Path>,
) -> PyResult<T> {
    let table = json_table(json)?;
    let base = match resume {
        Some(folder) => kestrel_run::load_config(
            defaults,
            Some(&folder.join("config.toml")),
            toml::Table::new(),
            &[],
        )
        .map_err(run_error)?,
        None => {
            kestrel_run::load_config(defaults, None, toml::Table::new(), &[]).map_err(run_error)?
        }
    };
    kestrel_run::load_config(&base, None, table, &[]).map_err(run_error)
}

/// Runs `run` on a pool of `threads` with the GIL released; `progress(done, total, unit,
/// status)` is called back (with the GIL) on each tick. Returns (folder, headline).
fn launch(
    py: Python<'_>,
    out_dir: PathBuf,
    argv: String,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    run: impl FnOnce(Launch<'_>) -> Result<Outcome, RunError> + Send,
) -> PyResult<(String, String)> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(n) = threads {
        if n == 0 {
            return Err(value_error("threads = 0: at least 1"));
        }
        b = b.num_threads(n);
    }
    let pool = b.build().map_err(|e| value_error(format!("threads: {e}")))?;
    let mut callback_error: Option<PyErr> = None;
    let out = py.detach(|| {
        pool.install(|| {
            let mut tick = |t: Tick<'_>| {
                let Some(cb) = &progress else { return };
                if callback_error.is_some() {
                    return;
                }
                Python::attach(|py| {
                    if let Err(e) = cb.call1(py, (t.done, t.total, t.unit, t.status)) {
                        callback_error = Some(e);
                    }
                });
            };
            run(Launch { out_dir, argv: vec!["python".into(), argv], progress: &mut tick })
        })
    });
    if let Some(e) = callback_error {
        return Err(e);
    }
    let o = out.map_err(run_error)?;
    Ok((o.dir.display().to_string(), o.headline))
}

/// `kestrel evo run`.
#[pyfunction]
#[pyo3(signature = (config_json, out_dir, threads=None, progress=None))]
pub(crate) fn evo_run(
    py: Python<'_>,
    config_json: &str,
    out_dir: PathBuf,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    let c = config(&kestrel_evo::run::EsConfig::default(), config_json, None)?;
    let argv = format!("kestrel.evo.run({config_json})");
    launch(py, out_dir, argv, threads, progress, |l| kestrel_run::es::run(c, l))
}

/// `kestrel evo qd`.
#[pyfunction]
#[pyo3(signature = (config_json, out_dir, progress=None))]
pub(crate) fn evo_qd(
    py: Python<'_>,
    config_json: &str,
    out_dir: PathBuf,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    let c = config(&kestrel_evo::run::QdConfig::default(), config_json, None)?;
    let argv = format!("kestrel.evo.qd({config_json})");
    launch(py, out_dir, argv, Some(1), progress, |l| kestrel_run::es::qd(c, l))
}

/// `kestrel mppi run`.
#[pyfunction]
#[pyo3(signature = (config_json, out_dir, threads=None, progress=None))]
pub(crate) fn mppi_run(
    py: Python<'_>,
    config_json: &str,
    out_dir: PathBuf,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    let c = crate::mppi::mppi_config(config_json)?;
    let argv = format!("kestrel.mppi.run({config_json})");
    launch(py, out_dir, argv, threads, progress, |l| kestrel_run::mppi::run(c, l))
}

/// `kestrel mppi tune`.
#[pyfunction]
#[pyo3(signature = (config_json, out_dir, threads=None, progress=None))]
pub(crate) fn mppi_tune(
    py: Python<'_>,
    config_json: &str,
    out_dir: PathBuf,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, String)> {
    let c = config(&kestrel_mppi::tune::TuneConfig::default(), config_json, None)?;
    let argv = format!("kestrel.mppi.tune({config_json})");
    launch(py, out_dir, argv, threads, progress, |l| kestrel_run::mppi::tune(c, l))
}

/// A run that can continue a run folder (`resume`): its `#[pyfunction]`.
macro_rules! resumable {
    ($(#[$doc:meta])* $name:ident, $cfg:ty, $call:literal, $run:path) => {
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (config_json, out_dir, resume=None, threads=None, progress=None))]
        pub(crate) fn $name(
            py: Python<'_>,
            config_json: &str,
            out_dir: PathBuf,
            resume: Option<PathBuf>,
            threads: Option<usize>,
            progress: Option<Py<PyAny>>,
        ) -> PyResult<(String, String)> {
            let c = config(&<$cfg>::default(), config_json, resume.as_deref())?;
            let argv = format!(concat!($call, "({})"), config_json);
            launch(py, out_dir, argv, threads, progress, |l| $run(c, resume.as_deref(), l))
        }
    };
}

resumable!(
    /// `kestrel allo train` (`resume`: a run folder to continue).
    allo_train, kestrel_agents::runs::AlloRunConfig, "kestrel.allo.train", kestrel_run::allo::train
);
resumable!(
    /// `kestrel hunt train` (`resume`: a run folder to continue).
    hunt_train, kestrel_agents::runs::HuntRunConfig, "kestrel.hunt.train", kestrel_run::hunt::train
);
resumable!(
    /// `kestrel actdyn run` (`resume`: a run folder to continue).
    actdyn_run, kestrel_actdyn::config::ActdynConfig, "kestrel.actdyn.run", kestrel_run::actdyn::run
);
