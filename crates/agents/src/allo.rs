//! ALLO, the augmented Lagrangian Laplacian objective (Gomez, Bowling, Machado, "Proper
//! Laplacian Representation Learning", ICLR 2024), exactly as the paper code computes it
//! (reference §1.6a), and the GGDO baseline (`cqp.py`).
//!
//! Per step, with `φ` the encoder's output (`B × d`), `sg` stop-gradient and `tril` the lower
//! triangle with the diagonal:
//!
//! ```text
//! graph = Σ_i c_i mean_b (φ(s)_i − φ(s′)_i)²                (ALLO: c = 1; GGDO: c = d, d−1, …, 1)
//! A_n   = φ(u_n)ᵀ sg(φ(u_n)) / B,  E_n = tril(A_n − I)      (n = 1, 2: two independent batches)
//! E = ½(E₁ + E₂),  Q = E₁ ⊙ E₂
//! ALLO: loss = graph + Σ sg(β) ⊙ E + sg(b) Σ Q
//! GGDO: loss = graph + sg(b) d² Σ (C ⊙ F₁ ⊙ F₂) / Σ C,  F_n = A_n − I with gradients through
//!       both factors, C_jk = min(c_j, c_k)
//! ```
//!
//! After the Adam step on the encoder (ALLO only; GGDO keeps β = 0 and b fixed):
//! `E_ema ← E_ema + r_e (E − E_ema)`, `Q_ema ← Q_ema + r_q (Q − Q_ema)` (first update: the
//! values), `β ← tril(clip(β + lr_β E_ema, ±100))`, `b ← clip(b + lr_b mean(max(Q_ema, 0)),
//! 0, 10⁴)`.
//!
//! The gradient of the loss with respect to `φ` is written out (`∂/∂φ(u₁) = φ(u₁) G₁ᵀ / B`
//! with `G₁ = tril(½β + b E₂)`, and so on) and fed to the encoder's backward pass. With
//! tabular inputs the encoder runs once per step over the batch's distinct states and the
//! per-row gradients are summed onto them — the same gradient as four full passes over
//! `4 B` rows (tested), at a fraction of the work; `dedup: false` keeps the plain batched
//! path for inputs that do not repeat.

use crate::distinct::DistinctRows;
use crate::error::AgentError;
use kestrel_core::FromInvalid;
use kestrel_core::simd::Real;
use kestrel_core::{BatchEnv, Key, VecEnv};
use kestrel_envs::{GridMap, GridParams, GridWorld};
use kestrel_nn::{Activation, Adam, Init, MlpConfig, Sequential, Trainee};
use kestrel_replay::{EpisodicReplay, EpisodicRuleKind};
use std::sync::Arc;

/// ALLO or its baseline (config spelling `allo`, `ggdo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MethodKind {
    /// Augmented Lagrangian with duals and an increasing barrier.
    Allo,
    /// Generalized graph drawing objective with a fixed quadratic penalty.
    Ggdo,
}

/// Hyper-parameters. [`AlloConfig::paper`] (the [`Default`]) is the paper's 12-environment
/// setting, [`AlloConfig::ggdo`] its GGDO baseline. A run's config nests it whole
/// (`kestrel allo train`'s `[learner]`).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct AlloConfig {
    /// `allo` or `ggdo` (the method's defaults: barrier 0.5 rising by 0.01, or 2.0 fixed and
    /// no duals).
    pub method: MethodKind,
    /// Components learned.
    pub num_eigenvectors: usize,
    /// Hidden widths of the encoder (ReLU), input 2 (the normalised position).
    pub hidden: Vec<usize>,
    /// Rows in each of the four sub-batches.
    pub batch_size: usize,
    /// Adam learning rate of the encoder.
    pub lr: f64,
    /// Discount of the future-state offset.
    pub discount: f64,
    /// The episodic replay's sampling rules, `paper-code` or `asymexp` (its independent states
    /// exclude an episode's last).
    pub convention: EpisodicRuleKind,
    /// Initial barrier coefficient b.
    pub barrier_init: f64,
    /// Barrier increase rate.
    pub lr_barrier: f64,
    /// Largest barrier.
    pub max_barrier: f64,
    /// Dual step size.
    pub lr_duals: f64,
    /// Dual clip magnitude.
    pub max_dual: f64,
    /// EMA rate of the error matrix.
    pub error_update_rate: f64,
    /// EMA rate of the quadratic error matrix.
    pub q_error_update_rate: f64,
    /// Run the encoder once over the distinct states of a batch.
    pub dedup: bool,
}

