//! Ask/tell optimisers, keys and problems for Python (`kestrel.evo`).

use crate::errors::value_error;
use kestrel_evo::Scales;
use kestrel_evo::problem::Problem;
use kestrel_evo::termination::{StopOptions, Termination};
use kestrel_evo::{Optimizer, StrategyKind};
use numpy::ndarray::Array2;
use numpy::{
    IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A key of Kestrel's key tree (`Key(seed).fold_in(data)`), as in Rust and the CLI.
#[pyclass(module = "kestrel._kestrel", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) k: kestrel_core::Key,
}

/// `value` as a u64, or a ValueError naming `name`, the value and the range (an int out of
/// range is the user's value, not an `OverflowError`), or a TypeError for a non-integer.
fn u64_arg(name: &str, value: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(v) = value.extract::<u64>() {
        return Ok(v);
    }
    let shown = value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
    if value.is_instance_of::<pyo3::types::PyInt>() {
        Err(value_error(format!("{name} = {shown}: an integer in 0 ..= 2**64 - 1")))
    } else {
        Err(pyo3::exceptions::PyTypeError::new_err(format!("{name} = {shown}: an integer")))
    }
}

#[pymethods]
impl Key {
    /// The root key of seed `seed` (an integer in `0 ..= 2**64 - 1`).
    #[new]
    fn new(seed: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Key { k: kestrel_core::Key::new(u64_arg("seed", seed)?) })
    }
    /// The child key for `data` (an integer in `0 ..= 2**64 - 1`).
    fn fold_in(&self, data: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Key { k: self.k.fold_in(u64_arg("data", data)?) })
    }
    /// The raw 64-bit state (for pickling).
    #[getter]
    fn raw(&self) -> u64 {
        self.k.raw()
    }
    /// A key from [`Key::raw`].
    #[staticmethod]
    fn from_raw(raw: u64) -> Self {
        Key { k: kestrel_core::Key::from_raw(raw) }
    }
    fn __repr__(&self) -> String {
        format!("Key.from_raw({})", self.k.raw())
    }
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (u64,))> {
        let ctor = slf.getattr("from_raw")?;
        Ok((ctor, (slf.get().k.raw(),)))
    }
}

/// The shapes check every ask/tell input passes before reaching Rust's optimisers.
fn check_population<'a>(
    x: &'a PyReadonlyArray2<'_, f32>,
    pop: usize,
    dims: usize,
) -> PyResult<std::borrow::Cow<'a, [f32]>> {
    let s = x.shape();
    if s != [pop, dims] {
        return Err(value_error(format!(
            "population: expected shape ({pop}, {dims}), got ({}, {})",
            s[0], s[1]
        )));
    }
    Ok(match x.as_slice() {
        Ok(v) => std::borrow::Cow::Borrowed(v),
        Err(_) => std::borrow::Cow::Owned(x.as_array().iter().copied().collect()),
    })
}

/// One strategy with its params and state; the Python classes `kestrel.evo.CMAES`, `SNES`,
/// ... wrap it. Minimises.
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct Strategy {
    opt: Box<dyn Optimizer>,
    kind: StrategyKind,
    seed: u64,
    generation: u64,
    /// Box bounds as `kestrel evo run` applies them: `ask` returns repaired rows (clip or
    /// reflect), `tell` adds the penalty (penalty mode).
    bounds: Option<kestrel_evo::Bounds>,
    /// pycma's stop criteria over this object's generations ([`kestrel_evo::termination`]).
    term: Termination,
    scales: Scales,
    /// Whether a population was asked and not yet told (`tell` before `ask` is refused).
    asked: bool,
}

impl Clone for Strategy {
    fn clone(&self) -> Self {
        Strategy {
            opt: self.opt.boxed_clone(),
            kind: self.kind,
            seed: self.seed,
            generation: self.generation,
            bounds: self.bounds.clone(),
            term: self.term.clone(),
            scales: self.scales.clone(),
            asked: self.asked,
        }
    }
}

/// The stop options of `kind` (pycma's defaults for CMA-ES and Sep-CMA-ES, none for the
/// others, as their peer evosax has none) with `overrides` (a JSON object of pycma option
/// names; `null` turns one off).
fn stop_options(
    kind: StrategyKind,
    num_dims: usize,
    pop_size: usize,
    overrides: &str,
) -> PyResult<StopOptions> {
    let mut o = if matches!(kind, StrategyKind::CmaEs | StrategyKind::SepCmaEs) {
        StopOptions::pycma(num_dims, pop_size)
    } else {
        StopOptions::default()
    };
    let v: serde_json::Value = serde_json::from_str(overrides)
        .map_err(|e| value_error(format!("options: not valid JSON: {e}")))?;
    let Some(map) = v.as_object() else {
        return Err(value_error("options: must be a dict of stop options"));
    };
    for (k, v) in map {
        let x = match v {
            serde_json::Value::Null | serde_json::Value::Bool(false) => None,
            serde_json::Value::Bool(true) => Some(1.0),
            serde_json::Value::Number(n) => n.as_f64(),
            other => {
                return Err(value_error(format!(
                    "options.{k} = {other}: a number, True/False or None (off)"
                )));
            }
        };
        o.set(k, x).map_err(value_error)?;
    }
    Ok(o)
}

