//! 1,024 CartPole-v1 environments stepped as one batch with a random policy: the batch is
//! the unit of work, and every draw comes from the key tree (same numbers on any thread
//! count). Run: `cargo run --release -p kestrel-envs --example cartpole_batch`.

use kestrel_core::{BatchEnv, Key, VecEnv};
use kestrel_envs::{CartPole, CartPoleParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut envs = VecEnv::new(CartPole, CartPoleParams::default(), 1024, 7)?;
    let (mut episodes, mut steps) = (0u64, 0u64);
    let t0 = std::time::Instant::now();
    for _ in 0..500 {
        // The policy sees each row's key and observation and writes its action.
        envs.step_with(|_row, key: Key, _obs: &[f32], act: &mut [u32]| act[0] = key.rng().below(2));
        steps += envs.num_envs() as u64;
        episodes +=
            envs.terminated().iter().zip(envs.truncated()).filter(|(t, u)| **t || **u).count()
                as u64;
    }
    let rate = steps as f64 / t0.elapsed().as_secs_f64();
    println!("{steps} steps, {episodes} episodes ended, {:.1} M steps/s", rate / 1e6);
    println!("mean random-policy episode length ≈ {:.1}", steps as f64 / episodes.max(1) as f64);
    Ok(())
}
