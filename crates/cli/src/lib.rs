//! `kestrel`: the command-line front of the Kestrel engine. Every run is a library call; this
//! crate parses arguments, loads configs, and writes run folders through `kestrel-run`. Its
//! [`main_with`] is the `kestrel` binary's body and the Python package's `kestrel` command's
//! (the wheel ships the command over its extension), so one CLI serves both installs.

/// `println!` that returns the write's error (a full disk, a closed pipe) instead of panicking;
/// the command's caller prints it and exits 1 (a closed pipe exits 0).
macro_rules! outln {
    ($($t:tt)*) => { out!("{}\n", format_args!($($t)*)) };
}
/// `print!` that returns the write's error instead of panicking.
macro_rules! out {
    ($($t:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!($($t)*))
            .map_err(|e| anyhow::Error::new(e).context("writing to standard output"))?
    };
}

mod arc;
mod common;
mod config;
mod demo;
mod env;
mod renamed;
mod sweep;

use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use common::{BenchArgs, RunArgs};
use kestrel_run::RunKind;
use kestrel_run::benches::{
    actdyn::ActdynBench, allo::AlloBench, evo::EvoBench, hunt::HuntBench, mppi::MppiBench,
    nn::NnBench,
};

/// `kestrel --version`: the release and the commit it was built from.
static VERSION: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!("{} (commit {})", env!("CARGO_PKG_VERSION"), kestrel_run::COMMIT)
});

/// Kestrel: a batch-first RL and control research engine.
#[derive(Parser)]
#[command(name = "kestrel", version = VERSION.as_str(), about)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job on the embedded defaults: every system briefly, with a one-screen report.
    Demo(demo::DemoArgs),
    /// The run kinds, or one kind's config keys with their docs and defaults as commented TOML
    /// (`kestrel config mppi-tune > tune.toml`, edit, `kestrel mppi tune --config tune.toml`).
    Config(config::ConfigArgs),
    /// Any env of the registry by its id: bench.
    #[command(subcommand)]
    Env(env::EnvCmd),
    /// The ARC environment: bench, replay, show, rollout.
    #[command(subcommand)]
    Arc(arc::ArcCmd),
    /// Evolution strategies and quality diversity: run, qd, bench.
    #[command(subcommand)]
    Evo(EvoCmd),
    /// MPPI control: run, tune, qd, bench.
    #[command(subcommand)]
    Mppi(MppiCmd),
    /// Active learning of latent dynamics (sequential VAE + iCEM on Fisher information): run,
    /// compare, retrain, bench.
    #[command(subcommand)]
    Actdyn(ActdynCmd),
    /// ALLO Laplacian representation learning on grid maps: train, bench.
    #[command(subcommand)]
    Allo(AlloCmd),
    /// Multi-agent treasure hunt with one IQN learner per agent: train, play, bench.
    #[command(subcommand)]
    Hunt(HuntCmd),
    /// A grid of configs × seeds of any run type, each an ordinary run folder, skipped when
    /// finished and resumed when interrupted; then a table (mean, sd, 95% interval) and plot.
    Sweep(sweep::SweepArgs),
    /// Neural-network kernels: bench.
    #[command(subcommand)]
    Nn(NnCmd),
}

/// `kestrel evo`: the runs are `kestrel_run::runs::{es, qd}`, the bench
/// `kestrel_run::benches::evo`.
#[derive(Subcommand)]
enum EvoCmd {
    /// Time one generation per phase (ask, evaluate, tell) of any strategy.
    Bench(BenchArgs<EvoBench>),
    /// List every strategy: Kestrel's name, evosax's, and each hyper-parameter with its doc
    /// (which gives the default).
    Strategies(StrategiesArgs),
}

/// `kestrel evo strategies`'s flags.
#[derive(clap::Args)]
struct StrategiesArgs {
    /// One JSON object per strategy instead of the table.
    #[arg(long)]
    json: bool,
}

