//! SNES: separable natural evolution strategy.
//!
//! Paper: T. Schaul, T. Glasmachers and J. Schmidhuber, "High Dimensions and Heavy Tails for
//! Natural Evolution Strategies", GECCO 2011. Reference implementation (golden): evosax
//! 0.3.2 `SNES` (utility weights of xNES, mean step by SGD with learning rate 1).

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, to_f32};
use kestrel_core::Key;
use kestrel_core::fill_normal_f32;

/// SNES over `num_dims` with `pop_size` samples per generation.
#[derive(Clone, Debug)]
pub struct Snes {
    pop_size: usize,
    num_dims: usize,
}

/// SNES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SnesParams {
    /// Initial per-dimension step size.
    pub sigma_init: f64,
    /// Utility weights by rank (`max(0, ln(λ/2+1) − ln i)` normalised, minus `1/λ`).
    pub weights: Vec<f64>,
    /// Learning rate of the mean.
    pub lr_mean: f64,
    /// Learning rate of the step sizes (`(3 + ln n) / (5 √n)`).
    pub lr_sigma: f64,
}

/// SNES state.
#[derive(Clone, Debug)]
pub struct SnesState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Per-dimension step sizes.
    pub sigma: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    gm: Vec<f64>,
    gs: Vec<f64>,
}

impl Snes {
    /// SNES; `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(Snes { pop_size, num_dims })
    }

    /// `x_i = mean + σ ∘ z_i` from given standard normals.
    pub fn ask_from_normals(&self, state: &SnesState, z: &[f64], population: &mut [f32]) {
        check_lens("Snes::ask", self.pop_size, self.num_dims, population, None);
        let n = self.num_dims;
        for (row, zi) in population.chunks_exact_mut(n).zip(z.chunks_exact(n)) {
            for (((x, m), sg), z) in row.iter_mut().zip(&state.mean).zip(&state.sigma).zip(zi) {
                *x = (m + sg * z) as f32;
            }
        }
    }
}

impl Strategy for Snes {
    type Params = SnesParams;
    type State = SnesState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> SnesParams {
        let lam = self.pop_size as f64;
        let raw: Vec<f64> = (1..=self.pop_size)
            .map(|i| ((lam / 2.0 + 1.0).ln() - (i as f64).ln()).max(0.0))
            .collect();
        let sum: f64 = raw.iter().sum();
        let n = self.num_dims as f64;
        SnesParams {
            sigma_init: 1.0,
            weights: raw.iter().map(|w| w / sum - 1.0 / lam).collect(),
            lr_mean: 1.0,
            lr_sigma: (3.0 + n.ln()) / (5.0 * n.sqrt()),
        }
    }

    fn init(&self, _key: Key, params: &SnesParams, mean: &[f32]) -> SnesState {
        assert_eq!(mean.len(), self.num_dims, "Snes::init: mean must have num_dims values");
        SnesState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: vec![params.sigma_init; self.num_dims],
            progress: Progress::new(self.num_dims),
            z: vec![0.0; self.pop_size * self.num_dims],
            w: vec![0.0; self.pop_size],
            order: vec![0; self.pop_size],
            gm: vec![0.0; self.num_dims],
            gs: vec![0.0; self.num_dims],
        }
    }

    fn ask(&self, key: Key, state: &mut SnesState, _params: &SnesParams, population: &mut [f32]) {
        let mut z = std::mem::take(&mut state.z);
        fill_normal_f32(key, &mut z);
        self.ask_from_normals(state, &z, population);
        state.z = z;
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut SnesState,
        p: &SnesParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Snes::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        // Row by row over the row-major population; each coordinate's sums still run over the
        // candidates in order (the same values as a column-by-column loop).
        let (gm, gs) = (&mut s.gm, &mut s.gs);
        gm.iter_mut().for_each(|v| *v = 0.0);
        gs.iter_mut().for_each(|v| *v = 0.0);
        for (row, &w) in population.chunks_exact(n).zip(&s.w).take(lam) {
            for ((((x, m), sg), a), b) in
                row.iter().zip(&s.mean).zip(&s.sigma).zip(gm.iter_mut()).zip(gs.iter_mut())
            {
                let z = (*x as f64 - m) / sg;
                *a += w * z;
                *b += w * (z * z - 1.0);
            }
        }
        for j in 0..n {
            // evosax: grad_mean = -σ Σ f z; SGD: mean -= lr · grad_mean.
            s.mean[j] -= p.lr_mean * (-s.sigma[j] * gm[j]);
            s.sigma[j] = (s.sigma[j] * (0.5 * p.lr_sigma * gs[j]).exp())
                .clamp(crate::cma_es::SIGMA_FLOOR, f32::MAX as f64);
        }
        let sigma = s.sigma.iter().sum::<f64>() / n as f64;
        s.progress.metrics(best, bad, sigma)
    }

    fn mean(&self, state: &SnesState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a SnesState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(SnesState { vec mean, vec sigma });
