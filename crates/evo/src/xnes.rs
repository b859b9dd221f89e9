//! xNES: exponential natural evolution strategy with a full covariance factor.
//!
//! Paper: T. Glasmachers, T. Schaul, Y. Sun, D. Wierstra and J. Schmidhuber, "Exponential
//! Natural Evolution Strategies", GECCO 2010 (Algorithm 1). Reference: evosax 0.3.2 `xNES`
//! (`algorithms/distribution_based/xnes.py`) for defaults (utilities, learning rates). Kestrel
//! updates `B ← B expm(η_B/2 · G_B)` with the matrix exponential as the paper does.
//!
//! # evosax's bugs (`bugs = "all"` reproduces them; the golden test runs that profile)
//!
//! - `B` is multiplied by `exp(η_B/2 · G_B)` element-wise, which is not the natural-gradient
//!   step: `B`'s off-diagonal entries start at 0 and stay 0, so evosax's xNES is a separable
//!   search (one scale per coordinate) that never learns a rotation.
//! - `B` starts at `σ₀ I` while the samples are `m + σ B z`, so the first distribution's scale
//!   is `σ₀²`, not `σ₀` (0.25 for σ₀ = 0.5).

use crate::cma_es::{MEAN_BOUND, SIGMA_FLOOR};
use crate::eigen::EigenWork;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::shaping::rank_weights;
use crate::snes::{Snes, SnesParams};
use crate::strategy::{BugsKind, Progress, Strategy, TellMetrics, check_lens, to_f32, to_row};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, Par};
use kestrel_core::Key;

/// The largest eigenvalue, in absolute value, of one generation's shape step
/// `A = η_B / 2 (G_M − G_σ I)`: the shape changes by at most `e³ ≈ 20` along an axis per
/// generation. Samples of the distribution give `|A| ≲ 1`; a told row far outside it (a clipped
/// bound far from a small σ, say) gives `z = B⁻¹ (x − m) / σ` of any size, and `expm(A)`
/// overflowed to NaN within a dozen generations (`tests/conformance.rs`, bounds).
const SHAPE_STEP: f64 = 3.0;

/// xNES over `num_dims` with `pop_size` samples per generation.
#[derive(Clone, Debug)]
pub struct Xnes {
    pop_size: usize,
    num_dims: usize,
}

/// xNES hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct XnesParams {
    /// Initial step size.
    pub sigma_init: f64,
    /// Utilities by rank (as SNES).
    pub weights: Vec<f64>,
    /// Learning rate of the mean.
    pub lr_mean: f64,
    /// Learning rate of σ: `(9 + 3 ln n) / (5 n √n)`.
    pub lr_sigma: f64,
    /// Learning rate of `B` (same default as σ).
    pub lr_b: f64,
    /// `all`: evosax 0.3.2's update (see the module notes); `none` (default): the paper's.
    pub bugs: BugsKind,
}

/// xNES state: `x = mean + σ B z`, with `det B = 1` kept by the trace-free update.
#[derive(Clone, Debug)]
pub struct XnesState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Global step size.
    pub sigma: f64,
    /// Shape factor.
    pub b: Mat<f64>,
    /// Its inverse (updated alongside, used to recover `z` from a population).
    pub b_inv: Mat<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Mat<f64>,
    x: Mat<f64>,
    w: Vec<f64>,
    order: Vec<usize>,
    g: Mat<f64>,
    v: Mat<f64>,
    t1: Mat<f64>,
    t2: Mat<f64>,
    lambdas: Vec<f64>,
    gd: Vec<f64>,
    eig: EigenWork,
}

