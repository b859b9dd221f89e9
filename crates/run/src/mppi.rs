//! MPPI runs with their folders: `kestrel mppi run` (any controller closed loop on a built-in
//! system) and `kestrel mppi tune` (an evolution strategy tuning a controller's knobs), and the
//! Python package's `kestrel.mppi.tune`.

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, RunError, Summary, write_atomic};
use kestrel_mppi::systems::{DiffDrive, Nav2d};
use kestrel_mppi::tune::{TuneConfig, run_tune_with, validate_tune};
use kestrel_mppi::{MppiRunConfig, System};
use kestrel_plot::{LinePlot, Series, Sketch};
use serde_json::json;
use std::time::Instant;

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
            progress.tick(t as u64 + 1, &format!("cost so far {total:.4}"));
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

/// A tuning config from `file` and `table` in two passes (the first finds the run's controller
/// and system, the second reads everything over [`TuneConfig::defaults_for`] them), as
/// `kestrel mppi tune` loads it: a pendulum run gets the pendulum's one-control noise, not the
/// default system's.
pub fn load_tune(
    file: Option<&std::path::Path>,
    table: toml::Table,
) -> Result<TuneConfig, RunError> {
    let first = crate::load_config(&TuneConfig::default(), file, table.clone(), &[])?;
    crate::load_config(&TuneConfig::defaults_for(&first.run), file, table, &[])
}

/// Validates `c`, then tunes into a new folder: `config.toml`, `record.json`, `metrics.jsonl`
/// (one line per generation), `best.toml` (the base run with the best knobs, which `kestrel
/// mppi run --config` replays), `best.png/svg`, `summary.md/json`.
pub fn tune(c: TuneConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    tune_with(c, None, &|| None, launch)
}

/// [`tune`] with the candidates' costs computed by `evaluator` (the problem of
/// [`kestrel_mppi::tune::tune_problem`] evaluated elsewhere, on Ray workers say). `failed` is
/// asked after every generation: a message stops the run, which then fails with it.
pub fn tune_with(
    c: TuneConfig,
    evaluator: Option<&dyn kestrel_evo::Problem>,
    failed: &dyn Fn() -> Option<String>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    validate_tune(&c)?;
    let name = format!("{}-{}-{}", c.run.controller.name(), c.run.system.name(), c.strategy);
    let (dir, mut metrics) = start(&launch, "mppi-tune", &name, c.run.seed, &c)?;
    let r = (|| -> Result<String, RunError> {
        let t0 = Instant::now();
        let mut progress = launch.progress(c.generations, "generations");
        let (mut io, mut nonfinite) = (Ok(()), 0u64);
        let mut failure = None;
        let out = run_tune_with(&c, evaluator, |m| {
            failure = failed();
            if failure.is_some() {
                return false;
            }
            io = metrics.log(m.generation, json!({"best": m.best_so_far, "best_in_generation": m.best_in_generation, "nonfinite": m.nonfinite, "sigma": m.sigma}));
            nonfinite += m.nonfinite as u64;
            progress.tick(
                m.generation,
                &format!("best cost {:.4} non-finite {nonfinite}", m.best_so_far),
            );
            io.is_ok()
        })?;
        if let Some(m) = failure {
            return Err(RunError::Failed(m));
        }
        io?;
        metrics.finish()?;
        let secs = t0.elapsed().as_secs_f64();
        let best_toml = crate::config::to_toml(&out.best_run)?;
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
            .item("knobs", "knobs", serde_json::to_value(&c.knobs).unwrap_or_default(), format!("{:?}", c.knobs))
            .value("start_cost", "cost at the base params", out.start_cost)
            .value("best_cost", "best cost", out.best_cost as f64)
            .value("nonfinite", "candidates with a non-finite cost", nonfinite)
            .item("best_lambda", "best λ", bp.lambda, format!("{:.5}", bp.lambda))
            .item("best_noise_sigma", "best Σ", bp.noise_sigma.clone(), format!("{:?}", bp.noise_sigma))
            .item("best_noise_mu", "best μ", bp.noise_mu.clone(), format!("{:?}", bp.noise_mu))
            .value("best_horizon", "best horizon", bp.horizon as u64)
            .item("wall_seconds", "wall time", secs, format!("{} generations of {} candidates in {secs:.2} s", c.generations, c.pop_size))
            .value("commit", "commit", COMMIT)
            .file("best.toml", "the base run with the best knobs: `kestrel mppi run --config best.toml` replays it")
            .file("metrics.jsonl", "one line per generation")
            .file("best.png", "best cost so far per generation (also .svg)")
            .write(dir.path())?;
        if !out.best_cost.is_finite() {
            return Err(RunError::Failed(format!(
                "no candidate had a finite cost ({nonfinite} non-finite); run folder {}",
                dir.path().display()
            )));
        }
        Ok(format!(
            "cost {:.4} -> {:.4} (λ={:.4}, Σ={:?}) in {secs:.2} s; run folder {}",
            out.start_cost,
            out.best_cost,
            bp.lambda,
            bp.noise_sigma,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tuner's config is read over its run system's defaults: a pendulum (one control) gets
    /// a 1×1 noise, not the default Nav2d's 2×2, and explicit keys still win.
    #[test]
    fn tune_configs_load_over_their_systems_defaults() {
        let table = |s: &str| s.parse::<toml::Table>().unwrap();
        let c = load_tune(None, table("[run]\nsystem = \"pendulum\"")).unwrap();
        assert_eq!(c.run.system, System::Pendulum);
        assert_eq!(c.run.mppi.noise_sigma.len(), 1);
        validate_tune(&c).unwrap();
        let c = load_tune(
            None,
            table("pop_size = 6\n[run]\nsystem = \"basic\"\n[run.mppi]\nlambda = 3.0"),
        )
        .unwrap();
        assert_eq!((c.pop_size, c.run.mppi.lambda, c.run.system), (6, 3.0, System::Basic));
        assert!(load_tune(None, table("[run]\nsystem = \"pendulm\"")).is_err());
        // The default system is unchanged.
        assert_eq!(load_tune(None, toml::Table::new()).unwrap().run.system, System::Nav2d);
    }
}
