//! Behaviour of every strategy: convergence on standard problems, invariants (σ stays
//! positive and finite under any fitness), NaN handling, thread-count independence.

use kestrel_core::Key;
use kestrel_evo::problem::{Benchmark, Function};
use kestrel_evo::shaping::ShapingKind;
use kestrel_evo::{CmaEs, Driver, Instance, OpenEs, Problem, SepCmaEs, Snes, Stop, Strategy};
use proptest::prelude::*;

/// Runs `gens` generations through the driver; returns (best fitness, evaluations to reach
/// `target` or None).
fn run<S: Strategy + Clone + 'static>(
    s: &S,
    p: &S::Params,
    prob: &dyn Problem,
    mean: f32,
    gens: usize,
    target: f32,
    seed: u64,
) -> (f32, Option<usize>) {
    let key = Key::new(seed);
    let opt = Instance::new(s.clone(), p.clone(), key, &vec![mean; s.num_dims()]);
    let mut d = Driver::new(opt, prob, key).unwrap();
    match d.run(gens as u64, Some(target), |_| true) {
        Stop::Target => (d.progress().best_fitness, Some(d.evals() as usize)),
        _ => (d.progress().best_fitness, None),
    }
}

#[test]
fn cma_es_solves_sphere_ellipsoid_rosenbrock() {
    for (f, n, budget) in [
        (Function::Sphere, 10, 2_500),
        (Function::Ellipsoid, 10, 9_000),
        (Function::Rosenbrock, 10, 12_000),
    ] {
        let s = CmaEs::with_default_pop(n).unwrap();
        let p = Strategy::default_params(&s);
        let b = Benchmark::new(f, n).unwrap();
        let (best, evals) = run(&s, &p, &b, 0.1, 5_000, 1e-8, 3);
        let evals = evals.unwrap_or_else(|| panic!("{f:?}: best {best}"));
        assert!(evals <= budget, "{f:?} took {evals} evaluations");
    }
    // Rotation does not hurt CMA-ES (it is rotation invariant).
    let s = CmaEs::with_default_pop(8).unwrap();
    let b = Benchmark::new(Function::Ellipsoid, 8)
        .unwrap()
        .rotated(Key::new(5))
        .shifted(Key::new(6), 1.0);
    assert!(run(&s, &Strategy::default_params(&s), &b, 0.0, 5_000, 1e-8, 1).1.is_some());
}

#[test]
fn diagonal_and_gradient_strategies_make_progress() {
    let n = 10;
    let b = Benchmark::new(Function::Sphere, n).unwrap();
    let start = b.value(&vec![3.0; n]) as f32;
    let s = SepCmaEs::new(16, n).unwrap();
    assert!(
        run(&s, &Strategy::default_params(&s), &b, 3.0, 2_000, 1e-8, 1).1.is_some(),
        "sep-cma-es"
    );
    let s = Snes::new(16, n).unwrap();
    assert!(run(&s, &Strategy::default_params(&s), &b, 3.0, 2_000, 1e-6, 1).1.is_some(), "snes");
    let s = OpenEs::new(32, n).unwrap();
    for shaping in [ShapingKind::CenteredRank, ShapingKind::ZScore, ShapingKind::Raw] {
        let p = kestrel_evo::OpenEsParams { sigma: 0.1, shaping, ..Strategy::default_params(&s) };
        let (best, _) = run(&s, &p, &b, 3.0, 400, 0.0, 1);
        assert!(best < start * 1e-2, "open-es {shaping:?}: {best} from {start}");
    }
}

#[test]
fn nan_fitness_ranks_worst_and_is_counted() {
    let s = CmaEs::new(8, 3).unwrap();
    let p = Strategy::default_params(&s);
    let mut st = s.init(Key::new(0), &p, &[0.0; 3]);
    let mut pop = vec![0.0; 24];
    s.ask(Key::new(1), &mut st, &p, &mut pop);
    let fit = [1.0, f32::NAN, 0.5, f32::INFINITY, 2.0, f32::NAN, 3.0, 4.0];
    let m = s.tell(Key::new(2), &pop, &fit, &mut st, &p);
    assert_eq!((m.nonfinite, m.best_in_generation), (3, 0.5));
    assert_eq!(st.progress.best_solution, pop[6..9].to_vec());
    assert!(st.mean.iter().all(|v| v.is_finite()) && st.sigma.is_finite());
    // All failed: no update direction, state stays finite.
    let m = s.tell(Key::new(3), &pop, &[f32::NAN; 8], &mut st, &p);
    assert_eq!(m.nonfinite, 8);
    assert!(st.mean.iter().all(|v| v.is_finite()));
}

