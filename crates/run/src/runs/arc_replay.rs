//! Action traces played back in the ARC environment (`kestrel arc replay`): human O2ARC
//! trajectories, or `arc rollout`'s `episodes.jsonl`, each line from its task's pair to its
//! last action; the folder holds every final grid with its rewards and ending. Every line is
//! read and checked (its task, pair and actions) before the folder exists.

use super::arc_rollout::dropped_note;
use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::summary::Summary;
use kestrel_arc::{ArcAction, ArcConfig, ArcEnv, ModeKind, TaskBank, trace};
use kestrel_core::{Budget, Key};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `kestrel arc replay`'s config: the traces and the environment they replay in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct ArcReplayConfig {
    /// The traces: JSONL, one episode a line, `{"task": ID, "pair": I, "test": BOOL,
    /// "actions": [{"op": K, "mask" | "bbox" | "point": …}]}` (`mask` 0/1 rows, `bbox` `[r1,
    /// c1, r2, c2]`, `point` `[row, col]`; no selection is an empty one).
    pub traces: PathBuf,
    /// The environment, as the env registry's `ARC-v0` reads it (`kestrel config ARC-v0`):
    /// `data` holds the traces' tasks (empty: generator ids such as `symmetry-3`), `canvas`,
    /// `max_trials`, `max_episode_steps` (0, the default here: none; a longer trace ends
    /// truncated); `split` is each line's own `test`.
    #[documented(nested)]
    pub env: ArcConfig,
    /// Rules: `o2arc` (ARCLE's `O2ARCv2Env` 0.2.6, as O2ARC's human traces were recorded) or
    /// `jaxarc`.
    pub mode: ModeKind,
}

impl Default for ArcReplayConfig {
    fn default() -> Self {
        ArcReplayConfig {
            traces: PathBuf::new(),
            env: ArcConfig { max_episode_steps: 0, max_trials: -1, ..ArcConfig::default() },
            mode: ModeKind::O2arc,
        }
    }
}

/// The `arc-replay` run kind.
pub struct ArcReplay;

impl Run for ArcReplay {
    const NAME: &'static str = "arc-replay";
    const COMMAND: &'static str = "arc replay";
    const ABOUT: &'static str =
        "Replays action traces (JSONL) into a run folder: each final state in `replays.jsonl`.";
    /// Replays draw nothing; the seed is that of the generated tasks the traces name.
    const SEED_KEY: &'static [&'static str] = &["env", "gen_seed"];
    const METRICS: &'static [&'static str] = &["mean_return", "terminated"];
    const CURVE: &'static str = "return";
    type Config = ArcReplayConfig;

    fn defaults(_: Option<&ArcReplayConfig>) -> ArcReplayConfig {
        ArcReplayConfig::default()
    }

    fn outputs(_: &ArcReplayConfig) -> Outputs {
        Outputs::new(
            &["traces", "mean_return", "terminated", "truncated"],
            &["line", "return", "steps"],
        )
    }

    /// The environment's params; the traces are read (and refused by file, line and field)
    /// when the run starts, before its folder exists.
    fn validate(c: &ArcReplayConfig) -> Result<(), RunError> {
        Ok(c.env.params(c.mode).map(drop)?)
    }

    /// What a replay holds, from one pass over the traces file: its text, the longest line
    /// parsed as JSON (the line's value and its copied actions: 32 bytes of `Value` per byte
    /// of text, measured), every checked action (`4 S + 8` bytes each, in vectors grown by
    /// doubling), a one-task environment per trace, and the task bank when `env.data` is set.
    fn budget(c: &ArcReplayConfig, _threads: usize) -> Budget {
        let mut b = Budget::new();
        super::fixed(&mut b);
        let t = scan_traces(&c.traces);
        b.add("the traces file's text", "the traces file's size", t.bytes, 1);
        b.add("the longest trace, parsed", "the traces file's longest line", t.longest, 32);
        let action = 2 * (4 * c.env.canvas as u128 + 8);
        b.add("the checked actions", "the actions in the traces file", t.actions, action);
        b.add("one task per trace", "the traces in the file", t.traces, 20 << 10);
        if !c.env.data.is_empty() {
            super::data_bank(&mut b, &c.env.data);
        }
        b
    }

    fn run(c: ArcReplayConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        let canvas = c.env.canvas;
        kestrel_arc::with_canvas!(canvas, S => replay::<S>(c, launch),
            else Err(kestrel_core::Invalid::new("env.canvas", canvas, "5, 10 or 30").into()))
    }
}

/// The sizes of a traces file [`ArcReplay`]'s budget counts (zeros for a file that cannot be
/// read: the run then fails on it with the reason).
#[derive(Default)]
struct TraceSizes {
    bytes: u128,
    longest: u128,
    actions: u128,
    traces: u128,
}

/// One pass over the traces file, a line at a time.
fn scan_traces(path: &Path) -> TraceSizes {
    use std::io::BufRead;
    let mut t = TraceSizes::default();
    let Ok(f) = std::fs::File::open(path) else { return t };
    for line in std::io::BufReader::new(f).split(b'\n').map_while(Result::ok) {
        t.bytes += line.len() as u128 + 1;
        t.longest = t.longest.max(line.len() as u128);
        t.actions += line.windows(4).filter(|w| w == b"\"op\"").count() as u128;
        t.traces += u128::from(line.iter().any(|c| !c.is_ascii_whitespace()));
    }
    t
}

