//! `kestrel nn bench`: kestrel-nn on the workloads of `shared/reference/nn-backends.md`
//! (`kestrel_nn::bench::mlp`).

use super::{Bench, Report};
use crate::base::RunError;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// `kestrel nn bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct NnBenchConfig {
    /// Layer widths, input first.
    pub sizes: Vec<usize>,
    /// Batch of the single-model step.
    pub batch_size: usize,
    /// Independent models of the many-model step.
    pub num_models: usize,
    /// Batch of each of those models.
    pub model_batch_size: usize,
    /// Worker threads (models run in parallel; each GEMM is single-threaded).
    pub threads: usize,
    /// Seconds to time each case.
    pub seconds: f64,
}

impl Default for NnBenchConfig {
    fn default() -> Self {
        NnBenchConfig {
            sizes: vec![64, 256, 256, 16],
            batch_size: 256,
            num_models: 8,
            model_batch_size: 64,
            threads: 1,
            seconds: 2.0,
        }
    }
}

/// The `nn bench` bench.
pub struct NnBench;

impl Bench for NnBench {
    const COMMAND: &'static str = "nn bench";
    type Config = NnBenchConfig;

    fn run(c: &NnBenchConfig) -> Result<Report, RunError> {
        let t = crate::base::pool(Some(c.threads))?.install(|| {
            kestrel_nn::bench::mlp(
                &c.sizes,
                c.batch_size,
                c.num_models,
                c.model_batch_size,
                c.seconds,
            )
        })?;
        let text = format!(
            "MLP {:?}, {} thread(s): train step batch {} {:.0} µs; {} models × batch {} {:.0} µs; forward batch 1 {:.1} µs",
            c.sizes,
            c.threads,
            c.batch_size,
            t.train_us,
            c.num_models,
            c.model_batch_size,
            t.train_many_us,
            t.forward_b1_us
        );
        let json = json!({"sizes": c.sizes, "threads": c.threads, "batch_size": c.batch_size,
            "train_us": t.train_us, "num_models": c.num_models,
            "model_batch_size": c.model_batch_size,
            "train_many_us": t.train_many_us, "forward_b1_us": t.forward_b1_us});
        Ok(Report::one(text, json))
    }
}
