//! Golden tests of the `asymexp` ALLO profile against fixtures made from `exp_alcl/allo.py`
//! (`../shared/data/allo-asymexp-golden`, README §3 (c)): every loss term, every gradient and
//! the chained updates, in float64 to 1e-9 relative (to each tensor's largest entry) and in
//! float32 to the smallest tolerance that float32's summation order allows (documented below).

use kestrel_agents::asymexp::{Asymexp, AsymexpConfig, PerturbationKind, VersionKind};
use kestrel_core::simd::Real;
use kestrel_testkit::{asymexp_fixture, tensor};
use serde_json::Value;

/// Float32 tolerance, relative to each tensor's largest entry. Kestrel sums in f64 and runs
/// one encoder pass over the distinct states; XLA sums in f32 in its own order, so float32
/// values differ by a few units in the last place of the largest terms (measured: ≤ 2e-6 on
/// the loss terms and gradients, ≤ 4e-6 on `allo`, a cancellation of terms of size ~20).
const F32_TOL: f64 = 1e-6;
/// Float64 tolerance (the bar).
const F64_TOL: f64 = 1e-9;

fn cfg_of(args: &Value, version: VersionKind) -> AsymexpConfig {
    let f = |k: &str| args[k].as_f64().unwrap_or_else(|| panic!("args.{k}"));
    let u = |k: &str| args[k].as_u64().unwrap_or_else(|| panic!("args.{k}")) as usize;
    let hidden = vec![u("hidden_dim"); u("num_hidden_layers") + 1];
    AsymexpConfig {
        version,
        num_eigenvectors: u("num_eigenvectors"),
        hidden,
        batch_size: u("batch_size"),
        lr: f("learning_rate"),
        discount: args.get("geometric_gamma").map_or_else(|| f("gamma"), |v| v.as_f64().unwrap()),
        duals_init: f("duals_initial_val"),
        init_dual_diag: args["init_dual_diag"].as_bool().unwrap(),
        barrier_init: f("barrier_initial_val"),
        max_barrier: f("max_barrier_coefs"),
        step_size_duals: f("step_size_duals"),
        step_size_duals_i: f("step_size_duals_I"),
        integral_decay: f("integral_decay"),
        perturbation: match args["perturbation_type"].as_str().unwrap() {
            "none" => PerturbationKind::None,
            "exponential" => PerturbationKind::Exponential,
            "squared" => PerturbationKind::Squared,
            "squared-null-grad" => PerturbationKind::SquaredNullGrad,
            other => panic!("perturbation {other}"),
        },
        graph_epsilon: f("graph_epsilon"),
        graph_variance_scale: f("graph_variance_scale"),
        threshold: args
            .get("turn_off_above_threshold")
            .and_then(|t| t.as_bool())
            .filter(|&on| on)
            .map(|_| f("cum_error_threshold")),
        dedup: true,
    }
}

/// A Flax parameter tree `{"params": {"Dense_k": {"kernel", "bias"}}}` in `Sequential`'s
/// layout: each layer's `in × out` kernel, then its bias.
fn flax(tree: &Value, layers: usize) -> Vec<f64> {
    let p = &tree["params"];
    let mut out = Vec::new();
    for k in 0..layers {
        let l = &p[format!("Dense_{k}")];
        out.extend(tensor(&l["kernel"]).1);
        out.extend(tensor(&l["bias"]).1);
    }
    out
}

#[track_caller]
fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    let (i, err) = got
        .iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs())
        .enumerate()
        .fold((0, 0.0), |a, (i, e)| if e > a.1 { (i, e) } else { a });
    assert!(
        err <= tol * scale,
        "{what}: entry {i} is {} not {} (error {err:.3e}, {:.3e} of the largest entry {scale:.3e})",
        got[i],
        want[i],
        err / scale
    );
}

fn scalar(v: &Value) -> f64 {
    if v.is_number() { v.as_f64().unwrap() } else { tensor(v).1[0] }
}

