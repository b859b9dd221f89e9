//! The online loop (reference `Experiment.run`, spec §3), working end to end: plan → act →
//! store in a fixed window → update the belief → accumulate information → one training step.
//!
//! Keys: everything derives from the seed. `Key::new(seed)` splits into model, environment
//! (observation weights, multi-attractor grid), reset and evaluation keys; environment step t
//! (1-based) uses `steps.fold_in(t)` split into policy, environment-noise and training keys.
//! A run resumed from a checkpoint therefore continues exactly as the uninterrupted run.

use super::config::ActdynConfig;
use kestrel_actdyn::ActdynError;
use kestrel_actdyn::config::{Bugs, MetricKind, PolicyKind, ProfileKind};
use kestrel_actdyn::env::build_env;
use kestrel_actdyn::eval::{Downsample, Evaluation, ValidationData, evaluate, validation_data};
use kestrel_actdyn::fisher::{
    AccumulatedFisher, ActionCost, EnsembleDisagreementCost, FisherBugs, FisherCost, FisherMetric,
    GoalCost, Optimality, WeightedCost,
};
use kestrel_actdyn::model::{EncoderWorkspace, SeqVae};
use kestrel_actdyn::rbf::{LogLinearDecoder, RbfDynamics};
use kestrel_actdyn::train::Transitions;
use kestrel_actdyn::train::{TrainStats, Trainer};
use kestrel_core::{FromInvalid, Key};
use kestrel_envs::vectorfield::{VectorFieldParams, reset_latent};
use kestrel_mppi::TrajectoryCost;
use kestrel_mppi::{Icem, IcemParams, IcemState, KeyedPink};

/// The last `cap` transitions, oldest first.
#[derive(Clone, Debug)]
pub struct Window {
    cap: usize,
    len: usize,
    obs_dim: usize,
    /// Pre-step observations (`cap × N_y`, the first `len` rows valid).
    pub obs: Vec<f64>,
    /// Post-step observations.
    pub next_obs: Vec<f64>,
    /// Actions (`cap × 2`).
    pub action: Vec<f64>,
}

impl Window {
    fn new(cap: usize, obs_dim: usize) -> Self {
        Window {
            cap,
            len: 0,
            obs_dim,
            obs: vec![0.0; cap * obs_dim],
            next_obs: vec![0.0; cap * obs_dim],
            action: vec![0.0; cap * 2],
        }
    }

    /// Transitions held.
    pub fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, obs: &[f64], next: &[f64], action: [f64; 2]) {
        let ny = self.obs_dim;
        if self.len == self.cap {
            self.obs.copy_within(ny.., 0);
            self.next_obs.copy_within(ny.., 0);
            self.action.copy_within(2.., 0);
            self.len -= 1;
        }
        let i = self.len;
        self.obs[i * ny..(i + 1) * ny].copy_from_slice(obs);
        self.next_obs[i * ny..(i + 1) * ny].copy_from_slice(next);
        self.action[2 * i..2 * i + 2].copy_from_slice(&action);
        self.len += 1;
    }
}

/// What one environment step did.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    /// Environment steps taken so far (this one included).
    pub step: u64,
    /// The action taken.
    pub action: [f64; 2],
    /// The true latent after it.
    pub z: [f64; 2],
    /// The belief that chose the action.
    pub belief: [f64; 2],
    /// The training call, when one was made.
    pub train: Option<TrainStats>,
    /// The planner's best cost, with a planner.
    pub plan_cost: Option<f64>,
}

/// The planner's validation error under the config's names (`policy.num_elites` for the planner's
/// `num_elites`, …).
fn policy_error(e: kestrel_mppi::MppiError) -> ActdynError {
    let kestrel_mppi::MppiError::Invalid(mut i) = e;
    let field = format!(
        "policy.{}",
        match i.field.as_ref() {
            "num_samples" => "samples",
            "num_elites" => "elites",
            "factor_decrease" => "decrease_factor",
            "action_low" | "action_high" => "action_bound",
            other => other,
        }
    );
    i.field = field.into();
    ActdynError::Invalid(i)
}