impl Default for AlloConfig {
    fn default() -> Self {
        AlloConfig::paper()
    }
}

impl AlloConfig {
    /// The paper's 12-environment study (`exp2.sh`): d 11, encoder 2-256-256-256-11, batch
    /// 1024, Adam 1e-3, discount 0.9, b₀ 0.5, barrier rate 0.01, dual rate 1e-4, EMA rates
    /// 1 and 0.1.
    pub fn paper() -> Self {
        AlloConfig {
            method: MethodKind::Allo,
            num_eigenvectors: 11,
            hidden: vec![256, 256, 256],
            batch_size: 1024,
            lr: 1e-3,
            discount: 0.9,
            convention: EpisodicRuleKind::PaperCode,
            barrier_init: 0.5,
            lr_barrier: 0.01,
            max_barrier: 10_000.0,
            lr_duals: 1e-4,
            max_dual: 100.0,
            error_update_rate: 1.0,
            q_error_update_rate: 0.1,
            dedup: true,
        }
    }

    /// The paper's GGDO baseline: b = 2.0 fixed, no duals.
    pub fn ggdo() -> Self {
        AlloConfig { method: MethodKind::Ggdo, barrier_init: 2.0, lr_barrier: 0.0, ..Self::paper() }
    }

    /// Checks every field.
    pub fn validate(&self) -> Result<(), AgentError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AgentError::invalid(field, value, accepted))
        };
        if self.num_eigenvectors == 0 || self.num_eigenvectors > 64 {
            return bad("num_eigenvectors", self.num_eigenvectors.to_string(), "1 to 64");
        }
        if self.hidden.contains(&0) {
            return bad("hidden", format!("{:?}", self.hidden), "positive widths");
        }
        if self.batch_size == 0 {
            return bad("batch_size", "0".into(), "at least 1");
        }
        for (f, v) in [
            ("lr", self.lr),
            ("barrier_init", self.barrier_init),
            ("lr_barrier", self.lr_barrier),
            ("max_barrier", self.max_barrier),
            ("lr_duals", self.lr_duals),
            ("max_dual", self.max_dual),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(f, v.to_string(), "finite and >= 0");
            }
        }
        for (f, v) in [
            ("discount", self.discount),
            ("error_update_rate", self.error_update_rate),
            ("q_error_update_rate", self.q_error_update_rate),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(f, v.to_string(), "in [0, 1]");
            }
        }
        Ok(())
    }
}

/// Collects `episodes` uniform-random-policy episodes of `steps` moves on `map` with a
/// `VecEnv` of `envs` environments (uniform random start), storing `steps + 1` states per
/// episode as the paper code does (the state before every move, then the final state).
/// Reproducible from `seed` for a given `envs`.
pub fn collect(
    map: Arc<GridMap>,
    episodes: usize,
    steps: u32,
    envs: usize,
    seed: u64,
) -> Result<EpisodicReplay<u32>, AgentError> {
    if episodes == 0 || steps == 0 || envs == 0 {
        return Err(AgentError::invalid(
            "collection",
            format!("{episodes} episodes of {steps} steps on {envs} envs"),
            "positive counts",
        ));
    }
    let envs = envs.min(episodes);
    let params = GridParams { map: map.clone(), max_episode_steps: steps };
    let mut venv = VecEnv::new(GridWorld, params, envs, seed).map_err(|e| {
        AgentError::invalid("envs", format!("{envs} ({e})"), "a VecEnv size kestrel-core accepts")
    })?;
    let mut replay = EpisodicReplay::new(episodes * (steps as usize + 1))?;
    let mut open: Vec<Vec<u32>> = vec![Vec::with_capacity(steps as usize + 1); envs];
    let mut actions = vec![0u8; envs];
    let key = Key::new(seed).fold_in(0xa110);
    let mut t = 0u64;
    let mut before: Vec<u32> = Vec::with_capacity(envs);
    while replay.num_episodes() < episodes {
        before.clear();
        before.extend_from_slice(venv.states());
        for (i, a) in actions.iter_mut().enumerate() {
            *a = key.fold_in(t).fold_in(i as u64).rng().below(4) as u8;
        }
        venv.step(&actions);
        for i in 0..envs {
            open[i].push(before[i]);
            if venv.truncated()[i] || venv.terminated()[i] {
                open[i].push(map.next[before[i] as usize * 4 + actions[i] as usize]);
                if replay.num_episodes() < episodes {
                    replay.add_episode(&open[i])?;
                }
                open[i].clear();
            }
        }
        t += 1;
    }
    Ok(replay)
}