/// `kind`'s hyper-parameters from a JSON dict, as a run config's `[params]` table reads them
/// (a knob of another strategy, or a misspelt one, is an error naming this strategy's keys).
pub(crate) fn params_of(
    kind: StrategyKind,
    params_json: &str,
) -> PyResult<kestrel_evo::StrategyParams> {
    let table = crate::config::json_table(params_json)?;
    check_param_keys(kind, &table)?;
    kestrel_run::load_config(&kestrel_evo::StrategyParams::default(), None, table, &[]).map_err(
        |e| match e {
            kestrel_run::RunError::Config { message, .. } => {
                value_error(format!("params: {message}"))
            }
            e => crate::errors::run_error(e),
        },
    )
}

/// Refuses a hyper-parameter `kind` does not have before the config reader sees it, so the
/// suggestion comes from this strategy's own keys (and the stop options), not every
/// strategy's.
fn check_param_keys(kind: StrategyKind, table: &toml::Table) -> PyResult<()> {
    let own = kestrel_evo::StrategyParams::keys_of(kind);
    for k in table.keys() {
        if own.contains(&k.as_str()) {
            continue;
        }
        let owners = kestrel_evo::StrategyParams::owners_of(k);
        let whose = if owners.is_empty() {
            let near = kestrel_core::closest(
                k,
                own.iter().copied().chain(kestrel_evo::termination::OPTION_NAMES),
            );
            near.map_or(String::new(), |c| format!(" (did you mean `{c}`?)"))
        } else {
            format!(" (a knob of {} only)", kestrel_evo::StrategyParams::owner_list(k))
        };
        return Err(value_error(format!(
            "params.{k}: not a hyper-parameter of {}{whose}; its keys: {}",
            kind.name(),
            if own.is_empty() { "none".to_string() } else { own.join(", ") }
        )));
    }
    Ok(())
}

fn metrics_dict<'py>(
    py: Python<'py>,
    m: &kestrel_evo::TellMetrics,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("generation", m.generation)?;
    d.set_item("best_in_generation", m.best_in_generation)?;
    d.set_item("best_so_far", m.best_so_far)?;
    d.set_item("nonfinite", m.nonfinite)?;
    d.set_item("sigma", m.sigma)?;
    Ok(d)
}

impl Strategy {
    /// The CLI's key of generation `g` (0-based) and phase (0 ask, 2 tell).
    fn key(&self, phase: u64) -> kestrel_core::Key {
        kestrel_core::Key::new(self.seed).fold_in(self.generation + 1).fold_in(phase)
    }

    fn ask_into(&mut self, py: Python<'_>, key: kestrel_core::Key) -> PyResult<Array2<f32>> {
        let (p, d) = (self.opt.pop_size(), self.opt.num_dims());
        let mut x = vec![0f32; p * d];
        let opt = &mut self.opt;
        py.detach(|| opt.try_ask(key, &mut x)).map_err(value_error)?;
        if let Some(b) = &self.bounds {
            b.repair(&mut x);
        }
        Array2::from_shape_vec((p, d), x).map_err(value_error)
    }

    fn tell_from<'py>(
        &mut self,
        py: Python<'py>,
        key: kestrel_core::Key,
        x: PyReadonlyArray2<'_, f32>,
        f: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (p, d) = (self.opt.pop_size(), self.opt.num_dims());
        let x = check_population(&x, p, d)?;
        if f.shape() != [p] {
            return Err(value_error(format!(
                "fitness: expected shape ({p},), got {:?}",
                f.shape()
            )));
        }
        let mut f: Vec<f32> = f.as_array().iter().copied().collect();
        if let Some(b) = &self.bounds {
            b.penalize(&x, &mut f);
        }
        let (opt, term, scales) = (&mut self.opt, &mut self.term, &mut self.scales);
        let m = py
            .detach(|| -> Result<_, kestrel_evo::EvoError> {
                let m = opt.try_tell(key, &x, &f)?;
                let axis = (m.generation as usize) % opt.num_dims();
                if !opt.scales(axis, scales) {
                    kestrel_evo::termination::isotropic(m.sigma, &opt.mean(), scales);
                }
                term.update(&m, &f, scales);
                Ok(m)
            })
            .map_err(value_error)?;
        metrics_dict(py, &m)
    }
}

