//! One training call on a window (reference `VAEWrapper.train_model` as the agent makes it):
//! ELBO and its gradient, global gradient-norm clipping, an SGD or Adam step, then the
//! reference's random-walk perturbation of the dynamics weights. β annealing.

use crate::error::ActdynError;
use crate::model::{ElboNoise, ElboOptions, ElboTerms, ElboWorkspace, SeqVae};
use kestrel_core::{FromInvalid, Key};
use kestrel_nn::{Adam, AdamState};
use serde::{Deserialize, Serialize};

/// The optimiser of the online training calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OptimizerKind {
    /// Plain SGD (reference: no momentum; its weight decay is ignored for SGD).
    Sgd,
    /// Adam (β₁ 0.9, β₂ 0.999, ε 1e-8).
    Adam,
}

/// β annealing of the KL weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Annealing {
    /// β throughout (after the warm-up).
    None,
    /// min(β, β·(step − warmup)/steps).
    Linear,
    /// The linear ramp repeated with period 2·steps.
    Cyclic,
}

/// Training hyper-parameters; defaults are the reference's online training (`config.py`) with
/// the mandatory gradient clip of 10.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// Optimiser (SGD).
    pub optimizer: OptimizerKind,
    /// Global gradient-norm clip; 0 turns it off (the reference's dataclass default, with
    /// which online SGD diverges within five calls).
    pub grad_clip: f64,
    /// θ ← θ + σ·ε for every dynamics parameter after each step (reference 0.01).
    pub perturbation: f64,
    /// Posterior samples S (5).
    pub num_samples: usize,
    /// Prior steps K of the multi-step KL (5).
    pub k_steps: usize,
    /// Training window T (20).
    pub window: usize,
    /// Probability of masking a posterior sample (0).
    pub p_mask: f64,
    /// KL weight β (1).
    pub beta: f64,
    /// KL weight decay over k (0.8).
    pub kl_decay: f64,
    /// β annealing (none).
    pub annealing: Annealing,
    /// Annealing ramp length in steps (1,000).
    pub anneal_steps: u64,
    /// β = 0 before this many training calls (0).
    pub warmup: u64,
    /// Train every this many environment steps (1).
    pub train_every: u64,
    /// Dynamics models (1). Member 0 is the model's own dynamics, trained with the whole
    /// loss; members 1.. train only their dynamics (weights and process variance) on β·KL_w
    /// with the same window and draws, by SGD with the same clip (reference
    /// `BaseDynamicsEnsemble`). The perturbation applies to every member of an ensemble.
    pub ensemble: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            lr: 1e-3,
            optimizer: OptimizerKind::Sgd,
            ensemble: 1,
            grad_clip: 10.0,
            perturbation: 0.01,
            num_samples: 5,
            k_steps: 5,
            window: 20,
            p_mask: 0.0,
            beta: 1.0,
            kl_decay: 0.8,
            annealing: Annealing::None,
            anneal_steps: 1000,
            warmup: 0,
            train_every: 1,
        }
    }
}

