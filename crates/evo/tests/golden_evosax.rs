//! Golden test against evosax 0.3.2 (`tools/golden/evosax_tell.py`): default parameters,
//! `ask` from the same standard normals, and every `tell` of CMA-ES, Sep-CMA-ES, SNES and
//! OpenAI-ES (Adam) over 24 generations (one case 4) with ties and NaN fitness.
//!
//! Tolerance: evosax computes in float32 (JAX's default) and Kestrel in f64, so values agree
//! to float32 rounding accumulated over one update, not bit for bit. `TOL` is the smallest
//! relative tolerance (with an absolute floor for values near 0) that passes.

use faer::Mat;
use kestrel_core::Key;
use kestrel_evo::{CmaEs, OpenEs, OpenEsParams, SepCmaEs, Snes, Strategy};
use kestrel_testkit::load_fixture;
use serde_json::Value;

const TOL: f64 = 1e-5;
const ABS: f64 = 1e-6;

fn v(x: &Value) -> Vec<f64> {
    x.as_array().unwrap().iter().map(|y| y.as_f64().unwrap_or(f64::NAN)).collect()
}

fn f32s(x: &Value) -> Vec<f32> {
    v(x).into_iter().map(|y| y as f32).collect()
}

struct Worst(f64, String);

fn close(w: &mut Worst, what: &str, got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(want).enumerate() {
        let err = (g - e).abs() / (e.abs().max(ABS / TOL));
        if err > w.0 {
            *w = Worst(err, format!("{what}[{i}]: {g} vs {e}"));
        }
        assert!(err <= TOL, "{what}[{i}]: kestrel {g}, evosax {e} (relative error {err:.2e})");
    }
}

fn mat(x: &Value, n: usize) -> Mat<f64> {
    let d = v(x);
    Mat::from_fn(n, n, |i, j| d[i * n + j])
}

fn flat(m: &Mat<f64>) -> Vec<f64> {
    (0..m.nrows()).flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)])).collect()
}