/// One checked trace: the line it came from, its one-task environment, pair and actions.
struct Checked<const S: usize> {
    line: usize,
    env: ArcEnv<S>,
    pair: u16,
    test: bool,
    actions: Vec<ArcAction<S>>,
}

/// Every trace of the file, checked against its task.
fn read<const S: usize>(c: &ArcReplayConfig) -> Result<(Vec<Checked<S>>, Vec<String>), RunError> {
    if c.traces.as_os_str().is_empty() {
        return Err(RunError::Config {
            source_name: "traces".into(),
            message: "no traces: set `traces` to a JSONL file of action traces".into(),
        });
    }
    let text = crate::base::read_text(&c.traces)?;
    let bank = if c.env.data.is_empty() { TaskBank::default() } else { c.env.bank()? };
    let (mut out, mut dropped) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{} line {}", c.traces.display(), i + 1);
        let tl = trace::parse_trace_line(line, &at)?;
        let task =
            c.env.task(&bank, &tl.task).map_err(|e| RunError::Failed(format!("{at}: {e}")))?;
        let n = if tl.test { task.test.len() } else { task.train.len() };
        if usize::from(tl.pair) >= n {
            let split = if tl.test { "test" } else { "train" };
            return Err(RunError::Failed(format!(
                "{at}: pair {} out of range: task {} has {n} {split} pairs",
                tl.pair, tl.task
            )));
        }
        let mut one = TaskBank::from_tasks(vec![task]);
        dropped.extend(one.retain_fitting(S));
        let env =
            ArcEnv::<S>::new(Arc::new(one)).map_err(|e| RunError::Failed(format!("{at}: {e}")))?;
        let actions = tl
            .actions
            .iter()
            .enumerate()
            .map(|(k, v)| trace::action_from_json::<S>(v, &format!("{at}, action {k}")))
            .collect::<Result<Vec<_>, _>>()?;
        out.push(Checked { line: i + 1, env, pair: tl.pair, test: tl.test, actions });
    }
    Ok((out, dropped))
}

/// Plays every trace into a new folder: `replays.jsonl` (per trace: task, final grid and
/// dims, rewards, ending, steps), `metrics.jsonl`, `summary.md/json`.
fn replay<const S: usize>(c: ArcReplayConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    let p = c.env.params(c.mode)?;
    let (traces, dropped) = read::<S>(&c)?;
    let (mut dir, mut metrics) = start(&launch, "arc", "replay", c.env.gen_seed, &c)?;
    let mut launch = launch;
    if let Err(e) = dropped_note::<S>(&mut launch, &mut dir, &dropped) {
        return finish(dir, Err(e));
    }
    let r = (|| -> Result<String, RunError> {
        let path = dir.join("replays.jsonl");
        let file =
            std::fs::File::create(&path).map_err(|e| RunError::io(&path, "cannot create", e))?;
        let mut out = std::io::BufWriter::new(file);
        let mut progress = launch.progress(traces.len() as u64, "traces");
        let (mut sum, mut terminated, mut truncated) = (0.0, 0u64, 0u64);
        for (k, t) in traces.iter().enumerate() {
            let start = t.env.init_state(&p, 0, t.pair, t.test, Key::new(0));
            let r =
                trace::play(&t.env, &p, start, p.max_episode_steps, |i| t.actions.get(i).copied());
            let (h, w) = (r.state.dims[0] as usize, r.state.dims[1] as usize);
            let grid: Vec<Vec<i8>> = (0..h).map(|row| r.state.grid[row][..w].to_vec()).collect();
            let task = &t.env.bank().tasks()[0].id;
            let ret: f64 = r.rewards.iter().map(|&x| f64::from(x)).sum();
            let line = json!({"task": task, "grid": grid, "dims": [h, w], "rewards": r.rewards,
                "terminated": r.terminated, "truncated": r.truncated, "steps": r.state.steps});
            writeln!(out, "{line}").map_err(|e| RunError::io(&path, "cannot write", e))?;
            metrics.log(
                k as u64 + 1,
                json!({"line": t.line, "return": ret, "steps": r.state.steps}),
            )?;
            sum += ret;
            terminated += u64::from(r.terminated);
            truncated += u64::from(r.truncated);
            if !progress.tick(k as u64 + 1, "") {
                break;
            }
        }
        out.flush().map_err(|e| RunError::io(&path, "cannot write", e))?;
        metrics.finish()?;
        progress.stopped()?;
        let n = traces.len().max(1) as f64;
        Summary::new(format!("arc replay of {}", c.traces.display()))
            .value("traces", "traces played", traces.len())
            .value("mean_return", "return per trace, mean", sum / n)
            .value("terminated", "traces the environment ended", terminated)
            .value("truncated", "traces cut at the step limit", truncated)
            .value("commit", "commit", COMMIT)
            .file("config.toml", "the replay: the traces and the environment")
            .file("replays.jsonl", "per trace: task, final grid and dims, rewards, ending, steps")
            .file("metrics.jsonl", "per trace: its line, return and steps")
            .write(dir.path())?;
        Ok(format!(
            "{} traces: {terminated} ended by the environment, {truncated} truncated; run folder {}",
            traces.len(),
            dir.path().display()
        ))
    })();
    finish(dir, r)
}
