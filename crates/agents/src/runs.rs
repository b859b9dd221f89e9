//! Whole training runs as library calls: [`AlloRunConfig`] → [`AlloRun`] and
//! [`HuntRunConfig`] → [`HuntRun`]. The CLI (`kestrel allo train`, `kestrel hunt train`), the
//! Python package and Ray sweep workers call these; events arrive through the `observe`
//! callback (an evaluation, an epoch, a checkpoint to write). Configs are serde types with
//! `deny_unknown_fields`; their `Default` is the CLI's default run.

use crate::AgentError;
use crate::allo::{Allo, AlloConfig, Method, StepMetrics, collect};
use crate::hunt::{EpochStats, Hunt, HuntConfig, TurnOrder};
use crate::laplacian::{GroundTruth, ground_truth};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_envs::GridMap;
use kestrel_envs::treasure::{TreasureObs, TreasureParams};
use kestrel_replay::EpisodicReplay;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The note of a resume that found no complete checkpoint set.
fn no_checkpoint(dir: &std::path::Path) -> String {
    format!("{}: no complete checkpoint yet; the run starts over in its folder", dir.display())
}

/// `kestrel allo train`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct AlloRunConfig {
    /// A map file (the paper code's text format) or `builtin:NAME` (open-N, rooms-K-N,
    /// maze-N-SEED).
    pub map: String,
    /// Method.
    pub method: Method,
    /// Components.
    pub d: usize,
    /// Rows per sub-batch.
    pub batch: usize,
    /// Transition samples collected, in 50-step episodes (the paper's 12-map study: 3,000,000).
    pub samples: usize,
    /// Gradient steps in total (a resumed run's included).
    pub steps: u64,
    /// Seed (data, initialisation and batches).
    pub seed: u64,
    /// Initial barrier coefficient (absent: the method's, 0.5 for ALLO, 2.0 for GGDO).
    pub barrier: Option<f64>,
    /// Barrier increase rate (absent: the method's, 0.01 / 0).
    pub lr_barrier: Option<f64>,
    /// Evaluate the cosine similarity every this many steps.
    pub eval_every: u64,
    /// Checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: u64,
}

impl Default for AlloRunConfig {
    fn default() -> Self {
        AlloRunConfig {
            map: "builtin:rooms-2-5".into(),
            method: Method::Allo,
            d: 11,
            batch: 1024,
            samples: 3_000_000,
            steps: 20_000,
            seed: 0,
            barrier: None,
            lr_barrier: None,
            eval_every: 1000,
            checkpoint_every: 10_000,
        }
    }
}

impl AlloRunConfig {
    /// The learner's config (the method's defaults with this run's settings), validated.
    pub fn learner_config(&self) -> Result<AlloConfig, AgentError> {
        let mut cfg = match self.method {
            Method::Allo => AlloConfig::paper(),
            Method::Ggdo => AlloConfig::ggdo(),
        };
        cfg.d = self.d;
        cfg.batch = self.batch;
        if let Some(b) = self.barrier {
            cfg.barrier_init = b;
        }
        if let Some(l) = self.lr_barrier {
            cfg.lr_barrier = l;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks everything that needs no map: sizes and intervals.
    pub fn validate(&self) -> Result<(), AgentError> {
        self.learner_config()?;
        if !(1..=1_000_000_000).contains(&self.samples) {
            // Within this range, the memory is the run's budget's to refuse
            // (`AlloRunConfig::budget`: about 4.4 bytes per sample).
            return Err(AgentError::invalid("samples", self.samples, "1 to 1,000,000,000"));
        }
        if self.steps == 0 {
            return Err(AgentError::invalid("steps", 0, "at least 1"));
        }
        if self.eval_every == 0 {
            return Err(AgentError::invalid("eval_every", 0, "at least 1"));
        }
        Ok(())
    }
}

/// What an ALLO run reports through `observe`.
pub enum AlloEvent<'a> {
    /// The data is collected and the ground truth computed.
    Ready {
        /// Transition samples in the replay.
        samples: usize,
    },
    /// A gradient step (every step; `cosine` is the last evaluation's, NaN before the first).
    Step {
        /// Steps done.
        step: u64,
        /// The step's metrics.
        metrics: &'a StepMetrics,
        /// Average cosine similarity at the last evaluation.
        cosine: f64,
        /// Whether this step was evaluated.
        evaluated: bool,
    },
    /// A checkpoint is due (every `checkpoint_every` steps): the observer writes it.
    Checkpoint {
        /// Steps done.
        step: u64,
        /// The learner.
        learner: &'a Allo,
    },
}

/// An ALLO run, validated: the map, its ground truth and the learner (fresh or resumed).
pub struct AlloRun {
    config: AlloRunConfig,
    map: Arc<GridMap>,
    truth: GroundTruth,
    learner: Allo,
}

impl AlloRun {
    /// Loads the map, checks the config against it and builds a fresh learner
    /// (initialisation key `Key::new(seed).fold_in(1)`).
    pub fn new(config: AlloRunConfig) -> Result<Self, AgentError> {
        let (map, cfg, truth) = Self::prepare(&config)?;
        let learner = Allo::new(cfg, map.clone(), Key::new(config.seed).fold_in(1))?;
        Ok(AlloRun { config, map, truth, learner })
    }

