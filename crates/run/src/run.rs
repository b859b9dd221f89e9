//! What a whole run is: the [`Run`] trait every file under `runs/` implements (a config type
//! with serde, a doc comment per field and the reference's defaults; a loop), the names it
//! writes ([`Outputs`]), the layers its config is read from ([`Layers`], [`load`]) and the
//! checks before any folder exists ([`checked`]). Below the runs and the registry
//! (`crate::registry`), which lists them; it imports neither.

use crate::base::RunError;
use crate::config::load_config_renamed;
use crate::launch::{Launch, Outcome};
use kestrel_core::{Budget, Documented, Key};
use kestrel_evo::{EvalKeys, Problem};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// One kind of whole run: its config and its loop.
pub trait Run {
    /// Its name in the registry, configs and sweep specs (`mppi-tune`).
    const NAME: &'static str;
    /// The command that runs it (`evo run`): the CLI's subcommand, an area and a verb.
    const COMMAND: &'static str;
    /// One line on what it does: the subcommand's help.
    const ABOUT: &'static str;
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

    /// Config keys renamed since the last release (`(old, new)` dotted paths): read as the new
    /// ones with a warning until the next minor release ([`crate::config::load_config_renamed`]).
    const RENAMED: crate::config::Renamed = &[];

    /// A preset fitted to the config its first pass read, as [`Run::defaults`] fits the
    /// defaults (the hunt's learner takes its world's frame size); as it is by default.
    fn fit(preset: Self::Config, first: Option<&Self::Config>) -> Self::Config {
        let _ = first;
        preset
    }

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
        Err(no_population(Self::NAME, &[]))
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
        Err(no_population(Self::NAME, &[]))
    }
}

/// The problem each generation of a run evaluates ([`Run::population`]) and the keys it is
/// evaluated with.
pub struct Population {
    /// The problem.
    pub problem: Box<dyn Problem>,
    /// The run's key.
    pub key_run: Key,
    /// Which key each generation sees.
    pub eval_keys: EvalKeys,
}

impl Population {
    /// The key generation `generation` (0-based) of the run is evaluated with (for an ES run
    /// with restarts, the key of its first run's generations).
    pub fn key(&self, generation: u64) -> Key {
        self.eval_keys.key(self.key_run, generation)
    }
}

/// The error of a kind without a population to evaluate elsewhere, naming the kinds `with` one
/// (the registry's `RunKind::population` knows them; a kind alone does not).
pub(crate) fn no_population(name: &str, with: &[&str]) -> RunError {
    let those = if with.is_empty() {
        String::new()
    } else {
        format!("; the kinds that have one: {}", with.join(", "))
    };
    RunError::Config {
        source_name: "run kind".into(),
        message: format!("`{name}` has no population to evaluate elsewhere{those}"),
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
    Ok(load_noted::<R>(layers, resume)?.0)
}

/// [`load`], with a note for each renamed key it read ([`Run::RENAMED`]), once each.
pub fn load_noted<R: Run>(
    layers: Layers<'_>,
    resume: Option<&Path>,
) -> Result<(R::Config, Vec<String>), RunError> {
    let Layers { preset, file, table, sets } = layers;
    let read = |defaults: &R::Config, file: Option<&Path>, table: toml::Table, sets: &[String]| {
        load_config_renamed(defaults, file, table, sets, R::RENAMED)
    };
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
        Some(p) => R::fit(p.clone(), first),
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
        let (first, _) = read(&R::defaults(None), Some(&saved), toml::Table::new(), &[])?;
        let (base, mut notes) =
            read(&R::defaults(Some(&first)), Some(&saved), toml::Table::new(), &[])?;
        let (c, more) = read(&base, file, table.clone(), sets)?;
        notes.extend(more);
        return Ok((c, notes));
    }
    let (first, _) = read(&defaults(None), file, table.clone(), sets)?;
    read(&defaults(Some(&first)), file, table.clone(), sets)
}

/// What `R`'s checkpoints under `config` are stamped with and verified against: the kind, the
/// config without its budget ([`Run::without_budget`]) and the build's commit.
pub fn stamp<R: Run>(config: &R::Config) -> kestrel_nn::Stamp {
    let c = serde_json::to_value(R::without_budget(config)).expect("a config serialises");
    kestrel_nn::Stamp::new(R::NAME, c, crate::base::COMMIT)
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
    let (c, notes) = load_noted::<R>(layers, resume)?;
    checked::<R>(&c)?;
    let mut launch = launch;
    for note in notes {
        launch.warn(&note)?;
    }
    R::run(c, resume, launch)
}
