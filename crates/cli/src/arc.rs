//! `kestrel arc ...` and the ARC part of `kestrel demo`: task loading, bench, replay, show,
//! rollout.

use crate::common::RunArgs;
use anyhow::{Result, bail};
use clap::{Args, Subcommand, ValueEnum};
use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{
    ArcEnv, ArcParams, JAXARC_OPS, JaxBugs, Layout, LoadOptions, Mode, O2ARC_OPS, SelKind, Task,
    TaskBank, bench, render,
};
use kestrel_run::runs::{arc_replay::ArcReplay, arc_rollout::ArcRollout};
use serde_json::json;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// `println!` that returns an error (e.g. a closed pipe) instead of panicking.
macro_rules! outln {
    ($($t:tt)*) => { writeln!(std::io::stdout().lock(), $($t)*)? };
}
/// `print!` that returns an error instead of panicking.
macro_rules! out {
    ($($t:tt)*) => { write!(std::io::stdout().lock(), $($t)*)? };
}

#[derive(Subcommand)]
pub enum ArcCmd {
    /// Steps per second per batch size, plus a per-operation cost table.
    Bench(BenchArgs),
    /// Replays action traces (JSONL) into a run folder: each final state in `replays.jsonl`.
    Replay(RunArgs<ArcReplay>),
    /// Shows a task: coloured terminal grids and a PNG of all pairs.
    Show(ShowArgs),
    /// Runs episodes with a random or scripted policy into a run folder (`episodes.jsonl`,
    /// which `arc replay` reads back).
    Rollout(RunArgs<ArcRollout>),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ModeArg {
    O2arc,
    Jaxarc,
    /// JaxARC with every 1.0.3 bug switched back on.
    JaxarcBugs,
}

/// Where tasks come from: a dataset path, or the generator (the default).
#[derive(Args, Clone, Debug)]
pub struct Source {
    /// ARC data: a directory (ARC-AGI, ConceptARC, Mini-ARC layouts), a task file, a
    /// combined {id: task} file or an ARC Prize challenges file. Default: generated tasks.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Fail on the first malformed file instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// Generated tasks per family (without --data).
    #[arg(long, default_value_t = 32)]
    tasks_per_family: usize,
    /// Generator families (comma-separated; default all).
    #[arg(long, value_delimiter = ',')]
    families: Vec<String>,
    /// Largest generated grid side.
    #[arg(long, default_value_t = 12)]
    max_side: usize,
    /// Generator difficulty, 0 to 1.
    #[arg(long, default_value_t = 0.5)]
    difficulty: f32,
    /// Generator seed.
    #[arg(long, default_value_t = 0)]
    gen_seed: u64,
    /// Use only this task (id, group/id, or a generator id such as symmetry-3).
    #[arg(long)]
    task: Option<String>,
}

impl Source {
    fn bank(&self, quiet: bool) -> Result<TaskBank> {
        match &self.data {
            Some(p) => {
                let t0 = Instant::now();
                let (bank, skipped) = TaskBank::load(p, LoadOptions { strict: self.strict })?;
                if !quiet {
                    eprintln!(
                        "loaded {} tasks from {} in {:.1} ms",
                        bank.len(),
                        p.display(),
                        t0.elapsed().as_secs_f64() * 1e3
                    );
                }
                for s in &skipped {
                    eprintln!("skipped: {}", s.error);
                }
                Ok(bank)
            }
            None => {
                let fams = if self.families.is_empty() {
                    Family::ALL.to_vec()
                } else {
                    self.families.iter().map(|f| Family::parse(f)).collect::<Result<_, _>>()?
                };
                let cfg = GenConfig {
                    max_side: self.max_side,
                    difficulty: self.difficulty,
                    ..GenConfig::default()
                };
                Ok(generate_bank(&fams, self.tasks_per_family, self.gen_seed, &cfg)?)
            }
        }
    }

    fn gen_cfg(&self) -> GenConfig {
        GenConfig { max_side: self.max_side, difficulty: self.difficulty, ..GenConfig::default() }
    }

