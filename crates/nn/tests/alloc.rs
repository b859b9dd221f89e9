//! A warm f32 training step allocates nothing: the workspace, the gradient buffers and the
//! matrix kernel's packing panel are grown once and reused (f64 likewise: actdyn's models,
//! tested in kestrel-actdyn's `alloc` test); and neither of Kestrel's matrix kernels
//! allocates once warm, in either precision, on every layout. Its own test binary, with a
//! global allocator that counts, and a single test, so no other test allocates meanwhile.

use kestrel_core::Key;
use kestrel_core::simd::Real;
use kestrel_nn::matmul::{Kernel, Op, matmul_with};
use kestrel_nn::{Adam, Loss, MlpConfig, Sequential, Trainee};
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn data(key: Key, rows: usize, width: usize) -> Vec<f32> {
    let mut r = key.rng();
    (0..rows * width).map(|_| r.uniform_f32() * 2.0 - 1.0).collect()
}

#[test]
fn warm_training_steps_allocate_nothing() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    for kernel in [Kernel::Avx512, Kernel::Avx2] {
        let test = format!("warm_training_steps_allocate_nothing ({kernel:?} products)");
        if kestrel_testkit::cpu_gated(
            &test,
            &format!("{kernel:?}").to_lowercase(),
            kernel.available(),
        ) {
            warm_products_allocate_nothing::<f32>(kernel);
            warm_products_allocate_nothing::<f64>(kernel);
        }
    }
    // Without either kernel the products go through gemm, which allocates: nothing to check.
    if !kestrel_testkit::cpu_gated(
        "warm_training_steps_allocate_nothing (training steps)",
        "avx2",
        Kernel::best() != Kernel::Gemm,
    ) {
        return;
    }
    // Batches that take Kestrel's kernel (2- and 4-row tiles, transposed panels, depth blocks
    // past 256 rows, row chunks past 252) and `gemm`'s vector-matrix path (one row).
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

/// Every layout and both write modes, shapes past the tile, panel, depth-block and row-chunk
/// edges, after one warm-up call each.
fn warm_products_allocate_nothing<T: Real>(kernel: Kernel) {
    for (m, k, n) in [(2, 3, 2), (7, 9, 33), (300, 270, 40), (13, 600, 17)] {
        let a = vec![T::from_f64(0.5); m * k];
        let b = vec![T::from_f64(0.25); k * n];
        let mut c = vec![T::ZERO; m * n];
        for op_a in [Op::N, Op::T] {
            for op_b in [Op::N, Op::T] {
                for acc in [false, true] {
                    matmul_with(kernel, m, k, n, &a, op_a, &b, op_b, &mut c, acc);
                    let got = allocations_in(|| {
                        matmul_with(kernel, m, k, n, &a, op_a, &b, op_b, &mut c, acc);
                    });
                    assert_eq!(got, 0, "{kernel:?} {} {m}x{k}x{n} {op_a:?}{op_b:?}", T::DTYPE);
                }
            }
        }
    }
}
