//! `kestrel mppi run | tune | bench`: configs, run folders and pictures here; controllers,
//! presets, episodes and tuning in `kestrel_mppi`.

use crate::common::{ConfigArgs, Flag, Progress, finish, load_two_pass, pool, start};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_mppi::systems::{DiffDrive, Nav2d};
use kestrel_mppi::tune::{TuneConfig, run_tune, validate_tune};
use kestrel_mppi::{Controller, ControllerKind, Dynamics, MppiRunConfig, System};
use kestrel_plot::{LinePlot, Series, Sketch};
use kestrel_run::{Summary, write_atomic};
use serde_json::json;
use std::time::Instant;

#[derive(Subcommand)]
pub enum MppiCmd {
    /// Time `command` on the gym pendulum (pytorch-mppi's benchmark problem).
    Bench(BenchArgs),
    /// Run a controller closed loop on a system: trajectory, cost and state plots, frames.
    Run(RunArgs),
    /// Tune a controller's knobs with an evolution strategy; writes the best as a config.
    Tune(TuneArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Samples K.
    #[arg(long, default_value_t = 1000)]
    num_samples: usize,
    /// Horizon T.
    #[arg(long, default_value_t = 20)]
    horizon: usize,
    /// Commands to time.
    #[arg(long, default_value_t = 300)]
    commands: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// One JSON object.
    #[arg(long)]
    json: bool,
    /// Time tuning instead: CMA-ES with this many candidates tunes λ and Σ on jax-mppi's basic
    /// example (K=50, T=15, 20 closed-loop steps from (1, −0.5), λ₀=5, Σ₀=1).
    #[arg(long)]
    tune_pop: Option<usize>,
    /// Generations for `--tune-pop`.
    #[arg(long, default_value_t = 100)]
    tune_generations: u64,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let pool = pool(Some(a.threads))?;
    if a.commands == 0 || a.tune_generations == 0 {
        bail!("invalid commands/tune_generations = 0: at least 1 each");
    }
    if let Some(pop) = a.tune_pop {
        let mut c = TuneConfig {
            run: MppiRunConfig::defaults_for(ControllerKind::Mppi, System::Basic, 20, 0),
            pop_size: pop.max(4),
            generations: a.tune_generations,
            sigma: 0.3,
            ..TuneConfig::default()
        };
        c.run.mppi.num_samples = 50;
        let t = Instant::now();
        let r = pool.install(|| run_tune(&c, |_| true))?;
        let secs = t.elapsed().as_secs_f64();
        let us = secs * 1e6 / (c.pop_size as u64 * a.tune_generations) as f64;
        if a.json {
            println!(
                "{}",
                json!({"pop_size": c.pop_size, "generations": a.tune_generations, "threads": a.threads, "seconds": secs, "us_per_candidate_episode": us, "best_cost": r.best_cost})
            );
        } else {
            println!(
                "MPPI tuning (basic, λ and Σ, CMA-ES pop {}, {} generations), {} thread(s): {secs:.3} s, {us:.1} µs per candidate episode, best cost {:.4}",
                c.pop_size, a.tune_generations, a.threads, r.best_cost
            );
        }
        return Ok(());
    }
    let us = pool.install(|| {
        kestrel_mppi::bench::pendulum_command_us(a.num_samples, a.horizon, a.commands)
    })?;
    if a.json {
        println!(
            "{}",
            json!({"num_samples": a.num_samples, "horizon": a.horizon, "threads": a.threads, "us_per_command": us})
        );
    } else {
        println!(
            "MPPI command, pendulum, K={} T={}, {} thread(s): {us:.1} µs",
            a.num_samples, a.horizon, a.threads
        );
    }
    Ok(())
}

#[derive(Args)]
pub struct RunArgs {
    /// System: pendulum, nav2d, basic, cartpole, diff-drive (config key `system`).
    #[arg(long)]
    env: Option<String>,
    /// Controller: mppi, smppi, kmppi (config key `controller`).
    #[arg(long)]
    controller: Option<String>,
    /// Control steps.
    #[arg(long)]
    steps: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
}

pub fn run(a: RunArgs) -> Result<()> {
    let (env, ctrl, steps, seed) = (a.env.clone(), a.controller.clone(), a.steps, a.seed);
    let flags = || {
        vec![
            ("system", Flag::S(env.clone())),
            ("controller", Flag::S(ctrl.clone())),
            ("steps", Flag::I(steps)),
            ("seed", Flag::I(seed)),
        ]
    };
    let c: MppiRunConfig = load_two_pass(&a.cfg, flags, |f: Option<&MppiRunConfig>| {
        let (k, s) =
            f.map_or((ControllerKind::Mppi, System::Pendulum), |f| (f.controller, f.system));
        MppiRunConfig::defaults(k, s)
    })?;
    c.visit(Validate)?;
    let pool = pool(a.threads)?;
    let name = format!("{}-{}", c.controller.name(), c.system.name());
    let (dir, mut metrics) = start(&a.cfg.out_dir, "mppi", &name, c.seed, &c)?;
    let r = (|| -> Result<()> {
        let t0 = Instant::now();
        let mut progress = Progress::new(c.steps as u64, "steps");
        let mut total = 0.0;
        let ep = pool.install(|| {
            c.episode(|t, cost| {
                total += cost;
                progress.tick(t as u64 + 1, &format!("cost so far {total:.4}"));
            })
        })?;
        let secs = t0.elapsed().as_secs_f64();
        let mut traj = String::new();
        for (t, (x, u)) in ep.states.iter().zip(&ep.controls).enumerate() {
            metrics
                .log(t as u64 + 1, json!({"cost": ep.costs[t], "x": ep.states[t + 1], "u": u}))?;
            traj.push_str(&json!({"t": t, "x": x, "u": u, "cost": ep.costs[t]}).to_string());
            traj.push('\n');
        }
        metrics.finish()?;
        write_atomic(&dir.join("trajectory.jsonl"), traj.as_bytes())?;
        let steps_x = |v: &[f64]| -> Vec<(f64, f64)> {
            v.iter().enumerate().map(|(t, c)| (t as f64, *c)).collect()
        };
        LinePlot::new(format!("{} on {}: running cost", c.controller.name(), c.system.name()))
            .x_label("step")
            .y_label("running cost")
            .series(Series::new("running cost", steps_x(&ep.costs)))
            .save(&dir.join("cost"))?;
        let mut states =
            LinePlot::new(format!("{} on {}: state", c.controller.name(), c.system.name()))
                .x_label("step")
                .y_label("state variable");
        for (i, label) in state_names(c.system).iter().enumerate() {
            let v: Vec<f64> = ep.states.iter().map(|x| x[i]).collect();
            states = states.series(Series::new(*label, steps_x(&v)));
        }
        states.save(&dir.join("state"))?;
        frames(c.system, &ep.states, &dir.join("frames"))?;
        let last = ep.states.last().cloned().unwrap_or_default();
        Summary::new(format!("mppi run: {} on {}", c.controller.name(), c.system.name()))
            .value("steps", "steps", c.steps as u64)
            .value("total_cost", "total running cost", ep.total_cost)
            .item("final_state", "final state", last.clone(), format!("{last:?}"))
            .item("wall_seconds", "wall time", secs, format!("{secs:.2} s"))
            .value("commit", "commit", kestrel_run::COMMIT)
            .file("config.toml", "every knob, resolved (`--config` replays it)")
            .file("trajectory.jsonl", "state, control and cost per step")
            .file("cost.png", "running cost per step (also .svg)")
            .file("state.png", "every state variable per step (also .svg)")
            .file("frames.png", "the system drawn along the run (also .svg)")
            .write(dir.path())?;
        println!(
            "total running cost {:.4}, final state {last:?}; run folder {}",
            ep.total_cost,
            dir.path().display()
        );
        Ok(())
    })();
    finish(dir, r)
}

struct Validate;
impl<D: Dynamics> kestrel_mppi::presets::ControllerVisitor<D> for Validate {
    type Output = ();
    fn visit<C: Controller<Dyn = D>>(self, _c: C, _p: C::Params) {}
}

fn state_names(sys: System) -> &'static [&'static str] {
    match sys {
        System::Pendulum => &["θ (rad)", "θ̇ (rad/s)"],
        System::Nav2d => &["x", "y"],
        System::Basic => &["x₁", "x₂"],
        System::Cartpole => &["x (m)", "ẋ (m/s)", "θ (rad)", "θ̇ (rad/s)"],
        System::DiffDrive => &["x (m)", "y (m)", "heading (rad)"],
    }
}

