//! `kestrel evo run` (run kind `evo`, the Python package's `kestrel.evo.run`): an evolution
//! strategy minimising a benchmark function or evolving a CartPole policy, one metrics line
//! per generation, a convergence plot and a summary. The strategies and problems are
//! `kestrel-evo`'s; the config, its checks and the generation loop ([`EsRun::run_with`]) are
//! here.

use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_core::{Budget, FromInvalid, Key};
use kestrel_evo::StrategyKind;
use kestrel_evo::driver::{Driver, Generation, Stop, StopRules, benchmark};
use kestrel_evo::problem::Function;
use kestrel_evo::{BoundKind, Bounds, EvoError, Problem};
use kestrel_plot::{LinePlot, Series};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// What an ES run minimises: a benchmark function by name, or `cartpole` (neuroevolution of
/// an MLP 4-8-2 policy on CartPole-v1; fitness = −mean return of 2 episodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum EsProblem {
    /// A benchmark function.
    Function(Function),
    /// CartPole-v1 neuroevolution.
    Cartpole,
}

impl TryFrom<String> for EsProblem {
    type Error = EvoError;
    fn try_from(s: String) -> Result<Self, EvoError> {
        if s == "cartpole" {
            return Ok(EsProblem::Cartpole);
        }
        Function::parse(&s).map(EsProblem::Function).map_err(|_| {
            let names: Vec<&str> = Function::ALL.iter().map(|f| f.name()).collect();
            EvoError::invalid(
                "problem",
                format!("{s:?}"),
                format!("{} or cartpole", names.join(", ")),
            )
        })
    }
}

impl From<EsProblem> for String {
    fn from(p: EsProblem) -> String {
        match p {
            EsProblem::Function(f) => f.name().into(),
            EsProblem::Cartpole => "cartpole".into(),
        }
    }
}

/// `kestrel evo run`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct EsConfig {
    /// The strategy.
    pub strategy: StrategyKind,
    /// The problem.
    pub problem: EsProblem,
    /// Search dimensions (for `cartpole`: set to the policy's weight count).
    pub num_dims: usize,
    /// Population size (absent: the strategy's rule; written out resolved).
    pub pop_size: Option<usize>,
    /// Generations.
    pub generations: u64,
    /// Seed.
    pub seed: u64,
    /// Initial step size.
    pub sigma: f64,
    /// Start point (every coordinate).
    pub x0: f32,
    /// Rotate the problem by a random orthogonal matrix.
    pub rotate: bool,
    /// Shift the optimum uniformly within ±shift.
    pub shift: f64,
    /// Stop at this best fitness (absent: 1e-8 for functions, −500 for cartpole; written out
    /// resolved).
    pub target: Option<f32>,
    /// Box bounds `[lower, upper]` for every coordinate (absent: none).
    pub bounds: Option<[f32; 2]>,
    /// How bounds are applied: `clip`, `reflect` (`ask` returns repaired rows) or `penalty`
    /// (1e3 × the squared distance added to fitness).
    pub bound_mode: BoundKind,
    /// Stop once this many evaluations are spent (pycma's `maxfevals`; absent: no limit).
    #[serde(default)]
    pub max_evals: Option<u64>,
    /// Stop once the best fitness of each of the last 10 + ⌈30 n / pop_size⌉ generations and
    /// every fitness of the current one lie within a range below this (pycma's `tolfun`;
    /// absent: off).
    #[serde(default)]
    pub tol_fun: Option<f64>,
    /// Stop once the step size falls below this (pycma's `tolx`, on σ alone; absent: off).
    #[serde(default)]
    pub tol_x: Option<f64>,
    /// Restart CMA-ES when a run stalls: `ipop` (population doubles each restart; Auger &
    /// Hansen 2005) or `bipop` (large and small populations interleaved; Hansen 2009); absent:
    /// no restarts. Each run stops by pycma's default rules; `generations`, `max_evals` and
    /// `target` bound the whole search. CMA-ES only, without bounds.
    #[serde(default)]
    pub restarts: Option<kestrel_evo::restarts::RestartKind>,
    /// Most restarts after the first run (pycma's `restarts`).
    #[serde(default = "default_max_restarts")]
    pub max_restarts: usize,
    /// The strategy's hyper-parameters (absent: its reference defaults); a knob the strategy
    /// does not have is an error naming the strategies that have it.
    #[serde(default)]
    #[documented(nested)]
    pub params: kestrel_evo::StrategyParams,
}

