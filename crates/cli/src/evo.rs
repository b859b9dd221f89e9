//! `kestrel evo run | qd | bench`: configs and the run folder here, the runs in
//! `kestrel_evo::run`.

use crate::common::{ConfigArgs, Flag, Progress, finish, pool, start};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_evo::Stop;
use kestrel_evo::qd::{Archive, Tessellation};
use kestrel_evo::run::{EsConfig, EsRun, QdConfig, QdRun};
use kestrel_plot::{Heatmaps, LinePlot, Panel, Series};
use kestrel_run::Summary;
use serde_json::json;
use std::time::Instant;

#[derive(Subcommand)]
pub enum EvoCmd {
    /// Minimise a benchmark function (or evolve a CartPole policy) with an evolution strategy.
    Run(RunArgs),
    /// Quality diversity on the linear-projection benchmark.
    Qd(QdArgs),
    /// Time one generation per phase (ask, evaluate, tell) of CMA-ES.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct RunArgs {
    /// Strategy: cma-es, sep-cma-es, snes, xnes, open-es, pgpe, de (config key `strategy`).
    #[arg(long)]
    strategy: Option<String>,
    /// Problem: a benchmark function or cartpole (config key `problem`).
    #[arg(long)]
    problem: Option<String>,
    /// Dimensions.
    #[arg(long)]
    num_dims: Option<u64>,
    /// Population size.
    #[arg(long)]
    pop_size: Option<u64>,
    /// Generations.
    #[arg(long)]
    generations: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Initial step size.
    #[arg(long)]
    sigma: Option<f64>,
    /// Evaluation threads (default: all cores; results do not depend on it).
    #[arg(long)]
    threads: Option<usize>,
    #[command(flatten)]
    cfg: ConfigArgs,
}

pub fn run(a: RunArgs) -> Result<()> {
    let c: EsConfig = a.cfg.load(
        &EsConfig::default(),
        vec![
            ("strategy", Flag::S(a.strategy)),
            ("problem", Flag::S(a.problem)),
            ("num_dims", Flag::I(a.num_dims)),
            ("pop_size", Flag::I(a.pop_size)),
            ("generations", Flag::I(a.generations)),
            ("seed", Flag::I(a.seed)),
            ("sigma", Flag::F(a.sigma)),
        ],
    )?;
    let es = EsRun::new(c)?;
    let pool = pool(a.threads)?;
    let c = es.config().clone();
    let name = format!("{}-{}", c.strategy, String::from(c.problem));
    let (dir, mut metrics) = start(&a.cfg.out_dir, "evo", &name, c.seed, &c)?;
    let r = (|| -> Result<()> {
        let mut progress = Progress::new(c.generations, "generations");
        let (mut curve, mut io) = (Vec::new(), Ok(()));
        let t0 = Instant::now();
        let res = pool.install(|| {
            es.run(|g| {
                let m = &g.metrics;
                curve.push((g.evals as f64, m.best_so_far as f64));
                io = metrics.log(m.generation, json!({"evals": g.evals, "best": m.best_so_far,
                    "best_in_generation": m.best_in_generation, "sigma": m.sigma, "nonfinite": m.nonfinite}));
                progress.tick(m.generation, &format!("best {:.3e} non-finite {}", m.best_so_far, m.nonfinite));
                io.is_ok()
            })
        })?;
        io?;
        let secs = t0.elapsed().as_secs_f64();
        metrics.finish()?;
        LinePlot::new(format!(
            "{} on {} ({} dims)",
            c.strategy,
            String::from(c.problem),
            c.num_dims
        ))
        .x_label("evaluations")
        .y_label("best fitness so far")
        .series(Series::new("best so far", curve))
        .save(&dir.join("convergence"))?;
        let x = &res.best_solution;
        let reached = match res.stop {
            Stop::Target => "target reached",
            _ => "generations spent",
        };
        Summary::new(format!(
            "evo run: {} on {} ({} dims)",
            c.strategy,
            String::from(c.problem),
            c.num_dims
        ))
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
            format!("{secs:.2} s ({:.1} µs per evaluation)", secs * 1e6 / res.evals.max(1) as f64),
        )
        .value("nonfinite", "non-finite fitness values", res.nonfinite)
        .item(
            "best_solution",
            "best solution (first 8)",
            x.clone(),
            format!("{:?}", &x[..x.len().min(8)]),
        )
        .value("commit", "commit", kestrel_run::COMMIT)
        .file("config.toml", "the resolved config (`--config` replays it)")
        .file("metrics.jsonl", "one line per generation")
        .file("convergence.png", "best fitness so far against evaluations (also .svg)")
        .write(dir.path())?;
        if !res.best_fitness.is_finite() {
            bail!(
                "no finite fitness in {} evaluations ({} non-finite); run folder {}",
                res.evals,
                res.nonfinite,
                dir.path().display()
            );
        }
        println!(
            "best {:.6e} after {} evaluations in {secs:.2} s; run folder {}",
            res.best_fitness,
            res.evals,
            dir.path().display()
        );
        Ok(())
    })();
    finish(dir, r)
}

