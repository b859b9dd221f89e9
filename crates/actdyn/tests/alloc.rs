//! Warm training calls allocate nothing but their results: only the two small vectors of the
//! `ElboTerms` a call returns (the per-k KL terms and their weights, which the run logs; the
//! run's planner calls and steps are `kestrel-run`'s `actdyn_alloc` test) (f64 products through `kestrel_nn::matmul`'s own kernels
//! where the CPU has AVX-512 or AVX2; `gemm`, the fallback, allocates per call). Its own test binary,
//! with a global allocator that counts, and one test on a one-thread rayon pool (the count is
//! per thread, and a pool stealing work between threads allocates whatever the loop does).

use kestrel_actdyn::model::{DynamicsKind, ModelConfig, SeqVae};
use kestrel_actdyn::train::{TrainConfig, Trainer};
use kestrel_core::Key;
use kestrel_nn::matmul::Kernel;
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn warm_training_calls_allocate_nothing_but_results() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    if Kernel::best() == Kernel::Gemm {
        eprintln!(
            "skipped: no AVX-512 or AVX2 here, so the products go through gemm, which allocates"
        );
        return;
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| {
        // E1's model (MLP dynamics) and E2's (RBF dynamics), default training.
        let rbf = ModelConfig { dynamics: DynamicsKind::rbf_default(), ..ModelConfig::default() };
        for (name, mc) in [("E1", ModelConfig::default()), ("E2", rbf)] {
            let model = SeqVae::new(mc.clone()).unwrap();
            let mut p = model.init(Key::new(1));
            let tc = TrainConfig::default();
            let mut tr = Trainer::new(&model, tc.clone()).unwrap();
            let (t, ny) = (tc.window, mc.obs_dim);
            let mut r = Key::new(2).rng();
            let y: Vec<f64> = (0..t * ny).map(|_| r.uniform_f64() * 2.0).collect();
            let u: Vec<f64> = (0..t * 2).map(|_| 0.2 * r.uniform_f64() - 0.1).collect();
            tr.step(&model, &mut p, &y, &u, Key::new(3)).unwrap();
            let n = allocations_in(|| {
                for i in 0..3 {
                    std::hint::black_box(tr.step(&model, &mut p, &y, &u, Key::new(4 + i)).unwrap());
                }
            });
            assert!(n <= 2 * 3, "{name}: {n} allocations in 3 warm training calls");
        }
    });
}
