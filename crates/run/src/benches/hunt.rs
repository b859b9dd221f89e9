//! `kestrel hunt bench`: an environment turn, an IQN update and its matrix products alone,
//! and a greedy action (`kestrel_agents::bench::hunt`).

use super::{Bench, Report};
use crate::base::RunError;
use kestrel_envs::treasure::TreasureObs;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// `kestrel hunt bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct HuntBenchConfig {
    /// Observation encoding: `rgb` or `one-hot`.
    pub obs: TreasureObs,
    /// Timed repetitions.
    pub reps: u64,
}

impl Default for HuntBenchConfig {
    fn default() -> Self {
        HuntBenchConfig { obs: TreasureObs::Rgb, reps: 300 }
    }
}

/// The `hunt bench` bench.
pub struct HuntBench;

impl Bench for HuntBench {
    const COMMAND: &'static str = "hunt bench";
    type Config = HuntBenchConfig;

    fn run(c: &HuntBenchConfig) -> Result<Report, RunError> {
        let t = kestrel_agents::bench::hunt(c.obs, c.reps)?;
        let obs = serde_json::to_value(c.obs).unwrap_or_default();
        let gflops = t.update_flops / t.update_us / 1e3;
        let text = format!(
            "turn (2 agents, spawn + moves): {:.2} µs\nobserve 2 agents: {:.2} µs\nIQN update (batch 64, 12×12 quantiles, layer 250, {}): {:.0} µs ({gflops:.1} GFLOP/s of {:.0} MFLOP)\nits GEMMs alone: {:.0} µs ({:.2}x)\ngreedy action (batch 1): {:.1} µs",
            t.turn_us,
            t.observe_us,
            obs.as_str().unwrap_or_default(),
            t.update_us,
            t.update_flops / 1e6,
            t.gemm_us,
            t.update_us / t.gemm_us,
            t.act_us
        );
        let json = json!({
            "obs": obs, "turn_us": t.turn_us, "observe_2_agents_us": t.observe_us,
            "iqn_update_us": t.update_us, "iqn_update_gflops": gflops,
            "iqn_update_mflop": t.update_flops / 1e6, "act_us": t.act_us,
            "gemm_only_us": t.gemm_us, "update_over_gemm": t.update_us / t.gemm_us,
            "commit": crate::base::COMMIT,
        });
        Ok(Report::one(text, json))
    }
}
