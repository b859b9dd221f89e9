//! Antithetic finite-difference strategies on OpenEsAdam: Augmented Random Search and ESMC. Both draw
//! mirrored pairs `m ± σ z`, estimate the gradient from the pairs' fitness differences and
//! move the mean with OpenEsAdam; they differ in which pairs count and against what.
//!
//! | rule | pairs | gradient | paper | evosax 0.3.2 |
//! |---|---|---|---|---|
//! | [`AntitheticRule::Ars`] | `λ/2` | the `⌊λ/4⌋` pairs with the best `min(f⁺, f⁻)`, `Σ (f⁺ − f⁻) z / (k σ_f)` with `σ_f` those fitnesses' spread | Mania, Guy & Recht, "Simple random search provides a competitive approach to reinforcement learning", NeurIPS 2018 | `distribution_based/ars.py` |
//! | [`AntitheticRule::Esmc`] | `λ/2 − 1`, after two copies of the mean | `Σ (min(f⁺, b) − min(f⁻, b)) z / (λ/2 − 1)`, `b` the mean's fitness | Merchant et al., "Learn2Hop: Learned Optimization on Rough Landscapes", ICML 2021 (ES with a baseline, "ESMC") | `distribution_based/esmc.py` |
//!
//! evosax's defaults: σ constant 1 (`std_schedule`); ARS `optax.adam(1e-3)`; ESMC
//! `optax.adam(exponential_decay(1e-2, transition_steps = 10, decay_rate = 0.98))`, that is a
//! learning rate of `1e-2 · 0.98^(t / 10)` at update `t` (0-based). Both need an even
//! population (ESMC at least 4). Non-finite fitness is read as the generation's worst finite
//! value (evosax's mean turns NaN on a NaN fitness; no profile keeps that).

use crate::cma_es::MEAN_BOUND;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::open_es::OpenEsAdam;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, finite_or_worst, to_f32, to_row,
};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// Which antithetic strategy an [`Antithetic`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AntitheticRule {
    /// Augmented Random Search.
    Ars,
    /// ESMC (antithetic ES with the mean's fitness as baseline).
    Esmc,
}

/// ARS or ESMC over `num_dims` with an even `pop_size`.
#[derive(Clone, Debug)]
pub struct Antithetic {
    pop_size: usize,
    num_dims: usize,
    rule: AntitheticRule,
}

/// [`Antithetic`]'s hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct AntitheticParams {
    /// Perturbation scale (constant).
    pub sigma: f64,
    /// OpenEsAdam on the mean (its `lr` the starting learning rate).
    pub adam: OpenEsAdam,
    /// The learning rate's factor per `lr_decay_steps` updates (1: constant).
    pub lr_decay: f64,
    /// Updates per factor of `lr_decay`.
    pub lr_decay_steps: f64,
    /// ARS: the fraction of pairs kept (`⌊elite_ratio λ / 2⌋`, at least 1).
    pub elite_ratio: f64,
}

/// [`Antithetic`]'s state (OpenEsAdam's moments included).
#[derive(Clone, Debug)]
pub struct AntitheticState {
    /// Mean.
    pub mean: Vec<f64>,
    /// OpenEsAdam's first moments.
    pub m: Vec<f64>,
    /// OpenEsAdam's second moments.
    pub v: Vec<f64>,
    /// OpenEsAdam updates so far.
    pub adam_steps: u64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    /// The last ask's normals, one row per pair (`pairs × num_dims`).
    z: Vec<f64>,
    f: Vec<f64>,
    order: Vec<usize>,
    grad: Vec<f64>,
}

impl Antithetic {
    /// The strategy; `pop_size` even, at least 2 (ARS) or 4 (ESMC).
    pub fn new(pop_size: usize, num_dims: usize, rule: AntitheticRule) -> Result<Self, EvoError> {
        let min = if rule == AntitheticRule::Esmc { 4 } else { 2 };
        check_sizes(pop_size, num_dims, min)?;
        if pop_size % 2 == 1 {
            return Err(EvoError::invalid("pop_size", pop_size, "an even number (mirrored pairs)"));
        }
        Ok(Antithetic { pop_size, num_dims, rule })
    }

    /// Mirrored pairs: `λ/2` (ARS) or `λ/2 − 1` (ESMC, after two copies of the mean).
    pub fn pairs(&self) -> usize {
        match self.rule {
            AntitheticRule::Ars => self.pop_size / 2,
            AntitheticRule::Esmc => self.pop_size / 2 - 1,
        }
    }

    /// The rows of `+z` and `−z` for pair `k`.
    fn rows(&self, k: usize) -> (usize, usize) {
        match self.rule {
            AntitheticRule::Ars => (k, self.pop_size / 2 + k),
            AntitheticRule::Esmc => (2 + k, 2 + self.pairs() + k),
        }
    }

    /// The population from given standard normals (`pairs × num_dims`, one per pair).
    pub fn ask_from_normals(
        &self,
        s: &mut AntitheticState,
        p: &AntitheticParams,
        z: &[f64],
        pop: &mut [f32],
    ) {
        s.z.copy_from_slice(z);
        self.fill(s, p, pop);
    }

    fn fill(&self, s: &AntitheticState, p: &AntitheticParams, pop: &mut [f32]) {
        let n = self.num_dims;
        check_lens("Antithetic::ask", self.pop_size, n, pop, None);
        if self.rule == AntitheticRule::Esmc {
            for row in pop[..2 * n].chunks_exact_mut(n) {
                row.iter_mut().zip(&s.mean).for_each(|(x, m)| *x = to_row(*m));
            }
        }
        for (k, zk) in s.z.chunks_exact(n).enumerate() {
            let (a, b) = self.rows(k);
            for j in 0..n {
                pop[a * n + j] = to_row(s.mean[j] + p.sigma * zk[j]);
                pop[b * n + j] = to_row(s.mean[j] + p.sigma * -zk[j]);
            }
        }
    }
}