/// One experiment: environment, model, trainer, planner and their state.
pub struct ActdynRun {
    cfg: ActdynConfig,
    bugs: Bugs,
    env: VectorFieldParams,
    model: SeqVae,
    /// The model's parameters.
    pub params: Vec<f64>,
    trainer: Trainer,
    icem: Option<Icem>,
    icem_state: Option<IcemState>,
    acc: AccumulatedFisher,
    key_steps: Key,
    key_eval: Key,
    step: u64,
    z: [f64; 2],
    y: Vec<f64>,
    y_next: Vec<f64>,
    window: Window,
    belief: [f64; 2],
    held: [f64; 2],
    coverage: Vec<f64>,
    pending: Transitions,
    pending_z: Vec<f64>,
    enc: EncoderWorkspace,
    mu: Vec<f64>,
    var: Vec<f64>,
    phi: Vec<f64>,
    /// The Fisher metric's parts of the last planning step, refilled in place at the next.
    fisher: Option<(RbfDynamics, LogLinearDecoder)>,
}

impl std::fmt::Debug for ActdynRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActdynRun").field("step", &self.step).field("seed", &self.cfg.seed).finish()
    }
}

impl ActdynRun {
    /// A fresh run of `cfg` (validated): environment reset, model initialised, first belief.
    pub fn new(cfg: ActdynConfig) -> Result<Self, ActdynError> {
        cfg.validate()?;
        let bugs = cfg.bugs();
        let root = Key::new(cfg.seed);
        let [key_model, key_env, key_reset, key_eval, key_steps] = root.split::<5>();
        let env = build_env(&cfg.env, &bugs, key_env)?;
        let model = SeqVae::new(cfg.model.clone())?;
        let params = model.init(key_model);
        // The reference's perturbation of a single model is a switch; an ensemble's is not.
        let mut tc = cfg.train.clone();
        if !bugs.perturb_single_model && tc.ensemble == 1 {
            tc.perturbation = 0.0;
        }
        let mut trainer = Trainer::new(&model, tc)?;
        trainer.kl_prior_variance_dt = !bugs.kl_prior_variance_v;
        trainer.fresh_optimizer = bugs.fresh_optimizer;
        trainer.init_members(&model, key_model.fold_in(1000));
        let icem = match cfg.policy.kind {
            PolicyKind::Icem => {
                let p = &cfg.policy;
                let b = cfg.env.action_bound;
                let params = IcemParams {
                    horizon: p.horizon,
                    num_samples: p.num_samples,
                    iterations: p.iterations,
                    num_elites: p.num_elites,
                    alpha: p.alpha,
                    init_std: p.init_std,
                    noise_beta: p.noise_beta,
                    factor_decrease: p.decrease_factor,
                    frac_elites_reused: p.frac_elites_reused,
                    ..IcemParams::new(2, -b, b)
                };
                Some(Icem::new(params).map_err(policy_error)?)
            }
            _ => None,
        };
        let icem_state = icem.as_ref().map(|i| i.init_state());
        let ny = cfg.env.obs_dim;
        let c = model.rbf().map(|g| g.num_centres()).unwrap_or(0);
        let mut run = ActdynRun {
            window: Window::new(cfg.train.window, ny),
            bugs,
            env,
            params,
            trainer,
            icem,
            icem_state,
            acc: AccumulatedFisher::default(),
            key_steps,
            key_eval,
            step: 0,
            z: [0.0; 2],
            y: vec![0.0; ny],
            y_next: vec![0.0; ny],
            belief: [0.0; 2],
            held: [0.0; 2],
            coverage: vec![0.0; c],
            pending: Transitions { obs_dim: ny, ..Transitions::default() },
            pending_z: Vec::new(),
            enc: model.encoder_workspace(),
            mu: vec![0.0; cfg.train.window * 2],
            var: vec![0.0; cfg.train.window * 2],
            phi: vec![0.0; c],
            fisher: None,
            model,
            cfg,
        };
        // Reset: z₀ ~ U[−1, 1]², y₀, and the belief from y₀ alone (no action yet).
        let mut r = key_reset.rng();
        run.z = reset_latent([r.uniform_f64(), r.uniform_f64()]);
        run.env.obs.observe(&run.z, &mut run.y);
        run.env.obs.add_noise(&mut run.y, &mut r);
        let y0 = run.y.clone();
        run.model.encode(&run.params, &y0, None, &mut run.enc, &mut run.mu[..2], &mut run.var[..2]);
        run.belief = if run.bugs.belief_lagged_action_free {
            [
                run.mu[0] + run.var[0].sqrt() * r.standard_normal(),
                run.mu[1] + run.var[1].sqrt() * r.standard_normal(),
            ]
        } else {
            [run.mu[0], run.mu[1]]
        };
        Ok(run)
    }

