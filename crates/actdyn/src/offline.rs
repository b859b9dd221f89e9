//! Offline retraining on saved transitions (reference `config.py` offline row): the run's
//! transitions cut into chunks, several passes (epochs) over them in shuffled mini-batches of
//! chunks, AdamW, the ELBO of each chunk as its loss.
//!
//! Each chunk's ELBO and gradient are computed on their own (in parallel, one workspace per
//! thread) and summed in chunk order, so results do not depend on the thread count.

use crate::ActdynError;
use crate::model::{ElboNoise, ElboOptions, ElboWorkspace, SeqVae};
use crate::train::clip_coefficient;
use kestrel_core::{FromInvalid, Key};
use kestrel_nn::{Adam, AdamState};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Offline training hyper-parameters (reference defaults: AdamW lr 1e-4, weight decay 1e-4,
/// 5,000 epochs, batches of 32 chunks of 1,000 steps, no perturbation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct OfflineConfig {
    /// Passes over the chunks (5,000).
    pub epochs: u64,
    /// Learning rate (1e-4).
    pub lr: f64,
    /// Decoupled weight decay (1e-4).
    pub weight_decay: f64,
    /// Chunks per mini-batch (32).
    pub batch: usize,
    /// Steps per chunk (1,000).
    pub chunk: usize,
    /// Global gradient-norm clip of each batch's mean gradient (10; 0: none).
    pub grad_clip: f64,
    /// Posterior samples S (5).
    pub samples: usize,
    /// Prior steps K (5).
    pub k_steps: usize,
    /// KL weight β (1).
    pub beta: f64,
    /// KL prior variance v·dt instead of v.
    pub kl_prior_variance_dt: bool,
    /// Seed of the shuffles and ELBO draws.
    pub seed: u64,
}

impl Default for OfflineConfig {
    fn default() -> Self {
        OfflineConfig {
            epochs: 5000,
            lr: 1e-4,
            weight_decay: 1e-4,
            batch: 32,
            chunk: 1000,
            grad_clip: 10.0,
            samples: 5,
            k_steps: 5,
            beta: 1.0,
            kl_prior_variance_dt: false,
            seed: 0,
        }
    }
}

impl OfflineConfig {
    /// Checks every field; errors name it (`offline.FIELD`).
    pub fn validate(&self) -> Result<(), ActdynError> {
        let num = |f: &'static str, v: f64, hi: f64| kestrel_core::check_finite(f, v, 0.0, hi);
        num("offline.lr", self.lr, 1e3)?;
        num("offline.weight_decay", self.weight_decay, 1.0)?;
        num("offline.grad_clip", self.grad_clip, 1e12)?;
        num("offline.beta", self.beta, 1e6)?;
        let int = |f: &'static str, v: u64, lo: u64, hi: u64| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(ActdynError::invalid(f, v, format!("an integer in [{lo}, {hi}]")))
            }
        };
        int("offline.epochs", self.epochs, 1, 100_000_000)?;
        int("offline.batch", self.batch as u64, 1, 100_000)?;
        int("offline.chunk", self.chunk as u64, 2, 1_000_000)?;
        int("offline.samples", self.samples as u64, 1, 1000)?;
        int("offline.k_steps", self.k_steps as u64, 1, self.chunk as u64 - 1)?;
        Ok(())
    }
}

/// Saved transitions: `steps` rows of next observations (`steps × N_y`) and the actions that
/// produced them (`steps × 2`), in time order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transitions {
    /// Observation width.
    pub obs_dim: usize,
    /// Next observations.
    pub next_obs: Vec<f64>,
    /// Actions.
    pub action: Vec<f64>,
}

impl Transitions {
    /// Rows held.
    pub fn len(&self) -> usize {
        self.action.len() / 2
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.action.is_empty()
    }
}

/// What retraining did per epoch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpochStats {
    /// 1-based epoch.
    pub epoch: u64,
    /// Mean loss per step over the epoch's chunks (−ELBO/T).
    pub loss_per_t: f64,
}

