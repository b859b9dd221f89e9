//! The one registry of env ids ([`EnvId`]): each id's config type (serde, a doc comment per
//! field, `Default` = the reference's), read from its layers as a run's config is (a TOML
//! file, a Python dict, `--set key=value`; an unknown key named with the closest one), and
//! the batch it builds, behind one object-safe interface ([`DynBatch`]) over any
//! [`BatchEnv`]. The Python package's `make`/`make_vec`, `kestrel config ID` and
//! `kestrel env` all go through it; the bindings keep only numpy marshalling.
//!
//! | id | config |
//! |---|---|
//! | `CartPole-v1` | [`CartPoleParams`] |
//! | `Pendulum-v1` | [`PendulumParams`] |
//! | `Control-<system>-v0` | [`ControlParams`] |
//! | `Control-double-integrator-v0` | [`DoubleIntegratorConfig`] |
//! | `GridWorld-v0` | [`GridConfig`] |
//! | `TreasureHunt-v0` | [`TreasureParams`] |
//! | `ARC-v0`, `ARC-jaxarc-v0` | [`ArcConfig`] |
//! | `VectorField-v0` | [`VectorFieldConfig`] |

use crate::base::RunError;
use crate::config::{commented_toml, load_config};
use crate::render::{Frame, Show};
use crate::run::Layers;
use kestrel_arc::{
    ArcAction, ArcConfig, ArcEnv, ArcError, ArcLanes, MAX_LANE_SIDE, ModeKind, Selection,
};
use kestrel_core::simd::{any_at_least, bits_by_multiply, gather8};
use kestrel_core::{BatchEnv, Documented, Env, FieldDoc, Key, Space, Spec, VecEnv};
use kestrel_envs::control::{ENV_MAX_NU, ENV_MAX_NX};
use kestrel_envs::{
    CartPole, CartPoleParams, CartPoleState, ControlEnv, ControlParams, ControlState,
    DoubleIntegrator, GridConfig, GridWorld, Pendulum, PendulumParams, PendulumState, TreasureHunt,
    TreasureParams, VectorFieldEnv,
};
use kestrel_mppi::presets::SystemKind;
use rayon::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// One env id of the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnvId {
    /// Gymnasium's `CartPole-v1`, bit-exact.
    CartPole,
    /// Gymnasium's `Pendulum-v1`, bit-exact.
    Pendulum,
    /// An MPPI system as an env (obs = state, reward = -running cost).
    Control(SystemKind),
    /// A double integrator of 1 to 4 dimensions.
    DoubleIntegrator,
    /// An ALLO grid maze.
    GridWorld,
    /// sorrel's treasure hunt, one row per agent.
    TreasureHunt,
    /// ARC in ARCLE `O2ARCv2Env` 0.2.6 semantics ([`ModeKind::O2arc`]) or JaxARC 1.0.3's.
    Arc(ModeKind),
    /// actdyn's latent vector-field systems with an observation model.
    VectorField,
}

/// A double integrator's settings: its dimensions and the control env's.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct DoubleIntegratorConfig {
    /// Dimensions (1 to 4): the state is positions then velocities.
    pub dims: usize,
    /// The episode settings.
    #[serde(flatten)]
    #[documented(flatten)]
    pub control: ControlParams,
}

impl Default for DoubleIntegratorConfig {
    fn default() -> Self {
        DoubleIntegratorConfig { dims: 1, control: ControlParams::default() }
    }
}

/// A vector-field env's settings: the seed of its generated parts, its limit, and actdyn's
/// environment table.
#[derive(
    Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct VectorFieldConfig {
    /// Seed of the generated field and observation model (actdyn's model key).
    pub model_seed: u64,
    /// Steps before truncation; 0 for none.
    pub max_episode_steps: u32,
    /// The system (actdyn's `[env]` table).
    #[serde(flatten)]
    #[documented(flatten)]
    pub env: kestrel_actdyn::config::EnvConfig,
}

/// A batch the registry built, or why it could not.
type Built = Result<Box<dyn DynBatch>, RunError>;

/// An env id's config: read from layers, checked, then built into `num_envs` rows.
trait EnvConfig: Serialize + DeserializeOwned + Documented + Default {
    /// Everything checked before anything is built (what `kestrel config ID` checks too).
    fn validate(&self, id: EnvId) -> Result<(), RunError>;
    /// The batch, from a config [`EnvConfig::validate`] passed.
    fn build(&self, id: EnvId, n: usize, seed: u64, off: u64) -> Built;
}

/// Runs `$body` with `$C` the config type of env id `$id`.
macro_rules! with_env {
    ($id:expr, $C:ident => $body:expr) => {
        match $id {
            EnvId::CartPole => {
                type $C = CartPoleParams;
                $body
            }
            EnvId::Pendulum => {
                type $C = PendulumParams;
                $body
            }
            EnvId::Control(_) => {
                type $C = ControlParams;
                $body
            }
            EnvId::DoubleIntegrator => {
                type $C = DoubleIntegratorConfig;
                $body
            }
            EnvId::GridWorld => {
                type $C = GridConfig;
                $body
            }
            EnvId::TreasureHunt => {
                type $C = TreasureParams;
                $body
            }
            EnvId::Arc(_) => {
                type $C = ArcConfig;
                $body
            }
            EnvId::VectorField => {
                type $C = VectorFieldConfig;
                $body
            }
        }
    };
}

impl EnvId {
    /// Every env id, in the order `kestrel env list` prints them.
    pub fn all() -> Vec<EnvId> {
        let mut v = vec![EnvId::CartPole, EnvId::Pendulum];
        v.extend(SystemKind::ALL.into_iter().map(EnvId::Control));
        v.extend([
            EnvId::DoubleIntegrator,
            EnvId::GridWorld,
            EnvId::TreasureHunt,
            EnvId::Arc(ModeKind::O2arc),
            EnvId::Arc(ModeKind::Jaxarc),
            EnvId::VectorField,
        ]);
        v
    }

    /// The id as `make` takes it (`CartPole-v1`).
    pub fn name(self) -> String {
        match self {
            EnvId::CartPole => "CartPole-v1".into(),
            EnvId::Pendulum => "Pendulum-v1".into(),
            EnvId::Control(s) => format!("Control-{}-v0", s.name()),
            EnvId::DoubleIntegrator => "Control-double-integrator-v0".into(),
            EnvId::GridWorld => "GridWorld-v0".into(),
            EnvId::TreasureHunt => "TreasureHunt-v0".into(),
            EnvId::Arc(ModeKind::O2arc) => "ARC-v0".into(),
            EnvId::Arc(ModeKind::Jaxarc) => "ARC-jaxarc-v0".into(),
            EnvId::VectorField => "VectorField-v0".into(),
        }
    }

    /// One line on what the env is.
    pub fn about(self) -> String {
        match self {
            EnvId::CartPole => "Gymnasium CartPole-v1 (bit-exact), Discrete(2)".into(),
            EnvId::Pendulum => "Gymnasium Pendulum-v1 (bit-exact), Box(-2, 2, (1,))".into(),
            EnvId::Control(s) => {
                format!("the MPPI system {s:?} as an env: obs = state, reward = -running cost")
            }
            EnvId::DoubleIntegrator => "a double integrator (dims = 1..4) as an env".into(),
            EnvId::GridWorld => "an ALLO grid maze (map = \"builtin:NAME\" or a map file)".into(),
            EnvId::TreasureHunt => {
                "sorrel's treasure hunt, one row per agent (PufferLib style)".into()
            }
            EnvId::Arc(ModeKind::O2arc) => {
                "ARC in ARCLE O2ARCv2Env 0.2.6 semantics (canvas = 30, 10 or 5)".into()
            }
            EnvId::Arc(ModeKind::Jaxarc) => {
                "ARC in JaxARC 1.0.3 semantics (canvas = 30, or 10 or 5 on the lane kernel)".into()
            }
            EnvId::VectorField => {
                "actdyn's latent vector-field systems with an observation model".into()
            }
        }
    }

    /// The return at which the reference counts the task solved (Gymnasium's registered
    /// `reward_threshold`: CartPole-v1's 475), where it has one.
    pub fn reward_threshold(self) -> Option<f64> {
        match self {
            EnvId::CartPole => Some(475.0),
            _ => None,
        }
    }

