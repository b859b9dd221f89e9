//! `kestrel allo train`: ALLO (or GGDO) on a grid map with progress, metrics written by a
//! background thread, checkpoints, resume, and heat-maps of learned vs true eigenvectors.

use crate::run::{Canvas, MetricsWriter, Progress, git_commit, median_us, run_dir, write_atomic};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use kestrel_agents::allo::{Allo, AlloConfig, collect};
use kestrel_agents::laplacian::{GroundTruth, ground_truth};
use kestrel_core::Key;
use kestrel_envs::GridMap;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(Subcommand)]
pub enum AlloCmd {
    /// Train a Laplacian representation on a map.
    Train(TrainArgs),
    /// Time replay sampling (one 4 × batch draw) and the training step, deduplicated and
    /// plain.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// A map file or `builtin:NAME`.
    #[arg(long, default_value = "builtin:rooms-2-5")]
    map: String,
    /// Rows per sub-batch.
    #[arg(long, default_value_t = 1024)]
    batch: usize,
    /// Steps timed per path.
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let map = Arc::new(GridMap::resolve(&a.map)?);
    let replay = collect(map.clone(), 4000, 50, 64, 0)?;
    let b = a.batch;
    let (mut s, mut f, mut u1, mut u2) =
        (vec![0u32; b], vec![0u32; b], vec![0u32; b], vec![0u32; b]);
    let conv = kestrel_replay::Convention::PaperCode;
    let sample_us = median_us(a.steps * 5, |i| {
        let k = Key::new(i);
        replay.sample_pairs(k.fold_in(0), 0.9, &mut s, &mut f).expect("pairs");
        replay.sample_states(k.fold_in(1), conv, &mut u1).expect("states");
        replay.sample_states(k.fold_in(2), conv, &mut u2).expect("states");
    });
    let cfg = AlloConfig { batch: b, ..AlloConfig::paper() };
    let mut dedup = Allo::new(cfg.clone(), map.clone(), Key::new(1))?;
    let step_dedup_us = median_us(a.steps, |i| {
        dedup.step(&replay, Key::new(2).fold_in(i)).expect("step");
    });
    let mut plain = Allo::new(AlloConfig { dedup: false, ..cfg }, map.clone(), Key::new(1))?;
    let step_plain_us = median_us(a.steps.min(50), |i| {
        plain.step(&replay, Key::new(2).fold_in(i)).expect("step");
    });
    if a.json {
        println!(
            "{}",
            json!({"map": a.map, "states": map.num_states(), "batch": b, "sample_us": sample_us,
                   "step_dedup_us": step_dedup_us, "step_plain_us": step_plain_us})
        );
    } else {
        println!(
            "ALLO on {} ({} states), batch 4×{b}: sampling {sample_us:.0} µs; step {:.2} ms deduplicated, {:.2} ms plain",
            a.map,
            map.num_states(),
            step_dedup_us / 1e3,
            step_plain_us / 1e3
        );
    }
    Ok(())
}

