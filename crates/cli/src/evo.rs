//! `kestrel evo run | qd | bench`: flags into the registry's configs; the runs are
//! `kestrel_run::runs::{es, qd}`, the bench `kestrel_run::benches::evo`.

use crate::common::{BenchArgs, RunArgs};
use clap::Subcommand;
use kestrel_run::benches::evo::EvoBench;
use kestrel_run::runs::{es::Es, qd::Qd};

#[derive(Subcommand)]
pub enum EvoCmd {
    /// Minimise a benchmark function (or evolve a CartPole policy) with an evolution strategy.
    Run(RunArgs<Es>),
    /// Quality diversity on the linear-projection benchmark.
    Qd(RunArgs<Qd>),
    /// Time one generation per phase (ask, evaluate, tell) of CMA-ES.
    Bench(BenchArgs<EvoBench>),
}
