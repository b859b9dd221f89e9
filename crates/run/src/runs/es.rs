//! `kestrel evo run` (run kind `evo`, the Python package's `kestrel.evo.run`): an evolution
//! strategy minimising a benchmark function or evolving a CartPole policy, one metrics line
//! per generation, a convergence plot and a summary. The strategies and problems are
//! `kestrel-evo`'s; the generation loop is [`EsRun::run_with`].

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, Run, RunError, Summary, runs};
use kestrel_core::Budget;
use kestrel_evo::Problem;
use kestrel_evo::run::{EsConfig, EsRun};
use kestrel_plot::{LinePlot, Series};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// The `evo` run kind.
pub struct Es;

impl Run for Es {
    const NAME: &'static str = "evo";
    const COMMAND: &'static str = "evo run";
    const METRICS: &'static [&'static str] = &["best_fitness", "evals"];
    const CURVE: &'static str = "best";
    type Config = EsConfig;

    fn defaults(_: Option<&EsConfig>) -> EsConfig {
        EsConfig::default()
    }

    fn validate(c: &EsConfig) -> Result<(), RunError> {
        EsRun::new(c.clone())?;
        Ok(())
    }

    /// The problem (shift, rotation), bounds, the strategy's state with the driver's
    /// population (the largest population of a restarted search: the first one's times
    /// 2^`max_restarts`), evaluation scratch per thread, and the curve.
    fn budget(c: &EsConfig, threads: usize) -> Budget {
        use kestrel_evo::run::EsProblem;
        let n = match c.problem {
            EsProblem::Cartpole => kestrel_evo::run::CARTPOLE_DIMS,
            EsProblem::Function(_) => c.num_dims,
        };
        let (nn, t) = (n as u128, threads as u128);
        let dims = format!("num_dims = {n}");
        let mut b = Budget::new();
        runs::fixed(&mut b);
        b.add("problem shift and start", dims.clone(), nn, 12);
        if c.rotate {
            b.add("problem rotation", format!("{dims}, rotate = true"), nn.saturating_mul(nn), 8);
        }
        if c.bounds.is_some() {
            b.add("bounds", dims.clone(), nn, 16);
        }
        let pop = c.pop_size.unwrap_or_else(|| c.strategy.default_pop_size(n));
        let (pop, why) = match c.restarts {
            Some(_) => {
                let grow = 1usize.checked_shl(c.max_restarts as u32).unwrap_or(usize::MAX);
                let first = kestrel_evo::default_pop_size(n);
                (first.saturating_mul(grow), format!("{dims}, max_restarts = {}", c.max_restarts))
            }
            None => (pop, format!("{dims}, pop_size = {pop}")),
        };
        b.add(
            format!("{} state and population", c.strategy.name()),
            why,
            c.strategy.state_bytes(n, pop),
            1,
        );
        runs::packing(&mut b, c.strategy, n, pop, threads);
        b.add(
            "fitness history",
            dims.clone(),
            nn.saturating_mul(30) / (pop.max(1) as u128) + 12,
            4,
        );
        b.add(
            "evaluation scratch per thread",
            format!("{dims}, threads = {threads}"),
            nn.saturating_mul(t),
            16,
        );
        runs::curve(&mut b, format!("generations = {}", c.generations), c.generations as u128);
        b
    }

    fn run(c: EsConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

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
            let mut line = json!({"evals": g.evals, "best": m.best_so_far,
                "best_in_generation": m.best_in_generation, "sigma": m.sigma, "nonfinite": m.nonfinite});
            if c.restarts.is_some() {
                line["restart"] = json!(g.restart);
                line["pop_size"] = json!(g.pop_size);
            }
            io = metrics.log(m.generation, line);
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
        let reached = res.stop.describe();
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