impl TrainConfig {
    /// Checks every field; errors name it (`train.FIELD`).
    pub fn validate(&self) -> Result<(), ActdynError> {
        let fin = |f: &'static str, v: f64, lo: f64, hi: f64, ok: &'static str| {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(())
            } else {
                Err(ActdynError::invalid(f, v, ok))
            }
        };
        fin("train.lr", self.lr, 0.0, 1e3, "a finite number in [0, 1000]")?;
        fin("train.grad_clip", self.grad_clip, 0.0, 1e12, "a finite number >= 0 (0: no clip)")?;
        fin("train.perturbation", self.perturbation, 0.0, 1e3, "a finite number >= 0")?;
        fin("train.p_mask", self.p_mask, 0.0, 0.999, "a probability in [0, 0.999]")?;
        fin("train.beta", self.beta, 0.0, 1e6, "a finite number >= 0")?;
        fin("train.kl_decay", self.kl_decay, 1e-6, 1e3, "a finite number > 0")?;
        let int = |f: &'static str, v: u64, lo: u64, hi: u64, ok: &'static str| {
            if (lo..=hi).contains(&v) { Ok(()) } else { Err(ActdynError::invalid(f, v, ok)) }
        };
        int("train.num_samples", self.num_samples as u64, 1, 1000, "an integer in [1, 1000]")?;
        int("train.window", self.window as u64, 2, 10_000, "an integer in [2, 10000]")?;
        int(
            "train.k_steps",
            self.k_steps as u64,
            1,
            self.window as u64 - 1,
            "an integer in [1, window - 1]",
        )?;
        int("train.anneal_steps", self.anneal_steps, 1, u64::MAX, "an integer >= 1")?;
        int("train.train_every", self.train_every, 1, u64::MAX, "an integer >= 1")?;
        int("train.ensemble", self.ensemble as u64, 1, 64, "an integer in [1, 64]")?;
        Ok(())
    }

    /// β at training call `step` (0-based count of calls).
    pub fn beta_at(&self, step: u64) -> f64 {
        if step < self.warmup {
            return 0.0;
        }
        let s = (step - self.warmup) as f64;
        let a = self.anneal_steps as f64;
        match self.annealing {
            Annealing::None => self.beta,
            Annealing::Linear => self.beta.min(self.beta * s / a),
            Annealing::Cyclic => self.beta * ((s % (2.0 * a)) / a).min(1.0),
        }
    }
}

/// What one training call did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainStats {
    /// The ELBO terms before the step.
    pub terms: ElboTerms,
    /// β used.
    pub beta: f64,
    /// Global gradient norm before clipping.
    pub grad_norm: f64,
    /// The clip coefficient applied (1 when not clipping).
    pub clip_coef: f64,
}

/// `min(1, max_norm / (norm + 1e-6))` (PyTorch's `clip_grad_norm_`); 1 when `max_norm` is 0.
pub fn clip_coefficient(norm: f64, max_norm: f64) -> f64 {
    if max_norm > 0.0 { (max_norm / (norm + 1e-6)).min(1.0) } else { 1.0 }
}

/// Buffers and optimiser state of the training calls, reused between calls.
#[derive(Clone, Debug)]
pub struct Trainer {
    cfg: TrainConfig,
    ws: ElboWorkspace,
    noise: ElboNoise,
    grads: Vec<f64>,
    /// Adam's moments (persistent unless `fresh_optimizer`).
    pub adam: AdamState<f64>,
    /// Training calls made.
    pub calls: u64,
    /// The KL's prior variance is v·dt (the `fixed` profile) instead of v (the reference).
    pub kl_prior_variance_dt: bool,
    /// A new optimiser every call (the reference; a no-op for SGD, resets Adam's moments).
    pub fresh_optimizer: bool,
    /// Dynamics parameters of ensemble members 1.. (`(ensemble − 1) × dynamics_range().len()`).
    pub members: Vec<f64>,
    member_params: Vec<f64>,
    member_grads: Vec<f64>,
}

