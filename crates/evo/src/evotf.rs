//! EvoTF, the Evolution Transformer: a diagonal Gaussian search whose mean and step-size
//! updates come from a causal transformer over the last generations' encoded populations,
//! meta-learned by distilling other strategies (the default checkpoint, SNES's).
//!
//! Paper: R. T. Lange, Y. Tian and Y. Tang, "Evolution Transformer: In-Context Evolutionary
//! Optimization", GECCO 2024 (arXiv:2403.02985). Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/evotf_es.py` (`EvoTF_ES`) with `learned_evolution/evotf_tools/`
//! (`evo_transformer.py`'s `EvoTransformer`, `evo_modules.py`, `perceiver.py`, `attention.py`,
//! `shared.py`, and the featurizers of `features/`).
//!
//! **Weights and architecture**: evosax's checkpoint, `ckpt/evotf/2024_03_SNES_small.pkl` (its
//! default), read from the path the user gives ([`EvoTfNet::read`]); its `model_config`,
//! `solution_config`, `fitness_config` and `distrib_config` give the sizes and the features,
//! so any checkpoint evosax's EvoTF code writes is read. Kestrel ships none.
//!
//! One generation (`tell`), as evosax computes it:
//! - features of the told population: per row and coordinate `[x, (x − m)/σ, ((x − m)/σ)²,
//!   x − x*, min-max(x − x*) over the rows]` (`x*` the best row so far, this generation's
//!   included); per row `[centred rank, f < f*, z-score, (f − f*) / range, min-max(f), SNES
//!   weight, DES weight]` (`f*` the best before this generation; the two weights are indexed
//!   by the argsort, as evosax indexes them); per coordinate `[SNES gradients of m and σ, their
//!   traces, the traces of m's and σ's changes, OpenAI-ES's gradient]`;
//! - each is encoded once, for this generation: a perceiver (latent cross-attention) over
//!   the rows per coordinate, one over the fitness rows, self-attention over the coordinates
//!   and a perceiver over them; per coordinate, those concatenate into one token;
//! - per coordinate, a causal transformer over the last `max_context_len` (100) tokens, with
//!   sinusoidal positions, and an MLP on the newest gives `(Δm, Δlog σ)`: `m ← m + lr_mean σ
//!   Δm`, `σ ← max(σ exp(lr_std / 2 · Δlog σ), 1e-8)`.
//!
//! evosax keeps the raw features of the whole window and encodes all of it every generation;
//! Kestrel keeps each generation's token (after the transformer's input layer, which is
//! linear and per token) and runs the causal layer for the newest token only: the same
//! function, since a token's encoding depends only on its own generation and the causal mask
//! hides the rest.
//!
//! Two things are as evosax's code has them and the weights were trained with: the update
//! network's layer norm takes `use_bias` as its epsilon (`nn.LayerNorm(self.use_bias)`, so
//! 1), and the perceiver blocks have no residual connection.
//!
//! Differences, by design: a NaN or infinite fitness is read as the generation's worst finite
//! one (evosax's features turn NaN, and with them the mean), and the mean stays inside f32's
//! range.

use crate::cma_es::MEAN_BOUND;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::learned_ckpt::Checkpoint;
use crate::les::Dense;
use crate::shaping::ordinal_ranks;
use crate::strategy::{
    Progress, Strategy, TellMetrics, check_lens, diagonal_rows, finite_or_worst, to_f32,
};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};
use std::path::Path;
use std::sync::Arc;

/// Where the networks' weights sit in evosax's checkpoint.
const PARAMS: &str = "net_params/params";

/// evosax's lower clip of σ (`jnp.clip(pred_std, 1e-8)`).
const STD_FLOOR: f64 = 1e-8;

/// The longest context: evosax's positional encoding table (`PositionalEncoding.max_len`).
pub const MAX_CONTEXT: usize = 5000;

/// A context length in `1..=5000`, or an error naming `params.max_context_len`.
pub(crate) fn check_context(len: usize) -> Result<(), EvoError> {
    if !(1..=MAX_CONTEXT).contains(&len) {
        return Err(EvoError::invalid(
            "params.max_context_len",
            len,
            format!("in 1..={MAX_CONTEXT} (evosax's table of positions)"),
        ));
    }
    Ok(())
}

/// The features a checkpoint was trained on (its `solution_config`, `fitness_config` and
/// `distrib_config`).
#[derive(Clone, Debug, PartialEq)]
pub struct EvoTfFeatures {
    /// Solution features after `x`: `(x − m)/σ`, its square, `x − x*`, min-max of `x − x*`.
    pub solution: [bool; 4],
    /// Fitness features after the centred rank: `f < f*`, z-score, `(f − f*)` over its range,
    /// min-max, SNES weights, DES weights.
    pub fitness: [bool; 6],
    /// The fitness features' weight-decay term (the mean square of the row) when above 0.
    pub w_decay: f64,
    /// Distribution features after the two SNES gradients: the mean, σ, the gradients'
    /// traces, the changes' traces, OpenAI-ES's gradient.
    pub distribution: [bool; 5],
    /// The gradients' trace rates.
    pub evopath_timescales: Vec<f64>,
    /// The changes' trace rates.
    pub momentum_timescales: Vec<f64>,
}

