//! Helpers shared by the actdyn golden tests: fixture loading and closeness checks.
#![allow(dead_code)]

use kestrel_actdyn::model::{ElboNoise, SeqVae};
use kestrel_actdyn::rbf::{LogLinearDecoder, RbfDynamics, RbfGrid};
use kestrel_testkit::flat;
use serde_json::Value;

/// `|got − want| ≤ rel·|want| + abs` element-wise, the first failure named.
pub fn assert_close(what: &str, got: &[f64], want: &[f64], rel: f64, abs: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        assert!(err <= rel * w.abs() + abs, "{what}[{k}]: got {g:e}, want {w:e} (err {err:e})");
    }
}

/// Relative error at most `tol`, with a floor of 1e-6 of the largest expected magnitude
/// (entries that are zero up to rounding are compared absolutely at that scale).
pub fn assert_rel(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let e = (a - b).abs() / b.abs().max(1e-6 * scale);
        assert!(e <= tol, "{what}[{i}]: got {a}, want {b} (relative error {e:.3e})");
    }
}

/// Every parameter of `m` from a fixture's `weights` (PyTorch names, layouts and order).
pub fn load_params(m: &SeqVae, weights: &Value) -> Vec<f64> {
    let mut p = vec![f64::NAN; m.num_params()];
    for t in m.tensors() {
        let v = flat(weights.get(&t.name).unwrap_or_else(|| panic!("fixture lacks {}", t.name)));
        m.set_tensor_values(&mut p, &t.name, &v).unwrap();
    }
    assert!(p.iter().all(|v| v.is_finite()), "every parameter loaded");
    p
}

/// The ELBO draws of a fixture (`eps_enc`, `mask`, `xi`) for S = 5, T = 20, K = 5.
pub fn noise_from(fx: &Value) -> ElboNoise {
    ElboNoise {
        num_samples: 5,
        steps: 20,
        k_steps: 5,
        eps: flat(&fx["eps_enc"]),
        mask: flat(&fx["mask"]),
        xi: fx["xi"].as_array().unwrap().iter().map(flat).collect(),
    }
}

/// RBF dynamics and decoder from a fixture's `model` block, on the fixture's own centre axis
/// (torch's linspace, a few ulps from `RbfGrid::new`'s).
pub fn model_of(m: &Value) -> (RbfDynamics, LogLinearDecoder) {
    let centres = flat(&m["centers"]);
    let axis: Vec<f64> = (0..25).map(|j| centres[2 * j + 1]).collect();
    let grid = RbfGrid::with_axis(
        axis,
        m["rbf_alpha"].as_f64().unwrap(),
        m["rbf_gamma"].as_f64().unwrap(),
    )
    .unwrap();
    let model = RbfDynamics::new(
        grid,
        flat(&m["rbf_weights"]),
        m["dt"].as_f64().unwrap(),
        m["is_residual"].as_bool().unwrap(),
    )
    .unwrap();
    (model, LogLinearDecoder::new(flat(&m["C_dec"]), flat(&m["b_dec"])).unwrap())
}
