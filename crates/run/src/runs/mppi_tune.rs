//! `kestrel mppi tune` (run kind `mppi-tune`, the Python package's `kestrel.mppi.tune`): an
//! evolution strategy searching a controller's knobs (λ, Σ, μ, horizon), each candidate's
//! cost its closed-loop episode's mean running cost. The tuner is `kestrel-mppi`'s
//! ([`run_tune_with`]); the best knobs are written as a run config `kestrel mppi run` replays.

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, Run, RunError, Summary, runs, write_atomic};
use kestrel_core::Budget;
use kestrel_mppi::tune::{KnobKind, TuneSpec};
use kestrel_mppi::tune::{TuneConfig, run_tune_with, validate_tune};
use kestrel_mppi::{Dynamics, MppiRunConfig};
use kestrel_plot::{LinePlot, Series};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// The `mppi-tune` run kind.
pub struct MppiTune;

impl Run for MppiTune {
    const NAME: &'static str = "mppi-tune";
    const COMMAND: &'static str = "mppi tune";
    const SEED_KEY: &'static [&'static str] = &["run", "seed"];
    const METRICS: &'static [&'static str] = &["best_cost", "start_cost"];
    const CURVE: &'static str = "best";
    type Config = TuneConfig;

    /// Read over the run system's defaults once `first` names it: a pendulum run gets the
    /// pendulum's one-control noise, not the default system's.
    fn defaults(first: Option<&TuneConfig>) -> TuneConfig {
        first.map_or_else(TuneConfig::default, |f| TuneConfig::defaults_for(&f.run))
    }

    fn validate(c: &TuneConfig) -> Result<(), RunError> {
        Ok(validate_tune(c)?)
    }

    /// A controller per candidate episode in flight (one per thread, at most `pop_size`), the
    /// strategy over the knobs, the history and its plot.
    fn budget(c: &TuneConfig, threads: usize) -> Budget {
        let mut b = Budget::new();
        runs::fixed(&mut b);
        let live = c.pop_size.min(threads.max(1));
        candidates(&mut b, &c.run, &c.knobs, live, threads);
        let d = knob_dims(&c.run, &c.knobs);
        runs::packing(&mut b, c.strategy, d, c.pop_size, threads);
        b.add(
            format!("{} over the knobs", c.strategy.name()),
            format!("pop_size = {}, knobs = {d} coordinates", c.pop_size),
            c.strategy.state_bytes(d, c.pop_size),
            1,
        );
        runs::curve(&mut b, format!("generations = {}", c.generations), 2 * c.generations as u128);
        b
    }

    fn run(c: TuneConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        tune(c, launch)
    }
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

/// The search coordinates of `knobs` for `run` (their count as names when they do not parse:
/// validation reports that).
pub(crate) fn knob_dims(run: &MppiRunConfig, knobs: &[KnobKind]) -> usize {
    TuneSpec::from_names(knobs, run.system.nu(), &run.mppi)
        .map_or(knobs.len().saturating_mul(run.system.nu()), |s| s.num_dims())
}

/// `live` candidate episodes in flight, each with its controller (planning over up to three
/// times the base horizon when the horizon is tuned) and its cost trace.
pub(crate) fn candidates(
    b: &mut Budget,
    run: &MppiRunConfig,
    knobs: &[KnobKind],
    live: usize,
    threads: usize,
) {
    let horizon = if knobs.contains(&KnobKind::Horizon) {
        run.mppi.horizon.saturating_mul(3).max(2)
    } else {
        run.mppi.horizon
    };
    let one = run.controller_bytes(horizon, threads).saturating_add(8 * run.steps as u128);
    b.add(
        "candidate controllers in flight",
        format!(
            "run.mppi.num_samples = {}, run.mppi.horizon = {}, run.steps = {}, {live} in flight",
            run.mppi.num_samples, run.mppi.horizon, run.steps
        ),
        live as u128,
        one,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_mppi::System;

    fn load_tune(_: Option<&Path>, table: toml::Table) -> Result<TuneConfig, RunError> {
        crate::registry::load::<MppiTune>(crate::Layers::table(&table), None)
    }

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
