//! Timings of the controllers (`kestrel mppi bench`, `tools/compare/mppi.py`).

use crate::controller::Controller;
use crate::mppi::Mppi;
use crate::params::{MppiError, MppiParams, PrecisionKind};
use crate::systems::PendulumDynamics;
use kestrel_core::Key;

/// The benchmark problem's settings: pytorch-mppi's pendulum (σ = 1, |u| ≤ 2) with
/// `num_samples` samples over `horizon` steps, in `precision` (for [`PendulumDynamics`]).
pub fn pendulum_params(num_samples: usize, horizon: usize, precision: PrecisionKind) -> MppiParams {
    MppiParams {
        num_samples,
        horizon,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        precision,
        ..MppiParams::new(1, 1.0)
    }
}

/// Mean µs per MPPI `command` on the gym pendulum (pytorch-mppi's benchmark problem: σ = 1,
/// |u| ≤ 2) with `num_samples` samples over `horizon` steps, from `(3, 0)`, `commands` timed
/// after 10 warm-up commands, on the current thread pool, in `precision`.
pub fn pendulum_command_us(
    num_samples: usize,
    horizon: usize,
    commands: u64,
    precision: PrecisionKind,
) -> Result<f64, MppiError> {
    if commands == 0 {
        return Err(MppiError::from(kestrel_core::Invalid::new("commands", 0, "at least 1")));
    }
    let m = Mppi::new(PendulumDynamics);
    let p = pendulum_params(num_samples, horizon, precision);
    m.validate(&p)?;
    let mut s = m.init(&p);
    let mut u = [0.0];
    for k in 0..10 {
        m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
    }
    let t = std::time::Instant::now();
    for k in 0..commands {
        m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
    }
    Ok(t.elapsed().as_secs_f64() * 1e6 / commands as f64)
}