#[test]
fn strategies_match_evosax() {
    let fx = load_fixture("evosax_tell.json");
    let mut worst = Worst(0.0, String::new());
    let mut tells = 0;
    for case in fx["cases"].as_array().unwrap() {
        let (lam, n) = (
            case["pop_size"].as_u64().unwrap() as usize,
            case["num_dims"].as_u64().unwrap() as usize,
        );
        let name = case["strategy"].as_str().unwrap();
        let pp = &case["params"];
        for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name} {lam}x{n} gen {g}");
            let (b, a) = (&st["before"], &st["after"]);
            let (pop, z, fit) = (f32s(&st["population"]), v(&st["z"]), f32s(&st["fitness"]));
            let mut out = vec![0.0f32; lam * n];
            match name {
                "cma_es" | "sep_cma_es" => {
                    let sep = name == "sep_cma_es";
                    let s = CmaEs::new(lam, n).unwrap();
                    let mut p = if sep {
                        Strategy::default_params(&SepCmaEs::new(lam, n).unwrap())
                    } else {
                        Strategy::default_params(&s)
                    };
                    for (k, got) in [
                        ("mu_eff", p.mu_eff),
                        ("c_std", p.c_sigma),
                        ("d_std", p.d_sigma),
                        ("c_c", p.c_c),
                        ("c_1", p.c_1),
                        ("c_mu", p.c_mu),
                        ("chi_n", p.chi_n),
                    ] {
                        close(&mut worst, &format!("{at} param {k}"), &[got], &v(&pp[k]));
                    }
                    close(&mut worst, &format!("{at} weights"), &p.weights, &v(&pp["weights"]));
                    p.sigma_init = v(&pp["std_init"])[0];
                    if sep {
                        let s = SepCmaEs::new(lam, n).unwrap();
                        let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                        (k.mean, k.sigma, k.p_sigma, k.p_c, k.c, k.d) = (
                            v(&b["mean"]),
                            b["sigma"].as_f64().unwrap(),
                            v(&b["p_sigma"]),
                            v(&b["p_c"]),
                            v(&b["c"]),
                            v(&b["d"]),
                        );
                        k.progress.generation = b["generation"].as_u64().unwrap();
                        s.ask_from_normals(&k, &z, &mut out);
                        close(
                            &mut worst,
                            &format!("{at} population"),
                            &out.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                            &v(&st["population"]),
                        );
                        s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                        close(&mut worst, &format!("{at} mean"), &k.mean, &v(&a["mean"]));
                        close(
                            &mut worst,
                            &format!("{at} sigma"),
                            &[k.sigma],
                            &[a["sigma"].as_f64().unwrap()],
                        );
                        close(&mut worst, &format!("{at} p_sigma"), &k.p_sigma, &v(&a["p_sigma"]));
                        close(&mut worst, &format!("{at} p_c"), &k.p_c, &v(&a["p_c"]));
                        // Kestrel regularises C (+1e-8) at the end of tell; evosax in the next ask.
                        let c: Vec<f64> = k.c.iter().map(|c| c - 1e-8).collect();
                        close(&mut worst, &format!("{at} C"), &c, &v(&a["c"]));
                    } else {
                        p.lazy_eigen = true;
                        let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                        (k.mean, k.sigma, k.p_sigma, k.p_c) = (
                            v(&b["mean"]),
                            b["sigma"].as_f64().unwrap(),
                            v(&b["p_sigma"]),
                            v(&b["p_c"]),
                        );
                        (k.c, k.b, k.d) = (mat(&b["c"], n), mat(&b["b"], n), v(&b["d"]));
                        k.progress.generation = b["generation"].as_u64().unwrap();
                        k.eigen_generation = u64::MAX / 2; // keep C as evosax leaves it (no decomposition in this tell)
                        s.ask_from_normals(&mut k, &z, &mut out);
                        close(
                            &mut worst,
                            &format!("{at} population"),
                            &out.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                            &v(&st["population"]),
                        );
                        k.eigen_generation = k.progress.generation + 1;
                        s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                        close(&mut worst, &format!("{at} mean"), &k.mean, &v(&a["mean"]));
                        close(
                            &mut worst,
                            &format!("{at} sigma"),
                            &[k.sigma],
                            &[a["sigma"].as_f64().unwrap()],
                        );
                        close(&mut worst, &format!("{at} p_sigma"), &k.p_sigma, &v(&a["p_sigma"]));
                        close(&mut worst, &format!("{at} p_c"), &k.p_c, &v(&a["p_c"]));
                        close(&mut worst, &format!("{at} C"), &flat(&k.c), &v(&a["c"]));
                    }
                }
                "snes" => {
                    let s = Snes::new(lam, n).unwrap();
                    let p = Strategy::default_params(&s);
                    close(&mut worst, &format!("{at} weights"), &p.weights, &v(&pp["weights"]));
                    close(
                        &mut worst,
                        &format!("{at} lr_sigma"),
                        &[p.lr_sigma],
                        &v(&pp["lr_std_init"]),
                    );
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    (k.mean, k.sigma) = (v(&b["mean"]), v(&b["sigma"]));
                    s.ask_from_normals(&k, &z, &mut out);
                    close(
                        &mut worst,
                        &format!("{at} population"),
                        &out.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                        &v(&st["population"]),
                    );
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    close(&mut worst, &format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    close(&mut worst, &format!("{at} sigma"), &k.sigma, &v(&a["sigma"]));
                }
                _ => {
                    let s = OpenEs::new(lam, n).unwrap();
                    let p = OpenEsParams { sigma: 0.3, ..Strategy::default_params(&s) };
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    (k.mean, k.m, k.v, k.adam_steps) =
                        (v(&b["mean"]), v(&b["m"]), v(&b["v"]), b["count"].as_u64().unwrap());
                    s.ask_from_normals(&k, &p, &z, &mut out);
                    close(
                        &mut worst,
                        &format!("{at} population"),
                        &out.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                        &v(&st["population"]),
                    );
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    close(&mut worst, &format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    close(&mut worst, &format!("{at} adam m"), &k.m, &v(&a["m"]));
                    close(&mut worst, &format!("{at} adam v"), &k.v, &v(&a["v"]));
                }
            }
            tells += 1;
        }
    }
    eprintln!(
        "{tells} tells match evosax 0.3.2; largest relative error {:.2e} at {}",
        worst.0, worst.1
    );
    assert_eq!(tells, 148);
}

