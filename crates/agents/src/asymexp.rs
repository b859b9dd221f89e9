//! ALLO as `exp_alcl/allo.py` of `tarod13/asymexp` computes it (reference §1.6b, §1.7), the
//! file the project's seed analyses: the run profile `asymexp`, beside the paper's
//! ([`crate::allo`]). Two versions of the file are followed (`../shared/data/allo-asymexp-golden`):
//! the thresholded one the seed quotes (tree `4deb141`) and the final one (`ba956b1`), whose
//! updates are identical when the threshold is off (the default); they differ in the ground
//! truth ([`crate::laplacian::empirical`]) and the map format (`kestrel_envs::asymexp`).
//!
//! Per step, with `φ = enc(s)`, `φ′ = enc(s′)` (a pair of the first batch), `φ₂ = enc(u)` (the
//! second batch's first states), `B` rows each, `sg` stop-gradient, `tril` the lower triangle
//! with the diagonal and `m` the threshold's row mask (all ones unless `threshold` is set):
//!
//! ```text
//! E₁ = tril(φᵀ sg(φ)/B − I),  E₂ = tril(φ₂ᵀ sg(φ₂)/B − I)
//! graph   = Σ_i ½ mean_b (m_i (φ_i − φ′_i))² + p_i           (p: graph perturbation, p₀ = 0)
//! dual    = Σ sg(β) ⊙ m E₁  −  Σ β ⊙ m sg(a E₁ + a_I I)      (I: the error integral)
//! Q       = 2 m E₁ ⊙ sg(E₂)
//! barrier = sg(b) ΣQ − b sg(|ΣQ|)
//! loss    = graph + dual + barrier
//! ```
//!
//! The optimisers follow the reference's optax chain: Adam on the encoder; plain SGD (the same
//! learning rate) on `β` and `b`, which ascend because their terms carry the minus sign
//! (`β += lr m (a E₁ + a_I I)`, `b += lr |ΣQ|`), then `b` is clipped to `[0, max_barrier]`
//! (0.5 = its start, so by default it stays there) and `I ← decay I + E₁` (the unmasked E₁).
//! `φ₂` only enters under `sg`, so it receives no gradient. The encoder runs once per step
//! over the distinct states of the three batches (the seed's §2 asks for one pass; tabular
//! inputs repeat, so the distinct rows are fewer still) and the row gradients are summed
//! onto them.

pub use crate::distinct::DistinctRows;
use crate::error::AgentError;
use kestrel_core::simd::Real;
use kestrel_core::{FromInvalid, Key};
pub use kestrel_envs::asymexp::{AsymexpMap, VersionKind};
use kestrel_nn::{Activation, Adam, Init, MlpConfig, Sequential, Trainee};
use kestrel_replay::{RowReplay, RowRuleKind};

/// The optional graph perturbation (`perturbation_type`; config spelling as the reference's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PerturbationKind {
    /// None (the default).
    #[default]
    None,
    /// `ε clip(exp(−var/s) − δ, 0, 1)`.
    Exponential,
    /// `ε clip(mean((|c − 1| + δ)² − δ²), 0, 1)` over the centred features `c`.
    Squared,
    /// `ε clip(mean((c − 1)²), 0, 1)`.
    SquaredNullGrad,
}

/// Hyper-parameters, by the script's `Args` names where it has them.
/// [`AsymexpConfig::reference`] (the [`Default`], with the thresholded version) is the
/// script's `Args` defaults.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields, default)]
pub struct AsymexpConfig {
    /// Which version's rules: `thresholded` (tree 4deb141, the one the seed quotes) or `final`
    /// (ba956b1): the ground truth, the map parser and whether `threshold` exists.
    pub version: VersionKind,
    /// Components learned (`num_eigenvectors`).
    pub num_eigenvectors: usize,
    /// Hidden widths (ReLU): `hidden_dim` repeated `num_hidden_layers + 1` times.
    pub hidden: Vec<usize>,
    /// Rows in each of the two batches.
    pub batch_size: usize,
    /// Adam's learning rate for the encoder, SGD's for the duals and the barrier.
    pub lr: f64,
    /// The sampling discount (`geometric_gamma`, final: `gamma`).
    pub discount: f64,
    /// Initial duals (`duals_initial_val`).
    pub duals_init: f64,
    /// Initial duals on the diagonal only (`init_dual_diag`); else the whole lower triangle.
    pub init_dual_diag: bool,
    /// Initial barrier coefficient.
    pub barrier_init: f64,
    /// Largest barrier (`max_barrier_coefs`).
    pub max_barrier: f64,
    /// Weight `a` of `E₁` in the duals' step (`step_size_duals`).
    pub step_size_duals: f64,
    /// Weight `a_I` of the error integral in the duals' step (`step_size_duals_I`).
    pub step_size_duals_i: f64,
    /// Decay of the error integral (`integral_decay`).
    pub integral_decay: f64,
    /// Graph perturbation.
    pub perturbation: PerturbationKind,
    /// `ε` of the perturbation (`graph_epsilon`).
    pub graph_epsilon: f64,
    /// `s` of the perturbation (`graph_variance_scale`); `δ = exp(−1/s)`.
    pub graph_variance_scale: f64,
    /// Turn rows off above this cumulative error (`turn_off_above_threshold` with
    /// `cum_error_threshold`; thresholded version only). `None`: off, the default.
    pub threshold: Option<f64>,
    /// Run the encoder once over the distinct states of a step (else once over all `3 B` rows).
    pub dedup: bool,
}

