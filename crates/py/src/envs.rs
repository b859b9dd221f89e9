//! Every Kestrel env behind one object-safe batch interface ([`DynVec`]) and the one table
//! of env ids ([`ENV_IDS`]); the Python classes in `kestrel/vector.py` and `kestrel/envs.py`
//! are thin layers over [`VecCore`].

use crate::errors::{Kw, value_error};
use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{
    ArcAction, ArcEnv, ArcLanes, ArcParams, JaxBugs, Layout, LoadOptions, MAX_LANE_SIDE, Mode,
    Selection, Split, TaskBank,
};
use kestrel_core::{AutoReset, Env, EpisodeStats, Key, Space, Spec, VecEnv};
use kestrel_envs::control::{ENV_MAX_NU, ENV_MAX_NX};
use kestrel_envs::{
    CartPole, CartPoleParams, CartPoleState, ControlEnv, ControlParams, ControlState,
    DoubleIntegrator, GridMap, GridParams, GridWorld, Pendulum, PendulumParams, PendulumState,
    TreasureHunt, TreasureObs, TreasureParams, VectorFieldEnv,
};
use kestrel_mppi::presets::System;
use numpy::{PyReadonlyArray1, PyReadwriteArray1, PyReadwriteArrayDyn};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use rayon::prelude::*;
use std::sync::Arc;

/// The ARC canvas sides compiled into the bindings (the `canvas` keyword): ARC-AGI's 30,
/// and 5 and 10, where `jaxarc` mode runs on the structure-of-arrays kernel ([`ArcLanes`]).
const ARC_CANVASES: [usize; 3] = [5, 10, 30];

/// Every env id with a one-line description: the one name table of the bindings.
pub(crate) fn env_ids() -> Vec<(String, String)> {
    let mut v = vec![
        ("CartPole-v1".into(), "Gymnasium CartPole-v1 (bit-exact), Discrete(2)".into()),
        ("Pendulum-v1".into(), "Gymnasium Pendulum-v1 (bit-exact), Box(-2, 2, (1,))".into()),
    ];
    for s in System::ALL {
        v.push((
            format!("Control-{}-v0", s.name()),
            format!("the MPPI system {:?} as an env: obs = state, reward = -running cost", s),
        ));
    }
    v.push((
        "Control-double-integrator-v0".into(),
        "a double integrator (dims = 1..4) as an env".into(),
    ));
    v.push(("GridWorld-v0".into(), "an ALLO grid maze (map = builtin name or map_path)".into()));
    v.push((
        "TreasureHunt-v0".into(),
        "sorrel's treasure hunt, one row per agent (PufferLib style)".into(),
    ));
    v.push((
        "ARC-v0".into(),
        "ARC in ARCLE O2ARCv2Env 0.2.6 semantics (canvas = 30, 10 or 5)".into(),
    ));
    v.push((
        "ARC-jaxarc-v0".into(),
        "ARC in JaxARC 1.0.3 semantics (canvas = 30, or 10 or 5 on the lane kernel)".into(),
    ));
    v.push((
        "VectorField-v0".into(),
        "actdyn's latent vector-field systems with an observation model".into(),
    ));
    v
}

/// One batch of observations, by element type.
pub(crate) enum Obs<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I8(&'a [i8]),
}

