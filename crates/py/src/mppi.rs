//! MPPI-family controllers over the built-in systems for Python (`kestrel.mppi`).

use crate::errors::{run_error, value_error};
use kestrel_core::Key;
use kestrel_mppi::presets::ControllerVisitor;
use kestrel_mppi::{Controller, Dynamics, MppiRunConfig, System};
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
impl<D: Dynamics + 'static> ControllerVisitor<D> for Make {
    type Output = Box<dyn DynCtl>;
    fn visit<C: Controller<Dyn = D> + 'static>(self, c: C, p: C::Params) -> Box<dyn DynCtl> {
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
    kestrel_run::registry::load::<kestrel_run::runs::mppi::MppiRun>(
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
    System::ALL.iter().map(|s| s.name()).collect()
}

/// Dynamics outside Rust: only the sizes; the rollouts are the Python callback's.
#[derive(Clone, Copy, Debug)]
struct External {
    nx: usize,
    nu: usize,
}

impl Dynamics for External {
    fn nx(&self) -> usize {
        self.nx
    }
    fn nu(&self) -> usize {
        self.nu
    }
    /// Never called: [`Phase::All`] rolls out in Python.
    fn step(&self, x: &[f64], _u: &[f64], _t: usize, next: &mut [f64]) {
        next.copy_from_slice(x);
    }
    fn running_cost(&self, _x: &[f64], _u: &[f64], _t: usize) -> f64 {
        0.0
    }
}

/// MPPI over batched Python dynamics: `dynamics(x (K, nx), u (K, nu), t) -> (K, nx)` and
/// `running_cost(x, u, t) -> (K,)` are called once per horizon step for all K samples;
/// `terminal_cost(x) -> (K,)` once. Sampling, weights and the update are Kestrel's MPPI
/// (the same code as the built-in systems'); the normals of command `t` come from
/// `Key(seed).fold_in(t)`.
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct ExternalMppi {
    mppi: kestrel_mppi::Mppi<External>,
    p: kestrel_mppi::MppiParams,
    s: kestrel_mppi::MppiState,
    dynamics: Py<PyAny>,
    running_cost: Py<PyAny>,
    terminal_cost: Option<Py<PyAny>>,
    seed: u64,
    t: u64,
}

impl ExternalMppi {
    /// Rolls every sample out through the callbacks; costs = Σ running + terminal.
    fn rollout(&self, py: Python<'_>, x0: &[f64], ctl: &[f64], costs: &mut [f64]) -> PyResult<()> {
        use numpy::ndarray::Array2;
        use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
        let (k, t, nx, nu) =
            (self.p.num_samples, self.p.horizon, x0.len(), self.mppi.dynamics().nu);
        let jax = self.p.convention == kestrel_mppi::Convention::JaxMppi;
        let mut x = Array2::from_shape_fn((k, nx), |(_, j)| x0[j]);
        costs.fill(0.0);
        let add = |costs: &mut [f64], c: Bound<'_, PyAny>, what: &str| -> PyResult<()> {
            let c: PyReadonlyArray1<'_, f64> = c.extract().map_err(|_| {
                value_error(format!("{what}: expected a float64 array of shape ({k},)"))
            })?;
            if c.shape() != [k] {
                return Err(value_error(format!(
                    "{what}: expected shape ({k},), got {:?}",
                    c.shape()
                )));
            }
            for (a, b) in costs.iter_mut().zip(c.as_array().iter()) {
                *a += b;
            }
            Ok(())
        };
        for tt in 0..t {
            let u = Array2::from_shape_fn((k, nu), |(s, i)| ctl[(s * t + tt) * nu + i]);
            let (xa, ua) = (x.clone().into_pyarray(py), u.into_pyarray(py));
            if jax {
                add(costs, self.running_cost.bind(py).call1((&xa, &ua, tt))?, "running_cost")?;
            }
            let next = self.dynamics.bind(py).call1((&xa, &ua, tt))?;
            let next: PyReadonlyArray2<'_, f64> = next.extract().map_err(|_| {
                value_error(format!("dynamics: expected a float64 array of shape ({k}, {nx})"))
            })?;
            if next.shape() != [k, nx] {
                return Err(value_error(format!(
                    "dynamics: expected shape ({k}, {nx}), got {:?}",
                    next.shape()
                )));
            }
            x = next.as_array().to_owned();
            if !jax {
                let xn = x.clone().into_pyarray(py);
                add(costs, self.running_cost.bind(py).call1((&xn, &ua, tt))?, "running_cost")?;
            }
        }
        if let Some(term) = &self.terminal_cost {
            add(costs, term.bind(py).call1((x.into_pyarray(py),))?, "terminal_cost")?;
        }
        Ok(())
    }
}

#[pymethods]
impl ExternalMppi {
    /// `ExternalMppi(nx, nu, params_json, dynamics, running_cost, terminal_cost=None, seed=0)`:
    /// `params_json` holds `MppiParams` keys (`num_samples`, `horizon`, `lambda`,
    /// `noise_sigma`, `u_min`, `u_max`, ...) over `MppiParams::new(nu, 1.0)`.
    #[new]
    #[pyo3(signature = (nx, nu, params_json, dynamics, running_cost, terminal_cost=None, seed=0))]
    fn new(
        nx: usize,
        nu: usize,
        params_json: &str,
        dynamics: Py<PyAny>,
        running_cost: Py<PyAny>,
        terminal_cost: Option<Py<PyAny>>,
        seed: u64,
    ) -> PyResult<Self> {
        if nx == 0 || nx > kestrel_mppi::MAX_NX || nu == 0 || nu > kestrel_mppi::MAX_NU {
            return Err(value_error(format!(
                "nx = {nx}, nu = {nu}: expected 1 to {} states and 1 to {} controls",
                kestrel_mppi::MAX_NX,
                kestrel_mppi::MAX_NU
            )));
        }
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
        if p.precision != kestrel_mppi::Precision::F64 {
            return Err(value_error(
                "precision = \"f32\": callback dynamics run in f64 (the f32 lanes are for built-in systems)",
            ));
        }
        let mppi = kestrel_mppi::Mppi::new(External { nx, nu });
        mppi.validate(&p).map_err(value_error)?;
        let s = mppi.init(&p);
        Ok(ExternalMppi { mppi, p, s, dynamics, running_cost, terminal_cost, seed, t: 0 })
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
                    if let Err(e) = Python::attach(|py| this.rollout(py, &x0, ctl, costs)) {
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
        <kestrel_mppi::Mppi<External> as Controller>::applied(&self.p, &out[..nu], &mut u);
        Ok(u.into_pyarray(py))
    }

    /// Back to the initial plan and command 0.
    fn reset(&mut self) {
        self.s = self.mppi.init(&self.p);
        self.t = 0;
    }
}
