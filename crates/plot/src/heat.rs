//! Heat maps: a grid of panels, each a row-major `ny × nx` array (NaN = empty cell), with
//! axis labels and colour bars.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use crate::axis::{Axis, Transform, linear_ticks};
use crate::base::Rgb;
use crate::draw::{
    self, BLACK, DrawResult, Figure, Frame, LABEL_PX, TICK_PX, TITLE_PX, px, rgb, text, text_size,
};

/// How values map to colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ColourMap {
    /// Diverging when the data has both signs, viridis otherwise.
    #[default]
    Auto,
    /// Sequential, perceptually uniform and colour-blind safe (matplotlib's viridis), from the
    /// smallest value (dark purple) to the largest (yellow).
    Viridis,
    /// Diverging blue–white–red (ColorBrewer RdBu), symmetric about 0: negative blue, zero
    /// white, positive red. For signed data such as eigenvectors.
    Diverging,
}

const VIRIDIS: [Rgb; 9] = [
    [68, 1, 84],
    [71, 44, 122],
    [59, 82, 139],
    [44, 114, 142],
    [33, 145, 140],
    [40, 174, 128],
    [94, 201, 98],
    [170, 220, 50],
    [253, 231, 37],
];

const RDBU: [Rgb; 11] = [
    [5, 48, 97],
    [33, 102, 172],
    [67, 147, 195],
    [146, 197, 222],
    [209, 229, 240],
    [247, 247, 247],
    [253, 219, 199],
    [244, 165, 130],
    [214, 96, 77],
    [178, 24, 43],
    [103, 0, 31],
];

impl ColourMap {
    /// The colour at `t` in `[0, 1]` (clamped; NaN gives the middle).
    pub fn at(self, t: f64) -> Rgb {
        let stops: &[Rgb] = match self {
            ColourMap::Diverging => &RDBU,
            _ => &VIRIDIS,
        };
        let t = if t.is_nan() { 0.5 } else { t.clamp(0.0, 1.0) };
        let x = t * (stops.len() - 1) as f64;
        let i = (x.floor() as usize).min(stops.len() - 2);
        let f = x - i as f64;
        std::array::from_fn(|k| {
            (stops[i][k] as f64 + (stops[i + 1][k] as f64 - stops[i][k] as f64) * f).round() as u8
        })
    }

    fn resolve(self, values: &mut dyn Iterator<Item = f64>) -> ColourMap {
        match self {
            ColourMap::Auto => {
                let (mut neg, mut pos) = (false, false);
                for v in values.filter(|v| v.is_finite()) {
                    neg |= v < 0.0;
                    pos |= v > 0.0;
                }
                if neg && pos { ColourMap::Diverging } else { ColourMap::Viridis }
            }
            m => m,
        }
    }
}

/// One heat-map panel: a row-major `ny × nx` array of values.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    title: String,
    nx: usize,
    ny: usize,
    values: Vec<f64>,
    x_label: String,
    y_label: String,
    extent: Option<((f64, f64), (f64, f64))>,
    row0_at_bottom: bool,
}

impl Panel {
    /// A panel titled `title` showing `values`, row-major with `ny` rows of `nx` cells (row 0
    /// at the top). NaN marks an empty cell (drawn light grey); ±∞ take the ends of the
    /// colour scale; missing values (a short array) are empty and extra ones are ignored.
    pub fn new(title: impl Into<String>, nx: usize, ny: usize, values: Vec<f64>) -> Self {
        Panel {
            title: title.into(),
            nx,
            ny,
            values,
            x_label: String::new(),
            y_label: String::new(),
            extent: None,
            row0_at_bottom: false,
        }
    }

    /// The x-axis label (units as the caller writes them).
    pub fn x_label(mut self, label: impl Into<String>) -> Self {
        self.x_label = label.into();
        self
    }

    /// The y-axis label.
    pub fn y_label(mut self, label: impl Into<String>) -> Self {
        self.y_label = label.into();
        self
    }

