//! Finite-difference checks in f64 of every layer, activation and loss, and of whole MLPs:
//! analytic gradients (parameters and inputs) against central differences.

use kestrel_core::Key;
use kestrel_nn::{
    Act, Activation, Dense, Init, Layer, Loss, MlpConfig, NoisyDense, Sequential, quantile_huber,
};
use kestrel_testkit::central_differences;

fn rand(key: Key, n: usize, scale: f64) -> Vec<f64> {
    let mut r = key.rng();
    (0..n).map(|_| scale * (2.0 * r.uniform_f64() - 1.0)).collect()
}

/// Max relative error `|a − n| / max(|a|, |n|, floor)` over the entries.
fn check(what: &str, analytic: &[f64], numeric: &[f64], floor: f64, tol: f64) {
    assert_eq!(analytic.len(), numeric.len());
    let mut worst = (0.0f64, 0usize);
    for (i, (a, n)) in analytic.iter().zip(numeric).enumerate() {
        let e = (a - n).abs() / a.abs().max(n.abs()).max(floor);
        if e > worst.0 {
            worst = (e, i);
        }
    }
    assert!(
        worst.0 < tol,
        "{what}: relative error {:.2e} at {} (analytic {}, numeric {})",
        worst.0,
        worst.1,
        analytic[worst.1],
        numeric[worst.1]
    );
}

/// A layer under the scalar loss `Σ r ⊙ y` (so `dy = r`): parameter and input gradients.
fn layer_check(name: &str, layer: &dyn Layer<f64>, x: Vec<f64>, batch: usize) {
    let (i, o) = (layer.in_dim(), layer.out_dim());
    let mut p = vec![0.0; layer.num_params()];
    layer.init(Key::new(1), &mut p);
    // Non-zero biases too, so their gradient path is exercised with real values.
    let jitter = rand(Key::new(2), p.len(), 0.1);
    p.iter_mut().zip(jitter).for_each(|(a, b)| *a += b);
    let r = rand(Key::new(3), batch * o, 1.0);
    let loss = |p: &[f64], x: &[f64]| {
        let mut y = vec![0.0; batch * o];
        layer.forward(p, x, &mut y, batch);
        y.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>()
    };
    let mut y = vec![0.0; batch * o];
    layer.forward(&p, &x, &mut y, batch);
    let (mut dp, mut dx) = (vec![0.0; p.len()], vec![0.0; batch * i]);
    layer.backward(&p, &x, &y, &r, &mut dp, Some(&mut dx), batch);
    check(
        &format!("{name} input"),
        &dx,
        &central_differences(&x, 1e-6, |x| loss(&p, x)),
        1e-6,
        1e-6,
    );
    if !p.is_empty() {
        check(
            &format!("{name} params"),
            &dp,
            &central_differences(&p, 1e-6, |p| loss(p, &x)),
            1e-6,
            1e-6,
        );
    }
}

#[test]
fn dense_layer_gradients() {
    for init in [Init::TorchUniform, Init::TruncatedNormal, Init::LecunNormal, Init::GlorotUniform]
    {
        let d = Dense::new(7, 5, init).unwrap();
        layer_check("dense", &d, rand(Key::new(4), 6 * 7, 1.0), 6);
    }
}

#[test]
fn activation_gradients() {
    // Inputs kept at least 0.05 away from the kinks of ReLU, leaky ReLU and ELU.
    let x: Vec<f64> = rand(Key::new(5), 4 * 9, 2.0)
        .into_iter()
        .map(|v| if v.abs() < 0.05 { v + 0.1 } else { v })
        .collect();
    for f in [
        Activation::Identity,
        Activation::Relu,
        Activation::LeakyRelu(0.1),
        Activation::Tanh,
        Activation::Sigmoid,
        Activation::Softplus,
        Activation::Elu,
    ] {
        layer_check(&format!("{f:?}"), &Act { f, dim: 9 }, x.clone(), 4);
    }
}