/// The system along the run: 8 frames of the pendulum or the cart-pole; for the planar
/// systems, the path in the plane (with the goal).
fn frames(sys: System, states: &[Vec<f64>], stem: &std::path::Path) -> Result<()> {
    let (blue, red, grey, black) = ([30, 90, 200], [200, 60, 40], [190, 190, 190], [0, 0, 0]);
    if !matches!(sys, System::Pendulum | System::Cartpole) {
        let path: Vec<(f64, f64)> = states.iter().map(|x| (x[0], x[1])).collect();
        let goal = match sys {
            System::Nav2d => vec![(Nav2d::GOAL[0], Nav2d::GOAL[1])],
            System::DiffDrive => vec![(DiffDrive::GOAL[0], DiffDrive::GOAL[1])],
            _ => vec![(0.0, 0.0)],
        };
        let names = state_names(sys);
        LinePlot::new(format!("{}: path", sys.name()))
            .x_label(names[0])
            .y_label(names[1])
            .scale(kestrel_plot::Scale::Linear)
            .series(Series::new("path", path))
            .series(Series::new("goal", goal).width(8.0))
            .save(stem)?;
        return Ok(());
    }
    let (n, fw, fh) = (8usize, 160.0, 190.0);
    let mut c = Sketch::new((fw * n as f64) as u32, fh as u32);
    for f in 0..n {
        let i = f * (states.len() - 1) / (n - 1);
        let (x0, x) = (f as f64 * fw, &states[i]);
        c.line(&[(x0, 0.0), (x0, fh)], grey, 1.0);
        let (cx, cy, th, len) = if sys == System::Pendulum {
            (x0 + fw / 2.0, 80.0, x[0], 60.0)
        } else {
            let cart = x0 + fw / 2.0 + x[0].clamp(-2.4, 2.4) / 2.4 * (fw / 2.0 - 14.0);
            c.line(&[(x0 + 4.0, 148.0), (x0 + fw - 4.0, 148.0)], grey, 2.0);
            c.rect(cart - 12.0, 134.0, cart + 12.0, 146.0, black);
            (cart, 140.0, x[2], 100.0)
        };
        let (ex, ey) = (cx + len * th.sin(), cy - len * th.cos());
        c.line(&[(cx, cy), (ex, ey)], blue, 3.0);
        c.circle((ex, ey), 6.0, red);
        c.circle((cx, cy), 3.0, black);
        c.text(
            (x0 + 6.0, fh - 22.0),
            14.0,
            &format!("t = {i}"),
            black,
            kestrel_plot::Anchor::TopLeft,
        );
    }
    c.save(stem)?;
    Ok(())
}