/// Actions as they arrive from Python (already converted to one dtype by the Python layer).
pub(crate) enum Actions<'a> {
    /// One integer per agent row (Discrete spaces).
    Int(&'a [i64]),
    /// `nu` floats per agent row (Box spaces).
    Float(&'a [f64]),
    /// ARC: one operation per row and a `30 × 30` 0/1 selection per row.
    Arc { ops: &'a [i64], sel: &'a [u8] },
}

/// How an action type is filled from Python input; each checks ranges so nothing invalid
/// reaches a kernel silently.
pub(crate) trait Codec: Sized + Copy {
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String>;
}

fn want(kind: &str, space: &Space) -> String {
    format!("actions: expected {kind} for the action space {space:?}")
}

fn ints<T: Copy + TryFrom<i64>>(
    input: &Actions<'_>,
    space: &Space,
    out: &mut [T],
) -> Result<(), String> {
    let (Actions::Int(v), Space::Discrete { n }) = (input, space) else {
        return Err(want("integers", space));
    };
    if v.len() != out.len() {
        return Err(format!("actions: expected shape ({},), got ({},)", out.len(), v.len()));
    }
    for (i, (&a, o)) in v.iter().zip(out.iter_mut()).enumerate() {
        if a < 0 || a as u64 >= *n {
            return Err(format!("actions[{i}] = {a}: outside Discrete({n}) (0 to {})", n - 1));
        }
        *o = T::try_from(a).map_err(|_| format!("actions[{i}] = {a}: out of range"))?;
    }
    Ok(())
}

impl Codec for u32 {
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String> {
        ints(input, space, out)
    }
}

impl Codec for u8 {
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String> {
        ints(input, space, out)
    }
}

/// Floats, `nu` per row, finite, into `out` rows written by `put(row, values)`.
fn floats(
    input: &Actions<'_>,
    space: &Space,
    rows: usize,
    mut put: impl FnMut(usize, &[f64]),
) -> Result<(), String> {
    let (Actions::Float(v), Space::Box { shape, .. }) = (input, space) else {
        return Err(want("floats", space));
    };
    let nu: usize = shape.iter().product();
    if v.len() != rows * nu {
        return Err(format!("actions: expected shape ({rows}, {nu}), got {} values", v.len()));
    }
    if let Some(i) = v.iter().position(|x| !x.is_finite()) {
        return Err(format!("actions[{}][{}] = {}: not finite", i / nu, i % nu, v[i]));
    }
    for (r, row) in v.chunks_exact(nu.max(1)).enumerate() {
        put(r, row);
    }
    Ok(())
}

impl Codec for f32 {
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String> {
        floats(input, space, out.len(), |r, v| out[r] = v[0] as f32)
    }
}

impl Codec for [f32; ENV_MAX_NU] {
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String> {
        floats(input, space, out.len(), |r, v| {
            out[r] = [0.0; ENV_MAX_NU];
            for (o, x) in out[r].iter_mut().zip(v) {
                *o = *x as f32;
            }
        })
    }
}

impl Codec for [f64; 2] {
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String> {
        floats(input, space, out.len(), |r, v| out[r] = [v[0], v[1]])
    }
}

impl<const S: usize> Codec for ArcAction<S> {
    fn fill(input: &Actions<'_>, _space: &Space, out: &mut [Self]) -> Result<(), String> {
        let Actions::Arc { ops, sel } = input else {
            return Err("actions: ARC takes a dict {operation, selection}".into());
        };
        let n = out.len();
        let cells = S * S;
        if ops.len() != n {
            return Err(format!(
                "actions['operation']: expected shape ({n},), got ({},)",
                ops.len()
            ));
        }
        if sel.len() != n * cells {
            return Err(format!(
                "actions['selection']: expected shape ({n}, {S}, {S}), got {} values",
                sel.len()
            ));
        }
        let nops = kestrel_arc::NUM_OPS as i64;
        if let Some(i) = ops.iter().position(|op| !(0..nops).contains(op)) {
            return Err(format!(
                "actions['operation'][{i}] = {}: outside Discrete({nops})",
                ops[i]
            ));
        }
        // One mask per row, packed in parallel (900 bytes a row), 8 cells per multiply; `bad`
        // collects bits outside 0/1.
        let bad = out
            .par_iter_mut()
            .zip(ops.par_iter())
            .zip(sel.par_chunks_exact(cells))
            .map(|((o, &op), m)| {
                let mut bad = 0u64;
                let mask = std::array::from_fn(|r| {
                    let (bits, b) = pack_row(&m[r * S..(r + 1) * S]);
                    bad |= b;
                    bits
                });
                *o = ArcAction { op: op as i32, sel: Selection::Mask(mask) };
                bad != 0
            })
            .reduce(|| false, |a, b| a || b);
        if bad && let Some(i) = sel.iter().position(|&b| b > 1) {
            return Err(format!(
                "actions['selection'][{}][{}][{}]: byte value {}, not 0 or 1",
                i / cells,
                (i % cells) / S,
                i % S,
                sel[i]
            ));
        }
        Ok(())
    }
}

/// One canvas row of 0/1 bytes as mask bits (bit `c` = cell `c`), and the bits of any byte
/// that is not 0 or 1. Eight bytes at a time: `(x & 0x01..01) * 0x0102040810204080 >> 56`
/// gathers the low bit of each byte into one byte, in order.
#[inline]
fn pack_row(row: &[u8]) -> (u32, u64) {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let (mut bits, mut bad) = (0u32, 0u64);
    for (g, chunk) in row.chunks(8).enumerate() {
        let mut b = [0u8; 8];
        b[..chunk.len()].copy_from_slice(chunk);
        let x = u64::from_le_bytes(b);
        bad |= x & !LOW;
        bits |= ((((x & LOW).wrapping_mul(GATHER)) >> 56) as u32) << (8 * g);
    }
    (bits, bad)
}

/// Observation element types Python sees.
pub(crate) trait ObsElem: Copy {
    fn wrap(v: &[Self]) -> Obs<'_>;
    const DTYPE: &'static str;
}
impl ObsElem for f32 {
    fn wrap(v: &[Self]) -> Obs<'_> {
        Obs::F32(v)
    }
    const DTYPE: &'static str = "float32";
}
impl ObsElem for f64 {
    fn wrap(v: &[Self]) -> Obs<'_> {
        Obs::F64(v)
    }
    const DTYPE: &'static str = "float64";
}
impl ObsElem for i8 {
    fn wrap(v: &[Self]) -> Obs<'_> {
        Obs::I8(v)
    }
    const DTYPE: &'static str = "int8";
}

