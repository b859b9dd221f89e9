//! numpy marshalling of the env registry's batches (`kestrel_run::envs`: the env ids, their
//! configs and [`DynBatch`]); the Python classes in `kestrel/vector.py` and `kestrel/envs.py`
//! are thin layers over [`VecCore`].

use crate::errors::{run_error, value_error};
use kestrel_core::{AutoReset, EpisodeColumns, EpisodeStats, Space};
use kestrel_run::Layers;
use kestrel_run::envs::{
    Actions, DynBatch, EnvId, Obs, ObsMut, Rollout, copy_column, rollout_counted, spread_flags,
};
use kestrel_run::info::{ArcColumns, ArcInfo};
use numpy::ndarray::ArrayView1;
use numpy::{
    PyArray1, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadwriteArray1, PyReadwriteArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
    spread_flags(src, agents, out, |x| x);
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
    /// Where the steps run in parallel.
    pool: Pool,
    /// Episode returns and lengths for `info["episode"]`, counted after every step.
    stats: EpisodeStats,
    /// The clock of the statistics' wall seconds (the front end reads the time; the core
    /// library takes it as a number).
    born: std::time::Instant,
    /// The autoreset mode the stats count under.
    mode: AutoReset,
    /// ARC's info columns (similarity, improvement, operation, step); None for other envs.
    arc: Option<ArcInfo>,
    /// ARC's strided coordinate columns of the step, copied from Python's arrays ([`columns`]).
    coords: Vec<i64>,
    /// The step output buffer ([`VecCore::set_step_out`], written by [`VecCore::write_out`]).
    step_out: Option<Py<PyArray1<u8>>>,
    /// The rows of `step_out` holding an ended episode's statistics (zeroed at the next write).
    published: Vec<usize>,
    /// The byte buffer ARC's info columns go to after each reset and step
    /// ([`VecCore::set_arc_out`]).
    arc_out: Option<Py<PyArray1<u8>>>,
}

/// `info["episode"]`'s buffers of a rollout: returns, lengths, wall seconds and the mask.
type Episode<'py> = (
    PyReadwriteArray1<'py, f64>,
    PyReadwriteArray1<'py, i64>,
    PyReadwriteArray1<'py, f64>,
    PyReadwriteArray1<'py, bool>,
);

/// Bytes per agent row of the step output buffer ([`VecCore::write_out`]).
const OUT_BYTES: usize = 31;

/// Writes `src` into `dst` as native-endian bytes: the blocks of one byte buffer that Python
/// reads through numpy views of their own dtypes (one borrow of the buffer instead of one per
/// column).
fn put<T: Copy, const W: usize>(dst: &mut [u8], src: &[T], bytes: impl Fn(T) -> [u8; W]) {
    // Whole-array stores (`as_chunks_mut`), which the compiler vectorises.
    for (d, &x) in dst.as_chunks_mut::<W>().0.iter_mut().zip(src) {
        *d = bytes(x);
    }
}

/// ARC's info columns into their buffer's four blocks ([`VecCore::set_arc_out`]).
fn write_arc(c: &ArcColumns, b: &mut [u8]) {
    let n = c.similarity.len();
    let (sim, rest) = b.split_at_mut(4 * n);
    let (imp, rest) = rest.split_at_mut(4 * n);
    let (op, st) = rest.split_at_mut(8 * n);
    put(sim, &c.similarity, f32::to_ne_bytes);
    put(imp, &c.improvement, f32::to_ne_bytes);
    put(op, &c.operation, i64::to_ne_bytes);
    put(st, &c.step, i64::to_ne_bytes);
}

/// Checks a buffer for [`VecCore::set_step_out`] or [`VecCore::set_arc_out`]: contiguous,
/// `len` bytes.
fn out_buffer(what: &str, buf: Bound<'_, PyArray1<u8>>, len: usize) -> PyResult<Py<PyArray1<u8>>> {
    let got = PyUntypedArrayMethods::len(&buf);
    if !buf.is_contiguous() || got != len {
        return Err(value_error(format!(
            "{what}: expected a contiguous uint8 array of {len} bytes, got {got} bytes"
        )));
    }
    Ok(buf.unbind())
}

