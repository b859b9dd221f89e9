//! One file per run kind, each a [`crate::run::Run`]: the config it reads, what it checks, and its
//! loop from start to summary, built from the algorithm crates' parts. The registry
//! ([`crate::registry::RunKind`]) is how every front end reaches them.
//!
//! | kind | command | file |
//! |---|---|---|
//! | `evo` | `kestrel evo run` | [`es`] |
//! | `qd` | `kestrel evo qd` | [`qd`] |
//! | `mppi-run` | `kestrel mppi run` | [`mppi`] |
//! | `mppi-tune` | `kestrel mppi tune` | [`mppi_tune`] |
//! | `mppi-qd` | `kestrel mppi qd` | [`mppi_qd`] |
//! | `allo` | `kestrel allo train` | [`allo`] (profile `asymexp`: [`allo_asymexp`]) |
//! | `hunt` | `kestrel hunt train` | [`hunt`] |
//! | `hunt-play` | `kestrel hunt play` | [`hunt_play`] |
//! | `actdyn` | `kestrel actdyn run` | [`actdyn`] |
//! | `actdyn-compare` | `kestrel actdyn compare` | [`actdyn_compare`] |
//! | `actdyn-retrain` | `kestrel actdyn retrain` | [`actdyn_retrain`] |
//! | `arc-rollout` | `kestrel arc rollout` | [`arc_rollout`] |
//! | `arc-replay` | `kestrel arc replay` | [`arc_replay`] |

pub mod actdyn;
pub mod actdyn_compare;
pub mod actdyn_retrain;
pub mod allo;
pub mod allo_asymexp;
pub mod arc_replay;
pub mod arc_rollout;
pub mod es;
pub mod hunt;
pub mod hunt_play;
pub mod mppi;
pub mod mppi_qd;
pub mod mppi_tune;
pub mod qd;

use crate::base::RunError;
use kestrel_core::Budget;
use std::path::Path;

/// What every run holds beside its config-sized buffers: the run folder's writer, the metrics
/// thread and one plot's bitmap and PNG encoder (measured: about 1.7 MB).
pub(crate) const FIXED_BYTES: u128 = 4 << 20;

/// The fixed part of every run ([`FIXED_BYTES`]).
pub(crate) fn fixed(b: &mut Budget) {
    b.add("run folder, metrics writer, plot bitmap", "fixed", FIXED_BYTES, 1);
}

/// An ARC task bank read from `data` (a file or folder of task JSON): the tasks as loaded hold
/// about twice their JSON text (measured on ARC-AGI-2's training set: 4.7 MB of files, 10 MB
/// at the peak).
pub(crate) fn data_bank(b: &mut Budget, data: &str) {
    b.add("task bank", "the JSON files of env.data", json_bytes(Path::new(data), 0), 2);
}

/// The bytes of the `*.json` files at `path` (a file, or a folder searched as the task loader
/// searches it, symbolic links not followed; 0 where unreadable: the run then fails on it).
fn json_bytes(path: &Path, depth: usize) -> u128 {
    let Ok(meta) = std::fs::symlink_metadata(path) else { return 0 };
    if meta.is_file() || (meta.file_type().is_symlink() && path.is_file()) {
        return std::fs::metadata(path).map_or(0, |m| m.len() as u128);
    }
    if !meta.is_dir() || depth > 32 {
        return 0;
    }
    let Ok(rd) = std::fs::read_dir(path) else { return 0 };
    rd.flatten()
        .map(|e| {
            let p = e.path();
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                json_bytes(&p, depth + 1)
            } else if p.extension().is_some_and(|x| x == "json") {
                e.metadata().map_or(0, |m| m.len() as u128)
            } else {
                0
            }
        })
        .sum()
}

/// A curve of `points` points kept through the run (16 B each, in a doubling `Vec`: 1.5 times
/// that while it grows) and drawn as a line plot (about 45 B per point more).
pub(crate) fn curve(b: &mut Budget, fields: String, points: u128) {
    b.add("curve and its plot", fields, points.saturating_add(4), 16 * 2 + 45);
}

/// A heat map of `res × res` pixels (about 165 B per pixel, mostly its SVG text).
pub(crate) fn heat_map(b: &mut Budget, fields: String, res: u128) {
    b.add("archive heat map", fields, res.saturating_mul(res), 170);
}

/// The packing buffer of large matrix products, once per thread, when `strategy` at `n`
/// dimensions and population `pop` packs (see `kestrel_evo::memory`).
pub(crate) fn packing(
    b: &mut Budget,
    strategy: kestrel_evo::StrategyKind,
    n: usize,
    pop: usize,
    threads: usize,
) {
    if strategy.packs(n, pop) {
        b.add(
            "matrix-product packing buffer per thread",
            format!("num_dims = {n}, threads = {threads}"),
            threads as u128,
            kestrel_evo::memory::PACKING_BYTES,
        );
    }
}

/// A nested config's validation error with its field named by its path in the run's config
/// (`under("agent", e)`: `lr` is `agent.lr`).
pub(crate) fn under(table: &str, e: kestrel_agents::AgentError) -> kestrel_agents::AgentError {
    use kestrel_agents::AgentError;
    match e {
        AgentError::Invalid(mut i)
        | AgentError::Replay(kestrel_replay::ReplayError::Invalid(mut i)) => {
            i.field = format!("{table}.{}", i.field).into();
            AgentError::Invalid(i)
        }
        other => other,
    }
}

/// The config of the finished `R` run in `dir`, read from its `config.toml` as that run read
/// it: what a kind that reads another run's folder (`run` in its config) starts from. An
/// empty `dir` is an error saying to set `run` to a `kestrel <R's command>` folder.
pub(crate) fn source_config<R: crate::run::Run>(dir: &Path) -> Result<R::Config, RunError> {
    if dir.as_os_str().is_empty() {
        return Err(RunError::Config {
            source_name: "run".into(),
            message: format!(
                "no run folder: set `run` to the `kestrel {}` folder to read",
                R::COMMAND
            ),
        });
    }
    // As the run itself reads it (its renamed keys, its defaults fitted to the file's).
    let file = dir.join("config.toml");
    let table = toml::Table::new();
    let layers = crate::run::Layers { preset: None, file: Some(&file), table: &table, sets: &[] };
    crate::run::load::<R>(layers, None)
}

/// Next power of two at or above `x` (a `Vec` grown by pushing).
pub(crate) fn np2(x: f64) -> f64 {
    if x <= 1.0 { 1.0 } else { 2f64.powi(x.log2().ceil() as i32) }
}

pub(crate) fn ceil8(x: f64) -> f64 {
    (x / 8.0).ceil() * 8.0
}

/// What one phase of a run holds: (what, fields, bytes).
pub(crate) type Phase = Vec<(&'static str, String, f64)>;

/// Adds the terms of the phase with the largest total.
pub(crate) fn largest(b: &mut Budget, phases: Vec<Phase>) {
    let total = |p: &Phase| p.iter().map(|t| t.2).sum::<f64>();
    if let Some(p) = phases.into_iter().max_by(|a, b| total(a).total_cmp(&total(b))) {
        for (what, fields, bytes) in p {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        }
    }
}

/// The thread-local buffers of the matrix kernels (faer's packing, Kestrel's panels, gemm's
/// L2 slab: a few MiB, sized by the CPU's caches) and the run folder's writer.
pub(crate) const MATRIX_FIXED: f64 = 12.0 * 1048576.0;