/// States settable from a flat f64 vector (envs whose observation is a function of it).
pub(crate) trait StateIo: Sized {
    fn from_flat(v: &[f64]) -> Result<Self, String> {
        let _ = v;
        Err("this env's state cannot be set".into())
    }
    fn to_flat(&self) -> Vec<f64> {
        Vec::new()
    }
}
impl StateIo for CartPoleState {
    fn from_flat(v: &[f64]) -> Result<Self, String> {
        let a: [f64; 4] =
            v.try_into().map_err(|_| format!("state: expected 4 values, got {}", v.len()))?;
        Ok(CartPoleState(a))
    }
    fn to_flat(&self) -> Vec<f64> {
        self.0.to_vec()
    }
}
impl StateIo for PendulumState {
    fn from_flat(v: &[f64]) -> Result<Self, String> {
        let a: [f64; 2] =
            v.try_into().map_err(|_| format!("state: expected 2 values, got {}", v.len()))?;
        Ok(PendulumState(a))
    }
    fn to_flat(&self) -> Vec<f64> {
        self.0.to_vec()
    }
}
impl StateIo for ControlState {
    fn from_flat(v: &[f64]) -> Result<Self, String> {
        if v.is_empty() || v.len() > ENV_MAX_NX {
            return Err(format!("state: expected 1 to {ENV_MAX_NX} values, got {}", v.len()));
        }
        let mut x = [0.0; ENV_MAX_NX];
        x[..v.len()].copy_from_slice(v);
        Ok(ControlState { x, t: 0 })
    }
    fn to_flat(&self) -> Vec<f64> {
        self.x.to_vec()
    }
}
impl StateIo for u32 {}
impl StateIo for kestrel_envs::TreasureState {}
impl<const S: usize> StateIo for kestrel_arc::ArcState<S> {}
impl StateIo for kestrel_envs::VectorFieldState {
    fn to_flat(&self) -> Vec<f64> {
        self.z.to_vec()
    }
}

