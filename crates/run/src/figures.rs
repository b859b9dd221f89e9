//! Figures more than one run draws: the checkpoints' drawing thread ([`Drawer`]) and the
//! Laplacian runs' learning curves ([`curve_plots`]) and eigenvector heat maps
//! ([`eigen_heatmaps`]), which `runs/allo.rs` and `runs/allo_asymexp.rs` both draw.

use crate::base::RunError;
use kestrel_agents::AgentError;
use kestrel_core::FromInvalid;
use kestrel_plot::{ColourMap, Heatmaps, LinePlot, Panel, Series};
use serde_json::Value;
use std::path::Path;

/// The drawings of a run's checkpoints, off the training thread and one at a time: they
/// write the same curve files, so a checkpoint's drawing starts once the previous one is done
/// (the training thread waits only if it is not).
pub(crate) struct Drawer(Option<std::thread::JoinHandle<Result<(), RunError>>>);

impl Drawer {
    pub(crate) fn new() -> Self {
        Drawer(None)
    }

    /// Waits for the previous drawing, then starts `draw`.
    pub(crate) fn spawn(
        &mut self,
        draw: impl FnOnce() -> Result<(), RunError> + Send + 'static,
    ) -> Result<(), AgentError> {
        self.wait().map_err(|e| AgentError::invalid("plots", e, "a writable run folder"))?;
        self.0 = Some(std::thread::spawn(draw));
        Ok(())
    }

    /// Waits for the drawing in flight, if any.
    pub(crate) fn wait(&mut self) -> Result<(), RunError> {
        match self.0.take() {
            Some(h) => {
                h.join().map_err(|_| RunError::Failed("a drawing thread panicked".into()))?
            }
            None => Ok(()),
        }
    }
}

/// The run's curves, drawn from its logged lines (`global_step` plus fields):
/// `learning_curves` (the `terms`), `dual_evolution` (`estimate(dual_i)` for each logged
/// `dual_i` against `truth[i]`, up to 11 components) and `cosine` (`cosine_similarity`).
/// Both ALLO runs draw theirs here.
pub(crate) fn curve_plots(
    folder: &Path,
    history: &[Value],
    terms: &[&str],
    estimate: impl Fn(f64) -> f64,
    truth: &[f64],
    cosine_title: &str,
) -> Result<(), RunError> {
    let series = |key: &str| -> Vec<(f64, f64)> {
        history
            .iter()
            .filter_map(|h| Some((h["global_step"].as_f64()?, h.get(key)?.as_f64()?)))
            .collect()
    };
    let mut lc =
        LinePlot::new("ALLO: the loss and its terms").x_label("gradient step").y_label("value");
    for k in terms {
        lc.push(Series::new(*k, series(k)));
    }
    lc.save(&folder.join("learning_curves"))?;
    let mut de =
        LinePlot::new("eigenvalue estimates from the duals (lines) and the truth's (flat)")
            .x_label("gradient step")
            .y_label("eigenvalue");
    let last = history.last().and_then(|h| h["global_step"].as_f64()).unwrap_or(1.0);
    for (i, &e) in truth.iter().enumerate().take(11) {
        let pts: Vec<(f64, f64)> =
            series(&format!("dual_{i}")).into_iter().map(|(s, b)| (s, estimate(b))).collect();
        de.push(Series::new(format!("λ̂{i}"), pts));
        de.push(Series::new(format!("λ{i}"), vec![(0.0, e), (last, e)]).width(0.8));
    }
    de.save(&folder.join("dual_evolution"))?;
    LinePlot::new(cosine_title)
        .x_label("gradient step")
        .y_label("average cosine similarity")
        .series(Series::new("cosine", series("cosine_similarity")))
        .save(&folder.join("cosine"))?;
    Ok(())
}

/// True (top row) and learned (bottom row) eigenvectors as heat maps over a `width × height`
/// map, one column per component (the first `components`); state `s` is drawn at `cell(s)` =
/// (column, row), its true value for component `i` is `truth(i, s)` and its learned one
/// `rep[s * rep_width + i]`. Learned columns are sign-aligned to the truth and each scaled to
/// its largest magnitude; walls are empty cells. Both ALLO runs draw theirs here.
pub(crate) fn eigen_heatmaps(
    (width, height): (usize, usize),
    n: usize,
    components: usize,
    cell: impl Fn(usize) -> (usize, usize),
    truth: impl Fn(usize, usize) -> f64,
    rep: &[f64],
    rep_width: usize,
) -> Heatmaps {
    let m = components;
    let mut figure = Heatmaps::new("Laplacian eigenvectors: true (top), learned (bottom)")
        .columns(m)
        .colour_map(ColourMap::Diverging)
        .shared_scale(true)
        .panel_size((900 / m.max(1)).clamp(60, 160) as u32)
        .colour_bar_label("component value / max |value|");
    let grid = |vals: &[f64]| {
        let mx = vals.iter().fold(1e-12f64, |a, v| a.max(v.abs()));
        let mut g = vec![f64::NAN; width * height];
        for (s, v) in vals.iter().enumerate() {
            let (x, y) = cell(s);
            g[y * width + x] = v / mx;
        }
        g
    };
    let mut learned = Vec::with_capacity(m);
    for i in 0..m {
        let t: Vec<f64> = (0..n).map(|s| truth(i, s)).collect();
        let mut l: Vec<f64> = (0..n).map(|s| rep[s * rep_width + i]).collect();
        if l.iter().zip(&t).map(|(a, b)| a * b).sum::<f64>() < 0.0 {
            l.iter_mut().for_each(|v| *v = -*v);
        }
        figure.push(Panel::new(format!("true {}", i + 1), width, height, grid(&t)));
        learned.push(l);
    }
    for (i, l) in learned.iter().enumerate() {
        figure.push(Panel::new(format!("learned {}", i + 1), width, height, grid(l)));
    }
    figure
}
