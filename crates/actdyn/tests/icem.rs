//! Golden test of iCEM (kestrel-mppi) with the faithful A-optimality cost (kestrel-actdyn)
//! against `icem.json`: 5 consecutive planner calls of the reference at `ceeba42`, replaying
//! its recorded pink noise `P`. Every iteration's X, costs (1e-9 relative, the fixture
//! README's bound for an f64 port), elite indices (exact), elites, M, Σ, the best cost and
//! action, and each call's M_out, Σ_out and action are compared; `pink_L` is checked against
//! [`PinkNoise`]. Also: planner calls are identical on 1 and 2 threads.

use kestrel_actdyn::fisher::{AccumulatedFisher, FisherBugs, FisherCost, FisherMetric, Optimality};
use kestrel_actdyn::rbf::{LogLinearDecoder, RbfDynamics, RbfGrid};
use kestrel_core::Key;
use kestrel_mppi::{Icem, IcemParams, KeyedPink, NoiseSource, PinkNoise};
use kestrel_testkit::{actdyn_fixture, flat};
use serde_json::Value;

mod common;
use common::{assert_close, model_of};

/// Replays the `P` arrays recorded for one call: `pink[draw].P` of iteration `i`.
struct Replay<'a> {
    iterations: &'a [Value],
}

impl NoiseSource for Replay<'_> {
    fn fill(&mut self, _: &PinkNoise, _: usize, iteration: usize, draw: usize, out: &mut [f64]) {
        let p = flat(&self.iterations[iteration]["pink"][draw]["P"]);
        assert_eq!(p.len(), out.len(), "iteration {iteration} draw {draw}: noise rows");
        out.copy_from_slice(&p);
    }
}

fn params_of(cfg: &Value) -> IcemParams {
    let lo = flat(&cfg["action_low"]);
    let hi = flat(&cfg["action_high"]);
    IcemParams {
        horizon: cfg["H"].as_u64().unwrap() as usize,
        action_dim: 2,
        num_samples: cfg["N"].as_u64().unwrap() as usize,
        iterations: cfg["iterations"].as_u64().unwrap() as usize,
        num_elites: cfg["num_elite"].as_u64().unwrap() as usize,
        alpha: cfg["alpha"].as_f64().unwrap(),
        init_std: cfg["init_std"].as_f64().unwrap(),
        noise_beta: cfg["noise_beta"].as_f64().unwrap(),
        factor_decrease: cfg["factor_decrease_num"].as_f64().unwrap(),
        frac_elites_reused: cfg["frac_elites_reused"].as_f64().unwrap(),
        action_low: lo,
        action_high: hi,
    }
}