    /// Gymnasium's `metadata["render_modes"]`: every env draws `rgb_array`; the grids (ARC,
    /// GridWorld, TreasureHunt) also print as `ansi` text.
    pub fn render_modes(self) -> &'static [&'static str] {
        match self {
            EnvId::GridWorld | EnvId::TreasureHunt | EnvId::Arc(_) => &["rgb_array", "ansi"],
            _ => &["rgb_array"],
        }
    }

    /// Gymnasium's `metadata["render_fps"]`: CartPole-v1's 50 and Pendulum-v1's 30, the
    /// control systems' 1/dt, 10 elsewhere (what a recorded video plays at).
    pub fn render_fps(self) -> u32 {
        match self {
            EnvId::CartPole => 50,
            EnvId::Pendulum => 30,
            EnvId::Control(SystemKind::Cartpole) => 50,
            EnvId::Control(SystemKind::Pendulum) => 20,
            _ => 10,
        }
    }

    /// The env id `name`; an unknown one is an error naming the closest id and listing all.
    pub fn parse(name: &str) -> Result<EnvId, RunError> {
        let all = EnvId::all();
        if let Some(id) = all.iter().find(|id| id.name() == name) {
            return Ok(*id);
        }
        let names: Vec<String> = all.iter().map(|id| id.name()).collect();
        let hint = kestrel_core::did_you_mean(name, names.iter().map(String::as_str));
        Err(RunError::Config {
            source_name: "env id".into(),
            message: format!("unknown env id {name:?}{hint}; one of: {}", names.join(", ")),
        })
    }

    /// The config's keys with their docs.
    pub fn fields(self) -> &'static [FieldDoc] {
        with_env!(self, C => C::fields())
    }

    /// The config `layers` give, checked, as JSON (as [`crate::registry::RunKind::resolve`]; Python's
    /// `kestrel.config(id)`).
    pub fn resolve(self, layers: Layers<'_>) -> Result<serde_json::Value, RunError> {
        with_env!(self, C => serde_json::to_value(self.load::<C>(layers)?)
            .map_err(|e| RunError::Failed(format!("{}: {e}", self.name()))))
    }

    /// The config `layers` give as commented TOML (`kestrel config ID`), which `--config`
    /// reads back.
    pub fn config_toml(self, layers: Layers<'_>) -> Result<String, RunError> {
        let header = format!(
            "{}: the params of {}.\nPass as a Python dict or keywords to `kestrel.make`/`make_vec`, or to `kestrel env bench ID` with `--config FILE` or `--set key=value`.",
            self.name(),
            self.about()
        );
        with_env!(self, C => commented_toml(&self.load::<C>(layers)?, &header))
    }

    /// Rows `[row_offset, row_offset + num_envs)` of a batch of this env seeded `seed`, its
    /// config read from `layers` and checked before anything is built.
    pub fn build(self, layers: Layers<'_>, num_envs: usize, seed: u64, row_offset: u64) -> Built {
        with_env!(self, C => self.load::<C>(layers)?.build(self, num_envs, seed, row_offset))
    }

    fn load<C: EnvConfig>(self, layers: Layers<'_>) -> Result<C, RunError> {
        if layers.preset.is_some() {
            return Err(RunError::Config {
                source_name: "preset".into(),
                message: format!("env {} has no presets", self.name()),
            });
        }
        let c: C = load_config(&C::default(), layers.file, layers.table.clone(), layers.sets)?;
        c.validate(self)?;
        Ok(c)
    }
}

/// What `kestrel config NAME` and Python's `kestrel.config(NAME)` describe: a run kind's
/// config or an env id's params.
#[derive(Clone, Copy, Debug)]
pub enum Configurable {
    /// A run kind.
    Run(crate::registry::RunKind),
    /// An env id.
    Env(EnvId),
}

impl Configurable {
    /// The run kind or env id `name`; neither is an error naming the closest of both.
    pub fn parse(name: &str) -> Result<Configurable, RunError> {
        if let Ok(k) = crate::registry::RunKind::from_name(name) {
            return Ok(Configurable::Run(k));
        }
        if let Ok(id) = EnvId::parse(name) {
            return Ok(Configurable::Env(id));
        }
        let ids: Vec<String> = EnvId::all().into_iter().map(EnvId::name).collect();
        let kinds = crate::registry::RunKind::ALL.iter().map(|k| k.name());
        let hint = kestrel_core::did_you_mean(name, kinds.chain(ids.iter().map(String::as_str)));
        Err(RunError::Config {
            source_name: "config".into(),
            message: format!(
                "{name:?} is neither a run kind nor an env id{hint} (`kestrel config` lists both)"
            ),
        })
    }

    /// The resolved config as commented TOML.
    pub fn config_toml(self, layers: Layers<'_>) -> Result<String, RunError> {
        match self {
            Configurable::Run(k) => k.config_toml(layers),
            Configurable::Env(id) => id.config_toml(layers),
        }
    }

    /// The resolved config as JSON.
    pub fn resolve(self, layers: Layers<'_>) -> Result<serde_json::Value, RunError> {
        match self {
            Configurable::Run(k) => k.resolve(layers),
            Configurable::Env(id) => id.resolve(layers),
        }
    }
}

impl EnvConfig for CartPoleParams {
    fn validate(&self, _: EnvId) -> Result<(), RunError> {
        Ok(CartPoleParams::validate(self)?)
    }
    fn build(&self, _: EnvId, n: usize, seed: u64, off: u64) -> Built {
        holder::<VecEnv<_>>(CartPole, self.clone(), n, seed, off)
    }
}

impl EnvConfig for PendulumParams {
    fn validate(&self, _: EnvId) -> Result<(), RunError> {
        Ok(PendulumParams::validate(self)?)
    }
    fn build(&self, _: EnvId, n: usize, seed: u64, off: u64) -> Built {
        holder::<VecEnv<_>>(Pendulum, self.clone(), n, seed, off)
    }
}

/// A control env over `system`.
fn control<D>(system: D, p: &ControlParams, n: usize, seed: u64, off: u64) -> Built
where
    D: kestrel_dynamics::Dynamics + Clone + std::fmt::Debug + 'static,
    VecEnv<ControlEnv<D>>: Show,
{
    let env = ControlEnv::new(system)?;
    env.validate(p)?;
    holder::<VecEnv<_>>(env, p.clone(), n, seed, off)
}

impl EnvConfig for ControlParams {
    fn validate(&self, id: EnvId) -> Result<(), RunError> {
        let EnvId::Control(s) = id else { unreachable!("with_env! pairs ids and configs") };
        Ok(ControlEnv::new(s)?.validate(self)?)
    }
    fn build(&self, id: EnvId, n: usize, seed: u64, off: u64) -> Built {
        let EnvId::Control(s) = id else { unreachable!("with_env! pairs ids and configs") };
        control(s, self, n, seed, off)
    }
}

impl EnvConfig for DoubleIntegratorConfig {
    fn validate(&self, _: EnvId) -> Result<(), RunError> {
        if !(1..=4).contains(&self.dims) {
            return Err(kestrel_core::Invalid::new("dims", self.dims, "1 to 4").into());
        }
        Ok(ControlEnv::new(DoubleIntegrator { dims: self.dims })?.validate(&self.control)?)
    }
    fn build(&self, _: EnvId, n: usize, seed: u64, off: u64) -> Built {
        control(DoubleIntegrator { dims: self.dims }, &self.control, n, seed, off)
    }
}

impl EnvConfig for GridConfig {
    fn validate(&self, _: EnvId) -> Result<(), RunError> {
        self.params().map(drop).map_err(RunError::from)
    }
    fn build(&self, _: EnvId, n: usize, seed: u64, off: u64) -> Built {
        holder::<VecEnv<_>>(GridWorld, self.params()?, n, seed, off)
    }
}

impl EnvConfig for TreasureParams {
    fn validate(&self, _: EnvId) -> Result<(), RunError> {
        Ok(TreasureParams::validate(self)?)
    }
    fn build(&self, _: EnvId, n: usize, seed: u64, off: u64) -> Built {
        holder::<VecEnv<_>>(TreasureHunt, self.clone(), n, seed, off)
    }
}

impl EnvConfig for ArcConfig {
    fn validate(&self, id: EnvId) -> Result<(), RunError> {
        let EnvId::Arc(mode) = id else { unreachable!("with_env! pairs ids and configs") };
        self.params(mode).map(drop).map_err(RunError::from)
    }
    fn build(&self, id: EnvId, n: usize, seed: u64, off: u64) -> Built {
        let EnvId::Arc(mode) = id else { unreachable!("with_env! pairs ids and configs") };
        let p = self.params(mode)?;
        kestrel_arc::with_canvas!(self.canvas, S => arc_on::<S>(self.env(self.bank()?, "")?.0, p, n, seed, off),
            else Err(kestrel_core::Invalid::new("canvas", self.canvas, "5, 10 or 30").into()))
    }
}