/// N copies of any env, object-safe: what one Python vector env holds.
pub(crate) trait DynVec: Send + Sync {
    fn spec(&self) -> &Spec;
    fn num_envs(&self) -> usize;
    fn obs_dtype(&self) -> &'static str;
    fn reset(&mut self, seed: u64);
    fn reset_rows(&mut self, mask: &[bool]) -> Result<(), String>;
    fn set_autoreset(&mut self, m: AutoReset);
    fn load_actions(&mut self, a: &Actions<'_>) -> Result<(), String>;
    fn step(&mut self);
    fn obs(&self) -> Obs<'_>;
    fn final_obs(&self) -> Obs<'_>;
    fn rewards(&self) -> &[f32];
    fn terminated(&self) -> &[bool];
    fn truncated(&self) -> &[bool];
    fn episode_steps(&self) -> &[u32];
    fn set_state(&mut self, row: usize, state: &[f64]) -> Result<(), String>;
    fn state(&self, row: usize) -> Vec<f64>;
}

/// The [`DynVec`] methods that forward to the batched driver `self.v` (`VecEnv` or
/// `ArcLanes`, which share these names and meanings), `$obs` its observation element type.
macro_rules! forward_batch {
    ($obs:ty) => {
        fn spec(&self) -> &Spec {
            self.v.spec()
        }
        fn num_envs(&self) -> usize {
            self.v.num_envs()
        }
        fn obs_dtype(&self) -> &'static str {
            <$obs as ObsElem>::DTYPE
        }
        fn reset(&mut self, seed: u64) {
            self.v.reset(seed);
        }
        fn reset_rows(&mut self, mask: &[bool]) -> Result<(), String> {
            self.v.reset_rows(mask).map_err(|e| e.to_string())
        }
        fn set_autoreset(&mut self, m: AutoReset) {
            self.v.set_autoreset(m);
        }
        fn obs(&self) -> Obs<'_> {
            <$obs as ObsElem>::wrap(self.v.obs())
        }
        fn final_obs(&self) -> Obs<'_> {
            <$obs as ObsElem>::wrap(self.v.final_obs())
        }
        fn rewards(&self) -> &[f32] {
            self.v.rewards()
        }
        fn terminated(&self) -> &[bool] {
            self.v.terminated()
        }
        fn truncated(&self) -> &[bool] {
            self.v.truncated()
        }
        fn episode_steps(&self) -> &[u32] {
            self.v.episode_steps()
        }
    };
}

struct Holder<E: Env> {
    v: VecEnv<E>,
    acts: Vec<E::Action>,
}

impl<E> DynVec for Holder<E>
where
    E: Env + 'static,
    E::Action: Codec,
    E::Obs: ObsElem,
    E::State: StateIo,
{
    forward_batch!(E::Obs);
    fn load_actions(&mut self, a: &Actions<'_>) -> Result<(), String> {
        E::Action::fill(a, &self.v.spec().action_space, &mut self.acts)
    }
    fn step(&mut self) {
        // `acts` has num_envs * num_agents entries by construction, so this cannot fail.
        let _ = self.v.try_step(&self.acts);
    }
    fn set_state(&mut self, row: usize, state: &[f64]) -> Result<(), String> {
        let s = E::State::from_flat(state)?;
        self.v.set_state(row, s).map_err(|e| e.to_string())
    }
    fn state(&self, row: usize) -> Vec<f64> {
        self.v.states().get(row).map(StateIo::to_flat).unwrap_or_default()
    }
}

fn holder<E>(
    env: E,
    params: E::Params,
    n: usize,
    seed: u64,
    offset: u64,
) -> PyResult<Box<dyn DynVec>>
where
    E: Env + 'static,
    E::Action: Codec,
    E::Obs: ObsElem,
    E::State: StateIo,
{
    let v = VecEnv::shard(env, params, n, seed, offset).map_err(value_error)?;
    let acts = vec![E::Action::default(); n * v.spec().num_agents];
    Ok(Box::new(Holder { v, acts }))
}