    /// The same from the newest checkpoint set at `dir` that verifies against `stamp` (written
    /// by [`AlloEvent::Checkpoint`]'s observer with `Allo::save_checkpoint`); the note says
    /// when it was not `dir` itself, or that there was none yet.
    pub fn resume(
        config: AlloRunConfig,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(Self, Option<String>), AgentError> {
        let Some(set) = kestrel_nn::checkpoint_set(dir, stamp)? else {
            return Ok((Self::new(config)?, Some(no_checkpoint(dir))));
        };
        let (map, cfg, truth) = Self::prepare(&config)?;
        let learner = Allo::load_checkpoint(cfg, map.clone(), &set.path)?;
        set.expect_step(learner.steps, "step")?;
        Ok((AlloRun { config, map, truth, learner }, set.note))
    }

    fn prepare(c: &AlloRunConfig) -> Result<(Arc<GridMap>, AlloConfig, GroundTruth), AgentError> {
        c.validate()?;
        let map = Arc::new(GridMap::resolve(&c.map)?);
        if c.d > map.num_states() {
            return Err(AgentError::invalid(
                "d",
                c.d,
                format!("at most the map's {} states", map.num_states()),
            ));
        }
        if map.num_states() > 10_000 {
            return Err(AgentError::invalid(
                "map",
                format!("{} ({} states)", c.map, map.num_states()),
                "at most 10,000 states (the ground truth is a dense eigenproblem)",
            ));
        }
        let truth = ground_truth(&map, c.d)?;
        Ok((map, c.learner_config()?, truth))
    }

    /// The config.
    pub fn config(&self) -> &AlloRunConfig {
        &self.config
    }

    /// The map.
    pub fn map(&self) -> &Arc<GridMap> {
        &self.map
    }

    /// The ground truth.
    pub fn truth(&self) -> &GroundTruth {
        &self.truth
    }

    /// The learner.
    pub fn learner(&self) -> &Allo {
        &self.learner
    }

    /// Collects the data (seed `seed`, 50-step episodes, 64 envs) and trains up to `steps`
    /// steps in total (step `t` with `Key::new(seed).fold_in(2).fold_in(t)`), evaluating every
    /// `eval_every` steps and at the end. `observe` may stop the run by returning `false`.
    pub fn run(
        &mut self,
        mut observe: impl FnMut(AlloEvent<'_>) -> Result<bool, AgentError>,
    ) -> Result<(), AgentError> {
        let c = &self.config;
        let episodes = c.samples.div_ceil(50).max(1);
        let replay: EpisodicReplay<u32> = collect(self.map.clone(), episodes, 50, 64, c.seed)?;
        if !observe(AlloEvent::Ready { samples: episodes * 50 })? {
            return Ok(());
        }
        let key = Key::new(c.seed).fold_in(2);
        let mut cosine = f64::NAN;
        while self.learner.steps < c.steps {
            let t = self.learner.steps;
            let m = self.learner.step(&replay, key.fold_in(t))?;
            let done = t + 1;
            let evaluated = done.is_multiple_of(c.eval_every) || done == c.steps;
            if evaluated {
                cosine = self.truth.cosine_similarity(&self.learner.representation()).0;
            }
            let go = observe(AlloEvent::Step { step: done, metrics: &m, cosine, evaluated })?;
            if c.checkpoint_every > 0 && done.is_multiple_of(c.checkpoint_every) {
                observe(AlloEvent::Checkpoint { step: done, learner: &self.learner })?;
            }
            if !go {
                break;
            }
        }
        Ok(())
    }
}

/// `kestrel hunt train`'s config: the world, the learners and the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct HuntRunConfig {
    /// Agents.
    pub agents: usize,
    /// Observation encoding.
    pub obs: TreasureObs,
    /// World side including the wall border.
    pub size: usize,
    /// Item spawn probability per empty cell per turn.
    pub spawn_prob: f64,
    /// Turns per epoch.
    pub turns: u32,
    /// Independent worlds played at once.
    pub worlds: usize,
    /// Gradient steps per agent after every epoch (sorrel: 1).
    pub updates_per_epoch: usize,
    /// Extra gradient steps per agent per turn (a ratio, e.g. 0.25).
    pub updates_per_turn: f64,
    /// Turn order.
    pub order: TurnOrder,
    /// Hidden width of the IQN.
    pub layer: usize,
    /// Gradient-step batch.
    pub batch: usize,
    /// Replay frames per agent and world.
    pub capacity: usize,
    /// n-step returns (sorrel: 1-step).
    pub n_step: usize,
    /// Prioritised replay (α 0.6, β 0.4).
    pub prioritized: bool,
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
        HuntRunConfig {
            agents: 2,
            obs: TreasureObs::Rgb,
            size: 21,
            spawn_prob: 0.005,
            turns: 100,
            worlds: 1,
            updates_per_epoch: 1,
            updates_per_turn: 0.0,
            order: TurnOrder::Sequential,
            layer: 250,
            batch: 64,
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
    /// The trainer's config (sorrel's defaults with this run's settings), validated.
    pub fn hunt_config(&self) -> Result<HuntConfig, AgentError> {
        if !(3..=255).contains(&self.size) {
            return Err(AgentError::invalid(
                "size",
                self.size,
                "3 to 255 (the wall border included)",
            ));
        }
        let world = TreasureParams {
            height: self.size,
            width: self.size,
            num_agents: self.agents,
            spawn_prob: self.spawn_prob,
            obs: self.obs,
            max_turns: self.turns,
            ..TreasureParams::default()
        };
        world.validate()?;
        let mut c = HuntConfig::sorrel(world);
        c.worlds = self.worlds;
        c.turns = self.turns;
        c.updates_per_epoch = self.updates_per_epoch;
        c.updates_per_turn = self.updates_per_turn;
        c.order = self.order;
        c.iqn.layer = self.layer;
        c.iqn.batch = self.batch;
        c.iqn.capacity = self.capacity;
        c.iqn.n_step = self.n_step;
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
        stats: &'a EpochStats,
        /// Recorded frames (empty when not recorded).
        frames: Vec<Vec<u8>>,
    },
    /// A checkpoint is due: the observer writes it (`Hunt::save_checkpoint`).
    Checkpoint {
        /// Epochs done.
        epoch: u64,
        /// The trainer.
        hunt: &'a Hunt,
    },
}

/// A treasure-hunt training run: the trainer (fresh or resumed) and its run settings.
pub struct HuntRun {
    config: HuntRunConfig,
    /// The trainer.
    pub hunt: Hunt,
}

impl HuntRun {
    /// A fresh run.
    pub fn new(config: HuntRunConfig) -> Result<Self, AgentError> {
        let hunt = Hunt::new(config.hunt_config()?, config.seed)?;
        Ok(HuntRun { config, hunt })
    }

    /// The run from the newest checkpoint set at `dir` that verifies against `stamp`, with a
    /// note when it was not `dir` itself; `None` when no set was ever completed.
    pub fn load(
        config: &HuntRunConfig,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<Option<(Self, Option<String>)>, AgentError> {
        let Some(set) = kestrel_nn::checkpoint_set(dir, stamp)? else {
            return Ok(None);
        };
        let hunt = Hunt::load_checkpoint(config.hunt_config()?, &set.path)?;
        set.expect_step(hunt.epoch, "epoch")?;
        Ok(Some((HuntRun { config: config.clone(), hunt }, set.note)))
    }

    /// [`HuntRun::load`], or a fresh run (the note says so) when there is no set yet.
    pub fn resume(
        config: HuntRunConfig,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(Self, Option<String>), AgentError> {
        match Self::load(&config, dir, stamp)? {
            Some(r) => Ok(r),
            None => Ok((Self::new(config)?, Some(no_checkpoint(dir)))),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_run_configs_are_errors_before_any_work() {
        for bad in [
            AlloRunConfig { eval_every: 0, ..AlloRunConfig::default() },
            AlloRunConfig { steps: 0, ..AlloRunConfig::default() },
            AlloRunConfig { samples: usize::MAX, ..AlloRunConfig::default() },
            AlloRunConfig { d: 0, ..AlloRunConfig::default() },
            AlloRunConfig { map: "builtin:maze-499-0".into(), ..AlloRunConfig::default() },
            AlloRunConfig { d: 60, map: "builtin:open-3".into(), ..AlloRunConfig::default() },
        ] {
            assert!(AlloRun::new(bad).is_err());
        }
        assert!(HuntRun::new(HuntRunConfig { agents: 0, ..HuntRunConfig::default() }).is_err());
    }

    #[test]
    fn a_short_allo_run_reports_steps_evaluations_and_checkpoints() {
        let cfg = AlloRunConfig {
            samples: 2000,
            steps: 20,
            batch: 32,
            eval_every: 10,
            checkpoint_every: 10,
            d: 4,
            ..AlloRunConfig::default()
        };
        let mut run = AlloRun::new(cfg).unwrap();
        let (mut steps, mut evals, mut ckpts) = (0, 0, 0);
        run.run(|e| {
            match e {
                AlloEvent::Step { evaluated, cosine, .. } => {
                    steps += 1;
                    if evaluated {
                        evals += 1;
                        assert!(cosine.is_finite());
                    }
                }
                AlloEvent::Checkpoint { .. } => ckpts += 1,
                AlloEvent::Ready { .. } => {}
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!((steps, evals, ckpts), (20, 2, 2));
        assert_eq!(run.learner().steps, 20);
        assert_eq!(run.learner().config().method, crate::allo::Method::Allo);
    }
}