impl Xnes {
    /// xNES; `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(Xnes { pop_size, num_dims })
    }

    /// The population from given standard normals `z` (`pop_size × num_dims`, row-major):
    /// `x_i = mean + σ B z_i`. `ask` draws `z` from its key and calls this.
    pub fn ask_from_normals(&self, s: &mut XnesState, z: &[f64], population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Xnes::ask", lam, n, population, None);
        assert_eq!(z.len(), lam * n, "Xnes::ask_from_normals: pop_size × num_dims normals");
        for i in 0..lam {
            for j in 0..n {
                s.z[(i, j)] = z[i * n + j];
            }
        }
        self.fill(s, population);
    }

    fn fill(&self, s: &mut XnesState, population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        matmul(s.x.as_mut(), Accum::Replace, s.z.as_ref(), s.b.transpose(), 1.0, Par::Seq);
        for i in 0..lam {
            for j in 0..n {
                population[i * n + j] = to_row(s.mean[j] + s.sigma * s.x[(i, j)]);
            }
        }
    }

    /// evosax's shape step (`bugs = "all"`): `B ← B ∘ exp(A)` entry by entry, each exponent
    /// held at ±[`SHAPE_STEP`] as the matrix step's eigenvalues are, and `B⁻¹` from it (by
    /// entries while `B` is diagonal, as it stays from evosax's start; by an LU otherwise).
    fn elementwise_step(&self, s: &mut XnesState) {
        let n = self.num_dims;
        let mut diagonal = true;
        for j in 0..n {
            for i in 0..n {
                s.b[(i, j)] *= s.g[(i, j)].clamp(-SHAPE_STEP, SHAPE_STEP).exp();
                diagonal &= i == j || s.b[(i, j)] == 0.0;
            }
        }
        if diagonal {
            for j in 0..n {
                for i in 0..n {
                    s.b_inv[(i, j)] = if i == j { 1.0 / s.b[(i, i)] } else { 0.0 };
                }
            }
        } else {
            use faer::linalg::solvers::DenseSolveCore;
            let inv = s.b.partial_piv_lu().inverse();
            if inv.col_iter().all(|c| c.iter().all(|v| v.is_finite())) {
                s.b_inv.copy_from(&inv);
            }
        }
    }
}

impl Strategy for Xnes {
    type Params = XnesParams;
    type State = XnesState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> XnesParams {
        let SnesParams { weights, .. } = Strategy::default_params(
            &Snes::new(self.pop_size, self.num_dims).expect("sizes checked"),
        );
        let n = self.num_dims as f64;
        let lr = (9.0 + 3.0 * n.ln()) / (5.0 * n * n.sqrt());
        XnesParams {
            sigma_init: 1.0,
            weights,
            lr_mean: 1.0,
            lr_sigma: lr,
            lr_b: lr,
            bugs: BugsKind::None,
        }
    }

