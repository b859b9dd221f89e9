//! `kestrel allo train | bench`: config, run folder, checkpoints, heat maps here; the run in
//! `kestrel_run::runs::allo::AlloRun`.

use crate::common::{ConfigArgs, Flag};
use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_run::runs::allo::Allo;
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum AlloCmd {
    /// Train a Laplacian representation on a map.
    Train(Box<TrainArgs>),
    /// Time replay sampling (one 4 × batch draw) and the training step, deduplicated and
    /// plain.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// A map file or `builtin:NAME`.
    #[arg(long, default_value = "builtin:rooms-2-5")]
    map: String,
    /// paper (the default) or asymexp: the asymexp profile's collection, truth, sampling and
    /// update at the script's defaults (map files read stripped, as its `room4` string).
    #[arg(long, default_value = "paper", value_parser = ["paper", "asymexp"])]
    profile: String,
    /// Rows per batch (paper: 1024, four sub-batches; asymexp: 256, two batches).
    #[arg(long)]
    batch: Option<usize>,
    /// asymexp: collecting environments (default 1000).
    #[arg(long)]
    num_envs: Option<usize>,
    /// asymexp: steps per collecting environment (default 1000).
    #[arg(long)]
    num_steps: Option<usize>,
    /// Steps timed per path.
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    if a.profile == "asymexp" {
        return bench_asymexp(&a);
    }
    if a.num_envs.is_some() || a.num_steps.is_some() {
        anyhow::bail!("--num-envs and --num-steps are the asymexp profile's (--profile asymexp)");
    }
    let batch = a.batch.unwrap_or(1024);
    let t = kestrel_agents::bench::allo(&a.map, batch, a.steps)?;
    if a.json {
        println!(
            "{}",
            json!({"map": a.map, "states": t.states, "batch": batch, "sample_us": t.sample_us,
                   "step_dedup_us": t.step_dedup_us, "step_plain_us": t.step_plain_us})
        );
    } else {
        println!(
            "ALLO on {} ({} states), batch 4×{}: sampling {:.0} µs; step {:.2} ms deduplicated, {:.2} ms plain",
            a.map,
            t.states,
            batch,
            t.sample_us,
            t.step_dedup_us / 1e3,
            t.step_plain_us / 1e3
        );
    }
    Ok(())
}

fn bench_asymexp(a: &BenchArgs) -> Result<()> {
    use kestrel_agents::asymexp::Version;
    let map = kestrel_run::runs::allo_asymexp::resolve_map(&a.map, Version::Final)?;
    let (batch, envs, steps) =
        (a.batch.unwrap_or(256), a.num_envs.unwrap_or(1000), a.num_steps.unwrap_or(1000));
    let t = kestrel_agents::bench::asymexp(&map, envs, steps, batch, a.steps)?;
    if a.json {
        println!(
            "{}",
            json!({"map": a.map, "states": t.states, "batch": batch, "steps": a.steps,
                   "collect_s": (t.collect_ms + t.truth_ms) / 1e3, "collect_ms": t.collect_ms,
                   "truth_ms": t.truth_ms, "sample_ms": t.sample_us / 1e3,
                   "update_ms": t.update_us / 1e3, "update_plain_ms": t.update_plain_us / 1e3,
                   "step_ms": (t.sample_us + t.update_us) / 1e3})
        );
    } else {
        println!(
            "ALLO asymexp on {} ({} states), batch 2×{}: collection of {}×{} {:.0} ms, truth {:.1} ms; \
             sampling {:.0} µs; update {:.2} ms deduplicated, {:.2} ms plain",
            a.map,
            t.states,
            batch,
            envs,
            steps,
            t.collect_ms,
            t.truth_ms,
            t.sample_us,
            t.update_us / 1e3,
            t.update_plain_us / 1e3
        );
    }
    Ok(())
}

#[derive(Args)]
pub struct TrainArgs {
    /// A map file (the profile's text format: the paper code's, or asymexp's) or
    /// `builtin:NAME` (open-N, rooms-K-N, four-rooms, maze-N-SEED) (config key `map`).
    #[arg(long)]
    map: Option<String>,
    /// Gradient steps in total, a resumed run's included.
    #[arg(long)]
    steps: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// paper (the default: ALLO or GGDO as the ICLR paper's code) or asymexp
    /// (`exp_alcl/allo.py`, with its own defaults; `--set asymexp.version=final`).
    #[arg(long)]
    profile: Option<String>,
    /// allo or ggdo.
    #[arg(long)]
    method: Option<String>,
    /// Eigenvectors learnt (the paper's d).
    #[arg(long)]
    num_eigenvectors: Option<u64>,
    /// Rows per sub-batch.
    #[arg(long)]
    batch_size: Option<u64>,
    /// Transition samples collected (3,000,000 in the paper's 12-map study).
    #[arg(long)]
    samples: Option<u64>,
    /// Evaluate the cosine similarity every K steps.
    #[arg(long)]
    eval_every: Option<u64>,
    /// Checkpoint (and draw `eigenvectors-<step>.png`) every K steps (0: only at the end).
    #[arg(long)]
    checkpoint_every: Option<u64>,
    /// Continue the run in this folder from its checkpoint; its `config.toml` is the config
    /// (only `steps` may be raised).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[command(flatten)]
    cfg: ConfigArgs,
}

pub fn train(a: TrainArgs) -> Result<()> {
    let flags = vec![
        ("map", Flag::S(a.map)),
        ("steps", Flag::I(a.steps)),
        ("seed", Flag::I(a.seed)),
        ("profile", Flag::S(a.profile)),
        ("method", Flag::S(a.method)),
        ("num_eigenvectors", Flag::I(a.num_eigenvectors)),
        ("batch_size", Flag::I(a.batch_size)),
        ("samples", Flag::I(a.samples)),
        ("eval_every", Flag::I(a.eval_every)),
        ("checkpoint_every", Flag::I(a.checkpoint_every)),
    ];
    a.cfg.run::<Allo>(flags, a.resume.as_deref(), Some(a.threads))
}