#[test]
fn evaluation_and_search_do_not_depend_on_the_thread_count() {
    let n = 12;
    let b = Benchmark::new(Function::Rastrigin, n).unwrap().rotated(Key::new(9));
    let go = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let s = CmaEs::new(64, n).unwrap();
            let p = Strategy::default_params(&s);
            let mut st = s.init(Key::new(4), &p, &vec![1.0; n]);
            let (mut pop, mut fit) = (vec![0.0; 64 * n], vec![0.0; 64]);
            for g in 0..30 {
                s.ask(Key::new(g), &mut st, &p, &mut pop);
                b.evaluate(Key::new(g), &pop, &mut fit);
                s.tell(Key::new(g), &pop, &fit, &mut st, &p);
            }
            (st.mean.clone(), st.sigma, fit)
        })
    };
    assert_eq!(go(1), go(2));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn sigma_stays_positive_and_finite(seed: u64, fits in proptest::collection::vec(prop_oneof![Just(f32::NAN), -1e6f32..1e6], 16 * 20)) {
        let s = CmaEs::new(16, 5).unwrap();
        let p = Strategy::default_params(&s);
        let mut st = s.init(Key::new(seed), &p, &[0.0; 5]);
        let sep = SepCmaEs::new(16, 5).unwrap();
        let mut sst = sep.init(Key::new(seed), &p, &[0.0; 5]);
        let mut pop = vec![0.0; 80];
        for g in 0..20 {
            let f = &fits[g * 16..(g + 1) * 16];
            s.ask(Key::new(seed).fold_in(g as u64), &mut st, &p, &mut pop);
            s.tell(Key::new(0), &pop, f, &mut st, &p);
            prop_assert!(st.sigma > 0.0 && st.sigma.is_finite());
            prop_assert!(st.d.iter().all(|d| *d > 0.0 && d.is_finite()));
            sep.ask(Key::new(seed).fold_in(g as u64), &mut sst, &p, &mut pop);
            sep.tell(Key::new(0), &pop, f, &mut sst, &p);
            prop_assert!(sst.sigma > 0.0 && sst.d.iter().all(|d| *d > 0.0 && d.is_finite()));
        }
    }
}

#[test]
fn bad_sizes_are_errors() {
    assert!(CmaEs::new(3, 10).unwrap_err().to_string().contains("pop_size"));
    assert!(OpenEs::new(7, 10).unwrap_err().to_string().contains("even"));
    assert!(Snes::new(8, 0).is_err());
    assert!(Function::parse("spherez").unwrap_err().to_string().contains("rosenbrock"));
}

#[test]
fn xnes_pgpe_de_make_progress() {
    use kestrel_evo::{DifferentialEvolution, Pgpe, PgpeParams, Xnes};
    let n = 5;
    let sphere = Benchmark::new(Function::Sphere, n).unwrap();
    let ell = Benchmark::new(Function::Ellipsoid, n).unwrap().rotated(Key::new(3));
    let s = Xnes::new(12, n).unwrap();
    let p = Strategy::default_params(&s);
    assert!(run(&s, &p, &sphere, 2.0, 3_000, 1e-8, 1).1.is_some(), "xnes sphere");
    assert!(
        run(&s, &p, &ell, 2.0, 6_000, 1e-8, 1).1.is_some(),
        "xnes rotated ellipsoid (needs the full shape matrix)"
    );
    let s = Pgpe::new(20, n).unwrap();
    let p = PgpeParams { lr: 0.05, max_velocity: 0.1, ..Strategy::default_params(&s) };
    let (best, _) = run(&s, &p, &sphere, 2.0, 600, 0.0, 1);
    assert!(best < 1e-2, "pgpe: {best}");
    let s = DifferentialEvolution::new(30, n).unwrap();
    let p = Strategy::default_params(&s);
    assert!(run(&s, &p, &sphere, 2.0, 2_000, 1e-8, 1).1.is_some(), "de sphere");
    let ras = Benchmark::new(Function::Rastrigin, n).unwrap();
    let (best, _) = run(&s, &p, &ras, 2.0, 2_000, 1e-6, 2);
    assert!(best < 5.0, "de rastrigin: {best}");
}

