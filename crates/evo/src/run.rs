//! Whole runs as library calls: [`EsConfig`] → [`run_es`] and [`QdConfig`] → [`run_qd`].
//! The CLI (`kestrel evo run`, `kestrel evo qd`), the Python package and the Ray workers call
//! these; progress and metrics arrive through the `observe` callback, one call per
//! generation. Configs are serde types with `deny_unknown_fields` (TOML keys are the field
//! names) and `Default` values that reproduce the CLI's defaults.

use crate::driver::{Driver, Generation, Stop, StopRules, StrategyKind, benchmark};
use crate::neuro::{Neuro, argmax};
use crate::problem::{Function, Problem};
use crate::qd::{Archive, CmaMe, Emitter, LinearProjection, MapElites, QdProblem, Variation};
use crate::{BoundMode, Bounds, EvoError};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_envs::{CartPole, CartPoleParams};
use serde::{Deserialize, Serialize};

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
    pub bound_mode: BoundMode,
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
    pub restarts: Option<crate::restarts::RestartKind>,
    /// Most restarts after the first run (pycma's `restarts`).
    #[serde(default = "default_max_restarts")]
    pub max_restarts: usize,
    /// The strategy's hyper-parameters (absent: its reference defaults); a knob the strategy
    /// does not have is an error naming the strategies that have it.
    #[serde(default)]
    #[documented(nested)]
    pub params: crate::StrategyParams,
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
            bound_mode: BoundMode::Clip,
            max_evals: None,
            tol_fun: None,
            tol_x: None,
            restarts: None,
            max_restarts: default_max_restarts(),
            params: crate::StrategyParams::default(),
        }
    }
}

/// The neuroevolution problem of `problem = "cartpole"`.
pub fn cartpole_problem() -> Result<Neuro<CartPole>, EvoError> {
    Neuro::new(CartPole, CartPoleParams::default(), &[8], 2, 2, 500, |o| o, argmax)
}

/// The search dimensions of [`cartpole_problem`]: a 4-8-2 MLP's weights and biases.
pub const CARTPOLE_DIMS: usize = 4 * 8 + 8 + 8 * 2 + 2;

/// An ES run, validated and ready: the problem, the optimiser and the bounds are built.
pub struct EsRun {
    config: EsConfig,
    problem: Box<dyn Problem>,
    bounds: Option<Bounds>,
}

/// What [`run_es`] returns.
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
                let p = cartpole_problem()?;
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
    /// The restarted search ([`crate::restarts::cma_restarts_with`]): generations and
    /// evaluations are counted over all runs, and the run's `generations`, `max_evals` and
    /// `target` bound the whole search.
    fn run_restarts(
        &self,
        kind: crate::restarts::RestartKind,
        problem: &dyn Problem,
        x0: &[f32],
        mut observe: impl FnMut(&Generation) -> bool,
    ) -> Result<EsResult, EvoError> {
        let c = &self.config;
        let cfg = crate::restarts::RestartConfig {
            kind,
            sigma0: c.sigma,
            max_evals: c.max_evals.unwrap_or(u64::MAX),
            target: c.target.unwrap_or(f32::NEG_INFINITY),
            max_restarts: c.max_restarts,
            restart_box: None,
        };
        let (mut nonfinite, mut generations, mut stop) = (0u64, 0u64, None);
        let res = crate::restarts::cma_restarts_with(
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
        use crate::restarts::StopReason as R;
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

/// [`EsRun::new`] then [`EsRun::run`].
pub fn run_es(
    config: EsConfig,
    observe: impl FnMut(&Generation) -> bool,
) -> Result<EsResult, EvoError> {
    EsRun::new(config)?.run(observe)
}

/// Archive layout of a QD run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveKind {
    /// `cells × cells` grid over the two measures.
    Grid,
    /// `cells` centroidal Voronoi cells.
    Cvt,
}

/// Emitters of a QD run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmitterKind {
    /// CMA-ME (improvement-ranked CMA-ES).
    CmaMe,
    /// MAP-Elites with Gaussian variation.
    MapElites,
    /// MAP-Elites with iso-line variation.
    IsoLine,
}