/// Checks `cfg` and that `data` fits `model` and holds at least one chunk: everything
/// [`retrain`] refuses, callable before any work (a run folder) starts. Returns the chunks.
pub fn check_data(
    model: &SeqVae,
    data: &Transitions,
    cfg: &OfflineConfig,
) -> Result<usize, ActdynError> {
    cfg.validate()?;
    let ny = model.config().obs_dim;
    if data.obs_dim != ny {
        return Err(ActdynError::invalid("transitions obs_dim", data.obs_dim, format!("{ny}")));
    }
    let n_chunks = data.len() / cfg.chunk;
    if n_chunks == 0 {
        return Err(ActdynError::invalid(
            "offline.chunk",
            cfg.chunk,
            format!("at most the {} saved transitions", data.len()),
        ));
    }
    Ok(n_chunks)
}

/// Retrains `params` on `data` for `cfg.epochs` epochs, calling `each(stats)` after every
/// epoch (return `false` to stop). Chunks are consecutive, non-overlapping runs of
/// `cfg.chunk` steps (a shorter tail is dropped).
pub fn retrain(
    model: &SeqVae,
    params: &mut [f64],
    data: &Transitions,
    cfg: &OfflineConfig,
    mut each: impl FnMut(&EpochStats) -> bool,
) -> Result<(), ActdynError> {
    let n_chunks = check_data(model, data, cfg)?;
    let (ny, d) = (model.config().obs_dim, model.config().latent_dim);
    let t = cfg.chunk;
    let opts = ElboOptions {
        beta: cfg.beta,
        kl_prior_variance_dt: cfg.kl_prior_variance_dt,
        ..ElboOptions::default()
    };
    let adam = Adam::new(cfg.lr);
    let mut state = AdamState::new(params.len());
    let key = Key::new(cfg.seed);
    let mut order: Vec<usize> = (0..n_chunks).collect();
    let mut grads = vec![0.0; params.len()];
    let mut slots: Vec<(f64, Vec<f64>)> =
        (0..cfg.batch.min(n_chunks)).map(|_| (0.0, vec![0.0; params.len()])).collect();
    for epoch in 1..=cfg.epochs {
        let ek = key.fold_in(epoch);
        // Fisher–Yates with the epoch's key.
        let mut r = ek.fold_in(u64::MAX).rng();
        for i in (1..n_chunks).rev() {
            let j = r.below(i as u32 + 1) as usize;
            order.swap(i, j);
        }
        let mut epoch_loss = 0.0;
        for (b, batch) in order.chunks(cfg.batch).enumerate() {
            let p: &[f64] = params;
            // One gradient slot per chunk of the batch (allocated once), summed in chunk order.
            let used = &mut slots[..batch.len()];
            used.par_iter_mut().zip(batch.par_iter()).for_each_init(
                || (ElboWorkspace::default(), ElboNoise::zeros(cfg.samples, t, cfg.k_steps, d)),
                |(ws, noise), ((loss, g), &c)| {
                    noise.draw(ek.fold_in(b as u64).fold_in(c as u64), 0.0);
                    g.iter_mut().for_each(|v| *v = 0.0);
                    let y = &data.next_obs[c * t * ny..(c + 1) * t * ny];
                    let u = &data.action[c * t * 2..(c + 1) * t * 2];
                    *loss = model.elbo(p, y, u, noise, &opts, ws, Some(g)).loss;
                },
            );
            grads.iter_mut().for_each(|g| *g = 0.0);
            let scale = 1.0 / batch.len() as f64;
            for (loss, g) in used.iter() {
                epoch_loss += loss / t as f64;
                for (a, b) in grads.iter_mut().zip(g) {
                    *a += scale * b;
                }
            }
            let norm = grads.iter().map(|g| g * g).sum::<f64>().sqrt();
            if !norm.is_finite() {
                return Err(ActdynError::NonFinite { what: "offline gradient norm", value: norm });
            }
            let coef = clip_coefficient(norm, cfg.grad_clip);
            grads.iter_mut().for_each(|g| *g *= coef);
            // AdamW: decoupled weight decay, then the Adam step.
            let decay = 1.0 - cfg.lr * cfg.weight_decay;
            params.iter_mut().for_each(|p| *p *= decay);
            adam.step(&mut state, params, &grads)?;
        }
        let stats = EpochStats { epoch, loss_per_t: epoch_loss / n_chunks as f64 };
        if !stats.loss_per_t.is_finite() {
            return Err(ActdynError::NonFinite { what: "offline loss", value: stats.loss_per_t });
        }
        if !each(&stats) {
            break;
        }
    }
    Ok(())
}
