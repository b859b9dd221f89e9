//! `kestrel nn bench`: times kestrel-nn on the workloads of `shared/reference/nn-backends.md`.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;

#[derive(Subcommand)]
pub enum NnCmd {
    /// Time an MLP training step (batch B, one model) and N models trained at once.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Layer widths, input first.
    #[arg(long, default_value = "64,256,256,16", value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Batch of the single-model step.
    #[arg(long, default_value_t = 256)]
    batch: usize,
    /// Independent models of the many-model step.
    #[arg(long, default_value_t = 8)]
    models: usize,
    /// Batch of each of those models.
    #[arg(long, default_value_t = 64)]
    model_batch: usize,
    /// Worker threads (models run in parallel; each GEMM is single-threaded).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Seconds to time each case.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let pool = crate::common::pool(Some(a.threads))?;
    let t = pool.install(|| {
        kestrel_nn::bench::mlp(&a.sizes, a.batch, a.models, a.model_batch, a.seconds)
    })?;
    if a.json {
        println!(
            "{}",
            json!({"sizes": a.sizes, "threads": a.threads, "batch": a.batch, "train_us": t.train_us,
                   "models": a.models, "model_batch": a.model_batch, "train_many_us": t.train_many_us,
                   "forward_b1_us": t.forward_b1_us})
        );
    } else {
        println!(
            "MLP {:?}, {} thread(s): train step batch {} {:.0} µs; {} models × batch {} {:.0} µs; forward batch 1 {:.1} µs",
            a.sizes,
            a.threads,
            a.batch,
            t.train_us,
            a.models,
            a.model_batch,
            t.train_many_us,
            t.forward_b1_us
        );
    }
    Ok(())
}
