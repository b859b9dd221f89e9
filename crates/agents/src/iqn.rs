//! Implicit quantile network agent: sorrel 1.6.0's `iRainbowModel` as it is actually
//! implemented (reference §2.2), with the options it only claims implemented for real.
//!
//! Network ([`IqnNet`]), for a stacked state `x` and `N` fractions `τ ~ U(0, 1)`:
//!
//! ```text
//! h   = relu(Dense(in → L)(x))                     head, torch-uniform init
//! c   = relu(Dense(64 → L)(cos(τ · π · [1..64])))  cosine embedding of τ
//! f   = relu(Noisy(L → L)(h ⊙ c))                  per τ
//! Z   = V(f) + A(f) − mean_a A(f)                  Noisy(L → 1), Noisy(L → A): dueling
//! Q   = mean over the N fractions
//! ```
//!
//! Noisy layers have independent Gaussian noise, fresh for every training pass, none when
//! acting (sorrel's eval mode). A gradient step ([`IqnLearner::train_step`]): sample a batch,
//! pick `a* = argmax Q_local(s′)` (double DQN; `Q_target` when off), target quantiles
//! `R + γᵐ Z_target(s′, a*)` (zero bootstrap where the episode terminated; a truncated
//! episode bootstraps), quantile Huber loss with κ = 1 averaged over batch × N × N, global
//! gradient-norm clipping at 1, Adam (2.5e-4), then the soft update
//! `θ⁻ ← τ θ + (1 − τ) θ⁻` (τ = 0.001) after every step; [`IqnLearner::start_epoch`] copies
//! `θ` to `θ⁻` every 200 epochs and [`IqnLearner::end_epoch`] decays ε by `(1 − 0.0005)`.
//! n-step returns and prioritised replay are options of the replay buffer
//! ([`kestrel_replay::FrameReplay`]), off by default as in sorrel's behaviour.

use crate::error::AgentError;
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::simd::Real;
use kestrel_nn::matmul::{Op, matmul};
use kestrel_nn::{Adam, AdamState, Dense, Init, Layer, NoisyDense, Simd, WithSimd, quantile_huber};
use kestrel_replay::{FrameBatch, FrameReplay, FrameReplayConfig, Prioritized};

/// Every setting of an IQN agent (defaults: sorrel's treasure-hunt example). A run's config
/// nests it whole (`kestrel hunt train`'s `[agent]`).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct IqnConfig {
    /// Floats per observation frame (a run sets it from its world's observation).
    pub frame_dim: usize,
    /// Frames per stacked state (5).
    pub num_frames: usize,
    /// Discrete actions (4).
    pub actions: usize,
    /// Hidden width (250).
    pub layer: usize,
    /// Cosine basis functions (64).
    pub num_cosines: usize,
    /// τ samples per state, for the prediction and for the target (12).
    pub num_quantiles: usize,
    /// Noisy layers' initial σ (0.017).
    pub sigma0: f64,
    /// Parameter noise in training passes (on).
    pub noisy: bool,
    /// Adam learning rate (2.5e-4).
    pub lr: f64,
    /// Global gradient-norm clip (1).
    pub max_grad_norm: f64,
    /// Soft target update rate after every step (0.001).
    pub tau: f64,
    /// Discount (0.99).
    pub gamma: f64,
    /// Huber threshold κ (1).
    pub kappa: f64,
    /// Transitions per gradient step (64).
    pub batch_size: usize,
    /// Replay frames per buffer (1024).
    pub capacity: usize,
    /// Hard copy to the target network every this many epochs (200; 0: never).
    pub sync_epochs: u64,
    /// Initial ε (0.6).
    pub epsilon: f64,
    /// ε ← ε (1 − decay) after every epoch (0.0005).
    pub epsilon_decay: f64,
    /// Floor of ε (0: none, as sorrel).
    pub epsilon_min: f64,
    /// Double DQN: choose `a*` with the local network (on).
    pub double: bool,
    /// Rewards per target (1; sorrel stores `n_step = 3` but never uses it).
    pub n_step: usize,
    /// Prioritised replay (off; sorrel's docstring claims it, its sampling is uniform):
    /// `false`, `true` (α 0.6, β 0.4), or `{ alpha = A, beta = B, eps = E }`.
    #[serde(with = "prioritized_key")]
    pub prioritized: Option<Prioritized>,
}

