//! MPPI-family controllers over the built-in systems for Python (`kestrel.mppi`).

use crate::errors::{run_error, value_error};
use kestrel_core::Key;
use kestrel_dynamics::Dynamics;
use kestrel_mppi::batched::Sizes;
use kestrel_mppi::{Controller, ControllerVisitor, SystemKind};
use kestrel_run::runs::mppi::MppiRunConfig;
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

/// One controller with its params and state, object-safe.
trait DynCtl: Send + Sync {
    fn nx(&self) -> usize;
    fn nu(&self) -> usize;
    fn command(&mut self, key: Key, x0: &[f64], applied: &mut [f64]);
    fn reset(&mut self);
}

struct Ctl<C: Controller> {
    c: C,
    p: C::Params,
    s: C::State,
    out: Vec<f64>,
}

impl<C: Controller + 'static> DynCtl for Ctl<C> {
    fn nx(&self) -> usize {
        self.c.dynamics().nx()
    }
    fn nu(&self) -> usize {
        self.c.dynamics().nu()
    }
    fn command(&mut self, key: Key, x0: &[f64], applied: &mut [f64]) {
        self.c.command(key, &self.p, &mut self.s, x0, &mut self.out);
        C::applied(&self.p, &self.out, applied);
    }
    fn reset(&mut self) {
        self.c.reset(&self.p, &mut self.s);
    }
}

struct Make;
impl ControllerVisitor for Make {
    type Output = Box<dyn DynCtl>;
    fn visit<C: Controller + 'static>(self, c: C, p: C::Params) -> Box<dyn DynCtl> {
        let s = c.init(&p);
        let b = C::base(&p);
        let out = vec![0.0; b.u_per_command * c.dynamics().nu()];
        Box::new(Ctl { c, p, s, out })
    }
}

/// A closed-loop MPPI, SMPPI or KMPPI controller on a built-in system, configured as
/// `kestrel mppi run` (the same TOML keys, as a dict): command `t` uses
/// `Key(seed).fold_in(t)`, so a Python loop reproduces the CLI's episode.
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct MppiController {
    ctl: Box<dyn DynCtl>,
    config: MppiRunConfig,
    t: u64,
}

/// `kestrel mppi run`'s config from a JSON dict of overrides, through the run registry (the
/// defaults of the controller and system the dict names, as the CLI reads them).
pub(crate) fn mppi_config(json: &str) -> PyResult<MppiRunConfig> {
    let table = crate::config::json_table(json)?;
    kestrel_run::run::load::<kestrel_run::runs::mppi::MppiRun>(
        kestrel_run::Layers::table(&table),
        None,
    )
    .map_err(run_error)
}

#[pymethods]
impl MppiController {
    /// `MppiController(config_json)`: keys as in `kestrel mppi run --config` (`system`,
    /// `controller`, `seed`, `mppi.lambda`, ...).
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let config = mppi_config(config_json)?;
        config.validate().map_err(value_error)?;
        // Over the concrete system (statically dispatched rollouts, as `kestrel mppi run`).
        let ctl = config.visit(Make).map_err(value_error)?;
        Ok(MppiController { ctl, config, t: 0 })
    }

    #[getter]
    fn nx(&self) -> usize {
        self.ctl.nx()
    }
    #[getter]
    fn nu(&self) -> usize {
        self.ctl.nu()
    }
    /// Commands issued since the last reset.
    #[getter]
    fn t(&self) -> u64 {
        self.t
    }
    /// The resolved config as TOML text.
    #[getter]
    fn config_toml(&self) -> PyResult<String> {
        kestrel_run::to_toml(&self.config).map_err(run_error)
    }
    /// The system's start state.
    fn start_state<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.config.system.start().into_pyarray(py)
    }

    /// The control to apply from state `x` (float64, `nx`), GIL released.
    fn command<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let nx = self.ctl.nx();
        let x = x.as_array().to_vec();
        if x.len() != nx {
            return Err(value_error(format!("state: expected shape ({nx},), got ({},)", x.len())));
        }
        if let Some(i) = x.iter().position(|v| !v.is_finite()) {
            return Err(value_error(format!("state[{i}] = {}: not finite", x[i])));
        }
        let mut u = vec![0.0; self.ctl.nu()];
        let key = Key::new(self.config.seed).fold_in(self.t);
        let ctl = &mut self.ctl;
        py.detach(|| ctl.command(key, &x, &mut u));
        self.t += 1;
        Ok(u.into_pyarray(py))
    }

    /// One step of the system itself (the plant): the next state from `x` under `u`.
    fn plant_step<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray1<'_, f64>,
        u: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<(Bound<'py, PyArray1<f64>>, f64)> {
        let s = self.config.system;
        let (x, u) = (x.as_array().to_vec(), u.as_array().to_vec());
        if x.len() != s.nx() || u.len() != s.nu() {
            return Err(value_error(format!(
                "plant_step: expected x ({},) and u ({},), got ({},) and ({},)",
                s.nx(),
                s.nu(),
                x.len(),
                u.len()
            )));
        }
        let mut next = vec![0.0; s.nx()];
        let t = self.t.saturating_sub(1) as usize;
        s.step(&x, &u, t, &mut next);
        let cost = s.running_cost(&next, &u, t);
        Ok((next.into_pyarray(py), cost))
    }

    /// Back to the initial plan and command 0.
    fn reset(&mut self) {
        self.ctl.reset();
        self.t = 0;
    }
}

