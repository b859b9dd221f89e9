//! The sequential VAE (`SeqVae` of the reference) and its ELBO with the multi-step KL, forward
//! and backward in f64.
//!
//! - Encoder q(z_t | y_≤t, u_≤t) = N(μ_t, diag σ²_t): a GRU over `[y_t, u_t]` from h₀ = 0, then
//!   μ = Lin(ReLU(Lin h)) and σ² = softplus(Lin(ReLU(Lin h))) + 1e-6.
//! - Latent dynamics mean m(z): an MLP or RBF features on a grid ([`crate::rbf`]); transition
//!   mean μ′(z, u) = m(z) + u·dt, or z + m(z)·dt + u·dt when residual; process variance
//!   v = softplus(ℓ) + 1e-6 (sampling uses v·dt).
//! - Decoder ŷ = exp(C′z + b′) (log-linear), C′z + b′ (linear) or an MLP, with a Gaussian
//!   (learned variance softplus(ℓʸ) + 1e-6) or Poisson likelihood.
//!
//! Parameters are one flat vector; [`SeqVae::tensors`] names its pieces with the reference's
//! PyTorch names (`encoder.network.weight_ih_l0`, …), PyTorch's shapes, and whether the flat
//! vector holds the tensor transposed (Kestrel's layers compute `x·W`, PyTorch's `W·x`).
//!
//! The ELBO (reference `compute_elbo`, spec §1.3) for one window of T pairs (y_t, u_t), with
//! every random draw passed in ([`ElboNoise`]) so that golden tests replay the reference's:
//! posterior samples z = μ + σε, temporal mask, the one-step and K-step prior means, KL_k
//! weighted by 0.8^{k−1} (normalised), the log-likelihood of the (masked) samples, and
//! loss = −(LL − β·KL_w). [`SeqVae::elbo`] returns the terms and, when asked, adds ∂loss/∂θ.

use crate::error::ActdynError;
use crate::rbf::{RbfDynamics, RbfGrid};
use kestrel_core::{FromInvalid, Key};
use kestrel_nn::matmul::{Op, matmul};
use kestrel_nn::{Act, Activation, Dense, Gru, GruCache, Init, Layer, Sequential, Workspace};
use serde::{Deserialize, Serialize};

/// Widest hidden layer of an MLP action encoder (the reference's is 16; a bound on what a
/// config may ask, as for the other networks).
pub const MAX_ACTION_WIDTH: usize = 64;

/// The action encoder's branch of the model key ([`SeqVae::init`]).
const ACTION_KEY: u64 = 0x6163_7469_6f6e;

/// The latent dynamics network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type", deny_unknown_fields)]
pub enum DynamicsKind {
    /// An MLP with ReLU hidden layers (reference default: one hidden layer of 16).
    Mlp {
        /// Hidden widths.
        #[serde(default = "defaults::hidden")]
        hidden: Vec<usize>,
    },
    /// RBF features on a grid of centres, m(z) = Φ(z)ᵀW (needs a 2-D latent).
    Rbf {
        /// Centres per axis (25).
        #[serde(default = "defaults::grid")]
        grid: usize,
        /// Centres span [−z_max, z_max]² (2).
        #[serde(default = "defaults::z_max")]
        z_max: f64,
        /// Feature scale α (0.1).
        #[serde(default = "defaults::alpha")]
        alpha: f64,
        /// Width γ (1).
        #[serde(default = "defaults::gamma")]
        gamma: f64,
    },
}

/// The action encoder: the transition adds ũ·dt with ũ = E(u), or E(u, z) from the posterior
/// sample the transition starts from (the reference's `IdentityActionEncoder`,
/// `LinearActionEncoder` and `MlpActionEncoder`, `actdyn/environment/action.py` at `d406ea6`;
/// its parameters train with the model's).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type", deny_unknown_fields)]
pub enum ActionEncoderKind {
    /// ũ = u (reference default; the faithful profile's patch ignores the state).
    #[default]
    Identity,
    /// ũ = Wu + b (PyTorch's `nn.Linear(d_action, d_latent)`).
    Linear,
    /// ũ = MLP(u), or MLP([u, z]) with `state_dependent`: ReLU hidden layers.
    Mlp {
        /// Hidden widths (the reference's `hidden_dims`, `[16]`); at most 64 each.
        #[serde(default = "defaults::hidden")]
        hidden: Vec<usize>,
        /// Input `[u, z]` instead of `u` (the reference's `act_state_dependent`).
        #[serde(default)]
        state_dependent: bool,
    },
}

impl ActionEncoderKind {
    /// Whether the encoder reads the latent state too.
    pub fn state_dependent(&self) -> bool {
        matches!(self, ActionEncoderKind::Mlp { state_dependent: true, .. })
    }
}

/// Each variant's fields default to the reference's values, so that a config naming only the
/// `type` (`--set model.dynamics.type="rbf"`) gets the reference's network of that kind.
mod defaults {
    pub(super) fn hidden() -> Vec<usize> {
        vec![16]
    }
    pub(super) fn grid() -> usize {
        25
    }
    pub(super) fn z_max() -> f64 {
        2.0
    }
    pub(super) fn alpha() -> f64 {
        0.1
    }
    pub(super) fn gamma() -> f64 {
        1.0
    }
}

impl DynamicsKind {
    /// The reference's RBF defaults (25×25 centres on [−2, 2]², α = 0.1, γ = 1).
    pub fn rbf_default() -> Self {
        DynamicsKind::Rbf {
            grid: defaults::grid(),
            z_max: defaults::z_max(),
            alpha: defaults::alpha(),
            gamma: defaults::gamma(),
        }
    }
}

/// The decoder's mapping from latent to observation rate/mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecoderKind {
    /// ŷ = exp(C′z + b′) (reference default).
    #[serde(alias = "log_linear")]
    LogLinear,
    /// ŷ = C′z + b′.
    Linear,
    /// ŷ = MLP(z) with one ReLU hidden layer of 16 (Gaussian likelihood only).
    Mlp,
}

/// The observation likelihood.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LikelihoodKind {
    /// Gaussian with a learned per-output variance (reference default).
    Gaussian,
    /// Poisson with rate ŷ (needs a positive rate: log-linear decoder).
    Poisson,
}

/// Shape of the sequential VAE. Defaults are the reference's (`config.py`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Observation width N_y (50).
    pub obs_dim: usize,
    /// Latent width D (2); the action width equals it (identity action encoder).
    pub latent_dim: usize,
    /// GRU hidden units (16).
    pub rnn_hidden: usize,
    /// Hidden width of the μ and variance heads (16).
    pub head_hidden: usize,
    /// Latent dynamics.
    pub dynamics: DynamicsKind,
    /// Residual transition z + m(z)·dt (false: m maps state to next state).
    pub residual: bool,
    /// Model time step (0.1): in an actdyn run, a whole multiple n of `env.dt`, each model
    /// step holding its action for n environment steps (`kestrel_run`'s
    /// `ActdynConfig::substeps`).
    pub dt: f64,
    /// Decoder mapping.
    pub decoder: DecoderKind,
    /// Observation likelihood.
    pub likelihood: LikelihoodKind,
    /// Action encoder (identity: the reference's default).
    pub action_encoder: ActionEncoderKind,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            obs_dim: 50,
            latent_dim: 2,
            rnn_hidden: 16,
            head_hidden: 16,
            dynamics: DynamicsKind::Mlp { hidden: vec![16] },
            residual: false,
            dt: 0.1,
            decoder: DecoderKind::LogLinear,
            likelihood: LikelihoodKind::Gaussian,
            action_encoder: ActionEncoderKind::Identity,
        }
    }
}

/// A named piece of the flat parameter vector.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// The reference's (PyTorch) parameter name.
    pub name: String,
    /// Offset in the flat vector.
    pub offset: usize,
    /// PyTorch's shape.
    pub shape: Vec<usize>,
    /// Whether the flat vector holds it transposed (a 2-D `[out][in]` weight stored `in × out`).
    pub transposed: bool,
}

impl Tensor {
    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }
    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Flat-vector index of the element at row-major PyTorch position `i`.
    pub fn index(&self, i: usize) -> usize {
        if self.transposed {
            let (rows, cols) = (self.shape[0], self.shape[1]);
            let (r, c) = (i / cols, i % cols);
            debug_assert!(r < rows);
            self.offset + c * rows + r
        } else {
            self.offset + i
        }
    }
}

#[derive(Debug)]
enum DynNet {
    Mlp(Sequential<f64>),
    Rbf(RbfGrid),
}