#[pymethods]
impl Strategy {
    /// `Strategy(kind, mean, pop_size=None, sigma=0.5, seed=0, init_key=None)`: the strategy
    /// `kind` (`cma-es`, `sep-cma-es`, `snes`, `xnes`, `open-es`, `pgpe`, `de`) initialised at
    /// `mean` with `Key(seed)` (as `kestrel evo run`) or with `init_key`.
    #[new]
    #[pyo3(signature = (kind, mean, pop_size=None, sigma=0.5, seed=0, init_key=None, params_json="{}", bounds=None, bound_mode="clip", options_json="{}"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kind: &str,
        mean: PyReadonlyArray1<'_, f32>,
        pop_size: Option<i64>,
        sigma: f64,
        seed: u64,
        init_key: Option<PyRef<'_, Key>>,
        params_json: &str,
        bounds: Option<(Vec<f32>, Vec<f32>)>,
        bound_mode: &str,
        options_json: &str,
    ) -> PyResult<Self> {
        let kind = StrategyKind::parse(kind).map_err(value_error)?;
        // A numpy vector, read without a Python list in between (a large x0 is one copy).
        let mean: Vec<f32> = mean.as_array().to_vec();
        if mean.is_empty() {
            return Err(value_error("num_dims = 0: at least 1"));
        }
        let pop = pop_arg(pop_size)?;
        let key = init_key.map_or(kestrel_core::Key::new(seed), |k| k.k);
        let params = params_of(kind, params_json)?;
        let opt = kind.build_with(pop, sigma, &params, &mean, key).map_err(value_error)?;
        let mode: kestrel_evo::BoundKind =
            serde_json::from_value(serde_json::Value::String(bound_mode.into()))
                .map_err(|e| value_error(format!("bound_mode = {bound_mode:?}: {e}")))?;
        let bounds = match bounds {
            None => None,
            Some((lo, hi)) if lo.len() != mean.len() || hi.len() != mean.len() => {
                return Err(value_error(format!(
                    "bounds: {} lower and {} upper values; num_dims = {} each",
                    lo.len(),
                    hi.len(),
                    mean.len()
                )));
            }
            Some((lo, hi)) => Some(
                kestrel_evo::Bounds::new(lo, hi, mode)
                    .map_err(|e| value_error(format!("bounds: {e}")))?,
            ),
        };
        let options = stop_options(kind, mean.len(), opt.pop_size(), options_json)?;
        let term = Termination::new(options, mean.len(), opt.pop_size(), sigma);
        let scales = Scales::default();
        Ok(Strategy { opt, kind, seed, generation: 0, bounds, term, scales, asked: false })
    }

    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }
    #[getter]
    fn pop_size(&self) -> usize {
        self.opt.pop_size()
    }
    #[getter]
    fn num_dims(&self) -> usize {
        self.opt.num_dims()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }
    /// Generations told so far.
    #[getter]
    fn generation(&self) -> u64 {
        self.generation
    }
    #[setter]
    fn set_generation(&mut self, g: u64) {
        self.generation = g;
    }
    /// The search mean (float32).
    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        self.opt.mean().into_pyarray(py)
    }
    #[getter]
    fn best_solution<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        self.opt.progress().best_solution.clone().into_pyarray(py)
    }
    #[getter]
    fn best_fitness(&self) -> f32 {
        self.opt.progress().best_fitness
    }

    /// A population `(pop_size, num_dims)` float32 drawn with the CLI's key of this generation.
    fn ask<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let k = self.key(0);
        let x = self.ask_into(py, k)?;
        self.asked = true;
        Ok(x.into_pyarray(py))
    }

    /// Updates from a population and its fitness (minimised); advances the generation.
    fn tell<'py>(
        &mut self,
        py: Python<'py>,
        population: PyReadonlyArray2<'_, f32>,
        fitness: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        if !self.asked {
            return Err(value_error(format!(
                "tell before ask: generation {} was not asked (call ask() first; the \
                 functional tell_with(key, population, fitness) takes any population)",
                self.generation
            )));
        }
        let k = self.key(2);
        let d = self.tell_from(py, k, population, fitness)?;
        self.generation += 1;
        self.asked = false;
        Ok(d)
    }

    /// The stop criteria the last generation met, `{name: setting}` as pycma's `es.stop()`
    /// (empty: go on).
    fn stop<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for name in self.term.met() {
            match self.term.options.get(name) {
                Some(v) if !matches!(*name, "noeffectcoord" | "noeffectaxis") => {
                    d.set_item(*name, v)?
                }
                _ => d.set_item(*name, true)?,
            }
        }
        Ok(d)
    }

    /// The stop options in force, `{name: setting or None (off)}`.
    fn stop_options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for name in kestrel_evo::termination::OPTION_NAMES {
            let v = self.term.options.get(name);
            if matches!(name, "noeffectcoord" | "noeffectaxis") {
                d.set_item(name, v.is_some())?;
            } else {
                d.set_item(name, v)?;
            }
        }
        Ok(d)
    }

    /// Evaluations told so far.
    #[getter]
    fn evals(&self) -> u64 {
        self.term.evals()
    }

    /// Evaluations told when the best so far was found.
    #[getter]
    fn evals_best(&self) -> u64 {
        self.term.evals_best()
    }

    /// Whether a population was asked and not yet told.
    #[getter]
    fn asked(&self) -> bool {
        self.asked
    }

    /// The stop criteria's histories as `{name: float64 array}` (for pickles).
    fn termination_state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, v) in self.term.state_dict() {
            d.set_item(name, v.into_pyarray(py))?;
        }
        Ok(d)
    }

    /// Restores [`Strategy::termination_state`].
    fn load_termination_state(&mut self, d: &Bound<'_, PyDict>) -> PyResult<()> {
        let v = float_dict(d, "termination")?;
        self.term.load_state_dict(&v).map_err(value_error)
    }

    /// [`Strategy::ask`] with an explicit key (the functional layer); the generation counter
    /// is left alone.
    fn ask_with<'py>(
        &mut self,
        py: Python<'py>,
        key: PyRef<'_, Key>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        Ok(self.ask_into(py, key.k)?.into_pyarray(py))
    }

    /// [`Strategy::tell`] with an explicit key; the generation counter is left alone.
    fn tell_with<'py>(
        &mut self,
        py: Python<'py>,
        key: PyRef<'_, Key>,
        population: PyReadonlyArray2<'_, f32>,
        fitness: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.tell_from(py, key.k, population, fitness)
    }

    /// An independent copy (state included).
    fn copy(&self) -> Self {
        self.clone()
    }

    /// The state as `{name: float64 array}`.
    fn state_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, v) in self.opt.state_dict() {
            d.set_item(name, v.into_pyarray(py))?;
        }
        Ok(d)
    }

    /// Overwrites the state from a [`Strategy::state_dict`] of the same kind and sizes.
    fn load_state_dict(&mut self, d: &Bound<'_, PyDict>) -> PyResult<()> {
        let v = float_dict(d, "state_dict")?;
        self.opt.load_state_dict(&v).map_err(value_error)
    }

    /// Guided ES: the surrogate gradient (`num_dims` finite values) the next ask samples along.
    fn set_gradient(&mut self, gradient: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        let g = gradient
            .as_slice()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        self.opt.set_gradient(g).map_err(value_error)
    }
}

