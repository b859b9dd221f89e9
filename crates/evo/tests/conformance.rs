//! One conformance check for every strategy in the registry (`StrategyKind::ALL`): the same
//! results on 1 and 2 threads; NaN fitness counted and ranked worst; bounds honoured; a run
//! resumed from its `state_dict` equal to the uninterrupted run; bad sizes, values and foreign
//! knobs refused with an error naming the field; and a long run on finite fitness whose state
//! stays finite (the numerical guards). The learned strategies run with evosax's own weights
//! (`tools/evosax-ckpt`), skipped when those are absent as reference data is.

use kestrel_core::Key;
use kestrel_evo::StrategyKind;
use kestrel_evo::driver::Driver;
use kestrel_evo::problem::{Benchmark, Function};
use kestrel_evo::{BoundKind, Bounds, Optimizer, StateDict, StrategyParams};

fn pop_for(kind: StrategyKind) -> usize {
    // Even and with pop − 1 divisible by GESMR's one group: 12 suits every strategy.
    let _ = kind;
    12
}

/// The knobs `kind` needs to be built: a learned strategy's weights file; `None` when that
/// file is absent ([`kestrel_testkit::evosax_ckpt`] reports it).
fn needs(kind: StrategyKind) -> Option<StrategyParams> {
    let params_path = kestrel_testkit::evosax_weights(kind.evosax_weights(4))?;
    Some(StrategyParams { params_path, ..Default::default() })
}

/// Every strategy that can be built here.
fn all() -> impl Iterator<Item = StrategyKind> {
    StrategyKind::ALL.into_iter().filter(|&k| needs(k).is_some())
}

fn build(kind: StrategyKind, n: usize, seed: u64) -> Box<dyn Optimizer> {
    let p = needs(kind).unwrap();
    kind.build_with(Some(pop_for(kind)), 0.5, &p, &vec![0.8; n], Key::new(seed)).unwrap()
}

fn bits(d: &StateDict) -> Vec<(String, Vec<u64>)> {
    d.iter().map(|(k, v)| (k.clone(), v.iter().map(|x| x.to_bits()).collect())).collect()
}

#[test]
fn same_results_on_one_and_two_threads() {
    let prob = Benchmark::new(Function::Rosenbrock, 6).unwrap();
    for kind in all() {
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mut d = Driver::new(build(kind, 6, 4), &prob, Key::new(4)).unwrap();
                d.run(25, None, |_| true);
                (d.progress().clone(), bits(&d.optimizer().state_dict()))
            })
        };
        assert_eq!(run(1), run(2), "{kind}");
    }
}

#[test]
fn nan_fitness_is_counted_and_ranked_worst() {
    for kind in all() {
        let mut o = build(kind, 4, 1);
        let p = o.pop_size();
        let mut x = vec![0f32; p * 4];
        for g in 0..6 {
            let k = Key::new(1).fold_in(g);
            o.ask(k.fold_in(0), &mut x);
            let mut f: Vec<f32> = x.chunks(4).map(|r| r.iter().map(|v| v * v).sum()).collect();
            f[0] = f32::NAN;
            f[p - 1] = f32::NAN;
            let m = o.tell(k.fold_in(2), &x, &f);
            assert_eq!(m.nonfinite, 2, "{kind}");
            let best_finite =
                f.iter().copied().filter(|v| v.is_finite()).fold(f32::INFINITY, f32::min);
            assert_eq!(m.best_in_generation, best_finite, "{kind}: a NaN is never the best");
            assert!(o.mean().iter().all(|v| v.is_finite()), "{kind}: mean after NaN");
        }
    }
}

#[test]
fn bounds_are_honoured() {
    let prob = Benchmark::new(Function::Sphere, 5).unwrap();
    for kind in all() {
        for mode in [BoundKind::Clip, BoundKind::Reflect] {
            let b = Bounds::new(vec![0.5; 5], vec![1.0; 5], mode).unwrap();
            let mut d =
                Driver::new(build(kind, 5, 2), &prob, Key::new(2)).unwrap().with_bounds(b).unwrap();
            for _ in 0..15 {
                d.step();
                assert!(
                    d.population().iter().all(|&v| (0.5..=1.0).contains(&v)),
                    "{kind} {mode:?} generation {}: {:?}",
                    d.generation(),
                    d.population()
                );
            }
        }
    }
}