/// What one batch of dynamics evaluations keeps for its backward pass.
#[derive(Clone, Debug, Default)]
pub struct DynCache {
    ws: Workspace<f64>,
    z: Vec<f64>,
    phi: Vec<f64>,
    m: Vec<f64>,
    rows: usize,
    /// The action encoder's input rows, workspace and output (`rows × D`).
    act_in: Vec<f64>,
    act_ws: Workspace<f64>,
    u_enc: Vec<f64>,
}

/// The sequential VAE: its configuration, layers and parameter layout.
#[derive(Debug)]
pub struct SeqVae {
    cfg: ModelConfig,
    gru: Gru,
    mu_head: Sequential<f64>,
    var_head: Sequential<f64>,
    dynamics: DynNet,
    decoder: Sequential<f64>,
    /// The action encoder's network (none for the identity).
    act: Option<Sequential<f64>>,
    /// Where each part's parameters sit in the flat vector.
    blocks: Blocks,
    tensors: Vec<Tensor>,
}

/// One part's parameters in the flat vector: `start..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl Span {
    fn range(self) -> std::ops::Range<usize> {
        self.start..self.end
    }
}

/// Where each part's parameters sit in the flat parameter vector, in this order (the
/// checkpoint's tensors name the same parts, `tensors()`).
#[derive(Clone, Copy, Debug)]
struct Blocks {
    /// The encoder's GRU (`encoder.network`).
    gru: Span,
    /// The posterior mean head (`encoder.fc_mu`).
    mu_head: Span,
    /// The posterior variance head (`encoder.fc_logvar`).
    var_head: Span,
    /// The latent dynamics (an MLP, or the RBF grid's weights).
    dynamics: Span,
    /// The dynamics noise's log variance, one per latent dimension.
    dynamics_logvar: Span,
    /// The decoder (`decoder.mapping.network`).
    decoder: Span,
    /// The observation noise's log variance, one per observed dimension.
    decoder_logvar: Span,
    /// The action encoder's network (empty for the identity).
    action_encoder: Span,
}

impl Blocks {
    /// The blocks of parts of these sizes, laid out one after another.
    fn new(sizes: [usize; 8]) -> Self {
        let mut at = 0;
        let [
            gru,
            mu_head,
            var_head,
            dynamics,
            dynamics_logvar,
            decoder,
            decoder_logvar,
            action_encoder,
        ] = sizes.map(|n| {
            let s = Span { start: at, end: at + n };
            at += n;
            s
        });
        Blocks {
            gru,
            mu_head,
            var_head,
            dynamics,
            dynamics_logvar,
            decoder,
            decoder_logvar,
            action_encoder,
        }
    }

    /// Parameters in all.
    fn end(&self) -> usize {
        self.action_encoder.end
    }
}

/// Appends the tensors of `net` (its parameters from `base`) as `{prefix}.{layer}.{param}`,
/// 2-D weights in PyTorch's transposed shape.
fn named(out: &mut Vec<Tensor>, prefix: &str, net: &Sequential<f64>, base: usize) {
    let mut at = base;
    for (name, shape, _) in net.named_params(&vec![0.0; net.num_params()]) {
        let n: usize = shape.iter().product();
        let (shape, transposed) =
            if shape.len() == 2 { (vec![shape[1], shape[0]], true) } else { (shape, false) };
        out.push(Tensor { name: format!("{prefix}.{name}"), offset: at, shape, transposed });
        at += n;
    }
}

fn mlp(sizes: &[usize]) -> Result<Sequential<f64>, ActdynError> {
    let mut layers: Vec<Box<dyn Layer<f64>>> = Vec::new();
    for (i, w) in sizes.windows(2).enumerate() {
        if i > 0 {
            layers.push(Box::new(Act { f: Activation::Relu, dim: w[0] }));
        }
        layers.push(Box::new(Dense::new(w[0], w[1], Init::TorchUniform)?));
    }
    Ok(Sequential::new(layers)?)
}

#[inline]
fn softplus(x: f64) -> f64 {
    if x > 20.0 { x } else { x.exp().ln_1p() }
}

#[inline]
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

impl SeqVae {
    /// Builds the model for `cfg`, checking it.
    pub fn new(cfg: ModelConfig) -> Result<Self, ActdynError> {
        let bad = |field: &'static str, v: String, ok: &'static str| {
            Err(ActdynError::invalid(field, v, ok))
        };
        let (ny, d) = (cfg.obs_dim, cfg.latent_dim);
        if !(1..=100_000).contains(&ny) {
            return bad("model.obs_dim", ny.to_string(), "an integer in [1, 100000]");
        }
        if !(1..=64).contains(&d) {
            return bad("model.latent_dim", d.to_string(), "an integer in [1, 64]");
        }
        if !(1..=4096).contains(&cfg.rnn_hidden) {
            return bad("model.rnn_hidden", cfg.rnn_hidden.to_string(), "an integer in [1, 4096]");
        }
        if !(1..=4096).contains(&cfg.head_hidden) {
            return bad(
                "model.head_hidden",
                cfg.head_hidden.to_string(),
                "an integer in [1, 4096]",
            );
        }
        if !(cfg.dt.is_finite() && cfg.dt > 0.0 && cfg.dt <= 10.0) {
            return bad("model.dt", cfg.dt.to_string(), "a finite number in (0, 10]");
        }
        if cfg.likelihood == LikelihoodKind::Poisson && cfg.decoder != DecoderKind::LogLinear {
            return bad(
                "model.likelihood",
                "poisson".into(),
                "gaussian unless the decoder is log-linear (a Poisson rate must be positive)",
            );
        }
        let (hd, hh) = (cfg.rnn_hidden, cfg.head_hidden);
        let gru = Gru::new(ny + d, hd)?;
        let mu_head = mlp(&[hd, hh, d])?;
        let var_head = mlp(&[hd, hh, d])?;
        let dynamics = match &cfg.dynamics {
            DynamicsKind::Mlp { hidden } => {
                if hidden.iter().any(|&h| !(1..=4096).contains(&h)) || hidden.len() > 8 {
                    return bad(
                        "model.dynamics.hidden",
                        format!("{hidden:?}"),
                        "at most 8 widths, each in [1, 4096]",
                    );
                }
                let mut sizes = vec![d];
                sizes.extend(hidden);
                sizes.push(d);
                DynNet::Mlp(mlp(&sizes)?)
            }
            DynamicsKind::Rbf { grid, z_max, alpha, gamma } => {
                if d != 2 {
                    return bad("model.latent_dim", d.to_string(), "2 with RBF dynamics");
                }
                DynNet::Rbf(RbfGrid::new(*grid, *z_max, *alpha, *gamma)?)
            }
        };
        let decoder = match cfg.decoder {
            DecoderKind::LogLinear | DecoderKind::Linear => mlp(&[d, ny])?,
            DecoderKind::Mlp => mlp(&[d, 16, ny])?,
        };
        let dyn_params = match &dynamics {
            DynNet::Mlp(n) => n.num_params(),
            DynNet::Rbf(g) => g.num_centres() * 2,
        };
        let act = match &cfg.action_encoder {
            ActionEncoderKind::Identity => None,
            ActionEncoderKind::Linear => Some(mlp(&[d, d])?),
            ActionEncoderKind::Mlp { hidden, state_dependent } => {
                if hidden.is_empty()
                    || hidden.len() > 8
                    || hidden.iter().any(|&h| !(1..=MAX_ACTION_WIDTH).contains(&h))
                {
                    return bad(
                        "model.action_encoder.hidden",
                        format!("{hidden:?}"),
                        "1 to 8 widths, each in [1, 64]",
                    );
                }
                let mut sizes = vec![if *state_dependent { 2 * d } else { d }];
                sizes.extend(hidden);
                sizes.push(d);
                Some(mlp(&sizes)?)
            }
        };
        let blocks = Blocks::new([
            gru.num_params(),
            mu_head.num_params(),
            var_head.num_params(),
            dyn_params,
            d,
            decoder.num_params(),
            ny,
            act.as_ref().map_or(0, |a| a.num_params()),
        ]);
        let mut tensors = Vec::new();
        let g3 = 3 * hd;
        let o = blocks.gru.start;
        let t = |name: &str, offset: usize, shape: Vec<usize>, transposed: bool| Tensor {
            name: name.to_string(),
            offset,
            shape,
            transposed,
        };
        tensors.push(t("encoder.network.weight_ih_l0", o, vec![g3, ny + d], true));
        tensors.push(t("encoder.network.weight_hh_l0", o + g3 * (ny + d), vec![g3, hd], true));
        tensors.push(t("encoder.network.bias_ih_l0", o + g3 * (ny + d + hd), vec![g3], false));
        tensors.push(t("encoder.network.bias_hh_l0", o + g3 * (ny + d + hd + 1), vec![g3], false));
        named(&mut tensors, "encoder.fc_mu", &mu_head, blocks.mu_head.start);
        named(&mut tensors, "encoder.fc_logvar", &var_head, blocks.var_head.start);
        match &dynamics {
            DynNet::Mlp(n) => named(&mut tensors, "dynamics.network", n, blocks.dynamics.start),
            DynNet::Rbf(g) => tensors.push(t(
                "dynamics.weights",
                blocks.dynamics.start,
                vec![g.num_centres(), 2],
                false,
            )),
        }
        tensors.push(t("dynamics.logvar", blocks.dynamics_logvar.start, vec![1, d], false));
        named(&mut tensors, "decoder.mapping.network", &decoder, blocks.decoder.start);
        tensors.push(t("decoder.noise.logvar", blocks.decoder_logvar.start, vec![1, ny], false));
        match (&act, &cfg.action_encoder) {
            // `nn.Linear` directly under `network`.
            (Some(a), ActionEncoderKind::Linear) => {
                let mut sub = Vec::new();
                named(&mut sub, "", a, blocks.action_encoder.start);
                for mut t in sub {
                    t.name = format!(
                        "action_encoder.network.{}",
                        t.name.rsplit('.').next().unwrap_or("")
                    );
                    tensors.push(t);
                }
            }
            (Some(a), _) => {
                named(&mut tensors, "action_encoder.network", a, blocks.action_encoder.start)
            }
            (None, _) => {}
        }
        Ok(SeqVae { cfg, gru, mu_head, var_head, dynamics, decoder, act, blocks, tensors })
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Number of parameters (4,256 for the reference's MLP model, 5,424 with RBF dynamics).
    pub fn num_params(&self) -> usize {
        self.blocks.end()
    }

    /// The named tensors of the flat vector, in order.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    /// The tensor called `name`.
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The values of tensor `name` in PyTorch's layout and row-major order (`None` for an
    /// unknown name).
    pub fn tensor_values(&self, params: &[f64], name: &str) -> Option<Vec<f64>> {
        let mut out = Vec::new();
        self.tensor_values_into(params, name, &mut out).then_some(out)
    }

    /// [`SeqVae::tensor_values`] into `out` (cleared first; false for an unknown name).
    pub fn tensor_values_into(&self, params: &[f64], name: &str, out: &mut Vec<f64>) -> bool {
        let Some(t) = self.tensor(name) else { return false };
        out.clear();
        out.extend((0..t.len()).map(|i| params[t.index(i)]));
        true
    }

    /// Writes tensor `name` from `values` in PyTorch's layout and row-major order (what the
    /// reference's `named_parameters()` hold); an unknown name or a wrong length is an error.
    pub fn set_tensor_values(
        &self,
        params: &mut [f64],
        name: &str,
        values: &[f64],
    ) -> Result<(), ActdynError> {
        let t = self.tensor(name).ok_or_else(|| {
            ActdynError::invalid("tensor", name.to_string(), "a parameter name of this model")
        })?;
        if values.len() != t.len() {
            return Err(ActdynError::invalid(
                format!("tensor {name}"),
                format!("{} values", values.len()),
                format!("{} values (shape {:?})", t.len(), t.shape),
            ));
        }
        for (i, v) in values.iter().enumerate() {
            params[t.index(i)] = *v;
        }
        Ok(())
    }

    /// The range of the dynamics parameters (network or RBF weights, then the process
    /// log-variance): the `dynamics.*` tensors.
    pub fn dynamics_range(&self) -> std::ops::Range<usize> {
        self.blocks.dynamics.start..self.blocks.dynamics_logvar.end
    }

    /// The RBF grid, with RBF dynamics.
    pub fn rbf(&self) -> Option<&RbfGrid> {
        match &self.dynamics {
            DynNet::Rbf(g) => Some(g),
            DynNet::Mlp(_) => None,
        }
    }

    /// The mean dynamics of an RBF model with weights `w` (`C × 2`: this model's, or one
    /// ensemble member's), as the planner's and the Fisher metric's rollouts use them.
    ///
    /// # Panics
    /// Without RBF dynamics (validated before any run).
    pub fn rbf_dynamics(&self, w: &[f64]) -> Result<RbfDynamics, ActdynError> {
        let grid = self.rbf().expect("validated: RBF dynamics").clone();
        RbfDynamics::new(grid, w.to_vec(), self.cfg.dt, self.cfg.residual)
    }

    /// The RBF weights W (`C × 2`), with RBF dynamics.
    pub fn rbf_weights<'p>(&self, params: &'p [f64]) -> Option<&'p [f64]> {
        self.rbf().map(|_| &params[self.blocks.dynamics.range()])
    }

