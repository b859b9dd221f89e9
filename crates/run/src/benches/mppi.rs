//! `kestrel mppi bench`: one MPPI command on the gym pendulum (pytorch-mppi's benchmark
//! problem, `kestrel_mppi::bench`), or a whole tuning run on jax-mppi's basic example.

use super::{Bench, Report};
use crate::base::RunError;
use crate::runs::mppi::MppiRunConfig;
use crate::runs::mppi_tune::{MppiTuneConfig, run_tune_with};
use kestrel_mppi::{ControllerKind, PrecisionKind, SystemKind};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;

/// `kestrel mppi bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct MppiBenchConfig {
    /// Samples K.
    pub num_samples: usize,
    /// Horizon T.
    pub horizon: usize,
    /// Commands to time.
    pub commands: u64,
    /// Worker threads.
    pub threads: usize,
    /// Arithmetic: `f64` (bit-exact, the default) or `f32` (SIMD lanes, jax-mppi's float32).
    pub precision: PrecisionKind,
    /// Time tuning instead: CMA-ES with this many candidates (at least 4) tunes λ and Σ on
    /// jax-mppi's basic example (K=50, T=15, 20 closed-loop steps from (1, −0.5), λ₀=5, Σ₀=1).
    pub tune_pop: Option<usize>,
    /// Generations for `tune_pop`.
    pub tune_generations: u64,
}

impl Default for MppiBenchConfig {
    fn default() -> Self {
        MppiBenchConfig {
            num_samples: 1000,
            horizon: 20,
            commands: 300,
            threads: 1,
            precision: PrecisionKind::F64,
            tune_pop: None,
            tune_generations: 100,
        }
    }
}

/// The `mppi bench` bench.
pub struct MppiBench;

impl Bench for MppiBench {
    const COMMAND: &'static str = "mppi bench";
    type Config = MppiBenchConfig;

    fn run(c: &MppiBenchConfig) -> Result<Report, RunError> {
        // Named as this bench's key (the tuning run would name its own `generations`); a zero
        // `commands` is refused by the timing itself.
        if c.tune_generations == 0 {
            return Err(kestrel_core::Invalid::new("tune_generations", 0, "at least 1").into());
        }
        let pool = crate::base::pool(Some(c.threads))?;
        let precision = serde_json::to_value(c.precision).unwrap_or_default();
        if let Some(pop) = c.tune_pop {
            let mut t = MppiTuneConfig {
                run: MppiRunConfig::defaults_for(ControllerKind::Mppi, SystemKind::Basic, 20, 0),
                pop_size: pop.max(4),
                generations: c.tune_generations,
                sigma: 0.3,
                ..MppiTuneConfig::default()
            };
            t.run.mppi.num_samples = 50;
            t.run.mppi.precision = c.precision;
            let start = Instant::now();
            let r = pool.install(|| run_tune_with(&t, None, |_| true))?;
            let secs = start.elapsed().as_secs_f64();
            let us = secs * 1e6 / (t.pop_size as u64 * c.tune_generations) as f64;
            let text = format!(
                "MPPI tuning (basic, λ and Σ, CMA-ES pop {}, {} generations), {} thread(s), {}: {secs:.3} s, {us:.1} µs per candidate episode, best cost {:.4}",
                t.pop_size,
                c.tune_generations,
                c.threads,
                precision.as_str().unwrap_or_default(),
                r.best_cost
            );
            let json = json!({"pop_size": t.pop_size, "generations": c.tune_generations,
                "threads": c.threads, "precision": precision, "seconds": secs,
                "us_per_candidate_episode": us, "best_cost": r.best_cost});
            return Ok(Report::one(text, json));
        }
        let us = pool.install(|| {
            kestrel_mppi::bench::pendulum_command_us(
                c.num_samples,
                c.horizon,
                c.commands,
                c.precision,
            )
        })?;
        let text = format!(
            "MPPI command, pendulum, K={} T={}, {} thread(s), {}: {us:.1} µs",
            c.num_samples,
            c.horizon,
            c.threads,
            precision.as_str().unwrap_or_default()
        );
        let json = json!({"num_samples": c.num_samples, "horizon": c.horizon,
            "threads": c.threads, "precision": precision, "us_per_command": us});
        Ok(Report::one(text, json))
    }
}