fn default_max_restarts() -> usize {
    9
}

impl Default for EsConfig {
    fn default() -> Self {
        EsConfig {
            strategy: StrategyKind::CmaEs,
            problem: EsProblem::Function(Function::Rosenbrock),
            num_dims: 10,
            pop_size: None,
            generations: 1000,
            seed: 0,
            sigma: 0.5,
            x0: 0.0,
            rotate: false,
            shift: 0.0,
            target: None,
            bounds: None,
            bound_mode: BoundKind::Clip,
            max_evals: None,
            tol_fun: None,
            tol_x: None,
            restarts: None,
            max_restarts: default_max_restarts(),
            params: kestrel_evo::StrategyParams::default(),
        }
    }
}

/// An ES run, validated and ready: the problem, the optimiser and the bounds are built.
pub struct EsRun {
    config: EsConfig,
    problem: Box<dyn Problem>,
    bounds: Option<Bounds>,
}

/// What [`EsRun::run`] returns.
#[derive(Clone, Debug, PartialEq)]
pub struct EsResult {
    /// Best fitness found.
    pub best_fitness: f32,
    /// Its solution.
    pub best_solution: Vec<f32>,
    /// Evaluations spent.
    pub evals: u64,
    /// Generations run.
    pub generations: u64,
    /// Why the run ended.
    pub stop: Stop,
    /// NaN or infinite fitness values over the run (ranked worst).
    pub nonfinite: u64,
}

impl EsRun {
    /// Validates `config` and builds everything (no generation runs yet). The config's
    /// `num_dims`, `pop_size` and `target` are resolved (see [`EsRun::config`]).
    pub fn new(mut config: EsConfig) -> Result<Self, EvoError> {
        let run = Key::new(config.seed);
        let problem: Box<dyn Problem> = match config.problem {
            EsProblem::Cartpole => {
                let p = kestrel_evo::neuro::cartpole_problem()?;
                config.num_dims = p.num_dims();
                Box::new(p)
            }
            EsProblem::Function(f) => {
                Box::new(benchmark(f.name(), config.num_dims, config.shift, config.rotate, run)?)
            }
        };
        let n = config.num_dims;
        if !config.x0.is_finite() {
            return Err(EvoError::invalid("x0", config.x0, "finite"));
        }
        config.pop_size = Some(config.strategy.pop_size(config.pop_size, n)?);
        let target = config.target.unwrap_or(match config.problem {
            EsProblem::Cartpole => -500.0,
            EsProblem::Function(_) => 1e-8,
        });
        config.target = Some(target);
        // NaN target, zero budget, non-positive tolerances.
        StopRules::from(&config).validate()?;
        if config.restarts.is_some() {
            if config.strategy != StrategyKind::CmaEs {
                return Err(EvoError::invalid(
                    "restarts",
                    format!("with strategy {}", config.strategy),
                    "cma-es only (IPOP and BIPOP restart CMA-ES)",
                ));
            }
            if config.bounds.is_some() {
                return Err(EvoError::invalid(
                    "restarts",
                    "with bounds",
                    "no bounds (restarted runs are unbounded)",
                ));
            }
            if config.max_restarts > 1000 {
                return Err(EvoError::invalid("max_restarts", config.max_restarts, "0 to 1000"));
            }
        }
        let bounds = match config.bounds {
            Some([lo, hi]) => {
                let mode = config.bound_mode;
                Some(Bounds::uniform(n, lo, hi, mode)?)
            }
            None => None,
        };
        // Build once to validate sizes and step size before any folder exists.
        let x0 = vec![config.x0; n];
        let opt =
            config.strategy.build_with(config.pop_size, config.sigma, &config.params, &x0, run)?;
        Driver::new(opt, problem.as_ref(), run)?;
        Ok(EsRun { config, problem, bounds })
    }

    /// The resolved config.
    pub fn config(&self) -> &EsConfig {
        &self.config
    }

    /// The built problem (what a distributed evaluator must reproduce).
    pub fn into_problem(self) -> Box<dyn Problem> {
        self.problem
    }

    /// Runs the generations (on the ambient rayon pool), calling `observe` after each; it may
    /// stop the run by returning `false`.
    pub fn run(&self, observe: impl FnMut(&Generation) -> bool) -> Result<EsResult, EvoError> {
        self.run_with(None, observe)
    }