#[derive(Args, Clone)]
pub struct TrainArgs {
    /// A map file (the paper code's text format) or `builtin:NAME` (open-N, rooms-K-N,
    /// maze-N-SEED).
    #[arg(long, default_value = "builtin:rooms-2-5")]
    map: String,
    /// Gradient steps (in total, counting a resumed run's).
    #[arg(long, default_value_t = 20_000)]
    steps: u64,
    /// Seed (data, initialisation and batches).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// `allo` or `ggdo`.
    #[arg(long, default_value = "allo")]
    method: String,
    /// Components.
    #[arg(long, default_value_t = 11)]
    d: usize,
    /// Rows per sub-batch.
    #[arg(long, default_value_t = 1024)]
    batch: usize,
    /// Transition samples collected, in 50-step episodes (the paper's 12-map study passes
    /// 3,000,000 in `exp2.sh`; its 3-map study 200,000). Maps with nearly equal eigenvalues
    /// need the larger data set: the representation converges to the empirical operator's
    /// eigenvectors.
    #[arg(long, default_value_t = 3_000_000)]
    samples: usize,
    /// Initial barrier coefficient (default: the method's, 0.5 for ALLO, 2.0 for GGDO).
    #[arg(long)]
    barrier: Option<f64>,
    /// Barrier increase rate (default: the method's, 0.01 / 0).
    #[arg(long)]
    lr_barrier: Option<f64>,
    /// Evaluate the cosine similarity every K steps.
    #[arg(long, default_value_t = 1000)]
    eval_every: u64,
    /// Write a checkpoint (and `eigenvectors-<step>.png`, drawn off the training thread) every
    /// K steps (0: only at the end), so a killed run resumes from its last checkpoint.
    #[arg(long, default_value_t = 10_000)]
    checkpoint_every: u64,
    /// Continue the run in this folder from its checkpoint (same flags as the original run).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Parent folder of the run folder.
    #[arg(long, default_value = "runs")]
    out_dir: PathBuf,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn config(a: &TrainArgs) -> Result<AlloConfig> {
    let mut cfg = match a.method.as_str() {
        "allo" => AlloConfig::paper(),
        "ggdo" => AlloConfig::ggdo(),
        m => bail!("--method {m}: use allo or ggdo"),
    };
    cfg.d = a.d;
    cfg.batch = a.batch;
    if let Some(b) = a.barrier {
        cfg.barrier_init = b;
    }
    if let Some(l) = a.lr_barrier {
        cfg.lr_barrier = l;
    }
    cfg.validate()?;
    Ok(cfg)
}

pub fn train(a: TrainArgs) -> Result<()> {
    let map = Arc::new(GridMap::resolve(&a.map)?);
    let cfg = config(&a)?;
    if a.d > map.num_states() {
        bail!("--d {}: the map {} has only {} states", a.d, a.map, map.num_states());
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build()?;
    let episodes = a.samples.div_ceil(50).max(1);
    let (dir, mut learner, metrics) = match &a.resume {
        Some(dir) => {
            let l = Allo::load_checkpoint(cfg.clone(), map.clone(), &dir.join("checkpoint"))
                .with_context(|| format!("{}: cannot resume", dir.display()))?;
            let m = MetricsWriter::resume(&dir.join("metrics.jsonl"), "step", l.steps + 1)?;
            (dir.clone(), l, m)
        }
        None => {
            let name = a.map.trim_start_matches("builtin:").replace(['/', '.'], "_");
            let dir = run_dir("allo", &format!("{}-{name}", a.method), a.seed, Some(&a.out_dir))?;
            write_atomic(
                &dir.join("config.json"),
                serde_json::to_string_pretty(&json!({
                    "map": a.map, "method": a.method, "d": cfg.d, "batch": cfg.batch,
                    "hidden": cfg.hidden, "lr": cfg.lr, "discount": cfg.discount,
                    "barrier_init": cfg.barrier_init, "lr_barrier": cfg.lr_barrier,
                    "lr_duals": cfg.lr_duals, "samples": a.samples, "steps": a.steps,
                    "seed": a.seed, "commit": git_commit(),
                }))?
                .as_bytes(),
            )?;
            let l = Allo::new(cfg.clone(), map.clone(), Key::new(a.seed).fold_in(1))?;
            (dir.clone(), l, MetricsWriter::new(&dir.join("metrics.jsonl"))?)
        }
    };
    let replay = pool.install(|| collect(map.clone(), episodes, 50, 64, a.seed))?;
    let truth = ground_truth(&map, cfg.d)?;
    let key = Key::new(a.seed).fold_in(2);
    let mut progress = Progress::new(a.steps, "steps");
    let mut last_cos = f64::NAN;
    let start = learner.steps;
    let t0 = std::time::Instant::now();
    let mut drawers = Vec::new();
    pool.install(|| -> Result<()> {
        while learner.steps < a.steps {
            let t = learner.steps;
            let m = learner.step(&replay, key.fold_in(t))?;
            let done = t + 1;
            if done % a.eval_every == 0 || done == a.steps {
                last_cos = truth.cosine_similarity(&learner.representation()).0;
                metrics.send(json!({"step": done, "loss": m.loss, "graph": m.graph,
                    "barrier": m.barrier, "cosine_similarity": last_cos,
                    "encoder_rows": m.encoder_rows}));
            }
            if a.checkpoint_every > 0 && done % a.checkpoint_every == 0 {
                learner.save_checkpoint(&dir.join("checkpoint"))?;
                // Heat-maps of this checkpoint are drawn and written off the training thread.
                let (rep, map, truth) = (learner.representation(), map.clone(), truth.clone());
                let path = dir.join(format!("eigenvectors-{done}.png"));
                drawers.push(std::thread::spawn(move || heatmaps(&map, &truth, &rep).save(&path)));
            }
            let cos = if last_cos.is_nan() { "-".to_string() } else { format!("{last_cos:.4}") };
            progress.tick(done, &format!("cos {cos} b {:.3}", m.barrier));
        }
        Ok(())
    })?;
    let secs = t0.elapsed().as_secs_f64();
    for d in drawers {
        d.join().map_err(|_| anyhow::anyhow!("a heat-map thread panicked"))??;
    }
    learner.save_checkpoint(&dir.join("checkpoint"))?;
    metrics.finish()?;
    let rep = learner.representation();
    let (avg, sims) = truth.cosine_similarity(&rep);
    heatmaps(&map, &truth, &rep).save(&dir.join("eigenvectors.png"))?;
    let est = learner.eigenvalue_estimates();
    let sr = truth.sr_eigenvalues(cfg.discount);
    let mut md = format!(
        "# allo train: {} on {}\n\n- steps: {} ({} this launch, {:.1} s, {:.2} ms/step)\n- average cosine similarity: {avg:.4}\n- barrier: {:.4}\n- commit: {}\n\n| component | cosine | true SR eigenvalue | estimate from duals |\n|---:|---:|---:|---:|\n",
        a.method,
        a.map,
        learner.steps,
        learner.steps - start,
        secs,
        1e3 * secs / (learner.steps - start).max(1) as f64,
        learner.barrier,
        git_commit()
    );
    for i in 0..cfg.d {
        md.push_str(&format!("| {} | {:.4} | {:.4} | {:.4} |\n", i + 1, sims[i], sr[i], est[i]));
    }
    md.push_str("\nFiles: `config.json`, `metrics.jsonl`, `eigenvectors.png` (true top row, learned bottom row, sign-aligned), `checkpoint/` (resume with `--resume <this folder>`).\n");
    write_atomic(&dir.join("summary.md"), md.as_bytes())?;
    println!(
        "average cosine similarity {avg:.4} after {} steps ({:.2} ms/step); run folder {}",
        learner.steps,
        1e3 * secs / (learner.steps - start).max(1) as f64,
        dir.display()
    );
    Ok(())
}

/// True (top) and learned (bottom) eigenvectors as heat-maps, one column per component;
/// learned columns sign-aligned to the truth. Blue negative, red positive, walls grey.
fn heatmaps(map: &GridMap, truth: &GroundTruth, rep: &[f64]) -> Canvas {
    let (n, d) = (truth.num_states, truth.d);
    let cell = (120 / map.rows.max(map.cols)).max(2) as i64;
    let (pw, ph) = (cell * map.cols as i64 + 8, cell * map.rows as i64 + 8);
    let mut c = Canvas::new((pw * d as i64) as usize, (2 * ph + 20) as usize);
    let color = |v: f64| -> [u8; 3] {
        let t = (v.clamp(-1.0, 1.0) * 255.0) as i64;
        if t >= 0 {
            [255, (255 - t) as u8, (255 - t) as u8]
        } else {
            [(255 + t) as u8, (255 + t) as u8, 255]
        }
    };
    let mut draw = |col: usize, row: i64, vals: &[f64]| {
        let m = vals.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
        let (x0, y0) = (col as i64 * pw + 4, row * ph + 4);
        for r in 0..map.rows {
            for q in 0..map.cols {
                let (x, y) = (x0 + q as i64 * cell, y0 + r as i64 * cell);
                c.rect(x, y, x + cell, y + cell, [150, 150, 150]);
            }
        }
        for (s, &(r, q)) in map.cells.iter().enumerate() {
            let (x, y) = (x0 + q as i64 * cell, y0 + r as i64 * cell);
            c.rect(x, y, x + cell, y + cell, color(vals[s] / m));
        }
    };
    for i in 0..d {
        let t = truth.vector(i);
        let mut l: Vec<f64> = (0..n).map(|s| rep[s * d + i]).collect();
        if l.iter().zip(t).map(|(a, b)| a * b).sum::<f64>() < 0.0 {
            l.iter_mut().for_each(|v| *v = -*v);
        }
        draw(i, 0, t);
        draw(i, 1, &l);
    }
    c.text(4, 2 * ph + 4, 2, "TOP TRUE  BOTTOM LEARNED", [0, 0, 0]);
    c
}
