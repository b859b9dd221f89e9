//! PGPE: policy gradients with parameter-based exploration, symmetric sampling, per-dimension
//! step sizes, and ClipUp on the mean.
//!
//! Paper: F. Sehnke et al., "Parameter-exploring policy gradients", Neural Networks 23(4),
//! 2010; ClipUp: N. E. Toklu et al., arXiv:2008.02387. Reference implementation: evosax 0.3.2
//! `PGPE` (centred ranks, ClipUp lr 0.01 / max velocity 0.02 / momentum 0.9, std lr 0.1,
//! std change bounded by 20% per step).

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::ShapingKind;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, to_f32};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::fill_normal_f32;

/// PGPE over `num_dims` with an even `pop_size` (mirrored pairs).
#[derive(Clone, Debug)]
pub struct Pgpe {
    pop_size: usize,
    num_dims: usize,
}

/// PGPE hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PgpeParams {
    /// Initial per-dimension step size.
    pub sigma_init: f64,
    /// Step-size learning rate.
    pub sigma_lr: f64,
    /// Largest relative change of a step size per generation.
    pub sigma_max_change: f64,
    /// ClipUp learning rate.
    pub lr: f64,
    /// ClipUp largest velocity norm.
    pub max_velocity: f64,
    /// ClipUp momentum.
    pub momentum: f64,
    /// Fitness shaping before the gradient estimates.
    pub shaping: ShapingKind,
}

/// PGPE state.
#[derive(Clone, Debug)]
pub struct PgpeState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Per-dimension step sizes.
    pub sigma: Vec<f64>,
    /// ClipUp velocity.
    pub velocity: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    grad: Vec<f64>,
}

impl Pgpe {
    /// PGPE; `pop_size` even and ≥ 2.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        if !pop_size.is_multiple_of(2) {
            return Err(EvoError::invalid("pop_size", pop_size, "an even number (mirrored pairs)"));
        }
        Ok(Pgpe { pop_size, num_dims })
    }

    /// The population from given standard normals (`pop_size / 2 × num_dims`): rows
    /// `mean ± σ ∘ z_i`, the mirrored half second. `ask` draws `z` from its key.
    pub fn ask_from_normals(&self, s: &mut PgpeState, z: &[f64], population: &mut [f32]) {
        check_lens("Pgpe::ask", self.pop_size, self.num_dims, population, None);
        s.z.copy_from_slice(z);
        self.fill(s, population);
    }

    fn fill(&self, s: &PgpeState, population: &mut [f32]) {
        let (half, n) = (self.pop_size / 2, self.num_dims);
        for i in 0..half {
            for j in 0..n {
                let d = s.sigma[j] * s.z[i * n + j];
                population[i * n + j] = (s.mean[j] + d) as f32;
                population[(i + half) * n + j] = (s.mean[j] - d) as f32;
            }
        }
    }
}

impl Strategy for Pgpe {
    type Params = PgpeParams;
    type State = PgpeState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }
    fn default_params(&self) -> PgpeParams {
        PgpeParams {
            sigma_init: 1.0,
            sigma_lr: 0.1,
            sigma_max_change: 0.2,
            lr: 0.01,
            max_velocity: 0.02,
            momentum: 0.9,
            shaping: ShapingKind::CenteredRank,
        }
    }

    fn init(&self, _key: Key, params: &PgpeParams, mean: &[f32]) -> PgpeState {
        let n = self.num_dims;
        assert_eq!(mean.len(), n, "Pgpe::init: mean must have num_dims values");
        PgpeState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: vec![params.sigma_init; n],
            velocity: vec![0.0; n],
            progress: Progress::new(n),
            z: vec![0.0; self.pop_size / 2 * n],
            w: vec![0.0; self.pop_size],
            order: vec![0; self.pop_size],
            grad: vec![0.0; n],
        }
    }

    fn ask(&self, key: Key, s: &mut PgpeState, _params: &PgpeParams, population: &mut [f32]) {
        check_lens("Pgpe::ask", self.pop_size, self.num_dims, population, None);
        fill_normal_f32(key, &mut s.z);
        self.fill(s, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut PgpeState,
        p: &PgpeParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        let half = lam / 2;
        check_lens("Pgpe::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        p.shaping.apply(fitness, &mut s.order, &mut s.w);
        let baseline = s.w.iter().sum::<f64>() / lam as f64;
        let mut gnorm = 0.0;
        for j in 0..n {
            let (mut gm, mut gs) = (0.0, 0.0);
            for i in 0..half {
                let d = population[i * n + j] as f64 - s.mean[j];
                let (fp, fm) = (s.w[i], s.w[i + half]);
                gm += (fp - fm) * d;
                gs += (fp + fm - 2.0 * baseline) * (d * d - s.sigma[j] * s.sigma[j]) / s.sigma[j];
            }
            s.grad[j] = gm / lam as f64;
            gnorm += s.grad[j] * s.grad[j];
            let sg = s.sigma[j];
            let change = p.sigma_max_change * sg;
            s.sigma[j] = (sg - p.sigma_lr * gs / lam as f64).clamp(sg - change, sg + change);
        }
        // ClipUp: normalised gradient into a momentum velocity, clipped, scaled by lr.
        let gnorm = gnorm.sqrt() + 1e-8;
        let vmax = p.max_velocity / p.lr;
        let mut vnorm = 0.0;
        for j in 0..n {
            s.velocity[j] = p.momentum * s.velocity[j] + s.grad[j] / gnorm;
            vnorm += s.velocity[j] * s.velocity[j];
        }
        let vnorm = vnorm.sqrt();
        let scale = if vnorm > vmax { vmax / vnorm } else { 1.0 };
        for j in 0..n {
            s.velocity[j] *= scale;
            s.mean[j] -= p.lr * s.velocity[j];
        }
        let sigma = s.sigma.iter().sum::<f64>() / n as f64;
        s.progress.metrics(best, bad, sigma)
    }

    fn mean(&self, state: &PgpeState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a PgpeState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(PgpeState { vec mean, vec sigma, vec velocity });
