//! Golden test: `Mppi::command_with_normals` against pytorch-mppi 0.9.1 `MPPI.command` with the
//! same standard normals (`tools/golden/pytorch_mppi_command.py`, float64 torch). Compared:
//! returned action(s), the updated nominal sequence, and every sample's total cost.
//!
//! Tolerance 1e-9 relative: both sides are f64, but torch sums the control cost and the
//! weighted update in a different order (einsum), and `torch.remainder` (`a − b⌊a/b⌋`) is
//! not bitwise `rem_euclid` (fmod-based) in the angle normalisation.

mod common;

use common::{Linear, params, replay_case};
use kestrel_dynamics::Dynamics;
use kestrel_mppi::{Controller, ConventionKind, Mppi, PendulumDynamics};
use kestrel_testkit::{floats, load_fixture};
use serde_json::Value;

/// The script's pendulum ensemble for `rollout_samples > 1`: member `m` has gravity
/// `10 + 0.5 m` (member 0 is the gym pendulum).
struct Ensemble;

impl Dynamics for Ensemble {
    fn nx(&self) -> usize {
        2
    }
    fn nu(&self) -> usize {
        1
    }
    fn step(&self, x: &[f64], u: &[f64], t: usize, n: &mut [f64]) {
        self.step_member(x, u, t, 0, n)
    }
    fn step_member(&self, x: &[f64], u: &[f64], _t: usize, m: usize, n: &mut [f64]) {
        let g = 10.0 + 0.5 * m as f64;
        let u = u[0].clamp(-2.0, 2.0);
        let thdot = (x[1] + (3.0 * g / 2.0 * x[0].sin() + 3.0 * u) * 0.05).clamp(-8.0, 8.0);
        n[0] = x[0] + thdot * 0.05;
        n[1] = thdot;
    }
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64 {
        PendulumDynamics.running_cost(x, u, t)
    }
}

fn replay<D: Dynamics>(m: &Mppi<D>, case: &Value) -> usize {
    let p = params(case, ConventionKind::PytorchMppi);
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = vec![0.0; p.u_per_command * m.dynamics().nu()];
    replay_case("pytorch-mppi", case, |x, z| {
        m.command_with_normals(&p, &mut s, x, z, &mut out, true);
        vec![("action", out.clone()), ("u", s.u.clone()), ("costs", s.costs.clone())]
    })
}

#[test]
fn mppi_matches_pytorch_mppi() {
    let fx = load_fixture("pytorch_mppi.json");
    let mut n = 0;
    for case in fx["cases"].as_array().unwrap() {
        n += match case["system"].as_str().unwrap() {
            "pendulum" => replay(&Mppi::new(PendulumDynamics), case),
            "ensemble" => replay(&Mppi::new(Ensemble), case),
            _ => replay(&Mppi::new(Linear), case),
        };
    }
    assert_eq!(n, 24);
}

