//! `kestrel actdyn bench`: the planner call, the training steps and the environment step
//! with the belief, medians against the reference's figures (`kestrel_actdyn::bench`).

use super::{Bench, Report};
use crate::RunError;
use serde::{Deserialize, Serialize};

/// `kestrel actdyn bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct ActdynBenchConfig {
    /// Repetitions per timing (median reported).
    pub reps: usize,
    /// Worker threads for the planner (absent: every core).
    pub threads: Option<usize>,
}

impl Default for ActdynBenchConfig {
    fn default() -> Self {
        ActdynBenchConfig { reps: 50, threads: None }
    }
}

/// The `actdyn bench` bench.
pub struct ActdynBench;

impl Bench for ActdynBench {
    const COMMAND: &'static str = "actdyn bench";
    type Config = ActdynBenchConfig;

    fn run(c: &ActdynBenchConfig) -> Result<Report, RunError> {
        let pool = crate::pool(c.threads)?;
        let (t, threads) =
            pool.install(|| (kestrel_actdyn::bench::run(c.reps), rayon::current_num_threads()));
        let t = t?;
        let text = format!(
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
        let json = serde_json::to_value(&t).map_err(|e| RunError::Failed(e.to_string()))?;
        Ok(Report::one(text, json))
    }
}
