//! CMA-ES with restarts: IPOP (population doubles at each restart) and BIPOP (interleaves
//! large-population runs with small-population, small-step runs).
//!
//! Papers: A. Auger and N. Hansen, "A Restart CMA Evolution Strategy With Increasing
//! Population Size", CEC 2005 (IPOP); N. Hansen, "Benchmarking a BI-Population CMA-ES on the
//! BBOB-2009 Function Testbed", GECCO 2009 (BIPOP). Stop rules follow pycma's defaults:
//! `tolfun` 1e-11, `tolx` 1e-11 × σ0, condition number 1e14, no effect of the step size,
//! and 100 + 150 (n+3)² / √λ generations. Each run is a [`Driver`] with the run key
//! `key.fold_in(restart)`; restart draws (population, step size, start) come from
//! `key.fold_in(u64::MAX)`.

use crate::cma_es::{CmaEs, default_pop_size};
use crate::driver::{Driver, FitnessHistory, Generation, Instance};
use crate::error::EvoError;
use crate::hyper::StrategyParams;
use crate::problem::Problem;
use crate::strategy::Strategy;
use kestrel_core::FromInvalid;
use kestrel_core::Key;

/// Which restart scheme (config spelling `ipop`, `bipop`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RestartKind {
    /// Increasing population (×2 per restart).
    Ipop,
    /// Bi-population: large runs as IPOP, small runs with `σ0 · 10^(−2U)`.
    Bipop,
}

/// Settings of a restarted run.
#[derive(Clone, Debug, PartialEq)]
pub struct RestartConfig {
    /// Scheme.
    pub kind: RestartKind,
    /// Initial step size of every (large) run.
    pub sigma0: f64,
    /// Evaluation budget over all runs.
    pub max_evals: u64,
    /// Stop everything once the best fitness is at or below this.
    pub target: f32,
    /// Most restarts.
    pub max_restarts: usize,
    /// Draw each restart's start point uniformly in `[lo, hi]^n` (Hansen's BBOB practice);
    /// `None` restarts from `x0` every time (pycma's default).
    pub restart_box: Option<[f32; 2]>,
}

/// Why one CMA-ES run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Reached the target.
    Target,
    /// Fitness range over recent generations below `tolfun`.
    TolFun,
    /// Step size times largest axis below `tolx`.
    TolX,
    /// Covariance condition number above 1e14.
    Condition,
    /// Adding a step-size step along any axis did not change the mean.
    NoEffect,
    /// Generation limit of this run.
    MaxIter,
    /// Evaluation budget spent.
    Budget,
    /// The observer of [`cma_restarts_with`] asked to stop.
    Observer,
}

/// One run of a restarted search.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    /// Population size used.
    pub pop_size: usize,
    /// Initial step size used.
    pub sigma0: f64,
    /// Evaluations spent.
    pub evals: u64,
    /// Best fitness found.
    pub best: f32,
    /// Why it stopped.
    pub stop: StopReason,
    /// Generations it ran.
    pub generations: u64,
}

/// Result of a restarted search.
#[derive(Clone, Debug, PartialEq)]
pub struct RestartResult {
    /// Best solution found.
    pub best_solution: Vec<f32>,
    /// Its fitness.
    pub best_fitness: f32,
    /// Evaluations over all runs.
    pub evals: u64,
    /// Why the whole search ended: `Target`, `Budget` (fewer evaluations left than a
    /// population), `Observer`, or, when every restart ran, the last run's own reason.
    pub ended: StopReason,
    /// Each run in order.
    pub runs: Vec<RunSummary>,
}

/// One CMA-ES run of a restarted search; `observe` sees each generation (`false` stops it).
#[allow(clippy::too_many_arguments)]
fn run_once(
    problem: &dyn Problem,
    x0: &[f32],
    lam: usize,
    sigma0: f64,
    budget: u64,
    target: f32,
    params: &StrategyParams,
    key: Key,
    observe: &mut dyn FnMut(&Generation) -> bool,
) -> Result<(RunSummary, Vec<f32>), EvoError> {
    let n = x0.len();
    let es = CmaEs::new(lam, n)?;
    let p = params
        .cma(crate::cma_es::CmaParams { sigma_init: sigma0, ..Strategy::default_params(&es) })?;
    let mut driver = Driver::new(Instance::new(es, p, key, x0), problem, key)?;
    let mut hist = FitnessHistory::new(n, lam);
    let max_gen = 100 + (150.0 * ((n + 3) * (n + 3)) as f64 / (lam as f64).sqrt()) as u64;
    let stop = loop {
        if driver.evals() + lam as u64 > budget {
            break StopReason::Budget;
        }
        let g = driver.generation();
        let step = driver.step();
        let m = step.metrics;
        let go_on = observe(&step);
        if m.best_so_far <= target {
            break StopReason::Target;
        }
        if !go_on {
            break StopReason::Observer;
        }
        // pycma's tolfun 1e-11, compared in f32 as it always was here.
        if hist.stalled(m.best_in_generation, driver.fitness(), 1e-11f32 as f64) {
            break StopReason::TolFun;
        }
        let st = &driver.optimizer().state;
        let dmax = st.d.iter().cloned().fold(0.0, f64::max);
        let dmin = st.d.iter().cloned().fold(f64::INFINITY, f64::min);
        if st.sigma * dmax < 1e-11 * sigma0 {
            break StopReason::TolX;
        }
        if (dmax / dmin).powi(2) > 1e14 {
            break StopReason::Condition;
        }
        let axis = (g as usize) % n;
        if (0..n).all(|i| st.mean[i] == st.mean[i] + 0.1 * st.sigma * st.d[axis] * st.b[(i, axis)])
        {
            break StopReason::NoEffect;
        }
        if m.generation >= max_gen {
            break StopReason::MaxIter;
        }
    };
    let pr = driver.progress();
    Ok((
        RunSummary {
            pop_size: lam,
            sigma0,
            evals: driver.evals(),
            best: pr.best_fitness,
            stop,
            generations: driver.generation(),
        },
        pr.best_solution.clone(),
    ))
}

