//! What every subcommand shares: `--config`/`--set`/`--out-dir`, starting and finishing a run
//! folder (through `kestrel-run`), resuming one, the progress line and the thread pool.

use anyhow::Result;
use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use kestrel_core::{Documented, FieldDoc};
use kestrel_run::benches::Bench;
use kestrel_run::{Flow, Launch, Layers, Outcome, RunError, RunKind, Tick};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `--config` and `--set`: the layers every command with a config reads over its defaults
/// (runs, benches, `arc show`), before and after the key flags.
#[derive(Args, Clone, Debug)]
pub struct LayerArgs {
    /// A TOML config (a run folder's `config.toml` replays that run); unknown keys are errors.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override a config key, dotted for nested keys: `--set generations=500`,
    /// `--set mppi.lambda=0.5` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Every key of a config as a flag, read as `--set` reads its value: `--generations 500`, a
/// nested key by its dotted path (`--env.num-agents 3`) or by its last part where no other key
/// ends so (`--num-agents 3`), a list as commas (`--knobs lambda,sigma`). A key whose flag
/// another argument of the command already takes is reached by `--set`. Added last (by
/// [`RunArgs`] and [`BenchArgs`]), so it sees those arguments.
pub struct Keys {
    pub(crate) given: Vec<(String, String)>,
}

const KEYS_HEADING: &str =
    "Config keys (a boolean may be given bare: `--strict` is `--strict true`)";

/// A default as its flag takes it: a list as commas, a string bare, a table as TOML.
fn shown(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) if s.is_empty() => "\"\"".into(),
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(a) => a.iter().map(shown).collect::<Vec<_>>().join(","),
        v => v.to_string(),
    }
}

fn key_id(key: &str) -> String {
    format!("key:{key}")
}

impl Keys {
    /// The layer the flags given set, lists read against `defaults` (the config's defaults as
    /// a table).
    pub fn layer(&self, defaults: &toml::Table) -> toml::Table {
        kestrel_run::key_layer(&self.given, defaults)
    }

    /// `cmd` with a flag per key of `fields`; a key whose default (in `defaults`) is a boolean
    /// may be given bare (`--eager-eigen` for `--eager-eigen true`).
    fn augment(mut cmd: Command, fields: &'static [FieldDoc], defaults: &toml::Table) -> Command {
        let taken: HashSet<String> = cmd
            .get_arguments()
            .flat_map(|a| a.get_long().into_iter().chain(a.get_all_aliases().unwrap_or_default()))
            .map(str::to_string)
            .chain(["help".to_string(), "version".to_string()])
            .collect();
        let keys = kestrel_run::leaf_keys(fields);
        let last = |k: &str| k.rsplit('.').next().unwrap_or(k).replace('_', "-");
        let mut ends: HashMap<String, usize> = HashMap::new();
        for (k, _) in &keys {
            *ends.entry(last(k)).or_default() += 1;
        }
        for (key, doc) in keys {
            let full = key.replace('_', "-");
            let short = last(&key);
            let short =
                (short != full && ends[&short] == 1 && !taken.contains(&short)).then_some(short);
            let full = (!taken.contains(&full)).then_some(full);
            let mut names = short.into_iter().chain(full);
            let Some(long) = names.next() else { continue };
            let mut parts = key.split('.');
            let first = parts.next().and_then(|p| defaults.get(p));
            let default = parts.fold(first, |at, part| at.and_then(|v| v.get(part)));
            let help = match default {
                Some(v) => format!("{doc} [default: {}]", shown(v)),
                None => doc.to_string(),
            };
            // A negative number is a value (`--u-min -3`, `--max-trials -1`), not a flag.
            let mut arg = Arg::new(key_id(&key))
                .long(long)
                .value_name("VALUE")
                .allow_negative_numbers(true)
                .help(help)
                .help_heading(KEYS_HEADING);
            if let Some(alias) = names.next() {
                arg = arg.visible_alias(alias);
            }
            if let Some(toml::Value::Boolean(_)) = default {
                arg = arg.num_args(0..=1).default_missing_value("true");
            }
            cmd = cmd.arg(arg);
        }
        cmd
    }

    fn from_matches(fields: &'static [FieldDoc], m: &mut ArgMatches) -> Self {
        let given = kestrel_run::leaf_keys(fields)
            .into_iter()
            .filter_map(|(key, _)| {
                let v = m.try_remove_one::<String>(&key_id(&key)).ok().flatten()?;
                Some((key, v))
            })
            .collect();
        Keys { given }
    }
}

