//! A warm f32 training step allocates nothing: the workspace, the gradient buffers and the
//! matrix kernel's packing panel are grown once and reused (f64 likewise: actdyn's models,
//! tested in kestrel-actdyn's `alloc` test). Its own test binary, with a global
//! allocator that counts, and a single test, so no other test allocates meanwhile.

use kestrel_core::Key;
use kestrel_nn::{Adam, Loss, MlpConfig, Sequential, Trainee};
use kestrel_testkit::{CountingAlloc, allocations_in, has_avx512};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn data(key: Key, rows: usize, width: usize) -> Vec<f32> {
    let mut r = key.rng();
    (0..rows * width).map(|_| r.uniform_f32() * 2.0 - 1.0).collect()
}

#[test]
fn warm_training_steps_allocate_nothing() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    if !has_avx512() {
        eprintln!("skipped: no AVX-512 here, so the products go through gemm, which allocates");
        return;
    }
    // Batches that take the AVX-512 kernel where the CPU has it (2- and 4-row tiles,
    // transposed panels, depth blocks past 256 rows, row chunks past 252) and `gemm`'s
    // vector-matrix path (one row).
    for batch in [1, 3, 64, 256, 300] {
        let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[64, 256, 256, 16])).unwrap();
        let adam = Adam { max_grad_norm: Some(1.0), ..Adam::new(1e-4) };
        let (x, y) = (data(Key::new(1), batch, 64), data(Key::new(2), batch, 16));
        let mut t = Trainee::new(&net, Key::new(3));
        net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap();
        let n = allocations_in(|| {
            for _ in 0..5 {
                net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap();
            }
        });
        assert_eq!(n, 0, "f32 batch {batch}: {n} allocations in 5 warm steps");
    }
}