/// Where a batch's parallel work runs.
#[derive(Clone)]
enum Pool {
    /// The process's rayon pool.
    Global,
    /// The batch's own pool (`num_threads`).
    Own(Arc<rayon::ThreadPool>),
    /// [`caller_pool`]: worker 0 is the thread that made the batch.
    Caller(Arc<rayon::ThreadPool>),
}

/// Runs `f` on `pool`. On the caller's pool from its worker 0, right here (the other workers
/// steal parts); from any other thread, as on the global pool, since worker 0 takes no jobs
/// it is handed. On the global pool, with `merge` (calls with several parallel phases: packing
/// ARC selections, stepping, copying large observations) the whole call runs inside one pool
/// worker, one hand-off from the Python thread instead of one per phase; small calls run on
/// the calling thread (a hand-off costs tens of microseconds when the workers sleep).
fn on<R: Send>(pool: &Pool, merge: bool, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Pool::Own(p) => p.install(f),
        Pool::Caller(p) if p.current_thread_index().is_some() => {
            // Workers kept awake after the last step leave now (`keep_awake`).
            CALLS.fetch_add(1, Ordering::Relaxed);
            p.install(f)
        }
        _ if merge => {
            let mut out = None;
            rayon::scope(|_| out = Some(f()));
            out.expect("rayon::scope runs its body")
        }
        _ => f(),
    }
}

/// Calls on the caller's pool ([`on`]); a change tells [`keep_awake`]'s workers to stop.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// How long the caller's pool keeps its other workers awake after a call.
const AWAKE: std::time::Duration = std::time::Duration::from_micros(100);

/// After a step of `rows` agent rows on the caller's pool, keeps its other workers
/// busy-waiting for up to [`AWAKE`], until the next call starts. A rayon worker with nothing
/// to do sleeps after ~30 yields (microseconds), and waking it takes 20–50 µs on a virtual
/// machine; between two steps Python runs for a few microseconds (the Gymnasium layer, a
/// policy), so without this every step paid a wake-up (Mini-ARC, 4,096 envs: a 10 µs pause
/// between steps made the parallel step 100 µs instead of 80). A worker waiting here leaves
/// at once when the next call starts, and finds its work in the caller's deque. Batches of
/// at most 64 rows step on the calling thread alone (one task of the rows kernel, one lane
/// block), so they spawn nothing: at 8 CartPole envs the spawn cost 10% of a step.
fn keep_awake(pool: &Pool, rows: usize) {
    let Pool::Caller(p) = pool else { return };
    if rows <= 64 || p.current_thread_index().is_none() {
        return;
    }
    let call = CALLS.load(Ordering::Relaxed);
    for _ in 1..p.current_num_threads() {
        p.spawn(move || {
            // The job goes to the caller's own deque; if the caller (worker 0) takes it back,
            // waiting inside some other parallel call of its own, it leaves at once.
            if rayon::current_thread_index() == Some(0) {
                return;
            }
            let start = std::time::Instant::now();
            while CALLS.load(Ordering::Relaxed) == call && start.elapsed() < AWAKE {
                for _ in 0..8 {
                    std::hint::spin_loop();
                }
            }
        });
    }
}

impl VecCore {
    /// Counts the step `step_wait` joined in the episode statistics (`step` counts inside its
    /// own pool task); returns the agent rows whose episode ended (the Python layer reads the
    /// statistics only when some did).
    fn count_step(&mut self, py: Python<'_>) -> PyResult<usize> {
        let Some(v) = self.inner.as_ref() else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        let now = self.now();
        self.stats.record(self.mode, v.rewards(), v.terminated(), v.truncated(), now);
        self.publish_arc(py)?;
        Ok(self.ended())
    }

