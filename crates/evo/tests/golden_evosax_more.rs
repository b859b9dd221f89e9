//! Golden test against evosax 0.3.2 (`tools/golden/evosax_more.py`): Simple ES, DES, MA-ES,
//! LM-MA-ES, ARS, ESMC, hill climbing, random search, simulated annealing and gradientless
//! descent, PSO, the simple, MR15, SAMR and GESMR GAs (these from an evaluated first population: evosax's
//! `init(population, fitness)` is Kestrel's generation 0), one or two shapes each, 24 generations with ties and NaN fitness (none for ARS and
//! ESMC, whose evosax means turn NaN): default parameters, `ask` from the same draws, and every
//! `tell` (state injected before each), then the same generations run freely from the first
//! state (only the draws and the fitness from the fixture).
//!
//! Tolerances: evosax computes in float32 and Kestrel in f64, so values agree to float32
//! rounding, not bit for bit. `TOL` (relative, with an absolute floor for values near 0) is the
//! smallest power of ten that passes one injected update; `FREE_TOL` the smallest that passes
//! 24 free generations, where evosax's rounding compounds.

use kestrel_core::Key;
use kestrel_evo::{
    Antithetic, AntitheticRule, BugsKind, LocalParams, LocalRule, LocalSearch, MaEs, MaKind,
    MaParams, Strategy, Swarm, SwarmDraws, SwarmRule, SwarmState, WeightRule, WeightedEs,
};
use kestrel_evo::{Ga, GaDraws, GaParams, GaRule, GaState};
use kestrel_testkit::Close as Check;
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

fn antithetic(name: &str, lam: usize, n: usize) -> Antithetic {
    let rule = if name == "ars" { AntitheticRule::Ars } else { AntitheticRule::Esmc };
    Antithetic::new(lam, n, rule).unwrap()
}

fn local(name: &str, lam: usize, n: usize) -> LocalSearch {
    let rule = match name {
        "hill_climbing" => LocalRule::HillClimbing,
        "random_search" => LocalRule::RandomSearch,
        "simulated_annealing" => LocalRule::SimulatedAnnealing,
        _ => LocalRule::GradientlessDescent,
    };
    LocalSearch::new(lam, n, rule).unwrap()
}

/// A number, `None` (JSON null) read as `+inf` (the fixture writes infinities as null).
fn num_or_inf(x: &Value) -> f64 {
    x.as_f64().unwrap_or(f64::INFINITY)
}

/// Annealing's uniform draw of the step (0 for the rules that draw none).
fn uniform(st: &Value) -> f64 {
    st["u"].as_f64().unwrap_or(0.0)
}

fn swarm(name: &str, lam: usize, n: usize) -> Swarm {
    Swarm::new(lam, n, if name == "pso" { SwarmRule::Pso } else { SwarmRule::SimpleGa }).unwrap()
}

/// f32 values with JSON nulls (infinities) as `+inf`.
fn f32s_inf(x: &Value) -> Vec<f32> {
    x.as_array().unwrap().iter().map(|y| y.as_f64().map_or(f32::INFINITY, |v| v as f32)).collect()
}

/// Compares a swarm's state with evosax's snapshot `want`.
fn check_swarm(c: &mut Check, at: &str, name: &str, k: &SwarmState, want: &Value) {
    c.close(&format!("{at} members"), &as64(&k.members), &v(&want["members"]));
    // Infinite fitness is null in the fixture: compare where finite, and where each is infinite.
    let fit = |got: &[f32], want: &Value, what: &str, c: &mut Check| {
        let w = f32s_inf(want);
        assert!(got.iter().zip(&w).all(|(a, b)| a.is_finite() == b.is_finite()), "{at} {what}");
        let keep =
            |x: &[f32]| x.iter().filter(|v| v.is_finite()).map(|&v| v as f64).collect::<Vec<_>>();
        c.close(&format!("{at} {what}"), &keep(got), &keep(&w));
    };
    fit(&k.fitness, &want["fitness"], "fitness", c);
    if name == "pso" {
        c.close(
            &format!("{at} personal best"),
            &as64(&k.personal_best),
            &v(&want["personal_best"]),
        );
        fit(&k.personal_fitness, &want["personal_fitness"], "personal fitness", c);
        c.close(&format!("{at} velocity"), &k.velocity, &v(&want["velocity"]));
    }
}

