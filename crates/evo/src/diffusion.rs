//! Diffusion Evolution: evolution read as a diffusion model's denoising. Each generation is one
//! DDIM step from `t` to `t − 1` of a fixed schedule `α_T < … < α_0`: every member's clean
//! point `x̂₀` is estimated as the fitness-weighted average of the population, each member
//! weighted by how likely it is to have been noised into that member
//! (`exp(−‖l_i − √α_t l_j‖² / 2(1 − α_t))`, `l` the members in an optional random latent
//! projection), then the member steps toward it with fresh noise of scale
//! `σ_t = σ_m √((1 − α_{t−1}) / (1 − α_t) · (1 − α_t / α_{t−1}))`.
//!
//! Paper: Y. Zhang, B. Hartl, H. Hazan and M. Levin, "Diffusion Models are Evolutionary
//! Algorithms", ICLR 2025 (arXiv:2410.02543, Algorithm 1). Reference implementation (golden):
//! evosax 0.3.2 `algorithms/population_based/diffusion_evolution.py` (`DiffusionEvolution`, after
//! openai/diffusion-evolution), with its defaults: 128 generations of the cosine schedule,
//! `σ_m = 1`, no scaling, the energy mapping `w = exp(−f/T − max(−f/T) + 5)` at `T = 1`, no
//! latent projection.
//!
//! As in every population-based strategy here, generation 0 is evosax's evaluated `init`
//! population, `start + σ z`; generation `g ≥ 1` takes DDIM step `g − 1`. Past the schedule's
//! end evosax's index clamps to its last entry, `α_t = α_{t−1}`, and the population stays
//! where it is (σ_t = 0): so does Kestrel's. Non-finite fitness weighs 0 (evosax's weights turn
//! NaN); `1 − α_{t−1} − σ_t²`, which rounding can leave a hair below 0, is read as 0.

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, to_row};
use crate::swarm::{best_or_start, first_population};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use kestrel_core::simd::exp_f32;
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// The noise schedule `α` (evosax's `alpha_schedule`; config spelling `cosine`, `ddim`,
/// `ddpm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlphaSchedule {
    /// `((cos(π s) + 1)/2 + ε)(1 − ε)/(1 + ε)`, ε = 1e-3 (the default).
    #[default]
    Cosine,
    /// Linear from `1 − 1e-4` to `1e-8`.
    Ddim,
    /// `exp(−β t − γ t²)` through `1 − 1e-4` and `1e-4`.
    Ddpm,
}

impl AlphaSchedule {
    /// `α` over `steps` steps, from `t = T` to `t = 0` (evosax's reversed schedule).
    pub fn alphas(self, steps: usize) -> Vec<f64> {
        let t = steps as f64;
        let lin = |a: f64, b: f64, i: usize| {
            if steps == 1 { a } else { a + (b - a) * i as f64 / (t - 1.0) }
        };
        let mut out: Vec<f64> = (0..steps)
            .map(|i| match self {
                AlphaSchedule::Cosine => {
                    let eps = 1e-3;
                    let a = ((lin(0.0, std::f64::consts::PI, i)).cos() + 1.0) / 2.0;
                    (a + eps) * (1.0 - eps) / (1.0 + eps)
                }
                AlphaSchedule::Ddim => lin(1.0 - 1e-4, 1e-8, i),
                AlphaSchedule::Ddpm => {
                    let eps: f64 = 1e-4;
                    let k = (1.0 / (1.0 - eps)).ln();
                    let beta = (t * t * k + eps.ln()) / (t - 1.0);
                    let gamma = -t * (t * k + eps.ln()) / (t - 1.0);
                    let s = lin(1.0 / t, 1.0, i);
                    (-beta * s - gamma * s * s).exp()
                }
            })
            .collect();
        out.reverse();
        out
    }
}

/// Diffusion Evolution over `num_dims` with `pop_size` members, optionally in a random
/// `latent_dims`-dimensional projection.
#[derive(Clone, Debug)]
pub struct DiffusionEvolution {
    pop_size: usize,
    num_dims: usize,
    latent_dims: Option<usize>,
}

/// Diffusion Evolution's hyper-parameters (evosax's names in brackets).
#[derive(Clone, Debug, PartialEq)]
pub struct DiffusionParams {
    /// The first population's spread around the start (evosax takes that population).
    pub sigma: f64,
    /// The schedule's `α`, `t = T` first (`alphas`; `num_generations` entries).
    pub alphas: Vec<f64>,
    /// The DDIM noise scale `σ_m` (`std_m`, default 1).
    pub std_m: f64,
    /// Members are divided by it before the step and multiplied after (`scale_factor`, 1).
    pub scale_factor: f64,
    /// The energy mapping's temperature (`fitness_mapping_energy`'s, 1).
    pub temperature: f64,
}

