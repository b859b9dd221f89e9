//! `kestrel hunt`: the multi-agent treasure hunt with one IQN learner per agent: train (progress,
//! metrics and episode renderings written off the training thread, checkpoints, resume,
//! learning curve, summary), play a trained checkpoint, and bench the parts.

use crate::common::{BenchArgs, RunArgs};
use clap::Subcommand;
use kestrel_run::benches::hunt::HuntBench;
use kestrel_run::runs::{hunt::Hunt, hunt_play::HuntPlay};

#[derive(Subcommand)]
pub enum HuntCmd {
    /// Train one IQN learner per agent (sorrel's treasure-hunt defaults).
    Train(Box<RunArgs<Hunt>>),
    /// Greedy play of a trained run's checkpoint: rewards per epoch, the first epoch's turns
    /// in one picture.
    Play(RunArgs<HuntPlay>),
    /// Time an environment turn and an IQN update (batch 64, 12 × 12 quantiles, layer 250).
    Bench(BenchArgs<HuntBench>),
}
