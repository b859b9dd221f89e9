//! ALLO: the loss gradient against finite differences (f64), deduplicated vs plain encoder
//! passes, data collection, the ground truth against closed forms, the metric, and learning.

use kestrel_agents::allo::{
    Allo, AlloConfig, MethodKind, collect, loss_and_grad, loss_with_stop_gradient,
};
use kestrel_agents::laplacian::{ground_truth, transition_matrix};
use kestrel_core::Key;
use kestrel_envs::GridMap;
use kestrel_testkit::central_differences;
use std::sync::Arc;

fn rand(key: Key, n: usize, scale: f64) -> Vec<f64> {
    let mut r = key.rng();
    (0..n).map(|_| scale * (2.0 * r.uniform_f64() - 1.0)).collect()
}

#[test]
fn loss_gradient_matches_finite_differences() {
    for method in [MethodKind::Allo, MethodKind::Ggdo] {
        let cfg = AlloConfig { method, num_eigenvectors: 3, batch_size: 5, ..AlloConfig::paper() };
        let (b, d) = (cfg.batch_size, cfg.num_eigenvectors);
        let phi = rand(Key::new(1), 4 * b * d, 1.2);
        let mut duals = rand(Key::new(2), d * d, 0.7);
        for j in 0..d {
            for k in j + 1..d {
                duals[j * d + k] = 0.0;
            }
        }
        let barrier = 1.3;
        let mut g = vec![0.0f64; phi.len()];
        let (loss, ..) = loss_and_grad(&cfg, &duals, barrier, &phi, &mut g);
        let direct = loss_with_stop_gradient(&cfg, &duals, barrier, &phi, &phi);
        assert!((loss - direct).abs() < 1e-12 * direct.abs().max(1.0), "{loss} vs {direct}");
        let numeric = central_differences(&phi, 1e-6, |w| {
            loss_with_stop_gradient(&cfg, &duals, barrier, w, &phi)
        });
        for (i, &num) in numeric.iter().enumerate() {
            let err = (num - g[i]).abs() / num.abs().max(g[i].abs()).max(1e-6);
            assert!(err < 1e-6, "{method:?} φ[{i}]: analytic {} numeric {num}", g[i]);
        }
    }
}

#[test]
fn deduplicated_encoder_pass_gives_the_plain_gradient() {
    let map = Arc::new(GridMap::builtin("rooms-2-3").unwrap());
    let cfg = AlloConfig {
        num_eigenvectors: 4,
        hidden: vec![32, 32],
        batch_size: 64,
        ..AlloConfig::paper()
    };
    let replay = collect(map.clone(), 20, 20, 4, 3).unwrap();
    let mut a = Allo::new(cfg.clone(), map.clone(), Key::new(5)).unwrap();
    let mut b = Allo::new(AlloConfig { dedup: false, ..cfg }, map.clone(), Key::new(5)).unwrap();
    for step in 0..3 {
        let ma = a.step(&replay, Key::new(9).fold_in(step)).unwrap();
        let mb = b.step(&replay, Key::new(9).fold_in(step)).unwrap();
        assert!(ma.encoder_rows < mb.encoder_rows && mb.encoder_rows == 4 * 64);
        assert!((ma.loss - mb.loss).abs() < 1e-6 * ma.loss.abs().max(1.0));
        // The same gradient up to f32 summation order.
        let scale = a.trainee.grads.iter().fold(0.0f32, |m, g| m.max(g.abs()));
        for (x, y) in a.trainee.grads.iter().zip(&b.trainee.grads) {
            assert!((x - y).abs() <= 1e-4 * scale, "step {step}: {x} vs {y}");
        }
        let pa: f64 =
            a.trainee.params.iter().zip(&b.trainee.params).map(|(x, y)| (x - y).abs() as f64).sum();
        assert!(pa < 1e-3, "parameters drifted apart: {pa}");
    }
}