/// A run command's arguments, for any kind of the registry: `--config`, `--set`,
/// `--out-dir`, `--threads`, `--resume` (resumable kinds), `--preset` (kinds with presets), and
/// every config key as a flag ([`Keys`]). The CLI makes one subcommand of these per
/// [`RunKind`] (`crate::command`).
pub struct RunArgs {
    kind: RunKind,
    layers: LayerArgs,
    out_dir: PathBuf,
    threads: Option<usize>,
    resume: Option<PathBuf>,
    preset: Option<String>,
    pub(crate) keys: Keys,
}

impl RunArgs {
    /// The subcommand `verb` that runs `kind`, with its help.
    pub fn command(kind: RunKind, verb: &'static str) -> Command {
        let mut cmd = LayerArgs::augment_args(Command::new(verb))
            .about(kind.about().trim_end_matches('.'))
            .long_about(None)
            .arg(
                Arg::new("out_dir")
                    .long("out-dir")
                    .value_name("OUT_DIR")
                    .value_parser(clap::value_parser!(PathBuf))
                    .default_value("runs")
                    .help("Parent folder of the run folder."),
            )
            .arg(
                Arg::new("threads")
                    .long("threads")
                    .value_name("N")
                    .value_parser(clap::value_parser!(usize))
                    .help("Worker threads (default: all cores; results do not depend on it)."),
            );
        if kind.resumable() {
            cmd = cmd.arg(Arg::new("resume").long("resume").value_name("FOLDER").value_parser(clap::value_parser!(PathBuf)).help(
                format!(
                    "Continue the run in this folder from its checkpoint; its `config.toml` is the config (only {} may change).",
                    kind.budget_fields()
                ),
            ));
        }
        if !kind.presets().is_empty() {
            cmd = cmd.arg(Arg::new("preset").long("preset").value_name("NAME").help(format!(
                "Base config instead of the defaults: {} (`kestrel config {} --preset NAME`); a --config file and flags apply over it. Not with --resume.",
                kind.presets().join(", "),
                kind.name()
            )));
        }
        let defaults = kind.defaults_table().unwrap_or_default();
        Keys::augment(cmd, kind.fields(), &defaults)
    }

    /// The arguments of `kind`'s subcommand from its matches.
    pub fn from_matches(kind: RunKind, m: &mut ArgMatches) -> Result<Self, clap::Error> {
        Ok(RunArgs {
            kind,
            layers: LayerArgs::from_arg_matches_mut(m)?,
            out_dir: m.remove_one::<PathBuf>("out_dir").unwrap_or_else(|| "runs".into()),
            threads: m.try_remove_one::<usize>("threads").ok().flatten(),
            resume: m.try_remove_one::<PathBuf>("resume").ok().flatten(),
            preset: m.try_remove_one::<String>("preset").ok().flatten(),
            keys: Keys::from_matches(kind.fields(), m),
        })
    }

    /// The key flags' layer (lists read against the kind's defaults).
    pub(crate) fn table(&self) -> Result<toml::Table> {
        Ok(self.keys.layer(&self.kind.defaults_table()?))
    }

    /// Runs the kind through the registry: its config from the defaults (or the preset),
    /// `--config`, the key flags and `--set`s (resuming: the folder's `config.toml` first), on a
    /// pool of `--threads`, with a progress line.
    pub fn run(self) -> Result<()> {
        let table = self.table()?;
        let layers = Layers {
            preset: self.preset.as_deref(),
            file: self.layers.config.as_deref(),
            table: &table,
            sets: &self.layers.set,
        };
        let (kind, resume) = (self.kind, self.resume.as_deref());
        launch(&self.out_dir, self.threads, |l| kind.launch(layers, resume, l))
    }

    /// The `--set`s given.
    #[cfg(test)]
    pub(crate) fn sets(&self) -> &[String] {
        &self.layers.set
    }
}

/// `--config`, `--set`, and every key of the config `T` as a flag ([`Keys`]): a config read
/// over `T::default()` (an env's settings in `arc show`, a bench's workload).
pub struct KeyArgs<T> {
    layers: LayerArgs,
    keys: Keys,
    _config: PhantomData<fn() -> T>,
}

impl<T: Documented + Default + Serialize + DeserializeOwned> KeyArgs<T> {
    /// The config: the defaults, `--config`, the key flags, then the `--set`s.
    pub fn load(&self) -> Result<T> {
        let defaults = T::default();
        let table = self.keys.layer(&kestrel_run::to_table(&defaults)?);
        let LayerArgs { config, set } = &self.layers;
        Ok(kestrel_run::config::load_config(&defaults, config.as_deref(), table, set)?)
    }
}