impl Trainer {
    /// A trainer for `model` (validates `cfg`).
    pub fn new(model: &SeqVae, cfg: TrainConfig) -> Result<Self, ActdynError> {
        cfg.validate()?;
        let d = model.config().latent_dim;
        Ok(Trainer {
            noise: ElboNoise::zeros(cfg.num_samples, cfg.window, cfg.k_steps, d),
            ws: ElboWorkspace::default(),
            grads: vec![0.0; model.num_params()],
            adam: AdamState::new(model.num_params()),
            calls: 0,
            kl_prior_variance_dt: false,
            fresh_optimizer: true,
            members: Vec::new(),
            member_params: Vec::new(),
            member_grads: Vec::new(),
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &TrainConfig {
        &self.cfg
    }

    /// One call on the window `y` (`T × N_y` next observations), `u` (`T × D`), drawing the
    /// ELBO noise and the perturbation from `key`. A non-finite loss or gradient is an error
    /// that leaves the parameters unchanged.
    pub fn step(
        &mut self,
        model: &SeqVae,
        params: &mut [f64],
        y: &[f64],
        u: &[f64],
        key: Key,
    ) -> Result<TrainStats, ActdynError> {
        let [key_elbo, key_perturb] = key.split::<2>();
        self.noise.draw(key_elbo, self.cfg.p_mask);
        let beta = self.cfg.beta_at(self.calls);
        let opts = ElboOptions {
            beta,
            kl_decay: self.cfg.kl_decay,
            kl_prior_variance_dt: self.kl_prior_variance_dt,
            ll_weight: 1.0,
        };
        self.step_with(model, params, y, u, &opts, key_perturb, None)
    }

    /// [`Trainer::step`] with the ELBO options given and, optionally, the ELBO draws and the
    /// perturbation noise injected (`perturb`: one standard normal per dynamics parameter, in
    /// the flat vector's order) — what the golden tests replay.
    #[allow(clippy::too_many_arguments)]
    pub fn step_with(
        &mut self,
        model: &SeqVae,
        params: &mut [f64],
        y: &[f64],
        u: &[f64],
        opts: &ElboOptions,
        key_perturb: Key,
        injected: Option<(&ElboNoise, &[f64])>,
    ) -> Result<TrainStats, ActdynError> {
        self.grads.iter_mut().for_each(|g| *g = 0.0);
        let noise = injected.map(|i| i.0).unwrap_or(&self.noise);
        let terms = model.elbo(params, y, u, noise, opts, &mut self.ws, Some(&mut self.grads));
        if !terms.loss.is_finite() {
            return Err(ActdynError::NonFinite { what: "loss", value: terms.loss });
        }
        let norm = kestrel_core::linalg::norm(&self.grads);
        if !norm.is_finite() {
            return Err(ActdynError::NonFinite { what: "gradient norm", value: norm });
        }
        let coef = clip_coefficient(norm, self.cfg.grad_clip);
        match self.cfg.optimizer {
            OptimizerKind::Sgd => {
                let step = self.cfg.lr * coef;
                for (p, g) in params.iter_mut().zip(&self.grads) {
                    *p -= step * g;
                }
            }
            OptimizerKind::Adam => {
                if self.fresh_optimizer {
                    self.adam.reset(params.len());
                }
                self.grads.iter_mut().for_each(|g| *g *= coef);
                Adam::new(self.cfg.lr).step(&mut self.adam, params, &self.grads)?;
            }
        }
        self.train_members(model, params, y, u, opts, injected.map(|i| i.0));
        if self.cfg.perturbation > 0.0 {
            let range = model.dynamics_range();
            match injected {
                Some((_, eps)) => {
                    for (p, e) in params[range].iter_mut().zip(eps) {
                        *p += self.cfg.perturbation * e;
                    }
                }
                None => {
                    let mut r = key_perturb.rng();
                    for p in params[range].iter_mut().chain(self.members.iter_mut()) {
                        *p += self.cfg.perturbation * r.standard_normal();
                    }
                }
            }
        }
        self.calls += 1;
        Ok(TrainStats { terms, beta: opts.beta, grad_norm: norm, clip_coef: coef })
    }

    /// Initialises members 1.. from `key` (the model's own initialisation of the dynamics).
    pub fn init_members(&mut self, model: &SeqVae, key: Key) {
        let range = model.dynamics_range();
        self.members.clear();
        for j in 1..self.cfg.ensemble {
            let p = model.init(key.fold_in(j as u64));
            self.members.extend_from_slice(&p[range.clone()]);
        }
    }

    /// Every member's dynamics parameters, member 0 (the model's own) first.
    pub fn member_dynamics<'a>(&'a self, model: &SeqVae, params: &'a [f64]) -> Vec<&'a [f64]> {
        let range = model.dynamics_range();
        let mut v = vec![&params[range.clone()]];
        v.extend(self.members.chunks(range.len()));
        v
    }

    fn train_members(
        &mut self,
        model: &SeqVae,
        params: &[f64],
        y: &[f64],
        u: &[f64],
        opts: &ElboOptions,
        injected: Option<&ElboNoise>,
    ) {
        if self.members.is_empty() {
            return;
        }
        let range = model.dynamics_range();
        let len = range.len();
        let mopts = ElboOptions { ll_weight: 0.0, ..opts.clone() };
        self.member_params.clear();
        self.member_params.extend_from_slice(params);
        self.member_grads.resize(params.len(), 0.0);
        for m in self.members.chunks_mut(len) {
            self.member_params[range.clone()].copy_from_slice(m);
            self.member_grads.iter_mut().for_each(|g| *g = 0.0);
            let noise = injected.unwrap_or(&self.noise);
            let terms = model.elbo(
                &self.member_params,
                y,
                u,
                noise,
                &mopts,
                &mut self.ws,
                Some(&mut self.member_grads),
            );
            let g = &self.member_grads[range.clone()];
            let norm = kestrel_core::linalg::norm(g);
            if !(terms.loss.is_finite() && norm.is_finite()) {
                // A diverged member keeps its parameters; the model's own step stands.
                continue;
            }
            let step = self.cfg.lr * clip_coefficient(norm, self.cfg.grad_clip);
            for (p, g) in m.iter_mut().zip(g) {
                *p -= step * g;
            }
        }
    }

    /// The gradient of the last call, before clipping (SGD) or after (Adam).
    pub fn grads(&self) -> &[f64] {
        &self.grads
    }
}

/// Saved transitions (what `kestrel actdyn run` saves and `kestrel actdyn retrain` trains on): `steps` rows of next observations (`steps × N_y`) and the actions that
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

#[cfg(test)]
mod tests {
    use super::*;

    /// β is 0 through the warm-up, then constant, a ramp capped at β, or a ramp repeating
    /// every `2 · anneal_steps` calls (held at β for the second half of each period).
    #[test]
    fn beta_follows_each_annealing_schedule() {
        let c = |annealing| TrainConfig {
            beta: 2.0,
            warmup: 3,
            anneal_steps: 4,
            annealing,
            ..TrainConfig::default()
        };
        let at = |a, steps: &[u64]| steps.iter().map(|&s| c(a).beta_at(s)).collect::<Vec<_>>();
        assert_eq!(at(Annealing::None, &[0, 2, 3, 100]), [0.0, 0.0, 2.0, 2.0]);
        assert_eq!(at(Annealing::Linear, &[2, 3, 5, 7, 50]), [0.0, 0.0, 1.0, 2.0, 2.0]);
        assert_eq!(at(Annealing::Cyclic, &[3, 5, 7, 9, 11, 13]), [0.0, 1.0, 2.0, 2.0, 0.0, 1.0]);
    }

    /// PyTorch's clip coefficient, and each field refused by its name with its value.
    #[test]
    fn clipping_follows_pytorch_and_bad_fields_are_named() {
        assert_eq!(clip_coefficient(3.0, 0.0), 1.0, "0: no clip");
        assert_eq!(clip_coefficient(1.0, 10.0), 1.0);
        assert!((clip_coefficient(20.0, 10.0) - 10.0 / (20.0 + 1e-6)).abs() < 1e-15);
        TrainConfig::default().validate().unwrap();
        let d = TrainConfig::default;
        for (bad, want) in [
            (TrainConfig { lr: f64::NAN, ..d() }, "train.lr = NaN"),
            (TrainConfig { p_mask: 1.0, ..d() }, "train.p_mask = 1"),
            (TrainConfig { window: 1, ..d() }, "train.window = 1"),
            (TrainConfig { window: 4, k_steps: 4, ..d() }, "train.k_steps = 4"),
            (TrainConfig { ensemble: 65, ..d() }, "train.ensemble = 65"),
        ] {
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