/// A `{name: 1-D float64 array}` dict as named vectors.
fn float_dict(d: &Bound<'_, PyDict>, what: &str) -> PyResult<Vec<(String, Vec<f64>)>> {
    let mut v = Vec::with_capacity(d.len());
    for (k, a) in d.iter() {
        let name: String = k.extract()?;
        let arr: PyReadonlyArray1<'_, f64> = a
            .extract()
            .map_err(|_| value_error(format!("{what}.{name}: expected a 1-D float64 array")))?;
        v.push((name, arr.as_array().to_vec()));
    }
    Ok(v)
}

/// A fitness function of the Rust crates: a benchmark function or CartPole neuroevolution.
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct EvoProblem {
    p: std::sync::Arc<dyn Problem>,
    /// Its id in the XLA targets' table, once `kestrel.jax.evaluate` asked for one.
    xla: std::sync::OnceLock<i64>,
    /// The run's key and rule, for a run's population problem (`from_run`).
    keys: Option<(kestrel_core::Key, kestrel_evo::EvalKeys)>,
    /// A pool of the size last asked for by `evaluate(threads=)`.
    pool: std::sync::Mutex<Option<(usize, std::sync::Arc<rayon::ThreadPool>)>>,
}

impl Drop for EvoProblem {
    fn drop(&mut self) {
        if let Some(id) = self.xla.get() {
            kestrel_xla::eval::remove(*id);
        }
    }
}

impl EvoProblem {
    fn of(p: Box<dyn Problem>) -> Self {
        EvoProblem {
            p: p.into(),
            xla: std::sync::OnceLock::new(),
            keys: None,
            pool: std::sync::Mutex::new(None),
        }
    }

    fn pool(&self, n: usize) -> PyResult<std::sync::Arc<rayon::ThreadPool>> {
        let mut g = self.pool.lock().map_err(|_| value_error("threads: pool lock poisoned"))?;
        if let Some((m, p)) = g.as_ref()
            && *m == n
        {
            return Ok(p.clone());
        }
        let p = kestrel_run::pool(Some(n)).map_err(|e| value_error(e.to_string()))?;
        let p = std::sync::Arc::new(p);
        *g = Some((n, p.clone()));
        Ok(p)
    }
}

#[pymethods]
impl EvoProblem {
    /// `EvoProblem(name, num_dims, shift=0.0, rotate=False, seed=0)`: `name` is a benchmark
    /// function (`sphere`, `rosenbrock`, ...) or `cartpole` (the CLI's neuroevolution
    /// problem; `num_dims` is then ignored). `kestrel evo run` builds the same problem.
    #[new]
    #[pyo3(signature = (name, num_dims=10, shift=0.0, rotate=false, seed=0))]
    fn new(name: &str, num_dims: usize, shift: f64, rotate: bool, seed: u64) -> PyResult<Self> {
        let p: Box<dyn Problem> = if name == "cartpole" {
            Box::new(kestrel_evo::neuro::cartpole_problem().map_err(value_error)?)
        } else {
            let run = kestrel_core::Key::new(seed);
            Box::new(
                kestrel_evo::driver::benchmark(name, num_dims, shift, rotate, run)
                    .map_err(value_error)?,
            )
        };
        Ok(EvoProblem::of(p))
    }

