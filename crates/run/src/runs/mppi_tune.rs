//! `kestrel mppi tune` (run kind `mppi-tune`, the Python package's `kestrel.mppi.tune`): an
//! evolution strategy searching a controller's knobs (λ, Σ, μ, horizon), each candidate's
//! cost its closed-loop episode's mean running cost. The config ([`TuneConfig`]), its checks and
//! the generation loop ([`run_tune_with`]) are here, over `kestrel-mppi`'s tuner parts
//! ([`Tuner`], [`TuneProblem`], [`TuneSpec`]); the best knobs are written as a run config
//! `kestrel mppi run` replays.

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, Outputs, Run, RunError, Summary, runs, write_atomic};
use kestrel_core::Budget;
use kestrel_core::{FromInvalid, Key};
use kestrel_evo::{Problem, TellMetrics};
use kestrel_mppi::presets::ControllerVisitor;
use kestrel_mppi::tune::{KnobKind, TuneProblem, TuneSpec, Tuner};
use kestrel_mppi::{Controller, ControllerKind, Dynamics, MppiError, MppiRunConfig, System};
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
pub struct TuneConfig {
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
}

impl TuneConfig {
    /// The defaults a tuning config is read over once its run's controller and system are
    /// known (the second of the two passes every front end makes): that system's MPPI run
    /// defaults (its noise size, bounds and start), the rest as [`TuneConfig::default`].
    pub fn defaults_for(run: &MppiRunConfig) -> TuneConfig {
        TuneConfig {
            run: MppiRunConfig::defaults_for(run.controller, run.system, 20, 0),
            ..TuneConfig::default()
        }
    }
}

impl Default for TuneConfig {
    fn default() -> Self {
        TuneConfig {
            run: MppiRunConfig::defaults_for(ControllerKind::Mppi, System::Nav2d, 20, 0),
            knobs: vec![KnobKind::Lambda, KnobKind::Sigma],
            strategy: kestrel_evo::StrategyKind::CmaEs,
            pop_size: 16,
            generations: 20,
            sigma: 1.0,
            params: kestrel_evo::StrategyParams::default(),
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
pub fn validate_tune(c: &TuneConfig) -> Result<(), MppiError> {
    let nu = c.run.system.nu();
    TuneSpec::from_names(&c.knobs, nu, &c.run.mppi)?;
    c.run.validate()?;
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
    if c.generations == 0 {
        return Err(MppiError::invalid("generations", 0, "at least 1"));
    }
    Ok(())
}

/// Tunes the configured knobs: the strategy (run key `Key::new(run.seed)`) searches the knobs'
/// transformed coordinates from the base values; candidates are scored by
/// [`TuneProblem::episode_cost`] from the system's start (common random numbers);
/// `observe` sees every generation and may stop the run by returning `false`. With
/// `evaluator`, the candidates' costs come from it instead (see [`Tuner::with_evaluator`];
/// [`tune_problem`] builds what it must equal).
pub fn run_tune_with(
    c: &TuneConfig,
    evaluator: Option<&dyn Problem>,
    observe: impl FnMut(&TellMetrics) -> bool,
) -> Result<TuneOutcome, MppiError> {
    validate_tune(c)?;
    struct Go<'a, F> {
        c: &'a TuneConfig,
        evaluator: Option<&'a dyn Problem>,
        observe: F,
    }
    impl<D: Dynamics, F: FnMut(&TellMetrics) -> bool> ControllerVisitor<D> for Go<'_, F> {
        type Output = Result<TuneOutcome, MppiError>;
        fn visit<C: Controller<Dyn = D>>(self, ctrl: C, p: C::Params) -> Self::Output {
            let c = self.c;
            let nu = ctrl.dynamics().nu();
            let spec = TuneSpec::from_names(&c.knobs, nu, C::base(&p))?;
            let start = c.run.system.start();
            let problem = TuneProblem::new(ctrl, spec, p.clone(), vec![start], c.run.steps)?;
            let key = Key::new(c.run.seed);
            let start_cost = problem.episode_cost(key.fold_in(0), &p);
            let opt = c
                .strategy
                .build_with(Some(c.pop_size), c.sigma, &c.params, &problem.start_vector(), key)
                .map_err(|e| MppiError::invalid("strategy", c.strategy.name(), e.to_string()))?;
            let mut t = match self.evaluator {
                Some(e) => Tuner::with_evaluator(opt, &problem, e, key)?,
                None => Tuner::new(opt, &problem, key)?,
            };
            t.run(c.generations, self.observe);
            let r = t.result();
            let mut best_run = c.run.clone();
            best_run.mppi = C::base(&r.best_params).clone();
            Ok(TuneOutcome { start_cost, best_cost: r.best_cost, best_run, history: r.history })
        }
    }
    c.run.visit(Go { c, evaluator, observe })?
}

/// The problem [`run_tune_with`] evaluates for config `c` (one candidate's cost: the mean
/// closed-loop cost of its knobs), to be evaluated elsewhere with the run's keys.
pub fn tune_problem(c: &TuneConfig) -> Result<Box<dyn Problem>, MppiError> {
    validate_tune(c)?;
    struct Build<'a>(&'a TuneConfig);
    impl<D: Dynamics> ControllerVisitor<D> for Build<'_> {
        type Output = Result<Box<dyn Problem>, MppiError>;
        fn visit<C: Controller<Dyn = D> + 'static>(self, ctrl: C, p: C::Params) -> Self::Output {
            let c = self.0;
            let spec = TuneSpec::from_names(&c.knobs, ctrl.dynamics().nu(), C::base(&p))?;
            let start = c.run.system.start();
            Ok(Box::new(TuneProblem::new(ctrl, spec, p, vec![start], c.run.steps)?))
        }
    }
    c.run.visit(Build(c))?
}