/// The built-in systems' names.
#[pyfunction]
pub(crate) fn systems() -> Vec<&'static str> {
    SystemKind::ALL.iter().map(|s| s.name()).collect()
}

/// Refuses state and control sizes outside what MPPI takes (for Python-defined systems).
pub(crate) fn check_sizes(nx: usize, nu: usize) -> PyResult<()> {
    if nx == 0 || nx > kestrel_mppi::MAX_NX || nu == 0 || nu > kestrel_mppi::MAX_NU {
        return Err(value_error(format!(
            "nx = {nx}, nu = {nu}: expected 1 to {} states and 1 to {} controls",
            kestrel_mppi::MAX_NX,
            kestrel_mppi::MAX_NU
        )));
    }
    Ok(())
}

/// Batched dynamics and costs from Python callables: `dynamics(x (n, nx), u (n, nu), t) -> (n,
/// nx)`, `running_cost(x, u, t) -> (n,)`, `terminal_cost(x) -> (n,)`, float64 arrays (what a
/// callback returns is read as float64; a wrong shape is a `ValueError` naming the callback).
/// A NaN anywhere, an infinite next state or a cost of −∞ is a `ValueError` naming the
/// callback, the step, the row and the value (MPPI would turn it into a silent zero action);
/// a cost of +∞ is allowed: that sample gets no weight. Each call takes the GIL.
pub(crate) struct PyBatch {
    nx: usize,
    nu: usize,
    dynamics: Py<PyAny>,
    running_cost: Py<PyAny>,
    terminal_cost: Option<Py<PyAny>>,
}

impl PyBatch {
    pub(crate) fn new(
        nx: usize,
        nu: usize,
        dynamics: Py<PyAny>,
        running_cost: Py<PyAny>,
        terminal_cost: Option<Py<PyAny>>,
    ) -> Self {
        PyBatch { nx, nu, dynamics, running_cost, terminal_cost }
    }

    /// Calls `f(args)` and copies its `(rows, width)` (or `(rows,)` when `width` is `None`)
    /// float64 result into `out`, checked finite (`cost`: +∞ allowed). `at` names the step.
    #[allow(clippy::too_many_arguments)]
    fn call<'py>(
        py: Python<'py>,
        f: &Py<PyAny>,
        what: &str,
        at: &str,
        args: impl pyo3::call::PyCallArgs<'py>,
        width: Option<usize>,
        cost: bool,
        out: &mut [f64],
    ) -> PyResult<()> {
        use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
        let rows = out.len() / width.unwrap_or(1);
        let want = match width {
            Some(w) => format!("({rows}, {w})"),
            None => format!("({rows},)"),
        };
        let r = f.bind(py).call1(args)?;
        let a = r.cast::<PyArrayDyn<f64>>().map_err(|_| {
            value_error(format!("{what}: expected a float64 array of shape {want}"))
        })?;
        let ok = match width {
            Some(w) => a.shape() == [rows, w],
            None => a.shape() == [rows],
        };
        if !ok {
            return Err(value_error(format!("{what}: expected shape {want}, got {:?}", a.shape())));
        }
        let ro = a.readonly();
        match ro.as_slice() {
            Ok(v) => out.copy_from_slice(v),
            Err(_) => out.iter_mut().zip(ro.as_array().iter()).for_each(|(o, v)| *o = *v),
        }
        let bad = |v: f64| v.is_nan() || (v.is_infinite() && !(cost && v > 0.0));
        if let Some(i) = out.iter().position(|&v| bad(v)) {
            let w = width.unwrap_or(1);
            let cell =
                if width.is_some() { format!("[{}, {}]", i / w, i % w) } else { format!("[{i}]") };
            let rule = if cost { "finite or +inf (a sample to give no weight)" } else { "finite" };
            return Err(value_error(format!(
                "{what} returned {} at {at}, row {cell}: expected {rule}",
                out[i]
            )));
        }
        Ok(())
    }

    fn arrays<'py>(
        &self,
        py: Python<'py>,
        x: &[f64],
        u: &[f64],
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        use numpy::PyArrayMethods;
        let n = x.len() / self.nx;
        let xa = PyArray1::from_slice(py, x).reshape([n, self.nx])?.into_any();
        let ua = PyArray1::from_slice(py, u).reshape([n, self.nu])?.into_any();
        Ok((xa, ua))
    }
}

