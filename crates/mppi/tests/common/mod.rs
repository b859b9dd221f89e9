//! Shared by the MPPI golden tests: the scripts' linear system and the comparison.

use kestrel_dynamics::Dynamics;
use kestrel_mppi::{ConventionKind, MppiParams, PrecisionKind};
use kestrel_testkit::floats;
use serde_json::Value;

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

/// The MPPI params a golden case was generated with (the scripts' keyword names; absent keys
/// take the peers' defaults).
pub fn params(case: &Value, convention: ConventionKind) -> MppiParams {
    let nu = case["nu"].as_u64().unwrap() as usize;
    let pr = &case["params"];
    let get = |k: &str, d: Vec<f64>| pr.get(k).map(floats).unwrap_or(d);
    let f = |k: &str, d: f64| pr.get(k).and_then(Value::as_f64).unwrap_or(d);
    let u = |k: &str, d: u64| pr.get(k).and_then(Value::as_u64).unwrap_or(d) as usize;
    let b = |k: &str| pr.get(k).and_then(Value::as_bool).unwrap_or(false);
    MppiParams {
        num_samples: u("num_samples", 0),
        horizon: u("horizon", 0),
        lambda: f("lambda_", 1.0),
        noise_sigma: floats(&case["sigma"]),
        noise_mu: get("noise_mu", vec![0.0; nu]),
        u_min: get("u_min", vec![f64::NEG_INFINITY; nu]),
        u_max: get("u_max", vec![f64::INFINITY; nu]),
        u_init: vec![0.0; nu],
        u_scale: f("u_scale", 1.0),
        u_per_command: u("u_per_command", 1),
        sample_null_action: b("sample_null_action"),
        noise_abs_cost: b("noise_abs_cost"),
        rollout_samples: u("rollout_samples", 1),
        rollout_var_cost: f("rollout_var_cost", 0.0),
        rollout_var_discount: f("rollout_var_discount", 0.95),
        convention,
        // Every golden test pins the bit-exact f64 mode.
        precision: PrecisionKind::F64,
        specific_actions: pr
            .get("specific_actions")
            .map(|v| v.as_array().unwrap().iter().map(floats).collect())
            .unwrap_or_default(),
    }
}

/// Replays a golden case: `command(x, z)` runs one command from state `x` with the fixture's
/// normals `z` and returns what to compare as `(fixture key, value)` pairs; each is checked
/// with [`close`]. Returns the number of commands.
pub fn replay_case(
    peer: &str,
    case: &Value,
    mut command: impl FnMut(&[f64], &[f64]) -> Vec<(&'static str, Vec<f64>)>,
) -> usize {
    let name = case["name"].as_str().unwrap();
    let steps = case["steps"].as_array().unwrap();
    for (k, st) in steps.iter().enumerate() {
        for (key, got) in command(&floats(&st["x"]), &floats(&st["z"])) {
            close(peer, &format!("{name} command {k} {key}"), &got, &floats(&st[key]));
        }
    }
    steps.len()
}
