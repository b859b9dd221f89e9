//! `kestrel arc ...` and the ARC part of `kestrel demo`.

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Subcommand, ValueEnum};
use kestrel_arc::generator::{Family, GenConfig, generate_bank, generate_task};
use kestrel_arc::{
    ArcAction, ArcEnv, ArcParams, JAXARC_OPS, JaxBugs, Layout, LoadOptions, Mode, O2ARC_OPS,
    SelKind, Selection, Split, Task, TaskBank, render, sample_action,
};
use kestrel_core::{Key, VecEnv};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
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
    /// Replays action traces (JSONL) and prints each final state as JSONL.
    Replay(ReplayArgs),
    /// Shows a task: coloured terminal grids and a PNG of all pairs.
    Show(ShowArgs),
    /// Runs episodes with a random or scripted policy and writes them as JSONL.
    Rollout(RolloutArgs),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum ModeArg {
    O2arc,
    Jaxarc,
    /// JaxARC with every 1.0.3 bug switched back on.
    JaxarcBugs,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum SelArg {
    Mask,
    Bbox,
    Point,
}

impl From<SelArg> for SelKind {
    fn from(s: SelArg) -> SelKind {
        match s {
            SelArg::Mask => SelKind::Mask,
            SelArg::Bbox => SelKind::BBox,
            SelArg::Point => SelKind::Point,
        }
    }
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
        if let Some(i) = bank.find(id) {
            return Ok(bank.tasks()[i].clone());
        }
        let id = id.strip_prefix("gen:").unwrap_or(id);
        if let Some((fam, idx)) = id.rsplit_once('-')
            && let (Ok(f), Ok(i)) = (Family::parse(fam), idx.parse::<u64>())
        {
            return Ok(generate_task(f, i, self.gen_seed, &self.gen_cfg()));
        }
        bail!("task {id:?} is neither in the loaded data nor a generator id like symmetry-3")
    }
}

fn params(mode: ModeArg, layout: Layout) -> ArcParams {
    match mode {
        ModeArg::O2arc => ArcParams { layout, ..ArcParams::default() },
        ModeArg::Jaxarc => ArcParams { layout, ..ArcParams::jaxarc() },
        ModeArg::JaxarcBugs => ArcParams { layout, bugs: JaxBugs::all(), ..ArcParams::jaxarc() },
    }
}

/// Runs `$body` with `const S` bound to the canvas size.
macro_rules! with_canvas {
    ($canvas:expr, $S:ident => $body:expr) => {
        match $canvas {
            5 => {
                const $S: usize = 5;
                $body
            }
            10 => {
                const $S: usize = 10;
                $body
            }
            30 => {
                const $S: usize = 30;
                $body
            }
            other => bail!("--canvas {other}: supported canvas sizes are 5, 10 and 30"),
        }
    };
}

fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().context("building the thread pool")
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
    /// Observation layout.
    #[arg(long, value_enum, default_value = "compact")]
    layout: LayoutArg,
    /// Selection form of the random actions.
    #[arg(long, value_enum, default_value = "mask")]
    sel: SelArg,
    /// Canvas side (5, 10 or 30).
    #[arg(long, default_value_t = 30)]
    canvas: usize,
    /// Seconds to time each batch size.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Skip the per-operation table.
    #[arg(long)]
    no_ops: bool,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    source: Source,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq, Debug)]
pub enum LayoutArg {
    Compact,
    Full,
}

impl From<LayoutArg> for Layout {
    fn from(l: LayoutArg) -> Layout {
        match l {
            LayoutArg::Compact => Layout::Compact,
            LayoutArg::Full => Layout::Full,
        }
    }
}

/// Steps per second of `VecEnv<ArcEnv<S>>` with random actions sampled inside the loop.
pub fn time_batch<const S: usize>(
    env: &ArcEnv<S>,
    p: &ArcParams,
    n: usize,
    kind: SelKind,
    seconds: f64,
) -> Result<f64> {
    let mut v = VecEnv::new(env.clone(), p.clone(), n, 1)?;
    let policy = |_: usize, key: Key, _: &[i8], a: &mut [ArcAction<S>]| {
        a[0] = sample_action::<S>(&mut key.rng(), kind)
    };
    for _ in 0..3 {
        v.step_with(policy);
    }
    let mut iters = 1u64;
    let mut steps = 0u64;
    let t0 = Instant::now();
    loop {
        for _ in 0..iters {
            v.step_with(policy);
        }
        steps += iters * n as u64;
        let el = t0.elapsed().as_secs_f64();
        if el >= seconds {
            return Ok(steps as f64 / el);
        }
        iters = (iters * 2).min(1 << 20);
    }
}

