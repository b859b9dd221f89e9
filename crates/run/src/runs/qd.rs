//! `kestrel evo qd` (run kind `qd`, the Python package's `kestrel.evo.qd`): quality diversity
//! on the linear-projection benchmark of the CMA-ME paper (Fontaine et al. 2020), an archive
//! heat map and the QD score per generation. Archives and emitters are `kestrel-evo`'s; the
//! config, its checks and the generation loop ([`QdRun::run`]) are here.

use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_core::Budget;
use kestrel_core::{FromInvalid, Key};
use kestrel_evo::EvoError;
use kestrel_evo::StrategyKind;
use kestrel_evo::problem::Function;
use kestrel_evo::qd::{
    Archive, CmaMe, Emitter, LinearProjection, MapElites, QdProblem, Tessellation, Variation,
};
use kestrel_plot::{Heatmaps, LinePlot, Panel, Series};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// Archive layout of a QD run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveKind {
    /// `cells × cells` grid over the two measures.
    Grid,
    /// `cells` centroidal Voronoi cells.
    Cvt,
}

/// Emitters of a QD run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EmitterKind {
    /// CMA-ME (improvement-ranked CMA-ES).
    CmaMe,
    /// MAP-Elites with Gaussian variation.
    MapElites,
    /// MAP-Elites with iso-line variation.
    IsoLine,
}

/// `kestrel evo qd`'s config (the linear-projection benchmark of the CMA-ME paper).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct QdConfig {
    /// Archive layout.
    pub archive: ArchiveKind,
    /// Emitter type.
    pub emitter: EmitterKind,
    /// Emitters run side by side.
    pub num_emitters: usize,
    /// Solutions per emitter per generation.
    pub batch_size: usize,
    /// Search dimensions.
    pub num_dims: usize,
    /// Cells per measure (grid) or cells in all (cvt).
    pub cells: usize,
    /// Generations.
    pub generations: u64,
    /// Seed.
    pub seed: u64,
    /// Objective.
    pub function: Function,
    /// Emitter step size / mutation scale.
    pub sigma: f64,
    /// CMA-ME's evolution strategy (pyribs' `es`): CMA-ES by default, any strategy by
    /// Kestrel's or evosax's name (`sep-cma-es`, `LM_MA_ES`, `open-es`, ...).
    #[serde(default = "default_es")]
    pub es: StrategyKind,
    /// Its hyper-parameters (pyribs' `es_kwargs`; the `[params]` table of `kestrel evo run`):
    /// a knob the strategy does not have is an error naming the strategies that have it.
    #[serde(default)]
    #[documented(nested)]
    pub params: kestrel_evo::StrategyParams,
}

fn default_es() -> StrategyKind {
    StrategyKind::CmaEs
}

impl Default for QdConfig {
    fn default() -> Self {
        QdConfig {
            archive: ArchiveKind::Grid,
            emitter: EmitterKind::CmaMe,
            num_emitters: 3,
            batch_size: 36,
            num_dims: 20,
            cells: 50,
            generations: 500,
            seed: 0,
            function: Function::Sphere,
            sigma: 0.5,
            es: default_es(),
            params: kestrel_evo::StrategyParams::default(),
        }
    }
}

/// One QD generation's report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QdGeneration {
    /// Generations done.
    pub generation: u64,
    /// Evaluations so far.
    pub evals: u64,
    /// Archive statistics.
    pub stats: kestrel_evo::qd::ArchiveStats,
    /// Emitter restarts so far.
    pub restarts: u64,
    /// NaN or infinite fitness or measures so far (never added to the archive).
    pub nonfinite: u64,
}

/// A validated QD run: the problem, the empty archive and the emitters.
pub struct QdRun {
    config: QdConfig,
    problem: LinearProjection,
    archive: Archive,
    emitters: Vec<Box<dyn Emitter>>,
}

