//! Golden test against evosax 0.3.2 (`tools/golden/evosax_rest.py`): Persistent ES, Noise-Reuse
//! ES, Guided ES and ASEBO, two shapes each, 24 generations with ties: default parameters but
//! the step size, learning rate and (PES, NRES) inner-problem lengths the script sets, `ask`
//! from the same draws, and every `tell`, first with evosax's state injected before each
//! generation, then run freely from the first state (only the draws, the surrogate gradients
//! and the fitness from the fixture).
//!
//! Tolerance: evosax computes in float32 and Kestrel in f64; `TOL` (relative, with an absolute
//! floor, `FLOOR`, for values near 0) is the smallest power of ten that passes an injected
//! update, `FREE_TOL` the smallest that passes the free runs.

use kestrel_core::Key;
use kestrel_evo::{GradientEs, GradientEsParams, GradientEsState, GradientRule, Strategy};
use kestrel_testkit::Close as Check;
use kestrel_testkit::load_fixture;
use serde_json::Value;

const TOL: f64 = 1e-5;
/// Free runs: float32's rounding compounds over 24 generations; the largest, 2.1e-4, is
/// ASEBO's with a two-dimensional subspace (its sampling covariance follows an SVD of float32
/// gradient estimates); the others stay below 1e-4.
const FREE_TOL: f64 = 1e-3;
/// The absolute floor, a fraction of the larger of 1 and the compared array's largest value:
/// evosax rounds each value to float32, so a value near 0 that is a difference of larger
/// ones (PES's perturbation sums, ASEBO's gradient estimates) carries float32's error at their
/// scale, not at its own.
const FLOOR: f64 = 0.1;

// Every value in this fixture is finite: testkit's `floats` reads its arrays.
use kestrel_testkit::floats as v;

fn f32s(x: &Value) -> Vec<f32> {
    v(x).into_iter().map(|y| y as f32).collect()
}

fn rule(name: &str) -> GradientRule {
    match name {
        "persistent_es" => GradientRule::Persistent,
        "noise_reuse_es" => GradientRule::NoiseReuse,
        "guided_es" => GradientRule::Guided,
        _ => GradientRule::Asebo,
    }
}

fn setup(case: &Value) -> (GradientEs, GradientEsParams) {
    let lam = case["pop_size"].as_u64().unwrap() as usize;
    let n = case["num_dims"].as_u64().unwrap() as usize;
    let k = case.get("subspace_dims").and_then(Value::as_u64).unwrap_or(1) as usize;
    let s = GradientEs::new(lam, n, rule(case["strategy"].as_str().unwrap()), k).unwrap();
    let mut p = s.default_params();
    p.sigma = case["sigma"].as_f64().unwrap();
    p.adam.lr = case["lr"].as_f64().unwrap();
    if let Some(t) = case.get("inner_steps") {
        p.inner_steps = t.as_u64().unwrap();
        p.unroll_steps = case["unroll_steps"].as_u64().unwrap();
    }
    if let Some(a) = case.get("alpha") {
        assert_eq!((p.alpha, p.beta), (a.as_f64().unwrap(), case["beta"].as_f64().unwrap()));
    }
    (s, p)
}

/// Overwrites Kestrel's state with evosax's snapshot.
fn inject(name: &str, k: &mut GradientEsState, b: &Value) {
    k.mean = v(&b["mean"]);
    k.generation = b["generation"].as_u64().unwrap();
    if b.get("adam_m").is_some() {
        (k.m, k.v, k.adam_steps) = (v(&b["adam_m"]), v(&b["adam_v"]), b["count"].as_u64().unwrap());
    }
    if let Some(p) = b.get("pert") {
        k.pert = v(p);
        k.inner_step = b["inner_step"].as_u64().unwrap();
    }
    if let Some(a) = b.get("archive") {
        k.archive = v(a);
    }
    if name == "asebo" {
        k.alpha = b["alpha"].as_f64().unwrap();
    }
}

