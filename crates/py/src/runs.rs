//! Whole runs from Python (`kestrel.evo.run`, `kestrel.mppi.tune`, `kestrel.allo.train`, ...):
//! the same library calls as the CLI, the same run folders, progress through a callback.

use crate::config::json_table;
use crate::errors::{run_error, value_error};
use kestrel_evo::StrategyKind;
use kestrel_run::{Flow, Launch, Outcome, RunError, Tick};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

/// The layers a Python call gives: a preset, a TOML file, then the dict's keys.
fn layers<'a>(
    preset: Option<&'a str>,
    file: Option<&'a Path>,
    table: &'a toml::Table,
) -> kestrel_run::Layers<'a> {
    kestrel_run::Layers { preset, file, table, sets: &[] }
}

/// The `kestrel` command line `args` (the program name first), run as the `kestrel` binary
/// runs it, with the GIL released: its exit status. The package's `kestrel` console script
/// (`kestrel._cli:main`) calls this, so a pip install has the CLI.
#[pyfunction]
pub(crate) fn cli_main(py: Python<'_>, args: Vec<String>) -> i32 {
    py.detach(move || kestrel_cli::main_with(args))
}

/// The run kinds: `[(name, CLI command)]`.
#[pyfunction]
pub(crate) fn run_kinds() -> Vec<(&'static str, &'static str)> {
    kestrel_run::RunKind::ALL.iter().map(|k| (k.name(), k.command())).collect()
}

/// A run kind's config (its defaults, or what `preset`, `config_file` and the dict resolve to,
/// validated) as JSON text; with `toml`, as the commented TOML `kestrel config` prints. An env
/// id (`CartPole-v1`) gives its params the same way.
#[pyfunction]
#[pyo3(signature = (kind, config_json="{}", config_file=None, preset=None, toml=false))]
pub(crate) fn run_config(
    kind: &str,
    config_json: &str,
    config_file: Option<PathBuf>,
    preset: Option<&str>,
    toml: bool,
) -> PyResult<String> {
    let table = json_table(config_json)?;
    let l = layers(preset, config_file.as_deref(), &table);
    let kind = kestrel_run::envs::Configurable::parse(kind).map_err(run_error)?;
    if toml {
        kind.config_toml(l).map_err(run_error)
    } else {
        Ok(kind.resolve(l).map_err(run_error)?.to_string())
    }
}

/// Any run kind through the registry, as the CLI runs it: the config from the defaults (or a
/// preset), `config_file`, then the dict's keys; `resume`: a run folder to continue. `tag` is
/// recorded with the call in `record.json` (the Python side finds a running run's folder by
/// it, to follow its metrics live).
#[pyfunction]
#[pyo3(signature = (kind, config_json, out_dir, config_file=None, preset=None, resume=None, threads=None, progress=None, tag=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    py: Python<'_>,
    kind: &str,
    config_json: &str,
    out_dir: PathBuf,
    config_file: Option<PathBuf>,
    preset: Option<&str>,
    resume: Option<PathBuf>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    tag: Option<String>,
) -> PyResult<(String, String)> {
    let kind = kestrel_run::RunKind::from_name(kind).map_err(run_error)?;
    let table = json_table(config_json)?;
    let l = layers(preset, config_file.as_deref(), &table);
    let argv = call(format!("kestrel.run({:?}, {config_json})", kind.name()), tag);
    launch(py, out_dir, argv, threads, progress, |lc| kind.launch(l, resume.as_deref(), lc))
        .map(folder)
}

/// The call recorded in `record.json`: `python`, the call, and its tag if any.
fn call(what: String, tag: Option<String>) -> Vec<String> {
    ["python".to_string(), what].into_iter().chain(tag).collect()
}