impl EvoTfFeatures {
    fn read(c: &Checkpoint) -> Result<Self, EvoError> {
        let flag = |k: &str| c.config_bool(k);
        for key in ["solution_config/maximize", "fitness_config/maximize"] {
            if flag(key)? {
                return Err(EvoError::invalid(
                    format!("{}: {key}", c.source),
                    "true",
                    "false (Kestrel minimises; a checkpoint trained on maximised fitness is \
                     not read)",
                ));
            }
        }
        let s = "solution_config";
        let f = "fitness_config";
        let d = "distrib_config";
        Ok(EvoTfFeatures {
            solution: [
                flag(&format!("{s}/norm_diff_mean"))?,
                flag(&format!("{s}/norm_diff_mean_sq"))?,
                flag(&format!("{s}/diff_best"))?,
                flag(&format!("{s}/norm_diff_best"))?,
            ],
            fitness: [
                flag(&format!("{f}/improved_best"))?,
                flag(&format!("{f}/z_score"))?,
                flag(&format!("{f}/norm_diff_best"))?,
                flag(&format!("{f}/norm_range"))?,
                flag(&format!("{f}/snes_weights"))?,
                flag(&format!("{f}/des_weights"))?,
            ],
            w_decay: c.config_f64(&format!("{f}/w_decay"))?,
            distribution: [
                flag(&format!("{d}/use_mean"))?,
                flag(&format!("{d}/use_sigma"))?,
                flag(&format!("{d}/use_evopaths"))?,
                flag(&format!("{d}/use_momentum"))?,
                flag(&format!("{d}/use_oai_grad"))?,
            ],
            evopath_timescales: c.config_f64s(&format!("{d}/evopath_timescales"), 16)?,
            momentum_timescales: c.config_f64s(&format!("{d}/momentum_timescales"), 16)?,
        })
    }

    /// Solution features per row and coordinate.
    pub fn num_solution(&self) -> usize {
        1 + self.solution.iter().filter(|&&b| b).count()
    }

    /// Fitness features per row.
    pub fn num_fitness(&self) -> usize {
        1 + self.fitness.iter().filter(|&&b| b).count() + (self.w_decay > 0.0) as usize
    }

    /// Distribution features per coordinate.
    pub fn num_distribution(&self) -> usize {
        let [mean, sigma, paths, moms, oai] = self.distribution;
        2 + mean as usize
            + sigma as usize
            + 2 * self.evopath_timescales.len() * paths as usize
            + 2 * self.momentum_timescales.len() * moms as usize
            + oai as usize
    }
}

/// The model's sizes and switches (its `model_config`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EvoTfSizes {
    /// Token width `E`.
    pub embed_dim: usize,
    /// Attention heads (`E / heads` wide each).
    pub num_heads: usize,
    /// Perceiver latents.
    pub num_latents: usize,
    /// Perceiver latent width.
    pub latent_dim: usize,
    /// Layers of each encoder (the cross-coordinate perceiver has one).
    pub num_layers: usize,
    /// Whether the dense layers and layer norms have biases (and the update norm's epsilon).
    pub use_bias: bool,
    /// Whether the fitness perceiver's latents join each token.
    pub fitness_encoder: bool,
    /// Whether the coordinate self-attention joins each token.
    pub dist_encoder: bool,
    /// Whether the cross-coordinate perceiver's latents join each token.
    pub crossd_encoder: bool,
}

impl EvoTfSizes {
    fn read(c: &Checkpoint) -> Result<Self, EvoError> {
        let m = "model_config";
        let s = EvoTfSizes {
            embed_dim: c.config_usize(&format!("{m}/embed_dim"), 1024)?,
            num_heads: c.config_usize(&format!("{m}/num_heads"), 64)?,
            num_latents: c.config_usize(&format!("{m}/num_latents"), 1024)?,
            latent_dim: c.config_usize(&format!("{m}/latent_dim"), 4096)?,
            num_layers: c.config_usize(&format!("{m}/num_layers"), 16)?,
            use_bias: c.config_bool(&format!("{m}/use_bias"))?,
            fitness_encoder: c.config_bool(&format!("{m}/use_fitness_encoder"))?,
            dist_encoder: c.config_bool(&format!("{m}/use_dist_encoder"))?,
            crossd_encoder: c.config_bool(&format!("{m}/use_crossd_encoder"))?,
        };
        let e = s.embed_dim;
        if !e.is_multiple_of(2) {
            return Err(EvoError::invalid(
                format!("{}: model_config/embed_dim", c.source),
                e,
                "even (the positions' sines and cosines pair up)",
            ));
        }
        if !e.is_multiple_of(s.num_heads) {
            return Err(EvoError::invalid(
                format!("{}: model_config/num_heads", c.source),
                s.num_heads,
                format!("a divisor of embed_dim = {e}"),
            ));
        }
        Ok(s)
    }

    /// A token's width before the transformer's input layer.
    fn token_width(&self) -> usize {
        let (e, l) = (self.embed_dim, self.num_latents);
        l * e * (1 + self.fitness_encoder as usize)
            + e * self.dist_encoder as usize
            + l * e * self.crossd_encoder as usize
    }
}

/// A layer norm over `E`-wide rows (flax's `LayerNorm`: `(x − mean) / √(var + ε) · scale +
/// bias`).
#[derive(Clone, Debug, PartialEq)]
struct Norm {
    scale: Vec<f64>,
    bias: Vec<f64>,
    eps: f64,
}

impl Norm {
    fn read(c: &Checkpoint, at: &str, e: usize, bias: bool, eps: f64) -> Result<Self, EvoError> {
        let scale = c.get_f64(&format!("{at}/scale"), &[e])?;
        let bias = if bias { c.get_f64(&format!("{at}/bias"), &[e])? } else { vec![0.0; e] };
        Ok(Norm { scale, bias, eps })
    }

    fn rows(&self, x: &[f64], out: &mut [f64]) {
        let e = self.scale.len();
        for (xr, o) in x.chunks_exact(e).zip(out.chunks_exact_mut(e)) {
            let mean = xr.iter().sum::<f64>() / e as f64;
            let var = xr.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / e as f64;
            let r = 1.0 / (var + self.eps).sqrt();
            for k in 0..e {
                o[k] = (xr[k] - mean) * r * self.scale[k] + self.bias[k];
            }
        }
    }
}

