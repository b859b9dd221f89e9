//! `kestrel hunt`: the multi-agent treasure hunt with one IQN learner per agent: train (progress,
//! metrics and episode renderings written off the training thread, checkpoints, resume,
//! learning curve, summary), play a trained checkpoint, and bench the parts.

use crate::common::{ConfigArgs, Flag, Progress, finish, pool, resume, saved_config};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use kestrel_agents::runs::{HuntEvent, HuntRun, HuntRunConfig, ObsName};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_envs::treasure::TreasureParams;
use kestrel_plot::{Anchor, LinePlot, Series, Sketch};
use kestrel_run::{MetricsSink, Summary};
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum HuntCmd {
    /// Train one IQN learner per agent (sorrel's treasure-hunt defaults).
    Train(TrainArgs),
    /// Render greedy play of a trained run's checkpoint.
    Play(PlayArgs),
    /// Time an environment turn and an IQN update (batch 64, 12 × 12 quantiles, layer 250).
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct TrainArgs {
    /// Agents (config key `agents`).
    #[arg(long)]
    agents: Option<u64>,
    /// Observation encoding: rgb (sorrel's main.py) or onehot.
    #[arg(long)]
    obs: Option<String>,
    /// Independent worlds played at once.
    #[arg(long)]
    worlds: Option<u64>,
    /// Extra gradient steps per agent per turn (a ratio, e.g. 0.25).
    #[arg(long)]
    updates_per_turn: Option<f64>,
    /// Epochs in total (sorrel's default run is 1,001).
    #[arg(long)]
    epochs: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Record an epoch's episode every this many epochs (0: never), drawn off the training
    /// thread.
    #[arg(long)]
    record_every: Option<u64>,
    /// Checkpoint every this many epochs (0: only at the end).
    #[arg(long)]
    checkpoint_every: Option<u64>,
    /// Continue the run in this folder from its checkpoint; its `config.toml` is the config
    /// (only `epochs` may be raised).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Worker threads (agents' gradient steps run in parallel; results do not depend on it).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    #[command(flatten)]
    cfg: ConfigArgs,
}

#[derive(Args)]
pub struct PlayArgs {
    /// A `kestrel hunt train` run folder (its `config.toml` and `checkpoint/`).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Seed of the played world.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output picture, without extension (`.png` and `.svg` are written: every turn's frame).
    #[arg(long, default_value = "hunt-play")]
    out: PathBuf,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Observation encoding: rgb or onehot.
    #[arg(long, default_value = "rgb")]
    obs: String,
    /// Timed repetitions.
    #[arg(long, default_value_t = 300)]
    reps: u64,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

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

pub fn train(a: TrainArgs) -> Result<()> {
    let flags = || {
        vec![
            ("agents", Flag::I(a.agents)),
            ("obs", Flag::S(a.obs.clone())),
            ("worlds", Flag::I(a.worlds)),
            ("updates_per_turn", Flag::F(a.updates_per_turn)),
            ("epochs", Flag::I(a.epochs)),
            ("seed", Flag::I(a.seed)),
            ("record_every", Flag::I(a.record_every)),
            ("checkpoint_every", Flag::I(a.checkpoint_every)),
        ]
    };
    let pool = pool(Some(a.threads))?;
    let (mut run, dir, mut metrics) = match &a.resume {
        Some(folder) => {
            let same = |c: &HuntRunConfig| HuntRunConfig {
                epochs: 0,
                record_every: 0,
                checkpoint_every: 0,
                ..c.clone()
            };
            let budget = "epochs, record_every and checkpoint_every";
            let (c, dir) =
                resume(folder, &a.cfg, flags(), &HuntRunConfig::default(), same, budget)?;
            let run = HuntRun::resume(c, &folder.join("checkpoint"))
                .with_context(|| format!("{}: cannot resume", folder.display()))?;
            let m = MetricsSink::resume(&dir.join("metrics.jsonl"), run.hunt.epoch + 1)?;
            (run, dir, m)
        }
        None => {
            let c: HuntRunConfig = a.cfg.load(&HuntRunConfig::default(), flags())?;
            let run = HuntRun::new(c.clone())?;
            let name = format!("{}a-{:?}", c.agents, c.obs);
            let (dir, m) = crate::common::start(&a.cfg.out_dir, "hunt", &name, c.seed, &c)?;
            (run, dir, m)
        }
    };
    let r = (|| -> Result<()> {
        let c = run.config().clone();
        let world = run.hunt.cfg.world.clone();
        std::fs::create_dir_all(dir.join("episodes"))?;
        let n = world.num_agents;
        let mut progress = Progress::new(c.epochs, "epochs");
        let mut drawers = Vec::new();
        let start_epoch = run.hunt.epoch;
        let t0 = std::time::Instant::now();
        pool.install(|| {
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
                                kestrel_agents::AgentError::invalid(
                                    "metrics",
                                    e,
                                    "a writable run folder",
                                )
                            })?;
                        progress.tick(
                            ep + 1,
                            &format!("reward {total:.0} eps {:.3}", stats.epsilon[0]),
                        );
                    }
                    HuntEvent::Checkpoint { hunt, .. } => {
                        hunt.save_checkpoint(&dir.join("checkpoint"))?
                    }
                }
                Ok(true)
            })
        })?;
        let secs = t0.elapsed().as_secs_f64();
        for d in drawers {
            d.join().map_err(|_| anyhow::anyhow!("a rendering thread panicked"))??;
        }
        let hunt = &run.hunt;
        hunt.save_checkpoint(&dir.join("checkpoint"))?;
        metrics.finish()?;
        // The whole run's curve (a resumed run reads its earlier epochs back).
        let lines = kestrel_run::read_metrics(&dir.join("metrics.jsonl"))?;
        let reward = |v: &serde_json::Value, i: usize| v["reward"][i].as_f64().unwrap_or(f64::NAN);
        let all: Vec<Vec<f64>> =
            (0..n).map(|i| lines.iter().map(|v| reward(v, i)).collect()).collect();
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
            .value("commit", "commit", kestrel_run::COMMIT)
            .table("agents", &["agent", "mean reward, last 100 epochs", "epsilon now", "gradient steps"], rows)
            .file("config.toml", "the resolved config")
            .file("metrics.jsonl", "one line per epoch")
            .file("learning_curve.png", "total reward per epoch and its running mean (also .svg)")
            .file("episodes/", "every turn of world 0 in the recorded epochs")
            .file("checkpoint/", "resume with `--resume <this folder>`; play with `kestrel hunt play --checkpoint <this folder>`")
            .write(dir.path())?;
        println!(
            "mean total reward over the last 100 epochs {:.2} after {} epochs ({per_epoch:.1} ms/epoch); run folder {}",
            mean_last(&total, 100),
            hunt.epoch,
            dir.path().display()
        );
        Ok(())
    })();
    finish(dir, r)
}

