//! Treasure-hunt training runs with their folders (`kestrel hunt train`, the Python package's
//! `kestrel.hunt.train`): episode sheets drawn off the training thread, checkpoints, exact
//! resume; and greedy play of a trained run.

use crate::launch::{Checkpoints, Launch, Outcome, finish, reopen, start};
use crate::{COMMIT, MetricsSink, Run, RunError, Summary};
use kestrel_agents::AgentError;
use kestrel_agents::runs::{HuntEvent, HuntRun, HuntRunConfig};
use kestrel_core::{FromInvalid, Key};
use kestrel_envs::treasure::TreasureParams;
use kestrel_plot::{Anchor, LinePlot, Series, Sketch};
use serde_json::json;
use std::path::{Path, PathBuf};

const ITEM_RGB: [[u8; 3]; 6] =
    [[235, 225, 190], [255, 0, 0], [203, 255, 0], [0, 255, 102], [0, 102, 255], [204, 0, 255]];

/// Frames of one episode (one world) laid out in rows of 10, each cell 6 pixels.
fn sheet(p: &TreasureParams, frames: &[Vec<u8>], title: &str) -> Sketch {
    let px = 6.0;
    let (fw, fh) = (p.width as f64 * px + 6.0, p.height as f64 * px + 6.0);
    let per_row = 10usize;
    let rows = frames.len().div_ceil(per_row).max(1);
    let mut c = Sketch::new((fw * per_row as f64) as u32, (fh * rows as f64 + 30.0) as u32);
    c.text((4.0, 4.0), 16.0, title, [0, 0, 0], Anchor::TopLeft);
    for (k, f) in frames.iter().enumerate() {
        let (x0, y0) = ((k % per_row) as f64 * fw + 3.0, (k / per_row) as f64 * fh + 30.0);
        for r in 0..p.height {
            for q in 0..p.width {
                let v = f[r * p.width + q] as usize;
                let (x, y) = (x0 + q as f64 * px, y0 + r as f64 * px);
                c.rect(x, y, x + px, y + px, ITEM_RGB[v.min(5)]);
            }
        }
    }
    c
}

fn mean_last(v: &[f64], n: usize) -> f64 {
    let s = &v[v.len().saturating_sub(n)..];
    s.iter().sum::<f64>() / s.len().max(1) as f64
}

/// The `hunt` run kind.
pub struct Hunt;

impl Run for Hunt {
    const NAME: &'static str = "hunt";
    const COMMAND: &'static str = "hunt train";
    const RESUMABLE: bool = true;
    const BUDGET: &'static str = "epochs, record_every and checkpoint_every";
    const METRICS: &'static [&'static str] = &["mean_total_reward_last_100"];
    const CURVE: &'static str = "total_reward";
    type Config = HuntRunConfig;

    fn defaults(_: Option<&HuntRunConfig>) -> HuntRunConfig {
        HuntRunConfig::default()
    }

    fn without_budget(c: &HuntRunConfig) -> HuntRunConfig {
        HuntRunConfig { epochs: 0, record_every: 0, checkpoint_every: 0, ..c.clone() }
    }

    /// See `kestrel_agents::runs::HuntRunConfig::budget`.
    fn budget(c: &HuntRunConfig, threads: usize) -> kestrel_core::Budget {
        c.budget(threads)
    }

    fn validate(c: &HuntRunConfig) -> Result<(), RunError> {
        c.hunt_config()?;
        Ok(())
    }

    fn run(
        c: HuntRunConfig,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        train(c, resume, launch)
    }
}