/// A dense layer of the checkpoint, without a bias where the model has none.
fn dense(c: &Checkpoint, at: &str, i: usize, o: usize, bias: bool) -> Result<Dense, EvoError> {
    let kernel = c.get_f64(&format!("{at}/kernel"), &[i, o])?;
    let b = if bias { c.get_f64(&format!("{at}/bias"), &[o])? } else { vec![0.0; o] };
    Dense::from_parts(kernel, &b, i, o)
}

/// flax's `gelu` (jax's default, the tanh approximation).
#[inline]
fn gelu(x: f64) -> f64 {
    const C: f64 = 0.797_884_560_802_865_4; // √(2/π)
    0.5 * x * (1.0 + (C * (x + 0.044715 * x * x * x)).tanh())
}

/// `shared.py`'s `MLP`: `E → 4E`, gelu, `4E → E`.
#[derive(Clone, Debug, PartialEq)]
struct Mlp {
    up: Dense,
    down: Dense,
}

impl Mlp {
    fn read(c: &Checkpoint, at: &str, e: usize, bias: bool) -> Result<Self, EvoError> {
        Ok(Mlp {
            up: dense(c, &format!("{at}/linear_0"), e, 4 * e, bias)?,
            down: dense(c, &format!("{at}/linear_2"), 4 * e, e, bias)?,
        })
    }

    fn rows(&self, x: &[f64], hidden: &mut [f64], out: &mut [f64]) {
        self.up.apply_rows(x, hidden);
        hidden.iter_mut().for_each(|h| *h = gelu(*h));
        self.down.apply_rows(hidden, out);
    }
}

/// Where a head's queries, keys or values sit in a row-major buffer: row `i`, head `h` at
/// `i · stride + h · head + off`.
#[derive(Clone, Copy)]
struct View {
    stride: usize,
    head: usize,
    off: usize,
}

/// Multi-head scaled dot-product attention (`shared.py`'s `scaled_dot_product`): for each of
/// `nq` queries and each head, `softmax_j(q · k_j / √dh)` over the `nk` keys (causal: query
/// `i` sees keys `0..=i + nk − nq`, the newest query all of them), times the values, into
/// `out` (`nq × heads·dh`, head `h` at column `h · dh`).
#[allow(clippy::too_many_arguments)]
fn attend(
    q: (&[f64], View),
    k: (&[f64], View),
    v: (&[f64], View),
    nq: usize,
    nk: usize,
    heads: usize,
    dh: usize,
    causal: bool,
    logits: &mut [f64],
    out: &mut [f64],
) {
    let scale = 1.0 / (dh as f64).sqrt();
    let e = heads * dh;
    for i in 0..nq {
        let seen = if causal { i + nk - nq + 1 } else { nk };
        for h in 0..heads {
            let qi = &q.0[i * q.1.stride + h * q.1.head + q.1.off..][..dh];
            let row = &mut logits[..seen];
            for (j, r) in row.iter_mut().enumerate() {
                let kj = &k.0[j * k.1.stride + h * k.1.head + k.1.off..][..dh];
                *r = qi.iter().zip(kj).map(|(a, b)| a * b).sum::<f64>() * scale;
            }
            let top = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            let mut total = 0.0;
            for r in row.iter_mut() {
                *r = (*r - top).exp();
                total += *r;
            }
            let o = &mut out[i * e + h * dh..][..dh];
            o.fill(0.0);
            for (j, &a) in row.iter().enumerate() {
                let vj = &v.0[j * v.1.stride + h * v.1.head + v.1.off..][..dh];
                o.iter_mut().zip(vj).for_each(|(x, y)| *x += a * y);
            }
            o.iter_mut().for_each(|x| *x /= total);
        }
    }
}

/// Scratch of one forward pass, sized for the longest sequence at construction, so a
/// generation allocates nothing.
#[derive(Clone, Debug)]
struct Work {
    h: Vec<f64>,
    hn: Vec<f64>,
    proj: Vec<f64>,
    vals: Vec<f64>,
    a: Vec<f64>,
    hidden: Vec<f64>,
    logits: Vec<f64>,
}

impl Work {
    fn new(rows: usize, e: usize) -> Self {
        Work {
            h: vec![0.0; rows * e],
            hn: vec![0.0; rows * e],
            proj: vec![0.0; rows * 3 * e],
            vals: vec![0.0; rows * e],
            a: vec![0.0; rows * e],
            hidden: vec![0.0; rows * 4 * e],
            logits: vec![0.0; rows],
        }
    }
}

/// `perceiver.py`'s `PerceiverBlock`: `mlp(ln₂(cross-attention(latents, ln₁(x))))`, no
/// residual.
#[derive(Clone, Debug, PartialEq)]
struct PerceiverBlock {
    ln1: Norm,
    /// The latents' queries, `q_proj(latents)` (`L × E`): constant, computed once.
    q: Vec<f64>,
    kv: Dense,
    out: Dense,
    ln2: Norm,
    mlp: Mlp,
}

/// `perceiver.py`'s `PerceiverEncoder` (without positions, as evosax calls it): `n` rows to
/// `L` latent rows of width `E`.
#[derive(Clone, Debug, PartialEq)]
struct Perceiver {
    input: Dense,
    blocks: Vec<PerceiverBlock>,
}