/// Minimises `problem` from `x0` with restarted CMA-ES.
pub fn cma_restarts(
    problem: &dyn Problem,
    x0: &[f32],
    cfg: &RestartConfig,
    key: Key,
) -> Result<RestartResult, EvoError> {
    cma_restarts_with(problem, x0, cfg, &StrategyParams::default(), key, |_| true)
}

/// [`cma_restarts`] with CMA-ES hyper-parameter overrides (`params`, the step size excepted:
/// each run starts with its own) and an observer of every generation: `observe` receives it
/// with the evaluations and generations counted over all runs so far and the restart index;
/// returning `false` stops the whole search.
pub fn cma_restarts_with(
    problem: &dyn Problem,
    x0: &[f32],
    cfg: &RestartConfig,
    params: &StrategyParams,
    key: Key,
    mut observe: impl FnMut(&Generation) -> bool,
) -> Result<RestartResult, EvoError> {
    params.check_for(crate::kind::StrategyKind::CmaEs)?;
    let n = problem.num_dims();
    if n == 0 {
        return Err(EvoError::invalid("num_dims", 0, "at least 1"));
    }
    if x0.len() != n {
        return Err(EvoError::invalid("x0", format!("{} values", x0.len()), "num_dims values"));
    }
    if !(cfg.sigma0.is_finite() && cfg.sigma0 > 0.0) {
        return Err(EvoError::invalid("sigma0", cfg.sigma0, "finite and > 0"));
    }
    let lam0 = default_pop_size(n).max(4);
    let mut res = RestartResult {
        best_solution: x0.to_vec(),
        best_fitness: f32::INFINITY,
        evals: 0,
        runs: Vec::new(),
        ended: StopReason::MaxIter,
    };
    let (mut large_pop, mut large_evals, mut small_evals) = (lam0, 0u64, 0u64);
    let mut rng = key.fold_in(u64::MAX).rng();
    for r in 0..=cfg.max_restarts {
        let left = cfg.max_evals.saturating_sub(res.evals);
        if res.best_fitness <= cfg.target {
            res.ended = StopReason::Target;
            break;
        }
        if left < lam0 as u64 {
            res.ended = StopReason::Budget;
            break;
        }
        let small = cfg.kind == RestartKind::Bipop && r > 0 && small_evals < large_evals;
        let (lam, sigma) = if small {
            let u = rng.uniform_f64();
            let lam =
                (lam0 as f64 * (0.5 * large_pop as f64 / lam0 as f64).powf(u * u)).floor() as usize;
            (lam.max(4), cfg.sigma0 * 10f64.powf(-2.0 * rng.uniform_f64()))
        } else {
            if r > 0 {
                large_pop *= 2;
            }
            (large_pop, cfg.sigma0)
        };
        let start: Vec<f32> = match cfg.restart_box {
            Some([lo, hi]) if r > 0 => (0..n).map(|_| lo + (hi - lo) * rng.uniform_f32()).collect(),
            _ => x0.to_vec(),
        };
        let (evals0, gens0) = (res.evals, res.runs.iter().map(|s| s.generations).sum::<u64>());
        let mut seen = |g: &Generation| {
            let mut g = *g;
            g.evals += evals0;
            g.metrics.generation += gens0;
            g.metrics.best_so_far = g.metrics.best_so_far.min(res.best_fitness);
            g.restart = r as u32;
            observe(&g)
        };
        let (sum, x) = run_once(
            problem,
            &start,
            lam,
            sigma,
            left,
            cfg.target,
            params,
            key.fold_in(r as u64),
            &mut seen,
        )?;
        res.ended = sum.stop;
        let stopped = sum.stop == StopReason::Observer;
        if small {
            small_evals += sum.evals
        } else {
            large_evals += sum.evals
        }
        res.evals += sum.evals;
        if sum.best < res.best_fitness {
            res.best_fitness = sum.best;
            res.best_solution = x;
        }
        res.runs.push(sum);
        if stopped {
            break;
        }
    }
    Ok(res)
}
