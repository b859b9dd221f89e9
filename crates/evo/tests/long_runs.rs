//! CMA-ES and Sep-CMA-ES left running far past convergence, as issue 56 found them from
//! Python: 5-D and 10-D sphere for 100,000 generations drove σ to its 1e8 clip and a
//! generation's best to about 1e18; 50-D (seed 0, σ 0.5) asked NaN from generation 8,581.
//! Now the state stays finite and bounded however long the run goes on, and pycma's default
//! stop criteria ([`kestrel_evo::termination`]) end the run near the optimum, as pycma's do.
//! The keys are the Python objects' (`Key(seed).fold_in(g + 1)`, ask 0, tell 2).

use kestrel_core::Key;
use kestrel_evo::Scales;
use kestrel_evo::termination::{StopOptions, Termination, isotropic};
use kestrel_evo::{Optimizer, StrategyKind};

struct Outcome {
    first_stop: Option<(u64, Vec<&'static str>)>,
    worst_best_after_stop: f32,
    largest_sigma_after_stop: f64,
}

fn run(kind: StrategyKind, n: usize, generations: u64) -> Outcome {
    let mut o = kind.build(None, 0.5, &vec![0.0; n], Key::new(0)).unwrap();
    let (p, d) = (o.pop_size(), o.num_dims());
    let mut term = Termination::new(StopOptions::pycma(n, p), n, p, 0.5);
    let mut scales = Scales::default();
    let (mut x, mut f) = (vec![0f32; p * d], vec![0f32; p]);
    let mut out =
        Outcome { first_stop: None, worst_best_after_stop: 0.0, largest_sigma_after_stop: 0.0 };
    for g in 0..generations {
        let k = Key::new(0).fold_in(g + 1);
        o.ask(k.fold_in(0), &mut x);
        assert!(x.iter().all(|v| v.is_finite()), "{kind} {n}-D generation {g}: a non-finite row");
        for (fi, row) in f.iter_mut().zip(x.chunks_exact(d)) {
            *fi = row.iter().map(|v| v * v).sum();
        }
        // The population asked is told back as it is: try_tell refuses nothing Kestrel asked.
        let m = o.try_tell(k.fold_in(2), &x, &f).unwrap();
        assert!(
            m.sigma.is_finite() && m.sigma > 0.0,
            "{kind} {n}-D generation {g}: σ = {}",
            m.sigma
        );
        if !o.scales((m.generation as usize) % n, &mut scales) {
            isotropic(m.sigma, &o.mean(), &mut scales);
        }
        term.update(&m, &f, &scales);
        if out.first_stop.is_none() && !term.met().is_empty() {
            out.first_stop = Some((m.generation, term.met().to_vec()));
        }
        if out.first_stop.is_some() {
            out.worst_best_after_stop = out.worst_best_after_stop.max(m.best_in_generation);
            out.largest_sigma_after_stop = out.largest_sigma_after_stop.max(m.sigma);
        }
    }
    assert!(o.state_dict().iter().all(|(_, v)| v.iter().all(|x| x.is_finite() || x.is_nan())));
    out
}

#[test]
fn cma_es_left_running_stays_finite_and_stops_near_the_optimum() {
    // pycma 4.5.0 on the same sphere from x0 = 0, σ0 = 0.5 (seeds 1 to 5) stops on `tolfun`
    // at generations 125-134 (5-D), 190-214 (10-D) and 562-590 (50-D); the windows below are
    // that spread widened by a quarter each way, for Kestrel's other draws.
    for (kind, n, gens, window) in [
        (StrategyKind::CmaEs, 5, 100_000, 94..168),
        (StrategyKind::CmaEs, 10, 100_000, 142..268),
        (StrategyKind::CmaEs, 50, 12_000, 421..738),
        (StrategyKind::SepCmaEs, 10, 30_000, 142..268),
    ] {
        let o = run(kind, n, gens);
        let (at, why) = o.first_stop.unwrap_or_else(|| panic!("{kind} {n}-D: never stopped"));
        eprintln!(
            "{kind} {n}-D: first stop at generation {at} ({why:?}); after it, the worst generation \
             best {:.3e} and the largest σ {:.3e}",
            o.worst_best_after_stop, o.largest_sigma_after_stop
        );
        assert!(window.contains(&at) && why.contains(&"tolfun"), "{kind} {n}-D: {at} {why:?}");
        // Past the stop the run stays where it converged: no σ blow-up, no drift away.
        assert!(
            o.largest_sigma_after_stop < 1e-3,
            "{kind} {n}-D: σ {}",
            o.largest_sigma_after_stop
        );
        assert!(o.worst_best_after_stop < 1e-6, "{kind} {n}-D: best {}", o.worst_best_after_stop);
    }
}
