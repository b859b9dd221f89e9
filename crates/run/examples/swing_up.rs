//! MPPI, SMPPI and KMPPI swinging the pendulum up from hanging down, each from the same
//! config type the CLI reads (`kestrel mppi run --config`). Run:
//! `cargo run --release -p kestrel-run --example swing_up`.

use kestrel_mppi::{ControllerKind, SystemKind};
use kestrel_run::runs::mppi::MppiRunConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for kind in [ControllerKind::Mppi, ControllerKind::Smppi, ControllerKind::Kmppi] {
        let mut cfg = MppiRunConfig::defaults_for(kind, SystemKind::Pendulum, 150, 0);
        cfg.mppi.num_samples = 200;
        let ep = cfg.episode(|_, _| true)?;
        let last = ep.states.last().expect("states");
        let angle = (last[0] + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU)
            - std::f64::consts::PI;
        println!(
            "{:>5}: total cost {:9.2}, final angle from upright {angle:+.3} rad",
            kind.name(),
            ep.total_cost
        );
    }
    Ok(())
}
