//! The whole active-dynamics experiment's config (seed, steps, profile, every part's section,
//! checkpoint and save cadence): the run's, built from `kestrel_actdyn`'s part configs.

use kestrel_actdyn::ActdynError;
use kestrel_actdyn::config::{
    BugOverrides, Bugs, EnvConfig, EvalConfig, MetricKind, PolicyConfig, PolicyKind, ProfileKind,
};
use kestrel_actdyn::model::ModelConfig;
use kestrel_actdyn::train::TrainConfig;
use kestrel_core::FromInvalid;
use serde::{Deserialize, Serialize};

/// A whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct ActdynConfig {
    /// Seed of everything (42).
    pub seed: u64,
    /// Loop steps (10,000): environment steps, or model steps of `model.dt / env.dt`
    /// environment steps each when the model's step is longer.
    pub steps: u64,
    /// Behaviour: `faithful` (the reference as it runs, its bugs included) or `fixed` (the
    /// intended math).
    pub profile: ProfileKind,
    /// Single-switch overrides of the profile.
    #[documented(nested)]
    pub bugs: BugOverrides,
    /// True environment.
    #[documented(nested)]
    pub env: EnvConfig,
    /// Model.
    #[documented(nested)]
    pub model: ModelConfig,
    /// Online training.
    #[documented(nested)]
    pub train: TrainConfig,
    /// Policy.
    #[documented(nested)]
    pub policy: PolicyConfig,
    /// Evaluation.
    #[documented(nested)]
    pub eval: EvalConfig,
    /// Save a checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: u64,
    /// Persist the transitions (next observation, action, latent) every this many steps
    /// (1,000, as the reference; 0: never), for offline retraining.
    pub save_every: u64,
}

impl Default for ActdynConfig {
    fn default() -> Self {
        ActdynConfig {
            seed: 42,
            steps: 10_000,
            profile: ProfileKind::Faithful,
            bugs: BugOverrides::default(),
            env: EnvConfig::default(),
            model: ModelConfig::default(),
            train: TrainConfig::default(),
            policy: PolicyConfig::default(),
            eval: EvalConfig::default(),
            checkpoint_every: 1000,
            save_every: 1000,
        }
    }
}

impl ActdynConfig {
    /// E1 of the reference: random policy, MLP dynamics, defaults (with clip 10).
    pub fn e1() -> Self {
        ActdynConfig::default()
    }

    /// E2 of the reference: RBF dynamics, iCEM with 10 elites, A-optimality.
    pub fn e2() -> Self {
        let mut c = ActdynConfig::default();
        c.model.dynamics = kestrel_actdyn::model::DynamicsKind::rbf_default();
        c.policy.kind = PolicyKind::Icem;
        c
    }

    /// The resolved switches.
    pub fn bugs(&self) -> Bugs {
        self.bugs.resolve(self.profile)
    }

    /// Environment steps per model step, n = `model.dt` / `env.dt` (validated to be whole).
    ///
    /// With n > 1 each step of the loop (and of the validation episodes) holds its action for
    /// n environment steps and observes only the last of them: the observations are
    /// downsampled to the model's step, as the reference downsamples its rollouts by
    /// `model.dt / env.dt` before training (`Rollout.downsample`, `actdyn/utils/rollout.py`
    /// at `d406ea6`). The reference still plans every environment step and downsamples only
    /// the training data; Kestrel plans once per model step, the only step its model can
    /// predict. The action the model sees is [`Bugs::downsample_action_sum`]'s.
    pub fn substeps(&self) -> u64 {
        (self.model.dt / self.env.dt).round().max(1.0) as u64
    }