/// What one step reports.
#[derive(Clone, Debug, PartialEq)]
pub struct StepMetrics {
    /// Total loss.
    pub loss: f64,
    /// The graph (smoothness) term.
    pub graph: f64,
    /// Barrier coefficient after the step.
    pub barrier: f64,
    /// Distinct states the encoder ran on (`4 B` without dedup).
    pub encoder_rows: usize,
}

/// An ALLO (or GGDO) learner on one grid map.
pub struct Allo {
    cfg: AlloConfig,
    map: Arc<GridMap>,
    net: Sequential<f32>,
    /// Encoder parameters, gradient, Adam state, workspace.
    pub trainee: Trainee<f32>,
    adam: Adam,
    /// Duals β (`d × d`, lower triangular).
    pub duals: Vec<f64>,
    /// Barrier coefficient b.
    pub barrier: f64,
    e_ema: Vec<f64>,
    q_ema: Vec<f64>,
    /// Steps taken.
    pub steps: u64,
    // Per-step buffers (reused).
    idx: Vec<u32>,
    rows: DistinctRows,
    x: Vec<f32>,
    phi: Vec<f32>,
    dphi: Vec<f32>,
    drows: Vec<f32>,
}

impl Allo {
    /// A learner with a freshly initialised encoder (Haiku's truncated-normal init, as the
    /// paper code).
    pub fn new(cfg: AlloConfig, map: Arc<GridMap>, key: Key) -> Result<Self, AgentError> {
        cfg.validate()?;
        let mut sizes = vec![2];
        sizes.extend(&cfg.hidden);
        sizes.push(cfg.num_eigenvectors);
        let net = Sequential::mlp(&MlpConfig {
            sizes,
            hidden: Activation::Relu,
            output: Activation::Identity,
            init: Init::TruncatedNormal,
        })?;
        let trainee = Trainee::new(&net, key);
        let d = cfg.num_eigenvectors;
        let n = map.num_states();
        Ok(Allo {
            adam: Adam::new(cfg.lr),
            barrier: cfg.barrier_init,
            duals: vec![0.0; d * d],
            e_ema: vec![0.0; d * d],
            q_ema: vec![0.0; d * d],
            steps: 0,
            idx: Vec::new(),
            rows: DistinctRows::new(n),
            x: Vec::new(),
            phi: Vec::new(),
            dphi: Vec::new(),
            drows: Vec::new(),
            cfg,
            map,
            net,
            trainee,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &AlloConfig {
        &self.cfg
    }

    /// The encoder.
    pub fn net(&self) -> &Sequential<f32> {
        &self.net
    }

    /// The map.
    pub fn map(&self) -> &Arc<GridMap> {
        &self.map
    }

    /// One update: sample `(s, s′)`, `u₁`, `u₂` (`batch` each) from `replay` with `key`,
    /// compute the loss and its gradient, Adam on the encoder, then the dual and barrier
    /// rules. A non-finite loss or gradient is an error and changes nothing.
    pub fn step(
        &mut self,
        replay: &EpisodicReplay<u32>,
        key: Key,
    ) -> Result<StepMetrics, AgentError> {
        let b = self.cfg.batch_size;
        self.idx.resize(4 * b, 0);
        {
            let (s, rest) = self.idx.split_at_mut(b);
            let (sf, rest) = rest.split_at_mut(b);
            let (u1, u2) = rest.split_at_mut(b);
            replay.sample_pairs(key.fold_in(0), self.cfg.discount, s, sf)?;
            replay.sample_states(key.fold_in(1), self.cfg.convention, u1)?;
            replay.sample_states(key.fold_in(2), self.cfg.convention, u2)?;
        }
        self.step_on_indices()
    }

    /// [`Allo::step`] on given state indices: `idx` = `[s; s′; u₁; u₂]`, `batch` each.
    pub fn step_on(&mut self, idx: &[u32]) -> Result<StepMetrics, AgentError> {
        if idx.len() != 4 * self.cfg.batch_size
            || idx.iter().any(|&s| s as usize >= self.map.num_states())
        {
            return Err(AgentError::invalid(
                "indices",
                format!("{} indices", idx.len()),
                "4 × batch state indices of the map",
            ));
        }
        self.idx.clear();
        self.idx.extend_from_slice(idx);
        self.step_on_indices()
    }

    fn step_on_indices(&mut self) -> Result<StepMetrics, AgentError> {
        let (b, d) = (self.cfg.batch_size, self.cfg.num_eigenvectors);
        let rows = 4 * b;
        // Encoder inputs: distinct states (dedup) or every row.
        self.rows.index(&self.idx, self.cfg.dedup);
        let m = self.rows.uniq.len();
        self.x.resize(2 * m, 0.0);
        for (j, &s) in self.rows.uniq.iter().enumerate() {
            self.map.observe(s, &mut self.x[2 * j..2 * j + 2]);
        }
        let out = self.net.forward(&self.trainee.params, &self.x, &mut self.trainee.ws);
        // φ of every row.
        self.phi.resize(rows * d, 0.0);
        self.rows.gather(out, d, &mut self.phi);
        self.dphi.resize(rows * d, 0.0);
        let (loss, graph, e, q) =
            loss_and_grad(&self.cfg, &self.duals, self.barrier, &self.phi, &mut self.dphi);
        if !loss.is_finite() {
            return Err(AgentError::NonFinite { what: "loss", value: loss });
        }
        // Gradient onto the encoder's rows (summed over repeats when deduplicated).
        self.rows.scatter(&self.dphi, d, &mut self.drows);
        let t = &mut self.trainee;
        t.grads.iter_mut().for_each(|g| *g = 0.0);
        self.net.backward(&t.params, &mut t.ws, &self.drows, &mut t.grads, None);
        self.adam.step(&mut t.opt, &mut t.params, &t.grads)?;
        if self.cfg.method == MethodKind::Allo {
            self.update_duals_and_barrier(&e, &q);
        }
        self.steps += 1;
        Ok(StepMetrics { loss, graph, barrier: self.barrier, encoder_rows: m })
    }

    fn update_duals_and_barrier(&mut self, e: &[f64], q: &[f64]) {
        let d = self.cfg.num_eigenvectors;
        let (re, rq) = if self.steps == 0 {
            (1.0, 1.0)
        } else {
            (self.cfg.error_update_rate, self.cfg.q_error_update_rate)
        };
        for i in 0..d * d {
            self.e_ema[i] += re * (e[i] - self.e_ema[i]);
            self.q_ema[i] += rq * (q[i] - self.q_ema[i]);
        }
        let md = self.cfg.max_dual;
        for j in 0..d {
            for k in 0..d {
                let i = j * d + k;
                self.duals[i] = if k <= j {
                    (self.duals[i] + self.cfg.lr_duals * self.e_ema[i]).clamp(-md, md)
                } else {
                    0.0
                };
            }
        }
        let mean_q = self.q_ema.iter().map(|v| v.max(0.0)).sum::<f64>() / (d * d) as f64;
        self.barrier =
            (self.barrier + self.cfg.lr_barrier * mean_q).clamp(0.0, self.cfg.max_barrier);
    }

    /// Writes a checkpoint into `dir`: `encoder.safetensors` (parameters and Adam state) and
    /// `allo_state.safetensors` (duals and the two EMAs in f64; barrier and step count in its
    /// metadata), as one set stamped with the run's config (`kestrel_nn::write_checkpoint_set`).
    /// With the same data and keys, [`Allo::load_checkpoint`] continues exactly where this run
    /// was.
    pub fn save_checkpoint(
        &self,
        dir: &std::path::Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(), AgentError> {
        kestrel_nn::write_checkpoint_set(dir, stamp, self.steps, |tmp| -> Result<(), AgentError> {
            self.net.save_trainee(&tmp.join("encoder.safetensors"), &self.trainee, &[])?;
            crate::distinct::write_state(
                &tmp.join("allo_state.safetensors"),
                self.cfg.num_eigenvectors,
                [
                    ("duals", &self.duals[..]),
                    ("e_ema", &self.e_ema[..]),
                    ("q_ema", &self.q_ema[..]),
                ],
                self.barrier,
                self.steps,
            )?;
            Ok(())
        })
    }

    /// A learner resumed from [`Allo::save_checkpoint`]'s folder (the config and map must be
    /// the run's own; shapes are checked).
    pub fn load_checkpoint(
        cfg: AlloConfig,
        map: Arc<GridMap>,
        dir: &std::path::Path,
    ) -> Result<Self, AgentError> {
        let mut a = Allo::new(cfg, map, Key::new(0))?;
        let (t, _) = a.net.load_trainee(&dir.join("encoder.safetensors"))?;
        a.trainee = t;
        let (barrier, steps) = crate::distinct::read_state(
            &dir.join("allo_state.safetensors"),
            a.cfg.num_eigenvectors,
            [("duals", &mut a.duals), ("e_ema", &mut a.e_ema), ("q_ema", &mut a.q_ema)],
        )?;
        a.barrier = barrier;
        a.steps = steps;
        Ok(a)
    }

    /// The encoder's output for every state of the map (`states × d`, row-major, f64).
    pub fn representation(&self) -> Vec<f64> {
        let n = self.map.num_states();
        let mut x = vec![0.0f32; 2 * n];
        for s in 0..n {
            self.map.observe(s as u32, &mut x[2 * s..2 * s + 2]);
        }
        let mut ws = self.net.workspace(n);
        self.net.forward(&self.trainee.params, &x, &mut ws).iter().map(|&v| v as f64).collect()
    }

    /// Eigenvalue estimates of the SR-Laplacian (λ = the sampling discount γ) from the duals:
    /// at the equilibrium `β_ii = −4 λ_i(I − M)` for the coded graph term, and
    /// `I − SR = γ (I − M)` for untruncated geometric offsets, so `λ_i ≈ −γ β_ii / 4`
    /// (derived; episode ends truncate the offsets, so this is approximate).
    pub fn eigenvalue_estimates(&self) -> Vec<f64> {
        let d = self.cfg.num_eigenvectors;
        (0..d).map(|i| -self.cfg.discount * self.duals[i * d + i] / 4.0).collect()
    }
}

/// Loss, graph term, E and Q (row-major `d × d`) and `∂loss/∂φ` (with the stop-gradients of
/// the objective) for the rows `[s; s′; u₁; u₂]` (`batch` each). Sums in f64.
pub fn loss_and_grad<T: Real>(
    cfg: &AlloConfig,
    duals: &[f64],
    barrier: f64,
    phi: &[T],
    dphi: &mut [T],
) -> (f64, f64, Vec<f64>, Vec<f64>) {
    let (b, d) = (cfg.batch_size, cfg.num_eigenvectors);
    let bf = b as f64;
    let coef: Vec<f64> = match cfg.method {
        MethodKind::Allo => vec![1.0; d],
        MethodKind::Ggdo => (0..d).map(|i| (d - i) as f64).collect(),
    };
    let block = |k: usize| &phi[k * b * d..(k + 1) * b * d];
    let (s, sf, u1, u2) = (block(0), block(1), block(2), block(3));
    // Graph term and its gradient.
    let mut graph = 0.0;
    for r in 0..b {
        for i in 0..d {
            let diff = s[r * d + i].to_f64() - sf[r * d + i].to_f64();
            graph += coef[i] * diff * diff / bf;
            let g = T::from_f64(2.0 * coef[i] * diff / bf);
            dphi[r * d + i] = g;
            dphi[(b + r) * d + i] = -g;
        }
    }
    // Inner-product matrices A_n = uᵀu / B (f64).
    let gram = |u: &[T]| {
        let mut a = vec![0.0f64; d * d];
        for r in 0..b {
            let row = &u[r * d..(r + 1) * d];
            for j in 0..d {
                let x = row[j].to_f64();
                for k in 0..d {
                    a[j * d + k] += x * row[k].to_f64();
                }
            }
        }
        a.iter_mut().for_each(|v| *v /= bf);
        a
    };
    let (a1, a2) = (gram(u1), gram(u2));
    let eye = |j: usize, k: usize| if j == k { 1.0 } else { 0.0 };
    let mut e = vec![0.0; d * d];
    let mut q = vec![0.0; d * d];
    let (mut g1, mut g2) = (vec![0.0f64; d * d], vec![0.0f64; d * d]);
    let mut penalty = 0.0;
    match cfg.method {
        MethodKind::Allo => {
            for j in 0..d {
                for k in 0..=j {
                    let i = j * d + k;
                    let (e1, e2) = (a1[i] - eye(j, k), a2[i] - eye(j, k));
                    e[i] = 0.5 * (e1 + e2);
                    q[i] = e1 * e2;
                    penalty += duals[i] * e[i] + barrier * q[i];
                    g1[i] = 0.5 * duals[i] + barrier * e2;
                    g2[i] = 0.5 * duals[i] + barrier * e1;
                }
            }
        }
        MethodKind::Ggdo => {
            let csum: f64 = (0..d * d).map(|i| coef[i / d].min(coef[i % d])).sum();
            let scale = barrier * (d * d) as f64 / csum;
            for j in 0..d {
                for k in 0..d {
                    let i = j * d + k;
                    let w = scale * coef[j].min(coef[k]);
                    let (f1, f2) = (a1[i] - eye(j, k), a2[i] - eye(j, k));
                    e[i] = 0.5 * (f1 + f2);
                    q[i] = f1 * f2;
                    penalty += w * q[i];
                    // Both factors of A_n carry the gradient: ∂/∂u = 2 u (W ⊙ F_other) / B,
                    // expressed below as u Gᵀ / B with G = 2 W ⊙ F_other (symmetric).
                    g1[i] = 2.0 * w * f2;
                    g2[i] = 2.0 * w * f1;
                }
            }
        }
    }
    // ∂/∂u_n[r, j] = Σ_k G_n[j, k] u_n[r, k] / B.
    for (blk, (u, g)) in [(2usize, (u1, &g1)), (3, (u2, &g2))] {
        for r in 0..b {
            let row = &u[r * d..(r + 1) * d];
            for j in 0..d {
                let mut acc = 0.0f64;
                for k in 0..d {
                    acc += g[j * d + k] * row[k].to_f64();
                }
                dphi[(blk * b + r) * d + j] = T::from_f64(acc / bf);
            }
        }
    }
    (graph + penalty, graph, e, q)
}

/// The loss alone in f64 with the stop-gradients explicit: ALLO's inner products are
/// `φᵀ φ̄ / B` with `φ̄ = phi_sg` held constant (GGDO has none and ignores `phi_sg`). Its
/// gradient with respect to `phi` at `phi_sg = phi` is what [`loss_and_grad`] returns; the
/// finite-difference tests use it.
pub fn loss_with_stop_gradient(
    cfg: &AlloConfig,
    duals: &[f64],
    barrier: f64,
    phi: &[f64],
    phi_sg: &[f64],
) -> f64 {
    let (b, d) = (cfg.batch_size, cfg.num_eigenvectors);
    let bf = b as f64;
    let coef: Vec<f64> = match cfg.method {
        MethodKind::Allo => vec![1.0; d],
        MethodKind::Ggdo => (0..d).map(|i| (d - i) as f64).collect(),
    };
    let at = |v: &[f64], blk: usize, r: usize, i: usize| v[(blk * b + r) * d + i];
    let mut graph = 0.0;
    for r in 0..b {
        for i in 0..d {
            graph += coef[i] * (at(phi, 0, r, i) - at(phi, 1, r, i)).powi(2) / bf;
        }
    }
    let second = if cfg.method == MethodKind::Allo { phi_sg } else { phi };
    let a = |blk: usize, j: usize, k: usize| {
        (0..b).map(|r| at(phi, blk, r, j) * at(second, blk, r, k)).sum::<f64>() / bf
    };
    let eye = |j: usize, k: usize| if j == k { 1.0 } else { 0.0 };
    let mut pen = 0.0;
    match cfg.method {
        MethodKind::Allo => {
            for j in 0..d {
                for k in 0..=j {
                    let (e1, e2) = (a(2, j, k) - eye(j, k), a(3, j, k) - eye(j, k));
                    pen += duals[j * d + k] * 0.5 * (e1 + e2) + barrier * e1 * e2;
                }
            }
        }
        MethodKind::Ggdo => {
            let csum: f64 = (0..d * d).map(|i| coef[i / d].min(coef[i % d])).sum();
            for j in 0..d {
                for k in 0..d {
                    let w = barrier * (d * d) as f64 * coef[j].min(coef[k]) / csum;
                    pen += w * (a(2, j, k) - eye(j, k)) * (a(3, j, k) - eye(j, k));
                }
            }
        }
    }
    graph + pen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learner(d: usize) -> Allo {
        let map = Arc::new(GridMap::builtin("open-3").unwrap());
        Allo::new(AlloConfig { num_eigenvectors: d, ..AlloConfig::paper() }, map, Key::new(0))
            .unwrap()
    }

    /// The dual and barrier rules of the paper code: the first step takes E and Q as they
    /// are (the EMAs start there), later steps move them by their rates; the duals ascend on
    /// the lower triangle only and are clamped to ±`max_dual`; the barrier ascends on the
    /// mean positive part of Q and stays in `[0, max_barrier]`.
    #[test]
    fn duals_and_barrier_follow_the_paper_codes_rules() {
        let d = 2;
        let mut a = learner(d);
        let c = a.cfg.clone();
        let (e, q) = ([0.5, -2.0, 1.0, 0.25], [1.0, -3.0, 0.0, 2.0]);
        let b0 = a.barrier;
        a.update_duals_and_barrier(&e, &q);
        assert_eq!((a.e_ema.as_slice(), a.q_ema.as_slice()), (&e[..], &q[..]));
        let lr = c.lr_duals;
        let want =
            [lr * 0.5, 0.0, lr * 1.0, lr * 0.25].map(|v: f64| v.clamp(-c.max_dual, c.max_dual));
        assert_eq!(a.duals, want, "upper triangle zero");
        let mean_q = (1.0 + 0.0 + 0.0 + 2.0) / 4.0;
        let b1 = (b0 + c.lr_barrier * mean_q).clamp(0.0, c.max_barrier);
        assert!((a.barrier - b1).abs() < 1e-15, "{} vs {b1}", a.barrier);
        // A later step moves the EMAs by their rates.
        a.steps = 1;
        a.update_duals_and_barrier(&[0.0; 4], &[0.0; 4]);
        let ema = e[0] + c.error_update_rate * (0.0 - e[0]);
        assert!((a.e_ema[0] - ema).abs() < 1e-15);
        // Huge errors saturate at the clamps.
        a.update_duals_and_barrier(&[1e12; 4], &[1e12; 4]);
        assert!(a.duals.iter().all(|v| v.abs() <= c.max_dual) && a.barrier <= c.max_barrier);
        assert_eq!(a.eigenvalue_estimates()[0], -c.discount * a.duals[0] / 4.0);
    }

    /// Collection refuses empty counts by name, and every stored episode has `steps + 1`
    /// states, each a move (or a stay against a wall) from the one before.
    #[test]
    fn collection_counts_are_checked_and_episodes_are_walks() {
        let map = Arc::new(GridMap::builtin("rooms-2-3").unwrap());
        let e = collect(map.clone(), 0, 5, 4, 0).unwrap_err().to_string();
        assert!(e.contains("collection") && e.contains("0 episodes"), "{e}");
        let r = collect(map.clone(), 6, 5, 4, 1).unwrap();
        assert_eq!((r.num_episodes(), r.len()), (6, 36));
        for ep in 0..r.num_episodes() {
            let s = r.episode(ep);
            for w in s.windows(2) {
                let moves = &map.next[w[0] as usize * 4..w[0] as usize * 4 + 4];
                assert!(moves.contains(&w[1]), "{} -> {} is not one move", w[0], w[1]);
            }
        }
    }
}
