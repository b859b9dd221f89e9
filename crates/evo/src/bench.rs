//! Timings of the strategies (`kestrel evo bench`, `tools/compare/evo.py`): one generation's
//! phases through the driver, and a neuroevolution generation on 1 and 2 threads.

use crate::cma_es::{CmaEs, CmaParams};
use crate::driver::{Driver, Instance, Optimizer};
use crate::error::EvoError;
use crate::neuro::cartpole_problem;
use crate::problem::{Benchmark, Function, Problem};
use crate::sep_cma_es::SepCmaEs;
use crate::strategy::Strategy;
use kestrel_core::FromInvalid;
use kestrel_core::Key;

/// Mean µs per generation of each phase and the best fitness reached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseTimes {
    /// Ask (sampling).
    pub ask_us: f64,
    /// Evaluation of the population.
    pub eval_us: f64,
    /// Tell (the update).
    pub tell_us: f64,
    /// Best fitness after the generations.
    pub best: f32,
}

fn phases<S: Strategy + Clone + 'static>(
    s: S,
    p: S::Params,
    gens: u64,
) -> Result<PhaseTimes, EvoError> {
    let n = s.num_dims();
    time_phases(Instance::new(s, p, Key::new(0), &vec![1.0; n]), gens)
}

/// The mean µs of each phase over `gens` generations of `optimizer` on the sphere, through
/// the driver.
fn time_phases<O: Optimizer>(optimizer: O, gens: u64) -> Result<PhaseTimes, EvoError> {
    let prob = Benchmark::new(Function::Sphere, optimizer.num_dims())?;
    let mut d = Driver::new(optimizer, &prob, Key::new(0))?;
    let mut total = [0.0f64; 3];
    for _ in 0..gens {
        for (t, phase) in total.iter_mut().zip(d.step_timed().1) {
            *t += phase.as_secs_f64();
        }
    }
    let k = 1e6 / gens.max(1) as f64;
    Ok(PhaseTimes {
        ask_us: total[0] * k,
        eval_us: total[1] * k,
        tell_us: total[2] * k,
        best: d.progress().best_fitness,
    })
}

/// CMA-ES (`sep = false`; eigendecomposition every generation with `eager_eigen`, as evosax)
/// or Sep-CMA-ES on the sphere from `x = 1`, step size 0.3, on the current thread pool.
pub fn cma_phases(
    sep: bool,
    pop_size: usize,
    num_dims: usize,
    generations: u64,
    eager_eigen: bool,
) -> Result<PhaseTimes, EvoError> {
    if generations == 0 {
        return Err(EvoError::invalid("generations", 0, "at least 1"));
    }
    if sep {
        let s = SepCmaEs::new(pop_size, num_dims)?;
        let p = CmaParams { sigma_init: 0.3, ..s.default_params() };
        phases(s, p, generations)
    } else {
        let s = CmaEs::new(pop_size, num_dims)?;
        let p = CmaParams { lazy_eigen: !eager_eigen, sigma_init: 0.3, ..s.default_params() };
        phases(s, p, generations)
    }
}

/// Any strategy (with `params`: a learned one's weights file) on the sphere from `x = 1`, step
/// size 0.3, through the driver on the current thread pool (CMA-ES and Sep-CMA-ES:
/// [`cma_phases`], which can decompose eagerly).
pub fn strategy_phases(
    kind: crate::kind::StrategyKind,
    params: &crate::hyper::StrategyParams,
    pop_size: usize,
    num_dims: usize,
    generations: u64,
) -> Result<PhaseTimes, EvoError> {
    if generations == 0 {
        return Err(EvoError::invalid("generations", 0, "at least 1"));
    }
    let opt = kind.build_with(Some(pop_size), 0.3, params, &vec![1.0; num_dims], Key::new(0))?;
    time_phases(opt, generations)
}

/// A neuroevolution generation (CartPole-v1, MLP 4-8-2, 2 episodes per candidate) timed on
/// each pool: the fastest of 5 repeats of `generations` evaluations, pools alternated.
#[derive(Clone, Debug, PartialEq)]
pub struct NeuroTimes {
    /// Weights per candidate.
    pub num_dims: usize,
    /// Milliseconds per generation on each pool.
    pub ms: Vec<f64>,
    /// Whether every pool gave the same fitness bits.
    pub identical: bool,
    /// Generations timed per repeat: the `generations` asked for, at most [`NEURO_MAX_GENERATIONS`].
    pub generations: u64,
}

/// The most generations [`neuro`] times per repeat (a generation is milliseconds; five
/// repeats of 50 keep the bench under a minute at the default population).
pub const NEURO_MAX_GENERATIONS: u64 = 50;

/// Times [`cartpole_problem`] generations of `pop_size` candidates on each of `pools`
/// (`generations` of them per repeat, capped at [`NEURO_MAX_GENERATIONS`]: the result says how
/// many ran).
pub fn neuro(
    pools: &[rayon::ThreadPool],
    pop_size: usize,
    generations: u64,
) -> Result<NeuroTimes, EvoError> {
    if pop_size == 0 || pop_size > 1 << 20 {
        return Err(EvoError::invalid("pop_size", pop_size, "1 to 1048576"));
    }
    if generations == 0 {
        return Err(EvoError::invalid("generations", generations, "at least 1"));
    }
    let p = cartpole_problem()?;
    let mut r = Key::new(1).rng();
    let pop: Vec<f32> = (0..pop_size * p.num_dims()).map(|_| 0.5 * r.normal_f64() as f32).collect();
    let mut best = vec![f64::INFINITY; pools.len()];
    let mut fits = vec![Vec::new(); pools.len()];
    let gens = generations.min(NEURO_MAX_GENERATIONS);
    for _repeat in 0..5 {
        for (k, pool) in pools.iter().enumerate() {
            let mut fit = vec![0.0f32; pop_size];
            let t = std::time::Instant::now();
            for g in 0..gens {
                pool.install(|| p.evaluate(Key::new(g), &pop, &mut fit));
            }
            best[k] = best[k].min(t.elapsed().as_secs_f64() * 1e3 / gens as f64);
            fits[k] = fit;
        }
    }
    let identical = fits.windows(2).all(|w| w[0] == w[1]);
    Ok(NeuroTimes { num_dims: p.num_dims(), ms: best, identical, generations: gens })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The neuroevolution bench says how many generations it timed (the cap, when more were
    /// asked for), gives the same fitness on every pool, and refuses an empty population or
    /// no generations by name.
    #[test]
    fn neuro_reports_the_generations_it_timed() {
        let pools: Vec<rayon::ThreadPool> = (1..=2)
            .map(|n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap())
            .collect();
        let t = neuro(&pools, 4, 3).unwrap();
        assert_eq!((t.generations, t.ms.len(), t.identical), (3, 2, true));
        assert!(t.ms.iter().all(|&ms| ms > 0.0));
        assert_eq!(neuro(&pools[..1], 2, 1_000).unwrap().generations, NEURO_MAX_GENERATIONS);
        let e = |p, g| neuro(&pools[..1], p, g).unwrap_err().to_string();
        assert!(e(0, 3).contains("pop_size = 0"));
        assert!(e(4, 0).contains("generations = 0"));
    }
}
