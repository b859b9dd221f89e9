//! `kestrel mppi bench`.

use crate::run::{MetricsWriter, Progress, git_commit, log_plot, run_dir, write_atomic};
use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_core::Key;
use kestrel_mppi::systems::{BasicLinear, ContinuousCartPole, DiffDrive, Nav2d};
use kestrel_mppi::tune::{Knob, Transform, TuneProblem, TuneSpec, Tuned};
use kestrel_mppi::{Dynamics, Mppi, MppiParams, PendulumDynamics};
use serde_json::json;
use std::time::Instant;

#[derive(Subcommand)]
pub enum MppiCmd {
    /// Time `command` on the gym pendulum (pytorch-mppi's benchmark problem).
    Bench(BenchArgs),
    /// Run MPPI closed loop on a system: trajectory JSONL, cost and state plots, summary.
    Run(RunArgs),
    /// Tune MPPI's knobs with an evolution strategy: progress, best-so-far curve, summary.
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

/// Times `tune_generations` full CMA-ES generations (ask, every candidate's episode, tell).
fn bench_tune(a: &BenchArgs, pop: usize) -> Result<()> {
    use kestrel_evo::{CmaEs, CmaParams, Strategy};
    let base = default_params(System::Basic);
    let spec = spec_of(&["lambda".to_string(), "sigma".to_string()], 1, &base)?;
    let problem = TuneProblem::new(BasicLinear, spec, base, vec![start_of(System::Basic)], 20)?;
    let s = CmaEs::new(pop.max(4), problem.spec().num_dims())?;
    let sp = CmaParams { sigma_init: 0.3, ..s.default_params() };
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build()?;
    let (secs, best) = pool.install(|| {
        let t = Instant::now();
        let r = kestrel_mppi::tune::tune(&s, &sp, &problem, a.tune_generations, Key::new(0));
        (t.elapsed().as_secs_f64(), r.best_cost)
    });
    let episodes = (s.pop_size() as u64 * a.tune_generations) as f64;
    let us = secs * 1e6 / episodes;
    if a.json {
        println!(
            "{}",
            json!({"pop_size": s.pop_size(), "generations": a.tune_generations, "threads": a.threads, "seconds": secs, "us_per_candidate_episode": us, "best_cost": best})
        );
    } else {
        println!(
            "MPPI tuning (basic, λ and Σ, CMA-ES pop {}, {} generations), {} thread(s): {secs:.3} s, {us:.1} µs per candidate episode, best cost {best:.4}",
            s.pop_size(),
            a.tune_generations,
            a.threads
        );
    }
    Ok(())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    if let Some(pop) = a.tune_pop {
        return bench_tune(&a, pop);
    }
    let m = Mppi::new(PendulumDynamics);
    let p = MppiParams {
        num_samples: a.num_samples,
        horizon: a.horizon,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        ..MppiParams::new(1, 1.0)
    };
    m.validate(&p)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build()?;
    let mut s = m.init(&p);
    let mut u = [0.0];
    let us = pool.install(|| {
        for k in 0..10 {
            m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
        }
        let t = Instant::now();
        for k in 0..a.commands {
            m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
        }
        t.elapsed().as_secs_f64() * 1e6 / a.commands as f64
    });
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

/// Systems the CLI can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum System {
    /// Gym pendulum swing-up (start hanging down).
    Pendulum,
    /// 2-D navigation around a Gaussian hill.
    Nav2d,
    /// jax-mppi's basic linear system.
    Basic,
    /// Continuous-force cart-pole balancing (Gymnasium's equations), from a 0.2 rad tilt.
    Cartpole,
    /// Differential-drive robot driving to (2, 1) from the origin facing +x.
    DiffDrive,
}

fn start_of(sys: System) -> Vec<f64> {
    match sys {
        System::Pendulum => vec![std::f64::consts::PI, 0.0],
        System::Nav2d => Nav2d::START.to_vec(),
        System::Basic => vec![1.0, -0.5],
        System::Cartpole => vec![0.0, 0.0, 0.2, 0.0],
        System::DiffDrive => vec![0.0, 0.0, 0.0],
    }
}

fn default_params(sys: System) -> MppiParams {
    match sys {
        System::Pendulum => MppiParams {
            num_samples: 100,
            horizon: 15,
            u_min: vec![-2.0],
            u_max: vec![2.0],
            ..MppiParams::new(1, 10.0)
        },
        System::Nav2d => MppiParams {
            num_samples: 500,
            horizon: 20,
            u_min: vec![-1.0; 2],
            u_max: vec![1.0; 2],
            ..MppiParams::new(2, 1.0)
        },
        System::Basic => {
            MppiParams { num_samples: 50, horizon: 15, lambda: 5.0, ..MppiParams::new(1, 1.0) }
        }
        System::Cartpole => MppiParams {
            num_samples: 500,
            horizon: 50,
            u_min: vec![-10.0],
            u_max: vec![10.0],
            ..MppiParams::new(1, 10.0)
        },
        System::DiffDrive => MppiParams {
            num_samples: 300,
            horizon: 20,
            u_min: vec![-1.0, -2.0],
            u_max: vec![1.0, 2.0],
            ..MppiParams::new(2, 1.0)
        },
    }
}

/// Runs `f` with the system's dynamics.
macro_rules! with_system {
    ($sys:expr, $d:ident => $body:expr) => {
        match $sys {
            System::Pendulum => {
                let $d = PendulumDynamics;
                $body
            }
            System::Nav2d => {
                let $d = Nav2d;
                $body
            }
            System::Basic => {
                let $d = BasicLinear;
                $body
            }
            System::Cartpole => {
                let $d = ContinuousCartPole;
                $body
            }
            System::DiffDrive => {
                let $d = DiffDrive;
                $body
            }
        }
    };
}

#[derive(Args)]
pub struct RunArgs {
    /// System.
    #[arg(long, value_enum, default_value = "pendulum")]
    env: System,
    /// Control steps.
    #[arg(long, default_value_t = 200)]
    steps: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Parent folder of the run folder.
    #[arg(long, default_value = "runs")]
    out_dir: std::path::PathBuf,
}

pub fn run(a: RunArgs) -> Result<()> {
    let p = default_params(a.env);
    let (states, costs, controls) = with_system!(a.env, d => {
        let m = Mppi::new(d);
        m.validate(&p)?;
        let (nx, nu) = (m.dynamics().nx(), m.dynamics().nu());
        let mut s = m.init(&p);
        let (mut x, mut next, mut u) = (start_of(a.env), vec![0.0; nx], vec![0.0; nu]);
        let (mut states, mut costs, mut controls) = (vec![x.clone()], Vec::new(), Vec::new());
        for t in 0..a.steps {
            m.command(Key::new(a.seed).fold_in(t as u64), &p, &mut s, &x, &mut u);
            m.dynamics().step(&x, &u, t, &mut next);
            std::mem::swap(&mut x, &mut next);
            costs.push(m.dynamics().running_cost(&x, &u, t));
            states.push(x.clone());
            controls.push(u.clone());
        }
        (states, costs, controls)
    });
    let name = format!("{:?}", a.env).to_lowercase();
    let dir = run_dir("mppi", &name, a.seed, Some(&a.out_dir))?;
    let mut traj = String::new();
    for (t, (x, u)) in states.iter().zip(controls.iter()).enumerate() {
        traj.push_str(&json!({"t": t, "x": x, "u": u, "cost": costs[t]}).to_string());
        traj.push('\n');
    }
    write_atomic(&dir.join("trajectory.jsonl"), traj.as_bytes())?;
    let cost_series: Vec<(f64, f64)> =
        costs.iter().enumerate().map(|(t, c)| (t as f64, c.max(1e-12))).collect();
    log_plot(&[("RUNNING COST", [200, 60, 40], cost_series)], &format!("MPPI {name}"), "STEP")
        .save(&dir.join("cost.png"))?;
    // State trace (first state variable), drawn on the shared log plot as |x0| + 1e-3.
    let x0: Vec<(f64, f64)> =
        states.iter().enumerate().map(|(t, x)| (t as f64, x[0].abs() + 1e-3)).collect();
    log_plot(&[("ABS X0", [30, 90, 200], x0)], &format!("MPPI {name} STATE"), "STEP")
        .save(&dir.join("state.png"))?;
    frames(a.env, &states).save(&dir.join("frames.png"))?;
    let total: f64 = costs.iter().sum();
    write_atomic(
        &dir.join("summary.md"),
        format!("# mppi run: {name}\n\n- steps: {}\n- total running cost: {total:.4}\n- final state: {:?}\n- params: K={} T={} λ={} Σ={:?}\n- commit: {}\n\nFiles: `trajectory.jsonl` (state, control, cost per step), `cost.png`, `state.png`, `frames.png` (animation strip).\n", a.steps, states.last(), p.num_samples, p.horizon, p.lambda, p.noise_sigma, git_commit()).as_bytes(),
    )?;
    println!(
        "total running cost {total:.4}, final state {:?}; run folder {}",
        states.last().unwrap_or(&vec![]),
        dir.display()
    );
    Ok(())
}

/// An animation strip: 8 frames of the pendulum (rod from the pivot, θ = 0 up), or the whole
/// 2-D path with the hill for navigation, or the state trace for the basic system.
fn frames(sys: System, states: &[Vec<f64>]) -> crate::run::Canvas {
    use crate::run::Canvas;
    let (fw, fh) = (160i64, 160i64);
    match sys {
        System::Pendulum => {
            let n = 8usize;
            let mut c = Canvas::new((fw * n as i64) as usize, (fh + 24) as usize);
            for f in 0..n {
                let i = (f * (states.len() - 1)) / (n - 1);
                let th = states[i][0];
                let (cx, cy) = (f as i64 * fw + fw / 2, fh / 2 + 10);
                let (ex, ey) = (cx + (60.0 * th.sin()) as i64, cy - (60.0 * th.cos()) as i64);
                c.rect(f as i64 * fw, 0, f as i64 * fw + 1, fh + 24, [200, 200, 200]);
                c.line((cx, cy), (ex, ey), [30, 90, 200]);
                c.rect(ex - 5, ey - 5, ex + 5, ey + 5, [200, 60, 40]);
                c.rect(cx - 3, cy - 3, cx + 3, cy + 3, [0, 0, 0]);
                c.text(f as i64 * fw + 6, fh + 8, 2, &format!("T={i}"), [0, 0, 0]);
            }
            c
        }
        System::Nav2d => {
            let size = 400i64;
            let mut c = Canvas::new(size as usize, size as usize);
            let to_px = |x: f64, y: f64| {
                (
                    ((x + 5.0) / 9.0 * size as f64) as i64,
                    size - ((y + 4.0) / 9.0 * size as f64) as i64,
                )
            };
            for py in 0..size {
                for px in 0..size {
                    let (x, y) = (
                        px as f64 / size as f64 * 9.0 - 5.0,
                        (size - py) as f64 / size as f64 * 9.0 - 4.0,
                    );
                    let h = (Nav2d::hill(&[x, y]) / 200.0 * 255.0) as u8;
                    c.rect(px, py, px + 1, py + 1, [255, 255 - h / 2, 255 - h]);
                }
            }
            for w in states.windows(2) {
                c.line(to_px(w[0][0], w[0][1]), to_px(w[1][0], w[1][1]), [30, 90, 200]);
            }
            let (gx, gy) = to_px(Nav2d::GOAL[0], Nav2d::GOAL[1]);
            c.rect(gx - 5, gy - 5, gx + 5, gy + 5, [40, 160, 60]);
            c.text(8, 8, 2, "PATH AROUND THE HILL", [0, 0, 0]);
            c
        }
        System::Basic => {
            let series: Vec<(f64, f64)> = states
                .iter()
                .enumerate()
                .map(|(t, x)| (t as f64, (x[0] * x[0] + x[1] * x[1]).max(1e-12)))
                .collect();
            log_plot(&[("|X|^2", [30, 90, 200], series)], "MPPI BASIC", "STEP")
        }
        System::Cartpole => {
            // 8 frames: cart on the track (x in [-2.4, 2.4]) and the pole (θ = 0 up).
            let n = 8usize;
            let mut c = Canvas::new((fw * n as i64) as usize, (fh + 24) as usize);
            for f in 0..n {
                let i = (f * (states.len() - 1)) / (n - 1);
                let (x, th) = (states[i][0], states[i][2]);
                let x0 = f as i64 * fw;
                let cx = x0 + fw / 2 + (x.clamp(-2.4, 2.4) / 2.4 * (fw / 2 - 12) as f64) as i64;
                let cy = fh - 30;
                c.rect(x0, 0, x0 + 1, fh + 24, [200, 200, 200]);
                c.rect(x0 + 4, cy + 8, x0 + fw - 4, cy + 9, [120, 120, 120]);
                c.rect(cx - 12, cy - 6, cx + 12, cy + 6, [60, 60, 60]);
                let (ex, ey) = (cx + (80.0 * th.sin()) as i64, cy - (80.0 * th.cos()) as i64);
                c.line((cx, cy), (ex, ey), [200, 60, 40]);
                c.text(x0 + 6, fh + 8, 2, &format!("T={i}"), [0, 0, 0]);
            }
            c
        }
        System::DiffDrive => {
            // The path in [-0.5, 2.5]² with the heading every 10 steps and the goal.
            let size = 400i64;
            let mut c = Canvas::new(size as usize, size as usize);
            let to_px = |x: f64, y: f64| {
                (
                    ((x + 0.5) / 3.0 * size as f64) as i64,
                    size - ((y + 0.5) / 3.0 * size as f64) as i64,
                )
            };
            for w in states.windows(2) {
                c.line(to_px(w[0][0], w[0][1]), to_px(w[1][0], w[1][1]), [30, 90, 200]);
            }
            for x in states.iter().step_by(10) {
                let (px, py) = to_px(x[0], x[1]);
                let (hx, hy) = to_px(x[0] + 0.15 * x[2].cos(), x[1] + 0.15 * x[2].sin());
                c.line((px, py), (hx, hy), [200, 60, 40]);
            }
            let (gx, gy) = to_px(DiffDrive::GOAL[0], DiffDrive::GOAL[1]);
            c.rect(gx - 5, gy - 5, gx + 5, gy + 5, [40, 160, 60]);
            c.text(8, 8, 2, "DIFF-DRIVE PATH", [0, 0, 0]);
            c
        }
    }
}

#[derive(Args)]
pub struct TuneArgs {
    /// System.
    #[arg(long, value_enum, default_value = "nav2d")]
    env: System,
    /// Knobs to tune: lambda, sigma, mu, horizon (sigma/mu tune every control dimension).
    #[arg(long, value_delimiter = ',', default_value = "lambda,sigma")]
    tune: Vec<String>,
    /// cma-es, sep-cma-es, snes, xnes or open-es.
    #[arg(long, default_value = "cma-es")]
    strategy: String,
    /// Candidates per generation.
    #[arg(long, default_value_t = 16)]
    pop_size: usize,
    /// Generations.
    #[arg(long, default_value_t = 20)]
    generations: u64,
    /// Closed-loop steps per episode.
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Parent folder of the run folder.
    #[arg(long, default_value = "runs")]
    out_dir: std::path::PathBuf,
}

fn spec_of(names: &[String], nu: usize, base: &MppiParams) -> Result<TuneSpec> {
    let mut knobs = Vec::new();
    for n in names {
        match n.as_str() {
            "lambda" => knobs.push(Tuned {
                knob: Knob::Lambda,
                lower: 1e-3,
                upper: 1e3,
                transform: Transform::Log,
            }),
            "sigma" => (0..nu).for_each(|d| {
                knobs.push(Tuned {
                    knob: Knob::Sigma(d),
                    lower: 1e-3,
                    upper: 1e2,
                    transform: Transform::Log,
                })
            }),
            "mu" => (0..nu).for_each(|d| {
                knobs.push(Tuned {
                    knob: Knob::Mu(d),
                    lower: -5.0,
                    upper: 5.0,
                    transform: Transform::Linear,
                })
            }),
            "horizon" => knobs.push(Tuned {
                knob: Knob::Horizon,
                lower: 2.0,
                upper: (3 * base.horizon) as f64,
                transform: Transform::Linear,
            }),
            other => anyhow::bail!("--tune {other:?}: accepted are lambda, sigma, mu, horizon"),
        }
    }
    Ok(TuneSpec { knobs })
}

fn tune_with<S: kestrel_evo::Strategy, D: kestrel_mppi::Dynamics>(
    s: &S,
    sp: &S::Params,
    problem: &TuneProblem<D>,
    a: &TuneArgs,
    metrics: &MetricsWriter,
) -> kestrel_mppi::tune::TuneResult {
    let mut progress = Progress::new(a.generations, "generations");
    kestrel_mppi::tune::tune_observed(s, sp, problem, a.generations, Key::new(a.seed), |m| {
        metrics.send(json!({"generation": m.generation, "best": m.best_so_far, "best_in_generation": m.best_in_generation, "nonfinite": m.nonfinite}));
        progress.tick(m.generation, &format!("best cost {:.4}", m.best_so_far));
    })
}

pub fn tune(a: TuneArgs) -> Result<()> {
    use kestrel_evo::{
        CmaEs, CmaParams, OpenEs, OpenEsParams, SepCmaEs, Snes, SnesParams, Strategy, Xnes,
        XnesParams,
    };
    let base = default_params(a.env);
    let name = format!("{:?}", a.env).to_lowercase();
    // Validate everything before a run folder is created.
    const STRATEGIES: [&str; 5] = ["cma-es", "sep-cma-es", "snes", "xnes", "open-es"];
    if !STRATEGIES.contains(&a.strategy.as_str()) {
        anyhow::bail!("--strategy {:?}: accepted are {}", a.strategy, STRATEGIES.join(", "));
    }
    spec_of(&a.tune, base.noise_mu.len(), &base)?;
    let dir = run_dir("mppi-tune", &format!("{name}-{}", a.strategy), a.seed, Some(&a.out_dir))?;
    let metrics = MetricsWriter::new(&dir.join("metrics.jsonl"))?;
    let t0 = Instant::now();
    let (result, start_cost) = with_system!(a.env, d => {
        let nu = d.nu();
        let spec = spec_of(&a.tune, nu, &base)?;
        let problem = TuneProblem::new(d, spec, base.clone(), vec![start_of(a.env)], a.steps)?;
        let start_cost = problem.episode_cost(Key::new(a.seed), &base);
        let n = problem.spec().num_dims();
        let r = match a.strategy.as_str() {
            "cma-es" => { let s = CmaEs::new(a.pop_size.max(4), n)?; tune_with(&s, &CmaParams { sigma_init: 1.0, ..s.default_params() }, &problem, &a, &metrics) }
            "sep-cma-es" => { let s = SepCmaEs::new(a.pop_size.max(4), n)?; tune_with(&s, &CmaParams { sigma_init: 1.0, ..s.default_params() }, &problem, &a, &metrics) }
            "snes" => { let s = Snes::new(a.pop_size, n)?; tune_with(&s, &SnesParams { sigma_init: 1.0, ..s.default_params() }, &problem, &a, &metrics) }
            "xnes" => { let s = Xnes::new(a.pop_size, n)?; tune_with(&s, &XnesParams { sigma_init: 1.0, ..s.default_params() }, &problem, &a, &metrics) }
            "open-es" => { let s = OpenEs::new(a.pop_size + a.pop_size % 2, n)?; tune_with(&s, &OpenEsParams { sigma: 0.5, ..s.default_params() }, &problem, &a, &metrics) }
            other => anyhow::bail!("--strategy {other:?}: accepted are cma-es, sep-cma-es, snes, xnes, open-es"),
        };
        (r, start_cost)
    });
    metrics.finish()?;
    let secs = t0.elapsed().as_secs_f64();
    let curve: Vec<(f64, f64)> = result
        .history
        .iter()
        .map(|m| (m.generation as f64, (m.best_so_far as f64).max(1e-12)))
        .collect();
    log_plot(&[("BEST SO FAR", [30, 90, 200], curve)], &format!("TUNE MPPI {name}"), "GENERATION")
        .save(&dir.join("best.png"))?;
    let bp = &result.best_params;
    write_atomic(
        &dir.join("summary.md"),
        format!("# mppi tune: {name} with {}\n\n- knobs: {:?}\n- cost at the base params: {start_cost:.4}\n- best cost: {:.4}\n- best params: λ={:.5} Σ={:?} μ={:?} horizon={}\n- {} generations of {} candidates in {secs:.2} s\n- commit: {}\n\nFiles: `metrics.jsonl`, `best.png`.\n", a.strategy, a.tune, result.best_cost, bp.lambda, bp.noise_sigma, bp.noise_mu, bp.horizon, a.generations, a.pop_size, git_commit()).as_bytes(),
    )?;
    println!(
        "cost {start_cost:.4} -> {:.4} (λ={:.4}, Σ={:?}) in {secs:.2} s; run folder {}",
        result.best_cost,
        bp.lambda,
        bp.noise_sigma,
        dir.display()
    );
    Ok(())
}