/// `jaxarc` ARC on a canvas of at most 10×10 through the structure-of-arrays kernel: the
/// same keys and results as [`Holder`] over `VecEnv<ArcEnv<S>>` (kestrel-arc's lane tests).
struct Lanes<const S: usize> {
    v: ArcLanes<S>,
    acts: Vec<ArcAction<S>>,
}

impl<const S: usize> DynVec for Lanes<S> {
    forward_batch!(i8);
    fn load_actions(&mut self, a: &Actions<'_>) -> Result<(), String> {
        ArcAction::<S>::fill(a, &self.v.spec().action_space, &mut self.acts)
    }
    fn step(&mut self) {
        // `acts` has num_envs entries by construction, so this cannot fail.
        let _ = self.v.step(&self.acts);
    }
    fn set_state(&mut self, row: usize, state: &[f64]) -> Result<(), String> {
        let s = kestrel_arc::ArcState::<S>::from_flat(state)?;
        self.v.set_state(row, &s).map_err(|e| e.to_string())
    }
    fn state(&self, row: usize) -> Vec<f64> {
        if row < self.v.num_envs() { self.v.state(row).to_flat() } else { Vec::new() }
    }
}

fn control<D>(system: D, kw: &mut Kw, n: usize, seed: u64, off: u64) -> PyResult<Box<dyn DynVec>>
where
    D: kestrel_envs::Dynamics + Clone + std::fmt::Debug + 'static,
{
    let env = ControlEnv::new(system).map_err(value_error)?;
    let mut p = ControlParams::default();
    kw.f64_list("start", &mut p.start)?;
    kw.f64("reset_noise", &mut p.reset_noise)?;
    kw.u32("max_episode_steps", &mut p.max_episode_steps)?;
    kw.finish()?;
    env.validate(&p).map_err(value_error)?;
    holder(env, p, n, seed, off)
}

fn arc(mode: Mode, kw: &mut Kw, n: usize, seed: u64, off: u64) -> PyResult<Box<dyn DynVec>> {
    let mut p = ArcParams { mode, ..Default::default() };
    let mut layout = String::from("compact");
    kw.string("layout", &mut layout)?;
    p.layout = match layout.as_str() {
        "compact" => Layout::Compact,
        "full" => Layout::Full,
        other => {
            return Err(kw.bad("layout", format!("{other:?}"), "\"compact\" or \"full\""));
        }
    };
    let mut split = String::from("train");
    kw.string("split", &mut split)?;
    p.split = match split.as_str() {
        "train" => Split::Train,
        "test" => Split::Test,
        other => return Err(kw.bad("split", format!("{other:?}"), "\"train\" or \"test\"")),
    };
    let mut limit = p.max_episode_steps.unwrap_or(0);
    kw.u32("max_episode_steps", &mut limit)?;
    p.max_episode_steps = (limit > 0).then_some(limit);
    kw.i8("max_trials", &mut p.max_trials)?;
    kw.bool("reset_on_submit", &mut p.reset_on_submit)?;
    kw.u8("demo_pairs", &mut p.demo_pairs)?;
    let mut data = String::new();
    kw.string("data", &mut data)?;
    let (mut per_family, mut gen_seed) = (8usize, 0u64);
    kw.usize("tasks_per_family", &mut per_family)?;
    kw.u64("gen_seed", &mut gen_seed)?;
    let mut bugs = String::from("none");
    kw.string("bugs", &mut bugs)?;
    p.bugs = match bugs.as_str() {
        "none" => JaxBugs::default(),
        "all" if mode == Mode::Jaxarc => JaxBugs::all(),
        "all" => return Err(kw.bad("bugs", "\"all\"", "\"none\" in o2arc mode (JaxARC's bugs)")),
        other => {
            let want = "\"none\" (fixed) or \"all\" (JaxARC 1.0.3's, bit-compatible)";
            return Err(kw.bad("bugs", format!("{other:?}"), want));
        }
    };
    let mut canvas = 30usize;
    kw.usize("canvas", &mut canvas)?;
    if !ARC_CANVASES.contains(&canvas) {
        return Err(kw.bad("canvas", canvas, "5, 10 or 30 (the canvas sides compiled in)"));
    }
    kw.finish()?;
    let bank = if data.is_empty() {
        // Generated grids up to the canvas (the generator's default is up to 30×30).
        let cfg =
            GenConfig { max_side: canvas.min(GenConfig::default().max_side), ..Default::default() };
        generate_bank(&Family::ALL, per_family, gen_seed, &cfg).map_err(value_error)?
    } else {
        let (b, _) = TaskBank::load(std::path::Path::new(&data), LoadOptions { strict: false })
            .map_err(value_error)?;
        b
    };
    match canvas {
        5 => arc_on::<5>(bank, p, n, seed, off),
        10 => arc_on::<10>(bank, p, n, seed, off),
        _ => arc_on::<30>(bank, p, n, seed, off),
    }
}

