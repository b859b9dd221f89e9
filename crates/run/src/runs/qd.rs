//! `kestrel evo qd` (run kind `qd`, the Python package's `kestrel.evo.qd`): quality diversity
//! on the linear-projection benchmark of the CMA-ME paper (Fontaine et al. 2020), an archive
//! heat map and the QD score per generation. Archives and emitters are `kestrel-evo`'s; the
//! generation loop is [`QdRun::run`].

use crate::launch::{Launch, Outcome, finish, start};
use crate::{COMMIT, Run, RunError, Summary, runs};
use kestrel_core::Budget;
use kestrel_evo::qd::{Archive, Tessellation};
use kestrel_evo::run::{QdConfig, QdRun};
use kestrel_plot::{Heatmaps, LinePlot, Panel, Series};
use serde_json::json;
use std::path::Path;
use std::time::Instant;

/// The `qd` run kind.
pub struct Qd;

impl Run for Qd {
    const NAME: &'static str = "qd";
    const COMMAND: &'static str = "evo qd";
    const METRICS: &'static [&'static str] = &["qd_score", "coverage", "best"];
    const CURVE: &'static str = "qd_score";
    type Config = QdConfig;

    fn defaults(_: Option<&QdConfig>) -> QdConfig {
        QdConfig::default()
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
        use kestrel_evo::run::{ArchiveKind, EmitterKind};
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
                let one = kestrel_evo::StrategyKind::CmaEs.state_bytes(c.num_dims, c.batch_size);
                runs::packing(
                    &mut b,
                    kestrel_evo::StrategyKind::CmaEs,
                    c.num_dims,
                    c.batch_size,
                    threads,
                );
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
        qd(c, launch)
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
    let res = match archive.tessellation() {
        Tessellation::Grid { .. } => archive.num_cells().isqrt().clamp(1, 400),
        _ => 200,
    };
    let mut values = vec![f64::NAN; res * res];
    for py in 0..res {
        for px in 0..res {
            let m = [
                lo[0] + (hi[0] - lo[0]) * (px as f32 + 0.5) / res as f32,
                lo[1] + (hi[1] - lo[1]) * (py as f32 + 0.5) / res as f32,
            ];
            let cell = archive.index_of(&m);
            if archive.occupied[cell] {
                values[py * res + px] = archive.fitness[cell] as f64;
            }
        }
    }
    let panel = Panel::new("elites", res, res, values)
        .x_label(labels[0])
        .y_label(labels[1])
        .extent((lo[0] as f64, hi[0] as f64), (lo[1] as f64, hi[1] as f64))
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
