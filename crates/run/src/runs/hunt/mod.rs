//! Treasure-hunt training runs with their folders (`kestrel hunt train`, the Python package's
//! `kestrel.hunt.train`): episode sheets drawn off the training thread, checkpoints, exact
//! resume (greedy play of a trained run is [`super::hunt_play`]). The config ([`HuntRunConfig`]), its checks, its
//! memory budget and the epoch loop ([`HuntRun::run`]) are here, and the trainer (one epoch of
//! turns and updates over the worlds, its checkpoints: `trainer.rs`); the world and the IQN
//! learners are `kestrel-envs`' and `kestrel-agents`' parts.

mod trainer;

pub use trainer::{HuntAgent, HuntConfig, HuntEpochStats, HuntTrainer, TurnOrder};

use crate::base::{COMMIT, RunError};
use crate::launch::{Checkpoints, Launch, Outcome, finish};
use crate::resume::{Resumable, open};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_agents::AgentError;
use kestrel_core::Budget;
use kestrel_core::FromInvalid;
use kestrel_envs::treasure::TreasureObs;
use kestrel_envs::treasure::TreasureParams;
use kestrel_plot::{Anchor, LinePlot, Series, Sketch};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;

/// `kestrel hunt train`'s config: the world, the learners and the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct HuntRunConfig {
    /// The world: the env registry's `TreasureHunt-v0` params (`kestrel config
    /// TreasureHunt-v0`; `env.max_turns` is the epoch's length).
    #[documented(nested)]
    pub env: TreasureParams,
    /// Independent worlds played at once.
    pub num_worlds: usize,
    /// Gradient steps per agent after every epoch (sorrel: 1).
    pub updates_per_epoch: usize,
    /// Extra gradient steps per agent per turn (a ratio, e.g. 0.25).
    pub updates_per_turn: f64,
    /// Turn order.
    pub order: TurnOrder,
    /// Hidden width of the IQN.
    pub layer: usize,
    /// Gradient-step batch.
    pub batch_size: usize,
    /// Replay frames per agent and world.
    pub capacity: usize,
    /// n-step returns (sorrel: 1-step).
    pub n_step: usize,
    /// Prioritised replay (α 0.6, β 0.4).
    pub prioritized: bool,
    /// Adam learning rate (sorrel: 2.5e-4).
    pub lr: f64,
    /// ε at the start (sorrel: 0.6).
    pub epsilon: f64,
    /// ε ← ε (1 − epsilon_decay) after every epoch (sorrel: 0.0005).
    pub epsilon_decay: f64,
    /// Floor of ε (sorrel: 0, none).
    pub epsilon_min: f64,
    /// Discount (sorrel: 0.99).
    pub gamma: f64,
    /// Soft target update rate after every gradient step (sorrel: 0.001).
    pub tau: f64,
    /// Hard copy to the target network every this many epochs (sorrel: 200; 0: never).
    pub sync_epochs: u64,
    /// Quantile samples per state, for the prediction and for the target (sorrel: 12).
    pub num_quantiles: usize,
    /// Epochs in total (sorrel's default run is 1,001: its loop runs epochs + 1).
    pub epochs: u64,
    /// Seed.
    pub seed: u64,
    /// Record an epoch's frames every this many epochs (0: never).
    pub record_every: u64,
    /// Checkpoint every this many epochs (0: only at the end).
    pub checkpoint_every: u64,
}

impl Default for HuntRunConfig {
    fn default() -> Self {
        // The agent's knobs at sorrel's values, from the one place they are written.
        let iqn = kestrel_agents::iqn::IqnConfig::sorrel(0, 4);
        HuntRunConfig {
            lr: iqn.lr,
            epsilon: iqn.epsilon,
            epsilon_decay: iqn.epsilon_decay,
            epsilon_min: iqn.epsilon_min,
            gamma: iqn.gamma,
            tau: iqn.tau,
            sync_epochs: iqn.sync_epochs,
            num_quantiles: iqn.num_quantiles,
            // sorrel's main.py observes RGB.
            env: TreasureParams { obs: TreasureObs::Rgb, ..TreasureParams::default() },
            num_worlds: 1,
            updates_per_epoch: 1,
            updates_per_turn: 0.0,
            order: TurnOrder::Sequential,
            layer: 250,
            batch_size: 64,
            capacity: 1024,
            n_step: 1,
            prioritized: false,
            epochs: 1001,
            seed: 0,
            record_every: 50,
            checkpoint_every: 100,
        }
    }
}

