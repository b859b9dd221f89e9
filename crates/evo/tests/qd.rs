//! MAP-Elites and CMA-ME end to end on the linear-projection sphere benchmark.

use kestrel_core::Key;
use kestrel_evo::problem::Function;
use kestrel_evo::qd::{Archive, CmaMe, Emitter, LinearProjection, MapElites, QdProblem, Variation};

fn archive(p: &LinearProjection) -> Archive {
    let b = p.measure_bound();
    Archive::grid(p.num_dims, vec![20, 20], vec![-b, -b], vec![b, b], 1000.0).unwrap()
}

#[test]
fn map_elites_and_cma_me_illuminate() {
    let p = LinearProjection { num_dims: 10, function: Function::Sphere };
    let (batch, gens) = (36, 300);
    let (mut pop, mut fit, mut meas) =
        (vec![0.0; batch * 10], vec![0.0; batch], vec![0.0; batch * 2]);
    let mut results = Vec::new();
    for variation in
        [Variation::Gaussian { sigma: 0.5 }, Variation::IsoLine { iso_sigma: 0.1, line_sigma: 0.2 }]
    {
        let mut a = archive(&p);
        let mut me = MapElites { batch_size: batch, variation, x0: vec![0.0; 10] };
        for g in 0..gens {
            me.ask(Key::new(g), &a, &mut pop);
            p.evaluate(Key::new(g), &pop, &mut fit, &mut meas);
            me.tell(Key::new(g), &mut a, &pop, &fit, &meas);
        }
        results.push(a.stats());
    }
    let mut a = archive(&p);
    let mut e = CmaMe::new(batch, &[0.0; 10], 0.5, Key::new(1)).unwrap();
    for g in 0..gens {
        e.ask(Key::new(g), &a, &mut pop);
        p.evaluate(Key::new(g), &pop, &mut fit, &mut meas);
        e.tell(Key::new(g), &mut a, &pop, &fit, &meas);
    }
    let cma_me = a.stats();
    for s in &results {
        assert!(s.coverage > 0.05 && s.qd_score > 0.0, "{s:?}");
    }
    assert!(e.restarts > 0, "CMA-ME never restarted");
    assert!(
        cma_me.qd_score > results[0].qd_score,
        "CMA-ME {cma_me:?} vs MAP-Elites {:?}",
        results[0]
    );
    assert!(cma_me.coverage > 0.5 && cma_me.best < 5.0, "{cma_me:?}");
}