/// Runs `run` on a pool of `threads` on a worker thread, with the GIL released;
/// `progress(done, total, unit, status)` is called back (with the GIL) on each tick.
///
/// The calling thread waits, and every 50 ms asks Python for pending signals (Python runs
/// signal handlers on the main thread only, so a worker cannot hear Ctrl-C). The first
/// KeyboardInterrupt, or the first exception the callback raises, stops the run at its next
/// tick ([`kestrel_run::Flow`]): the folder is recorded as interrupted (resumable kinds save
/// that step's state first) and the exception is raised here.
fn launch<T: Send>(
    py: Python<'_>,
    out_dir: PathBuf,
    argv: Vec<String>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    run: impl FnOnce(Launch<'_>) -> Result<T, RunError> + Send,
) -> PyResult<T> {
    let pool = kestrel_run::pool(threads).map_err(|e| value_error(e.to_string()))?;
    let first_error: Mutex<Option<PyErr>> = Mutex::new(None);
    let keep = |e: PyErr| {
        let why = Python::attach(|py| describe(py, &e));
        if let Ok(mut g) = first_error.lock() {
            g.get_or_insert(e);
        }
        why
    };
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let (pool, first_error, keep) = (&pool, &first_error, &keep);
    let out = py.detach(move || {
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let out = pool.install(|| {
                    let mut tick = |t: Tick<'_>| -> Flow {
                        let pending = first_error
                            .lock()
                            .ok()
                            .and_then(|g| g.as_ref().map(|e| Python::attach(|py| describe(py, e))));
                        if let Some(why) = pending {
                            return Flow::Break(why);
                        }
                        // A renamed key: Python's own warning, whatever `progress` is.
                        if let Some(msg) = t.warning() {
                            let warned = Python::attach(|py| {
                                let msg = std::ffi::CString::new(msg.replace('\0', " "))
                                    .unwrap_or_default();
                                let category = py.get_type::<pyo3::exceptions::PyFutureWarning>();
                                PyErr::warn(py, &category, &msg, 1)
                            });
                            return match warned {
                                Ok(()) => Flow::Continue(()),
                                Err(e) => Flow::Break(format!("a warning raised {}", keep(e))),
                            };
                        }
                        let Some(cb) = &progress else { return Flow::Continue(()) };
                        let called =
                            Python::attach(|py| cb.call1(py, (t.done, t.total, t.unit, t.status)));
                        match called {
                            Ok(_) => Flow::Continue(()),
                            Err(e) => {
                                Flow::Break(format!("the progress callback raised {}", keep(e)))
                            }
                        }
                    };
                    run(Launch { out_dir, argv, progress: &mut tick })
                });
                let _ = done_tx.send(());
                out
            });
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                done_rx.recv_timeout(Duration::from_millis(50))
            {
                let heard = Python::attach(|py| py.check_signals());
                if let Err(e) = heard
                    && first_error.lock().is_ok_and(|g| g.is_none())
                {
                    keep(e);
                }
            }
            worker.join()
        })
    });
    let out = out.map_err(|_| PyRuntimeError::new_err("the run's thread panicked"))?;
    if let Some(e) = first_error.lock().ok().and_then(|mut g| g.take()) {
        return Err(e);
    }
    out.map_err(run_error)
}

/// `TypeName: message` of a Python exception.
fn describe(py: Python<'_>, e: &PyErr) -> String {
    let name = e.get_type(py).name().map_or_else(|_| "exception".into(), |n| n.to_string());
    let msg = e.value(py).str().map_or_else(|_| String::new(), |m| m.to_string());
    if msg.is_empty() { name } else { format!("{name}: {msg}") }
}

/// A finished run as Python gets it: (folder, headline).
fn folder(o: Outcome) -> (String, String) {
    (o.dir.display().to_string(), o.headline)
}

/// A problem evaluated by a Python callable `f(population (n, d) float32, key, first_row) ->
/// (n,) float32` (the distributed evaluator of `kestrel.dist`). Its first error stops the run
/// and is raised as it was.
struct PyEval {
    dims: usize,
    f: Py<PyAny>,
    error: FirstError,
}

