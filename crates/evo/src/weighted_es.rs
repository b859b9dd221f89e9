//! Rank-weighted diagonal Gaussian strategies: Simple ES and the Discovered ES. Both sample
//! `x = m + σ ∘ z`, move the mean by `lr Σ w_i (x_i − m)` (SGD on evosax's gradient) and the
//! per-dimension step sizes towards the weighted spread `√Σ w_i (x_i − m)²`; they differ in
//! the weights by rank only.
//!
//! | kind | weights by rank | paper | evosax 0.3.2 |
//! |---|---|---|---|
//! | [`WeightRule::Elite`] | `1/μ` for the best `μ = ⌊λ/2⌋`, 0 below | Rechenberg 1973; `estool`'s `es.py` | `algorithms/distribution_based/simple_es.py` (`SimpleES`) |
//! | [`WeightRule::Discovered`] | `softmax(−20 σ(τ r))`, centred ranks `r`, τ = 12.5 | Lange et al., "Discovering Evolution Strategies via Meta-Black-Box Optimization", ICLR 2023 | `algorithms/distribution_based/discovered_es.py` (`DiscoveredES`) |
//!
//! evosax's defaults: `std_init` 1, SGD with learning rate 1 (`optax.sgd(1.0)`), step-size
//! rate `c_std` (SimpleES) or `lr_std` (DES) 0.1. Kestrel calls the two rates `lr` and
//! `sigma_lr`. As CMA-ES does, `tell` takes the step that `ask` drew, exact in f64, for each
//! row that is its f32 rounding.

use crate::cma_es::{MEAN_BOUND, SIGMA_FLOOR};
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::strategy::Scales;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, is_rounding, min_max, to_f32, to_row,
};
use kestrel_core::{Key, fill_normal_f32};

/// evosax's DES temperature (`DiscoveredES.temperature`).
pub const DES_TEMPERATURE: f64 = 12.5;

/// How a [`WeightedEs`] weighs its candidates by rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WeightRule {
    /// Simple ES: the best half equally.
    Elite,
    /// The Discovered ES: a sigmoid of the centred ranks through a softmax, with this
    /// temperature (evosax: 12.5).
    Discovered {
        /// The sigmoid's temperature τ.
        temperature: f64,
    },
}

/// A rank-weighted diagonal Gaussian strategy ([`WeightRule`] picks which).
#[derive(Clone, Debug)]
pub struct WeightedEs {
    pop_size: usize,
    num_dims: usize,
    rule: WeightRule,
}

/// [`WeightedEs`]'s hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct WeightedEsParams {
    /// Initial per-dimension step size.
    pub sigma_init: f64,
    /// Weights by rank (best first).
    pub weights: Vec<f64>,
    /// SGD learning rate of the mean (evosax's `optax.sgd(1.0)`).
    pub lr: f64,
    /// Rate at which the step sizes move to the weighted spread (`c_std` / `lr_std`).
    pub sigma_lr: f64,
}

/// [`WeightedEs`]'s state.
#[derive(Clone, Debug)]
pub struct WeightedEsState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Per-dimension step sizes.
    pub sigma: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    step: Vec<f64>,
    spread: Vec<f64>,
}

impl WeightedEs {
    /// The strategy with `rule`; `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize, rule: WeightRule) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(WeightedEs { pop_size, num_dims, rule })
    }

    /// `x_i = m + σ ∘ z_i` from given standard normals (kept for `tell`).
    pub fn ask_from_normals(&self, state: &mut WeightedEsState, z: &[f64], population: &mut [f32]) {
        state.z.copy_from_slice(z);
        self.fill(state, population);
    }

    fn fill(&self, state: &WeightedEsState, population: &mut [f32]) {
        check_lens("WeightedEs::ask", self.pop_size, self.num_dims, population, None);
        let n = self.num_dims;
        for (row, zr) in population.chunks_exact_mut(n).zip(state.z.chunks_exact(n)) {
            for (((x, m), s), z) in row.iter_mut().zip(&state.mean).zip(&state.sigma).zip(zr) {
                *x = to_row(m + s * z);
            }
        }
    }
}

