//! `kestrel actdyn run | compare | bench`: active learning of latent dynamics. The loop lives
//! in `kestrel_actdyn::online`, the run folder in `kestrel_run::actdyn`.

use crate::common::RunArgs;
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
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
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Repetitions per timing (median reported).
    #[arg(long, default_value_t = 50)]
    reps: usize,
    /// Worker threads for the planner.
    #[arg(long)]
    threads: Option<usize>,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    if a.reps == 0 || a.reps > 1_000_000 {
        bail!("invalid --reps = {}: 1 to 1000000 repetitions", a.reps);
    }
    let pool = crate::common::pool(a.threads)?;
    let (t, threads) =
        pool.install(|| (kestrel_actdyn::bench::run(a.reps), rayon::current_num_threads()));
    let t = t?;
    if a.json {
        println!("{}", serde_json::to_string(&t)?);
    } else {
        println!(
            "planner call (E2: {} sequences × H 10, 625 centres): {:.2} ms [reference 410–480 ms]\n\
             training step: E1 (MLP) {:.3} ms [reference 12.3 ms], E2 (RBF) {:.3} ms [reference 15.9 ms]\n\
             environment step + belief: {:.1} µs [reference 1.9 ms]\n\
             threads {}",
            t.planner_sequences,
            t.planner_ms,
            t.train_mlp_ms,
            t.train_rbf_ms,
            t.env_belief_us,
            threads
        );
    }
    Ok(())
}