/// ARC on an `S × S` canvas: `jaxarc` mode on the lane kernel where `S ≤ 10`, else one env
/// per row.
fn arc_on<const S: usize>(
    env: ArcEnv<S>,
    p: kestrel_arc::ArcParams,
    n: usize,
    seed: u64,
    off: u64,
) -> Built {
    env.validate(&p)?;
    if p.mode == ModeKind::Jaxarc && S <= MAX_LANE_SIDE {
        return holder::<ArcLanes<S>>(env, p, n, seed, off);
    }
    holder::<VecEnv<_>>(env, p, n, seed, off)
}

impl EnvConfig for VectorFieldConfig {
    fn validate(&self, _: EnvId) -> Result<(), RunError> {
        Ok(self.env.validate()?)
    }
    /// The environment of an actdyn run with this `[env]` table, under actdyn's default
    /// profile (faithful: the reference's switches, e.g. its alpha autoscaling).
    fn build(&self, _: EnvId, n: usize, seed: u64, off: u64) -> Built {
        use kestrel_actdyn::config::{BugOverrides, ProfileKind};
        let bugs = BugOverrides::default().resolve(ProfileKind::default());
        let mut p = kestrel_actdyn::env::build_env(&self.env, &bugs, Key::new(self.model_seed))?;
        p.max_episode_steps = (self.max_episode_steps > 0).then_some(self.max_episode_steps);
        p.validate()?;
        holder::<VecEnv<_>>(VectorFieldEnv, p, n, seed, off)
    }
}

/// One batch of observations, by element type.
pub enum Obs<'a> {
    /// `float32` observations.
    F32(&'a [f32]),
    /// `float64` observations.
    F64(&'a [f64]),
    /// `int8` observations (ARC grids).
    I8(&'a [i8]),
}

/// A front end's buffer for observations, writable (one dtype per env kind).
pub enum ObsMut<'a> {
    /// `float32` observations.
    F32(&'a mut [f32]),
    /// `float64` observations.
    F64(&'a mut [f64]),
    /// `int8` observations (ARC grids).
    I8(&'a mut [i8]),
}

impl ObsMut<'_> {
    /// Its size in bytes.
    pub fn bytes(&self) -> usize {
        match self {
            ObsMut::F32(s) => std::mem::size_of_val(*s),
            ObsMut::F64(s) => std::mem::size_of_val(*s),
            ObsMut::I8(s) => std::mem::size_of_val(*s),
        }
    }
}

/// Copies a whole observation column into a front end's buffer of the same dtype and length
/// (large ones by the current pool's threads: ARC's 0.9 MB at 1,024 rows).
pub fn copy_column(src: Obs<'_>, dst: ObsMut<'_>) -> Result<(), String> {
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

/// Each env's flag over its `agents` agent rows of `dst`, as `f` writes it (the front ends'
/// per-row `terminated` and `truncated`).
pub fn spread_flags<T: Copy>(src: &[bool], agents: usize, dst: &mut [T], f: impl Fn(bool) -> T) {
    if agents == 1 {
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = f(x);
        }
    } else {
        for (d, &x) in dst.chunks_exact_mut(agents).zip(src) {
            d.fill(f(x));
        }
    }
}

/// A front end's buffers for [`DynBatch::rollout`]: each step's columns, step-major (see
/// [`kestrel_core::Trajectory`], whose lengths they must have).
pub struct Rollout<'a> {
    /// Observations after each step.
    pub obs: ObsMut<'a>,
    /// Final observations of the episodes that ended in each step (those rows only), or
    /// `None`.
    pub final_obs: Option<ObsMut<'a>>,
    /// Rewards, one per agent row and step.
    pub rewards: &'a mut [f32],
    /// Terminations, one per env and step.
    pub terminated: &'a mut [bool],
    /// Truncations, one per env and step.
    pub truncated: &'a mut [bool],
}

/// Actions as a front end holds them (one dtype per space kind).
#[derive(Clone, Copy)]
pub enum Actions<'a> {
    /// One integer per agent row (Discrete spaces).
    Int(&'a [i64]),
    /// `nu` floats per agent row (Box spaces).
    Float(&'a [f64]),
    /// ARC: one operation per row and an `S × S` 0/1 selection per row.
    Arc {
        /// The operations.
        ops: &'a [i64],
        /// The selections, row-major.
        sel: &'a [u8],
    },
    /// ARC with point or bbox selections: one operation per row and 2 (`row, col`) or 4
    /// (`r1, c1, r2, c2`, an inclusive rectangle, corners in any order) canvas coordinates
    /// per row (JaxARC's `PointActionWrapper` and `BboxActionWrapper`).
    ArcCoords {
        /// The operations.
        ops: &'a [i64],
        /// The coordinate columns (`row`, `col`, or `r1`, `c1`, `r2`, `c2`), one value per
        /// row each: a front end's per-key arrays as they are, without stacking.
        coords: &'a [&'a [i64]],
    },
}

/// How an action type is filled from a front end's [`Actions`]; each checks ranges so nothing
/// invalid reaches a kernel silently.
pub trait Codec: Sized + Copy + Default {
    /// Fills `out` from `input` for `space`, or says what is wrong (field and value).
    fn fill(input: &Actions<'_>, space: &Space, out: &mut [Self]) -> Result<(), String>;
    /// The action's operation id where actions have one (ARC), else -1.
    fn operation(&self) -> i64 {
        -1
    }
    /// Checks `input` for `rows` agent rows (field and value of the first bad one), where
    /// this action type is then read row by row inside the step ([`Codec::decode`]): the
    /// step's one parallel pass decodes, steps and writes each shard of rows on one thread,
    /// instead of a pass that fills an action array and another that reads it. False for the
    /// types filled in bulk only ([`Codec::fill`]).
    fn check(_input: &Actions<'_>, _rows: usize) -> Result<bool, String> {
        Ok(false)
    }
    /// Row `row` of `input`, once [`Codec::check`] accepted it.
    fn decode(_input: &Actions<'_>, _row: usize) -> Self {
        Self::default()
    }
    /// The operation ids of `input`, where actions have them (ARC).
    fn operations<'a>(_input: &Actions<'a>) -> Option<&'a [i64]> {
        None
    }
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
    fn operation(&self) -> i64 {
        self.op as i64
    }
    fn fill(input: &Actions<'_>, _space: &Space, out: &mut [Self]) -> Result<(), String> {
        Self::check(input, out.len())?;
        // At least 256 rows a task: a row is nanoseconds, a hand-off microseconds.
        out.par_iter_mut().enumerate().with_min_len(256).for_each(|(i, o)| {
            *o = Self::decode(input, i);
        });
        Ok(())
    }
    fn check(input: &Actions<'_>, n: usize) -> Result<bool, String> {
        match input {
            Actions::Arc { ops, sel } => check_masks::<S>(ops, sel, n),
            Actions::ArcCoords { ops, coords } => check_coords::<S>(ops, coords, n),
            _ => Err("actions: ARC takes a dict {operation, selection}".into()),
        }?;
        Ok(true)
    }
    #[inline(always)]
    fn decode(input: &Actions<'_>, row: usize) -> Self {
        match input {
            Actions::Arc { ops, sel } => {
                ArcAction { op: ops[row] as i32, sel: Selection::Mask(pack_rows::<S>(sel, row)) }
            }
            // Point actions have two columns, bbox actions four (`check_coords`).
            Actions::ArcCoords { ops, coords } => {
                let at = |j: usize| coords[j][row] as i32;
                let sel = if coords.len() == 2 {
                    Selection::Point { row: at(0), col: at(1) }
                } else {
                    Selection::BBox { r1: at(0), c1: at(1), r2: at(2), c2: at(3) }
                };
                ArcAction { op: ops[row] as i32, sel }
            }
            _ => Self::default(),
        }
    }
    fn operations<'a>(input: &Actions<'a>) -> Option<&'a [i64]> {
        match input {
            Actions::Arc { ops, .. } | Actions::ArcCoords { ops, .. } => Some(ops),
            _ => None,
        }
    }
}