    /// [`EsRun::run`] with the fitness computed by `evaluator` (an equal problem evaluated
    /// elsewhere: on Ray workers, say) instead of the built problem; the keys it receives are
    /// the run's, so an evaluator giving the built problem's values gives the same run.
    pub fn run_with(
        &self,
        evaluator: Option<&dyn Problem>,
        mut observe: impl FnMut(&Generation) -> bool,
    ) -> Result<EsResult, EvoError> {
        let c = &self.config;
        let run = Key::new(c.seed);
        let x0 = vec![c.x0; c.num_dims];
        let problem = evaluator.unwrap_or(self.problem.as_ref());
        if let Some(kind) = c.restarts {
            return self.run_restarts(kind, problem, &x0, observe);
        }
        let opt = c.strategy.build_with(c.pop_size, c.sigma, &c.params, &x0, run)?;
        let mut d = Driver::new(opt, problem, run)?;
        if let Some(b) = &self.bounds {
            d = d.with_bounds(b.clone())?;
        }
        let mut nonfinite = 0u64;
        let stop = d.run_until(c.generations, &StopRules::from(c), |g| {
            nonfinite += g.metrics.nonfinite as u64;
            observe(g)
        });
        let pr = d.progress();
        Ok(EsResult {
            best_fitness: pr.best_fitness,
            best_solution: pr.best_solution.clone(),
            evals: d.evals(),
            generations: d.generation(),
            stop,
            nonfinite,
        })
    }
}

impl EsRun {
    /// The restarted search ([`kestrel_evo::restarts::cma_restarts_with`]): generations and
    /// evaluations are counted over all runs, and the run's `generations`, `max_evals` and
    /// `target` bound the whole search.
    fn run_restarts(
        &self,
        kind: kestrel_evo::restarts::RestartKind,
        problem: &dyn Problem,
        x0: &[f32],
        mut observe: impl FnMut(&Generation) -> bool,
    ) -> Result<EsResult, EvoError> {
        let c = &self.config;
        let cfg = kestrel_evo::restarts::RestartConfig {
            kind,
            sigma0: c.sigma,
            max_evals: c.max_evals.unwrap_or(u64::MAX),
            target: c.target.unwrap_or(f32::NEG_INFINITY),
            max_restarts: c.max_restarts,
            restart_box: None,
        };
        let (mut nonfinite, mut generations, mut stop) = (0u64, 0u64, None);
        let res = kestrel_evo::restarts::cma_restarts_with(
            problem,
            x0,
            &cfg,
            &c.params,
            Key::new(c.seed),
            |g| {
                nonfinite += g.metrics.nonfinite as u64;
                generations = g.metrics.generation;
                if !observe(g) {
                    stop = Some(Stop::Observer);
                } else if generations >= c.generations {
                    stop = Some(Stop::Generations);
                }
                stop.is_none()
            },
        )?;
        use kestrel_evo::restarts::StopReason as R;
        let stop = match res.ended {
            R::Target => Stop::Target,
            R::Budget => Stop::MaxEvals,
            R::Observer => stop.unwrap_or(Stop::Observer),
            _ => Stop::Restarts,
        };
        Ok(EsResult {
            best_fitness: res.best_fitness,
            best_solution: res.best_solution,
            evals: res.evals,
            generations,
            stop,
            nonfinite,
        })
    }
}

impl From<&EsConfig> for StopRules {
    fn from(c: &EsConfig) -> StopRules {
        StopRules { target: c.target, max_evals: c.max_evals, tol_fun: c.tol_fun, tol_x: c.tol_x }
    }
}

/// The `evo` run kind.
pub struct Es;

