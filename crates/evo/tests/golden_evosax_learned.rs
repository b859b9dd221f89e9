//! Golden test against evosax 0.3.2's learned strategies with evosax's own meta-learned
//! checkpoints (`tools/golden/evosax_learned.py`): LES from `les/2023_10_les_v2.pkl` and LGA
//! from `lga/2023_04_lga_v4.pkl` (its parent probabilities, children's mutation strengths
//! and, with evosax's parent, mutation and selection draws, its populations and elites) and
//! CMA-anchored LES from `cma_anchored_les/2026_10_cma_anchored_les.pkl` (an odd and an even
//! population, its base and unmirrored normals, and 140 generations on a plateau, where its
//! stall rule re-expands and re-anchors) and EvoTF from `evotf/2024_03_SNES_small.pkl` (110
//! generations, past its 100-generation context, and two shapes of 24, with each generation's
//! fitness and distribution features), two shapes each, 24 generations with ties; `ask` from the same draws and every `tell`, first
//! with evosax's state injected before each generation, then run freely from the first state. The
//! checkpoints are read from `tools/evosax-ckpt`'s copy of evosax's wheel (Kestrel commits
//! none; absent, the test is skipped, or fails under `KESTREL_REQUIRE_DATA=1`).
//!
//! Tolerance: evosax computes in float32 and Kestrel in f64; `TOL` (relative, with an absolute
//! floor `FLOOR` of the compared array's scale) is the smallest power of ten that passes.

use kestrel_core::Key;
use kestrel_evo::{
    CalesNet, CalesParams, CalesState, CmaAnchoredLes, EvoTf, EvoTfNet, EvoTfParams, EvoTfState,
    Les, LesNet, LesState, Lga, LgaNet, LgaParams, LgaState, Strategy,
};
use kestrel_testkit::{Close, evosax_ckpt, load_fixture};
use serde_json::Value;
use std::sync::Arc;

/// Injected: one update's float32 rounding through two softmaxes and the MLP (2.0e-5; EvoTF's
/// perceivers and transformer 2.5e-6).
const TOL: f64 = 1e-4;
/// Free: the same compounded over 24 generations (4.9e-5; EvoTF's over 110, 8.5e-6).
const FREE_TOL: f64 = 1e-4;
const FLOOR: f64 = 0.1;

fn v(x: &Value) -> Vec<f64> {
    x.as_array().unwrap().iter().map(|y| y.as_f64().unwrap_or(f64::NAN)).collect()
}

fn f32s(x: &Value) -> Vec<f32> {
    v(x).into_iter().map(|y| y as f32).collect()
}

fn inject(k: &mut LesState, b: &Value) {
    (k.mean, k.sigma, k.p_c, k.p_sigma) =
        (v(&b["mean"]), v(&b["std"]), v(&b["p_c"]), v(&b["p_std"]));
    k.best_shaped = b["best"].as_f64().unwrap_or(f64::INFINITY);
    k.progress.generation = b["generation"].as_u64().unwrap();
}

fn inject_lga(k: &mut LgaState, b: &Value) {
    (k.elites, k.fitness) = (f32s(&b["elites"]), f32s(&b["fitness"]));
    (k.sigma, k.age) = (v(&b["std"]), v(&b["age"]));
    k.best_shaped = b["best"].as_f64().unwrap_or(f64::INFINITY);
    // Kestrel's generation 0 is evosax's evaluated init population.
    k.progress.generation = b["generation"].as_u64().unwrap() + 1;
}

/// Whether evosax's z-score of the parents' mutation strengths is float32 noise: when they are
/// all (nearly) equal, `(σ − mean) / (sd + 1e-10)` divides the rounding of the mean by 1e-10
/// (evosax's −0.9967 at generation 7 of the first case, where the exact value, Kestrel's, is
/// 0), and the children's strengths cannot agree. Such a generation (a fifth of the fixture's:
/// the elites often share one strength) compares everything but those strengths (and the rows
/// they scale); run freely, it takes evosax's strengths for its children and goes on.
fn ill_posed(sigma: &[f64], parents: &[usize]) -> bool {
    let s: Vec<f64> = parents.iter().map(|&e| sigma[e]).collect();
    let mean = s.iter().sum::<f64>() / s.len() as f64;
    let sd = (s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / s.len() as f64).sqrt();
    sd <= 1e-6 * mean.abs()
}