impl Default for AsymexpConfig {
    fn default() -> Self {
        AsymexpConfig::reference(VersionKind::Thresholded)
    }
}

impl AsymexpConfig {
    /// The script's defaults: d 10, encoder 2-256-256-256-256-10 (Flax's init), batch 256,
    /// lr 3e-4, discount 0.2, duals −2 on the lower triangle, barrier 0.5 (max 0.5), `a` 1,
    /// `a_I` 0, decay 0.99, no perturbation (ε 0.01, s 0.1), threshold off.
    pub fn reference(version: VersionKind) -> Self {
        AsymexpConfig {
            version,
            num_eigenvectors: 10,
            hidden: vec![256; 4],
            batch_size: 256,
            lr: 3e-4,
            discount: 0.2,
            duals_init: -2.0,
            init_dual_diag: false,
            barrier_init: 0.5,
            max_barrier: 0.5,
            step_size_duals: 1.0,
            step_size_duals_i: 0.0,
            integral_decay: 0.99,
            perturbation: PerturbationKind::None,
            graph_epsilon: 0.01,
            graph_variance_scale: 0.1,
            threshold: None,
            dedup: true,
        }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), AgentError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AgentError::invalid(field, value, accepted))
        };
        if self.num_eigenvectors == 0 || self.num_eigenvectors > 64 {
            return bad("num_eigenvectors", self.num_eigenvectors.to_string(), "1 to 64");
        }
        if self.hidden.contains(&0) || self.hidden.len() > 16 {
            return bad("hidden", format!("{:?}", self.hidden), "up to 16 positive widths");
        }
        if self.hidden.iter().any(|&h| h > 8192) {
            return bad("hidden", format!("{:?}", self.hidden), "widths of at most 8192");
        }
        if self.batch_size == 0 || self.batch_size > 1 << 20 {
            return bad("batch_size", self.batch_size.to_string(), "1 to 1,048,576");
        }
        for (f, v) in [
            ("lr", self.lr),
            ("barrier_init", self.barrier_init),
            ("max_barrier", self.max_barrier),
            ("graph_epsilon", self.graph_epsilon),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, v.to_string(), "finite and >= 0");
            }
        }
        for (f, v) in [
            ("duals_init", self.duals_init),
            ("step_size_duals", self.step_size_duals),
            ("step_size_duals_i", self.step_size_duals_i),
        ] {
            if !v.is_finite() {
                return bad(f, v.to_string(), "finite");
            }
        }
        for (f, v) in [("discount", self.discount), ("integral_decay", self.integral_decay)] {
            if !(0.0..=1.0).contains(&v) {
                return bad(f, v.to_string(), "in [0, 1]");
            }
        }
        if !(self.graph_variance_scale.is_finite() && self.graph_variance_scale > 0.0) {
            return bad(
                "graph_variance_scale",
                self.graph_variance_scale.to_string(),
                "finite and > 0",
            );
        }
        if let Some(t) = self.threshold {
            if self.version == VersionKind::Final {
                return bad(
                    "threshold",
                    t.to_string(),
                    "absent with version = final (the final file has no threshold)",
                );
            }
            if !(t.is_finite() && t > 0.0) {
                return bad("threshold", t.to_string(), "finite and > 0");
            }
        }
        Ok(())
    }
}

/// The duals, barrier and error integral (the reference's non-encoder parameters), in the
/// encoder's precision as the reference keeps them.
#[derive(Clone, Debug, PartialEq)]
pub struct Multipliers<T> {
    /// Duals β, `d × d` row-major.
    pub duals: Vec<T>,
    /// Barrier coefficient b.
    pub barrier: T,
    /// Error integral I, `d × d`.
    pub integral: Vec<T>,
}

impl<T: Real> Multipliers<T> {
    /// The reference's initial values.
    pub fn new(cfg: &AsymexpConfig) -> Self {
        let d = cfg.num_eigenvectors;
        let duals = (0..d * d)
            .map(|i| {
                let (j, k) = (i / d, i % d);
                let on = if cfg.init_dual_diag { j == k } else { k <= j };
                // `duals_initial_val * mask`: the masked-out entries are (−2)·0 = −0.
                T::from_f64(cfg.duals_init * if on { 1.0 } else { 0.0 })
            })
            .collect();
        Multipliers {
            duals,
            barrier: T::from_f64(cfg.barrier_init),
            integral: vec![T::ZERO; d * d],
        }
    }
}