/// Loads evosax's snapshot into a swarm state.
fn load_swarm(name: &str, k: &mut SwarmState, b: &Value) {
    (k.members, k.fitness) = (f32s(&b["members"]), f32s_inf(&b["fitness"]));
    if name == "pso" {
        (k.personal_best, k.personal_fitness, k.velocity) =
            (f32s(&b["personal_best"]), f32s_inf(&b["personal_fitness"]), v(&b["velocity"]));
    }
}

/// The draws of one generation from the fixture, owned.
fn swarm_draws(st: &Value) -> (Vec<f64>, Vec<f64>, Vec<u32>) {
    let normals = st.get("normals").map_or(vec![], v);
    let parents = st.get("parents").map_or(vec![], |p| {
        p.as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect()
    });
    (v(&st["uniforms"]), normals, parents)
}

fn ga(name: &str, lam: usize, n: usize, case: &Value) -> Ga {
    let rule = match name {
        "mr15_ga" => GaRule::Mr15,
        "samr_ga" => GaRule::Samr,
        _ => GaRule::Gesmr,
    };
    let groups = case["params"].get("num_groups").map_or(1, |g| v(g)[0] as usize);
    Ga::new(lam, n, rule, groups).unwrap()
}

fn ints(x: Option<&Value>) -> Vec<u32> {
    x.map_or(vec![], |p| p.as_array().unwrap().iter().map(|i| i.as_u64().unwrap() as u32).collect())
}

