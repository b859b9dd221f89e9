//! Treasure-hunt training runs with their folders (`kestrel hunt train`, the Python package's
//! `kestrel.hunt.train`): episode sheets drawn off the training thread, checkpoints, exact
//! resume (greedy play of a trained run is [`super::hunt_play`]). The config ([`HuntRunConfig`]), its checks, its
//! memory budget and the epoch loop ([`HuntRun::run`]) are here, and the trainer (one epoch of
//! turns and updates over the worlds, its checkpoints: `trainer.rs`); the world and the IQN
//! learners are `kestrel-envs`' and `kestrel-agents`' parts.

mod config;
mod trainer;

pub use config::{HuntRunConfig, TurnOrder};
pub use trainer::{HuntAgent, HuntEpochStats, HuntTrainer};

use crate::base::{COMMIT, RunError};
use crate::launch::{Checkpoints, Launch, Outcome, finish};
use crate::resume::{Resumable, open};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_agents::AgentError;
use kestrel_core::Budget;
use kestrel_core::FromInvalid;
use kestrel_envs::treasure::TreasureParams;
use kestrel_plot::{Anchor, LinePlot, Series, Sketch};
use serde_json::json;
use std::path::Path;

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
        let hunt = HuntTrainer::new(config.clone(), config.seed)?;
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
        let (l, bt, c) =
            (self.agent.layer as f64, self.agent.batch_size as f64, self.agent.capacity as f64);
        let e = &self.env;
        let (agents, worlds, turns) =
            (e.num_agents as f64, self.num_worlds as f64, e.max_turns as f64);
        let (height, width) = (e.height as f64, e.width as f64);
        let q = self.agent.num_quantiles as f64;
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
            format!(
                "{per}, agent.layer = {}, agent.batch_size = {}, {view}",
                self.agent.layer, self.agent.batch_size
            ),
            agents * learner,
        );
        add(
            "replay buffers (replay/frames.rs)",
            format!(
                "{per}, agent.capacity = {}, num_worlds = {}, {view}",
                self.agent.capacity, self.num_worlds
            ),
            agents * replay,
        );
        add(
            "IQN workspaces and agent buffers (iqn.rs, hunt.rs)",
            format!(
                "{per}, agent.layer = {}, agent.batch_size = {}, agent.num_quantiles = {}, num_worlds = {}",
                self.agent.layer, self.agent.batch_size, self.agent.num_quantiles, self.num_worlds
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
            format!("threads = {threads}, agent.layer = {}", self.agent.layer),
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
                            "agent.capacity = {}, num_worlds = {}, agent.layer = {}",
                            self.agent.capacity, self.num_worlds, self.agent.layer
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
        let hunt = HuntTrainer::load_checkpoint(c.clone(), set)?;
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

    /// sorrel's defaults, the learner's frame size its world's (`env.obs`, `env.vision_radius`
    /// as the first pass read them).
    fn defaults(first: Option<&HuntRunConfig>) -> HuntRunConfig {
        Self::fit(HuntRunConfig::default(), first)
    }

    fn fit(preset: HuntRunConfig, first: Option<&HuntRunConfig>) -> HuntRunConfig {
        match first {
            Some(f) => preset.with_frames_of(&f.env),
            None => preset,
        }
    }

    const RENAMED: crate::config::Renamed = config::RENAMED;

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
        c.validate()?;
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
        let world = run.hunt.cfg.env.clone();
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
        use kestrel_agents::iqn::IqnConfig;
        use kestrel_envs::treasure::{TreasureObs, TreasureParams};
        for obs in [TreasureObs::Rgb, TreasureObs::OneHot] {
            let env = TreasureParams { obs, ..TreasureParams::default() };
            let run = HuntRunConfig::default().with_frames_of(&env);
            assert_eq!(run.agent, IqnConfig::sorrel(env.obs_len(), 4), "{obs:?}");
        }
        // The frame size follows the world's observation as the config is read.
        let t: toml::Table = "[env]\nobs = \"one-hot\"\nvision_radius = 4".parse().unwrap();
        let c = crate::run::load::<Hunt>(crate::run::Layers::table(&t), None).unwrap();
        assert_eq!(c.agent.frame_dim, c.env.obs_len());
        let d = HuntRunConfig::default;
        let no_agents = TreasureParams { num_agents: 0, ..d().env };
        let e = HuntRun::new(HuntRunConfig { env: no_agents, ..d() }).err().unwrap();
        assert!(e.to_string().contains("num_agents"), "{e}");
        // A wider view is a bigger observation: the learners and the budget follow it.
        let wide_env = TreasureParams { vision_radius: 4, ..d().env };
        let wide = d().with_frames_of(&wide_env);
        let wide = HuntRunConfig { env: wide_env, ..wide };
        assert_eq!(wide.agent.frame_dim, 9 * 9 * 3);
        assert!(wide.budget(2).total() > d().budget(2).total());
        let b = HuntRunConfig::default().budget(2);
        assert!(b.total() < 128 << 20, "{}", b.describe(4));
        let c = HuntRunConfig { agent: IqnConfig { capacity: 100_000_000, ..d().agent }, ..d() };
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("agent.capacity = 100000000"), "{e}");
    }

    /// The learner's keys are `agent.*`; their 0.1 top-level spellings are read as them with a
    /// warning naming the new key (a config file, `--set`, a Python keyword), and giving both
    /// is an error; a bad value is refused by its new name.
    #[test]
    fn the_learners_keys_nest_under_agent_and_the_old_ones_still_read() {
        use crate::run::{Layers, load, load_noted};
        let new: toml::Table =
            "[agent]\nlr = 0.001\nepsilon = 1.0\nnum_quantiles = 8\nprioritized = true"
                .parse()
                .unwrap();
        let old: toml::Table =
            "lr = 0.001\nepsilon = 1.0\nnum_quantiles = 8\nprioritized = true".parse().unwrap();
        let a = load::<Hunt>(Layers::table(&new), None).unwrap();
        let (b, notes) = load_noted::<Hunt>(Layers::table(&old), None).unwrap();
        assert_eq!(a, b);
        assert_eq!((a.agent.lr, a.agent.epsilon, a.agent.num_quantiles), (0.001, 1.0, 8));
        assert_eq!(a.agent.prioritized, Some(kestrel_replay::Prioritized::default()));
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(
            notes.iter().any(|n| n.contains("`lr` is now `agent.lr`") && n.contains("0.3.0")),
            "{notes:?}"
        );
        let sets = ["layer=32".to_string()];
        let l = Layers { preset: None, file: None, table: &toml::Table::new(), sets: &sets };
        let (c, notes) = load_noted::<Hunt>(l, None).unwrap();
        assert_eq!(c.agent.layer, 32);
        assert!(notes[0].starts_with("--set layer=32: `layer` is now `agent.layer`"), "{notes:?}");
        let both: toml::Table = "lr = 0.001\n[agent]\nlr = 0.002".parse().unwrap();
        let e = load::<Hunt>(Layers::table(&both), None).unwrap_err().to_string();
        assert!(e.contains("`lr` and `agent.lr` both given"), "{e}");
        for (text, name) in [
            ("[agent]\nlr = nan", "agent.lr"),
            ("[agent]\nepsilon = 1.5", "agent.epsilon"),
            ("[agent]\nnum_quantiles = 0", "agent.num_quantiles"),
            ("[agent]\nprioritized = 3", "prioritized: false, true"),
        ] {
            let t: toml::Table = text.parse().unwrap();
            let e = crate::registry::RunKind::of::<crate::runs::hunt::Hunt>()
                .check(Layers::table(&t), "t");
            let e = e.unwrap_err().to_string();
            assert!(e.contains(name), "{text}: {e}");
        }
        // More quantiles, more memory.
        let wide =
            load::<Hunt>(Layers::table(&"[agent]\nnum_quantiles = 64".parse().unwrap()), None)
                .unwrap();
        assert!(wide.budget(2).total() > HuntRunConfig::default().budget(2).total());
    }
}