    /// The last step's rewards, flags and episode statistics into the step output buffer, if
    /// Python registered one ([`VecCore::set_step_out`]); returns the number of agent rows
    /// whose episode ended.
    fn write_out(&mut self, py: Python<'_>) -> PyResult<usize> {
        let VecCore { inner, stats: s, published, agents, step_out, .. } = self;
        let Some(buf) = step_out.as_ref() else { return Ok(self.ended()) };
        let v = inner.as_deref().ok_or_else(|| PyRuntimeError::new_err("the env is closed"))?;
        let mut rw = buf.bind(py).try_readwrite().map_err(|e| value_error(e.to_string()))?;
        let b = rw.as_slice_mut().map_err(|e| value_error(e.to_string()))?;
        let n = s.done().len();
        let (ep, rest) = b.split_at_mut(24 * n);
        let (rew, rest) = rest.split_at_mut(4 * n);
        let (te, rest) = rest.split_at_mut(n);
        let (tr, ended) = rest.split_at_mut(n);
        put(rew, v.rewards(), f32::to_ne_bytes);
        spread_flags(v.terminated(), *agents, te, u8::from);
        spread_flags(v.truncated(), *agents, tr, u8::from);
        let mut row = |i: usize, r: f64, l: u64, t: f64, e: bool| {
            ep[8 * i..][..8].copy_from_slice(&r.to_ne_bytes());
            ep[8 * (n + i)..][..8].copy_from_slice(&(l as i64).to_ne_bytes());
            ep[8 * (2 * n + i)..][..8].copy_from_slice(&t.to_ne_bytes());
            ended[i] = u8::from(e);
        };
        // Only the rows that change (a few a step, not the batch): those written last time
        // back to 0, then the rows that ended now (Python's views of them are read-only).
        for i in published.drain(..) {
            row(i, 0.0, 0, 0.0, false);
        }
        let (fr, fl, ft) = (s.final_returns(), s.final_lengths(), s.final_seconds());
        for (i, _) in s.done().iter().enumerate().filter(|(_, d)| **d) {
            row(i, fr[i], fl[i], ft[i], true);
            published.push(i);
        }
        Ok(published.len())
    }

    /// ARC's current info columns into their buffer, if Python registered one.
    fn publish_arc(&self, py: Python<'_>) -> PyResult<()> {
        let (Some(buf), Some(a)) = (&self.arc_out, &self.arc) else { return Ok(()) };
        let mut b = buf.bind(py).try_readwrite().map_err(|e| value_error(e.to_string()))?;
        write_arc(&a.current, b.as_slice_mut().map_err(|e| value_error(e.to_string()))?);
        Ok(())
    }

    /// The agent rows whose episode ended in the last step.
    fn ended(&self) -> usize {
        self.stats.done().iter().filter(|&&d| d).count()
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

/// The action arrays of a step as slices (each contiguous), taken while the GIL is held.
struct Slices<'a> {
    ints: Option<&'a [i64]>,
    floats: Option<&'a [f64]>,
    sel: Option<&'a [u8]>,
}

fn slices<'a>(
    ints: &'a Option<PyReadonlyArray1<'_, i64>>,
    floats: &'a Option<PyReadonlyArray1<'_, f64>>,
    sel: &'a Option<PyReadonlyArray1<'_, u8>>,
) -> PyResult<Slices<'a>> {
    let slice_err = |_| value_error("actions: not contiguous");
    Ok(Slices {
        ints: ints.as_ref().map(|a| a.as_slice()).transpose().map_err(slice_err)?,
        floats: floats.as_ref().map(|a| a.as_slice()).transpose().map_err(slice_err)?,
        sel: sel.as_ref().map(|a| a.as_slice()).transpose().map_err(slice_err)?,
    })
}

