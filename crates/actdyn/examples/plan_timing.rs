//! Wall time of one iCEM planner call at the E2 defaults (N = 32, H = 10, 10 iterations,
//! K_e = 10: 217 sequences, plus 3 shifted elites from the second call on), RBF dynamics
//! with C = 625 centres and the A-optimality cost, on 1 and 2 threads, both profiles.
//!
//! `cargo run --release -p kestrel-actdyn --example plan_timing`

use kestrel_actdyn::fisher::{AccumulatedFisher, FisherBugs, FisherCost, FisherMetric, Optimality};
use kestrel_actdyn::rbf::{LogLinearDecoder, RbfDynamics, RbfGrid};
use kestrel_core::Key;
use kestrel_mppi::{Icem, IcemParams, KeyedPink};
use std::time::Instant;

fn main() {
    let mut r = Key::new(7).rng();
    let grid = RbfGrid::default();
    let w: Vec<f64> = (0..2 * grid.num_centres()).map(|_| r.standard_normal()).collect();
    let model = RbfDynamics::new(grid, w, 0.1, false).expect("model");
    let cdec: Vec<f64> = (0..100).map(|_| 1.4 * (r.uniform_f64() - 0.5)).collect();
    let bdec: Vec<f64> = (0..50).map(|_| 1.4 * (r.uniform_f64() - 0.5)).collect();
    let dec = LogLinearDecoder::new(cdec, bdec).expect("decoder");
    let calls = 200;
    for bugs in [FisherBugs::FAITHFUL, FisherBugs::FIXED] {
        let metric = FisherMetric::new(&model, &dec, bugs);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            let mut icem = Icem::new(IcemParams::new(2, -0.1, 0.1)).expect("params");
            let mut state = icem.init_state();
            let mut acc = AccumulatedFisher::default();
            let mut b = [0.8f64, 0.0];
            let mut times = Vec::with_capacity(calls);
            for step in 0..calls as u64 {
                let cost =
                    FisherCost::new(metric.clone(), Optimality::A, b, acc.get()).expect("cost");
                let mut noise = KeyedPink { key: Key::new(1).fold_in(step), round_f32: true };
                let mut a = [0.0; 2];
                let t0 = Instant::now();
                pool.install(|| icem.plan(&mut state, &mut noise, &cost, &mut a)).expect("plan");
                times.push(t0.elapsed().as_secs_f64() * 1e3);
                acc.update(&metric, b);
                // Move along the unit-speed circle plus the chosen action.
                let ang = b[1].atan2(b[0]) + 0.05;
                b = [0.8 * ang.cos() + a[0], 0.8 * ang.sin() + a[1]];
            }
            let warm = &times[calls / 10..]; // the first calls warm caches and the pool
            let mean = warm.iter().sum::<f64>() / warm.len() as f64;
            times.sort_by(f64::total_cmp);
            println!(
                "{} {threads} thread(s): median {:.2} ms, mean {:.2} ms, min {:.2} ms per call ({calls} calls)",
                if bugs == FisherBugs::FAITHFUL { "faithful" } else { "fixed   " },
                times[calls / 2],
                mean,
                times[0],
            );
        }
    }
}
