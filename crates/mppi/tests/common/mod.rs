//! Shared by the MPPI golden tests: the scripts' linear system and the comparison.

use kestrel_mppi::Dynamics;

/// `x' = A x + B u` with two double integrators; cost `|x|² + 0.1 |u|²` (the golden scripts'
/// `lin_dyn` / `lin_cost`).
pub struct Linear;

impl Dynamics for Linear {
    fn nx(&self) -> usize {
        4
    }
    fn nu(&self) -> usize {
        2
    }
    fn step(&self, x: &[f64], u: &[f64], _t: usize, n: &mut [f64]) {
        n[0] = x[0] + 0.1 * x[1] + 0.005 * u[0];
        n[1] = x[1] + 0.1 * u[0];
        n[2] = x[2] + 0.1 * x[3] + 0.005 * u[1];
        n[3] = x[3] + 0.1 * u[1];
    }
    fn running_cost(&self, x: &[f64], u: &[f64], _t: usize) -> f64 {
        x.iter().map(|v| v * v).sum::<f64>() + 0.1 * u.iter().map(|v| v * v).sum::<f64>()
    }
}

/// Relative error at most 1e-9 (denominator at least 1e-6) element by element.
pub fn close(peer: &str, what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs() / w.abs().max(1e-6);
        assert!(err <= 1e-9, "{what}[{i}]: kestrel {g}, {peer} {w} (relative error {err:.2e})");
    }
}