impl Perceiver {
    fn read(
        c: &Checkpoint,
        at: &str,
        inputs: usize,
        z: &EvoTfSizes,
        layers: usize,
    ) -> Result<Self, EvoError> {
        let (e, l, b) = (z.embed_dim, z.num_latents, z.use_bias);
        let mut blocks = Vec::with_capacity(layers);
        for i in 0..layers {
            let p = format!("{at}/perceiver_{i}");
            let latents = c.get_f64(&format!("{p}/perceive/latents"), &[l, z.latent_dim])?;
            let q_proj = dense(c, &format!("{p}/perceive/q_proj"), z.latent_dim, e, b)?;
            let mut q = vec![0.0; l * e];
            q_proj.apply_rows(&latents, &mut q);
            blocks.push(PerceiverBlock {
                ln1: Norm::read(c, &format!("{p}/ln_1"), e, b, 1e-6)?,
                q,
                kv: dense(c, &format!("{p}/perceive/kv_proj"), e, 2 * e, b)?,
                out: dense(c, &format!("{p}/perceive/out_proj"), e, e, b)?,
                ln2: Norm::read(c, &format!("{p}/ln_2"), e, b, 1e-6)?,
                mlp: Mlp::read(c, &format!("{p}/mlp"), e, b)?,
            });
        }
        Ok(Perceiver { input: dense(c, &format!("{at}/input_layer"), inputs, e, b)?, blocks })
    }

    /// The `L × E` encoding of the `n` rows of `x` into `out`.
    fn forward(&self, z: &EvoTfSizes, x: &[f64], n: usize, w: &mut Work, out: &mut [f64]) {
        let (e, l, heads) = (z.embed_dim, z.num_latents, z.num_heads);
        let dh = e / heads;
        self.input.apply_rows(x, &mut w.h[..n * e]);
        let mut rows = n;
        for b in &self.blocks {
            b.ln1.rows(&w.h[..rows * e], &mut w.hn[..rows * e]);
            b.kv.apply_rows(&w.hn[..rows * e], &mut w.proj[..rows * 2 * e]);
            let kv = &w.proj[..rows * 2 * e];
            attend(
                (&b.q, View { stride: e, head: dh, off: 0 }),
                (kv, View { stride: 2 * e, head: 2 * dh, off: 0 }),
                (kv, View { stride: 2 * e, head: 2 * dh, off: dh }),
                l,
                rows,
                heads,
                dh,
                false,
                &mut w.logits,
                &mut w.vals[..l * e],
            );
            b.out.apply_rows(&w.vals[..l * e], &mut w.a[..l * e]);
            b.ln2.rows(&w.a[..l * e], &mut w.hn[..l * e]);
            b.mlp.rows(&w.hn[..l * e], &mut w.hidden[..l * 4 * e], &mut w.h[..l * e]);
            rows = l;
        }
        out.copy_from_slice(&w.h[..l * e]);
    }
}

/// `attention.py`'s `AttentionBlock`: `x += attention(ln₁(x))`, `x += mlp(ln₂(x))`.
#[derive(Clone, Debug, PartialEq)]
struct AttentionBlock {
    ln1: Norm,
    qkv: Dense,
    out: Dense,
    ln2: Norm,
    mlp: Mlp,
}

impl AttentionBlock {
    fn read(c: &Checkpoint, p: &str, e: usize, b: bool) -> Result<Self, EvoError> {
        Ok(AttentionBlock {
            ln1: Norm::read(c, &format!("{p}/ln_1"), e, b, 1e-6)?,
            qkv: dense(c, &format!("{p}/attn/qkv_proj"), e, 3 * e, b)?,
            out: dense(c, &format!("{p}/attn/out_proj"), e, e, b)?,
            ln2: Norm::read(c, &format!("{p}/ln_2"), e, b, 1e-6)?,
            mlp: Mlp::read(c, &format!("{p}/mlp"), e, b)?,
        })
    }

    /// The block over the `rows` rows of `x` in place; `last`: only the last row's output
    /// (the rest of `x` is then left as it was), which is all a causal stack's top layer needs.
    fn forward(
        &self,
        z: &EvoTfSizes,
        x: &mut [f64],
        rows: usize,
        causal: bool,
        last: bool,
        w: &mut Work,
    ) {
        let (e, heads) = (z.embed_dim, z.num_heads);
        let dh = e / heads;
        self.ln1.rows(&x[..rows * e], &mut w.hn[..rows * e]);
        self.qkv.apply_rows(&w.hn[..rows * e], &mut w.proj[..rows * 3 * e]);
        let (first, nq) = if last { (rows - 1, 1) } else { (0, rows) };
        let qkv = &w.proj[..rows * 3 * e];
        attend(
            (&qkv[first * 3 * e..], View { stride: 3 * e, head: 3 * dh, off: 0 }),
            (qkv, View { stride: 3 * e, head: 3 * dh, off: dh }),
            (qkv, View { stride: 3 * e, head: 3 * dh, off: 2 * dh }),
            nq,
            rows,
            heads,
            dh,
            causal,
            &mut w.logits,
            &mut w.vals[..nq * e],
        );
        let x = &mut x[first * e..rows * e];
        self.out.apply_rows(&w.vals[..nq * e], &mut w.a[..nq * e]);
        x.iter_mut().zip(&w.a[..nq * e]).for_each(|(x, a)| *x += a);
        self.ln2.rows(x, &mut w.hn[..nq * e]);
        self.mlp.rows(&w.hn[..nq * e], &mut w.hidden[..nq * 4 * e], &mut w.a[..nq * e]);
        x.iter_mut().zip(&w.a[..nq * e]).for_each(|(x, a)| *x += a);
    }
}

