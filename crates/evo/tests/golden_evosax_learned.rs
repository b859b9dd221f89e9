//! Golden test against evosax 0.3.2's learned strategies with evosax's own meta-learned
//! checkpoints (`tools/golden/evosax_learned.py`): LES from `les/2023_10_les_v2.pkl`, two
//! shapes, 24 generations with ties; `ask` from the same normals and every `tell`, first with
//! evosax's state injected before each generation, then run freely from the first state. The
//! checkpoints are read from `tools/evosax-ckpt`'s copy of evosax's wheel (Kestrel commits
//! none; absent, the test is skipped, or fails under `KESTREL_REQUIRE_DATA=1`).
//!
//! Tolerance: evosax computes in float32 and Kestrel in f64; `TOL` (relative, with an absolute
//! floor `FLOOR` of the compared array's scale) is the smallest power of ten that passes.

use kestrel_core::Key;
use kestrel_evo::{Les, LesNet, LesState, Strategy};
use kestrel_testkit::{Close, evosax_ckpt, load_fixture};
use serde_json::Value;
use std::sync::Arc;

/// Injected: one update's float32 rounding through two softmaxes and the MLP (2.0e-5).
const TOL: f64 = 1e-4;
/// Free: the same compounded over 24 generations (2.2e-5).
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

fn replay(free: bool) {
    let fixture = load_fixture("evosax_learned.json");
    let mut c = Close::scaled(if free { FREE_TOL } else { TOL }, FLOOR);
    let mut tells = 0;
    for case in fixture["cases"].as_array().unwrap() {
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
        "{tells} tells match evosax 0.3.2; largest relative error {:.2e} at {}",
        c.worst.0, c.worst.1
    );
    assert_eq!(tells, 2 * 24);
}

#[test]
fn learned_strategies_match_evosax_state_injected() {
    replay(false);
}

#[test]
fn learned_strategies_follow_evosax_freely_for_24_generations() {
    replay(true);
}
