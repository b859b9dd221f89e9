//! Population-based search without a distribution: particle swarm optimisation and the simple
//! genetic algorithm. Both keep the last told population and its fitness; evosax's
//! `init(key, population, fitness)` (an evaluated first population) is Kestrel's first
//! generation: `ask` at generation 0 draws `x0 + σ z` and its `tell` seeds the state, as
//! [`crate::de::DifferentialEvolution`] does.
//!
//! | rule | next population | paper | evosax 0.3.2 |
//! |---|---|---|---|
//! | [`SwarmRule::Pso`] | `v ← w v + c₁ r₁ (p_i − x_i) + c₂ r₂ (g − x_i)`, `x ← x + v` (one `r₁, r₂` per particle) | Kennedy & Eberhart, "Particle swarm optimization", ICNN 1995 | `population_based/pso.py` |
//! | [`SwarmRule::SimpleGa`] | two parents drawn uniformly from the best half, uniform crossover at `crossover_rate`, Gaussian mutation `σ z` | (the simple GA; Such et al., "Deep Neuroevolution", 2017, for its use on networks) | `population_based/simple_ga.py` |
//!
//! evosax's defaults: PSO `inertia_coeff` 0.75, `cognitive_coeff` 1.5, `social_coeff` 2; GA
//! `crossover_rate` 0, elite ratio 0.5, `std_schedule` constant 1 (Kestrel's σ). NaN fitness
//! ranks worst and never becomes a personal best (evosax's PSO does the same).

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, to_row};
use kestrel_core::{Key, fill_normal_f32};

/// The first population of a population-based strategy (evosax's evaluated `init`
/// population): `start + σ z`, row by row. [`Swarm`] and [`crate::ga::Ga`] ask it at generation 0.
pub(crate) fn first_population(start: &[f32], sigma: f64, z: &[f64], population: &mut [f32]) {
    let n = start.len();
    for (row, zi) in population.chunks_exact_mut(n).zip(z.chunks_exact(n)) {
        for ((x, &m), z) in row.iter_mut().zip(start).zip(zi) {
            *x = to_row(m as f64 + sigma * z);
        }
    }
}

/// A population-based strategy's stand-in for a mean: the best member so far, or the start
/// before any finite fitness.
pub(crate) fn best_or_start(progress: &Progress, start: &[f32]) -> Vec<f32> {
    if progress.best_fitness.is_finite() { progress.best_solution.clone() } else { start.to_vec() }
}

/// Which population-based search a [`Swarm`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwarmRule {
    /// Particle swarm optimisation.
    Pso,
    /// The simple genetic algorithm.
    SimpleGa,
}

/// PSO or the simple GA over `num_dims` with `pop_size` members.
#[derive(Clone, Debug)]
pub struct Swarm {
    pop_size: usize,
    num_dims: usize,
    rule: SwarmRule,
}

/// [`Swarm`]'s hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmParams {
    /// Spread of the first population around the start; the GA's mutation scale.
    pub sigma: f64,
    /// PSO: inertia `w`.
    pub inertia_coeff: f64,
    /// PSO: cognitive factor `c₁`.
    pub cognitive_coeff: f64,
    /// PSO: social factor `c₂`.
    pub social_coeff: f64,
    /// GA: each gene's chance to come from the second parent.
    pub crossover_rate: f64,
    /// GA: the fraction of the population that may parent.
    pub elite_ratio: f64,
}

/// [`Swarm`]'s state.
#[derive(Clone, Debug)]
pub struct SwarmState {
    /// The last told population (row-major; the start's first draw before any tell).
    pub members: Vec<f32>,
    /// Its fitness, NaN as `+inf` (`+inf` before the first tell).
    pub fitness: Vec<f32>,
    /// PSO: each particle's best position.
    pub personal_best: Vec<f32>,
    /// PSO: each particle's best fitness.
    pub personal_fitness: Vec<f32>,
    /// PSO: velocities.
    pub velocity: Vec<f64>,
    /// The start point.
    pub start: Vec<f32>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    u: Vec<f64>,
    parents: Vec<u32>,
    order: Vec<usize>,
}