/// Runs one precision's cases of one variant's `*_loss_small.json`.
fn loss_cases<T: Real>(file: &str, precision: &str, version: VersionKind, tol: f64) {
    let Some(fx) = asymexp_fixture(file) else { return };
    let base = &fx["args_default"];
    let batches = fx["data"]["batches"].as_array().unwrap();
    let mut checked = 0;
    for (name, case) in fx["cases"][precision].as_object().unwrap() {
        let mut args = base.clone();
        for (k, v) in case["args_override"].as_object().unwrap() {
            args[k] = v.clone();
        }
        let mut cfg = cfg_of(&args, version);
        cfg.batch_size = fx["data"]["batch_size"].as_u64().unwrap() as usize;
        let layers = cfg.hidden.len() + 1;
        // The state coordinates the batches use (every state they name).
        let mut coords = vec![f64::NAN; 2 * 64];
        let mut states = 0;
        for b in batches {
            for (ik, ck) in [("obs", "coords"), ("next_obs", "next_coords"), ("obs_2", "coords_2")]
            {
                let (idx, xy) = (tensor(&b[ik]).1, tensor(&b[ck]).1);
                for (r, &s) in idx.iter().enumerate() {
                    let s = s as usize;
                    states = states.max(s + 1);
                    coords[2 * s..2 * s + 2].copy_from_slice(&xy[2 * r..2 * r + 2]);
                }
            }
        }
        coords.truncate(2 * states);
        let coords: Vec<T> =
            coords.iter().map(|&v| T::from_f64(if v.is_nan() { 0.0 } else { v })).collect();
        let mut params = fx["params_init"].clone();
        for (k, v) in case["params_override"].as_object().unwrap() {
            params[k] = v.clone();
        }
        let enc: Vec<T> =
            flax(&params["encoder"], layers).iter().map(|&v| T::from_f64(v)).collect();
        let mut a = Asymexp::<T>::with_params(cfg.clone(), coords, enc).unwrap();
        a.mult.duals = tensor(&params["duals"]).1.iter().map(|&v| T::from_f64(v)).collect();
        a.mult.barrier = T::from_f64(tensor(&params["barrier_coefs"]).1[0]);
        a.mult.integral =
            tensor(&params["error_integral"]).1.iter().map(|&v| T::from_f64(v)).collect();
        for (k, step) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = format!("{file} {precision} {name} step {k}");
            let b = &batches[k];
            let idx = |key: &str| tensor(&b[key]).1.iter().map(|&v| v as u32).collect::<Vec<_>>();
            let before_phi = a.representation();
            a.step_on(&idx("obs"), &idx("next_obs"), &idx("obs_2")).unwrap();
            let out = a.last_step().clone();
            check_step(&at, &a, &out, step, &idx("obs"), &before_phi, version, tol);
            checked += 1;
        }
    }
    assert!(checked >= 10, "{file} {precision}: only {checked} steps checked");
}