#[test]
fn loss_gradients() {
    let y = rand(Key::new(6), 40, 3.0);
    let t = rand(Key::new(7), 40, 3.0);
    for loss in [Loss::Mse, Loss::Huber(1.0), Loss::Huber(0.3)] {
        // Keep |y − t| away from the Huber kink at δ.
        let y: Vec<f64> = y
            .iter()
            .zip(&t)
            .map(|(a, b)| {
                let d = match loss {
                    Loss::Huber(d) => d,
                    Loss::Mse => 10.0,
                };
                if ((a - b).abs() - d).abs() < 0.02 { a + 0.05 } else { *a }
            })
            .collect();
        let mut g = vec![0.0; 40];
        let v = loss.value_and_grad(&y, &t, &mut g);
        let mut scratch = vec![0.0; 40];
        let num = central_differences(&y, 1e-6, |y| loss.value_and_grad(y, &t, &mut scratch));
        check(&format!("{loss:?}"), &g, &num, 1e-8, 1e-6);
        assert!(v > 0.0);
    }
    // Values: MSE of (1, 3) vs (0, 0) is 5; Huber(1) is (0.5 + 2.5) / 2.
    let mut g = [0.0; 2];
    assert_eq!(Loss::Mse.value_and_grad(&[1.0, 3.0], &[0.0, 0.0], &mut g), 5.0);
    assert_eq!(g, [1.0, 3.0]);
    assert_eq!(Loss::Huber(1.0).value_and_grad(&[1.0, 3.0], &[0.0, 0.0], &mut g), 1.5);
    assert_eq!(g, [0.5, 0.5]);
}

/// Whole networks with mixed activations, under both losses: every parameter and the input.
#[test]
fn mlp_gradients_end_to_end() {
    for (sizes, hidden, output, loss) in [
        (vec![6, 9, 7, 4], Activation::Tanh, Activation::Identity, Loss::Mse),
        (vec![3, 8, 8, 2], Activation::Softplus, Activation::Sigmoid, Loss::Huber(0.5)),
        (vec![5, 12, 3], Activation::Elu, Activation::Tanh, Loss::Mse),
    ] {
        let cfg = MlpConfig { sizes: sizes.clone(), hidden, output, init: Init::TorchUniform };
        let net = Sequential::<f64>::mlp(&cfg).unwrap();
        let batch = 5;
        let p = net.init(Key::new(8));
        let x = rand(Key::new(9), batch * sizes[0], 1.0);
        let t = rand(Key::new(10), batch * sizes[sizes.len() - 1], 1.0);
        let mut ws = net.workspace(batch);
        let loss_at = |p: &[f64], x: &[f64]| {
            let mut ws = net.workspace(batch);
            let y = net.forward(p, x, &mut ws).to_vec();
            let mut g = vec![0.0; y.len()];
            loss.value_and_grad(&y, &t, &mut g)
        };
        let y = net.forward(&p, &x, &mut ws).to_vec();
        let mut dy = vec![0.0; y.len()];
        loss.value_and_grad(&y, &t, &mut dy);
        let (mut g, mut dx) = (vec![0.0; p.len()], vec![0.0; x.len()]);
        net.backward(&p, &mut ws, &dy, &mut g, Some(&mut dx));
        let name = format!("{sizes:?} {hidden:?}/{output:?} {loss:?}");
        // Central differences of an O(1) loss with h = 1e-6 carry ~1e-10 of rounding noise,
        // so entries below 1e-5 are compared in absolute terms against that floor.
        check(
            &format!("{name} params"),
            &g,
            &central_differences(&p, 1e-6, |p| loss_at(p, &x)),
            1e-5,
            1e-5,
        );
        check(
            &format!("{name} input"),
            &dx,
            &central_differences(&x, 1e-6, |x| loss_at(&p, x)),
            1e-5,
            1e-5,
        );
    }
}

#[test]
fn backward_accumulates_and_skips_the_input_gradient_when_not_asked() {
    let net = Sequential::<f64>::mlp(&MlpConfig::relu(&[4, 8, 3])).unwrap();
    let p = net.init(Key::new(11));
    let x = rand(Key::new(12), 2 * 4, 1.0);
    let dy = rand(Key::new(13), 2 * 3, 1.0);
    let mut ws = net.workspace(2);
    net.forward(&p, &x, &mut ws);
    let mut once = vec![0.0; p.len()];
    net.backward(&p, &mut ws, &dy, &mut once, None);
    let mut twice = vec![0.0; p.len()];
    net.backward(&p, &mut ws, &dy, &mut twice, None);
    net.backward(&p, &mut ws, &dy, &mut twice, None);
    for (a, b) in once.iter().zip(&twice) {
        assert!((2.0 * a - b).abs() < 1e-12);
    }
    assert!(once.iter().any(|g| *g != 0.0));
}