impl kestrel_mppi::batched::BatchDynamics for PyBatch {
    type Error = PyErr;
    fn nx(&self) -> usize {
        self.nx
    }
    fn nu(&self) -> usize {
        self.nu
    }
    fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) -> PyResult<()> {
        Python::attach(|py| {
            let (xa, ua) = self.arrays(py, x, u)?;
            let at = format!("step t = {t}");
            Self::call(py, &self.dynamics, "dynamics", &at, (xa, ua, t), Some(self.nx), false, next)
        })
    }
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize, out: &mut [f64]) -> PyResult<()> {
        Python::attach(|py| {
            let (xa, ua) = self.arrays(py, x, u)?;
            let (f, at) = (&self.running_cost, format!("step t = {t}"));
            Self::call(py, f, "running_cost", &at, (xa, ua, t), None, true, out)
        })
    }
    fn terminal_cost(&self, x: &[f64], out: &mut [f64]) -> PyResult<bool> {
        let Some(f) = &self.terminal_cost else { return Ok(false) };
        Python::attach(|py| {
            use numpy::PyArrayMethods;
            let xa = PyArray1::from_slice(py, x).reshape([out.len(), self.nx])?;
            Self::call(py, f, "terminal_cost", "the horizon's end", (xa,), None, true, out)
                .map(|()| true)
        })
    }
}

/// MPPI over batched Python dynamics ([`PyBatch`]): `dynamics` and `running_cost` are called
/// once per horizon step for all K samples, `terminal_cost` once. Sampling, weights and the
/// update are Kestrel's MPPI (the same code as the built-in systems'); the normals of command
/// `t` come from `Key(seed).fold_in(t)`.
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct ExternalMppi {
    mppi: kestrel_mppi::Mppi<Sizes>,
    p: kestrel_mppi::MppiParams,
    s: kestrel_mppi::MppiState,
    batch: PyBatch,
    /// `sampler(state (nx,)) -> (n, horizon, nu)`: pytorch-mppi's
    /// `SpecificActionSampler.sample_trajectories`, called before every command.
    sampler: Option<Py<PyAny>>,
    seed: u64,
    t: u64,
}

impl ExternalMppi {
    /// Rolls every sample out through the callbacks ([`kestrel_mppi::batched::rollout_costs`],
    /// the batched tuner's rollout); costs = Σ running + terminal.
    fn rollout(&self, x0: &[f64], ctl: &[f64], costs: &mut [f64]) -> PyResult<()> {
        use kestrel_mppi::batched::{Block, RolloutScratch, rollout_costs};
        let (k, t) = (self.p.num_samples, self.p.horizon);
        let jax = self.p.convention == kestrel_mppi::ConventionKind::JaxMppi;
        let mut x: Vec<f64> = x0.repeat(k);
        let block = Block { first_row: 0, num_samples: k, horizon: t, controls: ctl };
        rollout_costs(&self.batch, jax, &[block], &mut x, costs, &mut RolloutScratch::default())
    }
}