    /// The population problem each generation of a run of `kind` evaluates under this config
    /// (a JSON object of its keys), with the run's keys: for `evo`, the configured function
    /// or CartPole (`kestrel evo run`'s); for `mppi-tune`, one candidate's mean closed-loop
    /// cost (`kestrel mppi tune`'s). `kestrel.dist.population_kinds()` lists the kinds.
    #[staticmethod]
    fn from_run(kind: &str, config_json: &str) -> PyResult<Self> {
        let table = crate::config::json_table(config_json)?;
        let kind = kestrel_run::RunKind::from_name(kind).map_err(crate::errors::run_error)?;
        let p = kind
            .population(kestrel_run::Layers::table(&table))
            .map_err(crate::errors::run_error)?;
        let mut e = EvoProblem::of(p.problem);
        e.keys = Some((p.key_run, p.eval_keys));
        Ok(e)
    }

    /// The key generation `generation` (0-based) of the run is evaluated with (a problem from
    /// `from_run` only).
    fn generation_key(&self, generation: u64) -> PyResult<Key> {
        let (run, rule) = self
            .keys
            .ok_or_else(|| value_error("generation_key: a problem from EvoProblem.from_run"))?;
        Ok(Key { k: rule.key(run, generation) })
    }

    #[getter]
    fn num_dims(&self) -> usize {
        self.p.num_dims()
    }

    /// The problem's id in the XLA targets' table (`kestrel.jax.evaluate`'s `problem`
    /// attribute), put there on the first call; dropped with this object.
    fn xla_id(&self) -> i64 {
        *self.xla.get_or_init(|| kestrel_xla::eval::insert(self.p.clone()))
    }

    /// Fitness of each row of `population` (float32, minimised), keyed by `key` and the
    /// global row `first_row + i` (shards of a population give the whole one's values).
    /// `threads`: run on a pool of that many threads (absent: the global pool).
    #[pyo3(signature = (population, key=None, first_row=0, threads=None))]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        population: PyReadonlyArray2<'_, f32>,
        key: Option<PyRef<'_, Key>>,
        first_row: u64,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let s = population.shape();
        let (rows, d) = (s[0], self.p.num_dims());
        let x = check_population(&population, rows, d)?;
        let key = key.map_or(kestrel_core::Key::new(0), |k| k.k);
        let mut f = vec![0f32; rows];
        let p = &self.p;
        match threads {
            Some(n) => {
                let pool = self.pool(n)?;
                py.detach(|| pool.install(|| p.evaluate_rows(key, first_row, &x, &mut f)));
            }
            None => py.detach(|| p.evaluate_rows(key, first_row, &x, &mut f)),
        }
        Ok(f.into_pyarray(py))
    }
}

/// `[name, ...]` of the strategies.
#[pyfunction]
pub(crate) fn strategies() -> Vec<&'static str> {
    StrategyKind::ALL.iter().map(|k| k.name()).collect()
}

/// The strategy named `name` (Kestrel's spelling or evosax's, any case) as its config name;
/// an unknown name is a ValueError naming the closest.
#[pyfunction]
pub(crate) fn strategy_kind(name: &str) -> PyResult<&'static str> {
    Ok(StrategyKind::parse(name).map_err(value_error)?.name())
}

/// The population `kind` resolves to at `num_dims` (and `pop_size`), its state checked to fit
/// memory before anything is allocated: the Python classes call this before they build the
/// mean vector, so `CMAES(10**9)` is a ValueError naming `num_dims`, not a MemoryError.
#[pyfunction]
#[pyo3(signature = (kind, num_dims, pop_size=None))]
pub(crate) fn check_strategy_size(
    kind: &str,
    num_dims: i64,
    pop_size: Option<i64>,
) -> PyResult<usize> {
    let kind = StrategyKind::parse(kind).map_err(value_error)?;
    if num_dims < 1 {
        return Err(value_error(format!("num_dims = {num_dims}: at least 1")));
    }
    kind.check_memory(pop_arg(pop_size)?, num_dims as usize).map_err(value_error)
}

/// A Python `pop_size` (None: the strategy's default), at least 1.
fn pop_arg(pop_size: Option<i64>) -> PyResult<Option<usize>> {
    match pop_size {
        Some(p) if p < 1 => Err(value_error(format!("pop_size = {p}: at least 1"))),
        Some(p) => Ok(Some(p as usize)),
        None => Ok(None),
    }
}

/// evosax 0.3.2's 37 algorithm names with the Kestrel strategy each names.
#[pyfunction]
pub(crate) fn evosax_names() -> Vec<(&'static str, &'static str)> {
    kestrel_evo::EVOSAX_NAMES.iter().map(|(n, k)| (*n, k.name())).collect()
}

/// A learned strategy's default weights at `num_dims`: the file of evosax 0.3.2's
/// `algorithms/ckpt` its evosax class loads when given no `params_path` (None for every
/// other strategy).
#[pyfunction]
pub(crate) fn evosax_weights(kind: &str, num_dims: usize) -> PyResult<Option<&'static str>> {
    Ok(StrategyKind::parse(kind).map_err(value_error)?.evosax_weights(num_dims))
}

/// Every strategy's hyper-parameters: `{kind: [(key, doc), ...]}` (the docs give the defaults).
#[pyfunction]
pub(crate) fn strategy_params() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    StrategyKind::ALL.iter().map(|&k| (k.name(), kestrel_evo::StrategyParams::docs_of(k))).collect()
}

