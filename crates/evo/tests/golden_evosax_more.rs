//! Golden test against evosax 0.3.2 (`tools/golden/evosax_more.py`): Simple ES, DES, MA-ES and
//! LM-MA-ES, two shapes each, 24 generations with ties and NaN fitness: default parameters,
//! `ask` from the same standard normals, and every `tell` (state injected before each), then
//! the same generations run freely from the first state (only the normals and the fitness from
//! the fixture).
//!
//! Tolerances: evosax computes in float32 and Kestrel in f64, so values agree to float32
//! rounding, not bit for bit. `TOL` (relative, with an absolute floor for values near 0) is the
//! smallest power of ten that passes one injected update; `FREE_TOL` the smallest that passes
//! 24 free generations, where evosax's rounding compounds.

use kestrel_core::Key;
use kestrel_evo::{BugsKind, MaEs, MaKind, MaParams, Strategy, WeightRule, WeightedEs};
use kestrel_testkit::load_fixture;
use serde_json::Value;

const TOL: f64 = 1e-5;
const FREE_TOL: f64 = 1e-5;

fn v(x: &Value) -> Vec<f64> {
    x.as_array().unwrap().iter().map(|y| y.as_f64().unwrap_or(f64::NAN)).collect()
}

fn f32s(x: &Value) -> Vec<f32> {
    v(x).into_iter().map(|y| y as f32).collect()
}

fn as64(x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| v as f64).collect()
}

/// The largest error seen, and where.
struct Check {
    tol: f64,
    floor: f64,
    worst: (f64, String),
}

impl Check {
    fn new(tol: f64, floor: f64) -> Self {
        Check { tol, floor, worst: (0.0, String::new()) }
    }

    fn close(&mut self, what: &str, got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        for (i, (g, e)) in got.iter().zip(want).enumerate() {
            let err = (g - e).abs() / e.abs().max(self.floor);
            if err > self.worst.0 {
                self.worst = (err, format!("{what}[{i}]: {g} vs {e}"));
            }
            assert!(err <= self.tol, "{what}[{i}]: kestrel {g}, evosax {e} ({err:.2e})");
        }
    }
}

/// One fixture case run by `step(before, z, population, fitness, check, label)` per generation.
fn cases() -> Vec<Value> {
    load_fixture("evosax_more.json")["cases"].as_array().unwrap().clone()
}

fn sizes(case: &Value) -> (usize, usize) {
    (case["pop_size"].as_u64().unwrap() as usize, case["num_dims"].as_u64().unwrap() as usize)
}

fn weighted(name: &str, lam: usize, n: usize) -> WeightedEs {
    let rule = if name == "simple_es" {
        WeightRule::Elite
    } else {
        WeightRule::Discovered { temperature: 12.5 }
    };
    WeightedEs::new(lam, n, rule).unwrap()
}

fn ma(name: &str, lam: usize, n: usize) -> MaEs {
    let kind = if name == "ma_es" { MaKind::Full } else { MaKind::LimitedMemory };
    MaEs::new(lam, n, kind).unwrap()
}

