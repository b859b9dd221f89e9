//! An ALLO training run as a library call: the same config and run the CLI's
//! `kestrel allo train` uses, with events delivered to a closure. Run:
//! `cargo run --release -p kestrel-run --example allo_run`.

use kestrel_agents::allo::AlloConfig;
use kestrel_run::runs::allo::{AlloEvent, AlloRun, AlloRunConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = AlloRunConfig {
        map: "builtin:rooms-2-4".into(),
        steps: 2000,
        num_samples: 100_000,
        learner: AlloConfig { batch_size: 256, num_eigenvectors: 6, ..AlloConfig::paper() },
        eval_every: 500,
        checkpoint_every: 0,
        ..AlloRunConfig::default()
    };
    let mut run = AlloRun::new(cfg)?;
    run.run(|event| {
        if let AlloEvent::Step { step, cosine, evaluated: true, .. } = event {
            println!("step {step:>5}: average cosine similarity {cosine:.4}");
        }
        Ok(true)
    })?;
    Ok(())
}
