//! Evolution-strategy and quality-diversity runs with their folders: `kestrel evo run`,
//! `kestrel evo qd`, and the Python package's `kestrel.evo.run`.

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, RunError, Summary};
use kestrel_evo::qd::{Archive, Tessellation};
use kestrel_evo::run::{EsConfig, EsRun, QdConfig, QdRun};
use kestrel_evo::{Problem, Stop};
use kestrel_plot::{Heatmaps, LinePlot, Panel, Series};
use serde_json::json;
use std::time::Instant;

/// Validates `config`, then runs it into a new folder: `config.toml`, `record.json`,
/// `metrics.jsonl` (one line per generation), `convergence.png/svg`, `summary.md/json`. A run
/// whose best fitness is not finite is an error (after the folder is written).
pub fn run(config: EsConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    run_with(config, None, &|| None, launch)
}

/// [`run`] with the fitness computed by `evaluator` (the configured problem evaluated
/// elsewhere, on Ray workers say; see [`EsRun::run_with`]). `failed` is asked after every
/// generation: a message stops the run, which then fails with it.
pub fn run_with(
    config: EsConfig,
    evaluator: Option<&dyn Problem>,
    failed: &dyn Fn() -> Option<String>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let es = EsRun::new(config)?;
    let c = es.config().clone();
    let problem = String::from(c.problem);
    let title = format!("{} on {problem} ({} dims)", c.strategy, c.num_dims);
    let (dir, mut metrics) =
        start(&launch, "evo", &format!("{}-{problem}", c.strategy), c.seed, &c)?;
    let r = (|| -> Result<String, RunError> {
        let mut progress = launch.progress(c.generations, "generations");
        let (mut curve, mut io) = (Vec::new(), Ok(()));
        let t0 = Instant::now();
        let mut failure = None;
        let res = es.run_with(evaluator, |g| {
            failure = failed();
            if failure.is_some() {
                return false;
            }
            let m = &g.metrics;
            curve.push((g.evals as f64, m.best_so_far as f64));
            io = metrics.log(m.generation, json!({"evals": g.evals, "best": m.best_so_far,
                "best_in_generation": m.best_in_generation, "sigma": m.sigma, "nonfinite": m.nonfinite}));
            progress.tick(m.generation, &format!("best {:.3e} non-finite {}", m.best_so_far, m.nonfinite));
            io.is_ok()
        })?;
        if let Some(m) = failure {
            return Err(RunError::Failed(m));
        }
        io?;
        let secs = t0.elapsed().as_secs_f64();
        metrics.finish()?;
        LinePlot::new(&title)
            .x_label("evaluations")
            .y_label("best fitness so far")
            .series(Series::new("best so far", curve))
            .save(&dir.join("convergence"))?;
        let x = &res.best_solution;
        let reached = if res.stop == Stop::Target { "target reached" } else { "generations spent" };
        let per_eval = secs * 1e6 / res.evals.max(1) as f64;
        Summary::new(format!("evo run: {title}"))
            .value("best_fitness", "best fitness", res.best_fitness as f64)
            .item(
                "evals",
                "evaluations",
                res.evals,
                format!("{} ({} generations, {reached})", res.evals, res.generations),
            )
            .item(
                "wall_seconds",
                "wall time",
                secs,
                format!("{secs:.2} s ({per_eval:.1} µs per evaluation)"),
            )
            .value("nonfinite", "non-finite fitness values", res.nonfinite)
            .item(
                "best_solution",
                "best solution (first 8)",
                x.clone(),
                format!("{:?}", &x[..x.len().min(8)]),
            )
            .value("commit", "commit", COMMIT)
            .file("config.toml", "the resolved config (`--config` replays it)")
            .file("metrics.jsonl", "one line per generation")
            .file("convergence.png", "best fitness so far against evaluations (also .svg)")
            .write(dir.path())?;
        if !res.best_fitness.is_finite() {
            return Err(RunError::Failed(format!(
                "no finite fitness in {} evaluations ({} non-finite); run folder {}",
                res.evals,
                res.nonfinite,
                dir.path().display()
            )));
        }
        Ok(format!(
            "best {:.6e} after {} evaluations in {secs:.2} s; run folder {}",
            res.best_fitness,
            res.evals,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

/// The archive as a heat map over the two measures (grey: empty cell).
fn archive_map(archive: &Archive, bound: f32, title: &str) -> Heatmaps {
    let res = match archive.tessellation() {
        Tessellation::Grid { .. } => archive.num_cells().isqrt().clamp(1, 400),
        _ => 200,
    };
    let mut values = vec![f64::NAN; res * res];
    for py in 0..res {
        for px in 0..res {
            let m = [
                -bound + 2.0 * bound * (px as f32 + 0.5) / res as f32,
                -bound + 2.0 * bound * (py as f32 + 0.5) / res as f32,
            ];
            let cell = archive.index_of(&m);
            if archive.occupied[cell] {
                values[py * res + px] = archive.fitness[cell] as f64;
            }
        }
    }
    let b = bound as f64;
    let panel = Panel::new("elites", res, res, values)
        .x_label("measure 1")
        .y_label("measure 2")
        .extent((-b, b), (-b, b))
        .row0_at_bottom(true);
    Heatmaps::new(title).panel(panel).colour_bar_label("fitness (lower is better)")
}

/// The config spelling of an enum value.
fn spelling(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// Validates `config`, then runs it into a new folder: `config.toml`, `record.json`,
/// `metrics.jsonl`, `archive.png/svg` (heat map with colour bar), `qd_score.png/svg`,
/// `summary.md/json`.
pub fn qd(config: QdConfig, mut launch: Launch<'_>) -> Result<Outcome, RunError> {
    let qd = QdRun::new(config.clone())?;
    let c = config;
    let bound = qd.measure_bound();
    let name = format!("{}-{}", spelling(&c.emitter), spelling(&c.archive));
    let (dir, mut metrics) = start(&launch, "qd", &name, c.seed, &c)?;
    let r = (|| -> Result<String, RunError> {
        let mut progress = launch.progress(c.generations, "generations");
        let (mut curve, mut io, mut nonfinite) = (Vec::new(), Ok(()), 0u64);
        let t0 = Instant::now();
        let archive = qd.run(|g| {
            let s = &g.stats;
            curve.push((g.evals as f64, s.qd_score));
            io = metrics.log(g.generation, json!({"evals": g.evals, "qd_score": s.qd_score,
                "coverage": s.coverage, "best": s.best, "num_elites": s.num_elites, "restarts": g.restarts,
                "nonfinite": g.nonfinite}));
            nonfinite = g.nonfinite;
            progress.tick(g.generation, &format!("coverage {:.3} qd {:.4e} non-finite {}", s.coverage, s.qd_score, g.nonfinite));
            io.is_ok()
        });
        io?;
        metrics.finish()?;
        let secs = t0.elapsed().as_secs_f64();
        let s = archive.stats();
        let title = format!("{name} archive, linear-projection {}", c.function.name());
        archive_map(&archive, bound, &title).save(&dir.join("archive"))?;
        LinePlot::new("QD score")
            .x_label("evaluations")
            .y_label("QD score (offset 1e4 per elite)")
            .series(Series::new("QD score", curve))
            .save(&dir.join("qd_score"))?;
        let cells = archive.num_cells();
        Summary::new(format!(
            "evo qd: {name} ({cells} cells), linear-projection {} in {} dims",
            c.function.name(),
            c.num_dims
        ))
        .value("qd_score", "QD score (offset 1e4)", s.qd_score)
        .value("coverage", "coverage", s.coverage)
        .value("num_elites", "elites", s.num_elites as u64)
        .value("best", "best fitness", s.best as f64)
        .item("wall_seconds", "wall time", secs, format!("{secs:.2} s"))
        .value("commit", "commit", COMMIT)
        .file("archive.png", "heat map of the elites' fitness over the two measures (also .svg)")
        .file("qd_score.png", "QD score against evaluations (also .svg)")
        .write(dir.path())?;
        Ok(format!(
            "coverage {:.3}, QD score {:.4e}, best {:.4e}; run folder {}",
            s.coverage,
            s.qd_score,
            s.best,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}
