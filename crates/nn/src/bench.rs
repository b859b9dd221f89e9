//! Timings of kestrel-nn on the workloads of `shared/reference/nn-backends.md`
//! (`kestrel nn bench`, `tools/compare/nn.py`).

use crate::adam::Adam;
use crate::error::NnError;
use crate::loss::Loss;
use crate::model::{MlpConfig, Sequential, Trainee, train_many};
use kestrel_core::Key;
use kestrel_core::timing::median_for_us;

/// Median µs of an MLP's training step (one model, batch `batch`), of `models` models trained
/// at once (batch `model_batch` each), and of a batch-1 forward pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlpTimes {
    /// One model's training step.
    pub train_us: f64,
    /// All models' steps, in parallel over the current pool.
    pub train_many_us: f64,
    /// Forward pass of one row.
    pub forward_b1_us: f64,
}

fn data(key: Key, n: usize) -> Vec<f32> {
    let mut r = key.rng();
    (0..n).map(|_| 2.0 * r.uniform_f32() - 1.0).collect()
}

/// Times a ReLU MLP of layer widths `sizes` (MSE on uniform data, Adam 1e-4) for `seconds`
/// per case, on the current thread pool.
pub fn mlp(
    sizes: &[usize],
    batch: usize,
    models: usize,
    model_batch: usize,
    seconds: f64,
) -> Result<MlpTimes, NnError> {
    if batch == 0 || models == 0 || model_batch == 0 || !(seconds > 0.0 && seconds <= 3600.0) {
        return Err(kestrel_core::Invalid::new(
            "batch/models/model_batch/seconds",
            format!("{batch}/{models}/{model_batch}/{seconds}"),
            "at least 1 each, seconds in (0, 3600]",
        )
        .into());
    }
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(sizes))?;
    let (din, dout) = (net.in_dim(), net.out_dim());
    let adam = Adam::new(1e-4);
    let (x, y) = (data(Key::new(1), batch * din), data(Key::new(2), batch * dout));
    let mut t = Trainee::new(&net, Key::new(3));
    let mut failed = None;
    let train_us = median_for_us(seconds, || {
        if let Err(e) = net.train_step(&mut t, &adam, &x, &y, Loss::Mse) {
            failed = Some(e);
        }
    });
    let xs: Vec<Vec<f32>> =
        (0..models).map(|i| data(Key::new(10 + i as u64), model_batch * din)).collect();
    let ys: Vec<Vec<f32>> =
        (0..models).map(|i| data(Key::new(100 + i as u64), model_batch * dout)).collect();
    let batches: Vec<(&[f32], &[f32])> =
        xs.iter().zip(&ys).map(|(x, y)| (&x[..], &y[..])).collect();
    let mut ts: Vec<Trainee<f32>> =
        (0..models).map(|i| Trainee::new(&net, Key::new(1000 + i as u64))).collect();
    let train_many_us = median_for_us(seconds, || {
        for r in train_many(&net, &mut ts, &adam, &batches, Loss::Mse) {
            if let Err(e) = r {
                failed = Some(e);
            }
        }
    });
    let p = net.init(Key::new(4));
    let mut ws = net.workspace(1);
    let x1 = data(Key::new(5), din);
    let forward_b1_us = median_for_us(seconds.min(1.0), || {
        std::hint::black_box(net.forward(&p, &x1, &mut ws)[0]);
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(MlpTimes { train_us, train_many_us, forward_b1_us }),
    }
}