impl PyEval {
    fn new(dims: usize, f: Py<PyAny>) -> Self {
        PyEval { dims, f, error: FirstError::default() }
    }
}

/// The first exception of a Python function a run calls from its workers: kept, it stops the
/// run at the next generation (`failed`) and is raised as it was once the run is over
/// (`result`).
#[derive(Default)]
struct FirstError(std::sync::Mutex<Option<PyErr>>);

impl FirstError {
    /// Whether an exception is kept (a poisoned lock counts as one).
    fn is_set(&self) -> bool {
        self.0.lock().map_or(true, |g| g.is_some())
    }

    /// Keeps `e` unless an earlier one is kept.
    fn keep(&self, e: PyErr) {
        if let Ok(mut g) = self.0.lock() {
            g.get_or_insert(e);
        }
    }

    /// The run's failure message while an exception is kept.
    fn failed(&self) -> Option<String> {
        let g = self.0.lock().ok()?;
        let e = g.as_ref()?;
        Some(format!("the evaluator failed: {}", Python::attach(|py| describe(py, e))))
    }

    /// The run's result, or the kept exception when it stopped the run.
    fn result<T>(&self, r: PyResult<T>) -> PyResult<T> {
        match self.0.lock().ok().and_then(|mut g| g.take()) {
            Some(e) => Err(e),
            None => r,
        }
    }
}

impl kestrel_evo::Problem for PyEval {
    fn num_dims(&self) -> usize {
        self.dims
    }

    fn evaluate_rows(
        &self,
        key: kestrel_core::Key,
        first_row: u64,
        population: &[f32],
        fitness: &mut [f32],
    ) {
        use numpy::{PyArray1, PyArrayMethods, PyUntypedArrayMethods};
        fitness.fill(f32::NAN);
        if self.error.is_set() {
            return;
        }
        let n = fitness.len();
        let r = Python::attach(|py| -> PyResult<()> {
            let x = PyArray1::from_slice(py, population).reshape([n, self.dims])?;
            let k = Py::new(py, crate::evo::Key { k: key })?;
            let out = self.f.call1(py, (x, k, first_row))?;
            let a = out.bind(py).cast::<PyArray1<f32>>().map_err(|_| {
                value_error(format!(
                    "evaluate: expected a float32 array of shape ({n},), got {}",
                    out.bind(py).repr().map_or("?".into(), |r| r.to_string())
                ))
            })?;
            if a.shape() != [n] {
                return Err(value_error(format!(
                    "evaluate: expected shape ({n},), got {:?}",
                    a.shape()
                )));
            }
            let ro = a.readonly();
            for (f, v) in fitness.iter_mut().zip(ro.as_array().iter()) {
                *f = *v;
            }
            Ok(())
        });
        if let Err(e) = r {
            self.error.keep(e);
        }
    }
}

