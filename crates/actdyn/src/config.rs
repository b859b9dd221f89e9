//! The configuration of an actdyn experiment, and the two profiles.
//!
//! `faithful` reproduces the reference at `ceeba42` as it runs (with the two patches that make
//! it run at all: the identity action encoder ignores the state, and the gradient is clipped
//! at 10). `fixed` gives the intended math. Each deviation is its own switch ([`Bugs`]); a
//! profile sets them all, and `[bugs]` in a config overrides any one.

use crate::ActdynError;
use crate::model::ModelConfig;
use crate::train::TrainConfig;
use kestrel_core::FromInvalid;
use serde::{Deserialize, Serialize};

/// Which behaviour a run reproduces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The reference as it runs.
    #[default]
    Faithful,
    /// The intended math.
    Fixed,
}

/// Declares [`Bugs`] (one `bool` per switch), [`BugOverrides`] (one `Option<bool>` each) and
/// the resolution of one by the other, from a single list of switches.
macro_rules! bug_switches {
    ($($(#[doc = $doc:expr])* $name:ident,)*) => {
        /// The reference's deviations from the intended math, each switchable (`true` = behave
        /// as the reference does).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub struct Bugs {
            $($(#[doc = $doc])* pub $name: bool,)*
        }

        impl Bugs {
            /// Every switch as the profile sets it (all on for `faithful`, off for `fixed`).
            pub fn of(profile: Profile) -> Bugs {
                let on = profile == Profile::Faithful;
                Bugs { $($name: on,)* }
            }
        }

        /// Overrides of single [`Bugs`] switches (unset: the profile's).
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, kestrel_core::Documented)]
        #[serde(default, deny_unknown_fields)]
        pub struct BugOverrides {
            $($(#[doc = $doc])* pub $name: Option<bool>,)*
        }

        impl BugOverrides {
            /// The profile's switches with these overrides applied.
            pub fn resolve(&self, profile: Profile) -> Bugs {
                let b = Bugs::of(profile);
                Bugs { $($name: self.$name.unwrap_or(b.$name),)* }
            }
        }
    };
}

bug_switches! {
    /// Process noise σ = √Q·dt (C) instead of the Euler–Maruyama √(Q·dt).
    env_noise_sqrt_q_times_dt,
    /// The limit cycle's α auto-scaled from the grid (0.1) instead of `env.alpha` (0.25).
    env_alpha_autoscale,
    /// The Fisher recursion's Jacobian as coded: without 2γ, transposed, plus an all-ones
    /// matrix (instead of ∂μ′/∂z).
    fisher_jacobian_as_coded,
    /// The sensitivities off by one step (S_0 = I⊗Φ_0, S_t uses Φ_{t−1}; information from
    /// z_0..z_{H−1}) instead of S_{t+1} = I⊗Φ(z_t) + J S_t from z_1..z_H.
    fisher_off_by_one,
    /// The belief is the encoder mean at the last *pre-step* observation of the window, run
    /// without actions (so it lags one step; before the window fills only the latest
    /// observation is encoded), and the reset belief is a sample; instead of the mean at the
    /// newest observation, with actions.
    belief_lagged_action_free,
    /// The 0.01 random walk on the dynamics weights after every step, on a single model
    /// (meant for ensembles); off: no perturbation.
    perturb_single_model,
    /// A new optimiser every training call (a no-op for SGD; resets Adam's moments).
    fresh_optimizer,
    /// The KL's prior variance is v, not the v·dt the prior samples with.
    kl_prior_variance_v,
    /// With `model.dt` = n·`env.dt`, a model step's action is the sum of its n env steps'
    /// actions (the reference's `Rollout.downsample`), n·u for the held u, which the model's
    /// `u·dt` transition then counts n times; off: the held action u itself. It is what the
    /// model trains on and what the saved transitions hold; the planners still roll out (and
    /// the environment still receives) u, as the reference's MPC plans raw actions.
    downsample_action_sum,
}

/// The true vector field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Limit cycle of radius 1 (the reference's only configurable field).
    #[default]
    LimitCycle,
    /// Two nested cycles.
    DoubleLimitCycle,
    /// A GP draw on a 40×40 grid with a restoring term (drawn from the run's seed).
    MultiAttractor,
    /// Van der Pol (μ = 1).
    VanDerPol,
    /// Duffing (a = 0.1, b = −0.1, c = 0.1).
    Duffing,
    /// The reference's snowman: two opposite cycles side by side (w = 1, d = 1, β = 10).
    Snowman,
}

/// The observation map of the true environment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObsKind {
    /// y = exp(Cz + b) (reference default).
    #[default]
    LogLinear,
    /// y = Cz + b.
    Linear,
    /// y = z (N_y = 2).
    Identity,
    /// y = MLP(z): one ReLU hidden layer of 16, PyTorch-default weights from the seed.
    Mlp,
}

/// Observation noise of the true environment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObsNoiseKind {
    /// Gaussian with `obs_noise` as its standard deviation (0 = noiseless, the default).
    #[default]
    Gaussian,
    /// Poisson counts with rate y (the reference's bug y + Poisson(y) is not reproduced).
    Poisson,
}