    /// The log-linear decoder's C′ (`N_y × D`, PyTorch layout) and b′.
    pub fn decoder_linear(&self, params: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let (mut c, mut b) = (Vec::new(), Vec::new());
        self.decoder_linear_into(params, &mut c, &mut b);
        (c, b)
    }

    /// [`SeqVae::decoder_linear`] into `c` and `b` (their buffers reused).
    pub fn decoder_linear_into(&self, params: &[f64], c: &mut Vec<f64>, b: &mut Vec<f64>) {
        let found = self.tensor_values_into(params, "decoder.mapping.network.0.weight", c)
            && self.tensor_values_into(params, "decoder.mapping.network.0.bias", b);
        assert!(found, "a log-linear decoder");
    }

    /// Process variance v = softplus(ℓ) + 1e-6 (per latent dimension).
    pub fn process_variance(&self, params: &[f64]) -> Vec<f64> {
        params[self.blocks.dynamics_logvar.range()].iter().map(|&l| softplus(l) + 1e-6).collect()
    }

    /// Fresh parameters: PyTorch's default initialisation per layer, the variance head's last
    /// layer at W = 0, b = −3, log-variances −2·U[0, 1), RBF weights N(0, 1).
    pub fn init(&self, key: Key) -> Vec<f64> {
        let mut p = vec![0.0; self.num_params()];
        let [key_gru, key_mu, key_var, key_dyn, key_lv, key_dec, key_dlv] = key.split::<7>();
        self.gru.init(key_gru, &mut p[self.blocks.gru.range()]);
        p[self.blocks.mu_head.range()].copy_from_slice(&self.mu_head.init(key_mu));
        p[self.blocks.var_head.range()].copy_from_slice(&self.var_head.init(key_var));
        let last_w = self.tensor("encoder.fc_logvar.2.weight").expect("head").clone();
        let last_b = self.tensor("encoder.fc_logvar.2.bias").expect("head").clone();
        p[last_w.offset..last_w.offset + last_w.len()].iter_mut().for_each(|v| *v = 0.0);
        p[last_b.offset..last_b.offset + last_b.len()].iter_mut().for_each(|v| *v = -3.0);
        match &self.dynamics {
            DynNet::Mlp(n) => p[self.blocks.dynamics.range()].copy_from_slice(&n.init(key_dyn)),
            DynNet::Rbf(_) => {
                let mut r = key_dyn.rng();
                p[self.blocks.dynamics.range()].iter_mut().for_each(|v| *v = r.standard_normal());
            }
        }
        let mut r = key_lv.rng();
        p[self.blocks.dynamics_logvar.range()].iter_mut().for_each(|v| *v = -2.0 * r.uniform_f64());
        p[self.blocks.decoder.range()].copy_from_slice(&self.decoder.init(key_dec));
        let mut r = key_dlv.rng();
        p[self.blocks.decoder_logvar.range()].iter_mut().for_each(|v| *v = -2.0 * r.uniform_f64());
        if let Some(a) = &self.act {
            // Its own branch of the key: the identity's parameters stay as they were.
            p[self.blocks.action_encoder.range()].copy_from_slice(&a.init(key.fold_in(ACTION_KEY)));
        }
        p
    }

    // ---------------------------------------------------------------- dynamics

    /// m(z) for `rows` latent rows (`rows × D`) into `cache.m`, keeping what the backward
    /// pass needs.
    fn dyn_forward(&self, params: &[f64], z: &[f64], cache: &mut DynCache) {
        let d = self.cfg.latent_dim;
        let rows = z.len() / d;
        cache.rows = rows;
        cache.m.resize(rows * d, 0.0);
        let p = &params[self.blocks.dynamics.range()];
        match &self.dynamics {
            DynNet::Mlp(net) => {
                let out = net.forward(p, z, &mut cache.ws);
                cache.m.copy_from_slice(out);
            }
            DynNet::Rbf(g) => {
                let c = g.num_centres();
                cache.z.clear();
                cache.z.extend_from_slice(z);
                cache.phi.resize(rows * c, 0.0);
                for (zr, phi) in z.chunks(2).zip(cache.phi.chunks_mut(c)) {
                    g.features([zr[0], zr[1]], phi);
                }
                matmul(rows, c, 2, &cache.phi, Op::N, p, Op::N, &mut cache.m, false);
            }
        }
    }

