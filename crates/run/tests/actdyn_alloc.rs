//! Warm planner calls and environment steps of the active-learning loop (with the belief and
//! information updates) allocate nothing at all (f64 products through `kestrel_nn::matmul`'s
//! own kernels where the CPU has AVX-512 or AVX2; `gemm`, the fallback, allocates per call).
//! Its own test binary, with a global allocator that counts, on a one-thread rayon pool (the
//! count is per thread). Training calls are `kestrel-actdyn`'s `alloc` test.

use kestrel_core::Key;
use kestrel_nn::matmul::Kernel;
use kestrel_run::runs::actdyn::{ActdynConfig, ActiveRun};
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn warm_planning_and_steps_allocate_nothing() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    if Kernel::best() == Kernel::Gemm {
        eprintln!(
            "skipped: no AVX-512 or AVX2 here, so the products go through gemm, which allocates"
        );
        return;
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| {
        // E1: MLP dynamics, random policy; E2: RBF dynamics, iCEM on the Fisher metric.
        for (name, cfg) in [("E1", ActdynConfig::e1()), ("E2", ActdynConfig::e2())] {
            let mut c = cfg.clone();
            c.train.train_every = u64::MAX;
            c.save_every = 0;
            let mut run = ActiveRun::new(c).unwrap();
            for _ in 0..25 {
                run.step().unwrap();
            }
            let n = allocations_in(|| {
                for i in 0..3 {
                    run.act(Key::new(9).fold_in(i)).unwrap();
                    run.step().unwrap();
                }
            });
            assert_eq!(n, 0, "{name}: {n} allocations in 3 warm planner calls and steps");
        }
    });
}
