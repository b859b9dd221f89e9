//! Kestrel's counter-based keys: a key is a value, children are derived by folding in an
//! index, and sequential draws inside one row come from `Key::rng`. The same tree gives the
//! same numbers however the work is split. Run: `cargo run -p kestrel-core --example keys`.

use kestrel_core::Key;

fn main() {
    let run = Key::new(42);
    // Row 3 of step 10, derived directly...
    let direct = run.fold_in(10).fold_in(3);
    // ...or through the step key held by whoever steps that batch: the same key.
    let step = run.fold_in(10);
    assert_eq!(direct, step.fold_in(3));
    let mut rng = direct.rng();
    let draws: Vec<f64> = (0..3).map(|_| rng.uniform_f64()).collect();
    println!("row 3 of step 10 draws {draws:?}");
    let [a, b] = run.split();
    println!("split keys differ: {}", a != b);
    let normal = run.fold_in(1).rng().normal_f64();
    println!("a standard normal from run.fold_in(1): {normal:.6}");
}
