//! `kestrel hunt`: the multi-agent treasure hunt with one IQN learner per agent: train (progress,
//! metrics and episode renderings written off the training thread, checkpoints, resume,
//! learning curve, summary), play a trained checkpoint, and bench the parts.

use crate::run::{
    Canvas, MetricsWriter, Progress, Series, git_commit, line_plot, median_pair_us, median_us,
    run_dir, write_atomic,
};
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use kestrel_agents::hunt::{Hunt, HuntConfig, TurnOrder};
use kestrel_agents::iqn::IqnLearner;
use kestrel_core::Key;
use kestrel_envs::treasure::{KeyDraws, TreasureHunt, TreasureObs, TreasureParams};
use kestrel_nn::matmul::{Op, matmul};
use kestrel_replay::FrameReplay;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

#[derive(Subcommand)]
pub enum HuntCmd {
    /// Train one IQN learner per agent (sorrel's treasure-hunt defaults).
    Train(TrainArgs),
    /// Render greedy play of a trained run's checkpoint.
    Play(PlayArgs),
    /// Time an environment turn and an IQN update (batch 64, 12 × 12 quantiles, layer 250).
    Bench(BenchArgs),
}

/// The run's settings; saved as the run folder's `config.json` (resume and play read it).
#[derive(Args, Clone, Debug, Serialize, Deserialize)]
pub struct WorldArgs {
    /// Agents.
    #[arg(long, default_value_t = 2)]
    agents: usize,
    /// Observation encoding: rgb (sorrel's main.py) or onehot.
    #[arg(long, default_value = "rgb")]
    obs: String,
    /// World side including the wall border.
    #[arg(long, default_value_t = 21)]
    size: usize,
    /// Item spawn probability per empty cell per turn.
    #[arg(long, default_value_t = 0.005)]
    spawn_prob: f64,
    /// Turns per epoch.
    #[arg(long, default_value_t = 100)]
    turns: u32,
    /// Independent worlds played at once.
    #[arg(long, default_value_t = 1)]
    worlds: usize,
    /// Gradient steps per agent after every epoch (sorrel: 1).
    #[arg(long, default_value_t = 1)]
    updates_per_epoch: usize,
    /// Extra gradient steps per agent per turn (a ratio, e.g. 0.25).
    #[arg(long, default_value_t = 0.0)]
    updates_per_turn: f64,
    /// Turn order: sequential (sorrel's) or simultaneous.
    #[arg(long, default_value = "sequential")]
    order: String,
    /// Hidden width of the IQN.
    #[arg(long, default_value_t = 250)]
    layer: usize,
    /// Gradient-step batch.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    /// Replay frames per agent and world.
    #[arg(long, default_value_t = 1024)]
    capacity: usize,
    /// n-step returns (sorrel: 1-step).
    #[arg(long, default_value_t = 1)]
    n_step: usize,
    /// Prioritised replay (α 0.6, β 0.4).
    #[arg(long)]
    prioritized: bool,
}

impl WorldArgs {
    fn config(&self) -> Result<HuntConfig> {
        let obs = match self.obs.as_str() {
            "rgb" => TreasureObs::Rgb,
            "onehot" => TreasureObs::OneHot,
            o => bail!("--obs {o}: use rgb or onehot"),
        };
        let world = TreasureParams {
            height: self.size,
            width: self.size,
            num_agents: self.agents,
            spawn_prob: self.spawn_prob,
            obs,
            max_turns: self.turns,
            ..TreasureParams::default()
        };
        world.validate()?;
        let mut c = HuntConfig::sorrel(world);
        c.worlds = self.worlds;
        c.turns = self.turns;
        c.updates_per_epoch = self.updates_per_epoch;
        c.updates_per_turn = self.updates_per_turn;
        c.order = match self.order.as_str() {
            "sequential" => TurnOrder::Sequential,
            "simultaneous" => TurnOrder::Simultaneous,
            o => bail!("--order {o}: use sequential or simultaneous"),
        };
        c.iqn.layer = self.layer;
        c.iqn.batch = self.batch;
        c.iqn.capacity = self.capacity;
        c.iqn.n_step = self.n_step;
        if self.prioritized {
            c.iqn.prioritized = Some(kestrel_replay::Prioritized::default());
        }
        c.validate()?;
        Ok(c)
    }
}