/// The default population of `kind` for `num_dims`.
#[pyfunction]
pub(crate) fn default_pop_size(kind: &str, num_dims: usize) -> PyResult<usize> {
    Ok(StrategyKind::parse(kind).map_err(value_error)?.default_pop_size(num_dims))
}

/// Two arrays returned together.
type Pair<'py, A, B> = (Bound<'py, A>, Bound<'py, B>);

/// A quality-diversity archive (one elite per cell, minimised fitness), with numpy access.
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct QdArchive {
    pub(crate) a: kestrel_evo::qd::Archive,
}

fn f32_rows(x: &PyReadonlyArray2<'_, f32>, cols: usize, what: &str) -> PyResult<Vec<f32>> {
    let s = x.shape();
    if s[1] != cols {
        return Err(value_error(format!(
            "{what}: expected shape (n, {cols}), got ({}, {})",
            s[0], s[1]
        )));
    }
    Ok(x.as_array().iter().copied().collect())
}

#[pymethods]
impl QdArchive {
    /// A grid archive: `cells[i]` bins over `[lower[i], upper[i]]` per measure.
    #[staticmethod]
    #[pyo3(signature = (num_dims, cells, lower, upper, qd_offset=0.0))]
    fn grid(
        num_dims: usize,
        cells: Vec<usize>,
        lower: Vec<f32>,
        upper: Vec<f32>,
        qd_offset: f64,
    ) -> PyResult<Self> {
        if num_dims == 0 {
            return Err(value_error("num_dims = 0: at least 1"));
        }
        let total = cells.iter().try_fold(1usize, |acc, &c| acc.checked_mul(c));
        if total.is_none_or(|t| t > 1 << 24) {
            return Err(value_error(format!("cells = {cells:?}: at most 16,777,216 in all")));
        }
        kestrel_core::check_bytes(
            "cells",
            total.unwrap_or(0),
            total.unwrap_or(0) as u128,
            (num_dims * 4 + 16) as u128,
        )
        .map_err(value_error)?;
        Ok(QdArchive {
            a: kestrel_evo::qd::Archive::grid(num_dims, cells, lower, upper, qd_offset)
                .map_err(value_error)?,
        })
    }

    /// A CVT archive of `num_cells` centroids (k-means over `samples` uniform points, `iters`
    /// Lloyd iterations, from `key`).
    #[staticmethod]
    #[pyo3(signature = (num_dims, num_cells, lower, upper, key, samples=None, iters=20, qd_offset=0.0))]
    #[allow(clippy::too_many_arguments)]
    fn cvt(
        num_dims: usize,
        num_cells: usize,
        lower: Vec<f32>,
        upper: Vec<f32>,
        key: PyRef<'_, Key>,
        samples: Option<usize>,
        iters: usize,
        qd_offset: f64,
    ) -> PyResult<Self> {
        if num_dims == 0 || num_cells == 0 || num_cells > 1 << 22 {
            return Err(value_error(format!(
                "num_dims = {num_dims}, num_cells = {num_cells}: at least 1, at most 4,194,304 cells"
            )));
        }
        let samples = samples.unwrap_or(20 * num_cells);
        Ok(QdArchive {
            a: kestrel_evo::qd::Archive::cvt(
                num_dims, num_cells, lower, upper, samples, iters, qd_offset, key.k,
            )
            .map_err(value_error)?,
        })
    }

