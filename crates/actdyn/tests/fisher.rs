//! Golden test of the RBF Fisher information against `rbf_fisher.json` (the reference at
//! `ceeba42`, faithful profile), plus the `fixed` sensitivities against finite differences of
//! the rollout and a 1-vs-2-thread check of the batched costs.
//!
//! Tolerance: 1e-9 relative per value (the fixture README's bound for an f64 port), with an
//! absolute floor of 1e-9 × the largest magnitude of the compared array for values that are
//! sums with cancellation (noted where used).

use kestrel_actdyn::fisher::{
    AccumulatedFisher, ActionCost, EnsembleDisagreementCost, FisherBugs, FisherCost, FisherMetric,
    GoalCost, Optimality, WeightedCost,
};
use kestrel_actdyn::rbf::{LogLinearDecoder, RbfDynamics, RbfGrid};
use kestrel_core::Key;
use kestrel_mppi::TrajectoryCost;
use kestrel_testkit::{actdyn_fixture, central_differences, flat};
use serde_json::Value;

mod common;
use common::assert_close;

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Model and decoder from a fixture's `model` block, checking its centres on the way: the
/// product grid of one axis, which is linspace(−2, 2, 25) up to a few ulps (torch's rounding).
fn model_of(m: &Value) -> (RbfDynamics, LogLinearDecoder) {
    let (model, dec) = common::model_of(m);
    let centres = flat(&m["centers"]);
    let default = RbfGrid::new(25, 2.0, model.grid.alpha(), model.grid.gamma()).unwrap();
    for c in 0..model.num_centres() {
        assert_eq!(model.grid.centre(c), [centres[2 * c], centres[2 * c + 1]], "centre {c}");
        for d in 0..2 {
            let (a, b) = (model.grid.centre(c)[d], default.centre(c)[d]);
            assert!((a - b).abs() <= 4.0 * f64::EPSILON, "centre {c}: {a} vs {b}");
        }
    }
    (model, dec)
}

fn z2(v: &[f64]) -> [f64; 2] {
    [v[0], v[1]]
}

