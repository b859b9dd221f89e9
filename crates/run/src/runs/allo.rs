//! ALLO training runs with their folders (`kestrel allo train`, the Python package's
//! `kestrel.allo.train`): checkpoints every `checkpoint_every` steps with heat maps drawn off
//! the training thread, exact resume from a folder.

use crate::launch::{Checkpoints, Launch, Outcome, finish, reopen, start};
use crate::{COMMIT, MetricsSink, Run, RunError, Summary};
use kestrel_agents::AgentError;
use kestrel_agents::laplacian::GroundTruth;
use kestrel_agents::runs::{AlloEvent, AlloRun, AlloRunConfig};
use kestrel_core::FromInvalid;
use kestrel_envs::GridMap;
use kestrel_plot::{ColourMap, Heatmaps, LinePlot, Panel, Series};
use serde_json::json;
use std::path::Path;

/// The `allo` run kind.
pub struct Allo;

impl Run for Allo {
    const NAME: &'static str = "allo";
    const COMMAND: &'static str = "allo train";
    const RESUMABLE: bool = true;
    const BUDGET: &'static str = "steps";
    const METRICS: &'static [&'static str] = &["cosine_similarity"];
    const CURVE: &'static str = "cosine_similarity";
    type Config = AlloRunConfig;

    fn defaults(_: Option<&AlloRunConfig>) -> AlloRunConfig {
        AlloRunConfig::default()
    }

    fn without_budget(c: &AlloRunConfig) -> AlloRunConfig {
        AlloRunConfig { steps: 0, ..c.clone() }
    }

    /// See `kestrel_agents::runs::AlloRunConfig::budget`.
    fn budget(c: &AlloRunConfig, threads: usize) -> kestrel_core::Budget {
        c.budget(threads)
    }

    fn validate(c: &AlloRunConfig) -> Result<(), RunError> {
        c.validate()?;
        GridMap::resolve(&c.map).map_err(AgentError::from)?;
        Ok(())
    }

    fn run(
        c: AlloRunConfig,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        train(c, resume, launch)
    }
}

/// Validates `c` and trains into a new folder, or (with `resume`) continues the run in that
/// folder from its checkpoint: its saved `config.toml` is the truth, only `steps` may change.
/// Writes `config.toml`, `record.json`, `metrics.jsonl` (one line per evaluation),
/// `checkpoint/`, `eigenvectors[-STEP].png/svg`, `cosine.png/svg`, `summary.md/json`.
pub fn train(
    c: AlloRunConfig,
    resume: Option<&Path>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let stamp = crate::registry::stamp::<Allo>(&c);
    let (mut run, dir, mut metrics) = match resume {
        Some(folder) => {
            let mut dir = reopen::<Allo>(folder, &c, launch.argv.clone())?;
            let run = match AlloRun::resume(c.clone(), &folder.join("checkpoint"), &stamp) {
                Ok((run, note)) => {
                    if let Some(note) = note {
                        launch.note(&mut dir, "steps", &note)?;
                    }
                    run
                }
                Err(e) => return finish(dir, Err(e.into())),
            };
            let m = MetricsSink::resume(&dir.join("metrics.jsonl"), run.learner().steps + 1)?;
            (run, dir, m)
        }
        None => {
            let run = AlloRun::new(c.clone())?;
            let map = c.map.trim_start_matches("builtin:");
            let map = map.rsplit('/').next().unwrap_or(map).trim_end_matches(".txt");
            let (dir, m) = start(&launch, "allo", &format!("{:?}-{map}", c.method), c.seed, &c)?;
            (run, dir, m)
        }
    };
    let r = (|| -> Result<String, RunError> {
        let c = run.config().clone();
        let (map, truth) = (run.map().clone(), run.truth().clone());
        let start = run.learner().steps;
        let mut progress = launch.progress(c.steps, "steps");
        let mut drawers = Vec::new();
        let mut curve = Vec::new();
        let mut ckpts = Checkpoints::new(dir.path(), stamp, start);
        let t0 = std::time::Instant::now();
        {
            run.run(|e| {
                match e {
                    AlloEvent::Ready { samples } => {
                        progress.tick(start, &format!("{samples} transitions collected"))
                    }
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
                                    AgentError::invalid("metrics", e, "a writable run folder")
                                })?;
                        }
                        let cos = if cosine.is_nan() { "-".into() } else { format!("{cosine:.4}") };
                        progress.tick(step, &format!("cos {cos} b {:.3}", m.barrier));
                    }
                    AlloEvent::Checkpoint { step, learner } => {
                        ckpts.save(step, |d, s| learner.save_checkpoint(d, s))?;
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
            })?;
        }
        let secs = t0.elapsed().as_secs_f64();
        for d in drawers {
            d.join().map_err(|_| RunError::Failed("a heat-map thread panicked".into()))??;
        }
        let learner = run.learner();
        ckpts.save(learner.steps, |d, s| learner.save_checkpoint(d, s))?;
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
            .value("ms_per_step", "ms per step (this launch)", per_step)
            .value("barrier", "barrier", learner.barrier)
            .value("commit", "commit", COMMIT)
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
        Ok(format!(
            "average cosine similarity {avg:.4} after {} steps ({per_step:.2} ms/step); run folder {}",
            learner.steps,
            dir.path().display()
        ))
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