#[pymethods]
impl ExternalMppi {
    /// `ExternalMppi(nx, nu, params_json, dynamics, running_cost, terminal_cost=None, seed=0)`:
    /// `params_json` holds `MppiParams` keys (`num_samples`, `horizon`, `lambda`,
    /// `noise_sigma`, `u_min`, `u_max`, ...) over `MppiParams::new(nu, 1.0)`.
    #[new]
    #[pyo3(signature = (nx, nu, params_json, dynamics, running_cost, terminal_cost=None, seed=0, specific_action_sampler=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        nx: usize,
        nu: usize,
        params_json: &str,
        dynamics: Py<PyAny>,
        running_cost: Py<PyAny>,
        terminal_cost: Option<Py<PyAny>>,
        seed: u64,
        specific_action_sampler: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        check_sizes(nx, nu)?;
        let table = crate::config::json_table(params_json)?;
        let p: kestrel_mppi::MppiParams =
            kestrel_run::load_config(&kestrel_mppi::MppiParams::new(nu, 1.0), None, table, &[])
                .map_err(run_error)?;
        if p.rollout_samples > 1 {
            return Err(value_error(format!(
                "rollout_samples = {}: callback dynamics take 1",
                p.rollout_samples
            )));
        }
        if p.precision != kestrel_mppi::PrecisionKind::F64 {
            return Err(value_error(
                "precision = \"f32\": callback dynamics run in f64 (the f32 lanes are for built-in systems)",
            ));
        }
        let mppi = kestrel_mppi::Mppi::new(Sizes { nx, nu });
        mppi.validate(&p).map_err(value_error)?;
        let s = mppi.init(&p);
        let batch = PyBatch { nx, nu, dynamics, running_cost, terminal_cost };
        Ok(ExternalMppi { mppi, p, s, batch, sampler: specific_action_sampler, seed, t: 0 })
    }

    #[getter]
    fn nx(&self) -> usize {
        self.mppi.dynamics().nx
    }
    #[getter]
    fn nu(&self) -> usize {
        self.mppi.dynamics().nu
    }
    /// Commands issued since the last reset.
    #[getter]
    fn t(&self) -> u64 {
        self.t
    }
    /// The nominal plan `(horizon, nu)` flattened.
    #[getter]
    fn plan<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.s.u.clone().into_pyarray(py)
    }

    /// The control to apply from state `x`; an exception from a callback leaves the plan as
    /// it was.
    fn command<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let nx = self.mppi.dynamics().nx;
        let x0 = x.as_array().to_vec();
        if x0.len() != nx {
            return Err(value_error(format!("state: expected shape ({nx},), got ({},)", x0.len())));
        }
        if let Some(i) = x0.iter().position(|v| !v.is_finite()) {
            return Err(value_error(format!("state[{i}] = {}: not finite", x0[i])));
        }
        if let Some(f) = &self.sampler {
            use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
            let (h, nu) = (self.p.horizon, self.mppi.dynamics().nu);
            let r = f.bind(py).call1((x0.clone().into_pyarray(py),))?;
            let what = format!(
                "specific_action_sampler: expected a float64 array of shape (n, {h}, {nu})"
            );
            let a = r.cast::<PyArrayDyn<f64>>().map_err(|_| value_error(what.clone()))?;
            let shape = a.shape().to_vec();
            if shape.len() != 3 || shape[1] != h || shape[2] != nu {
                return Err(value_error(format!("{what}, got {shape:?}")));
            }
            let v: Vec<f64> = a.readonly().as_array().iter().copied().collect();
            self.mppi
                .set_specific(&self.p, &mut self.s, &v)
                .map_err(|e| value_error(format!("specific_action_sampler: {e}")))?;
        }
        let key = Key::new(self.seed).fold_in(self.t);
        let nu = self.mppi.dynamics().nu;
        let mut out = vec![0.0; self.p.u_per_command * nu];
        // The state leaves `self` for the call (no copy); on a callback error only the plan
        // (which the shift moved) is put back, the rest is scratch.
        let mut s = std::mem::take(&mut self.s);
        let plan = s.u.clone();
        let err = std::sync::Mutex::new(None::<PyErr>);
        {
            let this = &*self;
            this.mppi.command_keyed_by(key, &this.p, &mut s, &mut out, |ph| match ph {
                kestrel_mppi::Phase::Block { .. } => false,
                kestrel_mppi::Phase::All { ctl, costs } => {
                    // Called on this thread, which holds the GIL.
                    if let Err(e) = this.rollout(&x0, ctl, costs) {
                        costs.fill(f64::INFINITY);
                        if let Ok(mut g) = err.lock() {
                            *g = Some(e);
                        }
                    }
                    true
                }
            });
        }
        if let Some(e) = err.into_inner().ok().flatten() {
            s.u = plan;
            self.s = s;
            return Err(e);
        }
        self.s = s;
        self.t += 1;
        let mut u = vec![0.0; nu];
        <kestrel_mppi::Mppi<Sizes> as Controller>::applied(&self.p, &out[..nu], &mut u);
        Ok(u.into_pyarray(py))
    }

    /// Back to the initial plan and command 0.
    fn reset(&mut self) {
        self.s = self.mppi.init(&self.p);
        self.t = 0;
    }
}