impl HuntRunConfig {
    /// sorrel's `treasurehunt_mp` experiment (`sorrel/examples/treasurehunt_mp/main.py` on the
    /// `stag_hunt` branch at `2a24efc`, the working version; reference §2.5), in its sequential
    /// mode: a 10 × 10 world, 5 agents, gems only (value 10, spawn probability 0.02), vision
    /// radius 2, 50 turns an epoch, 1,000 epochs, batch 256, buffer 1,024, learning rate
    /// 2.5e-4, ε from 1 decaying by 0.001 per epoch with no floor (its `epsilon_min: 0.00`),
    /// one gradient step per agent per epoch, soft target updates (τ 0.001) and a hard copy
    /// every 200 epochs. Its IQN discounts by `GAMMA ** n_step` = 0.99³ while storing 1-step
    /// rewards, so `gamma` is 0.970299 here. Left as Kestrel's: the observation (its one-hot
    /// has a Sand channel and sums the two layers; Kestrel's is sorrel 1.6.0's), acting with
    /// 12 quantile samples (it acts greedily on 256), and learning in step with the turns
    /// (its multiprocessing learners run continuously, about 0.064 steps per agent per turn
    /// by its own measurement on one agent: set `updates_per_turn` to emulate that).
    pub fn treasurehunt_mp() -> Self {
        HuntRunConfig {
            env: TreasureParams {
                height: 10,
                width: 10,
                num_agents: 5,
                items: vec![kestrel_envs::TreasureItem::Gem],
                gem_value: 10.0,
                spawn_prob: 0.02,
                vision_radius: 2,
                obs: TreasureObs::OneHot,
                max_turns: 50,
                ..TreasureParams::default()
            },
            epochs: 1000,
            batch_size: 256,
            capacity: 1024,
            lr: 2.5e-4,
            epsilon: 1.0,
            epsilon_decay: 0.001,
            epsilon_min: 0.0,
            gamma: 0.970299,
            ..HuntRunConfig::default()
        }
    }

    /// The trainer's config (sorrel's defaults with this run's settings), validated (the world
    /// by [`HuntConfig::validate`]).
    pub fn hunt_config(&self) -> Result<HuntConfig, AgentError> {
        let mut c = HuntConfig::sorrel(self.env.clone());
        c.worlds = self.num_worlds;
        c.updates_per_epoch = self.updates_per_epoch;
        c.updates_per_turn = self.updates_per_turn;
        c.order = self.order;
        c.iqn.layer = self.layer;
        c.iqn.batch_size = self.batch_size;
        c.iqn.capacity = self.capacity;
        c.iqn.n_step = self.n_step;
        c.iqn.lr = self.lr;
        c.iqn.epsilon = self.epsilon;
        c.iqn.epsilon_decay = self.epsilon_decay;
        c.iqn.epsilon_min = self.epsilon_min;
        c.iqn.gamma = self.gamma;
        c.iqn.tau = self.tau;
        c.iqn.sync_epochs = self.sync_epochs;
        c.iqn.num_quantiles = self.num_quantiles;
        if self.prioritized {
            c.iqn.prioritized = Some(kestrel_replay::Prioritized::default());
        }
        c.validate()?;
        Ok(c)
    }
}

