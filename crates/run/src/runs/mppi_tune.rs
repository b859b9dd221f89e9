//! `kestrel mppi tune` (run kind `mppi-tune`, the Python package's `kestrel.mppi.tune`): an
//! evolution strategy searching a controller's knobs (λ, Σ, μ, horizon), each candidate's
//! cost its closed-loop episode's mean running cost. The config ([`MppiTuneConfig`]), its checks and
//! the generation loop ([`run_tune_with`], on the evo crate's one [`Driver`]) are here, over
//! `kestrel-mppi`'s tuner parts ([`TuneProblem`], [`TuneSpec`]); the best knobs are written as a
//! run config `kestrel mppi run` replays.

use crate::base::{COMMIT, RunError, write_atomic};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::runs::mppi::MppiRunConfig;
use crate::summary::Summary;
use kestrel_core::Budget;
use kestrel_core::{FromInvalid, Key};
use kestrel_dynamics::Dynamics;
use kestrel_evo::{Driver, EvalKeys, Problem, TellMetrics};
use kestrel_mppi::batched::Sizes;
use kestrel_mppi::tune::{KnobKind, TuneProblem, TuneSpec};
use kestrel_mppi::{Controller, ControllerKind, ControllerVisitor, Mppi, MppiError, SystemKind};
use kestrel_plot::{LinePlot, Series};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// A tuning run: the base run (system, episode length, seed, controller and its knobs), the
/// knobs tuned, and the strategy searching them.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct MppiTuneConfig {
    /// The run whose knobs are tuned (its `steps` is each candidate's episode length; its
    /// `seed` keys the strategy and the episodes).
    #[documented(nested)]
    pub run: MppiRunConfig,
    /// Knobs tuned.
    pub knobs: Vec<KnobKind>,
    /// The strategy.
    pub strategy: kestrel_evo::StrategyKind,
    /// Candidates per generation (even for the antithetic strategies, open-es and pgpe).
    pub pop_size: usize,
    /// Generations.
    pub generations: u64,
    /// Initial step size of the search (in the knobs' transformed coordinates).
    pub sigma: f64,
    /// The strategy's hyper-parameters (absent: its reference defaults).
    #[serde(default)]
    #[documented(nested)]
    pub params: kestrel_evo::StrategyParams,
    /// Where each candidate's episodes start (its cost is their mean).
    #[serde(default)]
    #[documented(nested)]
    pub starts: TuneStarts,
    /// A system written in Python instead of `run.system` (set by `kestrel.mppi.tune` when it
    /// is given callbacks, which it passes on; `run.system` is then unused and the controller
    /// plain MPPI in f64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callbacks: Option<PythonSystem>,
}

/// What a Python tuning run is given instead of a built-in system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type", deny_unknown_fields)]
pub enum PythonSystem {
    /// Batched dynamics and costs (`kestrel.mppi.tune(dynamics=..., running_cost=...)`): every
    /// candidate's episodes run in lockstep from `starts.states`.
    Dynamics {
        /// State size.
        nx: usize,
        /// Control size.
        nu: usize,
    },
    /// A batched evaluation function over the candidates' MPPI params
    /// (`kestrel.mppi.tune(evaluate=...)`): it runs its own episodes, so there are no starts.
    Evaluate {
        /// Control size (the noise's).
        nu: usize,
    },
}

impl PythonSystem {
    /// The sizes MPPI's params are checked against (an evaluation function's state is its own:
    /// one placeholder coordinate).
    pub fn sizes(self) -> Sizes {
        match self {
            PythonSystem::Dynamics { nx, nu } => Sizes { nx, nu },
            PythonSystem::Evaluate { nu } => Sizes { nx: 1, nu },
        }
    }
}

/// The start states of every candidate's episodes: the listed `states`, then `random` states
/// drawn uniformly within `spread` of the system's start (a Python system's: the first listed
/// state). With neither, the system's start alone. A candidate's cost is the mean over them;
/// every candidate runs the same starts with the same episode keys (common random numbers), so
/// costs compare params alone.
#[derive(
    Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields, default)]
pub struct TuneStarts {
    /// Start states, each `nx` values (empty: none listed).
    pub states: Vec<Vec<f64>>,
    /// Random start states added after the listed ones, drawn once per run with
    /// `Key::new(run.seed).fold_in(STARTS_TAG).fold_in(i)` (0: none).
    pub random: usize,
    /// Half-width of the random starts' box around the system's start: one value per state
    /// coordinate, or one for all.
    pub spread: Vec<f64>,
}

