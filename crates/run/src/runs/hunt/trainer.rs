//! Multi-agent treasure hunt with one IQN learner per agent (sorrel's treasure-hunt
//! experiment, reference §2.4), over several independent worlds at once.
//!
//! An epoch: every world is rebuilt (agents on fresh cells), every learner starts its epoch
//! (hard target copy every `sync_epochs`), then `turns` turns. A turn in each world is
//! sorrel's: spawning, then the agents in list order, each observing the world as the agents
//! before it left it ([`TurnOrder::Sequential`]; [`TurnOrder::Simultaneous`] has all agents
//! observe first and choose in one call each, in parallel across agents). Agent `a`'s action
//! selection covers all worlds in one batched forward. After the last turn each buffer gets
//! its final observation (the episode is truncated, never terminated), then every agent
//! takes `updates_per_epoch` gradient steps (sorrel: 1), agents in parallel, and ε decays.
//! `updates_per_turn` adds steps during the epoch (a ratio; 0 by default, as sorrel).
//!
//! Each agent keeps its own model, optimiser and buffers (one [`FrameReplay`] per world).
//! Every random draw comes from a key derived from the seed and the draw's role, epoch,
//! turn, world and agent, so results do not depend on the number of threads.

use super::config::{HuntRunConfig, TurnOrder};
use kestrel_agents::AgentError;
use kestrel_agents::iqn::IqnLearner;
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_envs::treasure::{TreasureDraws, TreasureHunt, TreasureState};
use kestrel_replay::FrameReplay;
use rayon::prelude::*;

/// What one epoch did.
#[derive(Clone, Debug, PartialEq)]
pub struct HuntEpochStats {
    /// Epoch number (from 0).
    pub epoch: u64,
    /// Reward per agent summed over turns and worlds, divided by the number of worlds.
    pub reward: Vec<f64>,
    /// Mean loss of each agent's gradient steps this epoch (`None`: no step yet).
    pub loss: Vec<Option<f64>>,
    /// ε of each agent during the epoch.
    pub epsilon: Vec<f64>,
}

/// One agent: learner and one replay buffer per world.
#[derive(Clone, Debug)]
pub struct HuntAgent {
    /// Model, target, optimiser, ε.
    pub learner: IqnLearner,
    /// One buffer per world.
    pub buffers: Vec<FrameReplay>,
    states: Vec<f32>,
    frames: Vec<f32>,
    actions: Vec<u32>,
    loss_sum: f64,
    loss_n: u64,
}

impl HuntAgent {
    /// One gradient step; adds its loss to the epoch's.
    fn update(&mut self, key: Key) -> Result<(), AgentError> {
        if let Some(l) = self.learner.train_step(&mut self.buffers, key)? {
            self.loss_sum += l;
            self.loss_n += 1;
        }
        Ok(())
    }
}

/// A training run in progress: worlds, agents, epoch counter.
#[derive(Clone, Debug)]
pub struct HuntTrainer {
    /// Settings.
    pub cfg: HuntRunConfig,
    /// Agents.
    pub agents: Vec<HuntAgent>,
    /// Epochs completed.
    pub epoch: u64,
    /// Root key.
    pub key: Key,
    worlds: Vec<TreasureState>,
    rewards: Vec<f64>,
    credit: f64,
}

/// Key roles.
const WORLD: u64 = 1;
const SPAWN: u64 = 2;
const ACT: u64 = 3;
const LEARN: u64 = 4;
const INIT: u64 = 5;

