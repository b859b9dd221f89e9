//! numpy marshalling of the env registry's batches (`kestrel_run::envs`: the env ids, their
//! configs and [`DynBatch`]); the Python classes in `kestrel/vector.py` and `kestrel/envs.py`
//! are thin layers over [`VecCore`].

use crate::errors::{run_error, value_error};
use kestrel_core::{AutoReset, EpisodeStats, Space};
use kestrel_run::Layers;
use kestrel_run::envs::{Actions, DynBatch, EnvId, Obs};
use kestrel_run::info::ArcInfo;
use numpy::{
    PyArray1, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadwriteArray1, PyReadwriteArrayDyn,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;
use std::sync::Arc;

fn space_py<'py>(py: Python<'py>, s: &Space) -> PyResult<Bound<'py, PyAny>> {
    Ok(match s {
        Space::Discrete { n } => ("discrete", *n).into_pyobject(py)?.into_any(),
        Space::Box { low, high, shape } => {
            ("box", *low, *high, PyTuple::new(py, shape)?).into_pyobject(py)?.into_any()
        }
        Space::Dict(parts) => {
            let l = PyList::empty(py);
            for (name, sub) in parts {
                l.append((*name, space_py(py, sub)?))?;
            }
            ("dict", l).into_pyobject(py)?.into_any()
        }
    })
}

fn copy_obs(
    src: Obs<'_>,
    dst: &Bound<'_, PyAny>,
    rows: Option<&[bool]>,
    per: usize,
) -> PyResult<()> {
    fn put<T: numpy::Element + Copy + Send + Sync>(
        src: &[T],
        dst: &Bound<'_, PyAny>,
        rows: Option<&[bool]>,
        per: usize,
    ) -> PyResult<()> {
        let mut d: PyReadwriteArrayDyn<'_, T> = dst.extract()?;
        let out = d.as_slice_mut().map_err(|_| value_error("obs buffer: not contiguous"))?;
        if out.len() != src.len() {
            return Err(value_error(format!(
                "obs buffer: expected {} values, got {}",
                src.len(),
                out.len()
            )));
        }
        match rows {
            // Large batches (ARC: 0.9 MB at 1,024 rows) are copied by the pool's threads.
            None if std::mem::size_of_val(src) >= 1 << 18 => {
                let chunk = (1 << 16) / size_of::<T>();
                out.par_chunks_mut(chunk)
                    .zip(src.par_chunks(chunk))
                    .for_each(|(o, s)| o.copy_from_slice(s));
            }
            None => out.copy_from_slice(src),
            Some(m) => {
                for (i, _) in m.iter().enumerate().filter(|(_, b)| **b) {
                    out[i * per..(i + 1) * per].copy_from_slice(&src[i * per..(i + 1) * per]);
                }
            }
        }
        Ok(())
    }
    match src {
        Obs::F32(v) => put(v, dst, rows, per),
        Obs::F64(v) => put(v, dst, rows, per),
        Obs::I8(v) => put(v, dst, rows, per),
    }
}

