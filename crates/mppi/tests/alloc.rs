//! A warm MPPI `command` allocates nothing, f32 lanes and bit-exact f64, counted on the one
//! thread of a one-thread pool (see `kestrel_testkit::CountingAlloc` for why one). Its own test
//! binary, with a global allocator that counts.

use kestrel_core::Key;
use kestrel_mppi::bench::pendulum_params;
use kestrel_mppi::{Controller, Mppi, PendulumDynamics, PrecisionKind};
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn warm_commands_allocate_nothing() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for precision in [PrecisionKind::F32, PrecisionKind::F64] {
        let n = pool.install(|| {
            let m = Mppi::new(PendulumDynamics);
            let p = pendulum_params(1000, 20, precision);
            let mut s = m.init(&p);
            let mut u = [0.0];
            for k in 0..5 {
                m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
            }
            allocations_in(|| {
                for k in 5..25 {
                    m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
                }
            })
        });
        assert_eq!(n, 0, "{precision:?}: {n} allocations in 20 commands");
    }
}