    /// Backward of the last [`SeqVae::dyn_forward`] on `cache`: adds ∂/∂(dynamics params) and
    /// writes ∂/∂z (`rows × D`) into `dz`.
    fn dyn_backward(
        &self,
        params: &[f64],
        cache: &mut DynCache,
        dm: &[f64],
        grads: &mut [f64],
        dz: &mut [f64],
    ) {
        let p = &params[self.blocks.dynamics.range()];
        let g = &mut grads[self.blocks.dynamics.range()];
        match &self.dynamics {
            DynNet::Mlp(net) => net.backward(p, &mut cache.ws, dm, g, Some(dz)),
            DynNet::Rbf(grid) => {
                let c = grid.num_centres();
                let rows = cache.rows;
                matmul(c, rows, 2, &cache.phi, Op::T, dm, Op::N, g, true);
                let two_gamma = 2.0 * grid.gamma();
                let axis = grid.axis();
                let n = axis.len();
                for r in 0..rows {
                    let phi = &cache.phi[r * c..][..c];
                    let (z0, z1) = (cache.z[2 * r], cache.z[2 * r + 1]);
                    let (g0, g1) = (dm[2 * r], dm[2 * r + 1]);
                    // ∂m_d/∂z_e = −2γ Σ_c W[c,d] Φ_c (z_e − c_e); centre n·i + j is (g_i, g_j),
                    // so the sums over centres split by grid row.
                    let (mut sq, mut sx, mut sy) = (0.0, 0.0, 0.0);
                    for i in 0..n {
                        let (mut row, mut row_y) = (0.0, 0.0);
                        let ph = &phi[i * n..(i + 1) * n];
                        let w = &p[2 * i * n..2 * (i + 1) * n];
                        for j in 0..n {
                            let q = ph[j] * (g0 * w[2 * j] + g1 * w[2 * j + 1]);
                            row += q;
                            row_y += q * axis[j];
                        }
                        sq += row;
                        sx += row * axis[i];
                        sy += row_y;
                    }
                    dz[2 * r] = -two_gamma * (z0 * sq - sx);
                    dz[2 * r + 1] = -two_gamma * (z1 * sq - sy);
                }
            }
        }
    }

    /// Transition means μ′(z, u) for rows of z and u (`rows × D` each) into `out`, using
    /// `cache` as scratch. No noise.
    pub fn transition_mean(
        &self,
        params: &[f64],
        z: &[f64],
        u: &[f64],
        cache: &mut DynCache,
        out: &mut [f64],
    ) {
        self.dyn_forward(params, z, cache);
        let dt = self.cfg.dt;
        let rows = z.len() / self.cfg.latent_dim;
        let ue = match &self.act {
            None => u,
            Some(_) => {
                let d = self.cfg.latent_dim;
                let row = |r: usize| (&u[r * d..(r + 1) * d], &z[r * d..(r + 1) * d]);
                self.encode_actions(
                    params,
                    rows,
                    row,
                    &mut cache.act_in,
                    &mut cache.act_ws,
                    &mut cache.u_enc,
                );
                &cache.u_enc[..]
            }
        };
        for i in 0..z.len() {
            out[i] = self.combine(z[i], cache.m[i], ue[i], dt);
        }
    }

    /// Whether actions pass through a network (not the identity).
    pub fn has_action_encoder(&self) -> bool {
        self.act.is_some()
    }

    /// The encoded actions ũ = E(u) for rows of `u` (`rows × D`) without the state: what the
    /// planners roll out (the reference's MPC calls `action_encoder(actions)`; a
    /// state-dependent encoder is refused with planning). The identity copies. Allocates.
    pub fn encode_planned_actions(&self, params: &[f64], u: &[f64]) -> Vec<f64> {
        match &self.act {
            None => u.to_vec(),
            Some(net) => {
                let mut ws = Workspace::default();
                net.forward(&params[self.blocks.action_encoder.range()], u, &mut ws).to_vec()
            }
        }
    }