/// One step at the script's defaults (the 2-256-256-256-256-10 encoder from the fixture's
/// Flax initialisation, batch 256, duals −2, barrier 0.5), float32.
fn default_step(prefix: &str, version: VersionKind) {
    let (Some(fx), Some(init), Some(col)) = (
        asymexp_fixture(&format!("{prefix}_loss_default_f32.json")),
        asymexp_fixture("encoder_init_default_seed42.json"),
        asymexp_fixture(&format!("{prefix}_collect.json")),
    ) else {
        return;
    };
    let cfg = AsymexpConfig::reference(version);
    let arch = &fx["architecture"];
    assert_eq!(arch["hidden_dim"], 256);
    assert_eq!(arch["num_hidden_layers"].as_u64().unwrap() as usize + 1, cfg.hidden.len());
    let coll = fx["data"]["collection_config"].as_str().unwrap();
    let coords: Vec<f32> =
        tensor(&col["configs"][coll]["state_coords_f32"]).1.iter().map(|&v| v as f32).collect();
    let enc: Vec<f32> = flax(&init["params"], 5).iter().map(|&v| v as f32).collect();
    let mut a = Asymexp::<f32>::with_params(cfg, coords, enc).unwrap();
    let other = &fx["params_init_other"];
    assert_eq!(
        a.mult.duals,
        tensor(&other["duals"]).1.iter().map(|&v| v as f32).collect::<Vec<_>>()
    );
    assert_eq!(a.mult.barrier as f64, tensor(&other["barrier_coefs"]).1[0]);
    let b = &fx["data"]["batch"];
    let idx = |key: &str| tensor(&b[key]).1.iter().map(|&v| v as u32).collect::<Vec<_>>();
    let before = a.representation();
    a.step_on(&idx("obs"), &idx("next_obs"), &idx("obs_2")).unwrap();
    let out = a.last_step().clone();
    let mut step = fx["step"].clone();
    // The final file leaves out encoder arrays identical to the thresholded file's.
    if !step["grads"]["encoder"].is_object() || !step["update"]["new_params"]["encoder"].is_object()
    {
        let thr = asymexp_fixture("thr_loss_default_f32.json").unwrap();
        step["grads"]["encoder"] = thr["step"]["grads"]["encoder"].clone();
        step["update"]["new_params"]["encoder"] =
            thr["step"]["update"]["new_params"]["encoder"].clone();
        if step["update"]["adam"].get("mu").is_some_and(|m| !m.is_object()) {
            step["update"]["adam"] = thr["step"]["update"]["adam"].clone();
        }
    }
    check_step(
        &format!("{prefix} default f32"),
        &a,
        &out,
        &step,
        &idx("obs"),
        &before,
        version,
        F32_TOL,
    );
}

#[test]
fn thresholded_default_step_matches_in_f32() {
    default_step("thr", VersionKind::Thresholded);
}

#[test]
fn final_default_step_matches_in_f32() {
    default_step("final", VersionKind::Final);
}

#[test]
fn thresholded_loss_gradients_and_updates_match_in_f64() {
    loss_cases::<f64>("thr_loss_small.json", "f64", VersionKind::Thresholded, F64_TOL);
}

#[test]
fn final_loss_gradients_and_updates_match_in_f64() {
    loss_cases::<f64>("final_loss_small.json", "f64", VersionKind::Final, F64_TOL);
}

#[test]
fn thresholded_loss_gradients_and_updates_match_in_f32() {
    loss_cases::<f32>("thr_loss_small.json", "f32", VersionKind::Thresholded, F32_TOL);
}

#[test]
fn final_loss_gradients_and_updates_match_in_f32() {
    loss_cases::<f32>("final_loss_small.json", "f32", VersionKind::Final, F32_TOL);
}