/// The random starts' branch of the run key (apart from the episodes' `fold_in(0)` and the
/// generations' `fold_in(g + 1)`).
pub const STARTS_TAG: u64 = 0x7374_6172_7473;

/// At most this many start states per candidate.
pub const MAX_STARTS: usize = 4096;

impl TuneStarts {
    /// Checks the starts against a system of `nx` states (before any run folder exists).
    pub fn validate(&self, nx: usize) -> Result<(), MppiError> {
        let total = self.states.len().saturating_add(self.random);
        if total > MAX_STARTS {
            return Err(MppiError::invalid(
                "starts",
                format!("{} listed + {} random", self.states.len(), self.random),
                format!("at most {MAX_STARTS} in all"),
            ));
        }
        for (i, s) in self.states.iter().enumerate() {
            if s.len() != nx {
                return Err(MppiError::invalid(
                    format!("starts.states[{i}]"),
                    format!("{} values", s.len()),
                    format!("{nx} (the system's state size)"),
                ));
            }
            if let Some(j) = s.iter().position(|v| !v.is_finite()) {
                return Err(MppiError::invalid(format!("starts.states[{i}][{j}]"), s[j], "finite"));
            }
        }
        if self.random > 0 && !(self.spread.len() == nx || self.spread.len() == 1) {
            return Err(MppiError::invalid(
                "starts.spread",
                format!("{} values", self.spread.len()),
                format!("1 or {nx} (the system's state size) with starts.random = {}", self.random),
            ));
        }
        if self.random == 0 && !self.spread.is_empty() {
            return Err(MppiError::invalid(
                "starts.spread",
                format!("{:?}", self.spread),
                "empty unless starts.random > 0 (a spread draws nothing by itself)",
            ));
        }
        if let Some(j) = self.spread.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
            return Err(MppiError::invalid(
                format!("starts.spread[{j}]"),
                self.spread[j],
                "finite and >= 0",
            ));
        }
        Ok(())
    }

    /// The start states for run seed `seed` around `base` (the system's start).
    pub fn resolve(&self, base: &[f64], seed: u64) -> Vec<Vec<f64>> {
        let key = Key::new(seed).fold_in(STARTS_TAG);
        let mut out = self.states.clone();
        for i in 0..self.random {
            let mut rng = key.fold_in(i as u64).rng();
            let x = base
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let h = if self.spread.len() == 1 { self.spread[0] } else { self.spread[j] };
                    b + h * (2.0 * rng.uniform_f64() - 1.0)
                })
                .collect();
            out.push(x);
        }
        if out.is_empty() {
            out.push(base.to_vec());
        }
        out
    }
}

impl MppiTuneConfig {
    /// The defaults a tuning config is read over once its run's controller and system are
    /// known (the second of the two passes every front end makes): that system's MPPI run
    /// defaults (its noise size, bounds and start), the rest as [`MppiTuneConfig::default`].
    pub fn defaults_for(run: &MppiRunConfig) -> MppiTuneConfig {
        MppiTuneConfig {
            run: MppiRunConfig::defaults_for(run.controller, run.system, 20, 0),
            ..MppiTuneConfig::default()
        }
    }
}

impl Default for MppiTuneConfig {
    fn default() -> Self {
        MppiTuneConfig {
            run: MppiRunConfig::defaults_for(ControllerKind::Mppi, SystemKind::Nav2d, 20, 0),
            knobs: vec![KnobKind::Lambda, KnobKind::Sigma],
            strategy: kestrel_evo::StrategyKind::CmaEs,
            pop_size: 16,
            generations: 20,
            sigma: 1.0,
            params: kestrel_evo::StrategyParams::default(),
            starts: TuneStarts::default(),
            callbacks: None,
        }
    }
}

/// What [`run_tune_with`] returns.
#[derive(Clone, Debug)]
pub struct TuneOutcome {
    /// Mean closed-loop cost of the base params.
    pub start_cost: f64,
    /// Best cost found.
    pub best_cost: f32,
    /// The base run with the best knobs: a config `kestrel mppi run --config` replays.
    pub best_run: MppiRunConfig,
    /// One entry per generation.
    pub history: Vec<TellMetrics>,
}