fn bench(a: BenchArgs) -> Result<()> {
    let bank = a.source.bank(a.json)?;
    let task = a.source.task.as_ref().map(|id| a.source.find(&bank, id)).transpose()?;
    let p = params(a.mode, a.layout.into());
    let kind: SelKind = a.sel.into();
    with_canvas!(a.canvas, S => {
        let env = env_for::<S>(bank, task.as_ref())?;
        env.validate(&p)?;
        let obs_bytes = v_obs_len::<S>(&env, &p);
        let pool = pool(a.threads)?;
        let mut rows = Vec::new();
        for &n in &a.num_envs {
            let sps = pool.install(|| time_batch::<S>(&env, &p, n, kind, a.seconds))?;
            rows.push((n, sps));
            if !a.json {
                outln!("{:>8} envs  {:>14.0} steps/s  {:>8.1} ns/step  {:>8.2} GB/s obs written",
                    n, sps, 1e9 / sps, sps * obs_bytes as f64 / 1e9);
            }
        }
        // The bound for the observation bytes: copying obs_len bytes per row from one
        // column into another, on the same threads (state must be read to write obs).
        let bounds: Vec<f64> = if p.layout == Layout::Full {
            a.num_envs.iter().map(|&n| pool.install(|| copy_bound(n, obs_bytes, a.seconds))).collect()
        } else {
            Vec::new()
        };
        if !a.json && !bounds.is_empty() {
            outln!("\nmemory-bandwidth bound for {obs_bytes} B/step (row copy, same threads):");
            for ((n, sps), b) in rows.iter().zip(&bounds) {
                outln!("{:>8} envs  bound {:>12.0} steps/s  ({:.2} GB/s)  env at {:.2} of the bound ({:.2}x from it)",
                    n, b, b * obs_bytes as f64 / 1e9, sps / b, b / sps);
            }
        }
        let ops = if a.no_ops { Vec::new() } else { op_costs::<S>(&env, &p, kind) };
        if a.json {
            outln!("{}", json!({
                "canvas": S, "mode": format!("{:?}", a.mode), "layout": format!("{:?}", a.layout),
                "sel": format!("{:?}", a.sel), "threads": a.threads, "tasks": env.bank().len(),
                "obs_bytes": obs_bytes,
                "batches": rows.iter().map(|(n, s)| json!({"num_envs": n, "steps_per_s": s})).collect::<Vec<_>>(),
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
    });
    Ok(())
}

/// Rows per second at which `len` bytes per row can be copied between two columns of `n`
/// rows on the current pool: the memory-bandwidth bound of writing observations.
fn copy_bound(n: usize, len: usize, seconds: f64) -> f64 {
    use rayon::prelude::*;
    let src: Vec<i8> = (0..n * len).map(|i| i as i8).collect();
    let mut dst = vec![0i8; n * len];
    let block = n.div_ceil(rayon::current_num_threads() * 4).max(16);
    let pass = |dst: &mut [i8]| {
        dst.par_chunks_mut(block * len)
            .zip(src.par_chunks(block * len))
            .for_each(|(d, s)| d.copy_from_slice(s));
    };
    pass(&mut dst);
    let (mut rows, t0) = (0u64, Instant::now());
    while t0.elapsed().as_secs_f64() < seconds {
        pass(&mut dst);
        rows += n as u64;
    }
    std::hint::black_box(&dst);
    rows as f64 / t0.elapsed().as_secs_f64()
}

fn v_obs_len<const S: usize>(env: &ArcEnv<S>, p: &ArcParams) -> usize {
    kestrel_core::Env::spec(env, p).obs_len()
}

/// Nanoseconds per step of each op on one env (fresh episode every 50 steps).
fn op_costs<const S: usize>(env: &ArcEnv<S>, p: &ArcParams, kind: SelKind) -> Vec<f64> {
    let mut obs = vec![0i8; v_obs_len::<S>(env, p)];
    (0..kestrel_arc::NUM_OPS)
        .map(|op| {
            let mut rng = Key::new(op as u64).rng();
            let n = 20_000u32;
            let mut s = kestrel_core::Env::reset(env, p, Key::new(0), &mut obs);
            let t0 = Instant::now();
            for i in 0..n {
                if i % 50 == 0 {
                    s = env.init_state(p, s.task, s.pair, s.test, Key::new(i as u64));
                }
                let mut a = sample_action::<S>(&mut rng, kind);
                a.op = op;
                env.apply(p, &mut s, &a);
                env.write_obs(p, &s, &mut obs);
            }
            std::hint::black_box(&obs);
            t0.elapsed().as_nanos() as f64 / n as f64
        })
        .collect()
}

// ------------------------------------------------------------------------------------
// replay

#[derive(Args)]
pub struct ReplayArgs {
    /// JSONL trace: {"task": ID, "pair": I, "test": BOOL, "actions": [{"op": K, "mask"|"bbox"|"point": ...}]}.
    trace: PathBuf,
    /// Semantics mode.
    #[arg(long, value_enum, default_value = "o2arc")]
    mode: ModeArg,
    /// Canvas side (5, 10 or 30).
    #[arg(long, default_value_t = 30)]
    canvas: usize,
    /// ARCLE max_trial (-1 unlimited).
    #[arg(long, default_value_t = -1)]
    max_trials: i8,
    /// Step limit: a trace longer than this ends truncated.
    #[arg(long)]
    max_steps: Option<u32>,
    #[command(flatten)]
    source: Source,
}

fn parse_action<const S: usize>(v: &Value, at: &str) -> Result<ArcAction<S>> {
    let op = v.get("op").and_then(Value::as_i64).ok_or_else(|| {
        anyhow!(
            "{at}: field \"op\" must be an integer, got {}",
            v.get("op").unwrap_or(&Value::Null)
        )
    })?;
    let int = |x: &Value, f: &str| -> Result<i32> {
        x.as_i64()
            .map(|i| i as i32)
            .ok_or_else(|| anyhow!("{at}: field {f:?} must hold integers, got {x}"))
    };
    let sel = if let Some(m) = v.get("mask") {
        let rows = m
            .as_array()
            .ok_or_else(|| anyhow!("{at}: field \"mask\" must be a list of 0/1 rows, got {m}"))?;
        if rows.len() > S {
            bail!("{at}: field \"mask\" has {} rows; the canvas has {S}", rows.len());
        }
        let mut mask = [0u32; S];
        for (r, row) in rows.iter().enumerate() {
            let cells = row
                .as_array()
                .ok_or_else(|| anyhow!("{at}: mask row {r} must be a list, got {row}"))?;
            if cells.len() > S {
                bail!("{at}: mask row {r} has {} cells; the canvas has {S}", cells.len());
            }
            for (c, x) in cells.iter().enumerate() {
                if int(x, "mask")? != 0 {
                    mask[r] |= 1 << c;
                }
            }
        }
        Selection::Mask(mask)
    } else if let Some(b) = v.get("bbox") {
        let b = b
            .as_array()
            .filter(|b| b.len() == 4)
            .ok_or_else(|| anyhow!("{at}: field \"bbox\" must be [r1, c1, r2, c2], got {b}"))?;
        Selection::BBox {
            r1: int(&b[0], "bbox")?,
            c1: int(&b[1], "bbox")?,
            r2: int(&b[2], "bbox")?,
            c2: int(&b[3], "bbox")?,
        }
    } else if let Some(p) = v.get("point") {
        let p = p
            .as_array()
            .filter(|p| p.len() == 2)
            .ok_or_else(|| anyhow!("{at}: field \"point\" must be [row, col], got {p}"))?;
        Selection::Point { row: int(&p[0], "point")?, col: int(&p[1], "point")? }
    } else {
        Selection::Mask([0; S])
    };
    Ok(ArcAction { op: op as i32, sel })
}

fn replay(a: ReplayArgs) -> Result<()> {
    let bank = if a.source.data.is_some() { a.source.bank(false)? } else { TaskBank::default() };
    let file = std::fs::File::open(&a.trace)
        .with_context(|| format!("{}: cannot open", a.trace.display()))?;
    let out = std::io::stdout();
    let mut out = out.lock();
    with_canvas!(a.canvas, S => {
        for (ln, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("{}: line {}", a.trace.display(), ln + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let at = format!("{} line {}", a.trace.display(), ln + 1);
            let v: Value = serde_json::from_str(&line).with_context(|| format!("{at}: not JSON"))?;
            let id = v.get("task").and_then(Value::as_str).ok_or_else(|| anyhow!("{at}: field \"task\" must be a task id string"))?;
            let pair = v.get("pair").map_or(Ok(0), |p| p.as_u64().ok_or_else(|| anyhow!("{at}: field \"pair\" must be a non-negative integer, got {p}")))?;
            let test = v.get("test").map_or(Ok(false), |t| t.as_bool().ok_or_else(|| anyhow!("{at}: field \"test\" must be true or false, got {t}")))?;
            let actions = v.get("actions").and_then(Value::as_array).ok_or_else(|| anyhow!("{at}: field \"actions\" must be a list"))?;
            let task = a.source.find(&bank, id).with_context(|| at.clone())?;
            let n = if test { task.test.len() } else { task.train.len() } as u64;
            if pair >= n {
                bail!("{at}: pair {pair} out of range: task {id} has {n} {} pairs", if test { "test" } else { "train" });
            }
            let env = ArcEnv::<S>::new(Arc::new(TaskBank::from_tasks(vec![task]))).with_context(|| at.clone())?;
            let mut p = params(a.mode, Layout::Compact);
            p.max_trials = a.max_trials;
            let mut s = env.init_state(&p, 0, pair as u16, test, Key::new(0));
            let (mut rewards, mut terminated, mut truncated) = (Vec::new(), false, false);
            for (i, act) in actions.iter().enumerate() {
                let act = parse_action::<S>(act, &format!("{at}, action {i}"))?;
                let (r, term) = env.apply(&p, &mut s, &act);
                rewards.push(r);
                terminated = term;
                truncated = a.max_steps.is_some_and(|m| s.steps >= m);
                if terminated || truncated {
                    break;
                }
            }
            let (h, w) = (s.dims[0] as usize, s.dims[1] as usize);
            let grid: Vec<Vec<i8>> = (0..h).map(|r| s.grid[r][..w].to_vec()).collect();
            writeln!(out, "{}", json!({"task": id, "grid": grid, "dims": [h, w], "rewards": rewards,
                "terminated": terminated, "truncated": truncated, "steps": s.steps}))?;
        }
    });
    Ok(())
}

// ------------------------------------------------------------------------------------
// show

#[derive(Args)]
pub struct ShowArgs {
    /// Task id (from --data, or a generator id such as symmetry-3).
    #[arg(value_name = "TASK")]
    id: String,
    /// PNG output path (default: <task>.png).
    #[arg(long)]
    png: Option<PathBuf>,
    /// Pixels per cell in the PNG.
    #[arg(long, default_value_t = 16)]
    cell: usize,
    #[command(flatten)]
    source: Source,
}

pub fn write_png(path: &Path, w: usize, h: usize, rgb: &[u8]) -> Result<()> {
    let tmp = path.with_extension("png.tmp");
    {
        let f = std::fs::File::create(&tmp)
            .with_context(|| format!("{}: cannot create", tmp.display()))?;
        let mut enc = png::Encoder::new(std::io::BufWriter::new(f), w as u32, h as u32);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()?.write_image_data(rgb)?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
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
    out!("{}", render::ansi_task(&t));
    let path = a.png.unwrap_or_else(|| PathBuf::from(format!("{}.png", t.id.replace('/', "_"))));
    let (w, h, img) = render::task_image(&t, a.cell.clamp(1, 64));
    write_png(&path, w, h, &img)?;
    outln!("wrote {} ({w}x{h})", path.display());
    Ok(())
}

// ------------------------------------------------------------------------------------
// rollout

#[derive(Args)]
pub struct RolloutArgs {
    /// Episodes to run.
    #[arg(long, default_value_t = 8)]
    episodes: usize,
    /// Semantics mode.
    #[arg(long, value_enum, default_value = "o2arc")]
    mode: ModeArg,
    /// Random policy's selection form.
    #[arg(long, value_enum, default_value = "bbox")]
    sel: SelArg,
    /// Scripted policy: a JSON list of actions ({"op", "mask"|"bbox"|"point"}) played in
    /// order, then Submit; without it the policy is uniformly random.
    #[arg(long)]
    script: Option<PathBuf>,
    /// Step limit per episode.
    #[arg(long, default_value_t = 150)]
    max_steps: u32,
    /// Use test pairs instead of train pairs.
    #[arg(long)]
    test: bool,
    /// Canvas side (5, 10 or 30).
    #[arg(long, default_value_t = 30)]
    canvas: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output JSONL (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    source: Source,
}

fn rollout(a: RolloutArgs) -> Result<()> {
    let bank = a.source.bank(true)?;
    let task = a.source.task.as_ref().map(|id| a.source.find(&bank, id)).transpose()?;
    let script: Option<Vec<Value>> = match &a.script {
        Some(p) => Some(
            serde_json::from_slice(
                &std::fs::read(p).with_context(|| format!("{}: cannot read", p.display()))?,
            )
            .with_context(|| format!("{}: expected a JSON list of actions", p.display()))?,
        ),
        None => None,
    };
    let mut out: Box<dyn Write> = match &a.out {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("{}: cannot create", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    };
    with_canvas!(a.canvas, S => {
        let env = env_for::<S>(bank, task.as_ref())?;
        let mut p = params(a.mode, Layout::Compact);
        p.split = if a.test { Split::Test } else { Split::Train };
        let scripted: Option<Vec<ArcAction<S>>> = script.as_ref().map(|s| s.iter().enumerate()
            .map(|(i, v)| parse_action::<S>(v, &format!("script action {i}"))).collect::<Result<_>>()).transpose()?;
        let mut obs = vec![0i8; v_obs_len::<S>(&env, &p)];
        for e in 0..a.episodes {
            let key = Key::new(a.seed).fold_in(e as u64);
            let mut s = kestrel_core::Env::reset(&env, &p, key, &mut obs);
            let (task_id, pair) = (env.bank().tasks()[s.task as usize].id.clone(), s.pair);
            let mut rng = key.fold_in(1).rng();
            // Ends at termination, at --max-steps (truncated), or after a script's closing Submit.
            let (mut ret, mut terminated, mut truncated, mut actions) = (0.0f64, false, false, Vec::new());
            for t in 0.. {
                let act = match &scripted {
                    Some(sc) if t > sc.len() => break,
                    Some(sc) => sc.get(t).copied().unwrap_or(ArcAction { op: 34, sel: Selection::Mask([0; S]) }),
                    None => sample_action::<S>(&mut rng, a.sel.into()),
                };
                let (r, term) = env.apply(&p, &mut s, &act);
                ret += r as f64;
                actions.push(action_json(&act));
                terminated = term;
                truncated = s.steps >= a.max_steps;
                if terminated || truncated {
                    break;
                }
            }
            writeln!(out, "{}", json!({"episode": e, "task": task_id, "pair": pair, "test": a.test, "steps": s.steps,
                "return": ret, "terminated": terminated, "truncated": truncated, "actions": actions}))?;
        }
    });
    out.flush()?;
    Ok(())
}

fn action_json<const S: usize>(a: &ArcAction<S>) -> Value {
    match a.sel {
        Selection::Mask(m) => {
            json!({"op": a.op, "mask": m.iter().map(|&r| (0..S).map(|c| r >> c & 1).collect::<Vec<_>>()).collect::<Vec<_>>()})
        }
        Selection::BBox { r1, c1, r2, c2 } => json!({"op": a.op, "bbox": [r1, c1, r2, c2]}),
        Selection::Point { row, col } => json!({"op": a.op, "point": [row, col]}),
    }
}

// ------------------------------------------------------------------------------------
// demo

#[derive(Args)]
pub struct DemoArgs {
    /// Parallel environments.
    #[arg(long, default_value_t = 1024)]
    num_envs: usize,
    /// Seconds to run.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn demo(a: DemoArgs) -> Result<()> {
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
    let pool = pool(
        a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
    )?;
    pool.install(|| -> Result<()> {
        let mut v = VecEnv::new(env, p, a.num_envs, a.seed)?;
        let policy = |_: usize, key: Key, _: &[i8], act: &mut [ArcAction<S>]| act[0] = sample_action::<S>(&mut key.rng(), SelKind::BBox);
        let (mut steps, mut episodes, mut solved, mut truncated) = (0u64, 0u64, 0u64, 0u64);
        let t0 = Instant::now();
        while t0.elapsed().as_secs_f64() < a.seconds {
            for _ in 0..16 {
                v.step_with(policy);
                steps += a.num_envs as u64;
                for i in 0..a.num_envs {
                    let (te, tr) = (v.terminated()[i], v.truncated()[i]);
                    episodes += (te || tr) as u64;
                    solved += (v.rewards()[i] > 0.0) as u64;
                    truncated += (tr && !te) as u64;
                }
            }
        }
        let el = t0.elapsed().as_secs_f64();
        outln!("{steps} steps in {el:.2} s: {:.2} M steps/s on {} threads; {episodes} episodes ended ({truncated} truncated at 150, {solved} solved by the random policy)",
            steps as f64 / el / 1e6, rayon::current_num_threads());
        Ok(())
    })
}

pub fn run(c: ArcCmd) -> Result<()> {
    match c {
        ArcCmd::Bench(a) => bench(a),
        ArcCmd::Replay(a) => replay(a),
        ArcCmd::Show(a) => show(a),
        ArcCmd::Rollout(a) => rollout(a),
    }
}