    /// The configuration.
    pub fn config(&self) -> &ActdynConfig {
        &self.cfg
    }

    /// The iCEM planner, with the `icem` policy.
    pub fn planner(&self) -> Option<&Icem> {
        self.icem.as_ref()
    }

    /// The resolved reference switches.
    pub fn bugs(&self) -> &Bugs {
        &self.bugs
    }

    /// The model.
    pub fn model(&self) -> &SeqVae {
        &self.model
    }

    /// The true environment.
    pub fn env(&self) -> &VectorFieldParams {
        &self.env
    }

    /// Environment steps taken.
    pub fn steps_done(&self) -> u64 {
        self.step
    }

    /// The current belief.
    pub fn belief(&self) -> [f64; 2] {
        self.belief
    }

    /// The true latent.
    pub fn latent(&self) -> [f64; 2] {
        self.z
    }

    /// Σ_t exp(−2γ‖b_t − c‖²) per RBF centre over the beliefs that chose actions (empty
    /// without RBF dynamics): how often the run's beliefs visited each centre.
    pub fn coverage(&self) -> &[f64] {
        &self.coverage
    }

    /// Fraction of RBF centres with coverage ≥ 1 (the equivalent of one visit at the centre).
    pub fn covered_fraction(&self) -> Option<f64> {
        (!self.coverage.is_empty()).then(|| {
            self.coverage.iter().filter(|&&c| c >= 1.0).count() as f64 / self.coverage.len() as f64
        })
    }

    fn fisher_bugs(&self) -> FisherBugs {
        FisherBugs {
            reference_jacobian: self.bugs.fisher_jacobian_as_coded,
            off_by_one: self.bugs.fisher_off_by_one,
        }
    }

    /// The current RBF dynamics and log-linear decoder, as the Fisher metric reads them: the
    /// parts of the last call (`self.fisher`) with the current parameters copied in and checked
    /// as the constructors check them, or new ones on the first call.
    fn fisher_parts(&mut self) -> Result<(RbfDynamics, LogLinearDecoder), ActdynError> {
        let w = self.model.rbf_weights(&self.params).expect("RBF");
        let Some((mut dynamics, mut decoder)) = self.fisher.take() else {
            let dynamics = self.model.rbf_dynamics(w)?;
            let (c, bias) = self.model.decoder_linear(&self.params);
            return Ok((dynamics, LogLinearDecoder::new(c, bias)?));
        };
        dynamics.set_weights(w)?;
        let (mut c, mut bias) = (std::mem::take(&mut decoder.c), std::mem::take(&mut decoder.b));
        self.model.decoder_linear_into(&self.params, &mut c, &mut bias);
        Ok((dynamics, LogLinearDecoder::new(c, bias)?))
    }

    /// Chooses the action at the current belief (a planner call with iCEM; its state moves
    /// on as in a step). `key` is the step's policy key.
    pub fn act(&mut self, key: Key) -> Result<([f64; 2], Option<f64>), ActdynError> {
        let parts = self.fisher_parts_if_planned()?;
        let out = self.act_with(key, parts.as_ref());
        self.fisher = parts;
        out
    }

    /// The Fisher metric's model parts when the policy plans on a Fisher metric (hand them
    /// back to `self.fisher` after use, for the next call to refill).
    fn fisher_parts_if_planned(
        &mut self,
    ) -> Result<Option<(RbfDynamics, LogLinearDecoder)>, ActdynError> {
        if self.cfg.policy.plans_on_fisher() { self.fisher_parts().map(Some) } else { Ok(None) }
    }

