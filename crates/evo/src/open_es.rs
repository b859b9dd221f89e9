//! OpenAI-ES: antithetic Gaussian perturbations, centred-rank fitness, and a gradient step
//! on the mean (OpenEsAdam by default).
//!
//! Paper: T. Salimans et al., "Evolution Strategies as a Scalable Alternative to
//! Reinforcement Learning", arXiv:1703.03864. Reference implementation (golden): evosax
//! 0.3.2 `Open_ES` with `optax.adam` (bias-corrected, `eps_root = 0`).

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::ShapingKind;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, to_f32};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::fill_normal_f32;

/// OpenEsAdam (Kingma & Ba, 2015) as optax implements it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenEsAdam {
    /// Learning rate.
    pub lr: f64,
    /// First-moment decay.
    pub beta1: f64,
    /// Second-moment decay.
    pub beta2: f64,
    /// Added to the root of the second moment.
    pub eps: f64,
}

impl Default for OpenEsAdam {
    fn default() -> Self {
        OpenEsAdam { lr: 0.05, beta1: 0.9, beta2: 0.999, eps: 1e-8 }
    }
}

impl OpenEsAdam {
    /// One bias-corrected OpenEsAdam step on one coordinate, as `optax.adam` (`eps_root = 0`): the
    /// moments `m`, `v` take gradient `g` at step `t` (1-based), and the step to subtract from
    /// the parameter is returned, at learning rate `lr` (the strategy's, which may follow a
    /// schedule).
    #[inline(always)]
    pub(crate) fn step(&self, lr: f64, t: i32, g: f64, m: &mut f64, v: &mut f64) -> f64 {
        *m = self.beta1 * *m + (1.0 - self.beta1) * g;
        *v = self.beta2 * *v + (1.0 - self.beta2) * g * g;
        let m_hat = *m / (1.0 - self.beta1.powi(t));
        let v_hat = *v / (1.0 - self.beta2.powi(t));
        lr * m_hat / (v_hat.sqrt() + self.eps)
    }
}

/// OpenAI-ES over `num_dims` with an even `pop_size`.
#[derive(Clone, Debug)]
pub struct OpenEs {
    pop_size: usize,
    num_dims: usize,
}

/// OpenAI-ES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenEsParams {
    /// Perturbation scale (constant).
    pub sigma: f64,
    /// Optimiser of the mean.
    pub adam: OpenEsAdam,
    /// Mirrored sampling (`z`, `−z`).
    pub antithetic: bool,
    /// Fitness shaping before the gradient estimate.
    pub shaping: ShapingKind,
}

/// OpenAI-ES state (OpenEsAdam moments included).
#[derive(Clone, Debug)]
pub struct OpenEsState {
    /// Mean.
    pub mean: Vec<f64>,
    /// OpenEsAdam first moment.
    pub m: Vec<f64>,
    /// OpenEsAdam second moment.
    pub v: Vec<f64>,
    /// OpenEsAdam steps taken.
    pub adam_steps: u64,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    g: Vec<f64>,
}

impl OpenEs {
    /// OpenAI-ES; `pop_size` must be even and ≥ 2.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        if !pop_size.is_multiple_of(2) {
            return Err(EvoError::invalid(
                "pop_size",
                pop_size,
                "an even number (antithetic pairs)",
            ));
        }
        Ok(OpenEs { pop_size, num_dims })
    }

    /// The population from given normals: with antithetic sampling only the first half of
    /// `z` is used, mirrored into the second half.
    pub fn ask_from_normals(
        &self,
        state: &OpenEsState,
        params: &OpenEsParams,
        z: &[f64],
        population: &mut [f32],
    ) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("OpenEs::ask", lam, n, population, None);
        for i in 0..lam {
            for j in 0..n {
                let zi = if params.antithetic && i >= lam / 2 {
                    -z[(i - lam / 2) * n + j]
                } else {
                    z[i * n + j]
                };
                population[i * n + j] = (state.mean[j] + params.sigma * zi) as f32;
            }
        }
    }
}

impl Strategy for OpenEs {
    type Params = OpenEsParams;
    type State = OpenEsState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }
    fn default_params(&self) -> OpenEsParams {
        OpenEsParams {
            sigma: 1.0,
            adam: OpenEsAdam::default(),
            antithetic: true,
            shaping: ShapingKind::CenteredRank,
        }
    }

    fn init(&self, _key: Key, _params: &OpenEsParams, mean: &[f32]) -> OpenEsState {
        let n = self.num_dims;
        assert_eq!(mean.len(), n, "OpenEs::init: mean must have num_dims values");
        OpenEsState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            m: vec![0.0; n],
            v: vec![0.0; n],
            adam_steps: 0,
            progress: Progress::new(n),
            z: vec![0.0; self.pop_size * n],
            w: vec![0.0; self.pop_size],
            order: vec![0; self.pop_size],
            g: vec![0.0; self.num_dims],
        }
    }

    fn ask(
        &self,
        key: Key,
        state: &mut OpenEsState,
        params: &OpenEsParams,
        population: &mut [f32],
    ) {
        let mut z = std::mem::take(&mut state.z);
        fill_normal_f32(key, &mut z);
        self.ask_from_normals(state, params, &z, population);
        state.z = z;
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut OpenEsState,
        p: &OpenEsParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("OpenEs::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        p.shaping.apply(fitness, &mut s.order, &mut s.w);
        s.adam_steps += 1;
        let t = s.adam_steps as i32;
        let a = &p.adam;
        // Row by row; each coordinate's sum over the candidates in order, as column by column.
        s.g.iter_mut().for_each(|v| *v = 0.0);
        for (row, &w) in population.chunks_exact(n).zip(&s.w).take(lam) {
            for ((g, x), m) in s.g.iter_mut().zip(row).zip(&s.mean) {
                *g += w * (*x as f64 - m) / p.sigma;
            }
        }
        for j in 0..n {
            let g = s.g[j] / (lam as f64 * p.sigma);
            s.mean[j] -= a.step(a.lr, t, g, &mut s.m[j], &mut s.v[j]);
        }
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, state: &OpenEsState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a OpenEsState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(OpenEsState { vec mean, vec m, vec v, count adam_steps });
