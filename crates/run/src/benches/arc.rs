//! `kestrel arc bench`: steps per second of the ARC env at each batch size under random
//! actions, the memory-bandwidth bound of its observation bytes, and a per-operation cost
//! table (`kestrel_arc::bench`). The env is `ARC-v0` (or `ARC-jaxarc-v0`) as the env registry
//! reads it ([`ArcConfig`]).

use super::{Bench, Report};
use crate::base::RunError;
use kestrel_arc::bench::{self, ArcKernel};
use kestrel_arc::{ArcConfig, JAXARC_OPS, LayoutKind, ModeKind, O2ARC_OPS, SelKind};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;

/// `kestrel arc bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct ArcBenchConfig {
    /// The environment, as the env registry's `ARC-v0` reads it (`kestrel config ARC-v0`):
    /// `canvas`, `data` (empty: generated tasks), `layout`, `bugs`, ….
    #[documented(nested)]
    pub env: ArcConfig,
    /// Rules: `o2arc` (ARCLE's) or `jaxarc` (JaxARC 1.0.3's; `bugs = "all"` switches its bugs
    /// back on).
    pub mode: ModeKind,
    /// Only this task: an id of `env.data` or a generator id (`symmetry-3`); empty: the bank.
    pub task: String,
    /// Batch sizes to time.
    pub num_envs: Vec<usize>,
    /// Worker threads.
    pub threads: usize,
    /// Selection form of the random actions: `mask`, `bbox` or `point`.
    pub sel: SelKind,
    /// Seconds to time each batch size.
    pub seconds: f64,
    /// Skip the per-operation table.
    pub no_ops: bool,
    /// Batched kernel: `rows` (VecEnv, every mode and canvas) or `lanes` (the
    /// structure-of-arrays kernel, jaxarc mode with canvas 5 or 10). Default: lanes where it
    /// applies, from 16 envs.
    pub kernel: Option<ArcKernel>,
}

impl Default for ArcBenchConfig {
    fn default() -> Self {
        ArcBenchConfig {
            env: ArcConfig { tasks_per_family: 32, ..ArcConfig::default() },
            mode: ModeKind::O2arc,
            task: String::new(),
            num_envs: vec![1, 64, 1024, 4096],
            threads: 2,
            sel: SelKind::Mask,
            seconds: 1.0,
            no_ops: false,
            kernel: None,
        }
    }
}

/// The `arc bench` bench.
pub struct ArcBench;

impl Bench for ArcBench {
    const COMMAND: &'static str = "arc bench";
    type Config = ArcBenchConfig;

    fn run(c: &ArcBenchConfig) -> Result<Report, RunError> {
        let canvas = c.env.canvas;
        kestrel_arc::with_canvas!(canvas, S => bench::<S>(c),
            else Err(kestrel_core::Invalid::new("env.canvas", canvas, "5, 10 or 30").into()))
    }
}

fn bench<const S: usize>(c: &ArcBenchConfig) -> Result<Report, RunError> {
    let mut r = Report::default();
    let p = c.env.params(c.mode)?;
    let t0 = Instant::now();
    let (bank, skipped) = c.env.load()?;
    if !c.env.data.is_empty() {
        let (ms, n) = (t0.elapsed().as_secs_f64() * 1e3, bank.len());
        r.text.push(format!("loaded {n} tasks from {} in {ms:.1} ms", c.env.data));
    }
    r.text.extend(skipped.iter().map(|s| format!("skipped: {s}")));
    let (env, dropped) = c.env.env::<S>(bank, &c.task)?;
    env.validate(&p)?;
    if let Some(first) = dropped.first() {
        let n = dropped.len();
        r.text.push(format!("{n} tasks larger than the {S}x{S} canvas left out (first: {first})"));
    }
    let obs_bytes = kestrel_core::Env::spec(&env, &p).obs_len();
    let pool = crate::base::pool(Some(c.threads))?;
    let mut rows = Vec::new();
    for &n in &c.num_envs {
        let kernel = c.kernel.unwrap_or(ArcKernel::auto::<S>(&p, n));
        let sps =
            pool.install(|| bench::steps_per_second::<S>(&env, &p, n, c.sel, c.seconds, kernel))?;
        rows.push((n, sps, kernel));
        r.text.push(format!(
            "{n:>8} envs  {sps:>14.0} steps/s  {:>8.1} ns/step  {:>8.2} GB/s obs written  ({kernel:?})",
            1e9 / sps,
            sps * obs_bytes as f64 / 1e9
        ));
    }
    // The bound for the observation bytes: copying obs_len bytes per row from one column into
    // another, on the same threads (state must be read to write obs).
    let bounds: Vec<f64> = if p.layout == LayoutKind::Full {
        c.num_envs
            .iter()
            .map(|&n| pool.install(|| bench::copy_bound(n, obs_bytes, c.seconds)))
            .collect()
    } else {
        Vec::new()
    };
    if !bounds.is_empty() {
        r.text.push(format!(
            "\nmemory-bandwidth bound for {obs_bytes} B/step (row copy, same threads):"
        ));
    }
    for ((n, sps, _), b) in rows.iter().zip(&bounds) {
        r.text.push(format!(
            "{n:>8} envs  bound {b:>12.0} steps/s  ({:.2} GB/s)  env at {:.2} of the bound ({:.2}x from it)",
            b * obs_bytes as f64 / 1e9,
            sps / b,
            b / sps
        ));
    }
    let ops = if c.no_ops { Vec::new() } else { bench::op_costs::<S>(&env, &p, c.sel) };
    if !ops.is_empty() {
        let names = if p.mode == ModeKind::O2arc { &O2ARC_OPS } else { &JAXARC_OPS };
        r.text.push(format!(
            "\nper-operation cost (one env, one thread, random {:?} selections, sampling included):",
            c.sel
        ));
        for (i, chunk) in ops.chunks(3).enumerate() {
            let cells: Vec<String> = chunk
                .iter()
                .enumerate()
                .map(|(j, ns)| format!("{:>3} {:<14}{ns:>8.1} ns", 3 * i + j, names[3 * i + j]))
                .collect();
            r.text.push(cells.join("   "));
        }
    }
    r.json.push(json!({
        "canvas": S, "mode": c.mode, "bugs": c.env.bugs, "layout": format!("{:?}", p.layout),
        "sel": format!("{:?}", c.sel), "threads": c.threads, "tasks": env.bank().len(),
        "obs_bytes": obs_bytes,
        "batches": rows.iter().map(|(n, s, k)| json!({"num_envs": n, "steps_per_s": s, "kernel": format!("{k:?}")})).collect::<Vec<_>>(),
        "copy_bound_steps_per_s": bounds,
        "ops_ns": ops,
    }));
    Ok(r)
}