    /// [`ActdynRun::act`] with the Fisher metric's parts already built (one build per step
    /// serves the planner and the information update).
    fn act_with(
        &mut self,
        key: Key,
        fisher_parts: Option<&(RbfDynamics, LogLinearDecoder)>,
    ) -> Result<([f64; 2], Option<f64>), ActdynError> {
        let b = self.cfg.env.action_bound;
        let p = &self.cfg.policy;
        let uniform = |key: Key| {
            let mut r = key.rng();
            [b * (2.0 * r.uniform_f64() - 1.0), b * (2.0 * r.uniform_f64() - 1.0)]
        };
        Ok(match p.kind {
            PolicyKind::Random => (uniform(key), None),
            PolicyKind::Lazy => ([0.0; 2], None),
            PolicyKind::Step => {
                if self.step.is_multiple_of(p.hold) {
                    self.held = uniform(key);
                }
                (self.held, None)
            }
            PolicyKind::Icem => {
                let mut action = [0.0; 2];
                let fisher_bugs = self.fisher_bugs();
                let mut noise =
                    KeyedPink { key, round_f32: self.cfg.profile == ProfileKind::Faithful };
                // Terms are empty unless the metric is a composite (validated).
                let needs = |m: MetricKind| p.metric == m || p.terms.iter().any(|t| t.metric == m);
                // What the objective's costs borrow, built once for the call: the ensemble's
                // members, the RBF model's mean dynamics (goal distance). These two allocate
                // per planner call (model copies, per-worker features); the Fisher and
                // action-cost objectives allocate nothing (tests/alloc.rs).
                let members = if needs(MetricKind::EnsembleDisagreement) {
                    let c = self.model.rbf().expect("validated: RBF dynamics").num_centres();
                    self.trainer
                        .member_dynamics(&self.model, &self.params)
                        .into_iter()
                        .map(|m| self.model.rbf_dynamics(&m[..2 * c]))
                        .collect::<Result<Vec<_>, _>>()?
                } else {
                    Vec::new()
                };
                let mean = if needs(MetricKind::GoalDistance) {
                    let w = self.model.rbf_weights(&self.params).expect("RBF weights");
                    Some(self.model.rbf_dynamics(w)?)
                } else {
                    None
                };
                let (model, params) = (&self.model, &self.params[..]);
                let cost_of_metric = |m: MetricKind| -> Result<AnyCost<'_>, ActdynError> {
                    Ok(match m {
                        MetricKind::ActionCost => AnyCost::Action(ActionCost),
                        MetricKind::EnsembleDisagreement => {
                            AnyCost::Ensemble(EnsembleDisagreementCost::new(&members, self.belief)?)
                        }
                        MetricKind::GoalDistance => AnyCost::Goal(GoalCost {
                            model: mean.as_ref().expect("built above"),
                            belief: self.belief,
                            goal: p.goal,
                            reference: self.cfg.profile == ProfileKind::Faithful,
                        }),
                        MetricKind::AOptimality | MetricKind::DOptimality => {
                            let (dynamics, decoder) =
                                fisher_parts.expect("built for a Fisher metric");
                            let mut metric = FisherMetric::new(dynamics, decoder, fisher_bugs);
                            metric.discount = p.discount;
                            let which = if m == MetricKind::AOptimality {
                                Optimality::A
                            } else {
                                Optimality::D
                            };
                            AnyCost::Fisher(FisherCost::new(
                                metric,
                                which,
                                self.belief,
                                self.acc.get(),
                            )?)
                        }
                        MetricKind::Composite => unreachable!("validated: no nested composite"),
                    })
                };
                let cost_of = |m: MetricKind| -> Result<AnyCost<'_>, ActdynError> {
                    let base = cost_of_metric(m)?;
                    // The model's objectives see the encoded actions; the action cost the
                    // actions themselves (the reference's `ActionCostMetric` reads them raw).
                    Ok(if m != MetricKind::ActionCost && model.has_action_encoder() {
                        AnyCost::Encoded(Box::new(base), model, params)
                    } else {
                        base
                    })
                };
                let icem = self.icem.as_mut().expect("planner with the icem policy");
                let state = self.icem_state.as_mut().expect("planner state");
                let cost = if p.metric == MetricKind::Composite {
                    // A few small allocations per planner call, for the terms.
                    let costs = p
                        .terms
                        .iter()
                        .map(|t| Ok((t.weight, cost_of(t.metric)?)))
                        .collect::<Result<Vec<_>, ActdynError>>()?;
                    let terms = costs.iter().map(|(w, c)| (*w, c as &dyn TrajectoryCost)).collect();
                    icem.plan(state, &mut noise, &WeightedCost::new(terms)?, &mut action)
                } else {
                    icem.plan(state, &mut noise, &cost_of(p.metric)?, &mut action)
                }
                .map_err(policy_error)?;
                (action, Some(cost))
            }
        })
    }

    /// One environment step of the loop. A non-finite training loss or gradient is an error
    /// (the step's transition is kept; the parameters are not changed).
    pub fn step(&mut self) -> Result<StepRecord, ActdynError> {
        let t = self.step + 1;
        let [key_policy, key_env, key_train] = self.key_steps.fold_in(t).split::<3>();
        let b = self.belief;
        let fisher_parts = self.fisher_parts_if_planned()?;
        let (mut action, plan_cost) = self.act_with(key_policy, fisher_parts.as_ref())?;
        let bound = self.cfg.env.action_bound;
        for a in action.iter_mut() {
            *a = a.clamp(-bound, bound);
        }
        // Environment: the action held for the model step's environment steps, the last
        // one observed.
        let mut r = key_env.rng();
        let ds = self.downsample();
        let z = ds.advance(&self.env, self.z, self.env.action.apply_row(&action), &mut r);
        self.env.obs.observe(&z, &mut self.y_next);
        self.env.obs.add_noise(&mut self.y_next, &mut r);
        let seen = ds.recorded(action);
        self.window.push(&self.y, &self.y_next, seen);
        if self.cfg.save_every > 0 {
            self.pending.next_obs.extend_from_slice(&self.y_next);
            self.pending.action.extend_from_slice(&seen);
            self.pending_z.extend_from_slice(&z);
        }
        std::mem::swap(&mut self.y, &mut self.y_next);
        self.z = z;
        self.step = t;
        // Belief.
        let (ny, n) = (self.cfg.env.obs_dim, self.window.len());
        if self.bugs.belief_lagged_action_free {
            let rows = if n < self.window.cap { n - 1..n } else { 0..n };
            let len = rows.len();
            let obs = &self.window.obs[rows.start * ny..rows.end * ny];
            self.model.encode(
                &self.params,
                obs,
                None,
                &mut self.enc,
                &mut self.mu[..2 * len],
                &mut self.var[..2 * len],
            );
            self.belief = [self.mu[2 * len - 2], self.mu[2 * len - 1]];
        } else {
            self.model.encode(
                &self.params,
                &self.window.next_obs[..n * ny],
                Some(&self.window.action[..2 * n]),
                &mut self.enc,
                &mut self.mu[..2 * n],
                &mut self.var[..2 * n],
            );
            self.belief = [self.mu[2 * n - 2], self.mu[2 * n - 1]];
        }
        // Information and coverage at the belief that planned this step.
        if let Some(grid) = self.model.rbf() {
            grid.features(b, &mut self.phi);
            let a2 = grid.alpha() * grid.alpha();
            for (c, f) in self.coverage.iter_mut().zip(&self.phi) {
                *c += f * f / a2;
            }
            // The parameters have not changed since planning (training comes last).
            if let Some((dynamics, decoder)) = &fisher_parts {
                let mut metric = FisherMetric::new(dynamics, decoder, self.fisher_bugs());
                metric.discount = self.cfg.policy.discount;
                self.acc.update(&metric, b);
            }
        }
        self.fisher = fisher_parts;
        // Training on the window.
        let tc = self.trainer.config();
        let train = if t > tc.window as u64 && t.is_multiple_of(tc.train_every) {
            Some(self.trainer.step(
                &self.model,
                &mut self.params,
                &self.window.next_obs,
                &self.window.action,
                key_train,
            )?)
        } else {
            None
        };
        Ok(StepRecord { step: t, action, z, belief: b, train, plan_cost })
    }

    /// The transitions since the last call (next observations, actions, and the true latents
    /// after each action, `steps × 2`), emptied; what a run folder persists every
    /// `save_every` steps. With `save_every` > 0 they accumulate until taken (a caller that
    /// never takes them should set `save_every = 0`).
    pub fn take_transitions(&mut self) -> (Transitions, Vec<f64>) {
        let t = Transitions { obs_dim: self.pending.obs_dim, ..Transitions::default() };
        (std::mem::replace(&mut self.pending, t), std::mem::take(&mut self.pending_z))
    }

    /// Validation episodes for this run's environment (the evaluation seed's).
    pub fn validation_data(&self) -> ValidationData {
        validation_data(&self.env, &self.cfg.eval, Key::new(self.cfg.eval.seed), self.downsample())
    }

    /// Environment steps per model step and the action the model sees
    /// ([`ActdynConfig::substeps`]).
    pub fn downsample(&self) -> Downsample {
        Downsample { substeps: self.cfg.substeps(), sum_actions: self.bugs.downsample_action_sum }
    }

    /// Evaluates the current model on `data`.
    pub fn evaluate(&self, data: &ValidationData) -> Evaluation {
        evaluate(&self.model, &self.params, data, &self.cfg.eval, self.key_eval.fold_in(self.step))
    }
}

