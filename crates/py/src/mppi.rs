//! MPPI-family controllers over the built-in systems for Python (`kestrel.mppi`).

use crate::errors::{run_error, value_error};
use kestrel_core::Key;
use kestrel_mppi::presets::ControllerVisitor;
use kestrel_mppi::{Controller, ControllerKind, Dynamics, MppiRunConfig, System};
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

/// `kestrel mppi run`'s config from the defaults of (controller, system) and a JSON dict of
/// overrides (the same two passes as the CLI).
pub(crate) fn mppi_config(json: &str) -> PyResult<MppiRunConfig> {
    let table = crate::runs::json_table(json)?;
    let first = kestrel_run::load_config(
        &MppiRunConfig::defaults(ControllerKind::Mppi, System::Pendulum),
        None,
        table.clone(),
        &[],
    )
    .map_err(run_error)?;
    let d = MppiRunConfig::defaults_for(first.controller, first.system, first.steps, first.seed);
    kestrel_run::load_config(&d, None, table, &[]).map_err(run_error)
}

#[pymethods]
impl MppiController {
    /// `MppiController(config_json)`: keys as in `kestrel mppi run --config` (`system`,
    /// `controller`, `seed`, `mppi.lambda`, ...).
    #[new]
    fn new(config_json: &str) -> PyResult<Self> {
        let config = mppi_config(config_json)?;
        config.validate().map_err(value_error)?;
        let ctl = config.with_controller(config.system, Make).map_err(value_error)?;
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