    /// Finds a task by id in the bank, or generates it from a `family-index` id.
    fn find(&self, bank: &TaskBank, id: &str) -> Result<Task> {
        Ok(kestrel_arc::generator::find_or_generate(bank, id, self.gen_seed, &self.gen_cfg())?)
    }
}

fn params(mode: ModeArg, layout: Layout) -> ArcParams {
    match mode {
        ModeArg::O2arc => ArcParams { layout, ..ArcParams::default() },
        ModeArg::Jaxarc => ArcParams { layout, ..ArcParams::jaxarc() },
        ModeArg::JaxarcBugs => ArcParams { layout, bugs: JaxBugs::all(), ..ArcParams::jaxarc() },
    }
}

fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    crate::common::pool(Some(threads))
}

fn env_for<const S: usize>(mut bank: TaskBank, task: Option<&Task>) -> Result<ArcEnv<S>> {
    if let Some(t) = task {
        bank = TaskBank::from_tasks(vec![t.clone()]);
    }
    let dropped = bank.retain_fitting(S);
    if !dropped.is_empty() {
        eprintln!(
            "{} tasks larger than the {S}x{S} canvas left out (first: {})",
            dropped.len(),
            dropped[0]
        );
    }
    Ok(ArcEnv::new(Arc::new(bank))?)
}

// ------------------------------------------------------------------------------------
// bench

#[derive(Args)]
pub struct BenchArgs {
    /// Batch sizes to time.
    #[arg(long, value_delimiter = ',', default_value = "1,64,1024,4096")]
    num_envs: Vec<usize>,
    /// Worker threads.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Semantics mode.
    #[arg(long, value_enum, default_value = "o2arc")]
    mode: ModeArg,
    /// Observation layout: compact or full.
    #[arg(long, default_value = "compact")]
    layout: Layout,
    /// Selection form of the random actions.
    #[arg(long, default_value = "mask")]
    sel: SelKind,
    /// Canvas side (5, 10 or 30).
    #[arg(long, default_value_t = 30)]
    canvas: usize,
    /// Seconds to time each batch size.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Skip the per-operation table.
    #[arg(long)]
    no_ops: bool,
    /// Batched kernel: rows (VecEnv, every mode and canvas) or lanes (the structure-of-arrays
    /// kernel, jaxarc modes with canvas 5 or 10). Default: lanes where it applies, from 16 envs.
    #[arg(long)]
    kernel: Option<bench::Kernel>,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    source: Source,
}

