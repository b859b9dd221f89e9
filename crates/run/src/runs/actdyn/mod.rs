//! Active-dynamics runs with their folders (`kestrel actdyn run`, `kestrel actdyn compare`):
//! the online loop with metrics written off the hot path, checkpoints and exact resume,
//! evaluation, plots and a summary.
//!
//! The run's parts here: [`ActdynConfig`] (`config.rs`, the whole experiment's settings), the
//! online loop's state and step [`ActdynRun`] (`online.rs`) and the memory estimate
//! (`budget.rs`), built from `kestrel_actdyn`'s model, trainer, planner costs and evaluation.

mod budget;
mod config;
mod online;

pub use config::ActdynConfig;
pub use online::{ActdynRun, StepRecord};

use crate::base::{COMMIT, RunError};
use crate::launch::{Checkpoints, Launch, Outcome, finish};
use crate::resume::{Resumable, open};
use crate::run::{Outputs, Run};
use crate::summary::Summary;
use kestrel_actdyn::config::PolicyKind;
use kestrel_actdyn::eval::{Evaluation, learned_field};
use kestrel_plot::{ColourMap, Heatmaps, LinePlot, Panel, Series, Sketch};
use serde_json::json;
use std::path::Path;

/// Per-100-step means of the logged triple, as the reference's anchors report them.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Curves {
    /// Environment step at the end of each bin.
    pub step: Vec<u64>,
    /// Mean ELBO/T per bin.
    pub elbo_per_t: Vec<f64>,
    /// Mean LL/T/N_y per bin.
    pub ll_per_t_ny: Vec<f64>,
    /// Mean KL_w/T/D per bin.
    pub kl_per_t_d: Vec<f64>,
    /// ELBO/T of the first training call.
    pub elbo_first: f64,
    /// Mean ELBO/T over the last 100 calls.
    pub elbo_last100: f64,
    /// Mean LL/T/N_y over the last 100 calls.
    pub ll_last100: f64,
    /// Mean KL/T/D over the last 100 calls.
    pub kl_last100: f64,
}

#[derive(Default)]
pub(crate) struct CurveAcc {
    c: Curves,
    bin: [f64; 4],
    last: std::collections::VecDeque<[f64; 3]>,
    first: Option<f64>,
}

impl CurveAcc {
    pub(crate) fn push(&mut self, step: u64, logged: [f64; 3]) {
        let elbo = -logged[0];
        self.first.get_or_insert(elbo);
        self.bin[0] += elbo;
        self.bin[1] += logged[1];
        self.bin[2] += logged[2];
        self.bin[3] += 1.0;
        if self.last.len() == 100 {
            self.last.pop_front();
        }
        self.last.push_back([elbo, logged[1], logged[2]]);
        if step.is_multiple_of(100) {
            let n = self.bin[3];
            self.c.step.push(step);
            self.c.elbo_per_t.push(self.bin[0] / n);
            self.c.ll_per_t_ny.push(self.bin[1] / n);
            self.c.kl_per_t_d.push(self.bin[2] / n);
            self.bin = [0.0; 4];
        }
    }
    pub(crate) fn finish(mut self) -> Curves {
        let n = self.last.len().max(1) as f64;
        self.c.elbo_first = self.first.unwrap_or(f64::NAN);
        self.c.elbo_last100 = self.last.iter().map(|v| v[0]).sum::<f64>() / n;
        self.c.ll_last100 = self.last.iter().map(|v| v[1]).sum::<f64>() / n;
        self.c.kl_last100 = self.last.iter().map(|v| v[2]).sum::<f64>() / n;
        self.c
    }
}

fn metrics_line(r: &StepRecord, t: usize, ny: usize) -> serde_json::Value {
    let mut v = json!({
        "z": r.z, "belief": r.belief, "action": r.action,
    });
    if let Some(tr) = &r.train {
        let [loss, ll, kl] = tr.terms.logged(t, ny, 2);
        v["loss_per_t"] = json!(loss);
        v["elbo_per_t"] = json!(-loss);
        v["ll_per_t_ny"] = json!(ll);
        v["kl_per_t_d"] = json!(kl);
        v["kl_k"] = json!(tr.terms.kl);
        v["beta"] = json!(tr.beta);
        v["grad_norm"] = json!(tr.grad_norm);
    }
    if let Some(c) = r.plan_cost {
        v["plan_cost"] = json!(c);
    }
    v
}

