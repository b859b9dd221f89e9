//! The `asymexp` profile's data path against fixtures made from the reference
//! (`../shared/data/allo-asymexp-golden/{thr,final}_{collect,sample}.json`, README §3 (b)):
//! collection with the reference's draws replayed (its actions and resets are JAX threefry
//! draws, recorded per step), the rows it writes, the transition counts, and every replay
//! sample from its recorded numpy uniforms, including the calls the reference fails.

use kestrel_agents::asymexp::{AsymexpMap, CollectDraws, Collected, VersionKind, collect};
use kestrel_replay::RowRuleKind;
use kestrel_testkit::{asymexp_fixture, flat, tensor};
use serde_json::Value;

fn ints(v: &Value) -> Vec<i64> {
    if v.get("dtype").is_some() {
        tensor(v).1.iter().map(|&x| x as i64).collect()
    } else {
        flat(v).iter().map(|&x| x as i64).collect()
    }
}

/// The reference's recorded draws (full indices turned canonical).
struct Recorded<'a> {
    map: &'a AsymexpMap,
    initial: Vec<i64>,
    actions: Vec<i64>,
    resets: Vec<i64>,
    envs: usize,
}

impl CollectDraws for Recorded<'_> {
    fn initial(&mut self, env: usize) -> u32 {
        self.map.canonical_of(self.initial[env] as u32).unwrap()
    }
    fn action(&mut self, step: usize, env: usize) -> u8 {
        self.actions[step * self.envs + env] as u8
    }
    fn reset(&mut self, step: usize, env: usize) -> u32 {
        self.map.canonical_of(self.resets[step * self.envs + env] as u32).unwrap()
    }
}

fn collected(c: &Value, version: VersionKind) -> (AsymexpMap, Collected) {
    let cfg = &c["config"];
    let mut map = AsymexpMap::parse(cfg["map_text"].as_str().unwrap(), "fixture", version).unwrap();
    if let Some(d) = c.get("doors_canonical").filter(|d| !d.is_null()) {
        let d = ints(d);
        let pairs: Vec<(u32, u8)> =
            d.chunks(4).map(|q| (map.canonical[q[2] as usize], q[3] as u8)).collect();
        map.block(&pairs).unwrap();
    }
    let envs = cfg["num_envs"].as_u64().unwrap() as usize;
    let steps = cfg["num_steps"].as_u64().unwrap() as usize;
    let max_len = cfg["max_episode_length"].as_u64().unwrap() as usize;
    let ps = &c["per_step"];
    let mut draws = Recorded {
        map: &map,
        initial: ints(&ps["initial_state_full"]),
        actions: ints(&ps["actions"]),
        resets: ints(&ps["state_after_reset_full"]),
        envs,
    };
    let out = collect(&map, envs, steps, max_len, RowRuleKind::Reference, &mut draws).unwrap();
    (map, out)
}

fn check_collection(file: &str, version: VersionKind) {
    let Some(fx) = asymexp_fixture(file) else { return };
    let mut seen = 0;
    for (name, c) in fx["configs"].as_object().unwrap() {
        let (map, out) = collected(c, version);
        let at = format!("{file} {name}");
        // The recorded per-step states are what our dynamics reach from the same draws.
        let buf = &c["buffer"];
        let rows = buf["rows"].as_array().unwrap();
        assert_eq!(out.replay.num_rows(), rows.len(), "{at} rows");
        for (r, row) in rows.iter().enumerate() {
            let len = row["length"].as_u64().unwrap() as usize;
            let states: Vec<i64> = out.replay.row(r).iter().map(|&s| s as i64).collect();
            assert_eq!(states, ints(&row["obs_canonical"])[..len], "{at} row {r} states");
            let terms: Vec<i64> =
                out.replay.terminal_positions(r).iter().map(|&t| t as i64).collect();
            let want: Vec<i64> =
                ints(&row["terminal_indices"]).into_iter().filter(|&t| t >= 0).collect();
            assert_eq!(terms, want, "{at} row {r} terminal positions");
            let flags: Vec<i64> = ints(&row["terminals"])[..len].to_vec();
            let got: Vec<i64> = (0..len as i64).map(|i| terms.contains(&i) as i64).collect();
            assert_eq!(got, flags, "{at} row {r} terminal flags");
        }
        // Counts: the reference's sparse [s_full, a, s'_full, count] rows.
        let mut want = vec![0u64; map.num_states() * 4];
        for q in flat(&c["transition_counts_full_sparse"]).chunks(4) {
            let s = map.canonical_of(q[0] as u32).unwrap() as usize;
            let t = map.canonical_of(q[2] as u32).unwrap();
            assert_eq!(map.next[s * 4 + q[1] as usize], t, "{at}: ({s}, {}) leads elsewhere", q[1]);
            want[s * 4 + q[1] as usize] += q[3] as u64;
        }
        assert_eq!(out.counts, want, "{at} counts");
        assert_eq!(out.transitions, c["total_transitions"].as_u64().unwrap(), "{at} total");
        seen += 1;
    }
    assert_eq!(seen, 4, "{file}");
}

