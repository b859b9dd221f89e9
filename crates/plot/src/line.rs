//! Line plots: named `(x, y)` series, optional shaded bands, legend, linear/log/symlog y.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use crate::axis::{Axis, Scale, Transform};
use crate::base::{PALETTE, Rgb};
use crate::draw::{
    self, AxesText, BLACK, DrawResult, Figure, Frame, LABEL_PX, TICK_PX, TITLE_PX, px, rgb, text,
    text_size,
};

/// One series of a [`LinePlot`]: a legend name, `(x, y)` points joined by a line, and an
/// optional shaded band.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    band: Vec<(f64, f64, f64)>,
    colour: Option<Rgb>,
    width: f64,
}

impl Series {
    /// A series named `name` (shown in the legend; empty for none) through `points`. Points
    /// with a non-finite coordinate are skipped and break the line there.
    pub fn new(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series { name: name.into(), points, band: Vec::new(), colour: None, width: 2.0 }
    }

    /// A mean curve with a ± one standard deviation band, from `(x, mean, sd)` rows.
    pub fn mean_sd(name: impl Into<String>, rows: &[(f64, f64, f64)]) -> Self {
        let points = rows.iter().map(|&(x, m, _)| (x, m)).collect();
        let band = rows.iter().map(|&(x, m, s)| (x, m - s.abs(), m + s.abs())).collect();
        Series::new(name, points).band(band)
    }

    /// A shaded band drawn under the line, from `(x, lower, upper)` rows in x order (for
    /// mean ± sd, min–max, quantiles). Rows with a non-finite value break the band.
    pub fn band(mut self, band: Vec<(f64, f64, f64)>) -> Self {
        self.band = band;
        self
    }

    /// Draws the series in `colour` instead of the next palette colour.
    pub fn colour(mut self, colour: Rgb) -> Self {
        self.colour = Some(colour);
        self
    }

    /// Line width in pixels (default 2; clamped to 0.5–20).
    pub fn width(mut self, px: f64) -> Self {
        self.width = if px.is_finite() { px.clamp(0.5, 20.0) } else { 2.0 };
        self
    }
}

/// A line plot: title, labelled axes, one or more [`Series`], a legend, and a y scale chosen
/// from the data unless set.
///
/// ```no_run
/// use kestrel_plot::{LinePlot, Series};
/// let curve: Vec<(f64, f64)> = (0..100).map(|i| (i as f64, (-0.1 * i as f64).exp())).collect();
/// LinePlot::new("CMA-ES on sphere, 10 dimensions")
///     .x_label("evaluations")
///     .y_label("best f(x)")
///     .series(Series::new("best so far", curve))
///     .save(std::path::Path::new("runs/x/convergence"))?;
/// # Ok::<(), kestrel_plot::PlotError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct LinePlot {
    title: String,
    x_label: String,
    y_label: String,
    series: Vec<Series>,
    scale: Scale,
    size: (u32, u32),
}

impl LinePlot {
    /// An empty plot titled `title`, 900 × 560 pixels, y scale [`Scale::Auto`].
    pub fn new(title: impl Into<String>) -> Self {
        LinePlot {
            title: title.into(),
            x_label: String::new(),
            y_label: String::new(),
            series: Vec::new(),
            scale: Scale::Auto,
            size: (900, 560),
        }
    }

    /// The x-axis label, units included as the caller writes them (`"environment steps"`).
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    /// The y-axis label, units included (`"episode return"`, `"wall time (ms)"`).
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    /// The y scale (default [`Scale::Auto`]).
    pub fn scale(mut self, scale: Scale) -> Self {
        self.scale = scale;
        self
    }

    /// Image size in pixels (clamped to 240 × 180 … 8000 × 8000).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width.clamp(240, 8000), height.clamp(180, 8000));
        self
    }

    /// Adds a series.
    pub fn series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    /// Adds a plain series named `name` through `points`.
    pub fn line(self, name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        self.series(Series::new(name, points))
    }

    /// Adds a series (for building in a loop).
    pub fn push(&mut self, series: Series) {
        self.series.push(series);
    }

    /// The scale the y axis will use: [`Scale::Auto`] resolved against the data.
    pub fn resolved_scale(&self) -> Scale {
        self.scale.resolve(&self.y_values())
    }

    fn y_values(&self) -> Vec<f64> {
        let mut v = Vec::new();
        for s in &self.series {
            v.extend(s.points.iter().filter(|p| p.0.is_finite()).map(|p| p.1));
            v.extend(s.band.iter().filter(|b| b.0.is_finite()).flat_map(|b| [b.1, b.2]));
        }
        v
    }

    fn colour_of(&self, i: usize) -> Rgb {
        self.series[i].colour.unwrap_or(PALETTE[i % PALETTE.len()])
    }

    /// Legend entries: (series index, name).
    fn legend(&self) -> Vec<(usize, String)> {
        let many = self.series.len() > 1;
        self.series
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match (s.name.is_empty(), many) {
                (false, _) => Some((i, s.name.clone())),
                (true, true) => Some((i, format!("series {}", i + 1))),
                (true, false) => None,
            })
            .collect()
    }
}