impl Strategy for WeightedEs {
    type Params = WeightedEsParams;
    type State = WeightedEsState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> WeightedEsParams {
        let lam = self.pop_size;
        let weights = match self.rule {
            WeightRule::Elite => {
                let mu = (lam / 2).max(1);
                (0..lam).map(|i| if i < mu { 1.0 / mu as f64 } else { 0.0 }).collect()
            }
            WeightRule::Discovered { temperature } => {
                // softmax(−20 sigmoid(τ (i / (λ − 1) − 0.5))), as evosax's `get_weights`.
                let e: Vec<f64> = (0..lam)
                    .map(|i| {
                        let r = i as f64 / (lam as f64 - 1.0) - 0.5;
                        let sig = 1.0 / (1.0 + (-temperature * r).exp());
                        -20.0 * sig
                    })
                    .collect();
                let top = e.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let ex: Vec<f64> = e.iter().map(|v| (v - top).exp()).collect();
                let sum: f64 = ex.iter().sum();
                ex.iter().map(|v| v / sum).collect()
            }
        };
        WeightedEsParams { sigma_init: 1.0, weights, lr: 1.0, sigma_lr: 0.1 }
    }

    fn init(&self, _key: Key, params: &WeightedEsParams, mean: &[f32]) -> WeightedEsState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "WeightedEs::init: mean must have num_dims values");
        WeightedEsState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: vec![params.sigma_init; n],
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            w: vec![0.0; lam],
            order: vec![0; lam],
            step: vec![0.0; n],
            spread: vec![0.0; n],
        }
    }

    fn ask(&self, key: Key, state: &mut WeightedEsState, _p: &WeightedEsParams, pop: &mut [f32]) {
        fill_normal_f32(key, &mut state.z);
        self.fill(state, pop);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut WeightedEsState,
        p: &WeightedEsParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("WeightedEs::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        s.step.iter_mut().for_each(|v| *v = 0.0);
        s.spread.iter_mut().for_each(|v| *v = 0.0);
        for ((row, zr), &w) in population.chunks_exact(n).zip(s.z.chunks_exact(n)).zip(&s.w) {
            let asked = is_rounding(row, &s.mean, s.sigma.iter().zip(zr).map(|(sg, z)| sg * z));
            for j in 0..n {
                let diff = if asked { s.sigma[j] * zr[j] } else { row[j] as f64 - s.mean[j] };
                s.step[j] += w * diff;
                s.spread[j] += w * diff * diff;
            }
        }
        for j in 0..n {
            // evosax: grad = −Σ w (x − m); optax.sgd: mean − lr · grad.
            s.mean[j] = (s.mean[j] + p.lr * s.step[j]).clamp(-MEAN_BOUND, MEAN_BOUND);
            let target = s.spread[j].max(0.0).sqrt();
            s.sigma[j] = ((1.0 - p.sigma_lr) * s.sigma[j] + p.sigma_lr * target)
                .clamp(SIGMA_FLOOR, f32::MAX as f64);
        }
        let sigma = s.sigma.iter().sum::<f64>() / n as f64;
        s.progress.metrics(best, bad, sigma)
    }

    fn mean(&self, state: &WeightedEsState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a WeightedEsState) -> &'a Progress {
        &state.progress
    }

    fn scales(&self, s: &WeightedEsState, _axis: usize, out: &mut Scales) -> bool {
        out.sigma = 1.0;
        out.mean.clone_from(&s.mean);
        out.coord.clone_from(&s.sigma);
        out.path.clear();
        out.axis.clear();
        out.root_eig = min_max(&s.sigma);
        true
    }
}

crate::strategy::state_tensors!(WeightedEsState { vec mean, vec sigma });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_sum_to_one_and_favour_the_best() {
        for rule in [WeightRule::Elite, WeightRule::Discovered { temperature: 12.5 }] {
            let p = WeightedEs::new(10, 3, rule).unwrap().default_params();
            assert!((p.weights.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{rule:?}");
            assert!(p.weights.windows(2).all(|w| w[0] >= w[1]), "{rule:?}");
        }
    }
}