fn check_samples(collect_file: &str, sample_file: &str, version: VersionKind) {
    let (Some(col), Some(fx)) = (asymexp_fixture(collect_file), asymexp_fixture(sample_file))
    else {
        return;
    };
    let (mut ok, mut raised) = (0, 0);
    for (name, c) in fx["configs"].as_object().unwrap() {
        let (_, out) = collected(&col["configs"][name], version);
        // The rows where the reference can raise are known once the data is in.
        let raises = c["samples"].as_array().unwrap().iter().any(|s| !s["error"].is_null());
        assert_eq!(!out.replay.rows_with_dead_ends().is_empty(), raises, "{sample_file} {name}");
        for s in c["samples"].as_array().unwrap() {
            let at = format!("{sample_file} {name} seed {}", s["seed"]);
            let rows = ints(&s["episode_idx"]);
            let u_obs = tensor(&s["u_obs"]).1;
            let gamma = s["discount"].as_f64().unwrap();
            if !s["error"].is_null() {
                // The reference raises when any horizon of the batch is 0; so do we, there.
                let any = rows.iter().zip(&u_obs).any(|(&r, &u)| {
                    out.replay.pair(r as usize, u, 0.5, gamma, RowRuleKind::Reference).is_err()
                });
                assert!(any, "{at}: the reference raised, every pair drew fine here");
                // The fixed rule draws every one of them.
                for (&r, &u) in rows.iter().zip(&u_obs) {
                    out.replay.pair(r as usize, u, 0.5, gamma, RowRuleKind::WithinEpisode).unwrap();
                }
                raised += 1;
                continue;
            }
            let u_off = tensor(&s["u_offset"]).1;
            let (oi, h, off) = (ints(&s["obs_idx"]), ints(&s["horizon"]), ints(&s["offset"]));
            let (obs, next) = (ints(&s["obs"]), ints(&s["next_obs"]));
            for j in 0..rows.len() {
                let r = rows[j] as usize;
                let p =
                    out.replay.pair(r, u_obs[j], u_off[j], gamma, RowRuleKind::Reference).unwrap();
                assert_eq!(
                    (p.obs_idx as i64, p.horizon as i64, p.offset as i64),
                    (oi[j], h[j], off[j]),
                    "{at} sample {j}"
                );
                let row = out.replay.row(r);
                assert_eq!(row[p.obs_idx as usize] as i64, obs[j], "{at} sample {j} obs");
                assert_eq!(
                    row[(p.obs_idx + p.offset) as usize] as i64,
                    next[j],
                    "{at} sample {j} next"
                );
            }
            ok += 1;
        }
    }
    assert!(ok >= 10 && raised >= 2, "{sample_file}: {ok} batches matched, {raised} raised");
}

#[test]
fn thresholded_collection_writes_the_references_rows_and_counts() {
    check_collection("thr_collect.json", VersionKind::Thresholded);
}

#[test]
fn final_collection_writes_the_references_rows_and_counts() {
    check_collection("final_collect.json", VersionKind::Final);
}

