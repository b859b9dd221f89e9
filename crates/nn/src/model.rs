//! [`Sequential`] models (an MLP from an [`MlpConfig`], or any stack of [`Layer`]s), their
//! reusable [`Workspace`], and [`Trainee`]: one model's parameters, gradient, optimiser state
//! and workspace, trained alone or many at once across threads.

use crate::adam::{Adam, AdamState};
use crate::error::NnError;
use crate::layer::{Act, Activation, Dense, Init, Layer};
use crate::loss::Loss;
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::simd::Real;

/// A stack of layers with one flat parameter vector (`[layer 0's, layer 1's, ...]`).
#[derive(Debug)]
pub struct Sequential<T: Real> {
    layers: Vec<Box<dyn Layer<T>>>,
    /// Parameter offset of each layer, and the total at the end.
    offsets: Vec<usize>,
}

/// An MLP: `sizes[0] → sizes[1] → … → sizes[n]`, `hidden` after every layer but the last,
/// `output` after the last.
#[derive(Clone, Debug, PartialEq)]
pub struct MlpConfig {
    /// Widths, input first.
    pub sizes: Vec<usize>,
    /// Activation of the hidden layers.
    pub hidden: Activation,
    /// Activation of the output.
    pub output: Activation,
    /// Initialisation of every dense layer.
    pub init: Init,
}

impl MlpConfig {
    /// `sizes` with ReLU hidden layers, a linear output and PyTorch's initialisation.
    pub fn relu(sizes: &[usize]) -> Self {
        MlpConfig {
            sizes: sizes.to_vec(),
            hidden: Activation::Relu,
            output: Activation::Identity,
            init: Init::TorchUniform,
        }
    }

    /// From JSON `{"sizes": [..], "hidden": "relu", "output": "identity", "init": "torch"}`
    /// (`hidden`, `output`, `init` optional; `init` is `torch`, `truncated_normal` or
    /// `glorot`). Unknown keys are errors naming the key.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, NnError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            NnError::invalid(field, value, accepted)
        };
        let obj = v.as_object().ok_or_else(|| bad("mlp", v.to_string(), "a JSON object"))?;
        if let Some(k) =
            obj.keys().find(|k| !["sizes", "hidden", "output", "init"].contains(&k.as_str()))
        {
            return Err(bad("mlp key", k.clone(), "sizes, hidden, output or init"));
        }
        let sizes = obj
            .get("sizes")
            .and_then(|s| s.as_array())
            .and_then(|a| {
                a.iter().map(|x| x.as_u64().map(|n| n as usize)).collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                bad("sizes", format!("{:?}", obj.get("sizes")), "an array of positive integers")
            })?;
        let act = |key: &'static str, default: Activation| -> Result<Activation, NnError> {
            match obj.get(key) {
                None => Ok(default),
                Some(serde_json::Value::String(s)) => Activation::parse(s),
                Some(other) => Err(bad(key, other.to_string(), "an activation name")),
            }
        };
        let init = match obj.get("init").map(|v| v.as_str()) {
            None | Some(Some("torch")) => Init::TorchUniform,
            Some(Some("truncated_normal")) => Init::TruncatedNormal,
            Some(Some("glorot")) => Init::GlorotUniform,
            Some(Some("lecun_normal")) => Init::LecunNormal,
            Some(_) => {
                return Err(bad(
                    "init",
                    obj["init"].to_string(),
                    "torch, truncated_normal, lecun_normal or glorot",
                ));
            }
        };
        Ok(MlpConfig {
            sizes,
            hidden: act("hidden", Activation::Relu)?,
            output: act("output", Activation::Identity)?,
            init,
        })
    }
}

/// Buffers for one batch size: every layer's input and output, and two gradient buffers.
/// Reused across steps; a larger batch grows them, nothing else allocates.
#[derive(Clone, Debug, Default)]
pub struct Workspace<T> {
    batch: usize,
    /// `acts[0]` is the input, `acts[i + 1]` the output of layer `i`.
    acts: Vec<Vec<T>>,
    ga: Vec<T>,
    gb: Vec<T>,
}

impl<T: Real> Workspace<T> {
    /// The batch size of the last forward pass.
    pub fn batch(&self) -> usize {
        self.batch
    }

