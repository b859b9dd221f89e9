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
