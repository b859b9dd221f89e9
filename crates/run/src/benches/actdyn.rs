//! `kestrel actdyn bench`: the planner call, the training steps and the environment step
//! with the belief, medians after warm-up against the reference's figures (the training call
//! timed by `kestrel_actdyn::bench::train_ms`).

use super::{Bench, Report};
use crate::base::RunError;
use crate::runs::actdyn::{ActdynConfig, ActdynRun};
use kestrel_actdyn::ActdynError;
use kestrel_actdyn::bench::train_ms;
use kestrel_core::timing::median_us;
use kestrel_core::{FromInvalid, Key};
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
        let pool = crate::base::pool(c.threads)?;
        let (t, threads) = pool.install(|| (times(c.reps), rayon::current_num_threads()));
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

/// The measured medians.
#[derive(Clone, Debug, Serialize)]
pub struct BenchTimes {
    /// Sequences costed per planner call (217 + 3 shifted elites at E2 defaults).
    pub planner_sequences: usize,
    /// One planner call (ms).
    pub planner_ms: f64,
    /// One E1 training call (ms).
    pub train_mlp_ms: f64,
    /// One E2 training call (ms).
    pub train_rbf_ms: f64,
    /// One environment step with the belief update, random policy, no training (µs).
    pub env_belief_us: f64,
}

/// Runs every timing with `reps` repetitions each (1 to 1,000,000).
fn times(reps: usize) -> Result<BenchTimes, ActdynError> {
    if !(1..=1_000_000).contains(&reps) {
        return Err(ActdynError::invalid("reps", reps, "1 to 1000000"));
    }
    // Planner: an E2 run after 25 steps (elites and accumulated information exist), then
    // planner calls alone.
    let (e1, e2) = (ActdynConfig::e1(), ActdynConfig::e2());
    let quiet = |c: &ActdynConfig| ActdynConfig {
        train: kestrel_actdyn::train::TrainConfig { train_every: u64::MAX, ..c.train.clone() },
        save_every: 0,
        ..c.clone()
    };
    let mut run = ActdynRun::new(quiet(&e2))?;
    for _ in 0..25 {
        run.step()?;
    }
    let mut err = None;
    let planner_us = median_us(reps as u64, |i| {
        if let Err(e) = run.act(Key::new(9).fold_in(i)) {
            err = Some(e);
        }
    });
    let mut envrun = ActdynRun::new(quiet(&e1))?;
    let env_belief_us = median_us(reps as u64 * 10, |_| {
        if let Err(e) = envrun.step() {
            err = Some(e);
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    // The planner's own schedule: samples of each iteration, then the reused elites.
    let icem = run.planner().expect("E2 plans with iCEM").params();
    let seqs =
        (0..icem.iterations).map(|i| icem.samples_at(i)).sum::<usize>() + icem.reused_elites();
    Ok(BenchTimes {
        planner_sequences: seqs,
        planner_ms: planner_us / 1e3,
        train_mlp_ms: train_ms(&e1.model, &e1.train, reps)?,
        train_rbf_ms: train_ms(&e2.model, &e2.train, reps)?,
        env_belief_us,
    })
}