    /// The action encoder over `rows` rows whose (action, latent) pair `row(r)` gives, into
    /// `out` (`rows × D`), through `input` and `ws` (kept for the backward pass). Not for the
    /// identity.
    fn encode_actions<'a>(
        &self,
        params: &[f64],
        rows: usize,
        row: impl Fn(usize) -> (&'a [f64], &'a [f64]),
        input: &mut Vec<f64>,
        ws: &mut Workspace<f64>,
        out: &mut Vec<f64>,
    ) {
        let d = self.cfg.latent_dim;
        let net = self.act.as_ref().expect("an action encoder network");
        let sd = self.cfg.action_encoder.state_dependent();
        let w = if sd { 2 * d } else { d };
        input.resize(rows * w, 0.0);
        for r in 0..rows {
            let (u, z) = row(r);
            input[r * w..r * w + d].copy_from_slice(u);
            if sd {
                input[r * w + d..(r + 1) * w].copy_from_slice(z);
            }
        }
        let y = net.forward(&params[self.blocks.action_encoder.range()], input, ws);
        out.clear();
        out.extend_from_slice(y);
    }

    #[inline]
    fn combine(&self, z: f64, m: f64, u: f64, dt: f64) -> f64 {
        if self.cfg.residual { z + m * dt + u * dt } else { m + u * dt }
    }

    // ---------------------------------------------------------------- encoder

    /// The encoder over one window: `y` (`T × N_y`), `u` (`T × D`, or `None` for zeros, as
    /// the reference's belief update runs it), from h₀ = 0. Writes μ and σ² (`T × D`).
    pub fn encode(
        &self,
        params: &[f64],
        y: &[f64],
        u: Option<&[f64]>,
        ws: &mut EncoderWorkspace,
        mu: &mut [f64],
        var: &mut [f64],
    ) {
        let (ny, d) = (self.cfg.obs_dim, self.cfg.latent_dim);
        let steps = y.len() / ny;
        ws.prepare(self, steps);
        for t in 0..steps {
            let row = &mut ws.x[t * (ny + d)..][..ny + d];
            row[..ny].copy_from_slice(&y[t * ny..][..ny]);
            match u {
                Some(u) => row[ny..].copy_from_slice(&u[t * d..][..d]),
                None => row[ny..].iter_mut().for_each(|v| *v = 0.0),
            }
        }
        self.gru.forward(&params[self.blocks.gru.range()], &ws.x, None, &mut ws.gru);
        let h = ws.gru.outputs();
        mu[..steps * d].copy_from_slice(self.mu_head.forward(
            &params[self.blocks.mu_head.range()],
            h,
            &mut ws.mu,
        ));
        let pre = self.var_head.forward(&params[self.blocks.var_head.range()], h, &mut ws.var);
        for (v, &p) in var[..steps * d].iter_mut().zip(pre) {
            *v = softplus(p) + 1e-6;
        }
    }

    // ---------------------------------------------------------------- decoder

    /// Decoder output ŷ for rows of z (`rows × D`) into `out` (`rows × N_y`).
    pub fn decode(&self, params: &[f64], z: &[f64], ws: &mut Workspace<f64>, out: &mut [f64]) {
        let pre = self.decoder.forward(&params[self.blocks.decoder.range()], z, ws);
        match self.cfg.decoder {
            DecoderKind::LogLinear => {
                out.iter_mut().zip(pre).for_each(|(o, &p)| *o = p.exp());
            }
            _ => out.copy_from_slice(pre),
        }
    }

    /// A fresh encoder workspace.
    pub fn encoder_workspace(&self) -> EncoderWorkspace {
        EncoderWorkspace::default()
    }

    /// A fresh dynamics cache.
    pub fn dyn_cache(&self) -> DynCache {
        DynCache::default()
    }

    // ---------------------------------------------------------------- ELBO

    /// The ELBO of one window (`y`: `T × N_y` next observations, `u`: `T × D` the actions
    /// that produced them) with the draws in `noise`. With `grads`, adds ∂loss/∂θ to it.
    #[allow(clippy::too_many_arguments)]
    pub fn elbo(
        &self,
        params: &[f64],
        y: &[f64],
        u: &[f64],
        noise: &ElboNoise,
        opts: &ElboOptions,
        ws: &mut ElboWorkspace,
        grads: Option<&mut [f64]>,
    ) -> ElboTerms {
        let (ny, d) = (self.cfg.obs_dim, self.cfg.latent_dim);
        let (s_n, t_n, k_n) = (noise.num_samples, noise.steps, noise.k_steps);
        let dt = self.cfg.dt;
        ws.prepare(self, s_n, t_n, k_n);
        // 1. Encoder.
        let mut mu = std::mem::take(&mut ws.mu_q);
        let mut var = std::mem::take(&mut ws.var_q);
        self.encode(params, y, Some(u), &mut ws.enc, &mut mu, &mut var);
        ws.mu_q = mu;
        ws.var_q = var;
        // 2. Posterior samples.
        for s in 0..s_n {
            for t in 0..t_n {
                for j in 0..d {
                    let i = (s * t_n + t) * d + j;
                    ws.z_me[i] = ws.mu_q[t * d + j] + ws.var_q[t * d + j].sqrt() * noise.eps[i];
                }
            }
        }
        // 2b. Encoded actions ũ[s, t] = E(u_{t+1}, z_me[s, t]) for t = 0..T−2 (the reference's
        // `action_encoder(u[..., 1:, :], z_me[..., :-1, :])`); the identity copies u_{t+1}.
        let rows1 = s_n * (t_n - 1);
        match &self.act {
            None => {
                ws.u_enc.resize(rows1 * d, 0.0);
                for s in 0..s_n {
                    for t in 0..t_n - 1 {
                        let dst = (s * (t_n - 1) + t) * d;
                        ws.u_enc[dst..dst + d].copy_from_slice(&u[(t + 1) * d..(t + 2) * d]);
                    }
                }
            }
            Some(_) => {
                let z_me = &ws.z_me;
                let row = |r: usize| {
                    let (s, t) = (r / (t_n - 1), r % (t_n - 1));
                    (&u[(t + 1) * d..(t + 2) * d], &z_me[(s * t_n + t) * d..(s * t_n + t + 1) * d])
                };
                self.encode_actions(
                    params,
                    rows1,
                    row,
                    &mut ws.act_in,
                    &mut ws.act_ws,
                    &mut ws.u_enc,
                );
            }
        }
        // 3. One-step means from z_me[s, t], t = 0..T−2, with ũ[s, t].
        for s in 0..s_n {
            for t in 0..t_n - 1 {
                let src = (s * t_n + t) * d;
                let dst = (s * (t_n - 1) + t) * d;
                ws.buf[dst..dst + d].copy_from_slice(&ws.z_me[src..src + d]);
            }
        }
        let mut one = std::mem::take(&mut ws.one);
        self.dyn_forward(params, &ws.buf[..rows1 * d], &mut one);
        for s in 0..s_n {
            for t in 0..t_n - 1 {
                for j in 0..d {
                    let i = (s * (t_n - 1) + t) * d + j;
                    let zin = ws.z_me[(s * t_n + t) * d + j];
                    ws.z_tr[i] = self.combine(zin, one.m[i], ws.u_enc[i], dt);
                }
            }
        }
        ws.one = one;
        // 4. Masked samples.
        for s in 0..s_n {
            for t in 0..t_n {
                for j in 0..d {
                    let i = (s * t_n + t) * d + j;
                    ws.z_bar[i] = if t == 0 {
                        ws.z_me[i]
                    } else {
                        let m = noise.mask[t];
                        m * ws.z_me[i] + (1.0 - m) * ws.z_tr[(s * (t_n - 1) + t - 1) * d + j]
                    };
                }
            }
        }
        // 5. K-step prior means: level k takes ẑ^{k−1}[s, 0..T−k].
        let mut v = std::mem::take(&mut ws.v);
        v.clear();
        v.extend(params[self.blocks.dynamics_logvar.range()].iter().map(|&l| softplus(l) + 1e-6));
        let vscale = if opts.kl_prior_variance_dt { dt } else { 1.0 };
        for k in 1..=k_n {
            let len = t_n - k;
            let prev_len = t_n - k + 1;
            // Level k reads z_bar (k = 1) or the previous level's samples, rows of prev_len.
            let (done, rest) = ws.levels.split_at_mut(k - 1);
            let from = if k == 1 { &ws.z_bar[..] } else { &done[k - 2].zhat[..] };
            let lvl = &mut rest[0];
            for s in 0..s_n {
                for t in 0..len {
                    let dst = (s * len + t) * d;
                    let src = (s * prev_len + t) * d;
                    lvl.zin[dst..dst + d].copy_from_slice(&from[src..src + d]);
                }
            }
            self.dyn_forward(params, &lvl.zin, &mut lvl.dyn_cache);
            let xi = &noise.xi[k - 1];
            for s in 0..s_n {
                for t in 0..len {
                    for j in 0..d {
                        let i = (s * len + t) * d + j;
                        let ue = ws.u_enc[(s * (t_n - 1) + t + k - 1) * d + j];
                        let pm = self.combine(lvl.zin[i], lvl.dyn_cache.m[i], ue, dt);
                        lvl.prior_mu[i] = pm;
                        lvl.zhat[i] = pm + (v[j] * dt).sqrt() * xi[i];
                    }
                }
            }
        }
        // 6. KL per k.
        let mut kl = vec![0.0; k_n];
        let wsum: f64 = (0..k_n).map(|k| opts.kl_decay.powi(k as i32)).sum();
        let w: Vec<f64> = (0..k_n).map(|k| opts.kl_decay.powi(k as i32) / wsum).collect();
        for k in 1..=k_n {
            let len = t_n - k;
            let lvl = &ws.levels[k - 1];
            let mut total = 0.0;
            for t in 0..len {
                let mk = noise.mask[t + k];
                if mk == 0.0 {
                    continue;
                }
                let mut acc = 0.0;
                for s in 0..s_n {
                    for j in 0..d {
                        let vp = v[j] * vscale;
                        let (mq, vq) = (ws.mu_q[(t + k) * d + j], ws.var_q[(t + k) * d + j]);
                        let diff = mq - lvl.prior_mu[(s * len + t) * d + j];
                        acc += 0.5 * ((vp / vq).ln() + diff * diff / vp + vq / vp - 1.0);
                    }
                }
                total += mk * acc / s_n as f64;
            }
            kl[k - 1] = total;
        }
        let kl_w: f64 = kl.iter().zip(&w).map(|(a, b)| a * b).sum();
        // 7. Log-likelihood of the masked samples.
        let rows = s_n * t_n;
        let mut dec_ws = std::mem::take(&mut ws.dec);
        let mut yhat = std::mem::take(&mut ws.yhat);
        self.decode(params, &ws.z_bar, &mut dec_ws, &mut yhat[..rows * ny]);
        let lv_y = &params[self.blocks.decoder_logvar.range()];
        ws.vy.clear();
        ws.vy.extend(lv_y.iter().map(|&l| softplus(l) + 1e-6));
        let mut ll = 0.0;
        match self.cfg.likelihood {
            LikelihoodKind::Gaussian => {
                let ln2pi = (2.0 * std::f64::consts::PI).ln();
                let norm: f64 = ws.vy.iter().map(|v| -0.5 * v.ln() - 0.5 * ln2pi).sum();
                for r in 0..rows {
                    let t = r % t_n;
                    let mut acc = 0.0;
                    for i in 0..ny {
                        let e = y[t * ny + i] - yhat[r * ny + i];
                        acc += e * e / ws.vy[i];
                    }
                    ll += -0.5 * acc + norm;
                }
            }
            LikelihoodKind::Poisson => {
                for r in 0..rows {
                    let t = r % t_n;
                    for i in 0..ny {
                        let yv = y[t * ny + i];
                        let rate = yhat[r * ny + i];
                        ll += yv * (rate + 1e-8).ln() - rate - ln_gamma(yv + 1.0);
                    }
                }
            }
        }
        ll /= s_n as f64;
        let loss = -(opts.ll_weight * ll - opts.beta * kl_w);
        let terms = ElboTerms { ll, kl, kl_w, w, loss };
        if let Some(grads) = grads {
            let f = Forward { params, y, noise, opts, yhat: &yhat, v: &v };
            self.elbo_backward(&f, ws, &mut dec_ws, grads);
        }
        ws.dec = dec_ws;
        ws.yhat = yhat;
        ws.v = v;
        terms
    }

    /// Back-propagates the ELBO's loss into `grads` (added to) from the forward pass's values
    /// (`f`, and the activations in `ws` and `dec_ws`), part by part as the loss flows back:
    /// the decoder ([`SeqVae::decoder_backward`]), the KL terms ([`SeqVae::kl_backward`]),
    /// the K-step prior chain ([`SeqVae::chain_backward`]), the dynamics noise, the one-step
    /// means ([`SeqVae::one_step_backward`]), the action encoder and the encoder
    /// ([`SeqVae::encoder_backward`]). Each adds its blocks' gradients and leaves the latent
    /// gradients (`ws.dz_bar`, `ws.dz_me`, `ws.dmu_q`, `ws.dvar_q`) for the next.
    fn elbo_backward(
        &self,
        f: &Forward<'_>,
        ws: &mut ElboWorkspace,
        dec_ws: &mut Workspace<f64>,
        grads: &mut [f64],
    ) {
        let d = self.cfg.latent_dim;
        self.decoder_backward(f, ws, dec_ws, grads);
        let mut dv = std::mem::take(&mut ws.dv);
        dv.clear();
        dv.resize(d, 0.0);
        self.kl_backward(f, ws, &mut dv);
        self.chain_backward(f, ws, &mut dv, grads);
        // The dynamics noise's variance v = softplus(l) + 1e-6: ∂/∂l = ∂/∂v · sigmoid(l).
        for j in 0..d {
            let l = f.params[self.blocks.dynamics_logvar.start + j];
            grads[self.blocks.dynamics_logvar.start + j] += dv[j] * sigmoid(l);
        }
        ws.dv = dv;
        self.one_step_backward(f, ws, grads);
        self.action_encoder_backward(f, ws, grads);
        self.encoder_backward(f, ws, grads);
    }

    /// The log-likelihood through the link and the decoder into `ws.dz_bar`; the observation
    /// noise's log variance.
    fn decoder_backward(
        &self,
        f: &Forward<'_>,
        ws: &mut ElboWorkspace,
        dec_ws: &mut Workspace<f64>,
        grads: &mut [f64],
    ) {
        let (ny, d) = (self.cfg.obs_dim, self.cfg.latent_dim);
        let (s_n, t_n) = (f.noise.num_samples, f.noise.steps);
        let rows = s_n * t_n;
        let inv_s = 1.0 / s_n as f64;
        // ∂loss/∂LL = −ll_weight: the decoder.
        let llw = f.opts.ll_weight;
        let lv_y = &f.params[self.blocks.decoder_logvar.range()];
        ws.sig_y.clear();
        ws.sig_y.extend(lv_y.iter().map(|&l| sigmoid(l)));
        let dpre = &mut ws.gbuf[..rows * ny];
        {
            let dlv_y = &mut grads[self.blocks.decoder_logvar.range()];
            for r in 0..rows {
                let t = r % t_n;
                for i in 0..ny {
                    let yv = f.y[t * ny + i];
                    let yh = f.yhat[r * ny + i];
                    // dℓ/dŷ, then through the link.
                    let dl_dyhat = match self.cfg.likelihood {
                        LikelihoodKind::Gaussian => {
                            let vy = ws.vy[i];
                            let e = yv - yh;
                            let dvy = -0.5 / vy + 0.5 * e * e / (vy * vy);
                            dlv_y[i] -= llw * inv_s * dvy * ws.sig_y[i];
                            e / vy
                        }
                        LikelihoodKind::Poisson => yv / (yh + 1e-8) - 1.0,
                    };
                    let g = -llw * inv_s * dl_dyhat;
                    dpre[r * ny + i] = match self.cfg.decoder {
                        DecoderKind::LogLinear => g * yh,
                        _ => g,
                    };
                }
            }
        }
        ws.dz_bar.iter_mut().for_each(|x| *x = 0.0);
        self.decoder.backward(
            &f.params[self.blocks.decoder.range()],
            dec_ws,
            &dpre[..rows * ny],
            &mut grads[self.blocks.decoder.range()],
            Some(&mut ws.dz_bar[..rows * d]),
        );
    }

    /// The KL terms: ∂/∂prior_mu per level (`lvl.dprior`), ∂/∂μ_q, ∂/∂σ²_q and ∂/∂v (`dv`).
    fn kl_backward(&self, f: &Forward<'_>, ws: &mut ElboWorkspace, dv: &mut [f64]) {
        let d = self.cfg.latent_dim;
        let (s_n, t_n, k_n) = (f.noise.num_samples, f.noise.steps, f.noise.k_steps);
        let inv_s = 1.0 / s_n as f64;
        let vscale = if f.opts.kl_prior_variance_dt { self.cfg.dt } else { 1.0 };
        let wsum: f64 = (0..k_n).map(|k| f.opts.kl_decay.powi(k as i32)).sum();
        ws.dmu_q.iter_mut().for_each(|x| *x = 0.0);
        ws.dvar_q.iter_mut().for_each(|x| *x = 0.0);
        for k in 1..=k_n {
            let len = t_n - k;
            let wk = f.opts.beta * f.opts.kl_decay.powi(k as i32 - 1) / wsum;
            let lvl = &mut ws.levels[k - 1];
            lvl.dprior.iter_mut().for_each(|x| *x = 0.0);
            for t in 0..len {
                let mk = f.noise.mask[t + k];
                if mk == 0.0 {
                    continue;
                }
                let c = mk * wk * inv_s;
                for s in 0..s_n {
                    for j in 0..d {
                        let vp = f.v[j] * vscale;
                        let (mq, vq) = (ws.mu_q[(t + k) * d + j], ws.var_q[(t + k) * d + j]);
                        let i = (s * len + t) * d + j;
                        let diff = mq - lvl.prior_mu[i];
                        lvl.dprior[i] -= c * diff / vp;
                        ws.dmu_q[(t + k) * d + j] += c * diff / vp;
                        ws.dvar_q[(t + k) * d + j] += c * (0.5 / vp - 0.5 / vq);
                        dv[j] += c
                            * vscale
                            * (0.5 / vp - 0.5 * diff * diff / (vp * vp) - 0.5 * vq / (vp * vp));
                    }
                }
            }
        }
    }

    /// The K-step chain, last level first: dẑ^k flows into prior_mu[k] and the noise scale
    /// (`dv`); prior_mu[k] flows back through the dynamics into ẑ^{k−1}, and level 1's into
    /// `ws.dz_bar`.
    fn chain_backward(
        &self,
        f: &Forward<'_>,
        ws: &mut ElboWorkspace,
        dv: &mut [f64],
        grads: &mut [f64],
    ) {
        let d = self.cfg.latent_dim;
        let (s_n, t_n, k_n) = (f.noise.num_samples, f.noise.steps, f.noise.k_steps);
        let dt = self.cfg.dt;
        ws.dzhat.iter_mut().for_each(|x| *x = 0.0);
        for k in (1..=k_n).rev() {
            let len = t_n - k;
            let prev_len = t_n - k + 1;
            let lvl = &mut ws.levels[k - 1];
            let xi = &f.noise.xi[k - 1];
            // ws.dzhat holds ∂/∂ẑ^k (S × len × D; zero for k = K).
            for i in 0..s_n * len * d {
                let j = i % d;
                let g = ws.dzhat[i];
                lvl.dprior[i] += g;
                let sd = (f.v[j] * dt).sqrt();
                dv[j] += g * xi[i] * dt / (2.0 * sd);
            }
            let residual = self.cfg.residual;
            for i in 0..s_n * len * d {
                lvl.dm[i] = if residual { lvl.dprior[i] * dt } else { lvl.dprior[i] };
            }
            let mut dzin = std::mem::take(&mut lvl.dzin);
            self.dyn_backward(f.params, &mut lvl.dyn_cache, &lvl.dm, grads, &mut dzin);
            if residual {
                for i in 0..s_n * len * d {
                    dzin[i] += lvl.dprior[i];
                }
            }
            // Into ∂/∂ẑ^{k−1} (rows of length prev_len), or ∂/∂z_bar for k = 1.
            ws.dzhat.iter_mut().for_each(|x| *x = 0.0);
            for s in 0..s_n {
                for t in 0..len {
                    for j in 0..d {
                        let g = dzin[(s * len + t) * d + j];
                        let dst = (s * prev_len + t) * d + j;
                        if k == 1 {
                            ws.dz_bar[dst] += g;
                        } else {
                            ws.dzhat[dst] += g;
                        }
                    }
                }
            }
            lvl.dzin = dzin;
        }
    }

    /// `z_bar = mask ⊙ z_me + (1 − mask) ⊙ z_tr`, and the one-step means back through the
    /// dynamics into `z_me[s, 0..T−1]` (`ws.dz_me`).
    fn one_step_backward(&self, f: &Forward<'_>, ws: &mut ElboWorkspace, grads: &mut [f64]) {
        let d = self.cfg.latent_dim;
        let (s_n, t_n) = (f.noise.num_samples, f.noise.steps);
        let dt = self.cfg.dt;
        ws.dz_me.iter_mut().for_each(|x| *x = 0.0);
        for s in 0..s_n {
            for t in 0..t_n {
                for j in 0..d {
                    let i = (s * t_n + t) * d + j;
                    let g = ws.dz_bar[i];
                    if t == 0 {
                        ws.dz_me[i] += g;
                    } else {
                        let m = f.noise.mask[t];
                        ws.dz_me[i] += m * g;
                        ws.dz_tr[(s * (t_n - 1) + t - 1) * d + j] = (1.0 - m) * g;
                    }
                }
            }
        }
        let rows1 = s_n * (t_n - 1);
        for i in 0..rows1 * d {
            ws.dm1[i] = if self.cfg.residual { ws.dz_tr[i] * dt } else { ws.dz_tr[i] };
        }
        let mut one = std::mem::take(&mut ws.one);
        let mut dz1 = std::mem::take(&mut ws.dz1);
        self.dyn_backward(f.params, &mut one, &ws.dm1[..rows1 * d], grads, &mut dz1[..rows1 * d]);
        for s in 0..s_n {
            for t in 0..t_n - 1 {
                for j in 0..d {
                    let i = (s * (t_n - 1) + t) * d + j;
                    let mut g = dz1[i];
                    if self.cfg.residual {
                        g += ws.dz_tr[i];
                    }
                    ws.dz_me[(s * t_n + t) * d + j] += g;
                }
            }
        }
        ws.one = one;
        ws.dz1 = dz1;
    }

    /// The action encoder: every one-step and prior mean adds ũ·dt; a state-dependent
    /// encoder passes its state input's gradient on to `ws.dz_me`.
    fn action_encoder_backward(&self, f: &Forward<'_>, ws: &mut ElboWorkspace, grads: &mut [f64]) {
        let d = self.cfg.latent_dim;
        let (s_n, t_n, k_n) = (f.noise.num_samples, f.noise.steps, f.noise.k_steps);
        let dt = self.cfg.dt;
        let rows1 = s_n * (t_n - 1);
        if let Some(net) = &self.act {
            ws.du.clear();
            ws.du.extend(ws.dz_tr[..rows1 * d].iter().map(|g| g * dt));
            for k in 1..=k_n {
                let len = t_n - k;
                let lvl = &ws.levels[k - 1];
                for s in 0..s_n {
                    for t in 0..len {
                        for j in 0..d {
                            let g = lvl.dprior[(s * len + t) * d + j];
                            ws.du[(s * (t_n - 1) + t + k - 1) * d + j] += g * dt;
                        }
                    }
                }
            }
            let sd = self.cfg.action_encoder.state_dependent();
            let w = if sd { 2 * d } else { d };
            ws.dact_in.resize(rows1 * w, 0.0);
            net.backward(
                &f.params[self.blocks.action_encoder.range()],
                &mut ws.act_ws,
                &ws.du,
                &mut grads[self.blocks.action_encoder.range()],
                if sd { Some(&mut ws.dact_in[..]) } else { None },
            );
            if sd {
                for s in 0..s_n {
                    for t in 0..t_n - 1 {
                        let r = s * (t_n - 1) + t;
                        for j in 0..d {
                            ws.dz_me[(s * t_n + t) * d + j] += ws.dact_in[r * w + d + j];
                        }
                    }
                }
            }
        }
    }

    /// The encoder: `z_me = μ + √σ² ε` into the heads' outputs, the heads, then the GRU.
    fn encoder_backward(&self, f: &Forward<'_>, ws: &mut ElboWorkspace, grads: &mut [f64]) {
        let d = self.cfg.latent_dim;
        let (s_n, t_n) = (f.noise.num_samples, f.noise.steps);
        for s in 0..s_n {
            for t in 0..t_n {
                for j in 0..d {
                    let i = (s * t_n + t) * d + j;
                    let g = ws.dz_me[i];
                    ws.dmu_q[t * d + j] += g;
                    ws.dvar_q[t * d + j] += g * f.noise.eps[i] * 0.5 / ws.var_q[t * d + j].sqrt();
                }
            }
        }
        // Heads, then the GRU.
        let h_len = t_n * self.cfg.rnn_hidden;
        ws.dh[..h_len].iter_mut().for_each(|x| *x = 0.0);
        let mut dh2 = std::mem::take(&mut ws.dh2);
        self.mu_head.backward(
            &f.params[self.blocks.mu_head.range()],
            &mut ws.enc.mu,
            &ws.dmu_q[..t_n * d],
            &mut grads[self.blocks.mu_head.range()],
            Some(&mut ws.dh[..h_len]),
        );
        // σ² = softplus(pre) + 1e-6: ∂/∂pre = ∂/∂σ² · sigmoid(pre).
        let pre = ws.enc.var.output();
        for i in 0..t_n * d {
            ws.dpre_var[i] = ws.dvar_q[i] * sigmoid(pre[i]);
        }
        self.var_head.backward(
            &f.params[self.blocks.var_head.range()],
            &mut ws.enc.var,
            &ws.dpre_var[..t_n * d],
            &mut grads[self.blocks.var_head.range()],
            Some(&mut dh2[..h_len]),
        );
        for i in 0..h_len {
            ws.dh[i] += dh2[i];
        }
        ws.dh2 = dh2;
        let dh = std::mem::take(&mut ws.dh);
        self.gru.backward(
            &f.params[self.blocks.gru.range()],
            &ws.enc.x,
            &dh[..h_len],
            &mut ws.enc.gru,
            &mut grads[self.blocks.gru.range()],
            None,
            None,
        );
        ws.dh = dh;
    }
}