impl Run for Es {
    const NAME: &'static str = "evo";
    const COMMAND: &'static str = "evo run";
    const ABOUT: &'static str =
        "Minimise a benchmark function (or evolve a CartPole policy) with an evolution strategy.";
    const METRICS: &'static [&'static str] = &["best_fitness", "evals"];
    const CURVE: &'static str = "best";
    type Config = EsConfig;

    fn defaults(_: Option<&EsConfig>) -> EsConfig {
        EsConfig::default()
    }

    /// Restarting runs also log each generation's restart and population size.
    fn outputs(c: &EsConfig) -> Outputs {
        let restarts = c.restarts.is_some().then_some(["restart", "pop_size"]);
        Outputs::new(
            &["best_fitness", "evals", "nonfinite", "wall_seconds"],
            &["best", "best_in_generation", "evals", "nonfinite", "sigma"],
        )
        .columns(restarts.into_iter().flatten().map(String::from))
    }

    fn validate(c: &EsConfig) -> Result<(), RunError> {
        EsRun::new(c.clone())?;
        Ok(())
    }

    /// The problem (shift, rotation), bounds, the strategy's state with the driver's
    /// population (the largest population of a restarted search: the first one's times
    /// 2^`max_restarts`), evaluation scratch per thread, and the curve.
    fn budget(c: &EsConfig, threads: usize) -> Budget {
        let n = match c.problem {
            EsProblem::Cartpole => kestrel_evo::neuro::CARTPOLE_DIMS,
            EsProblem::Function(_) => c.num_dims,
        };
        let (nn, t) = (n as u128, threads as u128);
        let dims = format!("num_dims = {n}");
        let mut b = Budget::new();
        runs::fixed(&mut b);
        b.add("problem shift and start", dims.clone(), nn, 12);
        if c.rotate {
            b.add("problem rotation", format!("{dims}, rotate = true"), nn.saturating_mul(nn), 8);
        }
        if c.bounds.is_some() {
            b.add("bounds", dims.clone(), nn, 16);
        }
        let pop = c.pop_size.unwrap_or_else(|| c.strategy.default_pop_size(n));
        let (pop, why) = match c.restarts {
            Some(_) => {
                let grow = 1usize.checked_shl(c.max_restarts as u32).unwrap_or(usize::MAX);
                let first = kestrel_evo::default_pop_size(n);
                (first.saturating_mul(grow), format!("{dims}, max_restarts = {}", c.max_restarts))
            }
            None => (pop, format!("{dims}, pop_size = {pop}")),
        };
        b.add(
            format!("{} state and population", c.strategy.name()),
            why,
            c.strategy.state_bytes(n, pop),
            1,
        );
        runs::packing(&mut b, c.strategy, n, pop, threads);
        b.add(
            "fitness history",
            dims.clone(),
            nn.saturating_mul(30) / (pop.max(1) as u128) + 12,
            4,
        );
        b.add(
            "evaluation scratch per thread",
            format!("{dims}, threads = {threads}"),
            nn.saturating_mul(t),
            16,
        );
        runs::curve(&mut b, format!("generations = {}", c.generations), c.generations as u128);
        b
    }

    fn run(c: EsConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run_with(c, None, &|| None, launch)
    }

    const EVALUATED_ELSEWHERE: bool = true;

    /// The configured problem (shifted and rotated by the seed), a fresh key per generation.
    fn population(c: &EsConfig) -> Result<crate::run::Population, RunError> {
        Ok(crate::run::Population {
            problem: EsRun::new(c.clone())?.into_problem(),
            key_run: Key::new(c.seed),
            eval_keys: kestrel_evo::EvalKeys::PerGeneration,
        })
    }

    fn run_evaluated(
        c: EsConfig,
        evaluator: &dyn Problem,
        failed: &dyn Fn() -> Option<String>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run_with(c, Some(evaluator), failed, launch)
    }
}

