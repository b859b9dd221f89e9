//! Adam, training, parallel trainees, checkpoints and configuration errors.

use kestrel_core::Key;
use kestrel_nn::{
    Activation, Adam, AdamState, Loss, MlpConfig, NnError, Sequential, Trainee, load_safetensors,
    save_safetensors, train_many,
};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-nn-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join("model.safetensors")
}

#[test]
fn adam_matches_the_definition_and_clips() {
    let adam = Adam::new(0.1);
    let mut st = AdamState::<f64>::new(3);
    let mut p = vec![1.0, -2.0, 0.5];
    let g = [0.5, -4.0, 1e-3];
    let norm = adam.step(&mut st, &mut p, &g).unwrap();
    assert!((norm - (0.25f64 + 16.0 + 1e-6).sqrt()).abs() < 1e-12);
    // Step 1: m̂ = g, v̂ = g², so each parameter moves by lr·g/(|g| + ε).
    for ((pi, p0), gi) in p.iter().zip([1.0, -2.0, 0.5]).zip(g) {
        let want = p0 - 0.1 * gi / (f64::abs(gi) + 1e-8);
        assert!((pi - want).abs() < 1e-12, "{pi} vs {want}");
    }
    // Step 2 by hand.
    let (m, v): (Vec<f64>, Vec<f64>) = (st.m.clone(), st.v.clone());
    let before = p.clone();
    adam.step(&mut st, &mut p, &g).unwrap();
    for i in 0..3 {
        let m2 = 0.9 * m[i] + 0.1 * g[i];
        let v2 = 0.999 * v[i] + 0.001 * g[i] * g[i];
        let want =
            before[i] - 0.1 * (m2 / (1.0 - 0.81)) / ((v2 / (1.0 - 0.999f64.powi(2))).sqrt() + 1e-8);
        assert!((p[i] - want).abs() < 1e-12, "step 2 [{i}]: {} vs {want}", p[i]);
    }
    // Clipping: the gradient enters the moments scaled to norm 1.
    let clip = Adam { max_grad_norm: Some(1.0), ..Adam::new(0.1) };
    let mut st = AdamState::<f64>::new(2);
    let mut p = vec![0.0, 0.0];
    let n = clip.step(&mut st, &mut p, &[3.0, 4.0]).unwrap();
    assert_eq!(n, 5.0);
    let s = 1.0 / (5.0 + 1e-6);
    assert!((st.m[0] - 0.1 * 3.0 * s).abs() < 1e-12 && (st.m[1] - 0.1 * 4.0 * s).abs() < 1e-12);
}

#[test]
fn adam_flushes_subnormal_moments_and_keeps_the_parameters() {
    // A parameter that gets one gradient and then zeros (a dead unit): its first moment
    // falls by β₁ a step and would sit in the subnormals for good (slow on Intel cores).
    // With the flush it reaches exactly 0; the parameters equal those of the plain
    // recurrence, which keeps the subnormal moments.
    let adam = Adam::new(1e-3);
    let mut st = AdamState::<f32>::new(3);
    let mut p = vec![0.5f32, -0.25, 1e-3];
    let (mut m, mut v, mut want) = ([0f32; 3], [0f32; 3], p.clone());
    let mut saw_subnormal = false;
    for t in 1..=2_000 {
        let g = if t == 1 { [1e-3f32, -2e-4, 3e-5] } else { [0.0; 3] };
        adam.step(&mut st, &mut p, &g).unwrap();
        let bc1 = 1.0 - 0.9f64.powi(t);
        let bc2 = 1.0 - 0.999f64.powi(t);
        for i in 0..3 {
            m[i] = 0.9 * m[i] + 0.1 * g[i];
            v[i] = 0.999 * v[i] + 0.001 * g[i] * g[i];
            saw_subnormal |= m[i] != 0.0 && m[i].abs() < f32::MIN_POSITIVE;
            let step = (1e-3 / bc1) as f32;
            want[i] -= step * m[i] / (v[i].sqrt() * (1.0 / bc2.sqrt()) as f32 + 1e-8);
        }
        for x in st.m.iter().chain(&st.v) {
            assert!(*x == 0.0 || x.abs() >= f32::MIN_POSITIVE, "step {t}: moment {x:e}");
        }
    }
    assert!(saw_subnormal, "the plain recurrence never went subnormal");
    assert_eq!(st.m, vec![0.0; 3]);
    assert_eq!(p, want);
    // With ε = 0 a zero moment moves nothing (no 0/0).
    let mut st = AdamState::<f32>::new(1);
    let mut p = vec![2.0f32];
    Adam { eps: 0.0, ..Adam::new(0.1) }.step(&mut st, &mut p, &[0.0]).unwrap();
    assert_eq!(p, vec![2.0]);
}