/// Every named quantity of one loss evaluation (the reference's locals and `aux`), in f64.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Terms {
    /// The loss (`allo`).
    pub allo: f64,
    /// `graph_loss` (with the perturbation).
    pub graph_loss: f64,
    /// Per-component graph terms `½ mean (m_i (φ_i − φ′_i))²`.
    pub graph_losses: Vec<f64>,
    /// Per-component perturbation (`graph_perturbation`, component 0 is 0).
    pub graph_perturbation: Vec<f64>,
    /// `dual_loss_pos`.
    pub dual_loss_pos: f64,
    /// `dual_loss_neg`.
    pub dual_loss_neg: f64,
    /// `barrier_loss_pos`.
    pub barrier_loss_pos: f64,
    /// `barrier_loss_neg`.
    pub barrier_loss_neg: f64,
    /// `quadratic_error` = ΣQ.
    pub quadratic_error: f64,
    /// `E₁`, `d × d`.
    pub error_matrix_1: Vec<f64>,
    /// `E₂`, `d × d`.
    pub error_matrix_2: Vec<f64>,
    /// The threshold's row mask `m` (`cum_error_matrix_1_below_threshold`).
    pub mask: Vec<f64>,
    /// `−½ Σ diag β` (`approx_eigenvalue_sum`).
    pub eigenvalue_sum: f64,
    /// `Σ |diag E₁|`.
    pub total_norm_error: f64,
    /// `Σ |E₁|`.
    pub total_error: f64,
    /// `Σ |E₁[:, :2]|`.
    pub total_two_component_error: f64,
    /// `Σ E₁²`.
    pub distance_to_constraint_manifold: f64,
    /// `Σ_i mean φ_i²`.
    pub distance_to_origin: f64,
}

/// The gradients of [`loss_and_grad`] (`φ₂` has none: it only enters under `sg`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grads<T> {
    /// `∂/∂φ`, `B × d`.
    pub phi: Vec<T>,
    /// `∂/∂φ′`, `B × d`.
    pub next_phi: Vec<T>,
    /// `∂/∂β`, `d × d`.
    pub duals: Vec<f64>,
    /// `∂/∂b`.
    pub barrier: f64,
}

/// The threshold's row mask: row 0 is on; row `i` is on iff every entry of every earlier
/// row of `E₁` (upper zeros and diagonal included) is below `threshold` in magnitude.
pub fn threshold_mask(e1: &[f64], d: usize, threshold: Option<f64>, mask: &mut Vec<f64>) {
    mask.clear();
    mask.resize(d, 1.0);
    let Some(t) = threshold else { return };
    let mut on = true;
    for i in 1..d {
        on = on && e1[(i - 1) * d..i * d].iter().all(|v| v.abs() < t);
        mask[i] = if on { 1.0 } else { 0.0 };
    }
}

/// Buffers [`loss_and_grad`] reuses from step to step.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    g: Vec<f64>,
    dphi: Vec<f64>,
    h: Vec<f64>,
}

/// Zeroed to `n` entries, keeping the buffer.
fn zeroed(v: &mut Vec<f64>, n: usize) {
    v.clear();
    v.resize(n, 0.0);
}

