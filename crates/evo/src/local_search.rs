//! Local search around one point: hill climbing, random search, simulated annealing and
//! gradientless descent. Each samples Gaussian candidates and moves its centre to a candidate
//! it chooses; they differ in where they sample and which candidate they keep.
//!
//! | rule | samples | keeps | paper | evosax 0.3.2 |
//! |---|---|---|---|---|
//! | [`LocalRule::HillClimbing`] | `m + σ z` | the best so far | (Gaussian hill climbing) | `distribution_based/hill_climbing.py` |
//! | [`LocalRule::RandomSearch`] | `x0 + σ z` (around the start, always) | the best so far | (pure random search) | `distribution_based/random_search.py` |
//! | [`LocalRule::SimulatedAnnealing`] | `m + σ z` | the generation's best if better, or with Metropolis probability `exp(−Δ / (k T))` | Rere, Fanany & Arymurthy, "Simulated Annealing Algorithm for Deep Learning", Procedia CS 72, 2015 | `distribution_based/simulated_annealing.py` |
//! | [`LocalRule::GradientlessDescent`] | `m + r_i z`, `r_i = r_min + 2^(−i / decay) (r_max − r_min)` | the best so far | Golovin et al., "Gradientless Descent: High-Dimensional Zeroth-Order Optimization", ICLR 2020 | `distribution_based/gradientless_descent.py` |
//!
//! evosax's defaults: `std_schedule` constant 1 (Kestrel's `sigma`, the usual step-size
//! argument); annealing `temperature_init` 1, `temperature_limit` 0.1, `temperature_decay`
//! 0.999, `boltzmann_constant` 5; descent `radius_min` 0.001, `radius_max` 0.2,
//! `radius_decay` 5. evosax's random search takes a user `sampling_fn`; Kestrel's draws
//! `N(x0, σ²)` around the start point, the common choice (a box is given by `bounds`).
//!
//! evosax's bug (`bugs = "all"`, [`BugsKind`]): simulated annealing picks the generation's
//! best with `argmin`, which returns a NaN when there is one, so every generation with a NaN
//! fitness is thrown away whole. Kestrel's default ranks NaN worst, as everywhere.

use crate::cma_es::MEAN_BOUND;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::strategy::{BugsKind, Progress, Strategy, TellMetrics, check_lens, to_f32, to_row};
use kestrel_core::{Key, fill_normal_f32};

/// Which local search a [`LocalSearch`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalRule {
    /// Gaussian hill climbing.
    HillClimbing,
    /// Random search around the start.
    RandomSearch,
    /// Simulated annealing.
    SimulatedAnnealing,
    /// Gradientless descent.
    GradientlessDescent,
}

/// A local search over `num_dims` with `pop_size` candidates a generation.
#[derive(Clone, Debug)]
pub struct LocalSearch {
    pop_size: usize,
    num_dims: usize,
    rule: LocalRule,
}

/// [`LocalSearch`]'s hyper-parameters (each rule reads its own).
#[derive(Clone, Debug, PartialEq)]
pub struct LocalParams {
    /// Sampling step size (hill climbing, random search, annealing).
    pub sigma: f64,
    /// Descent: the smallest radius.
    pub radius_min: f64,
    /// Descent: the largest radius.
    pub radius_max: f64,
    /// Descent: candidates per halving of the radius.
    pub radius_decay: f64,
    /// Annealing: the starting temperature.
    pub temperature_init: f64,
    /// Annealing: the lowest temperature.
    pub temperature_limit: f64,
    /// Annealing: the temperature's factor per generation.
    pub temperature_decay: f64,
    /// Annealing: Boltzmann's constant `k`.
    pub boltzmann_constant: f64,
    /// evosax's bugs (see the module notes).
    pub bugs: BugsKind,
}