/// `kestrel evo qd`'s config (the linear-projection benchmark of the CMA-ME paper).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct QdConfig {
    /// Archive layout.
    pub archive: ArchiveKind,
    /// Emitter type.
    pub emitter: EmitterKind,
    /// Emitters run side by side.
    pub num_emitters: usize,
    /// Solutions per emitter per generation.
    pub batch_size: usize,
    /// Search dimensions.
    pub num_dims: usize,
    /// Cells per measure (grid) or cells in all (cvt).
    pub cells: usize,
    /// Generations.
    pub generations: u64,
    /// Seed.
    pub seed: u64,
    /// Objective.
    pub function: Function,
    /// Emitter step size / mutation scale.
    pub sigma: f64,
}

impl Default for QdConfig {
    fn default() -> Self {
        QdConfig {
            archive: ArchiveKind::Grid,
            emitter: EmitterKind::CmaMe,
            num_emitters: 3,
            batch_size: 36,
            num_dims: 20,
            cells: 50,
            generations: 500,
            seed: 0,
            function: Function::Sphere,
            sigma: 0.5,
        }
    }
}

/// One QD generation's report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QdGeneration {
    /// Generations done.
    pub generation: u64,
    /// Evaluations so far.
    pub evals: u64,
    /// Archive statistics.
    pub stats: crate::qd::ArchiveStats,
    /// Emitter restarts so far.
    pub restarts: u64,
    /// NaN or infinite fitness or measures so far (never added to the archive).
    pub nonfinite: u64,
}

/// A validated QD run: the problem, the empty archive and the emitters.
pub struct QdRun {
    config: QdConfig,
    problem: LinearProjection,
    archive: Archive,
    emitters: Vec<Box<dyn Emitter>>,
}

