//! The episodic buffer ALLO samples from: episodes are stored with their boundaries, so a
//! batch of (state, future state) pairs is a few index computations. Run:
//! `cargo run -p kestrel-replay --example episodic`.

use kestrel_core::Key;
use kestrel_replay::EpisodicReplay;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut replay = EpisodicReplay::<u32>::new(10_000)?;
    for e in 0..20u32 {
        let states: Vec<u32> = (0..50).map(|t| e * 100 + t).collect();
        replay.add_episode(&states)?;
    }
    let (mut s, mut f) = (vec![0u32; 8], vec![0u32; 8]);
    replay.sample_pairs(Key::new(1), 0.9, &mut s, &mut f)?;
    for (a, b) in s.iter().zip(&f) {
        // A future state of the same episode, a geometric number of steps later.
        assert_eq!(a / 100, b / 100);
        println!("state {a:>4} -> future state {b:>4}");
    }
    println!("{} states in {} episodes", replay.len(), replay.num_episodes());
    Ok(())
}