#[derive(Args)]
pub struct QdArgs {
    /// grid or cvt.
    #[arg(long)]
    archive: Option<String>,
    /// cma-me, map-elites or iso-line.
    #[arg(long)]
    emitter: Option<String>,
    /// Dimensions.
    #[arg(long)]
    num_dims: Option<u64>,
    /// Generations.
    #[arg(long)]
    generations: Option<u64>,
    /// Seed.
    #[arg(long)]
    seed: Option<u64>,
    #[command(flatten)]
    cfg: ConfigArgs,
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
    Heatmaps::new(title)
        .panel(
            Panel::new("elites", res, res, values)
                .x_label("measure 1")
                .y_label("measure 2")
                .extent((-b, b), (-b, b))
                .row0_at_bottom(true),
        )
        .colour_bar_label("fitness (lower is better)")
}

pub fn qd(a: QdArgs) -> Result<()> {
    let c: QdConfig = a.cfg.load(
        &QdConfig::default(),
        vec![
            ("archive", Flag::S(a.archive)),
            ("emitter", Flag::S(a.emitter)),
            ("num_dims", Flag::I(a.num_dims)),
            ("generations", Flag::I(a.generations)),
            ("seed", Flag::I(a.seed)),
        ],
    )?;
    let qd = QdRun::new(c.clone())?;
    let bound = qd.measure_bound();
    let name = format!("{}-{}", toml_name(&c.emitter)?, toml_name(&c.archive)?);
    let (dir, mut metrics) = start(&a.cfg.out_dir, "qd", &name, c.seed, &c)?;
    let r = (|| -> Result<()> {
        let mut progress = Progress::new(c.generations, "generations");
        let (mut curve, mut io) = (Vec::new(), Ok(()));
        let t0 = Instant::now();
        let archive = qd.run(|g| {
            let s = &g.stats;
            curve.push((g.evals as f64, s.qd_score));
            io = metrics.log(g.generation, json!({"evals": g.evals, "qd_score": s.qd_score,
                "coverage": s.coverage, "best": s.best, "num_elites": s.num_elites, "restarts": g.restarts}));
            progress.tick(g.generation, &format!("coverage {:.3} qd {:.4e}", s.coverage, s.qd_score));
            io.is_ok()
        });
        io?;
        metrics.finish()?;
        let secs = t0.elapsed().as_secs_f64();
        let s = archive.stats();
        archive_map(
            &archive,
            bound,
            &format!("{} archive, linear-projection {}", name, c.function.name()),
        )
        .save(&dir.join("archive"))?;
        LinePlot::new("QD score")
            .x_label("evaluations")
            .y_label("QD score (offset 1e4 per elite)")
            .series(Series::new("QD score", curve))
            .save(&dir.join("qd_score"))?;
        Summary::new(format!(
            "evo qd: {name} ({} cells), linear-projection {} in {} dims",
            archive.num_cells(),
            c.function.name(),
            c.num_dims
        ))
        .value("qd_score", "QD score (offset 1e4)", s.qd_score)
        .value("coverage", "coverage", s.coverage)
        .value("num_elites", "elites", s.num_elites as u64)
        .value("best", "best fitness", s.best as f64)
        .item("wall_seconds", "wall time", secs, format!("{secs:.2} s"))
        .value("commit", "commit", kestrel_run::COMMIT)
        .file("archive.png", "heat map of the elites' fitness over the two measures (also .svg)")
        .file("qd_score.png", "QD score against evaluations (also .svg)")
        .write(dir.path())?;
        println!(
            "coverage {:.3}, QD score {:.4e}, best {:.4e}; run folder {}",
            s.coverage,
            s.qd_score,
            s.best,
            dir.path().display()
        );
        Ok(())
    })();
    finish(dir, r)
}