impl QdRun {
    /// Validates `config` and builds the archive and emitters. Key tree: the run key is
    /// `Key::new(seed)`; the CVT centroids use `run.fold_in(99)`, emitter `e` starts from
    /// `run.fold_in(1000 + e)`; generation `g`, emitter `e` asks with
    /// `run.fold_in(g + 1).fold_in(e).fold_in(0)`, evaluates with `.fold_in(1)`, tells with
    /// `.fold_in(2)`.
    pub fn new(config: QdConfig) -> Result<Self, EvoError> {
        let c = &config;
        if c.num_dims < 2 {
            return Err(EvoError::invalid("num_dims", c.num_dims, "at least 2"));
        }
        if c.batch_size < 4 {
            return Err(EvoError::invalid("batch_size", c.batch_size, "at least 4"));
        }
        if c.num_emitters == 0 || c.num_emitters > 1024 {
            return Err(EvoError::invalid("num_emitters", c.num_emitters, "1 to 1024"));
        }
        if !(c.sigma.is_finite() && c.sigma > 0.0) {
            return Err(EvoError::invalid("sigma", c.sigma, "finite and > 0"));
        }
        let grid_cells = c.cells.checked_mul(c.cells);
        if c.cells == 0 || grid_cells.is_none_or(|g| g > 1 << 22) {
            return Err(EvoError::invalid(
                "cells",
                c.cells,
                "1 to 2048 per measure (grid) or 4,194,304 (cvt)",
            ));
        }
        let problem = LinearProjection { num_dims: c.num_dims, function: c.function };
        let b = problem.measure_bound();
        let run = Key::new(c.seed);
        let archive = match c.archive {
            ArchiveKind::Grid => {
                Archive::grid(c.num_dims, vec![c.cells, c.cells], vec![-b, -b], vec![b, b], 1e4)?
            }
            ArchiveKind::Cvt => Archive::cvt(
                c.num_dims,
                c.cells,
                vec![-b, -b],
                vec![b, b],
                20 * c.cells,
                20,
                1e4,
                run.fold_in(99),
            )?,
        };
        let x0 = vec![0.0f32; c.num_dims];
        let emitters = (0..c.num_emitters)
            .map(|e| -> Result<Box<dyn Emitter>, EvoError> {
                let lam = c.batch_size;
                Ok(match c.emitter {
                    EmitterKind::CmaMe => Box::new(CmaMe::with_strategy(
                        c.es,
                        &c.params,
                        lam,
                        &x0,
                        c.sigma,
                        run.fold_in(1000 + e as u64),
                    )?),
                    EmitterKind::MapElites => Box::new(MapElites {
                        batch_size: lam,
                        variation: Variation::Gaussian { sigma: c.sigma as f32 },
                        x0: x0.clone(),
                    }),
                    EmitterKind::IsoLine => Box::new(MapElites {
                        batch_size: lam,
                        variation: Variation::IsoLine { iso_sigma: 0.01, line_sigma: 0.2 },
                        x0: x0.clone(),
                    }),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(QdRun { config, problem, archive, emitters })
    }

    /// The validated config, the empty archive, the emitters and the problem, as the run
    /// would start them (for callers that drive the ask/tell loop themselves).
    pub fn into_parts(self) -> (QdConfig, Archive, Vec<Box<dyn Emitter>>, LinearProjection) {
        (self.config, self.archive, self.emitters, self.problem)
    }

    /// The config.
    pub fn config(&self) -> &QdConfig {
        &self.config
    }

    /// The measure bound of the problem (the archive covers `[-b, b]²`).
    pub fn measure_bound(&self) -> f32 {
        self.problem.measure_bound()
    }

    /// Runs the generations, calling `observe` after each (return `false` to stop), and
    /// returns the archive.
    pub fn run(mut self, mut observe: impl FnMut(&QdGeneration) -> bool) -> Archive {
        let c = &self.config;
        let (lam, n) = (c.batch_size, c.num_dims);
        let (mut pop, mut fit, mut meas) = (vec![0.0; lam * n], vec![0.0; lam], vec![0.0; lam * 2]);
        let run = Key::new(c.seed);
        let (mut evals, mut nonfinite) = (0u64, 0u64);
        for g in 0..c.generations {
            for (e, em) in self.emitters.iter_mut().enumerate() {
                let k = run.fold_in(g + 1).fold_in(e as u64);
                em.ask(k.fold_in(0), &self.archive, &mut pop);
                self.problem.evaluate(k.fold_in(1), &pop, &mut fit, &mut meas);
                nonfinite += fit
                    .iter()
                    .zip(meas.chunks_exact(2))
                    .filter(|(f, m)| !f.is_finite() || !m.iter().all(|v| v.is_finite()))
                    .count() as u64;
                em.tell(k.fold_in(2), &mut self.archive, &pop, &fit, &meas);
                evals += lam as u64;
            }
            let report = QdGeneration {
                generation: g + 1,
                evals,
                stats: self.archive.stats(),
                restarts: self.emitters.iter().map(|e| e.restarts()).sum(),
                nonfinite,
            };
            if !observe(&report) {
                break;
            }
        }
        self.archive
    }
}

/// The `qd` run kind.
pub struct Qd;

impl Run for Qd {
    const NAME: &'static str = "qd";
    const COMMAND: &'static str = "evo qd";
    const ABOUT: &'static str = "Quality diversity on the linear-projection benchmark.";
    const METRICS: &'static [&'static str] = &["qd_score", "coverage", "best"];
    const CURVE: &'static str = "qd_score";
    type Config = QdConfig;

    fn defaults(_: Option<&QdConfig>) -> QdConfig {
        QdConfig::default()
    }

    fn outputs(_: &QdConfig) -> Outputs {
        Outputs::new(
            &["best", "coverage", "num_elites", "qd_score", "wall_seconds"],
            &["best", "coverage", "evals", "nonfinite", "num_elites", "qd_score", "restarts"],
        )
    }

    fn validate(c: &QdConfig) -> Result<(), RunError> {
        QdRun::new(c.clone())?;
        Ok(())
    }

    /// The archive (and a CVT's construction), the emitters (a CMA-ES state each for CMA-ME,
    /// one more while one restarts), the batch, per-thread scratch, the heat map and the
    /// curve.
    fn budget(c: &QdConfig, threads: usize) -> Budget {
        use kestrel_evo::memory::archive_bytes;
        let (n, lam, e) = (c.num_dims as u128, c.batch_size as u128, c.num_emitters as u128);
        let cells = match c.archive {
            ArchiveKind::Grid => c.cells.saturating_mul(c.cells),
            ArchiveKind::Cvt => c.cells,
        };
        let mut b = Budget::new();
        runs::fixed(&mut b);
        let sizes = format!("cells = {}, num_dims = {}", c.cells, c.num_dims);
        b.add("archive", sizes.clone(), archive_bytes(cells, c.num_dims), 1);
        if c.archive == ArchiveKind::Cvt {
            b.add("CVT construction", format!("cells = {}", c.cells), c.cells as u128, 360);
        }
        let ems = format!(
            "num_emitters = {}, batch_size = {}, num_dims = {}",
            c.num_emitters, c.batch_size, c.num_dims
        );
        match c.emitter {
            EmitterKind::CmaMe => {
                let one = c.es.state_bytes(c.num_dims, c.batch_size);
                runs::packing(&mut b, c.es, c.num_dims, c.batch_size, threads);
                b.add(
                    "CMA-ME emitters (one restarting)",
                    ems.clone(),
                    e.saturating_add(1),
                    one.saturating_add(21 * lam),
                );
            }
            EmitterKind::MapElites | EmitterKind::IsoLine => {
                b.add("emitters", ems.clone(), e.saturating_mul(n), 4);
            }
        }
        b.add("batch", ems, lam.saturating_mul(n.saturating_add(3)), 4);
        b.add(
            "scratch per thread",
            format!("num_dims = {}, threads = {threads}", c.num_dims),
            n.saturating_mul(threads as u128),
            8,
        );
        let res = match c.archive {
            ArchiveKind::Grid => c.cells.clamp(1, 400),
            ArchiveKind::Cvt => 200,
        };
        runs::heat_map(&mut b, format!("cells = {}", c.cells), res as u128);
        runs::curve(&mut b, format!("generations = {}", c.generations), c.generations as u128);
        b
    }

    fn run(c: QdConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

/// The archive as a heat map over its two measures, `lo..hi` on each (grey: empty cell);
/// `labels` name the axes. Shared with the `mppi-qd` run.
pub(crate) fn archive_map(
    archive: &Archive,
    lo: [f32; 2],
    hi: [f32; 2],
    labels: [&str; 2],
    title: &str,
) -> Heatmaps {
    archive_heatmap(archive, lo, hi, labels, title, false)
}

/// [`archive_heatmap`] as a picture, also written as PNG to `path` (the exact path) when
/// given.
pub fn heatmap_picture(
    map: &Heatmaps,
    path: Option<&Path>,
) -> Result<crate::render::Frame, RunError> {
    if let Some(p) = path {
        crate::base::write_atomic(p, &map.png()?)?;
    }
    let (w, h) = map.pixels();
    Ok(crate::render::Frame { width: w as usize, height: h as usize, rgb: map.rgb()? })
}

/// `archive_map` for any archive with two measures; with `objective` the cells show the
/// negated fitness, labelled as an objective to maximise (what pyribs users read; the Python
/// package's `kestrel.ribs.visualize`).
pub fn archive_heatmap(
    archive: &Archive,
    lo: [f32; 2],
    hi: [f32; 2],
    labels: [&str; 2],
    title: &str,
    objective: bool,
) -> Heatmaps {
    // A grid is sampled once per cell along each measure (its own bins, which need not be
    // square), at most 400 a side (what the run budgets for the drawing); a CVT archive on a
    // 200 × 200 lattice.
    let (nx, ny) = match archive.tessellation() {
        Tessellation::Grid { cells, .. } if cells.len() == 2 => {
            (cells[0].clamp(1, 400), cells[1].clamp(1, 400))
        }
        _ => (200, 200),
    };
    let mut values = vec![f64::NAN; nx * ny];
    for py in 0..ny {
        for px in 0..nx {
            let m = [
                lo[0] + (hi[0] - lo[0]) * (px as f32 + 0.5) / nx as f32,
                lo[1] + (hi[1] - lo[1]) * (py as f32 + 0.5) / ny as f32,
            ];
            let cell = archive.index_of(&m);
            if archive.occupied[cell] {
                let f = archive.fitness[cell] as f64;
                values[py * nx + px] = if objective { -f } else { f };
            }
        }
    }
    let panel = Panel::new("elites", nx, ny, values)
        .x_label(labels[0])
        .y_label(labels[1])
        .extent((lo[0] as f64, hi[0] as f64), (lo[1] as f64, hi[1] as f64))
        .row0_at_bottom(true);
    let bar = if objective { "objective (higher is better)" } else { "fitness (lower is better)" };
    Heatmaps::new(title).panel(panel).colour_bar_label(bar)
}

/// The config spelling of an enum value.
fn spelling(v: &impl serde::Serialize) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// Validates `config`, then runs it into a new folder: `config.toml`, `record.json`,
/// `metrics.jsonl`, `archive.png/svg` (heat map with colour bar), `qd_score.png/svg`,
/// `summary.md/json`.
pub fn run(config: QdConfig, mut launch: Launch<'_>) -> Result<Outcome, RunError> {
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
            let go = progress.tick(g.generation, &format!("coverage {:.3} qd {:.4e} non-finite {}", s.coverage, s.qd_score, g.nonfinite));
            io.is_ok() && go
        });
        io?;
        metrics.finish()?;
        progress.stopped()?;
        let secs = t0.elapsed().as_secs_f64();
        let s = archive.stats();
        let title = format!("{name} archive, linear-projection {}", c.function.name());
        archive_map(&archive, [-bound; 2], [bound; 2], ["measure 1", "measure 2"], &title)
            .save(&dir.join("archive"))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_qd_run_fills_its_archive() {
        let cfg = QdConfig { generations: 20, num_dims: 6, cells: 10, ..QdConfig::default() };
        let mut last = None;
        let a = QdRun::new(cfg).unwrap().run(|g| {
            last = Some(*g);
            true
        });
        let g = last.unwrap();
        assert_eq!(g.generation, 20);
        assert_eq!(g.evals, 20 * 3 * 36);
        assert!(a.stats().coverage > 0.05);
        assert!(QdRun::new(QdConfig { cells: 100_000, ..QdConfig::default() }).is_err());
    }
}
