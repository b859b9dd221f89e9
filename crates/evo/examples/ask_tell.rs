//! Evolution strategies two ways: the ask/tell loop by hand (what a Python user drives), and
//! the one driver every Kestrel run uses. Run: `cargo run --release -p kestrel-evo --example
//! ask_tell`.

use kestrel_core::Key;
use kestrel_evo::problem::{Benchmark, Function};
use kestrel_evo::{Driver, Problem, StrategyKind};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let problem = Benchmark::new(Function::Rastrigin, 8)?;
    // By hand: any strategy by name, ask a population, evaluate it in one batch, tell.
    let key = Key::new(3);
    let mut es = StrategyKind::Snes.build(None, 2.0, &[1.0; 8], key)?;
    let (lam, n) = (es.pop_size(), es.num_dims());
    let (mut pop, mut fit) = (vec![0.0f32; lam * n], vec![0.0f32; lam]);
    for g in 0..300u64 {
        let k = key.fold_in(g + 1);
        es.ask(k.fold_in(0), &mut pop);
        problem.evaluate(k.fold_in(1), &pop, &mut fit);
        es.tell(k.fold_in(2), &pop, &fit);
    }
    println!("SNES by hand: best {:.4}", es.progress().best_fitness);
    // The driver: the same key tree, so the same numbers.
    let mut d = Driver::new(StrategyKind::Snes.build(None, 2.0, &[1.0; 8], key)?, &problem, key)?;
    d.run(300, None, |_| true);
    println!("SNES driven:  best {:.4}", d.progress().best_fitness);
    assert_eq!(d.progress().best_fitness, es.progress().best_fitness);
    for kind in StrategyKind::ALL {
        let mut d = Driver::new(kind.build(None, 2.0, &[1.0; 8], key)?, &problem, key)?;
        d.run(300, Some(1e-6), |_| true);
        println!(
            "{kind:>10}: best {:.4e} after {} evaluations",
            d.progress().best_fitness,
            d.evals()
        );
    }
    Ok(())
}
