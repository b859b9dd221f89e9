//! Episodes of the ARC environment under a random or scripted policy (`kestrel arc rollout`):
//! every episode's task, pair, return, ending and actions as one line of `episodes.jsonl`,
//! which `kestrel arc replay` plays back. The environment is `ARC-v0` (or `ARC-jaxarc-v0`) as
//! the env registry builds it ([`ArcConfig`]); the episode loop is `kestrel_arc::trace::play`.

use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::summary::Summary;
use kestrel_arc::{ArcAction, ArcConfig, ModeKind, SelKind, Selection, sample_action, trace};
use kestrel_core::{Budget, Env, Key};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `kestrel arc rollout`'s config: the environment, the tasks and the policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct ArcRolloutConfig {
    /// The environment, as the env registry's `ARC-v0` reads it (`kestrel config ARC-v0`):
    /// `canvas`, `data` (empty: generated tasks), `split`, `max_episode_steps` (at least 1
    /// here: the random policy rarely submits a solution), rewards, ….
    #[documented(nested)]
    pub env: ArcConfig,
    /// Rules: `o2arc` (ARCLE's `O2ARCv2Env` 0.2.6, `ARC-v0`) or `jaxarc` (JaxARC 1.0.3,
    /// `ARC-jaxarc-v0`; `env.bugs = "all"` switches its bugs back on).
    pub mode: ModeKind,
    /// Only this task: an id of `env.data` (`id` or `group/id`) or a generator id
    /// (`symmetry-3`); empty: every task of the bank, drawn per episode.
    pub task: String,
    /// Episodes.
    pub episodes: u64,
    /// The random policy's selection: `mask` (i.i.d. cells), `bbox` or `point`.
    pub sel: SelKind,
    /// A scripted policy instead of the random one: a JSON file holding a list of actions
    /// (`{"op": K, "mask" | "bbox" | "point": …}`) played in order, then Submit; empty: random.
    pub script: PathBuf,
    /// Seed: episode `e` resets from `Key::new(seed).fold_in(e)`, its random actions from
    /// that key's `fold_in(1)`.
    pub seed: u64,
}

impl Default for ArcRolloutConfig {
    fn default() -> Self {
        ArcRolloutConfig {
            env: ArcConfig::default(),
            mode: ModeKind::O2arc,
            task: String::new(),
            episodes: 8,
            sel: SelKind::BBox,
            script: PathBuf::new(),
            seed: 0,
        }
    }
}

/// The `arc-rollout` run kind.
pub struct ArcRollout;

impl Run for ArcRollout {
    const NAME: &'static str = "arc-rollout";
    const COMMAND: &'static str = "arc rollout";
    const ABOUT: &'static str = "Runs episodes with a random or scripted policy into a run folder (`episodes.jsonl`, which `arc replay` reads back).";
    const METRICS: &'static [&'static str] = &["mean_return", "mean_steps"];
    const CURVE: &'static str = "return";
    type Config = ArcRolloutConfig;

    fn defaults(_: Option<&ArcRolloutConfig>) -> ArcRolloutConfig {
        ArcRolloutConfig::default()
    }

    fn outputs(_: &ArcRolloutConfig) -> Outputs {
        Outputs::new(
            &["episodes", "mean_return", "mean_steps", "terminated", "truncated"],
            &["episode", "pair", "return", "steps"],
        )
    }

    /// The environment's params and the episode count; the tasks and the script are read (and
    /// refused by name) when the run starts, before its folder exists.
    fn validate(c: &ArcRolloutConfig) -> Result<(), RunError> {
        c.env.params(c.mode)?;
        if c.env.max_episode_steps == 0 {
            let e = kestrel_core::Invalid::new("env.max_episode_steps", 0, "at least 1");
            return Err(e.into());
        }
        if !(1..=10_000_000).contains(&c.episodes) {
            return Err(kestrel_core::Invalid::new("episodes", c.episodes, "1 to 10000000").into());
        }
        Ok(())
    }

    /// The task bank (a loaded dataset, or the generated tasks) and one episode's actions,
    /// kept and written as JSON (a mask action is `canvas²` numbers of about 48 bytes each).
    fn budget(c: &ArcRolloutConfig, _threads: usize) -> Budget {
        let mut b = Budget::new();
        super::fixed(&mut b);
        if c.env.data.is_empty() {
            let all = kestrel_arc::generator::Family::ALL.len();
            let families =
                if c.env.families.is_empty() { all } else { c.env.families.len() } as u128;
            let tasks = (c.env.tasks_per_family as u128).saturating_mul(families);
            b.add("task bank", "env.tasks_per_family, env.families", tasks, 20 << 10);
        } else {
            super::data_bank(&mut b, &c.env.data);
        }
        let cells = (c.env.canvas as u128).saturating_mul(c.env.canvas as u128);
        b.add(
            "one episode's actions and their JSON",
            "env.max_episode_steps, env.canvas",
            c.env.max_episode_steps as u128,
            cells.saturating_mul(48).saturating_add(256),
        );
        b
    }

    fn run(c: ArcRolloutConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        let canvas = c.env.canvas;
        kestrel_arc::with_canvas!(canvas, S => rollout::<S>(c, launch),
            else Err(kestrel_core::Invalid::new("env.canvas", canvas, "5, 10 or 30").into()))
    }
}