/// What a hunt run reports through `observe`.
pub enum HuntEvent<'a> {
    /// An epoch ended; `frames` holds world 0's cells after every turn when it was recorded.
    Epoch {
        /// The epoch's statistics.
        stats: &'a HuntEpochStats,
        /// Recorded frames (empty when not recorded).
        frames: Vec<Vec<u8>>,
    },
    /// A checkpoint is due: the observer writes it (`HuntTrainer::save_checkpoint`).
    Checkpoint {
        /// Epochs done.
        epoch: u64,
        /// The trainer.
        hunt: &'a HuntTrainer,
    },
}

/// A treasure-hunt training run: the trainer (fresh or resumed) and its run settings.
pub struct HuntRun {
    config: HuntRunConfig,
    /// The trainer.
    pub hunt: HuntTrainer,
}

impl HuntRun {
    /// A fresh run.
    pub fn new(config: HuntRunConfig) -> Result<Self, AgentError> {
        let hunt = HuntTrainer::new(config.hunt_config()?, config.seed)?;
        Ok(HuntRun { config, hunt })
    }

    /// The config.
    pub fn config(&self) -> &HuntRunConfig {
        &self.config
    }

    /// Trains epochs until `epochs` in total, recording world 0's frames every `record_every`
    /// epochs and asking for a checkpoint every `checkpoint_every`; `observe` may stop the run
    /// by returning `false`.
    pub fn run(
        &mut self,
        mut observe: impl FnMut(HuntEvent<'_>) -> Result<bool, AgentError>,
    ) -> Result<(), AgentError> {
        let c = &self.config;
        while self.hunt.epoch < c.epochs {
            let e = self.hunt.epoch;
            let record = c.record_every > 0 && e.is_multiple_of(c.record_every);
            let mut frames = Vec::new();
            let stats = self.hunt.run_epoch(|w| {
                if record {
                    frames.push(w[0].cells.clone());
                }
            })?;
            let go = observe(HuntEvent::Epoch { stats: &stats, frames })?;
            let done = e + 1;
            if c.checkpoint_every > 0 && done.is_multiple_of(c.checkpoint_every) {
                observe(HuntEvent::Checkpoint { epoch: done, hunt: &self.hunt })?;
            }
            if !go {
                break;
            }
        }
        Ok(())
    }
}

impl HuntRunConfig {
    /// The run's peak heap bytes as named terms: per agent its learner, replay buffers, agent
    /// buffers and workspaces; the worlds; the thread-local kernel buffers; and the larger of
    /// a recorded epoch's drawing with a checkpoint, or the end-of-run curves.
    pub fn budget(&self, threads: usize) -> Budget {
        let fd = self.env.obs_len() as f64;
        let sd = 5.0 * fd;
        let (l, bt, c) = (self.layer as f64, self.batch_size as f64, self.capacity as f64);
        let e = &self.env;
        let (agents, worlds, turns) =
            (e.num_agents as f64, self.num_worlds as f64, e.max_turns as f64);
        let (height, width) = (e.height as f64, e.width as f64);
        let q = self.num_quantiles as f64;
        let rq = q * bt;
        let p = 2.0 * l * l + l * (sd + 78.0) + 10.0;
        let k = l * l + 6.0 * l + 5.0;
        let learner = 20.0 * p + bt * (8.0 * sd + 26.0);
        let replay = worlds * (c * (4.0 * fd + 26.0) + 16.0 * runs::np2(c));
        let bufs = 4.0 * worlds * (sd + fd + 1.0);
        let ws = 4.0
            * (2.0 * (rq * (3.0 * l + 74.0) + bt * (sd + l) + 2.0 * k)
                + rq * (6.0 * l + 79.0)
                + bt * (sd + 2.0 * l)
                + 2.0 * k
                + l * l
                + l
                + q * worlds * (3.0 * l + 74.0)
                + worlds * (sd + l)
                + 7.0 * rq
                + 4.0 * bt.max(worlds));
        let per = format!("env.num_agents = {}", e.num_agents);
        let view = format!("env.obs = {:?}, env.vision_radius = {}", e.obs, e.vision_radius);
        let mut b = Budget::new();
        let mut add = |what: &'static str, fields: String, bytes: f64| {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        };
        add("run folder", "fixed".into(), 4.0 * 1048576.0);
        add(
            "IQN learners: parameters, targets, Adam, batch frames (iqn.rs)",
            format!("{per}, layer = {}, batch_size = {}, {view}", self.layer, self.batch_size),
            agents * learner,
        );
        add(
            "replay buffers (replay/frames.rs)",
            format!(
                "{per}, capacity = {}, num_worlds = {}, {view}",
                self.capacity, self.num_worlds
            ),
            agents * replay,
        );
        add(
            "IQN workspaces and agent buffers (iqn.rs, hunt.rs)",
            format!(
                "{per}, layer = {}, batch_size = {}, num_quantiles = {}, num_worlds = {}",
                self.layer, self.batch_size, self.num_quantiles, self.num_worlds
            ),
            agents * (ws + bufs),
        );
        add(
            "worlds (hunt.rs)",
            format!(
                "num_worlds = {}, env.height = {}, env.width = {}",
                self.num_worlds, e.height, e.width
            ),
            2.0 * worlds * height * width,
        );
        let kernels = (threads.min(e.num_agents) as f64 + 1.0)
            * (1048576.0 + 1024.0 * (l + 31.0) + 2048.0 * l);
        add(
            "thread-local kernel buffers",
            format!("threads = {threads}, layer = {}", self.layer),
            kernels,
        );
        let record = if self.record_every > 0 {
            let cell = 6.0 * width + 6.0;
            let (wd, hd) = (
                (10.0 * cell).min(16384.0),
                (cell * (turns / 10.0).ceil().max(1.0) + 30.0).min(16384.0),
            );
            let frames = turns * height * width;
            frames
                + 24.0 * runs::np2(turns)
                + 56.0 * runs::np2(frames + 1.0)
                + (6.0 * wd * hd + 524_288.0).max(1.5 * runs::np2(96.0 * frames))
        } else {
            0.0
        };
        // Agents are saved one at a time (the replay as f64, then the file); read back on resume.
        let ckpt = 2.0 * (16.0 * p).max(16.0 * worlds * c * (fd + 7.0)) + 8192.0;
        let epochs = self.epochs as f64;
        let curves = epochs * (12.0 * agents + 200.0);
        runs::largest(
            &mut b,
            vec![
                vec![
                    (
                        "a recorded epoch's frames and drawing (run/hunt.rs)",
                        format!(
                            "env.height = {}, env.width = {}, env.max_turns = {}, record_every = {}",
                            e.height, e.width, e.max_turns, self.record_every
                        ),
                        record,
                    ),
                    (
                        "checkpoint of one agent, written or read back (hunt.rs)",
                        format!(
                            "capacity = {}, num_worlds = {}, layer = {}",
                            self.capacity, self.num_worlds, self.layer
                        ),
                        ckpt,
                    ),
                ],
                vec![(
                    "reward curves and their plot",
                    format!("epochs = {}, {per}", self.epochs),
                    curves,
                )],
            ],
        );
        b
    }
}

/// Frames of one episode (one world) laid out in rows of 10, each cell 6 pixels.
pub(crate) fn sheet(p: &TreasureParams, frames: &[Vec<u8>], title: &str) -> Sketch {
    let px = 6.0;
    let (fw, fh) = (p.width as f64 * px + 6.0, p.height as f64 * px + 6.0);
    let per_row = 10usize;
    let rows = frames.len().div_ceil(per_row).max(1);
    let mut c = Sketch::new((fw * per_row as f64) as u32, (fh * rows as f64 + 30.0) as u32);
    c.text((4.0, 4.0), 16.0, title, [0, 0, 0], Anchor::TopLeft);
    for (k, f) in frames.iter().enumerate() {
        let (x0, y0) = ((k % per_row) as f64 * fw + 3.0, (k / per_row) as f64 * fh + 30.0);
        for r in 0..p.height {
            for q in 0..p.width {
                let v = f[r * p.width + q] as usize;
                let (x, y) = (x0 + q as f64 * px, y0 + r as f64 * px);
                c.rect(x, y, x + px, y + px, crate::render::TREASURE_RGB[v.min(5)]);
            }
        }
    }
    c
}

fn mean_last(v: &[f64], n: usize) -> f64 {
    let s = &v[v.len().saturating_sub(n)..];
    s.iter().sum::<f64>() / s.len().max(1) as f64
}

impl Resumable for HuntRun {
    type Kind = Hunt;
    const UNIT: &'static str = "epochs";
    fn fresh(c: &HuntRunConfig) -> Result<Self, RunError> {
        Ok(HuntRun::new(c.clone())?)
    }
    fn load(c: &HuntRunConfig, set: &Path) -> Result<Self, RunError> {
        let hunt = HuntTrainer::load_checkpoint(c.hunt_config()?, set)?;
        Ok(HuntRun { config: c.clone(), hunt })
    }
    fn done(&self) -> u64 {
        self.hunt.epoch
    }
}

/// The `hunt` run kind.
pub struct Hunt;

impl Run for Hunt {
    const NAME: &'static str = "hunt";
    const COMMAND: &'static str = "hunt train";
    const ABOUT: &'static str =
        "Train one IQN learner per agent (sorrel's treasure-hunt defaults).";
    const RESUMABLE: bool = true;
    const BUDGET: &'static str = "epochs, record_every and checkpoint_every";
    const METRICS: &'static [&'static str] = &["mean_total_reward_last_100"];
    const CURVE: &'static str = "total_reward";
    type Config = HuntRunConfig;

