//! The online loop end to end: both profiles, every policy and field, exact resume from a
//! checkpoint, identical results on 1 and 2 threads, and configs refused with the field named.

use kestrel_actdyn::config::{FieldKind, MetricKind, PolicyKind, ProfileKind};
use kestrel_run::runs::actdyn::{ActdynConfig, ActdynRun};

/// A small E2 (RBF, iCEM) for fast tests: fewer samples and iterations, short window.
fn small_e2(profile: ProfileKind) -> ActdynConfig {
    let mut c = ActdynConfig::e2();
    c.profile = profile;
    c.policy.num_samples = 12;
    c.policy.num_elites = 4;
    c.policy.iterations = 3;
    c.policy.horizon = 5;
    c.train.window = 8;
    c.train.k_steps = 3;
    c.eval.episodes = 2;
    c.eval.steps = 60;
    c.eval.num_starts = 10;
    c.eval.num_samples = 8;
    c
}

fn run_steps(c: &ActdynConfig, n: u64) -> ActdynRun {
    let mut r = ActdynRun::new(c.clone()).unwrap();
    for _ in 0..n {
        r.step().unwrap();
    }
    r
}

#[test]
fn e1_faithful_trains_from_step_21_with_finite_losses() {
    let mut c = ActdynConfig::e1();
    c.steps = 80;
    let mut r = ActdynRun::new(c).unwrap();
    for t in 1..=80u64 {
        let rec = r.step().unwrap();
        assert_eq!(rec.step, t);
        assert_eq!(rec.train.is_some(), t > 20, "training at step {t}");
        if let Some(tr) = rec.train {
            assert!(tr.terms.loss.is_finite());
            // The clip at 10 is active (gradient norms are O(10³)).
            assert!(tr.clip_coef < 1.0);
        }
        assert!(rec.action.iter().all(|a| a.abs() <= 0.1));
    }
    let data = r.validation_data();
    let e = r.evaluate(&data);
    assert_eq!(e.obs_r2_by_k.len(), 11);
    assert!(e.latent_r2.iter().all(|v| v.is_finite()));
}

#[test]
fn every_policy_field_and_profile_runs() {
    for profile in [ProfileKind::Faithful, ProfileKind::Fixed] {
        for field in [
            FieldKind::LimitCycle,
            FieldKind::DoubleLimitCycle,
            FieldKind::VanDerPol,
            FieldKind::Duffing,
            FieldKind::Snowman,
        ] {
            for policy in [PolicyKind::Random, PolicyKind::Lazy, PolicyKind::Step] {
                let mut c = ActdynConfig::e1();
                c.profile = profile;
                c.env.field = field;
                c.policy.kind = policy;
                c.train.window = 6;
                c.train.k_steps = 2;
                let r = run_steps(&c, 12);
                assert!(r.params.iter().all(|v| v.is_finite()), "{profile:?} {field:?} {policy:?}");
            }
        }
        let mut c = small_e2(profile);
        for metric in [MetricKind::AOptimality, MetricKind::DOptimality, MetricKind::ActionCost] {
            c.policy.metric = metric;
            let mut r = ActdynRun::new(c.clone()).unwrap();
            for _ in 0..12 {
                let rec = r.step().unwrap();
                assert!(rec.plan_cost.unwrap().is_finite(), "{profile:?} {metric:?}");
            }
        }
    }
}

#[test]
fn every_observation_model_runs() {
    use kestrel_actdyn::config::{ObsKind, ObsNoiseKind};
    for (obs, noise_kind, noise, dim) in [
        (ObsKind::Linear, ObsNoiseKind::Gaussian, 0.1, 50),
        (ObsKind::Identity, ObsNoiseKind::Gaussian, 0.05, 2),
        (ObsKind::Mlp, ObsNoiseKind::Gaussian, 0.0, 30),
        (ObsKind::LogLinear, ObsNoiseKind::Poisson, 0.0, 50),
    ] {
        let mut c = ActdynConfig::e1();
        c.env.obs = obs;
        c.env.obs_noise_kind = noise_kind;
        c.env.obs_noise = noise;
        c.env.obs_dim = dim;
        c.model.obs_dim = dim;
        if noise_kind == ObsNoiseKind::Poisson {
            c.model.likelihood = kestrel_actdyn::model::LikelihoodKind::Poisson;
        }
        c.train.window = 6;
        c.train.k_steps = 2;
        let r = run_steps(&c, 12);
        assert!(r.params.iter().all(|v| v.is_finite()), "{obs:?}");
    }
}

#[test]
fn multi_attractor_field_runs() {
    let mut c = ActdynConfig::e1();
    c.env.field = FieldKind::MultiAttractor;
    c.train.window = 6;
    c.train.k_steps = 2;
    let r = run_steps(&c, 10);
    assert!(r.latent().iter().all(|v| v.is_finite()));
}