pub fn play(a: PlayArgs) -> Result<()> {
    let c = saved_config(&a.checkpoint, &HuntRunConfig::default())?;
    let run = HuntRun::resume(c, &a.checkpoint.join("checkpoint"))
        .with_context(|| format!("{}: cannot load", a.checkpoint.display()))?;
    let mut frames = Vec::new();
    let rewards = run.hunt.play(Key::new(a.seed), |w| frames.push(w[0].cells.clone()))?;
    let title = format!("greedy play after {} epochs", run.hunt.epoch);
    let files = sheet(&run.hunt.cfg.world, &frames, &title).save(&a.out)?;
    let r: Vec<String> = rewards.iter().map(|r| format!("{r:.0}")).collect();
    println!("rewards per agent: {}; frames in {}", r.join(", "), files[0].display());
    Ok(())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let obs = match a.obs.as_str() {
        "rgb" => ObsName::Rgb,
        "onehot" => ObsName::Onehot,
        o => bail!("invalid obs = {o:?}: rgb or onehot"),
    };
    let t = kestrel_agents::bench::hunt(obs, a.reps)?;
    let gflops = t.update_flops / t.update_us / 1e3;
    let out = json!({
        "obs": a.obs, "turn_us": t.turn_us, "observe_2_agents_us": t.observe_us,
        "iqn_update_us": t.update_us, "iqn_update_gflops": gflops,
        "iqn_update_mflop": t.update_flops / 1e6, "act_us": t.act_us, "gemm_only_us": t.gemm_us,
        "update_over_gemm": t.update_us / t.gemm_us, "commit": kestrel_run::COMMIT,
    });
    if a.json {
        println!("{out}");
    } else {
        println!(
            "turn (2 agents, spawn + moves): {:.2} µs\nobserve 2 agents: {:.2} µs\nIQN update (batch 64, 12×12 quantiles, layer 250, {}): {:.0} µs ({gflops:.1} GFLOP/s of {:.0} MFLOP)\nits GEMMs alone: {:.0} µs ({:.2}x)\ngreedy action (batch 1): {:.1} µs",
            t.turn_us,
            t.observe_us,
            a.obs,
            t.update_us,
            t.update_flops / 1e6,
            t.gemm_us,
            t.update_us / t.gemm_us,
            t.act_us
        );
    }
    Ok(())
}