#[test]
fn a_run_resumed_from_its_state_dict_equals_the_uninterrupted_run() {
    let prob = Benchmark::new(Function::Rosenbrock, 4).unwrap();
    for kind in all() {
        let mut whole = Driver::new(build(kind, 4, 7), &prob, Key::new(7)).unwrap();
        whole.run(30, None, |_| true);
        let mut first = Driver::new(build(kind, 4, 7), &prob, Key::new(7)).unwrap();
        first.run(12, None, |_| true);
        // A fresh optimiser (another start and key) loaded with the checkpointed state: the
        // driver's generation counter is the run's, as a checkpoint restores it.
        let needs = needs(kind).unwrap();
        let mut fresh =
            kind.build_with(Some(pop_for(kind)), 0.5, &needs, &[0.1; 4], Key::new(99)).unwrap();
        fresh.load_state_dict(&first.optimizer().state_dict()).unwrap();
        let mut resumed = Driver::new(fresh, &prob, Key::new(7))
            .unwrap()
            .resumed_at(first.generation(), first.evals());
        resumed.run(18, None, |_| true);
        assert_eq!(
            bits(&resumed.optimizer().state_dict()),
            bits(&whole.optimizer().state_dict()),
            "{kind}"
        );
        assert_eq!(resumed.progress(), whole.progress(), "{kind}");
    }
}

#[test]
fn bad_values_are_refused_naming_the_field() {
    for kind in StrategyKind::ALL {
        let e = kind.build(Some(0), 0.5, &[0.0; 3], Key::new(0)).err().unwrap().to_string();
        assert!(e.contains("pop_size"), "{kind}: {e}");
        let e = kind.build(None, f64::NAN, &[0.0; 3], Key::new(0)).err().unwrap().to_string();
        assert!(e.contains("sigma"), "{kind}: {e}");
        let e = kind.build(None, 0.5, &[f32::NAN; 3], Key::new(0)).err().unwrap().to_string();
        assert!(e.contains("x0[0]"), "{kind}: {e}");
        let e = kind.build(None, 0.5, &[], Key::new(0)).err().unwrap().to_string();
        assert!(e.contains("num_dims"), "{kind}: {e}");
        // A knob of another strategy: every strategy lacks one of these two.
        let foreign = if StrategyParams::keys_of(kind).contains(&"lazy_gap") {
            StrategyParams { temperature: Some(1.0), ..Default::default() }
        } else {
            StrategyParams { lazy_gap: Some(1.0), ..Default::default() }
        };
        let e =
            kind.build_with(None, 0.5, &foreign, &[0.0; 3], Key::new(0)).err().unwrap().to_string();
        assert!(e.contains("params.") && e.contains("only"), "{kind}: {e}");
        // A learned strategy without its weights says which file it needs; with a file that
        // is not a checkpoint, what is wrong with it.
        if let Some(rel) = kind.evosax_weights(4) {
            let e = kind.build(None, 0.5, &[0.0; 3], Key::new(0)).err().unwrap().to_string();
            assert!(e.contains("params.params_path") && e.contains(rel), "{kind}: {e}");
            let junk = std::env::temp_dir().join(format!("kestrel-conformance-{kind}.pkl"));
            std::fs::write(&junk, b"\x80\x04not a checkpoint").unwrap();
            let p = StrategyParams {
                params_path: Some(junk.display().to_string()),
                ..Default::default()
            };
            let e = kind.build_with(None, 0.5, &p, &[0.0; 3], Key::new(0)).err().unwrap();
            let e = e.to_string();
            assert!(e.contains(&junk.display().to_string()) && e.contains("byte"), "{kind}: {e}");
            std::fs::remove_file(&junk).unwrap();
        }
    }
}

/// 3,000 generations on the 5-D sphere, far past convergence, from Python's key tree: every
/// asked row finite (so `try_tell` takes Kestrel's own population back) and the state finite.
#[test]
fn long_runs_on_finite_fitness_stay_finite() {
    for kind in all() {
        let mut o = build(kind, 5, 0);
        let p = o.pop_size();
        let (mut x, mut f) = (vec![0f32; p * 5], vec![0f32; p]);
        for g in 0..3_000u64 {
            let k = Key::new(0).fold_in(g + 1);
            o.try_ask(k.fold_in(0), &mut x).unwrap();
            assert!(x.iter().all(|v| v.is_finite()), "{kind} generation {g}: a non-finite row");
            for (fi, r) in f.iter_mut().zip(x.chunks(5)) {
                *fi = r.iter().map(|v| v * v).sum();
            }
            let m = o.try_tell(k.fold_in(2), &x, &f).unwrap_or_else(|e| panic!("{kind} {g}: {e}"));
            assert!(m.sigma.is_finite(), "{kind} generation {g}: σ {}", m.sigma);
        }
        for (name, v) in o.state_dict() {
            assert!(v.iter().all(|x| x.is_finite()), "{kind}: state {name} not finite: {v:?}");
        }
    }
}