impl HuntTrainer {
    /// A fresh run from `seed`: agent `a`'s parameters come from `key(INIT, a)`.
    pub fn new(cfg: HuntRunConfig, seed: u64) -> Result<Self, AgentError> {
        cfg.validate()?;
        let key = Key::new(seed);
        let n = cfg.env.num_agents;
        let sd = cfg.agent.state_dim();
        let agents = (0..n)
            .map(|a| {
                let learner =
                    IqnLearner::new(cfg.agent.clone(), key.fold_in(INIT).fold_in(a as u64))?;
                let buffers = (0..cfg.num_worlds)
                    .map(|_| FrameReplay::new(cfg.agent.replay()))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(HuntAgent {
                    learner,
                    buffers,
                    states: vec![0.0; cfg.num_worlds * sd],
                    frames: vec![0.0; cfg.num_worlds * cfg.agent.frame_dim],
                    actions: vec![0; cfg.num_worlds],
                    loss_sum: 0.0,
                    loss_n: 0,
                })
            })
            .collect::<Result<Vec<_>, AgentError>>()?;
        Ok(HuntTrainer {
            worlds: Vec::new(),
            rewards: vec![0.0; n],
            credit: 0.0,
            cfg,
            agents,
            epoch: 0,
            key,
        })
    }

    /// The worlds as they are now (after the last turn played).
    pub fn worlds(&self) -> &[TreasureState] {
        &self.worlds
    }

    /// Starts an epoch: fresh worlds, open episodes, target copies.
    fn begin(&mut self) {
        let e = self.epoch;
        let kw = self.key.fold_in(WORLD).fold_in(e);
        self.worlds = (0..self.cfg.num_worlds)
            .map(|w| TreasureHunt::new_world(&self.cfg.env, &mut kw.fold_in(w as u64).rng()))
            .collect();
        for ag in &mut self.agents {
            ag.learner.start_epoch(e);
            ag.buffers.iter_mut().for_each(FrameReplay::begin_episode);
            ag.loss_sum = 0.0;
            ag.loss_n = 0;
        }
        self.rewards.iter_mut().for_each(|r| *r = 0.0);
    }

    /// Observes agent `a` in every world and builds its stacked states.
    fn observe(&mut self, a: usize) -> Result<(), AgentError> {
        let p = &self.cfg.env;
        let fd = self.cfg.agent.frame_dim;
        let sd = self.cfg.agent.state_dim();
        let ag = &mut self.agents[a];
        for (w, s) in self.worlds.iter().enumerate() {
            let f = &mut ag.frames[w * fd..(w + 1) * fd];
            TreasureHunt::observe(p, s, a, f);
            ag.buffers[w].stack_current(f, &mut ag.states[w * sd..(w + 1) * sd])?;
        }
        Ok(())
    }

    /// Applies agent `a`'s chosen actions in every world and stores the transitions.
    fn apply(&mut self, a: usize, last: bool) -> Result<(), AgentError> {
        let p = &self.cfg.env;
        let fd = self.cfg.agent.frame_dim;
        let ag = &mut self.agents[a];
        for (w, s) in self.worlds.iter_mut().enumerate() {
            let act = ag.actions[w];
            let r = TreasureHunt::act(p, s, a, act as u8);
            self.rewards[a] += r as f64;
            ag.buffers[w].push(&ag.frames[w * fd..(w + 1) * fd], act, r, false, last)?;
        }
        Ok(())
    }

    fn update_all(&mut self, step: u64) -> Result<(), AgentError> {
        let kl = self.key.fold_in(LEARN).fold_in(self.epoch).fold_in(step);
        self.agents
            .par_iter_mut()
            .enumerate()
            .with_max_len(1)
            .map(|(a, ag)| ag.update(kl.fold_in(a as u64)))
            .collect::<Result<Vec<()>, AgentError>>()?;
        Ok(())
    }

