//! Criterion benchmark of one CMA-ES / Sep-CMA-ES generation (ask, sphere evaluation, tell)
//! at population 64. `kestrel evo bench` prints the per-phase split; side-by-side ratios are
//! in `tools/compare/evo.py`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kestrel_core::Key;
use kestrel_evo::problem::{Benchmark, Function};
use kestrel_evo::{CmaEs, Problem, SepCmaEs, Strategy};

fn generation<S: Strategy>(c: &mut Criterion, name: &str, s: S) {
    let n = s.num_dims();
    let p = s.default_params();
    let prob = Benchmark::new(Function::Sphere, n).unwrap();
    let mut st = s.init(Key::new(0), &p, &vec![1.0; n]);
    let (mut pop, mut fit) = (vec![0.0; 64 * n], vec![0.0; 64]);
    let mut g = c.benchmark_group("es_generation_pop64");
    g.throughput(Throughput::Elements(64));
    let mut k = 0u64;
    g.bench_function(format!("{name}/d{n}"), |b| {
        b.iter(|| {
            k += 1;
            // Restart before the search converges into denormal floats (slow, unrepresentative).
            if k.is_multiple_of(200) {
                st = s.init(Key::new(k), &p, &vec![1.0; n]);
            }
            s.ask(Key::new(k), &mut st, &p, &mut pop);
            prob.evaluate(Key::new(k), &pop, &mut fit);
            s.tell(Key::new(k), &pop, &fit, &mut st, &p);
        })
    });
    g.finish();
}

fn bench(c: &mut Criterion) {
    for n in [10, 100] {
        generation(c, "cma-es", CmaEs::new(64, n).unwrap());
        generation(c, "sep-cma-es", SepCmaEs::new(64, n).unwrap());
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
