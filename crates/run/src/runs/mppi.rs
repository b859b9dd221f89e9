//! `kestrel mppi run` (run kind `mppi-run`): one closed-loop episode of MPPI, SMPPI or KMPPI
//! on a built-in system, every step's cost and state logged, the trajectory drawn. The
//! config ([`MppiRunConfig`]) gathers the system, the episode and every controller's knobs;
//! the controllers, systems and the episode loop (`kestrel_mppi::episode`) are
//! `kestrel-mppi`'s.

use crate::base::{COMMIT, RunError, write_atomic};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_core::Budget;
use kestrel_core::Key;
use kestrel_dynamics::Dynamics;
use kestrel_mppi::systems::{DiffDrive, Nav2d};
use kestrel_mppi::{
    Controller, ControllerKind, ControllerVisitor, DynamicsVisitor, Episode, KmppiExtras,
    MppiError, MppiParams, PrecisionKind, SmppiExtras, SystemKind, episode,
};
use kestrel_plot::{LinePlot, Series, Sketch};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// A closed-loop MPPI run: the system, the episode, and every knob of every controller (the
/// shared MPPI params, then SMPPI's and KMPPI's own, used only by that controller). Defaults
/// come from [`SystemKind::default_params`] ([`MppiRunConfig::defaults`]).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct MppiRunConfig {
    /// The system (model and plant).
    pub system: SystemKind,
    /// Closed-loop steps.
    pub steps: usize,
    /// Seed: step `t` commands with `Key::new(seed).fold_in(t)`.
    pub seed: u64,
    /// Which controller.
    pub controller: ControllerKind,
    /// The shared MPPI knobs.
    #[documented(nested)]
    pub mppi: MppiParams,
    /// SMPPI's knobs (besides `mppi`).
    #[documented(nested)]
    pub smppi: SmppiExtras,
    /// KMPPI's knobs (besides `mppi`).
    #[documented(nested)]
    pub kmppi: KmppiExtras,
}

impl MppiRunConfig {
    /// Heap bytes of one controller of this config planning over `horizon` steps (the
    /// config's own, or a tuned one), with `threads` workers' scratch: the noise, its normals
    /// and the sampled controls (K × T × nu each; f32 lanes padded to 32 samples), costs and
    /// the plan (mppi.rs, rollout.rs, lanes.rs, smppi.rs, kmppi.rs).
    pub fn controller_bytes(&self, horizon: usize, threads: usize) -> u128 {
        let k = self.mppi.num_samples as u128;
        let t = horizon as u128;
        let nu = self.system.nu() as u128;
        let th = threads as u128;
        let ktn = k.saturating_mul(t).saturating_mul(nu);
        match self.controller {
            ControllerKind::Mppi => match self.mppi.precision {
                PrecisionKind::F64 => ktn.saturating_mul(24).saturating_add(16 * k + 8 * t * nu),
                PrecisionKind::F32 => {
                    let k32 = k.div_ceil(32).saturating_mul(32);
                    let lanes = k32.saturating_mul(t).saturating_mul(nu).saturating_mul(33) / 4;
                    ktn.saturating_mul(8)
                        .saturating_add(lanes)
                        .saturating_add(8 * k32 + 16 * k + 12 * t * nu)
                }
            },
            ControllerKind::Smppi => ktn
                .saturating_mul(16)
                .saturating_add(16 * k + 16 * t * nu)
                .saturating_add(th.saturating_mul(8 * t * nu)),
            ControllerKind::Kmppi => {
                let s = self.kmppi.num_support_pts as u128;
                k.saturating_mul(s)
                    .saturating_mul(nu)
                    .saturating_mul(16)
                    .saturating_add(16 * k + 8 * t * nu + 16 * s * nu)
                    .saturating_add(t.saturating_mul(s).saturating_mul(8))
                    .saturating_add(s.saturating_mul(s).saturating_mul(8))
                    .saturating_add(th.saturating_mul(s.saturating_add(t)).saturating_mul(8 * nu))
            }
        }
    }

    /// Heap bytes of an episode's record (states, controls and costs per step; doubling
    /// `Vec`s counted at twice their length) and of its written trajectory and plots (about
    /// 500 B per step, measured).
    pub fn episode_bytes(&self) -> u128 {
        let steps = self.steps as u128 + 1;
        let (nx, nu) = (self.system.nx() as u128, self.system.nu() as u128);
        steps.saturating_mul(2 * 24 + 2 * 24 + 8 * nx + 8 * nu + 8 + 500)
    }