/// What the ELBO's backward pass reads of its forward pass: the parameters, the observed
/// window, the noise draws and options, the reconstruction and the dynamics noise variance.
struct Forward<'a> {
    params: &'a [f64],
    y: &'a [f64],
    noise: &'a ElboNoise,
    opts: &'a ElboOptions,
    yhat: &'a [f64],
    v: &'a [f64],
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, n = 9; about 1e-15 relative).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Scratch for [`SeqVae::encode`].
#[derive(Clone, Debug, Default)]
pub struct EncoderWorkspace {
    x: Vec<f64>,
    gru: GruCache<f64>,
    steps: usize,
    mu: Workspace<f64>,
    var: Workspace<f64>,
}

impl EncoderWorkspace {
    fn prepare(&mut self, m: &SeqVae, steps: usize) {
        let width = m.cfg.obs_dim + m.cfg.latent_dim;
        if self.steps != steps || self.x.len() != steps * width {
            self.x = vec![0.0; steps * width];
            self.gru = m.gru.cache(steps, 1);
            self.steps = steps;
        }
    }
}

/// The random draws of one ELBO evaluation (reference draw order: encoder noise, mask, the
/// unused one-step noise, then the K-step prior noise).
#[derive(Clone, Debug, PartialEq)]
pub struct ElboNoise {
    /// Posterior samples S.
    pub num_samples: usize,
    /// Window length T.
    pub steps: usize,
    /// Prior steps K.
    pub k_steps: usize,
    /// ε (`S × T × D`).
    pub eps: Vec<f64>,
    /// M_t ∈ {0, 1} (`T`; 1 keeps the posterior sample).
    pub mask: Vec<f64>,
    /// ξ: for k = 1..K, `S × (T − k) × D`.
    pub xi: Vec<Vec<f64>>,
}