impl<T: Documented + Default + Serialize> Args for KeyArgs<T> {
    fn augment_args(cmd: Command) -> Command {
        let cmd = LayerArgs::augment_args(cmd);
        let defaults = kestrel_run::to_table(&T::default()).unwrap_or_default();
        Keys::augment(cmd, T::fields(), &defaults)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl<T: Documented> FromArgMatches for KeyArgs<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut m.clone())
    }

    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        Ok(KeyArgs {
            layers: LayerArgs::from_arg_matches_mut(m)?,
            keys: Keys::from_matches(T::fields(), m),
            _config: PhantomData,
        })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// A bench command's arguments: `--json` and its config's keys ([`KeyArgs`]).
#[derive(Args)]
pub struct BenchArgs<B: Bench> {
    /// Print JSON (one object per line) instead of tables.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    keys: KeyArgs<B::Config>,
}

impl<B: Bench> BenchArgs<B> {
    /// Runs the bench `B` on its config and prints its report: the table, or with `--json` one
    /// JSON object per line.
    pub fn run(self) -> Result<()> {
        let report = B::run(&self.keys.load()?)?;
        let lines = if self.json {
            report.json.iter().map(|v| v.to_string()).collect()
        } else {
            report.text
        };
        for line in lines {
            outln!("{line}");
        }
        Ok(())
    }
}