impl<'a> Slices<'a> {
    /// Step `t`'s part of arrays holding `steps` steps one after another (each array a whole
    /// number of steps).
    fn step(&self, t: usize, steps: usize) -> Result<Slices<'a>, String> {
        fn part<'s, T>(
            v: Option<&'s [T]>,
            what: &str,
            t: usize,
            steps: usize,
        ) -> Result<Option<&'s [T]>, String> {
            let Some(v) = v else { return Ok(None) };
            if !v.len().is_multiple_of(steps) {
                return Err(format!(
                    "actions: {what} has {} values, not a whole number of {steps} steps",
                    v.len()
                ));
            }
            let k = v.len() / steps;
            Ok(Some(&v[t * k..(t + 1) * k]))
        }
        Ok(Slices {
            ints: part(self.ints, "the integer array", t, steps)?,
            floats: part(self.floats, "the float array", t, steps)?,
            sel: part(self.sel, "the selection array", t, steps)?,
        })
    }

    /// The step's actions, with ARC's coordinate columns as slices (`coords`).
    fn actions<'c>(&self, coords: Option<&'c [&'c [i64]]>) -> Result<Actions<'c>, String>
    where
        'a: 'c,
    {
        Ok(match (self.ints, self.floats, self.sel, coords) {
            (Some(ops), None, Some(sel), None) => Actions::Arc { ops, sel },
            (Some(ops), None, None, Some(coords)) => Actions::ArcCoords { ops, coords },
            (Some(i), None, None, None) => Actions::Int(i),
            (None, Some(f), None, None) => Actions::Float(f),
            _ => {
                return Err("actions: give integers, floats, or ARC's (operation, selection or \
                            coordinates)"
                    .into());
            }
        })
    }
}

/// ARC's point or bbox columns (`row, col` or `r1, c1, r2, c2`, each one value per row, any
/// strides: a column of an `(n, 5)` array is taken as it is) as views, checked for their count
/// and lengths; read as slices by [`columns`] on the pool.
fn coord_views<'a>(
    cols: &'a Option<Vec<PyReadonlyArray1<'_, i64>>>,
    rows: usize,
) -> PyResult<Option<Vec<ArrayView1<'a, i64>>>> {
    let Some(cols) = cols else { return Ok(None) };
    if !(cols.len() == 2 || cols.len() == 4) {
        return Err(value_error(format!(
            "actions: 2 (point) or 4 (bbox) coordinate columns, got {}",
            cols.len()
        )));
    }
    let views: Vec<_> = cols.iter().map(|c| c.as_array()).collect();
    if let Some((j, v)) = views.iter().enumerate().find(|(_, v)| v.len() != rows) {
        return Err(value_error(format!(
            "actions: coordinate column {j} has {} values for {rows} rows",
            v.len()
        )));
    }
    Ok(Some(views))
}

/// The columns as slices: a contiguous one read in place (the per-key arrays of a dict
/// action), a strided one (a column of an `(n, 5)` array) copied into `buf`, whose allocation
/// is kept from step to step (no page faults for fresh arrays in the hot loop).
fn columns<'b>(views: &'b [ArrayView1<'_, i64>], buf: &'b mut Vec<i64>) -> Vec<&'b [i64]> {
    let n = views.first().map_or(0, |v| v.len());
    let strided: Vec<&ArrayView1<'_, i64>> =
        views.iter().filter(|v| v.as_slice().is_none()).collect();
    buf.resize(n * strided.len(), 0);
    let copy = |(out, v): (&mut [i64], &&ArrayView1<'_, i64>)| {
        out.iter_mut().zip(v.iter()).for_each(|(o, x)| *o = *x)
    };
    // A column a task: a strided read is slow enough (4,096 rows × 4 columns: about 15 µs on
    // one thread) to pay for the hand-off.
    buf.par_chunks_mut(n.max(1)).zip(strided.par_iter()).for_each(copy);
    let mut copied = buf.chunks(n.max(1));
    views.iter().map(|v| v.as_slice().unwrap_or_else(|| copied.next().unwrap_or(&[]))).collect()
}

