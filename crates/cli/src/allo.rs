//! `kestrel allo train | bench`: config, run folder, checkpoints, heat maps here; the run in
//! `kestrel_agents::runs::AlloRun`.

use crate::common::{ConfigArgs, Flag, Progress, finish, pool, resume};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use kestrel_agents::laplacian::GroundTruth;
use kestrel_agents::runs::{AlloEvent, AlloRun, AlloRunConfig};
use kestrel_core::FromInvalid;
use kestrel_envs::GridMap;
use kestrel_plot::{ColourMap, Heatmaps, LinePlot, Panel, Series};
use kestrel_run::{MetricsSink, Summary};
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum AlloCmd {
    /// Train a Laplacian representation on a map.
    Train(Box<TrainArgs>),
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
    let t = kestrel_agents::bench::allo(&a.map, a.batch, a.steps)?;
    if a.json {
        println!(
            "{}",
            json!({"map": a.map, "states": t.states, "batch": a.batch, "sample_us": t.sample_us,
                   "step_dedup_us": t.step_dedup_us, "step_plain_us": t.step_plain_us})
        );
    } else {
        println!(
            "ALLO on {} ({} states), batch 4×{}: sampling {:.0} µs; step {:.2} ms deduplicated, {:.2} ms plain",
            a.map,
            t.states,
            a.batch,
            t.sample_us,
            t.step_dedup_us / 1e3,
            t.step_plain_us / 1e3
        );
    }
    Ok(())
}

#[derive(Args)]
pub struct TrainArgs {
    /// A map file (the paper code's text format) or `builtin:NAME` (open-N, rooms-K-N,
    /// maze-N-SEED) (config key `map`).
    #[arg(long)]
    map: Option<String>,
    /// Gradient steps in total, a resumed run's included.
    #[arg(long)]
    steps: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// allo or ggdo.
    #[arg(long)]
    method: Option<String>,
    /// Components.
    #[arg(long)]
    d: Option<u64>,
    /// Rows per sub-batch.
    #[arg(long)]
    batch: Option<u64>,
    /// Transition samples collected (3,000,000 in the paper's 12-map study).
    #[arg(long)]
    samples: Option<u64>,
    /// Evaluate the cosine similarity every K steps.
    #[arg(long)]
    eval_every: Option<u64>,
    /// Checkpoint (and draw `eigenvectors-<step>.png`) every K steps (0: only at the end).
    #[arg(long)]
    checkpoint_every: Option<u64>,
    /// Continue the run in this folder from its checkpoint; its `config.toml` is the config
    /// (only `steps` may be raised).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[command(flatten)]
    cfg: ConfigArgs,
}