#[test]
fn f32_gradients_agree_with_f64() {
    let cfg = MlpConfig::relu(&[16, 32, 32, 4]);
    let (n64, n32) = (Sequential::<f64>::mlp(&cfg).unwrap(), Sequential::<f32>::mlp(&cfg).unwrap());
    let p64 = n64.init(Key::new(14));
    let p32: Vec<f32> = p64.iter().map(|&v| v as f32).collect();
    let x64 = rand(Key::new(15), 8 * 16, 1.0);
    let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
    let t64 = rand(Key::new(16), 8 * 4, 1.0);
    let t32: Vec<f32> = t64.iter().map(|&v| v as f32).collect();
    let (mut w64, mut w32) = (n64.workspace(8), n32.workspace(8));
    let y64 = n64.forward(&p64, &x64, &mut w64).to_vec();
    let y32 = n32.forward(&p32, &x32, &mut w32).to_vec();
    let (mut d64, mut d32) = (vec![0.0; 32], vec![0.0f32; 32]);
    Loss::Mse.value_and_grad(&y64, &t64, &mut d64);
    Loss::Mse.value_and_grad(&y32, &t32, &mut d32);
    let (mut g64, mut g32) = (vec![0.0; p64.len()], vec![0.0f32; p64.len()]);
    n64.backward(&p64, &mut w64, &d64, &mut g64, None);
    n32.backward(&p32, &mut w32, &d32, &mut g32, None);
    let scale = g64.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    for (a, b) in g64.iter().zip(&g32) {
        assert!((a - *b as f64).abs() < 1e-5 * scale, "{a} vs {b}");
    }
}

/// The noisy layer with fixed noise (training mode) and without (evaluation mode): μ, σ and
/// input gradients.
#[test]
fn noisy_dense_gradients() {
    let l = NoisyDense::new(6, 4, 0.3).unwrap();
    let batch = 5;
    let mut p = vec![0.0; l.num_params()];
    l.init(Key::new(1), &mut p);
    // σ away from its constant initial value, so every σ is exercised separately.
    p.iter_mut().zip(rand(Key::new(2), l.num_params(), 0.1)).for_each(|(a, b)| *a += b);
    let eps = rand(Key::new(3), l.noise_len(), 1.5);
    let x = rand(Key::new(4), batch * 6, 1.0);
    let r = rand(Key::new(5), batch * 4, 1.0);
    for noise in [Some(&eps[..]), None] {
        let loss = |p: &[f64], x: &[f64]| {
            let mut eff = vec![0.0; l.noise_len()];
            l.effective(p, noise, &mut eff);
            let mut y = vec![0.0; batch * 4];
            l.forward(&eff, x, &mut y, batch);
            y.iter().zip(&r).map(|(a, b)| a * b).sum::<f64>()
        };
        let mut eff = vec![0.0; l.noise_len()];
        l.effective(&p, noise, &mut eff);
        let (mut dp, mut dx) = (vec![0.0; p.len()], vec![0.0; batch * 6]);
        let mut scratch = vec![0.0; l.noise_len()];
        l.backward(&eff, noise, &x, &r, &mut dp, Some(&mut dx), batch, &mut scratch);
        let tag = if noise.is_some() { "noisy" } else { "eval" };
        check(
            &format!("{tag} input"),
            &dx,
            &central_differences(&x, 1e-6, |x| loss(&p, x)),
            1e-6,
            1e-6,
        );
        check(
            &format!("{tag} params"),
            &dp,
            &central_differences(&p, 1e-6, |p| loss(p, &x)),
            1e-6,
            1e-6,
        );
        if noise.is_none() {
            // Without noise σ has no effect and no gradient.
            assert!(dp[l.noise_len()..].iter().all(|&g| g == 0.0));
        }
    }
}