/// Checks one step's terms, gradients and updated parameters against the fixture's `step`.
#[allow(clippy::too_many_arguments)]
fn check_step<T: Real>(
    at: &str,
    a: &Asymexp<T>,
    out: &kestrel_agents::asymexp::AsymexpStep,
    step: &Value,
    obs: &[u32],
    before_phi: &[f64],
    version: VersionKind,
    tol: f64,
) {
    let cfg = a.config();
    let d = cfg.num_eigenvectors;
    let layers = cfg.hidden.len() + 1;
    let t = &out.terms;
    let im = &step["intermediates_eager"];
    if let Some(phi) = im.get("phi") {
        let want = tensor(phi).1;
        let got: Vec<f64> = obs
            .iter()
            .flat_map(|&s| before_phi[s as usize * d..(s as usize + 1) * d].to_vec())
            .collect();
        close(&format!("{at} phi"), &got, &want, tol);
    }
    // `allo` is a near-cancellation of terms of size ~20: its error is measured against
    // the terms' magnitude.
    let size = t.graph_loss.abs()
        + t.dual_loss_pos.abs()
        + t.dual_loss_neg.abs()
        + t.barrier_loss_pos.abs()
        + t.barrier_loss_neg.abs();
    for (key, want) in
        [("allo", scalar(&im["allo"])), ("update allo", scalar(&step["update"]["allo"]))]
    {
        assert!(
            (t.allo - want).abs() <= tol * size,
            "{at} {key}: {} not {want} (terms of size {size})",
            t.allo
        );
    }
    for (key, got) in [
        ("graph_loss", t.graph_loss),
        ("dual_loss_pos", t.dual_loss_pos),
        ("dual_loss_neg", t.dual_loss_neg),
        ("barrier_loss_pos", t.barrier_loss_pos),
        ("barrier_loss_neg", t.barrier_loss_neg),
        ("quadratic_error", t.quadratic_error),
        ("eigenvalue_sum", t.eigenvalue_sum),
    ] {
        close(&format!("{at} {key}"), &[got], &[scalar(&im[key])], tol);
    }
    for (key, got) in [
        ("error_matrix_1", &t.error_matrix_1),
        ("error_matrix_2", &t.error_matrix_2),
        ("cum_error_matrix_1_below_threshold", &t.mask),
        ("graph_perturbation", &t.graph_perturbation),
        ("graph_losses", &t.graph_losses),
    ] {
        // The final file has no threshold mask.
        if im.get(key).is_none() && version == VersionKind::Final {
            continue;
        }
        close(&format!("{at} {key}"), got, &tensor(&im[key]).1, tol);
    }
    if let Some(th) = step.get("threshold_fn_output").filter(|_| cfg.threshold.is_some()) {
        close(&format!("{at} threshold mask"), &t.mask, &tensor(th).1, 0.0);
    }
    let aux = &step["aux_eager"];
    for (key, got) in [
        ("total_norm_error", t.total_norm_error),
        ("total_error", t.total_error),
        ("total_two_component_error", t.total_two_component_error),
        ("distance_to_constraint_manifold", t.distance_to_constraint_manifold),
        ("distance_to_origin", t.distance_to_origin),
        ("approx_eigenvalue_sum", t.eigenvalue_sum),
    ] {
        close(&format!("{at} aux {key}"), &[got], &[scalar(&aux[key])], tol);
    }
    // Gradients: the encoder's (left in the trainee), the duals' and the barrier's.
    let g = &step["grads"];
    let enc_grad: Vec<f64> = a.trainee.grads.iter().map(|v| v.to_f64()).collect();
    close(&format!("{at} encoder gradient"), &enc_grad, &flax(&g["encoder"], layers), tol);
    let want_duals = tensor(&g["duals"]).1;
    close(&format!("{at} duals gradient"), &a.grads().duals, &want_duals, tol);
    let want_b = tensor(&g["barrier_coefs"]).1;
    close(&format!("{at} barrier gradient"), &[a.grads().barrier], &want_b, tol);
    let upd = &step["update"];
    close(&format!("{at} grad_norm"), &[out.grad_norm], &[scalar(&upd["aux"]["grad_norm"])], tol);
    // The updated parameters.
    let np = &upd["new_params"];
    let p: Vec<f64> = a.trainee.params.iter().map(|v| v.to_f64()).collect();
    close(&format!("{at} new encoder"), &p, &flax(&np["encoder"], layers), tol);
    let duals: Vec<f64> = a.mult.duals.iter().map(|v| v.to_f64()).collect();
    close(&format!("{at} new duals"), &duals, &tensor(&np["duals"]).1, tol);
    close(
        &format!("{at} new barrier"),
        &[a.mult.barrier.to_f64()],
        &tensor(&np["barrier_coefs"]).1,
        tol,
    );
    let integral: Vec<f64> = a.mult.integral.iter().map(|v| v.to_f64()).collect();
    close(&format!("{at} new integral"), &integral, &tensor(&np["error_integral"]).1, tol);
    let adam = &upd["adam"];
    assert_eq!(adam["count"].as_u64().unwrap(), a.trainee.opt.t, "{at} adam count");
    if adam.get("mu").is_some() {
        let m: Vec<f64> = a.trainee.opt.m.iter().map(|v| v.to_f64()).collect();
        let v: Vec<f64> = a.trainee.opt.v.iter().map(|v| v.to_f64()).collect();
        close(&format!("{at} adam mu"), &m, &flax(&adam["mu"], layers), tol);
        close(&format!("{at} adam nu"), &v, &flax(&adam["nu"], layers), tol);
    }
}

