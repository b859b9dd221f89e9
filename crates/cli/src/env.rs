//! `kestrel env bench ID`: any env of the registry (`kestrel config` lists the ids), its params
//! from `--config`/`--set` as Python's `make(ID, **params)` takes them, stepped under random
//! actions, a step at a time or in rollouts from action arrays (`--rollout`).

use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_run::{EnvId, Layers};
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum EnvCmd {
    /// Steps per second of an env id at each batch size, under random actions.
    Bench(EnvBenchArgs),
}

#[derive(Args)]
pub struct EnvBenchArgs {
    /// The env id (`kestrel config` lists them).
    id: String,
    /// Batch sizes to time.
    #[arg(long, value_delimiter = ',', default_value = "1,64,1024,4096")]
    num_envs: Vec<usize>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Seconds to time each batch size.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// The env's params as TOML (what `kestrel config ID` prints).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Override a param: `--set gravity=9.81` (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Time rollouts of this many steps instead of single steps: every step's random actions
    /// drawn into arrays first, each rollout writing every step's columns and counting the
    /// episodes, as Python's `VectorEnv.rollout` does (0: single steps).
    #[arg(long, default_value_t = 0)]
    rollout: usize,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn bench(a: EnvBenchArgs) -> Result<()> {
    let id = EnvId::parse(&a.id)?;
    let table = toml::Table::new();
    let layers = Layers { preset: None, file: a.config.as_deref(), table: &table, sets: &a.set };
    let pool = kestrel_run::pool(Some(a.threads))?;
    let mut rows = Vec::new();
    for &n in &a.num_envs {
        let mut batch = pool.install(|| id.build(layers, n, 0, 0))?;
        let sps = pool.install(|| match a.rollout {
            0 => kestrel_run::envs::steps_per_second(&mut *batch, a.seconds),
            k => kestrel_run::envs::rollout_steps_per_second(&mut *batch, k, a.seconds),
        })?;
        if !a.json {
            outln!("{:>8} envs  {:>14.0} steps/s  {:>8.1} ns/step", n, sps, 1e9 / sps);
        }
        rows.push(json!({"num_envs": n, "steps_per_s": sps}));
    }
    if a.json {
        let out =
            json!({"id": id.name(), "threads": a.threads, "rollout": a.rollout, "batches": rows});
        outln!("{out}");
    }
    Ok(())
}