#[test]
fn quantile_huber_gradient_and_value() {
    let (batch, n, m) = (3, 4, 5);
    let pred = rand(Key::new(8), batch * n, 2.0);
    let taus: Vec<f64> = rand(Key::new(9), batch * n, 0.5).iter().map(|v| v + 0.5).collect();
    let target = rand(Key::new(10), batch * m, 2.0);
    let weights = [1.0, 0.0, 0.7];
    for kappa in [1.0, 0.4] {
        // Keep every |δ| away from 0 and κ (the kinks).
        let pred: Vec<f64> = (0..batch * n)
            .map(|k| {
                let b = k / n;
                let mut p = pred[k];
                while target[b * m..(b + 1) * m].iter().any(|t| {
                    let a = (t - p).abs();
                    a < 0.02 || (a - kappa).abs() < 0.02
                }) {
                    p += 0.037;
                }
                p
            })
            .collect();
        let mut g = vec![0.0; batch * n];
        let mut rows = vec![0.0; batch];
        let v =
            quantile_huber(&pred, &taus, &target, &weights, kappa, batch, &mut g, Some(&mut rows));
        let mut s = vec![0.0; batch * n];
        let num = central_differences(&pred, 1e-6, |p| {
            quantile_huber(p, &taus, &target, &weights, kappa, batch, &mut s, None)
        });
        check(&format!("quantile huber κ={kappa}"), &g, &num, 1e-8, 1e-6);
        // The value from its definition.
        let mut want = 0.0;
        for b in 0..batch {
            let mut row = 0.0;
            for i in 0..n {
                for j in 0..m {
                    let d: f64 = target[b * m + j] - pred[b * n + i];
                    let h = if d.abs() <= kappa {
                        0.5 * d * d
                    } else {
                        kappa * (d.abs() - 0.5 * kappa)
                    };
                    let ind = if d < 0.0 { 1.0 } else { 0.0 };
                    row += (taus[b * n + i] - ind).abs() * h / kappa;
                }
            }
            assert!((rows[b] - row).abs() < 1e-12, "row loss {b}");
            want += weights[b] * row;
        }
        want /= (batch * n * m) as f64;
        assert!((v - want).abs() < 1e-12, "{v} vs {want}");
        // A zero weight zeroes the row's gradient.
        assert!(g[n..2 * n].iter().all(|&x| x == 0.0));
    }
}

/// The GRU through time under `Σ r ⊙ h` over every output: parameter, input and initial-state
/// gradients (BPTT) against central differences, for 2 sequences of 5 steps.
#[test]
fn gru_backpropagation_through_time() {
    use kestrel_nn::Gru;
    let gru = Gru::new(3, 4).unwrap();
    let (steps, batch, hd) = (5, 2, 4);
    let mut p = vec![0.0; gru.num_params()];
    gru.init(Key::new(3), &mut p);
    let x = rand(Key::new(4), steps * batch * 3, 1.0);
    let h0 = rand(Key::new(5), batch * hd, 0.5);
    let r = rand(Key::new(6), steps * batch * hd, 1.0);
    let loss = |p: &[f64], x: &[f64], h0: &[f64]| {
        let mut c = gru.cache(steps, batch);
        gru.forward(p, x, Some(h0), &mut c);
        c.outputs().iter().zip(&r).map(|(a, b)| a * b).sum::<f64>()
    };
    let mut c = gru.cache(steps, batch);
    gru.forward(&p, &x, Some(&h0), &mut c);
    let mut dp = vec![0.0; p.len()];
    let mut dx = vec![0.0; x.len()];
    let mut dh0 = vec![0.0; h0.len()];
    gru.backward(&p, &x, &r, &mut c, &mut dp, Some(&mut dx), Some(&mut dh0));
    check("gru params", &dp, &central_differences(&p, 1e-6, |p| loss(p, &x, &h0)), 1e-3, 1e-6);
    check("gru input", &dx, &central_differences(&x, 1e-6, |x| loss(&p, x, &h0)), 1e-3, 1e-6);
    check("gru h0", &dh0, &central_differences(&h0, 1e-6, |h| loss(&p, &x, h)), 1e-3, 1e-6);
    // Gradients accumulate across passes.
    gru.forward(&p, &x, Some(&h0), &mut c);
    let before = dp.clone();
    gru.backward(&p, &x, &r, &mut c, &mut dp, None, None);
    for (a, b) in dp.iter().zip(&before) {
        assert!((a - 2.0 * b).abs() <= 1e-12 * b.abs().max(1.0));
    }
}