/// IPOP or BIPOP CMA-ES (`kestrel_evo::restarts::cma_restarts_with`, the one restart
/// scheme `kestrel evo run --restarts` uses) on a Python objective `evaluate(population (n, d)
/// float32, key, first_row) -> (n,) float32`: restarts until `max_restarts` are spent, the
/// evaluations reach `max_evals` or the best reaches `target`. Returns `{best_solution,
/// best_fitness, evals, ended, runs: [{pop_size, sigma0, evals, best, stop, generations}]}`.
/// The objective's first exception stops the search and is raised as it was.
#[pyfunction]
#[pyo3(signature = (evaluate, x0, sigma0, kind="ipop", max_restarts=9, max_evals=None, target=None, params_json="{}", seed=0))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn cma_restarts<'py>(
    py: Python<'py>,
    evaluate: Py<PyAny>,
    x0: Vec<f32>,
    sigma0: f64,
    kind: &str,
    max_restarts: usize,
    max_evals: Option<u64>,
    target: Option<f32>,
    params_json: &str,
    seed: u64,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use kestrel_evo::restarts::{RestartConfig, RestartKind, cma_restarts_with};
    use numpy::IntoPyArray;
    let kind: RestartKind = serde_json::from_value(serde_json::Value::String(kind.into()))
        .map_err(|_| value_error(format!("restarts = {kind:?}: \"ipop\" or \"bipop\"")))?;
    if x0.is_empty() {
        return Err(value_error("x0: at least one value"));
    }
    if max_restarts > 1000 {
        return Err(value_error(format!("restarts = {max_restarts}: 0 to 1000")));
    }
    let params = crate::evo::params_of(StrategyKind::CmaEs, params_json)?;
    let cfg = RestartConfig {
        kind,
        sigma0,
        max_evals: max_evals.unwrap_or(u64::MAX),
        target: target.unwrap_or(f32::NEG_INFINITY),
        max_restarts,
        restart_box: None,
    };
    let ev = PyEval::new(x0.len(), evaluate);
    let key = kestrel_core::Key::new(seed);
    let r = py.detach(|| cma_restarts_with(&ev, &x0, &cfg, &params, key, |_| !ev.error.is_set()));
    let r = ev.error.result(r.map_err(value_error))?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("best_solution", r.best_solution.into_pyarray(py))?;
    d.set_item("best_fitness", r.best_fitness)?;
    d.set_item("evals", r.evals)?;
    d.set_item("ended", format!("{:?}", r.ended).to_lowercase())?;
    let runs = pyo3::types::PyList::empty(py);
    for s in &r.runs {
        let one = pyo3::types::PyDict::new(py);
        one.set_item("pop_size", s.pop_size)?;
        one.set_item("sigma0", s.sigma0)?;
        one.set_item("evals", s.evals)?;
        one.set_item("best", s.best)?;
        one.set_item("stop", format!("{:?}", s.stop).to_lowercase())?;
        one.set_item("generations", s.generations)?;
        runs.append(one)?;
    }
    d.set_item("runs", runs)?;
    Ok(d)
}

/// The run kinds whose populations may be evaluated elsewhere (`kestrel.dist`).
#[pyfunction]
pub(crate) fn population_kinds() -> Vec<&'static str> {
    kestrel_run::RunKind::ALL.iter().filter(|k| k.evaluated_elsewhere()).map(|k| k.name()).collect()
}

/// A run of `kind` (one of [`population_kinds`]) with every generation's fitness from
/// `evaluate` (see [`PyEval`]; `kestrel.dist`), through the registry.
#[pyfunction]
#[pyo3(signature = (kind, config_json, out_dir, evaluate, threads=None, progress=None, tag=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_evaluated(
    py: Python<'_>,
    kind: &str,
    config_json: &str,
    out_dir: PathBuf,
    evaluate: Py<PyAny>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    tag: Option<String>,
) -> PyResult<(String, String)> {
    let kind = kestrel_run::RunKind::from_name(kind).map_err(run_error)?;
    let table = json_table(config_json)?;
    let layers = kestrel_run::Layers::table(&table);
    let dims = kind.population(layers).map_err(run_error)?.problem.num_dims();
    let argv = call(format!("kestrel.dist.run({:?}, {config_json})", kind.name()), tag);
    let ev = PyEval::new(dims, evaluate);
    let r = launch(py, out_dir, argv, threads, progress, |l| {
        kind.run_evaluated(layers, &ev, &|| ev.error.failed(), l)
    });
    ev.error.result(r.map(folder))
}