    fn init(&self, _key: Key, params: &XnesParams, mean: &[f32]) -> XnesState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "Xnes::init: mean must have num_dims values");
        // evosax's B starts at σ₀ I (its bug): the first samples' scale is σ₀².
        let b0 = if params.bugs == BugsKind::All { params.sigma_init } else { 1.0 };
        XnesState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: params.sigma_init,
            b: Mat::from_fn(n, n, |i, j| if i == j { b0 } else { 0.0 }),
            b_inv: Mat::from_fn(n, n, |i, j| if i == j { 1.0 / b0 } else { 0.0 }),
            progress: Progress::new(n),
            z: Mat::zeros(lam, n),
            x: Mat::zeros(lam, n),
            w: vec![0.0; lam],
            order: vec![0; lam],
            g: Mat::zeros(n, n),
            v: Mat::zeros(n, n),
            t1: Mat::zeros(n, n),
            t2: Mat::zeros(n, n),
            lambdas: vec![0.0; n],
            gd: vec![0.0; n],
            eig: EigenWork::new(n),
        }
    }

    fn ask(&self, key: Key, s: &mut XnesState, _params: &XnesParams, population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Xnes::ask", lam, n, population, None);
        let mut rng = key.rng();
        for i in 0..lam {
            for j in 0..n {
                s.z[(i, j)] = rng.normal_f64();
            }
        }
        self.fill(s, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut XnesState,
        p: &XnesParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Xnes::tell", lam, n, population, Some(fitness));
        let (best, bad) = s.progress.record(population, fitness);
        rank_weights(fitness, &p.weights, &mut s.order, &mut s.w);
        // z_i = B^{-1} (x_i - mean) / σ (so repaired populations are told faithfully).
        for i in 0..lam {
            for j in 0..n {
                s.x[(i, j)] = (population[i * n + j] as f64 - s.mean[j]) / s.sigma;
            }
        }
        matmul(s.z.as_mut(), Accum::Replace, s.x.as_ref(), s.b_inv.transpose(), 1.0, Par::Seq);
        // G_δ = Σ u_i z_i, G_M = Σ u_i (z_i z_iᵀ − I).
        for j in 0..n {
            s.gd[j] = (0..lam).map(|i| s.w[i] * s.z[(i, j)]).sum();
        }
        for i in 0..lam {
            for j in 0..n {
                s.x[(i, j)] = s.w[i] * s.z[(i, j)];
            }
        }
        matmul(s.g.as_mut(), Accum::Replace, s.z.transpose(), s.x.as_ref(), 1.0, Par::Seq);
        let usum: f64 = s.w.iter().sum();
        for j in 0..n {
            s.g[(j, j)] -= usum;
        }
        let g_sigma = (0..n).map(|j| s.g[(j, j)]).sum::<f64>() / n as f64;
        // mean += η_μ σ B G_δ.
        for i in 0..n {
            let step: f64 = (0..n).map(|k| s.b[(i, k)] * s.gd[k]).sum();
            s.mean[i] = (s.mean[i] + p.lr_mean * s.sigma * step).clamp(-MEAN_BOUND, MEAN_BOUND);
        }
        s.sigma =
            (s.sigma * (0.5 * p.lr_sigma * g_sigma).exp()).clamp(SIGMA_FLOOR, f32::MAX as f64);
        // A = η_B/2 (G_M − G_σ I) = V diag(λ) Vᵀ; B ← B expm(A), B⁻¹ ← expm(−A) B⁻¹.
        for j in 0..n {
            for i in 0..n {
                s.g[(i, j)] = 0.5 * p.lr_b * (s.g[(i, j)] - if i == j { g_sigma } else { 0.0 });
            }
        }
        let (g, v, l) = (&s.g, &mut s.v, &mut s.lambdas);
        if p.bugs == BugsKind::All {
            self.elementwise_step(s);
        } else if s.eig.eigh(g, v, l) {
            for (sign, target) in [(1.0, 0), (-1.0, 1)] {
                for j in 0..n {
                    // At most a factor e^SHAPE_STEP per generation along any axis (see the
                    // module notes: only rows far outside the distribution reach it).
                    let e = (sign * s.lambdas[j].clamp(-SHAPE_STEP, SHAPE_STEP)).exp();
                    for i in 0..n {
                        s.t1[(i, j)] = s.v[(i, j)] * e;
                    }
                }
                matmul(
                    s.t2.as_mut(),
                    Accum::Replace,
                    s.t1.as_ref(),
                    s.v.transpose(),
                    1.0,
                    Par::Seq,
                );
                // t2 = expm(±A); multiply into B (right) or B⁻¹ (left) via t1 as scratch.
                if target == 0 {
                    matmul(
                        s.t1.as_mut(),
                        Accum::Replace,
                        s.b.as_ref(),
                        s.t2.as_ref(),
                        1.0,
                        Par::Seq,
                    );
                    s.b.copy_from(&s.t1);
                } else {
                    matmul(
                        s.t1.as_mut(),
                        Accum::Replace,
                        s.t2.as_ref(),
                        s.b_inv.as_ref(),
                        1.0,
                        Par::Seq,
                    );
                    s.b_inv.copy_from(&s.t1);
                }
            }
        }
        s.progress.metrics(best, bad, s.sigma)
    }

    fn mean(&self, state: &XnesState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a XnesState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(XnesState { vec mean, scalar sigma, mat b, mat b_inv });