#[test]
fn resume_from_a_checkpoint_continues_exactly() {
    for c in [ActdynConfig { steps: 40, ..ActdynConfig::e1() }, small_e2(ProfileKind::Fixed)] {
        let whole = run_steps(&c, 40);
        let half = run_steps(&c, 25);
        let dir = std::env::temp_dir().join(format!("kestrel-actdyn-ck-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let stamp = kestrel_nn::Stamp::new("actdyn", serde_json::json!({"test": 1}), "test");
        half.save_checkpoint(&dir, &stamp).unwrap();
        let set = kestrel_nn::checkpoint_set(&dir, &stamp).unwrap().expect("a complete set");
        assert_eq!(set.step, 25);
        let mut resumed = ActdynRun::load_checkpoint(c.clone(), &set.path).unwrap();
        assert_eq!(resumed.steps_done(), 25);
        for _ in 25..40 {
            resumed.step().unwrap();
        }
        assert_eq!(resumed.params, whole.params, "{:?}", c.policy.kind);
        assert_eq!(resumed.belief(), whole.belief());
        assert_eq!(resumed.latent(), whole.latent());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn one_and_two_threads_give_the_same_run() {
    let c = small_e2(ProfileKind::Faithful);
    let go = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let r = run_steps(&c, 30);
            let data = r.validation_data();
            (r.params.clone(), r.evaluate(&data))
        })
    };
    let (p1, e1) = go(1);
    let (p2, e2) = go(2);
    assert_eq!(p1, p2);
    assert_eq!(serde_json::to_string(&e1).unwrap(), serde_json::to_string(&e2).unwrap());
}

#[test]
fn bad_configs_name_the_field() {
    type Edit = Box<dyn Fn(&mut ActdynConfig)>;
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|c| c.env.dt = f64::NAN), "env.dt"),
        (Box::new(|c| c.env.obs_dim = 7), "model.obs_dim"),
        (Box::new(|c| c.policy.kind = PolicyKind::Icem), "policy.metric"),
        (Box::new(|c| c.train.k_steps = 30), "train.k_steps"),
        (Box::new(|c| c.eval.steps = 5), "eval.steps"),
        (Box::new(|c| c.steps = 0), "steps"),
        (Box::new(|c| c.eval.num_samples = 0), "eval.num_samples"),
    ];
    for (f, field) in cases {
        let mut c = ActdynConfig::e1();
        f(&mut c);
        let e = ActdynRun::new(c).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    let mut c = ActdynConfig::e2();
    c.policy.num_elites = 100;
    let e = ActdynRun::new(c).unwrap_err().to_string();
    assert!(e.contains("elites"), "{e}");
}

#[test]
fn an_ensemble_plans_on_disagreement_and_resumes_exactly() {
    let mut c = small_e2(ProfileKind::Fixed);
    c.train.ensemble = 3;
    c.policy.metric = MetricKind::EnsembleDisagreement;
    let whole = run_steps(&c, 20);
    let half = run_steps(&c, 12);
    let dir = std::env::temp_dir().join(format!("kestrel-actdyn-ens-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let stamp = kestrel_nn::Stamp::new("actdyn", serde_json::json!({"test": 2}), "test");
    half.save_checkpoint(&dir, &stamp).unwrap();
    let set = kestrel_nn::checkpoint_set(&dir, &stamp).unwrap().unwrap();
    let mut resumed = ActdynRun::load_checkpoint(c.clone(), &set.path).unwrap();
    for _ in 12..20 {
        let rec = resumed.step().unwrap();
        assert!(rec.plan_cost.unwrap() <= 0.0, "disagreement is a negative variance");
    }
    assert_eq!(resumed.params, whole.params);
    std::fs::remove_dir_all(&dir).unwrap();
    // Disagreement needs members.
    c.train.ensemble = 1;
    assert!(ActdynRun::new(c).unwrap_err().to_string().contains("policy.metric"));
}

#[test]
fn the_perturbation_switch_moves_only_the_dynamics() {
    for (profile, moved) in [(ProfileKind::Faithful, true), (ProfileKind::Fixed, false)] {
        let mut c = ActdynConfig::e1();
        c.profile = profile;
        c.train.lr = 0.0;
        c.train.window = 6;
        c.train.k_steps = 2;
        let start = ActdynRun::new(c.clone()).unwrap();
        let r = run_steps(&c, 10);
        let dynamics = r.model().dynamics_range();
        for (i, (a, b)) in start.params.iter().zip(&r.params).enumerate() {
            let expect_move = moved && dynamics.contains(&i);
            assert_eq!(a != b, expect_move, "{profile:?}: parameter {i}");
        }
    }
}

#[test]
fn offline_retraining_lowers_the_loss_and_ignores_threads() {
    use kestrel_run::runs::actdyn_retrain::{OfflineConfig, retrain};
    let mut c = ActdynConfig::e1();
    c.save_every = 1;
    let mut r = run_steps(&c, 120);
    let (data, z) = r.take_transitions();
    assert_eq!((data.len(), z.len()), (120, 240));
    let off = OfflineConfig {
        epochs: 15,
        chunk: 30,
        batch_size: 2,
        lr: 1e-3,
        ..OfflineConfig::default()
    };
    let go = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut p = r.params.clone();
            let mut losses = Vec::new();
            retrain(r.model(), &mut p, &data, &off, |e| {
                losses.push(e.loss_per_t);
                true
            })
            .unwrap();
            (p, losses)
        })
    };
    let (p1, l1) = go(1);
    let (p2, l2) = go(2);
    assert_eq!((p1, &l1), (p2, &l2));
    assert!(l1.last().unwrap() < &l1[0], "{l1:?}");
    let e = retrain(
        r.model(),
        &mut r.params.clone(),
        &data,
        &OfflineConfig { chunk: 500, ..off },
        |_| true,
    );
    assert!(e.unwrap_err().to_string().contains("offline.chunk"));
}