/// The true environment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct EnvConfig {
    /// The vector field.
    pub field: FieldKind,
    /// α when not auto-scaled (H's `env_alpha`, 0.25; the reference ignores it).
    pub alpha: f64,
    /// Process noise scale Q (0.1).
    pub noise_scale: f64,
    /// Time step (0.1).
    pub dt: f64,
    /// Observation map.
    pub obs: ObsKind,
    /// Observation width N_y (50).
    pub obs_dim: usize,
    /// Observation noise kind.
    pub obs_noise_kind: ObsNoiseKind,
    /// Gaussian observation noise standard deviation (0).
    pub obs_noise: f64,
    /// Actions lie in [−action_bound, action_bound]² (0.1).
    pub action_bound: f64,
}

impl Default for EnvConfig {
    fn default() -> Self {
        EnvConfig {
            field: FieldKind::LimitCycle,
            alpha: 0.25,
            noise_scale: 0.1,
            dt: 0.1,
            obs: ObsKind::LogLinear,
            obs_dim: 50,
            obs_noise_kind: ObsNoiseKind::Gaussian,
            obs_noise: 0.0,
            action_bound: 0.1,
        }
    }
}

/// How actions are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyKind {
    /// Uniform in the action box every step (E1).
    #[default]
    Random,
    /// Zero action.
    Lazy,
    /// A uniform action held for `hold` steps.
    Step,
    /// iCEM over action sequences minimising `metric` (E2).
    Icem,
}

/// The planner's objective.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Σ_p 1/I_p of the accumulated Fisher information (RBF dynamics).
    #[default]
    AOptimality,
    /// −Σ_p log(1 + I_p) (RBF dynamics).
    DOptimality,
    /// Σ‖u‖² (a baseline).
    ActionCost,
    /// −Σ_t Σ_d variance across the ensemble's mean rollouts (RBF dynamics, `train.ensemble`
    /// ≥ 2).
    EnsembleDisagreement,
    /// Σ_t ‖z_t − `policy.goal`‖ along the mean rollout from the belief (RBF dynamics): the
    /// reference's `GoalDistanceMetric` (`faithful`: its z_0 … z_{H−1}; `fixed`: z_1 … z_H).
    GoalDistance,
    /// Σ_k w_k · metric_k over `policy.terms`: the reference's `CompositeMetric` (its
    /// experiments weight D-optimality 0.1 and action cost 5).
    Composite,
}

impl Metric {
    /// Whether this metric plans on the Fisher information of the RBF weights.
    pub fn is_fisher(self) -> bool {
        matches!(self, Metric::AOptimality | Metric::DOptimality)
    }
}

/// One weighted term of a composite objective (`policy.terms`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// The term's metric (any but `composite`).
    pub metric: Metric,
    /// Its weight (finite; negative rewards the metric).
    pub weight: f64,
}

