//! ARC without a dataset: generate tasks, then step 256 environments in O2ARC semantics with
//! random bounding-box actions. Point `TaskBank::load` at ARC-AGI folders for real tasks.
//! Run: `cargo run --release -p kestrel-arc --example random_agent`.

use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{ArcAction, ArcEnv, ArcParams, O2ARC_OPS, SelKind, sample_action};
use kestrel_core::{BatchEnv, Key, VecEnv};
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    const S: usize = 30;
    let bank =
        generate_bank(&Family::ALL, 8, 0, &GenConfig { max_side: 12, ..GenConfig::default() })?;
    println!("{} generated tasks, e.g. {}", bank.len(), bank.tasks()[0].id);
    let env = ArcEnv::<S>::new(Arc::new(bank))?;
    let mut envs = VecEnv::new(env, ArcParams::default(), 256, 1)?;
    let mut solved = 0;
    for _ in 0..200 {
        envs.step_with(|_, key: Key, _obs: &[i8], act: &mut [ArcAction<S>]| {
            act[0] = sample_action::<S>(&mut key.rng(), SelKind::BBox)
        });
        solved += envs.rewards().iter().filter(|r| **r > 0.0).count();
    }
    println!("51,200 steps of a random policy solved {solved} episodes");
    println!("ops: {} … {}", O2ARC_OPS[0], O2ARC_OPS[O2ARC_OPS.len() - 1]);
    Ok(())
}
