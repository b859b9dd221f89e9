//! Criterion benchmark of one MPPI `command` on the pendulum (K=1000, T=20), on 1 and 2
//! threads (the reference workload; pytorch-mppi 1.39 ms, jax-mppi 0.68 ms here).

use criterion::{Criterion, criterion_group, criterion_main};
use kestrel_core::Key;
use kestrel_mppi::{Mppi, MppiParams, PendulumDynamics};

fn bench(c: &mut Criterion) {
    let m = Mppi::new(PendulumDynamics);
    let p = MppiParams {
        num_samples: 1000,
        horizon: 20,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        ..MppiParams::new(1, 1.0)
    };
    m.validate(&p).unwrap();
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut s = m.init(&p);
        let mut u = [0.0];
        let mut k = 0u64;
        c.bench_function(&format!("mppi_command_pendulum_k1000_t20/{threads}t"), |b| {
            b.iter(|| {
                k += 1;
                pool.install(|| m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u));
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
