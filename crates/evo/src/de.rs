//! Differential evolution (DE/best/1/bin by default, DE/rand/1/bin without elitism).
//!
//! Paper: R. Storn and K. Price, "Differential Evolution – A Simple and Efficient Heuristic
//! for Global Optimization over Continuous Spaces", J. Global Optimization 11, 1997.
//! Reference implementation: evosax 0.3.2 `DifferentialEvolution` (crossover 0.9,
//! differential weight 0.8, elitism on, one difference vector). Kestrel's `init` seeds the
//! population around the given mean with `N(0, sigma_init²)`.

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens};
use kestrel_core::{FromInvalid, Key};

/// Differential evolution over `num_dims` with `pop_size ≥ 4` members.
#[derive(Clone, Debug)]
pub struct DifferentialEvolution {
    pop_size: usize,
    num_dims: usize,
}

/// DE hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct DeParams {
    /// Spread of the initial population around the mean.
    pub sigma_init: f64,
    /// Binomial crossover rate.
    pub crossover_rate: f64,
    /// Differential weight `F`.
    pub differential_weight: f64,
    /// Base vector is the current best (else a random member).
    pub elitism: bool,
}

/// DE state: the current members and their fitness.
#[derive(Clone, Debug)]
pub struct DeState {
    /// Members, row-major.
    pub members: Vec<f32>,
    /// Their fitness (`+inf` until told).
    pub fitness: Vec<f32>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
}

impl DifferentialEvolution {
    /// DE; `pop_size ≥ 4`.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 4)?;
        Ok(DifferentialEvolution { pop_size, num_dims })
    }

    /// The population from given draws, as evosax's `_ask` makes them: member `i`'s base
    /// `a[i]` (the best member when elitist; [`DifferentialEvolution::best`]), difference pair
    /// `b[i]`, `c[i]` (distinct, neither `i` nor `a[i]`), forced crossover coordinate
    /// `forced[i]` and crossover uniforms `r` (`pop_size × num_dims`). Draws out of range are
    /// an error.
    pub fn ask_from_draws(
        &self,
        s: &DeState,
        p: &DeParams,
        draws: [&[usize]; 4],
        r: &[f64],
        population: &mut [f32],
    ) -> Result<(), EvoError> {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("DifferentialEvolution::ask", lam, n, population, None);
        let [a, b, c, forced] = draws;
        for (name, v, below) in [("a", a, lam), ("b", b, lam), ("c", c, lam), ("forced", forced, n)]
        {
            if v.len() != lam || v.iter().any(|&k| k >= below) {
                return Err(EvoError::invalid(
                    format!("draws.{name}"),
                    format!("{v:?}"),
                    format!("{lam} indices below {below}"),
                ));
            }
        }
        if r.len() != lam * n {
            return Err(EvoError::invalid("draws.r", r.len(), format!("{} values", lam * n)));
        }
        for i in 0..lam {
            let row = &mut population[i * n..(i + 1) * n];
            let ri = &r[i * n..(i + 1) * n];
            self.trial(s, p, i, [a[i], b[i], c[i]], forced[i], |j| ri[j], row);
        }
        Ok(())
    }

    /// The member with the lowest fitness (the elitist base vector).
    pub fn best(&self, s: &DeState) -> usize {
        (0..self.pop_size).min_by(|&a, &b| s.fitness[a].total_cmp(&s.fitness[b])).unwrap_or(0)
    }

    /// Member `i`'s trial: `a + F (b − c)` on the coordinates crossed over (`forced` and
    /// those whose uniform is below the crossover rate; `r` is called in coordinate order,
    /// never for `forced`), member `i`'s own value on the rest.
    #[allow(clippy::too_many_arguments)]
    fn trial(
        &self,
        s: &DeState,
        p: &DeParams,
        i: usize,
        [a, b, c]: [usize; 3],
        forced: usize,
        mut r: impl FnMut(usize) -> f64,
        row: &mut [f32],
    ) {
        let (n, m) = (self.num_dims, &s.members);
        for (j, x) in row.iter_mut().enumerate() {
            let cross = j == forced || r(j) < p.crossover_rate;
            *x = if cross {
                (m[a * n + j] as f64
                    + p.differential_weight * (m[b * n + j] as f64 - m[c * n + j] as f64))
                    as f32
            } else {
                m[i * n + j]
            };
        }
    }
}

/// A uniform index in `0..n` different from every index in `not`.
fn pick(rng: &mut kestrel_core::Rng, n: usize, not: &[usize]) -> usize {
    loop {
        let k = rng.below(n as u32) as usize;
        if !not.contains(&k) {
            return k;
        }
    }
}

impl Strategy for DifferentialEvolution {
    type Params = DeParams;
    type State = DeState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }
    fn default_params(&self) -> DeParams {
        DeParams { sigma_init: 1.0, crossover_rate: 0.9, differential_weight: 0.8, elitism: true }
    }

    fn init(&self, key: Key, params: &DeParams, mean: &[f32]) -> DeState {
        let n = self.num_dims;
        assert_eq!(mean.len(), n, "DifferentialEvolution::init: mean must have num_dims values");
        let mut rng = key.rng();
        let members = (0..self.pop_size * n)
            .map(|i| (mean[i % n] as f64 + params.sigma_init * rng.normal_f64()) as f32)
            .collect();
        DeState { members, fitness: vec![f32::INFINITY; self.pop_size], progress: Progress::new(n) }
    }

    fn ask(&self, key: Key, s: &mut DeState, p: &DeParams, population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("DifferentialEvolution::ask", lam, n, population, None);
        if s.progress.generation == 0 {
            population.copy_from_slice(&s.members);
            return;
        }
        let best = self.best(s);
        for i in 0..lam {
            let mut rng = key.fold_in(i as u64).rng();
            let a = if p.elitism { best } else { pick(&mut rng, lam, &[i]) };
            let b = pick(&mut rng, lam, &[i, a]);
            let c = pick(&mut rng, lam, &[i, a, b]);
            let forced = rng.below(n as u32) as usize;
            let row = &mut population[i * n..(i + 1) * n];
            self.trial(s, p, i, [a, b, c], forced, |_| rng.uniform_f64(), row);
        }
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut DeState,
        _p: &DeParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("DifferentialEvolution::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        for i in 0..lam {
            // Non-finite trials never replace (NaN compares false; +inf only if tied).
            if fitness[i].is_finite() && fitness[i] <= s.fitness[i] {
                s.fitness[i] = fitness[i];
                s.members[i * n..(i + 1) * n].copy_from_slice(&population[i * n..(i + 1) * n]);
            }
        }
        s.progress.metrics(best, bad, 0.0)
    }

    fn mean(&self, state: &DeState) -> Vec<f32> {
        let n = self.num_dims;
        (0..n)
            .map(|j| state.members.iter().skip(j).step_by(n).sum::<f32>() / self.pop_size as f32)
            .collect()
    }
    fn progress<'a>(&self, state: &'a DeState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(DeState { vec32 members, vec32 fitness });
