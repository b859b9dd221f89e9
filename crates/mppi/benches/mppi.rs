//! Criterion benchmark of one MPPI `command` on the pendulum (K=1000, T=20), in f64 and f32,
//! on 1 and 2 threads (the reference workload; pytorch-mppi 1.39 ms, jax-mppi 0.68 ms here).

use criterion::{Criterion, criterion_group, criterion_main};
use kestrel_core::Key;
use kestrel_mppi::bench::pendulum_params;
use kestrel_mppi::systems::BasicLinear;
use kestrel_mppi::{Controller, Mppi, MppiParams, PendulumDynamics, PrecisionKind};

fn bench(c: &mut Criterion) {
    let m = Mppi::new(PendulumDynamics);
    for precision in [PrecisionKind::F64, PrecisionKind::F32] {
        let p = pendulum_params(1000, 20, precision);
        m.validate(&p).unwrap();
        let name = if precision == PrecisionKind::F32 { "f32" } else { "f64" };
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut s = m.init(&p);
            let mut u = [0.0];
            let mut k = 0u64;
            c.bench_function(&format!("mppi_command_pendulum_k1000_t20_{name}/{threads}t"), |b| {
                b.iter(|| {
                    k += 1;
                    pool.install(|| m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u));
                })
            });
        }
    }
}

/// One tuning generation: 64 candidates, one 20-step closed-loop episode each (K=50, T=15).
fn bench_tune(c: &mut Criterion) {
    use kestrel_evo::Problem;
    use kestrel_mppi::tune::{Knob, KnobTransform, TuneProblem, TuneSpec, Tuned};
    let spec = TuneSpec {
        knobs: vec![
            Tuned { knob: Knob::Lambda, lower: 1e-3, upper: 1e3, transform: KnobTransform::Log },
            Tuned { knob: Knob::Sigma(0), lower: 1e-3, upper: 1e2, transform: KnobTransform::Log },
        ],
    };
    // jax-mppi's basic tuning example: its system, start, K, T, λ₀ and 20 steps.
    let base = MppiParams { num_samples: 50, horizon: 15, lambda: 5.0, ..MppiParams::new(1, 1.0) };
    let p =
        TuneProblem::new(Mppi::new(BasicLinear), spec, base, vec![vec![1.0, -0.5]], 20).unwrap();
    let mut r = Key::new(0).rng();
    let pop: Vec<f32> = (0..128).map(|_| r.normal_f64() as f32).collect();
    let mut fit = vec![0.0; 64];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        c.bench_function(
            &format!("tune_generation_64_candidates_k50_t15_20steps/{threads}t"),
            |b| b.iter(|| pool.install(|| p.evaluate(Key::new(1), &pop, &mut fit))),
        );
    }
}

criterion_group!(benches, bench, bench_tune);
criterion_main!(benches);