/// A writable numpy observation buffer, borrowed while the GIL is held.
enum ObsGuard<'py> {
    F32(PyReadwriteArrayDyn<'py, f32>),
    F64(PyReadwriteArrayDyn<'py, f64>),
    I8(PyReadwriteArrayDyn<'py, i8>),
}

/// Its contiguous elements, usable without the GIL.
enum ObsMut<'a> {
    F32(&'a mut [f32]),
    F64(&'a mut [f64]),
    I8(&'a mut [i8]),
}

impl ObsMut<'_> {
    fn bytes(&self) -> usize {
        match self {
            ObsMut::F32(s) => std::mem::size_of_val(*s),
            ObsMut::F64(s) => std::mem::size_of_val(*s),
            ObsMut::I8(s) => std::mem::size_of_val(*s),
        }
    }
}

impl<'py> ObsGuard<'py> {
    fn new(dst: &Bound<'py, PyAny>, dtype: &str) -> PyResult<Self> {
        Ok(match dtype {
            "float32" => ObsGuard::F32(dst.extract()?),
            "float64" => ObsGuard::F64(dst.extract()?),
            _ => ObsGuard::I8(dst.extract()?),
        })
    }
    fn slice(&mut self) -> PyResult<ObsMut<'_>> {
        let err = |_| value_error("obs buffer: not contiguous");
        Ok(match self {
            ObsGuard::F32(a) => ObsMut::F32(a.as_slice_mut().map_err(err)?),
            ObsGuard::F64(a) => ObsMut::F64(a.as_slice_mut().map_err(err)?),
            ObsGuard::I8(a) => ObsMut::I8(a.as_slice_mut().map_err(err)?),
        })
    }
}

/// Copies a whole observation column (large ones by the current pool's threads).
fn copy_all(src: Obs<'_>, dst: ObsMut<'_>) -> Result<(), String> {
    fn go<T: Copy + Send + Sync>(src: &[T], out: &mut [T]) -> Result<(), String> {
        if out.len() != src.len() {
            return Err(format!("obs buffer: expected {} values, got {}", src.len(), out.len()));
        }
        if std::mem::size_of_val(src) >= 1 << 18 {
            let chunk = (1 << 16) / size_of::<T>();
            out.par_chunks_mut(chunk)
                .zip(src.par_chunks(chunk))
                .for_each(|(o, s)| o.copy_from_slice(s));
        } else {
            out.copy_from_slice(src);
        }
        Ok(())
    }
    match (src, dst) {
        (Obs::F32(s), ObsMut::F32(d)) => go(s, d),
        (Obs::F64(s), ObsMut::F64(d)) => go(s, d),
        (Obs::I8(s), ObsMut::I8(d)) => go(s, d),
        _ => Err("obs buffer: wrong dtype".into()),
    }
}

fn copy_into<T: numpy::Element + Copy>(
    what: &str,
    src: &[T],
    dst: &mut PyReadwriteArray1<'_, T>,
) -> PyResult<()> {
    let out = dst.as_slice_mut().map_err(|_| value_error(format!("{what}: not contiguous")))?;
    if out.len() != src.len() {
        return Err(value_error(format!(
            "{what}: expected {} values, got {}",
            src.len(),
            out.len()
        )));
    }
    out.copy_from_slice(src);
    Ok(())
}

/// Per-env flags repeated for each agent row.
fn expand(
    src: &[bool],
    agents: usize,
    dst: &mut PyReadwriteArray1<'_, bool>,
    what: &str,
) -> PyResult<()> {
    if agents == 1 {
        return copy_into(what, src, dst);
    }
    let out = dst.as_slice_mut().map_err(|_| value_error(format!("{what}: not contiguous")))?;
    if out.len() != src.len() * agents {
        return Err(value_error(format!("{what}: expected {} values", src.len() * agents)));
    }
    for (o, s) in out.chunks_exact_mut(agents).zip(src) {
        o.fill(*s);
    }
    Ok(())
}

/// The Rust side of `kestrel.vector.VectorEnv`: a batch of one env, stepped with the GIL
/// released. Rows are agent rows (`num_envs × num_agents`).
#[pyclass(module = "kestrel._kestrel")]
pub(crate) struct VecCore {
    inner: Option<Box<dyn DynBatch>>,
    /// A step running on a background thread (`step_async`).
    pending: Option<std::thread::JoinHandle<Box<dyn DynBatch>>>,
    id: EnvId,
    agents: usize,
    obs_len: usize,
    /// The env's own thread pool (`num_threads`); the process's rayon pool when absent.
    pool: Option<Arc<rayon::ThreadPool>>,
    /// Episode returns and lengths for `info["episode"]`, counted after every step.
    stats: EpisodeStats,
    /// The clock of the statistics' wall seconds (the front end reads the time; the core
    /// library takes it as a number).
    born: std::time::Instant,
    /// The autoreset mode the stats count under.
    mode: AutoReset,
    /// ARC's info columns (similarity, improvement, operation, step); None for other envs.
    arc: Option<ArcInfo>,
}

/// Runs `f` on `pool` (or the global rayon pool). With `merge` (calls with several parallel
/// phases: packing ARC selections, stepping, copying large observations) the whole call runs
/// inside one pool worker, one hand-off from the Python thread instead of one per phase;
/// small calls run on the calling thread (a hand-off costs tens of microseconds when the
/// workers sleep).
fn on<R: Send>(
    pool: &Option<Arc<rayon::ThreadPool>>,
    merge: bool,
    f: impl FnOnce() -> R + Send,
) -> R {
    match pool {
        Some(p) => p.install(f),
        None if merge => {
            let mut out = None;
            rayon::scope(|_| out = Some(f()));
            out.expect("rayon::scope runs its body")
        }
        None => f(),
    }
}

impl VecCore {
    /// Counts the step just taken in the episode statistics; returns the agent rows whose
    /// episode ended (the Python layer reads the statistics only when some did). ARC's info
    /// columns are updated by the step's own pool task (`step`) or here (`step_wait`).
    fn count_step(&mut self) -> PyResult<usize> {
        let Some(v) = self.inner.as_ref() else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        let now = self.now();
        self.stats.record(self.mode, v.rewards(), v.terminated(), v.truncated(), now);
        Ok(self.stats.done().iter().filter(|&&d| d).count())
    }

    /// Seconds since the batch was made.
    fn now(&self) -> f64 {
        self.born.elapsed().as_secs_f64()
    }

    fn get(&self) -> PyResult<&dyn DynBatch> {
        match (&self.inner, &self.pending) {
            (Some(v), _) => Ok(v.as_ref()),
            (None, Some(_)) => {
                Err(PyRuntimeError::new_err("a step is in flight (step_async without step_wait)"))
            }
            (None, None) => Err(PyRuntimeError::new_err("the env is closed")),
        }
    }
    fn get_mut(&mut self) -> PyResult<&mut Box<dyn DynBatch>> {
        match (&mut self.inner, &self.pending) {
            (Some(v), _) => Ok(v),
            (None, Some(_)) => {
                Err(PyRuntimeError::new_err("a step is in flight (step_async without step_wait)"))
            }
            (None, None) => Err(PyRuntimeError::new_err("the env is closed")),
        }
    }
}

fn actions_from<'a>(
    ints: &'a Option<PyReadonlyArray1<'_, i64>>,
    floats: &'a Option<PyReadonlyArray1<'_, f64>>,
    sel: &'a Option<PyReadonlyArray1<'_, u8>>,
    coords: &'a Option<PyReadonlyArray1<'_, i64>>,
) -> PyResult<Actions<'a>> {
    let slice_err = |_| value_error("actions: not contiguous");
    Ok(match (ints, floats, sel, coords) {
        (Some(i), None, Some(s), None) => Actions::Arc {
            ops: i.as_slice().map_err(slice_err)?,
            sel: s.as_slice().map_err(slice_err)?,
        },
        (Some(i), None, None, Some(c)) => Actions::ArcCoords {
            ops: i.as_slice().map_err(slice_err)?,
            coords: c.as_slice().map_err(slice_err)?,
        },
        (Some(i), None, None, None) => Actions::Int(i.as_slice().map_err(slice_err)?),
        (None, Some(f), None, None) => Actions::Float(f.as_slice().map_err(slice_err)?),
        _ => {
            return Err(value_error(
                "actions: give integers, floats, or ARC's (operation, selection or coordinates)",
            ));
        }
    })
}

