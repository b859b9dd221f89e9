//! The asymexp learner's step allocates nothing once its buffers have grown: the two batches'
//! sampling and the whole update (encoder pass over the distinct states, the loss, the
//! backward pass, Adam, the multipliers) reuse their buffers, counted by the allocator.

use kestrel_agents::asymexp::{Asymexp, AsymexpConfig, AsymexpMap, KeyDraws, VersionKind, collect};
use kestrel_core::Key;
use kestrel_replay::RowRuleKind;
use kestrel_testkit::{CountingAlloc, allocations_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[test]
fn a_step_allocates_nothing_once_warm() {
    let map =
        AsymexpMap::parse("XXXXXXX\nX     X\nX  X  X\nX     X\nXXXXXXX", "m", VersionKind::Final)
            .unwrap();
    let data =
        collect(&map, 8, 60, 60, RowRuleKind::Reference, &mut KeyDraws::new(&map, Key::new(1)))
            .unwrap();
    let cfg = AsymexpConfig {
        batch_size: 64,
        hidden: vec![32, 32],
        ..AsymexpConfig::reference(VersionKind::Thresholded)
    };
    let mut a = Asymexp::<f32>::new(cfg, map.coords(), Key::new(2)).unwrap();
    let (mut o, mut x, mut o2, mut un) =
        (vec![0u32; 64], vec![0u32; 64], vec![0u32; 64], vec![0u32; 64]);
    let mut step = |a: &mut Asymexp<f32>, t: u64| {
        let k = Key::new(3).fold_in(t);
        data.replay.sample(k.fold_in(0), 0.2, RowRuleKind::Reference, &mut o, &mut x).unwrap();
        data.replay.sample(k.fold_in(1), 0.2, RowRuleKind::Reference, &mut o2, &mut un).unwrap();
        a.step_on(&o, &x, &o2).unwrap();
    };
    // Warm up until the buffers have met every state of the map.
    for t in 0..50 {
        step(&mut a, t);
    }
    let n = allocations_in(|| {
        for t in 50..60 {
            step(&mut a, t);
        }
    });
    assert_eq!(n, 0, "allocations in ten warm steps");
    assert!(a.last_step().terms.allo.is_finite());
}