pub fn train(a: TrainArgs) -> Result<()> {
    let flags = vec![
        ("map", Flag::S(a.map.clone())),
        ("steps", Flag::I(a.steps)),
        ("seed", Flag::I(a.seed)),
        ("method", Flag::S(a.method.clone())),
        ("d", Flag::I(a.d)),
        ("batch", Flag::I(a.batch)),
        ("samples", Flag::I(a.samples)),
        ("eval_every", Flag::I(a.eval_every)),
        ("checkpoint_every", Flag::I(a.checkpoint_every)),
    ];
    let pool = pool(Some(a.threads))?;
    let (mut run, dir, mut metrics) = match &a.resume {
        Some(folder) => {
            let (c, dir) = resume(
                folder,
                &a.cfg,
                flags,
                &AlloRunConfig::default(),
                |c| AlloRunConfig { steps: 0, ..c.clone() },
                "steps",
            )?;
            let run = AlloRun::resume(c, &folder.join("checkpoint"))
                .with_context(|| format!("{}: cannot resume", folder.display()))?;
            let m = MetricsSink::resume(&dir.join("metrics.jsonl"), run.learner().steps + 1)?;
            (run, dir, m)
        }
        None => {
            let c: AlloRunConfig = a.cfg.load(&AlloRunConfig::default(), flags)?;
            let run = AlloRun::new(c.clone())?;
            let name = format!("{:?}-{}", c.method, c.map.trim_start_matches("builtin:"));
            let name =
                name.rsplit('/').next().unwrap_or(&name).trim_end_matches(".txt").to_string();
            let (dir, m) = crate::common::start(&a.cfg.out_dir, "allo", &name, c.seed, &c)?;
            (run, dir, m)
        }
    };
    let r = (|| -> Result<()> {
        let c = run.config().clone();
        let (map, truth) = (run.map().clone(), run.truth().clone());
        let start = run.learner().steps;
        let mut progress = Progress::new(c.steps, "steps");
        let mut drawers = Vec::new();
        let mut curve = Vec::new();
        let t0 = std::time::Instant::now();
        pool.install(|| {
            run.run(|e| {
                match e {
                    AlloEvent::Ready { samples } => eprintln!("{samples} transitions collected"),
                    AlloEvent::Step { step, metrics: m, cosine, evaluated } => {
                        if evaluated {
                            curve.push((step as f64, cosine));
                            metrics
                                .log(
                                    step,
                                    json!({"loss": m.loss, "graph": m.graph, "barrier": m.barrier,
                                    "cosine_similarity": cosine, "encoder_rows": m.encoder_rows}),
                                )
                                .map_err(|e| {
                                    kestrel_agents::AgentError::invalid(
                                        "metrics",
                                        e,
                                        "a writable run folder",
                                    )
                                })?;
                        }
                        let cos = if cosine.is_nan() { "-".into() } else { format!("{cosine:.4}") };
                        progress.tick(step, &format!("cos {cos} b {:.3}", m.barrier));
                    }
                    AlloEvent::Checkpoint { step, learner } => {
                        learner.save_checkpoint(&dir.join("checkpoint"))?;
                        // The heat maps of this checkpoint are drawn off the training thread.
                        let (rep, map, truth) =
                            (learner.representation(), map.clone(), truth.clone());
                        let stem = dir.join(&format!("eigenvectors-{step}"));
                        drawers.push(std::thread::spawn(move || {
                            heatmaps(&map, &truth, &rep).save(&stem)
                        }));
                    }
                }
                Ok(true)
            })
        })?;
        let secs = t0.elapsed().as_secs_f64();
        for d in drawers {
            d.join().map_err(|_| anyhow::anyhow!("a heat-map thread panicked"))??;
        }
        let learner = run.learner();
        learner.save_checkpoint(&dir.join("checkpoint"))?;
        metrics.finish()?;
        let rep = learner.representation();
        let (avg, sims) = truth.cosine_similarity(&rep);
        heatmaps(&map, &truth, &rep).save(&dir.join("eigenvectors"))?;
        LinePlot::new(format!("{:?} on {}", c.method, c.map))
            .x_label("gradient step")
            .y_label("average cosine similarity")
            .series(Series::new("this launch", curve))
            .save(&dir.join("cosine"))?;
        let est = learner.eigenvalue_estimates();
        let sr = truth.sr_eigenvalues(learner.config().discount);
        let per_step = 1e3 * secs / (learner.steps - start).max(1) as f64;
        let rows: Vec<Vec<String>> = (0..c.d)
            .map(|i| {
                vec![
                    format!("{}", i + 1),
                    format!("{:.4}", sims[i]),
                    format!("{:.4}", sr[i]),
                    format!("{:.4}", est[i]),
                ]
            })
            .collect();
        Summary::new(format!("allo train: {:?} on {}", c.method, c.map))
            .item(
                "steps",
                "steps",
                learner.steps,
                format!(
                    "{} ({} this launch, {secs:.1} s, {per_step:.2} ms/step)",
                    learner.steps,
                    learner.steps - start
                ),
            )
            .value("cosine_similarity", "average cosine similarity", avg)
            .value("barrier", "barrier", learner.barrier)
            .value("commit", "commit", kestrel_run::COMMIT)
            .table(
                "components",
                &["component", "cosine", "true SR eigenvalue", "estimate from duals"],
                rows,
            )
            .file("config.toml", "the resolved config")
            .file("metrics.jsonl", "one line per evaluation")
            .file(
                "eigenvectors.png",
                "true (top) and learned (bottom, sign-aligned) eigenvectors (also .svg)",
            )
            .file("cosine.png", "average cosine similarity per evaluation (also .svg)")
            .file("checkpoint/", "resume with `--resume <this folder>`")
            .write(dir.path())?;
        println!(
            "average cosine similarity {avg:.4} after {} steps ({per_step:.2} ms/step); run folder {}",
            learner.steps,
            dir.path().display()
        );
        Ok(())
    })();
    finish(dir, r)
}

/// True (top row) and learned (bottom row) eigenvectors as heat maps over the map, one column
/// per component; learned columns sign-aligned to the truth and each scaled to its largest
/// magnitude; walls are empty cells.
fn heatmaps(map: &GridMap, truth: &GroundTruth, rep: &[f64]) -> Heatmaps {
    let (n, d) = (truth.num_states, truth.d);
    let mut figure = Heatmaps::new("Laplacian eigenvectors: true (top), learned (bottom)")
        .columns(d)
        .colour_map(ColourMap::Diverging)
        .shared_scale(true)
        .panel_size((900 / d.max(1)).clamp(60, 160) as u32)
        .colour_bar_label("component value / max |value|");
    let grid = |vals: &[f64]| {
        let m = vals.iter().fold(1e-12f64, |m, v| m.max(v.abs()));
        let mut g = vec![f64::NAN; map.rows * map.cols];
        for (s, &(r, q)) in map.cells.iter().enumerate() {
            g[r as usize * map.cols + q as usize] = vals[s] / m;
        }
        g
    };
    let mut learned = Vec::with_capacity(d);
    for i in 0..d {
        let t = truth.vector(i);
        let mut l: Vec<f64> = (0..n).map(|s| rep[s * d + i]).collect();
        if l.iter().zip(t).map(|(a, b)| a * b).sum::<f64>() < 0.0 {
            l.iter_mut().for_each(|v| *v = -*v);
        }
        figure.push(Panel::new(format!("true {}", i + 1), map.cols, map.rows, grid(t)));
        learned.push(l);
    }
    for (i, l) in learned.iter().enumerate() {
        figure.push(Panel::new(format!("learned {}", i + 1), map.cols, map.rows, grid(l)));
    }
    figure
}
