//! The one registry of run kinds. Every whole run is one [`Run`]: a config type (serde, a doc
//! comment per field, its defaults the reference's) and a loop in one file under
//! [`crate::runs`]. [`RunKind`] names them; its methods are the only place that matches on
//! run kinds, and every front end (the CLI, the Python package, sweeps, Ray) goes through
//! them: loading a config from its layers, checking it before any folder exists, printing its
//! defaults as commented TOML (`kestrel config <kind>`), running it.
//!
//! Adding a run kind: one file under `runs/` with its `impl Run`, one variant here, one arm in
//! `with_run!`.

use crate::config::{commented_toml, load_config};
use crate::launch::{Launch, Outcome};
use crate::{RunError, runs};
use kestrel_core::{Budget, Documented, Key};
use kestrel_evo::{EvalKeys, Problem};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One kind of whole run: its config and its loop.
pub trait Run {
    /// Its name in the registry, configs and sweep specs (`mppi-tune`).
    const NAME: &'static str;
    /// The command that runs it (`evo run`).
    const COMMAND: &'static str;
    /// Where the seed lives in the config (dotted path).
    const SEED_KEY: &'static [&'static str] = &["seed"];
    /// Whether an unfinished run continues from its checkpoint (`--resume`).
    const RESUMABLE: bool = false;
    /// The fields a resume may change (its budget: `steps`), for messages.
    const BUDGET: &'static str = "nothing";
    /// The `summary.json` numbers a sweep tabulates by default.
    const METRICS: &'static [&'static str];
    /// The `metrics.jsonl` column a sweep plots by default.
    const CURVE: &'static str;
    /// The config.
    type Config: Serialize + DeserializeOwned + Clone + PartialEq + Documented + Send;

    /// The defaults a config is read over. `first` is the config read in a first pass over
    /// `defaults(None)`: kinds whose defaults depend on some of their own keys (MPPI: the
    /// system fixes the noise size and the bounds) read those from it; the rest ignore it.
    fn defaults(first: Option<&Self::Config>) -> Self::Config;

    /// Named base configs a run can start from instead of the defaults (actdyn's `e1`, `e2`).
    const PRESETS: &'static [&'static str] = &[];

    /// The preset `name` (one of [`Run::PRESETS`]).
    fn preset(name: &str) -> Option<Self::Config> {
        let _ = name;
        None
    }

    /// `config` with its budget fields ([`Run::BUDGET`]) at neutral values: what a resume must
    /// not change, and what a checkpoint's fingerprint covers ([`stamp`]).
    fn without_budget(config: &Self::Config) -> Self::Config {
        config.clone()
    }

    /// Everything the run checks before it creates its folder.
    fn validate(config: &Self::Config) -> Result<(), RunError>;

    /// The names a run under `config` writes: what a sweep may tabulate and plot, checked
    /// before its first cell. The sweep test `every_kind_declares_what_it_writes` compares
    /// them with a real run's files for every kind.
    fn outputs(config: &Self::Config) -> Outputs;

    /// The run's peak heap memory, estimated from its config before anything is allocated
    /// (before [`Run::validate`] too, so it must not assume a valid config: saturating
    /// arithmetic, nothing built): every buffer that grows with the config, with the fields it grows with
    /// (`threads` workers may each hold their own). [`checked`] refuses a total past
    /// [`kestrel_core::MAX_BYTES`]; `crates/run/tests/budget.rs` compares it with the peak a
    /// counting allocator measures.
    fn budget(config: &Self::Config, threads: usize) -> Budget;

    /// Runs `config` into a new folder under `launch.out_dir`, or (with `resume`, for a
    /// resumable kind) continues the run in that folder from its checkpoint.
    fn run(
        config: Self::Config,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError>;

    /// Whether each generation of a run evaluates a population that may be evaluated elsewhere
    /// (on Ray workers, by `kestrel.dist`): [`Run::population`] and [`Run::run_evaluated`].
    const EVALUATED_ELSEWHERE: bool = false;

    /// The population problem a run under `config` evaluates each generation, with its keys:
    /// what a worker builds to evaluate its share of a generation.
    fn population(config: &Self::Config) -> Result<Population, RunError> {
        let _ = config;
        Err(no_population(Self::NAME))
    }

    /// [`Run::run`] (a new folder) with every generation's fitness computed by `evaluator`: an
    /// equal problem evaluated elsewhere, which receives the run's keys, so giving the
    /// population problem's values gives the same run. `failed` is asked after every
    /// generation: a message stops the run, which then fails with it.
    fn run_evaluated(
        config: Self::Config,
        evaluator: &dyn Problem,
        failed: &dyn Fn() -> Option<String>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        let _ = (config, evaluator, failed, launch);
        Err(no_population(Self::NAME))
    }
}