impl ActdynRun {
    /// Writes the whole state as one checkpoint set in `dir` (atomically: a crash leaves the
    /// previous set).
    pub fn save_checkpoint(
        &self,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(), ActdynError> {
        kestrel_nn::write_checkpoint_set(dir, stamp, self.step, |tmp| -> Result<(), ActdynError> {
            let mut parts: Vec<(&str, &[f64])> = vec![
                ("params", &self.params),
                ("adam_m", &self.trainer.adam.m),
                ("adam_v", &self.trainer.adam.v),
                ("window_obs", &self.window.obs),
                ("window_next_obs", &self.window.next_obs),
                ("window_action", &self.window.action),
                ("y", &self.y),
                ("z", &self.z),
                ("belief", &self.belief),
                ("held", &self.held),
                ("coverage", &self.coverage),
                ("acc", &self.acc.values),
                ("ensemble", &self.trainer.members),
                ("pending_next_obs", &self.pending.next_obs),
                ("pending_action", &self.pending.action),
                ("pending_z", &self.pending_z),
            ];
            if let Some(s) = &self.icem_state {
                parts.push(("icem_mean", &s.mean));
                parts.push(("icem_std", &s.std));
                parts.push(("icem_elites", &s.elites));
                parts.push(("icem_elite_costs", &s.elite_costs));
            }
            // Empty vectors (no planner, no elites yet) are left out.
            let t: Vec<(String, Vec<usize>, &[f64])> = parts
                .into_iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(n, v)| (n.to_string(), vec![v.len()], v))
                .collect();
            kestrel_nn::save_safetensors(
                &tmp.join("actdyn.safetensors"),
                &t,
                &[
                    ("step", self.step.to_string()),
                    ("window_len", self.window.len.to_string()),
                    ("trainer_calls", self.trainer.calls.to_string()),
                    ("adam_t", self.trainer.adam.t.to_string()),
                    ("acc_updates", self.acc.updates.to_string()),
                ],
            )?;
            Ok(())
        })
    }