/// EvoTF's networks and features, as evosax's checkpoint holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct EvoTfNet {
    /// The model's sizes.
    pub sizes: EvoTfSizes,
    /// The features.
    pub features: EvoTfFeatures,
    solution: Perceiver,
    fitness: Option<Perceiver>,
    /// The coordinate self-attention's input layer and blocks.
    dist: Option<(Dense, Vec<AttentionBlock>)>,
    crossd: Option<Perceiver>,
    /// The causal transformer's input layer (applied once per token) and blocks.
    time_input: Dense,
    time: Vec<AttentionBlock>,
    /// The update network: `E → E`, layer norm, ReLU, `E → 2`.
    update: (Dense, Norm, Dense),
    /// Where the weights were read from.
    pub source: String,
}

impl EvoTfNet {
    /// Reads evosax's EvoTF checkpoint (its four configs and `net_params`); a file of another
    /// layout is an error naming the value or array.
    pub fn read(path: &Path) -> Result<Self, EvoError> {
        Self::from_checkpoint(&Checkpoint::read(path)?)
    }

    /// The networks from a parsed checkpoint.
    pub fn from_checkpoint(c: &Checkpoint) -> Result<Self, EvoError> {
        let z = EvoTfSizes::read(c)?;
        let features = EvoTfFeatures::read(c)?;
        let (e, b, layers) = (z.embed_dim, z.use_bias, z.num_layers);
        let (ns, nf, nd) =
            (features.num_solution(), features.num_fitness(), features.num_distribution());
        let solution = Perceiver::read(
            c,
            &format!("{PARAMS}/sol_perceiver/SolutionPerceiver/CompressionPerceiver"),
            ns,
            &z,
            layers,
        )?;
        let fitness = match z.fitness_encoder {
            true => Some(Perceiver::read(
                c,
                &format!("{PARAMS}/fit_perceiver/CompressionPerceiver"),
                nf,
                &z,
                layers,
            )?),
            false => None,
        };
        let dist = match z.dist_encoder {
            true => {
                let at = format!("{PARAMS}/dist_encoder/DistributionAttention");
                let input = dense(c, &format!("{at}/input_layer"), nd, e, b)?;
                let blocks = (0..layers)
                    .map(|i| AttentionBlock::read(c, &format!("{at}/transformer_{i}"), e, b))
                    .collect::<Result<Vec<_>, _>>()?;
                Some((input, blocks))
            }
            false => None,
        };
        // evo_transformer.py: "For now only with a single layer possible".
        let crossd = match z.crossd_encoder {
            true => Some(Perceiver::read(
                c,
                &format!("{PARAMS}/crossd_encoder/CompressionPerceiver"),
                nd,
                &z,
                1,
            )?),
            false => None,
        };
        let at = format!("{PARAMS}/DimBatchedTransformer");
        let time_input = dense(c, &format!("{at}/input_layer"), z.token_width(), e, b)?;
        let time = (0..layers)
            .map(|i| AttentionBlock::read(c, &format!("{at}/transformer_{i}"), e, b))
            .collect::<Result<Vec<_>, _>>()?;
        let u = format!("{PARAMS}/DistributionUpdate");
        // `nn.LayerNorm(self.use_bias)`: evosax passes use_bias as the epsilon (its bias and
        // scale are on), and the weights were trained so.
        let update = (
            dense(c, &format!("{u}/output_net_0"), e, e, b)?,
            Norm::read(c, &format!("{u}/output_net_1"), e, true, b as u8 as f64)?,
            dense(c, &format!("{u}/output_net_4"), e, 2, b)?,
        );
        Ok(EvoTfNet {
            sizes: z,
            features,
            solution,
            fitness,
            dist,
            crossd,
            time_input,
            time,
            update,
            source: c.source.clone(),
        })
    }
}

/// EvoTF over `num_dims` with `pop_size` samples per generation and a context of
/// `context_len` generations (evosax's `max_context_len`, default 100), with its meta-learned
/// networks (evosax keeps them in its params; here they are a constant of the strategy).
#[derive(Clone, Debug)]
pub struct EvoTf {
    pop_size: usize,
    num_dims: usize,
    context_len: usize,
    net: Arc<EvoTfNet>,
    /// SNES's and DES's rank weights at this population (`xnes.get_weights`,
    /// `discovered_es.get_weights`).
    nes_weights: Vec<f64>,
    des_weights: Vec<f64>,
    /// The sinusoidal positions, `context_len × E` (evosax's float32 table).
    positions: Vec<f64>,
}

/// EvoTF hyper-parameters (evosax's `default_params`).
#[derive(Clone, Debug, PartialEq)]
pub struct EvoTfParams {
    /// Initial per-coordinate step size (evosax's `std_init`, default 1).
    pub sigma_init: f64,
    /// Scale of the mean update (`lr_mean`, default 1).
    pub lr_mean: f64,
    /// Scale of the log-σ update (`lr_std`, default 1).
    pub lr_sigma: f64,
}

/// EvoTF state.
#[derive(Clone, Debug)]
pub struct EvoTfState {
    /// Mean.
    pub mean: Vec<f64>,
    /// Per-coordinate step sizes.
    pub sigma: Vec<f64>,
    /// The best fitness before this generation (the featurizers' `best_fitness`).
    pub best_fitness: f64,
    /// The best row so far (the solution featurizer's `best_solution`).
    pub best_row: Vec<f64>,
    /// The mean and σ of the last generation told (the distribution featurizer's `old_mean`,
    /// `old_std`: zeros and ones at first).
    pub old_mean: Vec<f64>,
    /// See `old_mean`.
    pub old_sigma: Vec<f64>,
    /// Traces of the SNES gradients of m and of σ, `n × k` each.
    pub path_mean: Vec<f64>,
    /// See `path_mean`.
    pub path_sigma: Vec<f64>,
    /// Traces of m's and σ's changes, `n × k` each.
    pub mom_mean: Vec<f64>,
    /// See `mom_mean`.
    pub mom_sigma: Vec<f64>,
    /// The context: each generation's token per coordinate after the transformer's input
    /// layer, `context_len × n × E`, generation `g` in slot `g mod context_len`.
    pub context: Vec<f64>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    fit: Vec<f64>,
    fit32: Vec<f32>,
    order: Vec<usize>,
    ranks: Vec<f64>,
    rows: Vec<f64>,
    ffeat: Vec<f64>,
    dfeat: Vec<f64>,
    fit_enc: Vec<f64>,
    dist_enc: Vec<f64>,
    crossd_enc: Vec<f64>,
    sol_enc: Vec<f64>,
    tokens: Vec<f64>,
    seq: Vec<f64>,
    work: Work,
}