/// `prioritized` as a config spells it: `false` (off), `true` (the defaults, α 0.6, β 0.4), or
/// the settings as a table; written as `false`, `true` for the defaults, else the table.
mod prioritized_key {
    use kestrel_replay::Prioritized;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged, expecting = "prioritized: false, true, or { alpha = A, beta = B, eps = E }")]
    enum Key {
        On(bool),
        Settings {
            alpha: f64,
            beta: f64,
            #[serde(default = "eps")]
            eps: f64,
        },
    }

    fn eps() -> f64 {
        Prioritized::default().eps
    }

    pub fn serialize<S: Serializer>(p: &Option<Prioritized>, s: S) -> Result<S::Ok, S::Error> {
        match p {
            None => Key::On(false),
            Some(p) if *p == Prioritized::default() => Key::On(true),
            Some(p) => Key::Settings { alpha: p.alpha, beta: p.beta, eps: p.eps },
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Prioritized>, D::Error> {
        Ok(match Key::deserialize(d)? {
            Key::On(false) => None,
            Key::On(true) => Some(Prioritized::default()),
            Key::Settings { alpha, beta, eps } => Some(Prioritized { alpha, beta, eps }),
        })
    }
}

impl IqnConfig {
    /// sorrel's treasure-hunt settings for frames of `frame_dim` floats and `actions` actions.
    pub fn sorrel(frame_dim: usize, actions: usize) -> Self {
        IqnConfig {
            frame_dim,
            num_frames: 5,
            actions,
            layer: 250,
            num_cosines: 64,
            num_quantiles: 12,
            sigma0: 0.017,
            noisy: true,
            lr: 2.5e-4,
            max_grad_norm: 1.0,
            tau: 0.001,
            gamma: 0.99,
            kappa: 1.0,
            batch_size: 64,
            capacity: 1024,
            sync_epochs: 200,
            epsilon: 0.6,
            epsilon_decay: 0.0005,
            epsilon_min: 0.0,
            double: true,
            n_step: 1,
            prioritized: None,
        }
    }

    /// Floats per stacked state.
    pub fn state_dim(&self) -> usize {
        self.frame_dim * self.num_frames
    }

    /// The matrix products of one training step, `(m, k, n, op_a, op_b)` with `C[m×n] =
    /// op(A)[m×k] op(B)[k×n]`: three forward passes (online for the current and next states,
    /// target for the next: head `B` rows, then `B·N` rows through the cosine embedding, the
    /// hidden layer and the advantage and value heads) and one backward pass (no input
    /// gradient for the head). The floor a fused implementation could reach is their time.
    pub fn update_gemm_shapes(&self) -> Vec<(usize, usize, usize, Op, Op)> {
        let (b, i, l, c, a) =
            (self.batch_size, self.state_dim(), self.layer, self.num_cosines, self.actions);
        let r = b * self.num_quantiles;
        let mut v = Vec::with_capacity(23);
        for _ in 0..3 {
            v.extend([
                (b, i, l, Op::N, Op::N),
                (r, c, l, Op::N, Op::N),
                (r, l, l, Op::N, Op::N),
                (r, l, a, Op::N, Op::N),
                (r, l, 1, Op::N, Op::N),
            ]);
        }
        v.extend([
            (l, r, a, Op::T, Op::N),
            (r, a, l, Op::N, Op::T),
            (l, r, 1, Op::T, Op::N),
            (r, 1, l, Op::N, Op::T),
            (l, r, l, Op::T, Op::N),
            (r, l, l, Op::N, Op::T),
            (c, r, l, Op::T, Op::N),
            (i, b, l, Op::T, Op::N),
        ]);
        v
    }

    /// Floating-point operations of one training step's matrix products
    /// ([`IqnConfig::update_gemm_shapes`], 2 per multiply-add).
    pub fn update_flops(&self) -> f64 {
        self.update_gemm_shapes().iter().map(|&(m, k, n, _, _)| 2.0 * (m * k * n) as f64).sum()
    }

    /// Checks every setting; errors name the field and value.
    pub fn validate(&self) -> Result<(), AgentError> {
        // The replay buffer's own rules (its capacity against the frames and returns).
        self.replay().validate()?;
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(AgentError::invalid(field, value, accepted))
        };
        for (field, v) in [
            ("frame_dim", self.frame_dim),
            ("num_frames", self.num_frames),
            ("layer", self.layer),
            ("num_cosines", self.num_cosines),
            ("num_quantiles", self.num_quantiles),
            ("batch_size", self.batch_size),
            ("n_step", self.n_step),
        ] {
            if v == 0 {
                return bad(field, "0".into(), "at least 1");
            }
        }
        if self.actions < 2 {
            return bad("actions", self.actions.to_string(), "at least 2");
        }
        let unit = |v: f64| v.is_finite() && (0.0..=1.0).contains(&v);
        for (field, v) in [
            ("tau", self.tau),
            ("gamma", self.gamma),
            ("epsilon", self.epsilon),
            ("epsilon_decay", self.epsilon_decay),
            ("epsilon_min", self.epsilon_min),
        ] {
            if !unit(v) {
                return bad(field, v.to_string(), "in [0, 1]");
            }
        }
        for (field, v) in [("lr", self.lr), ("sigma0", self.sigma0)] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(field, v.to_string(), "finite and >= 0");
            }
        }
        for (field, v) in [("max_grad_norm", self.max_grad_norm), ("kappa", self.kappa)] {
            if !(v.is_finite() && v > 0.0) {
                return bad(field, v.to_string(), "finite and > 0");
            }
        }
        Ok(())
    }

    /// The replay buffer these settings ask for.
    pub fn replay(&self) -> FrameReplayConfig {
        FrameReplayConfig {
            capacity: self.capacity,
            frame_dim: self.frame_dim,
            num_frames: self.num_frames,
            n_step: self.n_step,
            gamma: self.gamma,
            prioritized: self.prioritized.clone(),
        }
    }
}