fn bench(a: BenchArgs) -> Result<()> {
    let bank = a.source.bank(a.json)?;
    let task = a.source.task.as_ref().map(|id| a.source.find(&bank, id)).transpose()?;
    let p = params(a.mode, a.layout);
    let kind = a.sel;
    kestrel_arc::with_canvas!(a.canvas, S => {
        let env = env_for::<S>(bank, task.as_ref())?;
        env.validate(&p)?;
        let obs_bytes = kestrel_core::Env::spec(&env, &p).obs_len();
        let pool = pool(a.threads)?;
        let mut rows = Vec::new();
        for &n in &a.num_envs {
            let kernel = a.kernel.unwrap_or(bench::Kernel::auto::<S>(&p, n));
            let sps = pool.install(|| bench::steps_per_second::<S>(&env, &p, n, kind, a.seconds, kernel))?;
            rows.push((n, sps, kernel));
            if !a.json {
                outln!("{:>8} envs  {:>14.0} steps/s  {:>8.1} ns/step  {:>8.2} GB/s obs written  ({kernel:?})",
                    n, sps, 1e9 / sps, sps * obs_bytes as f64 / 1e9);
            }
        }
        // The bound for the observation bytes: copying obs_len bytes per row from one
        // column into another, on the same threads (state must be read to write obs).
        let bounds: Vec<f64> = if p.layout == Layout::Full {
            a.num_envs.iter().map(|&n| pool.install(|| bench::copy_bound(n, obs_bytes, a.seconds))).collect()
        } else {
            Vec::new()
        };
        if !a.json && !bounds.is_empty() {
            outln!("\nmemory-bandwidth bound for {obs_bytes} B/step (row copy, same threads):");
            for ((n, sps, _), b) in rows.iter().zip(&bounds) {
                outln!("{:>8} envs  bound {:>12.0} steps/s  ({:.2} GB/s)  env at {:.2} of the bound ({:.2}x from it)",
                    n, b, b * obs_bytes as f64 / 1e9, sps / b, b / sps);
            }
        }
        let ops = if a.no_ops { Vec::new() } else { bench::op_costs::<S>(&env, &p, kind) };
        if a.json {
            outln!("{}", json!({
                "canvas": S, "mode": format!("{:?}", a.mode), "layout": format!("{:?}", a.layout),
                "sel": format!("{:?}", a.sel), "threads": a.threads, "tasks": env.bank().len(),
                "obs_bytes": obs_bytes,
                "batches": rows.iter().map(|(n, s, k)| json!({"num_envs": n, "steps_per_s": s, "kernel": format!("{k:?}")})).collect::<Vec<_>>(),
                "copy_bound_steps_per_s": bounds,
                "ops_ns": ops,
            }));
        } else if !ops.is_empty() {
            let names = if p.mode == Mode::O2arc { &O2ARC_OPS } else { &JAXARC_OPS };
            outln!("\nper-operation cost (one env, one thread, random {:?} selections, sampling included):", a.sel);
            for (i, ns) in ops.iter().enumerate() {
                out!("{:>3} {:<14}{:>8.1} ns{}", i, names[i], ns, if i % 3 == 2 { "\n" } else { "   " });
            }
            outln!();
        }
    }, else bail!("--canvas {}: supported canvas sizes are 5, 10 and 30", a.canvas));
    Ok(())
}

// ------------------------------------------------------------------------------------
// show

#[derive(Args)]
pub struct ShowArgs {
    /// Task id (from --data, or a generator id such as symmetry-3).
    #[arg(value_name = "TASK")]
    id: String,
    /// PNG output path (default: `<task>.png`).
    #[arg(long)]
    png: Option<PathBuf>,
    /// Pixels per cell in the PNG (1 to 64).
    #[arg(long, default_value_t = 16)]
    cell: usize,
    #[command(flatten)]
    source: Source,
}

/// Encodes an RGB image as PNG and writes it atomically.
fn write_png(path: &Path, w: usize, h: usize, rgb: &[u8]) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, w as u32, h as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()?.write_image_data(rgb)?;
    }
    Ok(kestrel_run::write_atomic(path, &bytes)?)
}

fn show(a: ShowArgs) -> Result<()> {
    let bank = if a.source.data.is_some() { a.source.bank(false)? } else { TaskBank::default() };
    let t = a.source.find(&bank, &a.id)?;
    outln!(
        "task {} ({}): {} train, {} test pairs",
        t.id,
        if t.group.is_empty() { "-" } else { &t.group },
        t.train.len(),
        t.test.len()
    );
    // Colours only on a terminal; digits otherwise (a file or a pipe gets no escape codes).
    if std::io::stdout().is_terminal() {
        out!("{}", render::ansi_task(&t));
    } else {
        out!("{}", render::text_task(&t));
    }
    let path = a.png.unwrap_or_else(|| PathBuf::from(format!("{}.png", t.id.replace('/', "_"))));
    if !(1..=64).contains(&a.cell) {
        bail!("invalid --cell = {}: 1 to 64 pixels per cell", a.cell);
    }
    let (w, h, img) = render::task_image(&t, a.cell);
    write_png(&path, w, h, &img)?;
    outln!("wrote {} ({w}x{h})", path.display());
    Ok(())
}

// ------------------------------------------------------------------------------------
// demo

