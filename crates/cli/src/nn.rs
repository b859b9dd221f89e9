//! `kestrel nn bench`: times kestrel-nn on the workloads of `shared/reference/nn-backends.md`.

use crate::common::BenchArgs;
use clap::Subcommand;
use kestrel_run::benches::nn::NnBench;

#[derive(Subcommand)]
pub enum NnCmd {
    /// Time an MLP training step (batch B, one model) and N models trained at once.
    Bench(BenchArgs<NnBench>),
}