    /// The output of the last forward pass (`batch × out_dim`).
    pub fn output(&self) -> &[T] {
        self.acts.last().map(|a| &a[..]).unwrap_or(&[])
    }
}

impl<T: Real> Sequential<T> {
    /// Stacks `layers`; each layer's input width must be the previous one's output width.
    pub fn new(layers: Vec<Box<dyn Layer<T>>>) -> Result<Self, NnError> {
        if layers.is_empty() {
            return Err(NnError::invalid("layers", "[]", "at least one layer"));
        }
        for (i, w) in layers.windows(2).enumerate() {
            if w[0].out_dim() != w[1].in_dim() {
                return Err(NnError::invalid(
                    "layer widths",
                    format!(
                        "layer {i} outputs {} but layer {} takes {}",
                        w[0].out_dim(),
                        i + 1,
                        w[1].in_dim()
                    ),
                    "each layer's input width equal to the previous output width",
                ));
            }
        }
        let mut offsets = vec![0];
        for l in &layers {
            offsets.push(offsets.last().unwrap() + l.num_params());
        }
        Ok(Sequential { layers, offsets })
    }

    /// An MLP from its config.
    pub fn mlp(cfg: &MlpConfig) -> Result<Self, NnError> {
        if cfg.sizes.len() < 2 || cfg.sizes.contains(&0) {
            return Err(NnError::invalid(
                "sizes",
                format!("{:?}", cfg.sizes),
                "at least two positive widths (input and output)",
            ));
        }
        let n = cfg.sizes.len() - 1;
        let mut layers: Vec<Box<dyn Layer<T>>> = Vec::new();
        for i in 0..n {
            layers.push(Box::new(Dense::new(cfg.sizes[i], cfg.sizes[i + 1], cfg.init)?));
            let f = if i + 1 < n { cfg.hidden } else { cfg.output };
            if f != Activation::Identity {
                layers.push(Box::new(Act { f, dim: cfg.sizes[i + 1] }));
            }
        }
        Sequential::new(layers)
    }

    /// The layers.
    pub fn layers(&self) -> &[Box<dyn Layer<T>>] {
        &self.layers
    }

    /// Input width.
    pub fn in_dim(&self) -> usize {
        self.layers[0].in_dim()
    }

    /// Output width.
    pub fn out_dim(&self) -> usize {
        self.layers[self.layers.len() - 1].out_dim()
    }

    /// Length of the flat parameter vector.
    pub fn num_params(&self) -> usize {
        *self.offsets.last().unwrap()
    }

    /// Fresh parameters; layer `i` draws from `key.fold_in(i)`.
    pub fn init(&self, key: Key) -> Vec<T> {
        let mut p = vec![T::ZERO; self.num_params()];
        for (i, l) in self.layers.iter().enumerate() {
            l.init(key.fold_in(i as u64), &mut p[self.offsets[i]..self.offsets[i + 1]]);
        }
        p
    }

    /// A workspace sized for `batch` rows.
    pub fn workspace(&self, batch: usize) -> Workspace<T> {
        let mut ws = Workspace::default();
        self.ensure(&mut ws, batch);
        ws
    }

    fn ensure(&self, ws: &mut Workspace<T>, batch: usize) {
        if ws.acts.len() != self.layers.len() + 1 {
            ws.acts = vec![Vec::new(); self.layers.len() + 1];
        }
        ws.acts[0].resize(batch * self.in_dim(), T::ZERO);
        let mut widest = self.in_dim();
        for (i, l) in self.layers.iter().enumerate() {
            ws.acts[i + 1].resize(batch * l.out_dim(), T::ZERO);
            widest = widest.max(l.out_dim());
        }
        ws.ga.resize(batch * widest, T::ZERO);
        ws.gb.resize(batch * widest, T::ZERO);
        ws.batch = batch;
    }