    /// The defaults for `system`: its MPPI params; SMPPI integrating with Δt = 1 and its action
    /// bounded by the system's control bounds (the lifted control by ±1 per step); KMPPI with
    /// `T / 2` control points and kernel width 1 (pytorch-mppi's defaults).
    pub fn defaults(controller: ControllerKind, system: SystemKind) -> Self {
        Self::defaults_for(controller, system, 200, 0)
    }

    /// [`MppiRunConfig::defaults`] with the episode's length and seed.
    pub fn defaults_for(
        controller: ControllerKind,
        system: SystemKind,
        steps: usize,
        seed: u64,
    ) -> Self {
        let mppi = system.default_params();
        let nu = system.nu();
        let smppi = SmppiExtras {
            w_action_seq_cost: 1.0,
            delta_t: 1.0,
            action_min: mppi.u_min.clone(),
            action_max: mppi.u_max.clone(),
            clamp_lifted_control: false,
        };
        let lifted = MppiParams { u_min: vec![-1.0; nu], u_max: vec![1.0; nu], ..mppi.clone() };
        let kmppi = KmppiExtras { num_support_pts: (mppi.horizon / 2).max(1), kernel_sigma: 1.0 };
        MppiRunConfig {
            system,
            steps,
            seed,
            controller,
            mppi: if controller == ControllerKind::Smppi { lifted } else { mppi },
            smppi,
            kmppi,
        }
    }

    /// Runs `f` with the configured controller over `dynamics` and its params, validated.
    pub fn with_controller<D: Dynamics + 'static, V: ControllerVisitor>(
        &self,
        dynamics: D,
        f: V,
    ) -> Result<V::Output, MppiError> {
        kestrel_mppi::with_controller(
            self.controller,
            &self.mppi,
            &self.smppi,
            &self.kmppi,
            dynamics,
            f,
        )
    }

    /// Checks the episode and every knob of the configured controller.
    pub fn validate(&self) -> Result<(), MppiError> {
        if self.steps == 0 {
            return Err(MppiError::from(kestrel_core::Invalid::new("steps", 0, "at least 1")));
        }
        struct Check;
        impl ControllerVisitor for Check {
            type Output = ();
            fn visit<C: Controller + 'static>(self, _c: C, _p: C::Params) {}
        }
        self.visit(Check)
    }

    /// Runs `f` with the configured controller over the configured system's concrete dynamics
    /// (statically dispatched: [`SystemKind::visit`]).
    pub fn visit<V: ControllerVisitor>(&self, f: V) -> Result<V::Output, MppiError> {
        struct On<'a, V>(&'a MppiRunConfig, V);
        impl<V: ControllerVisitor> DynamicsVisitor for On<'_, V> {
            type Output = Result<V::Output, MppiError>;
            fn visit<D: Dynamics + 'static>(self, d: D) -> Self::Output {
                self.0.with_controller(d, self.1)
            }
        }
        self.system.visit(On(self, f))
    }

    /// The configured episode: `steps` commands of the configured controller on the system
    /// from its start; `observe(t, cost)` sees every step, and ends the episode there by
    /// returning false.
    pub fn episode(&self, observe: impl FnMut(usize, f64) -> bool) -> Result<Episode, MppiError> {
        let (system, steps, key) = (self.system, self.steps, Key::new(self.seed));
        struct Run<F> {
            start: Vec<f64>,
            steps: usize,
            key: Key,
            observe: F,
        }
        impl<F: FnMut(usize, f64) -> bool> ControllerVisitor for Run<F> {
            type Output = Episode;
            fn visit<C: Controller + 'static>(self, c: C, p: C::Params) -> Episode {
                episode(&c, &p, &self.start, self.steps, self.key, true, self.observe)
            }
        }
        self.visit(Run { start: system.start(), steps, key, observe })
    }
}

/// The `mppi-run` run kind.
pub struct MppiRun;