/// Splits points into runs of consecutive drawable ones.
fn runs<T: Copy>(items: &[T], ok: impl Fn(T) -> Option<(f64, f64)>) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for &it in items {
        match ok(it) {
            Some(p) => cur.push(p),
            None if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            None => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Figure for LinePlot {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (w, h) = (self.size.0 as i32, self.size.1 as i32);
        let tf = Transform::for_scale(self.scale, &self.y_values());
        let fin = |a: f64, b: f64| a.is_finite() && b.is_finite();
        // Data ranges in axis space.
        let mut xr: Option<(f64, f64)> = None;
        let mut yr: Option<(f64, f64)> = None;
        let grow = |r: &mut Option<(f64, f64)>, v: f64| {
            *r = Some(r.map_or((v, v), |(a, b)| (a.min(v), b.max(v))));
        };
        for s in &self.series {
            for &(x, y) in &s.points {
                if let (true, Some(t)) = (x.is_finite(), tf.apply(y)) {
                    grow(&mut xr, x);
                    grow(&mut yr, t);
                }
            }
            for &(x, lo, hi) in &s.band {
                if let (true, Some(a), Some(b)) = (x.is_finite(), tf.apply(lo), tf.apply(hi)) {
                    grow(&mut xr, x);
                    grow(&mut yr, a);
                    grow(&mut yr, b);
                }
            }
        }
        let empty = xr.is_none();
        // Layout: ticks first (their labels set the margins).
        let title_h =
            if self.title.is_empty() { 0 } else { text_size(&self.title, TITLE_PX).1 as i32 + 14 };
        let label_h = text_size("Ag", LABEL_PX).1 as i32;
        let tick_h = text_size("0", TICK_PX).1 as i32;
        let y_target = ((h - title_h - 90) / 70).clamp(3, 10) as usize;
        let ya = Axis::new(tf, yr, y_target, 0.05);
        let left = 14
            + if self.y_label.is_empty() { 0 } else { label_h + 10 }
            + draw::y_tick_width(&ya)
            + 9;
        let x_target = ((w - left - 30) / 120).clamp(2, 10) as usize;
        let xa = Axis::new(Transform::Linear, xr, x_target, 0.0);
        let last_x = xa.major.last().map_or(0, |(_, s)| text_size(s, TICK_PX).0 as i32 / 2);
        let right = 24.max(last_x + 6);
        let bottom = 9 + tick_h + if self.x_label.is_empty() { 8 } else { 8 + label_h + 12 };
        let f = Frame {
            x0: left,
            y0: title_h.max(12),
            x1: (w - right).max(left + 10),
            y1: (h - bottom).max(title_h + 10),
        };

        draw::draw_axes(
            root,
            f,
            &xa,
            &ya,
            &AxesText { x_label: &self.x_label, y_label: &self.y_label, grid: true },
        )?;
        if !self.title.is_empty() {
            text(
                root,
                &self.title,
                ((f.x0 + f.x1) / 2, 8),
                TITLE_PX,
                HPos::Center,
                VPos::Top,
                BLACK,
                false,
            )?;
        }
        let to_px = |x: f64, t: f64| (f.x(&xa, x), f.y(&ya, t));
        // Bands first, then lines on top.
        for (i, s) in self.series.iter().enumerate() {
            let c = rgb(self.colour_of(i));
            let band_runs = band_runs(&s.band, tf);
            for run in band_runs {
                if run.len() == 1 {
                    let (x, a, b) = run[0];
                    let (p, q) = (to_px(x, a), to_px(x, b));
                    root.draw(&PathElement::new(
                        vec![(px(p.0), px(p.1)), (px(q.0), px(q.1))],
                        c.mix(0.35).stroke_width(3),
                    ))?;
                    continue;
                }
                let mut poly: Vec<(i32, i32)> =
                    run.iter().map(|&(x, _, b)| to_px(x, b)).map(|(a, b)| (px(a), px(b))).collect();
                poly.extend(
                    run.iter().rev().map(|&(x, a, _)| to_px(x, a)).map(|(a, b)| (px(a), px(b))),
                );
                root.draw(&Polygon::new(poly, c.mix(0.2).filled()))?;
            }
        }
        for (i, s) in self.series.iter().enumerate() {
            let c = rgb(self.colour_of(i));
            let style = c.stroke_width(s.width.round().max(1.0) as u32);
            for run in runs(&s.points, |(x, y)| Some((x, tf.apply(y)?)).filter(|p| fin(p.0, p.1))) {
                let pts: Vec<(i32, i32)> =
                    run.iter().map(|&(x, t)| to_px(x, t)).map(|(a, b)| (px(a), px(b))).collect();
                if pts.len() == 1 {
                    root.draw(&Circle::new(
                        pts[0],
                        (s.width * 1.5).round().max(2.0) as i32,
                        c.filled(),
                    ))?;
                } else {
                    root.draw(&PathElement::new(pts, style))?;
                }
            }
        }
        if empty {
            text(
                root,
                "no finite data",
                ((f.x0 + f.x1) / 2, (f.y0 + f.y1) / 2),
                LABEL_PX,
                HPos::Center,
                VPos::Center,
                [110, 110, 110],
                false,
            )?;
        }
        self.draw_legend(root, f, &|x, y| {
            let t = tf.apply(y)?;
            fin(x, t).then(|| to_px(x, t))
        })
    }
}

/// Runs of consecutive drawable band rows, in axis space: `(x, lower, upper)`.
fn band_runs(band: &[(f64, f64, f64)], tf: Transform) -> Vec<Vec<(f64, f64, f64)>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for &(x, lo, hi) in band {
        match (x.is_finite(), tf.apply(lo), tf.apply(hi)) {
            (true, Some(a), Some(b)) => cur.push((x, a.min(b), a.max(b))),
            _ if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            _ => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl LinePlot {
    /// The legend in the corner of the plot area that covers the fewest data points.
    fn draw_legend<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        f: Frame,
        to_px: &dyn Fn(f64, f64) -> Option<(f64, f64)>,
    ) -> DrawResult<DB> {
        let entries = self.legend();
        if entries.is_empty() {
            return Ok(());
        }
        let row_h = (text_size("Ag", TICK_PX).1 as i32 + 8).max(20);
        let tw = entries.iter().map(|(_, s)| text_size(s, TICK_PX).0 as i32).max().unwrap_or(0);
        let (bw, bh) = (12 + 28 + 8 + tw + 12, 8 + row_h * entries.len() as i32 + 4);
        let inset = 10;
        let corners = [
            (f.x1 - inset - bw, f.y0 + inset),
            (f.x0 + inset, f.y0 + inset),
            (f.x1 - inset - bw, f.y1 - inset - bh),
            (f.x0 + inset, f.y1 - inset - bh),
        ];
        let mut counts = [0usize; 4];
        for s in &self.series {
            let band_pts = s.band.iter().flat_map(|&(x, a, b)| [(x, a), (x, b)]);
            for (x, y) in s.points.iter().copied().chain(band_pts) {
                if let Some((px_, py_)) = to_px(x, y) {
                    for (k, &(cx, cy)) in corners.iter().enumerate() {
                        let (cx, cy) = (cx as f64, cy as f64);
                        if px_ >= cx - 4.0
                            && px_ <= cx + bw as f64 + 4.0
                            && py_ >= cy - 4.0
                            && py_ <= cy + bh as f64 + 4.0
                        {
                            counts[k] += 1;
                        }
                    }
                }
            }
        }
        let best = (0..4).min_by_key(|&k| (counts[k], k)).unwrap_or(0);
        let (x0, y0) = corners[best];
        root.draw(&Rectangle::new([(x0, y0), (x0 + bw, y0 + bh)], WHITE.mix(0.88).filled()))?;
        root.draw(&Rectangle::new(
            [(x0, y0), (x0 + bw, y0 + bh)],
            rgb([170, 170, 170]).stroke_width(1),
        ))?;
        for (k, (i, name)) in entries.iter().enumerate() {
            let c = rgb(self.colour_of(*i));
            let cy = y0 + 6 + row_h * k as i32 + row_h / 2;
            if !self.series[*i].band.is_empty() {
                root.draw(&Rectangle::new(
                    [(x0 + 12, cy - 7), (x0 + 40, cy + 7)],
                    c.mix(0.2).filled(),
                ))?;
            }
            let wdt = self.series[*i].width.round().max(1.0) as u32;
            if self.series[*i].points.iter().any(|p| p.0.is_finite() && p.1.is_finite())
                || self.series[*i].band.is_empty()
            {
                root.draw(&PathElement::new(
                    vec![(x0 + 12, cy), (x0 + 40, cy)],
                    c.stroke_width(wdt.max(2)),
                ))?;
            }
            text(root, name, (x0 + 48, cy), TICK_PX, HPos::Left, VPos::Center, BLACK, false)?;
        }
        Ok(())
    }
}

crate::draw::figure_output!(LinePlot, "plot");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_util::{decode, distinct_colours, has_colour};

    fn curve(f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..200).map(|i| (i as f64 * 50.0, f(i as f64))).collect()
    }

    #[test]
    fn png_has_the_size_and_is_not_blank() {
        let p = LinePlot::new("loss")
            .x_label("step")
            .y_label("loss (nats)")
            .line("train", curve(|i| 1.0 / (1.0 + i)));
        let (w, h, px) = decode(&p.png().unwrap());
        assert_eq!((w, h), (900, 560));
        assert!(distinct_colours(&px) > 20);
        assert!(has_colour(&px, PALETTE[0], 10), "the series colour is drawn");
    }

    #[test]
    fn svg_names_title_labels_and_legend() {
        let p = LinePlot::new("TD error")
            .x_label("environment steps")
            .y_label("error (m/s)")
            .line("agent one", curve(|i| i.sin()))
            .series(Series::mean_sd("agent two", &[(0.0, 1.0, 0.1), (1.0, 2.0, 0.3)]));
        let s = p.svg().unwrap();
        for want in ["TD error", "environment steps", "error (m/s)", "agent one", "agent two"] {
            assert!(s.contains(want), "{want} missing");
        }
        assert!(s.contains("font-family=\"sans-serif\""));
    }

    #[test]
    fn negative_only_data_is_drawn() {
        let p = LinePlot::new("return").line("", curve(|i| -1000.0 * (-i / 20.0).exp() - 0.5));
        assert_eq!(p.resolved_scale(), Scale::Symlog);
        let (_, _, px) = decode(&p.png().unwrap());
        assert!(has_colour(&px, PALETTE[0], 10));
        let p = LinePlot::new("return").line("", curve(|i| -(i + 1.0))).scale(Scale::Log);
        let (_, _, px) = decode(&p.png().unwrap());
        assert!(has_colour(&px, PALETTE[0], 10), "forced log on negative data still draws");
        let p = LinePlot::new("return").line("", curve(|i| -(i + 1.0))).scale(Scale::Linear);
        let (_, _, px) = decode(&p.png().unwrap());
        assert!(has_colour(&px, PALETTE[0], 10));
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let weird = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e308,
            -1e308,
            f64::MAX,
            f64::MIN_POSITIVE,
            1e-320,
        ];
        let mut pts = Vec::new();
        for (i, &a) in weird.iter().enumerate() {
            for &b in &weird {
                pts.push((a, b));
                pts.push((i as f64, b));
            }
        }
        for scale in [Scale::Auto, Scale::Linear, Scale::Log, Scale::Symlog] {
            let plots = [
                LinePlot::new("empty").scale(scale),
                LinePlot::new("").scale(scale).line("", vec![]),
                LinePlot::new("nan").scale(scale).line("a", vec![(f64::NAN, f64::NAN)]),
                LinePlot::new("one").scale(scale).line("a", vec![(3.0, 4.0)]),
                LinePlot::new("const").scale(scale).line("a", vec![(1.0, 0.0), (2.0, 0.0)]),
                LinePlot::new("weird").scale(scale).line("a", pts.clone()).series(
                    Series::new("b", vec![]).band(vec![
                        (0.0, f64::NAN, 1.0),
                        (1.0, 1e308, -1e308),
                        (2.0, 1.0, 2.0),
                    ]),
                ),
                LinePlot::new("tiny").scale(scale).size(0, 0).line("a", curve(|i| i)),
            ];
            for p in plots {
                p.png().unwrap();
                p.svg().unwrap();
            }
        }
        let s = LinePlot::new("empty").svg().unwrap();
        assert!(s.contains("no finite data"));
    }

    #[test]
    fn random_inputs_never_panic() {
        use proptest::prelude::*;
        let value = prop_oneof![
            any::<f64>(),
            -1e6..1e6f64,
            Just(f64::NAN),
            Just(0.0),
            (-300..300i32).prop_map(|e| 10f64.powi(e)),
        ];
        let cfg = ProptestConfig { cases: 24, ..ProptestConfig::default() };
        proptest!(cfg, |(pts in proptest::collection::vec((value.clone(), value.clone()), 0..40),
                        band in proptest::collection::vec((value.clone(), value.clone(), value), 0..10),
                        scale in 0..4usize)| {
            let scale = [Scale::Auto, Scale::Linear, Scale::Log, Scale::Symlog][scale];
            let p = LinePlot::new("random").size(320, 240).scale(scale).series(Series::new("a", pts).band(band));
            p.png().unwrap();
            p.svg().unwrap();
        });
    }

    #[test]
    fn save_writes_both_files() {
        let dir = std::env::temp_dir().join(format!("kestrel-plot-line-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = LinePlot::new("t").line("a", curve(|i| i)).save(&dir.join("curve")).unwrap();
        assert_eq!(paths, vec![dir.join("curve.png"), dir.join("curve.svg")]);
        assert!(paths.iter().all(|p| p.exists()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
