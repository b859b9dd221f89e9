//! Times training calls (E1 MLP and E2 RBF), medians of `reps` calls:
//! `cargo run --release -p kestrel-actdyn --example train_timing -- [reps] [MLP|RBF]` (run it
//! under `perf record` to profile one of them).

use kestrel_actdyn::bench::train_ms;
use kestrel_actdyn::model::{DynamicsKind, ModelConfig};
use kestrel_actdyn::train::TrainConfig;

fn main() {
    let reps: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let only = std::env::args().nth(2);
    // E1's model is the default; E2's has RBF dynamics (the run's `ActdynConfig::e1`/`e2`).
    let rbf = ModelConfig { dynamics: DynamicsKind::rbf_default(), ..ModelConfig::default() };
    for (name, model) in [("E1 (MLP)", ModelConfig::default()), ("E2 (RBF)", rbf)] {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        match train_ms(&model, &TrainConfig::default(), reps) {
            Ok(ms) => println!("{name}: {ms:.3} ms per call"),
            Err(e) => eprintln!("{name}: {e}"),
        }
    }
}