#[test]
fn collection_stores_whole_episodes_of_adjacent_states() {
    let map = Arc::new(GridMap::builtin("rooms-2-4").unwrap());
    let r = collect(map.clone(), 30, 50, 8, 11).unwrap();
    assert_eq!(r.num_episodes(), 30);
    for e in 0..30 {
        let ep = r.episode(e);
        assert_eq!(ep.len(), 51);
        for w in ep.windows(2) {
            assert!((0..4).any(|a| map.next[w[0] as usize * 4 + a] == w[1]), "{w:?}");
        }
    }
    let again = collect(map.clone(), 30, 50, 8, 11).unwrap();
    assert!((0..30).all(|e| again.episode(e) == r.episode(e)));
    assert!(collect(map, 0, 50, 8, 1).is_err());
}

#[test]
fn ground_truth_matches_the_path_graph_closed_form() {
    // A corridor of n cells: P = I − L/4 with L the path Laplacian, whose eigenvectors are
    // cos(π k (j + ½) / n) with eigenvalues 2 − 2 cos(π k / n).
    let n = 7;
    let text = format!("{}\nX{}X\n{}\n", "X".repeat(n + 2), " ".repeat(n), "X".repeat(n + 2));
    let map = GridMap::parse(&text, "corridor").unwrap();
    let gt = ground_truth(&map, n).unwrap();
    for k in 0..n {
        let mu = 1.0 - (2.0 - 2.0 * (std::f64::consts::PI * k as f64 / n as f64).cos()) / 4.0;
        assert!((gt.eigenvalues[k] - mu).abs() < 1e-12, "μ_{k} = {} vs {mu}", gt.eigenvalues[k]);
        let v: Vec<f64> = (0..n)
            .map(|j| (std::f64::consts::PI * k as f64 * (j as f64 + 0.5) / n as f64).cos())
            .collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let cos: f64 = v.iter().zip(gt.vector(k)).map(|(a, b)| a * b).sum::<f64>() / norm;
        assert!((cos.abs() - 1.0).abs() < 1e-10, "component {k}: |cos| {}", cos.abs());
        let first = gt.vector(k).iter().find(|x| x.abs() > 1e-12).unwrap();
        assert!(*first > 0.0, "sign convention");
    }
    assert!(gt.blocks.iter().all(|&(_, m)| m == 1));
    // P rows sum to 1 and P is symmetric.
    let p = transition_matrix(&map);
    for i in 0..n {
        assert!((p[i * n..(i + 1) * n].iter().sum::<f64>() - 1.0).abs() < 1e-15);
        for j in 0..n {
            assert_eq!(p[i * n + j], p[j * n + i]);
        }
    }
}

#[test]
fn metric_scores_rotations_inside_degenerate_blocks_as_perfect() {
    // An open square room has degenerate eigenvalues (the two first non-constant modes).
    let map = GridMap::builtin("open-6").unwrap();
    let d = 6;
    let gt = ground_truth(&map, d).unwrap();
    let n = gt.num_states;
    let (start, m) = *gt.blocks.iter().find(|&&(_, m)| m == 2).expect("a degenerate pair");
    assert_eq!(m, 2);
    // Learned = truth, but with the block rotated by 0.7 rad, a sign flip and a scale.
    let mut learned = vec![0.0; n * d];
    for s in 0..n {
        for i in 0..d {
            learned[s * d + i] = -3.0 * gt.vector(i)[s];
        }
        let (a, b) = (gt.vector(start)[s], gt.vector(start + 1)[s]);
        let (c, sn) = (0.7f64.cos(), 0.7f64.sin());
        learned[s * d + start] = c * a - sn * b;
        learned[s * d + start + 1] = sn * a + c * b;
    }
    let (avg, sims) = gt.cosine_similarity(&learned);
    assert!((avg - 1.0).abs() < 1e-10, "{sims:?}");
    // Without the rotation the block would score cos(0.7) per vector.
    let plain: f64 = (0..n).map(|s| learned[s * d + start] * gt.vector(start)[s]).sum::<f64>()
        / (0..n).map(|s| learned[s * d + start].powi(2)).sum::<f64>().sqrt();
    assert!((plain.abs() - 0.7f64.cos()).abs() < 1e-10);
    // Noise scores low.
    let noise = rand(Key::new(4), n * d, 1.0);
    assert!(gt.cosine_similarity(&noise).0 < 0.6);
}

