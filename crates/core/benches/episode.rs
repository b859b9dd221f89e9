//! Criterion benchmark of [`EpisodeStats::record_steps`]: a 64-step rollout's statistics and
//! episode columns (what `VectorEnv.rollout` fills for Python) at 1,024 and 4,096 rows on 1
//! and 2 threads. About 3% of the rows end each step, as under uniformly random ARC actions
//! (one of 35 operations submits). The end-to-end figure is `tools/compare/py_vec.py`'s
//! workload D.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kestrel_core::{AutoReset, EpisodeColumns, EpisodeStats, Key};

fn bench(c: &mut Criterion) {
    let steps = 64;
    let mut g = c.benchmark_group("episode_record_steps_64");
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        for rows in [1024usize, 4096] {
            let n = rows * steps;
            let mut r = Key::new(7).rng();
            let rewards: Vec<f32> = (0..n).map(|_| r.below(3) as f32).collect();
            let terminated: Vec<bool> = (0..n).map(|_| r.below(35) == 0).collect();
            let truncated = vec![false; n];
            let (mut returns, mut lengths) = (vec![0.0; n], vec![0i64; n]);
            let (mut seconds, mut ended) = (vec![0.0; n], vec![false; n]);
            let mut stats = EpisodeStats::new(rows, 1, 0.0);
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(format!("{threads}t/{rows}"), |b| {
                b.iter(|| {
                    let out = EpisodeColumns {
                        returns: &mut returns,
                        lengths: &mut lengths,
                        seconds: &mut seconds,
                        ended: &mut ended,
                    };
                    pool.install(|| {
                        stats.record_steps(
                            AutoReset::NextStep,
                            steps,
                            &rewards,
                            &terminated,
                            &truncated,
                            1.0,
                            Some(out),
                        )
                    })
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