/// The draws of one `ask` after the first: PSO's `(r₁, r₂)` per particle; the GA's two parents
/// per child (ranks among the elite), crossover uniforms and mutation normals.
pub struct SwarmDraws<'a> {
    /// PSO: `pop_size × 2` uniforms; GA: `pop_size × num_dims` crossover uniforms.
    pub uniforms: &'a [f64],
    /// GA: `pop_size × num_dims` mutation normals (empty for PSO).
    pub normals: &'a [f64],
    /// GA: `2 × pop_size` parent ranks (the first parents, then the second; empty for PSO).
    pub parents: &'a [u32],
}

impl Swarm {
    /// The search; `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize, rule: SwarmRule) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(Swarm { pop_size, num_dims, rule })
    }

    /// The GA's parents: the best `max(1, ⌊elite_ratio λ⌋)`.
    pub fn num_elites(&self, p: &SwarmParams) -> usize {
        ((p.elite_ratio * self.pop_size as f64) as usize).clamp(1, self.pop_size)
    }

    /// Generation 0: the first population `x0 + σ z` from given normals.
    pub fn ask_first(&self, s: &SwarmState, p: &SwarmParams, z: &[f64], population: &mut [f32]) {
        check_lens("Swarm::ask", self.pop_size, self.num_dims, population, None);
        first_population(&s.start, p.sigma, z, population);
    }

    /// A later generation from given draws ([`SwarmDraws`]).
    pub fn ask_from(
        &self,
        s: &mut SwarmState,
        p: &SwarmParams,
        d: &SwarmDraws<'_>,
        population: &mut [f32],
    ) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Swarm::ask", lam, n, population, None);
        match self.rule {
            SwarmRule::Pso => {
                // The global best among the personal bests (the first of equals).
                let g = (0..lam).fold(0, |b, i| {
                    if s.personal_fitness[i] < s.personal_fitness[b] { i } else { b }
                });
                let (w, c1, c2) = (p.inertia_coeff, p.cognitive_coeff, p.social_coeff);
                let best = &s.personal_best[g * n..(g + 1) * n];
                let rows = population
                    .chunks_exact_mut(n)
                    .zip(s.velocity.chunks_exact_mut(n))
                    .zip(s.members.chunks_exact(n))
                    .zip(s.personal_best.chunks_exact(n))
                    .zip(d.uniforms.chunks_exact(2));
                for ((((out, vel), xs), own), r) in rows {
                    let (r1, r2) = (r[0], r[1]);
                    for ((((o, v), &x), &pb), &gb) in
                        out.iter_mut().zip(vel.iter_mut()).zip(xs).zip(own).zip(best)
                    {
                        let x = x as f64;
                        let nv = w * *v + c1 * r1 * (pb as f64 - x) + c2 * r2 * (gb as f64 - x);
                        *v = nv.clamp(-f32::MAX as f64, f32::MAX as f64);
                        *o = to_row(x + nv);
                    }
                }
            }
            SwarmRule::SimpleGa => {
                // Members by fitness (NaN last, ties in index order), as evosax's argsort.
                s.order.iter_mut().enumerate().for_each(|(i, o)| *o = i);
                let f = &s.fitness;
                s.order.sort_by(|&a, &b| f[a].total_cmp(&f[b]));
                for i in 0..lam {
                    let (a, b) =
                        (s.order[d.parents[i] as usize], s.order[d.parents[lam + i] as usize]);
                    for j in 0..n {
                        let gene = if d.uniforms[i * n + j] < p.crossover_rate {
                            s.members[b * n + j]
                        } else {
                            s.members[a * n + j]
                        };
                        population[i * n + j] =
                            to_row(gene as f64 + p.sigma * d.normals[i * n + j]);
                    }
                }
            }
        }
    }
}

impl Strategy for Swarm {
    type Params = SwarmParams;
    type State = SwarmState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> SwarmParams {
        SwarmParams {
            sigma: 1.0,
            inertia_coeff: 0.75,
            cognitive_coeff: 1.5,
            social_coeff: 2.0,
            crossover_rate: 0.0,
            elite_ratio: 0.5,
        }
    }