/// [`LocalSearch`]'s state.
#[derive(Clone, Debug)]
pub struct LocalState {
    /// The centre candidates are drawn around (the start, for random search).
    pub mean: Vec<f64>,
    /// The start point (random search samples around it).
    pub start: Vec<f64>,
    /// The fitness of the centre (`+inf` before the first finite fitness).
    pub fitness: f64,
    /// Annealing: the temperature.
    pub temperature: f64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
}

impl LocalSearch {
    /// The search; `pop_size ≥ 1`.
    pub fn new(pop_size: usize, num_dims: usize, rule: LocalRule) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 1)?;
        Ok(LocalSearch { pop_size, num_dims, rule })
    }

    /// Candidate `i`'s radius: σ, or gradientless descent's `r_i`.
    fn radius(&self, p: &LocalParams, i: usize) -> f64 {
        match self.rule {
            LocalRule::GradientlessDescent => {
                p.radius_min + (-(i as f64) / p.radius_decay).exp2() * (p.radius_max - p.radius_min)
            }
            _ => p.sigma,
        }
    }

    /// The population from given standard normals `z` (`pop_size × num_dims`).
    pub fn ask_from_normals(
        &self,
        s: &mut LocalState,
        p: &LocalParams,
        z: &[f64],
        population: &mut [f32],
    ) {
        s.z.copy_from_slice(z);
        self.fill(s, p, population);
    }

    fn fill(&self, s: &LocalState, p: &LocalParams, population: &mut [f32]) {
        let n = self.num_dims;
        check_lens("LocalSearch::ask", self.pop_size, n, population, None);
        let centre = if self.rule == LocalRule::RandomSearch { &s.start } else { &s.mean };
        for (i, (row, zi)) in population.chunks_exact_mut(n).zip(s.z.chunks_exact(n)).enumerate() {
            let r = self.radius(p, i);
            for ((x, m), z) in row.iter_mut().zip(centre).zip(zi) {
                *x = to_row(m + r * z);
            }
        }
    }

    /// [`Strategy::tell`] with annealing's uniform draw `u` given (the keyed `tell` draws it
    /// from its key); the other rules draw nothing.
    pub fn tell_with_uniform(
        &self,
        u: f64,
        population: &[f32],
        fitness: &[f32],
        s: &mut LocalState,
        p: &LocalParams,
    ) -> TellMetrics {
        let n = self.num_dims;
        check_lens("LocalSearch::tell", self.pop_size, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        match self.rule {
            LocalRule::SimulatedAnnealing => {
                // The generation's best (NaN worst; with evosax's bug a NaN is its best).
                let pick = if p.bugs == BugsKind::All && fitness.iter().any(|f| f.is_nan()) {
                    None
                } else {
                    fitness.iter().enumerate().filter(|(_, f)| !f.is_nan()).fold(
                        None,
                        |b: Option<(usize, f32)>, (i, &f)| match b {
                            Some((_, bf)) if bf <= f => b,
                            _ => Some((i, f)),
                        },
                    )
                };
                if let Some((i, f)) = pick {
                    let delta = f as f64 - s.fitness;
                    let metropolis = (-delta / (p.boltzmann_constant * s.temperature)).exp();
                    if delta < 0.0 || u < metropolis {
                        let row = &population[i * n..(i + 1) * n];
                        s.mean.iter_mut().zip(row).for_each(|(m, &x)| *m = x as f64);
                        s.fitness = f as f64;
                    }
                }
                s.temperature = (s.temperature * p.temperature_decay).max(p.temperature_limit);
            }
            _ => {
                // The best so far, once there is one (evosax's `best_solution_shaped`).
                if s.progress.best_fitness.is_finite() {
                    s.fitness = s.progress.best_fitness as f64;
                    let b = &s.progress.best_solution;
                    s.mean
                        .iter_mut()
                        .zip(b)
                        .for_each(|(m, &x)| *m = (x as f64).clamp(-MEAN_BOUND, MEAN_BOUND));
                }
            }
        }
        let sigma = match self.rule {
            LocalRule::GradientlessDescent => p.radius_max,
            _ => p.sigma,
        };
        s.progress.metrics(best, bad, sigma)
    }
}