/// The loss, its named terms (into `t`) and its gradients for `[φ, φ′, φ₂]` = `[enc(s),
/// enc(s′), enc(u)]` (`B × d` each, row-major) under `mult`. Sums in f64; every buffer is
/// reused, so a step allocates nothing once they have grown.
pub fn loss_and_grad<T: Real>(
    cfg: &AsymexpConfig,
    mult: &Multipliers<T>,
    [phi, next_phi, phi_2]: [&[T]; 3],
    grads: &mut Grads<T>,
    t: &mut Terms,
    scratch: &mut Scratch,
) {
    let d = cfg.num_eigenvectors;
    let n = phi.len() / d;
    let nf = n as f64;
    let f = |v: &[T], r: usize, i: usize| v[r * d + i].to_f64();
    let beta = |i: usize| mult.duals[i].to_f64();
    let integral = |i: usize| mult.integral[i].to_f64();
    let b = mult.barrier.to_f64();
    // Inner products and error matrices.
    let gram = |u: &[T], a: &mut Vec<f64>| {
        zeroed(a, d * d);
        for r in 0..n {
            for j in 0..d {
                let x = f(u, r, j);
                for k in 0..=j {
                    a[j * d + k] += x * f(u, r, k);
                }
            }
        }
        for j in 0..d {
            for k in 0..=j {
                a[j * d + k] = a[j * d + k] / nf - if j == k { 1.0 } else { 0.0 };
            }
        }
    };
    gram(phi, &mut t.error_matrix_1);
    gram(phi_2, &mut t.error_matrix_2);
    threshold_mask(&t.error_matrix_1, d, cfg.threshold, &mut t.mask);
    let (e1, e2, mask) = (&t.error_matrix_1, &t.error_matrix_2, &t.mask);
    let (mut dual_pos, mut dual_neg) = (0.0, 0.0);
    // Dual, barrier and the E₁ gradient G (∂loss/∂E₁ on the lower triangle).
    let (a, ai) = (cfg.step_size_duals, cfg.step_size_duals_i);
    let Scratch { g, dphi, h } = scratch;
    zeroed(g, d * d);
    grads.duals.clear();
    grads.duals.resize(d * d, 0.0);
    let mut q_sum = 0.0;
    for j in 0..d {
        for k in 0..d {
            let i = j * d + k;
            let m = mask[j];
            dual_pos += beta(i) * m * e1[i];
            let target = a * e1[i] + ai * integral(i);
            dual_neg -= beta(i) * m * target;
            grads.duals[i] = -m * target;
            q_sum += 2.0 * m * e1[i] * e2[i];
            if k <= j {
                g[i] = m * (beta(i) + 2.0 * b * e2[i]);
            }
        }
    }
    t.dual_loss_pos = dual_pos;
    t.dual_loss_neg = dual_neg;
    t.quadratic_error = q_sum;
    t.barrier_loss_pos = b * q_sum;
    t.barrier_loss_neg = -b * q_sum.abs();
    grads.barrier = -q_sum.abs();
    // Graph terms: ½ mean (m_i (φ_i − φ′_i))².
    grads.phi.clear();
    grads.phi.resize(n * d, T::ZERO);
    grads.next_phi.clear();
    grads.next_phi.resize(n * d, T::ZERO);
    zeroed(dphi, n * d);
    zeroed(&mut t.graph_losses, d);
    for r in 0..n {
        for i in 0..d {
            let diff = t.mask[i] * (f(phi, r, i) - f(next_phi, r, i));
            t.graph_losses[i] += 0.5 * diff * diff / nf;
            let gi = t.mask[i] * diff / nf;
            dphi[r * d + i] += gi;
            grads.next_phi[r * d + i] = T::from_f64(-gi);
        }
    }
    // The perturbation, over the centred features of φ.
    zeroed(&mut t.graph_perturbation, d);
    if cfg.perturbation != PerturbationKind::None {
        let (eps, s) = (cfg.graph_epsilon, cfg.graph_variance_scale);
        let delta = (-1.0 / s).exp();
        zeroed(h, n);
        for i in 1..d {
            let mean = (0..n).map(|r| f(phi, r, i)).sum::<f64>() / nf;
            let c = |r: usize| f(phi, r, i) - mean;
            // The clipped quantity and its derivative in each centred feature.
            let inner = match cfg.perturbation {
                PerturbationKind::SquaredNullGrad => {
                    (0..n).for_each(|r| h[r] = 2.0 * (c(r) - 1.0) / nf);
                    (0..n).map(|r| (c(r) - 1.0).powi(2)).sum::<f64>() / nf
                }
                PerturbationKind::Squared => {
                    let mut acc = 0.0;
                    for (r, hr) in h.iter_mut().enumerate() {
                        let x = c(r) - 1.0;
                        let u = x.abs() + delta;
                        acc += u * u - delta * delta;
                        *hr = 2.0 * u * sign(x) / nf;
                    }
                    acc / nf
                }
                PerturbationKind::Exponential => {
                    let var = (0..n).map(|r| c(r).powi(2)).sum::<f64>() / nf;
                    let ex = (-var / s).exp();
                    (0..n).for_each(|r| h[r] = -ex / s * 2.0 * c(r) / nf);
                    ex - delta
                }
                PerturbationKind::None => unreachable!("checked above"),
            };
            t.graph_perturbation[i] = eps * inner.clamp(0.0, 1.0);
            if inner > 0.0 && inner < 1.0 {
                // Through the centring: ∂/∂φ_r = h_r − mean h.
                let hm = h.iter().sum::<f64>() / nf;
                for r in 0..n {
                    dphi[r * d + i] += eps * (h[r] - hm);
                }
            }
        }
    }
    t.graph_loss = t.graph_losses.iter().sum::<f64>() + t.graph_perturbation.iter().sum::<f64>();
    // ∂/∂φ_r,j += Σ_{k ≤ j} G_jk φ_r,k / B (only the first factor of E₁ carries gradient).
    for r in 0..n {
        for j in 0..d {
            let mut acc = 0.0;
            for k in 0..=j {
                acc += g[j * d + k] * f(phi, r, k);
            }
            dphi[r * d + j] += acc / nf;
        }
    }
    for (o, v) in grads.phi.iter_mut().zip(dphi.iter()) {
        *o = T::from_f64(*v);
    }
    t.allo =
        t.graph_loss + t.dual_loss_pos + t.barrier_loss_pos + t.dual_loss_neg + t.barrier_loss_neg;
    t.eigenvalue_sum = -0.5 * (0..d).map(|i| beta(i * d + i)).sum::<f64>();
    let e1 = &t.error_matrix_1;
    t.total_norm_error = (0..d).map(|i| e1[i * d + i].abs()).sum();
    t.total_error = e1.iter().map(|v| v.abs()).sum();
    t.total_two_component_error = (0..d)
        .flat_map(|j| (0..d.min(2)).map(move |k| (j, k)))
        .map(|(j, k)| e1[j * d + k].abs())
        .sum();
    t.distance_to_constraint_manifold = e1.iter().map(|v| v * v).sum();
    t.distance_to_origin =
        (0..d).map(|i| (0..n).map(|r| f(phi, r, i).powi(2)).sum::<f64>() / nf).sum();
}