    /// Plays and learns one epoch; `on_turn` sees the worlds after every turn (for
    /// rendering; pass `|_| {}` otherwise).
    pub fn run_epoch(
        &mut self,
        mut on_turn: impl FnMut(&[TreasureState]),
    ) -> Result<HuntEpochStats, AgentError> {
        self.begin();
        let e = self.epoch;
        let n = self.agents.len();
        let epsilon: Vec<f64> = self.agents.iter().map(|a| a.learner.epsilon).collect();
        let mut step = 0u64;
        for t in 0..self.cfg.env.max_turns {
            let last = t + 1 == self.cfg.env.max_turns;
            let ks = self.key.fold_in(SPAWN).fold_in(e).fold_in(t as u64);
            for (w, s) in self.worlds.iter_mut().enumerate() {
                TreasureHunt::spawn(
                    &self.cfg.env,
                    s,
                    &mut TreasureDraws(ks.fold_in(w as u64).rng()),
                );
            }
            let ka = self.key.fold_in(ACT).fold_in(e).fold_in(t as u64);
            match self.cfg.order {
                TurnOrder::Sequential => {
                    for a in 0..n {
                        self.observe(a)?;
                        let ag = &mut self.agents[a];
                        ag.learner.act(&ag.states, ka.fold_in(a as u64), &mut ag.actions)?;
                        self.apply(a, last)?;
                    }
                }
                TurnOrder::Simultaneous => {
                    for a in 0..n {
                        self.observe(a)?;
                    }
                    self.agents
                        .par_iter_mut()
                        .enumerate()
                        .with_max_len(1)
                        .map(|(a, ag)| {
                            ag.learner.act(&ag.states, ka.fold_in(a as u64), &mut ag.actions)
                        })
                        .collect::<Result<Vec<()>, AgentError>>()?;
                    for a in 0..n {
                        self.apply(a, last)?;
                    }
                }
            }
            for s in &mut self.worlds {
                s.turn += 1;
            }
            on_turn(&self.worlds);
            self.credit += self.cfg.updates_per_turn;
            while self.credit >= 1.0 {
                self.credit -= 1.0;
                self.update_all(step)?;
                step += 1;
            }
        }
        // Final observations: the episode was truncated by the turn limit.
        let fd = self.cfg.agent.frame_dim;
        for a in 0..n {
            let ag = &mut self.agents[a];
            for (w, s) in self.worlds.iter().enumerate() {
                let f = &mut ag.frames[w * fd..(w + 1) * fd];
                TreasureHunt::observe(&self.cfg.env, s, a, f);
                ag.buffers[w].push_final(f)?;
            }
        }
        for _ in 0..self.cfg.updates_per_epoch {
            self.update_all(step)?;
            step += 1;
        }
        let stats = HuntEpochStats {
            epoch: e,
            reward: self.rewards.iter().map(|r| r / self.cfg.num_worlds as f64).collect(),
            loss: self
                .agents
                .iter()
                .map(|a| (a.loss_n > 0).then(|| a.loss_sum / a.loss_n as f64))
                .collect(),
            epsilon,
        };
        for ag in &mut self.agents {
            ag.learner.end_epoch();
        }
        self.epoch += 1;
        Ok(stats)
    }

    /// Greedy play (ε = 0, no learning, nothing stored) of one fresh epoch from `key`;
    /// returns every agent's total reward and calls `on_turn` after every turn.
    pub fn play(
        &self,
        key: Key,
        mut on_turn: impl FnMut(&[TreasureState]),
    ) -> Result<Vec<f64>, AgentError> {
        let mut h = self.clone();
        h.key = key;
        h.epoch = 0;
        for ag in &mut h.agents {
            ag.learner.epsilon = 0.0;
            ag.buffers = (0..h.cfg.num_worlds)
                .map(|_| FrameReplay::new(h.cfg.agent.replay()))
                .collect::<Result<_, _>>()?;
        }
        h.cfg.updates_per_epoch = 0;
        h.cfg.updates_per_turn = 0.0;
        let stats = h.run_epoch(&mut on_turn)?;
        Ok(stats.reward)
    }
}

fn bad_ckpt(path: &std::path::Path, what: String) -> AgentError {
    AgentError::invalid(
        "checkpoint",
        format!("{}: {what}", path.display()),
        "a checkpoint written by HuntTrainer::save_checkpoint with this configuration",
    )
}

fn meta_num<T: std::str::FromStr>(
    path: &std::path::Path,
    meta: &std::collections::BTreeMap<String, String>,
    name: &str,
) -> Result<T, AgentError> {
    meta.get(name)
        .and_then(|v| v.parse::<T>().ok())
        .ok_or_else(|| bad_ckpt(path, format!("metadata {name} missing or malformed")))
}