    /// Data coordinates of the panel's edges, `x = (left, right)` and `y = (bottom, top)`,
    /// for the tick labels (a QD archive over `[-b, b]²`). Without it, ticks count cells.
    pub fn extent(mut self, x: (f64, f64), y: (f64, f64)) -> Self {
        self.extent = Some((x, y));
        self
    }

    /// Puts row 0 at the bottom (a y-up plot such as a descriptor space) instead of the top
    /// (an image or a grid world).
    pub fn row0_at_bottom(mut self, yes: bool) -> Self {
        self.row0_at_bottom = yes;
        self
    }

    fn cells(&self) -> usize {
        self.nx.saturating_mul(self.ny).min(self.values.len())
    }

    fn finite(&self) -> impl Iterator<Item = f64> + '_ {
        self.values[..self.cells()].iter().copied().filter(|v| v.is_finite())
    }

    fn axes(&self) -> (Axis, Axis) {
        let count_axis = |n: usize, flip: bool| {
            let major = if n == 0 {
                Vec::new()
            } else {
                linear_ticks(0.0, (n - 1) as f64, 6)
                    .into_iter()
                    .filter(|(v, _)| v.fract() == 0.0)
                    .map(|(v, _)| (v + 0.5, format!("{}", v as i64)))
                    .collect()
            };
            let (lo, hi) = if flip { (n.max(1) as f64, 0.0) } else { (0.0, n.max(1) as f64) };
            Axis { lo, hi, major, minor: Vec::new() }
        };
        let extent_axis = |(a, b): (f64, f64), flip: bool| {
            let ax = Axis::new(Transform::Linear, Some((a.min(b), a.max(b))), 6, 0.0);
            let (lo, hi) = if (a > b) != flip { (ax.hi, ax.lo) } else { (ax.lo, ax.hi) };
            Axis { lo, hi, ..ax }
        };
        match self.extent {
            None => (count_axis(self.nx, false), count_axis(self.ny, !self.row0_at_bottom)),
            Some((x, y)) => (extent_axis(x, false), extent_axis(y, false)),
        }
    }
}

/// A figure of heat-map [`Panel`]s laid out in a grid, each with a colour bar (or one shared
/// bar at the right).
///
/// ```no_run
/// use kestrel_plot::{ColourMap, Heatmaps, Panel};
/// let v: Vec<f64> = (0..64).map(|i| (i as f64 * 0.3).sin()).collect();
/// Heatmaps::new("Laplacian eigenvectors")
///     .columns(2)
///     .colour_map(ColourMap::Diverging)
///     .colour_bar_label("eigenvector entry")
///     .panel(Panel::new("true e1", 8, 8, v.clone()))
///     .panel(Panel::new("learned e1", 8, 8, v))
///     .save(std::path::Path::new("runs/x/eigenvectors"))?;
/// # Ok::<(), kestrel_plot::PlotError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Heatmaps {
    title: String,
    panels: Vec<Panel>,
    columns: Option<usize>,
    shared_scale: bool,
    colour_map: ColourMap,
    colour_bar_label: String,
    panel_px: u32,
    empty: Rgb,
}

impl Heatmaps {
    /// A figure titled `title` (empty for none), no panels yet: colour map
    /// [`ColourMap::Auto`], one colour scale per panel, panels 260 px on the long side.
    pub fn new(title: impl Into<String>) -> Self {
        Heatmaps {
            title: title.into(),
            panels: Vec::new(),
            columns: None,
            shared_scale: false,
            colour_map: ColourMap::Auto,
            colour_bar_label: String::new(),
            panel_px: 260,
            empty: [200, 200, 200],
        }
    }

    /// Adds a panel (panels fill the grid row by row).
    pub fn panel(mut self, panel: Panel) -> Self {
        self.panels.push(panel);
        self
    }

    /// Adds a panel (for building in a loop).
    pub fn push(&mut self, panel: Panel) {
        self.panels.push(panel);
    }

