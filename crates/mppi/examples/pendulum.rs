//! MPPI swinging the gym pendulum up from hanging down, built from the crate's parts: the
//! controller over the concrete dynamics, the system's default params, one closed-loop
//! episode. (The run config that picks any controller and system by name is
//! `kestrel_run::runs::mppi::MppiRunConfig`; see `kestrel-run`'s `swing_up` example.) Run:
//! `cargo run --release -p kestrel-mppi --example pendulum`.

use kestrel_core::Key;
use kestrel_mppi::{Mppi, PendulumDynamics, SystemKind, episode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mppi = Mppi::new(PendulumDynamics);
    let params = SystemKind::Pendulum.default_params();
    mppi.validate(&params)?;
    let start = SystemKind::Pendulum.start();
    let ep = episode(&mppi, &params, &start, 150, Key::new(0), true, |_, _| true);
    let last = ep.states.last().expect("states");
    let angle =
        (last[0] + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI;
    println!("MPPI: total cost {:.2}, final angle from upright {angle:+.3} rad", ep.total_cost);
    Ok(())
}
