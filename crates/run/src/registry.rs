//! The one list of run kinds. Every whole run is one [`Run`] in one file under
//! [`crate::runs`]; [`RunKind::ALL`] lists them, one line each, and every front end (the
//! CLI's subcommands, the Python package's `run`, sweeps, Ray) reaches them through the
//! [`RunKind`] handle: loading a config from its layers, checking it before any folder exists,
//! printing its defaults as commented TOML (`kestrel config <kind>`), running it.
//!
//! Adding a run kind: its file under `runs/` (with `impl Run`) and its line in
//! [`RunKind::ALL`]. [`RunKind::of`] makes the handle of any [`Run`], so a kind that exists
//! only in a test reaches the same front ends (`crates/cli/tests/new_kind.rs`).

use crate::base::RunError;
use crate::config::commented_toml;
use crate::launch::{Launch, Outcome};
use crate::run::{Layers, Outputs, Population, Run, checked, launch, load, no_population};
use crate::runs;
use kestrel_core::{Budget, Documented, FieldDoc};
use kestrel_evo::Problem;
use serde::{Deserialize, Serialize};
use std::marker::PhantomData;
use std::path::Path;

/// A run kind: the handle of one [`Run`] type, through which its config is loaded, checked
/// and run without naming the type. Compared and hashed by name.
#[derive(Clone, Copy)]
pub struct RunKind(&'static dyn Entry);

impl RunKind {
    /// Every kind, in the order `kestrel config` lists them: the registry.
    pub const ALL: &'static [RunKind] = &[
        RunKind::of::<runs::es::Es>(),
        RunKind::of::<runs::qd::Qd>(),
        RunKind::of::<runs::mppi::MppiRun>(),
        RunKind::of::<runs::mppi_tune::MppiTune>(),
        RunKind::of::<runs::mppi_qd::MppiQd>(),
        RunKind::of::<runs::allo::AlloTrain>(),
        RunKind::of::<runs::allo_asymexp::AlloAsymexp>(),
        RunKind::of::<runs::hunt::Hunt>(),
        RunKind::of::<runs::hunt_play::HuntPlay>(),
        RunKind::of::<runs::actdyn::Actdyn>(),
        RunKind::of::<runs::actdyn_compare::ActdynCompare>(),
        RunKind::of::<runs::actdyn_retrain::ActdynRetrain>(),
        RunKind::of::<runs::arc_rollout::ArcRollout>(),
        RunKind::of::<runs::arc_replay::ArcReplay>(),
    ];

    /// The handle of the run `R` (a kind of [`RunKind::ALL`], or one a test defines).
    pub const fn of<R: Run + 'static>() -> RunKind {
        RunKind(&Of::<R>(PhantomData))
    }

    /// The config spelling (`mppi-tune`).
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The kind spelled `name` in `kinds`; otherwise an error listing them and naming the
    /// closest.
    pub fn find(kinds: &[RunKind], name: &str) -> Result<RunKind, RunError> {
        if let Some(k) = kinds.iter().find(|k| k.name() == name) {
            return Ok(*k);
        }
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        let hint = kestrel_core::did_you_mean(name, names.iter().copied());
        Err(RunError::Config {
            source_name: "run kind".into(),
            message: format!("unknown run kind {name:?}{hint}; one of: {}", names.join(", ")),
        })
    }

    /// The kind of the registry spelled `name` ([`RunKind::find`] over [`RunKind::ALL`]).
    pub fn from_name(name: &str) -> Result<RunKind, RunError> {
        Self::find(Self::ALL, name)
    }

    /// The command that runs it (`mppi tune`).
    pub fn command(self) -> &'static str {
        self.0.command()
    }

    /// One line on what it does (its subcommand's help).
    pub fn about(self) -> &'static str {
        self.0.about()
    }

    /// Where the seed lives in the config.
    pub fn seed_key(self) -> &'static [&'static str] {
        self.0.seed_key()
    }

    /// The fields of its config, with their docs.
    pub fn fields(self) -> &'static [FieldDoc] {
        self.0.fields()
    }

    /// Whether an unfinished run continues from its checkpoint.
    pub fn resumable(self) -> bool {
        self.0.resumable()
    }

    /// The fields a resume may change ([`Run::BUDGET`]), for messages.
    pub fn budget_fields(self) -> &'static str {
        self.0.budget_fields()
    }

    /// The named base configs a run can start from ([`Run::PRESETS`]).
    pub fn presets(self) -> &'static [&'static str] {
        self.0.presets()
    }

    /// The config keys renamed since the last release ([`Run::RENAMED`]).
    pub fn renamed(self) -> crate::config::Renamed {
        self.0.renamed()
    }

    /// Its default config as a TOML table (what flags' lists are read against and `--help`
    /// shows).
    pub fn defaults_table(self) -> Result<toml::Table, RunError> {
        self.0.defaults_table()
    }

    /// Whether its generations' populations may be evaluated elsewhere
    /// ([`Run::EVALUATED_ELSEWHERE`]).
    pub fn evaluated_elsewhere(self) -> bool {
        self.0.evaluated_elsewhere()
    }

    /// The population problem of the config `layers` give, checked ([`Run::population`]).
    pub fn population(self, layers: Layers<'_>) -> Result<Population, RunError> {
        self.elsewhere()?;
        self.0.population(layers)
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
        self.elsewhere()?;
        self.0.run_evaluated(layers, evaluator, failed, launch)
    }

    /// Refuses a kind without a population, naming the registry's kinds that have one.
    fn elsewhere(self) -> Result<(), RunError> {
        if self.evaluated_elsewhere() {
            return Ok(());
        }
        let with: Vec<&str> =
            Self::ALL.iter().filter(|k| k.evaluated_elsewhere()).map(|k| k.name()).collect();
        Err(no_population(self.name(), &with))
    }

    /// The `summary.json` numbers a sweep tabulates by default.
    pub fn default_metrics(self) -> &'static [&'static str] {
        self.0.metrics()
    }

    /// The `metrics.jsonl` column a sweep plots by default.
    pub fn default_curve(self) -> &'static str {
        self.0.curve()
    }

    /// The config `layers` give (`Layers::none()`: the defaults), validated, as commented
    /// TOML (every key with its doc comment), which `--config` reads back as the same run.
    pub fn config_toml(self, layers: Layers<'_>) -> Result<String, RunError> {
        self.0.config_toml(layers)
    }

    /// The config from `layers`, validated, as JSON: what the run would use.
    pub fn resolve(self, layers: Layers<'_>) -> Result<serde_json::Value, RunError> {
        self.0.resolve(layers)
    }

    /// The peak-memory estimate of the config `layers` give, on `threads` workers.
    pub fn budget(self, layers: Layers<'_>, threads: usize) -> Result<Budget, RunError> {
        self.0.budget(layers, threads)
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
        self.0.outputs(layers)
    }

    /// Loads, validates and runs (see [`crate::run::launch`]).
    pub fn launch(
        self,
        layers: Layers<'_>,
        resume: Option<&Path>,
        launch_: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        self.0.launch(layers, resume, launch_)
    }
}