/// The pool a batch made on this thread steps on when given no `num_threads`: a pool of the
/// process's rayon size (at least 2) whose worker 0 is the first thread that asks (Python's
/// main thread, as a rule). A step from that thread runs on it, its other workers stealing
/// parts of the batch, instead of being handed to the global pool while the caller sleeps:
/// each hand-off and wake-up costs 15–90 µs on a virtual machine, which at 1,000 ARC envs is
/// as long as the step. Other threads (and a thread already in a rayon pool) get the global
/// pool.
fn caller_pool() -> Pool {
    static POOL: std::sync::OnceLock<Option<(std::thread::ThreadId, Arc<rayon::ThreadPool>)>> =
        std::sync::OnceLock::new();
    let me = std::thread::current().id();
    let made = POOL.get_or_init(|| {
        let n = rayon::current_num_threads();
        (n >= 2)
            .then(|| rayon::ThreadPoolBuilder::new().num_threads(n).use_current_thread().build())
            .and_then(Result::ok)
            .map(|p| (me, Arc::new(p)))
    });
    match made {
        Some((owner, p)) if *owner == me => Pool::Caller(p.clone()),
        _ => Pool::Global,
    }
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
            None => caller_pool(),
            Some(n) if !(1..=1024).contains(&n) => {
                return Err(value_error(format!("num_threads = {n}: 1 to 1024, or None")));
            }
            Some(n) => Pool::Own(Arc::new(
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
            coords: Vec::new(),
            step_out: None,
            published: Vec::new(),
            arc_out: None,
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
        self.publish_arc(py)
    }

    /// Resets the envs where `mask` (one per env, not per agent row) is true.
    fn reset_rows(&mut self, py: Python<'_>, mask: PyReadonlyArray1<'_, bool>) -> PyResult<()> {
        let m = mask.as_slice().map_err(|_| value_error("reset_mask: not contiguous"))?.to_vec();
        self.get_mut()?.reset_rows(&m).map_err(value_error)?;
        let now = self.now();
        self.stats.reset_envs(&m, now);
        if let (Some(a), Some(v)) = (self.arc.as_mut(), self.inner.as_ref()) {
            a.after_reset(v.as_ref(), Some(&m));
        }
        self.publish_arc(py)
    }

    /// Loads actions then steps every row, both with the GIL released; with `obs` given,
    /// writes the results into it and the step output buffer as [`VecCore::read_out`] does
    /// (one call per step). Returns the number of agent rows whose episode ended.
    #[pyo3(signature = (ints=None, floats=None, sel=None, cols=None, obs=None))]
    fn step(
        &mut self,
        py: Python<'_>,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
        cols: Option<Vec<PyReadonlyArray1<'_, i64>>>,
        obs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let rows = self.get()?.num_envs() * self.agents;
        let acts = slices(&ints, &floats, &sel)?;
        let views = coord_views(&cols, rows)?;
        let pool = self.pool.clone();
        let dtype = self.get()?.obs_dtype();
        let mut guard = obs.map(|o| ObsGuard::new(o, dtype)).transpose()?;
        let obs_out = guard.as_mut().map(|g| g.slice()).transpose()?;
        let now = self.now();
        let mode = self.mode;
        // ARC's info buffer, written in the pool task right after the columns are (on the
        // same core, while they are in its cache: from the Python thread the copy cost
        // about 4% of a step at 4,096 envs).
        let arc_out = self.arc_out.as_ref().filter(|_| self.arc.is_some()).map(|b| b.bind(py));
        let mut arc_rw = match arc_out {
            Some(b) => Some(b.try_readwrite().map_err(|e| value_error(e.to_string()))?),
            None => None,
        };
        let arc_bytes = match arc_rw.as_mut() {
            Some(b) => Some(b.as_slice_mut().map_err(|e| value_error(e.to_string()))?),
            None => None,
        };
        let VecCore { inner, arc, stats, coords, .. } = self;
        let Some(v) = inner.as_mut() else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        // The action arrays are read-only borrows held for the call (rust-numpy's borrow
        // flags); the Python layer hands in arrays it owns or fresh conversions. Reading the
        // coordinates, loading, stepping, ARC's info, the episode statistics and copying the
        // observations run in one pool task without the GIL (a second hand-off for the info
        // cost about 10 µs a step at 1,024 envs).
        let merge = obs_out.as_ref().is_some_and(|o| o.bytes() >= 1 << 18);
        py.detach(|| {
            on(&pool, merge, || {
                let c = views.as_ref().map(|vs| columns(vs, coords));
                v.step_actions(&acts.actions(c.as_deref())?)?;
                if let Some(arc) = arc {
                    arc.after_step(v.as_ref(), mode == AutoReset::SameStep);
                    if let Some(b) = arc_bytes {
                        write_arc(&arc.current, b);
                    }
                }
                stats.record(mode, v.rewards(), v.terminated(), v.truncated(), now);
                match obs_out {
                    Some(o) => copy_column(v.obs(), o),
                    None => Ok(()),
                }
            })
        })
        .map_err(value_error)?;
        keep_awake(&self.pool, rows);
        drop(guard);
        drop(arc_rw);
        self.write_out(py)
    }

    /// Steps `steps` times, the actions' arrays holding every step's actions one step after
    /// another, and writes each step's columns into the buffers: `obs` and `final_obs`
    /// (optional; rows that ended only) `steps * rows * obs_len`, `rewards` one per agent row
    /// and step, `terminated` and `truncated` one per env and step, and `episode` (optional:
    /// returns, lengths, wall seconds and the mask, one per agent row and step) the episodes
    /// that ended, counted as after every `step`; the entries the mask held before are zeroed
    /// first (buffers reused from the last rollout). Returns how many ended. The GIL is
    /// released for the whole rollout.
    #[pyo3(signature = (steps, obs, rewards, terminated, truncated, final_obs=None, episode=None, ints=None, floats=None, sel=None, cols=None))]
    #[allow(clippy::too_many_arguments)]
    fn rollout(
        &mut self,
        py: Python<'_>,
        steps: usize,
        obs: &Bound<'_, PyAny>,
        mut rewards: PyReadwriteArray1<'_, f32>,
        mut terminated: PyReadwriteArray1<'_, bool>,
        mut truncated: PyReadwriteArray1<'_, bool>,
        final_obs: Option<&Bound<'_, PyAny>>,
        episode: Option<Episode<'_>>,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
        cols: Option<Vec<PyReadonlyArray1<'_, i64>>>,
    ) -> PyResult<usize> {
        if steps == 0 {
            return Err(value_error("steps = 0: at least 1"));
        }
        let rows = self.get()?.num_envs() * self.agents;
        let acts = slices(&ints, &floats, &sel)?;
        let views = coord_views(&cols, steps * rows)?;
        let dtype = self.get()?.obs_dtype();
        let mut obs_guard = ObsGuard::new(obs, dtype)?;
        let mut fo_guard = final_obs.map(|o| ObsGuard::new(o, dtype)).transpose()?;
        let contiguous = |_| value_error("rollout buffers: not contiguous");
        let rw = rewards.as_slice_mut().map_err(contiguous)?;
        let te = terminated.as_slice_mut().map_err(contiguous)?;
        let tr = truncated.as_slice_mut().map_err(contiguous)?;
        let mut episode = episode;
        let mut ep = match episode.as_mut() {
            Some((r, l, t, m)) => Some((
                r.as_slice_mut().map_err(contiguous)?,
                l.as_slice_mut().map_err(contiguous)?,
                t.as_slice_mut().map_err(contiguous)?,
                m.as_slice_mut().map_err(contiguous)?,
            )),
            None => None,
        };
        if let Some((r, l, t, m)) = &ep
            && [r.len(), l.len(), t.len(), m.len()].iter().any(|&k| k != steps * rows)
        {
            return Err(value_error(format!(
                "episode buffers: expected {} values each ({steps} steps of {rows} rows)",
                steps * rows
            )));
        }
        let obs_out = obs_guard.slice()?;
        let fo_out = fo_guard.as_mut().map(|g| g.slice()).transpose()?;
        let (born, mode) = (self.born, self.mode);
        let pool = self.pool.clone();
        let VecCore { inner, arc, stats, coords, .. } = self;
        let Some(v) = inner.as_mut() else {
            return Err(PyRuntimeError::new_err("the env is closed"));
        };
        let ended = py
            .detach(|| {
                on(&pool, false, || -> Result<usize, String> {
                    let c = views.as_ref().map(|vs| columns(vs, coords));
                    let coord_steps: Vec<Vec<&[i64]>> = match &c {
                        Some(c) => (0..steps)
                            .map(|t| c.iter().map(|col| &col[t * rows..(t + 1) * rows]).collect())
                            .collect(),
                        None => Vec::new(),
                    };
                    let step_acts = (0..steps)
                        .map(|t| acts.step(t, steps)?.actions(coord_steps.get(t).map(|v| &v[..])))
                        .collect::<Result<Vec<_>, String>>()?;
                    let out = Rollout {
                        obs: obs_out,
                        final_obs: fo_out,
                        rewards: &mut *rw,
                        terminated: &mut *te,
                        truncated: &mut *tr,
                    };
                    // The statistics count each step as `step` counts it; the wall seconds are
                    // the rollout's end for every step. The episodes go straight into the
                    // buffers (the last rollout's entries cleared) in the same parallel pass.
                    let now = || born.elapsed().as_secs_f64();
                    let cols = ep.as_mut().map(|(r, l, s, m)| EpisodeColumns {
                        returns: r,
                        lengths: l,
                        seconds: s,
                        ended: m,
                    });
                    let ended =
                        rollout_counted(v.as_mut(), &step_acts, out, stats, mode, now, cols)?;
                    if let Some(arc) = arc {
                        arc.after_rollout(v.as_ref());
                    }
                    Ok(ended)
                })
            })
            .map_err(value_error)?;
        // As after a step: a loop of rollouts would otherwise wake the other workers at the
        // start of each call.
        keep_awake(&self.pool, rows);
        Ok(ended)
    }

    /// Loads actions and starts the step on a background thread; `step_wait` joins it.
    #[pyo3(signature = (ints=None, floats=None, sel=None, cols=None))]
    fn step_async(
        &mut self,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
        cols: Option<Vec<PyReadonlyArray1<'_, i64>>>,
    ) -> PyResult<()> {
        if self.pending.is_some() {
            return Err(PyRuntimeError::new_err(
                "step_async called twice: call step_wait for the pending step first",
            ));
        }
        let rows = self.get()?.num_envs() * self.agents;
        let acts = slices(&ints, &floats, &sel)?;
        let views = coord_views(&cols, rows)?;
        let VecCore { inner, coords, .. } = self;
        let c = views.as_ref().map(|vs| columns(vs, coords));
        let a = acts.actions(c.as_deref()).map_err(value_error)?;
        inner
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("the env is closed"))?
            .load_actions(&a)
            .map_err(value_error)?;
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
                    let (pool, same) = (&self.pool, self.mode == AutoReset::SameStep);
                    py.detach(|| on(pool, false, || arc.after_step(v.as_ref(), same)));
                }
                self.inner = Some(v);
                self.count_step(py)
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

    /// Copies the last step's observations into `obs` and its rewards, flags and episode
    /// statistics into the step output buffer ([`VecCore::write_out`]).
    fn read_out(&mut self, py: Python<'_>, obs: &Bound<'_, PyAny>) -> PyResult<()> {
        copy_obs(self.get()?.obs(), obs, None, 0)?;
        self.write_out(py).map(drop)
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

    /// Registers the step output buffer (contiguous uint8, [`OUT_BYTES`] per agent row; zeroed
    /// here) that each step writes into, in blocks of one value per row: the episode return
    /// (f64), length (i64) and wall seconds (f64) where an episode ended in the step and 0
    /// elsewhere (Gymnasium's vector `RecordEpisodeStatistics`), the reward (f32), terminated,
    /// truncated and whether an episode ended (bool). Python reads it through numpy views of
    /// the blocks: one borrow a step for all of them. None stops the writes.
    fn set_step_out(
        &mut self,
        py: Python<'_>,
        buf: Option<Bound<'_, PyArray1<u8>>>,
    ) -> PyResult<()> {
        let rows = self.stats.done().len();
        let buf = buf.map(|b| out_buffer("step output buffer", b, OUT_BYTES * rows)).transpose()?;
        if let Some(b) = &buf {
            let mut rw = b.bind(py).try_readwrite().map_err(|e| value_error(e.to_string()))?;
            rw.as_slice_mut().map_err(|e| value_error(e.to_string()))?.fill(0);
        }
        (self.step_out, self.published) = (buf, Vec::new());
        Ok(())
    }

    /// Registers the byte buffer (contiguous uint8, 24 bytes per env) that ARC's info columns
    /// are written to after every reset and step, in four blocks as [`VecCore::read_arc_info`]
    /// reads them: similarity (f32), improvement (f32), operation (i64), step (i64). None
    /// stops the writes; an env without the columns refuses a buffer.
    fn set_arc_out(
        &mut self,
        py: Python<'_>,
        buf: Option<Bound<'_, PyArray1<u8>>>,
    ) -> PyResult<()> {
        let Some(a) = self.arc.as_ref() else {
            return match buf {
                Some(_) => Err(value_error("arc info buffer: this env has no ARC info")),
                None => Ok(()),
            };
        };
        let n = a.current.similarity.len();
        self.arc_out = buf.map(|b| out_buffer("arc info buffer", b, 24 * n)).transpose()?;
        self.publish_arc(py)
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
    /// the step count (i64). With `final_step`, the same columns of the steps that ended
    /// episodes in the last step under same-step auto-reset (Gymnasium's `final_info`: the
    /// final observation's similarity, the episode's steps; an episode's start, similarity 0
    /// and operation -1, on the other rows). False (nothing written) for envs without them.
    #[pyo3(signature = (similarity, improvement, operation, step, final_step=false))]
    fn read_arc_info(
        &self,
        mut similarity: PyReadwriteArray1<'_, f32>,
        mut improvement: PyReadwriteArray1<'_, f32>,
        mut operation: PyReadwriteArray1<'_, i64>,
        mut step: PyReadwriteArray1<'_, i64>,
        final_step: bool,
    ) -> PyResult<bool> {
        self.get()?;
        let Some(a) = self.arc.as_ref() else { return Ok(false) };
        let c = if final_step { &a.finals } else { &a.current };
        copy_into("similarity", &c.similarity, &mut similarity)?;
        copy_into("improvement", &c.improvement, &mut improvement)?;
        copy_into("operation", &c.operation, &mut operation)?;
        copy_into("step", &c.step, &mut step)?;
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

    /// Moves the batch, as it is, into the XLA targets' table (`kestrel.jax`) and returns its
    /// slot; this core is closed after (the env then steps only through JAX).
    fn move_to_xla(&mut self) -> PyResult<u32> {
        self.get()?;
        let v = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("the env is closed"))?;
        Ok(kestrel_xla::env::insert(v))
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none() && self.pending.is_none()
    }
}

/// The XLA FFI targets: `[(name, handler address)]`, for `jax.ffi.pycapsule`.
#[pyfunction]
pub(crate) fn xla_targets() -> Vec<(&'static str, usize)> {
    kestrel_xla::targets()
}

/// Drops the XLA table's env `slot` (`kestrel.jax.VectorEnv.close`); false if it was gone.
#[pyfunction]
pub(crate) fn xla_env_close(slot: u32) -> bool {
    kestrel_xla::env::close(slot)
}

/// The version a handle to the XLA table's env `slot` must carry, or None once closed.
#[pyfunction]
pub(crate) fn xla_env_version(slot: u32) -> Option<u32> {
    kestrel_xla::env::version(slot)
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