/// A tuning config over plain MPPI's defaults for `nu` controls
/// ([`kestrel_mppi::MppiParams::new`]`(nu, 1)`, as `Controller.from_callbacks`) with
/// `callbacks = python`, checked.
fn python_tune_config(
    config_json: &str,
    python: kestrel_run::runs::mppi_tune::PythonSystem,
) -> PyResult<kestrel_run::runs::mppi_tune::MppiTuneConfig> {
    use kestrel_run::runs::mppi_tune::{MppiTuneConfig, validate_tune};
    let kestrel_mppi::batched::Sizes { nx, nu } = python.sizes();
    crate::mppi::check_sizes(nx, nu)?;
    let mut defaults = MppiTuneConfig { callbacks: Some(python), ..MppiTuneConfig::default() };
    defaults.run.mppi = kestrel_mppi::MppiParams::new(nu, 1.0);
    let table = json_table(config_json)?;
    let mut c: MppiTuneConfig =
        kestrel_run::load_config(&defaults, None, table, &[]).map_err(run_error)?;
    if c.callbacks.is_some_and(|s| s != python) {
        return Err(value_error(format!(
            "callbacks = {:?}: set by the call ({python:?}), not in the config",
            c.callbacks
        )));
    }
    c.callbacks = Some(python);
    validate_tune(&c).map_err(value_error)?;
    Ok(c)
}

/// The candidates' MPPI params as a Python evaluation function sees them: `{"lambda": (n,),
/// "noise_sigma": (n, nu, nu), "noise_mu": (n, nu), "horizon": (n,) int64}`; it returns the
/// `(n,)` costs (minimised). Its first error stops the run and is raised as it was.
struct PyKnobEval {
    spec: kestrel_mppi::tune::TuneSpec,
    base: kestrel_mppi::MppiParams,
    nu: usize,
    f: Py<PyAny>,
    error: FirstError,
}

impl kestrel_evo::Problem for PyKnobEval {
    fn num_dims(&self) -> usize {
        self.spec.num_dims()
    }

    fn evaluate_rows(&self, _: kestrel_core::Key, _: u64, population: &[f32], fitness: &mut [f32]) {
        use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
        fitness.fill(f32::NAN);
        if self.error.is_set() {
            return;
        }
        let (n, nu) = (fitness.len(), self.nu);
        let params: Vec<_> = population
            .chunks(self.spec.num_dims())
            .map(|x| self.spec.to_params(&self.base, nu, x))
            .collect();
        let r = Python::attach(|py| -> PyResult<()> {
            let d = pyo3::types::PyDict::new(py);
            let lambda: Vec<f64> = params.iter().map(|p| p.lambda).collect();
            let sigma: Vec<f64> = params.iter().flat_map(|p| p.noise_sigma.clone()).collect();
            let mu: Vec<f64> = params.iter().flat_map(|p| p.noise_mu.clone()).collect();
            let horizon: Vec<i64> = params.iter().map(|p| p.horizon as i64).collect();
            d.set_item("lambda", PyArray1::from_vec(py, lambda))?;
            d.set_item("noise_sigma", PyArray1::from_vec(py, sigma).reshape([n, nu, nu])?)?;
            d.set_item("noise_mu", PyArray1::from_vec(py, mu).reshape([n, nu])?)?;
            d.set_item("horizon", PyArray1::from_vec(py, horizon))?;
            let out = self.f.call1(py, (d,))?;
            let what = format!("evaluate: expected {n} costs (an array of shape ({n},))");
            let a =
                out.bind(py).cast::<PyArrayDyn<f64>>().map_err(|_| value_error(what.clone()))?;
            if a.shape() != [n] {
                return Err(value_error(format!("{what}, got shape {:?}", a.shape())));
            }
            for (f, v) in fitness.iter_mut().zip(a.readonly().as_array().iter()) {
                *f = if v.is_nan() { f32::INFINITY } else { *v as f32 };
            }
            Ok(())
        });
        if let Err(e) = r {
            self.error.keep(e);
        }
    }
}

