//! A warm step of the lane kernel (`ArcLanes`, 5×5, jaxarc mode, random bbox actions drawn per
//! lane, auto-resets included) and of the per-env kernel (`VecEnv<ArcEnv>`, 30×30) allocates
//! nothing, with demo starts and with JaxARC's four start modes mixed (dense noise, the bugs
//! on and off), counted on the one thread of a one-thread pool (see `kestrel_testkit::CountingAlloc`
//! for why one). Its own test binary, with a global allocator that counts.

use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{
    ArcAction, ArcEnv, ArcLanes, ArcParams, GridInit, JaxBugs, ModeKind, Pattern, SelKind,
    sample_action,
};
use kestrel_core::{BatchEnv, Key, VecEnv};
use kestrel_testkit::{CountingAlloc, allocations_in};
use std::sync::Arc;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn generated<const S: usize>() -> ArcEnv<S> {
    let cfg = GenConfig { max_side: S.max(3), min_side: 3, ..GenConfig::default() };
    let mut bank = generate_bank(&Family::ALL, 3, 5, &cfg).unwrap();
    bank.retain_fitting(S);
    ArcEnv::new(Arc::new(bank)).unwrap()
}

#[test]
fn warm_steps_allocate_nothing() {
    assert!(allocations_in(|| drop(std::hint::black_box(vec![0u8; 64]))) >= 1, "counter installed");
    // Short episodes, so the timed steps include auto-resets.
    let p =
        ArcParams { mode: ModeKind::Jaxarc, max_episode_steps: Some(7), ..ArcParams::default() };
    let mixed = GridInit { random_pattern_type: Pattern::Dense, ..GridInit::jaxarc_mixture() };
    let with = |bugs| ArcParams { init: mixed.clone(), bugs, ..p.clone() };
    for p in [p.clone(), with(JaxBugs::default()), with(JaxBugs::all())] {
        warm_steps_allocate_nothing_with(p);
    }
}

fn warm_steps_allocate_nothing_with(p: ArcParams) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let (lanes, rows) = pool.install(|| {
        let mut lanes = ArcLanes::new(generated::<5>(), p.clone(), 1000, 1).unwrap();
        for _ in 0..10 {
            lanes.step_random(SelKind::BBox);
        }
        let a = allocations_in(|| {
            for _ in 0..30 {
                lanes.step_random(SelKind::BBox);
            }
        });
        let mut rows = VecEnv::new(generated::<30>(), p.clone(), 64, 2).unwrap();
        let draw = |_: usize, key: Key, _: &[_], act: &mut [ArcAction<30>]| {
            act[0] = sample_action::<30>(&mut key.rng(), SelKind::BBox)
        };
        for _ in 0..10 {
            rows.step_with(draw);
        }
        let b = allocations_in(|| {
            for _ in 0..30 {
                rows.step_with(draw);
            }
        });
        (a, b)
    });
    assert_eq!(lanes, 0, "ArcLanes: {lanes} allocations in 30 steps ({:?})", p.init);
    assert_eq!(rows, 0, "VecEnv<ArcEnv>: {rows} allocations in 30 steps ({:?})", p.init);
}