/// Validates a tuning config (before any run folder exists).
pub fn validate_tune(c: &MppiTuneConfig) -> Result<(), MppiError> {
    let Sizes { nx, nu } = c.sizes();
    let spec = TuneSpec::from_names(&c.knobs, nu, &c.run.mppi)?;
    if let Some(python) = c.callbacks {
        // What the batched episodes run: plain MPPI in f64 over the callbacks' sizes.
        if c.run.controller != ControllerKind::Mppi {
            let v = c.run.controller.name();
            return Err(MppiError::invalid("run.controller", v, "mppi with a Python system"));
        }
        Mppi::new(Sizes { nx, nu }).validate(&c.run.mppi)?;
        kestrel_mppi::batched::check_base(&c.run.mppi)?;
        if let PythonSystem::Evaluate { .. } = python {
            if !c.starts.states.is_empty() || c.starts.random > 0 {
                let why = "none with an evaluation function (it runs its own episodes)";
                return Err(MppiError::invalid("starts", "given", why));
            }
            return validate_common(c);
        }
        // Every candidate's episodes from every start are in flight at once.
        let episodes = c.pop_size.saturating_mul(c.start_states_len());
        // The longest horizon a candidate may have: the horizon knob's upper bound, if tuned.
        let mut widest = c.run.mppi.clone();
        if let Some(t) = spec.knobs.iter().find(|t| t.knob == kestrel_mppi::tune::Knob::Horizon) {
            widest.horizon = t.upper as usize;
        }
        kestrel_mppi::batched::check_memory("pop_size", c.pop_size, &widest, nx, nu, episodes)?;
        if c.starts.states.is_empty() {
            return Err(MppiError::invalid(
                "starts.states",
                "[]",
                "at least one start state: a Python system has no start of its own",
            ));
        }
    } else {
        c.run.validate()?;
    }
    validate_common(c)
}

/// The checks every tuning config passes, whatever its system.
fn validate_common(c: &MppiTuneConfig) -> Result<(), MppiError> {
    // The strategy's own refusal, said once (it names the field and the value).
    let evo = |kestrel_evo::EvoError::Invalid(i)| MppiError::Invalid(i);
    c.strategy.pop_size(Some(c.pop_size), 1).map_err(evo)?;
    c.params.check_for(c.strategy).map_err(evo)?;
    if !(c.sigma.is_finite() && c.sigma > 0.0) {
        return Err(MppiError::invalid("sigma", c.sigma, "finite and > 0"));
    }
    if c.run.steps == 0 {
        return Err(MppiError::invalid("run.steps", 0, "at least 1"));
    }
    if c.knobs.contains(&KnobKind::Horizon) && !c.run.mppi.specific_actions.is_empty() {
        // A tuned horizon would leave the fixed sequences the wrong length: every candidate
        // but the base would be refused (an infinite cost), not tuned.
        return Err(MppiError::invalid(
            "knobs",
            "horizon with run.mppi.specific_actions",
            "not both: specific action sequences fix the horizon",
        ));
    }
    if c.generations == 0 {
        return Err(MppiError::invalid("generations", 0, "at least 1"));
    }
    c.starts.validate(c.sizes().nx)
}

impl MppiTuneConfig {
    /// Every candidate's start states (see [`TuneStarts`]).
    pub fn start_states(&self) -> Vec<Vec<f64>> {
        let base = match (&self.callbacks, self.starts.states.first()) {
            (Some(PythonSystem::Evaluate { .. }), _) => vec![0.0],
            (Some(_), Some(first)) => first.clone(),
            _ => self.run.system.start(),
        };
        self.starts.resolve(&base, self.run.seed)
    }

    /// How many start states [`MppiTuneConfig::start_states`] gives, without drawing them.
    fn start_states_len(&self) -> usize {
        (self.starts.states.len() + self.starts.random).max(1)
    }

    /// The tuned system's state and control sizes.
    pub fn sizes(&self) -> Sizes {
        self.callbacks
            .map(PythonSystem::sizes)
            .unwrap_or(Sizes { nx: self.run.system.nx(), nu: self.run.system.nu() })
    }
}