#[derive(Args)]
pub struct DemoArgs {
    /// Parallel environments.
    #[arg(long, default_value_t = 1024)]
    pub num_envs: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Batched random rollouts over generated tasks for `a.seconds`: the ARC part of the demo.
/// Returns (steps per second, episodes ended, solved by the random policy).
pub fn throughput(a: &DemoArgs) -> Result<(f64, u64, u64)> {
    const S: usize = 30;
    let cfg = GenConfig { max_side: 30, ..GenConfig::default() };
    let bank = generate_bank(&Family::ALL, 64, a.seed, &cfg)?;
    outln!(
        "ARC: {} generated tasks from {} families (no dataset needed), {} envs, 30x30 canvas, o2arc semantics",
        bank.len(),
        Family::ALL.len(),
        a.num_envs
    );
    let env = ArcEnv::<S>::new(Arc::new(bank))?;
    let p = ArcParams::default();
    let pool = crate::common::pool(a.threads)?;
    let r = pool.install(|| bench::random_rollouts(env, p, a.num_envs, a.seconds, a.seed))?;
    let rate = r.steps as f64 / r.seconds;
    outln!(
        "{} steps in {:.2} s: {:.2} M steps/s on {} threads; {} episodes ended ({} truncated at 150, {} solved by the random policy)",
        r.steps,
        r.seconds,
        rate / 1e6,
        pool.current_num_threads(),
        r.episodes,
        r.truncated,
        r.solved
    );
    Ok((rate, r.episodes, r.solved))
}

pub fn run(c: ArcCmd) -> Result<()> {
    match c {
        ArcCmd::Bench(a) => bench(a),
        ArcCmd::Replay(a) => a.run(),
        ArcCmd::Show(a) => show(a),
        ArcCmd::Rollout(a) => a.run(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modes map to the library's params (JaxARC's bugs only with `jaxarc-bugs`), keeping
    /// the layout.
    #[test]
    fn modes_map_to_the_librarys_params() {
        assert_eq!(params(ModeArg::O2arc, Layout::Full).mode, Mode::O2arc);
        let j = params(ModeArg::Jaxarc, Layout::Full);
        assert_eq!((j.mode, j.layout, j.bugs), (Mode::Jaxarc, Layout::Full, JaxBugs::default()));
        assert_eq!(params(ModeArg::JaxarcBugs, Layout::Compact).bugs, JaxBugs::all());
    }

    /// A canvas keeps the tasks that fit and drops the rest; a chosen task replaces the bank;
    /// a bank with nothing that fits is an error, not an empty env.
    #[test]
    fn env_for_keeps_the_fitting_tasks_and_refuses_none() {
        let tasks = |lo, hi, seed| {
            let cfg = GenConfig { min_side: lo, max_side: hi, ..GenConfig::default() };
            generate_bank(&Family::ALL, 1, seed, &cfg).unwrap().tasks().to_vec()
        };
        let (small, big) = (tasks(3, 5, 1), tasks(9, 12, 2));
        let bank = TaskBank::from_tasks(small.iter().chain(&big).cloned().collect());
        // Every big task is dropped (at least 9 a side); small ones stay unless a family
        // scales its output past 5.
        let kept = env_for::<5>(bank.clone(), None).unwrap().bank().len();
        assert!(kept > 0 && kept <= small.len(), "{kept} of {} small tasks", small.len());
        assert_eq!(
            env_for::<30>(bank.clone(), None).unwrap().bank().len(),
            small.len() + big.len()
        );
        assert_eq!(env_for::<30>(bank, Some(&big[0])).unwrap().bank().len(), 1);
        let none = TaskBank::from_tasks(big);
        assert!(env_for::<5>(none, None).is_err());
    }

    /// The PNG writer writes a file the decoder reads back pixel for pixel.
    #[test]
    fn pngs_read_back_as_written() {
        let path = std::env::temp_dir().join(format!("kestrel-cli-png-{}.png", std::process::id()));
        let rgb: Vec<u8> = (0..3 * 4 * 2).map(|i| (i * 10) as u8).collect();
        write_png(&path, 4, 2, &rgb).unwrap();
        let mut dec =
            png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&path).unwrap()))
                .read_info()
                .unwrap();
        let mut buf = vec![0; dec.output_buffer_size()];
        let info = dec.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (4, 2));
        assert_eq!(&buf[..info.buffer_size()], &rgb[..]);
        std::fs::remove_file(&path).unwrap();
    }
}
