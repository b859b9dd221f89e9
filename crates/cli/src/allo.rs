//! `kestrel allo train | bench`: config, run folder, checkpoints, heat maps here; the run in
//! `kestrel_run::runs::allo::AlloRun`.

use crate::common::RunArgs;
use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_run::runs::allo::Allo;
use serde_json::json;

#[derive(Subcommand)]
pub enum AlloCmd {
    /// Train a Laplacian representation on a map.
    Train(Box<RunArgs<Allo>>),
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