/// ARC on an `S × S` canvas (tasks that do not fit dropped from `bank`): `jaxarc` mode on the
/// lane kernel where `S ≤ 10`, else one env per row.
fn arc_on<const S: usize>(
    mut bank: TaskBank,
    p: ArcParams,
    n: usize,
    seed: u64,
    off: u64,
) -> PyResult<Box<dyn DynVec>> {
    bank.retain_fitting(S);
    let env = ArcEnv::<S>::new(Arc::new(bank)).map_err(value_error)?;
    env.validate(&p).map_err(value_error)?;
    if p.mode == Mode::Jaxarc && S <= MAX_LANE_SIDE {
        let v = ArcLanes::shard(env, p, n, seed, off).map_err(value_error)?;
        return Ok(Box::new(Lanes { v, acts: vec![ArcAction::default(); n] }));
    }
    holder(env, p, n, seed, off)
}

/// Builds `num_envs` rows of env `id` with keyword params `kw`.
fn build(id: &str, kw: &mut Kw, n: usize, seed: u64, off: u64) -> PyResult<Box<dyn DynVec>> {
    match id {
        "CartPole-v1" => {
            let mut p = CartPoleParams::default();
            kw.f64("gravity", &mut p.gravity)?;
            kw.f64("mass_cart", &mut p.mass_cart)?;
            kw.f64("mass_pole", &mut p.mass_pole)?;
            kw.f64("length", &mut p.length)?;
            kw.f64("force_mag", &mut p.force_mag)?;
            kw.f64("tau", &mut p.tau)?;
            kw.u32("max_episode_steps", &mut p.max_episode_steps)?;
            kw.finish()?;
            holder(CartPole, p, n, seed, off)
        }
        "Pendulum-v1" => {
            let mut p = PendulumParams::default();
            kw.f64("g", &mut p.g)?;
            kw.u32("max_episode_steps", &mut p.max_episode_steps)?;
            kw.finish()?;
            holder(Pendulum, p, n, seed, off)
        }
        "Control-double-integrator-v0" => {
            let mut dims = 1usize;
            kw.usize("dims", &mut dims)?;
            if !(1..=4).contains(&dims) {
                return Err(kw.bad("dims", dims, "1 to 4"));
            }
            control(DoubleIntegrator { dims }, kw, n, seed, off)
        }
        "GridWorld-v0" => {
            let mut p = GridParams::default();
            let (mut map, mut path) = (String::new(), String::new());
            kw.string("map", &mut map)?;
            kw.string("map_path", &mut path)?;
            kw.u32("max_episode_steps", &mut p.max_episode_steps)?;
            kw.finish()?;
            if !path.is_empty() {
                p.map = Arc::new(GridMap::load(std::path::Path::new(&path)).map_err(value_error)?);
            } else if !map.is_empty() {
                p.map = Arc::new(GridMap::builtin(&map).map_err(value_error)?);
            }
            if p.max_episode_steps == 0 {
                return Err(kw.bad("max_episode_steps", 0, "at least 1"));
            }
            holder(GridWorld, p, n, seed, off)
        }
        "TreasureHunt-v0" => {
            let mut p = TreasureParams::default();
            kw.usize("height", &mut p.height)?;
            kw.usize("width", &mut p.width)?;
            kw.usize("num_agents", &mut p.num_agents)?;
            kw.f32("gem_value", &mut p.gem_value)?;
            kw.f32("food_value", &mut p.food_value)?;
            kw.f32("bone_value", &mut p.bone_value)?;
            kw.f32("wall_value", &mut p.wall_value)?;
            kw.f64("spawn_prob", &mut p.spawn_prob)?;
            kw.usize("vision_radius", &mut p.vision_radius)?;
            kw.u32("max_turns", &mut p.max_turns)?;
            let mut obs = String::from("one-hot");
            kw.string("obs", &mut obs)?;
            p.obs = match obs.as_str() {
                "one-hot" => TreasureObs::OneHot,
                "rgb" => TreasureObs::Rgb,
                other => return Err(kw.bad("obs", format!("{other:?}"), "\"one-hot\" or \"rgb\"")),
            };
            kw.finish()?;
            p.validate().map_err(value_error)?;
            holder(TreasureHunt, p, n, seed, off)
        }
        "ARC-v0" => arc(Mode::O2arc, kw, n, seed, off),
        "ARC-jaxarc-v0" => arc(Mode::Jaxarc, kw, n, seed, off),
        "VectorField-v0" => {
            let (mut model_seed, mut limit) = (0u64, 0u32);
            kw.u64("model_seed", &mut model_seed)?;
            kw.u32("max_episode_steps", &mut limit)?;
            let cfg: kestrel_actdyn::config::EnvConfig = kw.rest_as("VectorField-v0")?;
            let run = kestrel_actdyn::config::ActdynConfig { env: cfg, ..Default::default() };
            let mut p = kestrel_actdyn::online::build_env(&run, &run.bugs(), Key::new(model_seed))
                .map_err(value_error)?;
            p.max_episode_steps = (limit > 0).then_some(limit);
            p.validate().map_err(value_error)?;
            holder(VectorFieldEnv, p, n, seed, off)
        }
        _ => {
            if let Some(s) =
                System::ALL.into_iter().find(|s| id == format!("Control-{}-v0", s.name()))
            {
                return control(s, kw, n, seed, off);
            }
            let ids: Vec<String> = env_ids().into_iter().map(|(i, _)| i).collect();
            Err(value_error(format!("env id {id:?}: unknown; one of {}", ids.join(", "))))
        }
    }
}

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
    inner: Option<Box<dyn DynVec>>,
    /// A step running on a background thread (`step_async`).
    pending: Option<std::thread::JoinHandle<Box<dyn DynVec>>>,
    id: String,
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
    /// episode ended (the Python layer reads the statistics only when some did).
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

    fn get(&self) -> PyResult<&dyn DynVec> {
        match (&self.inner, &self.pending) {
            (Some(v), _) => Ok(v.as_ref()),
            (None, Some(_)) => {
                Err(PyRuntimeError::new_err("a step is in flight (step_async without step_wait)"))
            }
            (None, None) => Err(PyRuntimeError::new_err("the env is closed")),
        }
    }
    fn get_mut(&mut self) -> PyResult<&mut Box<dyn DynVec>> {
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
) -> PyResult<Actions<'a>> {
    let slice_err = |_| value_error("actions: not contiguous");
    Ok(match (ints, floats, sel) {
        (Some(i), None, Some(s)) => Actions::Arc {
            ops: i.as_slice().map_err(slice_err)?,
            sel: s.as_slice().map_err(slice_err)?,
        },
        (Some(i), None, None) => Actions::Int(i.as_slice().map_err(slice_err)?),
        (None, Some(f), None) => Actions::Float(f.as_slice().map_err(slice_err)?),
        _ => {
            return Err(value_error(
                "actions: give integers, floats, or ARC's (operation, selection)",
            ));
        }
    })
}