impl Run for MppiRun {
    const NAME: &'static str = "mppi-run";
    const COMMAND: &'static str = "mppi run";
    const ABOUT: &'static str =
        "Run a controller closed loop on a system: trajectory, cost and state plots, frames.";
    const METRICS: &'static [&'static str] = &["total_cost"];
    const CURVE: &'static str = "cost";
    type Config = MppiRunConfig;

    /// The system's and controller's defaults (`first` names them; absent: MPPI on the
    /// pendulum).
    fn defaults(first: Option<&MppiRunConfig>) -> MppiRunConfig {
        let (k, s) = first
            .map_or((ControllerKind::Mppi, SystemKind::Pendulum), |f| (f.controller, f.system));
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
            .item("final_state", "final state", last.clone(), state_text(c.system, &last))
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
            "total running cost {:.4}, final state {}; run folder {}",
            ep.total_cost,
            state_text(c.system, &last),
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

/// A state by its variables' names, each angle also wrapped into [−π, π) (the pendulum's
/// upright 2π reads as 0, as the running cost wraps it).
fn state_text(sys: SystemKind, x: &[f64]) -> String {
    use std::f64::consts::PI;
    let parts: Vec<String> = state_names(sys)
        .iter()
        .zip(x)
        .map(|(name, &v)| {
            let angle = name.ends_with("(rad)");
            let wrapped = (v + PI).rem_euclid(2.0 * PI) - PI;
            if angle && (wrapped - v).abs() > 1e-12 {
                format!("{name} = {v:.4} ({wrapped:.4} wrapped to [-π, π))")
            } else {
                format!("{name} = {v:.4}")
            }
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

fn state_names(sys: SystemKind) -> &'static [&'static str] {
    match sys {
        SystemKind::Pendulum => &["θ (rad)", "θ̇ (rad/s)"],
        SystemKind::Nav2d => &["x", "y"],
        SystemKind::Basic => &["x₁", "x₂"],
        SystemKind::Cartpole => &["x (m)", "ẋ (m/s)", "θ (rad)", "θ̇ (rad/s)"],
        SystemKind::DiffDrive => &["x (m)", "y (m)", "heading (rad)"],
    }
}

/// The system along the run: 8 frames of the pendulum or the cart-pole; for the planar
/// systems, the path in the plane (with the goal).
fn frames(sys: SystemKind, states: &[Vec<f64>], stem: &std::path::Path) -> Result<(), RunError> {
    let (blue, red, grey, black) = ([30, 90, 200], [200, 60, 40], [190, 190, 190], [0, 0, 0]);
    if !matches!(sys, SystemKind::Pendulum | SystemKind::Cartpole) {
        let path: Vec<(f64, f64)> = states.iter().map(|x| (x[0], x[1])).collect();
        let goal = match sys {
            SystemKind::Nav2d => vec![(Nav2d::GOAL[0], Nav2d::GOAL[1])],
            SystemKind::DiffDrive => vec![(DiffDrive::GOAL[0], DiffDrive::GOAL[1])],
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
        let (cx, cy, th, len) = if sys == SystemKind::Pendulum {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_states_wrap_their_angles() {
        let t = state_text(SystemKind::Pendulum, &[2.0 * std::f64::consts::PI + 0.01, -0.5]);
        assert_eq!(t, "[θ (rad) = 6.2932 (0.0100 wrapped to [-π, π)), θ̇ (rad/s) = -0.5000]");
        assert_eq!(state_text(SystemKind::Nav2d, &[1.0, 2.0]), "[x = 1.0000, y = 2.0000]");
    }

    /// Every controller, from every system's defaults, runs its episode with finite costs.
    #[test]
    fn every_controller_swings_up_or_stabilises_every_system() {
        for system in SystemKind::ALL {
            assert_eq!(system.start().len(), system.nx());
            for kind in [ControllerKind::Mppi, ControllerKind::Smppi, ControllerKind::Kmppi] {
                let mut cfg = MppiRunConfig::defaults_for(kind, system, 10, 1);
                cfg.mppi.num_samples = cfg.mppi.num_samples.min(64);
                let ep = cfg.episode(|_, _| true).unwrap();
                assert_eq!(ep.states.len(), 11, "{system:?} {kind:?}");
                assert_eq!(ep.controls.len(), 10);
                assert!(ep.total_cost.is_finite(), "{system:?} {kind:?}");
            }
        }
    }
}
