//! The configuration of an actdyn experiment, and the two profiles.
//!
//! `faithful` reproduces the reference at `ceeba42` as it runs (with the two patches that make
//! it run at all: the identity action encoder ignores the state, and the gradient is clipped
//! at 10). `fixed` gives the intended math. Each deviation is its own switch ([`Bugs`]); a
//! profile sets them all, and `[bugs]` in a config overrides any one.

use crate::error::ActdynError;
use kestrel_core::FromInvalid;
use serde::{Deserialize, Serialize};

/// Which behaviour a run reproduces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProfileKind {
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
            pub fn of(profile: ProfileKind) -> Bugs {
                let on = profile == ProfileKind::Faithful;
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
            pub fn resolve(&self, profile: ProfileKind) -> Bugs {
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
#[serde(rename_all = "kebab-case")]
pub enum FieldKind {
    /// Limit cycle of radius 1 (the reference's only configurable field).
    #[default]
    #[serde(alias = "limit_cycle")]
    LimitCycle,
    /// Two nested cycles.
    #[serde(alias = "double_limit_cycle")]
    DoubleLimitCycle,
    /// A GP draw on a 40×40 grid with a restoring term (drawn from the run's seed).
    #[serde(alias = "multi_attractor")]
    MultiAttractor,
    /// Van der Pol (μ = 1).
    #[serde(alias = "van_der_pol")]
    VanDerPol,
    /// Duffing (a = 0.1, b = −0.1, c = 0.1).
    Duffing,
    /// The reference's snowman: two opposite cycles side by side (w = 1, d = 1, β = 10).
    Snowman,
}

/// The observation map of the true environment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObsKind {
    /// y = exp(Cz + b) (reference default).
    #[default]
    #[serde(alias = "log_linear")]
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
#[serde(rename_all = "kebab-case")]
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

impl EnvConfig {
    /// Checks every field; the error names it (`env.field`) and the value.
    pub fn validate(&self) -> Result<(), ActdynError> {
        let (e, bad) = (self, |f: &str, v: String, ok: &'static str| {
            Err(ActdynError::invalid(f.to_string(), v, ok))
        });
        use kestrel_core::check_finite as num;
        num("env.alpha", e.alpha, -1e3, 1e3)?;
        num("env.noise_scale", e.noise_scale, 0.0, 1e3)?;
        num("env.dt", e.dt, 1e-6, 10.0)?;
        num("env.obs_noise", e.obs_noise, 0.0, 1e6)?;
        num("env.action_bound", e.action_bound, 1e-9, 1e6)?;
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
                "gaussian unless env.obs is log-linear",
            );
        }
        Ok(())
    }
}

/// How actions are chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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
#[serde(rename_all = "kebab-case")]
pub enum MetricKind {
    /// Σ_p 1/I_p of the accumulated Fisher information (RBF dynamics).
    #[default]
    #[serde(alias = "a_optimality")]
    AOptimality,
    /// −Σ_p log(1 + I_p) (RBF dynamics).
    #[serde(alias = "d_optimality")]
    DOptimality,
    /// Σ‖u‖² (a baseline).
    #[serde(alias = "action_cost")]
    ActionCost,
    /// −Σ_t Σ_d variance across the ensemble's mean rollouts (RBF dynamics, `train.ensemble`
    /// ≥ 2).
    #[serde(alias = "ensemble_disagreement")]
    EnsembleDisagreement,
    /// Σ_t ‖z_t − `policy.goal`‖ along the mean rollout from the belief (RBF dynamics): the
    /// reference's `GoalDistanceMetric` (`faithful`: its z_0 … z_{H−1}; `fixed`: z_1 … z_H).
    #[serde(alias = "goal_distance")]
    GoalDistance,
    /// Σ_k w_k · metric_k over `policy.terms`: the reference's `CompositeMetric` (its
    /// experiments weight D-optimality 0.1 and action cost 5).
    Composite,
}

impl MetricKind {
    /// Whether this metric plans on the Fisher information of the RBF weights.
    pub fn is_fisher(self) -> bool {
        matches!(self, MetricKind::AOptimality | MetricKind::DOptimality)
    }
}

/// One weighted term of a composite objective (`policy.terms`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Term {
    /// The term's metric (any but `composite`).
    pub metric: MetricKind,
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
    pub metric: MetricKind,
    /// The weighted terms of `metric = "composite"`, e.g. `[{metric = "d-optimality", weight =
    /// 0.1}, {metric = "action-cost", weight = 5.0}]`; empty otherwise.
    pub terms: Vec<Term>,
    /// The latent goal of `goal-distance` (alone or as a term).
    pub goal: [f64; 2],
    /// Planning horizon H (10).
    pub horizon: usize,
    /// Initial samples N (32).
    pub num_samples: usize,
    /// Iterations per call (10).
    pub iterations: usize,
    /// Elites K_e (10; the reference's 100 > N crashes).
    pub num_elites: usize,
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
            metric: MetricKind::AOptimality,
            terms: Vec::new(),
            goal: [0.0, 0.0],
            horizon: 10,
            num_samples: 32,
            iterations: 10,
            num_elites: 10,
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
    pub fn objective(&self) -> Vec<(f64, MetricKind)> {
        match self.metric {
            MetricKind::Composite => self.terms.iter().map(|t| (t.weight, t.metric)).collect(),
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
    pub num_starts: usize,
    /// Posterior samples per start (100).
    pub num_samples: usize,
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
            num_starts: 200,
            num_samples: 100,
            seed: 1234,
            every: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_set_every_switch_and_overrides_take_one() {
        let on = Bugs::of(ProfileKind::Faithful);
        let off = Bugs::of(ProfileKind::Fixed);
        assert!(on.fisher_off_by_one && on.kl_prior_variance_v && on.env_alpha_autoscale);
        assert!(!off.fisher_off_by_one && !off.kl_prior_variance_v && !off.env_alpha_autoscale);
        let o = BugOverrides { fresh_optimizer: Some(false), ..BugOverrides::default() };
        let b = o.resolve(ProfileKind::Faithful);
        assert!(!b.fresh_optimizer && b.perturb_single_model);
        assert_eq!(BugOverrides::default().resolve(ProfileKind::Fixed), off);
    }
}