    /// The run of `cfg` continued from a checkpoint set written by
    /// [`ActdynRun::save_checkpoint`] in `dir` (every tensor's length is checked).
    pub fn load_checkpoint(cfg: ActdynConfig, dir: &std::path::Path) -> Result<Self, ActdynError> {
        let mut run = ActdynRun::new(cfg)?;
        let path = dir.join("actdyn.safetensors");
        let f = kestrel_nn::load_safetensors::<f64>(&path)?;
        let file = path.display().to_string();
        let bad = |what: &str, got: String, want: String| {
            ActdynError::invalid(format!("checkpoint {file}: {what}"), got, want)
        };
        let meta = |k: &str| -> Result<u64, ActdynError> {
            f.metadata
                .get(k)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad(k, "missing or not an integer".into(), "an integer".into()))
        };
        let take = |name: &str, dst: &mut [f64], optional: bool| -> Result<(), ActdynError> {
            match f.get(name) {
                Some((_, v)) if v.len() == dst.len() => {
                    dst.copy_from_slice(v);
                    Ok(())
                }
                Some((_, v)) => {
                    Err(bad(name, format!("{} values", v.len()), format!("{} values", dst.len())))
                }
                None if optional || dst.is_empty() => Ok(()),
                None => Err(bad(name, "missing".into(), "present".into())),
            }
        };
        take("params", &mut run.params, false)?;
        take("adam_m", &mut run.trainer.adam.m, false)?;
        take("adam_v", &mut run.trainer.adam.v, false)?;
        take("window_obs", &mut run.window.obs, false)?;
        take("window_next_obs", &mut run.window.next_obs, false)?;
        take("window_action", &mut run.window.action, false)?;
        take("y", &mut run.y, false)?;
        take("z", &mut run.z, false)?;
        take("belief", &mut run.belief, false)?;
        take("held", &mut run.held, false)?;
        take("coverage", &mut run.coverage, false)?;
        take("ensemble", &mut run.trainer.members, false)?;
        if let (Some((_, y)), Some((_, a)), Some((_, z))) =
            (f.get("pending_next_obs"), f.get("pending_action"), f.get("pending_z"))
        {
            if y.len() * 2 != a.len() * run.pending.obs_dim || a.len() != z.len() {
                return Err(bad(
                    "pending transitions",
                    format!("{} / {} / {} values", y.len(), a.len(), z.len()),
                    "matching rows".into(),
                ));
            }
            run.pending.next_obs = y.to_vec();
            run.pending.action = a.to_vec();
            run.pending_z = z.to_vec();
        }
        run.step = meta("step")?;
        run.window.len = meta("window_len")? as usize;
        if run.window.len > run.window.cap {
            return Err(bad(
                "window_len",
                run.window.len.to_string(),
                format!("at most {}", run.window.cap),
            ));
        }
        run.trainer.calls = meta("trainer_calls")?;
        run.trainer.adam.t = meta("adam_t")?;
        run.acc.updates = meta("acc_updates")?;
        if run.acc.updates > 0 {
            run.acc.values = vec![0.0; 2 * run.coverage.len()];
            take("acc", &mut run.acc.values, false)?;
        }
        if let Some(s) = run.icem_state.as_mut() {
            take("icem_mean", &mut s.mean, false)?;
            take("icem_std", &mut s.std, false)?;
            if let Some((_, c)) = f.get("icem_elite_costs") {
                s.elite_costs = c.to_vec();
                s.elites = vec![0.0; c.len() * s.mean.len()];
                take("icem_elites", &mut s.elites, false)?;
            }
        }
        if let Some(v) = run.params.iter().find(|v| !v.is_finite()) {
            return Err(bad("params", v.to_string(), "finite values".into()));
        }
        Ok(run)
    }
}