#[test]
fn ipop_and_bipop_restart_and_solve_rastrigin() {
    use kestrel_evo::restarts::{RestartConfig, RestartKind, cma_restarts};
    let n = 6;
    let ras = Benchmark::new(Function::Rastrigin, n).unwrap();
    for kind in [RestartKind::Ipop, RestartKind::Bipop] {
        let cfg = RestartConfig {
            kind,
            sigma0: 2.0,
            max_evals: 400_000,
            target: 1e-8,
            max_restarts: 40,
            restart_box: Some([-5.0, 5.0]),
        };
        let r = cma_restarts(&ras, &vec![3.0; n], &cfg, Key::new(7)).unwrap();
        assert!(r.best_fitness <= 1e-8, "{kind:?}: {r:?}");
        assert!(r.runs.len() >= 2, "{kind:?} solved without restarting: {:?}", r.runs);
        assert_eq!(r.evals, r.runs.iter().map(|s| s.evals).sum::<u64>());
        if kind == RestartKind::Ipop {
            assert!(r.runs.windows(2).all(|w| w[1].pop_size == 2 * w[0].pop_size));
        }
    }
}

/// Every strategy's state exports and imports exactly: an optimiser loaded from another's
/// `state_dict` asks the same populations from then on; a dict of other sizes is refused and
/// changes nothing.
#[test]
fn state_dicts_round_trip_for_every_strategy() {
    use kestrel_evo::StrategyKind;
    let f = |x: &[f32]| x.iter().map(|v| (v - 0.3) * (v - 0.3)).sum::<f32>();
    for kind in StrategyKind::ALL {
        // The learned ones with evosax's weights (skipped, as reference data, without them).
        let Some(params_path) = kestrel_testkit::evosax_weights(kind.evosax_weights(4)) else {
            continue;
        };
        let params = kestrel_evo::StrategyParams { params_path, ..Default::default() };
        let build = |start: &[f32], seed| {
            kind.build_with(Some(12), 0.5, &params, start, kestrel_core::Key::new(seed)).unwrap()
        };
        let mut a = build(&[0.1; 4], 1);
        let mut pop = vec![0.0; 12 * 4];
        let mut fit = vec![0.0; 12];
        for g in 0..3 {
            a.try_ask(kestrel_core::Key::new(10 + g), &mut pop).unwrap();
            fit.iter_mut().zip(pop.chunks(4)).for_each(|(o, x)| *o = f(x));
            a.try_tell(kestrel_core::Key::new(20 + g), &pop, &fit).unwrap();
        }
        let dict = a.state_dict();
        let mut b = build(&[0.9; 4], 2);
        b.load_state_dict(&dict).unwrap();
        assert_eq!(b.state_dict(), dict, "{kind:?}");
        let (mut pa, mut pb) = (vec![0.0; 48], vec![0.0; 48]);
        a.try_ask(kestrel_core::Key::new(99), &mut pa).unwrap();
        b.try_ask(kestrel_core::Key::new(99), &mut pb).unwrap();
        assert_eq!(pa, pb, "{kind:?}");
        let mut small = build(&[0.0; 3], 3);
        let before = small.state_dict();
        let e = small.load_state_dict(&dict).unwrap_err().to_string();
        assert!(e.contains("state_dict."), "{kind:?}: {e}");
        let bits = |d: &kestrel_evo::StateDict| {
            d.iter()
                .map(|(n, v)| (n.clone(), v.iter().map(|x| x.to_bits()).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            bits(&small.state_dict()),
            bits(&before),
            "{kind:?}: unchanged after a refused load"
        );
    }
}