/// `kestrel mppi tune` with each generation's costs from a Python evaluation function over the
/// candidates' MPPI params (`kestrel.mppi.tune(evaluate=..., nu=...)`, [`PyKnobEval`]): Kestrel
/// runs the strategy, the population and the folder; the function runs the episodes.
#[pyfunction]
#[pyo3(signature = (config_json, out_dir, nu, evaluate, threads=None, progress=None, tag=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn mppi_tune_evaluate(
    py: Python<'_>,
    config_json: &str,
    out_dir: PathBuf,
    nu: usize,
    evaluate: Py<PyAny>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    tag: Option<String>,
) -> PyResult<(String, String)> {
    use kestrel_run::runs::mppi_tune::{PythonSystem, run_with};
    let c = python_tune_config(config_json, PythonSystem::Evaluate { nu })?;
    let spec =
        kestrel_mppi::tune::TuneSpec::from_names(&c.knobs, nu, &c.run.mppi).map_err(value_error)?;
    let ev = PyKnobEval {
        spec,
        base: c.run.mppi.clone(),
        nu,
        f: evaluate,
        error: FirstError::default(),
    };
    let argv = call(format!("kestrel.mppi.tune({config_json}, evaluate=...)"), tag);
    let r = launch(py, out_dir, argv, threads, progress, |l| {
        run_with(c, Some(&ev), &|| ev.error.failed(), l)
    });
    ev.error.result(r.map(folder))
}

/// `kestrel mppi tune` of a system written in Python: `kestrel.mppi.tune(dynamics=...,
/// running_cost=..., nx=..., nu=...)`. The config is read over plain MPPI's defaults for `nu`
/// controls ([`kestrel_mppi::MppiParams::new`]`(nu, 1)`, as `Controller.from_callbacks`), with
/// `callbacks = {nx, nu}`; every generation's episodes (candidates × starts × samples) call the
/// callbacks once per step ([`kestrel_mppi::batched`]). A callback's exception stops the run and
/// is raised as it was.
#[pyfunction]
#[pyo3(signature = (config_json, out_dir, nx, nu, dynamics, running_cost, terminal_cost=None, threads=None, progress=None, tag=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn mppi_tune_callbacks(
    py: Python<'_>,
    config_json: &str,
    out_dir: PathBuf,
    nx: usize,
    nu: usize,
    dynamics: Py<PyAny>,
    running_cost: Py<PyAny>,
    terminal_cost: Option<Py<PyAny>>,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
    tag: Option<String>,
) -> PyResult<(String, String)> {
    use kestrel_mppi::batched::BatchedTuneProblem;
    use kestrel_run::runs::mppi_tune::{PythonSystem, run_with};
    let c = python_tune_config(config_json, PythonSystem::Dynamics { nx, nu })?;
    let spec =
        kestrel_mppi::tune::TuneSpec::from_names(&c.knobs, nu, &c.run.mppi).map_err(value_error)?;
    let batch = crate::mppi::PyBatch::new(nx, nu, dynamics, running_cost, terminal_cost);
    let problem =
        BatchedTuneProblem::new(batch, spec, c.run.mppi.clone(), c.start_states(), c.run.steps)
            .map_err(value_error)?;
    let argv = call(format!("kestrel.mppi.tune({config_json}, dynamics=...)"), tag);
    use kestrel_mppi::batched::BatchedError;
    let failed = || {
        problem.with_error(|e| match e {
            BatchedError::Dynamics(e) => Python::attach(|py| describe(py, e)),
            BatchedError::Invalid(e) => e.to_string(),
        })
    };
    let r =
        launch(py, out_dir, argv, threads, progress, |l| run_with(c, Some(&problem), &failed, l));
    match problem.take_error() {
        Some(BatchedError::Dynamics(e)) => Err(e),
        Some(BatchedError::Invalid(e)) => Err(value_error(e)),
        None => r.map(folder),
    }
}