/// Notes in the run's record (and to the person watching) the tasks left out for not fitting
/// the canvas.
pub(crate) fn dropped_note<const S: usize>(
    launch: &mut Launch<'_>,
    dir: &mut crate::record::RunDir,
    dropped: &[String],
) -> Result<(), RunError> {
    let Some(first) = dropped.first() else { return Ok(()) };
    let n = dropped.len();
    launch.note(
        dir,
        "tasks",
        &format!("{n} tasks larger than the {S}x{S} canvas left out (first: {first})"),
    )
}

/// The script's actions, read and checked before the folder exists.
fn script<const S: usize>(path: &Path) -> Result<Vec<ArcAction<S>>, RunError> {
    let text = crate::base::read_text(path)?;
    let list: Vec<Value> = serde_json::from_str(&text).map_err(|e| RunError::Config {
        source_name: path.display().to_string(),
        message: format!("expected a JSON list of actions: {e}"),
    })?;
    let at = |i: usize| format!("{} action {i}", path.display());
    Ok(list
        .iter()
        .enumerate()
        .map(|(i, v)| trace::action_from_json::<S>(v, &at(i)))
        .collect::<Result<_, _>>()?)
}

/// Runs `c.episodes` episodes into a new folder: `episodes.jsonl` (one line per episode: task,
/// pair, split, steps, return, ending, actions), `metrics.jsonl`, `summary.md/json`.
fn rollout<const S: usize>(c: ArcRolloutConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    let p = c.env.params(c.mode)?;
    let (env, dropped) = c.env.env::<S>(c.env.bank()?, &c.task)?;
    let scripted =
        if c.script.as_os_str().is_empty() { None } else { Some(script::<S>(&c.script)?) };
    let (mut dir, mut metrics) = start(&launch, "arc", "rollout", c.seed, &c)?;
    let mut launch = launch;
    if let Err(e) = dropped_note::<S>(&mut launch, &mut dir, &dropped) {
        return finish(dir, Err(e));
    }
    let r = (|| -> Result<String, RunError> {
        let path = dir.join("episodes.jsonl");
        let file =
            std::fs::File::create(&path).map_err(|e| RunError::io(&path, "cannot create", e))?;
        let mut out = std::io::BufWriter::new(file);
        let mut obs = vec![0i8; env.spec(&p).obs_len()];
        let mut progress = launch.progress(c.episodes, "episodes");
        let submit = ArcAction { op: 34, sel: Selection::Mask([0; S]) };
        let (mut sum_return, mut sum_steps, mut terminated, mut truncated) =
            (0.0, 0u64, 0u64, 0u64);
        let mut done = 0u64;
        for e in 0..c.episodes {
            let key = Key::new(c.seed).fold_in(e);
            let s = env.reset(&p, key, &mut obs);
            let (task, pair) = (env.bank().tasks()[s.task as usize].id.clone(), s.pair);
            let mut rng = key.fold_in(1).rng();
            // Ends at termination, at the step limit (truncated), or after a script's Submit.
            let r = trace::play(&env, &p, s, p.max_episode_steps, |t| match &scripted {
                Some(sc) => sc.get(t).copied().or((t == sc.len()).then_some(submit)),
                None => Some(sample_action::<S>(&mut rng, c.sel)),
            });
            let ret: f64 = r.rewards.iter().map(|&x| x as f64).sum();
            let actions: Vec<Value> = r.actions.iter().map(trace::action_to_json).collect();
            let line = json!({"episode": e, "task": task, "pair": pair, "test": c.env.split == kestrel_arc::SplitKind::Test,
                "steps": r.state.steps, "return": ret, "terminated": r.terminated,
                "truncated": r.truncated, "actions": actions});
            writeln!(out, "{line}").map_err(|e| RunError::io(&path, "cannot write", e))?;
            metrics.log(
                e + 1,
                json!({"episode": e, "pair": pair, "return": ret, "steps": r.state.steps}),
            )?;
            (sum_return, sum_steps) = (sum_return + ret, sum_steps + r.state.steps as u64);
            terminated += u64::from(r.terminated);
            truncated += u64::from(r.truncated);
            done = e + 1;
            if !progress.tick(done, "") {
                break;
            }
        }
        out.flush().map_err(|e| RunError::io(&path, "cannot write", e))?;
        metrics.finish()?;
        progress.stopped()?;
        let n = done.max(1) as f64;
        Summary::new(format!("arc rollout: {done} episodes, {:?} rules", c.mode))
            .value("episodes", "episodes", done)
            .value("mean_return", "return per episode, mean", sum_return / n)
            .value("mean_steps", "steps per episode, mean", sum_steps as f64 / n)
            .value("terminated", "episodes the environment ended", terminated)
            .value("truncated", "episodes cut at the step limit", truncated)
            .value("commit", "commit", COMMIT)
            .file("config.toml", "the rollout: environment, tasks, policy, seed")
            .file("episodes.jsonl", "one line per episode: task, pair, return, ending, actions")
            .file("metrics.jsonl", "one line per episode: return and steps")
            .write(dir.path())?;
        Ok(format!(
            "{done} episodes: mean return {:.3}, {terminated} ended by the environment, {truncated} truncated; run folder {}",
            sum_return / n,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}