pub(crate) fn failed(e: impl std::fmt::Display) -> RunError {
    RunError::Failed(e.to_string())
}

/// The `actdyn` run kind.
pub struct Actdyn;

impl Run for Actdyn {
    const NAME: &'static str = "actdyn";
    const COMMAND: &'static str = "actdyn run";
    const ABOUT: &'static str =
        "One experiment: random (E1) or active (E2) data collection, faithful or fixed profile.";
    const RESUMABLE: bool = true;
    const BUDGET: &'static str = "steps";
    const METRICS: &'static [&'static str] = &["obs_r2_k5", "vf_rel_err"];
    const CURVE: &'static str = "elbo_per_t";
    type Config = ActdynConfig;

    fn defaults(_: Option<&ActdynConfig>) -> ActdynConfig {
        ActdynConfig::default()
    }

    const PRESETS: &'static [&'static str] = &["e1", "e2"];

    /// `e1` (random policy, MLP dynamics: the defaults) or `e2` (RBF dynamics, iCEM,
    /// A-optimality), the reference's two experiments.
    fn preset(name: &str) -> Option<ActdynConfig> {
        match name {
            "e1" => Some(ActdynConfig::e1()),
            "e2" => Some(ActdynConfig::e2()),
            _ => None,
        }
    }

    fn without_budget(c: &ActdynConfig) -> ActdynConfig {
        ActdynConfig { steps: 0, ..c.clone() }
    }

    /// The covered fraction only with RBF dynamics (the grid it counts); the planner's cost
    /// only with the iCEM policy.
    fn outputs(c: &ActdynConfig) -> Outputs {
        let rbf = matches!(c.model.dynamics, kestrel_actdyn::model::DynamicsKind::Rbf { .. });
        Outputs::new(
            &[
                "elbo_first",
                "elbo_last100",
                "kl_last100",
                "latent_r2_0",
                "latent_r2_1",
                "ll_last100",
                "obs_r2_k0",
                "obs_r2_k10",
                "obs_r2_k5",
                "steps",
                "vf_rel_err",
            ],
            &["beta", "elbo_per_t", "grad_norm", "kl_per_t_d", "ll_per_t_ny", "loss_per_t"],
        )
        .summary(rbf.then(|| "covered_fraction".to_string()))
        .columns((c.policy.kind == PolicyKind::Icem).then(|| "plan_cost".to_string()))
    }

    fn validate(c: &ActdynConfig) -> Result<(), RunError> {
        Ok(c.validate()?)
    }

    /// See [`ActdynConfig::budget`] (the model, its training workspaces, the
    /// planner, the validation data, and the largest of a checkpoint, an evaluation or the
    /// end-of-run plots).
    fn budget(c: &ActdynConfig, threads: usize) -> kestrel_core::Budget {
        c.budget(threads)
    }

    fn run(
        c: ActdynConfig,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run(c, resume, launch)
    }
}

impl Resumable for ActdynRun {
    type Kind = Actdyn;
    const UNIT: &'static str = "steps";
    fn fresh(c: &ActdynConfig) -> Result<Self, RunError> {
        Ok(ActdynRun::new(c.clone())?)
    }
    fn load(c: &ActdynConfig, set: &Path) -> Result<Self, RunError> {
        Ok(ActdynRun::load_checkpoint(c.clone(), set)?)
    }
    fn done(&self) -> u64 {
        self.steps_done()
    }
}

