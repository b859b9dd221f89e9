//! A small MLP fitting y = sin(3x) with explicit forward/backward and fused Adam, then eight
//! models trained at once (one per thread). Run:
//! `cargo run --release -p kestrel-nn --example regression`.

use kestrel_core::Key;
use kestrel_nn::{Adam, Loss, MlpConfig, Sequential, Trainee, train_many};

fn batch(key: Key, n: usize) -> (Vec<f32>, Vec<f32>) {
    let mut r = key.rng();
    let x: Vec<f32> = (0..n).map(|_| 2.0 * r.uniform_f32() - 1.0).collect();
    let y = x.iter().map(|v| (3.0 * v).sin()).collect();
    (x, y)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[1, 64, 64, 1]))?;
    let adam = Adam::new(3e-3);
    let mut t = Trainee::new(&net, Key::new(0));
    let mut loss = f32::NAN;
    for step in 0..2000u64 {
        let (x, y) = batch(Key::new(1).fold_in(step), 128);
        loss = net.train_step(&mut t, &adam, &x, &y, Loss::Mse)? as f32;
    }
    println!("one model: MSE {loss:.5} after 2,000 steps");
    let data: Vec<(Vec<f32>, Vec<f32>)> = (0..8).map(|i| batch(Key::new(100 + i), 128)).collect();
    let batches: Vec<(&[f32], &[f32])> = data.iter().map(|(x, y)| (&x[..], &y[..])).collect();
    let mut models: Vec<Trainee<f32>> = (0..8).map(|i| Trainee::new(&net, Key::new(i))).collect();
    for _ in 0..500 {
        for r in train_many(&net, &mut models, &adam, &batches, Loss::Mse) {
            r?;
        }
    }
    println!("eight models trained in parallel on their own batches");
    Ok(())
}