fn indices(x: &Value) -> Vec<usize> {
    x.as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as usize).collect()
}

/// LGA's cases; the number of tells replayed.
fn replay_lga(case: &Value, free: bool, c: &mut Close) -> usize {
    let Some(path) = evosax_ckpt(case["ckpt"].as_str().unwrap()) else { return 0 };
    let net = Arc::new(LgaNet::read(&path).unwrap());
    let (lam, n) =
        (case["pop_size"].as_u64().unwrap() as usize, case["num_dims"].as_u64().unwrap() as usize);
    let s = Lga::new(lam, n, net).unwrap();
    let p = LgaParams { sigma: case["sigma"].as_f64().unwrap() };
    let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
    let mut out = vec![0f32; lam * n];
    // Generation 0: evosax's evaluated first population.
    s.ask_from_draws(&mut k, &p, &[], &v(&case["z0"]), &mut out).unwrap();
    s.tell(Key::new(0), &out, &f32s(&case["first_fitness"]), &mut k, &p);
    let (mut tells, mut skipped) = (0, 0);
    for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
        let at = format!("lga {lam}x{n} gen {g}{}", if free { " free" } else { "" });
        if !free {
            inject_lga(&mut k, &st["before"]);
        }
        let probs = s.parent_probabilities(&mut k).to_vec();
        c.close(&format!("{at} parent probabilities"), &probs, &v(&st["p"]));
        let (parents, eps) = (indices(&st["parents"]), v(&st["eps"]));
        let noise = ill_posed(&k.sigma, &parents);
        skipped += noise as usize;
        s.ask_from_draws(&mut k, &p, &parents, &eps, &mut out).unwrap();
        if noise && free {
            // evosax's strengths for these children (see `ill_posed`), and their rows.
            k.child_sigma = v(&st["child_std"]);
            for (ch, &e) in parents.iter().enumerate() {
                for j in 0..n {
                    let x = f64::from(k.elites[e * n + j]) + k.child_sigma[ch] * eps[ch * n + j];
                    out[ch * n + j] = x as f32;
                }
            }
        }
        if !noise {
            c.close(&format!("{at} child std"), &k.child_sigma, &v(&st["child_std"]));
            let got: Vec<f64> = out.iter().map(|&x| f64::from(x)).collect();
            c.close(&format!("{at} population"), &got, &v(&st["population"]));
        }
        let pop = if free { out.clone() } else { f32s(&st["population"]) };
        s.tell_with_choices(&pop, &f32s(&st["fitness"]), &indices(&st["choice"]), &mut k, &p)
            .unwrap();
        let a = &st["after"];
        let elites: Vec<f64> = k.elites.iter().map(|&x| f64::from(x)).collect();
        c.close(&format!("{at} elites"), &elites, &v(&a["elites"]));
        let fit: Vec<f64> = k.fitness.iter().map(|&x| f64::from(x)).collect();
        c.close(&format!("{at} fitness"), &fit, &v(&a["fitness"]));
        if !noise {
            c.close(&format!("{at} std"), &k.sigma, &v(&a["std"]));
        }
        c.close(&format!("{at} age"), &k.age, &v(&a["age"]));
        tells += 1;
    }
    eprintln!("lga {lam}x{n}: {skipped} generations with float32-noise strength features");
    tells
}

fn inject_cales(k: &mut CalesState, b: &Value) {
    (k.mean, k.sigma, k.axis) = (v(&b["mean"]), b["sigma"].as_f64().unwrap(), v(&b["axis"]));
    (k.p_sigma, k.p_c, k.success) = (v(&b["p_sigma"]), v(&b["p_c"]), v(&b["success"]));
    k.epoch_best = b["epoch_best"].as_f64().unwrap_or(f64::INFINITY);
    k.stall = b["stall"].as_f64().unwrap();
    k.best_shaped = b["best"].as_f64().unwrap_or(f64::INFINITY);
    k.best_row = v(&b["best_row"]);
    k.progress.generation = b["generation"].as_u64().unwrap();
}

