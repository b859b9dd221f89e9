//! Times training calls (E1 MLP and E2 RBF), medians of `reps` calls:
//! `cargo run --release -p kestrel-actdyn --example train_timing -- [reps] [MLP|RBF]` (run it
//! under `perf record` to profile one of them).

use kestrel_actdyn::bench::train_ms;
use kestrel_actdyn::config::ActdynConfig;

fn main() {
    let reps: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2000);
    let only = std::env::args().nth(2);
    for (name, cfg) in [("E1 (MLP)", ActdynConfig::e1()), ("E2 (RBF)", ActdynConfig::e2())] {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        match train_ms(&cfg, reps) {
            Ok(ms) => println!("{name}: {ms:.3} ms per call"),
            Err(e) => eprintln!("{name}: {e}"),
        }
    }
}
