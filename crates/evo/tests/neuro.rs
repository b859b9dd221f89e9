//! Neuroevolution on cart-pole: identical results on 1 and 2 threads, and CMA-ES learns to
//! balance.

use kestrel_core::Key;
use kestrel_envs::{CartPole, CartPoleParams};
use kestrel_evo::neuro::{Neuro, argmax};
use kestrel_evo::{CmaEs, Problem, Strategy};

fn problem() -> Neuro<CartPole> {
    Neuro::new(CartPole, CartPoleParams::default(), &[8], 2, 2, 500, |o| o, argmax).unwrap()
}

#[test]
fn evaluation_is_thread_count_independent() {
    let p = problem();
    assert_eq!(p.num_dims(), 4 * 8 + 8 + 8 * 2 + 2);
    let mut r = Key::new(1).rng();
    let pop: Vec<f32> = (0..32 * p.num_dims()).map(|_| r.normal_f64() as f32).collect();
    let eval = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut f = vec![0.0; 32];
        pool.install(|| p.evaluate(Key::new(5), &pop, &mut f));
        f
    };
    let one = eval(1);
    assert_eq!(one, eval(2));
    assert!(one.iter().all(|&f| (-500.0..=-1.0).contains(&f)), "{one:?}");
}

#[test]
fn cma_es_learns_to_balance() {
    let p = problem();
    let s = CmaEs::new(16, p.num_dims()).unwrap();
    let params = Strategy::default_params(&s);
    let mut st = s.init(Key::new(0), &params, &vec![0.0; p.num_dims()]);
    let (mut pop, mut fit) = (vec![0.0; 16 * p.num_dims()], vec![0.0; 16]);
    for g in 0..60 {
        s.ask(Key::new(g), &mut st, &params, &mut pop);
        p.evaluate(Key::new(g), &pop, &mut fit);
        if s.tell(Key::new(g), &pop, &fit, &mut st, &params).best_so_far <= -500.0 {
            return;
        }
    }
    panic!("no policy balanced for 500 steps: best {}", st.progress.best_fitness);
}

#[test]
fn shards_of_a_population_give_the_whole_populations_fitness() {
    let p = problem();
    let mut r = Key::new(2).rng();
    let pop: Vec<f32> = (0..12 * p.num_dims()).map(|_| r.normal_f64() as f32).collect();
    let mut whole = vec![0.0; 12];
    p.evaluate(Key::new(9), &pop, &mut whole);
    let mut parts = vec![0.0; 12];
    let nd = p.num_dims();
    for (lo, hi) in [(0usize, 5usize), (5, 6), (6, 12)] {
        p.evaluate_rows(Key::new(9), lo as u64, &pop[lo * nd..hi * nd], &mut parts[lo..hi]);
    }
    assert_eq!(whole, parts);
}

#[test]
fn ask_and_tell_check_their_input() {
    use kestrel_evo::StrategyKind;
    for kind in [StrategyKind::CmaEs, StrategyKind::Snes, StrategyKind::SepCmaEs] {
        let mut o = kind.build(Some(8), 0.5, &[0.0; 3], Key::new(1)).unwrap();
        let e = o.try_ask(Key::new(2), &mut [0.0; 5]).unwrap_err().to_string();
        assert!(e.contains("population") && e.contains("24"), "{e}");
        let mut pop = vec![0.0; 24];
        o.try_ask(Key::new(2), &mut pop).unwrap();
        assert!(
            o.try_tell(Key::new(3), &pop, &[0.0; 7]).unwrap_err().to_string().contains("fitness")
        );
        let mut fit = vec![1.0; 8];
        fit[3] = f32::NAN;
        assert!(
            o.try_tell(Key::new(3), &pop, &fit).unwrap_err().to_string().contains("fitness[3]")
        );
        let mut bad = pop.clone();
        bad[7] = f32::INFINITY;
        let e = o.try_tell(Key::new(3), &bad, &[1.0; 8]).unwrap_err().to_string();
        assert!(e.contains("population[2][1]"), "{e}");
        fit[3] = f32::INFINITY;
        o.try_tell(Key::new(3), &pop, &fit).unwrap();
        assert!(o.mean().iter().all(|m| m.is_finite()));
    }
}