/// The problem each generation of a run evaluates ([`Run::population`]) and the keys it is
/// evaluated with.
pub struct Population {
    /// The problem.
    pub problem: Box<dyn Problem>,
    /// The run's key.
    pub run_key: Key,
    /// Which key each generation sees.
    pub eval_keys: EvalKeys,
}

impl Population {
    /// The key generation `generation` (0-based) of the run is evaluated with (for an ES run
    /// with restarts, the key of its first run's generations).
    pub fn key(&self, generation: u64) -> Key {
        self.eval_keys.key(self.run_key, generation)
    }
}

/// The error of a kind without a population to evaluate elsewhere, naming those with one.
fn no_population(name: &str) -> RunError {
    let with: Vec<&str> =
        RunKind::ALL.iter().filter(|k| k.evaluated_elsewhere()).map(|k| k.name()).collect();
    RunError::Config {
        source_name: "run kind".into(),
        message: format!(
            "`{name}` has no population to evaluate elsewhere; the kinds that have one: {}",
            with.join(", ")
        ),
    }
}

/// The names a run writes ([`Run::outputs`]): the numbers of its `summary.json` and the numeric
/// columns of its `metrics.jsonl` (`global_step`, `wall_time` and `steps_per_second`, which
/// the metrics writer adds to every line, included).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// The `summary.json` numbers.
    pub summary: Vec<String>,
    /// The `metrics.jsonl` numeric columns.
    pub columns: Vec<String>,
}

impl Outputs {
    /// These summary numbers and `metrics.jsonl` columns (the writer's three added).
    pub fn new(summary: &[&str], columns: &[&str]) -> Self {
        let fixed = ["global_step", "wall_time", "steps_per_second"];
        Outputs {
            summary: summary.iter().map(|s| s.to_string()).collect(),
            columns: columns.iter().chain(&fixed).map(|s| s.to_string()).collect(),
        }
    }

    /// With `names` added to the summary.
    pub fn summary(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.summary.extend(names);
        self
    }

    /// With `names` added to the columns.
    pub fn columns(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.columns.extend(names);
        self
    }
}

/// The layers of a config above its defaults, as a front end gathered them: a TOML file, the
/// keys a front end set itself (CLI flags, a Python dict, a sweep cell), then `--set`s.
#[derive(Clone, Copy, Debug)]
pub struct Layers<'a> {
    /// A named preset the other layers apply over (instead of the defaults).
    pub preset: Option<&'a str>,
    /// A TOML file (`--config`, or Python's `config="path.toml"`).
    pub file: Option<&'a Path>,
    /// Keys set by the front end (flags, keyword arguments, a sweep cell's table).
    pub table: &'a toml::Table,
    /// `--set key=value` overrides, last.
    pub sets: &'a [String],
}

impl Layers<'_> {
    /// No layer: the defaults.
    pub fn none() -> Layers<'static> {
        static EMPTY: std::sync::OnceLock<toml::Table> = std::sync::OnceLock::new();
        Layers { preset: None, file: None, table: EMPTY.get_or_init(toml::Table::new), sets: &[] }
    }

    /// Only `table` (a sweep cell's, a Python dict's).
    pub fn table(table: &toml::Table) -> Layers<'_> {
        Layers { preset: None, file: None, table, sets: &[] }
    }
}