#[test]
fn non_finite_gradients_and_losses_change_nothing() {
    let adam = Adam::new(0.1);
    let mut st = AdamState::<f32>::new(2);
    let mut p = vec![1.0f32, 2.0];
    let e = adam.step(&mut st, &mut p, &[f32::NAN, 1.0]).unwrap_err();
    assert!(matches!(e, NnError::NonFinite { what: "gradient norm", .. }), "{e}");
    assert_eq!((p, st.t, st.m), (vec![1.0, 2.0], 0, vec![0.0, 0.0]));

    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[2, 4, 1])).unwrap();
    let mut t = Trainee::new(&net, Key::new(1));
    let before = t.params.clone();
    let e = net.train_step(&mut t, &adam, &[1.0, 2.0], &[f32::INFINITY], Loss::Mse).unwrap_err();
    assert!(e.to_string().contains("non-finite loss"), "{e}");
    assert_eq!(t.params, before);
    assert_eq!(t.opt.t, 0);
    assert!(
        Adam { beta1: 1.0, ..Adam::new(0.1) }.validate().unwrap_err().to_string().contains("beta1")
    );
    assert!(Adam { max_grad_norm: Some(0.0), ..Adam::new(0.1) }.validate().is_err());
}

#[test]
fn an_mlp_learns_a_smooth_function() {
    // y = sin(3x₀) + x₁², 256 points; MSE falls by more than 20x in 600 Adam steps.
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[2, 64, 64, 1])).unwrap();
    let mut r = Key::new(2).rng();
    let x: Vec<f32> = (0..512).map(|_| 2.0 * r.uniform_f32() - 1.0).collect();
    let y: Vec<f32> = x.chunks(2).map(|p| (3.0 * p[0]).sin() + p[1] * p[1]).collect();
    let mut t = Trainee::new(&net, Key::new(3));
    let adam = Adam::new(3e-3);
    let first = net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap();
    let mut last = first;
    for _ in 0..600 {
        last = net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap();
    }
    assert!(last < first / 20.0, "loss {first} -> {last}");
}

#[test]
fn trainees_in_parallel_equal_sequential_on_any_thread_count() {
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[8, 32, 32, 3])).unwrap();
    let adam = Adam { max_grad_norm: Some(1.0), ..Adam::new(1e-3) };
    let data: Vec<(Vec<f32>, Vec<f32>)> = (0..5)
        .map(|i| {
            let mut r = Key::new(100 + i).rng();
            let x = (0..16 * 8).map(|_| r.uniform_f32()).collect();
            let y = (0..16 * 3).map(|_| r.uniform_f32()).collect();
            (x, y)
        })
        .collect();
    let batches: Vec<(&[f32], &[f32])> = data.iter().map(|(x, y)| (&x[..], &y[..])).collect();
    let fresh = || (0..5).map(|i| Trainee::new(&net, Key::new(i))).collect::<Vec<_>>();
    let mut seq = fresh();
    for _ in 0..3 {
        for (t, (x, y)) in seq.iter_mut().zip(&batches) {
            net.train_step(t, &adam, x, y, Loss::Mse).unwrap();
        }
    }
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut par = fresh();
        pool.install(|| {
            for _ in 0..3 {
                for r in train_many(&net, &mut par, &adam, &batches, Loss::Mse) {
                    r.unwrap();
                }
            }
        });
        for (a, b) in par.iter().zip(&seq) {
            assert_eq!(a.params, b.params, "{threads} thread(s)");
        }
    }
}

