//! `kestrel actdyn run | compare | bench`: active learning of latent dynamics. The loop lives
//! in `kestrel_actdyn::online`, the run folder in `kestrel_run::actdyn`.

use crate::common::{ConfigArgs, Keys, RunArgs, launch};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_actdyn::config::ActdynConfig;
use kestrel_actdyn::offline::OfflineConfig;
use kestrel_run::runs::actdyn::Actdyn;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ActdynCmd {
    /// One experiment: random (E1) or active (E2) data collection, faithful or fixed profile.
    Run(Box<RunArgs<Actdyn>>),
    /// Random against active on the same seeds, one experiment per thread, with confidence
    /// intervals.
    Compare(Box<CompareArgs>),
    /// Offline retraining of a run on its saved transitions (AdamW over chunks), into a new
    /// folder with evaluations before and after.
    Retrain(Box<RetrainArgs>),
    /// Time the planner call, the training steps and the environment step with the belief.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct RetrainArgs {
    /// The run folder (its config, checkpoint and `transitions/`).
    #[arg(long)]
    run: PathBuf,
    /// Worker threads (chunks of a batch in parallel).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
    #[command(flatten)]
    keys: Keys<OfflineConfig>,
}

pub fn retrain(a: RetrainArgs) -> Result<()> {
    let c = a.cfg.load(&OfflineConfig::default(), &a.keys)?;
    let run = a.run.clone();
    launch(&a.cfg.out_dir, a.threads, |l| kestrel_run::runs::actdyn::retrain(&run, c, l))
}

#[derive(Args)]
pub struct CompareArgs {
    /// Base config: e1 or e2 (the policy is set per arm).
    #[arg(long, default_value = "e2")]
    preset: String,
    /// Seeds: `A..B` (B excluded) or a comma list.
    #[arg(long, default_value = "0..10")]
    seeds: String,
    /// Arms, comma separated: random, active.
    #[arg(long, default_value = "random,active")]
    arms: String,
    /// Worker threads (one experiment per thread).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
    #[command(flatten)]
    keys: Keys<ActdynConfig>,
}

/// `A..B` or `a,b,c`.
pub fn parse_seeds(s: &str) -> Result<Vec<u64>> {
    let bad = || anyhow::anyhow!("invalid --seeds = {s}: A..B (B > A) or a comma list of integers");
    if let Some((a, b)) = s.split_once("..") {
        let (a, b): (u64, u64) =
            (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
        if b <= a || b - a > 10_000 {
            return Err(bad());
        }
        return Ok((a..b).collect());
    }
    let v: Vec<u64> =
        s.split(',').map(|x| x.trim().parse().map_err(|_| bad())).collect::<Result<_>>()?;
    if v.is_empty() || v.len() > 10_000 {
        return Err(bad());
    }
    if let Some(i) = (1..v.len()).find(|&i| v[..i].contains(&v[i])) {
        bail!("invalid --seeds = {s}: seed {} is repeated (each seed runs once)", v[i]);
    }
    Ok(v)
}

pub fn compare(a: CompareArgs) -> Result<()> {
    use kestrel_run::Run;
    let Some(base) = Actdyn::preset(&a.preset) else {
        bail!("invalid --preset = {}: one of {}", a.preset, Actdyn::PRESETS.join(", "))
    };
    let c = a.cfg.load(&base, &a.keys)?;
    let seeds = parse_seeds(&a.seeds)?;
    let arms = kestrel_run::runs::actdyn::ArmKind::parse_list(&a.arms)?;
    launch(&a.cfg.out_dir, a.threads, |l| kestrel_run::runs::actdyn::compare(c, seeds, arms, l))
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