/// CMA-anchored LES's cases; the number of tells replayed.
fn replay_cales(case: &Value, free: bool, c: &mut Close) -> usize {
    // The plateau runs σ down to 1e-8, below the float32 resolution of the mean: the rows'
    // rounding (float32 sums in evosax, f64 then rounded here) is then the noise the update
    // reads, so that case is compared state-injected only.
    if free && case["steps"].as_array().unwrap().len() > 24 {
        return 0;
    }
    let Some(path) = evosax_ckpt(case["ckpt"].as_str().unwrap()) else { return 0 };
    let net = Arc::new(CalesNet::read(&path).unwrap());
    let (lam, n) =
        (case["pop_size"].as_u64().unwrap() as usize, case["num_dims"].as_u64().unwrap() as usize);
    let s = CmaAnchoredLes::new(lam, n, net).unwrap();
    let p = CalesParams { sigma_init: case["sigma"].as_f64().unwrap() };
    let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
    let mut out = vec![0f32; lam * n];
    let mut tells = 0;
    for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
        let at = format!("cma-anchored-les {lam}x{n} gen {g}{}", if free { " free" } else { "" });
        if !free || g == 0 {
            inject_cales(&mut k, &st["before"]);
        }
        s.ask_from_normals(&mut k, &v(&st["base"]), &v(&st["alt"]), &mut out);
        let got: Vec<f64> = out.iter().map(|&x| f64::from(x)).collect();
        c.close(&format!("{at} population"), &got, &v(&st["population"]));
        let pop = if free { out.clone() } else { f32s(&st["population"]) };
        s.tell(Key::new(0), &pop, &f32s(&st["fitness"]), &mut k, &p);
        let a = &st["after"];
        c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
        c.scalar(&format!("{at} sigma"), k.sigma, a["sigma"].as_f64().unwrap());
        c.close(&format!("{at} axis"), &k.axis, &v(&a["axis"]));
        c.close(&format!("{at} p_sigma"), &k.p_sigma, &v(&a["p_sigma"]));
        c.close(&format!("{at} p_c"), &k.p_c, &v(&a["p_c"]));
        c.close(&format!("{at} success"), &k.success, &v(&a["success"]));
        c.scalar(&format!("{at} stall"), k.stall, a["stall"].as_f64().unwrap());
        c.scalar(&format!("{at} best"), k.best_shaped, a["best"].as_f64().unwrap());
        tells += 1;
    }
    tells
}

fn inject_evotf(k: &mut EvoTfState, b: &Value) {
    (k.mean, k.sigma, k.best_row) = (v(&b["mean"]), v(&b["std"]), v(&b["best_row"]));
    k.best_fitness = b["best"].as_f64().unwrap_or(f64::INFINITY);
    (k.old_mean, k.old_sigma) = (v(&b["old_mean"]), v(&b["old_std"]));
    (k.path_mean, k.path_sigma) = (v(&b["path_mean"]), v(&b["path_std"]));
    (k.mom_mean, k.mom_sigma) = (v(&b["mom_mean"]), v(&b["mom_std"]));
    k.progress.generation = b["generation"].as_u64().unwrap();
}

/// EvoTF's cases; the number of tells replayed. Injected, the context is Kestrel's own tokens
/// of evosax's populations (built from the injected states): evosax's state holds the
/// window's raw features, Kestrel's their encodings.
fn replay_evotf(case: &Value, free: bool, c: &mut Close) -> usize {
    let Some(path) = evosax_ckpt(case["ckpt"].as_str().unwrap()) else { return 0 };
    let net = Arc::new(EvoTfNet::read(&path).unwrap());
    let (lam, n) =
        (case["pop_size"].as_u64().unwrap() as usize, case["num_dims"].as_u64().unwrap() as usize);
    let s = EvoTf::new(lam, n, 100, net).unwrap();
    let p = EvoTfParams { sigma_init: case["sigma"].as_f64().unwrap(), ..s.default_params() };
    let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
    let mut out = vec![0f32; lam * n];
    let mut tells = 0;
    for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
        let at = format!("evotf {lam}x{n} gen {g}{}", if free { " free" } else { "" });
        if !free || g == 0 {
            inject_evotf(&mut k, &st["before"]);
        }
        s.ask_from_normals(&mut k, &v(&st["z"]), &mut out);
        let got: Vec<f64> = out.iter().map(|&x| f64::from(x)).collect();
        c.close(&format!("{at} population"), &got, &v(&st["population"]));
        let pop = if free { out.clone() } else { f32s(&st["population"]) };
        s.tell(Key::new(0), &pop, &f32s(&st["fitness"]), &mut k, &p);
        let (ffeat, dfeat) = s.features(&k);
        c.close(&format!("{at} fitness features"), ffeat, &v(&st["ffeat"]));
        c.close(&format!("{at} distribution features"), dfeat, &v(&st["dfeat"]));
        let a = &st["after"];
        c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
        c.close(&format!("{at} std"), &k.sigma, &v(&a["std"]));
        c.close(&format!("{at} best row"), &k.best_row, &v(&a["best_row"]));
        c.close(&format!("{at} momentum"), &k.mom_mean, &v(&a["mom_mean"]));
        c.scalar(&format!("{at} best"), k.best_fitness, a["best"].as_f64().unwrap());
        tells += 1;
    }
    tells
}

