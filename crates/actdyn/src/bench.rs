//! The training call's timing (`kestrel actdyn bench` and the `train_timing` example): the
//! median of `reps` calls after warm-up. The run's timings (planner call, environment step)
//! are in `kestrel_run`'s bench, which builds whole runs.

use crate::error::ActdynError;
use crate::model::{ModelConfig, SeqVae};
use crate::train::{TrainConfig, Trainer};
use kestrel_core::Key;
use kestrel_core::timing::median_us;

/// Median milliseconds of one training call of `model` under `train` on a fixed random window.
pub fn train_ms(model: &ModelConfig, train: &TrainConfig, reps: usize) -> Result<f64, ActdynError> {
    let (t, ny) = (train.window, model.obs_dim);
    let model = SeqVae::new(model.clone())?;
    let mut p = model.init(Key::new(1));
    let mut tr = Trainer::new(&model, train.clone())?;
    let mut r = Key::new(2).rng();
    let y: Vec<f64> = (0..t * ny).map(|_| r.uniform_f64() * 2.0).collect();
    let u: Vec<f64> = (0..t * 2).map(|_| 0.2 * r.uniform_f64() - 0.1).collect();
    let mut err = None;
    let us = median_us(reps as u64, |i| {
        if let Err(e) = tr.step(&model, &mut p, &y, &u, Key::new(3).fold_in(i)) {
            err = Some(e);
        }
    });
    match err {
        Some(e) => Err(e),
        None => Ok(us / 1e3),
    }
}