/// The config spelling of an enum value.
fn toml_name(v: &impl serde::Serialize) -> Result<String> {
    Ok(serde_json::to_value(v)?.as_str().unwrap_or("?").to_string())
}

#[derive(Args)]
pub struct BenchArgs {
    /// Dimensions to time.
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    num_dims: Vec<usize>,
    /// Population size.
    #[arg(long, default_value_t = 64)]
    pop_size: usize,
    /// Generations per size.
    #[arg(long, default_value_t = 300)]
    generations: u64,
    /// cma-es or sep-cma-es.
    #[arg(long, default_value = "cma-es")]
    strategy: String,
    /// Decompose C every generation (evosax's behaviour) instead of lazily.
    #[arg(long)]
    eager_eigen: bool,
    /// Print one JSON object per size.
    #[arg(long)]
    json: bool,
    /// Instead: time one neuroevolution generation (CartPole MLP, population `pop_size`) on 1
    /// and 2 threads and check the fitness is identical.
    #[arg(long)]
    neuro: bool,
}

fn neuro_bench(a: &BenchArgs) -> Result<()> {
    let t =
        kestrel_evo::bench::neuro(&[pool(Some(1))?, pool(Some(2))?], a.pop_size, a.generations)?;
    let speedup = t.ms[0] / t.ms[1];
    if a.json {
        println!(
            "{}",
            json!({"neuro_ms_1_thread": t.ms[0], "neuro_ms_2_threads": t.ms[1], "speedup": speedup, "identical": t.identical})
        );
    } else {
        println!(
            "neuroevolution generation, CartPole-v1, MLP 4-8-2 ({} weights), pop {}, 2 episodes each:\n  1 thread {:.2} ms, 2 threads {:.2} ms: {speedup:.2}x, fitness identical: {}",
            t.num_dims, a.pop_size, t.ms[0], t.ms[1], t.identical
        );
    }
    if !t.identical {
        bail!("fitness differs between 1 and 2 threads");
    }
    Ok(())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    if a.neuro {
        return neuro_bench(&a);
    }
    let sep = match a.strategy.as_str() {
        "cma-es" => false,
        "sep-cma-es" => true,
        other => bail!("--strategy {other:?}: accepted are cma-es, sep-cma-es"),
    };
    if !a.json {
        let eigen = match (sep, a.eager_eigen) {
            (false, true) => ", eager eigendecomposition",
            (false, false) => ", lazy eigendecomposition",
            _ => "",
        };
        println!(
            "{} on sphere, pop {}, one thread, {} generations{eigen}",
            a.strategy, a.pop_size, a.generations
        );
        println!(
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "dims", "ask µs", "eval µs", "tell µs", "gen µs", "best"
        );
    }
    let pool = pool(Some(1))?;
    for &n in &a.num_dims {
        let t = pool.install(|| {
            kestrel_evo::bench::cma_phases(sep, a.pop_size, n, a.generations, a.eager_eigen)
        })?;
        let gen_us = t.ask_us + t.eval_us + t.tell_us;
        if a.json {
            println!(
                "{}",
                json!({"strategy": a.strategy, "num_dims": n, "pop_size": a.pop_size, "ask_us": t.ask_us,
                       "eval_us": t.eval_us, "tell_us": t.tell_us, "gen_us": gen_us, "best": t.best})
            );
        } else {
            println!(
                "{n:>6} {:>12.1} {:>12.1} {:>12.1} {gen_us:>12.1} {:>12.3e}",
                t.ask_us, t.eval_us, t.tell_us, t.best
            );
        }
    }
    Ok(())
}