/// One of the planner's objectives, built on the stack for each planner call.
enum AnyCost<'a> {
    Action(ActionCost),
    Ensemble(EnsembleDisagreementCost<'a>),
    Goal(GoalCost<'a>),
    Fisher(FisherCost<'a>),
    /// A model objective over the encoded actions (the model's action encoder, without the
    /// state, as the reference's MPC calls `action_encoder(actions)` before `predict`).
    Encoded(Box<AnyCost<'a>>, &'a SeqVae, &'a [f64]),
}

impl AnyCost<'_> {
    fn inner(&self) -> &dyn TrajectoryCost {
        match self {
            AnyCost::Action(c) => c,
            AnyCost::Ensemble(c) => c,
            AnyCost::Goal(c) => c,
            AnyCost::Fisher(c) => c,
            AnyCost::Encoded(c, ..) => c.as_ref(),
        }
    }
}

impl TrajectoryCost for AnyCost<'_> {
    fn validate(&self, horizon: usize, action_dim: usize) -> Result<(), kestrel_core::Invalid> {
        self.inner().validate(horizon, action_dim)
    }

    /// An encoded objective allocates its encoded copy of `x` per call.
    fn cost(&self, x: &[f64], horizon: usize, action_dim: usize, out: &mut [f64]) {
        match self {
            AnyCost::Encoded(c, model, params) => {
                c.cost(&model.encode_planned_actions(params, x), horizon, action_dim, out)
            }
            _ => self.inner().cost(x, horizon, action_dim, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The training window keeps the latest `cap` transitions in order, dropping the oldest
    /// first, with every column shifted together.
    #[test]
    fn the_window_keeps_the_latest_transitions_in_order() {
        let mut w = Window::new(3, 2);
        assert_eq!(w.len(), 0);
        for t in 0..5 {
            let v = t as f64;
            w.push(&[v, -v], &[v + 0.5, -v - 0.5], [10.0 * v, 1.0]);
        }
        assert_eq!(w.len(), 3);
        assert_eq!(w.obs, [2.0, -2.0, 3.0, -3.0, 4.0, -4.0]);
        assert_eq!(w.next_obs, [2.5, -2.5, 3.5, -3.5, 4.5, -4.5]);
        assert_eq!(w.action, [20.0, 1.0, 30.0, 1.0, 40.0, 1.0]);
    }

    /// `model.dt = 3·env.dt`: each step holds its action for three environment steps and
    /// observes the last; the model sees 3u (the reference's sum, `faithful`) or u (`fixed`);
    /// the validation episodes are downsampled the same way; `model.dt` off the grid is refused.
    #[test]
    fn a_model_step_of_three_environment_steps() {
        use kestrel_envs::vectorfield::step_latent;
        for profile in [
            kestrel_actdyn::config::ProfileKind::Faithful,
            kestrel_actdyn::config::ProfileKind::Fixed,
        ] {
            let mut cfg = ActdynConfig { steps: 3, profile, ..ActdynConfig::default() };
            cfg.model.dt = 0.3;
            cfg.env.noise_scale = 0.0;
            cfg.eval.episodes = 1;
            cfg.eval.steps = 40;
            cfg.validate().unwrap();
            assert_eq!(cfg.substeps(), 3);
            let mut run = ActdynRun::new(cfg.clone()).unwrap();
            let z0 = run.z;
            let rec = run.step().unwrap();
            // Noise-free: three deterministic steps of the true field with the action held.
            let gu = run.env.action.apply_row(&rec.action);
            let mut z = z0;
            for _ in 0..3 {
                z = step_latent(
                    &run.env.field,
                    z,
                    gu,
                    [0.0; 2],
                    0.1,
                    0.0,
                    run.env.noise_convention,
                )
                .0;
            }
            assert_eq!(rec.z, z);
            let n = run.window.len();
            let seen = &run.window.action[2 * (n - 1)..2 * n];
            let k =
                if profile == kestrel_actdyn::config::ProfileKind::Faithful { 3.0 } else { 1.0 };
            assert_eq!(seen, [k * rec.action[0], k * rec.action[1]], "{profile:?}");
            // Validation episodes: the recorded actions obey the same rule and the latents
            // move three environment steps per row.
            let v = run.validation_data();
            let one = {
                let mut c1 = cfg.clone();
                c1.model.dt = 0.1;
                ActdynRun::new(c1).unwrap().validation_data()
            };
            assert_eq!(v.u[..2], [k * one.u[0], k * one.u[1]]);
            assert_ne!(v.z[..2], one.z[..2]);
        }
        let mut bad = ActdynConfig::default();
        bad.model.dt = 0.25;
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("model.dt") && e.contains("whole multiple"), "{e}");
        bad.model.dt = 0.05;
        assert!(bad.validate().is_err());
    }

    /// The planners roll out encoded actions: a linear action encoder at W = I, b = 0 plans
    /// exactly as the identity, at W = 2I it plans otherwise; a state-dependent encoder is
    /// refused with planning and trains with the random policy.
    #[test]
    fn planners_see_the_encoded_actions() {
        use kestrel_actdyn::model::ActionEncoderKind;
        let first_plan = |enc: ActionEncoderKind, w: Option<[f64; 4]>, metric: MetricKind| {
            let mut cfg = ActdynConfig::e2();
            cfg.policy.num_samples = 16;
            cfg.policy.iterations = 2;
            cfg.policy.horizon = 5;
            cfg.policy.metric = metric;
            cfg.model.action_encoder = enc;
            let mut run = ActdynRun::new(cfg).unwrap();
            if let Some(w) = w {
                let params = &mut run.params;
                run.model.set_tensor_values(params, "action_encoder.network.weight", &w).unwrap();
                run.model
                    .set_tensor_values(params, "action_encoder.network.bias", &[0.0; 2])
                    .unwrap();
            }
            run.act(Key::new(3)).unwrap()
        };
        let (lin, unit, double) =
            (ActionEncoderKind::Linear, [1.0, 0.0, 0.0, 1.0], [2.0, 0.0, 0.0, 2.0]);
        // The model's objective sees ũ: W = I plans as the identity, W = 2I otherwise.
        let a = MetricKind::AOptimality;
        let identity = first_plan(ActionEncoderKind::Identity, None, a);
        assert_eq!(identity, first_plan(lin.clone(), Some(unit), a));
        assert_ne!(identity, first_plan(lin.clone(), Some(double), a));
        // The action cost sees u itself, whatever the encoder.
        let c = MetricKind::ActionCost;
        assert_eq!(
            first_plan(ActionEncoderKind::Identity, None, c),
            first_plan(lin, Some(double), c)
        );
        let sd = ActionEncoderKind::Mlp { hidden: vec![8], state_dependent: true };
        let mut cfg = ActdynConfig::e2();
        cfg.model.action_encoder = sd.clone();
        let e = cfg.validate().unwrap_err().to_string();
        assert!(e.contains("model.action_encoder.state_dependent"), "{e}");
        let mut cfg = ActdynConfig { steps: 30, ..ActdynConfig::default() };
        cfg.model.action_encoder = sd;
        let mut run = ActdynRun::new(cfg).unwrap();
        let mut trained = 0;
        for _ in 0..30 {
            let rec = run.step().unwrap();
            if let Some(t) = rec.train {
                assert!(t.terms.loss.is_finite());
                trained += 1;
            }
        }
        assert!(trained > 0);
    }
}
