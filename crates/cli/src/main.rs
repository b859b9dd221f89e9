//! `kestrel`: the command-line front of the Kestrel engine. Every run is a library call; this
//! binary parses arguments, loads configs, and writes run folders through `kestrel-run`.

mod actdyn;
mod allo;
mod arc;
mod common;
mod config;
mod demo;
mod env;
mod evo;
mod hunt;
mod mppi;
mod nn;
mod sweep;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Kestrel: a batch-first RL and control research engine.
#[derive(Parser)]
#[command(name = "kestrel", version, about)]
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
    Evo(evo::EvoCmd),
    /// MPPI control: run, tune, qd, bench.
    #[command(subcommand)]
    Mppi(mppi::MppiCmd),
    /// Active learning of latent dynamics (sequential VAE + iCEM on Fisher information): run,
    /// compare, retrain, bench.
    #[command(subcommand)]
    Actdyn(actdyn::ActdynCmd),
    /// ALLO Laplacian representation learning on grid maps: train, bench.
    #[command(subcommand)]
    Allo(allo::AlloCmd),
    /// Multi-agent treasure hunt with one IQN learner per agent: train, play, bench.
    #[command(subcommand)]
    Hunt(hunt::HuntCmd),
    /// A grid of configs × seeds of any run type, each an ordinary run folder, skipped when
    /// finished and resumed when interrupted; then a table (mean, sd, 95% interval) and plot.
    Sweep(sweep::SweepArgs),
    /// Neural-network kernels: bench.
    #[command(subcommand)]
    Nn(nn::NnCmd),
}

/// Runs one parsed command line.
pub fn dispatch(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Demo(a) => demo::demo(a),
        Cmd::Config(a) => config::config(a),
        Cmd::Env(env::EnvCmd::Bench(a)) => env::bench(a),
        Cmd::Arc(c) => arc::run(c),
        Cmd::Evo(evo::EvoCmd::Run(a)) => a.run(),
        Cmd::Evo(evo::EvoCmd::Qd(a)) => a.run(),
        Cmd::Evo(evo::EvoCmd::Bench(a)) => a.run(),
        Cmd::Mppi(mppi::MppiCmd::Bench(a)) => a.run(),
        Cmd::Mppi(mppi::MppiCmd::Run(a)) => a.run(),
        Cmd::Mppi(mppi::MppiCmd::Tune(a)) => a.run(),
        Cmd::Mppi(mppi::MppiCmd::Qd(a)) => a.run(),
        Cmd::Nn(nn::NnCmd::Bench(a)) => a.run(),
        Cmd::Sweep(a) => sweep::sweep(a),
        Cmd::Actdyn(actdyn::ActdynCmd::Run(a)) => a.run(),
        Cmd::Actdyn(actdyn::ActdynCmd::Compare(a)) => a.run(),
        Cmd::Actdyn(actdyn::ActdynCmd::Retrain(a)) => a.run(),
        Cmd::Actdyn(actdyn::ActdynCmd::Bench(a)) => a.run(),
        Cmd::Allo(allo::AlloCmd::Train(a)) => a.run(),
        Cmd::Allo(allo::AlloCmd::Bench(a)) => a.run(),
        Cmd::Hunt(hunt::HuntCmd::Train(a)) => a.run(),
        Cmd::Hunt(hunt::HuntCmd::Play(a)) => a.run(),
        Cmd::Hunt(hunt::HuntCmd::Bench(a)) => a.run(),
    }
}

fn main() {
    // Bad arguments are errors like any other (exit 1); --help and --version exit 0.
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        let _ = e.print();
        if let Some(hint) = closest_flag(&e, std::env::args()) {
            eprintln!("{hint}");
        }
        std::process::exit(i32::from(e.use_stderr()))
    });
    if let Err(e) = dispatch(cli) {
        // A closed pipe (`kestrel ... | head`) is a normal way to stop reading.
        if e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }) {
            std::process::exit(0);
        }
        eprintln!("error: {}", message(&e));
        std::process::exit(1);
    }
}

/// For an unknown `--flag`, the closest flag of the subcommand it was given to (every config
/// key is a flag, so a misspelt key gets its correction here as it does in `--set`).
fn closest_flag(e: &clap::Error, argv: impl Iterator<Item = String>) -> Option<String> {
    use clap::CommandFactory;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(bad)) = e.get(ContextKind::InvalidArg) else { return None };
    let bad = bad.split('=').next()?.trim_start_matches('-').to_string();
    let root = Cli::command();
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
