//! One online training call against the reference (`sgd_step.json`): a fresh SGD, the global
//! gradient-norm clip at 10, the step, and the 0.01 perturbation of every dynamics tensor.

use kestrel_actdyn::model::{ElboOptions, ModelConfig, SeqVae};
use kestrel_actdyn::train::{Annealing, TrainConfig, Trainer, clip_coefficient};
use kestrel_core::Key;
use kestrel_testkit::{actdyn_fixture, flat};

mod common;
use common::{assert_rel, load_params, noise_from};

#[test]
fn sgd_step_matches_reference() {
    let Some(fx) = actdyn_fixture("sgd_step.json") else { return };
    let m = SeqVae::new(ModelConfig::default()).unwrap();
    let mut p = load_params(&m, &fx["params_before"]);
    let noise = noise_from(&fx);
    // The perturbation draws, laid out as the flat vector's dynamics range.
    let range = m.dynamics_range();
    let mut eps = vec![f64::NAN; range.len()];
    for t in m.tensors().iter().filter(|t| t.name.starts_with("dynamics.")) {
        for (i, x) in flat(&fx["perturbation_noise"][&t.name]).iter().enumerate() {
            eps[t.index(i) - range.start] = *x;
        }
    }
    assert!(eps.iter().all(|v| v.is_finite()));
    let mut tr = Trainer::new(&m, TrainConfig::default()).unwrap();
    let (y, u) = (flat(&fx["y"]), flat(&fx["u"]));
    let stats = tr
        .step_with(&m, &mut p, &y, &u, &ElboOptions::default(), Key::new(0), Some((&noise, &eps)))
        .unwrap();
    let want_norm = fx["grad_total_norm"].as_f64().unwrap();
    assert_rel("grad_total_norm", &[stats.grad_norm], &[want_norm], 1e-9);
    assert_rel("clip_coef", &[stats.clip_coef], &[fx["clip_coef"].as_f64().unwrap()], 1e-9);
    assert_rel("logged", &stats.terms.logged(20, 50, 2), &flat(&fx["logged"]), 1e-9);
    for t in m.tensors() {
        let want = flat(&fx["params_after"][&t.name]);
        let got = m.tensor_values(&p, &t.name).unwrap();
        // Parameters are O(1) and move by O(1e-2): compare to 1e-12 absolute-relative.
        assert_rel(&format!("params_after {}", t.name), &got, &want, 1e-12);
    }
}

#[test]
fn clip_and_beta_schedules() {
    assert_eq!(clip_coefficient(5.0, 10.0), 1.0);
    assert!((clip_coefficient(100.0, 10.0) - 10.0 / (100.0 + 1e-6)).abs() < 1e-18);
    assert_eq!(clip_coefficient(1e9, 0.0), 1.0);
    let mut c = TrainConfig { warmup: 10, anneal_steps: 100, beta: 2.0, ..TrainConfig::default() };
    assert_eq!(c.beta_at(5), 0.0);
    assert_eq!(c.beta_at(50), 2.0);
    c.annealing = Annealing::Linear;
    assert_eq!(c.beta_at(60), 1.0);
    assert_eq!(c.beta_at(500), 2.0);
    c.annealing = Annealing::Cyclic;
    assert_eq!(c.beta_at(60), 1.0);
    assert_eq!(c.beta_at(10 + 150), 2.0);
    assert_eq!(c.beta_at(10 + 200), 0.0);
}

#[test]
fn bad_training_config_names_the_field() {
    for (c, field) in [
        (TrainConfig { lr: f64::NAN, ..TrainConfig::default() }, "train.lr"),
        (TrainConfig { k_steps: 20, ..TrainConfig::default() }, "train.k_steps"),
        (TrainConfig { num_samples: 0, ..TrainConfig::default() }, "train.num_samples"),
        (TrainConfig { p_mask: 1.0, ..TrainConfig::default() }, "train.p_mask"),
    ] {
        let e = c.validate().unwrap_err().to_string();
        assert!(e.contains(field), "{e}");
    }
}