/// The IQN network's shape (parameters live in a flat vector outside it).
#[derive(Clone, Debug)]
pub struct IqnNet {
    /// Stacked-state width.
    pub input: usize,
    /// Hidden width.
    pub layer: usize,
    /// Cosine basis functions.
    pub num_cosines: usize,
    /// Actions.
    pub actions: usize,
    head: Dense,
    cos: Dense,
    ff: NoisyDense,
    adv: NoisyDense,
    val: NoisyDense,
    offsets: [usize; 6],
}

/// Buffers of one forward/backward pass, reused between calls. `taus` and the noise are
/// inputs: [`IqnWork::draw`] fills them from a key, tests set them directly.
#[derive(Clone, Debug, Default)]
pub struct IqnWork<T> {
    /// States in the last pass.
    pub batch: usize,
    /// τ samples per state.
    pub num_taus: usize,
    /// `batch × num_taus` fractions.
    pub taus: Vec<T>,
    /// Whether the pass uses the noise below (training mode).
    pub noise_on: bool,
    /// Noise of the three noisy layers (hidden, advantage, value).
    pub noise: [Vec<T>; 3],
    x: Vec<T>,
    h: Vec<T>,
    cosv: Vec<T>,
    c: Vec<T>,
    z: Vec<T>,
    f: Vec<T>,
    adv: Vec<T>,
    val: Vec<T>,
    /// `batch × num_taus × actions` quantile values of the last pass.
    pub q: Vec<T>,
    eff: [Vec<T>; 3],
    df: Vec<T>,
    dz: Vec<T>,
    dh: Vec<T>,
    dc: Vec<T>,
    dadv: Vec<T>,
    dval: Vec<T>,
    scratch: Vec<T>,
}

impl<T: Real> IqnWork<T> {
    /// Fresh τ (uniform) and, when `noisy`, fresh standard-normal noise from `key`, for
    /// `batch` states with `num_taus` fractions each.
    pub fn draw(&mut self, net: &IqnNet, key: Key, batch: usize, num_taus: usize, noisy: bool) {
        self.batch = batch;
        self.num_taus = num_taus;
        self.taus.resize(batch * num_taus, T::ZERO);
        let mut r = key.fold_in(0).rng();
        for t in &mut self.taus {
            *t = T::from_f64(r.uniform_f64());
        }
        self.noise_on = noisy;
        if noisy {
            for (k, l) in [&net.ff, &net.adv, &net.val].into_iter().enumerate() {
                self.noise[k].resize(l.noise_len(), T::ZERO);
                kestrel_nn::fill_normal_f32(key.fold_in(1 + k as u64), &mut self.noise[k]);
            }
        }
    }
}

/// ReLU in place; an unconditional select so it vectorises (a conditional store does not).
fn relu_inplace<T: Real>(v: &mut [T]) {
    for x in v {
        *x = if *x > T::ZERO { *x } else { T::ZERO };
    }
}

/// Zeroes `d` where `y` (a ReLU output) is not positive.
fn relu_mask<T: Real>(d: &mut [T], y: &[T]) {
    for (g, &v) in d.iter_mut().zip(y) {
        *g = if v > T::ZERO { *g } else { T::ZERO };
    }
}

// Element-wise passes as `kestrel_nn::WithSimd` operations, so they are compiled (and
// vectorised) for the CPU's widest vector extension.

/// `c ← relu(c + bc)`, `z = h ⊙ c`; the `n` rows of one state share its `h`.
struct HadamardForward<'a, T> {
    n: usize,
    l: usize,
    h: &'a [T],
    bc: &'a [T],
    c: &'a mut [T],
    z: &'a mut [T],
}

impl<T: Real> WithSimd for HadamardForward<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let HadamardForward { n, l, h, bc, c, z } = self;
        for ((cs, zs), h) in c.chunks_mut(n * l).zip(z.chunks_mut(n * l)).zip(h.chunks(l)) {
            for (cr, zr) in cs.chunks_mut(l).zip(zs.chunks_mut(l)) {
                for (((z, c), &hv), &bias) in zr.iter_mut().zip(cr.iter_mut()).zip(h).zip(bc) {
                    let v = *c + bias;
                    let v = if v > T::ZERO { v } else { T::ZERO };
                    *c = v;
                    *z = hv * v;
                }
            }
        }
    }
}

/// `y ← relu(y + b)` row by row.
struct BiasRelu<'a, T> {
    b: &'a [T],
    y: &'a mut [T],
}

impl<T: Real> WithSimd for BiasRelu<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        for row in self.y.chunks_mut(self.b.len()) {
            for (v, &bias) in row.iter_mut().zip(self.b) {
                let y = *v + bias;
                *v = if y > T::ZERO { y } else { T::ZERO };
            }
        }
    }
}

/// Zeroes `d` where `y` (a ReLU output) is not positive.
struct ReluMask<'a, T> {
    d: &'a mut [T],
    y: &'a [T],
}

impl<T: Real> WithSimd for ReluMask<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        relu_mask(self.d, self.y);
    }
}

/// Backward of `z = h ⊙ relu(·)`: `dh = Σ_τ dz ⊙ c` over a state's `n` rows, and
/// `dc = dz ⊙ h` where `c > 0` (zero elsewhere).
struct HadamardBackward<'a, T> {
    n: usize,
    l: usize,
    h: &'a [T],
    c: &'a [T],
    dz: &'a [T],
    dh: &'a mut [T],
    dc: &'a mut [T],
}

