//! `kestrel allo train | bench`: config, run folder, checkpoints, heat maps here; the run in
//! `kestrel_run::runs::allo::AlloRun`.

use crate::common::{BenchArgs, RunArgs};
use clap::Subcommand;
use kestrel_run::benches::allo::AlloBench;
use kestrel_run::runs::allo::Allo;

#[derive(Subcommand)]
pub enum AlloCmd {
    /// Train a Laplacian representation on a map.
    Train(Box<RunArgs<Allo>>),
    /// Time replay sampling (one 4 × batch draw) and the training step, deduplicated and
    /// plain.
    Bench(BenchArgs<AlloBench>),
}
