//! IQN: finite-difference gradients of the whole network and its loss in f64, the update
//! rules (soft/hard target updates, ε schedule), and learning on a small task.

use kestrel_agents::iqn::{IqnConfig, IqnLearner, IqnNet, IqnWork};
use kestrel_core::Key;
use kestrel_nn::quantile_huber;
use kestrel_replay::FrameReplay;
use kestrel_testkit::central_differences;

fn small() -> IqnConfig {
    let mut c = IqnConfig::sorrel(3, 3);
    c.num_frames = 2;
    c.layer = 7;
    c.num_cosines = 5;
    c.num_quantiles = 4;
    c.sigma0 = 0.2;
    c
}

fn rand(key: Key, n: usize, scale: f64) -> Vec<f64> {
    let mut r = key.rng();
    (0..n).map(|_| scale * (2.0 * r.uniform_f64() - 1.0)).collect()
}

fn check(what: &str, a: &[f64], n: &[f64]) {
    for (i, (x, y)) in a.iter().zip(n).enumerate() {
        // Central differences of a sum of O(10) carry ~1e-9 of round-off: relative error above 1e-3.
        let e = (x - y).abs() / x.abs().max(y.abs()).max(1e-3);
        assert!(e < 1e-5, "{what}: parameter {i}: analytic {x}, numeric {y}");
    }
}

/// Every parameter's gradient under `Σ r ⊙ Z` (every quantile of every action), with noise
/// (training pass) and without (acting pass).
#[test]
fn network_gradient_matches_finite_differences() {
    let cfg = small();
    let net = IqnNet::new(&cfg).unwrap();
    let mut p: Vec<f64> = net.init(Key::new(1));
    p.iter_mut().zip(rand(Key::new(2), net.num_params(), 0.05)).for_each(|(a, b)| *a += b);
    let batch = 3;
    let x = rand(Key::new(3), batch * cfg.state_dim(), 1.0);
    for noisy in [true, false] {
        let mut ws = IqnWork::<f64>::default();
        ws.draw(&net, Key::new(4), batch, cfg.num_quantiles, noisy);
        let r = rand(Key::new(5), batch * cfg.num_quantiles * cfg.actions, 1.0);
        let base = ws.clone();
        let loss = |p: &[f64]| {
            let mut w = base.clone();
            net.forward(p, &x, &mut w);
            w.q.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>()
        };
        net.forward(&p, &x, &mut ws);
        let mut g = vec![0.0; p.len()];
        net.backward(&p, &mut ws, &r, &mut g);
        check(
            if noisy { "noisy pass" } else { "acting pass" },
            &g,
            &central_differences(&p, 1e-6, loss),
        );
    }
}

/// The training loss as the learner builds it: quantile Huber between the taken action's
/// quantiles and fixed targets, gradient through the network.
#[test]
fn iqn_loss_gradient_matches_finite_differences() {
    let cfg = small();
    let net = IqnNet::new(&cfg).unwrap();
    let p: Vec<f64> = net.init(Key::new(6));
    let (batch, n, a) = (4, cfg.num_quantiles, cfg.actions);
    let x = rand(Key::new(7), batch * cfg.state_dim(), 1.0);
    let actions = [0usize, 2, 1, 2];
    let target = rand(Key::new(8), batch * n, 3.0);
    let weights = [1.0, 0.5, 1.0, 0.25];
    let mut ws = IqnWork::<f64>::default();
    ws.draw(&net, Key::new(9), batch, n, true);
    let pred_of =
        |q: &[f64]| -> Vec<f64> { (0..batch * n).map(|k| q[k * a + actions[k / n]]).collect() };
    let base = ws.clone();
    let loss = |p: &[f64]| {
        let mut w = base.clone();
        net.forward(p, &x, &mut w);
        let pred = pred_of(&w.q);
        let mut g = vec![0.0; batch * n];
        quantile_huber(&pred, &w.taus, &target, &weights, 1.0, batch, &mut g, None)
    };
    net.forward(&p, &x, &mut ws);
    let pred = pred_of(&ws.q);
    let mut gp = vec![0.0; batch * n];
    quantile_huber(&pred, &ws.taus, &target, &weights, 1.0, batch, &mut gp, None);
    let mut dq = vec![0.0; batch * n * a];
    for k in 0..batch * n {
        dq[k * a + actions[k / n]] = gp[k];
    }
    let mut g = vec![0.0; p.len()];
    net.backward(&p, &mut ws, &dq, &mut g);
    check("IQN loss", &g, &central_differences(&p, 1e-6, loss));
}