#[derive(Args)]
pub struct TrainArgs {
    #[command(flatten)]
    world: WorldArgs,
    /// Epochs (sorrel's default run is 1,001: its loop runs epochs + 1).
    #[arg(long, default_value_t = 1001)]
    epochs: u64,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Render an epoch's episode every this many epochs (0: never), off the training thread.
    #[arg(long, default_value_t = 50)]
    record_every: u64,
    /// Checkpoint every this many epochs (0: only at the end).
    #[arg(long, default_value_t = 100)]
    checkpoint_every: u64,
    /// Continue the run in this folder from its checkpoint.
    #[arg(long)]
    resume: Option<PathBuf>,
    /// Where run folders go.
    #[arg(long, default_value = "runs")]
    out_dir: PathBuf,
    /// Worker threads (agents' gradient steps run in parallel).
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

#[derive(Args)]
pub struct PlayArgs {
    /// A `kestrel hunt train` run folder (its `config.json` and `checkpoint/`).
    #[arg(long)]
    checkpoint: PathBuf,
    /// Seed of the played world.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Output PNG (a sheet of every turn's frame).
    #[arg(long, default_value = "hunt-play.png")]
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

/// Frames of one episode (one world) laid out in rows of 10, each cell `px` pixels.
fn sheet(p: &TreasureParams, frames: &[Vec<u8>], title: &str) -> Canvas {
    let px = 6i64;
    let (fw, fh) = (p.width as i64 * px + 6, p.height as i64 * px + 6);
    let per_row = 10i64;
    let rows = (frames.len().div_ceil(per_row as usize) as i64).max(1);
    let mut c = Canvas::new((fw * per_row) as usize, (fh * rows + 24) as usize);
    c.text(4, 4, 3, title, [0, 0, 0]);
    for (k, f) in frames.iter().enumerate() {
        let (x0, y0) = ((k as i64 % per_row) * fw + 3, (k as i64 / per_row) * fh + 24);
        for r in 0..p.height {
            for q in 0..p.width {
                let v = f[r * p.width + q] as usize;
                let (x, y) = (x0 + q as i64 * px, y0 + r as i64 * px);
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
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build()?;
    let (dir, world_args, mut hunt, metrics) = match &a.resume {
        Some(dir) => {
            let path = dir.join("config.json");
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            let saved: serde_json::Value = serde_json::from_str(&text)
                .with_context(|| format!("{}: not JSON", path.display()))?;
            let w: WorldArgs = serde_json::from_value(saved["world"].clone())
                .with_context(|| format!("{}: field world", path.display()))?;
            let h = Hunt::load_checkpoint(w.config()?, &dir.join("checkpoint"))
                .with_context(|| format!("{}: cannot resume", dir.display()))?;
            let m = MetricsWriter::resume(&dir.join("metrics.jsonl"), "epoch", h.epoch)?;
            (dir.clone(), w, h, m)
        }
        None => {
            let cfg = a.world.config()?;
            let dir = run_dir(
                "hunt",
                &format!("{}a-{}", a.world.agents, a.world.obs),
                a.seed,
                Some(&a.out_dir),
            )?;
            write_atomic(
                &dir.join("config.json"),
                serde_json::to_string_pretty(&json!({
                    "world": a.world, "epochs": a.epochs, "seed": a.seed, "commit": git_commit(),
                }))?
                .as_bytes(),
            )?;
            let h = Hunt::new(cfg, a.seed)?;
            (dir.clone(), a.world.clone(), h, MetricsWriter::new(&dir.join("metrics.jsonl"))?)
        }
    };
    let cfg = hunt.cfg.clone();
    std::fs::create_dir_all(dir.join("episodes"))?;
    let n = cfg.world.num_agents;
    let mut curve: Vec<Vec<f64>> = vec![Vec::new(); n];
    let mut progress = Progress::new(a.epochs, "epochs");
    let mut drawers = Vec::new();
    let start_epoch = hunt.epoch;
    let t0 = std::time::Instant::now();
    pool.install(|| -> Result<()> {
        while hunt.epoch < a.epochs {
            let e = hunt.epoch;
            let record = a.record_every > 0 && e.is_multiple_of(a.record_every);
            let mut frames: Vec<Vec<u8>> = Vec::new();
            let stats = hunt.run_epoch(|w| {
                if record {
                    frames.push(w[0].cells.clone());
                }
            })?;
            if record {
                // Drawn and written on a background thread.
                let (p, path) = (cfg.world.clone(), dir.join(format!("episodes/epoch-{e:05}.png")));
                let title = format!("EPOCH {e} REWARD {:.0}", stats.reward.iter().sum::<f64>());
                drawers.push(std::thread::spawn(move || sheet(&p, &frames, &title).save(&path)));
            }
            for (c, r) in curve.iter_mut().zip(&stats.reward) {
                c.push(*r);
            }
            metrics.send(json!({
                "epoch": e, "reward": stats.reward, "total_reward": stats.reward.iter().sum::<f64>(),
                "loss": stats.loss, "epsilon": stats.epsilon,
            }));
            let done = e + 1;
            if a.checkpoint_every > 0 && done % a.checkpoint_every == 0 {
                hunt.save_checkpoint(&dir.join("checkpoint"))?;
            }
            let total: f64 = stats.reward.iter().sum();
            progress.tick(done, &format!("reward {total:.0} eps {:.3}", stats.epsilon[0]));
        }
        Ok(())
    })?;
    let secs = t0.elapsed().as_secs_f64();
    for d in drawers {
        d.join().map_err(|_| anyhow::anyhow!("a rendering thread panicked"))??;
    }
    hunt.save_checkpoint(&dir.join("checkpoint"))?;
    metrics.finish()?;
    // The whole run's curve (a resumed run reads its earlier epochs back).
    let all = read_curve(&dir.join("metrics.jsonl"), n).unwrap_or(curve);
    let total: Vec<f64> = (0..all[0].len()).map(|e| all.iter().map(|c| c[e]).sum()).collect();
    let smooth = |v: &[f64]| -> Vec<(f64, f64)> {
        (0..v.len()).map(|e| (e as f64, mean_last(&v[..=e], 50))).collect()
    };
    let raw: Vec<(f64, f64)> = total.iter().enumerate().map(|(e, &r)| (e as f64, r)).collect();
    let series: Vec<Series<'_>> = vec![
        ("TOTAL REWARD", [170, 190, 230], raw),
        ("MEAN OF LAST 50", [200, 60, 40], smooth(&total)),
    ];
    line_plot(&series, "TREASURE HUNT REWARD PER EPOCH", "EPOCH", false)
        .save(&dir.join("learning_curve.png"))?;
    let epochs_now = hunt.epoch - start_epoch;
    let mut md = format!(
        "# hunt train\n\n- agents: {n}, worlds: {}, observation: {}, turns per epoch: {}\n- epochs: {} ({epochs_now} this launch, {secs:.1} s, {:.1} ms/epoch)\n- mean total reward over the last 100 epochs: {:.2}\n- commit: {}\n\n| agent | mean reward, last 100 epochs | ε now | gradient steps |\n|---:|---:|---:|---:|\n",
        cfg.worlds,
        world_args.obs,
        cfg.turns,
        hunt.epoch,
        1e3 * secs / epochs_now.max(1) as f64,
        mean_last(&total, 100),
        git_commit()
    );
    for (i, ag) in hunt.agents.iter().enumerate() {
        md.push_str(&format!(
            "| {i} | {:.2} | {:.4} | {} |\n",
            mean_last(&all[i], 100),
            ag.learner.epsilon,
            ag.learner.updates
        ));
    }
    md.push_str("\nFiles: `config.json`, `metrics.jsonl` (one line per epoch), `learning_curve.png`, `episodes/epoch-*.png` (every turn of world 0), `checkpoint/` (resume with `--resume <this folder>`; play with `kestrel hunt play --checkpoint <this folder>`).\n");
    write_atomic(&dir.join("summary.md"), md.as_bytes())?;
    println!(
        "mean total reward over the last 100 epochs {:.2} after {} epochs ({:.1} ms/epoch); run folder {}",
        mean_last(&total, 100),
        hunt.epoch,
        1e3 * secs / epochs_now.max(1) as f64,
        dir.display()
    );
    Ok(())
}

/// Reward per agent per epoch from a run's `metrics.jsonl`.
fn read_curve(path: &Path, n: usize) -> Option<Vec<Vec<f64>>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut out = vec![Vec::new(); n];
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let r = v["reward"].as_array()?;
        if r.len() != n {
            return None;
        }
        for (o, x) in out.iter_mut().zip(r) {
            o.push(x.as_f64()?);
        }
    }
    (!out[0].is_empty()).then_some(out)
}

pub fn play(a: PlayArgs) -> Result<()> {
    let path = a.checkpoint.join("config.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    let saved: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
    let w: WorldArgs = serde_json::from_value(saved["world"].clone())
        .with_context(|| format!("{}: field world", path.display()))?;
    let hunt = Hunt::load_checkpoint(w.config()?, &a.checkpoint.join("checkpoint"))
        .with_context(|| format!("{}: cannot load", a.checkpoint.display()))?;
    let mut frames = Vec::new();
    let rewards = hunt.play(Key::new(a.seed), |w| frames.push(w[0].cells.clone()))?;
    let title = format!("GREEDY PLAY AFTER {} EPOCHS", hunt.epoch);
    sheet(&hunt.cfg.world, &frames, &title).save(&a.out)?;
    let r: Vec<String> = rewards.iter().map(|r| format!("{r:.0}")).collect();
    println!("rewards per agent: {}; frames in {}", r.join(", "), a.out.display());
    Ok(())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let w = WorldArgs {
        agents: 2,
        obs: a.obs.clone(),
        size: 21,
        spawn_prob: 0.005,
        turns: 100,
        worlds: 1,
        updates_per_epoch: 1,
        updates_per_turn: 0.0,
        order: "sequential".into(),
        layer: 250,
        batch: 64,
        capacity: 1024,
        n_step: 1,
        prioritized: false,
    };
    let cfg = w.config()?;
    let p = cfg.world.clone();
    // Environment turn, 2 agents: spawning and both moves (observation and action choice
    // excluded, as the target).
    let mut s = TreasureHunt::new_world(&p, &mut Key::new(1).rng());
    let mut rewards = [0.0f32; 2];
    let mut rng = Key::new(2).rng();
    let turn_us = median_us(a.reps * 100, |t| {
        if t % 100 == 0 {
            s = TreasureHunt::new_world(&p, &mut Key::new(t).rng());
        }
        let acts = [rng.below(4) as u8, rng.below(4) as u8];
        TreasureHunt::turn(
            &p,
            &mut s,
            &acts,
            &mut KeyDraws(Key::new(3).fold_in(t).rng()),
            &mut rewards,
        );
    });
    // Observation of both agents.
    let mut obs = vec![0.0f32; p.obs_len()];
    let observe_us = median_us(a.reps * 10, |_| {
        for ag in 0..2 {
            TreasureHunt::observe(&p, &s, ag, &mut obs);
        }
    });
    // IQN update: a buffer of random play, then timed gradient steps.
    let mut learner = IqnLearner::new(cfg.iqn.clone(), Key::new(4))?;
    let mut buf = vec![FrameReplay::new(cfg.iqn.replay())?];
    let mut r = Key::new(5).rng();
    let mut frame = vec![0.0f32; p.obs_len()];
    let mut st = TreasureHunt::new_world(&p, &mut Key::new(6).rng());
    for e in 0..10 {
        buf[0].begin_episode();
        for t in 0..100u32 {
            TreasureHunt::observe(&p, &st, 0, &mut frame);
            let act = r.below(4);
            let acts = [act as u8, r.below(4) as u8];
            TreasureHunt::turn(
                &p,
                &mut st,
                &acts,
                &mut KeyDraws(Key::new(7).fold_in(e * 100 + t as u64).rng()),
                &mut rewards,
            );
            buf[0].push(&frame, act, rewards[0], false, t == 99)?;
        }
        TreasureHunt::observe(&p, &st, 0, &mut frame);
        buf[0].push_final(&frame)?;
    }
    // The same update's matrix products alone, on the same shapes, through the same GEMM
    // (the floor a fused implementation could reach on this machine), timed in alternation
    // with the update so their ratio is taken under the same machine conditions.
    let (bb, rr, ii, ll, cc) = (64usize, 64 * 12usize, cfg.iqn.state_dim(), 250usize, 64usize);
    let shapes: Vec<(usize, usize, usize, Op, Op)> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.extend([
                (bb, ii, ll, Op::N, Op::N),
                (rr, cc, ll, Op::N, Op::N),
                (rr, ll, ll, Op::N, Op::N),
                (rr, ll, 4, Op::N, Op::N),
                (rr, ll, 1, Op::N, Op::N),
            ]);
        }
        v.extend([
            (ll, rr, 4, Op::T, Op::N),
            (rr, 4, ll, Op::N, Op::T),
            (ll, rr, 1, Op::T, Op::N),
            (rr, 1, ll, Op::N, Op::T),
            (ll, rr, ll, Op::T, Op::N),
            (rr, ll, ll, Op::N, Op::T),
            (cc, rr, ll, Op::T, Op::N),
            (ii, bb, ll, Op::T, Op::N),
        ]);
        v
    };
    let big = rr * ll.max(ii);
    let (ga, gb, mut gc) = (vec![0.01f32; big], vec![0.02f32; big], vec![0.0f32; big]);
    let mut failed = None;
    let (update_us, gemm_us) = median_pair_us(
        a.reps,
        |i| {
            if let Err(e) = learner.train_step(&mut buf, Key::new(8).fold_in(i)) {
                failed = Some(e);
            }
        },
        |_| {
            for &(m, k, n, oa, ob) in &shapes {
                matmul(m, k, n, &ga, oa, &gb, ob, &mut gc, false);
            }
        },
    );
    if let Some(e) = failed.take() {
        return Err(e).context("IQN update during the bench");
    }
    // Greedy action selection for one state (batch 1, 12 τ samples, no noise).
    learner.epsilon = 0.0;
    let state = vec![0.1f32; cfg.iqn.state_dim()];
    let mut act = [0u32; 1];
    let act_us = median_us(a.reps * 10, |i| {
        if let Err(e) = learner.act(&state, Key::new(9).fold_in(i), &mut act) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e).context("action choice during the bench");
    }
    // FLOPs of one update: three forward passes (2·B rows of head, 2·B·N rows of the rest)
    // and one backward (twice the forward's GEMM FLOPs, no input gradient for the head).
    let (b, nq, l, i, c) = (64.0, 12.0, 250.0, cfg.iqn.state_dim() as f64, 64.0);
    let fwd = 2.0 * b * i * l + 2.0 * b * nq * (c * l + l * l + l * 5.0);
    let bwd = 2.0 * b * i * l + 2.0 * b * nq * (c * l + 2.0 * (l * l + l * 5.0));
    let flops = 3.0 * fwd + bwd;
    let out = json!({
        "obs": a.obs, "turn_us": turn_us, "observe_2_agents_us": observe_us,
        "iqn_update_us": update_us, "iqn_update_gflops": flops / update_us / 1e3,
        "iqn_update_mflop": flops / 1e6, "act_us": act_us, "gemm_only_us": gemm_us,
        "update_over_gemm": update_us / gemm_us, "commit": git_commit(),
    });
    if a.json {
        println!("{out}");
    } else {
        println!(
            "turn (2 agents, spawn + moves): {turn_us:.2} µs\nobserve 2 agents: {observe_us:.2} µs\nIQN update (batch 64, 12×12 quantiles, layer 250, {}): {update_us:.0} µs ({:.1} GFLOP/s of {:.0} MFLOP)\nits GEMMs alone: {gemm_us:.0} µs ({:.2}x)\ngreedy action (batch 1): {act_us:.1} µs",
            a.obs,
            flops / update_us / 1e3,
            flops / 1e6,
            update_us / gemm_us
        );
    }
    Ok(())
}
