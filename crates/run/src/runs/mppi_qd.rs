//! `kestrel mppi qd` (run kind `mppi-qd`): quality-diversity tuning of a controller's knobs.
//! Instead of the one best parameter set `mppi tune` returns, CMA-ME (Fontaine et al., GECCO
//! 2020) fills an archive of good parameter sets spread over two measures: the first two
//! search coordinates themselves (with the default knobs `lambda, sigma`: log λ and log σ of
//! the first control), as the pyribs-based autotuner of pytorch-mppi intends
//! (`shared/reference/mppi-es-qd.md` §9: its QD tuning crashed with ribs 0.12 or needed Ray).
//! A candidate's fitness is `mppi tune`'s: the mean closed-loop running cost of its episode
//! (minimised), every candidate on the same episode key (common random numbers).
//!
//! Key tree: `run = Key::new(run.seed)`; every episode `run.fold_in(0)` (random starts:
//! `run.fold_in(STARTS_TAG)`, as `mppi tune`); emitter `e` starts
//! from `run.fold_in(1000 + e)`; generation `g` asks emitter `e` with
//! `run.fold_in(g + 1).fold_in(e).fold_in(0)` and tells with `.fold_in(2)`. The emitters' batches
//! of a generation are evaluated in one call (rows in parallel), so results do not depend on
//! the thread count.

use crate::base::{COMMIT, RunError, write_atomic};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::runs::mppi::MppiRunConfig;
use crate::runs::mppi_tune::{MppiTuneConfig, TuneStarts, tune_problem, validate_tune};
use crate::summary::Summary;
use kestrel_core::Budget;
use kestrel_core::{FromInvalid, Key};
use kestrel_dynamics::Dynamics;
use kestrel_evo::EvoError;
use kestrel_evo::qd::{Archive, CmaMe, Emitter};
use kestrel_mppi::tune::{KnobKind, KnobTransform, TuneSpec};
use kestrel_mppi::{ControllerKind, SystemKind};
use kestrel_plot::{LinePlot, Series};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// `kestrel mppi qd`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct MppiQdConfig {
    /// The run whose knobs are searched (its `steps` is each candidate's episode length; its
    /// `seed` keys the emitters and the episodes).
    #[documented(nested)]
    pub run: MppiRunConfig,
    /// Knobs searched (lambda, sigma, mu, horizon; sigma and mu stand for every control
    /// dimension). The first two search coordinates are the archive's two measures.
    pub knobs: Vec<KnobKind>,
    /// CMA-ME emitters side by side.
    pub num_emitters: usize,
    /// Candidates per emitter per generation.
    pub batch_size: usize,
    /// Archive cells per measure (a grid of cells × cells).
    pub cells: usize,
    /// Generations.
    pub generations: u64,
    /// Initial step size of every emitter (in the knobs' transformed coordinates).
    pub sigma: f64,
    /// Where each candidate's episodes start (its cost is their mean), as `mppi tune`'s.
    #[serde(default)]
    #[documented(nested)]
    pub starts: TuneStarts,
}

impl Default for MppiQdConfig {
    fn default() -> Self {
        MppiQdConfig::defaults_for(ControllerKind::Mppi, SystemKind::Nav2d)
    }
}

impl MppiQdConfig {
    /// The defaults over a controller and system (their MPPI run defaults, 20-step episodes).
    pub fn defaults_for(controller: ControllerKind, system: SystemKind) -> Self {
        MppiQdConfig {
            run: MppiRunConfig::defaults_for(controller, system, 20, 0),
            knobs: vec![KnobKind::Lambda, KnobKind::Sigma],
            num_emitters: 2,
            batch_size: 8,
            cells: 8,
            generations: 20,
            sigma: 1.0,
            starts: TuneStarts::default(),
        }
    }

    /// The tuning problem (the same candidate cost as `mppi tune`).
    fn tune_config(&self) -> MppiTuneConfig {
        MppiTuneConfig {
            run: self.run.clone(),
            knobs: self.knobs.clone(),
            generations: self.generations,
            sigma: self.sigma,
            starts: self.starts.clone(),
            ..MppiTuneConfig::defaults_for(&self.run)
        }
    }

    /// The knobs' search space (checked).
    fn spec(&self) -> Result<TuneSpec, RunError> {
        Ok(TuneSpec::from_names(&self.knobs, self.run.system.nu(), &self.run.mppi)?)
    }
}

/// The `mppi-qd` run kind.
pub struct MppiQd;

