//! Many treasure-hunt worlds at once through `VecEnv`: identical on 1 and 2 threads,
//! truncated by the turn limit, rewards from the item values only.

use kestrel_core::BatchEnv;
use kestrel_core::VecEnv;
use kestrel_envs::treasure::{TreasureHunt, TreasureObs, TreasureParams};

fn run(threads: usize) -> (Vec<f32>, Vec<f32>, Vec<u64>) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let p =
            TreasureParams { obs: TreasureObs::Rgb, spawn_prob: 0.02, ..TreasureParams::default() };
        let mut v = VecEnv::new(TreasureHunt, p, 64, 11).unwrap();
        let (mut rewards, mut truncated_at) = (Vec::new(), Vec::new());
        for _ in 0..250 {
            v.step_with(|row, key, _obs, out| {
                let mut r = key.fold_in(row as u64).rng();
                for a in out.iter_mut() {
                    *a = r.below(4) as u8;
                }
            });
            rewards.extend_from_slice(v.rewards());
            if v.truncated().iter().all(|&t| t) {
                truncated_at.push(v.t());
            }
            assert!(v.terminated().iter().all(|&t| !t), "the hunt never terminates");
        }
        (v.obs().to_vec(), rewards, truncated_at)
    })
}

#[test]
fn batched_worlds_are_thread_count_independent_and_truncate_at_the_turn_limit() {
    let (o1, r1, t1) = run(1);
    let (o2, r2, t2) = run(2);
    assert_eq!(o1, o2);
    assert_eq!(r1, r2);
    assert_eq!(t1, [100, 200], "every world truncates after 100 turns");
    assert_eq!(t1, t2);
    let allowed = [0.0, 10.0, 5.0, -10.0, -1.0];
    assert!(r1.iter().all(|r| allowed.contains(r)), "rewards are item values or the wall bump");
    assert!(r1.contains(&10.0) && r1.contains(&-1.0), "gems found and walls bumped");
}