/// The fixture's 500-step run (`{prefix}_e2e.json`, README §3 (e)) replayed from its recorded
/// batches: returns, per logged step, the largest relative difference over the logged numbers
/// (loss terms, duals before the step, gradient norm; cosines after it).
fn e2e_replay<T: Real>(prefix: &str, curves: &str) -> Option<Vec<(u64, f64, String, f64)>> {
    let (fx, init) = (
        asymexp_fixture(&format!("{prefix}_e2e.json"))?,
        asymexp_fixture("encoder_init_default_seed42.json")?,
    );
    let version = if prefix == "thr" { VersionKind::Thresholded } else { VersionKind::Final };
    let cfg = AsymexpConfig::reference(version);
    let d = cfg.num_eigenvectors;
    let coords: Vec<T> =
        tensor(&fx["state_coords_f32"]).1.iter().map(|&v| T::from_f64(v)).collect();
    let enc: Vec<T> = flax(&init["params"], 5).iter().map(|&v| T::from_f64(v)).collect();
    let mut a = Asymexp::<T>::with_params(cfg, coords, enc).unwrap();
    let b = &fx["batches"];
    let (obs, next, obs2) = (tensor(&b["obs"]).1, tensor(&b["next_obs"]).1, tensor(&b["obs_2"]).1);
    let gt_key = if T::BYTES == 4 { "gt_eigenvectors_f32" } else { "gt_eigenvectors_f64" };
    let (gshape, gt) = tensor(&fx[gt_key]["gt_eigenvectors"]);
    let n = gshape[0];
    let rows: Vec<&Value> = fx[curves].as_array().unwrap().iter().collect();
    let mut out = Vec::new();
    let idx = |v: &[f64], g: usize| {
        v[g * 256..(g + 1) * 256].iter().map(|&x| x as u32).collect::<Vec<_>>()
    };
    for g in 0..500usize {
        let before: Vec<f64> = a.mult.duals.iter().map(|v| v.to_f64()).collect();
        a.step_on(&idx(&obs, g), &idx(&next, g), &idx(&obs2, g)).unwrap();
        let s = a.last_step().clone();
        let Some(row) = rows.iter().find(|r| r["gradient_step"].as_u64() == Some(g as u64)) else {
            continue;
        };
        let t = &s.terms;
        let mut worst = (0.0f64, String::new());
        let mut cmp = |key: &str, got: f64, scale: f64| {
            let want = row[key].as_f64().unwrap_or_else(|| panic!("{curves} step {g}: no {key}"));
            let e = (got - want).abs() / scale.max(want.abs()).max(1e-12);
            if e > worst.0 {
                worst = (e, format!("{key}: {got} vs {want}"));
            }
        };
        let size = t.graph_loss.abs()
            + t.dual_loss_pos.abs()
            + t.dual_loss_neg.abs()
            + t.barrier_loss_pos.abs();
        cmp("allo", t.allo, size);
        for (k, v) in [
            ("graph_loss", t.graph_loss),
            ("dual_loss", t.dual_loss_pos),
            ("dual_loss_neg", t.dual_loss_neg),
            ("barrier_loss", t.barrier_loss_pos),
            ("approx_eigenvalue_sum", t.eigenvalue_sum),
            ("total_norm_error", t.total_norm_error),
            ("total_error", t.total_error),
            ("total_two_component_error", t.total_two_component_error),
            ("distance_to_constraint_manifold", t.distance_to_constraint_manifold),
            ("distance_to_origin", t.distance_to_origin),
            ("grad_norm", s.grad_norm),
        ] {
            cmp(k, v, 0.0);
        }
        for i in 0..d {
            cmp(&format!("dual_{i}"), before[i * d + i], 0.0);
        }
        // Cosines after the update, against the fixture's truth.
        let rep = a.representation();
        let suffix = if prefix == "thr" { "" } else { "_invweighted" };
        for i in 0..d {
            let (mut dot, mut x, mut y) = (0.0, 0.0, 0.0);
            for s in 0..n {
                let (f, q) = (rep[s * d + i], gt[s * d + i]);
                dot += f * q;
                x += f * f;
                y += q * q;
            }
            // Cosines lie in [0, 1]: compared absolutely.
            cmp(
                &format!("cosine_sim_{i}{suffix}"),
                (dot / (x.sqrt() * y.sqrt() + 1e-10)).abs(),
                1.0,
            );
        }
        // The reference's own float32-to-float64 gap at this step, measured the same way.
        let other =
            if curves == "curves_f64_replay" { "curves_f32_script" } else { "curves_f64_replay" };
        let orow = fx[other]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["gradient_step"] == row["gradient_step"])
            .unwrap();
        let mut gap = 0.0f64;
        for (k, v) in row.as_object().unwrap() {
            let (Some(a), Some(b)) = (v.as_f64(), orow[k].as_f64()) else { continue };
            if k == "gradient_step" || k.starts_with("graph_perturbation") {
                continue;
            }
            let scale = if k.starts_with("cosine") {
                1.0
            } else if k == "allo" {
                size
            } else {
                a.abs()
            };
            gap = gap.max((a - b).abs() / scale.max(1e-12));
        }
        out.push((
            g as u64,
            worst.0,
            format!("{}; the reference's own f32/f64 gap {gap:.2e}", worst.1),
            gap,
        ));
    }
    assert_eq!(out.len(), 11, "{prefix}: logged steps");
    Some(out)
}