/// Runs a whole run of `kestrel_run` on a pool of `threads` (absent: all cores) with a
/// progress line on standard error, and prints its headline.
pub fn launch(
    out_dir: &Path,
    threads: Option<usize>,
    run: impl FnOnce(Launch<'_>) -> std::result::Result<Outcome, RunError> + Send,
) -> Result<()> {
    let pool = kestrel_run::pool(threads)?;
    let mut progress = ProgressLine::new(0, "");
    let argv = crate::argv();
    let out = pool.install(|| {
        let progress = &mut |t: Tick<'_>| progress.report(t);
        run(Launch { out_dir: out_dir.to_path_buf(), argv, progress })
    })?;
    outln!("{}", out.headline);
    Ok(())
}

/// A progress line with rate and ETA on standard error: redrawn in place on a terminal, a
/// plain line every 5 seconds otherwise (no control characters then).
pub struct ProgressLine {
    total: u64,
    /// The first tick's units and time: the rate counts from there, so a resumed run's
    /// checkpointed steps are not taken for this launch's work.
    first: Option<(u64, Instant)>,
    start: Instant,
    last: Option<Instant>,
    tty: bool,
    what: &'static str,
}

impl ProgressLine {
    /// ProgressLine over `total` units named `what`.
    pub fn new(total: u64, what: &'static str) -> Self {
        ProgressLine {
            total,
            first: None,
            start: Instant::now(),
            last: None,
            tty: std::io::stderr().is_terminal(),
            what,
        }
    }

    /// Reports a run's tick (its total and unit included); a tick over no units is a note
    /// (`Launch::note`), printed as its own line. The CLI never stops a run (Ctrl-C ends the
    /// process; a resumable run resumes from its last checkpoint).
    pub fn report(&mut self, t: Tick<'_>) -> Flow {
        if t.total == 0 {
            let clear = if self.tty { "\r\x1b[2K" } else { "" };
            let kind = if t.warning().is_some() { "warning" } else { "note" };
            eprintln!("{clear}{kind}: {}", t.status);
            return Flow::Continue(());
        }
        (self.total, self.what) = (t.total, t.unit);
        self.tick(t.done, t.status);
        Flow::Continue(())
    }

    /// Reports `done` units with a short status.
    pub fn tick(&mut self, done: u64, status: &str) {
        let every = if self.tty { 0.1 } else { 5.0 };
        let due = self.last.is_none_or(|l| l.elapsed().as_secs_f64() >= every);
        if !due && done < self.total {
            return;
        }
        let now = Instant::now();
        self.last = Some(now);
        // A run whose only tick is its last (a short one) is timed from the launch.
        let first =
            if self.first.is_none() && done >= self.total { (0, self.start) } else { (done, now) };
        let (d0, t0) = *self.first.get_or_insert(first);
        let el = (now - t0).as_secs_f64();
        let pct = 100.0 * done as f64 / self.total.max(1) as f64;
        let rate_eta = if done > d0 && el > 0.0 {
            let rate = (done - d0) as f64 / el;
            let eta = self.total.saturating_sub(done) as f64 / rate;
            format!("{} ETA {eta:.0}s", rate_str(rate))
        } else {
            "- ETA -".to_string()
        };
        let line = format!("{done}/{} {} ({pct:.0}%) {rate_eta} {status}", self.total, self.what);
        if self.tty {
            eprint!("\r\x1b[2K{line}");
            if done >= self.total {
                eprintln!();
            }
        } else {
            eprintln!("{line}");
        }
    }
}

fn rate_str(r: f64) -> String {
    if r >= 100.0 { format!("{r:.0}/s") } else { format!("{r:.2}/s") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cli, Cmd, EvoCmd};
    use clap::Parser;
    use kestrel_run::RunKind;
    use kestrel_run::runs::mppi_tune::MppiTune;

    #[test]
    fn every_key_of_every_run_kind_is_a_flag_of_its_command() {
        let root = crate::command(RunKind::ALL);
        root.clone().debug_assert();
        for &kind in RunKind::ALL {
            let cmd = kind.command().split(' ').fold(&root, |c, part| {
                c.find_subcommand(part).unwrap_or_else(|| panic!("{kind}: no `{part}`"))
            });
            let longs: HashSet<&str> = cmd
                .get_arguments()
                .flat_map(|a| {
                    a.get_long().into_iter().chain(a.get_all_aliases().unwrap_or_default())
                })
                .collect();
            for (key, _) in kestrel_run::leaf_keys(kind.fields()) {
                assert!(
                    longs.contains(key.replace('_', "-").as_str()),
                    "{kind}: no flag for `{key}`"
                );
            }
            assert_eq!(longs.contains("resume"), kind.resumable(), "{kind}");
        }
    }

    #[test]
    fn key_flags_reach_nested_keys_by_path_or_last_part_and_read_lists() {
        let argv = [
            "kestrel",
            "mppi",
            "tune",
            "--lambda",
            "0.5",
            "--run.seed",
            "3",
            "--knobs",
            "sigma",
            "--pop-size",
            "6",
            "--params.c-mean",
            "0.5",
            "--set",
            "generations=7",
        ];
        let run = |argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            match crate::parse(&argv, RunKind::ALL).unwrap() {
                crate::Parsed::Run(a) => a,
                crate::Parsed::Fixed(_) => panic!("not a run: {argv:?}"),
            }
        };
        let a = run(&argv);
        let table = a.table().unwrap();
        let layers = Layers { preset: None, file: None, table: &table, sets: a.sets() };
        let c = kestrel_run::run::load::<MppiTune>(layers, None).unwrap();
        assert_eq!(c.run.mppi.lambda, 0.5);
        assert_eq!(c.run.seed, 3);
        assert_eq!(c.knobs, vec![kestrel_mppi::tune::KnobKind::Sigma]);
        assert_eq!((c.pop_size, c.generations), (6, 7));
        assert_eq!(serde_json::to_value(&c.params).unwrap()["c_mean"], 0.5);
        // A last part two keys share names the top-level key; the nested one takes its path.
        let argv = ["kestrel", "actdyn", "run", "--eval.seed", "5", "--seed", "1"];
        let a = run(&argv);
        let given: Vec<(&str, &str)> =
            a.keys.given.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(given, [("seed", "1"), ("eval.seed", "5")]);
    }

    /// A bench's keys are flags as a run's are: a boolean bare or with a value, one number
    /// where a list goes, a nested key by its last part; `--set` and the flags layer in order.
    #[test]
    fn bench_flags_read_booleans_bare_and_lists_of_one() {
        let bench = |argv: &[&str]| {
            let argv = ["kestrel", "evo", "bench"].iter().chain(argv).copied();
            let Cmd::Evo(EvoCmd::Bench(a)) = Cli::try_parse_from(argv).unwrap().cmd else {
                panic!("not evo bench")
            };
            a.keys.load().unwrap()
        };
        let c = bench(&["--eager-eigen", "--num-dims", "7"]);
        assert!(c.eager_eigen && !c.neuro);
        assert_eq!(c.num_dims, vec![7]);
        let c = bench(&["--eager-eigen", "false", "--set", "pop_size=12", "--neuro"]);
        assert!(!c.eager_eigen && c.neuro);
        assert_eq!(c.pop_size, 12);
        let c = bench(&[]);
        assert_eq!(c, kestrel_run::benches::evo::EvoBenchConfig::default());
        let argv =
            ["kestrel", "arc", "bench", "--canvas", "10", "--bugs", "all", "--mode", "jaxarc"];
        let Cmd::Arc(crate::arc::ArcCmd::Bench(a)) = Cli::try_parse_from(argv).unwrap().cmd else {
            panic!("not arc bench")
        };
        let c = a.keys.load().unwrap();
        assert_eq!((c.env.canvas, c.mode), (10, kestrel_arc::ModeKind::Jaxarc));
        assert_eq!(c.env.bugs, kestrel_arc::JaxBugsKind::All);
    }
}