/// Tunes the configured knobs: the strategy (run key `Key::new(run.seed)`) searches the knobs'
/// transformed coordinates from the base values; candidates are scored by
/// [`TuneProblem::episode_cost`] from the configured starts (common random numbers);
/// `observe` sees every generation and may stop the run by returning `false`. With
/// `evaluator`, the candidates' costs come from it instead (the run's keys reach it;
/// [`tune_problem`] builds what it must equal).
pub fn run_tune_with(
    c: &MppiTuneConfig,
    evaluator: Option<&dyn Problem>,
    observe: impl FnMut(&TellMetrics) -> bool,
) -> Result<TuneOutcome, MppiError> {
    validate_tune(c)?;
    struct Go<'a, F> {
        c: &'a MppiTuneConfig,
        evaluator: Option<&'a dyn Problem>,
        observe: F,
    }
    impl<F: FnMut(&TellMetrics) -> bool> ControllerVisitor for Go<'_, F> {
        type Output = Result<TuneOutcome, MppiError>;
        fn visit<C: Controller + 'static>(self, ctrl: C, p: C::Params) -> Self::Output {
            let c = self.c;
            let nu = ctrl.dynamics().nu();
            let spec = TuneSpec::from_names(&c.knobs, nu, C::base(&p))?;
            let problem = TuneProblem::new(ctrl, spec, p.clone(), c.start_states(), c.run.steps)?;
            let key = Key::new(c.run.seed);
            let start_cost = match (c.callbacks, self.evaluator) {
                // The controller here has sizes only: the base params' cost is the evaluator's
                // (with the generations' key, as f32).
                (Some(_), Some(e)) => {
                    let mut f = [0.0f32];
                    e.evaluate(key.fold_in(0), &problem.start_vector(), &mut f);
                    f[0] as f64
                }
                _ => problem.episode_cost(key.fold_in(0), &p),
            };
            let opt = c
                .strategy
                .build_with(Some(c.pop_size), c.sigma, &c.params, &problem.start_vector(), key)
                .map_err(|e| MppiError::invalid("strategy", c.strategy.name(), e.to_string()))?;
            // The evo crate's one driver: ask, every candidate's episodes as one parallel
            // batch (from the evaluator where one is given: Ray workers, Python callbacks),
            // tell; every generation's candidates see the same noise (common random numbers),
            // so their costs compare.
            let evaluator = self.evaluator.unwrap_or(&problem);
            let mut driver = Driver::new(opt, evaluator, key)
                .map_err(|e| {
                    MppiError::invalid("strategy", e.to_string(), "sized for the tuned knobs")
                })?
                .with_eval_keys(EvalKeys::Common);
            let mut observe = self.observe;
            let mut history = Vec::new();
            for _ in 0..c.generations {
                history.push(driver.step().metrics);
                if !observe(history.last().expect("just pushed")) {
                    break;
                }
            }
            // The base params until some candidate had a finite cost.
            let pr = driver.progress();
            let best_x = if pr.best_fitness.is_finite() {
                pr.best_solution.clone()
            } else {
                problem.start_vector()
            };
            let mut best_run = c.run.clone();
            best_run.mppi = C::base(&problem.params_of(&best_x)).clone();
            Ok(TuneOutcome { start_cost, best_cost: pr.best_fitness, best_run, history })
        }
    }
    if let Some(python) = c.callbacks {
        if evaluator.is_none() {
            return Err(MppiError::invalid(
                "callbacks",
                format!("{python:?}"),
                "a Python system's callbacks: kestrel.mppi.tune(dynamics=..., running_cost=...) or (evaluate=...)",
            ));
        }
        return Go { c, evaluator, observe }.visit(Mppi::new(python.sizes()), c.run.mppi.clone());
    }
    c.run.visit(Go { c, evaluator, observe })?
}

/// The problem [`run_tune_with`] evaluates for config `c` (one candidate's cost: the mean
/// closed-loop cost of its knobs), to be evaluated elsewhere with the run's keys.
pub fn tune_problem(c: &MppiTuneConfig) -> Result<Box<dyn Problem>, MppiError> {
    validate_tune(c)?;
    if c.callbacks.is_some() {
        let why = "a built-in run.system (a Python system's episodes run where its callbacks are)";
        return Err(MppiError::invalid("callbacks", "set", why));
    }
    struct Build<'a>(&'a MppiTuneConfig);
    impl ControllerVisitor for Build<'_> {
        type Output = Result<Box<dyn Problem>, MppiError>;
        fn visit<C: Controller + 'static>(self, ctrl: C, p: C::Params) -> Self::Output {
            let c = self.0;
            let spec = TuneSpec::from_names(&c.knobs, ctrl.dynamics().nu(), C::base(&p))?;
            Ok(Box::new(TuneProblem::new(ctrl, spec, p, c.start_states(), c.run.steps)?))
        }
    }
    c.run.visit(Build(c))?
}

/// The `mppi-tune` run kind.
pub struct MppiTune;