/// `kestrel evo strategies`: the one listing of the strategy registry (`StrategyKind`) and
/// the knobs each has (`StrategyParams`).
fn strategies(a: StrategiesArgs) -> Result<()> {
    use kestrel_evo::{StrategyKind, StrategyParams};
    for k in StrategyKind::ALL {
        let knobs = StrategyParams::docs_of(k);
        if a.json {
            let params: serde_json::Map<String, serde_json::Value> =
                knobs.iter().map(|(n, d)| (n.to_string(), serde_json::Value::from(*d))).collect();
            let row = serde_json::json!({"kind": k.name(), "evosax": k.evosax_name(),
                "min_pop_size": k.min_pop_size(), "default_pop_size_10": k.default_pop_size(10),
                "antithetic": k.antithetic(), "params": params});
            outln!("{row}");
        } else {
            let (p10, p100) = (k.default_pop_size(10), k.default_pop_size(100));
            let even = if k.antithetic() { ", even" } else { "" };
            outln!(
                "{:<22} evosax {:<22} (default population {p10} at 10 dims, {p100} at 100{even})",
                k.name(),
                k.evosax_name()
            );
            outln!(
                "    sigma (the step size or first spread), pop_size, x0, bounds: every strategy"
            );
            for (key, doc) in knobs {
                outln!("    params.{key:<18} {doc}");
            }
        }
    }
    Ok(())
}

/// `kestrel mppi`: `kestrel_run::runs::{mppi, mppi_tune, mppi_qd}`, `kestrel_run::benches::mppi`.
#[derive(Subcommand)]
enum MppiCmd {
    /// Time `command` on the gym pendulum (pytorch-mppi's benchmark problem).
    Bench(BenchArgs<MppiBench>),
}

/// `kestrel actdyn`: `kestrel_run::runs::{actdyn, actdyn_compare, actdyn_retrain}`,
/// `kestrel_run::benches::actdyn`.
#[derive(Subcommand)]
enum ActdynCmd {
    /// Time the planner call, the training steps and the environment step with the belief.
    Bench(BenchArgs<ActdynBench>),
}

/// `kestrel allo`: `kestrel_run::runs::allo`, `kestrel_run::benches::allo`.
#[derive(Subcommand)]
enum AlloCmd {
    /// Time replay sampling (one 4 × batch draw) and the training step, deduplicated and
    /// plain.
    Bench(BenchArgs<AlloBench>),
}

/// `kestrel hunt`: `kestrel_run::runs::{hunt, hunt_play}`, `kestrel_run::benches::hunt`.
#[derive(Subcommand)]
enum HuntCmd {
    /// Time an environment turn and an IQN update (batch 64, 12 × 12 quantiles, layer 250).
    Bench(BenchArgs<HuntBench>),
}

/// `kestrel nn`: `kestrel_run::benches::nn`.
#[derive(Subcommand)]
enum NnCmd {
    /// Time an MLP training step (batch B, one model) and N models trained at once.
    Bench(BenchArgs<NnBench>),
}

/// The command line's grammar: the fixed subcommands ([`Cli`]) and one run subcommand per
/// kind in `kinds` (`kestrel <area> <verb>` from [`RunKind::command`], its help from
/// [`RunKind::about`], its flags from the kind's config): the registry's kinds
/// ([`RunKind::ALL`]) for the `kestrel` command, more in a test.
pub fn command(kinds: &[RunKind]) -> clap::Command {
    let mut root = Cli::command();
    for &kind in kinds {
        let (area, verb) = kind.command().split_once(' ').unwrap_or(("run", kind.command()));
        if root.find_subcommand(area).is_none() {
            root = root.subcommand(
                clap::Command::new(area).subcommand_required(true).arg_required_else_help(true),
            );
        }
        root = root.mut_subcommand(area, |a| a.subcommand(RunArgs::command(kind, verb)));
    }
    root
}

/// One parsed command line: a run of a registry kind, or one of the fixed commands.
pub enum Parsed {
    /// `kestrel <area> <verb>` of a run kind.
    Run(Box<RunArgs>),
    /// Everything else.
    Fixed(Cli),
}

/// `args` parsed against [`command`]`(kinds)`.
pub fn parse(args: &[String], kinds: &[RunKind]) -> std::result::Result<Parsed, clap::Error> {
    let mut m = command(kinds).try_get_matches_from(args)?;
    if let Some((area, am)) = m.subcommand()
        && let Some((verb, vm)) = am.subcommand()
    {
        let name = format!("{area} {verb}");
        if let Some(&kind) = kinds.iter().find(|k| k.command() == name) {
            let args = RunArgs::from_matches(kind, &mut vm.clone())?;
            return Ok(Parsed::Run(Box::new(args)));
        }
    }
    Ok(Parsed::Fixed(Cli::from_arg_matches_mut(&mut m)?))
}

