//! The one pendulum physics in both modes: f64 throughout (what the MPPI peers use) and
//! Gymnasium's float32 torque arithmetic (what `Pendulum-v1` does). They differ by the
//! rounding of the torque term only. Run:
//! `cargo run -p kestrel-dynamics --example pendulum_physics`.

use kestrel_dynamics::{Dynamics, PendulumDynamics, PendulumPhysics, Torque, pendulum_step};

fn main() {
    let p = PendulumPhysics::default();
    let (mut a, mut b) = ([std::f64::consts::PI, 0.0], [std::f64::consts::PI, 0.0]);
    for t in 0..100 {
        let u = (t as f64 * 0.37).sin() * 2.0 + 0.1;
        a = pendulum_step(&p, a, u, Torque::F64);
        b = pendulum_step(&p, b, u, Torque::F32);
    }
    println!("after 100 steps: f64 torque θ = {:.12}, f32 torque θ = {:.12}", a[0], b[0]);
    // The same step through the Dynamics trait that MPPI rolls out.
    let mut next = [0.0; 2];
    PendulumDynamics.step(&[0.3, 0.0], &[1.0], 0, &mut next);
    let cost = PendulumDynamics.running_cost(&next, &[1.0], 0);
    println!("one MPPI model step from θ = 0.3 with torque 1: {next:?}, cost {cost:.4}");
}