/// `R`'s config from its layers: read over `R::defaults(None)`, then again over the defaults
/// the first pass implies. Resuming, the run folder's `config.toml` is read first (over the
/// defaults) and the layers apply over it; the run then compares it with its checkpoint.
pub fn load<R: Run>(layers: Layers<'_>, resume: Option<&Path>) -> Result<R::Config, RunError> {
    let Layers { preset, file, table, sets } = layers;
    let preset = match preset {
        None => None,
        Some(p) if resume.is_some() => {
            return Err(RunError::Config {
                source_name: "preset".into(),
                message: format!("preset {p:?} with a resume: a resumed run keeps its own config"),
            });
        }
        Some(p) => Some(R::preset(p).ok_or_else(|| {
            let hint = kestrel_core::did_you_mean(p, R::PRESETS.iter().copied());
            RunError::Config {
                source_name: "preset".into(),
                message: if R::PRESETS.is_empty() {
                    format!("preset {p:?}: `{}` has no presets", R::COMMAND)
                } else {
                    format!("unknown preset {p:?}{hint}; one of: {}", R::PRESETS.join(", "))
                },
            }
        })?),
    };
    let defaults = |first: Option<&R::Config>| match &preset {
        Some(p) => p.clone(),
        None => R::defaults(first),
    };
    if let Some(folder) = resume {
        if !R::RESUMABLE {
            return Err(RunError::Config {
                source_name: format!("resume {}", folder.display()),
                message: format!(
                    "`kestrel {}` runs cannot be resumed (they are deterministic: start a new one)",
                    R::COMMAND
                ),
            });
        }
        let saved = folder.join("config.toml");
        let first = load_config(&R::defaults(None), Some(&saved), toml::Table::new(), &[])?;
        let base = load_config(&R::defaults(Some(&first)), Some(&saved), toml::Table::new(), &[])?;
        return load_config(&base, file, table.clone(), sets);
    }
    let first = load_config(&defaults(None), file, table.clone(), sets)?;
    load_config(&defaults(Some(&first)), file, table.clone(), sets)
}

/// What `R`'s checkpoints under `config` are stamped with and verified against: the kind, the
/// config without its budget ([`Run::without_budget`]) and the build's commit.
pub fn stamp<R: Run>(config: &R::Config) -> kestrel_nn::Stamp {
    let c = serde_json::to_value(R::without_budget(config)).expect("a config serialises");
    kestrel_nn::Stamp::new(R::NAME, c, crate::COMMIT)
}

/// `R::budget` on the ambient rayon pool's threads, then `R::validate`: everything a config
/// must pass before a run folder exists. The budget comes first because some validations
/// build the run's parts (an archive, a strategy) to check them.
pub fn checked<R: Run>(c: &R::Config) -> Result<(), RunError> {
    R::budget(c, rayon::current_num_threads()).check()?;
    R::validate(c)?;
    Ok(())
}

/// Loads `R`'s config from its layers, checks it ([`checked`]), and runs it (see
/// [`Run::run`]).
pub fn launch<R: Run>(
    layers: Layers<'_>,
    resume: Option<&Path>,
    launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let c = load::<R>(layers, resume)?;
    checked::<R>(&c)?;
    R::run(c, resume, launch)
}

/// Every run kind (spelled by its [`Run::NAME`] in configs, sweeps and on the command line).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunKind {
    /// `kestrel evo run`: an evolution strategy on a benchmark function or CartPole.
    Evo,
    /// `kestrel evo qd`: quality diversity on the linear-projection benchmark.
    Qd,
    /// `kestrel mppi run`: one closed-loop MPPI/SMPPI/KMPPI episode.
    MppiRun,
    /// `kestrel mppi tune`: an evolution strategy tuning a controller's knobs.
    MppiTune,
    /// `kestrel mppi qd`: CMA-ME filling an archive of good, diverse knob settings.
    MppiQd,
    /// `kestrel allo train`: ALLO Laplacian representation learning on a grid map.
    Allo,
    /// `kestrel hunt train`: IQN agents on the multi-agent treasure hunt.
    Hunt,
    /// `kestrel hunt play`: greedy play of a trained hunt.
    HuntPlay,
    /// `kestrel actdyn run`: active learning of latent dynamics.
    Actdyn,
    /// `kestrel actdyn compare`: random against active collection on the same seeds.
    ActdynCompare,
    /// `kestrel actdyn retrain`: offline retraining of a run on its saved transitions.
    ActdynRetrain,
    /// `kestrel arc rollout`: ARC episodes under a random or scripted policy.
    ArcRollout,
    /// `kestrel arc replay`: action traces played back in the ARC environment.
    ArcReplay,
}