/// Validates `config`, then runs it into a new folder: `config.toml`, `record.json`,
/// `metrics.jsonl` (one line per generation), `convergence.png/svg`, `summary.md/json`. A run
/// whose best fitness is not finite is an error (after the folder is written). With an
/// `evaluator` the fitness is computed by it (the configured problem evaluated elsewhere, on
/// Ray workers say; see [`EsRun::run_with`]). `failed` is asked after every generation: a
/// message stops the run, which then fails with it.
pub fn run_with(
    config: EsConfig,
    evaluator: Option<&dyn Problem>,
    failed: &dyn Fn() -> Option<String>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let es = EsRun::new(config)?;
    let c = es.config().clone();
    let problem = String::from(c.problem);
    let title = format!("{} on {problem} ({} dims)", c.strategy, c.num_dims);
    let (dir, mut metrics) =
        start(&launch, "evo", &format!("{}-{problem}", c.strategy), c.seed, &c)?;
    let r = (|| -> Result<String, RunError> {
        let mut progress = launch.progress(c.generations, "generations");
        let (mut curve, mut io) = (Vec::new(), Ok(()));
        let t0 = Instant::now();
        let mut failure = None;
        let res = es.run_with(evaluator, |g| {
            failure = failed();
            if failure.is_some() {
                return false;
            }
            let m = &g.metrics;
            curve.push((g.evals as f64, m.best_so_far as f64));
            let mut line = json!({"evals": g.evals, "best": m.best_so_far,
                "best_in_generation": m.best_in_generation, "sigma": m.sigma, "nonfinite": m.nonfinite});
            if c.restarts.is_some() {
                line["restart"] = json!(g.restart);
                line["pop_size"] = json!(g.pop_size);
            }
            io = metrics.log(m.generation, line);
            let go = progress.tick(m.generation, &format!("best {:.3e} non-finite {}", m.best_so_far, m.nonfinite));
            io.is_ok() && go
        })?;
        if let Some(m) = failure {
            return Err(RunError::Failed(m));
        }
        io?;
        let secs = t0.elapsed().as_secs_f64();
        metrics.finish()?;
        progress.stopped()?;
        LinePlot::new(&title)
            .x_label("evaluations")
            .y_label("best fitness so far")
            .series(Series::new("best so far", curve))
            .save(&dir.join("convergence"))?;
        let x = &res.best_solution;
        let reached = res.stop.describe();
        let per_eval = secs * 1e6 / res.evals.max(1) as f64;
        Summary::new(format!("evo run: {title}"))
            .value("best_fitness", "best fitness", res.best_fitness as f64)
            .item(
                "evals",
                "evaluations",
                res.evals,
                format!("{} ({} generations, {reached})", res.evals, res.generations),
            )
            .item(
                "wall_seconds",
                "wall time",
                secs,
                format!("{secs:.2} s ({per_eval:.1} µs per evaluation)"),
            )
            .value("nonfinite", "non-finite fitness values", res.nonfinite)
            .item(
                "best_solution",
                "best solution (first 8)",
                x.clone(),
                format!("{:?}", &x[..x.len().min(8)]),
            )
            .value("commit", "commit", COMMIT)
            .file("config.toml", "the resolved config (`--config` replays it)")
            .file("metrics.jsonl", "one line per generation")
            .file("convergence.png", "best fitness so far against evaluations (also .svg)")
            .write(dir.path())?;
        if !res.best_fitness.is_finite() {
            return Err(RunError::Failed(format!(
                "no finite fitness in {} evaluations ({} non-finite); run folder {}",
                res.evals,
                res.nonfinite,
                dir.path().display()
            )));
        }
        Ok(format!(
            "best {:.6e} after {} evaluations in {secs:.2} s; run folder {}",
            res.best_fitness,
            res.evals,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn es_configs_resolve_and_reject_bad_values() {
        let r = EsRun::new(EsConfig { num_dims: 5, ..EsConfig::default() }).unwrap();
        assert_eq!(r.config().pop_size, Some(8));
        assert_eq!(r.config().target, Some(1e-8));
        let c =
            EsRun::new(EsConfig { problem: EsProblem::Cartpole, ..EsConfig::default() }).unwrap();
        assert_eq!(c.config().num_dims, 58);
        for bad in [
            EsConfig { sigma: f64::NAN, ..EsConfig::default() },
            EsConfig { x0: f32::NAN, ..EsConfig::default() },
            EsConfig { shift: f64::INFINITY, ..EsConfig::default() },
            EsConfig { target: Some(f32::NAN), ..EsConfig::default() },
            EsConfig { num_dims: 0, ..EsConfig::default() },
            EsConfig { pop_size: Some(1), ..EsConfig::default() },
        ] {
            assert!(EsRun::new(bad).is_err());
        }
        let e = EsProblem::try_from("sphre".to_string()).unwrap_err().to_string();
        assert!(e.contains("sphre") && e.contains("cartpole"), "{e}");
    }

    /// pycma-style stop rules end a run with their reason; restarts count generations and
    /// evaluations over all runs and report each generation's restart and population.
    #[test]
    fn stop_rules_and_restarts_end_runs_with_their_reason() {
        let sphere = EsConfig {
            problem: EsProblem::Function(Function::Sphere),
            num_dims: 4,
            x0: 1.0,
            generations: 5000,
            target: Some(f32::NEG_INFINITY),
            ..EsConfig::default()
        };
        let go = |c: EsConfig| {
            let mut seen = Vec::new();
            let r = EsRun::new(c).unwrap().run(|g| {
                seen.push(*g);
                true
            });
            (r.unwrap(), seen)
        };
        let (r, seen) = go(EsConfig { max_evals: Some(50), ..sphere.clone() });
        assert_eq!((r.stop, r.evals), (Stop::MaxEvals, 56), "8 per generation: stops at 56 >= 50");
        assert_eq!(seen.len(), 7);
        let (r, _) = go(EsConfig { tol_fun: Some(1e-9), ..sphere.clone() });
        assert_eq!(r.stop, Stop::TolFun);
        assert!(r.best_fitness < 1e-7 && r.generations < 5000, "{r:?}");
        let (r, seen) = go(EsConfig { tol_x: Some(1e-3), ..sphere.clone() });
        assert_eq!(r.stop, Stop::TolX);
        assert!(
            seen.last().unwrap().metrics.sigma < 1e-3 && seen[seen.len() - 2].metrics.sigma >= 1e-3
        );
        let rastrigin = EsConfig {
            problem: EsProblem::Function(Function::Rastrigin),
            num_dims: 4,
            x0: 3.0,
            sigma: 2.0,
            generations: 3000,
            max_evals: Some(40_000),
            restarts: Some(kestrel_evo::restarts::RestartKind::Ipop),
            max_restarts: 4,
            ..EsConfig::default()
        };
        let (r, seen) = go(rastrigin.clone());
        assert!(matches!(r.stop, Stop::Target | Stop::Restarts | Stop::MaxEvals), "{r:?}");
        let last = seen.last().unwrap();
        assert!(last.restart >= 1, "no restart happened: {last:?}");
        assert_eq!((last.evals, last.metrics.generation), (r.evals, r.generations));
        for w in seen.windows(2) {
            assert_eq!(w[1].metrics.generation, w[0].metrics.generation + 1);
            assert!(
                w[1].evals > w[0].evals && w[1].metrics.best_so_far <= w[0].metrics.best_so_far
            );
            if w[1].restart > w[0].restart {
                assert_eq!(w[1].pop_size, 2 * w[0].pop_size, "IPOP doubles the population");
            }
        }
        // The generation budget bounds the whole search.
        let (r, seen) = go(EsConfig { generations: 30, ..rastrigin.clone() });
        assert_eq!((r.stop, r.generations, seen.len()), (Stop::Generations, 30, 30));
        for (bad, want) in [
            (EsConfig { strategy: StrategyKind::Snes, ..rastrigin.clone() }, "cma-es only"),
            (EsConfig { bounds: Some([-5.0, 5.0]), ..rastrigin.clone() }, "no bounds"),
            (EsConfig { tol_fun: Some(0.0), ..sphere.clone() }, "tol_fun"),
            (EsConfig { max_evals: Some(0), ..sphere.clone() }, "max_evals"),
        ] {
            let e = EsRun::new(bad).err().unwrap().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
    }

    /// `params` reach the strategy: a knob changes the run, a knob of another strategy or out
    /// of range is refused by name before anything runs.
    #[test]
    fn strategy_params_reach_the_strategy_and_foreign_knobs_are_refused() {
        let base = EsConfig {
            strategy: StrategyKind::OpenEs,
            problem: EsProblem::Function(Function::Sphere),
            num_dims: 6,
            x0: 1.0,
            generations: 30,
            ..EsConfig::default()
        };
        let best = |c: EsConfig| EsRun::new(c).unwrap().run(|_| true).unwrap().best_fitness;
        let slow = kestrel_evo::StrategyParams { lr: Some(1e-6), ..Default::default() };
        let (a, b) = (best(base.clone()), best(EsConfig { params: slow, ..base.clone() }));
        assert!(a < b, "lr 0.05 reaches {a}, lr 1e-6 {b}");
        let lr = kestrel_evo::StrategyParams { lr: Some(0.01), ..Default::default() };
        let cma = EsConfig { strategy: StrategyKind::CmaEs, params: lr, ..base.clone() };
        let e = EsRun::new(cma).err().unwrap().to_string();
        assert!(
            e.contains("params.lr") && e.contains("a knob of open-es, pgpe") && e.contains("only"),
            "{e}"
        );
        let bad = kestrel_evo::StrategyParams { beta2: Some(1.5), ..Default::default() };
        let e = EsRun::new(EsConfig { params: bad, ..base }).err().unwrap().to_string();
        assert!(e.contains("params.beta2") && e.contains("1.5"), "{e}");
    }

    #[test]
    fn an_es_run_reaches_the_target_and_reports_every_generation() {
        let cfg = EsConfig {
            num_dims: 4,
            problem: EsProblem::Function(Function::Sphere),
            ..EsConfig::default()
        };
        let mut seen = 0;
        let r = EsRun::new(cfg)
            .unwrap()
            .run(|_| {
                seen += 1;
                true
            })
            .unwrap();
        assert_eq!(r.stop, Stop::Target);
        assert!(r.best_fitness <= 1e-8);
        assert_eq!(seen, r.generations);
    }
}