#[derive(Args)]
pub struct TuneArgs {
    /// System (config key `run.system`).
    #[arg(long)]
    env: Option<String>,
    /// Controller (config key `run.controller`).
    #[arg(long)]
    controller: Option<String>,
    /// Knobs to tune: lambda, sigma, mu, horizon (sigma/mu tune every control dimension).
    #[arg(long, value_delimiter = ',')]
    tune: Option<Vec<String>>,
    /// Strategy: cma-es, sep-cma-es, snes, xnes, open-es, pgpe, de.
    #[arg(long)]
    strategy: Option<String>,
    /// Candidates per generation.
    #[arg(long)]
    pop_size: Option<u64>,
    /// Generations.
    #[arg(long)]
    generations: Option<u64>,
    /// Closed-loop steps per episode (config key `run.steps`).
    #[arg(long)]
    steps: Option<u64>,
    /// Seed (config key `run.seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
}

pub fn tune(a: TuneArgs) -> Result<()> {
    let flags = || {
        vec![
            ("run.system", Flag::S(a.env.clone())),
            ("run.controller", Flag::S(a.controller.clone())),
            ("run.steps", Flag::I(a.steps)),
            ("run.seed", Flag::I(a.seed)),
            ("knobs", Flag::L(a.tune.clone())),
            ("strategy", Flag::S(a.strategy.clone())),
            ("pop_size", Flag::I(a.pop_size)),
            ("generations", Flag::I(a.generations)),
        ]
    };
    let c: TuneConfig = load_two_pass(&a.cfg, flags, |f: Option<&TuneConfig>| match f {
        None => TuneConfig::default(),
        Some(f) => TuneConfig {
            run: MppiRunConfig::defaults_for(f.run.controller, f.run.system, 20, 0),
            ..TuneConfig::default()
        },
    })?;
    validate_tune(&c)?;
    let pool = pool(a.threads)?;
    let name = format!("{}-{}-{}", c.run.controller.name(), c.run.system.name(), c.strategy);
    let (dir, mut metrics) = start(&a.cfg.out_dir, "mppi-tune", &name, c.run.seed, &c)?;
    let r = (|| -> Result<()> {
        let t0 = Instant::now();
        let mut progress = Progress::new(c.generations, "generations");
        let mut io = Ok(());
        let out = pool.install(|| {
            run_tune(&c, |m| {
                io = metrics.log(m.generation, json!({"best": m.best_so_far, "best_in_generation": m.best_in_generation, "nonfinite": m.nonfinite, "sigma": m.sigma}));
                progress.tick(m.generation, &format!("best cost {:.4}", m.best_so_far));
                io.is_ok()
            })
        })?;
        io?;
        metrics.finish()?;
        let secs = t0.elapsed().as_secs_f64();
        let best_toml = kestrel_run::config::to_toml(&out.best_run)?;
        write_atomic(&dir.join("best.toml"), best_toml.as_bytes())?;
        let curve: Vec<(f64, f64)> =
            out.history.iter().map(|m| (m.generation as f64, m.best_so_far as f64)).collect();
        LinePlot::new(format!("tuning {name}"))
            .x_label("generation")
            .y_label("mean closed-loop cost, best so far")
            .series(Series::new("best so far", curve))
            .save(&dir.join("best"))?;
        let bp = &out.best_run.mppi;
        Summary::new(format!("mppi tune: {name}"))
            .item("knobs", "knobs", serde_json::to_value(&c.knobs)?, format!("{:?}", c.knobs))
            .value("start_cost", "cost at the base params", out.start_cost)
            .value("best_cost", "best cost", out.best_cost as f64)
            .item("best_lambda", "best λ", bp.lambda, format!("{:.5}", bp.lambda))
            .item("best_noise_sigma", "best Σ", bp.noise_sigma.clone(), format!("{:?}", bp.noise_sigma))
            .item("best_noise_mu", "best μ", bp.noise_mu.clone(), format!("{:?}", bp.noise_mu))
            .value("best_horizon", "best horizon", bp.horizon as u64)
            .item("wall_seconds", "wall time", secs, format!("{} generations of {} candidates in {secs:.2} s", c.generations, c.pop_size))
            .value("commit", "commit", kestrel_run::COMMIT)
            .file("best.toml", "the base run with the best knobs: `kestrel mppi run --config best.toml` replays it")
            .file("metrics.jsonl", "one line per generation")
            .file("best.png", "best cost so far per generation (also .svg)")
            .write(dir.path())?;
        println!(
            "cost {:.4} -> {:.4} (λ={:.4}, Σ={:?}) in {secs:.2} s; run folder {}",
            out.start_cost,
            out.best_cost,
            bp.lambda,
            bp.noise_sigma,
            dir.path().display()
        );
        Ok(())
    })();
    finish(dir, r)
}