/// The policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// Which policy.
    pub kind: PolicyKind,
    /// Steps an action is held (`step` policy; 10).
    pub hold: u64,
    /// Planner objective.
    pub metric: Metric,
    /// The weighted terms of `metric = "composite"`, e.g. `[{metric = "d_optimality", weight =
    /// 0.1}, {metric = "action_cost", weight = 5.0}]`; empty otherwise.
    pub terms: Vec<Term>,
    /// The latent goal of `goal_distance` (alone or as a term).
    pub goal: [f64; 2],
    /// Planning horizon H (10).
    pub horizon: usize,
    /// Initial samples N (32).
    pub samples: usize,
    /// Iterations per call (10).
    pub iterations: usize,
    /// Elites K_e (10; the reference's 100 > N crashes).
    pub elites: usize,
    /// Momentum of the mean and standard deviation (0.1).
    pub alpha: f64,
    /// Initial standard deviation as a fraction of the half-box (0.5).
    pub init_std: f64,
    /// Sample-count decay factor (1.25).
    pub decrease_factor: f64,
    /// Fraction of elites carried to the next iteration and call (0.3).
    pub frac_elites_reused: f64,
    /// Pink-noise exponent β (1).
    pub noise_beta: f64,
    /// Discount of the accumulated information (0.99).
    pub discount: f64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            kind: PolicyKind::Random,
            hold: 10,
            metric: Metric::AOptimality,
            terms: Vec::new(),
            goal: [0.0, 0.0],
            horizon: 10,
            samples: 32,
            iterations: 10,
            elites: 10,
            alpha: 0.1,
            init_std: 0.5,
            decrease_factor: 1.25,
            frac_elites_reused: 0.3,
            noise_beta: 1.0,
            discount: 0.99,
        }
    }
}

impl PolicyConfig {
    /// The planner's objective as weighted metrics: `terms` for a composite, else the one
    /// metric with weight 1.
    pub fn objective(&self) -> Vec<(f64, Metric)> {
        match self.metric {
            Metric::Composite => self.terms.iter().map(|t| (t.weight, t.metric)).collect(),
            m => vec![(1.0, m)],
        }
    }

    /// Whether the iCEM policy plans on the Fisher information (alone or as a term).
    pub fn plans_on_fisher(&self) -> bool {
        // Terms are empty unless the metric is a composite (validated); no allocation: this
        // is asked every step.
        self.kind == PolicyKind::Icem
            && (self.metric.is_fisher() || self.terms.iter().any(|t| t.metric.is_fisher()))
    }
}

/// The evaluation (reference `compute_model_r2` and spec §4.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct EvalConfig {
    /// Validation episodes (10).
    pub episodes: usize,
    /// Steps per episode (500).
    pub steps: usize,
    /// Largest prediction horizon k (10).
    pub k_max: usize,
    /// Start indices per episode (200).
    pub starts: usize,
    /// Posterior samples per start (100).
    pub samples: usize,
    /// Seed of the validation data (1234).
    pub seed: u64,
    /// Evaluate every this many environment steps (0: only at the end).
    pub every: u64,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            episodes: 10,
            steps: 500,
            k_max: 10,
            starts: 200,
            samples: 100,
            seed: 1234,
            every: 0,
        }
    }
}

