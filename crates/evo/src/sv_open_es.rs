//! SV-OpenAI-ES, Stein variational OpenAI-ES: `k` OpenAI-ES searches ("particles", each a
//! mean sampled with its own mirrored population) whose gradient estimates are combined by
//! Stein variational gradient descent with an RBF kernel, so the means descend together while
//! the kernel's repulsion keeps them apart: several modes of a multimodal objective at once.
//!
//! Papers: Q. Liu and D. Wang, "Stein Variational Gradient Descent", NeurIPS 2016 (eq. 8);
//! Y. Liu et al., "Stein Variational Policy Gradient", UAI 2017 (arXiv:1704.02399, eq. 10).
//! Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/sv/sv_open_es.py` (`SV_Open_ES`, over `sv/base.py`'s `SV_ES`)
//! with its defaults: centred-rank shaping within each population, mirrored sampling, a
//! constant σ = 1, SGD at 1e-3, `kernel_rbf` with `kernel_std = 1`, `alpha = 1`.
//!
//! For particle `p` with mean `m_p`, perturbations `z` and shaped fitness `f̃`:
//! `g_p = −Σ_i f̃_i z_i / (λ σ)` (the ascent of `−f`, evosax's `(mean − x) / σ` form), then
//! `φ_p = 1/k Σ_j [g_j κ(m_j, m_p) + α ∇_{m_j} κ(m_j, m_p)]`, `κ(a, b) = exp(−‖a − b‖² / 2h²)`,
//! and `m_p ← m_p + lr φ_p` (SGD on evosax's `−φ`).
//!
//! **Rows**: a population is `k` blocks of `λ` rows (`pop_size = k λ`, `λ` even), block `p`
//! sampled around `m_p`, as evosax's `ask` reshapes them. **Start**: evosax's `init` takes the
//! `k` means; [`SvOpenEs::init_means`] does too, and [`Strategy::init`]'s one mean places the
//! particles at `mean + σ z_p` (`z_p` standard normal from the init key), since identical
//! particles would feel no repulsion. [`Strategy::mean`] is the mean of the particle whose
//! samples found the best value so far.

use crate::cma_es::MEAN_BOUND;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::centered_ranks;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, to_f32, to_row};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// The rows of each of `num_populations` particles sharing `pop_size` rows (the Stein
/// variational strategies' split), or an error when they do not divide them.
pub(crate) fn particle_rows(pop_size: usize, num_populations: usize) -> Result<usize, EvoError> {
    if num_populations == 0 || !pop_size.is_multiple_of(num_populations) {
        return Err(EvoError::invalid(
            "params.num_populations",
            num_populations,
            format!("a divisor of pop_size = {pop_size} (each particle has pop_size / k rows)"),
        ));
    }
    Ok(pop_size / num_populations)
}

/// [`Progress::record`] for a population of particle blocks of `lam` rows, `best_particle`
/// moved to the block of a new best.
pub(crate) fn record_particles(
    progress: &mut Progress,
    best_particle: &mut u64,
    population: &[f32],
    fitness: &[f32],
    lam: usize,
) -> (f32, u32) {
    let before = progress.best_fitness;
    let (best, bad) = progress.record(population, fitness);
    if best < before {
        let at = fitness.iter().position(|&f| f == best).unwrap_or(0);
        *best_particle = (at / lam) as u64;
    }
    (best, bad)
}

/// `k` particle means `mean + σ z_p` (`k × n`, `z_p` standard normal from `key`): the Stein
/// variational strategies' start from one mean, since identical particles feel no repulsion.
pub(crate) fn particle_means(key: Key, mean: &[f32], sigma: f64, k: usize) -> Vec<f32> {
    let n = mean.len();
    let mut z = vec![0.0f64; k * n];
    fill_normal_f32(key, &mut z);
    z.iter().enumerate().map(|(i, z)| to_row(mean[i % n] as f64 + sigma * z)).collect()
}

/// SV-OpenAI-ES: `num_populations` particles of `pop_size / num_populations` rows each.
#[derive(Clone, Debug)]
pub struct SvOpenEs {
    pop_size: usize,
    num_dims: usize,
    particles: usize,
}

/// SV-OpenAI-ES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct SvOpenEsParams {
    /// Perturbation scale (constant, evosax's `std_schedule`, default 1).
    pub sigma: f64,
    /// SGD's learning rate on the means (default 1e-3).
    pub lr: f64,
    /// The RBF kernel's length scale `h` (`kernel_std`, default 1).
    pub kernel_std: f64,
    /// The repulsion's weight (`alpha`, default 1).
    pub alpha: f64,
}

/// SV-OpenAI-ES state.
#[derive(Clone, Debug)]
pub struct SvOpenEsState {
    /// The particles' means, `k × n` row-major.
    pub means: Vec<f64>,
    /// The particle whose samples found the best value so far.
    pub best_particle: u64,
    /// Best-so-far bookkeeping (over every particle's rows).
    pub progress: Progress,
    /// The last `ask`'s standard normals, `k × λ/2 × n` (each block's second half mirrors it).
    pub z: Vec<f64>,
    shaped: Vec<f64>,
    order: Vec<usize>,
    grads: Vec<f64>,
    phi: Vec<f64>,
    next: Vec<f64>,
}

impl SvOpenEs {
    /// The strategy: `pop_size` rows in `num_populations` particles of an even size.
    pub fn new(pop_size: usize, num_dims: usize, num_populations: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        let each = particle_rows(pop_size, num_populations)?;
        if each % 2 == 1 {
            return Err(EvoError::invalid(
                "pop_size",
                pop_size,
                format!(
                    "an even number of rows per particle ({each} with {num_populations} particles; mirrored pairs)"
                ),
            ));
        }
        Ok(SvOpenEs { pop_size, num_dims, particles: num_populations })
    }