/// Runs one parsed command line; `kinds` are the run kinds `kestrel config` lists and reads.
pub fn dispatch(parsed: Parsed, kinds: &[RunKind]) -> Result<()> {
    let cli = match parsed {
        Parsed::Run(a) => return a.run(),
        Parsed::Fixed(cli) => cli,
    };
    match cli.cmd {
        Cmd::Demo(a) => demo::demo(a),
        Cmd::Config(a) => config::config(a, kinds),
        Cmd::Env(env::EnvCmd::Bench(a)) => env::bench(a),
        Cmd::Arc(c) => arc::run(c),
        Cmd::Evo(EvoCmd::Bench(a)) => a.run(),
        Cmd::Evo(EvoCmd::Strategies(a)) => strategies(a),
        Cmd::Mppi(MppiCmd::Bench(a)) => a.run(),
        Cmd::Nn(NnCmd::Bench(a)) => a.run(),
        Cmd::Sweep(a) => sweep::sweep(a),
        Cmd::Actdyn(ActdynCmd::Bench(a)) => a.run(),
        Cmd::Allo(AlloCmd::Bench(a)) => a.run(),
        Cmd::Hunt(HuntCmd::Bench(a)) => a.run(),
    }
}

/// The command line `args` (the program name first), run: the exit status (0, or 1 for an
/// error, which is printed; `--help` and `--version` print and return 0). The `kestrel` binary
/// and the Python package's `kestrel` command both run this.
pub fn main_with(args: Vec<String>) -> i32 {
    main_with_kinds(args, RunKind::ALL)
}

/// [`main_with`] over the run kinds `kinds` (a test adds its own to the registry's).
pub fn main_with_kinds(args: Vec<String>, kinds: &[RunKind]) -> i32 {
    // 0.1.0's spellings, still accepted with a warning (`renamed`).
    let args = match renamed::rewrite(args) {
        Ok((args, warnings)) => {
            warnings.iter().for_each(|w| eprintln!("{w}"));
            args
        }
        Err(e) => {
            eprintln!("error: {e}");
            return 1;
        }
    };
    let _ = ARGV.set(args.clone());
    // Bad arguments are errors like any other (exit 1); --help and --version exit 0.
    let cli = match parse(&args, kinds) {
        Ok(cli) => cli,
        Err(e) => {
            // `--help` and `--version` write to stdout, which may be full or closed too.
            if let Err(io) = e.print() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return 0;
                }
                eprintln!("error: writing to standard output: {io}");
                return 1;
            }
            if let Some(hint) = closest_flag(&e, args.iter().cloned(), kinds) {
                eprintln!("{hint}");
            }
            return i32::from(e.use_stderr());
        }
    };
    if let Err(e) = dispatch(cli, kinds) {
        // A closed pipe (`kestrel ... | head`) is a normal way to stop reading.
        if e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }) {
            return 0;
        }
        eprintln!("error: {}", message(&e));
        return 1;
    }
    0
}

/// The command line [`main_with`] was given: what a run folder records.
static ARGV: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// The command line as [`main_with`] got it (the process's where none was given).
pub(crate) fn argv() -> Vec<String> {
    ARGV.get().cloned().unwrap_or_else(|| std::env::args().collect())
}

/// For an unknown `--flag`, the closest flag of the subcommand it was given to (every config
/// key is a flag, so a misspelt key gets its correction here as it does in `--set`).
fn closest_flag(
    e: &clap::Error,
    argv: impl Iterator<Item = String>,
    kinds: &[RunKind],
) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else { return None };
    let bad = bad.split('=').next()?.trim_start_matches('-').to_string();
    let root = command(kinds);
    let mut cmd = &root;
    for a in argv.skip(1) {
        if let Some(sub) = cmd.find_subcommand(&a) {
            cmd = sub;
        }
    }
    // Compared as config keys are (snake case).
    let longs: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| a.get_long().into_iter().chain(a.get_all_aliases().unwrap_or_default()))
        .map(|l| l.replace('-', "_"))
        .collect();
    let c = kestrel_core::closest(&bad, longs.iter().map(String::as_str))?.replace('_', "-");
    Some(format!("hint: the closest valid flag is `--{c}` (`--help` lists every one)"))
}

/// The error and its causes, each said once: a library error that already prints its cause
/// (an OS error after the path) is not followed by that cause again.
fn message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}