impl Run for MppiTune {
    const NAME: &'static str = "mppi-tune";
    const COMMAND: &'static str = "mppi tune";
    const ABOUT: &'static str =
        "Tune a controller's knobs with an evolution strategy; writes the best as a config.";
    const SEED_KEY: &'static [&'static str] = &["run", "seed"];
    const METRICS: &'static [&'static str] = &["best_cost", "start_cost"];
    const CURVE: &'static str = "best";
    type Config = MppiTuneConfig;

    /// Read over the run system's defaults once `first` names it: a pendulum run gets the
    /// pendulum's one-control noise, not the default system's.
    fn defaults(first: Option<&MppiTuneConfig>) -> MppiTuneConfig {
        first.map_or_else(MppiTuneConfig::default, |f| MppiTuneConfig::defaults_for(&f.run))
    }

    fn outputs(_: &MppiTuneConfig) -> Outputs {
        Outputs::new(
            &[
                "best_cost",
                "best_horizon",
                "best_lambda",
                "nonfinite",
                "num_starts",
                "start_cost",
                "wall_seconds",
            ],
            &["best", "best_in_generation", "nonfinite", "sigma"],
        )
    }

    /// A Python system's callbacks come with `kestrel.mppi.tune(dynamics=...)` only: a
    /// config that names one elsewhere (the CLI, a sweep) is refused.
    fn validate(c: &MppiTuneConfig) -> Result<(), RunError> {
        if let Some(s) = c.callbacks {
            let why = "absent: a Python system is tuned by kestrel.mppi.tune(dynamics=..., \
                       running_cost=...) or kestrel.mppi.tune(evaluate=...)";
            return Err(MppiError::invalid("callbacks", format!("{s:?}"), why).into());
        }
        Ok(validate_tune(c)?)
    }

    /// A controller per candidate episode in flight (one per thread, at most `pop_size`), the
    /// strategy over the knobs, the history and its plot.
    fn budget(c: &MppiTuneConfig, threads: usize) -> Budget {
        let mut b = Budget::new();
        runs::fixed(&mut b);
        let live = c.pop_size.min(threads.max(1));
        candidates(&mut b, &c.run, &c.knobs, live, threads);
        let d = knob_dims(&c.run, &c.knobs);
        runs::packing(&mut b, c.strategy, d, c.pop_size, threads);
        b.add(
            format!("{} over the knobs", c.strategy.name()),
            format!("pop_size = {}, knobs = {d} coordinates", c.pop_size),
            c.strategy.state_bytes(d, c.pop_size),
            1,
        );
        runs::curve(&mut b, format!("generations = {}", c.generations), 2 * c.generations as u128);
        b
    }

    fn run(c: MppiTuneConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run_with(c, None, &|| None, launch)
    }

    const EVALUATED_ELSEWHERE: bool = true;

    /// A candidate's cost ([`tune_problem`]); every generation sees `Key::new(run.seed)
    /// .fold_in(0)` (common random numbers).
    fn population(c: &MppiTuneConfig) -> Result<crate::run::Population, RunError> {
        Ok(crate::run::Population {
            problem: tune_problem(c)?,
            key_run: Key::new(c.run.seed),
            eval_keys: EvalKeys::Common,
        })
    }

    fn run_evaluated(
        c: MppiTuneConfig,
        evaluator: &dyn Problem,
        failed: &dyn Fn() -> Option<String>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run_with(c, Some(evaluator), failed, launch)
    }
}