#[test]
fn thresholded_replay_samples_match_draw_for_draw() {
    check_samples("thr_collect.json", "thr_sample.json", VersionKind::Thresholded);
}

#[test]
fn final_replay_samples_match_draw_for_draw() {
    check_samples("final_collect.json", "final_sample.json", VersionKind::Final);
}

/// Columns of `a` and `b` (`n × k`) equal up to sign, except columns whose eigenvalue is not
/// separated from its neighbours (there any rotation of the eigenspace is as right).
#[track_caller]
fn same_vectors(at: &str, got: &[f64], want: &[f64], eig: &[f64], n: usize, k: usize, tol: f64) {
    let mut compared = 0;
    for c in 0..k {
        let gap = |o: usize| (eig[c] - eig[o]).abs() > 1e-7;
        if (c > 0 && !gap(c - 1)) || (c + 1 < eig.len() && !gap(c + 1)) {
            continue;
        }
        let dot: f64 = (0..n).map(|r| got[r * k + c] * want[r * k + c]).sum();
        let sign = dot.signum();
        let err =
            (0..n).map(|r| (got[r * k + c] - sign * want[r * k + c]).abs()).fold(0.0, f64::max);
        assert!(err < tol, "{at}: eigenvector {c} differs by {err:.3e}");
        compared += 1;
    }
    assert!(compared * 2 >= k, "{at}: only {compared} of {k} eigenvectors are separated");
}

#[track_caller]
fn close(at: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{at}: lengths");
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    let err = got.iter().zip(want).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
    assert!(err <= tol * scale, "{at}: off by {err:.3e} (scale {scale:.3e})");
}