#[test]
fn golden_rbf_fisher_faithful() {
    let Some(f) = actdyn_fixture("rbf_fisher.json") else { return };
    let (model, dec) = model_of(&f["model"]);
    let metric = FisherMetric::new(&model, &dec, FisherBugs::FAITHFUL);
    let c = model.num_centres();
    let p = 2 * c;
    let (n, h) = (16, 10);
    let z0 = z2(&flat(&f["z0"]));
    let x = flat(&f["X"]);
    let out = &f["outputs"];

    // Accumulated information after 30 updates.
    let mut acc = AccumulatedFisher::default();
    let beliefs = flat(&f["acc_beliefs"]);
    for b in beliefs.chunks_exact(2) {
        acc.update(&metric, z2(b));
    }
    assert_eq!(acc.updates, 30);
    assert_close("I_acc", acc.get().unwrap(), &flat(&f["I_acc"]), 1e-9, 0.0);

    // Rollout.
    let mut phi = vec![0.0; c];
    let mut z = vec![0.0; n * (h + 1) * 2];
    for (row, zr) in x.chunks_exact(2 * h).zip(z.chunks_exact_mut(2 * (h + 1))) {
        model.rollout(z0, row, &mut phi, zr);
    }
    let want_z = flat(&out["z"]);
    assert_close("z", &z, &want_z, 1e-9, 1e-15);

    // Φ for the listed sequences.
    let phi_idx: Vec<usize> = out["Phi_seq_idx"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as usize)
        .collect();
    let mut got_phi = Vec::new();
    for &s in &phi_idx {
        for t in 0..h {
            let zt = [z[(s * (h + 1) + t) * 2], z[(s * (h + 1) + t) * 2 + 1]];
            model.grid.features(zt, &mut phi);
            got_phi.extend_from_slice(&phi);
        }
    }
    assert_close("Phi", &got_phi, &flat(&out["Phi"]), 1e-9, 0.0);

    // Ĵ and G at every point z_0..z_9.
    let mut got_j = Vec::new();
    let mut got_g = Vec::new();
    for s in 0..n {
        for t in 0..h {
            let zt = [z[(s * (h + 1) + t) * 2], z[(s * (h + 1) + t) * 2 + 1]];
            model.grid.features(zt, &mut phi);
            let (_, j) = metric.step(zt, &phi);
            got_j.extend([j[0][0], j[0][1], j[1][0], j[1][1]]);
            let g = dec.projector_diag(zt);
            got_g.extend([g[0], 0.0, 0.0, g[1]]);
        }
    }
    // Ĵ = 1 + (a sum with cancellation): relative to the all-ones part.
    assert_close("Jhat", &got_j, &flat(&out["Jhat"]), 1e-9, 1e-12);
    // G = I₂ exactly here (rank-2 decoder); the reference's pinv leaves ~1e-15 off it.
    let want_g = flat(&out["G"]);
    let diag = |v: &[f64]| v.chunks_exact(4).flat_map(|g| [g[0], g[3]]).collect::<Vec<_>>();
    let off = |v: &[f64]| v.chunks_exact(4).flat_map(|g| [g[1], g[2]]).collect::<Vec<_>>();
    assert_close("G diagonal", &diag(&got_g), &diag(&want_g), 1e-9, 0.0);
    assert_close("G off-diagonal", &off(&got_g), &off(&want_g), 0.0, 1e-13);

    // S (sequences 0, 1), I_plan and the costs.
    let s_idx: Vec<usize> =
        out["S_seq_idx"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
    let want_s = flat(&out["S"]);
    let want_i = flat(&out["I_plan"]);
    let mut scr = metric.scratch();
    let mut got_i = Vec::new();
    let (mut a, mut d, mut a0, mut d0) = (vec![], vec![], vec![], vec![]);
    for s in 0..n {
        let row = &x[s * 2 * h..(s + 1) * 2 * h];
        let mut got_s = Vec::new();
        let mut points = Vec::new();
        metric.plan_information(z0, row, &mut scr, |k, zk, sk, _| {
            points.push(k);
            let want = [z[(s * (h + 1) + k) * 2], z[(s * (h + 1) + k) * 2 + 1]];
            assert_close(&format!("z_{k}"), &zk, &want, 1e-12, 1e-15);
            got_s.extend_from_slice(sk);
        });
        assert_eq!(points, (0..h).collect::<Vec<_>>(), "faithful points are z_0..z_9");
        if let Some(q) = s_idx.iter().position(|&v| v == s) {
            let want = &want_s[q * h * 2 * p..(q + 1) * h * 2 * p];
            // S entries are sums of signed terms: floor at 1e-9 × the largest entry.
            assert_close(&format!("S[{s}]"), &got_s, want, 1e-9, 1e-9 * max_abs(want) * 1e-3);
        }
        got_i.extend_from_slice(&scr.info);
        a.push(metric.objective(Optimality::A, &scr.info, acc.get()));
        d.push(metric.objective(Optimality::D, &scr.info, acc.get()));
        a0.push(metric.objective(Optimality::A, &scr.info, None));
        d0.push(metric.objective(Optimality::D, &scr.info, None));
    }
    assert_close("I_plan", &got_i, &want_i, 1e-9, 0.0);
    assert_close("A_cost", &a, &flat(&out["A_cost"]), 1e-9, 0.0);
    assert_close("D_cost", &d, &flat(&out["D_cost"]), 1e-9, 0.0);
    assert_close("A_cost_no_acc", &a0, &flat(&out["A_cost_no_acc"]), 1e-9, 0.0);
    assert_close("D_cost_no_acc", &d0, &flat(&out["D_cost_no_acc"]), 1e-9, 0.0);

    // The batched cost gives the same numbers.
    let mut batched = vec![0.0; n];
    FisherCost::new(metric.clone(), Optimality::A, z0, acc.get()).unwrap().cost(
        &x,
        h,
        2,
        &mut batched,
    );
    assert_eq!(batched, a);
}

/// A random model near the fixture's scale: W ~ N(0, 1), a rank-2 decoder.
fn random_model(seed: u64, residual: bool) -> (RbfDynamics, LogLinearDecoder) {
    let mut r = Key::new(seed).rng();
    let grid = RbfGrid::default();
    let w: Vec<f64> = (0..2 * grid.num_centres()).map(|_| r.standard_normal()).collect();
    let cdec: Vec<f64> = (0..100).map(|_| 0.7 * (r.uniform_f64() - 0.5)).collect();
    let bdec: Vec<f64> = (0..50).map(|_| 0.7 * (r.uniform_f64() - 0.5)).collect();
    (RbfDynamics::new(grid, w, 0.1, residual).unwrap(), LogLinearDecoder::new(cdec, bdec).unwrap())
}

#[test]
fn fixed_sensitivities_equal_finite_differences_of_the_rollout() {
    for residual in [false, true] {
        let (model, dec) = random_model(11, residual);
        let metric = FisherMetric::new(&model, &dec, FisherBugs::FIXED);
        let c = model.num_centres();
        let p = 2 * c;
        let h = 6;
        let mut r = Key::new(5).rng();
        let x: Vec<f64> = (0..2 * h).map(|_| 0.2 * (r.uniform_f64() - 0.5)).collect();
        let z0 = [0.3, -0.4];
        let mut scr = metric.scratch();
        let mut s_all = Vec::new();
        let mut points = Vec::new();
        metric.plan_information(z0, &x, &mut scr, |k, _, s, _| {
            points.push(k);
            s_all.extend_from_slice(s);
        });
        assert_eq!(points, (1..=h).collect::<Vec<_>>());
        // Parameters near the trajectory (large sensitivities) and a few far away.
        let chosen: Vec<usize> = [0usize, 7, 300, 312, 313, 337, 338, 362, 600, 624]
            .iter()
            .flat_map(|&c0| [c0, c + c0])
            .collect();
        let v: Vec<f64> = chosen.iter().map(|&q| model.weights[2 * (q % c) + q / c]).collect();
        let mut phi = vec![0.0; c];
        let mut zs = vec![0.0; 2 * (h + 1)];
        for t in 1..=h {
            for d in 0..2 {
                let fd = central_differences(&v, 1e-5, |vals| {
                    let mut m = model.clone();
                    for (&q, &val) in chosen.iter().zip(vals) {
                        m.weights[2 * (q % c) + q / c] = val;
                    }
                    m.rollout(z0, &x, &mut phi, &mut zs);
                    zs[2 * t + d]
                });
                let s_row = &s_all[(t - 1) * 2 * p + d * p..(t - 1) * 2 * p + (d + 1) * p];
                for (&q, g) in chosen.iter().zip(&fd) {
                    let s = s_row[q];
                    assert!(
                        (s - g).abs() <= 1e-7 * (1.0 + s.abs()),
                        "residual {residual}: dz_{t}[{d}]/dW param {q}: S {s:e} vs fd {g:e}"
                    );
                }
            }
        }
        // The information is Σ_t Σ_d S² G_dd with G = I (rank-2 decoder).
        let mut want = vec![0.0; p];
        for t in 0..h {
            for d in 0..2 {
                for q in 0..p {
                    want[q] += s_all[t * 2 * p + d * p + q].powi(2);
                }
            }
        }
        assert_close("I_plan (fixed)", &scr.info, &want, 1e-12, 1e-300);
    }
}

#[test]
fn costs_are_identical_on_one_and_two_threads() {
    let (model, dec) = random_model(3, false);
    let members: Vec<RbfDynamics> = (0..3).map(|s| random_model(20 + s, false).0).collect();
    let n = 217;
    let h = 10;
    let mut r = Key::new(9).rng();
    let x: Vec<f64> = (0..n * h * 2).map(|_| 0.2 * (r.uniform_f64() - 0.5)).collect();
    let metric = FisherMetric::new(&model, &dec, FisherBugs::FIXED);
    let mut acc = AccumulatedFisher::default();
    acc.update(&metric, [0.1, 0.2]);
    acc.update(&metric, [0.15, 0.25]);
    let a = FisherCost::new(metric.clone(), Optimality::A, [0.5, -0.2], acc.get()).unwrap();
    let dcost = FisherCost::new(
        FisherMetric::new(&model, &dec, FisherBugs::FAITHFUL),
        Optimality::D,
        [0.5, -0.2],
        None,
    )
    .unwrap();
    let goal = GoalCost { model: &model, belief: [0.5, -0.2], goal: [1.0, 0.0], reference: true };
    let ens = EnsembleDisagreementCost::new(&members, [0.5, -0.2]).unwrap();
    let weighted = WeightedCost::new(vec![
        (1.0, &a as &dyn TrajectoryCost),
        (0.5, &ActionCost),
        (2.0, &goal),
        (1.0, &ens),
    ])
    .unwrap();
    let costs: [&dyn TrajectoryCost; 5] = [&a, &dcost, &goal, &ens, &weighted];
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            costs
                .iter()
                .map(|c| {
                    let mut out = vec![0.0; n];
                    c.cost(&x, h, 2, &mut out);
                    out
                })
                .collect::<Vec<_>>()
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    for (k, v) in one.iter().enumerate() {
        assert!(v.iter().all(|c| c.is_finite()), "cost {k} not finite");
    }
    assert!(one[3].iter().all(|&c| c < 0.0), "disagreement is a negative variance");
    // The weighted sum is the sum of its parts.
    let mut act = vec![0.0; n];
    ActionCost.cost(&x, h, 2, &mut act);
    for i in 0..n {
        let want = one[0][i] + 0.5 * act[i] + 2.0 * one[2][i] + one[3][i];
        assert!((one[4][i] - want).abs() <= 1e-12 * want.abs(), "{i}");
    }
    // Shape errors name the field.
    let e = a.validate(10, 3).unwrap_err();
    assert!(e.to_string().contains("action_dim = 3"), "{e}");
    assert!(FisherCost::new(metric, Optimality::A, [0.0, 0.0], Some(&[1.0; 3])).is_err());
}