    /// Checks every field; the error names it (`section.field`) and the value.
    pub fn validate(&self) -> Result<(), ActdynError> {
        let bad =
            |f: &str, v: String, ok: &'static str| Err(ActdynError::invalid(f.to_string(), v, ok));
        if !(1..=100_000_000).contains(&self.steps) {
            return bad("steps", self.steps.to_string(), "an integer in [1, 100000000]");
        }
        self.env.validate()?;
        let e = &self.env;
        if self.model.obs_dim != e.obs_dim {
            return Err(ActdynError::invalid(
                "model.obs_dim",
                self.model.obs_dim,
                format!("env.obs_dim ({})", e.obs_dim),
            ));
        }
        // The model's step is a whole number of the environment's (see `substeps`).
        let ratio = self.model.dt / e.dt;
        let n = ratio.round();
        if !(ratio.is_finite() && (1.0..=1000.0).contains(&n) && (ratio - n).abs() <= 1e-9 * n) {
            return Err(ActdynError::invalid(
                "model.dt",
                self.model.dt,
                format!("a whole multiple (1 to 1000 times) of env.dt = {}", e.dt),
            ));
        }
        if self.model.latent_dim != 2 {
            return bad(
                "model.latent_dim",
                self.model.latent_dim.to_string(),
                "2 (the true latent)",
            );
        }
        self.train.validate()?;
        let p = &self.policy;
        if p.kind == PolicyKind::Icem && self.model.action_encoder.state_dependent() {
            return bad(
                "model.action_encoder.state_dependent",
                "true".into(),
                "false with the icem policy (the planners encode actions without the state, \
                 as the reference's MPC calls action_encoder(actions))",
            );
        }
        if p.hold == 0 {
            return bad("policy.hold", "0".into(), "an integer >= 1");
        }
        if p.metric == MetricKind::Composite {
            if p.terms.is_empty() {
                return bad(
                    "policy.terms",
                    "[]".into(),
                    "at least one term with metric = composite",
                );
            }
            for (i, t) in p.terms.iter().enumerate() {
                if t.metric == MetricKind::Composite {
                    return bad(
                        &format!("policy.terms[{i}].metric"),
                        "composite".into(),
                        "a plain metric",
                    );
                }
                if !t.weight.is_finite() {
                    return bad(
                        &format!("policy.terms[{i}].weight"),
                        t.weight.to_string(),
                        "finite",
                    );
                }
            }
        } else if !p.terms.is_empty() {
            return bad(
                "policy.terms",
                format!("{} terms", p.terms.len()),
                "empty unless policy.metric = \"composite\"",
            );
        }
        if !p.goal.iter().all(|g| g.is_finite()) {
            return bad("policy.goal", format!("{:?}", p.goal), "finite");
        }
        if p.kind == PolicyKind::Icem {
            let rbf =
                matches!(self.model.dynamics, kestrel_actdyn::model::DynamicsKind::Rbf { .. });
            // Each metric of the objective (a composite's terms each), named by its key.
            for (i, (_, m)) in p.objective().into_iter().enumerate() {
                let key = if p.metric == MetricKind::Composite {
                    format!("policy.terms[{i}].metric")
                } else {
                    "policy.metric".to_string()
                };
                if m.is_fisher() && !rbf {
                    return bad(
                        &key,
                        format!("{m:?}"),
                        "action-cost unless model.dynamics is rbf (the Fisher information is defined for RBF weights; the reference's MLP version is a stub)",
                    );
                }
                if self.model.decoder != kestrel_actdyn::model::DecoderKind::LogLinear
                    && m.is_fisher()
                {
                    return bad(
                        "model.decoder",
                        format!("{:?}", self.model.decoder),
                        "log-linear with a Fisher metric",
                    );
                }
                if m == MetricKind::EnsembleDisagreement && (!rbf || self.train.ensemble < 2) {
                    return bad(
                        &key,
                        "ensemble-disagreement".into(),
                        "with RBF dynamics and train.ensemble >= 2",
                    );
                }
                if m == MetricKind::GoalDistance && !rbf {
                    return bad(
                        &key,
                        "goal-distance".into(),
                        "with RBF dynamics (its rollout is the RBF model's mean)",
                    );
                }
            }
            kestrel_core::check_finite("policy.discount", p.discount, 0.0, 1.0)?;
        }
        let v = &self.eval;
        if !(1..=10_000).contains(&v.episodes) {
            return bad("eval.episodes", v.episodes.to_string(), "an integer in [1, 10000]");
        }
        if !(1..=1000).contains(&v.k_max) {
            return bad("eval.k_max", v.k_max.to_string(), "an integer in [1, 1000]");
        }
        if v.steps < v.k_max + 2 || v.steps > 1_000_000 {
            return bad("eval.steps", v.steps.to_string(), "an integer in [k_max + 2, 1000000]");
        }
        if !(1..=100_000).contains(&v.num_starts) {
            return bad("eval.num_starts", v.num_starts.to_string(), "an integer in [1, 100000]");
        }
        if !(1..=10_000).contains(&v.num_samples) {
            return bad("eval.num_samples", v.num_samples.to_string(), "an integer in [1, 10000]");
        }
        kestrel_core::check_bytes(
            "eval.num_samples",
            v.num_samples,
            (v.num_samples as u128) * (v.steps as u128) * 2 * (v.episodes as u128).min(2),
            8,
        )?;
        kestrel_core::check_bytes(
            "eval.steps",
            v.steps,
            (v.episodes as u128) * (v.steps as u128) * (e.obs_dim as u128 + 6),
            8,
        )?;
        kestrel_core::check_bytes(
            "train.window",
            self.train.window,
            (self.train.window as u128)
                * (e.obs_dim as u128 + 4)
                * (self.train.num_samples as u128 + 2),
            8 * 8,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_actdyn::config::{ObsKind, ObsNoiseKind};

    #[test]
    fn the_reference_experiments_validate_and_bad_fields_are_named() {
        ActdynConfig::e1().validate().unwrap();
        ActdynConfig::e2().validate().unwrap();
        assert_eq!(ActdynConfig::e2().policy.kind, PolicyKind::Icem);
        let cases: Vec<(ActdynConfig, &str)> = vec![
            (ActdynConfig { steps: 0, ..ActdynConfig::e1() }, "steps"),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.env.dt = 0.0;
                    c
                },
                "env.dt",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.env.alpha = f64::NAN;
                    c
                },
                "env.alpha",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.env.obs_dim = 0;
                    c
                },
                "env.obs_dim",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.model.obs_dim = 7;
                    c
                },
                "model.obs_dim",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.model.latent_dim = 3;
                    c
                },
                "model.latent_dim",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.env.obs = ObsKind::Identity;
                    c
                },
                "env.obs_dim",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.env.obs = ObsKind::Linear;
                    c.env.obs_noise_kind = ObsNoiseKind::Poisson;
                    c
                },
                "env.obs_noise_kind",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.policy.hold = 0;
                    c
                },
                "policy.hold",
            ),
            // A Fisher objective needs RBF dynamics (e1's are an MLP).
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.policy.kind = PolicyKind::Icem;
                    c
                },
                "policy.metric",
            ),
            (
                {
                    let mut c = ActdynConfig::e2();
                    c.policy.discount = 1.5;
                    c
                },
                "policy.discount",
            ),
            (
                {
                    let mut c = ActdynConfig::e2();
                    c.policy.metric = MetricKind::EnsembleDisagreement;
                    c
                },
                "policy.metric",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.eval.episodes = 0;
                    c
                },
                "eval.episodes",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.eval.steps = c.eval.k_max;
                    c
                },
                "eval.steps",
            ),
            (
                {
                    let mut c = ActdynConfig::e1();
                    c.eval.num_samples = 0;
                    c
                },
                "eval.num_samples",
            ),
        ];
        for (c, field) in cases {
            let e = c.validate().expect_err(field).to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