/// A whole experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct ActdynConfig {
    /// Seed of everything (42).
    pub seed: u64,
    /// Loop steps (10,000): environment steps, or model steps of `model.dt / env.dt`
    /// environment steps each when the model's step is longer.
    pub steps: u64,
    /// Profile.
    pub profile: Profile,
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
            profile: Profile::Faithful,
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
        c.model.dynamics = crate::model::DynamicsKind::rbf_default();
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
        let e = &self.env;
        let num = |f: &'static str, v: f64, lo: f64, hi: f64| -> Result<(), ActdynError> {
            if v.is_finite() && v >= lo && v <= hi {
                Ok(())
            } else {
                Err(ActdynError::invalid(f, v, format!("a finite number in [{lo}, {hi}]")))
            }
        };
        num("env.alpha", e.alpha, -1e3, 1e3)?;
        num("env.noise_scale", e.noise_scale, 0.0, 1e3)?;
        num("env.dt", e.dt, 1e-6, 10.0)?;
        num("env.obs_noise", e.obs_noise, 0.0, 1e6)?;
        num("env.action_bound", e.action_bound, 1e-9, 1e6)?;
        if e.dt <= 0.0 {
            return bad("env.dt", e.dt.to_string(), "a number > 0");
        }
        if !(1..=100_000).contains(&e.obs_dim) {
            return bad("env.obs_dim", e.obs_dim.to_string(), "an integer in [1, 100000]");
        }
        if e.obs == ObsKind::Identity && e.obs_dim != 2 {
            return bad("env.obs_dim", e.obs_dim.to_string(), "2 with the identity observation");
        }
        if e.obs_noise_kind == ObsNoiseKind::Poisson && e.obs != ObsKind::LogLinear {
            // Poisson counts need a positive rate.
            return bad(
                "env.obs_noise_kind",
                "poisson".into(),
                "gaussian unless env.obs is log_linear",
            );
        }
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
        if p.metric == Metric::Composite {
            if p.terms.is_empty() {
                return bad(
                    "policy.terms",
                    "[]".into(),
                    "at least one term with metric = composite",
                );
            }
            for (i, t) in p.terms.iter().enumerate() {
                if t.metric == Metric::Composite {
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
            let rbf = matches!(self.model.dynamics, crate::model::DynamicsKind::Rbf { .. });
            // Each metric of the objective (a composite's terms each), named by its key.
            for (i, (_, m)) in p.objective().into_iter().enumerate() {
                let key = if p.metric == Metric::Composite {
                    format!("policy.terms[{i}].metric")
                } else {
                    "policy.metric".to_string()
                };
                if m.is_fisher() && !rbf {
                    return bad(
                        &key,
                        format!("{m:?}"),
                        "action_cost unless model.dynamics is rbf (the Fisher information is defined for RBF weights; the reference's MLP version is a stub)",
                    );
                }
                if self.model.decoder != crate::model::DecoderKind::LogLinear && m.is_fisher() {
                    return bad(
                        "model.decoder",
                        format!("{:?}", self.model.decoder),
                        "log_linear with a Fisher metric",
                    );
                }
                if m == Metric::EnsembleDisagreement && (!rbf || self.train.ensemble < 2) {
                    return bad(
                        &key,
                        "ensemble_disagreement".into(),
                        "with RBF dynamics and train.ensemble >= 2",
                    );
                }
                if m == Metric::GoalDistance && !rbf {
                    return bad(
                        &key,
                        "goal_distance".into(),
                        "with RBF dynamics (its rollout is the RBF model's mean)",
                    );
                }
            }
            num("policy.discount", p.discount, 0.0, 1.0)?;
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
        if !(1..=100_000).contains(&v.starts) {
            return bad("eval.starts", v.starts.to_string(), "an integer in [1, 100000]");
        }
        if !(1..=10_000).contains(&v.samples) {
            return bad("eval.samples", v.samples.to_string(), "an integer in [1, 10000]");
        }
        kestrel_core::check_bytes(
            "eval.samples",
            v.samples,
            (v.samples as u128) * (v.steps as u128) * 2 * (v.episodes as u128).min(2),
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
                * (self.train.samples as u128 + 2),
            8 * 8,
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_set_every_switch_and_overrides_take_one() {
        let on = Bugs::of(Profile::Faithful);
        let off = Bugs::of(Profile::Fixed);
        assert!(on.fisher_off_by_one && on.kl_prior_variance_v && on.env_alpha_autoscale);
        assert!(!off.fisher_off_by_one && !off.kl_prior_variance_v && !off.env_alpha_autoscale);
        let o = BugOverrides { fresh_optimizer: Some(false), ..BugOverrides::default() };
        let b = o.resolve(Profile::Faithful);
        assert!(!b.fresh_optimizer && b.perturb_single_model);
        assert_eq!(BugOverrides::default().resolve(Profile::Fixed), off);
    }

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
                    c.policy.metric = Metric::EnsembleDisagreement;
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
                    c.eval.samples = 0;
                    c
                },
                "eval.samples",
            ),
        ];
        for (c, field) in cases {
            let e = c.validate().expect_err(field).to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
    }
}
