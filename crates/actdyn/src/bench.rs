//! Timings of the hot paths (`kestrel actdyn bench`): one planner call at E2 defaults, one
//! training call for E1 (MLP) and E2 (RBF), and one environment step with the belief update.
//! Medians over `reps` repetitions after warm-up.

use crate::ActdynError;
use crate::config::ActdynConfig;
use crate::model::SeqVae;
use crate::online::ActiveRun;
use crate::train::Trainer;
use kestrel_core::timing::median_us;
use kestrel_core::{FromInvalid, Key};
use serde::Serialize;

/// The measured medians.
#[derive(Clone, Debug, Serialize)]
pub struct BenchTimes {
    /// Sequences costed per planner call (217 + 3 shifted elites at E2 defaults).
    pub planner_sequences: usize,
    /// One planner call (ms).
    pub planner_ms: f64,
    /// One E1 training call (ms).
    pub train_mlp_ms: f64,
    /// One E2 training call (ms).
    pub train_rbf_ms: f64,
    /// One environment step with the belief update, random policy, no training (µs).
    pub env_belief_us: f64,
}

/// Median milliseconds of one training call of `cfg`'s model on a fixed random window.
pub fn train_ms(cfg: &ActdynConfig, reps: usize) -> Result<f64, ActdynError> {
    let model = SeqVae::new(cfg.model.clone())?;
    let mut p = model.init(Key::new(1));
    let mut tr = Trainer::new(&model, cfg.train.clone())?;
    let (t, ny) = (cfg.train.window, cfg.env.obs_dim);
    let mut r = Key::new(2).rng();
    let y: Vec<f64> = (0..t * ny).map(|_| r.uniform_f64() * 2.0).collect();
    let u: Vec<f64> = (0..t * 2).map(|_| 0.2 * r.uniform_f64() - 0.1).collect();
    let mut err = None;
    let us = median_us(reps as u64, |i| {
        if let Err(e) = tr.step(&model, &mut p, &y, &u, Key::new(3).fold_in(i)) {
            err = Some(e);
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(us / 1e3),
    }
}

/// Runs every timing with `reps` repetitions each (1 to 1,000,000).
pub fn run(reps: usize) -> Result<BenchTimes, ActdynError> {
    if !(1..=1_000_000).contains(&reps) {
        return Err(ActdynError::invalid("reps", reps, "1 to 1000000"));
    }
    // Planner: an E2 run after 25 steps (elites and accumulated information exist), then
    // planner calls alone.
    let mut e2 = ActdynConfig::e2();
    e2.train.train_every = u64::MAX;
    e2.save_every = 0;
    let mut run = ActiveRun::new(e2.clone())?;
    for _ in 0..25 {
        run.step()?;
    }
    let mut err = None;
    let planner_us = median_us(reps as u64, |i| {
        if let Err(e) = run.act(Key::new(9).fold_in(i)) {
            err = Some(e);
        }
    });
    if let Some(e) = err {
        return Err(e);
    }
    let mut e1 = ActdynConfig::e1();
    e1.train.train_every = u64::MAX;
    e1.save_every = 0;
    let mut envrun = ActiveRun::new(e1)?;
    let env_belief_us = median_us(reps as u64 * 10, |_| {
        let _ = envrun.step();
    });
    let icem = &e2.policy;
    let mut n = icem.samples;
    let mut seqs = n;
    for _ in 1..icem.iterations {
        n = (2 * icem.elites).max((n as f64 / icem.decrease_factor).floor() as usize);
        seqs += n;
    }
    seqs += (icem.frac_elites_reused * icem.elites as f64).floor() as usize;
    Ok(BenchTimes {
        planner_sequences: seqs,
        planner_ms: planner_us / 1e3,
        train_mlp_ms: train_ms(&ActdynConfig::e1(), reps)?,
        train_rbf_ms: train_ms(&ActdynConfig::e2(), reps)?,
        env_belief_us,
    })
}