/// ARC's operations: one per row, each an op id of `Discrete(NUM_OPS)`.
fn check_operations(ops: &[i64], n: usize) -> Result<(), String> {
    if ops.len() != n {
        return Err(format!("actions['operation']: expected shape ({n},), got ({},)", ops.len()));
    }
    let nops = kestrel_arc::NUM_OPS as i64;
    // No early exit (vector code); the first bad one is looked for only when there is one.
    if any_at_least(ops, nops as u64)
        && let Some(i) = ops.iter().position(|op| !(0..nops).contains(op))
    {
        return Err(format!("actions['operation'][{i}] = {}: outside Discrete({nops})", ops[i]));
    }
    Ok(())
}

/// Mask ARC actions: `n` selections of `S × S` bytes, each 0 or 1.
fn check_masks<const S: usize>(ops: &[i64], sel: &[u8], n: usize) -> Result<(), String> {
    let cells = S * S;
    check_operations(ops, n)?;
    if sel.len() != n * cells {
        return Err(format!(
            "actions['selection']: expected shape ({n}, {S}, {S}), got {} values",
            sel.len()
        ));
    }
    // One OR over the bytes (vector code: about a microsecond for 4,096 5x5 masks); the
    // first bad byte is looked for only when there is one.
    if sel.iter().fold(0u8, |a, &b| a | b) > 1
        && let Some(i) = sel.iter().position(|&b| b > 1)
    {
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

/// Point (2 coordinate columns) or bbox (4) ARC actions; every value must be on the canvas.
fn check_coords<const S: usize>(ops: &[i64], coords: &[&[i64]], n: usize) -> Result<(), String> {
    check_operations(ops, n)?;
    let k = coords.len();
    if !(k == 2 || k == 4) || coords.iter().any(|c| c.len() != n) {
        return Err(format!(
            "actions: expected 2 (point) or 4 (bbox) coordinate columns of {n} rows, got {:?}",
            coords.iter().map(|c| c.len()).collect::<Vec<_>>()
        ));
    }
    let names: &[&str] = if k == 2 { &["row", "col"] } else { &["r1", "c1", "r2", "c2"] };
    // An unsigned compare with no early exit (vector code); the first bad value is looked
    // for only when there is one.
    let bad = coords.iter().any(|c| any_at_least(c, S as u64));
    let off = |v: &i64| !(0..S as i64).contains(v);
    if bad
        && let Some((j, i)) =
            coords.iter().enumerate().find_map(|(j, c)| c.iter().position(off).map(|i| (j, i)))
    {
        return Err(format!(
            "actions[{:?}][{i}] = {}: outside the {S}x{S} canvas (0 to {})",
            names[j],
            coords[j][i],
            S - 1
        ));
    }
    Ok(())
}

/// Env `env`'s `S × S` selection bytes in `sel` (checked to be 0 or 1) as bit rows: each
/// row read as one fixed-size array (no bounds check a byte, no copy through a slice) for
/// canvases up to 16 wide; wider ones by [`bits_by_multiply`] (`step_actions`' per-row decoding).
#[inline(always)]
fn pack_rows<const S: usize>(sel: &[u8], env: usize) -> [u32; S] {
    let gather = |b: &[u8]| u32::from(gather8(b));
    let rows = &sel.as_chunks::<S>().0[env * S..(env + 1) * S];
    std::array::from_fn(|r| {
        let row: &[u8; S] = &rows[r];
        if S <= 8 {
            gather(row)
        } else if S <= 16 {
            gather(&row[..8]) | gather(&row[8..]) << 8
        } else {
            bits_by_multiply(row) as u32
        }
    })
}

/// Observation element types a front end sees.
pub trait ObsElem: Copy {
    /// The slice as an [`Obs`].
    fn wrap(v: &[Self]) -> Obs<'_>;
    /// A buffer of this type, or `None` for another dtype.
    fn unwrap_mut(o: ObsMut<'_>) -> Option<&mut [Self]>;
    /// numpy's name of the type.
    const DTYPE: &'static str;
}
impl ObsElem for f32 {
    fn wrap(v: &[Self]) -> Obs<'_> {
        Obs::F32(v)
    }
    fn unwrap_mut(o: ObsMut<'_>) -> Option<&mut [Self]> {
        match o {
            ObsMut::F32(v) => Some(v),
            _ => None,
        }
    }
    const DTYPE: &'static str = "float32";
}
impl ObsElem for f64 {
    fn wrap(v: &[Self]) -> Obs<'_> {
        Obs::F64(v)
    }
    fn unwrap_mut(o: ObsMut<'_>) -> Option<&mut [Self]> {
        match o {
            ObsMut::F64(v) => Some(v),
            _ => None,
        }
    }
    const DTYPE: &'static str = "float64";
}
impl ObsElem for i8 {
    fn wrap(v: &[Self]) -> Obs<'_> {
        Obs::I8(v)
    }
    fn unwrap_mut(o: ObsMut<'_>) -> Option<&mut [Self]> {
        match o {
            ObsMut::I8(v) => Some(v),
            _ => None,
        }
    }
    const DTYPE: &'static str = "int8";
}