    #[getter]
    fn num_cells(&self) -> usize {
        self.a.num_cells()
    }
    #[getter]
    fn num_dims(&self) -> usize {
        self.a.num_dims()
    }
    #[getter]
    fn num_measures(&self) -> usize {
        self.a.num_measures()
    }
    /// Whether each cell holds an elite (bool, `num_cells`).
    #[getter]
    fn occupied<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<bool>> {
        self.a.occupied.clone().into_pyarray(py)
    }
    /// Fitness per cell (float32; meaningless where not occupied).
    #[getter]
    fn fitness<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        self.a.fitness.clone().into_pyarray(py)
    }
    /// Solutions per cell, `(num_cells, num_dims)`.
    #[getter]
    fn solutions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (c, n) = (self.a.num_cells(), self.a.num_dims());
        Ok(Array2::from_shape_vec((c, n), self.a.solutions.clone())
            .map_err(value_error)?
            .into_pyarray(py))
    }
    /// Measures per cell, `(num_cells, num_measures)`.
    #[getter]
    fn measures<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let (c, m) = (self.a.num_cells(), self.a.num_measures());
        Ok(Array2::from_shape_vec((c, m), self.a.measures.clone())
            .map_err(value_error)?
            .into_pyarray(py))
    }
    /// `{num_elites, coverage, qd_score, best}`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.a.stats();
        let d = PyDict::new(py);
        d.set_item("num_elites", s.num_elites)?;
        d.set_item("coverage", s.coverage)?;
        d.set_item("qd_score", s.qd_score)?;
        d.set_item("best", s.best)?;
        Ok(d)
    }
    /// The archive as a heat map over its two measures (`lo`, `hi` per measure), as an
    /// `(H, W, 3)` uint8 picture; with `path`, also written there as PNG. `objective`: cells
    /// show `-fitness` as an objective to maximise (pyribs' reading).
    #[pyo3(signature = (lo, hi, labels, title, objective, path=None))]
    #[allow(clippy::too_many_arguments)]
    fn heatmap<'py>(
        &self,
        py: Python<'py>,
        lo: [f32; 2],
        hi: [f32; 2],
        labels: [String; 2],
        title: &str,
        objective: bool,
        path: Option<std::path::PathBuf>,
    ) -> PyResult<Bound<'py, numpy::PyArray3<u8>>> {
        if self.a.num_measures() != 2 {
            return Err(value_error(format!(
                "heat map: the archive has {} measures; a heat map draws 2",
                self.a.num_measures()
            )));
        }
        use kestrel_run::runs::qd::{archive_heatmap, heatmap_picture};
        let labels = [labels[0].as_str(), labels[1].as_str()];
        let map = archive_heatmap(&self.a, lo, hi, labels, title, objective);
        let f = heatmap_picture(&map, path.as_deref()).map_err(crate::errors::run_error)?;
        use numpy::PyArrayMethods;
        numpy::PyArray1::from_vec(py, f.rgb).reshape([f.height, f.width, 3])
    }

    /// The cell of each row of `measures`.
    fn index_of<'py>(
        &self,
        py: Python<'py>,
        measures: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let m = f32_rows(&measures, self.a.num_measures(), "measures")?;
        if let Some(i) = m.iter().position(|v| !v.is_finite()) {
            return Err(value_error(format!(
                "measures[{}]: not finite",
                i / self.a.num_measures()
            )));
        }
        let idx: Vec<u64> =
            m.chunks_exact(self.a.num_measures()).map(|r| self.a.index_of(r) as u64).collect();
        Ok(idx.into_pyarray(py))
    }
    /// Adds a batch; returns `(status, value)`: 0 not added, 1 improved, 2 new; the
    /// improvement (for a new cell `qd_offset − fitness`). Non-finite rows are never added.
    fn add<'py>(
        &mut self,
        py: Python<'py>,
        solutions: PyReadonlyArray2<'_, f32>,
        fitness: PyReadonlyArray1<'_, f32>,
        measures: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<Pair<'py, PyArray1<u8>, PyArray1<f64>>> {
        let x = f32_rows(&solutions, self.a.num_dims(), "solutions")?;
        let n = x.len() / self.a.num_dims();
        let m = f32_rows(&measures, self.a.num_measures(), "measures")?;
        if fitness.shape() != [n] || m.len() / self.a.num_measures() != n {
            return Err(value_error(format!(
                "fitness and measures: expected {n} rows like solutions, got {:?} and {}",
                fitness.shape(),
                m.len() / self.a.num_measures()
            )));
        }
        let f: Vec<f32> = fitness.as_array().iter().copied().collect();
        let mut status = vec![kestrel_evo::qd::AddStatus::NotAdded; n];
        let mut value = vec![0.0; n];
        self.a.add(&x, &f, &m, &mut status, &mut value);
        let st: Vec<u8> = status.iter().map(|s| *s as u8).collect();
        Ok((st.into_pyarray(py), value.into_pyarray(py)))
    }
}

/// A QD emitter (MAP-Elites, iso-line MAP-Elites or CMA-ME) over a [`QdArchive`].
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct QdEmitter {
    e: Box<dyn kestrel_evo::qd::Emitter>,
    num_dims: usize,
}

#[pymethods]
impl QdEmitter {
    /// MAP-Elites with Gaussian variation (`sigma`), or iso-line variation with
    /// `iso_line = (iso_sigma, line_sigma)`; parents from `x0` while the archive is empty.
    #[staticmethod]
    #[pyo3(signature = (batch_size, x0, sigma=0.1, iso_line=None))]
    fn map_elites(
        batch_size: usize,
        x0: Vec<f32>,
        sigma: f32,
        iso_line: Option<(f32, f32)>,
    ) -> PyResult<Self> {
        use kestrel_evo::qd::{MapElites, Variation};
        if batch_size == 0 || x0.is_empty() {
            return Err(value_error("batch_size and len(x0): at least 1"));
        }
        let variation = match iso_line {
            Some((iso_sigma, line_sigma)) => Variation::IsoLine { iso_sigma, line_sigma },
            None => Variation::Gaussian { sigma },
        };
        let n = x0.len();
        Ok(QdEmitter { e: Box::new(MapElites { batch_size, variation, x0 }), num_dims: n })
    }

    /// CMA-ME (an improvement-ranked evolution strategy with restarts: `es`, any strategy by
    /// name, with its hyper-parameters as JSON) from `x0`, initialised with `key`.
    #[staticmethod]
    #[pyo3(signature = (batch_size, x0, sigma0, key, es = "cma-es", params_json = "{}"))]
    fn cma_me(
        batch_size: usize,
        x0: Vec<f32>,
        sigma0: f64,
        key: PyRef<'_, Key>,
        es: &str,
        params_json: &str,
    ) -> PyResult<Self> {
        let n = x0.len();
        let kind = StrategyKind::parse(es).map_err(value_error)?;
        let params = params_of(kind, params_json)?;
        let e =
            kestrel_evo::qd::CmaMe::with_strategy(kind, &params, batch_size, &x0, sigma0, key.k)
                .map_err(value_error)?;
        Ok(QdEmitter { e: Box::new(e), num_dims: n })
    }