fn replay_smppi<D: Dynamics>(m: &kestrel_mppi::Smppi<D>, case: &Value) -> usize {
    let nu = case["nu"].as_u64().unwrap() as usize;
    let pr = &case["params"];
    let amin = pr.get("action_min").map(floats);
    let amax = pr.get("action_max").map(floats);
    // pytorch-mppi: a one-sided action bound is mirrored.
    let (action_min, action_max) = match (amin, amax) {
        (Some(lo), Some(hi)) => (lo, hi),
        (Some(lo), None) => (lo.clone(), lo.iter().map(|v| -v).collect()),
        (None, Some(hi)) => (hi.iter().map(|v| -v).collect(), hi),
        (None, None) => (vec![f64::NEG_INFINITY; nu], vec![f64::INFINITY; nu]),
    };
    let p = kestrel_mppi::SmppiParams {
        mppi: params(case, ConventionKind::PytorchMppi),
        w_action_seq_cost: pr.get("w_action_seq_cost").and_then(Value::as_f64).unwrap_or(1.0),
        delta_t: pr.get("delta_t").and_then(Value::as_f64).unwrap_or(1.0),
        action_min,
        action_max,
        clamp_lifted_control: false,
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = vec![0.0; p.mppi.u_per_command * nu];
    replay_case("pytorch-mppi", case, |x, z| {
        m.command_with_normals(&p, &mut s, x, z, &mut out, true);
        vec![
            ("action", out.clone()),
            ("u", s.u.clone()),
            ("actions", s.actions.clone()),
            ("costs", s.costs.clone()),
        ]
    })
}

/// pytorch-mppi's `SpecificActionSampler`: fixed sequences (after the null action, clamped to
/// the bounds) and sequences computed from the state at each command. The fixed ones replay
/// through `MppiParams::specific_actions`; every case also through `Mppi::set_specific` with the
/// sequences the sampler returned at each command.
#[test]
fn specific_action_samplers_match_pytorch_mppi() {
    fn go<D: Dynamics>(m: &Mppi<D>, case: &Value, through_params: bool) -> usize {
        let mut p = params(case, ConventionKind::PytorchMppi);
        if !through_params {
            p.specific_actions.clear();
        }
        m.validate(&p).unwrap();
        let mut s = m.init(&p);
        let mut out = vec![0.0; p.u_per_command * m.dynamics().nu()];
        let tried: Vec<Vec<f64>> =
            case["steps"].as_array().unwrap().iter().map(|st| floats(&st["specific"])).collect();
        let mut i = 0;
        replay_case("pytorch-mppi", case, |x, z| {
            if !through_params {
                m.set_specific(&p, &mut s, &tried[i]).unwrap();
            }
            i += 1;
            m.command_with_normals(&p, &mut s, x, z, &mut out, true);
            vec![("action", out.clone()), ("u", s.u.clone()), ("costs", s.costs.clone())]
        })
    }
    let fx = load_fixture("pytorch_mppi.json");
    let mut n = 0;
    for case in fx["specific_cases"].as_array().unwrap() {
        let fixed = case["params"].get("specific_actions").is_some();
        for through_params in [true, false] {
            if through_params && !fixed {
                continue;
            }
            n += match case["system"].as_str().unwrap() {
                "pendulum" => go(&Mppi::new(PendulumDynamics), case, through_params),
                _ => go(&Mppi::new(Linear), case, through_params),
            };
        }
    }
    assert_eq!(n, 12);
}

#[test]
fn smppi_matches_pytorch_mppi() {
    let fx = load_fixture("pytorch_mppi.json");
    let mut n = 0;
    for case in fx["smppi_cases"].as_array().unwrap() {
        n += match case["system"].as_str().unwrap() {
            "pendulum" => replay_smppi(&kestrel_mppi::Smppi::new(PendulumDynamics), case),
            "ensemble" => replay_smppi(&kestrel_mppi::Smppi::new(Ensemble), case),
            _ => replay_smppi(&kestrel_mppi::Smppi::new(Linear), case),
        };
    }
    assert_eq!(n, 16);
}

fn replay_kmppi<D: Dynamics>(m: &kestrel_mppi::Kmppi<D>, case: &Value) -> usize {
    let nu = case["nu"].as_u64().unwrap() as usize;
    let pr = &case["params"];
    let p = kestrel_mppi::KmppiParams {
        mppi: params(case, ConventionKind::PytorchMppi),
        num_support_pts: pr["num_support_pts"].as_u64().unwrap() as usize,
        kernel_sigma: pr["kernel_sigma"].as_f64().unwrap(),
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = vec![0.0; p.mppi.u_per_command * nu];
    replay_case("pytorch-mppi", case, |x, z| {
        m.command_with_normals(&p, &mut s, x, z, &mut out, true);
        vec![
            ("action", out.clone()),
            ("theta", s.theta.clone()),
            ("u", s.u.clone()),
            ("costs", s.costs.clone()),
        ]
    })
}

#[test]
fn kmppi_matches_pytorch_mppi() {
    let fx = load_fixture("pytorch_mppi.json");
    let mut n = 0;
    for case in fx["kmppi_cases"].as_array().unwrap() {
        n += match case["system"].as_str().unwrap() {
            "pendulum" => replay_kmppi(&kestrel_mppi::Kmppi::new(PendulumDynamics), case),
            _ => replay_kmppi(&kestrel_mppi::Kmppi::new(Linear), case),
        };
    }
    assert_eq!(n, 8);
}