#[test]
fn sr_eigenvalues_match_the_papers_table_3() {
    let Some(dir) = kestrel_testkit::shared_subdir("laplacian-grids") else { return };
    for (name, want) in [
        (
            "GridRoom-16",
            vec![0.0016, 0.0063, 0.0139, 0.0242, 0.0367, 0.0511, 0.0663, 0.0832, 0.1007, 0.1161],
        ),
        ("GridMaze-7", vec![0.1833, 0.4622, 0.5208]),
    ] {
        let map = GridMap::load(&dir.join(format!("{name}.txt"))).unwrap();
        let gt = ground_truth(&map, want.len() + 1).unwrap();
        let sr = gt.sr_eigenvalues(0.9);
        assert!(sr[0].abs() < 1e-12);
        for (i, w) in want.iter().enumerate() {
            assert!((sr[i + 1] - w).abs() < 5e-5, "{name} λ_{}: {} vs {w}", i + 2, sr[i + 1]);
        }
    }
}

#[test]
fn allo_learns_the_eigenvectors_of_a_small_map() {
    let map = Arc::new(GridMap::builtin("rooms-2-3").unwrap());
    let cfg = AlloConfig {
        num_eigenvectors: 4,
        hidden: vec![64, 64],
        batch_size: 256,
        ..AlloConfig::paper()
    };
    let replay = collect(map.clone(), 400, 50, 16, 1).unwrap();
    let gt = ground_truth(&map, cfg.num_eigenvectors).unwrap();
    let mut a = Allo::new(cfg, map.clone(), Key::new(2)).unwrap();
    let before = gt.cosine_similarity(&a.representation()).0;
    for t in 0..2000 {
        a.step(&replay, Key::new(3).fold_in(t)).unwrap();
    }
    let (after, sims) = gt.cosine_similarity(&a.representation());
    assert!(after > 0.95 && after > before, "cosine similarity {before:.3} -> {after:.3} {sims:?}");
}

#[test]
fn a_checkpointed_run_resumes_exactly() {
    let map = Arc::new(GridMap::builtin("rooms-2-3").unwrap());
    let cfg =
        AlloConfig { num_eigenvectors: 3, hidden: vec![16], batch_size: 32, ..AlloConfig::paper() };
    let replay = collect(map.clone(), 40, 20, 4, 7).unwrap();
    let mut a = Allo::new(cfg.clone(), map.clone(), Key::new(1)).unwrap();
    for t in 0..5 {
        a.step(&replay, Key::new(2).fold_in(t)).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("kestrel-allo-ckpt-{}", std::process::id()));
    let stamp = kestrel_nn::Stamp::new("allo", Default::default(), "test");
    a.save_checkpoint(&dir, &stamp).unwrap();
    let mut b = Allo::load_checkpoint(cfg.clone(), map.clone(), &dir).unwrap();
    assert_eq!((b.steps, b.barrier), (a.steps, a.barrier));
    for t in 5..10 {
        a.step(&replay, Key::new(2).fold_in(t)).unwrap();
        b.step(&replay, Key::new(2).fold_in(t)).unwrap();
    }
    assert_eq!(a.trainee.params, b.trainee.params);
    assert_eq!((a.duals.clone(), a.barrier), (b.duals.clone(), b.barrier));
    let other = AlloConfig { num_eigenvectors: 4, ..cfg };
    let e = Allo::load_checkpoint(other, map, &dir).err().unwrap().to_string();
    assert!(e.contains("shape"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