/// Validates `c`, then tunes into a new folder: `config.toml`, `record.json`, `metrics.jsonl`
/// (one line per generation), `best.toml` (the base run with the best knobs, which `kestrel
/// mppi run --config` replays), `best.png/svg`, `summary.md/json`. With an `evaluator` the
/// candidates' costs are computed by it (the problem of [`tune_problem`] evaluated elsewhere,
/// on Ray workers say). `failed` is asked after every generation: a message stops the run,
/// which then fails with it.
pub fn run_with(
    c: MppiTuneConfig,
    evaluator: Option<&dyn kestrel_evo::Problem>,
    failed: &dyn Fn() -> Option<String>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    validate_tune(&c)?;
    let system = if c.callbacks.is_some() { "python" } else { c.run.system.name() };
    let name = format!("{}-{system}-{}", c.run.controller.name(), c.strategy);
    let (dir, mut metrics) = start(&launch, "mppi-tune", &name, c.run.seed, &c)?;
    let num_starts = match c.callbacks {
        Some(PythonSystem::Evaluate { .. }) => 0,
        _ => c.start_states().len() as u64,
    };
    let r = (|| -> Result<String, RunError> {
        let t0 = Instant::now();
        let mut progress = launch.progress(c.generations, "generations");
        let (mut io, mut nonfinite) = (Ok(()), 0u64);
        let mut failure = None;
        let out = run_tune_with(&c, evaluator, |m| {
            failure = failed();
            if failure.is_some() {
                return false;
            }
            io = metrics.log(m.generation, json!({"best": m.best_so_far, "best_in_generation": m.best_in_generation, "nonfinite": m.nonfinite, "sigma": m.sigma}));
            nonfinite += m.nonfinite as u64;
            let status = format!("best cost {:.4} non-finite {nonfinite}", m.best_so_far);
            io.is_ok() && progress.tick(m.generation, &status)
        })?;
        if let Some(m) = failure {
            return Err(RunError::Failed(m));
        }
        io?;
        metrics.finish()?;
        progress.stopped()?;
        let secs = t0.elapsed().as_secs_f64();
        // A Python system's best knobs are the `[mppi]` table its callback controller takes.
        let best_toml = match c.callbacks {
            Some(_) => crate::config::to_toml(&out.best_run.mppi)?,
            None => crate::config::to_toml(&out.best_run)?,
        };
        write_atomic(&dir.join("best.toml"), best_toml.as_bytes())?;
        let curve: Vec<(f64, f64)> =
            out.history.iter().map(|m| (m.generation as f64, m.best_so_far as f64)).collect();
        LinePlot::new(format!("tuning {name}"))
            .x_label("generation")
            .y_label("mean closed-loop cost, best so far")
            .series(Series::new("best so far", curve))
            .save(&dir.join("best"))?;
        let bp = &out.best_run.mppi;
        Summary::new(format!("mppi tune: {name}"))
            .item("knobs", "knobs", serde_json::to_value(&c.knobs).unwrap_or_default(), format!("{:?}", c.knobs))
            .value("start_cost", "cost at the base params", out.start_cost)
            .value("best_cost", "best cost", out.best_cost as f64)
            .value("nonfinite", "candidates with a non-finite cost", nonfinite)
            .value("num_starts", "start states per candidate (0: an evaluation function's own)", num_starts)
            .item("best_lambda", "best λ", bp.lambda, format!("{:.5}", bp.lambda))
            .item("best_noise_sigma", "best Σ", bp.noise_sigma.clone(), format!("{:?}", bp.noise_sigma))
            .item("best_noise_mu", "best μ", bp.noise_mu.clone(), format!("{:?}", bp.noise_mu))
            .value("best_horizon", "best horizon", bp.horizon as u64)
            .item("wall_seconds", "wall time", secs, format!("{} generations of {} candidates in {secs:.2} s", c.generations, c.pop_size))
            .value("commit", "commit", COMMIT)
            .file("best.toml", match c.callbacks {
                Some(_) => "the best knobs' MPPI table: `Controller.from_callbacks(..., **tomllib.load(f))` takes it",
                None => "the base run with the best knobs: `kestrel mppi run --config best.toml` replays it",
            })
            .file("metrics.jsonl", "one line per generation")
            .file("best.png", "best cost so far per generation (also .svg)")
            .write(dir.path())?;
        if !out.best_cost.is_finite() {
            return Err(RunError::Failed(format!(
                "no candidate had a finite cost ({nonfinite} non-finite); run folder {}",
                dir.path().display()
            )));
        }
        Ok(format!(
            "cost {:.4} -> {:.4} (λ={:.4}, Σ={:?}) in {secs:.2} s; run folder {}",
            out.start_cost,
            out.best_cost,
            bp.lambda,
            bp.noise_sigma,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

/// The search coordinates of `knobs` for `run` (their count as names when they do not parse:
/// validation reports that).
pub(crate) fn knob_dims(run: &MppiRunConfig, knobs: &[KnobKind]) -> usize {
    TuneSpec::from_names(knobs, run.system.nu(), &run.mppi)
        .map_or(knobs.len().saturating_mul(run.system.nu()), |s| s.num_dims())
}

/// `live` candidate episodes in flight, each with its controller (planning over up to three
/// times the base horizon when the horizon is tuned) and its cost trace.
pub(crate) fn candidates(
    b: &mut Budget,
    run: &MppiRunConfig,
    knobs: &[KnobKind],
    live: usize,
    threads: usize,
) {
    let horizon = if knobs.contains(&KnobKind::Horizon) {
        run.mppi.horizon.saturating_mul(3).max(2)
    } else {
        run.mppi.horizon
    };
    let one = run.controller_bytes(horizon, threads).saturating_add(8 * run.steps as u128);
    b.add(
        "candidate controllers in flight",
        format!(
            "run.mppi.num_samples = {}, run.mppi.horizon = {}, run.steps = {}, {live} in flight",
            run.mppi.num_samples, run.mppi.horizon, run.steps
        ),
        live as u128,
        one,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A knob named twice and an odd population for an antithetic strategy are refused by
    /// name, never silently deduplicated or rounded.
    #[test]
    fn repeated_knobs_and_odd_antithetic_populations_are_refused() {
        let c = MppiTuneConfig {
            knobs: vec![KnobKind::Sigma, KnobKind::Sigma],
            ..MppiTuneConfig::default()
        };
        assert!(validate_tune(&c).unwrap_err().to_string().contains("twice"));
        for s in [kestrel_evo::StrategyKind::OpenEs, kestrel_evo::StrategyKind::Pgpe] {
            let c = MppiTuneConfig { strategy: s, pop_size: 7, ..MppiTuneConfig::default() };
            let e = validate_tune(&c).unwrap_err().to_string();
            assert!(e.contains("pop_size") && e.contains("even"), "{e}");
            validate_tune(&MppiTuneConfig {
                strategy: s,
                pop_size: 8,
                ..MppiTuneConfig::default()
            })
            .unwrap();
        }
    }
    use kestrel_mppi::SystemKind;

    /// The starts: the system's alone by default; listed ones, then random ones in their box,
    /// the same for the same seed and other for another.
    #[test]
    fn start_states_are_listed_then_drawn_in_their_box() {
        let c = MppiTuneConfig::default();
        assert_eq!(c.start_states(), vec![SystemKind::Nav2d.start()]);
        let base = SystemKind::Nav2d.start();
        let starts =
            TuneStarts { states: vec![vec![1.0, 2.0]], random: 50, spread: vec![0.5, 0.25] };
        let c = MppiTuneConfig { starts, ..MppiTuneConfig::default() };
        validate_tune(&c).unwrap();
        let s = c.start_states();
        assert_eq!(s.len(), 51);
        assert_eq!(s[0], vec![1.0, 2.0]);
        for x in &s[1..] {
            assert!((x[0] - base[0]).abs() <= 0.5 && (x[1] - base[1]).abs() <= 0.25, "{x:?}");
        }
        // Spread over the box, not one point.
        let lo = s[1..].iter().map(|x| x[0]).fold(f64::INFINITY, f64::min);
        let hi = s[1..].iter().map(|x| x[0]).fold(f64::NEG_INFINITY, f64::max);
        assert!(hi - lo > 0.5, "{lo} {hi}");
        assert_eq!(s, c.start_states());
        let mut other = c.clone();
        other.run.seed = 1;
        assert_ne!(other.start_states()[1..], s[1..]);
        // One spread value stands for every coordinate.
        let one = TuneStarts { random: 3, spread: vec![0.1], ..TuneStarts::default() };
        let c = MppiTuneConfig { starts: one, ..MppiTuneConfig::default() };
        validate_tune(&c).unwrap();
        assert!(
            c.start_states().iter().all(|x| x.iter().zip(&base).all(|(a, b)| (a - b).abs() <= 0.1))
        );
        assert_eq!(c.start_states().len(), 3);
    }

    /// Bad starts are refused by field and value before anything runs.
    #[test]
    fn bad_starts_are_refused_by_name() {
        let bad = |starts: TuneStarts, what: &str| {
            let c = MppiTuneConfig { starts, ..MppiTuneConfig::default() };
            let e = validate_tune(&c).unwrap_err().to_string();
            assert!(e.contains(what), "{what}: {e}");
        };
        bad(TuneStarts { states: vec![vec![0.0; 3]], ..TuneStarts::default() }, "starts.states[0]");
        bad(
            TuneStarts { states: vec![vec![0.0, f64::NAN]], ..TuneStarts::default() },
            "starts.states[0][1]",
        );
        bad(TuneStarts { random: 2, ..TuneStarts::default() }, "starts.spread");
        bad(
            TuneStarts { random: 2, spread: vec![0.1, 0.1, 0.1], ..TuneStarts::default() },
            "starts.spread",
        );
        bad(
            TuneStarts { random: 2, spread: vec![-0.1], ..TuneStarts::default() },
            "starts.spread[0]",
        );
        bad(TuneStarts { spread: vec![0.1], ..TuneStarts::default() }, "starts.spread");
        bad(
            TuneStarts { random: MAX_STARTS + 1, spread: vec![0.1], ..TuneStarts::default() },
            "starts",
        );
    }

    /// A candidate's cost is the mean of its episodes from every start, episode `e` keyed
    /// `Key::new(seed).fold_in(0).fold_in(e)` whatever the candidate; listing the system's start
    /// alone is the default run.
    #[test]
    fn a_candidates_cost_is_the_mean_over_its_starts() {
        let base = MppiTuneConfig { generations: 1, pop_size: 4, ..MppiTuneConfig::default() };
        let cost = |c: &MppiTuneConfig| run_tune_with(c, None, |_| true).unwrap().start_cost;
        let listed = MppiTuneConfig {
            starts: TuneStarts { states: vec![SystemKind::Nav2d.start()], ..TuneStarts::default() },
            ..base.clone()
        };
        assert_eq!(cost(&base), cost(&listed));
        let two = vec![vec![-1.0, -1.5], vec![0.5, -2.0]];
        let c = MppiTuneConfig {
            starts: TuneStarts { states: two.clone(), ..TuneStarts::default() },
            ..base.clone()
        };
        struct Each(Vec<Vec<f64>>, usize, Key);
        impl ControllerVisitor for Each {
            type Output = f64;
            fn visit<C: Controller + 'static>(self, c: C, p: C::Params) -> f64 {
                let costs = self.0.iter().enumerate().map(|(e, x0)| {
                    kestrel_mppi::episode(
                        &c,
                        &p,
                        x0,
                        self.1,
                        self.2.fold_in(e as u64),
                        false,
                        |_, _| true,
                    )
                    .total_cost
                });
                costs.sum::<f64>() / self.0.len() as f64
            }
        }
        let by_hand = c.run.visit(Each(two, c.run.steps, Key::new(c.run.seed).fold_in(0))).unwrap();
        assert_eq!(cost(&c), by_hand);
        assert_ne!(cost(&c), cost(&base));
    }

    /// A Python system's callbacks come from Python only: a config naming them is refused by
    /// the registry (the CLI, sweeps), and the run without its evaluator is refused too.
    #[test]
    fn callbacks_in_a_config_are_refused_outside_python() {
        let cb = PythonSystem::Dynamics { nx: 2, nu: 1 };
        let mut c = MppiTuneConfig { callbacks: Some(cb), ..MppiTuneConfig::default() };
        c.run.mppi = kestrel_mppi::MppiParams::new(1, 1.0);
        c.starts.states = vec![vec![0.0, 1.0]];
        validate_tune(&c).unwrap();
        let e = <MppiTune as Run>::validate(&c).unwrap_err().to_string();
        assert!(e.contains("callbacks") && e.contains("kestrel.mppi.tune"), "{e}");
        let e = run_tune_with(&c, None, |_| true).unwrap_err().to_string();
        assert!(e.contains("callbacks"), "{e}");
        assert!(tune_problem(&c).err().unwrap().to_string().contains("callbacks"));
        let mut big = c.clone();
        big.pop_size = 4096;
        big.starts.random = 4000;
        big.starts.spread = vec![0.1];
        big.run.mppi.num_samples = 2000;
        let e = validate_tune(&big).unwrap_err().to_string();
        assert!(e.contains("pop_size") && e.contains("GiB"), "{e}");
        c.starts.states.clear();
        assert!(validate_tune(&c).unwrap_err().to_string().contains("starts.states"));
        // Fixed specific sequences fix the horizon: tuning it is refused.
        let mut c = MppiTuneConfig {
            knobs: vec![KnobKind::Lambda, KnobKind::Horizon],
            ..MppiTuneConfig::default()
        };
        c.run.mppi.specific_actions = vec![vec![0.0; c.run.mppi.horizon * 2]];
        validate_tune(&MppiTuneConfig { knobs: vec![KnobKind::Lambda], ..c.clone() }).unwrap();
        let e = validate_tune(&c).unwrap_err().to_string();
        assert!(e.contains("knobs") && e.contains("specific_actions"), "{e}");
    }

    fn load_tune(_: Option<&Path>, table: toml::Table) -> Result<MppiTuneConfig, RunError> {
        crate::run::load::<MppiTune>(crate::run::Layers::table(&table), None)
    }

    /// The tuner's config is read over its run system's defaults: a pendulum (one control) gets
    /// a 1×1 noise, not the default Nav2d's 2×2, and explicit keys still win.
    #[test]
    fn tune_configs_load_over_their_systems_defaults() {
        let table = |s: &str| s.parse::<toml::Table>().unwrap();
        let c = load_tune(None, table("[run]\nsystem = \"pendulum\"")).unwrap();
        assert_eq!(c.run.system, SystemKind::Pendulum);
        assert_eq!(c.run.mppi.noise_sigma.len(), 1);
        validate_tune(&c).unwrap();
        let c = load_tune(
            None,
            table("pop_size = 6\n[run]\nsystem = \"basic\"\n[run.mppi]\nlambda = 3.0"),
        )
        .unwrap();
        assert_eq!((c.pop_size, c.run.mppi.lambda, c.run.system), (6, 3.0, SystemKind::Basic));
        assert!(load_tune(None, table("[run]\nsystem = \"pendulm\"")).is_err());
        // The default system is unchanged.
        assert_eq!(load_tune(None, toml::Table::new()).unwrap().run.system, SystemKind::Nav2d);
    }
}