    /// The number of particles `k`.
    pub fn num_populations(&self) -> usize {
        self.particles
    }

    /// Rows per particle `λ`.
    pub fn particle_pop_size(&self) -> usize {
        self.pop_size / self.particles
    }

    /// A state with the `k` particle means given (`k × n` row-major), as evosax's `init`.
    pub fn init_means(&self, means: &[f32]) -> SvOpenEsState {
        let (k, n) = (self.particles, self.num_dims);
        assert_eq!(means.len(), k * n, "SvOpenEs::init_means: k × num_dims values");
        SvOpenEsState {
            means: means.iter().map(|&v| v as f64).collect(),
            best_particle: 0,
            progress: Progress::new(n),
            z: vec![0.0; self.pop_size / 2 * n],
            shaped: vec![0.0; self.pop_size],
            order: vec![0; self.particle_pop_size()],
            grads: vec![0.0; k * n],
            phi: vec![0.0; n],
            next: vec![0.0; k * n],
        }
    }

    /// The population from given standard normals (`k × λ/2 × n`).
    pub fn ask_from_normals(
        &self,
        s: &mut SvOpenEsState,
        p: &SvOpenEsParams,
        z: &[f64],
        population: &mut [f32],
    ) {
        s.z.copy_from_slice(z);
        self.fill(s, p, population);
    }

    fn fill(&self, s: &SvOpenEsState, p: &SvOpenEsParams, population: &mut [f32]) {
        let n = self.num_dims;
        check_lens("SvOpenEs::ask", self.pop_size, n, population, None);
        let (lam, half) = (self.particle_pop_size(), self.particle_pop_size() / 2);
        for q in 0..self.particles {
            let m = &s.means[q * n..(q + 1) * n];
            for i in 0..half {
                let z = &s.z[(q * half + i) * n..(q * half + i + 1) * n];
                let (a, b) = (q * lam + i, q * lam + half + i);
                for j in 0..n {
                    let e = p.sigma * z[j];
                    population[a * n + j] = to_row(m[j] + e);
                    population[b * n + j] = to_row(m[j] - e);
                }
            }
        }
    }
}

impl Strategy for SvOpenEs {
    type Params = SvOpenEsParams;
    type State = SvOpenEsState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> SvOpenEsParams {
        SvOpenEsParams { sigma: 1.0, lr: 1e-3, kernel_std: 1.0, alpha: 1.0 }
    }

    fn init(&self, key: Key, params: &SvOpenEsParams, mean: &[f32]) -> SvOpenEsState {
        assert_eq!(mean.len(), self.num_dims, "SvOpenEs::init: mean must have num_dims values");
        self.init_means(&particle_means(key, mean, params.sigma, self.particles))
    }

    fn ask(&self, key: Key, s: &mut SvOpenEsState, p: &SvOpenEsParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut s.z);
        self.fill(s, p, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut SvOpenEsState,
        p: &SvOpenEsParams,
    ) -> TellMetrics {
        let (k, n) = (self.particles, self.num_dims);
        let (lam, half) = (self.particle_pop_size(), self.particle_pop_size() / 2);
        check_lens("SvOpenEs::tell", self.pop_size, n, population, Some(fitness));
        let (best, bad) =
            record_particles(&mut s.progress, &mut s.best_particle, population, fitness, lam);
        // Each particle's gradient −Σ f̃_i z_i / (λ σ), its ranks centred within its block; the
        // mirrored row of pair i carries −z_i.
        for q in 0..k {
            let shaped = &mut s.shaped[q * lam..(q + 1) * lam];
            centered_ranks(&fitness[q * lam..(q + 1) * lam], &mut s.order, shaped);
            let g = &mut s.grads[q * n..(q + 1) * n];
            g.fill(0.0);
            for i in 0..half {
                let d = shaped[i] - shaped[half + i];
                let z = &s.z[(q * half + i) * n..(q * half + i + 1) * n];
                g.iter_mut().zip(z).for_each(|(g, z)| *g -= d * z);
            }
            g.iter_mut().for_each(|g| *g /= lam as f64 * p.sigma);
        }
        // SVGD: φ_p = 1/k Σ_j κ(m_j, m_p) [g_j + α (m_p − m_j) / h²], all from the old means.
        let h2 = p.kernel_std * p.kernel_std;
        for q in 0..k {
            s.phi.fill(0.0);
            let mq = &s.means[q * n..(q + 1) * n];
            for j in 0..k {
                let mj = &s.means[j * n..(j + 1) * n];
                let d2: f64 = mj.iter().zip(mq).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / h2;
                let kern = (-0.5 * d2).exp();
                let gj = &s.grads[j * n..(j + 1) * n];
                for c in 0..n {
                    s.phi[c] += kern * (gj[c] + p.alpha * (mq[c] - mj[c]) / h2);
                }
            }
            for c in 0..n {
                let m = mq[c] + p.lr * s.phi[c] / k as f64;
                s.next[q * n + c] = m.clamp(-MEAN_BOUND, MEAN_BOUND);
            }
        }
        std::mem::swap(&mut s.means, &mut s.next);
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, state: &SvOpenEsState) -> Vec<f32> {
        let (q, n) = (state.best_particle as usize, self.num_dims);
        to_f32(&state.means[q * n..(q + 1) * n])
    }
    fn progress<'a>(&self, state: &'a SvOpenEsState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(SvOpenEsState { vec means, count best_particle, vec z });