/// Runs `$body` with `$R` the [`Run`] type of `$kind`: the one `match` on run kinds.
macro_rules! with_run {
    ($kind:expr, $R:ident => $body:expr) => {
        match $kind {
            RunKind::Evo => {
                type $R = runs::es::Es;
                $body
            }
            RunKind::Qd => {
                type $R = runs::qd::Qd;
                $body
            }
            RunKind::MppiRun => {
                type $R = runs::mppi::MppiRun;
                $body
            }
            RunKind::MppiTune => {
                type $R = runs::mppi_tune::MppiTune;
                $body
            }
            RunKind::MppiQd => {
                type $R = runs::mppi_qd::MppiQd;
                $body
            }
            RunKind::Allo => {
                type $R = runs::allo::Allo;
                $body
            }
            RunKind::Hunt => {
                type $R = runs::hunt::Hunt;
                $body
            }
            RunKind::HuntPlay => {
                type $R = runs::hunt_play::HuntPlay;
                $body
            }
            RunKind::Actdyn => {
                type $R = runs::actdyn::Actdyn;
                $body
            }
            RunKind::ActdynCompare => {
                type $R = runs::actdyn_compare::ActdynCompare;
                $body
            }
            RunKind::ActdynRetrain => {
                type $R = runs::actdyn_retrain::ActdynRetrain;
                $body
            }
            RunKind::ArcRollout => {
                type $R = runs::arc_rollout::ArcRollout;
                $body
            }
            RunKind::ArcReplay => {
                type $R = runs::arc_replay::ArcReplay;
                $body
            }
        }
    };
}

impl RunKind {
    /// Every kind, in the order `kestrel config` lists them.
    pub const ALL: [RunKind; 13] = [
        RunKind::Evo,
        RunKind::Qd,
        RunKind::MppiRun,
        RunKind::MppiTune,
        RunKind::MppiQd,
        RunKind::Allo,
        RunKind::Hunt,
        RunKind::HuntPlay,
        RunKind::Actdyn,
        RunKind::ActdynCompare,
        RunKind::ActdynRetrain,
        RunKind::ArcRollout,
        RunKind::ArcReplay,
    ];