    /// Panels per grid row (default: about the square root of the panel count).
    pub fn columns(mut self, columns: usize) -> Self {
        self.columns = Some(columns.max(1));
        self
    }

    /// One colour scale over all panels with a single colour bar (`true`), or one scale and
    /// bar per panel (`false`, the default).
    pub fn shared_scale(mut self, shared: bool) -> Self {
        self.shared_scale = shared;
        self
    }

    /// The colour map (default [`ColourMap::Auto`]).
    pub fn colour_map(mut self, map: ColourMap) -> Self {
        self.colour_map = map;
        self
    }

    /// The label beside the colour bar(s): what a colour means, with units.
    pub fn colour_bar_label(mut self, label: impl Into<String>) -> Self {
        self.colour_bar_label = label.into();
        self
    }

    /// The long side of each panel's cell area in pixels (clamped to 40–2000; default 260).
    pub fn panel_size(mut self, px: u32) -> Self {
        self.panel_px = px.clamp(40, 2000);
        self
    }

    /// The colour of empty (NaN) cells (default light grey).
    pub fn empty_colour(mut self, colour: Rgb) -> Self {
        self.empty = colour;
        self
    }

    fn grid(&self) -> (usize, usize) {
        let n = self.panels.len().max(1);
        let cols = self.columns.unwrap_or_else(|| (n as f64).sqrt().ceil() as usize).clamp(1, n);
        (cols, n.div_ceil(cols))
    }

    /// The colour map and the colour-bar axis for a set of panels.
    fn scale<'a>(
        &self,
        panels: impl Iterator<Item = &'a Panel> + Clone,
        bar_len: i32,
    ) -> (ColourMap, Axis) {
        let map = self.colour_map.resolve(&mut panels.clone().flat_map(|p| p.finite()));
        let (lo, hi) = panels
            .flat_map(|p| p.finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
        let target = (bar_len / 45).clamp(2, 8) as usize;
        let range = match map {
            _ if lo > hi => None,
            ColourMap::Diverging => {
                let m = lo.abs().max(hi.abs());
                Some((-m, m))
            }
            _ => Some((lo, hi)),
        };
        (map, Axis::new(Transform::Linear, range, target, 0.0))
    }

    fn layout(&self) -> Layout {
        let label_h = text_size("Ag", LABEL_PX).1 as i32;
        let tick_h = text_size("0", TICK_PX).1 as i32;
        let title_h =
            if self.title.is_empty() { 6 } else { text_size(&self.title, TITLE_PX).1 as i32 + 18 };
        let any_title = self.panels.iter().any(|q| !q.title.is_empty());
        let panel_title_h =
            if any_title { text_size("Ag", TICK_PX + 1.0).1 as i32 + 10 } else { 8 };
        let p = self.panel_px as i32;
        let any_y_label = self.panels.iter().any(|q| !q.y_label.is_empty());
        let any_x_label = self.panels.iter().any(|q| !q.x_label.is_empty());
        let ytick = self.panels.iter().map(|q| draw::y_tick_width(&q.axes().1)).max().unwrap_or(0);
        let left = 10 + if any_y_label { label_h + 10 } else { 0 } + ytick + 9;
        let bar_tick_w = if self.shared_scale {
            let (_, a) = self.scale(self.panels.iter(), p);
            draw::y_tick_width(&a)
        } else {
            self.panels
                .iter()
                .map(|q| draw::y_tick_width(&self.scale(std::iter::once(q), p).1))
                .max()
                .unwrap_or(0)
        };
        let bar_label = if self.colour_bar_label.is_empty() { 0 } else { label_h + 8 };
        let bar_w = 14 + 16 + 9 + bar_tick_w + 8 + bar_label;
        let slot_w = left + p + if self.shared_scale { 0 } else { bar_w } + 16;
        let slot_h =
            panel_title_h + p + 9 + tick_h + if any_x_label { 8 + label_h } else { 0 } + 14;
        let (cols, rows) = self.grid();
        let w = slot_w * cols as i32 + if self.shared_scale { bar_w + 10 } else { 0 };
        let h = title_h + slot_h * rows as i32;
        Layout { title_h, panel_title_h, left, bar_w, slot_w, slot_h, w: w.max(120), h: h.max(80) }
    }
}