    fn init(&self, _key: Key, _params: &SwarmParams, mean: &[f32]) -> SwarmState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "Swarm::init: mean must have num_dims values");
        let pso = self.rule == SwarmRule::Pso;
        SwarmState {
            members: mean.repeat(lam),
            fitness: vec![f32::INFINITY; lam],
            personal_best: if pso { mean.repeat(lam) } else { vec![] },
            personal_fitness: if pso { vec![f32::INFINITY; lam] } else { vec![] },
            velocity: vec![0.0; if pso { lam * n } else { 0 }],
            start: mean.to_vec(),
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            u: vec![0.0; if pso { 2 * lam } else { lam * n }],
            parents: vec![0; if pso { 0 } else { 2 * lam }],
            order: vec![0; lam],
        }
    }

    fn ask(&self, key: Key, s: &mut SwarmState, p: &SwarmParams, population: &mut [f32]) {
        if s.progress.generation == 0 {
            fill_normal_f32(key, &mut s.z);
            return self.ask_first(s, p, &s.z, population);
        }
        let mut rng = key.fold_in(1).rng();
        if self.rule == SwarmRule::SimpleGa {
            fill_normal_f32(key.fold_in(2), &mut s.z);
            let k = self.num_elites(p) as u32;
            s.parents.iter_mut().for_each(|q| *q = rng.below(k));
            // At crossover rate 0 (evosax's default) no uniform is below it: none is drawn.
            if p.crossover_rate > 0.0 {
                s.u.iter_mut().for_each(|u| *u = rng.uniform_f64());
            } else {
                s.u.iter_mut().for_each(|u| *u = 1.0);
            }
        } else {
            s.u.iter_mut().for_each(|u| *u = rng.uniform_f64());
        }
        let (u, z, q) =
            (std::mem::take(&mut s.u), std::mem::take(&mut s.z), std::mem::take(&mut s.parents));
        let d = SwarmDraws { uniforms: &u, normals: &z, parents: &q };
        self.ask_from(s, p, &d, population);
        (s.u, s.z, s.parents) = (u, z, q);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut SwarmState,
        p: &SwarmParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Swarm::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        s.members.copy_from_slice(population);
        for (o, &f) in s.fitness.iter_mut().zip(fitness) {
            *o = if f.is_nan() { f32::INFINITY } else { f };
        }
        if self.rule == SwarmRule::Pso {
            for i in 0..lam {
                if s.fitness[i] <= s.personal_fitness[i] {
                    s.personal_fitness[i] = s.fitness[i];
                    s.personal_best[i * n..(i + 1) * n]
                        .copy_from_slice(&population[i * n..(i + 1) * n]);
                }
            }
        }
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, s: &SwarmState) -> Vec<f32> {
        best_or_start(&s.progress, &s.start)
    }
    fn progress<'a>(&self, state: &'a SwarmState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(SwarmState {
    vec32 members,
    vec32 fitness,
    vec32 personal_best,
    vec32 personal_fitness,
    vec velocity,
    vec32 start
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ga_breeds_from_the_best_half_only() {
        let s = Swarm::new(4, 1, SwarmRule::SimpleGa).unwrap();
        let p = SwarmParams { sigma: 0.0, ..s.default_params() };
        let mut st = s.init(Key::new(0), &p, &[0.0]);
        s.tell(Key::new(0), &[10.0, 20.0, 30.0, 40.0], &[3.0, 1.0, f32::NAN, 2.0], &mut st, &p);
        let (u, z) = ([0.5; 4], [0.0; 4]);
        // Ranks 0 and 1 of the elite are members 1 (fitness 1) and 3 (fitness 2).
        let d = SwarmDraws { uniforms: &u, normals: &z, parents: &[0, 1, 1, 0, 1, 1, 0, 0] };
        let mut pop = [0f32; 4];
        s.ask_from(&mut st, &p, &d, &mut pop);
        assert_eq!(pop, [20.0, 40.0, 40.0, 20.0]);
        assert_eq!(s.num_elites(&p), 2);
    }
}