/// A sweep spec: TOML text, or a JSON object (from a Python dict) turned into TOML; every
/// cell's config checked with `check` (the driver's plan), not otherwise (a planned sweep).
fn sweep_of(
    spec: &str,
    source: &str,
    out_dir: &Path,
    check: bool,
) -> PyResult<kestrel_run::sweep::Sweep> {
    use kestrel_run::sweep::{Sweep, SweepSpec};
    let text = if spec.trim_start().starts_with('{') {
        let s: SweepSpec =
            serde_json::from_str(spec).map_err(|e| value_error(format!("{source}: {e}")))?;
        kestrel_run::to_toml(&s).map_err(run_error)?
    } else {
        spec.to_string()
    };
    let s = if check {
        Sweep::plan(&text, source, out_dir)
    } else {
        Sweep::open(&text, source, out_dir)
    };
    s.map_err(run_error)
}

/// Plans a sweep (every cell's config checked; nothing written): `(folder, kind, [cell id],
/// spec as TOML)`.
#[pyfunction]
pub(crate) fn sweep_plan(
    spec: &str,
    source: &str,
    out_dir: PathBuf,
) -> PyResult<(String, String, Vec<String>, String)> {
    let s = sweep_of(spec, source, &out_dir, true)?;
    let ids = s.cells.iter().map(|c| c.id.clone()).collect();
    Ok((s.dir.display().to_string(), s.spec.kind.name().into(), ids, s.spec_text.clone()))
}

/// Creates the sweep folder (or checks a restart's spec is the folder's).
#[pyfunction]
pub(crate) fn sweep_create(spec: &str, source: &str, out_dir: PathBuf) -> PyResult<()> {
    sweep_of(spec, source, &out_dir, false)?.create().map_err(run_error)
}

/// `[(cell id, "new" | "partial" | "done")]`.
#[pyfunction]
pub(crate) fn sweep_status(
    spec: &str,
    source: &str,
    out_dir: PathBuf,
) -> PyResult<Vec<(String, &'static str)>> {
    use kestrel_run::sweep::CellStatus;
    let s = sweep_of(spec, source, &out_dir, false)?;
    s.cells
        .iter()
        .map(|c| {
            let st = match s.status(c).map_err(run_error)? {
                CellStatus::New => "new",
                CellStatus::Partial(_) => "partial",
                CellStatus::Done(_) => "done",
            };
            Ok((c.id.clone(), st))
        })
        .collect()
}

/// Runs one cell (skipped when finished, resumed when interrupted): `("skipped" | "ran" |
/// "resumed", run folder, headline)`.
#[pyfunction]
#[pyo3(signature = (spec, source, out_dir, cell, threads=None, progress=None))]
pub(crate) fn sweep_cell(
    py: Python<'_>,
    spec: &str,
    source: &str,
    out_dir: PathBuf,
    cell: &str,
    threads: Option<usize>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(&'static str, String, String)> {
    use kestrel_run::sweep::CellOutcome;
    let s = sweep_of(spec, source, &out_dir, false)?;
    let c = s.cell(cell).map_err(run_error)?.clone();
    let argv = call(format!("kestrel.dist.sweep({source}, cell {cell})"), None);
    let o = launch(py, PathBuf::new(), argv, threads, progress, |l| s.run_cell(&c, l))?;
    Ok(match o {
        CellOutcome::Skipped(d) => ("skipped", d.display().to_string(), String::new()),
        CellOutcome::Ran(o) => ("ran", o.dir.display().to_string(), o.headline),
        CellOutcome::Resumed(o) => ("resumed", o.dir.display().to_string(), o.headline),
    })
}

/// Writes the table and plot from the finished cells: `(markdown, json)`.
#[pyfunction]
pub(crate) fn sweep_aggregate(
    spec: &str,
    source: &str,
    out_dir: PathBuf,
) -> PyResult<(String, String)> {
    let t = sweep_of(spec, source, &out_dir, false)?.aggregate().map_err(run_error)?;
    Ok((t.markdown(), t.json().to_string()))
}