impl HuntTrainer {
    /// Writes everything needed to continue exactly (parameters, targets, Adam states, ε,
    /// replay buffers, epoch, key) to `dir` as one set (`kestrel_nn::write_checkpoint_set`):
    /// an interrupted save leaves the previous set intact.
    pub fn save_checkpoint(
        &self,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(), AgentError> {
        kestrel_nn::write_checkpoint_set(dir, stamp, self.epoch, |tmp| self.write_checkpoint(tmp))
    }

    fn write_checkpoint(&self, tmp: &std::path::Path) -> Result<(), AgentError> {
        let net = &self.agents[0].learner.net;
        let tensors = net.tensors();
        for (a, ag) in self.agents.iter().enumerate() {
            let l = &ag.learner;
            let mut named: Vec<(String, Vec<usize>, &[f32])> = Vec::new();
            for (prefix, v) in [
                ("params", &l.params),
                ("target", &l.target),
                ("adam_m", &l.opt.m),
                ("adam_v", &l.opt.v),
            ] {
                for (name, shape, off) in &tensors {
                    let n: usize = shape.iter().product();
                    named.push((format!("{prefix}.{name}"), shape.clone(), &v[*off..off + n]));
                }
            }
            kestrel_nn::save_safetensors(
                &tmp.join(format!("agent{a}.safetensors")),
                &named,
                &[
                    ("adam_t", l.opt.t.to_string()),
                    ("epsilon", l.epsilon.to_string()),
                    ("updates", l.updates.to_string()),
                ],
            )?;
            let mut arrays: Vec<(String, Vec<f64>)> = Vec::new();
            let mut meta: Vec<(String, String)> = Vec::new();
            for (w, b) in ag.buffers.iter().enumerate() {
                let s = b.snapshot();
                for (name, v) in s.arrays {
                    arrays.push((format!("world{w}.{name}"), v));
                }
                for (name, v) in s.scalars {
                    meta.push((format!("world{w}.{name}"), v.to_string()));
                }
            }
            let named: Vec<(String, Vec<usize>, &[f64])> =
                arrays.iter().map(|(n, v)| (n.clone(), vec![v.len()], &v[..])).collect();
            let meta: Vec<(&str, String)> =
                meta.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
            kestrel_nn::save_safetensors(
                &tmp.join(format!("agent{a}.replay.safetensors")),
                &named,
                &meta,
            )?;
        }
        let none: Vec<(String, Vec<usize>, &[f64])> = Vec::new();
        kestrel_nn::save_safetensors(
            &tmp.join("hunt.safetensors"),
            &none,
            &[
                ("epoch", self.epoch.to_string()),
                ("key", self.key.raw().to_string()),
                ("credit", self.credit.to_string()),
                ("agents", self.agents.len().to_string()),
            ],
        )?;
        Ok(())
    }

    /// Resumes a run saved by [`HuntTrainer::save_checkpoint`] under `cfg` (the run's own settings;
    /// shapes and counts are checked).
    pub fn load_checkpoint(cfg: HuntRunConfig, dir: &std::path::Path) -> Result<Self, AgentError> {
        let mut h = HuntTrainer::new(cfg, 0)?;
        let hp = dir.join("hunt.safetensors");
        let hf = kestrel_nn::load_safetensors::<f64>(&hp)?;
        let agents: usize = meta_num(&hp, &hf.metadata, "agents")?;
        if agents != h.agents.len() {
            return Err(bad_ckpt(
                &hp,
                format!("{agents} agents, the configuration has {}", h.agents.len()),
            ));
        }
        h.epoch = meta_num(&hp, &hf.metadata, "epoch")?;
        h.key = Key::from_raw(meta_num(&hp, &hf.metadata, "key")?);
        h.credit = meta_num(&hp, &hf.metadata, "credit")?;
        let tensors = h.agents[0].learner.net.tensors();
        for (a, ag) in h.agents.iter_mut().enumerate() {
            let p = dir.join(format!("agent{a}.safetensors"));
            let f = kestrel_nn::load_safetensors::<f32>(&p)?;
            let l = &mut ag.learner;
            for (prefix, v) in [
                ("params", &mut l.params),
                ("target", &mut l.target),
                ("adam_m", &mut l.opt.m),
                ("adam_v", &mut l.opt.v),
            ] {
                for (name, shape, off) in &tensors {
                    let key = format!("{prefix}.{name}");
                    match f.get(&key) {
                        Some((s, vals)) if s == shape.as_slice() => {
                            v[*off..off + vals.len()].copy_from_slice(vals)
                        }
                        Some((s, _)) => {
                            return Err(bad_ckpt(
                                &p,
                                format!("{key}: shape {s:?}, the model needs {shape:?}"),
                            ));
                        }
                        None => return Err(bad_ckpt(&p, format!("{key} missing"))),
                    }
                }
            }
            l.opt.t = meta_num(&p, &f.metadata, "adam_t")?;
            l.epsilon = meta_num(&p, &f.metadata, "epsilon")?;
            l.updates = meta_num(&p, &f.metadata, "updates")?;
            let rp = dir.join(format!("agent{a}.replay.safetensors"));
            let rf = kestrel_nn::load_safetensors::<f64>(&rp)?;
            for (w, b) in ag.buffers.iter_mut().enumerate() {
                let array = |n: &str| rf.get(&format!("world{w}.{n}")).map(|(_, v)| v.to_vec());
                let scalar = |n: &str| {
                    rf.metadata.get(&format!("world{w}.{n}")).and_then(|v| v.parse().ok())
                };
                *b = FrameReplay::restore(h.cfg.agent.replay(), array, scalar)
                    .map_err(|e| bad_ckpt(&rp, format!("world {w}: {e}")))?;
            }
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each setting sorrel's config could get wrong is refused by name with its value.
    #[test]
    fn bad_settings_are_named_with_their_values() {
        use kestrel_agents::iqn::IqnConfig;
        use kestrel_envs::treasure::TreasureParams;
        let good = HuntRunConfig::default();
        good.validate().unwrap();
        let cases: [(HuntRunConfig, &str); 5] = [
            (HuntRunConfig { num_worlds: 0, ..good.clone() }, "num_worlds = 0"),
            (
                HuntRunConfig {
                    env: TreasureParams { max_turns: 0, ..good.env.clone() },
                    ..good.clone()
                },
                "max_turns",
            ),
            (
                HuntRunConfig { updates_per_turn: f64::NAN, ..good.clone() },
                "updates_per_turn = NaN",
            ),
            (
                HuntRunConfig {
                    env: TreasureParams { vision_radius: 3, ..good.env.clone() },
                    ..good.clone()
                },
                "agent.frame_dim",
            ),
            (
                HuntRunConfig {
                    agent: IqnConfig { actions: 5, ..good.agent.clone() },
                    ..good.clone()
                },
                "agent.actions = 5",
            ),
        ];
        for (c, want) in cases {
            let e = c.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    /// A checkpoint's metadata number is read when present and well formed; otherwise the
    /// error names the file and the field.
    #[test]
    fn checkpoint_metadata_numbers_name_the_file_when_missing_or_malformed() {
        let path = std::path::Path::new("/runs/x/checkpoint/hunt.safetensors");
        let mut meta = std::collections::BTreeMap::new();
        meta.insert("epoch".to_string(), "12".to_string());
        meta.insert("eps".to_string(), "zero".to_string());
        assert_eq!(meta_num::<u64>(path, &meta, "epoch").unwrap(), 12);
        for name in ["eps", "turn"] {
            let e = meta_num::<f64>(path, &meta, name).unwrap_err().to_string();
            assert!(e.contains("hunt.safetensors") && e.contains(name), "{e}");
        }
    }
}