impl EvoTf {
    /// EvoTF with the networks given ([`EvoTfNet::read`]); `pop_size ≥ 2`, `context_len` in
    /// `1..=5000`.
    pub fn new(
        pop_size: usize,
        num_dims: usize,
        context_len: usize,
        net: Arc<EvoTfNet>,
    ) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        check_context(context_len)?;
        let lam = pop_size;
        let raw: Vec<f64> =
            (1..=lam).map(|k| ((lam as f64 / 2.0 + 1.0).ln() - (k as f64).ln()).max(0.0)).collect();
        let total: f64 = raw.iter().sum();
        let nes_weights = raw.iter().map(|w| w / total - 1.0 / lam as f64).collect();
        let sig: Vec<f64> = (0..lam)
            .map(|k| {
                let c = k as f64 / (lam - 1) as f64 - 0.5;
                -20.0 / (1.0 + (-12.5 * c).exp())
            })
            .collect();
        let top = sig.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let ex: Vec<f64> = sig.iter().map(|s| (s - top).exp()).collect();
        let sum: f64 = ex.iter().sum();
        let des_weights = ex.iter().map(|x| x / sum).collect();
        // shared.py's PositionalEncoding, in numpy's float32: div = exp(2i · −ln(10⁴) / E),
        // sin and cos of position · div.
        let e = net.sizes.embed_dim;
        let mut positions = vec![0.0; context_len * e];
        let rate = -(10000.0f64.ln() / e as f64);
        for p in 0..context_len {
            for i in 0..e / 2 {
                let div = ((2 * i) as f32 * rate as f32).exp();
                let arg = p as f32 * div;
                positions[p * e + 2 * i] = (arg as f64).sin() as f32 as f64;
                positions[p * e + 2 * i + 1] = (arg as f64).cos() as f32 as f64;
            }
        }
        Ok(EvoTf { pop_size, num_dims, context_len, net, nes_weights, des_weights, positions })
    }

    /// The networks.
    pub fn net(&self) -> &EvoTfNet {
        &self.net
    }

    /// The context length (evosax's `max_context_len`).
    pub fn context_len(&self) -> usize {
        self.context_len
    }

    /// The last told generation's fitness features (`pop_size × k`) and distribution features
    /// (`num_dims × k`), as evosax's context holds them.
    pub fn features<'a>(&self, s: &'a EvoTfState) -> (&'a [f64], &'a [f64]) {
        (&s.ffeat, &s.dfeat)
    }

    /// The population from given standard normals (`pop_size × num_dims`): `m + σ ∘ z_i`.
    pub fn ask_from_normals(&self, s: &mut EvoTfState, z: &[f64], population: &mut [f32]) {
        s.z.copy_from_slice(z);
        self.fill(s, population);
    }

    fn fill(&self, s: &EvoTfState, population: &mut [f32]) {
        let n = self.num_dims;
        check_lens("EvoTf::ask", self.pop_size, n, population, None);
        diagonal_rows(&s.mean, &s.sigma, &s.z, population);
    }

    /// The fitness features (`features/fitness.py`) of `s.fit` into `s.ffeat`, from the best
    /// before this generation.
    fn fitness_features(&self, s: &mut EvoTfState) {
        let (lam, ft) = (self.pop_size, &self.net.features);
        let nf = ft.num_fitness();
        let fit = &s.fit;
        ordinal_ranks(&s.fit32, &mut s.order, &mut s.ranks);
        let mean = fit.iter().sum::<f64>() / lam as f64;
        let sd = (fit.iter().map(|f| (f - mean) * (f - mean)).sum::<f64>() / lam as f64).sqrt();
        let clipped = |f: f64| f.clamp(-1e10, 1e10);
        let (lo, hi) = fit.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &f| {
            (l.min(clipped(f)), h.max(clipped(f)))
        });
        let best = s.best_fitness;
        let (dlo, dhi) = (lo - best, hi - best);
        let [improved, z_score, diff_best, norm_range, snes, des] = ft.fitness;
        for i in 0..lam {
            let f = fit[i];
            let o = &mut s.ffeat[i * nf..(i + 1) * nf];
            o[0] = s.ranks[i] / (lam - 1) as f64 - 0.5;
            let mut c = 1;
            let mut put = |on: bool, v: f64| {
                if on {
                    o[c] = v;
                    c += 1;
                }
            };
            put(improved, if f < best { 1.0 } else { 0.0 });
            put(z_score, (f - mean) / (sd + 1e-10));
            // get_norm_diff_best: −1 before any best.
            put(
                diff_best,
                if best.is_finite() {
                    ((clipped(f) - best) / (dhi - dlo + 1e-10)).clamp(-1.0, 1.0)
                } else {
                    -1.0
                },
            );
            put(norm_range, (clipped(f) - lo) / (hi - lo + 1e-10) - 0.5);
            // Indexed by the argsort, as evosax's `get_nes_weights(n)[fitness.argsort()]`.
            put(snes, self.nes_weights[s.order[i]]);
            put(des, self.des_weights[s.order[i]]);
        }
    }
}