impl Strategy for Antithetic {
    type Params = AntitheticParams;
    type State = AntitheticState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> AntitheticParams {
        let adam = OpenEsAdam { lr: 1e-3, ..OpenEsAdam::default() };
        match self.rule {
            AntitheticRule::Ars => AntitheticParams {
                sigma: 1.0,
                adam,
                lr_decay: 1.0,
                lr_decay_steps: 1.0,
                elite_ratio: 0.5,
            },
            AntitheticRule::Esmc => AntitheticParams {
                sigma: 1.0,
                adam: OpenEsAdam { lr: 1e-2, ..adam },
                lr_decay: 0.98,
                lr_decay_steps: 10.0,
                elite_ratio: 1.0,
            },
        }
    }

    fn init(&self, _key: Key, _params: &AntitheticParams, mean: &[f32]) -> AntitheticState {
        let n = self.num_dims;
        assert_eq!(mean.len(), n, "Antithetic::init: mean must have num_dims values");
        AntitheticState {
            mean: mean.iter().map(|&v| v as f64).collect(),
            m: vec![0.0; n],
            v: vec![0.0; n],
            adam_steps: 0,
            progress: Progress::new(n),
            z: vec![0.0; self.pairs() * n],
            f: vec![0.0; self.pop_size],
            order: vec![0; self.pairs()],
            grad: vec![0.0; n],
        }
    }

    fn ask(&self, key: Key, s: &mut AntitheticState, p: &AntitheticParams, pop: &mut [f32]) {
        fill_normal_f32(key, &mut s.z);
        self.fill(s, p, pop);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut AntitheticState,
        p: &AntitheticParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Antithetic::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        finite_or_worst(fitness, &mut s.f);
        // Each pair's +z step: the asked normal where the row is its rounding, else the row's.
        let (pairs, sg) = (self.pairs(), p.sigma);
        let step = |s: &AntitheticState, k: usize, j: usize| {
            let (a, _) = self.rows(k);
            let x = population[a * n + j];
            let z = s.z[k * n + j];
            if x == to_row(s.mean[j] + sg * z) { z } else { (x as f64 - s.mean[j]) / sg }
        };
        s.grad.iter_mut().for_each(|g| *g = 0.0);
        match self.rule {
            AntitheticRule::Ars => {
                let k = ((p.elite_ratio * lam as f64 / 2.0).floor() as usize).clamp(1, pairs);
                let f = &s.f;
                let key = |i: usize| f[self.rows(i).0].min(f[self.rows(i).1]);
                s.order.iter_mut().enumerate().for_each(|(i, o)| *o = i);
                s.order.sort_by(|&a, &b| key(a).total_cmp(&key(b)));
                let elite = &s.order[..k];
                let vals = elite.iter().flat_map(|&i| [f[self.rows(i).0], f[self.rows(i).1]]);
                let count = 2.0 * k as f64;
                let mean_f = vals.clone().sum::<f64>() / count;
                let var = vals.map(|v| (v - mean_f) * (v - mean_f)).sum::<f64>() / count;
                let f_std = var.sqrt().max(1e-8);
                for &i in elite {
                    let (a, b) = self.rows(i);
                    let delta = s.f[a] - s.f[b];
                    for j in 0..n {
                        let z = step(s, i, j);
                        s.grad[j] += delta * z;
                    }
                }
                s.grad.iter_mut().for_each(|g| *g /= k as f64 * f_std);
            }
            AntitheticRule::Esmc => {
                let base = 0.5 * (s.f[0] + s.f[1]);
                for i in 0..pairs {
                    let (a, b) = self.rows(i);
                    let delta = s.f[a].min(base) - s.f[b].min(base);
                    for j in 0..n {
                        let z = step(s, i, j);
                        s.grad[j] += delta * z;
                    }
                }
                let div = ((lam - 1) / 2) as f64;
                s.grad.iter_mut().for_each(|g| *g /= div);
            }
        }
        let lr = p.adam.lr * p.lr_decay.powf(s.adam_steps as f64 / p.lr_decay_steps);
        s.adam_steps += 1;
        let t = s.adam_steps as i32;
        for j in 0..n {
            let d = p.adam.step(lr, t, s.grad[j], &mut s.m[j], &mut s.v[j]);
            s.mean[j] = (s.mean[j] - d).clamp(-MEAN_BOUND, MEAN_BOUND);
        }
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, state: &AntitheticState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a AntitheticState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(AntitheticState { vec mean, vec m, vec v, count adam_steps });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_mirror_around_the_mean() {
        for rule in [AntitheticRule::Ars, AntitheticRule::Esmc] {
            let s = Antithetic::new(8, 2, rule).unwrap();
            let p = s.default_params();
            let mut st = s.init(Key::new(0), &p, &[1.0, -1.0]);
            let mut pop = vec![0f32; 16];
            s.ask(Key::new(3), &mut st, &p, &mut pop);
            for k in 0..s.pairs() {
                let (a, b) = s.rows(k);
                for j in 0..2 {
                    let m = st.mean[j] as f32;
                    assert!((pop[a * 2 + j] - m + (pop[b * 2 + j] - m)).abs() < 1e-6, "{rule:?}");
                }
            }
        }
        assert!(Antithetic::new(7, 2, AntitheticRule::Ars).is_err());
        assert!(Antithetic::new(2, 2, AntitheticRule::Esmc).is_err());
    }
}