impl<T: Real> WithSimd for HadamardBackward<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let HadamardBackward { n, l, h, c, dz, dh, dc } = self;
        let per = n * l;
        let states = h.chunks(l).zip(dh.chunks_mut(l));
        for (((h, dh), cs), (dzs, dcs)) in
            states.zip(c.chunks(per)).zip(dz.chunks(per).zip(dc.chunks_mut(per)))
        {
            for ((cr, dzr), dcr) in cs.chunks(l).zip(dzs.chunks(l)).zip(dcs.chunks_mut(l)) {
                for (((g, dc), &d), (&cv, &hv)) in
                    dh.iter_mut().zip(dcr.iter_mut()).zip(dzr).zip(cr.iter().zip(h))
                {
                    *g += d * cv;
                    *dc = if cv > T::ZERO { d * hv } else { T::ZERO };
                }
            }
        }
    }
}

/// θ⁻ ← τ θ + (1 − τ) θ⁻.
struct SoftUpdate<'a> {
    tau: f32,
    target: &'a mut [f32],
    params: &'a [f32],
}

impl WithSimd for SoftUpdate<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let t = self.tau;
        for (tp, &p) in self.target.iter_mut().zip(self.params) {
            *tp = t * p + (1.0 - t) * *tp;
        }
    }
}

/// `cos(kπτ)`, k = 1…`nc`, for each τ into a row of `out`, by the Chebyshev recurrence
/// `cos((k+1)θ) = 2 cos θ cos(kθ) − cos((k−1)θ)` in f64 (one libm call per τ; after 64
/// terms the recurrence's error is ~1e-14, far below f32's resolution). Eight rows at a time,
/// so eight recurrences run side by side in one vector instead of one long dependency chain.
struct CosEmbedding<'a, T> {
    nc: usize,
    taus: &'a [T],
    out: &'a mut [T],
}

impl<T: Real> WithSimd for CosEmbedding<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        const LANES: usize = 8;
        let nc = self.nc;
        for (rows8, taus8) in self.out.chunks_mut(LANES * nc).zip(self.taus.chunks(LANES)) {
            let mut c1 = [0.0f64; LANES];
            for (c, &t) in c1.iter_mut().zip(taus8) {
                *c = (t.to_f64() * std::f64::consts::PI).cos();
            }
            let (mut prev, mut cur) = ([1.0f64; LANES], c1);
            for k in 0..nc {
                for (lane, row) in rows8.chunks_mut(nc).enumerate() {
                    row[k] = T::from_f64(cur[lane]);
                }
                for lane in 0..LANES {
                    let next = 2.0 * c1[lane] * cur[lane] - prev[lane];
                    prev[lane] = cur[lane];
                    cur[lane] = next;
                }
            }
        }
    }
}

impl IqnNet {
    /// The network for `cfg`.
    pub fn new(cfg: &IqnConfig) -> Result<Self, AgentError> {
        cfg.validate()?;
        let (i, l) = (cfg.state_dim(), cfg.layer);
        let head = Dense::new(i, l, Init::TorchUniform)?;
        let cos = Dense::new(cfg.num_cosines, l, Init::TorchUniform)?;
        let ff = NoisyDense::new(l, l, cfg.sigma0)?;
        let adv = NoisyDense::new(l, cfg.actions, cfg.sigma0)?;
        let val = NoisyDense::new(l, 1, cfg.sigma0)?;
        let sizes = [
            Layer::<f32>::num_params(&head),
            Layer::<f32>::num_params(&cos),
            ff.num_params(),
            adv.num_params(),
            val.num_params(),
        ];
        let mut offsets = [0; 6];
        for k in 0..5 {
            offsets[k + 1] = offsets[k] + sizes[k];
        }
        Ok(IqnNet {
            input: i,
            layer: l,
            num_cosines: cfg.num_cosines,
            actions: cfg.actions,
            head,
            cos,
            ff,
            adv,
            val,
            offsets,
        })
    }

    /// Length of the flat parameter vector.
    pub fn num_params(&self) -> usize {
        self.offsets[5]
    }