impl Strategy for LocalSearch {
    type Params = LocalParams;
    type State = LocalState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> LocalParams {
        LocalParams {
            sigma: 1.0,
            radius_min: 0.001,
            radius_max: 0.2,
            radius_decay: 5.0,
            temperature_init: 1.0,
            temperature_limit: 0.1,
            temperature_decay: 0.999,
            boltzmann_constant: 5.0,
            bugs: BugsKind::None,
        }
    }

    fn init(&self, _key: Key, params: &LocalParams, mean: &[f32]) -> LocalState {
        let n = self.num_dims;
        assert_eq!(mean.len(), n, "LocalSearch::init: mean must have num_dims values");
        let m: Vec<f64> = mean.iter().map(|&v| v as f64).collect();
        LocalState {
            start: m.clone(),
            mean: m,
            fitness: f64::INFINITY,
            temperature: params.temperature_init,
            progress: Progress::new(n),
            z: vec![0.0; self.pop_size * n],
        }
    }

    fn ask(&self, key: Key, state: &mut LocalState, params: &LocalParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut state.z);
        self.fill(state, params, population);
    }

    fn tell(
        &self,
        key: Key,
        population: &[f32],
        fitness: &[f32],
        state: &mut LocalState,
        params: &LocalParams,
    ) -> TellMetrics {
        let u =
            if self.rule == LocalRule::SimulatedAnnealing { key.rng().uniform_f64() } else { 0.0 };
        self.tell_with_uniform(u, population, fitness, state, params)
    }

    fn mean(&self, state: &LocalState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a LocalState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(LocalState { vec mean, vec start, scalar fitness, scalar temperature });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descent_radii_halve_every_decay_candidates() {
        let s = LocalSearch::new(11, 2, LocalRule::GradientlessDescent).unwrap();
        let p = s.default_params();
        assert_eq!(s.radius(&p, 0), 0.2);
        let half = s.radius(&p, 5) - p.radius_min;
        assert!((half - 0.5 * (0.2 - 0.001)).abs() < 1e-15);
    }

    #[test]
    fn annealing_keeps_a_worse_point_only_by_chance_and_cools() {
        let s = LocalSearch::new(2, 1, LocalRule::SimulatedAnnealing).unwrap();
        let p = s.default_params();
        let mut st = s.init(Key::new(0), &p, &[0.0]);
        s.tell_with_uniform(0.99, &[1.0, 2.0], &[1.0, 4.0], &mut st, &p);
        assert_eq!((st.mean[0], st.fitness), (1.0, 1.0), "better than +inf: taken");
        // Worse by 1 at T = 0.999: exp(-1 / 4.995) = 0.82; u = 0.9 refuses, u = 0.5 accepts.
        s.tell_with_uniform(0.9, &[3.0, 5.0], &[2.0, 9.0], &mut st, &p);
        assert_eq!(st.mean[0], 1.0);
        s.tell_with_uniform(0.5, &[3.0, 5.0], &[2.0, 9.0], &mut st, &p);
        assert_eq!(st.mean[0], 3.0);
        assert!((st.temperature - 0.999f64.powi(3)).abs() < 1e-15);
        // A NaN is ranked worst; evosax's bug throws the generation away.
        s.tell_with_uniform(0.99, &[0.5, 7.0], &[f32::NAN, 0.0], &mut st, &p);
        assert_eq!(st.mean[0], 7.0);
        let bug = LocalParams { bugs: BugsKind::All, ..p };
        s.tell_with_uniform(0.0, &[0.25, 9.0], &[f32::NAN, -5.0], &mut st, &bug);
        assert_eq!(st.mean[0], 7.0);
    }
}