impl Strategy for EvoTf {
    type Params = EvoTfParams;
    type State = EvoTfState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> EvoTfParams {
        EvoTfParams { sigma_init: 1.0, lr_mean: 1.0, lr_sigma: 1.0 }
    }

    fn init(&self, _key: Key, params: &EvoTfParams, mean: &[f32]) -> EvoTfState {
        let (lam, n, t) = (self.pop_size, self.num_dims, self.context_len);
        assert_eq!(mean.len(), n, "EvoTf::init: mean must have num_dims values");
        let z = &self.net.sizes;
        let ft = &self.net.features;
        let (e, l) = (z.embed_dim, z.num_latents);
        let (kp, km) = (ft.evopath_timescales.len(), ft.momentum_timescales.len());
        let rows = lam.max(n).max(t).max(l);
        EvoTfState {
            mean: mean.iter().map(|&m| m as f64).collect(),
            sigma: vec![params.sigma_init; n],
            best_fitness: f64::INFINITY,
            best_row: vec![0.0; n],
            old_mean: vec![0.0; n],
            old_sigma: vec![1.0; n],
            path_mean: vec![0.0; n * kp],
            path_sigma: vec![0.0; n * kp],
            mom_mean: vec![0.0; n * km],
            mom_sigma: vec![0.0; n * km],
            context: vec![0.0; t * n * e],
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            fit: vec![0.0; lam],
            fit32: vec![0.0; lam],
            order: vec![0; lam],
            ranks: vec![0.0; lam],
            rows: vec![0.0; lam * ft.num_solution()],
            ffeat: vec![0.0; lam * ft.num_fitness()],
            dfeat: vec![0.0; n * ft.num_distribution()],
            fit_enc: vec![0.0; l * e],
            dist_enc: vec![0.0; n * e],
            crossd_enc: vec![0.0; l * e],
            sol_enc: vec![0.0; l * e],
            tokens: vec![0.0; n * z.token_width()],
            seq: vec![0.0; t * e],
            work: Work::new(rows, e),
        }
    }