    /// The config spelling (`mppi-tune`).
    pub fn name(self) -> &'static str {
        with_run!(self, R => R::NAME)
    }

    /// The kind spelled `name`; otherwise an error listing the kinds and naming the closest.
    pub fn from_name(name: &str) -> Result<RunKind, RunError> {
        if let Some(k) = Self::ALL.into_iter().find(|k| k.name() == name) {
            return Ok(k);
        }
        let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
        let hint = kestrel_core::did_you_mean(name, names.iter().copied());
        Err(RunError::Config {
            source_name: "run kind".into(),
            message: format!("unknown run kind {name:?}{hint}; one of: {}", names.join(", ")),
        })
    }

    /// The command that runs it (`mppi tune`).
    pub fn command(self) -> &'static str {
        with_run!(self, R => R::COMMAND)
    }

    /// Where the seed lives in the config.
    pub fn seed_key(self) -> &'static [&'static str] {
        with_run!(self, R => R::SEED_KEY)
    }

    /// The fields of its config, with their docs.
    pub fn fields(self) -> &'static [kestrel_core::FieldDoc] {
        with_run!(self, R => <<R as Run>::Config as Documented>::fields())
    }

    /// Whether an unfinished run continues from its checkpoint.
    pub fn resumable(self) -> bool {
        with_run!(self, R => R::RESUMABLE)
    }

    /// Whether its generations' populations may be evaluated elsewhere
    /// ([`Run::EVALUATED_ELSEWHERE`]).
    pub fn evaluated_elsewhere(self) -> bool {
        with_run!(self, R => R::EVALUATED_ELSEWHERE)
    }

    /// The population problem of the config `layers` give, checked ([`Run::population`]).
    pub fn population(self, layers: Layers<'_>) -> Result<Population, RunError> {
        if !self.evaluated_elsewhere() {
            return Err(no_population(self.name()));
        }
        with_run!(self, R => {
            let c = load::<R>(layers, None)?;
            checked::<R>(&c)?;
            R::population(&c)
        })
    }

    /// The config `layers` give, checked, run into a new folder with every generation's
    /// fitness from `evaluator` ([`Run::run_evaluated`]).
    pub fn run_evaluated(
        self,
        layers: Layers<'_>,
        evaluator: &dyn Problem,
        failed: &dyn Fn() -> Option<String>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        if !self.evaluated_elsewhere() {
            return Err(no_population(self.name()));
        }
        with_run!(self, R => {
            let c = load::<R>(layers, None)?;
            checked::<R>(&c)?;
            R::run_evaluated(c, evaluator, failed, launch)
        })
    }

    /// The `summary.json` numbers a sweep tabulates by default.
    pub fn default_metrics(self) -> &'static [&'static str] {
        with_run!(self, R => R::METRICS)
    }

    /// The `metrics.jsonl` column a sweep plots by default.
    pub fn default_curve(self) -> &'static str {
        with_run!(self, R => R::CURVE)
    }

    /// The config `layers` give (`Layers::none()`: the defaults), validated, as commented
    /// TOML (every key with its doc comment), which `--config` reads back as the same run.
    pub fn config_toml(self, layers: Layers<'_>) -> Result<String, RunError> {
        with_run!(self, R => {
            let c = load::<R>(layers, None)?;
            checked::<R>(&c)?;
            let header = format!(
                "{}: the config of `kestrel {}`.\nEdit and pass with `--config FILE`, or set single keys with `--set key=value`.",
                self.name(),
                R::COMMAND
            );
            commented_toml(&c, &header)
        })
    }

    /// The config from `layers`, validated, as JSON: what the run would use.
    pub fn resolve(self, layers: Layers<'_>) -> Result<serde_json::Value, RunError> {
        with_run!(self, R => {
            let c = load::<R>(layers, None)?;
            checked::<R>(&c)?;
            serde_json::to_value(&c).map_err(|e| RunError::Failed(format!("{}: {e}", self.name())))
        })
    }

    /// The peak-memory estimate of the config `layers` give, on `threads` workers.
    pub fn budget(self, layers: Layers<'_>, threads: usize) -> Result<Budget, RunError> {
        with_run!(self, R => Ok(R::budget(&load::<R>(layers, None)?, threads)))
    }

    /// Checks the config `layers` give as the run would, before any folder exists; errors
    /// name `source`.
    pub fn check(self, layers: Layers<'_>, source: &str) -> Result<(), RunError> {
        self.resolve(layers).map(drop).map_err(|e| match e {
            RunError::Config { message, .. } => {
                RunError::Config { source_name: source.to_string(), message }
            }
            e => e,
        })
    }

    /// What a run of the config `layers` give writes ([`Run::outputs`]); the config is
    /// loaded, not validated ([`RunKind::check`] does that).
    pub fn outputs(self, layers: Layers<'_>) -> Result<Outputs, RunError> {
        with_run!(self, R => Ok(R::outputs(&load::<R>(layers, None)?)))
    }

    /// Loads, validates and runs (see [`launch`]).
    pub fn launch(
        self,
        layers: Layers<'_>,
        resume: Option<&Path>,
        launch_: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        with_run!(self, R => launch::<R>(layers, resume, launch_))
    }
}

impl std::fmt::Display for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for RunKind {
    type Err = RunError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RunKind::from_name(s)
    }
}

