//! `kestrel hunt`: the multi-agent treasure hunt with one IQN learner per agent: train (progress,
//! metrics and episode renderings written off the training thread, checkpoints, resume,
//! learning curve, summary), play a trained checkpoint, and bench the parts.

use crate::common::RunArgs;
use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_envs::treasure::TreasureObs;
use kestrel_run::runs::{hunt::Hunt, hunt_play::HuntPlay};
use serde_json::json;

#[derive(Subcommand)]
pub enum HuntCmd {
    /// Train one IQN learner per agent (sorrel's treasure-hunt defaults).
    Train(Box<RunArgs<Hunt>>),
    /// Greedy play of a trained run's checkpoint: rewards per epoch, the first epoch's turns
    /// in one picture.
    Play(RunArgs<HuntPlay>),
    /// Time an environment turn and an IQN update (batch 64, 12 × 12 quantiles, layer 250).
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Observation encoding: rgb or one-hot.
    #[arg(long, default_value = "rgb")]
    obs: String,
    /// Timed repetitions.
    #[arg(long, default_value_t = 300)]
    reps: u64,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    // The config's spelling, read as the config reads it.
    let obs: TreasureObs = serde_json::from_value(json!(a.obs))
        .map_err(|_| anyhow::anyhow!("invalid --obs = {:?}: rgb or one-hot", a.obs))?;
    let t = kestrel_agents::bench::hunt(obs, a.reps)?;
    let gflops = t.update_flops / t.update_us / 1e3;
    let out = json!({
        "obs": a.obs, "turn_us": t.turn_us, "observe_2_agents_us": t.observe_us,
        "iqn_update_us": t.update_us, "iqn_update_gflops": gflops,
        "iqn_update_mflop": t.update_flops / 1e6, "act_us": t.act_us, "gemm_only_us": t.gemm_us,
        "update_over_gemm": t.update_us / t.gemm_us, "commit": kestrel_run::COMMIT,
    });
    if a.json {
        println!("{out}");
    } else {
        println!(
            "turn (2 agents, spawn + moves): {:.2} µs\nobserve 2 agents: {:.2} µs\nIQN update (batch 64, 12×12 quantiles, layer 250, {}): {:.0} µs ({gflops:.1} GFLOP/s of {:.0} MFLOP)\nits GEMMs alone: {:.0} µs ({:.2}x)\ngreedy action (batch 1): {:.1} µs",
            t.turn_us,
            t.observe_us,
            a.obs,
            t.update_us,
            t.update_flops / 1e6,
            t.gemm_us,
            t.update_us / t.gemm_us,
            t.act_us
        );
    }
    Ok(())
}