#[test]
fn new_strategies_match_evosax_tell_by_tell() {
    let mut c = Check::new(TOL, 0.1);
    let mut tells = 0;
    for case in cases() {
        let (lam, n) = sizes(&case);
        let name = case["strategy"].as_str().unwrap();
        let pp = &case["params"];
        let sigma0 = v(&pp["std_init"])[0];
        let mut out = vec![0f32; lam * n];
        for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name} {lam}x{n} gen {g}");
            let (b, a) = (&st["before"], &st["after"]);
            let (z, pop, fit) = (v(&st["z"]), f32s(&st["population"]), f32s(&st["fitness"]));
            match name {
                "simple_es" | "des" => {
                    let s = weighted(name, lam, n);
                    let mut p = s.default_params();
                    c.close(&format!("{at} weights"), &p.weights, &v(&pp["weights"]));
                    p.sigma_init = sigma0;
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    (k.mean, k.sigma) = (v(&b["mean"]), v(&b["std"]));
                    s.ask_from_normals(&mut k, &z, &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    c.close(&format!("{at} std"), &k.sigma, &v(&a["std"]));
                }
                _ => {
                    let s = ma(name, lam, n);
                    // evosax's MA-ES and LM-MA-ES weigh the matrix update by candidate order.
                    let mut p = MaParams { bugs: BugsKind::All, ..s.default_params() };
                    c.close(&format!("{at} weights"), &p.cma.weights, &v(&pp["weights"]));
                    for (key, got) in [
                        ("mu_eff", p.cma.mu_eff),
                        ("c_std", p.cma.c_sigma),
                        ("d_std", p.cma.d_sigma),
                        ("c_1", p.cma.c_1),
                        ("c_mu", p.cma.c_mu),
                        ("chi_n", p.cma.chi_n),
                    ] {
                        c.close(&format!("{at} param {key}"), &[got], &v(&pp[key]));
                    }
                    if name == "lm_ma_es" {
                        c.close(&format!("{at} c_d"), &p.c_d, &v(&pp["c_d"]));
                        c.close(&format!("{at} c_c"), &p.c_c, &v(&pp["c_c"]));
                    }
                    p.cma.sigma_init = sigma0;
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    (k.mean, k.sigma, k.p_sigma, k.m) =
                        (v(&b["mean"]), v(&b["std"])[0], v(&b["p_std"]), v(&b["m"]));
                    k.progress.generation = b["generation"].as_u64().unwrap();
                    s.ask_from_normals(&mut k, &p, &z, &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    c.close(&format!("{at} std"), &[k.sigma], &v(&a["std"]));
                    c.close(&format!("{at} p_std"), &k.p_sigma, &v(&a["p_std"]));
                    c.close(&format!("{at} M"), &k.m, &v(&a["m"]));
                }
            }
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
fn new_strategies_follow_evosax_freely_for_24_generations() {
    let mut c = Check::new(FREE_TOL, 0.1);
    let mut tells = 0;
    for case in cases() {
        let (lam, n) = sizes(&case);
        let name = case["strategy"].as_str().unwrap();
        let sigma0 = v(&case["params"]["std_init"])[0];
        let steps = case["steps"].as_array().unwrap();
        let first = &steps[0]["before"];
        let mut out = vec![0f32; lam * n];
        let mean0 = f32s(&first["mean"]);
        match name {
            "simple_es" | "des" => {
                let s = weighted(name, lam, n);
                let p = kestrel_evo::WeightedEsParams { sigma_init: sigma0, ..s.default_params() };
                let mut k = s.init(Key::new(0), &p, &mean0);
                k.mean = v(&first["mean"]);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&mut k, &v(&st["z"]), &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out.clone(), &f32s(&st["fitness"]), &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    c.close(&format!("{at} std"), &k.sigma, &v(&st["after"]["std"]));
                    tells += 1;
                }
            }
            _ => {
                let s = ma(name, lam, n);
                let mut p = MaParams { bugs: BugsKind::All, ..s.default_params() };
                p.cma.sigma_init = sigma0;
                let mut k = s.init(Key::new(0), &p, &mean0);
                k.mean = v(&first["mean"]);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&mut k, &p, &v(&st["z"]), &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out.clone(), &f32s(&st["fitness"]), &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    c.close(&format!("{at} std"), &[k.sigma], &v(&st["after"]["std"]));
                    c.close(&format!("{at} M"), &k.m, &v(&st["after"]["m"]));
                    tells += 1;
                }
            }
        }
    }
    eprintln!(
        "{tells} free tells follow evosax 0.3.2; largest relative error {:.2e} at {}",
        c.worst.0, c.worst.1
    );
    assert_eq!(tells, 8 * 24);
}