impl ElboNoise {
    /// Zeroed draws for the given sizes (all-ones mask).
    pub fn zeros(num_samples: usize, steps: usize, k_steps: usize, d: usize) -> Self {
        ElboNoise {
            num_samples,
            steps,
            k_steps,
            eps: vec![0.0; num_samples * steps * d],
            mask: vec![1.0; steps],
            xi: (1..=k_steps).map(|k| vec![0.0; num_samples * (steps - k) * d]).collect(),
        }
    }

    /// Fresh draws from `key`: standard normals, and M_t ~ Bernoulli(1 − p_mask).
    pub fn draw(&mut self, key: Key, p_mask: f64) {
        let [ke, km, kx] = key.split::<3>();
        ke.rng().fill_standard_normal(&mut self.eps);
        let mut r = km.rng();
        for m in self.mask.iter_mut() {
            *m = if p_mask > 0.0 && r.uniform_f64() < p_mask { 0.0 } else { 1.0 };
        }
        for (k, xi) in self.xi.iter_mut().enumerate() {
            kx.fold_in(k as u64).rng().fill_standard_normal(xi);
        }
    }
}

/// ELBO options beyond the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ElboOptions {
    /// KL weight β (after annealing).
    pub beta: f64,
    /// The KL_k weights decay 0.8^{k−1} (normalised).
    pub kl_decay: f64,
    /// Prior variance of the KL is v·dt, the variance the prior samples with (`fixed`);
    /// `false` uses v, as the reference does.
    pub kl_prior_variance_dt: bool,
    /// Weight of the log-likelihood (1; 0 for ensemble members ≥ 1, which train their
    /// dynamics on β·KL_w alone).
    pub ll_weight: f64,
}

