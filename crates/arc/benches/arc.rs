//! Criterion benchmark of `VecEnv<ArcEnv>` steps (random actions sampled inside the step),
//! at 1, 64 and 4096 envs on 1 and 2 threads. `kestrel arc bench` is the user-facing
//! version with per-operation costs; side-by-side ratios are in `tools/compare/arc.py`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{ArcAction, ArcEnv, ArcParams, ModeKind, SelKind, sample_action};
use kestrel_core::{BatchEnv, Key, VecEnv};
use std::sync::Arc;

fn bench(c: &mut Criterion) {
    let cfg = GenConfig { max_side: 30, ..GenConfig::default() };
    let env =
        ArcEnv::<30>::new(Arc::new(generate_bank(&Family::ALL, 16, 0, &cfg).unwrap())).unwrap();
    let mut g = c.benchmark_group("arc_step_30x30_mask");
    for mode in [ModeKind::O2arc, ModeKind::Jaxarc] {
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for n in [1usize, 64, 4096] {
                let p = ArcParams { mode, ..ArcParams::default() };
                let mut v = VecEnv::new(env.clone(), p, n, 1).unwrap();
                g.throughput(Throughput::Elements(n as u64));
                g.bench_function(format!("{mode:?}/{threads}t/{n}"), |b| {
                    b.iter(|| {
                        pool.install(|| {
                            v.step_with(|_, key: Key, _, a: &mut [ArcAction<30>]| {
                                a[0] = sample_action::<30>(&mut key.rng(), SelKind::Mask)
                            })
                        })
                    })
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