    /// Forward pass over `x` (`batch × in_dim`, batch = `x.len() / in_dim`); keeps what
    /// [`Sequential::backward`] needs in `ws` and returns the output (`batch × out_dim`).
    ///
    /// # Panics
    /// If `params` has the wrong length or `x` is not a whole number of rows.
    pub fn forward<'w>(&self, params: &[T], x: &[T], ws: &'w mut Workspace<T>) -> &'w [T] {
        assert_eq!(params.len(), self.num_params(), "Sequential::forward: params length");
        let d = self.in_dim();
        assert!(
            x.len().is_multiple_of(d),
            "Sequential::forward: input length {} is not rows of {d}",
            x.len()
        );
        let batch = x.len() / d;
        self.ensure(ws, batch);
        ws.acts[0].copy_from_slice(x);
        for (i, l) in self.layers.iter().enumerate() {
            let (done, rest) = ws.acts.split_at_mut(i + 1);
            l.forward(&params[self.offsets[i]..self.offsets[i + 1]], &done[i], &mut rest[0], batch);
        }
        ws.output()
    }

    /// Backward pass for the last forward: adds `∂L/∂params` to `grads` given `dy = ∂L/∂y`
    /// (`batch × out_dim`), and writes `∂L/∂x` to `dx` if given (skipped otherwise: the
    /// data batch needs no gradient).
    ///
    /// # Panics
    /// If the lengths do not match the last forward pass.
    pub fn backward(
        &self,
        params: &[T],
        ws: &mut Workspace<T>,
        dy: &[T],
        grads: &mut [T],
        dx: Option<&mut [T]>,
    ) {
        assert_eq!(grads.len(), self.num_params(), "Sequential::backward: grads length");
        let batch = ws.batch;
        assert_eq!(dy.len(), batch * self.out_dim(), "Sequential::backward: dy length");
        if let Some(dx) = &dx {
            assert_eq!(dx.len(), batch * self.in_dim(), "Sequential::backward: dx length");
        }
        let Workspace { acts, ga, gb, .. } = ws;
        ga[..dy.len()].copy_from_slice(dy);
        let mut dx = dx;
        let mut in_a = true;
        for i in (0..self.layers.len()).rev() {
            let (src, dst) = if in_a { (&ga[..], &mut gb[..]) } else { (&gb[..], &mut ga[..]) };
            let target = if i > 0 { Some(dst) } else { dx.take() };
            let (o0, o1) = (self.offsets[i], self.offsets[i + 1]);
            self.layers[i].backward(
                &params[o0..o1],
                &acts[i],
                &acts[i + 1],
                src,
                &mut grads[o0..o1],
                target,
                batch,
            );
            in_a = !in_a;
        }
    }

    /// `(name, shape, values)` of every parameter tensor, named `"{layer}.{param}"`
    /// (e.g. `"0.weight"`), in the flat vector's order.
    pub fn named_params<'p>(&self, params: &'p [T]) -> Vec<(String, Vec<usize>, &'p [T])> {
        let mut out = Vec::new();
        for (i, l) in self.layers.iter().enumerate() {
            let mut off = self.offsets[i];
            for (name, shape) in l.param_shapes() {
                let n: usize = shape.iter().product();
                out.push((format!("{i}.{name}"), shape, &params[off..off + n]));
                off += n;
            }
        }
        out
    }

    /// One training step of a [`Trainee`] on `(x, target)`: forward, loss, backward, Adam.
    /// Returns the loss. A non-finite loss or gradient is an error and leaves the parameters
    /// and optimiser state unchanged.
    pub fn train_step(
        &self,
        t: &mut Trainee<T>,
        adam: &Adam,
        x: &[T],
        target: &[T],
        loss: Loss,
    ) -> Result<f64, NnError> {
        let Trainee { params, grads, opt, ws, dy } = t;
        let y = self.forward(params, x, ws);
        dy.resize(y.len(), T::ZERO);
        let l = loss.value_and_grad(y, target, dy);
        if !l.is_finite() {
            return Err(NnError::NonFinite { what: "loss", value: l });
        }
        grads.iter_mut().for_each(|g| *g = T::ZERO);
        self.backward(params, ws, dy, grads, None);
        adam.step(opt, params, grads)?;
        Ok(l)
    }
}