/// `jnp.sign`: −1, 0 or 1.
fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// The step on the multipliers after the encoder's: SGD on `β` and `b` (`p + (−lr g)`, as
/// optax), `b` clipped to `[0, max_barrier]`, then `I ← decay I + E₁`.
pub fn update_multipliers<T: Real>(
    cfg: &AsymexpConfig,
    mult: &mut Multipliers<T>,
    grads: &Grads<T>,
    error_matrix_1: &[f64],
) {
    let lr = T::from_f64(cfg.lr);
    for (p, g) in mult.duals.iter_mut().zip(&grads.duals) {
        *p += -(lr * T::from_f64(*g));
    }
    let b = mult.barrier + -(lr * T::from_f64(grads.barrier));
    mult.barrier = clamp(b, T::ZERO, T::from_f64(cfg.max_barrier));
    let decay = T::from_f64(cfg.integral_decay);
    for (p, e) in mult.integral.iter_mut().zip(error_matrix_1) {
        *p = decay * *p + T::from_f64(*e);
    }
}

fn clamp<T: Real>(v: T, lo: T, hi: T) -> T {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// What one step reports: the loss's terms (on the parameters before the step, as the
/// reference logs them) and the global gradient norm (encoder, duals and barrier).
#[derive(Clone, Debug, PartialEq)]
pub struct AsymexpStep {
    /// The loss and its terms.
    pub terms: Terms,
    /// `‖∇‖` over every parameter.
    pub grad_norm: f64,
    /// Distinct states the encoder ran on.
    pub encoder_rows: usize,
}

/// An `asymexp` ALLO learner over a fixed table of state coordinates (`S × 2`).
pub struct Asymexp<T: Real> {
    cfg: AsymexpConfig,
    coords: Vec<T>,
    net: Sequential<T>,
    /// Encoder parameters, gradient, Adam state, workspace.
    pub trainee: Trainee<T>,
    adam: Adam,
    /// Duals, barrier, error integral.
    pub mult: Multipliers<T>,
    /// Steps taken.
    pub steps: u64,
    rows: DistinctRows,
    idx: Vec<u32>,
    x: Vec<T>,
    phi: Vec<T>,
    dphi: Vec<T>,
    drows: Vec<T>,
    grads: Grads<T>,
    scratch: Scratch,
    last: AsymexpStep,
}

impl<T: Real> Asymexp<T> {
    /// The encoder `2 → hidden… → d` with ReLU and Flax's initialisation.
    pub fn encoder(cfg: &AsymexpConfig) -> Result<Sequential<T>, AgentError> {
        let mut sizes = vec![2];
        sizes.extend(&cfg.hidden);
        sizes.push(cfg.num_eigenvectors);
        Ok(Sequential::mlp(&MlpConfig {
            sizes,
            hidden: Activation::Relu,
            output: Activation::Identity,
            init: Init::LecunNormal,
        })?)
    }

    /// A learner with a fresh encoder from `key` over `coords` (`S × 2`, the network's input
    /// for each state).
    pub fn new(cfg: AsymexpConfig, coords: Vec<T>, key: Key) -> Result<Self, AgentError> {
        cfg.validate()?;
        let net = Self::encoder(&cfg)?;
        let trainee = Trainee::new(&net, key);
        Self::with_trainee(cfg, coords, net, trainee)
    }

    /// The same with given encoder parameters (the layout of `Sequential`: each layer's
    /// `in × out` kernel, then its bias, as Flax's `Dense_k`).
    pub fn with_params(
        cfg: AsymexpConfig,
        coords: Vec<T>,
        params: Vec<T>,
    ) -> Result<Self, AgentError> {
        cfg.validate()?;
        let net = Self::encoder(&cfg)?;
        if params.len() != net.num_params() {
            return Err(AgentError::invalid(
                "encoder parameters",
                params.len(),
                format!("{} for this encoder", net.num_params()),
            ));
        }
        let trainee = Trainee::from_params(&net, params);
        Self::with_trainee(cfg, coords, net, trainee)
    }

    fn with_trainee(
        cfg: AsymexpConfig,
        coords: Vec<T>,
        net: Sequential<T>,
        trainee: Trainee<T>,
    ) -> Result<Self, AgentError> {
        if coords.is_empty() || !coords.len().is_multiple_of(2) {
            return Err(AgentError::invalid("coords", coords.len(), "2 values per state"));
        }
        let n = coords.len() / 2;
        Ok(Asymexp {
            adam: Adam::new(cfg.lr),
            mult: Multipliers::new(&cfg),
            steps: 0,
            rows: DistinctRows::new(n),
            idx: Vec::new(),
            x: Vec::new(),
            phi: Vec::new(),
            dphi: Vec::new(),
            drows: Vec::new(),
            grads: Grads::default(),
            scratch: Scratch::default(),
            last: AsymexpStep { terms: Terms::default(), grad_norm: f64::NAN, encoder_rows: 0 },
            cfg,
            coords,
            net,
            trainee,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AsymexpConfig {
        &self.cfg
    }

    /// The encoder.
    pub fn net(&self) -> &Sequential<T> {
        &self.net
    }

    /// States.
    pub fn num_states(&self) -> usize {
        self.coords.len() / 2
    }

    /// What the last step reported: the loss's terms (on the parameters before it), the
    /// global gradient norm and the encoder's rows.
    pub fn last_step(&self) -> &AsymexpStep {
        &self.last
    }

    /// The last step's gradients of the loss in `φ`, `φ′`, the duals and the barrier (the
    /// encoder's, summed onto its parameters, are `trainee.grads`).
    pub fn grads(&self) -> &Grads<T> {
        &self.grads
    }

    /// One update on the states `obs`, `next_obs` (a pair batch) and `obs_2` (the second
    /// batch's first states), `B` each: the loss on the current parameters, Adam on the
    /// encoder, SGD on the duals and barrier, the integral; what it reports is
    /// [`Asymexp::last_step`]. A non-finite loss or gradient is an error and changes nothing.
    /// Once its buffers have grown a step allocates nothing.
    pub fn step_on(
        &mut self,
        obs: &[u32],
        next_obs: &[u32],
        obs_2: &[u32],
    ) -> Result<(), AgentError> {
        let (b, d) = (self.cfg.batch_size, self.cfg.num_eigenvectors);
        let n = self.num_states() as u32;
        if obs.len() != b || next_obs.len() != b || obs_2.len() != b {
            return Err(AgentError::invalid(
                "batch",
                format!("{}, {} and {} states", obs.len(), next_obs.len(), obs_2.len()),
                format!("batch_size = {b} each"),
            ));
        }
        if let Some(&s) = obs.iter().chain(next_obs).chain(obs_2).find(|&&s| s >= n) {
            return Err(AgentError::invalid("state", s, format!("below the {n} states")));
        }
        self.idx.clear();
        self.idx.extend_from_slice(obs);
        self.idx.extend_from_slice(next_obs);
        self.idx.extend_from_slice(obs_2);
        self.rows.index(&self.idx, self.cfg.dedup);
        let m = self.rows.uniq.len();
        self.x.resize(2 * m, T::ZERO);
        for (j, &s) in self.rows.uniq.iter().enumerate() {
            let s = s as usize;
            self.x[2 * j..2 * j + 2].copy_from_slice(&self.coords[2 * s..2 * s + 2]);
        }
        let out = self.net.forward(&self.trainee.params, &self.x, &mut self.trainee.ws);
        self.phi.resize(3 * b * d, T::ZERO);
        self.rows.gather(out, d, &mut self.phi);
        let (phi, rest) = self.phi.split_at(b * d);
        let (next_phi, phi_2) = rest.split_at(b * d);
        let terms = &mut self.last.terms;
        loss_and_grad(
            &self.cfg,
            &self.mult,
            [phi, next_phi, phi_2],
            &mut self.grads,
            terms,
            &mut self.scratch,
        );
        if !terms.allo.is_finite() {
            return Err(AgentError::NonFinite { what: "loss", value: terms.allo });
        }
        self.dphi.clear();
        self.dphi.extend_from_slice(&self.grads.phi);
        self.dphi.extend_from_slice(&self.grads.next_phi);
        self.dphi.resize(3 * b * d, T::ZERO);
        self.rows.scatter(&self.dphi, d, &mut self.drows);
        let t = &mut self.trainee;
        t.grads.iter_mut().for_each(|g| *g = T::ZERO);
        self.net.backward(&t.params, &mut t.ws, &self.drows, &mut t.grads, None);
        let extra =
            self.grads.duals.iter().map(|g| g * g).sum::<f64>() + self.grads.barrier.powi(2);
        let enc = self.adam.step(&mut t.opt, &mut t.params, &t.grads)?;
        let grad_norm = (enc * enc + extra).sqrt();
        update_multipliers(&self.cfg, &mut self.mult, &self.grads, &terms.error_matrix_1);
        self.steps += 1;
        self.last.grad_norm = grad_norm;
        self.last.encoder_rows = m;
        Ok(())
    }

    /// The encoder's output for every state (`S × d`, row-major, f64).
    pub fn representation(&self) -> Vec<f64> {
        let n = self.num_states();
        let mut ws = self.net.workspace(n);
        self.net
            .forward(&self.trainee.params, &self.coords, &mut ws)
            .iter()
            .map(|v| v.to_f64())
            .collect()
    }

    /// Eigenvalue estimates `−½ β_ii` (the sign of the logged `approx_eigenvalue_sum`; the
    /// reference's plots use other read-outs, see [`eigenvalue_readouts`]).
    pub fn eigenvalue_estimates(&self) -> Vec<f64> {
        let d = self.cfg.num_eigenvectors;
        (0..d).map(|i| -0.5 * self.mult.duals[i * d + i].to_f64()).collect()
    }

    /// Writes a checkpoint set into `dir` (`encoder.safetensors`, `asymexp_state.safetensors`:
    /// duals and integral, barrier and step count in its metadata).
    pub fn save_checkpoint(
        &self,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(), AgentError> {
        kestrel_nn::write_checkpoint_set(dir, stamp, self.steps, |tmp| -> Result<(), AgentError> {
            self.net.save_trainee(&tmp.join("encoder.safetensors"), &self.trainee, &[])?;
            crate::distinct::write_state(
                &tmp.join("asymexp_state.safetensors"),
                self.cfg.num_eigenvectors,
                [("duals", &self.mult.duals[..]), ("integral", &self.mult.integral[..])],
                self.mult.barrier.to_f64(),
                self.steps,
            )?;
            Ok(())
        })
    }

    /// A learner resumed from [`Asymexp::save_checkpoint`]'s folder (shapes checked).
    pub fn load_checkpoint(
        cfg: AsymexpConfig,
        coords: Vec<T>,
        dir: &std::path::Path,
    ) -> Result<Self, AgentError> {
        let mut a = Asymexp::new(cfg, coords, Key::new(0))?;
        let (t, _) = a.net.load_trainee(&dir.join("encoder.safetensors"))?;
        a.trainee = t;
        let (barrier, steps) = crate::distinct::read_state(
            &dir.join("asymexp_state.safetensors"),
            a.cfg.num_eigenvectors,
            [("duals", &mut a.mult.duals), ("integral", &mut a.mult.integral)],
        )?;
        a.mult.barrier = T::from_f64(barrier);
        a.steps = steps;
        Ok(a)
    }
}

/// The three dual-to-eigenvalue read-outs the reference uses (its README's oddity 8): the
/// logged `−½ β_ii`, the final version's plot `+½ β_ii`, and the thresholded version's plot
/// `(γ + ½β)/(γ(1 + ½β))` with `½β` clipped at −0.99 (γ the discount).
pub fn eigenvalue_readouts(diag: &[f64], gamma: f64) -> [Vec<f64>; 3] {
    let logged = diag.iter().map(|b| -0.5 * b).collect();
    let plot_final = diag.iter().map(|b| 0.5 * b).collect();
    let plot_thr = diag
        .iter()
        .map(|b| {
            let h = (0.5 * b).max(-0.99);
            (gamma + h) / (gamma * (1.0 + h))
        })
        .collect();
    [logged, plot_final, plot_thr]
}

/// Where collection's random choices come from: Kestrel's keys in a run ([`KeyDraws`]), a
/// recorded table in the golden tests (the reference draws with JAX's threefry).
pub trait CollectDraws {
    /// Environment `env`'s first state (canonical).
    fn initial(&mut self, env: usize) -> u32;
    /// The action of `env` at `step` (0 up, 1 right, 2 down, 3 left).
    fn action(&mut self, step: usize, env: usize) -> u8;
    /// The state `env` resets to after finishing an episode at `step` (canonical).
    fn reset(&mut self, step: usize, env: usize) -> u32;
}

/// Uniform actions and resets (the map's `S`, else uniform over its valid starts), each from
/// `key.fold_in(step).fold_in(env)`: the same data on any thread count.
pub struct KeyDraws<'m> {
    key: Key,
    map: &'m AsymexpMap,
}

impl<'m> KeyDraws<'m> {
    /// Draws for `map` from `key`.
    pub fn new(map: &'m AsymexpMap, key: Key) -> Self {
        KeyDraws { key, map }
    }

    fn start(&self, k: Key) -> u32 {
        self.map.start_state().unwrap_or_else(|| {
            let v = &self.map.valid_starts;
            v[k.rng().below(v.len() as u32) as usize]
        })
    }
}

impl CollectDraws for KeyDraws<'_> {
    fn initial(&mut self, env: usize) -> u32 {
        self.start(self.key.fold_in(u64::MAX).fold_in(env as u64))
    }
    fn action(&mut self, step: usize, env: usize) -> u8 {
        self.key.fold_in(step as u64).fold_in(env as u64).rng().below(4) as u8
    }
    fn reset(&mut self, step: usize, env: usize) -> u32 {
        self.start(self.key.fold_in(step as u64).fold_in(env as u64).fold_in(1))
    }
}

/// What collection produced: the rows (one per environment) and the count of every
/// `(state, action)` taken (the dynamics are deterministic, so this is the reference's
/// `[S, A, S]` count tensor without its zeros).
#[derive(Clone, Debug)]
pub struct Collected {
    /// The replay rows.
    pub replay: RowReplay,
    /// `counts[4 s + a]`, canonical states.
    pub counts: Vec<u64>,
    /// Environment steps taken.
    pub transitions: u64,
}

/// `collect_transition_counts_and_episodes` (`src/data_collection.py`): `num_envs`
/// environments step `num_steps` times together; an episode ends at the goal or after
/// `max_episode_length` steps and the environment resets. Each environment writes one row:
/// slot 0 its first state, then each step's reached state; a step that ends an episode flags
/// the slots of the state before it and of the reached state as terminal and skips a slot,
/// which the next step fills with the reset state. The row keeps slots up to the last
/// written one, each environment's in turn.
///
/// When the step right after a reset ends an episode too (a reset next to the goal, or
/// `max_episode_length = 1`), the skipped slot is never written: the reference leaves full
/// index 0 there and its conversion to canonical states drops it (flag and all) unless cell
/// (0, 0) is free, where it reads as that state. [`RowRuleKind::Reference`] rows do the same;
/// [`RowRuleKind::WithinEpisode`] rows write the reset state there, so the reset → goal move is a
/// real pair of its own one-step episode. A row left with fewer than two states is not stored,
/// as the reference's buffer skips it.
pub fn collect(
    map: &AsymexpMap,
    num_envs: usize,
    num_steps: usize,
    max_episode_length: usize,
    rule: RowRuleKind,
    draws: &mut impl CollectDraws,
) -> Result<Collected, AgentError> {
    if num_envs == 0 || num_steps == 0 || max_episode_length == 0 {
        return Err(AgentError::invalid(
            "collection",
            format!("{num_envs} envs × {num_steps} steps, episodes of {max_episode_length}"),
            "positive counts",
        ));
    }
    let n = map.num_states();
    let slots = 2 * num_steps + 1;
    let mut counts = vec![0u64; n * 4];
    // Each row holds about one state per step (two more per finished episode).
    let per_row = num_steps + 1 + 2 * (num_steps / max_episode_length);
    let mut replay = RowReplay::with_capacity(num_envs.saturating_mul(per_row.min(slots)));
    let mut obs = vec![0u32; slots];
    let mut term = vec![false; slots];
    let mut valid = vec![false; slots];
    let mut written = vec![false; slots];
    let (mut row_obs, mut row_term) = (Vec::with_capacity(slots), Vec::with_capacity(slots));
    // What an unwritten slot reads as: full index 0, if that cell is free.
    let zero = map.canonical_of(0);
    // Per environment: the envs' episodes are independent, so one row at a time in env order
    // equals the reference's lock-step scan (draws are addressed by (step, env)).
    for env in 0..num_envs {
        obs.iter_mut().for_each(|v| *v = 0);
        term.iter_mut().for_each(|v| *v = false);
        valid.iter_mut().for_each(|v| *v = false);
        written.iter_mut().for_each(|v| *v = false);
        let mut s = draws.initial(env);
        if s as usize >= n {
            return Err(AgentError::invalid("initial state", s, format!("below {n}")));
        }
        obs[0] = s;
        valid[0] = true;
        written[0] = true;
        let (mut w, mut last, mut t) = (1usize, 0usize, 0usize);
        for step in 0..num_steps {
            let a = draws.action(step, env);
            let next = map.next[s as usize * 4 + (a & 3) as usize];
            counts[s as usize * 4 + (a & 3) as usize] += 1;
            t += 1;
            let done = map.is_goal(next) || t >= max_episode_length;
            term[w - 1] = done;
            valid[w] = !done;
            obs[w] = next;
            written[w] = true;
            if !valid[w - 1] && (!done || rule == RowRuleKind::WithinEpisode) {
                // The first step after a reset writes the reset state into the skipped slot
                // (the reference: only when that step does not end the episode too).
                obs[w - 1] = s;
                valid[w - 1] = true;
                written[w - 1] = true;
            }
            if done {
                term[w] = true;
                last = w;
                w += 2;
            } else {
                last = w;
                w += 1;
            }
            s = if done {
                t = 0;
                let r = draws.reset(step, env);
                if r as usize >= n {
                    return Err(AgentError::invalid("reset state", r, format!("below {n}")));
                }
                r
            } else {
                next
            };
        }
        row_obs.clear();
        row_term.clear();
        for i in 0..=last {
            let state = if written[i] { Some(obs[i]) } else { zero };
            if let Some(state) = state {
                row_obs.push(state);
                row_term.push(term[i]);
            }
        }
        if row_obs.len() >= 2 {
            replay.add_row(&row_obs, &row_term)?;
        }
    }
    if replay.num_rows() == 0 {
        return Err(AgentError::invalid(
            "collection",
            format!("{num_envs} envs × {num_steps} steps"),
            "at least one row of two states",
        ));
    }
    Ok(Collected { replay, counts, transitions: (num_envs * num_steps) as u64 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Episodes of one step (`max_episode_length = 1`, or a reset beside the goal) never write
    /// the slot skipped for the reset: the reference's rows drop it (cell (0, 0) is a wall
    /// here), the within-episode rows hold the reset state there, so every pair is a real move.
    #[test]
    fn one_step_episodes_drop_or_fill_the_skipped_slot() {
        let map = AsymexpMap::parse("XXXXX\nXS GX\nXXXXX", "m", VersionKind::Thresholded).unwrap();
        let start = map.start_state().unwrap();
        for (rule, len) in [(RowRuleKind::Reference, 6), (RowRuleKind::WithinEpisode, 10)] {
            let mut draws = KeyDraws::new(&map, Key::new(3));
            let c = collect(&map, 1, 5, 1, rule, &mut draws).unwrap();
            let row = c.replay.row(0);
            assert_eq!(row.len(), len, "{rule:?}: {row:?}");
            assert_eq!(
                c.replay.terminal_positions(0).len(),
                len,
                "{rule:?}: every slot ends an episode"
            );
            if rule == RowRuleKind::WithinEpisode {
                for pair in row.chunks(2) {
                    assert_eq!(pair[0], start);
                    assert!(
                        map.next[start as usize * 4..start as usize * 4 + 4].contains(&pair[1])
                    );
                }
                // Every pair lies in its own episode: the sampler draws only first states.
                for u in [0.0, 0.3, 0.6, 0.99] {
                    let p = c.replay.pair(0, u, 0.5, 0.2, rule).unwrap();
                    assert_eq!((row[p.obs_idx as usize], p.horizon, p.offset), (start, 1, 1));
                }
            }
        }
        // A map whose only free cell is the goal has nowhere to reset: refused when parsed.
        let e = AsymexpMap::parse("XXX\nXGX\nXXX", "g.txt", VersionKind::Final)
            .unwrap_err()
            .to_string();
        assert!(e.contains("g.txt") && e.contains("start"), "{e}");
    }
}