#[test]
fn golden_icem_five_calls() {
    let Some(f) = actdyn_fixture("icem.json") else { return };
    let (model, dec) = model_of(&f["model"]);
    let metric = FisherMetric::new(&model, &dec, FisherBugs::FAITHFUL);
    let cfg = &f["config"];
    let mut icem = Icem::new(params_of(cfg)).unwrap();
    assert_eq!(icem.sigma_init(), &flat(&cfg["Sigma_init"])[..], "Σ_init");
    let mut state = icem.init_state();
    assert_eq!(state.mean, flat(&cfg["M_init"]), "M_init");

    // pink_L for H = 10.
    let l = flat(&f["pink_L"]);
    assert_close("pink_L", icem.pink().matrix(), &l, 1e-13, 1e-15);

    let mut acc = AccumulatedFisher::default();
    for b in flat(&f["acc_beliefs"]).chunks_exact(2) {
        acc.update(&metric, [b[0], b[1]]);
    }
    assert_close("I_acc_initial", acc.get().unwrap(), &flat(&f["I_acc_initial"]), 1e-9, 0.0);

    let (mut pink_exact, mut pink_total) = (0usize, 0usize);
    for (j, call) in f["calls"].as_array().unwrap().iter().enumerate() {
        let belief = flat(&call["belief"]);
        let belief = [belief[0], belief[1]];
        assert_close(
            &format!("call {j} I_acc"),
            acc.get().unwrap(),
            &flat(&call["I_acc"]),
            1e-9,
            0.0,
        );
        let si = &call["state_in"];
        if j == 0 {
            assert!(si["M"].is_null() && si["elites"].is_null());
        } else {
            assert_close(&format!("call {j} M_in"), &state.mean, &flat(&si["M"]), 1e-9, 1e-15);
            assert_close(&format!("call {j} Σ_in"), &state.std, &flat(&si["Sigma"]), 1e-9, 1e-15);
            assert_close(
                &format!("call {j} E_in"),
                &state.elites,
                &flat(&si["elites"]),
                1e-9,
                1e-15,
            );
            let ec = flat(&si["elite_costs"]);
            assert_close(&format!("call {j} cE_in"), &state.elite_costs, &ec, 1e-9, 0.0);
        }
        let iters = call["iterations"].as_array().unwrap();
        // The recorded Gaussians map to the recorded float32 P through L.
        for it in iters {
            for draw in it["pink"].as_array().unwrap() {
                let (gr, gi, p) = (flat(&draw["g_real"]), flat(&draw["g_imag"]), flat(&draw["P"]));
                let rows = p.len() / 20;
                let mut y = vec![0.0; 10];
                for r in 0..rows {
                    for a in 0..2 {
                        let mut g = gr[(r * 2 + a) * 6..(r * 2 + a + 1) * 6].to_vec();
                        g.extend_from_slice(&gi[(r * 2 + a) * 6..(r * 2 + a + 1) * 6]);
                        icem.pink().apply(&g, &mut y, 1);
                        for t in 0..10 {
                            let want = p[(r * 10 + t) * 2 + a];
                            let got = y[t] as f32 as f64;
                            pink_total += 1;
                            pink_exact += usize::from(got == want);
                        }
                    }
                }
            }
        }
        let cost = FisherCost::new(metric.clone(), Optimality::A, belief, acc.get()).unwrap();
        let mut noise = Replay { iterations: iters };
        let mut action = [0.0; 2];
        let mut seen = 0;
        icem.plan_traced(&mut state, &mut noise, &cost, &mut action, |it| {
            let w = &iters[it.iteration];
            let tag = format!("call {j} iteration {}", it.iteration);
            assert_eq!(it.num_samples as u64, w["n_samples"].as_u64().unwrap(), "{tag}: n");
            assert_eq!(it.kept_elites as u64, w["n_kept_prev_elites"].as_u64().unwrap(), "{tag}");
            assert_close(&format!("{tag} X"), it.x, &flat(&w["X"]), 1e-9, 1e-15);
            assert_close(&format!("{tag} costs"), it.costs, &flat(&w["costs"]), 1e-9, 0.0);
            let idx: Vec<u64> =
                w["elite_idx"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
            let got: Vec<u64> = it.elite_idx.iter().map(|&v| v as u64).collect();
            assert_eq!(got, idx, "{tag}: elite indices");
            assert_close(&format!("{tag} elites"), it.elites, &flat(&w["elites"]), 1e-9, 1e-15);
            assert_close(
                &format!("{tag} elite costs"),
                it.elite_costs,
                &flat(&w["elite_costs"]),
                1e-9,
                0.0,
            );
            assert_close(&format!("{tag} M"), it.mean, &flat(&w["M"]), 1e-9, 1e-15);
            assert_close(&format!("{tag} Σ"), it.std, &flat(&w["Sigma"]), 1e-9, 1e-15);
            let best = w["best_cost_so_far"].as_f64().unwrap();
            assert_close(&format!("{tag} best"), &[it.best_cost], &[best], 1e-9, 0.0);
            let ba = flat(&w["best_first_action_so_far"]);
            assert_close(&format!("{tag} best action"), it.best_action, &ba, 1e-9, 1e-15);
            seen += 1;
        })
        .unwrap();
        assert_eq!(seen, iters.len());
        assert_close(&format!("call {j} M_out"), &state.mean, &flat(&call["M_out"]), 1e-9, 1e-15);
        assert_close(&format!("call {j} Σ_out"), &state.std, &flat(&call["Sigma_out"]), 0.0, 0.0);
        assert_close(&format!("call {j} action"), &action, &flat(&call["action"]), 1e-9, 1e-15);
        // The information of the belief that planned this step joins I_acc.
        acc.update(&metric, belief);
    }
    // float32(L·g) reproduces the recorded P bit for bit.
    assert_eq!(pink_exact, pink_total, "float32(L·g) == P");
    eprintln!("float32(L·g) == P exactly for all {pink_total} values");
}

#[test]
fn planner_calls_are_identical_on_one_and_two_threads() {
    let mut r = Key::new(1).rng();
    let grid = RbfGrid::default();
    let w: Vec<f64> = (0..2 * grid.num_centres()).map(|_| r.standard_normal()).collect();
    let model = RbfDynamics::new(grid, w, 0.1, false).unwrap();
    let cdec: Vec<f64> = (0..100).map(|_| r.uniform_f64() - 0.5).collect();
    let dec = LogLinearDecoder::new(cdec, vec![0.0; 50]).unwrap();
    let metric = FisherMetric::new(&model, &dec, FisherBugs::FIXED);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut icem = Icem::new(IcemParams::new(2, -0.1, 0.1)).unwrap();
            let mut state = icem.init_state();
            let mut acc = AccumulatedFisher::default();
            let mut out = Vec::new();
            let mut b = [0.6, 0.2];
            for step in 0..4u64 {
                let cost = FisherCost::new(metric.clone(), Optimality::A, b, acc.get()).unwrap();
                let mut noise = KeyedPink { key: Key::new(42).fold_in(step), round_f32: true };
                let mut a = [0.0; 2];
                let c = icem.plan(&mut state, &mut noise, &cost, &mut a).unwrap();
                out.push((a, c));
                acc.update(&metric, b);
                b = [b[0] + a[0], b[1] + a[1]];
            }
            (out, state)
        })
    };
    assert_eq!(run(1), run(2));
}