/// In float64 the replay follows the reference's own float64 replay through all 500 steps:
/// both start within rounding and the run amplifies differences by about 1e5 over 500 steps
/// (README: the f32/f64 gap grows from 1e-7 to 7 %), so 1e-16 becomes at most ~1e-10.
#[test]
fn the_500_step_run_replays_in_f64() {
    for prefix in ["thr", "final"] {
        let Some(rows) = e2e_replay::<f64>(prefix, "curves_f64_replay") else { return };
        for (g, err, what, _) in rows {
            assert!(err < 1e-9, "{prefix} step {g}: relative difference {err:.2e} ({what})");
        }
    }
}

/// In float32 the replay follows the script's own float32 curves as closely as float32
/// allows: XLA and Kestrel sum in different orders, so the numbers differ by rounding from step
/// 0 and the run amplifies that exactly as it amplifies the reference's own float32-to-float64
/// gap. Bit-for-bit agreement holds only between the script and its own jitted replay
/// (README §3 (e)). Measured: through step 200 our difference from the script is at most the
/// reference's own f32/f64 gap there (1e-6 at step 0, 4e-4 at step 200); from step 250 on
/// both grow chaotically (ours 1e-2 to 0.4, the reference's 3e-3 to 0.18, the largest of
/// every logged number). The bounds: 1.5× the reference's gap through step 200, 8× after
/// (`-- --nocapture` prints both).
#[test]
fn the_500_step_run_replays_in_f32() {
    for prefix in ["thr", "final"] {
        let Some(rows) = e2e_replay::<f32>(prefix, "curves_f32_script") else { return };
        for (g, err, what, gap) in rows {
            println!("{prefix} f32 step {g}: {err:.2e} ({what})");
            let factor = if g <= 200 { 1.5 } else { 8.0 };
            assert!(err <= factor * gap + 1e-6, "{prefix} step {g}: difference {err:.2e} ({what})");
        }
    }
}