    fn part<'a, T>(&self, p: &'a [T], k: usize) -> &'a [T] {
        &p[self.offsets[k]..self.offsets[k + 1]]
    }

    /// Fresh parameters (layer `k` from `key.fold_in(k)`).
    pub fn init<T: Real>(&self, key: Key) -> Vec<T> {
        let mut p = vec![T::ZERO; self.num_params()];
        let o = self.offsets;
        Layer::<T>::init(&self.head, key.fold_in(0), &mut p[o[0]..o[1]]);
        Layer::<T>::init(&self.cos, key.fold_in(1), &mut p[o[1]..o[2]]);
        self.ff.init(key.fold_in(2), &mut p[o[2]..o[3]]);
        self.adv.init(key.fold_in(3), &mut p[o[3]..o[4]]);
        self.val.init(key.fold_in(4), &mut p[o[4]..o[5]]);
        p
    }

    /// `(name, shape, offset)` of every tensor in the flat vector.
    pub fn tensors(&self) -> Vec<(String, Vec<usize>, usize)> {
        let mut out = Vec::new();
        type Shapes = Vec<(&'static str, Vec<usize>)>;
        let layers: [(&str, Shapes); 5] = [
            ("head", Layer::<f32>::param_shapes(&self.head)),
            ("cos_embedding", Layer::<f32>::param_shapes(&self.cos)),
            ("ff_1", self.ff.param_shapes()),
            ("advantage", self.adv.param_shapes()),
            ("value", self.val.param_shapes()),
        ];
        for (k, (lname, shapes)) in layers.into_iter().enumerate() {
            let mut off = self.offsets[k];
            for (pname, shape) in shapes {
                let n: usize = shape.iter().product();
                out.push((format!("{lname}.{pname}"), shape, off));
                off += n;
            }
        }
        out
    }

    /// Forward pass over `x` (`ws.batch × input`) with the τ and noise in `ws`; quantiles
    /// land in `ws.q` (`batch × num_taus × actions`).
    pub fn forward<T: Real>(&self, params: &[T], x: &[T], ws: &mut IqnWork<T>) {
        let (b, n, l, a) = (ws.batch, ws.num_taus, self.layer, self.actions);
        let rows = b * n;
        ws.x.resize(b * self.input, T::ZERO);
        ws.x.copy_from_slice(&x[..b * self.input]);
        ws.h.resize(b * l, T::ZERO);
        self.head.forward(self.part(params, 0), &ws.x, &mut ws.h, b);
        relu_inplace(&mut ws.h);
        ws.cosv.resize(rows * self.num_cosines, T::ZERO);
        kestrel_nn::dispatch(CosEmbedding {
            nc: self.num_cosines,
            taus: &ws.taus,
            out: &mut ws.cosv,
        });
        // c = relu(cosv Wc + bc) and z = h ⊙ c in one pass after the product.
        ws.c.resize(rows * l, T::ZERO);
        let (wc, bc) = self.part(params, 1).split_at(self.num_cosines * l);
        matmul(rows, self.num_cosines, l, &ws.cosv, Op::N, wc, Op::N, &mut ws.c, false);
        ws.z.resize(rows * l, T::ZERO);
        kestrel_nn::dispatch(HadamardForward { n, l, h: &ws.h, bc, c: &mut ws.c, z: &mut ws.z });
        // Effective noisy weights in training passes; the means themselves otherwise.
        if ws.noise_on {
            for (k, layer) in [&self.ff, &self.adv, &self.val].into_iter().enumerate() {
                ws.eff[k].resize(layer.noise_len(), T::ZERO);
                layer.effective(self.part(params, 2 + k), Some(&ws.noise[k][..]), &mut ws.eff[k]);
            }
        }
        let eff =
            |k: usize| -> &[T] { if ws.noise_on { &ws.eff[k] } else { self.part(params, 2 + k) } };
        // f = relu(z Wf + bf), bias and ReLU in one pass.
        ws.f.resize(rows * l, T::ZERO);
        let (wf, bf) = eff(0)[..l * l + l].split_at(l * l);
        matmul(rows, l, l, &ws.z, Op::N, wf, Op::N, &mut ws.f, false);
        kestrel_nn::dispatch(BiasRelu { b: bf, y: &mut ws.f });
        ws.adv.resize(rows * a, T::ZERO);
        ws.val.resize(rows, T::ZERO);
        self.adv.forward(eff(1), &ws.f, &mut ws.adv, rows);
        self.val.forward(eff(2), &ws.f, &mut ws.val, rows);
        ws.q.resize(rows * a, T::ZERO);
        let inv_a = T::from_f64(1.0 / a as f64);
        for r in 0..rows {
            let adv = &ws.adv[r * a..(r + 1) * a];
            let mut mean = T::ZERO;
            for &v in adv {
                mean += v;
            }
            mean *= inv_a;
            for (q, &v) in ws.q[r * a..(r + 1) * a].iter_mut().zip(adv) {
                *q = ws.val[r] + v - mean;
            }
        }
    }

    /// Adds `∂L/∂params` to `grads` for the last forward pass, given `dq = ∂L/∂q`.
    pub fn backward<T: Real>(&self, params: &[T], ws: &mut IqnWork<T>, dq: &[T], grads: &mut [T]) {
        let (b, n, l, a) = (ws.batch, ws.num_taus, self.layer, self.actions);
        let rows = b * n;
        let o = self.offsets;
        // Dueling: ∂/∂V = Σ_a dq, ∂/∂A_a = dq_a − mean(dq).
        ws.dadv.resize(rows * a, T::ZERO);
        ws.dval.resize(rows, T::ZERO);
        let inv_a = T::from_f64(1.0 / a as f64);
        for r in 0..rows {
            let d = &dq[r * a..(r + 1) * a];
            let mut s = T::ZERO;
            for &v in d {
                s += v;
            }
            ws.dval[r] = s;
            let m = s * inv_a;
            for (g, &v) in ws.dadv[r * a..(r + 1) * a].iter_mut().zip(d) {
                *g = v - m;
            }
        }
        let widest = self.ff.noise_len().max(self.adv.noise_len());
        ws.scratch.resize(widest, T::ZERO);
        ws.df.resize(rows * l, T::ZERO);
        ws.dz.resize(rows * l, T::ZERO);
        {
            let IqnWork { eff, noise, noise_on, f, dadv, dval, df, scratch, .. } = &mut *ws;
            let on = *noise_on;
            let nz = |k: usize| if on { Some(&noise[k][..]) } else { None };
            let w = |k: usize| -> &[T] { if on { &eff[k] } else { self.part(params, 2 + k) } };
            let g = &mut grads[o[3]..o[4]];
            self.adv.backward(w(1), nz(1), f, dadv, g, Some(df), rows, scratch);
            // The value head's input gradient adds to the advantage head's.
            let g = &mut grads[o[4]..o[5]];
            self.val.backward_dx(w(2), nz(2), f, dval, g, Some(df), true, rows, scratch);
        }
        // ReLU after the hidden noisy layer.
        kestrel_nn::dispatch(ReluMask { d: &mut ws.df, y: &ws.f });
        {
            let IqnWork { eff, noise, noise_on, z, df, dz, scratch, .. } = &mut *ws;
            let (nz, w) = if *noise_on {
                (Some(&noise[0][..]), &eff[0][..])
            } else {
                (None, self.part(params, 2))
            };
            let g = &mut grads[o[2]..o[3]];
            self.ff.backward(w, nz, z, df, g, Some(dz), rows, scratch);
        }
        // Hadamard product: ∂h = Σ_τ dz ⊙ c, ∂c = dz ⊙ h; then the ReLUs.
        ws.dh.resize(b * l, T::ZERO);
        ws.dh.fill(T::ZERO);
        ws.dc.resize(rows * l, T::ZERO);
        let (h, c, dz) = (&ws.h[..b * l], &ws.c[..rows * l], &ws.dz[..rows * l]);
        kestrel_nn::dispatch(HadamardBackward { n, l, h, c, dz, dh: &mut ws.dh, dc: &mut ws.dc });
        relu_mask(&mut ws.dh, &ws.h);
        self.cos.backward(
            self.part(params, 1),
            &ws.cosv,
            &ws.c,
            &ws.dc,
            &mut grads[o[1]..o[2]],
            None,
            rows,
        );
        self.head.backward(
            self.part(params, 0),
            &ws.x,
            &ws.h,
            &ws.dh,
            &mut grads[o[0]..o[1]],
            None,
            b,
        );
    }

    /// Action values (mean over the τ samples) of the last forward pass into `out`
    /// (`batch × actions`).
    pub fn q_means<T: Real>(&self, ws: &IqnWork<T>, out: &mut [T]) {
        let (b, n, a) = (ws.batch, ws.num_taus, self.actions);
        let inv = T::from_f64(1.0 / n as f64);
        for bi in 0..b {
            let o = &mut out[bi * a..(bi + 1) * a];
            o.fill(T::ZERO);
            for i in 0..n {
                for (v, &q) in o.iter_mut().zip(&ws.q[(bi * n + i) * a..(bi * n + i + 1) * a]) {
                    *v += q;
                }
            }
            for v in o.iter_mut() {
                *v *= inv;
            }
        }
    }
}

