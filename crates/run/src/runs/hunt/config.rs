//! `kestrel hunt train`'s config: the world (`TreasureHunt-v0`'s params), how the worlds and
//! turns run, the IQN learners' config nested whole (`[agent]`, `kestrel_agents::iqn::
//! IqnConfig`) and the run's epochs, seed and records. The trainer (`trainer.rs`) and the run
//! (`mod.rs`) read it as it is.

use kestrel_agents::AgentError;
use kestrel_agents::iqn::IqnConfig;
use kestrel_core::FromInvalid;
use kestrel_envs::treasure::{TreasureObs, TreasureParams};
use serde::{Deserialize, Serialize};

/// How agents take their turns (config spelling `sequential`, `simultaneous`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnOrder {
    /// sorrel's rule: agent `a` observes after agents `0..a` moved.
    #[default]
    Sequential,
    /// All agents observe the turn's start and choose at once (parallel across agents); moves
    /// are still applied in list order.
    Simultaneous,
}

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
    /// Every agent's IQN learner (the same settings; each agent has its own parameters):
    /// sorrel's defaults; `agent.frame_dim` follows `env.obs` and `agent.actions` is 4.
    #[documented(nested)]
    pub agent: IqnConfig,
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
        // sorrel's main.py observes RGB.
        let env = TreasureParams { obs: TreasureObs::Rgb, ..TreasureParams::default() };
        HuntRunConfig {
            agent: IqnConfig::sorrel(env.obs_len(), 4),
            env,
            num_worlds: 1,
            updates_per_epoch: 1,
            updates_per_turn: 0.0,
            order: TurnOrder::Sequential,
            epochs: 1001,
            seed: 0,
            record_every: 50,
            checkpoint_every: 100,
        }
    }
}

/// The learner's keys, top-level until 0.2.0 (`layer` is `agent.layer`, ...): read with a
/// warning until 0.3.0.
pub(super) const RENAMED: crate::config::Renamed = &[
    ("layer", "agent.layer"),
    ("batch_size", "agent.batch_size"),
    ("capacity", "agent.capacity"),
    ("n_step", "agent.n_step"),
    ("prioritized", "agent.prioritized"),
    ("lr", "agent.lr"),
    ("epsilon", "agent.epsilon"),
    ("epsilon_decay", "agent.epsilon_decay"),
    ("epsilon_min", "agent.epsilon_min"),
    ("gamma", "agent.gamma"),
    ("tau", "agent.tau"),
    ("sync_epochs", "agent.sync_epochs"),
    ("num_quantiles", "agent.num_quantiles"),
];

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
        let env = TreasureParams {
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
        };
        HuntRunConfig {
            agent: IqnConfig {
                batch_size: 256,
                capacity: 1024,
                lr: 2.5e-4,
                epsilon: 1.0,
                epsilon_decay: 0.001,
                epsilon_min: 0.0,
                gamma: 0.970299,
                ..IqnConfig::sorrel(env.obs_len(), 4)
            },
            env,
            epochs: 1000,
            ..HuntRunConfig::default()
        }
    }

    /// This config with the learner's frame size its world's observation length: the
    /// defaults a config is read over, once its `env` is known. A world that does not
    /// validate leaves it as it is (its check then names the world's field).
    pub fn with_frames_of(mut self, env: &TreasureParams) -> Self {
        if env.validate().is_ok() {
            self.agent.frame_dim = env.obs_len();
        }
        self
    }

    /// Checks every setting: the world, the learner (its fields named `agent.*`), and that
    /// they fit each other.
    pub fn validate(&self) -> Result<(), AgentError> {
        self.env.validate()?;
        self.agent.validate().map_err(|e| crate::runs::under("agent", e))?;
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AgentError::invalid(field, value, accepted))
        };
        if self.num_worlds == 0 {
            return bad("num_worlds", "0".into(), "at least 1");
        }
        if !(self.updates_per_turn.is_finite() && self.updates_per_turn >= 0.0) {
            return bad("updates_per_turn", self.updates_per_turn.to_string(), "finite and >= 0");
        }
        if self.agent.frame_dim != self.env.obs_len() {
            return bad(
                "agent.frame_dim",
                self.agent.frame_dim.to_string(),
                "the world's observation length (env.obs and env.vision_radius set it)",
            );
        }
        if self.agent.actions != 4 {
            return bad(
                "agent.actions",
                self.agent.actions.to_string(),
                "4 (up, down, left, right)",
            );
        }
        Ok(())
    }
}