/// Validates `c` and runs it into a new folder, or (with `resume`) continues the run in that
/// folder from its checkpoint (its saved `config.toml` is the truth; only `steps` may
/// change). Writes `config.toml`, `record.json`, `metrics.jsonl` (one line per environment
/// step: losses of the training call, the planner's cost, latent and belief; evaluations as
/// `eval` lines), `checkpoint/`, `evaluation.json`, `training.png/svg`, `field.png/svg`,
/// `coverage.png/svg` (RBF dynamics), `summary.md/json`.
pub fn run(
    c: ActdynConfig,
    resume: Option<&Path>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    c.validate()?;
    let name = format!("{:?}-{:?}", c.policy.kind, c.profile).to_lowercase();
    let (mut run, dir, mut metrics, stamp) =
        open::<ActdynRun>(&mut launch, &c, resume, &name, c.seed)?;
    let r = (|| -> Result<String, RunError> {
        let c = run.config().clone();
        let (t, ny) = (c.train.window, c.env.obs_dim);
        let start_step = run.steps_done();
        let mut progress = launch.progress(c.steps, "steps");
        let data = run.validation_data();
        let mut ckpts = Checkpoints::new(dir.path(), stamp, start_step);
        let t0 = std::time::Instant::now();
        // The last TRAIL latents of this launch, for the field plot (bounded at any length).
        let mut traj = std::collections::VecDeque::with_capacity(TRAIL);
        while run.steps_done() < c.steps {
            let rec = run.step()?;
            let s = rec.step;
            if traj.len() == TRAIL {
                traj.pop_front();
            }
            traj.push_back(rec.z);
            metrics.log(s, metrics_line(&rec, t, ny))?;
            if c.eval.every > 0 && s.is_multiple_of(c.eval.every) {
                let e = run.evaluate(&data);
                metrics.log(s, json!({"eval": e}))?;
            }
            if c.save_every > 0 && s.is_multiple_of(c.save_every) {
                save_transitions(&mut run, dir.path())?;
            }
            if c.checkpoint_every > 0 && s.is_multiple_of(c.checkpoint_every) {
                ckpts.save(s, |d, st| run.save_checkpoint(d, st))?;
            }
            if s.is_multiple_of(100) || s == c.steps {
                let status = match &rec.train {
                    Some(tr) => format!("ELBO/T {:.2}", -tr.terms.loss / t as f64),
                    None => "filling the window".into(),
                };
                if !progress.tick(s, &status) {
                    break;
                }
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        if c.save_every > 0 {
            save_transitions(&mut run, dir.path())?;
        }
        ckpts.save(run.steps_done(), |d, st| run.save_checkpoint(d, st))?;
        let eval = run.evaluate(&data);
        metrics.log(run.steps_done(), json!({"eval": &eval}))?;
        metrics.finish()?;
        // Stopped (Ctrl-C from Python): this step's state is saved; a resume goes on from it.
        progress.stopped()?;
        // Curves over the whole run (this launch and any before it), from metrics.jsonl.
        let mut acc = CurveAcc::default();
        crate::metrics::for_each_metric(&dir.join("metrics.jsonl"), |row| {
            if let (Some(step), Some(l), Some(ll), Some(kl)) = (
                row["global_step"].as_u64(),
                row["loss_per_t"].as_f64(),
                row["ll_per_t_ny"].as_f64(),
                row["kl_per_t_d"].as_f64(),
            ) {
                acc.push(step, [l, ll, kl]);
            }
        })?;
        let curves = acc.finish();
        crate::base::write_atomic(
            &dir.join("evaluation.json"),
            serde_json::to_string_pretty(&json!({"evaluation": &eval, "curves": &curves}))
                .map_err(failed)?
                .as_bytes(),
        )?;
        plot_curves(&curves, &format!("{:?} policy, {:?} profile", c.policy.kind, c.profile))
            .save(&dir.join("training"))?;
        field_sketch(&run, &eval, traj.make_contiguous()).save(&dir.join("field"))?;
        if let Some(h) = coverage_map(&run) {
            h.save(&dir.join("coverage"))?;
        }
        let done = run.steps_done() - start_step;
        let per_step = 1e3 * secs / done.max(1) as f64;
        let r2 = |k: usize| eval.obs_r2_by_k.get(k).copied().unwrap_or(f64::NAN);
        let mut s = Summary::new(format!(
            "actdyn run: {:?} policy, {:?} profile, seed {}",
            c.policy.kind, c.profile, c.seed
        ))
        .item(
            "steps",
            "environment steps",
            run.steps_done(),
            format!(
                "{} ({done} this launch, {secs:.1} s, {per_step:.3} ms/step)",
                run.steps_done()
            ),
        )
        .value("elbo_first", "ELBO/T, first training call", curves.elbo_first)
        .value("elbo_last100", "ELBO/T, mean of the last 100 calls", curves.elbo_last100)
        .value("ll_last100", "LL/T/N_y, last 100", curves.ll_last100)
        .value("kl_last100", "KL/T/D, last 100", curves.kl_last100)
        .value("obs_r2_k0", "observation R², k = 0", r2(0))
        .value("obs_r2_k5", "observation R², k = 5", r2(5))
        .value("obs_r2_k10", "observation R², k = 10", r2(10))
        .value("latent_r2_0", "latent R² (affine), dim 0", eval.latent_r2[0])
        .value("latent_r2_1", "latent R² (affine), dim 1", eval.latent_r2[1])
        .value("vf_rel_err", "vector-field relative error", eval.vf_rel_err);
        if let Some(f) = run.covered_fraction() {
            s = s.value("covered_fraction", "RBF centres visited (coverage ≥ 1)", f);
        }
        s.value("commit", "commit", COMMIT)
            .file("config.toml", "the resolved config")
            .file("metrics.jsonl", "one line per environment step, evaluations as `eval` lines")
            .file("evaluation.json", "the final evaluation and per-100-step curves")
            .file("training.png", "ELBO/T, LL/T/N_y and KL/T/D per 100 steps (also .svg)")
            .file(
                "field.png",
                "true (grey) and learned (blue) vector field with the trajectory (also .svg)",
            )
            .file("checkpoint/", "resume with `--resume <this folder>`")
            .write(dir.path())?;
        Ok(format!(
            "ELBO/T {:.2} (last 100), latent R² {:.3}/{:.3} (1 = the true latents recovered up to an affine map), obs R² k=5 {:.3} (of 5-step-ahead predicted observations; 0 = predicting their mean), VF error {:.3e} (Σ‖learned drift − true‖² / Σ‖true‖² on the validation states) after {} steps ({per_step:.3} ms/step); run folder {}",
            curves.elbo_last100,
            eval.latent_r2[0],
            eval.latent_r2[1],
            r2(5),
            eval.vf_rel_err,
            run.steps_done(),
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

/// Writes the transitions since the last call as `transitions/chunk-<first step>.safetensors`
/// (`next_obs` steps × N_y, `action` and `z` steps × 2), atomically.
fn save_transitions(run: &mut ActdynRun, dir: &Path) -> Result<(), RunError> {
    let (tr, z) = run.take_transitions();
    let n = tr.len();
    if n == 0 {
        return Ok(());
    }
    let first = run.steps_done() + 1 - n as u64;
    let folder = dir.join("transitions");
    std::fs::create_dir_all(&folder).map_err(|e| RunError::io(&folder, "cannot create", e))?;
    let path = folder.join(format!("chunk-{first:09}.safetensors"));
    let tmp = folder.join(format!(".chunk-{first:09}.tmp"));
    kestrel_nn::save_safetensors(
        &tmp,
        &[
            ("next_obs".to_string(), vec![n, tr.obs_dim], &tr.next_obs[..]),
            ("action".to_string(), vec![n, 2], &tr.action[..]),
            ("z".to_string(), vec![n, 2], &z[..]),
        ],
        &[("first_step", first.to_string())],
    )
    .map_err(kestrel_actdyn::ActdynError::from)?;
    std::fs::rename(&tmp, &path).map_err(|e| RunError::io(&path, "cannot replace", e))
}

fn plot_curves(c: &Curves, title: &str) -> LinePlot {
    let pts = |v: &[f64]| c.step.iter().zip(v).map(|(&s, &y)| (s as f64, y)).collect::<Vec<_>>();
    LinePlot::new(format!("training curves: {title}"))
        .x_label("environment step")
        .y_label("per-100-step mean")
        .series(Series::new("ELBO/T", pts(&c.elbo_per_t)))
        .series(Series::new("LL/T/N_y", pts(&c.ll_per_t_ny)))
        .series(Series::new("KL/T/D", pts(&c.kl_per_t_d)))
}

/// True (grey) and learned (blue, through the evaluation's affine map) drift as arrows on a
/// 15×15 grid over [−2, 2]², with the last [`TRAIL`] steps of the true trajectory (orange).
/// Steps of the true trajectory drawn in `field.png`.
const TRAIL: usize = 2000;

fn field_sketch(run: &ActdynRun, eval: &Evaluation, traj: &[[f64; 2]]) -> Sketch {
    let (w, h) = (640u32, 680u32);
    let mut s = Sketch::new(w, h);
    s.background([255, 255, 255]);
    let px = |x: f64, y: f64| (40.0 + (x + 2.0) / 4.0 * 560.0, 80.0 + (2.0 - y) / 4.0 * 560.0);
    s.rect_outline(40.0, 80.0, 600.0, 640.0, [120, 120, 120], 1.0);
    s.text(
        (320.0, 30.0),
        14.0,
        "true (grey) and learned (blue) drift, each scaled to its largest arrow; trajectory (orange)",
        [0, 0, 0],
        kestrel_plot::Anchor::TopCentre,
    );
    let n = 15;
    let mut pts = Vec::with_capacity(n * n * 2);
    for i in 0..n {
        for j in 0..n {
            pts.push(-2.0 + 4.0 * (j as f64 + 0.5) / n as f64);
            pts.push(-2.0 + 4.0 * (i as f64 + 0.5) / n as f64);
        }
    }
    let truth: Vec<f64> = pts.chunks(2).flat_map(|p| run.env().field.eval([p[0], p[1]])).collect();
    let learned = learned_field(run.model(), &run.params, &eval.affine, &pts);
    // Each field is scaled to its own largest arrow (learned non-residual drifts are often far
    // larger than the truth's; the shapes are what the picture compares).
    let scale = |v: &[f64]| {
        let m =
            v.chunks(2).map(|d| d[0].hypot(d[1])).filter(|x| x.is_finite()).fold(1e-12, f64::max);
        0.9 * (4.0 / n as f64) / m
    };
    let arrows = |field: &[f64], colour: [u8; 3], s: &mut Sketch| {
        let k = scale(field);
        for (p, d) in pts.chunks(2).zip(field.chunks(2)) {
            if !(d[0].is_finite() && d[1].is_finite()) {
                continue;
            }
            let (x1, y1) = (p[0] + k * d[0], p[1] + k * d[1]);
            s.line(&[px(p[0], p[1]), px(x1, y1)], colour, 1.5);
            s.circle(px(x1, y1), 2.0, colour);
        }
    };
    arrows(&truth, [150, 150, 150], &mut s);
    if let Some(l) = &learned {
        arrows(l, [0, 114, 178], &mut s);
    }
    let tail: Vec<(f64, f64)> = traj
        .iter()
        .filter(|z| z[0].abs() <= 2.0 && z[1].abs() <= 2.0)
        .map(|z| px(z[0], z[1]))
        .collect();
    s.line(&tail, [230, 159, 0], 1.0);
    s
}

fn coverage_map(run: &ActdynRun) -> Option<Heatmaps> {
    let grid = run.model().rbf()?;
    let n = grid.points_per_axis();
    let cov = run.coverage();
    // Centre c = n·i + j sits at (g_i, g_j): row = second coordinate from the top.
    let mut cells = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            cells[(n - 1 - j) * n + i] = (1.0 + cov[n * i + j]).log10();
        }
    }
    let mut h = Heatmaps::new("RBF-centre coverage by the beliefs")
        .colour_map(ColourMap::Viridis)
        .colour_bar_label("log10(1 + Σ exp(−2γ‖b − c‖²))");
    h.push(Panel::new("centres (x right, y up)", n, n, cells));
    Some(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bins of 100 steps hold their means; the last-100 figures are over the last 100 calls.
    #[test]
    fn curves_bin_every_100_steps_and_keep_the_last_100_calls() {
        let mut acc = CurveAcc::default();
        for step in 1..=250u64 {
            // logged = [loss, ll, kl]: ELBO = −loss.
            acc.push(step, [step as f64, 1.0, 2.0 * step as f64]);
        }
        let c = acc.finish();
        assert_eq!(c.step, [100, 200]);
        assert_eq!(c.elbo_per_t, [-50.5, -150.5]);
        assert_eq!(c.ll_per_t_ny, [1.0, 1.0]);
        assert_eq!(c.kl_per_t_d, [101.0, 301.0]);
        assert_eq!(c.elbo_first, -1.0);
        assert_eq!(c.elbo_last100, -200.5);
        assert_eq!(c.kl_last100, 401.0);
        let empty = CurveAcc::default().finish();
        assert!(empty.elbo_first.is_nan() && empty.step.is_empty());
    }

    /// The coverage is written only with RBF dynamics, the planner's cost only with iCEM.
    #[test]
    fn outputs_follow_the_dynamics_and_the_policy() {
        let e1 = Actdyn::outputs(&ActdynConfig::e1());
        assert!(!e1.summary.iter().any(|s| s == "covered_fraction"));
        assert!(!e1.columns.iter().any(|s| s == "plan_cost"));
        let e2 = Actdyn::outputs(&ActdynConfig::e2());
        assert!(e2.summary.iter().any(|s| s == "covered_fraction"));
        assert!(e2.columns.iter().any(|s| s == "plan_cost"));
        let resumed = Actdyn::without_budget(&ActdynConfig { steps: 77, ..ActdynConfig::e2() });
        assert_eq!(resumed, ActdynConfig { steps: 0, ..ActdynConfig::e2() });
    }
}
