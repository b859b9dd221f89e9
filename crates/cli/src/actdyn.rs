//! `kestrel actdyn run | compare | bench`: active learning of latent dynamics. The loop lives
//! in `kestrel_actdyn::online`, the run folder in `kestrel_run::actdyn`.

use crate::common::{BenchArgs, RunArgs};
use clap::Subcommand;
use kestrel_run::benches::actdyn::ActdynBench;
use kestrel_run::runs::actdyn::Actdyn;
use kestrel_run::runs::actdyn_compare::ActdynCompare;
use kestrel_run::runs::actdyn_retrain::ActdynRetrain;

#[derive(Subcommand)]
pub enum ActdynCmd {
    /// One experiment: random (E1) or active (E2) data collection, faithful or fixed profile.
    Run(Box<RunArgs<Actdyn>>),
    /// Random against active on the same seeds, one experiment per thread, with confidence
    /// intervals.
    Compare(Box<RunArgs<ActdynCompare>>),
    /// Offline retraining of a run on its saved transitions (AdamW over chunks), into a new
    /// folder with evaluations before and after.
    Retrain(Box<RunArgs<ActdynRetrain>>),
    /// Time the planner call, the training steps and the environment step with the belief.
    Bench(BenchArgs<ActdynBench>),
}