#[pymethods]
impl VecCore {
    /// `VecCore(env_id, num_envs, seed, params_json, row_offset=0, num_threads=None,
    /// config_file=None)`: the env's params from its defaults, then `config_file` (TOML), then
    /// the dict's keys.
    #[new]
    #[pyo3(signature = (env_id, num_envs, seed, params_json, row_offset=0, num_threads=None, config_file=None))]
    fn new(
        env_id: &str,
        num_envs: i64,
        seed: u64,
        params_json: &str,
        row_offset: u64,
        num_threads: Option<i64>,
        config_file: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        if num_envs < 1 {
            return Err(value_error(format!("num_envs = {num_envs}: at least 1")));
        }
        let pool = match num_threads {
            None => None,
            Some(n) if !(1..=1024).contains(&n) => {
                return Err(value_error(format!("num_threads = {n}: 1 to 1024, or None")));
            }
            Some(n) => Some(Arc::new(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n as usize)
                    .build()
                    .map_err(|e| value_error(format!("num_threads = {n}: {e}")))?,
            )),
        };
        let table = crate::config::json_table(params_json)?;
        let id = EnvId::parse(env_id).map_err(run_error)?;
        let inner = id
            .build(
                Layers { file: config_file.as_deref(), ..Layers::table(&table) },
                num_envs as usize,
                seed,
                row_offset,
            )
            .map_err(run_error)?;
        let (agents, obs_len) = (inner.spec().num_agents, inner.spec().obs_len());
        let stats = EpisodeStats::new(inner.num_envs(), agents, 0.0);
        let arc = ArcInfo::new(inner.as_ref());
        Ok(VecCore {
            arc,
            inner: Some(inner),
            pending: None,
            id,
            agents,
            obs_len,
            pool,
            stats,
            born: std::time::Instant::now(),
            mode: AutoReset::SameStep,
        })
    }

    /// `{"obs": space, "action": space, "num_agents", "max_episode_steps", "obs_dtype",
    /// "num_envs"}`; a space is `("discrete", n)`, `("box", low, high, shape)` or
    /// `("dict", [(name, space), ...])`.
    fn spec<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let v = self.get()?;
        let s = v.spec();
        let d = PyDict::new(py);
        d.set_item("obs", space_py(py, &s.obs_space)?)?;
        d.set_item("action", space_py(py, &s.action_space)?)?;
        d.set_item("num_agents", s.num_agents)?;
        d.set_item("max_episode_steps", s.max_episode_steps)?;
        d.set_item("reward_threshold", self.id.reward_threshold())?;
        d.set_item("obs_dtype", v.obs_dtype())?;
        d.set_item("num_envs", v.num_envs())?;
        d.set_item("id", self.id.name())?;
        d.set_item("render_modes", self.id.render_modes().to_vec())?;
        d.set_item("render_fps", self.id.render_fps())?;
        d.set_item("arc_info", self.arc.is_some())?;
        Ok(d)
    }

    /// Autoreset: "same-step", "next-step" or "disabled".
    fn set_autoreset(&mut self, mode: &str) -> PyResult<()> {
        let m = match mode {
            "same-step" => AutoReset::SameStep,
            "next-step" => AutoReset::NextStep,
            "disabled" => AutoReset::Disabled,
            other => {
                return Err(value_error(format!(
                    "autoreset_mode {other:?}: one of same-step, next-step, disabled"
                )));
            }
        };
        self.get_mut()?.set_autoreset(m);
        self.mode = m;
        Ok(())
    }

    /// Resets every row from `seed` (rows draw keys from (seed, step, global row)).
    fn reset(&mut self, py: Python<'_>, seed: u64) -> PyResult<()> {
        let pool = self.pool.clone();
        let v = self.get_mut()?;
        py.detach(|| on(&pool, false, || v.reset(seed)));
        let now = self.now();
        self.stats.reset(now);
        if let (Some(a), Some(v)) = (self.arc.as_mut(), self.inner.as_ref()) {
            a.after_reset(v.as_ref(), None);
        }
        Ok(())
    }

    /// Resets the envs where `mask` (one per env, not per agent row) is true.
    fn reset_rows(&mut self, mask: PyReadonlyArray1<'_, bool>) -> PyResult<()> {
        let m = mask.as_slice().map_err(|_| value_error("reset_mask: not contiguous"))?.to_vec();
        self.get_mut()?.reset_rows(&m).map_err(value_error)?;
        let now = self.now();
        self.stats.reset_envs(&m, now);
        if let (Some(a), Some(v)) = (self.arc.as_mut(), self.inner.as_ref()) {
            a.after_reset(v.as_ref(), Some(&m));
        }
        Ok(())
    }

    /// Loads actions then steps every row, both with the GIL released; with output arrays
    /// given, copies the results into them as [`VecCore::read`] does (one call per step).
    /// Returns the number of agent rows whose episode ended.
    #[pyo3(signature = (ints=None, floats=None, sel=None, coords=None, obs=None, rewards=None, terminated=None, truncated=None))]
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        py: Python<'_>,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
        coords: Option<PyReadonlyArray1<'_, i64>>,
        obs: Option<&Bound<'_, PyAny>>,
        rewards: Option<PyReadwriteArray1<'_, f32>>,
        terminated: Option<PyReadwriteArray1<'_, bool>>,
        truncated: Option<PyReadwriteArray1<'_, bool>>,
    ) -> PyResult<usize> {
        let a = actions_from(&ints, &floats, &sel, &coords)?;
        let pool = self.pool.clone();
        let dtype = self.get()?.obs_dtype();
        let mut guard = obs.map(|o| ObsGuard::new(o, dtype)).transpose()?;
        let out = guard.as_mut().map(|g| g.slice()).transpose()?;
        self.get()?;
        let (Some(v), arc) = (self.inner.as_mut(), self.arc.as_mut()) else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        // The action arrays are read-only borrows held for the call (rust-numpy's borrow
        // flags); the Python layer hands in arrays it owns or fresh conversions. Loading,
        // stepping, ARC's info and copying the observations run in one pool task without the
        // GIL (a second hand-off for the info cost about 10 µs a step at 1,024 envs).
        let merge = out.as_ref().is_some_and(|o| o.bytes() >= 1 << 18);
        py.detach(|| {
            on(&pool, merge, || {
                v.load_actions(&a)?;
                v.step();
                if let Some(arc) = arc {
                    arc.after_step(v.as_ref());
                }
                match out {
                    Some(o) => copy_all(v.obs(), o),
                    None => Ok(()),
                }
            })
        })
        .map_err(value_error)?;
        drop(guard);
        let ended = self.count_step()?;
        if let (Some(mut r), Some(mut te), Some(mut tr)) = (rewards, terminated, truncated) {
            let v = self.get()?;
            copy_into("rewards", v.rewards(), &mut r)?;
            expand(v.terminated(), self.agents, &mut te, "terminated")?;
            expand(v.truncated(), self.agents, &mut tr, "truncated")?;
        }
        Ok(ended)
    }

    /// Loads actions and starts the step on a background thread; `step_wait` joins it.
    #[pyo3(signature = (ints=None, floats=None, sel=None, coords=None))]
    fn step_async(
        &mut self,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
        coords: Option<PyReadonlyArray1<'_, i64>>,
    ) -> PyResult<()> {
        if self.pending.is_some() {
            return Err(PyRuntimeError::new_err(
                "step_async called twice: call step_wait for the pending step first",
            ));
        }
        let a = actions_from(&ints, &floats, &sel, &coords)?;
        self.get_mut()?.load_actions(&a).map_err(value_error)?;
        let Some(mut v) = self.inner.take() else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        let pool = self.pool.clone();
        self.pending = Some(std::thread::spawn(move || {
            on(&pool, false, || v.step());
            v
        }));
        Ok(())
    }

    /// Waits for the step started by `step_async` (GIL released while waiting); returns the
    /// number of agent rows whose episode ended.
    fn step_wait(&mut self, py: Python<'_>) -> PyResult<usize> {
        let Some(h) = self.pending.take() else {
            return Err(PyRuntimeError::new_err("step_wait called without a pending step_async"));
        };
        match py.detach(|| h.join()) {
            Ok(v) => {
                if let Some(arc) = self.arc.as_mut() {
                    let pool = &self.pool;
                    py.detach(|| on(pool, false, || arc.after_step(v.as_ref())));
                }
                self.inner = Some(v);
                self.count_step()
            }
            Err(_) => Err(PyRuntimeError::new_err("the background step failed")),
        }
    }

    /// Copies the last step's results into the given arrays (observations flat or shaped,
    /// rewards f32, terminated and truncated bool per agent row, episode steps u32 per env).
    #[pyo3(signature = (obs, rewards, terminated, truncated, episode_steps=None))]
    fn read(
        &self,
        obs: &Bound<'_, PyAny>,
        mut rewards: PyReadwriteArray1<'_, f32>,
        mut terminated: PyReadwriteArray1<'_, bool>,
        mut truncated: PyReadwriteArray1<'_, bool>,
        episode_steps: Option<PyReadwriteArray1<'_, u32>>,
    ) -> PyResult<()> {
        let v = self.get()?;
        copy_obs(v.obs(), obs, None, 0)?;
        copy_into("rewards", v.rewards(), &mut rewards)?;
        expand(v.terminated(), self.agents, &mut terminated, "terminated")?;
        expand(v.truncated(), self.agents, &mut truncated, "truncated")?;
        if let Some(mut e) = episode_steps {
            copy_into("episode_steps", v.episode_steps(), &mut e)?;
        }
        Ok(())
    }

    /// Copies the current observations only.
    fn read_obs(&self, obs: &Bound<'_, PyAny>) -> PyResult<()> {
        copy_obs(self.get()?.obs(), obs, None, 0)
    }

    /// Copies the final observations of the agent rows where `mask` is true.
    fn read_final_obs(
        &self,
        obs: &Bound<'_, PyAny>,
        mask: PyReadonlyArray1<'_, bool>,
    ) -> PyResult<()> {
        let m = mask.as_slice().map_err(|_| value_error("mask: not contiguous"))?;
        copy_obs(self.get()?.final_obs(), obs, Some(m), self.obs_len)
    }

    /// Starts env `row` from a given state (CartPole, Pendulum, control systems).
    fn set_state(&mut self, row: usize, state: Vec<f64>) -> PyResult<()> {
        self.get_mut()?.set_state(row, &state).map_err(value_error)?;
        let mut mask = vec![false; self.get()?.num_envs()];
        mask[row] = true;
        let now = self.now();
        self.stats.reset_envs(&mask, now);
        Ok(())
    }

    /// The statistics of the episodes that ended in the last step, as Gymnasium's vector
    /// `RecordEpisodeStatistics` reports them: per agent row the return, the length and the
    /// wall seconds where an episode ended, 0 elsewhere, and in `ended` whether it did.
    fn read_episode(
        &self,
        mut returns: PyReadwriteArray1<'_, f64>,
        mut lengths: PyReadwriteArray1<'_, i64>,
        mut seconds: PyReadwriteArray1<'_, f64>,
        mut ended: PyReadwriteArray1<'_, bool>,
    ) -> PyResult<()> {
        let s = &self.stats;
        let n = s.done().len();
        let (r, l) = (returns.as_slice_mut(), lengths.as_slice_mut());
        let (t, e) = (seconds.as_slice_mut(), ended.as_slice_mut());
        let (Ok(r), Ok(l), Ok(t), Ok(e)) = (r, l, t, e) else {
            return Err(value_error("episode statistics: arrays must be contiguous"));
        };
        if r.len() != n || l.len() != n || t.len() != n || e.len() != n {
            return Err(value_error(format!("episode statistics: expected {n} rows")));
        }
        e.copy_from_slice(s.done());
        let finals = s.final_returns().iter().zip(s.final_lengths()).zip(s.final_seconds());
        let outs = r.iter_mut().zip(l.iter_mut()).zip(t.iter_mut());
        for ((&d, ((&fr, &fl), &ft)), ((r, l), t)) in s.done().iter().zip(finals).zip(outs) {
            (*r, *l, *t) = if d { (fr, fl as i64, ft) } else { (0.0, 0, 0.0) };
        }
        Ok(())
    }

    /// A picture of env `row` as an `(H, W, 3)` uint8 array (Gymnasium's `rgb_array`).
    fn render<'py>(&self, py: Python<'py>, row: usize) -> PyResult<Bound<'py, PyArray3<u8>>> {
        let f = self.get()?.render(row).map_err(run_error)?;
        let flat = PyArray1::from_vec(py, f.rgb);
        flat.reshape([f.height, f.width, 3])
    }

    /// Env `row` as text (Gymnasium's `ansi`), or None where the env has no text form.
    fn render_text(&self, row: usize) -> PyResult<Option<String>> {
        self.get()?.render_text(row).map_err(run_error)
    }

    /// ARC's info columns after the last reset or step, one per env: similarity to the target
    /// (f32), its change over the step (f32), the operation (i64, -1 at an episode's start),
    /// the step count (i64). False (nothing written) for envs without them.
    fn read_arc_info(
        &self,
        mut similarity: PyReadwriteArray1<'_, f32>,
        mut improvement: PyReadwriteArray1<'_, f32>,
        mut operation: PyReadwriteArray1<'_, i64>,
        mut step: PyReadwriteArray1<'_, i64>,
    ) -> PyResult<bool> {
        self.get()?;
        let Some(a) = self.arc.as_ref() else { return Ok(false) };
        copy_into("similarity", &a.similarity, &mut similarity)?;
        copy_into("improvement", &a.improvement, &mut improvement)?;
        copy_into("operation", &a.operation, &mut operation)?;
        copy_into("step", &a.step, &mut step)?;
        Ok(true)
    }

    /// The state of env `row` as floats (empty where the env has no flat state).
    fn state(&self, row: usize) -> PyResult<Vec<f64>> {
        Ok(self.get()?.state(row))
    }

    /// Frees the envs; later calls raise RuntimeError.
    fn close(&mut self, py: Python<'_>) {
        if let Some(h) = self.pending.take() {
            let _ = py.detach(|| h.join());
        }
        self.inner = None;
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none() && self.pending.is_none()
    }
}

/// `[(id, description, reward_threshold, render_modes, render_fps), ...]`.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub(crate) fn list_envs() -> Vec<(String, String, Option<f64>, Vec<&'static str>, u32)> {
    EnvId::all()
        .into_iter()
        .map(|id| {
            let modes = id.render_modes().to_vec();
            (id.name(), id.about(), id.reward_threshold(), modes, id.render_fps())
        })
        .collect()
}

/// ARC's operation names in id order for `mode` (`"o2arc"`: ARCLE's, `"jaxarc"`: JaxARC's).
#[pyfunction]
pub(crate) fn arc_operations(mode: &str) -> PyResult<Vec<&'static str>> {
    match mode {
        "o2arc" => Ok(kestrel_arc::O2ARC_OPS.to_vec()),
        "jaxarc" => Ok(kestrel_arc::JAXARC_OPS.to_vec()),
        other => Err(value_error(format!("mode {other:?}: \"o2arc\" or \"jaxarc\""))),
    }
}