struct Layout {
    title_h: i32,
    panel_title_h: i32,
    left: i32,
    bar_w: i32,
    slot_w: i32,
    slot_h: i32,
    w: i32,
    h: i32,
}

impl Figure for Heatmaps {
    fn size(&self) -> (u32, u32) {
        let l = self.layout();
        (l.w as u32, l.h as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let l = self.layout();
        let p = self.panel_px as i32;
        if !self.title.is_empty() {
            text(root, &self.title, (l.w / 2, 8), TITLE_PX, HPos::Center, VPos::Top, BLACK, false)?;
        }
        if self.panels.is_empty() {
            return text(
                root,
                "no panels",
                (l.w / 2, l.h / 2),
                LABEL_PX,
                HPos::Center,
                VPos::Center,
                [110; 3],
                false,
            );
        }
        let (cols, rows) = self.grid();
        let shared = self.scale(self.panels.iter(), p);
        for (k, panel) in self.panels.iter().enumerate() {
            let (c, r) = ((k % cols) as i32, (k / cols) as i32);
            let (sx, sy) = (c * l.slot_w, l.title_h + r * l.slot_h);
            let long = panel.nx.max(panel.ny).max(1) as f64;
            let cw = p as f64 / long;
            let (bw, bh) = (
                (panel.nx.max(1) as f64 * cw).round() as i32,
                (panel.ny.max(1) as f64 * cw).round() as i32,
            );
            let x0 = sx + l.left + (p - bw) / 2;
            let y0 = sy + l.panel_title_h + (p - bh) / 2;
            let f = Frame { x0, y0, x1: x0 + bw.max(1), y1: y0 + bh.max(1) };
            let (map, bar) = if self.shared_scale {
                shared.clone()
            } else {
                self.scale(std::iter::once(panel), p)
            };
            // Cells.
            let n = panel.cells();
            if n == 0 {
                text(
                    root,
                    "no data",
                    ((f.x0 + f.x1) / 2, (f.y0 + f.y1) / 2),
                    TICK_PX,
                    HPos::Center,
                    VPos::Center,
                    [110; 3],
                    false,
                )?;
            }
            let (nx, ny) = (panel.nx.max(1), panel.ny.max(1));
            let sxw = (f.x1 - f.x0) as f64 / nx as f64;
            let syh = (f.y1 - f.y0) as f64 / ny as f64;
            if n < nx.saturating_mul(ny) {
                // Cells beyond a short array are empty.
                root.draw(&Rectangle::new([(f.x0, f.y0), (f.x1, f.y1)], rgb(self.empty).filled()))?;
            }
            for (idx, &v) in panel.values[..n].iter().enumerate() {
                let (row, col) = (idx / nx, idx % nx);
                let vr = if panel.row0_at_bottom { ny - 1 - row } else { row };
                let (ax, bx) =
                    (px(f.x0 as f64 + col as f64 * sxw), px(f.x0 as f64 + (col + 1) as f64 * sxw));
                let (ay, by) =
                    (px(f.y0 as f64 + vr as f64 * syh), px(f.y0 as f64 + (vr + 1) as f64 * syh));
                let colour = if v.is_nan() { self.empty } else { map.at(bar.frac(v)) };
                root.draw(&Rectangle::new(
                    [(ax, ay), (bx.max(ax + 1), by.max(ay + 1))],
                    rgb(colour).filled(),
                ))?;
            }
            let (xa, ya) = panel.axes();
            draw::draw_frame_and_ticks(root, f, &xa, &ya)?;
            let title_y = sy + l.panel_title_h - 8;
            text(
                root,
                &panel.title,
                ((f.x0 + f.x1) / 2, title_y.min(f.y0 - 6)),
                TICK_PX + 1.0,
                HPos::Center,
                VPos::Bottom,
                BLACK,
                false,
            )?;
            let tick_h = text_size("0", TICK_PX).1 as i32;
            text(
                root,
                &panel.x_label,
                ((f.x0 + f.x1) / 2, f.y1 + 9 + tick_h + 6),
                LABEL_PX,
                HPos::Center,
                VPos::Top,
                BLACK,
                false,
            )?;
            let lx = f.x0 - 9 - draw::y_tick_width(&ya) - 8;
            text(
                root,
                &panel.y_label,
                (lx, (f.y0 + f.y1) / 2),
                LABEL_PX,
                HPos::Center,
                VPos::Bottom,
                BLACK,
                true,
            )?;
            if !self.shared_scale {
                let bx = sx + l.left + p + 14;
                let bf = Frame { x0: bx, y0: f.y0, x1: bx + 16, y1: f.y1 };
                self.draw_bar(root, bf, map, &bar)?;
            }
        }
        if self.shared_scale {
            let top = l.title_h + l.panel_title_h;
            let bottom = l.title_h + (rows as i32 - 1) * l.slot_h + l.panel_title_h + p;
            let bx = cols as i32 * l.slot_w + 4;
            let bf = Frame { x0: bx, y0: top, x1: bx + 16, y1: bottom.max(top + 10) };
            self.draw_bar(root, bf, shared.0, &shared.1)?;
        }
        let _ = l.bar_w;
        Ok(())
    }
}

impl Heatmaps {
    /// A vertical colour bar in `f` with ticks and labels on its right and the bar label
    /// beyond them.
    fn draw_bar<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        f: Frame,
        map: ColourMap,
        axis: &Axis,
    ) -> DrawResult<DB> {
        let h = (f.y1 - f.y0).max(1);
        for i in 0..h {
            let t = 1.0 - (i as f64 + 0.5) / h as f64;
            root.draw(&Rectangle::new(
                [(f.x0, f.y0 + i), (f.x1, f.y0 + i + 1)],
                rgb(map.at(t)).filled(),
            ))?;
        }
        root.draw(&Rectangle::new([(f.x0, f.y0), (f.x1, f.y1)], rgb(BLACK).stroke_width(1)))?;
        for (t, s) in &axis.major {
            let y = px(f.y(axis, *t));
            if y >= f.y0 - 1 && y <= f.y1 + 1 {
                root.draw(&PathElement::new(vec![(f.x1, y), (f.x1 + 5, y)], rgb(BLACK)))?;
                text(root, s, (f.x1 + 8, y), TICK_PX, HPos::Left, VPos::Center, BLACK, false)?;
            }
        }
        let lx = f.x1 + 8 + draw::y_tick_width(axis) + 8;
        text(
            root,
            &self.colour_bar_label,
            (lx, (f.y0 + f.y1) / 2),
            LABEL_PX,
            HPos::Center,
            VPos::Top,
            BLACK,
            true,
        )
    }
}

