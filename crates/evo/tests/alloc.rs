//! A warm CMA-ES (and Sep-CMA-ES) generation through the driver (ask, evaluate, tell)
//! allocates nothing, at d = 10 and d = 100, and so does one of every other strategy in the
//! registry, counted on the one thread of a one-thread pool
//! (see `kestrel_testkit::CountingAlloc` for why one). Its own test binary, with a global
//! allocator that counts.

use kestrel_core::Key;
use kestrel_evo::driver::{Driver, Instance};
use kestrel_evo::problem::{Benchmark, Function};
use kestrel_evo::{CmaEs, CmaParams, SepCmaEs, Strategy};
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn warm<S: Strategy + Clone + 'static>(s: S, p: S::Params) -> usize {
    let n = s.num_dims();
    let prob = Benchmark::new(Function::Sphere, n).unwrap();
    let mut d =
        Driver::new(Instance::new(s, p, Key::new(0), &vec![1.0; n]), &prob, Key::new(0)).unwrap();
    for _ in 0..5 {
        d.step();
    }
    allocations_in(|| {
        for _ in 0..20 {
            d.step();
        }
    })
}

#[test]
fn warm_generations_allocate_nothing() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for dims in [10, 100] {
        let (cma, sep) = pool.install(|| {
            let s = CmaEs::new(64, dims).unwrap();
            let p = CmaParams { sigma_init: 0.3, ..s.default_params() };
            let s2 = SepCmaEs::new(64, dims).unwrap();
            let p2 = CmaParams { sigma_init: 0.3, ..s2.default_params() };
            (warm(s, p), warm(s2, p2))
        });
        assert_eq!(cma, 0, "CMA-ES d={dims}: {cma} allocations");
        assert_eq!(sep, 0, "Sep-CMA-ES d={dims}: {sep} allocations");
    }
}

#[test]
fn warm_generations_of_every_strategy_allocate_nothing() {
    use kestrel_evo::StrategyKind;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for kind in StrategyKind::ALL {
        for dims in [10, 100] {
            // The learned ones with evosax's weights (skipped, as reference data, without).
            let Some(params_path) = kestrel_testkit::evosax_weights(kind.evosax_weights(dims))
            else {
                continue;
            };
            let params = kestrel_evo::StrategyParams { params_path, ..Default::default() };
            let count = pool.install(|| {
                let prob = Benchmark::new(Function::Sphere, dims).unwrap();
                let start = vec![1.0; dims];
                let opt = kind.build_with(Some(64 + 1), 0.3, &params, &start, Key::new(0));
                // Even populations for the antithetic ones, pop − 1 = 64 for GESMR's group.
                let opt =
                    opt.or_else(|_| kind.build_with(Some(64), 0.3, &params, &start, Key::new(0)));
                let mut d = Driver::new(opt.unwrap(), &prob, Key::new(0)).unwrap();
                for _ in 0..5 {
                    d.step();
                }
                allocations_in(|| {
                    for _ in 0..20 {
                        d.step();
                    }
                })
            });
            assert_eq!(count, 0, "{kind} d={dims}: {count} allocations in 20 warm generations");
        }
    }
}
