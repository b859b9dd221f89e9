//! Greedy play of a trained treasure hunt (`kestrel hunt play`): the run's learners from its
//! checkpoint act with ε = 0 and learn nothing, for a few epochs from fresh worlds; the folder
//! holds every agent's reward per epoch and the first epoch's turns as one picture. The
//! training it reads is [`super::hunt`]'s.

use super::hunt::{Hunt, HuntRun, HuntRunConfig, sheet};
use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::resume::Resumable;
use crate::run::{Outputs, Run};
use crate::summary::Summary;
use kestrel_core::{Budget, Key};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

/// `kestrel hunt play`'s config: the run played and the worlds it plays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct HuntPlayConfig {
    /// The `kestrel hunt train` run folder played: its `config.toml` and `checkpoint/` (the
    /// newest complete, verified set).
    pub run: PathBuf,
    /// Epochs played, each from a fresh world (epoch `i` from `Key::new(seed).fold_in(i)`).
    pub epochs: u64,
    /// Seed of the played worlds.
    pub seed: u64,
}

impl Default for HuntPlayConfig {
    fn default() -> Self {
        HuntPlayConfig { run: PathBuf::new(), epochs: 1, seed: 0 }
    }
}

/// The training config of the run in `dir`, read as that run read it (`super::source_config`).
fn source(dir: &Path) -> Result<HuntRunConfig, RunError> {
    super::source_config::<Hunt>(dir)
}

/// The `hunt-play` run kind.
pub struct HuntPlay;

impl Run for HuntPlay {
    const NAME: &'static str = "hunt-play";
    const COMMAND: &'static str = "hunt play";
    const ABOUT: &'static str = "Greedy play of a trained run's checkpoint: rewards per epoch, the first epoch's turns in one picture.";
    const METRICS: &'static [&'static str] = &["mean_reward"];
    const CURVE: &'static str = "mean_reward";
    type Config = HuntPlayConfig;

    fn defaults(_: Option<&HuntPlayConfig>) -> HuntPlayConfig {
        HuntPlayConfig::default()
    }

    /// Per epoch its mean reward over agents and each agent's (`reward_agent_0`, …); the
    /// summary holds their means over the epochs. The agents are the played run's.
    fn outputs(c: &HuntPlayConfig) -> Outputs {
        let agents = source(&c.run).map_or(0, |s| s.env.num_agents);
        let each: Vec<String> = (0..agents).map(|i| format!("reward_agent_{i}")).collect();
        Outputs::new(&["epochs", "epochs_trained", "mean_reward"], &["epoch", "mean_reward"])
            .summary(each.clone())
            .columns(each)
    }

    /// The run folder is read (and refused by name) when the run starts, before its own
    /// folder exists.
    fn validate(c: &HuntPlayConfig) -> Result<(), RunError> {
        if !(1..=100_000).contains(&c.epochs) {
            return Err(kestrel_core::Invalid::new("epochs", c.epochs, "1 to 100000").into());
        }
        Ok(())
    }

    /// The played run's learners and worlds (its training estimate, which holds them with
    /// their replay buffers: more than play needs) and the first epoch's frames.
    fn budget(c: &HuntPlayConfig, threads: usize) -> Budget {
        let src = source(&c.run).unwrap_or_default();
        let mut b = src.budget(threads);
        let cells = (src.env.height as u128).saturating_mul(src.env.width as u128);
        b.add(
            "the first epoch's frames",
            "the run's env.max_turns, height, width",
            src.env.max_turns as u128,
            cells.saturating_add(24),
        );
        b
    }

    fn run(c: HuntPlayConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

/// Plays `c.epochs` greedy epochs of the run in `c.run` into a new folder: `metrics.jsonl`
/// (one line per epoch), `play.png/svg` (the first epoch's turns, world 0), `summary.md/json`.
pub fn run(c: HuntPlayConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    HuntPlay::validate(&c)?;
    let src = source(&c.run)?;
    let ckpt = c.run.join("checkpoint");
    let Some((played, _)) = HuntRun::latest(&src, &ckpt, &crate::run::stamp::<Hunt>(&src))? else {
        return Err(RunError::Failed(format!(
            "{}: no complete checkpoint to play",
            ckpt.display()
        )));
    };
    let (dir, mut metrics) = start(&launch, "hunt", "play", c.seed, &c)?;
    let mut launch = launch;
    let r = (|| -> Result<String, RunError> {
        let trained = played.hunt.epoch;
        let agents = src.env.num_agents;
        let mut progress = launch.progress(c.epochs, "epochs");
        let mut totals = vec![0.0f64; agents];
        for e in 0..c.epochs {
            let mut frames = Vec::new();
            let rewards = played.hunt.play(Key::new(c.seed).fold_in(e), |w| {
                if e == 0 {
                    frames.push(w[0].cells.clone());
                }
            })?;
            if e == 0 {
                let title = format!("greedy play after {trained} epochs (seed {})", c.seed);
                sheet(&src.env, &frames, &title).save(&dir.join("play"))?;
            }
            let mean = rewards.iter().sum::<f64>() / agents.max(1) as f64;
            let mut line = json!({"epoch": e, "mean_reward": mean});
            for (i, r) in rewards.iter().enumerate() {
                line[format!("reward_agent_{i}")] = json!(r);
                totals[i] += r;
            }
            metrics.log(e + 1, line)?;
            if !progress.tick(e + 1, &format!("mean reward {mean:.1}")) {
                break;
            }
        }
        metrics.finish()?;
        progress.stopped()?;
        let n = c.epochs as f64;
        let mean = totals.iter().sum::<f64>() / n / agents.max(1) as f64;
        let mut summary = Summary::new(format!("hunt play of {}", c.run.display()))
            .value("epochs", "epochs played", c.epochs)
            .value("epochs_trained", "epochs the run had trained", trained)
            .value("mean_reward", "reward per agent and epoch, mean", mean);
        for (i, t) in totals.iter().enumerate() {
            summary = summary.value(
                &format!("reward_agent_{i}"),
                &format!("agent {i}: reward per epoch, mean"),
                t / n,
            );
        }
        summary
            .value("commit", "commit", COMMIT)
            .file("config.toml", "the play: the run folder, epochs and seed")
            .file("metrics.jsonl", "one line per epoch: every agent's reward")
            .file("play.png", "the first epoch's turns (world 0), left to right and down")
            .write(dir.path())?;
        let each: Vec<String> = totals.iter().map(|t| format!("{:.0}", t / n)).collect();
        Ok(format!(
            "rewards per agent: {} (mean of {} epochs); run folder {}",
            each.join(", "),
            c.epochs,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}
