//! Writes one of each figure (and a few scale variants) into a folder:
//! `cargo run -p kestrel-plot --example plots [-- OUT_DIR]` (default: a temp folder).

use std::path::PathBuf;

use kestrel_plot::{
    Anchor, ColourMap, Heatmaps, LinePlot, Panel, PlotError, Scale, Series, Sketch,
};

fn main() -> Result<(), PlotError> {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("kestrel-plot-example"));
    std::fs::create_dir_all(&dir).map_err(|source| PlotError::Io { path: dir.clone(), source })?;
    let mut written = Vec::new();

    // A convergence curve over decades (Auto picks log) with two optimisers and sd bands.
    let rows = |rate: f64, noise: f64| -> Vec<(f64, f64, f64)> {
        (0..=120)
            .map(|i| {
                let x = i as f64 * 250.0;
                let m = 1e3 * (-rate * i as f64).exp() + 1e-4;
                (x, m, m * noise * (1.0 + (i as f64 * 0.37).sin().abs()))
            })
            .collect()
    };
    let conv = LinePlot::new("Sphere, 30 dimensions: best fitness so far")
        .x_label("function evaluations")
        .y_label("best f(x) (lower is better)")
        .series(Series::mean_sd("CMA-ES (mean ± sd, 5 seeds)", &rows(0.12, 0.4)))
        .series(Series::mean_sd("OpenES", &rows(0.05, 0.3)));
    written.extend(conv.save(&dir.join("convergence"))?);

    // Signed returns spanning decades (Auto picks symlog).
    let ret: Vec<(f64, f64)> = (0..300)
        .map(|i| (i as f64, -2000.0 * (-(i as f64) / 40.0).exp() + 0.3 * i as f64))
        .collect();
    let symlog = LinePlot::new("Pendulum swing-up: running cost")
        .x_label("control step")
        .y_label("reward per step")
        .line("MPPI", ret);
    written.extend(symlog.save(&dir.join("symlog"))?);

    // A linear learning curve with a faint raw series under a smoothed one.
    let raw: Vec<(f64, f64)> = (0..400)
        .map(|e| {
            (
                e as f64,
                8.0 * (1.0 - (-(e as f64) / 120.0).exp())
                    + 2.5 * ((e * 7919 % 97) as f64 / 97.0 - 0.5),
            )
        })
        .collect();
    let smooth: Vec<(f64, f64)> =
        (0..400).map(|e| (e as f64, 8.0 * (1.0 - (-(e as f64) / 120.0).exp()))).collect();
    let curve = LinePlot::new("Treasure hunt: reward per epoch")
        .x_label("epoch")
        .y_label("total reward (treasures)")
        .scale(Scale::Auto)
        .series(Series::new("total reward", raw).colour([170, 190, 230]).width(1.0))
        .series(Series::new("mean of last 50", smooth).colour([213, 94, 0]));
    written.extend(curve.save(&dir.join("learning_curve"))?);

    // ALLO-style eigenvectors: true (top) and learned (bottom), walls as NaN.
    let (nx, ny, d) = (11usize, 11usize, 3usize);
    let wall = |r: usize, c: usize| (c == 5 && r != 2 && r != 8) || (r == 5 && c < 5 && c != 2);
    let mut heat =
        Heatmaps::new("GridRoom-4: Laplacian eigenvectors, true (top) and learned (bottom)")
            .columns(d)
            .colour_map(ColourMap::Diverging)
            .colour_bar_label("entry");
    for pass in 0..2 {
        for k in 1..=d {
            let v: Vec<f64> = (0..nx * ny)
                .map(|i| {
                    let (r, c) = (i / nx, i % nx);
                    if wall(r, c) {
                        return f64::NAN;
                    }
                    let base = ((c as f64 + 0.5) * k as f64 * 0.29).cos()
                        * ((r as f64 + 0.5) * (k - 1) as f64 * 0.29).cos();
                    base * if pass == 0 { 0.1 } else { 0.1 + 0.004 * ((i * 31 % 7) as f64 - 3.0) }
                })
                .collect();
            let name = if pass == 0 { format!("true e{k}") } else { format!("learned e{k}") };
            heat.push(Panel::new(name, nx, ny, v).x_label("column").y_label("row"));
        }
    }
    written.extend(heat.save(&dir.join("eigenvectors"))?);

    // A QD archive: one panel over descriptor space, viridis, empty cells grey.
    let n = 32;
    let arch: Vec<f64> = (0..n * n)
        .map(|i| {
            let (r, c) =
                ((i / n) as f64 / n as f64 * 2.0 - 1.0, (i % n) as f64 / n as f64 * 2.0 - 1.0);
            if (i * 2654435761usize).is_multiple_of(5) {
                f64::NAN
            } else {
                -(r * r + c * c) * 40.0 + 5.0 * (3.0 * c).sin()
            }
        })
        .collect();
    let qd = Heatmaps::new("MAP-Elites archive, Rastrigin")
        .colour_map(ColourMap::Viridis)
        .colour_bar_label("fitness (higher is better)")
        .panel_size(420)
        .panel(
            Panel::new("", n, n, arch)
                .extent((-5.12, 5.12), (-5.12, 5.12))
                .row0_at_bottom(true)
                .x_label("descriptor 1")
                .y_label("descriptor 2"),
        );
    written.extend(qd.save(&dir.join("archive"))?);

    // A sketch: a pendulum animation strip.
    let (fw, fh, frames) = (150.0, 160.0, 6);
    let mut s = Sketch::new((fw as u32) * frames, fh as u32 + 10);
    for f in 0..frames {
        let x0 = f as f64 * fw;
        let th = std::f64::consts::PI * (1.0 - f as f64 / (frames - 1) as f64);
        let (cx, cy) = (x0 + fw / 2.0, 80.0);
        let (ex, ey) = (cx + 55.0 * th.sin(), cy + 55.0 * th.cos());
        if f > 0 {
            s.line(&[(x0, 0.0), (x0, fh + 10.0)], [200, 200, 200], 1.0);
        }
        s.line(&[(cx, cy), (ex, ey)], [0, 114, 178], 3.0);
        s.circle((ex, ey), 9.0, [213, 94, 0]);
        s.circle((cx, cy), 4.0, [0, 0, 0]);
        s.text(
            (x0 + fw / 2.0, fh - 8.0),
            16.0,
            &format!("t = {:.1} s", f as f64 * 0.4),
            [0, 0, 0],
            Anchor::TopCentre,
        );
    }
    written.extend(s.save(&dir.join("frames"))?);

    for p in written {
        println!("{}", p.display());
    }
    Ok(())
}