/// Compares a GA's state with evosax's snapshot `want` (members, fitness, rates).
fn check_ga(c: &mut Check, at: &str, k: &GaState, want: &Value) {
    c.close(&format!("{at} members"), &as64(&k.members), &v(&want["members"]));
    let w = f32s_inf(&want["fitness"]);
    assert!(k.fitness.iter().zip(&w).all(|(a, b)| a.is_finite() == b.is_finite()), "{at} fitness");
    let keep =
        |x: &[f32]| x.iter().filter(|v| v.is_finite()).map(|&v| v as f64).collect::<Vec<_>>();
    c.close(&format!("{at} fitness"), &keep(&k.fitness), &keep(&w));
    c.close(&format!("{at} sigma"), &k.sigma, &v(&want["sigma"]));
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
        let sigma0 = pp["std_init"].as_array().map_or(f64::NAN, |a| a[0].as_f64().unwrap());
        let mut out = vec![0f32; lam * n];
        for (g, st) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{name} {lam}x{n} gen {g}");
            let (b, a) = (&st["before"], &st["after"]);
            let z = st.get("z").map_or(vec![], v);
            let (pop, fit) = (f32s(&st["population"]), f32s(&st["fitness"]));
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
                "ars" | "esmc" => {
                    let s = antithetic(name, lam, n);
                    let mut p = s.default_params();
                    p.sigma = case["sigma"].as_f64().unwrap();
                    let mut k = s.init(Key::new(0), &p, &f32s(&b["mean"]));
                    (k.mean, k.m, k.v, k.adam_steps) = (
                        v(&b["mean"]),
                        v(&b["adam_m"]),
                        v(&b["adam_v"]),
                        b["count"].as_u64().unwrap(),
                    );
                    s.ask_from_normals(&mut k, &p, &z, &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    c.close(&format!("{at} adam m"), &k.m, &v(&a["adam_m"]));
                    c.close(&format!("{at} adam v"), &k.v, &v(&a["adam_v"]));
                }
                "mr15_ga" | "samr_ga" | "gesmr_ga" => {
                    let s = ga(name, lam, n, &case);
                    // evosax compares with a failed member's NaN (bugs = all).
                    let mut p = GaParams { bugs: BugsKind::All, ..s.default_params() };
                    p.sigma = case["sigma"].as_f64().unwrap();
                    let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
                    if g == 0 {
                        let first = &case["first"];
                        s.ask_first(&k, &p, &v(&first["z"]), &mut out);
                        c.close(&format!("{at} first"), &as64(&out), &v(&first["population"]));
                        let (x0, f0) = (f32s(&first["population"]), f32s(&first["fitness"]));
                        s.tell(Key::new(0), &x0, &f0, &mut k, &p);
                        check_ga(&mut c, &format!("{at} init"), &k, &first["after"]);
                    }
                    // A null fitness is a failed member's NaN, which evosax keeps.
                    (k.members, k.fitness, k.sigma) =
                        (f32s(&b["members"]), f32s(&b["fitness"]), v(&b["sigma"]));
                    k.progress.generation = 1 + g as u64;
                    let (zz, q, u) = (
                        v(&st["normals"]),
                        ints(st.get("picks")),
                        st.get("uniforms").map_or(vec![], v),
                    );
                    s.ask_from(
                        &mut k,
                        &p,
                        &GaDraws { normals: &zz, picks: &q, uniforms: &u },
                        &mut out,
                    );
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    let (tq, tu) =
                        (ints(st.get("tell_picks")), st.get("tell_uniforms").map_or(vec![], v));
                    s.tell_with(&tq, &tu, &pop, &fit, &mut k, &p);
                    check_ga(&mut c, &at, &k, a);
                }
                "pso" | "simple_ga" => {
                    let s = swarm(name, lam, n);
                    let mut p = s.default_params();
                    p.sigma = case["sigma"].as_f64().unwrap();
                    if let Some(r) = pp.get("crossover_rate") {
                        p.crossover_rate = v(r)[0];
                    }
                    let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
                    if g == 0 {
                        // Generation 0 is evosax's init: the first population and its tell.
                        let first = &case["first"];
                        s.ask_first(&k, &p, &v(&first["z"]), &mut out);
                        c.close(&format!("{at} first"), &as64(&out), &v(&first["population"]));
                        let (x0, f0) = (f32s(&first["population"]), f32s(&first["fitness"]));
                        s.tell(Key::new(0), &x0, &f0, &mut k, &p);
                        check_swarm(&mut c, &format!("{at} init"), name, &k, &first["after"]);
                    }
                    load_swarm(name, &mut k, b);
                    let (u, zz, q) = swarm_draws(st);
                    let d = SwarmDraws { uniforms: &u, normals: &zz, parents: &q };
                    s.ask_from(&mut k, &p, &d, &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &pop, &fit, &mut k, &p);
                    check_swarm(&mut c, &at, name, &k, a);
                }
                "hill_climbing"
                | "random_search"
                | "simulated_annealing"
                | "gradientless_descent" => {
                    let s = local(name, lam, n);
                    // evosax's annealing throws a generation with a NaN away (bugs = all).
                    let mut p = LocalParams { bugs: BugsKind::All, ..s.default_params() };
                    if let Some(sg) = case["sigma"].as_f64() {
                        p.sigma = sg;
                    }
                    for (key, got) in [
                        ("temperature_init", p.temperature_init),
                        ("temperature_decay", p.temperature_decay),
                        ("radius_max", p.radius_max),
                        ("radius_decay", p.radius_decay),
                    ] {
                        if pp.get(key).is_some() {
                            c.close(&format!("{at} param {key}"), &[got], &v(&pp[key]));
                        }
                    }
                    let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
                    k.mean = v(&b["mean"]);
                    if name == "simulated_annealing" {
                        (k.fitness, k.temperature) =
                            (num_or_inf(&b["fitness"]), b["temperature"].as_f64().unwrap());
                    } else {
                        k.progress.best_fitness = num_or_inf(&b["best"]) as f32;
                        k.progress.best_solution = f32s(&b["best_solution"]);
                    }
                    s.ask_from_normals(&mut k, &p, &z, &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell_with_uniform(uniform(st), &pop, &fit, &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&a["mean"]));
                    if name == "simulated_annealing" {
                        c.close(
                            &format!("{at} fitness"),
                            &[k.fitness],
                            &[num_or_inf(&a["fitness"])],
                        );
                        c.close(
                            &format!("{at} temperature"),
                            &[k.temperature],
                            &[a["temperature"].as_f64().unwrap()],
                        );
                    }
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
    assert_eq!(tells, 27 * 24);
}

#[test]
fn new_strategies_follow_evosax_freely_for_24_generations() {
    let mut c = Check::new(FREE_TOL, 0.1);
    let mut tells = 0;
    for case in cases() {
        let (lam, n) = sizes(&case);
        let name = case["strategy"].as_str().unwrap();
        let sigma0 =
            case["params"]["std_init"].as_array().map_or(f64::NAN, |a| a[0].as_f64().unwrap());
        let steps = case["steps"].as_array().unwrap();
        let first = &steps[0]["before"];
        let mut out = vec![0f32; lam * n];
        let mean0 = first.get("mean").map_or(vec![], f32s);
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
            "ars" | "esmc" => {
                let s = antithetic(name, lam, n);
                let mut p = s.default_params();
                p.sigma = case["sigma"].as_f64().unwrap();
                let mut k = s.init(Key::new(0), &p, &mean0);
                k.mean = v(&first["mean"]);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&mut k, &p, &v(&st["z"]), &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out.clone(), &f32s(&st["fitness"]), &mut k, &p);
                    c.close(&format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
                    tells += 1;
                }
            }
            "mr15_ga" | "samr_ga" | "gesmr_ga" => {
                let s = ga(name, lam, n, &case);
                let mut p = GaParams { bugs: BugsKind::All, ..s.default_params() };
                p.sigma = case["sigma"].as_f64().unwrap();
                let first = &case["first"];
                let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
                s.ask_first(&k, &p, &v(&first["z"]), &mut out);
                s.tell(Key::new(0), &out.clone(), &f32s(&first["fitness"]), &mut k, &p);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    let (zz, q, u) = (
                        v(&st["normals"]),
                        ints(st.get("picks")),
                        st.get("uniforms").map_or(vec![], v),
                    );
                    s.ask_from(
                        &mut k,
                        &p,
                        &GaDraws { normals: &zz, picks: &q, uniforms: &u },
                        &mut out,
                    );
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    let (tq, tu) =
                        (ints(st.get("tell_picks")), st.get("tell_uniforms").map_or(vec![], v));
                    s.tell_with(&tq, &tu, &out.clone(), &f32s(&st["fitness"]), &mut k, &p);
                    tells += 1;
                }
            }
            "pso" | "simple_ga" => {
                let s = swarm(name, lam, n);
                let mut p = s.default_params();
                p.sigma = case["sigma"].as_f64().unwrap();
                if let Some(r) = case["params"].get("crossover_rate") {
                    p.crossover_rate = v(r)[0];
                }
                let first = &case["first"];
                let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
                s.ask_first(&k, &p, &v(&first["z"]), &mut out);
                s.tell(Key::new(0), &out.clone(), &f32s(&first["fitness"]), &mut k, &p);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    let (u, zz, q) = swarm_draws(st);
                    let d = SwarmDraws { uniforms: &u, normals: &zz, parents: &q };
                    s.ask_from(&mut k, &p, &d, &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell(Key::new(0), &out.clone(), &f32s(&st["fitness"]), &mut k, &p);
                    tells += 1;
                }
            }
            "hill_climbing" | "random_search" | "simulated_annealing" | "gradientless_descent" => {
                let s = local(name, lam, n);
                let mut p = LocalParams { bugs: BugsKind::All, ..s.default_params() };
                if let Some(sg) = case["sigma"].as_f64() {
                    p.sigma = sg;
                }
                let mut k = s.init(Key::new(0), &p, &f32s(&case["start"]));
                k.mean = v(&first["mean"]);
                for (g, st) in steps.iter().enumerate() {
                    let at = format!("{name} {lam}x{n} free gen {g}");
                    s.ask_from_normals(&mut k, &p, &v(&st["z"]), &mut out);
                    c.close(&format!("{at} population"), &as64(&out), &v(&st["population"]));
                    s.tell_with_uniform(
                        uniform(st),
                        &out.clone(),
                        &f32s(&st["fitness"]),
                        &mut k,
                        &p,
                    );
                    c.close(&format!("{at} mean"), &k.mean, &v(&st["after"]["mean"]));
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
    assert_eq!(tells, 27 * 24);
}