/// One model's training state: parameters, gradient, Adam state and workspace. Several of
/// them over one [`Sequential`] train independently, one per thread ([`train_many`]).
#[derive(Clone, Debug)]
pub struct Trainee<T: Real> {
    /// Parameters.
    pub params: Vec<T>,
    /// Gradient scratch.
    pub grads: Vec<T>,
    /// Adam moments.
    pub opt: AdamState<T>,
    /// Forward/backward buffers.
    pub ws: Workspace<T>,
    dy: Vec<T>,
}

impl<T: Real> Trainee<T> {
    /// Fresh parameters from `key` for `net`.
    pub fn new(net: &Sequential<T>, key: Key) -> Self {
        Self::from_params(net, net.init(key))
    }

    /// Training state around given parameters.
    pub fn from_params(net: &Sequential<T>, params: Vec<T>) -> Self {
        let n = net.num_params();
        assert_eq!(params.len(), n, "Trainee::from_params: params length");
        Trainee {
            params,
            grads: vec![T::ZERO; n],
            opt: AdamState::new(n),
            ws: Workspace::default(),
            dy: Vec::new(),
        }
    }
}

/// One [`Sequential::train_step`] for each trainee on its own batch, trainees in parallel
/// (one per rayon task, each GEMM single-threaded). Results do not depend on the thread count.
pub fn train_many<T: Real>(
    net: &Sequential<T>,
    trainees: &mut [Trainee<T>],
    adam: &Adam,
    batches: &[(&[T], &[T])],
    loss: Loss,
) -> Vec<Result<f64, NnError>> {
    use rayon::prelude::*;
    assert_eq!(trainees.len(), batches.len(), "train_many: one batch per trainee");
    trainees
        .par_iter_mut()
        .zip(batches.par_iter())
        .with_max_len(1)
        .map(|(t, (x, y))| net.train_step(t, adam, x, y, loss))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MLP from its config: the layer list (an activation after each hidden dense layer,
    /// none after a linear output), the parameter count and names, keyed initialisation, and a
    /// forward pass against the layers' definition (ReLU of `x W + b`, `W` stored `in × out`) on
    /// hand-set weights.
    #[test]
    fn an_mlp_is_its_config_and_computes_its_definition() {
        let net = Sequential::<f64>::mlp(&MlpConfig::relu(&[3, 4, 2])).unwrap();
        assert_eq!((net.in_dim(), net.out_dim(), net.layers().len()), (3, 2, 3));
        assert_eq!(net.num_params(), 3 * 4 + 4 + 4 * 2 + 2);
        let params = net.init(Key::new(1));
        assert_eq!(params, net.init(Key::new(1)));
        assert_ne!(params, net.init(Key::new(2)));
        let names: Vec<(String, Vec<usize>)> =
            net.named_params(&params).into_iter().map(|(n, s, _)| (n, s)).collect();
        let shapes = |v: &[(&str, &[usize])]| -> Vec<(String, Vec<usize>)> {
            v.iter().map(|(n, s)| (n.to_string(), s.to_vec())).collect()
        };
        assert_eq!(
            names,
            shapes(&[
                ("0.weight", &[3, 4]),
                ("0.bias", &[4]),
                ("2.weight", &[4, 2]),
                ("2.bias", &[2])
            ])
        );
        // Hand-set weights: every parameter k has value (k mod 7 − 3) / 4.
        let p: Vec<f64> = (0..net.num_params()).map(|k| ((k % 7) as f64 - 3.0) / 4.0).collect();
        let x = [0.5, -1.0, 2.0];
        let mut ws = net.workspace(1);
        let got = net.forward(&p, &x, &mut ws).to_vec();
        let (w1, rest) = p.split_at(12);
        let (b1, rest) = rest.split_at(4);
        let (w2, b2) = rest.split_at(8);
        let h: Vec<f64> = (0..4)
            .map(|o| (b1[o] + (0..3).map(|i| x[i] * w1[i * 4 + o]).sum::<f64>()).max(0.0))
            .collect();
        let want: Vec<f64> =
            (0..2).map(|o| b2[o] + (0..4).map(|i| h[i] * w2[i * 2 + o]).sum::<f64>()).collect();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
        for bad in [vec![3], vec![3, 0, 2], vec![]] {
            assert!(Sequential::<f64>::mlp(&MlpConfig::relu(&bad)).is_err(), "{bad:?}");
        }
    }
}
