//! What every subcommand shares: `--config`/`--set`/`--out-dir`, starting and finishing a run
//! folder (through `kestrel-run`), resuming one, the progress line and the thread pool.

use anyhow::Result;
use clap::Args;
use kestrel_core::Documented;
use kestrel_run::{Flow, Launch, Layers, Outcome, Run, RunError, Tick};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// `--config`, `--set` and `--out-dir`, taken by every run command.
#[derive(Args, Clone, Debug)]
pub struct ConfigArgs {
    /// A TOML config (a run folder's `config.toml` replays that run); unknown keys are errors.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override a config key, dotted for nested keys: `--set generations=500`,
    /// `--set mppi.lambda=0.5` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Parent folder of the run folder.
    #[arg(long, default_value = "runs")]
    pub out_dir: PathBuf,
}

/// A config key given as a flag (the key may be dotted: `run.system`).
pub enum Flag {
    /// A string.
    S(Option<String>),
    /// An integer.
    I(Option<u64>),
    /// A float.
    F(Option<f64>),
    /// A list of strings.
    L(Option<Vec<String>>),
}

/// The flags given, as the config table they set (dotted keys make nested tables).
pub fn flag_table(flags: Vec<(&str, Flag)>) -> toml::Table {
    let mut table = toml::Table::new();
    for (k, f) in flags {
        let v = match f {
            Flag::S(v) => v.map(toml::Value::String),
            Flag::I(v) => v.map(|x| match i64::try_from(x) {
                Ok(i) => toml::Value::Integer(i),
                Err(_) => toml::Value::String(x.to_string()),
            }),
            Flag::F(v) => v.map(toml::Value::Float),
            Flag::L(v) => {
                v.map(|l| toml::Value::Array(l.into_iter().map(toml::Value::String).collect()))
            }
        };
        let Some(v) = v else { continue };
        let mut at = &mut table;
        let mut parts: Vec<&str> = k.split('.').collect();
        let last = parts.pop().unwrap_or(k);
        for p in parts {
            let e = at.entry(p).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            at = e.as_table_mut().expect("flag tables are tables");
        }
        at.insert(last.to_string(), v);
    }
    table
}

impl ConfigArgs {
    /// The config of a command outside the run registry (`actdyn compare`, `actdyn
    /// retrain`): `defaults`, the file, the flags given, then `--set`.
    pub fn load<T: Serialize + DeserializeOwned + Documented>(
        &self,
        defaults: &T,
        flags: Vec<(&str, Flag)>,
    ) -> Result<T> {
        Ok(kestrel_run::load_config(
            defaults,
            self.config.as_deref(),
            flag_table(flags),
            &self.set,
        )?)
    }

    /// Runs the run kind `R` through the registry: its config from the defaults, `--config`,
    /// the flags given and `--set`s (resuming: the folder's `config.toml` first), on a pool of
    /// `threads`, with a progress line.
    pub fn run<R: Run>(
        &self,
        flags: Vec<(&str, Flag)>,
        resume: Option<&Path>,
        threads: Option<usize>,
    ) -> Result<()> {
        self.run_preset::<R>(None, flags, resume, threads)
    }

    /// [`ConfigArgs::run`] over a named preset of `R` instead of its defaults.
    pub fn run_preset<R: Run>(
        &self,
        preset: Option<&str>,
        flags: Vec<(&str, Flag)>,
        resume: Option<&Path>,
        threads: Option<usize>,
    ) -> Result<()> {
        let table = flag_table(flags);
        let layers =
            Layers { preset, file: self.config.as_deref(), table: &table, sets: &self.set };
        launch(&self.out_dir, threads, |l| kestrel_run::registry::launch::<R>(layers, resume, l))
    }
}

/// Runs a whole run of `kestrel_run` on a pool of `threads` (absent: all cores) with a
/// progress line on standard error, and prints its headline.
pub fn launch(
    out_dir: &Path,
    threads: Option<usize>,
    run: impl FnOnce(Launch<'_>) -> std::result::Result<Outcome, RunError> + Send,
) -> Result<()> {
    let pool = pool(threads)?;
    let mut progress = Progress::new(0, "");
    let argv = std::env::args().collect();
    let out = pool.install(|| {
        let progress = &mut |t: Tick<'_>| progress.report(t);
        run(Launch { out_dir: out_dir.to_path_buf(), argv, progress })
    })?;
    println!("{}", out.headline);
    Ok(())
}

/// A progress line with rate and ETA on standard error: redrawn in place on a terminal, a
/// plain line every 5 seconds otherwise (no control characters then).
pub struct Progress {
    total: u64,
    /// The first tick's units and time: the rate counts from there, so a resumed run's
    /// checkpointed steps are not taken for this launch's work.
    first: Option<(u64, Instant)>,
    start: Instant,
    last: Option<Instant>,
    tty: bool,
    what: &'static str,
}

impl Progress {
    /// Progress over `total` units named `what`.
    pub fn new(total: u64, what: &'static str) -> Self {
        Progress {
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
            eprintln!("{clear}note: {}", t.status);
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

/// A rayon pool of `threads` workers (0 or absent: all cores).
pub fn pool(threads: Option<usize>) -> Result<rayon::ThreadPool> {
    let n = threads
        .filter(|&t| t > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if n > 1024 {
        anyhow::bail!("invalid threads = {n}: 1 to 1024");
    }
    Ok(rayon::ThreadPoolBuilder::new().num_threads(n).build()?)
}
