//! kestrel-nn against the targets (MLP 64→256→256→16, ReLU, MSE, Adam):
//! one training step at batch 256 on one thread; eight independent models at batch 64 on
//! 1 and 2 threads; a batch-1 forward.

use criterion::{Criterion, criterion_group, criterion_main};
use kestrel_core::Key;
use kestrel_nn::{Adam, Loss, MlpConfig, Sequential, Trainee, train_many};
use std::hint::black_box;

fn data(key: Key, rows: usize, width: usize) -> Vec<f32> {
    let mut r = key.rng();
    (0..rows * width).map(|_| r.uniform_f32() * 2.0 - 1.0).collect()
}

fn bench(c: &mut Criterion) {
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[64, 256, 256, 16])).unwrap();
    let adam = Adam::new(1e-4);
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();

    let (x, y) = (data(Key::new(1), 256, 64), data(Key::new(2), 256, 16));
    let mut t = Trainee::new(&net, Key::new(3));
    c.bench_function("nn/train_b256_1thread", |b| {
        b.iter(|| one.install(|| net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap()))
    });

    let xs: Vec<Vec<f32>> = (0..8).map(|i| data(Key::new(10 + i), 64, 64)).collect();
    let ys: Vec<Vec<f32>> = (0..8).map(|i| data(Key::new(20 + i), 64, 16)).collect();
    let batches: Vec<(&[f32], &[f32])> =
        xs.iter().zip(&ys).map(|(x, y)| (&x[..], &y[..])).collect();
    let mut ts: Vec<Trainee<f32>> = (0..8).map(|i| Trainee::new(&net, Key::new(30 + i))).collect();
    for (name, pool) in [("nn/train_8x64_1thread", &one), ("nn/train_8x64_2threads", &two)] {
        c.bench_function(name, |b| {
            b.iter(|| pool.install(|| train_many(&net, &mut ts, &adam, &batches, Loss::Mse)))
        });
    }

    let p = net.init(Key::new(4));
    let mut ws = net.workspace(1);
    let x1 = data(Key::new(5), 1, 64);
    c.bench_function("nn/forward_b1", |b| b.iter(|| black_box(net.forward(&p, &x1, &mut ws)[0])));
}

criterion_group!(benches, bench);
criterion_main!(benches);
