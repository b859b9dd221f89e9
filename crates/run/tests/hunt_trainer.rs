//! The treasure-hunt trainer: thread-count independence, exact resume, bookkeeping.

use kestrel_envs::treasure::{TreasureObs, TreasureParams};
use kestrel_run::runs::hunt::{HuntRunConfig, HuntTrainer, TurnOrder};

fn small(order: TurnOrder) -> HuntRunConfig {
    let world = TreasureParams {
        height: 9,
        width: 9,
        spawn_prob: 0.05,
        obs: TreasureObs::Rgb,
        max_turns: 20,
        ..TreasureParams::default()
    };
    let mut c = HuntRunConfig::default().with_frames_of(&world);
    c.env = world;
    c.num_worlds = 3;
    c.agent.layer = 24;
    c.agent.batch_size = 9;
    c.agent.capacity = 128;
    c.agent.sync_epochs = 2;
    c.updates_per_turn = 0.5;
    c.order = order;
    c
}

fn run(cfg: &HuntRunConfig, threads: usize, epochs: u64) -> (HuntTrainer, Vec<String>) {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let mut h = HuntTrainer::new(cfg.clone(), 7).unwrap();
        let stats = (0..epochs).map(|_| format!("{:?}", h.run_epoch(|_| {}).unwrap())).collect();
        (h, stats)
    })
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    for order in [TurnOrder::Sequential, TurnOrder::Simultaneous] {
        let cfg = small(order);
        let (h1, s1) = run(&cfg, 1, 4);
        let (h2, s2) = run(&cfg, 2, 4);
        assert_eq!(s1, s2, "{order:?}");
        for (a, b) in h1.agents.iter().zip(&h2.agents) {
            assert_eq!(a.learner.params, b.learner.params);
            assert_eq!(a.learner.target, b.learner.target);
        }
        // Learning happened: gradient steps were taken and reported.
        assert!(h1.agents.iter().all(|a| a.learner.updates > 0));
        assert!(s1.last().unwrap().contains("Some("), "{}", s1.last().unwrap());
    }
}

#[test]
fn a_resumed_run_continues_exactly() {
    let cfg = small(TurnOrder::Sequential);
    let (mut whole, _) = run(&cfg, 1, 2);
    let dir = std::env::temp_dir().join(format!("kestrel-hunt-ckpt-{}", std::process::id()));
    let stamp = kestrel_nn::Stamp::new("hunt", Default::default(), "test");
    whole.save_checkpoint(&dir, &stamp).unwrap();
    // Saving again over an existing checkpoint works (swap, not partial overwrite).
    whole.save_checkpoint(&dir, &stamp).unwrap();
    assert_eq!(kestrel_nn::checkpoint_set(&dir, &stamp).unwrap().unwrap().step, 2);
    let mut resumed = HuntTrainer::load_checkpoint(cfg.clone(), &dir).unwrap();
    assert_eq!(resumed.epoch, 2);
    for _ in 0..2 {
        let a = whole.run_epoch(|_| {}).unwrap();
        let b = resumed.run_epoch(|_| {}).unwrap();
        assert_eq!(a, b);
    }
    for (a, b) in whole.agents.iter().zip(&resumed.agents) {
        assert_eq!(a.learner.params, b.learner.params);
        assert_eq!(a.learner.opt, b.learner.opt);
        assert_eq!(a.buffers, b.buffers);
    }
    // A checkpoint of another shape is refused with the tensor named.
    let mut other = cfg.clone();
    other.agent.layer = 25;
    let e = HuntTrainer::load_checkpoint(other, &dir).unwrap_err();
    assert!(e.to_string().contains("head.weight"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
    // The swap's previous set, beside it.
    let _ = std::fs::remove_dir_all(dir.with_extension("prev"));
}

#[test]
fn rewards_reported_are_the_rewards_stored() {
    let cfg = small(TurnOrder::Sequential);
    let mut h = HuntTrainer::new(cfg.clone(), 3).unwrap();
    let mut turns = 0;
    let stats = h
        .run_epoch(|w| {
            turns += 1;
            assert_eq!(w.len(), 3);
        })
        .unwrap();
    assert_eq!(turns, 20);
    for (a, ag) in h.agents.iter().enumerate() {
        let stored: f64 = ag
            .buffers
            .iter()
            .map(|b| {
                let s = b.snapshot();
                s.arrays.iter().find(|x| x.0 == "rewards").unwrap().1.iter().sum::<f64>()
            })
            .sum();
        assert!((stats.reward[a] * 3.0 - stored).abs() < 1e-9, "agent {a}");
        // 20 steps + the final observation per world; all 20 transitions are sampleable.
        assert!(ag.buffers.iter().all(|b| b.len() == 21 && b.num_transitions() == 20));
    }
    assert_eq!(stats.epsilon, vec![0.6, 0.6]);
    assert!((h.agents[0].learner.epsilon - 0.6 * (1.0 - 0.0005)).abs() < 1e-15);
}

#[test]
fn bad_settings_are_errors() {
    let mut c = small(TurnOrder::Sequential);
    c.agent.frame_dim = 10;
    let e = HuntTrainer::new(c, 0).unwrap_err();
    assert!(e.to_string().contains("agent.frame_dim = 10"), "{e}");
    let mut c = small(TurnOrder::Sequential);
    c.num_worlds = 0;
    assert!(HuntTrainer::new(c, 0).is_err());
}
