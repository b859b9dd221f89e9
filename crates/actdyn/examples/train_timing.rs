//! Times training calls (E1 MLP and E2 RBF): `cargo run --release -p kestrel-actdyn --example
//! train_timing -- [calls]`.

use kestrel_actdyn::config::ActdynConfig;
use kestrel_actdyn::model::SeqVae;
use kestrel_actdyn::train::Trainer;
use kestrel_core::Key;

fn main() {
    let calls: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(5000);
    let only = std::env::args().nth(2);
    for (name, cfg) in [("E1 (MLP)", ActdynConfig::e1()), ("E2 (RBF)", ActdynConfig::e2())]
        .into_iter()
        .filter(|(n, _)| only.as_deref().is_none_or(|o| n.contains(o)))
    {
        let model = SeqVae::new(cfg.model.clone()).unwrap();
        let mut p = model.init(Key::new(1));
        let mut tr = Trainer::new(&model, cfg.train.clone()).unwrap();
        let mut r = Key::new(2).rng();
        let y: Vec<f64> = (0..20 * 50).map(|_| 2.0 * r.uniform_f64()).collect();
        let u: Vec<f64> = (0..40).map(|_| 0.2 * r.uniform_f64() - 0.1).collect();
        let t0 = std::time::Instant::now();
        for i in 0..calls {
            tr.step(&model, &mut p, &y, &u, Key::new(3).fold_in(i)).unwrap();
        }
        println!("{name}: {:.3} ms per call", t0.elapsed().as_secs_f64() * 1e3 / calls as f64);
    }
}
