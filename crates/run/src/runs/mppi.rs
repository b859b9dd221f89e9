//! `kestrel mppi run` (run kind `mppi-run`): one closed-loop episode of MPPI, SMPPI or KMPPI
//! on a built-in system, every step's cost and state logged, the trajectory drawn. The
//! controllers and systems are `kestrel-mppi`'s; the episode loop is
//! [`MppiRunConfig::episode`].

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, Outputs, Run, RunError, Summary, runs, write_atomic};
use kestrel_core::Budget;
use kestrel_mppi::systems::{DiffDrive, Nav2d};
use kestrel_mppi::{ControllerKind, MppiRunConfig, System};
use kestrel_plot::{LinePlot, Series, Sketch};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// The `mppi-run` run kind.
pub struct MppiRun;

impl Run for MppiRun {
    const NAME: &'static str = "mppi-run";
    const COMMAND: &'static str = "mppi run";
    const METRICS: &'static [&'static str] = &["total_cost"];
    const CURVE: &'static str = "cost";
    type Config = MppiRunConfig;

    /// The system's and controller's defaults (`first` names them; absent: MPPI on the
    /// pendulum).
    fn defaults(first: Option<&MppiRunConfig>) -> MppiRunConfig {
        let (k, s) =
            first.map_or((ControllerKind::Mppi, System::Pendulum), |f| (f.controller, f.system));
        MppiRunConfig::defaults(k, s)
    }

    fn outputs(_: &MppiRunConfig) -> Outputs {
        Outputs::new(&["nonfinite", "steps", "total_cost", "wall_seconds"], &["cost"])
    }

    fn validate(c: &MppiRunConfig) -> Result<(), RunError> {
        Ok(c.validate()?)
    }

    /// The controller's sample buffers and the episode's record, trajectory and plots.
    fn budget(c: &MppiRunConfig, threads: usize) -> Budget {
        let mut b = Budget::new();
        runs::fixed(&mut b);
        b.add(
            "controller samples",
            format!(
                "mppi.num_samples = {}, mppi.horizon = {}, controller = {}",
                c.mppi.num_samples,
                c.mppi.horizon,
                c.controller.name()
            ),
            c.controller_bytes(c.mppi.horizon, threads),
            1,
        );
        b.add("episode record and plots", format!("steps = {}", c.steps), c.episode_bytes(), 1);
        b
    }

    fn run(c: MppiRunConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

/// Validates `c`, then runs the episode into a new folder: `config.toml` (every knob),
/// `record.json`, `metrics.jsonl` and `trajectory.jsonl` (one line per step), `cost`,
/// `state` and `frames` as PNG and SVG, `summary.md/json`.
pub fn run(c: MppiRunConfig, mut launch: Launch<'_>) -> Result<Outcome, RunError> {
    c.validate()?;
    let name = format!("{}-{}", c.controller.name(), c.system.name());
    let (dir, mut metrics) = start(&launch, "mppi", &name, c.seed, &c)?;
    let r = (|| -> Result<String, RunError> {
        let t0 = Instant::now();
        let mut progress = launch.progress(c.steps as u64, "steps");
        let mut total = 0.0;
        let ep = c.episode(|t, cost| {
            total += cost;
            progress.tick(t as u64 + 1, &format!("cost so far {total:.4}"))
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
        // Stopped: the steps taken are in the metrics and the trajectory.
        progress.stopped()?;
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
            .value(
                "nonfinite",
                "non-finite running costs",
                ep.costs.iter().filter(|c| !c.is_finite()).count() as u64,
            )
            .item("final_state", "final state", last.clone(), format!("{last:?}"))
            .item("wall_seconds", "wall time", secs, format!("{secs:.2} s"))
            .value("commit", "commit", COMMIT)
            .file("config.toml", "every knob, resolved (`--config` replays it)")
            .file("trajectory.jsonl", "state, control and cost per step")
            .file("cost.png", "running cost per step (also .svg)")
            .file("state.png", "every state variable per step (also .svg)")
            .file("frames.png", "the system drawn along the run (also .svg)")
            .write(dir.path())?;
        if !ep.total_cost.is_finite() {
            return Err(RunError::Failed(format!(
                "the running cost is not finite (the system diverged); run folder {}",
                dir.path().display()
            )));
        }
        Ok(format!(
            "total running cost {:.4}, final state {last:?}; run folder {}",
            ep.total_cost,
            dir.path().display()
        ))
    })();
    finish(dir, r)
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
fn frames(sys: System, states: &[Vec<f64>], stem: &std::path::Path) -> Result<(), RunError> {
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