/// Compares Kestrel's state after a tell with evosax's.
fn compare(c: &mut Check, at: &str, k: &GradientEsState, a: &Value) {
    c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
    if a.get("adam_m").is_some() {
        c.close(&format!("{at} adam m"), &k.m, &v(&a["adam_m"]));
        c.close(&format!("{at} adam v"), &k.v, &v(&a["adam_v"]));
        assert_eq!(k.adam_steps, a["count"].as_u64().unwrap(), "{at} count");
    }
    if let Some(p) = a.get("pert") {
        c.close(&format!("{at} perturbations"), &k.pert, &v(p));
        assert_eq!(k.inner_step, a["inner_step"].as_u64().unwrap(), "{at} inner step");
    }
    if let Some(g) = a.get("archive") {
        c.close(&format!("{at} archive"), &k.archive, &v(g));
    }
    if let Some(al) = a.get("alpha") {
        c.scalar(&format!("{at} alpha"), k.alpha, al.as_f64().unwrap());
    }
}

fn replay(free: bool) {
    let fixture = load_fixture("evosax_rest.json");
    let mut c = Check::scaled(if free { FREE_TOL } else { TOL }, FLOOR);
    let mut tells = 0;
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["strategy"].as_str().unwrap();
        let (s, p) = setup(case);
        let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
        let mut out = vec![0f32; s.pop_size() * s.num_dims()];
        for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!(
                "{name} {}x{} gen {g}{}",
                s.pop_size(),
                s.num_dims(),
                if free { " free" } else { "" }
            );
            if !free || g == 0 {
                inject(name, &mut k, &st["before"]);
            }
            if let Some(grad) = st["gradient"].as_array() {
                let grad: Vec<f32> = grad.iter().map(|x| x.as_f64().unwrap() as f32).collect();
                s.set_gradient(&mut k, &grad).unwrap();
            }
            s.ask_from_normals(&mut k, &p, &v(&st["z"]), &mut out);
            c.close(
                &format!("{at} population"),
                &out.iter().map(|&x| f64::from(x)).collect::<Vec<_>>(),
                &v(&st["population"]),
            );
            // The fixture's rows (evosax's float32 population), as a user would tell them.
            let pop = f32s(&st["population"]);
            s.tell(Key::new(0), &pop, &f32s(&st["fitness"]), &mut k, &p);
            compare(&mut c, &at, &k, &st["after"]);
            tells += 1;
        }
    }
    eprintln!(
        "{tells} tells match evosax 0.3.2; largest relative error {:.2e} at {}",
        c.worst.0, c.worst.1
    );
    assert_eq!(tells, 8 * 24);
}

#[test]
fn gradient_strategies_match_evosax_state_injected() {
    replay(false);
}

#[test]
fn gradient_strategies_follow_evosax_freely_for_24_generations() {
    replay(true);
}

#[test]
fn only_guided_es_takes_a_gradient_and_it_must_fit() {
    let s = GradientEs::new(4, 3, GradientRule::Guided, 1).unwrap();
    let p = s.default_params();
    let mut k = s.init(Key::new(0), &p, &[0.0; 3]);
    assert!(s.set_gradient(&mut k, &[1.0, 2.0]).unwrap_err().to_string().contains("num_dims = 3"));
    assert!(
        s.set_gradient(&mut k, &[1.0, f32::NAN, 0.0])
            .unwrap_err()
            .to_string()
            .contains("gradient[1]")
    );
    let a = GradientEs::new(4, 3, GradientRule::Asebo, 1).unwrap();
    let mut ka = a.init(Key::new(0), &a.default_params(), &[0.0; 3]);
    assert!(
        a.set_gradient(&mut ka, &[1.0; 3]).unwrap_err().to_string().contains("only for guided-es")
    );
    assert!(GradientEs::new(4, 3, GradientRule::Guided, 4).is_err());
    assert!(GradientEs::new(5, 3, GradientRule::Persistent, 1).is_err());
}