impl QdRun {
    /// Validates `config` and builds the archive and emitters. Key tree: the run key is
    /// `Key::new(seed)`; the CVT centroids use `run.fold_in(99)`, emitter `e` starts from
    /// `run.fold_in(1000 + e)`; generation `g`, emitter `e` asks with
    /// `run.fold_in(g + 1).fold_in(e).fold_in(0)`, evaluates with `.fold_in(1)`, tells with
    /// `.fold_in(2)`.
    pub fn new(config: QdConfig) -> Result<Self, EvoError> {
        let c = &config;
        if c.num_dims < 2 {
            return Err(EvoError::invalid("num_dims", c.num_dims, "at least 2"));
        }
        if c.batch_size < 4 {
            return Err(EvoError::invalid("batch_size", c.batch_size, "at least 4"));
        }
        if c.num_emitters == 0 || c.num_emitters > 1024 {
            return Err(EvoError::invalid("num_emitters", c.num_emitters, "1 to 1024"));
        }
        if !(c.sigma.is_finite() && c.sigma > 0.0) {
            return Err(EvoError::invalid("sigma", c.sigma, "finite and > 0"));
        }
        let grid_cells = c.cells.checked_mul(c.cells);
        if c.cells == 0 || grid_cells.is_none_or(|g| g > 1 << 22) {
            return Err(EvoError::invalid(
                "cells",
                c.cells,
                "1 to 2048 per measure (grid) or 4,194,304 (cvt)",
            ));
        }
        let problem = LinearProjection { num_dims: c.num_dims, function: c.function };
        let b = problem.measure_bound();
        let run = Key::new(c.seed);
        let archive = match c.archive {
            ArchiveKind::Grid => {
                Archive::grid(c.num_dims, vec![c.cells, c.cells], vec![-b, -b], vec![b, b], 1e4)?
            }
            ArchiveKind::Cvt => Archive::cvt(
                c.num_dims,
                c.cells,
                vec![-b, -b],
                vec![b, b],
                20 * c.cells,
                20,
                1e4,
                run.fold_in(99),
            )?,
        };
        let x0 = vec![0.0f32; c.num_dims];
        let emitters = (0..c.num_emitters)
            .map(|e| -> Result<Box<dyn Emitter>, EvoError> {
                let lam = c.batch_size;
                Ok(match c.emitter {
                    EmitterKind::CmaMe => {
                        Box::new(CmaMe::new(lam, &x0, c.sigma, run.fold_in(1000 + e as u64))?)
                    }
                    EmitterKind::MapElites => Box::new(MapElites {
                        batch_size: lam,
                        variation: Variation::Gaussian { sigma: c.sigma as f32 },
                        x0: x0.clone(),
                    }),
                    EmitterKind::IsoLine => Box::new(MapElites {
                        batch_size: lam,
                        variation: Variation::IsoLine { iso_sigma: 0.01, line_sigma: 0.2 },
                        x0: x0.clone(),
                    }),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(QdRun { config, problem, archive, emitters })
    }

    /// The validated config, the empty archive, the emitters and the problem, as the run
    /// would start them (for callers that drive the ask/tell loop themselves).
    pub fn into_parts(self) -> (QdConfig, Archive, Vec<Box<dyn Emitter>>, LinearProjection) {
        (self.config, self.archive, self.emitters, self.problem)
    }

    /// The config.
    pub fn config(&self) -> &QdConfig {
        &self.config
    }

    /// The measure bound of the problem (the archive covers `[-b, b]²`).
    pub fn measure_bound(&self) -> f32 {
        self.problem.measure_bound()
    }

    /// Runs the generations, calling `observe` after each (return `false` to stop), and
    /// returns the archive.
    pub fn run(mut self, mut observe: impl FnMut(&QdGeneration) -> bool) -> Archive {
        let c = &self.config;
        let (lam, n) = (c.batch_size, c.num_dims);
        let (mut pop, mut fit, mut meas) = (vec![0.0; lam * n], vec![0.0; lam], vec![0.0; lam * 2]);
        let run = Key::new(c.seed);
        let (mut evals, mut nonfinite) = (0u64, 0u64);
        for g in 0..c.generations {
            for (e, em) in self.emitters.iter_mut().enumerate() {
                let k = run.fold_in(g + 1).fold_in(e as u64);
                em.ask(k.fold_in(0), &self.archive, &mut pop);
                self.problem.evaluate(k.fold_in(1), &pop, &mut fit, &mut meas);
                nonfinite += fit
                    .iter()
                    .zip(meas.chunks_exact(2))
                    .filter(|(f, m)| !f.is_finite() || !m.iter().all(|v| v.is_finite()))
                    .count() as u64;
                em.tell(k.fold_in(2), &mut self.archive, &pop, &fit, &meas);
                evals += lam as u64;
            }
            let report = QdGeneration {
                generation: g + 1,
                evals,
                stats: self.archive.stats(),
                restarts: self.emitters.iter().map(|e| e.restarts()).sum(),
                nonfinite,
            };
            if !observe(&report) {
                break;
            }
        }
        self.archive
    }
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
            restarts: Some(crate::restarts::RestartKind::Ipop),
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
        let slow = crate::StrategyParams { lr: Some(1e-6), ..Default::default() };
        let (a, b) = (best(base.clone()), best(EsConfig { params: slow, ..base.clone() }));
        assert!(a < b, "lr 0.05 reaches {a}, lr 1e-6 {b}");
        let lr = crate::StrategyParams { lr: Some(0.01), ..Default::default() };
        let cma = EsConfig { strategy: StrategyKind::CmaEs, params: lr, ..base.clone() };
        let e = EsRun::new(cma).err().unwrap().to_string();
        assert!(e.contains("params.lr") && e.contains("open-es and pgpe only"), "{e}");
        let bad = crate::StrategyParams { beta2: Some(1.5), ..Default::default() };
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
        let r = run_es(cfg, |_| {
            seen += 1;
            true
        })
        .unwrap();
        assert_eq!(r.stop, Stop::Target);
        assert!(r.best_fitness <= 1e-8);
        assert_eq!(seen, r.generations);
    }

    #[test]
    fn a_qd_run_fills_its_archive() {
        let cfg = QdConfig { generations: 20, num_dims: 6, cells: 10, ..QdConfig::default() };
        let mut last = None;
        let a = QdRun::new(cfg).unwrap().run(|g| {
            last = Some(*g);
            true
        });
        let g = last.unwrap();
        assert_eq!(g.generation, 20);
        assert_eq!(g.evals, 20 * 3 * 36);
        assert!(a.stats().coverage > 0.05);
        assert!(QdRun::new(QdConfig { cells: 100_000, ..QdConfig::default() }).is_err());
    }
}