fn check_truth(gt_file: &str, collect_file: &str, version: VersionKind) {
    use kestrel_agents::laplacian::empirical::{self, TruthRuleKind};
    let (Some(gt), Some(col)) = (asymexp_fixture(gt_file), asymexp_fixture(collect_file)) else {
        return;
    };
    let mut seen = 0;
    for (name, c) in gt["configs"].as_object().unwrap() {
        let at = format!("{gt_file} {name}");
        let (map, out) = collected(&col["configs"][name], version);
        let n = map.num_states();
        // The fixture's counts are ours.
        let sas = tensor(&c["counts_canonical_SAS"]).1;
        let dense = empirical::count_matrix(&out.counts, &map.next, n);
        let summed: Vec<f64> = (0..n * n)
            .map(|x| (0..4).map(|a| sas[(x / n) * 4 * n + a * n + x % n]).sum())
            .collect();
        assert_eq!(dense, summed, "{at} counts");
        let k = c["k"].as_u64().unwrap() as usize;
        let f64s = &c["f64"];
        let compare = |what: &str, dec: &empirical::Decomposed, want: &Value| {
            close(&format!("{at} {what} matrix"), &dec.matrix, &tensor(&want["matrix"]).1, 1e-12);
            let all = tensor(&want["eigenvalues_sorted_all"]).1;
            close(&format!("{at} {what} eigenvalues"), &dec.eigenvalues, &all, 1e-10);
            let v = tensor(&want["eigenvectors_topk"]).1;
            same_vectors(&format!("{at} {what}"), &dec.vectors, &v, &all, n, k, 1e-8);
        };
        match version {
            VersionKind::Thresholded => {
                let dec =
                    empirical::thresholded(&out.counts, &map.next, n, k, TruthRuleKind::Reference)
                        .unwrap();
                compare("symmetrised P", &dec, &f64s["sym_transition_matrix"]);
            }
            VersionKind::Final => {
                let gamma = c["gamma"].as_f64().unwrap();
                let nan = f64s["laplacian_invweighted"]["matrix"].get("has_nonfinite").is_some();
                let r = empirical::final_truth(
                    &out.counts,
                    &map.next,
                    n,
                    k,
                    gamma,
                    TruthRuleKind::Reference,
                );
                if nan {
                    // The reference's NaN truth (a goal is never left) is a named error here.
                    let e = r.unwrap_err().to_string();
                    assert!(e.contains("never left") && e.contains("fixed"), "{at}: {e}");
                    let f = empirical::final_truth(
                        &out.counts,
                        &map.next,
                        n,
                        k,
                        gamma,
                        TruthRuleKind::Fixed,
                    )
                    .unwrap();
                    assert!(
                        f.invweighted.vectors.iter().all(|v| v.is_finite()),
                        "{at}: fixed truth"
                    );
                    compare("simple", &f.simple, &f64s["laplacian_simple"]);
                    seen += 1;
                    continue;
                }
                let t = r.unwrap();
                close(
                    &format!("{at} P"),
                    &t.transition,
                    &tensor(&f64s["transition_matrix"]).1,
                    1e-13,
                );
                close(
                    &format!("{at} D"),
                    &t.sampling_probs,
                    &tensor(&f64s["sampling_probs"]).1,
                    1e-13,
                );
                close(
                    &format!("{at} SR"),
                    &t.successor,
                    &tensor(&f64s["successor_representation"]).1,
                    1e-12,
                );
                compare("simple", &t.simple, &f64s["laplacian_simple"]);
                compare("weighted", &t.weighted, &f64s["laplacian_weighted"]);
                compare("inverse-weighted", &t.invweighted, &f64s["laplacian_invweighted"]);
            }
        }
        seen += 1;
    }
    assert_eq!(seen, 4, "{gt_file}");
    // The metric on the encoders the fixture dumped, against C1's truths.
    let (map, out) = collected(&col["configs"]["C1_small_T50"], version);
    let n = map.num_states();
    let mut checked_components = 0;
    for (enc, e) in gt["metric_on_dumped_encoders"].as_object().unwrap() {
        let (shape, feats) = tensor(&e["features"]);
        let d = shape[1];
        let truths: Vec<(String, empirical::Decomposed)> = match version {
            VersionKind::Thresholded => vec![(
                "sym_transition_matrix_f64".into(),
                empirical::thresholded(&out.counts, &map.next, n, 10, TruthRuleKind::Reference)
                    .unwrap(),
            )],
            VersionKind::Final => {
                let t = empirical::final_truth(
                    &out.counts,
                    &map.next,
                    n,
                    10,
                    0.2,
                    TruthRuleKind::Reference,
                )
                .unwrap();
                vec![
                    ("invweighted_f64".into(), t.invweighted),
                    ("simple_f64".into(), t.simple),
                    ("weighted_f64".into(), t.weighted),
                ]
            }
        };
        for (key, truth) in truths {
            let want = &e["cosine"][&key];
            let (avg, sims) = empirical::cosine(&feats, d, &truth);
            checked_components += sims.len();
            let eig = &truth.eigenvalues;
            for (i, s) in sims.iter().enumerate() {
                let separated = (i == 0 || (eig[i] - eig[i - 1]).abs() > 1e-7)
                    && (eig[i] - eig[i + 1]).abs() > 1e-7;
                if separated {
                    let w = want[format!("cosine_sim_{i}")].as_f64().unwrap();
                    assert!(
                        (s - w).abs() < 1e-9,
                        "{gt_file} {enc} {key} component {i}: {s} not {w}"
                    );
                }
            }
            if sims.iter().enumerate().all(|(i, _)| {
                (i == 0 || (eig[i] - eig[i - 1]).abs() > 1e-7) && (eig[i] - eig[i + 1]).abs() > 1e-7
            }) {
                let w = want["cosine_sim_avg"].as_f64().unwrap();
                assert!((avg - w).abs() < 1e-9, "{gt_file} {enc} {key} average: {avg} not {w}");
            }
        }
    }
    assert!(checked_components >= 30, "{gt_file}: {checked_components} components");
}

#[test]
fn thresholded_ground_truth_and_metric_match() {
    check_truth("thr_groundtruth.json", "thr_collect.json", VersionKind::Thresholded);
}

#[test]
fn final_ground_truths_and_metric_match() {
    check_truth("final_groundtruth.json", "final_collect.json", VersionKind::Final);
}