/// The goal-distance and composite objectives (the reference's `GoalDistanceMetric` and
/// `CompositeMetric`): a composite of one term of weight 1 plans exactly as that metric; the
/// reference's D-optimality + action cost (0.1, 5) and goal distance run; bad terms are
/// refused naming their key.
#[test]
fn goal_distance_and_composite_objectives_plan_and_are_checked() {
    use kestrel_actdyn::config::Term;
    let base = small_e2(ProfileKind::Fixed);
    let plain = |m: MetricKind| {
        let mut c = base.clone();
        c.policy.metric = m;
        c
    };
    let composite = |terms: &[(MetricKind, f64)]| {
        let mut c = base.clone();
        c.policy.metric = MetricKind::Composite;
        c.policy.terms = terms.iter().map(|&(metric, weight)| Term { metric, weight }).collect();
        c
    };
    for m in [MetricKind::DOptimality, MetricKind::ActionCost, MetricKind::GoalDistance] {
        let (mut a, mut b) = (run_steps(&plain(m), 12), run_steps(&composite(&[(m, 1.0)]), 12));
        for _ in 0..6 {
            let (x, y) = (a.step().unwrap(), b.step().unwrap());
            assert_eq!((x.action, x.plan_cost), (y.action, y.plan_cost), "{m:?}");
        }
        assert_eq!(a.params, b.params, "{m:?}");
    }
    // The reference's experiment objective, and a goal: the weighted sum is what is planned.
    let mut c = composite(&[(MetricKind::DOptimality, 0.1), (MetricKind::ActionCost, 5.0)]);
    c.policy.goal = [1.0, -1.0];
    let mut r = run_steps(&c, 12);
    assert!(r.step().unwrap().plan_cost.unwrap().is_finite());
    let mut g = plain(MetricKind::GoalDistance);
    g.policy.goal = [1.5, 0.5];
    let mut r = run_steps(&g, 12);
    assert!(r.step().unwrap().plan_cost.unwrap() >= 0.0, "a sum of distances");

    let bad: Vec<(ActdynConfig, &str)> = vec![
        (composite(&[]), "policy.terms"),
        (composite(&[(MetricKind::Composite, 1.0)]), "policy.terms[0].metric"),
        (
            composite(&[(MetricKind::ActionCost, 1.0), (MetricKind::ActionCost, f64::NAN)]),
            "policy.terms[1].weight",
        ),
        (
            {
                let mut c = plain(MetricKind::ActionCost);
                c.policy.terms = vec![Term { metric: MetricKind::ActionCost, weight: 1.0 }];
                c
            },
            "policy.terms",
        ),
        (
            {
                let mut c = plain(MetricKind::GoalDistance);
                c.policy.goal = [f64::INFINITY, 0.0];
                c
            },
            "policy.goal",
        ),
        (
            {
                let mut c = composite(&[
                    (MetricKind::ActionCost, 1.0),
                    (MetricKind::EnsembleDisagreement, 1.0),
                ]);
                c.train.ensemble = 1;
                c
            },
            "policy.terms[1].metric",
        ),
        (
            {
                let mut c = ActdynConfig::e1();
                c.policy.kind = PolicyKind::Icem;
                c.policy.metric = MetricKind::GoalDistance;
                c
            },
            "policy.metric",
        ),
    ];
    for (c, field) in bad {
        let e = ActdynRun::new(c).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}
