//! `kestrel actdyn run | compare | bench`: active learning of latent dynamics. The loop lives
//! in `kestrel_actdyn::online`, the run folder in `kestrel_run::actdyn`.

use crate::common::{ConfigArgs, Flag, launch};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_actdyn::config::ActdynConfig;
use kestrel_run::runs::actdyn::Actdyn;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ActdynCmd {
    /// One experiment: random (E1) or active (E2) data collection, faithful or fixed profile.
    Run(Box<RunArgs>),
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
    /// Passes over the chunks (config `epochs`; the reference's 5,000).
    #[arg(long)]
    epochs: Option<u64>,
    /// Steps per chunk (config `chunk`).
    #[arg(long)]
    chunk: Option<u64>,
    /// Worker threads (chunks of a batch in parallel).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
}

pub fn retrain(a: RetrainArgs) -> Result<()> {
    let c: kestrel_actdyn::offline::OfflineConfig = a.cfg.load(
        &kestrel_actdyn::offline::OfflineConfig::default(),
        vec![("epochs", Flag::I(a.epochs)), ("chunk", Flag::I(a.chunk))],
    )?;
    let run = a.run.clone();
    launch(&a.cfg.out_dir, a.threads, |l| kestrel_run::runs::actdyn::retrain(&run, c, l))
}

/// The base config of a preset (see `Actdyn::preset`).
fn preset(name: &str) -> Result<ActdynConfig> {
    use kestrel_run::Run;
    match Actdyn::preset(name) {
        Some(c) => Ok(c),
        None => bail!("invalid --preset = {name}: one of {}", Actdyn::PRESETS.join(", ")),
    }
}

#[derive(Args)]
pub struct RunArgs {
    /// Base config: e1 (random policy, MLP dynamics; the defaults) or e2 (RBF dynamics, iCEM,
    /// A-optimality); a --config file and flags apply over it. Not with --resume.
    #[arg(long)]
    preset: Option<String>,
    /// faithful (the reference as it runs) or fixed (the intended math) (config `profile`).
    #[arg(long)]
    profile: Option<String>,
    /// random, lazy, step or icem (config `policy.kind`).
    #[arg(long)]
    policy: Option<String>,
    /// Environment steps in total, a resumed run's included.
    #[arg(long)]
    steps: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Checkpoint every K steps (0: only at the end).
    #[arg(long)]
    checkpoint_every: Option<u64>,
    /// Continue the run in this folder from its checkpoint (only `steps` may change).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Worker threads (the planner's rollouts run in parallel).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
}

fn flags(
    profile: &Option<String>,
    policy: &Option<String>,
    steps: Option<u64>,
    seed: Option<u64>,
) -> Vec<(&'static str, Flag)> {
    vec![
        ("profile", Flag::S(profile.clone())),
        ("policy.kind", Flag::S(policy.clone())),
        ("steps", Flag::I(steps)),
        ("seed", Flag::I(seed)),
    ]
}

pub fn run(a: RunArgs) -> Result<()> {
    let mut f = flags(&a.profile, &a.policy, a.steps, a.seed);
    f.push(("checkpoint_every", Flag::I(a.checkpoint_every)));
    a.cfg.run_preset::<Actdyn>(a.preset.as_deref(), f, a.resume.as_deref(), a.threads)
}

#[derive(Args)]
pub struct CompareArgs {
    /// Base config: e1 or e2 (the policy is set per arm).
    #[arg(long, default_value = "e2")]
    preset: String,
    /// faithful or fixed (config `profile`).
    #[arg(long)]
    profile: Option<String>,
    /// Environment steps per run.
    #[arg(long)]
    steps: Option<u64>,
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
    let c: ActdynConfig =
        a.cfg.load(&preset(&a.preset)?, flags(&a.profile, &None, a.steps, None))?;
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