#[test]
fn checkpoints_round_trip_and_resume_exactly() {
    let net = Sequential::<f32>::mlp(&MlpConfig::relu(&[3, 5, 2])).unwrap();
    let adam = Adam::new(1e-2);
    let (x, y) = ([0.1f32, 0.2, 0.3, -0.4, 0.5, -0.6], [1.0f32, 0.0, 0.0, 1.0]);
    let mut t = Trainee::new(&net, Key::new(4));
    for _ in 0..3 {
        net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap();
    }
    let path = tmp("resume");
    net.save_trainee(&path, &t, &[("note", "three steps".into())]).unwrap();
    let (mut back, meta) = net.load_trainee(&path).unwrap();
    assert_eq!(meta["note"], "three steps");
    assert_eq!((&back.params, &back.opt), (&t.params, &t.opt));
    for _ in 0..2 {
        net.train_step(&mut t, &adam, &x, &y, Loss::Mse).unwrap();
        net.train_step(&mut back, &adam, &x, &y, Loss::Mse).unwrap();
    }
    assert_eq!(back.params, t.params);

    net.save(&path, &t.params, &[]).unwrap();
    assert_eq!(net.load(&path).unwrap(), t.params);
    let names: Vec<String> =
        load_safetensors::<f32>(&path).unwrap().tensors.into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    // The wrong architecture or dtype, and a damaged file, are errors naming the problem.
    let other = Sequential::<f32>::mlp(&MlpConfig::relu(&[3, 6, 2])).unwrap();
    let e = other.load(&path).unwrap_err().to_string();
    assert!(e.contains("0.weight") && e.contains("[3, 5]") && e.contains("[3, 6]"), "{e}");
    let e = Sequential::<f64>::mlp(&MlpConfig::relu(&[3, 5, 2])).unwrap().load(&path).unwrap_err();
    assert!(e.to_string().contains("dtype F32, expected F64"), "{e}");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
    let e = net.load(&path).unwrap_err().to_string();
    assert!(e.contains("data_offsets"), "{e}");
    std::fs::write(&path, b"\xff\xff\xff\xff\xff\xff\xff\x7f{").unwrap();
    assert!(net.load(&path).unwrap_err().to_string().contains("header length"));
    let e = save_safetensors(&path, &[("w".into(), vec![2, 2], &[1.0f32, 2.0][..])], &[]);
    assert!(e.unwrap_err().to_string().contains("shape [2, 2] holds 4 values, given 2"));
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[test]
fn configs_and_shapes_are_checked() {
    let cfg =
        MlpConfig::from_json(&serde_json::json!({"sizes": [4, 8, 2], "hidden": "tanh"})).unwrap();
    assert_eq!(cfg.hidden, Activation::Tanh);
    assert_eq!(Sequential::<f32>::mlp(&cfg).unwrap().num_params(), 4 * 8 + 8 + 8 * 2 + 2);
    let e =
        MlpConfig::from_json(&serde_json::json!({"sizes": [4, 2], "hiden": "tanh"})).unwrap_err();
    assert!(e.to_string().contains("hiden"), "{e}");
    let e =
        MlpConfig::from_json(&serde_json::json!({"sizes": [4, 2], "hidden": "swish"})).unwrap_err();
    assert!(e.to_string().contains("swish"), "{e}");
    assert!(Sequential::<f32>::mlp(&MlpConfig::relu(&[4])).is_err());
    assert!(Sequential::<f32>::mlp(&MlpConfig::relu(&[4, 0, 2])).is_err());
}