/// The same 148 tells run freely: each case starts from its first state and goes on from its own
/// results (only the normals and the fitness come from the fixture), so an error that grows over
/// the generations is caught, which re-injecting evosax's state before every tell would hide.
/// The population, mean and step size are compared after every generation (CMA-ES takes
/// evosax's eigenbasis for each ask, as sampling from the fixture's normals needs; its mean,
/// paths, step size and covariance run free). Tolerance:
/// `FREE_TOL` relative (with an absolute floor of 1e-2, the populations being of order 0.1 to
/// 1), the smallest power of ten that passes: evosax's float32 rounding compounding over 24
/// generations reaches 4.9e-4 in OpenAI-ES's mean (Adam divides each step by `√v`, so the
/// rounding of a small gradient moves the mean by a step of `lr` either way; CMA-ES, Sep-CMA-ES
/// and SNES stay below 1e-4; the state-injected test's one-update error is at most `TOL`).
#[test]
fn strategies_follow_evosax_freely_over_every_generation() {
    const FREE_TOL: f64 = 1e-3;
    let fx = load_fixture("evosax_tell.json");
    let mut worst = (0.0f64, String::new());
    let mut check = |what: String, got: &[f64], want: &[f64]| {
        for (i, (g, e)) in got.iter().zip(want).enumerate() {
            let err = (g - e).abs() / e.abs().max(1e-2);
            if err > worst.0 {
                worst = (err, format!("{what}[{i}]: {g} vs {e}"));
            }
            assert!(err <= FREE_TOL, "{what}[{i}]: kestrel {g}, evosax {e} ({err:.2e})");
        }
    };
    let as64 = |x: &[f32]| x.iter().map(|&v| v as f64).collect::<Vec<_>>();
    let mut tells = 0;
    for case in fx["cases"].as_array().unwrap() {
        let (lam, n) = (
            case["pop_size"].as_u64().unwrap() as usize,
            case["num_dims"].as_u64().unwrap() as usize,
        );
        let name = case["strategy"].as_str().unwrap();
        let steps = case["steps"].as_array().unwrap();
        let first = &steps[0]["before"];
        let mut out = vec![0.0f32; lam * n];
        match name {
            "cma_es" => {
                let s = CmaEs::new(lam, n).unwrap();
                let mut p = Strategy::default_params(&s);
                p.sigma_init = first["sigma"].as_f64().unwrap();
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                (k.mean, k.p_sigma, k.p_c) =
                    (v(&first["mean"]), v(&first["p_sigma"]), v(&first["p_c"]));
                (k.c, k.b, k.d) = (mat(&first["c"], n), mat(&first["b"], n), v(&first["d"]));
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    // The eigenbasis is evosax's: an eigensolver fixes it only up to the sign
                    // and order of its columns, and the fixture's normals are drawn in evosax's.
                    (k.b, k.d) = (mat(&st["before"]["b"], n), v(&st["before"]["d"]));
                    s.ask_from_normals(&mut k, &v(&st["z"]), &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    check(
                        format!("{at} sigma"),
                        &[k.sigma],
                        &[st["after"]["sigma"].as_f64().unwrap()],
                    );
                    tells += 1;
                }
            }
            "sep_cma_es" => {
                let s = SepCmaEs::new(lam, n).unwrap();
                let mut p = Strategy::default_params(&s);
                p.sigma_init = first["sigma"].as_f64().unwrap();
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                k.mean = v(&first["mean"]);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&k, &v(&st["z"]), &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    check(
                        format!("{at} sigma"),
                        &[k.sigma],
                        &[st["after"]["sigma"].as_f64().unwrap()],
                    );
                    tells += 1;
                }
            }
            "snes" => {
                let s = Snes::new(lam, n).unwrap();
                let p = Strategy::default_params(&s);
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                (k.mean, k.sigma) = (v(&first["mean"]), v(&first["sigma"]));
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&k, &v(&st["z"]), &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    check(format!("{at} sigma"), &k.sigma, &v(&st["after"]["sigma"]));
                    tells += 1;
                }
            }
            _ => {
                let s = OpenEs::new(lam, n).unwrap();
                let p = OpenEsParams { sigma: 0.3, ..Strategy::default_params(&s) };
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                (k.mean, k.m, k.v, k.adam_steps) = (
                    v(&first["mean"]),
                    v(&first["m"]),
                    v(&first["v"]),
                    first["count"].as_u64().unwrap(),
                );
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&k, &p, &v(&st["z"]), &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    tells += 1;
                }
            }
        }
    }
    eprintln!(
        "{tells} free tells follow evosax 0.3.2; largest relative error {:.2e} at {}",
        worst.0, worst.1
    );
    assert_eq!(tells, 148);
}