/// What the registry asks of a run kind, without its types: [`Run`] made object-safe, one
/// implementation for every `R` ([`Of`]).
trait Entry: Sync {
    fn name(&self) -> &'static str;
    fn command(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn seed_key(&self) -> &'static [&'static str];
    fn fields(&self) -> &'static [FieldDoc];
    fn resumable(&self) -> bool;
    fn budget_fields(&self) -> &'static str;
    fn presets(&self) -> &'static [&'static str];
    fn renamed(&self) -> crate::config::Renamed;
    fn defaults_table(&self) -> Result<toml::Table, RunError>;
    fn evaluated_elsewhere(&self) -> bool;
    fn metrics(&self) -> &'static [&'static str];
    fn curve(&self) -> &'static str;
    fn population(&self, layers: Layers<'_>) -> Result<Population, RunError>;
    fn run_evaluated(
        &self,
        layers: Layers<'_>,
        evaluator: &dyn Problem,
        failed: &dyn Fn() -> Option<String>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError>;
    fn config_toml(&self, layers: Layers<'_>) -> Result<String, RunError>;
    fn resolve(&self, layers: Layers<'_>) -> Result<serde_json::Value, RunError>;
    fn budget(&self, layers: Layers<'_>, threads: usize) -> Result<Budget, RunError>;
    fn outputs(&self, layers: Layers<'_>) -> Result<Outputs, RunError>;
    fn launch(
        &self,
        layers: Layers<'_>,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError>;
}

/// The [`Entry`] of the run `R`.
struct Of<R>(PhantomData<fn() -> R>);

impl<R: Run> Entry for Of<R> {
    fn name(&self) -> &'static str {
        R::NAME
    }
    fn command(&self) -> &'static str {
        R::COMMAND
    }
    fn about(&self) -> &'static str {
        R::ABOUT
    }
    fn seed_key(&self) -> &'static [&'static str] {
        R::SEED_KEY
    }
    fn fields(&self) -> &'static [FieldDoc] {
        <R::Config as Documented>::fields()
    }
    fn resumable(&self) -> bool {
        R::RESUMABLE
    }
    fn budget_fields(&self) -> &'static str {
        R::BUDGET
    }
    fn presets(&self) -> &'static [&'static str] {
        R::PRESETS
    }
    fn renamed(&self) -> crate::config::Renamed {
        R::RENAMED
    }
    fn defaults_table(&self) -> Result<toml::Table, RunError> {
        crate::config::to_table(&R::defaults(None))
    }
    fn evaluated_elsewhere(&self) -> bool {
        R::EVALUATED_ELSEWHERE
    }
    fn metrics(&self) -> &'static [&'static str] {
        R::METRICS
    }
    fn curve(&self) -> &'static str {
        R::CURVE
    }
    fn population(&self, layers: Layers<'_>) -> Result<Population, RunError> {
        let c = load::<R>(layers, None)?;
        checked::<R>(&c)?;
        R::population(&c)
    }
    fn run_evaluated(
        &self,
        layers: Layers<'_>,
        evaluator: &dyn Problem,
        failed: &dyn Fn() -> Option<String>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        let c = load::<R>(layers, None)?;
        checked::<R>(&c)?;
        R::run_evaluated(c, evaluator, failed, launch)
    }
    fn config_toml(&self, layers: Layers<'_>) -> Result<String, RunError> {
        let c = load::<R>(layers, None)?;
        checked::<R>(&c)?;
        let header = format!(
            "{}: the config of `kestrel {}`.\nEdit and pass with `--config FILE`, or set single keys with `--set key=value`.",
            R::NAME,
            R::COMMAND
        );
        commented_toml(&c, &header)
    }
    fn resolve(&self, layers: Layers<'_>) -> Result<serde_json::Value, RunError> {
        let c = load::<R>(layers, None)?;
        checked::<R>(&c)?;
        serde_json::to_value(&c).map_err(|e| RunError::Failed(format!("{}: {e}", R::NAME)))
    }
    fn budget(&self, layers: Layers<'_>, threads: usize) -> Result<Budget, RunError> {
        Ok(R::budget(&load::<R>(layers, None)?, threads))
    }
    fn outputs(&self, layers: Layers<'_>) -> Result<Outputs, RunError> {
        Ok(R::outputs(&load::<R>(layers, None)?))
    }
    fn launch(
        &self,
        layers: Layers<'_>,
        resume: Option<&Path>,
        launch_: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        launch::<R>(layers, resume, launch_)
    }
}