    fn defaults(_: Option<&HuntRunConfig>) -> HuntRunConfig {
        HuntRunConfig::default()
    }

    const PRESETS: &'static [&'static str] = &["treasurehunt_mp"];

    /// `treasurehunt_mp`: [`HuntRunConfig::treasurehunt_mp`].
    fn preset(name: &str) -> Option<HuntRunConfig> {
        (name == "treasurehunt_mp").then(HuntRunConfig::treasurehunt_mp)
    }

    fn without_budget(c: &HuntRunConfig) -> HuntRunConfig {
        HuntRunConfig { epochs: 0, record_every: 0, checkpoint_every: 0, ..c.clone() }
    }

    /// See [`HuntRunConfig::budget`].
    fn budget(c: &HuntRunConfig, threads: usize) -> kestrel_core::Budget {
        c.budget(threads)
    }

    fn outputs(_: &HuntRunConfig) -> Outputs {
        Outputs::new(&["epochs", "mean_total_reward_last_100"], &["epoch", "total_reward"])
    }

    fn validate(c: &HuntRunConfig) -> Result<(), RunError> {
        c.hunt_config()?;
        Ok(())
    }

    fn run(
        c: HuntRunConfig,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run(c, resume, launch)
    }
}

/// Validates `c` and trains into a new folder, or (with `resume`) continues the run in that
/// folder from its checkpoint: its saved `config.toml` is the truth, only `epochs`,
/// `record_every` and `checkpoint_every` may change. Writes `config.toml`, `record.json`,
/// `metrics.jsonl` (one line per epoch), `learning_curve.png/svg`, `episodes/`,
/// `checkpoint/`, `summary.md/json`.
pub fn run(
    c: HuntRunConfig,
    resume: Option<&Path>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let name = format!("{}a-{:?}", c.env.num_agents, c.env.obs);
    let (mut run, dir, mut metrics, stamp) =
        open::<HuntRun>(&mut launch, &c, resume, &name, c.seed)?;
    let r = (|| -> Result<String, RunError> {
        let c = run.config().clone();
        let world = run.hunt.cfg.world.clone();
        let episodes = dir.join("episodes");
        std::fs::create_dir_all(&episodes)
            .map_err(|e| RunError::io(&episodes, "cannot create", e))?;
        let n = world.num_agents;
        let mut progress = launch.progress(c.epochs, "epochs");
        let mut drawers = Vec::new();
        let start_epoch = run.hunt.epoch;
        let mut ckpts = Checkpoints::new(dir.path(), stamp, start_epoch);
        let t0 = std::time::Instant::now();
        {
            run.run(|e| {
                match e {
                    HuntEvent::Epoch { stats, frames } => {
                        let ep = stats.epoch;
                        let total: f64 = stats.reward.iter().sum();
                        if !frames.is_empty() {
                            // Drawn and written on a background thread.
                            let (p, stem) =
                                (world.clone(), dir.join(&format!("episodes/epoch-{ep:05}")));
                            let title = format!("epoch {ep}, total reward {total:.0}");
                            drawers.push(std::thread::spawn(move || {
                                sheet(&p, &frames, &title).save(&stem)
                            }));
                        }
                        metrics
                            .log(
                                ep + 1,
                                json!({"epoch": ep, "reward": stats.reward, "total_reward": total,
                                "loss": stats.loss, "epsilon": stats.epsilon}),
                            )
                            .map_err(|e| {
                                AgentError::invalid("metrics", e, "a writable run folder")
                            })?;
                        let status = format!("reward {total:.0} eps {:.3}", stats.epsilon[0]);
                        if !progress.tick(ep + 1, &status) {
                            return Ok(false);
                        }
                    }
                    HuntEvent::Checkpoint { hunt, .. } => {
                        ckpts.save(hunt.epoch, |d, s| hunt.save_checkpoint(d, s))?;
                    }
                }
                Ok(true)
            })?;
        }
        let secs = t0.elapsed().as_secs_f64();
        for d in drawers {
            d.join().map_err(|_| RunError::Failed("a rendering thread panicked".into()))??;
        }
        let hunt = &run.hunt;
        ckpts.save(hunt.epoch, |d, s| hunt.save_checkpoint(d, s))?;
        metrics.finish()?;
        // Stopped (Ctrl-C from Python): this epoch's state is saved; a resume goes on from it.
        progress.stopped()?;
        // The whole run's curve (a resumed run reads its earlier epochs back).
        let mut all: Vec<Vec<f64>> = vec![Vec::new(); n];
        crate::metrics::for_each_metric(&dir.join("metrics.jsonl"), |v| {
            for (i, a) in all.iter_mut().enumerate() {
                a.push(v["reward"][i].as_f64().unwrap_or(f64::NAN));
            }
        })?;
        let total: Vec<f64> = (0..all[0].len()).map(|e| all.iter().map(|c| c[e]).sum()).collect();
        let smooth: Vec<(f64, f64)> =
            (0..total.len()).map(|e| (e as f64, mean_last(&total[..=e], 50))).collect();
        let raw: Vec<(f64, f64)> = total.iter().enumerate().map(|(e, &r)| (e as f64, r)).collect();
        LinePlot::new("treasure hunt: reward per epoch")
            .x_label("epoch")
            .y_label("total reward (all agents)")
            .series(Series::new("per epoch", raw).colour([170, 190, 230]))
            .series(Series::new("mean of the last 50", smooth))
            .save(&dir.join("learning_curve"))?;
        let epochs_now = hunt.epoch - start_epoch;
        let per_epoch = 1e3 * secs / epochs_now.max(1) as f64;
        let rows = hunt
            .agents
            .iter()
            .enumerate()
            .map(|(i, ag)| {
                vec![
                    i.to_string(),
                    format!("{:.2}", mean_last(&all[i], 100)),
                    format!("{:.4}", ag.learner.epsilon),
                    ag.learner.updates.to_string(),
                ]
            })
            .collect();
        Summary::new("hunt train")
            .item("world", "world", json!({"num_agents": n, "num_worlds": c.num_worlds, "obs": c.env.obs, "max_turns": c.env.max_turns}),
                format!("{n} agents, {} worlds, {:?} observations, {} turns per epoch", c.num_worlds, c.env.obs, c.env.max_turns))
            .item("epochs", "epochs", hunt.epoch, format!("{} ({epochs_now} this launch, {secs:.1} s, {per_epoch:.1} ms/epoch)", hunt.epoch))
            .value("mean_total_reward_last_100", "mean total reward over the last 100 epochs", mean_last(&total, 100))
            .value("commit", "commit", COMMIT)
            .table("agents", &["agent", "mean reward, last 100 epochs", "epsilon now", "gradient steps"], rows)
            .file("config.toml", "the resolved config")
            .file("metrics.jsonl", "one line per epoch")
            .file("learning_curve.png", "total reward per epoch and its running mean (also .svg)")
            .file("episodes/", "every turn of world 0 in the recorded epochs")
            .file("checkpoint/", "resume with `--resume <this folder>`; play with `kestrel hunt play --checkpoint <this folder>`")
            .write(dir.path())?;
        Ok(format!(
            "mean total reward over the last 100 epochs {:.2} after {} epochs ({per_epoch:.1} ms/epoch); run folder {}",
            mean_last(&total, 100),
            hunt.epoch,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default run trains sorrel's defaults; bad settings and absurd sizes are refused by
    /// name before any work.
    #[test]
    fn defaults_are_sorrels_and_bad_configs_are_refused() {
        for obs in [TreasureObs::Rgb, TreasureObs::OneHot] {
            let env = TreasureParams { obs, ..TreasureParams::default() };
            let run = HuntRunConfig { env: env.clone(), ..HuntRunConfig::default() };
            assert_eq!(run.hunt_config().unwrap(), HuntConfig::sorrel(env), "{obs:?}");
        }
        let d = HuntRunConfig::default;
        let no_agents = TreasureParams { num_agents: 0, ..d().env };
        let e = HuntRun::new(HuntRunConfig { env: no_agents, ..d() }).err().unwrap();
        assert!(e.to_string().contains("num_agents"), "{e}");
        // A wider view is a bigger observation: the learners and the budget follow it.
        let wide = HuntRunConfig { env: TreasureParams { vision_radius: 4, ..d().env }, ..d() };
        assert_eq!(wide.hunt_config().unwrap().iqn.frame_dim, 9 * 9 * 3);
        assert!(wide.budget(2).total() > d().budget(2).total());
        let b = HuntRunConfig::default().budget(2);
        assert!(b.total() < 128 << 20, "{}", b.describe(4));
        let c = HuntRunConfig { capacity: 100_000_000, ..HuntRunConfig::default() };
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("capacity = 100000000"), "{e}");
    }

    /// Every agent knob of the run config reaches the learners, and a bad one is refused by
    /// its name.
    #[test]
    fn agent_knobs_reach_the_learners() {
        let c = HuntRunConfig {
            lr: 1e-3,
            epsilon: 1.0,
            epsilon_decay: 0.001,
            epsilon_min: 0.01,
            gamma: 0.95,
            tau: 0.01,
            sync_epochs: 50,
            num_quantiles: 8,
            ..HuntRunConfig::default()
        };
        let iqn = c.hunt_config().unwrap().iqn;
        assert_eq!(
            (iqn.lr, iqn.epsilon, iqn.epsilon_decay, iqn.epsilon_min),
            (1e-3, 1.0, 0.001, 0.01)
        );
        assert_eq!((iqn.gamma, iqn.tau, iqn.sync_epochs, iqn.num_quantiles), (0.95, 0.01, 50, 8));
        for (bad, name) in [
            (HuntRunConfig { lr: f64::NAN, ..HuntRunConfig::default() }, "lr"),
            (HuntRunConfig { epsilon: 1.5, ..HuntRunConfig::default() }, "epsilon"),
            (HuntRunConfig { num_quantiles: 0, ..HuntRunConfig::default() }, "num_quantiles"),
        ] {
            let e = bad.hunt_config().unwrap_err().to_string();
            assert!(e.contains(name), "{e}");
        }
        // More quantiles, more memory.
        let wide = HuntRunConfig { num_quantiles: 64, ..HuntRunConfig::default() };
        assert!(wide.budget(2).total() > HuntRunConfig::default().budget(2).total());
    }
}
