//! Golden test: `ConventionKind::JaxMppi` against jax-mppi 0.3.0 `mppi.command`, `smppi.command`
//! and `kmppi.command` with the same standard normals (`tools/golden/jax_mppi_command.py`,
//! x64). Compared: returned action(s) and the updated, shifted nominal sequence (SMPPI: also
//! the action sequence; KMPPI: also the control points). Tolerance 1e-9 relative (f64 on both
//! sides; summation order differs).

mod common;

use common::{Linear, params, replay_case};
use kestrel_dynamics::Dynamics;
use kestrel_mppi::{
    Controller, ConventionKind, Kmppi, KmppiParams, Mppi, PendulumDynamics, Smppi, SmppiParams,
};
use kestrel_testkit::{floats, load_fixture};
use serde_json::Value;

/// [`Linear`] with the script's terminal cost `10 |x_T|²` (used by the SMPPI/KMPPI cases).
struct LinearTerminal;

impl Dynamics for LinearTerminal {
    fn nx(&self) -> usize {
        4
    }
    fn nu(&self) -> usize {
        2
    }
    fn step(&self, x: &[f64], u: &[f64], t: usize, n: &mut [f64]) {
        Linear.step(x, u, t, n)
    }
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64 {
        Linear.running_cost(x, u, t)
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        10.0 * x.iter().map(|v| v * v).sum::<f64>()
    }
}

fn replay<D: Dynamics>(m: &Mppi<D>, case: &Value) -> usize {
    let p = params(case, ConventionKind::JaxMppi);
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = vec![0.0; p.u_per_command * m.dynamics().nu()];
    replay_case("jax-mppi", case, |x, z| {
        m.command_with_normals(&p, &mut s, x, z, &mut out, true);
        vec![("action", out.clone()), ("u", s.u.clone())]
    })
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

fn replay_smppi<D: Dynamics>(m: &Smppi<D>, case: &Value) -> usize {
    let nu = case["nu"].as_u64().unwrap() as usize;
    let pr = &case["params"];
    let get = |k: &str, d: Vec<f64>| pr.get(k).map(floats).unwrap_or(d);
    let p = SmppiParams {
        mppi: params(case, ConventionKind::JaxMppi),
        w_action_seq_cost: pr.get("w_action_seq_cost").and_then(Value::as_f64).unwrap_or(1.0),
        delta_t: pr.get("delta_t").and_then(Value::as_f64).unwrap_or(1.0),
        action_min: get("action_min", vec![f64::NEG_INFINITY; nu]),
        action_max: get("action_max", vec![f64::INFINITY; nu]),
        clamp_lifted_control: false,
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = vec![0.0; p.mppi.u_per_command * nu];
    replay_case("jax-mppi", case, |x, z| {
        m.command_with_normals(&p, &mut s, x, z, &mut out, true);
        vec![("action", out.clone()), ("u", s.u.clone()), ("actions", s.actions.clone())]
    })
}

fn replay_kmppi<D: Dynamics>(m: &Kmppi<D>, case: &Value) -> usize {
    let nu = case["nu"].as_u64().unwrap() as usize;
    let p = KmppiParams {
        mppi: params(case, ConventionKind::JaxMppi),
        num_support_pts: case["params"]["num_support_pts"].as_u64().unwrap() as usize,
        kernel_sigma: 1.0,
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = vec![0.0; p.mppi.u_per_command * nu];
    replay_case("jax-mppi", case, |x, z| {
        m.command_with_normals(&p, &mut s, x, z, &mut out, true);
        vec![("action", out.clone()), ("u", s.u.clone()), ("theta", s.theta.clone())]
    })
}

#[test]
fn jax_convention_smppi_and_kmppi_match_jax_mppi() {
    let fx = load_fixture("jax_mppi.json");
    let (mut ns, mut nk) = (0, 0);
    for case in fx["variants"].as_array().unwrap() {
        let pend = case["system"].as_str().unwrap() == "pendulum";
        match (case["controller"].as_str().unwrap(), pend) {
            ("smppi", true) => ns += replay_smppi(&Smppi::new(PendulumDynamics), case),
            ("smppi", false) => ns += replay_smppi(&Smppi::new(LinearTerminal), case),
            (_, true) => nk += replay_kmppi(&Kmppi::new(PendulumDynamics), case),
            (_, false) => nk += replay_kmppi(&Kmppi::new(LinearTerminal), case),
        }
    }
    assert_eq!((ns, nk), (12, 12));
}