crate::draw::figure_output!(Heatmaps, "figure");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_util::{decode, distinct_colours, has_colour};

    fn wave(nx: usize, ny: usize) -> Vec<f64> {
        (0..nx * ny)
            .map(|i| ((i % nx) as f64 * 0.7).sin() * ((i / nx) as f64 * 0.4).cos())
            .collect()
    }

    #[test]
    fn png_is_the_reported_size_and_coloured() {
        let mut v = wave(10, 6);
        v[3] = f64::NAN;
        let h =
            Heatmaps::new("archive").colour_bar_label("fitness").panel(Panel::new("a", 10, 6, v));
        let bytes = h.png().unwrap();
        let (w, hh, px) = decode(&bytes);
        assert_eq!((w, hh), h.size());
        assert!(distinct_colours(&px) > 30);
        assert!(has_colour(&px, [200, 200, 200], 0), "the empty cell is grey");
        assert!(
            has_colour(&px, RDBU[0], 30) || has_colour(&px, RDBU[10], 30),
            "signed data is diverging"
        );
    }

    #[test]
    fn svg_names_titles_labels_and_bar_label() {
        let h = Heatmaps::new("eigenvectors")
            .columns(2)
            .shared_scale(true)
            .colour_bar_label("entry value")
            .panel(Panel::new("true e1", 5, 5, wave(5, 5)).x_label("column").y_label("row"))
            .panel(Panel::new("learned e1", 5, 5, wave(5, 5)));
        let s = h.svg().unwrap();
        for want in ["eigenvectors", "true e1", "learned e1", "column", "row", "entry value"] {
            assert!(s.contains(want), "{want} missing");
        }
    }

    #[test]
    fn colour_maps() {
        assert_eq!(ColourMap::Viridis.at(0.0), VIRIDIS[0]);
        assert_eq!(ColourMap::Viridis.at(1.0), VIRIDIS[8]);
        assert_eq!(ColourMap::Diverging.at(0.5), [247, 247, 247]);
        assert_eq!(ColourMap::Auto.resolve(&mut [1.0, 2.0].into_iter()), ColourMap::Viridis);
        assert_eq!(ColourMap::Auto.resolve(&mut [-1.0, 2.0].into_iter()), ColourMap::Diverging);
        let _ = ColourMap::Viridis.at(f64::NAN);
    }

    #[test]
    fn odd_panels_do_not_panic() {
        let panels = [
            Panel::new("zero", 0, 0, vec![]),
            Panel::new("zero cols", 0, 5, vec![1.0; 5]),
            Panel::new("short", 4, 4, vec![1.0, 2.0]),
            Panel::new("long", 2, 2, vec![1.0; 100]),
            Panel::new("nan", 3, 3, vec![f64::NAN; 9]),
            Panel::new("inf", 2, 2, vec![f64::INFINITY, f64::NEG_INFINITY, 1e308, -1e308]),
            Panel::new("const", 2, 1, vec![7.0, 7.0]),
            Panel::new("one", 1, 1, vec![0.0]),
            Panel::new("huge dims", usize::MAX, 3, vec![1.0, 2.0]),
            Panel::new("extent", 3, 3, wave(3, 3))
                .extent((-1.0, 1.0), (1.0, -1.0))
                .row0_at_bottom(true),
            Panel::new("nan extent", 3, 3, wave(3, 3))
                .extent((f64::NAN, 1.0), (0.0, f64::INFINITY)),
            Panel::new("wide", 300, 2, wave(300, 2)),
        ];
        for shared in [false, true] {
            for map in [ColourMap::Auto, ColourMap::Viridis, ColourMap::Diverging] {
                let mut h =
                    Heatmaps::new("odd").shared_scale(shared).colour_map(map).colour_bar_label("v");
                for p in panels.iter().cloned() {
                    h.push(p);
                }
                h.png().unwrap();
                h.svg().unwrap();
            }
        }
        Heatmaps::new("").png().unwrap();
        Heatmaps::new("")
            .columns(0)
            .panel_size(0)
            .panel(Panel::new("", 1, 1, vec![1.0]))
            .svg()
            .unwrap();
    }

    #[test]
    fn random_panels_never_panic() {
        use proptest::prelude::*;
        let cfg = ProptestConfig { cases: 16, ..ProptestConfig::default() };
        proptest!(cfg, |(nx in 0..12usize, ny in 0..12usize,
                        vals in proptest::collection::vec(prop_oneof![any::<f64>(), -5.0..5.0f64, Just(f64::NAN)], 0..150),
                        shared: bool, cols in 0..4usize)| {
            let h = Heatmaps::new("r").panel_size(60).shared_scale(shared).columns(cols)
                .panel(Panel::new("a", nx, ny, vals.clone()))
                .panel(Panel::new("b", ny, nx, vals));
            h.png().unwrap();
            h.svg().unwrap();
        });
    }
}