fn replay(free: bool) {
    let fixture = load_fixture("evosax_learned.json");
    let mut c = Close::scaled(if free { FREE_TOL } else { TOL }, FLOOR);
    let mut tells = 0;
    // EvoTF's own largest error, reported beside the others'.
    let mut evotf = Close::scaled(if free { FREE_TOL } else { TOL }, FLOOR);
    for case in fixture["cases"].as_array().unwrap() {
        if case["strategy"] == "lga" {
            tells += replay_lga(case, free, &mut c);
            continue;
        }
        if case["strategy"] == "cales" {
            tells += replay_cales(case, free, &mut c);
            continue;
        }
        if case["strategy"] == "evotf" {
            tells += replay_evotf(case, free, &mut evotf);
            continue;
        }
        let Some(path) = evosax_ckpt(case["ckpt"].as_str().unwrap()) else { return };
        let net = Arc::new(LesNet::read(&path).unwrap());
        let (lam, n) = (
            case["pop_size"].as_u64().unwrap() as usize,
            case["num_dims"].as_u64().unwrap() as usize,
        );
        let s = Les::new(lam, n, net).unwrap();
        let p = kestrel_evo::LesParams { sigma_init: case["sigma"].as_f64().unwrap() };
        let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
        let mut out = vec![0f32; lam * n];
        for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("les {lam}x{n} gen {g}{}", if free { " free" } else { "" });
            if !free || g == 0 {
                inject(&mut k, &st["before"]);
            }
            s.ask_from_normals(&mut k, &v(&st["z"]), &mut out);
            let got: Vec<f64> = out.iter().map(|&x| f64::from(x)).collect();
            c.close(&format!("{at} population"), &got, &v(&st["population"]));
            let fit = f32s(&st["fitness"]);
            // The fixture's rows when injected (evosax's float32 population); Kestrel's own
            // when free.
            let pop = if free { out.clone() } else { f32s(&st["population"]) };
            s.tell(Key::new(0), &pop, &fit, &mut k, &p);
            let a = &st["after"];
            c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
            c.close(&format!("{at} std"), &k.sigma, &v(&a["std"]));
            c.close(&format!("{at} p_c"), &k.p_c, &v(&a["p_c"]));
            c.close(&format!("{at} p_std"), &k.p_sigma, &v(&a["p_std"]));
            c.scalar(&format!("{at} best"), k.best_shaped, a["best"].as_f64().unwrap());
            tells += 1;
        }
    }
    eprintln!(
        "{tells} tells match evosax 0.3.2; largest relative error {:.2e} at {}; EvoTF's {:.2e} at {}",
        c.worst.0, c.worst.1, evotf.worst.0, evotf.worst.1
    );
    // 24 generations a case, and CMA-anchored LES's 140 on a plateau (its stall rule fires;
    // injected only).
    // EvoTF: 110 generations past its context and two shapes of 24.
    assert_eq!(tells, 6 * 24 + 110 + 2 * 24 + if free { 0 } else { 140 });
}

#[test]
fn learned_strategies_match_evosax_state_injected() {
    replay(false);
}

#[test]
fn learned_strategies_follow_evosax_freely_for_24_generations() {
    replay(true);
}