impl Default for ElboOptions {
    fn default() -> Self {
        ElboOptions { beta: 1.0, kl_decay: 0.8, kl_prior_variance_dt: false, ll_weight: 1.0 }
    }
}

/// The ELBO's terms for one window.
#[derive(Clone, Debug, PartialEq)]
pub struct ElboTerms {
    /// Log-likelihood (mean over samples, summed over time and outputs).
    pub ll: f64,
    /// KL_1..KL_K.
    pub kl: Vec<f64>,
    /// Σ_k w_k KL_k.
    pub kl_w: f64,
    /// The weights w_k.
    pub w: Vec<f64>,
    /// −(ll_weight·LL − β·KL_w).
    pub loss: f64,
}

impl ElboTerms {
    /// The reference's logged triple [loss/T, LL/T/N_y, KL_w/T/D].
    pub fn logged(&self, steps: usize, obs_dim: usize, latent_dim: usize) -> [f64; 3] {
        let t = steps as f64;
        [self.loss / t, self.ll / t / obs_dim as f64, self.kl_w / t / latent_dim as f64]
    }
}

#[derive(Clone, Debug, Default)]
struct Level {
    zin: Vec<f64>,
    dyn_cache: DynCache,
    prior_mu: Vec<f64>,
    zhat: Vec<f64>,
    dprior: Vec<f64>,
    dm: Vec<f64>,
    dzin: Vec<f64>,
}

/// Every buffer of an ELBO evaluation and its backward pass, reused between calls.
#[derive(Clone, Debug, Default)]
pub struct ElboWorkspace {
    shape: (usize, usize, usize),
    enc: EncoderWorkspace,
    mu_q: Vec<f64>,
    var_q: Vec<f64>,
    z_me: Vec<f64>,
    z_tr: Vec<f64>,
    z_bar: Vec<f64>,
    buf: Vec<f64>,
    one: DynCache,
    levels: Vec<Level>,
    /// Process variance v of the current call.
    v: Vec<f64>,
    /// ∂loss/∂v.
    dv: Vec<f64>,
    dec: Workspace<f64>,
    yhat: Vec<f64>,
    gbuf: Vec<f64>,
    dz_bar: Vec<f64>,
    dzhat: Vec<f64>,
    dz_me: Vec<f64>,
    dz_tr: Vec<f64>,
    dm1: Vec<f64>,
    dz1: Vec<f64>,
    dmu_q: Vec<f64>,
    dvar_q: Vec<f64>,
    dpre_var: Vec<f64>,
    dh: Vec<f64>,
    dh2: Vec<f64>,
    vy: Vec<f64>,
    sig_y: Vec<f64>,
    /// Encoded actions ũ (`S × (T − 1) × D`), the encoder's input rows and workspace, and
    /// their gradients.
    u_enc: Vec<f64>,
    act_in: Vec<f64>,
    act_ws: Workspace<f64>,
    du: Vec<f64>,
    dact_in: Vec<f64>,
}

impl ElboWorkspace {
    fn prepare(&mut self, m: &SeqVae, s: usize, t: usize, k: usize) {
        if self.shape == (s, t, k) && !self.levels.is_empty() {
            return;
        }
        let (ny, d, hd) = (m.cfg.obs_dim, m.cfg.latent_dim, m.cfg.rnn_hidden);
        self.shape = (s, t, k);
        self.mu_q = vec![0.0; t * d];
        self.var_q = vec![0.0; t * d];
        self.z_me = vec![0.0; s * t * d];
        self.z_tr = vec![0.0; s * (t - 1) * d];
        self.z_bar = vec![0.0; s * t * d];
        self.buf = vec![0.0; s * t * d];
        self.levels = (1..=k)
            .map(|k| {
                let n = s * (t - k) * d;
                Level {
                    zin: vec![0.0; n],
                    dyn_cache: DynCache::default(),
                    prior_mu: vec![0.0; n],
                    zhat: vec![0.0; n],
                    dprior: vec![0.0; n],
                    dm: vec![0.0; n],
                    dzin: vec![0.0; n],
                }
            })
            .collect();
        self.yhat = vec![0.0; s * t * ny];
        self.gbuf = vec![0.0; s * t * ny];
        self.dz_bar = vec![0.0; s * t * d];
        self.dzhat = vec![0.0; s * t * d];
        self.dz_me = vec![0.0; s * t * d];
        self.dz_tr = vec![0.0; s * t * d];
        self.dm1 = vec![0.0; s * t * d];
        self.dz1 = vec![0.0; s * t * d];
        self.dmu_q = vec![0.0; t * d];
        self.dvar_q = vec![0.0; t * d];
        self.dpre_var = vec![0.0; t * d];
        self.dh = vec![0.0; t * hd];
        self.dh2 = vec![0.0; t * hd];
    }

    /// Intermediates of the last evaluation: posterior mean and variance (`T × D`).
    pub fn posterior(&self) -> (&[f64], &[f64]) {
        (&self.mu_q, &self.var_q)
    }

    /// The masked samples z̄ (`S × T × D`) of the last evaluation.
    pub fn z_bar(&self) -> &[f64] {
        &self.z_bar
    }

    /// The prior means of level k (1-based; `S × (T − k) × D`) of the last evaluation.
    pub fn prior_mu(&self, k: usize) -> &[f64] {
        &self.levels[k - 1].prior_mu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tensor round-trips through `set_tensor_values`/`tensor_values` in PyTorch's
    /// row-major order (transposed weights included), the tensors tile the flat vector, and
    /// unknown names or wrong lengths are refused by name.
    #[test]
    fn tensors_round_trip_in_pytorchs_layout_and_tile_the_parameters() {
        let m = SeqVae::new(ModelConfig::default()).unwrap();
        let mut params = vec![0.0; m.num_params()];
        let mut seen = vec![false; m.num_params()];
        for t in m.tensors() {
            let values: Vec<f64> = (0..t.len()).map(|i| t.offset as f64 + i as f64 / 1e4).collect();
            m.set_tensor_values(&mut params, &t.name, &values).unwrap();
            assert_eq!(m.tensor_values(&params, &t.name).unwrap(), values, "{}", t.name);
            for i in 0..t.len() {
                assert!(!seen[t.index(i)], "{} overlaps another tensor", t.name);
                seen[t.index(i)] = true;
            }
        }
        assert!(seen.iter().all(|&s| s), "every parameter belongs to one tensor");
        let t = m.tensors().iter().find(|t| t.transposed).expect("a transposed weight");
        let (rows, cols) = (t.shape[0], t.shape[1]);
        assert_eq!(t.index(cols + 2), t.offset + 2 * rows + 1, "row 1, column 2 of [out][in]");
        let e = m.set_tensor_values(&mut params, "nope", &[]).unwrap_err().to_string();
        assert!(e.contains("nope"), "{e}");
        let e = m.set_tensor_values(&mut params, &t.name, &[1.0]).unwrap_err().to_string();
        assert!(e.contains("1 values"), "{e}");
        assert!(m.tensor_values(&params, "nope").is_none());
    }

    /// Softplus and the sigmoid agree with their definitions, softplus without overflow far
    /// out; the mask draws keep about `1 − p_mask` of the steps and are all ones at 0.
    #[test]
    fn activations_and_mask_draws_follow_their_definitions() {
        for x in [-30.0, -1.0, 0.0, 0.5, 19.0] {
            assert!((softplus(x) - (1.0 + f64::exp(x)).ln()).abs() < 1e-12, "{x}");
            assert!((sigmoid(x) - 1.0 / (1.0 + f64::exp(-x))).abs() < 1e-15, "{x}");
        }
        assert_eq!(softplus(1e6), 1e6);
        let mut n = ElboNoise::zeros(2, 2000, 3, 2);
        assert_eq!(
            n.xi.iter().map(Vec::len).collect::<Vec<_>>(),
            [2 * 1999 * 2, 2 * 1998 * 2, 2 * 1997 * 2]
        );
        n.draw(Key::new(5), 0.0);
        assert!(n.mask.iter().all(|&m| m == 1.0));
        n.draw(Key::new(5), 0.25);
        let kept = n.mask.iter().sum::<f64>() / 2000.0;
        assert!((kept - 0.75).abs() < 0.04, "kept {kept}");
        let t = ElboTerms { loss: 8.0, ll: -6.0, kl_w: 4.0, kl: vec![4.0], w: vec![1.0] };
        assert_eq!(t.logged(4, 3, 2), [2.0, -0.5, 0.5]);
    }
}