impl Serialize for RunKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for RunKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        RunKind::from_name(&s).map_err(|e| match e {
            RunError::Config { message, .. } => serde::de::Error::custom(message),
            e => serde::de::Error::custom(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("kestrel-registry-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// `kestrel config <kind>` round-trips: the printed defaults, fed back as `--config`, are
    /// the default config, for every kind; and every line is a comment, a key, a section or
    /// blank.
    #[test]
    fn printed_defaults_read_back_as_the_defaults_for_every_kind() {
        let dir = tmp("roundtrip");
        for kind in RunKind::ALL {
            let text = kind.config_toml(Layers::none()).unwrap();
            assert!(text.starts_with(&format!(
                "# {}: the config of `kestrel {}`",
                kind,
                kind.command()
            )));
            for l in text.lines() {
                assert!(
                    l.is_empty() || l.starts_with('#') || l.starts_with('[') || l.contains(" = "),
                    "{kind}: {l}"
                );
            }
            let file = dir.join(format!("{kind}.toml"));
            std::fs::write(&file, &text).unwrap();
            let table = toml::Table::new();
            let layers = Layers { preset: None, file: Some(&file), table: &table, sets: &[] };
            let defaults = kind.resolve(Layers::none()).unwrap();
            assert_eq!(kind.resolve(layers).unwrap(), defaults, "{kind}");
            assert_eq!(RunKind::from_name(kind.name()).unwrap(), kind);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The kinds with a population, through the registry: an evaluator that is the
    /// population's problem (counting its calls) gives the plain run's numbers, each
    /// generation's key is `Population::key`'s, and the kinds without one are refused naming
    /// those with one.
    #[test]
    fn a_population_evaluated_elsewhere_gives_the_plain_run() {
        use std::sync::Mutex;
        struct Logged(Population, Mutex<Vec<Key>>);
        impl Problem for Logged {
            fn num_dims(&self) -> usize {
                self.0.problem.num_dims()
            }
            fn evaluate_rows(&self, key: Key, first: u64, x: &[f32], f: &mut [f32]) {
                self.1.lock().unwrap().push(key);
                self.0.problem.evaluate_rows(key, first, x, f);
            }
        }
        let dir = tmp("population");
        fn launch<'a>(
            dir: &std::path::Path,
            quiet: &'a mut (dyn FnMut(crate::Tick<'_>) -> crate::Flow + Send),
        ) -> Launch<'a> {
            Launch { out_dir: dir.to_path_buf(), argv: vec![], progress: quiet }
        }
        let (mut q1, mut q2) = (crate::quiet, crate::quiet);
        let configs = [
            (RunKind::Evo, "problem = \"rastrigin\"\nnum_dims = 4\ngenerations = 5\nseed = 3"),
            (RunKind::MppiTune, "generations = 3\npop_size = 4\n[run]\nsteps = 8\nseed = 2"),
        ];
        for (kind, text) in configs {
            let table: toml::Table = toml::from_str(text).unwrap();
            let layers = Layers::table(&table);
            let ev = Logged(kind.population(layers).unwrap(), Mutex::new(vec![]));
            let plain = kind.launch(layers, None, launch(&dir, &mut q1)).unwrap();
            let elsewhere =
                kind.run_evaluated(layers, &ev, &|| None, launch(&dir, &mut q2)).unwrap();
            let read = |o: &Outcome| std::fs::read_to_string(o.dir.join("metrics.jsonl")).unwrap();
            let column = |o: &Outcome| -> Vec<serde_json::Value> {
                read(o)
                    .lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["best"].clone())
                    .collect()
            };
            assert_eq!(column(&plain), column(&elsewhere), "{kind}");
            let keys = ev.1.lock().unwrap();
            let gens = if kind == RunKind::Evo { 5 } else { 3 };
            // The tuner also prices its start knobs once, with the generations' key.
            let first = keys.len() - gens;
            for (g, k) in keys[first..].iter().enumerate() {
                assert_eq!(k.raw(), ev.0.key(g as u64).raw(), "{kind} generation {g}");
            }
        }
        for kind in [RunKind::Qd, RunKind::Allo] {
            let e = kind.population(Layers::none()).err().unwrap().to_string();
            assert!(e.contains("no population") && e.contains("evo, mppi-tune"), "{e}");
            let ev = RunKind::Evo.population(Layers::none()).unwrap().problem;
            let e =
                kind.run_evaluated(Layers::none(), ev.as_ref(), &|| None, launch(&dir, &mut q1));
            assert!(e.err().unwrap().to_string().contains("no population"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The MPPI kinds read their defaults over the system the layers name (the second pass):
    /// a pendulum tuning run has one control's noise.
    #[test]
    fn two_pass_kinds_read_over_the_named_systems_defaults() {
        let t: toml::Table = "[run]\nsystem = \"pendulum\"".parse().unwrap();
        let j = RunKind::MppiTune.resolve(Layers::table(&t)).unwrap();
        assert_eq!(j["run"]["mppi"]["noise_sigma"].as_array().unwrap().len(), 1);
        let t: toml::Table = "system = \"cartpole\"".parse().unwrap();
        let j = RunKind::MppiRun.resolve(Layers::table(&t)).unwrap();
        assert_eq!(j["mppi"]["u_min"].as_array().unwrap().len(), 1);
        assert_eq!(j["system"], "cartpole");
    }

    #[test]
    fn unknown_kinds_keys_and_presets_name_the_closest_valid_one() {
        let e = RunKind::from_name("mppi-tuen").unwrap_err().to_string();
        assert!(e.contains("did you mean `mppi-tune`") && e.contains("evo, qd"), "{e}");
        let e = "kind = \"alo\"".parse::<toml::Table>().unwrap();
        let e = toml::from_str::<std::collections::BTreeMap<String, RunKind>>(&e.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("did you mean `allo`"), "{e}");
        let sets = ["run.mppi.lamda=0.5".to_string()];
        let table = toml::Table::new();
        let l = Layers { preset: None, file: None, table: &table, sets: &sets };
        let e = RunKind::MppiTune.resolve(l).unwrap_err().to_string();
        assert!(e.contains("--set run.mppi.lamda=0.5") && e.contains("`run.mppi.lambda`"), "{e}");
        let t: toml::Table = "lambda = 0.5".parse().unwrap();
        let e = RunKind::MppiTune.resolve(Layers::table(&t)).unwrap_err().to_string();
        assert!(e.contains("unknown key `lambda`") && e.contains("`run.mppi.lambda`"), "{e}");
        let l = Layers { preset: Some("e3"), ..Layers::none() };
        let e = RunKind::Actdyn.resolve(l).unwrap_err().to_string();
        assert!(e.contains("unknown preset \"e3\"") && e.contains("e1, e2"), "{e}");
        let l = Layers { preset: Some("e1"), ..Layers::none() };
        let e = RunKind::Evo.resolve(l).unwrap_err().to_string();
        assert!(e.contains("has no presets"), "{e}");
        // A preset is the base the other layers apply over.
        let t: toml::Table = "steps = 7".parse().unwrap();
        let l = Layers { preset: Some("e2"), ..Layers::table(&t) };
        let j = RunKind::Actdyn.resolve(l).unwrap();
        assert_eq!((j["policy"]["kind"].as_str(), j["steps"].as_u64()), (Some("icem"), Some(7)));
        // Presets and non-resumable kinds refuse a resume before anything is read.
        let l = Layers { preset: Some("e2"), ..Layers::none() };
        let e = load::<runs::actdyn::Actdyn>(l, Some(Path::new("/nonexistent"))).unwrap_err();
        assert!(e.to_string().contains("keeps its own config"), "{e}");
        let e = load::<runs::es::Es>(Layers::none(), Some(Path::new("/nonexistent"))).unwrap_err();
        assert!(e.to_string().contains("cannot be resumed"), "{e}");
    }

    #[test]
    fn every_documented_key_has_a_doc_and_the_metadata_is_consistent() {
        fn walk(fields: &'static [kestrel_core::FieldDoc], at: &str) {
            for f in fields {
                assert!(!f.doc.is_empty(), "{at}{}", f.name);
                if let Some(sub) = f.nested {
                    walk(sub(), &format!("{at}{}.", f.name));
                }
            }
        }
        for kind in RunKind::ALL {
            with_run!(kind, R => walk(<R as Run>::Config::fields(), ""));
            let j = kind.resolve(Layers::none()).unwrap();
            let mut at = &j;
            for k in kind.seed_key() {
                at = &at[k];
            }
            assert!(at.is_u64(), "{kind}: no seed at {:?}", kind.seed_key());
            assert!(!kind.default_metrics().is_empty() && !kind.default_curve().is_empty());
        }
    }
}