/// Diffusion Evolution's state.
#[derive(Clone, Debug)]
pub struct DiffusionState {
    /// The last generation told (`λ × n`).
    pub population: Vec<f64>,
    /// Its fitness (non-finite as +inf).
    pub fitness: Vec<f64>,
    /// The latent projection (`n × l`, row-major; empty: none).
    pub projection: Vec<f64>,
    /// The last `ask`'s standard normals (`λ × n`).
    pub z: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    start: Vec<f32>,
    scaled: Vec<f64>,
    latent: Vec<f64>,
    weights: Vec<f64>,
    x0: Vec<f64>,
    sq: Vec<f64>,
    sq_total: Vec<f64>,
    kern: Vec<f64>,
}

impl DiffusionEvolution {
    /// The strategy; `latent_dims` in `1..=num_dims` where given.
    pub fn new(
        pop_size: usize,
        num_dims: usize,
        latent_dims: Option<usize>,
    ) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        if let Some(l) = latent_dims
            && (l == 0 || l > num_dims)
        {
            return Err(EvoError::invalid(
                "params.num_latent_dims",
                l,
                format!("in 1..={num_dims} (num_dims)"),
            ));
        }
        Ok(DiffusionEvolution { pop_size, num_dims, latent_dims })
    }

    /// Default params with the `schedule` over `num_generations` steps (at least 2).
    pub fn params_for(
        &self,
        schedule: AlphaSchedule,
        num_generations: usize,
    ) -> Result<DiffusionParams, EvoError> {
        if !(2..=1 << 20).contains(&num_generations) {
            return Err(EvoError::invalid(
                "params.num_generations",
                num_generations,
                "in 2..=1048576",
            ));
        }
        Ok(DiffusionParams { alphas: schedule.alphas(num_generations), ..self.default_params() })
    }

    /// The latent width `l` (`num_dims` without a projection).
    fn width(&self) -> usize {
        self.latent_dims.unwrap_or(self.num_dims)
    }

    /// A later generation's population from given standard normals `z` (`λ × n`).
    pub fn ask_from_normals(
        &self,
        s: &mut DiffusionState,
        p: &DiffusionParams,
        z: &[f64],
        population: &mut [f32],
    ) {
        s.z.copy_from_slice(z);
        self.step(s, p, population);
    }

    fn step(&self, s: &mut DiffusionState, p: &DiffusionParams, population: &mut [f32]) {
        let (lam, n, l) = (self.pop_size, self.num_dims, self.width());
        check_lens("DiffusionEvolution::ask", lam, n, population, None);
        // Energy weights: exp(−f/T − max(−f/T) + 5), non-finite fitness 0.
        let top = s
            .fitness
            .iter()
            .filter(|f| f.is_finite())
            .fold(f64::NEG_INFINITY, |m, &f| m.max(-f / p.temperature));
        for (w, &f) in s.weights.iter_mut().zip(&s.fitness) {
            *w = if f.is_finite() { (-f / p.temperature - top + 5.0).exp() } else { 0.0 };
        }
        s.scaled.iter_mut().zip(&s.population).for_each(|(o, x)| *o = x / p.scale_factor);
        if s.projection.is_empty() {
            s.latent.copy_from_slice(&s.scaled);
        } else {
            for (lat, x) in s.latent.chunks_exact_mut(l).zip(s.scaled.chunks_exact(n)) {
                for (c, o) in lat.iter_mut().enumerate() {
                    *o = (0..n).map(|j| x[j] * s.projection[j * l + c]).sum();
                }
            }
        }
        let last = p.alphas.len() - 1;
        let t = (s.progress.generation as usize).saturating_sub(1);
        let (at, atm1) = (p.alphas[t.min(last)], p.alphas[(t + 1).min(last)]);
        let (sa, noise) = (at.sqrt(), (1.0 - at).sqrt());
        // x̂₀_i = Σ_j w_j g_ij x_j / max(Σ_j w_j g_ij, 1e-8), g_ij = exp(−‖l_i − √α_t l_j‖² / 2(1 − α_t)):
        // the squared distances from one Gram product, ‖l_i‖² − 2√α_t l_i·l_j + α_t ‖l_j‖², and
        // the weighted sums as a second product K X.
        for (q, li) in s.sq.iter_mut().zip(s.latent.chunks_exact(l)) {
            *q = li.iter().map(|v| v * v).sum();
        }
        let lat = MatRef::from_row_major_slice(&s.latent, lam, l);
        let gram = MatMut::from_row_major_slice_mut(&mut s.kern, lam, lam);
        matmul(gram, Accum::Replace, lat, lat.transpose(), 1.0, Par::Seq);
        kestrel_core::simd::dispatch(KernelRows {
            kern: &mut s.kern,
            inv_totals: &mut s.sq_total,
            weights: &s.weights,
            sq: &s.sq,
            sa,
            at,
            scale: -0.5 / (noise * noise),
        });
        let k = MatRef::from_row_major_slice(&s.kern, lam, lam);
        let x = MatRef::from_row_major_slice(&s.scaled, lam, n);
        let x0 = MatMut::from_row_major_slice_mut(&mut s.x0, lam, n);
        matmul(x0, Accum::Replace, k, x, 1.0, Par::Seq);
        for (row, r) in s.x0.chunks_exact_mut(n).zip(&s.sq_total) {
            row.iter_mut().for_each(|v| *v *= r);
        }
        let std_t = p.std_m * ((1.0 - atm1) / (1.0 - at) * (1.0 - at / atm1)).sqrt();
        let keep = (1.0 - atm1 - std_t * std_t).max(0.0).sqrt();
        for (((row, x), x0), z) in population
            .chunks_exact_mut(n)
            .zip(s.scaled.chunks_exact(n))
            .zip(s.x0.chunks_exact(n))
            .zip(s.z.chunks_exact(n))
        {
            for j in 0..n {
                let eps = (x[j] - sa * x0[j]) / noise;
                let next = atm1.sqrt() * x0[j] + keep * eps + std_t * z[j];
                row[j] = to_row(p.scale_factor * next);
            }
        }
    }
}