impl PartialEq for RunKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for RunKind {}

impl std::hash::Hash for RunKind {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.name().hash(h);
    }
}

impl std::fmt::Debug for RunKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RunKind({})", self.name())
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
    use kestrel_core::Key;

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
        for &kind in RunKind::ALL {
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
            quiet: &'a mut (dyn FnMut(crate::launch::Tick<'_>) -> crate::launch::Flow + Send),
        ) -> Launch<'a> {
            Launch { out_dir: dir.to_path_buf(), argv: vec![], progress: quiet }
        }
        let (mut q1, mut q2) = (crate::launch::quiet, crate::launch::quiet);
        let configs = [
            (
                RunKind::of::<runs::es::Es>(),
                "problem = \"rastrigin\"\nnum_dims = 4\ngenerations = 5\nseed = 3",
            ),
            (
                RunKind::of::<runs::mppi_tune::MppiTune>(),
                "generations = 3\npop_size = 4\n[run]\nsteps = 8\nseed = 2",
            ),
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
            let gens = if kind == RunKind::of::<runs::es::Es>() { 5 } else { 3 };
            // The tuner also prices its start knobs once, with the generations' key.
            let first = keys.len() - gens;
            for (g, k) in keys[first..].iter().enumerate() {
                assert_eq!(k.raw(), ev.0.key(g as u64).raw(), "{kind} generation {g}");
            }
        }
        for kind in [RunKind::of::<runs::qd::Qd>(), RunKind::of::<runs::allo::AlloTrain>()] {
            let e = kind.population(Layers::none()).err().unwrap().to_string();
            assert!(e.contains("no population") && e.contains("evo, mppi-tune"), "{e}");
            let ev = RunKind::of::<runs::es::Es>().population(Layers::none()).unwrap().problem;
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
        let j = RunKind::of::<runs::mppi_tune::MppiTune>().resolve(Layers::table(&t)).unwrap();
        assert_eq!(j["run"]["mppi"]["noise_sigma"].as_array().unwrap().len(), 1);
        let t: toml::Table = "system = \"cartpole\"".parse().unwrap();
        let j = RunKind::of::<runs::mppi::MppiRun>().resolve(Layers::table(&t)).unwrap();
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
        let e = RunKind::of::<runs::mppi_tune::MppiTune>().resolve(l).unwrap_err().to_string();
        assert!(e.contains("--set run.mppi.lamda=0.5") && e.contains("`run.mppi.lambda`"), "{e}");
        let t: toml::Table = "lambda = 0.5".parse().unwrap();
        let e = RunKind::of::<runs::mppi_tune::MppiTune>()
            .resolve(Layers::table(&t))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key `lambda`") && e.contains("`run.mppi.lambda`"), "{e}");
        let l = Layers { preset: Some("e3"), ..Layers::none() };
        let e = RunKind::of::<runs::actdyn::Actdyn>().resolve(l).unwrap_err().to_string();
        assert!(e.contains("unknown preset \"e3\"") && e.contains("e1, e2"), "{e}");
        let l = Layers { preset: Some("e1"), ..Layers::none() };
        let e = RunKind::of::<runs::es::Es>().resolve(l).unwrap_err().to_string();
        assert!(e.contains("has no presets"), "{e}");
        // A preset is the base the other layers apply over.
        let t: toml::Table = "steps = 7".parse().unwrap();
        let l = Layers { preset: Some("e2"), ..Layers::table(&t) };
        let j = RunKind::of::<runs::actdyn::Actdyn>().resolve(l).unwrap();
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
        for &kind in RunKind::ALL {
            walk(kind.fields(), "");
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