/// Index of the largest value (the first on ties, as `argmax`).
fn argmax<T: Real>(v: &[T]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// One agent's learner: network parameters, target network, Adam state, ε and the buffers
/// of its passes. Replay buffers are kept by the caller (one per world stream).
#[derive(Clone, Debug)]
pub struct IqnLearner {
    /// Settings.
    pub cfg: IqnConfig,
    /// Network shape.
    pub net: IqnNet,
    /// Online parameters θ.
    pub params: Vec<f32>,
    /// Target parameters θ⁻.
    pub target: Vec<f32>,
    /// Adam moments.
    pub opt: AdamState<f32>,
    /// Current ε.
    pub epsilon: f64,
    /// Gradient steps taken.
    pub updates: u64,
    adam: Adam,
    batch: FrameBatch,
    ws_next: IqnWork<f32>,
    ws_target: IqnWork<f32>,
    ws: IqnWork<f32>,
    ws_act: IqnWork<f32>,
    grads: Vec<f32>,
    dq: Vec<f32>,
    means: Vec<f32>,
    astar: Vec<usize>,
    pred: Vec<f32>,
    tgt: Vec<f32>,
    gpred: Vec<f32>,
    rows: Vec<f64>,
}

impl IqnLearner {
    /// A learner with fresh parameters from `key`; the target starts as a copy.
    pub fn new(cfg: IqnConfig, key: Key) -> Result<Self, AgentError> {
        let net = IqnNet::new(&cfg)?;
        let params = net.init::<f32>(key);
        let n = params.len();
        let mut adam = Adam::new(cfg.lr);
        adam.max_grad_norm = Some(cfg.max_grad_norm);
        adam.validate()?;
        let sd = cfg.state_dim();
        Ok(IqnLearner {
            batch: FrameBatch::new(cfg.batch_size, sd),
            target: params.clone(),
            opt: AdamState::new(n),
            epsilon: cfg.epsilon,
            updates: 0,
            grads: vec![0.0; n],
            dq: Vec::new(),
            means: Vec::new(),
            astar: Vec::new(),
            pred: Vec::new(),
            tgt: Vec::new(),
            gpred: Vec::new(),
            rows: Vec::new(),
            ws_next: IqnWork::default(),
            ws_target: IqnWork::default(),
            ws: IqnWork::default(),
            ws_act: IqnWork::default(),
            adam,
            params,
            net,
            cfg,
        })
    }

    /// Epoch start: hard copy θ → θ⁻ when `epoch` is a multiple of `sync_epochs`.
    pub fn start_epoch(&mut self, epoch: u64) {
        if self.cfg.sync_epochs > 0 && epoch.is_multiple_of(self.cfg.sync_epochs) {
            self.target.copy_from_slice(&self.params);
        }
    }

    /// Epoch end: ε decays (not below `epsilon_min`).
    pub fn end_epoch(&mut self) {
        self.epsilon = (self.epsilon * (1.0 - self.cfg.epsilon_decay)).max(self.cfg.epsilon_min);
    }

    /// ε-greedy actions for `states` (`rows × state_dim`) into `actions`. Greedy rows use the
    /// mean over `num_quantiles` fresh τ samples without parameter noise (sorrel's eval mode).
    ///
    /// `states` must hold `actions.len()` rows of `state_dim` floats.
    pub fn act(&mut self, states: &[f32], key: Key, actions: &mut [u32]) -> Result<(), AgentError> {
        let rows = actions.len();
        if states.len() != rows * self.cfg.state_dim() {
            return Err(AgentError::invalid(
                "states length",
                states.len().to_string(),
                "one row of num_frames × frame_dim floats per action",
            ));
        }
        let mut r = key.fold_in(0).rng();
        let mut greedy = false;
        let a = self.cfg.actions as u32;
        for act in actions.iter_mut() {
            if r.uniform_f64() < self.epsilon {
                *act = r.below(a);
            } else {
                *act = u32::MAX;
                greedy = true;
            }
        }
        if !greedy {
            return Ok(());
        }
        self.ws_act.draw(&self.net, key.fold_in(1), rows, self.cfg.num_quantiles, false);
        self.net.forward(&self.params, states, &mut self.ws_act);
        self.means.resize(rows * self.cfg.actions, 0.0);
        self.net.q_means(&self.ws_act, &mut self.means);
        for (i, act) in actions.iter_mut().enumerate() {
            if *act == u32::MAX {
                let m = &self.means[i * self.cfg.actions..(i + 1) * self.cfg.actions];
                *act = argmax(m) as u32;
            }
        }
        Ok(())
    }

    /// Whether `buffers` hold enough transitions for a gradient step.
    pub fn ready(&self, buffers: &[FrameReplay]) -> bool {
        let per = self.cfg.batch_size.div_ceil(buffers.len().max(1));
        !buffers.is_empty() && buffers.iter().all(|b| b.num_transitions() >= per)
    }

    /// One gradient step on a batch drawn from `buffers` (rows split evenly across them).
    /// Returns the loss, or `None` when the buffers are not [`IqnLearner::ready`]. A
    /// non-finite loss or gradient is an error that changes nothing.
    pub fn train_step(
        &mut self,
        buffers: &mut [FrameReplay],
        key: Key,
    ) -> Result<Option<f64>, AgentError> {
        if !self.ready(buffers) {
            return Ok(None);
        }
        let (bsz, n, a) = (self.cfg.batch_size, self.cfg.num_quantiles, self.cfg.actions);
        let k = buffers.len();
        let mut start = 0;
        for (i, buf) in buffers.iter().enumerate() {
            let count = bsz / k + usize::from(i < bsz % k);
            buf.sample_rows(key.fold_in(10 + i as u64), &mut self.batch, start, count)?;
            start += count;
        }
        let noisy = self.cfg.noisy;
        // a* from the next states.
        self.ws_target.draw(&self.net, key.fold_in(1), bsz, n, noisy);
        self.net.forward(&self.target, &self.batch.next_states, &mut self.ws_target);
        self.means.resize(bsz * a, 0.0);
        if self.cfg.double {
            self.ws_next.draw(&self.net, key.fold_in(2), bsz, n, noisy);
            self.net.forward(&self.params, &self.batch.next_states, &mut self.ws_next);
            self.net.q_means(&self.ws_next, &mut self.means);
        } else {
            self.net.q_means(&self.ws_target, &mut self.means);
        }
        self.astar.clear();
        self.astar.extend((0..bsz).map(|b| argmax(&self.means[b * a..(b + 1) * a])));
        self.tgt.resize(bsz * n, 0.0);
        for b in 0..bsz {
            let (ret, disc) = (self.batch.returns[b], self.batch.discounts[b]);
            for j in 0..n {
                let z = self.ws_target.q[(b * n + j) * a + self.astar[b]];
                self.tgt[b * n + j] = ret + disc * z;
            }
        }
        // Prediction for the actions taken.
        self.ws.draw(&self.net, key.fold_in(3), bsz, n, noisy);
        self.net.forward(&self.params, &self.batch.states, &mut self.ws);
        self.pred.resize(bsz * n, 0.0);
        for b in 0..bsz {
            let act = self.batch.actions[b] as usize;
            if act >= a {
                return Err(AgentError::invalid(
                    "stored action",
                    act.to_string(),
                    "below the number of actions",
                ));
            }
            for i in 0..n {
                self.pred[b * n + i] = self.ws.q[(b * n + i) * a + act];
            }
        }
        self.gpred.resize(bsz * n, 0.0);
        self.rows.resize(bsz, 0.0);
        let loss = quantile_huber(
            &self.pred,
            &self.ws.taus,
            &self.tgt,
            &self.batch.weights,
            self.cfg.kappa,
            bsz,
            &mut self.gpred,
            Some(&mut self.rows),
        );
        if !loss.is_finite() {
            return Err(AgentError::NonFinite { what: "IQN loss", value: loss });
        }
        self.dq.resize(bsz * n * a, 0.0);
        self.dq.fill(0.0);
        for b in 0..bsz {
            let act = self.batch.actions[b] as usize;
            for i in 0..n {
                self.dq[(b * n + i) * a + act] = self.gpred[b * n + i];
            }
        }
        self.grads.fill(0.0);
        self.net.backward(&self.params, &mut self.ws, &self.dq, &mut self.grads);
        self.adam.step(&mut self.opt, &mut self.params, &self.grads)?;
        kestrel_nn::dispatch(SoftUpdate {
            tau: self.cfg.tau as f32,
            target: &mut self.target,
            params: &self.params,
        });
        self.updates += 1;
        if self.cfg.prioritized.is_some() {
            let mut start = 0;
            for (i, buf) in buffers.iter_mut().enumerate() {
                let count = bsz / k + usize::from(i < bsz % k);
                let slots = &self.batch.slots[start..start + count];
                // Priority from the row's mean element loss.
                let td = &mut self.rows[start..start + count];
                td.iter_mut().for_each(|v| *v /= (n * n) as f64);
                buf.update_priorities(slots, td)?;
                start += count;
            }
        }
        Ok(Some(loss))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> (IqnConfig, IqnNet) {
        let mut c = IqnConfig::sorrel(3, 4);
        c.num_frames = 2;
        c.layer = 6;
        c.num_cosines = 9;
        let net = IqnNet::new(&c).unwrap();
        (c, net)
    }

    /// The τ embedding is sorrel's `cos(π i τ)` for `i = 1..=num_cosines` (computed here by a
    /// Chebyshev recurrence eight rows at a time): checked against `cos` directly on a row
    /// count that is not a multiple of eight.
    #[test]
    fn the_cosine_embedding_is_cos_of_pi_i_tau() {
        let nc = 9;
        let mut r = Key::new(3).rng();
        let taus: Vec<f64> = (0..11).map(|_| r.uniform_f64()).collect();
        let mut out = vec![0.0f64; taus.len() * nc];
        kestrel_nn::dispatch(CosEmbedding { nc, taus: &taus, out: &mut out });
        for (row, &t) in taus.iter().enumerate() {
            for i in 0..nc {
                let want = (std::f64::consts::PI * (i + 1) as f64 * t).cos();
                let got = out[row * nc + i];
                assert!((got - want).abs() < 1e-12, "row {row}, i {}: {got} vs {want}", i + 1);
            }
        }
    }

    /// The dueling head centres the advantages: for every state and τ, the quantiles' mean
    /// over actions is the value head's output; `q_means` averages the quantiles over τ.
    #[test]
    fn the_dueling_head_centres_advantages_and_q_means_average_over_tau() {
        let (c, net) = small();
        let params = net.init::<f64>(Key::new(1));
        let mut ws = IqnWork::<f64>::default();
        let (b, n, a) = (3, 5, c.actions);
        ws.draw(&net, Key::new(2), b, n, true);
        let mut r = Key::new(4).rng();
        let x: Vec<f64> = (0..b * net.input).map(|_| r.uniform_f64() - 0.5).collect();
        net.forward(&params, &x, &mut ws);
        for row in 0..b * n {
            let mean = ws.q[row * a..(row + 1) * a].iter().sum::<f64>() / a as f64;
            assert!((mean - ws.val[row]).abs() < 1e-12, "row {row}: {mean} vs {}", ws.val[row]);
        }
        let mut means = vec![0.0; b * a];
        net.q_means(&ws, &mut means);
        for s in 0..b {
            for act in 0..a {
                let want = (0..n).map(|i| ws.q[(s * n + i) * a + act]).sum::<f64>() / n as f64;
                assert!((means[s * a + act] - want).abs() < 1e-12);
            }
        }
    }

    /// The named tensors tile the flat parameter vector in order with no gap or overlap, and
    /// the step's FLOP count is twice the multiply-adds of its 23 matrix products.
    #[test]
    fn tensors_tile_the_parameters_and_flops_follow_the_products() {
        let (c, net) = small();
        let t = net.tensors();
        let mut next = 0;
        for (name, shape, off) in &t {
            assert_eq!(*off, next, "{name} starts where the previous tensor ends");
            next += shape.iter().product::<usize>();
        }
        assert_eq!(next, net.num_params());
        assert_eq!(t.first().map(|x| x.0.as_str()), Some("head.weight"));
        let shapes = c.update_gemm_shapes();
        assert_eq!(shapes.len(), 23);
        let (bt, i, l) = (c.batch_size, c.state_dim(), c.layer);
        assert!(shapes.contains(&(bt, i, l, Op::N, Op::N)), "the head's forward product");
        let fl: usize = shapes.iter().map(|s| 2 * s.0 * s.1 * s.2).sum();
        assert_eq!(c.update_flops(), fl as f64);
        assert_eq!((argmax(&[1.0f32, 3.0, 3.0, 2.0]), argmax(&[0.0f64])), (1, 0), "first on ties");
    }
}
