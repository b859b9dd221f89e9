//! `kestrel`: the command-line front of the Kestrel engine.

mod arc;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Kestrel: a batch-first RL and control research engine.
#[derive(Parser)]
#[command(name = "kestrel", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// The main job on the embedded default: batched ARC rollouts over generated tasks.
    Demo(arc::DemoArgs),
    /// The ARC environment: bench, replay, show, rollout.
    #[command(subcommand)]
    Arc(arc::ArcCmd),
}

fn main() {
    let cli = Cli::parse();
    let r: Result<()> = match cli.cmd {
        Cmd::Demo(a) => arc::demo(a),
        Cmd::Arc(c) => arc::run(c),
    };
    if let Err(e) = r {
        // A closed pipe (`kestrel ... | head`) is a normal way to stop reading.
        if e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        }) {
            std::process::exit(0);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