    fn ask(&self, key: Key, s: &mut EvoTfState, _p: &EvoTfParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut s.z);
        self.fill(s, population);
    }

    fn tell(
        &self,
        _key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut EvoTfState,
        p: &EvoTfParams,
    ) -> TellMetrics {
        let (lam, n, t) = (self.pop_size, self.num_dims, self.context_len);
        check_lens("EvoTf::tell", lam, n, population, Some(fitness));
        let generation = s.progress.generation as usize;
        let (best, bad) = s.progress.record(population, fitness);
        // A failed evaluation reads as the generation's worst.
        finite_or_worst(fitness, &mut s.fit);
        s.fit32.iter_mut().zip(&s.fit).for_each(|(f, &v)| *f = v as f32);
        let net = &*self.net;
        let (z, ft) = (&net.sizes, &net.features);
        let (e, l) = (z.embed_dim, z.num_latents);

        // Fitness features, from the best before this generation; then the best row.
        self.fitness_features(s);
        if ft.w_decay > 0.0 {
            let nf = ft.num_fitness();
            for i in 0..lam {
                let row = &population[i * n..(i + 1) * n];
                let sq = row.iter().map(|&x| x as f64 * x as f64).sum::<f64>() / n as f64;
                s.ffeat[i * nf + nf - 1] = sq;
            }
        }
        let top = s.order[0];
        if s.fit[top] < s.best_fitness {
            s.best_fitness = s.fit[top];
            for j in 0..n {
                s.best_row[j] = population[top * n + j] as f64;
            }
        }

        // Distribution features (`features/distribution.py`): SNES's gradients of the sorted
        // normalised steps, their traces, the traces of the changes, OpenAI-ES's gradient.
        let nd = ft.num_distribution();
        let (kp, km) = (ft.evopath_timescales.len(), ft.momentum_timescales.len());
        let [use_mean, use_sigma, use_paths, use_moms, use_oai] = ft.distribution;
        for j in 0..n {
            let (m, sg) = (s.mean[j], s.sigma[j]);
            let (mut gm, mut gs, mut oai) = (0.0, 0.0, 0.0);
            // Rows in fitness order: the `k`-th has SNES weight `k` and centred rank
            // `k / (λ − 1) − 0.5` (OpenAI-ES's shaping).
            for (k, &i) in s.order.iter().enumerate() {
                let eps = (population[i * n + j] as f64 - m) / sg;
                gm += self.nes_weights[k] * eps;
                gs += self.nes_weights[k] * (eps * eps - 1.0);
                oai += eps * (k as f64 / (lam - 1) as f64 - 0.5);
            }
            oai /= lam as f64 * sg;
            let o = &mut s.dfeat[j * nd..(j + 1) * nd];
            o[0] = gm;
            o[1] = gs;
            let mut c = 2;
            if use_mean {
                o[c] = m;
                c += 1;
            }
            if use_sigma {
                o[c] = sg;
                c += 1;
            }
            for (r, &rate) in ft.evopath_timescales.iter().enumerate() {
                let pm = &mut s.path_mean[j * kp + r];
                *pm = (1.0 - rate) * *pm + rate * gm;
                let ps = &mut s.path_sigma[j * kp + r];
                *ps = (1.0 - rate) * *ps + rate * gs;
            }
            if use_paths {
                o[c..c + kp].copy_from_slice(&s.path_mean[j * kp..(j + 1) * kp]);
                o[c + kp..c + 2 * kp].copy_from_slice(&s.path_sigma[j * kp..(j + 1) * kp]);
                c += 2 * kp;
            }
            for (r, &rate) in ft.momentum_timescales.iter().enumerate() {
                let mm = &mut s.mom_mean[j * km + r];
                *mm = (1.0 - rate) * *mm + rate * (m - s.old_mean[j]);
                let ms = &mut s.mom_sigma[j * km + r];
                *ms = (1.0 - rate) * *ms + rate * (sg - s.old_sigma[j]);
            }
            if use_moms {
                o[c..c + km].copy_from_slice(&s.mom_mean[j * km..(j + 1) * km]);
                o[c + km..c + 2 * km].copy_from_slice(&s.mom_sigma[j * km..(j + 1) * km]);
                c += 2 * km;
            }
            if use_oai {
                o[c] = oai;
            }
        }
        s.old_mean.copy_from_slice(&s.mean);
        s.old_sigma.copy_from_slice(&s.sigma);

        // This generation's encodings: fitness rows, coordinates (self-attention and
        // perceiver), and per coordinate its rows; then each coordinate's token.
        if let Some(fp) = &net.fitness {
            fp.forward(z, &s.ffeat, lam, &mut s.work, &mut s.fit_enc);
        }
        if let Some((input, blocks)) = &net.dist {
            input.apply_rows(&s.dfeat, &mut s.dist_enc);
            for b in blocks {
                b.forward(z, &mut s.dist_enc, n, false, false, &mut s.work);
            }
        }
        if let Some(cp) = &net.crossd {
            cp.forward(z, &s.dfeat, n, &mut s.work, &mut s.crossd_enc);
        }
        let ns = ft.num_solution();
        let [diff_mean, diff_mean_sq, diff_best, norm_diff_best] = ft.solution;
        let width = z.token_width();
        for j in 0..n {
            let (m, sg, xb) = (s.mean[j], s.sigma[j], s.best_row[j]);
            let clipped = |x: f64| x.clamp(-1e10, 1e10);
            let (lo, hi) = (0..lam).fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), i| {
                let d = clipped(population[i * n + j] as f64 - xb);
                (lo.min(d), hi.max(d))
            });
            for i in 0..lam {
                let x = population[i * n + j] as f64;
                let o = &mut s.rows[i * ns..(i + 1) * ns];
                o[0] = x;
                let mut c = 1;
                let mut put = |on: bool, v: f64| {
                    if on {
                        o[c] = v;
                        c += 1;
                    }
                };
                put(diff_mean, (x - m) / sg);
                put(diff_mean_sq, ((x - m) / sg) * ((x - m) / sg));
                put(diff_best, x - xb);
                put(norm_diff_best, (clipped(x - xb) - lo) / (hi - lo + 1e-10) - 0.5);
            }
            net.solution.forward(z, &s.rows, lam, &mut s.work, &mut s.sol_enc);
            let tok = &mut s.tokens[j * width..(j + 1) * width];
            let mut c = 0;
            for li in 0..l {
                tok[c..c + e].copy_from_slice(&s.sol_enc[li * e..(li + 1) * e]);
                c += e;
                if net.fitness.is_some() {
                    tok[c..c + e].copy_from_slice(&s.fit_enc[li * e..(li + 1) * e]);
                    c += e;
                }
            }
            if net.dist.is_some() {
                tok[c..c + e].copy_from_slice(&s.dist_enc[j * e..(j + 1) * e]);
                c += e;
            }
            if net.crossd.is_some() {
                tok[c..c + l * e].copy_from_slice(&s.crossd_enc);
            }
        }
        let slot = generation % t;
        net.time_input.apply_rows(&s.tokens, &mut s.context[slot * n * e..(slot + 1) * n * e]);

        // Per coordinate, the causal transformer over the window (the newest token last, at
        // position `count − 1`) and the update network on the newest token.
        let count = (generation + 1).min(t);
        let first = generation + 1 - count;
        let (d1, ln, d2) = &net.update;
        let layers = net.time.len();
        for j in 0..n {
            for r in 0..count {
                let slot = (first + r) % t;
                let tok = &s.context[(slot * n + j) * e..(slot * n + j + 1) * e];
                let pos = &self.positions[r * e..(r + 1) * e];
                for k in 0..e {
                    s.seq[r * e + k] = tok[k] + pos[k];
                }
            }
            for (li, b) in net.time.iter().enumerate() {
                b.forward(z, &mut s.seq, count, true, li + 1 == layers, &mut s.work);
            }
            let x = &s.seq[(count - 1) * e..count * e];
            let w = &mut s.work;
            d1.apply(x, &mut w.a[..e]);
            ln.rows(&w.a[..e], &mut w.hn[..e]);
            w.hn[..e].iter_mut().for_each(|h| *h = h.max(0.0));
            let mut out = [0.0f64; 2];
            d2.apply(&w.hn[..e], &mut out);
            let (m, sg) = (s.mean[j], s.sigma[j]);
            s.mean[j] = (m + p.lr_mean * sg * out[0]).clamp(-MEAN_BOUND, MEAN_BOUND);
            s.sigma[j] = (sg * (p.lr_sigma / 2.0 * out[1]).exp()).clamp(STD_FLOOR, f32::MAX as f64);
        }
        let sigma = s.sigma.iter().sum::<f64>() / n as f64;
        s.progress.metrics(best, bad, sigma)
    }

    fn mean(&self, state: &EvoTfState) -> Vec<f32> {
        to_f32(&state.mean)
    }
    fn progress<'a>(&self, state: &'a EvoTfState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(EvoTfState {
    vec mean,
    vec sigma,
    scalar best_fitness,
    vec best_row,
    vec old_mean,
    vec old_sigma,
    vec path_mean,
    vec path_sigma,
    vec mom_mean,
    vec mom_sigma,
    vec context,
});
