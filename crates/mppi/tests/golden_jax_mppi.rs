//! Golden test: `Convention::JaxMppi` against jax-mppi 0.3.0 `mppi.command` with the same
//! standard normals (`tools/golden/jax_mppi_command.py`, x64). Compared: returned action(s)
//! and the updated, shifted nominal sequence. Tolerance 1e-9 relative (f64 on both sides;
//! summation order differs).

mod common;

use common::{Linear, close};
use kestrel_mppi::{Convention, Dynamics, Mppi, MppiParams, PendulumDynamics};
use kestrel_testkit::{floats, load_fixture};
use serde_json::Value;

fn replay<D: Dynamics>(m: &Mppi<D>, case: &Value) -> usize {
    let nu = case["nu"].as_u64().unwrap() as usize;
    let pr = &case["params"];
    let get = |k: &str, d: Vec<f64>| pr.get(k).map(floats).unwrap_or(d);
    let p = MppiParams {
        num_samples: pr["num_samples"].as_u64().unwrap() as usize,
        horizon: pr["horizon"].as_u64().unwrap() as usize,
        lambda: pr.get("lambda_").and_then(Value::as_f64).unwrap_or(1.0),
        noise_sigma: floats(&case["sigma"]),
        noise_mu: get("noise_mu", vec![0.0; nu]),
        u_min: get("u_min", vec![f64::NEG_INFINITY; nu]),
        u_max: get("u_max", vec![f64::INFINITY; nu]),
        u_init: vec![0.0; nu],
        u_scale: pr.get("u_scale").and_then(Value::as_f64).unwrap_or(1.0),
        u_per_command: pr.get("u_per_command").and_then(Value::as_u64).unwrap_or(1) as usize,
        sample_null_action: pr.get("sample_null_action").and_then(Value::as_bool).unwrap_or(false),
        noise_abs_cost: pr.get("noise_abs_cost").and_then(Value::as_bool).unwrap_or(false),
        convention: Convention::JaxMppi,
        ..MppiParams::new(nu, 1.0)
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let name = case["name"].as_str().unwrap();
    let mut out = vec![0.0; p.u_per_command * nu];
    let steps = case["steps"].as_array().unwrap();
    for (k, st) in steps.iter().enumerate() {
        m.command_with_normals(&p, &mut s, &floats(&st["x"]), &floats(&st["z"]), &mut out, true);
        close("jax-mppi", &format!("{name} command {k} action"), &out, &floats(&st["action"]));
        close("jax-mppi", &format!("{name} command {k} nominal U"), &s.u, &floats(&st["u"]));
    }
    steps.len()
}

#[test]
fn jax_convention_matches_jax_mppi() {
    let fx = load_fixture("jax_mppi.json");
    let mut n = 0;
    for case in fx["cases"].as_array().unwrap() {
        n += match case["system"].as_str().unwrap() {
            "pendulum" => replay(&Mppi::new(PendulumDynamics), case),
            _ => replay(&Mppi::new(Linear), case),
        };
    }
    assert_eq!(n, 16);
}
