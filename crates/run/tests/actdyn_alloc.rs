//! Warm calls of the active-learning loop allocate nothing but their results: a training call
//! only the two small vectors of the `ElboTerms` it returns (the per-k KL terms and their
//! weights, which the run logs), a planner call and an environment step with the belief and
//! information updates nothing at all (f64 products through `kestrel_nn::matmul`'s own kernels
//! where the CPU has AVX-512 or AVX2; `gemm`, the fallback, allocates per call). Its own test binary,
//! with a global allocator that counts, and one test on a one-thread rayon pool (the count is
//! per thread, and a pool stealing work between threads allocates whatever the loop does).

use kestrel_actdyn::model::SeqVae;
use kestrel_actdyn::train::Trainer;
use kestrel_core::Key;
use kestrel_nn::matmul::Kernel;
use kestrel_run::runs::actdyn::{ActdynConfig, ActdynRun};
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn warm_training_planning_and_steps_allocate_nothing_but_results() {
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
            let model = SeqVae::new(cfg.model.clone()).unwrap();
            let mut p = model.init(Key::new(1));
            let mut tr = Trainer::new(&model, cfg.train.clone()).unwrap();
            let (t, ny) = (cfg.train.window, cfg.env.obs_dim);
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

            let mut c = cfg.clone();
            c.train.train_every = u64::MAX;
            c.save_every = 0;
            let mut run = ActdynRun::new(c).unwrap();
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