/// The kernel rows `K_ij = w_j g_ij` from the Gram matrix in `kern` (in place), and each
/// row's `1 / max(Σ_j K_ij, 1e-8)`, compiled for the CPU's widest vectors (the λ² exponentials
/// are most of a generation).
struct KernelRows<'a> {
    kern: &'a mut [f64],
    inv_totals: &'a mut [f64],
    weights: &'a [f64],
    sq: &'a [f64],
    sa: f64,
    at: f64,
    scale: f64,
}

impl kestrel_core::simd::WithSimd for KernelRows<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: kestrel_core::simd::Simd>(self, _simd: Sd) {
        let KernelRows { kern, inv_totals, weights, sq, sa, at, scale } = self;
        let lam = weights.len();
        for ((krow, sqi), inv) in kern.chunks_exact_mut(lam).zip(sq).zip(inv_totals.iter_mut()) {
            // f32's exponential (evosax's precision), branch-free so the row vectorises; below
            // e^−87 (f32's range) a pair weighs 0, as float32's underflow gives evosax.
            for ((k, &w), sqj) in krow.iter_mut().zip(weights).zip(sq) {
                let arg = (scale * (sqi - 2.0 * sa * *k + at * sqj).max(0.0)) as f32;
                let live = if arg >= -87.0 { w } else { 0.0 };
                *k = live * exp_f32(arg) as f64;
            }
            *inv = 1.0 / krow.iter().sum::<f64>().max(1e-8);
        }
    }
}

impl Strategy for DiffusionEvolution {
    type Params = DiffusionParams;
    type State = DiffusionState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> DiffusionParams {
        DiffusionParams {
            sigma: 1.0,
            alphas: AlphaSchedule::Cosine.alphas(128),
            std_m: 1.0,
            scale_factor: 1.0,
            temperature: 1.0,
        }
    }

    fn init(&self, key: Key, _params: &DiffusionParams, mean: &[f32]) -> DiffusionState {
        let (lam, n, l) = (self.pop_size, self.num_dims, self.width());
        assert_eq!(mean.len(), n, "DiffusionEvolution::init: mean must have num_dims values");
        // evosax: normal(key, (n, l)) / √n.
        let mut projection = vec![0.0; if self.latent_dims.is_some() { n * l } else { 0 }];
        fill_normal_f32(key, &mut projection);
        projection.iter_mut().for_each(|v| *v /= (n as f64).sqrt());
        DiffusionState {
            population: vec![0.0; lam * n],
            fitness: vec![f64::INFINITY; lam],
            projection,
            z: vec![0.0; lam * n],
            progress: Progress::new(n),
            start: mean.to_vec(),
            scaled: vec![0.0; lam * n],
            latent: vec![0.0; lam * l],
            weights: vec![0.0; lam],
            x0: vec![0.0; lam * n],
            sq: vec![0.0; lam],
            sq_total: vec![0.0; lam],
            kern: vec![0.0; lam * lam],
        }
    }

    fn ask(&self, key: Key, s: &mut DiffusionState, p: &DiffusionParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut s.z);
        if s.progress.generation == 0 {
            check_lens("DiffusionEvolution::ask", self.pop_size, self.num_dims, population, None);
            return first_population(&s.start, p.sigma, &s.z, population);
        }
        self.step(s, p, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut DiffusionState,
        p: &DiffusionParams,
    ) -> TellMetrics {
        check_lens(
            "DiffusionEvolution::tell",
            self.pop_size,
            self.num_dims,
            population,
            Some(fitness),
        );
        let (best, bad) = s.progress.record(population, fitness);
        s.population.iter_mut().zip(population).for_each(|(o, &x)| *o = x as f64);
        for (o, &f) in s.fitness.iter_mut().zip(fitness) {
            *o = if f.is_finite() { f as f64 } else { f64::INFINITY };
        }
        s.progress.metrics(best, bad, p.sigma)
    }

    fn mean(&self, state: &DiffusionState) -> Vec<f32> {
        best_or_start(&state.progress, &state.start)
    }
    fn progress<'a>(&self, state: &'a DiffusionState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(DiffusionState {
    vec population, vec fitness, vec projection, vec z
});