#[pymethods]
impl VecCore {
    /// `VecCore(env_id, num_envs, seed, params_json, row_offset=0, num_threads=None)`.
    #[new]
    #[pyo3(signature = (env_id, num_envs, seed, params_json, row_offset=0, num_threads=None))]
    fn new(
        env_id: &str,
        num_envs: i64,
        seed: u64,
        params_json: &str,
        row_offset: u64,
        num_threads: Option<i64>,
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
        let mut kw = Kw::parse(env_id, params_json)?;
        let inner = build(env_id, &mut kw, num_envs as usize, seed, row_offset)?;
        let (agents, obs_len) = (inner.spec().num_agents, inner.spec().obs_len());
        let stats = EpisodeStats::new(inner.num_envs(), agents, 0.0);
        Ok(VecCore {
            inner: Some(inner),
            pending: None,
            id: env_id.into(),
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
        d.set_item("obs_dtype", v.obs_dtype())?;
        d.set_item("num_envs", v.num_envs())?;
        d.set_item("id", &self.id)?;
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
        Ok(())
    }

    /// Resets the envs where `mask` (one per env, not per agent row) is true.
    fn reset_rows(&mut self, mask: PyReadonlyArray1<'_, bool>) -> PyResult<()> {
        let m = mask.as_slice().map_err(|_| value_error("reset_mask: not contiguous"))?.to_vec();
        self.get_mut()?.reset_rows(&m).map_err(value_error)?;
        let now = self.now();
        self.stats.reset_envs(&m, now);
        Ok(())
    }

    /// Loads actions then steps every row, both with the GIL released; with output arrays
    /// given, copies the results into them as [`VecCore::read`] does (one call per step).
    /// Returns the number of agent rows whose episode ended.
    #[pyo3(signature = (ints=None, floats=None, sel=None, obs=None, rewards=None, terminated=None, truncated=None))]
    #[allow(clippy::too_many_arguments)]
    fn step(
        &mut self,
        py: Python<'_>,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
        obs: Option<&Bound<'_, PyAny>>,
        rewards: Option<PyReadwriteArray1<'_, f32>>,
        terminated: Option<PyReadwriteArray1<'_, bool>>,
        truncated: Option<PyReadwriteArray1<'_, bool>>,
    ) -> PyResult<usize> {
        let a = actions_from(&ints, &floats, &sel)?;
        let pool = self.pool.clone();
        let dtype = self.get()?.obs_dtype();
        let mut guard = obs.map(|o| ObsGuard::new(o, dtype)).transpose()?;
        let out = guard.as_mut().map(|g| g.slice()).transpose()?;
        let v = self.get_mut()?;
        // The action arrays are read-only borrows held for the call (rust-numpy's borrow
        // flags); the Python layer hands in arrays it owns or fresh conversions. Loading,
        // stepping and copying the observations run in one pool task without the GIL.
        let merge = out.as_ref().is_some_and(|o| o.bytes() >= 1 << 18);
        py.detach(|| {
            on(&pool, merge, || {
                v.load_actions(&a)?;
                v.step();
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
    #[pyo3(signature = (ints=None, floats=None, sel=None))]
    fn step_async(
        &mut self,
        ints: Option<PyReadonlyArray1<'_, i64>>,
        floats: Option<PyReadonlyArray1<'_, f64>>,
        sel: Option<PyReadonlyArray1<'_, u8>>,
    ) -> PyResult<()> {
        if self.pending.is_some() {
            return Err(PyRuntimeError::new_err(
                "step_async called twice: call step_wait for the pending step first",
            ));
        }
        let a = actions_from(&ints, &floats, &sel)?;
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

/// `[(id, description), ...]`.
#[pyfunction]
pub(crate) fn list_envs() -> Vec<(String, String)> {
    env_ids()
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