/// Settings that learn the one-state task below in a few hundred steps.
fn bandit_cfg() -> IqnConfig {
    let mut cfg = small();
    cfg.layer = 32;
    cfg.batch_size = 16;
    cfg.capacity = 256;
    cfg.lr = 5e-3;
    cfg.epsilon = 0.0;
    cfg
}

/// A one-state task: action 1 pays 1, the others 0, episodes of one step (terminated).
fn bandit_buffer(cfg: &IqnConfig, steps: usize, key: Key) -> FrameReplay {
    let mut buf = FrameReplay::new(cfg.replay()).unwrap();
    let mut r = key.rng();
    let frame = vec![1.0f32; cfg.frame_dim];
    for _ in 0..steps {
        buf.begin_episode();
        let a = r.below(cfg.actions as u32);
        buf.push(&frame, a, if a == 1 { 1.0 } else { 0.0 }, true, false).unwrap();
        buf.push_final(&frame).unwrap();
    }
    buf
}

#[test]
fn learns_the_paying_action_and_follows_the_update_rules() {
    let cfg = bandit_cfg();
    let mut l = IqnLearner::new(cfg.clone(), Key::new(10)).unwrap();
    let mut empty = vec![FrameReplay::new(cfg.replay()).unwrap()];
    assert_eq!(l.train_step(&mut empty, Key::new(0)).unwrap(), None, "not ready: no step");
    assert_eq!(l.updates, 0);
    let mut bufs = vec![bandit_buffer(&cfg, 100, Key::new(11))];
    // Soft update after a step: θ⁻ = τ θ + (1 − τ) θ⁻.
    let before = l.target.clone();
    l.train_step(&mut bufs, Key::new(1)).unwrap().unwrap();
    for ((t, b), p) in l.target.iter().zip(&before).zip(&l.params) {
        let want = cfg.tau as f32 * p + (1.0 - cfg.tau as f32) * b;
        assert!((t - want).abs() <= 1e-6 * want.abs().max(1.0));
    }
    // Hard copy at epochs that are multiples of sync_epochs only.
    l.start_epoch(1);
    assert_ne!(l.target, l.params);
    l.start_epoch(200);
    assert_eq!(l.target, l.params);
    for step in 0..300 {
        l.train_step(&mut bufs, Key::new(100 + step)).unwrap();
    }
    let state = vec![1.0f32; cfg.state_dim()];
    let mut acts = [0u32; 8];
    l.act(&state.repeat(8), Key::new(7), &mut acts).unwrap();
    assert!(l.act(&state, Key::new(7), &mut acts).is_err(), "one state for eight actions");
    assert!(acts.iter().all(|&a| a == 1), "greedy actions {acts:?}");
    // ε schedule: 0.6 (1 − 0.0005)^1000 after 1000 epochs.
    let mut e = IqnLearner::new(IqnConfig::sorrel(4, 4), Key::new(0)).unwrap();
    for _ in 0..1000 {
        e.end_epoch();
    }
    assert!((e.epsilon - 0.6 * (1.0f64 - 0.0005).powi(1000)).abs() < 1e-12);
}

#[test]
fn bad_settings_are_errors() {
    let mut c = small();
    c.gamma = 1.5;
    let e = IqnLearner::new(c, Key::new(0)).unwrap_err();
    assert!(e.to_string().contains("gamma = 1.5"), "{e}");
    let mut c = small();
    c.actions = 1;
    assert!(IqnNet::new(&c).is_err());
}

/// The options sorrel only claims: n-step targets and prioritised replay, through the learner.
#[test]
fn n_step_and_prioritised_replay_train_and_update_priorities() {
    let mut cfg = bandit_cfg();
    cfg.n_step = 3;
    cfg.prioritized = Some(kestrel_replay::Prioritized::default());
    let mut l = IqnLearner::new(cfg.clone(), Key::new(12)).unwrap();
    let mut bufs = vec![bandit_buffer(&cfg, 100, Key::new(13))];
    let before = bufs[0].snapshot();
    for step in 0..300 {
        l.train_step(&mut bufs, Key::new(200 + step)).unwrap().unwrap();
    }
    let after = bufs[0].snapshot();
    let pr = |s: &kestrel_replay::FrameReplaySnapshot| {
        s.arrays.iter().find(|a| a.0 == "priority").unwrap().1.clone()
    };
    assert_ne!(pr(&before), pr(&after), "priorities follow the TD errors");
    let state = vec![1.0f32; cfg.state_dim()];
    let mut acts = [0u32; 8];
    l.act(&state.repeat(8), Key::new(8), &mut acts).unwrap();
    assert!(acts.iter().all(|&a| a == 1), "greedy actions {acts:?}");
}