impl Run for MppiQd {
    const NAME: &'static str = "mppi-qd";
    const COMMAND: &'static str = "mppi qd";
    const ABOUT: &'static str = "Quality-diversity tuning: CMA-ME fills an archive of good knob settings spread over the first two knobs; writes every elite and the best as a config.";
    const SEED_KEY: &'static [&'static str] = &["run", "seed"];
    const METRICS: &'static [&'static str] = &["qd_score", "coverage", "best_cost"];
    const CURVE: &'static str = "qd_score";
    type Config = MppiQdConfig;

    /// Read over the run system's defaults once `first` names it (as `mppi tune`).
    fn defaults(first: Option<&MppiQdConfig>) -> MppiQdConfig {
        first.map_or_else(MppiQdConfig::default, |f| {
            MppiQdConfig::defaults_for(f.run.controller, f.run.system)
        })
    }

    /// The archive, the CMA-ME emitters over the knobs (one more while one restarts), their
    /// batches, the candidate controllers in flight, `elites.csv`, the heat map and the curve.
    fn budget(c: &MppiQdConfig, threads: usize) -> Budget {
        use crate::runs::mppi_tune::{candidates, knob_dims};
        let mut b = Budget::new();
        runs::fixed(&mut b);
        let d = knob_dims(&c.run, &c.knobs);
        let cells = c.cells.saturating_mul(c.cells);
        let sizes = format!("cells = {}, knobs = {d} coordinates", c.cells);
        b.add("archive", sizes.clone(), kestrel_evo::memory::archive_bytes(cells, d), 1);
        // At most one elite per evaluation.
        let evals = (c.generations as u128)
            .saturating_mul(c.num_emitters as u128)
            .saturating_mul(c.batch_size as u128);
        b.add("elites.csv", format!("cells = {}", c.cells), (cells as u128).min(evals), 160);
        let (e, lam) = (c.num_emitters as u128, c.batch_size as u128);
        let one = kestrel_evo::StrategyKind::CmaEs.state_bytes(d, c.batch_size);
        runs::packing(&mut b, kestrel_evo::StrategyKind::CmaEs, d, c.batch_size, threads);
        let ems = format!("num_emitters = {}, batch_size = {}", c.num_emitters, c.batch_size);
        b.add(
            "CMA-ME emitters (one restarting)",
            ems.clone(),
            e.saturating_add(1),
            one.saturating_add(21 * lam),
        );
        b.add("batches", ems, e.saturating_mul(lam), 4 * d as u128 + 12);
        let live = c.num_emitters.saturating_mul(c.batch_size).min(threads.max(1));
        candidates(&mut b, &c.run, &c.knobs, live, threads);
        runs::heat_map(&mut b, format!("cells = {}", c.cells), c.cells.clamp(1, 400) as u128);
        runs::curve(&mut b, format!("generations = {}", c.generations), c.generations as u128);
        b
    }

    fn outputs(_: &MppiQdConfig) -> Outputs {
        Outputs::new(
            &[
                "best_cost",
                "best_lambda",
                "coverage",
                "nonfinite",
                "num_elites",
                "num_starts",
                "qd_score",
                "wall_seconds",
            ],
            &["best", "coverage", "nonfinite", "num_elites", "qd_score"],
        )
    }

    fn validate(c: &MppiQdConfig) -> Result<(), RunError> {
        validate_tune(&c.tune_config())?;
        if c.spec()?.num_dims() < 2 {
            return Err(EvoError::invalid(
                "knobs",
                format!("{:?}", c.knobs),
                "at least two search coordinates (the measures)",
            )
            .into());
        }
        if !(4..=4096).contains(&c.batch_size) {
            return Err(EvoError::invalid("batch_size", c.batch_size, "4 to 4096").into());
        }
        if !(1..=64).contains(&c.num_emitters) {
            return Err(EvoError::invalid("num_emitters", c.num_emitters, "1 to 64").into());
        }
        if !(1..=1024).contains(&c.cells) {
            return Err(EvoError::invalid("cells", c.cells, "1 to 1024 per measure").into());
        }
        if c.generations == 0 {
            return Err(EvoError::invalid("generations", 0, "at least 1").into());
        }
        if !(c.sigma.is_finite() && c.sigma > 0.0) {
            return Err(EvoError::invalid("sigma", c.sigma, "finite and > 0").into());
        }
        Ok(())
    }

    fn run(c: MppiQdConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

/// The bounds of search coordinate `i` (the archive's extent on that measure).
fn bounds(spec: &TuneSpec, i: usize) -> (f32, f32) {
    let t = &spec.knobs[i];
    (t.to_search(t.lower), t.to_search(t.upper))
}

/// Validates `c`, then fills the archive into a new folder: `config.toml`, `record.json`,
/// `metrics.jsonl` (one line per generation), `archive.png/svg` (cost over the two
/// measures), `qd_score.png/svg`, `elites.csv` (every elite's knobs and cost), `best.toml`
/// (the base run with the best elite's knobs, which `kestrel mppi run --config` replays),
/// `summary.md/json`.
pub fn run(c: MppiQdConfig, mut launch: Launch<'_>) -> Result<Outcome, RunError> {
    MppiQd::validate(&c)?;
    let spec = c.spec()?;
    let problem = tune_problem(&c.tune_config())?;
    let (nu, dims) = (c.run.system.nu(), spec.num_dims());
    let (b0, b1) = (bounds(&spec, 0), bounds(&spec, 1));
    let name = format!("{}-{}", c.run.controller.name(), c.run.system.name());
    let (dir, mut metrics) = start(&launch, "mppi-qd", &name, c.run.seed, &c)?;
    let r = (|| -> Result<String, RunError> {
        let t0 = Instant::now();
        let run = Key::new(c.run.seed);
        let mut archive =
            Archive::grid(dims, vec![c.cells, c.cells], vec![b0.0, b1.0], vec![b0.1, b1.1], 1e4)?;
        let x0 = spec.from_params(&c.run.mppi, nu);
        let mut emitters = (0..c.num_emitters)
            .map(|e| CmaMe::new(c.batch_size, &x0, c.sigma, run.fold_in(1000 + e as u64)))
            .collect::<Result<Vec<_>, _>>()?;
        let per = c.batch_size * dims;
        let mut pop = vec![0.0f32; c.num_emitters * per];
        let mut fit = vec![0.0f32; c.num_emitters * c.batch_size];
        let mut meas = vec![0.0f32; c.num_emitters * c.batch_size * 2];
        let (mut progress, mut curve, mut nonfinite) =
            (launch.progress(c.generations, "generations"), Vec::new(), 0u64);
        for g in 0..c.generations {
            let key_gen = run.fold_in(g + 1);
            for (e, em) in emitters.iter_mut().enumerate() {
                em.ask(key_gen.fold_in(e as u64).fold_in(0), &archive, &mut pop[e * per..][..per]);
            }
            // Every emitter's batch in one call, on the common episode key.
            problem.evaluate(run.fold_in(0), &pop, &mut fit);
            for (m, x) in meas.chunks_mut(2).zip(pop.chunks(dims)) {
                m.copy_from_slice(&x[..2]);
            }
            nonfinite += fit.iter().filter(|f| !f.is_finite()).count() as u64;
            let b = c.batch_size;
            for (e, em) in emitters.iter_mut().enumerate() {
                let key = key_gen.fold_in(e as u64).fold_in(2);
                let (p, f, m) =
                    (&pop[e * per..][..per], &fit[e * b..][..b], &meas[e * b * 2..][..b * 2]);
                em.tell(key, &mut archive, p, f, m);
            }
            let s = archive.stats();
            curve.push(((g + 1) as f64, s.qd_score));
            metrics.log(
                g + 1,
                json!({"qd_score": s.qd_score, "coverage": s.coverage, "best": s.best,
                    "num_elites": s.num_elites, "nonfinite": nonfinite}),
            )?;
            if !progress.tick(g + 1, &format!("coverage {:.3} best cost {:.4}", s.coverage, s.best))
            {
                break;
            }
        }
        metrics.finish()?;
        progress.stopped()?;
        let secs = t0.elapsed().as_secs_f64();
        let s = archive.stats();
        // Every elite: its knobs as the run uses them (`Tuned::value`, as `to_params` sets
        // them), and its cost.
        let knob = |i: usize| format!("{:?}", spec.knobs[i].knob);
        let mut csv = (0..dims).map(knob).collect::<Vec<_>>().join(",") + ",cost\n";
        let mut best: Option<(f32, usize)> = None;
        for cell in (0..archive.num_cells()).filter(|&i| archive.occupied[i]) {
            let x = archive.solution(cell);
            let values: Vec<String> =
                spec.knobs.iter().zip(x).map(|(t, &v)| t.value(v).to_string()).collect();
            csv.push_str(&format!("{},{}\n", values.join(","), archive.fitness[cell]));
            if best.is_none_or(|(f, _)| archive.fitness[cell] < f) {
                best = Some((archive.fitness[cell], cell));
            }
        }
        write_atomic(&dir.join("elites.csv"), csv.as_bytes())?;
        let Some((best_cost, cell)) = best else {
            return Err(RunError::Failed(format!(
                "no candidate had a finite cost ({nonfinite} non-finite); run folder {}",
                dir.path().display()
            )));
        };
        let mut best_run = c.run.clone();
        best_run.mppi = spec.to_params(&c.run.mppi, nu, archive.solution(cell));
        write_atomic(&dir.join("best.toml"), crate::config::to_toml(&best_run)?.as_bytes())?;
        let label = |i: usize| match spec.knobs[i].transform {
            KnobTransform::Log => format!("log {}", knob(i)),
            KnobTransform::Linear => knob(i),
        };
        let title = format!("{name}: cost of the elites");
        let (l0, l1) = (label(0), label(1));
        super::qd::archive_map(&archive, [b0.0, b1.0], [b0.1, b1.1], [&l0, &l1], &title)
            .save(&dir.join("archive"))?;
        LinePlot::new("QD score")
            .x_label("generation")
            .y_label("QD score (offset 1e4 per elite)")
            .series(Series::new("QD score", curve))
            .save(&dir.join("qd_score"))?;
        let bp = &best_run.mppi;
        Summary::new(format!("mppi qd: {name}, knobs {:?}", c.knobs))
            .value("qd_score", "QD score (offset 1e4)", s.qd_score)
            .value("coverage", "coverage", s.coverage)
            .value("num_elites", "elites", s.num_elites as u64)
            .value("best_cost", "best cost", best_cost as f64)
            .item("best_lambda", "best λ", bp.lambda, format!("{:.5}", bp.lambda))
            .item(
                "best_noise_sigma",
                "best Σ",
                bp.noise_sigma.clone(),
                format!("{:?}", bp.noise_sigma),
            )
            .value("nonfinite", "candidates with a non-finite cost", nonfinite)
            .value(
                "num_starts",
                "start states per candidate",
                c.tune_config().start_states().len() as u64,
            )
            .item("wall_seconds", "wall time", secs, format!("{secs:.2} s"))
            .value("commit", "commit", COMMIT)
            .file("archive.png", "cost of the elites over the first two knobs (also .svg)")
            .file("elites.csv", "every elite's knob values and cost")
            .file(
                "best.toml",
                "the base run with the best elite's knobs: `kestrel mppi run --config best.toml`",
            )
            .file("metrics.jsonl", "one line per generation")
            .write(dir.path())?;
        Ok(format!(
            "{} elites, coverage {:.3}, best cost {best_cost:.4} (λ={:.4}) in {secs:.2} s; run folder {}",
            s.num_elites,
            s.coverage,
            bp.lambda,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go(c: MppiQdConfig, threads: usize, out: &Path) -> Outcome {
        let pool = crate::base::pool(Some(threads)).unwrap();
        let mut p = crate::launch::quiet;
        let l = Launch { out_dir: out.to_path_buf(), argv: vec!["t".into()], progress: &mut p };
        pool.install(|| run(c, l)).unwrap()
    }

    /// The archive fills with distinct elites inside the knobs' bounds, the same on 1 and 2
    /// threads; `best.toml` is a valid run config with the best elite's λ; bad configs are
    /// refused before any folder exists.
    #[test]
    fn the_archive_fills_the_same_on_any_thread_count_and_bad_configs_are_refused() {
        let out = std::env::temp_dir().join(format!("kestrel-mppi-qd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let mut c = MppiQdConfig::defaults_for(ControllerKind::Mppi, SystemKind::Pendulum);
        (c.generations, c.batch_size, c.run.steps, c.run.mppi.num_samples) = (4, 6, 8, 64);
        let (a, b) = (go(c.clone(), 1, &out.join("a")), go(c.clone(), 2, &out.join("b")));
        let read = |o: &Outcome, f: &str| std::fs::read_to_string(o.dir.join(f)).unwrap();
        assert_eq!(read(&a, "elites.csv"), read(&b, "elites.csv"));
        let rows: Vec<Vec<f64>> = read(&a, "elites.csv")
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
            .collect();
        assert!(rows.len() >= 3, "{rows:?}");
        for r in &rows {
            assert!((1e-3..=1e3).contains(&r[0]) && (1e-3..=1e2).contains(&r[1]), "{r:?}");
        }
        let best: MppiRunConfig = toml::from_str(&read(&a, "best.toml")).unwrap();
        best.validate().unwrap();
        let lowest = rows.iter().min_by(|x, y| x[2].total_cmp(&y[2])).unwrap();
        assert!(
            (best.mppi.lambda - lowest[0]).abs() <= 1e-6 * lowest[0],
            "{} {lowest:?}",
            best.mppi.lambda
        );
        for bad in [
            MppiQdConfig { knobs: vec![KnobKind::Lambda], ..c.clone() },
            MppiQdConfig { batch_size: 2, ..c.clone() },
            MppiQdConfig { cells: 0, ..c.clone() },
            MppiQdConfig { generations: 0, ..c.clone() },
            MppiQdConfig { sigma: f64::NAN, ..c.clone() },
        ] {
            assert!(MppiQd::validate(&bad).is_err(), "{bad:?}");
            let mut p = crate::launch::quiet;
            let dir = out.join("bad");
            let l = Launch { out_dir: dir.clone(), argv: vec![], progress: &mut p };
            assert!(run(bad, l).is_err());
            assert!(!dir.exists());
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