    #[getter]
    fn batch_size(&self) -> usize {
        self.e.batch_size()
    }
    #[getter]
    fn restarts(&self) -> u64 {
        self.e.restarts()
    }

    /// A batch `(batch_size, num_dims)` given the archive.
    fn ask<'py>(
        &mut self,
        py: Python<'py>,
        archive: PyRef<'_, QdArchive>,
        key: PyRef<'_, Key>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        if archive.a.num_dims() != self.num_dims {
            return Err(value_error(format!(
                "archive: num_dims = {}, the emitter's is {}",
                archive.a.num_dims(),
                self.num_dims
            )));
        }
        let (b, n) = (self.e.batch_size(), self.num_dims);
        let mut x = vec![0f32; b * n];
        self.e.ask(key.k, &archive.a, &mut x);
        Ok(Array2::from_shape_vec((b, n), x).map_err(value_error)?.into_pyarray(py))
    }

    /// Adds the evaluated batch to the archive and updates the emitter.
    fn tell(
        &mut self,
        mut archive: PyRefMut<'_, QdArchive>,
        key: PyRef<'_, Key>,
        population: PyReadonlyArray2<'_, f32>,
        fitness: PyReadonlyArray1<'_, f32>,
        measures: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<()> {
        let (b, n, m) = (self.e.batch_size(), self.num_dims, archive.a.num_measures());
        if archive.a.num_dims() != n {
            return Err(value_error(format!(
                "archive: num_dims = {}, the emitter's is {n}",
                archive.a.num_dims()
            )));
        }
        let x = check_population(&population, b, n)?.into_owned();
        if fitness.shape() != [b] || measures.shape() != [b, m] {
            return Err(value_error(format!(
                "fitness and measures: expected shapes ({b},) and ({b}, {m}), got {:?} and {:?}",
                fitness.shape(),
                measures.shape()
            )));
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            return Err(value_error(format!("population[{}][{}]: not finite", i / n, i % n)));
        }
        let f: Vec<f32> = fitness.as_array().iter().copied().collect();
        if let Some(i) = f.iter().position(|v| v.is_nan()) {
            return Err(value_error(format!("fitness[{i}] = NaN: a number (±inf allowed)")));
        }
        let ms: Vec<f32> = measures.as_array().iter().copied().collect();
        self.e.tell(key.k, &mut archive.a, &x, &f, &ms);
        Ok(())
    }
}

/// The linear-projection QD benchmark of `kestrel evo qd` (fitness of a test function,
/// two measures).
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct QdBenchmark {
    p: kestrel_evo::qd::LinearProjection,
}

#[pymethods]
impl QdBenchmark {
    #[new]
    #[pyo3(signature = (num_dims, function="sphere"))]
    fn new(num_dims: usize, function: &str) -> PyResult<Self> {
        if num_dims < 2 {
            return Err(value_error(format!("num_dims = {num_dims}: at least 2")));
        }
        let function = kestrel_evo::problem::Function::parse(function).map_err(value_error)?;
        Ok(QdBenchmark { p: kestrel_evo::qd::LinearProjection { num_dims, function } })
    }
    /// Each measure lies in `[-bound, bound]`.
    #[getter]
    fn measure_bound(&self) -> f32 {
        self.p.measure_bound()
    }
    /// `(fitness (n,), measures (n, 2))`.
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        population: PyReadonlyArray2<'_, f32>,
    ) -> PyResult<Pair<'py, PyArray1<f32>, PyArray2<f32>>> {
        use kestrel_evo::qd::QdProblem;
        let n = self.p.num_dims;
        let x = f32_rows(&population, n, "population")?;
        let rows = x.len() / n;
        let (mut f, mut m) = (vec![0f32; rows], vec![0f32; rows * 2]);
        let p = &self.p;
        py.detach(|| p.evaluate(kestrel_core::Key::new(0), &x, &mut f, &mut m));
        Ok((
            f.into_pyarray(py),
            Array2::from_shape_vec((rows, 2), m).map_err(value_error)?.into_pyarray(py),
        ))
    }
}

/// What `kestrel evo qd` starts from for a config (a JSON object of its keys): `(seed, archive,
/// [emitter], problem)`, built by the run's own code (its defaults and key tree).
#[pyfunction]
pub(crate) fn qd_setup(
    config_json: &str,
) -> PyResult<(u64, QdArchive, Vec<QdEmitter>, QdBenchmark)> {
    let table = crate::config::json_table(config_json)?;
    let c = kestrel_run::run::load::<kestrel_run::runs::qd::Qd>(
        kestrel_run::Layers::table(&table),
        None,
    )
    .map_err(crate::errors::run_error)?;
    let (c, a, emitters, p) =
        kestrel_run::runs::qd::QdRun::new(c).map_err(value_error)?.into_parts();
    let emitters = emitters.into_iter().map(|e| QdEmitter { e, num_dims: c.num_dims }).collect();
    Ok((c.seed, QdArchive { a }, emitters, QdBenchmark { p }))
}
