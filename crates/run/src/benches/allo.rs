//! `kestrel allo bench`: replay sampling and the training step of ALLO
//! (`kestrel_agents::bench::allo`), or of the asymexp profile with its collection and ground
//! truth (`kestrel_agents::bench::asymexp`).

use super::{Bench, Report};
use crate::base::RunError;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Whose workload the ALLO bench times (config spelling `paper`, `asymexp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlloBenchProfileKind {
    /// The ICLR paper's code (`laplacian_dual_dynamics`): `kestrel allo train`'s workload.
    #[default]
    Paper,
    /// `exp_alcl/allo.py` of `tarod13/asymexp`: `kestrel allo asymexp`'s workload.
    Asymexp,
}

/// `kestrel allo bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct AlloBenchConfig {
    /// A map file or `builtin:NAME`.
    pub map: String,
    /// `paper` (the default) or `asymexp`: the asymexp profile's collection, truth, sampling
    /// and update at the script's defaults (map files read stripped, as its `room4` string).
    pub profile: AlloBenchProfileKind,
    /// Rows per batch (paper: 1024, four sub-batches; asymexp: 256, two batches).
    pub batch_size: Option<usize>,
    /// asymexp: collecting environments (default 1000).
    pub num_envs: Option<usize>,
    /// asymexp: steps per collecting environment (default 1000).
    pub num_steps: Option<usize>,
    /// Steps timed per path.
    pub steps: u64,
}

impl Default for AlloBenchConfig {
    fn default() -> Self {
        AlloBenchConfig {
            map: "builtin:rooms-2-5".into(),
            profile: AlloBenchProfileKind::Paper,
            batch_size: None,
            num_envs: None,
            num_steps: None,
            steps: 200,
        }
    }
}

/// The `allo bench` bench.
pub struct AlloBench;

impl Bench for AlloBench {
    const COMMAND: &'static str = "allo bench";
    type Config = AlloBenchConfig;

    fn run(c: &AlloBenchConfig) -> Result<Report, RunError> {
        if c.profile == AlloBenchProfileKind::Asymexp {
            return asymexp(c);
        }
        if c.num_envs.is_some() || c.num_steps.is_some() {
            return Err(RunError::Config {
                source_name: "arguments".into(),
                message: "num_envs and num_steps are the asymexp profile's (profile = asymexp)"
                    .into(),
            });
        }
        let batch = c.batch_size.unwrap_or(1024);
        let t = kestrel_agents::bench::allo(&c.map, batch, c.steps)?;
        let text = format!(
            "ALLO on {} ({} states), batch 4×{}: sampling {:.0} µs; step {:.2} ms deduplicated, {:.2} ms plain",
            c.map,
            t.states,
            batch,
            t.sample_us,
            t.step_dedup_us / 1e3,
            t.step_plain_us / 1e3
        );
        let json = json!({"map": c.map, "states": t.states, "batch_size": batch,
            "sample_us": t.sample_us, "step_dedup_us": t.step_dedup_us,
            "step_plain_us": t.step_plain_us});
        Ok(Report::one(text, json))
    }
}

fn asymexp(c: &AlloBenchConfig) -> Result<Report, RunError> {
    use kestrel_agents::asymexp::VersionKind;
    let map = crate::runs::allo_asymexp::resolve_map(&c.map, VersionKind::Final)?;
    let (batch, envs, steps) =
        (c.batch_size.unwrap_or(256), c.num_envs.unwrap_or(1000), c.num_steps.unwrap_or(1000));
    let t = kestrel_agents::bench::asymexp(&map, envs, steps, batch, c.steps)?;
    let text = format!(
        "ALLO asymexp on {} ({} states), batch 2×{}: collection of {}×{} {:.0} ms, truth {:.1} ms; \
         sampling {:.0} µs; update {:.2} ms deduplicated, {:.2} ms plain",
        c.map,
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
    let json = json!({"map": c.map, "states": t.states, "batch_size": batch, "steps": c.steps,
        "collect_s": (t.collect_ms + t.truth_ms) / 1e3, "collect_ms": t.collect_ms,
        "truth_ms": t.truth_ms, "sample_ms": t.sample_us / 1e3,
        "update_ms": t.update_us / 1e3, "update_plain_ms": t.update_plain_us / 1e3,
        "step_ms": (t.sample_us + t.update_us) / 1e3});
    Ok(Report::one(text, json))
}
