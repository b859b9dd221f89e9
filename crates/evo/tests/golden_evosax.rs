//! Golden test against evosax 0.3.2 (`tools/golden/evosax_tell.py`): default parameters,
//! `ask` from the same standard normals, and every `tell` of CMA-ES, Sep-CMA-ES, SNES,
//! OpenAI-ES (OpenEsAdam), xNES (`bugs = "all"`, evosax's element-wise update: see xnes.rs) and PGPE
//! (ClipUp), and differential evolution from evosax's index and crossover draws, over 24 generations (one case 4) with ties and NaN fitness.
//!
//! Tolerance: evosax computes in float32 (JAX's default) and Kestrel in f64, so values agree
//! to float32 rounding accumulated over one update, not bit for bit. `TOL` is the smallest
//! relative tolerance (with an absolute floor for values near 0) that passes.

use faer::Mat;
use kestrel_core::Key;
use kestrel_evo::{
    BugsKind, CmaEs, DeParams, DeState, DifferentialEvolution, OpenEs, OpenEsParams, Pgpe,
    PgpeParams, PgpeState, SepCmaEs, Snes, Strategy, Xnes, XnesParams, XnesState,
};
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

/// xNES as evosax runs it, its params checked against the fixture's.
fn xnes(lam: usize, n: usize, pp: &Value, w: &mut Worst) -> (Xnes, XnesParams) {
    let s = Xnes::new(lam, n).unwrap();
    let mut p = s.default_params();
    close(w, "xnes weights", &p.weights, &v(&pp["weights"]));
    close(w, "xnes lr_sigma", &[p.lr_sigma], &v(&pp["lr_std_init"]));
    close(w, "xnes lr_b", &[p.lr_b], &v(&pp["lr_B"]));
    (p.sigma_init, p.bugs) = (v(&pp["std_init"])[0], BugsKind::All);
    (s, p)
}

/// evosax's xNES state (its B stays diagonal: the inverse is by entries).
fn load_xnes(k: &mut XnesState, b: &Value, n: usize) {
    (k.mean, k.sigma, k.b) = (v(&b["mean"]), b["sigma"].as_f64().unwrap(), mat(&b["b"], n));
    k.b_inv = Mat::from_fn(n, n, |i, j| if i == j { 1.0 / k.b[(i, i)] } else { 0.0 });
    assert!((0..n).all(|i| (0..n).all(|j| i == j || k.b[(i, j)] == 0.0)), "B diagonal");
}

fn pgpe(lam: usize, n: usize, pp: &Value, w: &mut Worst) -> (Pgpe, PgpeParams) {
    let s = Pgpe::new(lam, n).unwrap();
    let mut p = s.default_params();
    close(w, "pgpe std_lr", &[p.sigma_lr], &v(&pp["std_lr"]));
    close(w, "pgpe std_max_change", &[p.sigma_max_change], &v(&pp["std_max_change"]));
    p.sigma_init = v(&pp["std_init"])[0];
    (s, p)
}

fn load_pgpe(k: &mut PgpeState, b: &Value) {
    (k.mean, k.sigma, k.velocity) = (v(&b["mean"]), v(&b["sigma"]), v(&b["velocity"]));
}

fn de(case: &Value, lam: usize, n: usize, w: &mut Worst) -> (DifferentialEvolution, DeParams) {
    let s = DifferentialEvolution::new(lam, n).unwrap();
    let mut p = s.default_params();
    let pp = &case["params"];
    close(w, "de crossover_rate", &[p.crossover_rate], &[pp["crossover_rate"].as_f64().unwrap()]);
    close(
        w,
        "de differential_weight",
        &[p.differential_weight],
        &[pp["differential_weight"].as_f64().unwrap()],
    );
    p.elitism = case["elitism"].as_bool().unwrap();
    (s, p)
}

fn load_de(k: &mut DeState, b: &Value) {
    (k.members, k.fitness) = (f32s(&b["population"]), f32s(&b["fitness"]));
    k.progress.generation = k.progress.generation.max(1);
}