/// States settable from a flat f64 vector (envs whose observation is a function of it).
pub trait StateIo: Sized {
    /// The state from its flat values, or what is wrong with them.
    fn from_flat(v: &[f64]) -> Result<Self, String> {
        let _ = v;
        Err("this env's state cannot be set".into())
    }
    /// The state as flat values (empty where it has none).
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

/// A batch of any env, object-safe: what the env registry builds and a front end steps.
pub trait DynBatch: Send + Sync {
    /// The spec of one env.
    fn spec(&self) -> &Spec;
    /// Number of envs.
    fn num_envs(&self) -> usize;
    /// numpy's name of the observation element type.
    fn obs_dtype(&self) -> &'static str;
    /// Resets every row from `seed`.
    fn reset(&mut self, seed: u64);
    /// Resets the masked rows ([`BatchEnv::reset_rows`]).
    fn reset_rows(&mut self, mask: &[bool]) -> Result<(), String>;
    /// Sets the auto-reset mode.
    fn set_autoreset(&mut self, m: kestrel_core::AutoReset);
    /// Decodes and checks the next step's actions.
    fn load_actions(&mut self, a: &Actions<'_>) -> Result<(), String>;
    /// Steps with the loaded actions.
    fn step(&mut self);
    /// Checks `a` and steps with it, as [`DynBatch::load_actions`] then [`DynBatch::step`]
    /// would, in one parallel pass where the action type decodes row by row
    /// ([`Codec::check`]); the decoded actions are then not kept, so a later bare
    /// [`DynBatch::step`] steps the last actions loaded. A bad action is an error that changes
    /// nothing.
    fn step_actions(&mut self, a: &Actions<'_>) -> Result<(), String>;
    /// Steps once per entry of `acts` (every one checked before anything moves), writing
    /// each step's columns into `out` ([`BatchEnv::rollout_with`]: the lane kernel runs each
    /// block of envs through every step on one thread). The results are those of as many
    /// [`DynBatch::step_actions`] calls; afterwards the columns and
    /// [`DynBatch::operations`] are the last step's. A bad action or a buffer of the wrong
    /// length or dtype is an error that changes nothing.
    fn rollout(&mut self, acts: &[Actions<'_>], out: Rollout<'_>) -> Result<(), String>;
    /// Current observations.
    fn obs(&self) -> Obs<'_>;
    /// Last observations of the episodes that ended in the last step.
    fn final_obs(&self) -> Obs<'_>;
    /// Rewards of the last step, one per agent row.
    fn rewards(&self) -> &[f32];
    /// Terminations of the last step, one per env.
    fn terminated(&self) -> &[bool];
    /// Truncations of the last step, one per env.
    fn truncated(&self) -> &[bool];
    /// Steps of each env's current episode.
    fn episode_steps(&self) -> &[u32];
    /// Puts row `row` into the state with these flat values.
    fn set_state(&mut self, row: usize, state: &[f64]) -> Result<(), String>;
    /// Row `row`'s state as flat values (empty where it has none).
    fn state(&self, row: usize) -> Vec<f64>;
    /// A picture of env `row` ([`Show::frame`]).
    fn render(&self, row: usize) -> Result<Frame, RunError>;
    /// Env `row` as text, where the env has a text form ([`Show::text`]).
    fn render_text(&self, row: usize) -> Result<Option<String>, RunError>;
    /// Each env's similarity to its target where the env measures one ([`Show::similarity`]).
    fn similarity(&self, out: &mut [f32]) -> bool;
    /// The loaded actions' operation ids (ARC; -1 elsewhere), one per agent row.
    fn operations(&self, out: &mut [i64]);
    /// Env `row`'s episode where its similarity has a target ([`Show::instance`]).
    fn instance(&self, row: usize) -> Option<(u32, u16, bool)>;
    /// The similarity of env `row`'s final observation ([`Show::final_similarity`]).
    fn final_similarity(&self, row: usize, instance: (u32, u16, bool)) -> Option<f32>;
}

/// How a batch type steps [`DynBatch::rollout`] over a front end's action arrays once
/// [`Codec::check`] accepted them: by default through [`BatchEnv::rollout_with`], decoding a
/// row at a time; the lane kernel writes each block's actions straight from the arrays
/// ([`ArcLanes::rollout_lanes`]: no action value a row, which cost a quarter of a Mini-ARC
/// rollout's time).
pub trait ArrayRollout: BatchEnv {
    /// Steps once per entry of `acts`, writing `out`.
    fn rollout_decoded(
        &mut self,
        acts: &[Actions<'_>],
        out: kestrel_core::Trajectory<'_, Self::Obs>,
    ) -> Result<(), Self::Error>
    where
        Self::Action: Codec,
    {
        let agents = self.spec().num_agents;
        self.rollout_with(out, |t, env, _, _, out: &mut [Self::Action]| {
            for (k, o) in out.iter_mut().enumerate() {
                *o = Self::Action::decode(&acts[t], env * agents + k);
            }
        })
    }
}

impl<E: Env> ArrayRollout for VecEnv<E> {}

impl<const S: usize> ArrayRollout for ArcLanes<S> {
    fn rollout_decoded(
        &mut self,
        acts: &[Actions<'_>],
        out: kestrel_core::Trajectory<'_, i8>,
    ) -> Result<(), ArcError> {
        self.rollout_lanes(out, |t, first, valid, lanes| match &acts[t] {
            Actions::Arc { ops, sel } => {
                let cells = S * S;
                lanes.set_masks(&ops[first..first + valid], &sel[first * cells..][..valid * cells]);
            }
            // Corners and points: every lane's rows made from its coordinates in one pass.
            Actions::ArcCoords { ops, coords } => {
                let at = first..first + valid;
                let ops = &ops[at.clone()];
                match coords {
                    [r, c] => lanes.set_coords(ops, &[&r[at.clone()], &c[at]]),
                    [r1, c1, r2, c2] => lanes.set_coords(
                        ops,
                        &[&r1[at.clone()], &c1[at.clone()], &r2[at.clone()], &c2[at]],
                    ),
                    _ => unreachable!("check_coords takes 2 or 4 columns"),
                }
            }
            a => {
                for l in 0..valid {
                    lanes.set(l, &ArcAction::decode(a, first + l));
                }
            }
        })
    }
}

/// Any [`BatchEnv`] with its actions buffer, as a [`DynBatch`].
struct Holder<B: BatchEnv> {
    v: B,
    acts: Vec<B::Action>,
    /// The operation ids of the last [`DynBatch::step_actions`] that decoded inside the step
    /// (`acts` then holds older actions); empty after [`DynBatch::load_actions`].
    ops: Vec<i64>,
}

fn holder<B>(kernel: B::Kernel, params: B::Params, n: usize, seed: u64, off: u64) -> Built
where
    B: BatchEnv + Show + ArrayRollout + Sync + 'static,
    B::Action: Codec,
    B::Obs: ObsElem,
    B::State: StateIo,
    RunError: From<B::Error>,
{
    let v = B::shard(kernel, params, n, seed, off)?;
    let acts = vec![B::Action::default(); n * v.spec().num_agents];
    Ok(Box::new(Holder { v, acts, ops: Vec::new() }))
}

impl<B> DynBatch for Holder<B>
where
    B: BatchEnv + Show + ArrayRollout + Sync,
    B::Action: Codec,
    B::Obs: ObsElem,
    B::State: StateIo,
{
    fn spec(&self) -> &Spec {
        self.v.spec()
    }
    fn num_envs(&self) -> usize {
        self.v.num_envs()
    }
    fn obs_dtype(&self) -> &'static str {
        B::Obs::DTYPE
    }
    fn reset(&mut self, seed: u64) {
        self.v.reset(seed);
    }
    fn reset_rows(&mut self, mask: &[bool]) -> Result<(), String> {
        self.v.reset_rows(mask).map_err(|e| e.to_string())
    }
    fn set_autoreset(&mut self, m: kestrel_core::AutoReset) {
        self.v.set_autoreset(m);
    }
    fn load_actions(&mut self, a: &Actions<'_>) -> Result<(), String> {
        B::Action::fill(a, &self.v.spec().action_space, &mut self.acts)?;
        self.ops.clear();
        Ok(())
    }
    fn step(&mut self) {
        // `acts` has num_envs * num_agents entries by construction, so this cannot fail.
        let _ = self.v.try_step(&self.acts);
    }
    fn step_actions(&mut self, a: &Actions<'_>) -> Result<(), String> {
        if !B::Action::check(a, self.acts.len())? {
            self.load_actions(a)?;
            self.step();
            return Ok(());
        }
        let agents = self.v.spec().num_agents;
        self.v.step_with(|env, _, _, out: &mut [B::Action]| {
            for (k, o) in out.iter_mut().enumerate() {
                *o = B::Action::decode(a, env * agents + k);
            }
        });
        self.ops.clear();
        self.ops.extend_from_slice(B::Action::operations(a).unwrap_or_default());
        Ok(())
    }
    fn rollout(&mut self, acts: &[Actions<'_>], out: Rollout<'_>) -> Result<(), String> {
        let Some(last) = acts.last() else { return Ok(()) };
        let (rows, agents) = (self.acts.len(), self.v.spec().num_agents);
        let dtype = |what: &str| format!("{what} buffer: expected dtype {}", B::Obs::DTYPE);
        let traj = kestrel_core::Trajectory {
            obs: B::Obs::unwrap_mut(out.obs).ok_or_else(|| dtype("obs"))?,
            final_obs: match out.final_obs {
                Some(f) => Some(B::Obs::unwrap_mut(f).ok_or_else(|| dtype("final_obs"))?),
                None => None,
            },
            rewards: out.rewards,
            terminated: out.terminated,
            truncated: out.truncated,
        };
        let steps = traj.steps(self.v.columns()).map_err(|e| e.to_string())?;
        if steps != acts.len() {
            return Err(format!("rollout: actions for {} steps, buffers for {steps}", acts.len()));
        }
        let at = |t: usize, e: String| format!("step {t}: {e}");
        // Every step checked before any moves, in parallel; the first bad step is reported.
        let checks: Vec<Result<bool, String>> =
            acts.par_iter().map(|a| B::Action::check(a, rows)).collect();
        let mut inline = true;
        for (t, c) in checks.into_iter().enumerate() {
            inline &= c.map_err(|e| at(t, e))?;
        }
        let done = if inline {
            self.v.rollout_decoded(acts, traj)
        } else {
            // Types filled in bulk: every step's actions first (all checked before any step).
            let mut all = vec![B::Action::default(); acts.len() * rows];
            for (t, (a, out)) in acts.iter().zip(all.chunks_mut(rows)).enumerate() {
                B::Action::fill(a, &self.v.spec().action_space, out).map_err(|e| at(t, e))?;
            }
            self.v.rollout_with(traj, |t, env, _, _, out: &mut [B::Action]| {
                out.copy_from_slice(&all[t * rows + env * agents..][..agents]);
            })
        };
        done.map_err(|e| e.to_string())?;
        self.ops.clear();
        self.ops.extend_from_slice(B::Action::operations(last).unwrap_or_default());
        Ok(())
    }
    fn obs(&self) -> Obs<'_> {
        B::Obs::wrap(self.v.obs())
    }
    fn final_obs(&self) -> Obs<'_> {
        B::Obs::wrap(self.v.final_obs())
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
    fn set_state(&mut self, row: usize, state: &[f64]) -> Result<(), String> {
        if let Some(i) = state.iter().position(|v| !v.is_finite()) {
            return Err(format!("state[{i}] = {}: not finite", state[i]));
        }
        let s = B::State::from_flat(state)?;
        self.v.set_state(row, s).map_err(|e| e.to_string())
    }
    fn state(&self, row: usize) -> Vec<f64> {
        self.v.state(row).map(|s| s.to_flat()).unwrap_or_default()
    }
    fn render(&self, row: usize) -> Result<Frame, RunError> {
        self.v.frame(row)
    }
    fn render_text(&self, row: usize) -> Result<Option<String>, RunError> {
        self.v.text(row)
    }
    fn similarity(&self, out: &mut [f32]) -> bool {
        self.v.similarity(out)
    }
    fn operations(&self, out: &mut [i64]) {
        if !self.ops.is_empty() {
            for (o, &op) in out.iter_mut().zip(&self.ops) {
                *o = op;
            }
            return;
        }
        for (o, a) in out.iter_mut().zip(&self.acts) {
            *o = a.operation();
        }
    }
    fn instance(&self, row: usize) -> Option<(u32, u16, bool)> {
        self.v.instance(row)
    }
    fn final_similarity(&self, row: usize, instance: (u32, u16, bool)) -> Option<f32> {
        self.v.final_similarity(row, instance)
    }
}

/// Uniformly random actions of `space` for `rows` agent rows, from `key`: integers below `n`
/// (Discrete), floats between the bounds (Box; [-1, 1] where unbounded), ARC operations and 0/1 selections (Dict).
#[derive(Clone, Debug, Default)]
pub struct RandomActions {
    ints: Vec<i64>,
    floats: Vec<f64>,
    sel: Vec<u8>,
}

impl RandomActions {
    /// Draws the next batch of actions.
    pub fn draw(&mut self, space: &Space, rows: usize, key: Key) -> Actions<'_> {
        let mut r = key.rng();
        match space {
            Space::Discrete { n } => {
                self.ints.clear();
                self.ints.extend((0..rows).map(|_| r.below(*n as u32) as i64));
                Actions::Int(&self.ints)
            }
            Space::Box { low, high, shape } => {
                let nu: usize = shape.iter().product();
                // An unbounded side draws from [-1, 1] there.
                let lo = if low.is_finite() { *low } else { -1.0 };
                let hi = if high.is_finite() { *high } else { 1.0 };
                self.floats.clear();
                self.floats.extend((0..rows * nu).map(|_| lo + r.uniform_f64() * (hi - lo)));
                Actions::Float(&self.floats)
            }
            Space::Dict(parts) => {
                let cells = parts
                    .iter()
                    .find_map(|(name, s)| match s {
                        Space::Box { shape, .. } if *name == "selection" => {
                            Some(shape.iter().product::<usize>())
                        }
                        _ => None,
                    })
                    .unwrap_or(0);
                self.ints.clear();
                self.ints.extend((0..rows).map(|_| r.below(kestrel_arc::NUM_OPS as u32) as i64));
                self.sel.clear();
                self.sel.extend((0..rows * cells).map(|_| (r.next_u64() & 1) as u8));
                Actions::Arc { ops: &self.ints, sel: &self.sel }
            }
        }
    }
}

/// Env steps per second of `batch` under uniformly random actions ([`RandomActions`]) over at
/// least `seconds` ([`kestrel_core::timing::rows_per_second`]), in the current rayon pool:
/// the actions are drawn once before the clock starts, so the figure is the env's, not the
/// sampler's.
pub fn steps_per_second(batch: &mut dyn DynBatch, seconds: f64) -> Result<f64, RunError> {
    let rows = batch.num_envs() * batch.spec().num_agents;
    let space = batch.spec().action_space.clone();
    let mut actions = RandomActions::default();
    batch.load_actions(&actions.draw(&space, rows, Key::new(0))).map_err(RunError::Failed)?;
    Ok(kestrel_core::timing::rows_per_second(batch.num_envs(), seconds, || batch.step())?)
}

/// A rollout as a front end runs it: [`DynBatch::rollout`], then its steps counted into
/// `stats` under `mode` at `now()`, read when the rollout is done (the episodes that ended
/// written into `episodes`, the entries of its last rollout cleared); returns how many
/// ended. The Python binding's `rollout` and [`rollout_steps_per_second`] both run this.
#[allow(clippy::too_many_arguments)]
pub fn rollout_counted(
    batch: &mut dyn DynBatch,
    acts: &[Actions<'_>],
    out: Rollout<'_>,
    stats: &mut kestrel_core::EpisodeStats,
    mode: kestrel_core::AutoReset,
    now: impl FnOnce() -> f64,
    episodes: Option<kestrel_core::EpisodeColumns<'_>>,
) -> Result<usize, String> {
    // The flags and rewards lent to the rollout, then read by the count.
    let Rollout { obs, final_obs, rewards, terminated, truncated } = out;
    batch.rollout(
        acts,
        Rollout {
            obs,
            final_obs,
            rewards: &mut *rewards,
            terminated: &mut *terminated,
            truncated: &mut *truncated,
        },
    )?;
    stats
        .record_steps(mode, acts.len(), rewards, terminated, truncated, now(), episodes)
        .map_err(|e| e.to_string())
}

/// Env steps per second of `batch` through rollouts of `steps` steps ([`rollout_counted`]:
/// [`DynBatch::rollout`] and the episode statistics with their columns, as the Python
/// binding's `VectorEnv.rollout` runs them), over uniformly random actions ([`RandomActions`],
/// one batch a step) drawn into arrays before the clock starts, under next-step auto-reset:
/// what [`steps_per_second`] measures plus what a front end's arrays cost (reading every
/// step's actions, writing every step's columns), without the front end's language.
pub fn rollout_steps_per_second(
    batch: &mut dyn DynBatch,
    steps: usize,
    seconds: f64,
) -> Result<f64, RunError> {
    use kestrel_core::{AutoReset, EpisodeColumns, EpisodeStats};
    if steps == 0 || steps > 1 << 16 {
        return Err(kestrel_core::Invalid::new("rollout", steps, "1 to 65536 steps").into());
    }
    /// The observations' buffer, of their dtype: each step's one after another.
    enum Buf {
        F32(Vec<f32>),
        F64(Vec<f64>),
        I8(Vec<i8>),
    }
    let (envs, agents) = (batch.num_envs(), batch.spec().num_agents);
    let rows = envs * agents;
    // A step's observation values, their size, and how a buffer of their dtype is made (after
    // the size check below).
    let (per_step, elem, make): (usize, usize, fn(usize) -> Buf) = match batch.obs() {
        Obs::F32(o) => (o.len(), 4, |n| Buf::F32(vec![0.0; n])),
        Obs::F64(o) => (o.len(), 8, |n| Buf::F64(vec![0.0; n])),
        Obs::I8(o) => (o.len(), 1, |n| Buf::I8(vec![0; n])),
    };
    // A step's observations, rewards, flags and episode columns, and at least its actions'
    // operation or value a row.
    let step_bytes = per_step * elem + rows * (4 + 8 + 8 + 8 + 1 + 8) + envs * 2;
    kestrel_core::check_bytes("rollout", steps, steps as u128, step_bytes as u128)?;
    let mut obs = make(steps * per_step);
    let space = batch.spec().action_space.clone();
    let mut draws: Vec<RandomActions> = (0..steps).map(|_| RandomActions::default()).collect();
    let acts: Vec<Actions<'_>> = draws
        .iter_mut()
        .enumerate()
        .map(|(t, d)| d.draw(&space, rows, Key::new(t as u64)))
        .collect();
    batch.set_autoreset(AutoReset::NextStep);
    batch.reset(0);
    let (mut rw, mut te, mut tr) =
        (vec![0f32; steps * rows], vec![false; steps * envs], vec![false; steps * envs]);
    let (mut er, mut el) = (vec![0f64; steps * rows], vec![0i64; steps * rows]);
    let (mut es, mut ee) = (vec![0f64; steps * rows], vec![false; steps * rows]);
    let mut stats = EpisodeStats::new(envs, agents, 0.0);
    let mut run = || -> Result<usize, String> {
        let obs = match &mut obs {
            Buf::F32(o) => ObsMut::F32(o),
            Buf::F64(o) => ObsMut::F64(o),
            Buf::I8(o) => ObsMut::I8(o),
        };
        let out = Rollout {
            obs,
            final_obs: None,
            rewards: &mut rw,
            terminated: &mut te,
            truncated: &mut tr,
        };
        let cols =
            EpisodeColumns { returns: &mut er, lengths: &mut el, seconds: &mut es, ended: &mut ee };
        // No clock in a library (the caller's time): every episode lasts 0 s here, the same
        // arithmetic as any other time.
        rollout_counted(batch, &acts, out, &mut stats, AutoReset::NextStep, || 0.0, Some(cols))
    };
    // The first rollout refuses what any would; the timed ones then cannot fail.
    run().map_err(RunError::Failed)?;
    Ok(kestrel_core::timing::rows_per_second(envs * steps, seconds, || {
        let _ = run();
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every id parses back from its name, prints defaults that read back, and builds a batch
    /// that steps under random actions.
    #[test]
    fn every_id_round_trips_and_steps() {
        for id in EnvId::all() {
            assert_eq!(EnvId::parse(&id.name()).unwrap(), id);
            let toml = id.config_toml(Layers::none()).unwrap();
            let table: toml::Table = toml::from_str(&toml).unwrap();
            let printed = serde_json::to_value(table).unwrap();
            assert_eq!(printed, id.resolve(Layers::none()).unwrap(), "{}", id.name());
            assert!(!id.fields().is_empty());
            let small = toml::toml! { canvas = 5 };
            let layers = match id {
                EnvId::Arc(_) => Layers::table(&small),
                _ => Layers::none(),
            };
            let mut b = id.build(layers, 3, 1, 0).unwrap();
            let mut acts = RandomActions::default();
            let rows = 3 * b.spec().num_agents;
            for t in 0..5 {
                let space = b.spec().action_space.clone();
                let a = acts.draw(&space, rows, Key::new(t));
                b.load_actions(&a).unwrap();
                b.step();
            }
            assert_eq!(b.rewards().len(), rows, "{}", id.name());
        }
    }

    #[test]
    fn unknown_ids_and_keys_are_named_with_the_closest() {
        let e = EnvId::parse("CartPole-v2").unwrap_err().to_string();
        assert!(e.contains("CartPole-v1") && e.contains("did you mean"), "{e}");
        let t = toml::toml! { gravty = 1.0 };
        let e = EnvId::CartPole.build(Layers::table(&t), 1, 0, 0).err().unwrap().to_string();
        assert!(e.contains("gravty") && e.contains("gravity"), "{e}");
        let t = toml::toml! { gravity = -1.0 };
        let e = EnvId::CartPole.build(Layers::table(&t), 1, 0, 0).err().unwrap().to_string();
        assert!(e.contains("gravity = -1"), "{e}");
        let t = toml::toml! { dims = 5 reset_noise = 0.1 };
        let e = EnvId::DoubleIntegrator.build(Layers::table(&t), 1, 0, 0).err().unwrap();
        assert!(e.to_string().contains("dims = 5"), "{e}");
        let t = toml::toml! { obs = "onehot" num_agnts = 2 };
        let e = EnvId::TreasureHunt.build(Layers::table(&t), 1, 0, 0).err().unwrap();
        assert!(e.to_string().contains("num_agents"), "{e}");
    }

    /// The vector field's `[env]` table alone decides: any observation width builds (the
    /// check once went through a whole actdyn config, whose model width of 50 refused the
    /// others), and a bad value is refused with its key.
    #[test]
    fn vector_field_takes_its_own_observation_width() {
        let t = toml::toml! { obs_dim = 10 };
        let b = EnvId::VectorField.build(Layers::table(&t), 3, 0, 0).unwrap();
        assert_eq!(b.spec().obs_space.flat_len(), 10);
        let t = toml::toml! { obs_dim = 0 };
        let e = EnvId::VectorField.build(Layers::table(&t), 3, 0, 0).err().unwrap().to_string();
        assert!(e.contains("obs_dim"), "{e}");
    }

    #[test]
    fn flattened_keys_are_documented_and_set() {
        let names: Vec<&str> = EnvId::VectorField.fields().iter().map(|f| f.name).collect();
        assert!(names.contains(&"model_seed") && names.contains(&"field"), "{names:?}");
        let t = toml::toml! { dims = 2 reset_noise = 0.5 };
        let c = EnvId::DoubleIntegrator.resolve(Layers::table(&t)).unwrap();
        assert_eq!((c["dims"].as_i64(), c["reset_noise"].as_f64()), (Some(2), Some(0.5)));
    }

    fn slices(c: &[Vec<i64>]) -> Vec<&[i64]> {
        c.iter().map(Vec::as_slice).collect()
    }

    /// ARC's point or bbox columns through [`Codec::fill`].
    fn arc_coords<const S: usize>(
        ops: &[i64],
        coords: &[&[i64]],
        out: &mut [ArcAction<S>],
    ) -> Result<(), String> {
        let space = Space::Discrete { n: 1 };
        ArcAction::<S>::fill(&Actions::ArcCoords { ops, coords }, &space, out)
    }

    /// Observations, rewards, flags, step counts and operations of a batch.
    type Outputs = (Vec<i8>, Vec<f32>, Vec<bool>, Vec<bool>, Vec<u32>, Vec<i64>);
    fn outputs(b: &dyn DynBatch) -> Outputs {
        let Obs::I8(obs) = b.obs() else { panic!("ARC observations are int8") };
        let mut ops = vec![0; b.num_envs()];
        b.operations(&mut ops);
        let (te, tr) = (b.terminated().to_vec(), b.truncated().to_vec());
        (obs.to_vec(), b.rewards().to_vec(), te, tr, b.episode_steps().to_vec(), ops)
    }

    type Twins = [Box<dyn DynBatch>; 2];

    /// Twin ARC batches, reset alike, in both kernels: 3 envs (one task: o2arc's rows,
    /// jaxarc's single lane block), 70 (two lane blocks, next-step reset) and 600 (ten lane
    /// blocks in several tasks on the pool); 6-step episodes on a `canvas` × `canvas` canvas.
    fn arc_twins(canvas: usize) -> Vec<(EnvId, usize, Twins)> {
        use kestrel_core::AutoReset;
        let small = toml::toml! { canvas = canvas
        max_episode_steps = 6 };
        let mut out = Vec::new();
        for id in
            [EnvId::Arc(kestrel_arc::ModeKind::O2arc), EnvId::Arc(kestrel_arc::ModeKind::Jaxarc)]
        {
            for (n, mode) in
                [(3, AutoReset::SameStep), (70, AutoReset::NextStep), (600, AutoReset::SameStep)]
            {
                let mut twins = [0, 1].map(|_| id.build(Layers::table(&small), n, 7, 0).unwrap());
                for b in &mut twins {
                    b.set_autoreset(mode);
                    b.reset(7);
                }
                out.push((id, n, twins));
            }
        }
        out
    }

    /// `rollout` gives what as many `step_actions` calls give, step by step: o2arc (rows, the
    /// trait's per-row decoding) and jaxarc (lanes, each block's actions written from the
    /// arrays: one partial block, two blocks, several tasks), with masks, points and bboxes in
    /// one rollout, both auto-reset modes, and the final observations; then the batches step
    /// on alike. A bad action in any step refuses the whole rollout and changes nothing.
    /// Canvases 5 and 10: a lane's mask fits a word, or not.
    #[test]
    fn rollout_is_step_actions_once_a_step() {
        let mut r = Key::new(8).rng();
        let steps = 9;
        for (s, (id, n, mut twins)) in
            [5, 10].into_iter().flat_map(|s| arc_twins(s).into_iter().map(move |t| (s, t)))
        {
            let ops: Vec<Vec<i64>> =
                (0..steps).map(|_| (0..n).map(|_| r.below(35) as i64).collect()).collect();
            let sel: Vec<Vec<u8>> = (0..steps)
                .map(|_| (0..n * s * s).map(|_| (r.next_u64() & 1) as u8).collect())
                .collect();
            let cols: Vec<Vec<Vec<i64>>> = (0..steps)
                .map(|t| {
                    (0..[2, 4][t % 2])
                        .map(|_| (0..n).map(|_| r.below(s as u32) as i64).collect())
                        .collect()
                })
                .collect();
            let cols: Vec<Vec<&[i64]>> = cols.iter().map(|c| slices(c)).collect();
            let acts: Vec<Actions<'_>> = (0..steps)
                .map(|t| match t % 3 {
                    0 => Actions::Arc { ops: &ops[t], sel: &sel[t] },
                    _ => Actions::ArcCoords { ops: &ops[t], coords: &cols[t] },
                })
                .collect();
            let per = s * s + 2;
            let mut obs = vec![0i8; steps * n * per];
            let mut fo = vec![0i8; steps * n * per];
            let (mut rw, mut te, mut tr) =
                (vec![0f32; steps * n], vec![false; steps * n], vec![false; steps * n]);
            let [one, all] = &mut twins;
            let what = format!("{} {s}x{s} n {n}", id.name());
            // A bad byte in the last step refuses the rollout; nothing moved.
            let mut bad = sel[steps - 1].clone();
            bad[3] = 2;
            let mut worse = acts.clone();
            worse[steps - 1] = Actions::Arc { ops: &ops[steps - 1], sel: &bad };
            let before = outputs(all.as_ref());
            for (k, a) in [&worse, &acts].into_iter().enumerate() {
                let out = Rollout {
                    obs: ObsMut::I8(&mut obs),
                    final_obs: Some(ObsMut::I8(&mut fo)),
                    rewards: &mut rw,
                    terminated: &mut te,
                    truncated: &mut tr,
                };
                let done = all.rollout(a, out);
                if k == 0 {
                    let e = done.unwrap_err();
                    assert!(e.starts_with(&format!("step {}: ", steps - 1)), "{e}");
                    assert_eq!(outputs(all.as_ref()), before, "{what}");
                } else {
                    done.unwrap();
                }
            }
            let mut ended = 0;
            for (t, a) in acts.iter().enumerate() {
                one.step_actions(a).unwrap();
                let (o, r, e, u, _, ops) = outputs(one.as_ref());
                let at = |k: usize| t * n * k..(t + 1) * n * k;
                assert_eq!(&obs[at(per)], &o[..], "{what} step {t}");
                assert_eq!(&rw[at(1)], &r[..], "{what} step {t}");
                assert_eq!((&te[at(1)], &tr[at(1)]), (&e[..], &u[..]), "{what} step {t}");
                let Obs::I8(f) = one.final_obs() else { unreachable!() };
                for i in (0..n).filter(|&i| e[i] || u[i]) {
                    ended += 1;
                    let row = (t * n + i) * per..(t * n + i + 1) * per;
                    assert_eq!(&fo[row], &f[i * per..(i + 1) * per], "{what} step {t} row {i}");
                }
                if t + 1 == steps {
                    assert_eq!(
                        outputs(all.as_ref()),
                        (o, r, e, u, one.episode_steps().to_vec(), ops),
                        "{what}"
                    );
                }
            }
            assert!(ended > 0, "{what}: episodes end");
            for b in [&mut *one, &mut *all] {
                b.step_actions(&acts[0]).unwrap();
            }
            assert_eq!(outputs(one.as_ref()), outputs(all.as_ref()), "{what}: the step after");
        }
    }

    /// The word-read packing of masks is the byte-by-byte one, at every canvas width class.
    #[test]
    fn pack_rows_is_one_row_at_a_time() {
        fn one<const S: usize>() {
            let mut r = Key::new(S as u64).rng();
            // Three envs: the last one's rows end the array (the short reads).
            let sel: Vec<u8> = (0..3 * S * S).map(|_| (r.next_u64() & 1) as u8).collect();
            for env in 0..3 {
                let want: [u32; S] = std::array::from_fn(|i| {
                    bits_by_multiply(&sel[(env * S + i) * S..(env * S + i + 1) * S]) as u32
                });
                assert_eq!(pack_rows::<S>(&sel, env), want, "S = {S}, env {env}");
            }
        }
        one::<1>();
        one::<3>();
        one::<5>();
        one::<8>();
        one::<9>();
        one::<10>();
        one::<16>();
        one::<30>();
    }

    /// `step_actions`, which decodes ARC's actions inside the step, gives what loading them
    /// and stepping gives: both kernels (rows: o2arc; lanes: jaxarc), one task or several, every
    /// selection form, both auto-reset modes, with short episodes so rows reset. A bad action
    /// is refused with `load_actions`' message and changes nothing.
    #[test]
    fn step_actions_is_load_then_step() {
        let mut r = Key::new(4).rng();
        for (id, n, mut twins) in arc_twins(5) {
            for t in 0..24 {
                let ops: Vec<i64> = (0..n).map(|_| r.below(35) as i64).collect();
                let sel: Vec<u8> = (0..n * 25).map(|_| (r.next_u64() & 1) as u8).collect();
                let k = [2, 4][t % 2];
                let cols: Vec<Vec<i64>> =
                    (0..k).map(|_| (0..n).map(|_| r.below(5) as i64).collect()).collect();
                let cols = slices(&cols);
                let a = match t % 3 {
                    0 => Actions::Arc { ops: &ops, sel: &sel },
                    _ => Actions::ArcCoords { ops: &ops, coords: &cols },
                };
                let [loaded, fused] = &mut twins;
                loaded.load_actions(&a).unwrap();
                loaded.step();
                fused.step_actions(&a).unwrap();
                let what = format!("{} n {n} step {t}", id.name());
                assert_eq!(outputs(loaded.as_ref()), outputs(fused.as_ref()), "{what}");
                if let (Obs::I8(x), Obs::I8(y)) = (loaded.final_obs(), fused.final_obs()) {
                    assert_eq!(x, y, "{what}");
                }
                // A bad byte in the last row, then a bad coordinate: the same message as
                // loading gives, and nothing changes.
                let before = outputs(fused.as_ref());
                let mut bad = sel.clone();
                bad[n * 25 - 1] = 2;
                let e = fused.step_actions(&Actions::Arc { ops: &ops, sel: &bad });
                let want =
                    format!("actions['selection'][{}][4][4]: byte value 2, not 0 or 1", n - 1);
                assert_eq!(e.unwrap_err(), want);
                let off = vec![5; n];
                let e =
                    fused.step_actions(&Actions::ArcCoords { ops: &ops, coords: &[&off, &off] });
                assert!(e.unwrap_err().contains("outside the 5x5 canvas"));
                assert_eq!(outputs(fused.as_ref()), before, "{what}");
            }
        }
        // Action types decoded in bulk take the same call.
        let mut b = EnvId::CartPole.build(Layers::none(), 4, 1, 0).unwrap();
        b.reset(1);
        b.step_actions(&Actions::Int(&[0, 1, 1, 0])).unwrap();
        assert_eq!(b.episode_steps(), [1, 1, 1, 1]);
        assert!(
            b.step_actions(&Actions::Int(&[0, 2, 1, 0])).unwrap_err().contains("actions[1] = 2")
        );
    }

    /// Point and bbox columns decode to the actions they name in batches of several parallel
    /// chunks, and a bad value anywhere is named by its key and row.
    #[test]
    fn arc_coordinates_decode_and_bad_values_are_named() {
        let mut r = Key::new(3).rng();
        for (n, k) in [(3, 2), (5000, 2), (5000, 4)] {
            let ops: Vec<i64> = (0..n).map(|_| r.below(35) as i64).collect();
            let coords: Vec<i64> = (0..n * k).map(|_| r.below(5) as i64).collect();
            let mut out = vec![ArcAction::<5>::default(); n];
            let cols = |c: &[i64]| -> Vec<Vec<i64>> { c.chunks(n).map(<[i64]>::to_vec).collect() };
            let good = cols(&coords);
            arc_coords::<5>(&ops, &slices(&good), &mut out).unwrap();
            for (i, a) in out.iter().enumerate() {
                let c = |j: usize| coords[j * n + i] as i32;
                let sel = if k == 2 {
                    Selection::Point { row: c(0), col: c(1) }
                } else {
                    Selection::BBox { r1: c(0), c1: c(1), r2: c(2), c2: c(3) }
                };
                assert_eq!(*a, ArcAction { op: ops[i] as i32, sel });
            }
            let mut bad = coords.clone();
            bad[(k - 1) * n + n - 1] = 5;
            let e = arc_coords::<5>(&ops, &slices(&cols(&bad)), &mut out).unwrap_err();
            let key = if k == 2 { "col" } else { "c2" };
            assert_eq!(
                e,
                format!("actions[{key:?}][{}] = 5: outside the 5x5 canvas (0 to 4)", n - 1)
            );
            bad[(k - 1) * n + n - 1] = -1;
            let e = arc_coords::<5>(&ops, &slices(&cols(&bad)), &mut out).unwrap_err();
            assert!(e.contains("= -1: outside"), "{e}");
            let mut bad_ops = ops.clone();
            bad_ops[n / 2] = 35;
            let e = arc_coords::<5>(&bad_ops, &slices(&good), &mut out).unwrap_err();
            assert_eq!(e, format!("actions['operation'][{}] = 35: outside Discrete(35)", n / 2));
            let short = [&good[0][..n - 1], &good[1][..]];
            assert!(arc_coords::<5>(&ops, &short, &mut out).unwrap_err().contains("columns of"));
            assert!(arc_coords::<5>(&ops, &slices(&good[..1]), &mut out).is_err());
        }
    }
}