/// The `mppi-tune` run kind.
pub struct MppiTune;

impl Run for MppiTune {
    const NAME: &'static str = "mppi-tune";
    const COMMAND: &'static str = "mppi tune";
    const SEED_KEY: &'static [&'static str] = &["run", "seed"];
    const METRICS: &'static [&'static str] = &["best_cost", "start_cost"];
    const CURVE: &'static str = "best";
    type Config = TuneConfig;

    /// Read over the run system's defaults once `first` names it: a pendulum run gets the
    /// pendulum's one-control noise, not the default system's.
    fn defaults(first: Option<&TuneConfig>) -> TuneConfig {
        first.map_or_else(TuneConfig::default, |f| TuneConfig::defaults_for(&f.run))
    }

    fn outputs(_: &TuneConfig) -> Outputs {
        Outputs::new(
            &[
                "best_cost",
                "best_horizon",
                "best_lambda",
                "nonfinite",
                "start_cost",
                "wall_seconds",
            ],
            &["best", "best_in_generation", "nonfinite", "sigma"],
        )
    }

    fn validate(c: &TuneConfig) -> Result<(), RunError> {
        Ok(validate_tune(c)?)
    }

    /// A controller per candidate episode in flight (one per thread, at most `pop_size`), the
    /// strategy over the knobs, the history and its plot.
    fn budget(c: &TuneConfig, threads: usize) -> Budget {
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

    fn run(c: TuneConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        tune(c, launch)
    }
}

/// Validates `c`, then tunes into a new folder: `config.toml`, `record.json`, `metrics.jsonl`
/// (one line per generation), `best.toml` (the base run with the best knobs, which `kestrel
/// mppi run --config` replays), `best.png/svg`, `summary.md/json`.
pub fn tune(c: TuneConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    tune_with(c, None, &|| None, launch)
}

/// [`tune`] with the candidates' costs computed by `evaluator` (the problem of
/// [`tune_problem`] evaluated elsewhere, on Ray workers say). `failed` is
/// asked after every generation: a message stops the run, which then fails with it.
pub fn tune_with(
    c: TuneConfig,
    evaluator: Option<&dyn kestrel_evo::Problem>,
    failed: &dyn Fn() -> Option<String>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    validate_tune(&c)?;
    let name = format!("{}-{}-{}", c.run.controller.name(), c.run.system.name(), c.strategy);
    let (dir, mut metrics) = start(&launch, "mppi-tune", &name, c.run.seed, &c)?;
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
        let best_toml = crate::config::to_toml(&out.best_run)?;
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
            .item("best_lambda", "best λ", bp.lambda, format!("{:.5}", bp.lambda))
            .item("best_noise_sigma", "best Σ", bp.noise_sigma.clone(), format!("{:?}", bp.noise_sigma))
            .item("best_noise_mu", "best μ", bp.noise_mu.clone(), format!("{:?}", bp.noise_mu))
            .value("best_horizon", "best horizon", bp.horizon as u64)
            .item("wall_seconds", "wall time", secs, format!("{} generations of {} candidates in {secs:.2} s", c.generations, c.pop_size))
            .value("commit", "commit", COMMIT)
            .file("best.toml", "the base run with the best knobs: `kestrel mppi run --config best.toml` replays it")
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
        let c =
            TuneConfig { knobs: vec![KnobKind::Sigma, KnobKind::Sigma], ..TuneConfig::default() };
        assert!(validate_tune(&c).unwrap_err().to_string().contains("twice"));
        for s in [kestrel_evo::StrategyKind::OpenEs, kestrel_evo::StrategyKind::Pgpe] {
            let c = TuneConfig { strategy: s, pop_size: 7, ..TuneConfig::default() };
            let e = validate_tune(&c).unwrap_err().to_string();
            assert!(e.contains("pop_size") && e.contains("even"), "{e}");
            validate_tune(&TuneConfig { strategy: s, pop_size: 8, ..TuneConfig::default() })
                .unwrap();
        }
    }
    use kestrel_mppi::System;

    fn load_tune(_: Option<&Path>, table: toml::Table) -> Result<TuneConfig, RunError> {
        crate::registry::load::<MppiTune>(crate::Layers::table(&table), None)
    }

    /// The tuner's config is read over its run system's defaults: a pendulum (one control) gets
    /// a 1×1 noise, not the default Nav2d's 2×2, and explicit keys still win.
    #[test]
    fn tune_configs_load_over_their_systems_defaults() {
        let table = |s: &str| s.parse::<toml::Table>().unwrap();
        let c = load_tune(None, table("[run]\nsystem = \"pendulum\"")).unwrap();
        assert_eq!(c.run.system, System::Pendulum);
        assert_eq!(c.run.mppi.noise_sigma.len(), 1);
        validate_tune(&c).unwrap();
        let c = load_tune(
            None,
            table("pop_size = 6\n[run]\nsystem = \"basic\"\n[run.mppi]\nlambda = 3.0"),
        )
        .unwrap();
        assert_eq!((c.pop_size, c.run.mppi.lambda, c.run.system), (6, 3.0, System::Basic));
        assert!(load_tune(None, table("[run]\nsystem = \"pendulm\"")).is_err());
        // The default system is unchanged.
        assert_eq!(load_tune(None, toml::Table::new()).unwrap().run.system, System::Nav2d);
    }
}