/// evosax's DE draws of one generation, as `ask_from_draws` takes them.
fn de_ask(s: &DifferentialEvolution, k: &DeState, p: &DeParams, st: &Value, out: &mut [f32]) {
    let idx = |name: &str| -> Vec<usize> {
        st[name].as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as usize).collect()
    };
    let (a, b, c, forced) = (idx("a"), idx("b"), idx("c"), idx("forced"));
    if p.elitism {
        assert!(a.iter().all(|&i| i == s.best(k)), "the elitist base is Kestrel's best too");
    }
    s.ask_from_draws(k, p, [&a, &b, &c, &forced], &v(&st["r"]), out).unwrap();
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
            let (pop, fit) = (f32s(&st["population"]), f32s(&st["fitness"]));
            // Differential evolution's draws are indices and uniforms, not normals.
            let z = if st["z"].is_array() { v(&st["z"]) } else { Vec::new() };
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
                "xnes" => {
                    let (s, p) = xnes(lam, n, pp, &mut worst);
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    load_xnes(&mut k, b, n);
                    s.ask_from_normals(&mut k, &z, &mut out);
                    let got: Vec<f64> = out.iter().map(|&x| x as f64).collect();
                    close(&mut worst, &format!("{at} population"), &got, &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    close(&mut worst, &format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    let want = a["sigma"].as_f64().unwrap();
                    close(&mut worst, &format!("{at} sigma"), &[k.sigma], &[want]);
                    close(&mut worst, &format!("{at} B"), &flat(&k.b), &v(&a["b"]));
                }
                "pgpe" => {
                    let (s, p) = pgpe(lam, n, pp, &mut worst);
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    load_pgpe(&mut k, b);
                    s.ask_from_normals(&mut k, &z[..lam / 2 * n], &mut out);
                    let got: Vec<f64> = out.iter().map(|&x| x as f64).collect();
                    close(&mut worst, &format!("{at} population"), &got, &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    close(&mut worst, &format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    close(&mut worst, &format!("{at} sigma"), &k.sigma, &v(&a["sigma"]));
                    close(&mut worst, &format!("{at} velocity"), &k.velocity, &v(&a["velocity"]));
                }
                "de" => {
                    let (s, p) = de(case, lam, n, &mut worst);
                    let mut k = s.init(Key::new(0), &p, &vec![0.0; n]);
                    load_de(&mut k, b);
                    de_ask(&s, &k, &p, st, &mut out);
                    let got: Vec<f64> = out.iter().map(|&x| x as f64).collect();
                    close(&mut worst, &format!("{at} population"), &got, &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    let members: Vec<f64> = k.members.iter().map(|&x| x as f64).collect();
                    close(&mut worst, &format!("{at} members"), &members, &v(&a["population"]));
                    let fitness: Vec<f64> = k.fitness.iter().map(|&x| x as f64).collect();
                    close(&mut worst, &format!("{at} fitness"), &fitness, &v(&a["fitness"]));
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
    assert_eq!(tells, 244);
}

/// The same 244 tells run freely: each case starts from its first state and goes on from its own
/// results (only the normals and the fitness come from the fixture), so an error that grows over
/// the generations is caught, which re-injecting evosax's state before every tell would hide.
/// The population, mean and step size are compared after every generation; CMA-ES (which
/// decomposes C after every tell here, as evosax does in every ask) is told the fixture's
/// population, evosax's sample in its own eigenbasis, and its mean, step size, both paths, its
/// covariance and the eigenvalues of its own decomposition are compared (no evosax state but
/// the first is injected). Tolerance:
/// `FREE_TOL` relative (with an absolute floor of 1e-2, the populations being of order 0.1 to
/// 1), the smallest power of ten that passes: evosax's float32 rounding compounding over 24
/// generations reaches 4.9e-4 in OpenAI-ES's mean (OpenEsAdam divides each step by `√v`, so the
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
                // evosax decomposes C in every ask: so does Kestrel here (after every tell).
                p.lazy_eigen = false;
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                (k.mean, k.p_sigma, k.p_c) =
                    (v(&first["mean"]), v(&first["p_sigma"]), v(&first["p_c"]));
                (k.c, k.b, k.d) = (mat(&first["c"], n), mat(&first["b"], n), v(&first["d"]));
                let sorted = |d: &[f64]| {
                    let mut d = d.to_vec();
                    d.sort_by(f64::total_cmp);
                    d
                };
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    // Kestrel's own decomposition of its own C has evosax's eigenvalues (an
                    // eigensolver fixes the basis only up to sign, order and a rotation within
                    // repeated eigenvalues, so the basis itself is not compared).
                    check(
                        format!("{at} eigenvalues"),
                        &sorted(&k.d),
                        &sorted(&v(&st["before"]["d"])),
                    );
                    // The fixture's population is evosax's sample in its basis; everything the
                    // update computes from it runs free: C^(-1/2) and the active weights'
                    // norms come from Kestrel's own B and D.
                    let pop = f32s(&st["population"]);
                    s.tell(Key::new(0), &pop, &f32s(&st["fitness"]), &mut k, &p);
                    let after = &st["after"];
                    check(format!("{at} mean"), &k.mean, &v(&after["mean"]));
                    check(format!("{at} sigma"), &[k.sigma], &[after["sigma"].as_f64().unwrap()]);
                    check(format!("{at} p_sigma"), &k.p_sigma, &v(&after["p_sigma"]));
                    check(format!("{at} p_c"), &k.p_c, &v(&after["p_c"]));
                    check(format!("{at} covariance"), &flat(&k.c), &v(&after["c"]));
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
            "xnes" => {
                let (s, p) = xnes(lam, n, &case["params"], &mut Worst(0.0, String::new()));
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                load_xnes(&mut k, first, n);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&mut k, &v(&st["z"]), &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    check(format!("{at} B"), &flat(&k.b), &v(&st["after"]["b"]));
                    tells += 1;
                }
            }
            "pgpe" => {
                let (s, p) = pgpe(lam, n, &case["params"], &mut Worst(0.0, String::new()));
                let mut k = s.init(Key::new(0), &p, &f32s(&first["mean"]));
                load_pgpe(&mut k, first);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&mut k, &v(&st["z"])[..lam / 2 * n], &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    check(format!("{at} sigma"), &k.sigma, &v(&st["after"]["sigma"]));
                    tells += 1;
                }
            }
            "de" => {
                let (s, p) = de(case, lam, n, &mut Worst(0.0, String::new()));
                let mut k = s.init(Key::new(0), &p, &vec![0.0; n]);
                load_de(&mut k, first);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    de_ask(&s, &k, &p, st, &mut out);
                    check(format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out, &f32s(&st["fitness"]), &mut k, &p);
                    check(
                        format!("{at} members"),
                        &as64(&k.members),
                        &v(&st["after"]["population"]),
                    );
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
    assert_eq!(tells, 244);
}