/// Validates `c` and trains into a new folder, or (with `resume`) continues the run in that
/// folder from its checkpoint: its saved `config.toml` is the truth, only `epochs`,
/// `record_every` and `checkpoint_every` may change. Writes `config.toml`, `record.json`,
/// `metrics.jsonl` (one line per epoch), `learning_curve.png/svg`, `episodes/`,
/// `checkpoint/`, `summary.md/json`.
pub fn train(
    c: HuntRunConfig,
    resume: Option<&Path>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let stamp = crate::registry::stamp::<Hunt>(&c);
    let (mut run, dir, mut metrics) = match resume {
        Some(folder) => {
            let mut dir = reopen::<Hunt>(folder, &c, launch.argv.clone())?;
            let run = match HuntRun::resume(c.clone(), &folder.join("checkpoint"), &stamp) {
                Ok((run, note)) => {
                    if let Some(note) = note {
                        launch.note(&mut dir, "epochs", &note)?;
                    }
                    run
                }
                Err(e) => return finish(dir, Err(e.into())),
            };
            let m = MetricsSink::resume(&dir.join("metrics.jsonl"), run.hunt.epoch + 1)?;
            (run, dir, m)
        }
        None => {
            let run = HuntRun::new(c.clone())?;
            let (dir, m) =
                start(&launch, "hunt", &format!("{}a-{:?}", c.agents, c.obs), c.seed, &c)?;
            (run, dir, m)
        }
    };
    let r = (|| -> Result<String, RunError> {
        let c = run.config().clone();
        let world = run.hunt.cfg.world.clone();
        let episodes = dir.join("episodes");
        std::fs::create_dir_all(&episodes)
            .map_err(|e| RunError::io(&episodes, "cannot create", e))?;
        let n = world.num_agents;
        let mut progress = launch.progress(c.epochs, "epochs");
        let mut drawers = Vec::new();
        let start_epoch = run.hunt.epoch;
        let mut ckpts = Checkpoints::new(dir.path(), stamp, start_epoch);
        let t0 = std::time::Instant::now();
        {
            run.run(|e| {
                match e {
                    HuntEvent::Epoch { stats, frames } => {
                        let ep = stats.epoch;
                        let total: f64 = stats.reward.iter().sum();
                        if !frames.is_empty() {
                            // Drawn and written on a background thread.
                            let (p, stem) =
                                (world.clone(), dir.join(&format!("episodes/epoch-{ep:05}")));
                            let title = format!("epoch {ep}, total reward {total:.0}");
                            drawers.push(std::thread::spawn(move || {
                                sheet(&p, &frames, &title).save(&stem)
                            }));
                        }
                        metrics
                            .log(
                                ep + 1,
                                json!({"epoch": ep, "reward": stats.reward, "total_reward": total,
                                "loss": stats.loss, "epsilon": stats.epsilon}),
                            )
                            .map_err(|e| {
                                AgentError::invalid("metrics", e, "a writable run folder")
                            })?;
                        progress.tick(
                            ep + 1,
                            &format!("reward {total:.0} eps {:.3}", stats.epsilon[0]),
                        );
                    }
                    HuntEvent::Checkpoint { hunt, .. } => {
                        ckpts.save(hunt.epoch, |d, s| hunt.save_checkpoint(d, s))?;
                    }
                }
                Ok(true)
            })?;
        }
        let secs = t0.elapsed().as_secs_f64();
        for d in drawers {
            d.join().map_err(|_| RunError::Failed("a rendering thread panicked".into()))??;
        }
        let hunt = &run.hunt;
        ckpts.save(hunt.epoch, |d, s| hunt.save_checkpoint(d, s))?;
        metrics.finish()?;
        // The whole run's curve (a resumed run reads its earlier epochs back).
        let mut all: Vec<Vec<f64>> = vec![Vec::new(); n];
        crate::for_each_metric(&dir.join("metrics.jsonl"), |v| {
            for (i, a) in all.iter_mut().enumerate() {
                a.push(v["reward"][i].as_f64().unwrap_or(f64::NAN));
            }
        })?;
        let total: Vec<f64> = (0..all[0].len()).map(|e| all.iter().map(|c| c[e]).sum()).collect();
        let smooth: Vec<(f64, f64)> =
            (0..total.len()).map(|e| (e as f64, mean_last(&total[..=e], 50))).collect();
        let raw: Vec<(f64, f64)> = total.iter().enumerate().map(|(e, &r)| (e as f64, r)).collect();
        LinePlot::new("treasure hunt: reward per epoch")
            .x_label("epoch")
            .y_label("total reward (all agents)")
            .series(Series::new("per epoch", raw).colour([170, 190, 230]))
            .series(Series::new("mean of the last 50", smooth))
            .save(&dir.join("learning_curve"))?;
        let epochs_now = hunt.epoch - start_epoch;
        let per_epoch = 1e3 * secs / epochs_now.max(1) as f64;
        let rows = hunt
            .agents
            .iter()
            .enumerate()
            .map(|(i, ag)| {
                vec![
                    i.to_string(),
                    format!("{:.2}", mean_last(&all[i], 100)),
                    format!("{:.4}", ag.learner.epsilon),
                    ag.learner.updates.to_string(),
                ]
            })
            .collect();
        Summary::new("hunt train")
            .item("world", "world", json!({"agents": n, "worlds": c.worlds, "obs": c.obs, "turns": c.turns}),
                format!("{n} agents, {} worlds, {:?} observations, {} turns per epoch", c.worlds, c.obs, c.turns))
            .item("epochs", "epochs", hunt.epoch, format!("{} ({epochs_now} this launch, {secs:.1} s, {per_epoch:.1} ms/epoch)", hunt.epoch))
            .value("mean_total_reward_last_100", "mean total reward over the last 100 epochs", mean_last(&total, 100))
            .value("commit", "commit", COMMIT)
            .table("agents", &["agent", "mean reward, last 100 epochs", "epsilon now", "gradient steps"], rows)
            .file("config.toml", "the resolved config")
            .file("metrics.jsonl", "one line per epoch")
            .file("learning_curve.png", "total reward per epoch and its running mean (also .svg)")
            .file("episodes/", "every turn of world 0 in the recorded epochs")
            .file("checkpoint/", "resume with `--resume <this folder>`; play with `kestrel hunt play --checkpoint <this folder>`")
            .write(dir.path())?;
        Ok(format!(
            "mean total reward over the last 100 epochs {:.2} after {} epochs ({per_epoch:.1} ms/epoch); run folder {}",
            mean_last(&total, 100),
            hunt.epoch,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

/// Greedy play of the trained run in `folder` on a world seeded `seed`: every turn's frame in
/// one picture at `out` (`.png` and `.svg`; an `out` ending in `.png` or `.svg` is that file
/// and its twin); returns each agent's reward and the PNG's path.
pub fn play(folder: &Path, seed: u64, out: &Path) -> Result<(Vec<f64>, PathBuf), RunError> {
    let c: HuntRunConfig = crate::load_config(
        &HuntRunConfig::default(),
        Some(&folder.join("config.toml")),
        toml::Table::new(),
        &[],
    )?;
    let ckpt = folder.join("checkpoint");
    let Some((run, _)) = HuntRun::load(&c, &ckpt, &crate::registry::stamp::<Hunt>(&c))? else {
        return Err(RunError::Failed(format!(
            "{}: no complete checkpoint to play",
            ckpt.display()
        )));
    };
    let mut frames = Vec::new();
    let rewards = run.hunt.play(Key::new(seed), |w| frames.push(w[0].cells.clone()))?;
    let title = format!("greedy play after {} epochs", run.hunt.epoch);
    let stem = match out.extension().and_then(|e| e.to_str()) {
        Some("png" | "svg") => out.with_extension(""),
        _ => out.to_path_buf(),
    };
    let files = sheet(&run.hunt.cfg.world, &frames, &title).save(&stem)?;
    Ok((rewards, files[0].clone()))
}
