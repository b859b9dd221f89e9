//! Shared drawing: the embedded font, rendering a figure to PNG bytes or SVG text, and the
//! axes frame (grid, ticks, tick labels, axis labels) that line plots and heat maps share.

use std::path::Path;
use std::sync::OnceLock;

use ab_glyph::{Font, FontRef, PxScale, PxScaleFont, ScaleFont};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontTransform;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::axis::Axis;
use crate::{PlotError, Rgb, encode_png};

/// The family name under which DejaVu Sans is registered, and which SVG text names.
pub(crate) const FAMILY: &str = "sans-serif";

/// Font sizes in pixels (plotters' size: about 1.24 × the em height).
pub(crate) const TITLE_PX: f64 = 21.0;
pub(crate) const LABEL_PX: f64 = 17.0;
pub(crate) const TICK_PX: f64 = 15.0;

pub(crate) const BLACK: Rgb = [0, 0, 0];
pub(crate) const GRID: Rgb = [225, 225, 225];

/// The embedded font (DejaVu Sans), parsed once per process; `None` only if the bytes failed
/// to parse, in which case PNG text is left out rather than panicking.
fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(dejavu::sans::regular()).ok()).as_ref()
}

/// The em size in pixels of plotters' text size `size` (plotters writes SVG `font-size` as
/// `size / 1.24`; PNG text uses the same em so both outputs lay out alike).
fn em(size: f64) -> f32 {
    (size / 1.24) as f32
}

fn scaled(size: f64) -> Option<PxScaleFont<&'static FontRef<'static>>> {
    let f = font()?;
    let units = f.units_per_em()?;
    Some(f.as_scaled(PxScale::from(em(size) * f.height_unscaled() / units)))
}

/// A figure that draws itself on any plotters backend.
pub(crate) trait Figure {
    /// Image size in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws onto `root` (already filled white).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

pub(crate) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw_err<E: std::fmt::Debug>(what: &str, e: E) -> PlotError {
    PlotError::Draw { what: what.to_string(), message: format!("{e:?}") }
}

/// Renders `fig` to PNG bytes (`path` only names the file in errors).
pub(crate) fn png_bytes<F: Figure>(fig: &F, path: &Path) -> Result<Vec<u8>, PlotError> {
    let (w, h) = fig.size();
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        let what = path.display().to_string();
        root.fill(&WHITE).map_err(|e| draw_err(&what, e))?;
        fig.draw(&root).map_err(|e| draw_err(&what, e))?;
        root.present().map_err(|e| draw_err(&what, e))?;
    }
    encode_png(path, w, h, &buf)
}

/// Renders `fig` to SVG text.
pub(crate) fn svg_string<F: Figure>(fig: &F) -> Result<String, PlotError> {
    let (w, h) = fig.size();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err("SVG", e))?;
        fig.draw(&root).map_err(|e| draw_err("SVG", e))?;
        root.present().map_err(|e| draw_err("SVG", e))?;
    }
    Ok(s)
}

pub(crate) fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

/// Rounds a pixel coordinate to i32, saturating (NaN → 0).
pub(crate) fn px(v: f64) -> i32 {
    v.round().clamp(-1e7, 1e7) as i32
}

/// Width and height of `text` at `size` in the embedded font: the advance width and the
/// font's ascent-to-descent height.
pub(crate) fn text_size(text: &str, size: f64) -> (u32, u32) {
    let Some(sf) = scaled(size) else {
        return ((text.chars().count() as f64 * size * 0.45) as u32, (size * 0.95) as u32);
    };
    let w = layout(&sf, text, |_| {});
    (w.ceil().max(0.0) as u32, (sf.ascent() - sf.descent()).ceil().max(0.0) as u32)
}

/// Lays out `text` on a baseline at y = 0 from x = 0, calling `glyph` with each outlined
/// glyph and its left pixel; returns the advance width.
fn layout(
    sf: &PxScaleFont<&'static FontRef<'static>>,
    text: &str,
    mut glyph: impl FnMut(ab_glyph::OutlinedGlyph),
) -> f32 {
    let mut caret = 0f32;
    let mut prev: Option<ab_glyph::GlyphId> = None;
    for ch in text.chars() {
        let id = sf.glyph_id(ch);
        if let Some(p) = prev {
            caret += sf.kern(p, id);
        }
        let g = id.with_scale_and_position(sf.scale(), ab_glyph::point(caret, 0.0));
        if let Some(o) = sf.font().outline_glyph(g) {
            glyph(o);
        }
        caret += sf.h_advance(id);
        prev = Some(id);
    }
    caret
}

/// Draws `text` with its anchor point `(x, y)`; `rotate` turns it to read bottom-to-top.
/// Vertical anchors follow plotters' SVG text: top = baseline 0.76 em below, centre = half
/// the cap height, bottom = baseline 0.25 em above.
#[allow(clippy::too_many_arguments)]
pub(crate) fn text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    (x, y): (i32, i32),
    size: f64,
    h: HPos,
    v: VPos,
    colour: Rgb,
    rotate: bool,
) -> DrawResult<DB> {
    if s.is_empty() || !(size.is_finite() && size > 0.0) {
        return Ok(());
    }
    // SVG keeps text as text (the viewer's sans-serif renders it); every other backend is a
    // raster, where glyphs are drawn here with correct side bearings and kerning.
    if std::any::type_name::<DB>().contains("SVGBackend") {
        let c = rgb(colour);
        let mut style = TextStyle::from((FAMILY, size).into_font()).color(&c).pos(Pos::new(h, v));
        if rotate {
            style = style.transform(FontTransform::Rotate270);
        }
        return area.draw(&Text::new(s.to_string(), (x, y), style));
    }
    let Some(sf) = scaled(size) else { return Ok(()) };
    let w = layout(&sf, s, |_| {});
    let e = em(size);
    let du = match h {
        HPos::Left => 0.0,
        HPos::Center => -w / 2.0,
        HPos::Right => -w,
    };
    let dv = match v {
        VPos::Top => 0.76 * e,
        VPos::Center => 0.365 * e,
        VPos::Bottom => -0.25 * e,
    };
    let (ou, ov) = (du.round() as i32, dv.round() as i32);
    let c = rgb(colour);
    let mut pixels: Vec<(i32, i32, f32)> = Vec::new();
    layout(&sf, s, |o| {
        let b = o.px_bounds();
        o.draw(|gx, gy, cov| {
            if cov > 0.0 {
                pixels.push((
                    b.min.x as i32 + gx as i32 + ou,
                    b.min.y as i32 + gy as i32 + ov,
                    cov.min(1.0),
                ));
            }
        });
    });
    for (u, v, cov) in pixels {
        let p = if rotate { (x + v, y - u) } else { (x + u, y + v) };
        area.draw_pixel(p, &c.mix(cov as f64))?;
    }
    Ok(())
}

/// A rectangle in pixels: left, top, right, bottom.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Frame {
    /// Pixel x of axis-space `t` on `axis`.
    pub fn x(&self, axis: &Axis, t: f64) -> f64 {
        self.x0 as f64 + axis.frac(t) * (self.x1 - self.x0) as f64
    }
    /// Pixel y of axis-space `t` on `axis` (up is larger, unless the axis runs lo > hi).
    pub fn y(&self, axis: &Axis, t: f64) -> f64 {
        self.y1 as f64 - axis.frac(t) * (self.y1 - self.y0) as f64
    }
}

/// Space the y tick labels of `axis` need, in pixels.
pub(crate) fn y_tick_width(axis: &Axis) -> i32 {
    axis.major.iter().map(|(_, s)| text_size(s, TICK_PX).0 as i32).max().unwrap_or(0)
}

/// Labels and options for [`draw_axes`].
pub(crate) struct AxesText<'a> {
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub grid: bool,
}

/// Grid lines, frame, outward ticks, tick labels and axis labels around `f`.
pub(crate) fn draw_axes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    f: Frame,
    xa: &Axis,
    ya: &Axis,
    t: &AxesText<'_>,
) -> DrawResult<DB> {
    let inside = |v: f64, a: i32, b: i32| v >= a.min(b) as f64 - 0.5 && v <= a.max(b) as f64 + 0.5;
    if t.grid {
        for (m, _) in &ya.major {
            let y = f.y(ya, *m);
            if inside(y, f.y0, f.y1) {
                area.draw(&PathElement::new(vec![(f.x0, px(y)), (f.x1, px(y))], rgb(GRID)))?;
            }
        }
        for (m, _) in &xa.major {
            let x = f.x(xa, *m);
            if inside(x, f.x0, f.x1) {
                area.draw(&PathElement::new(vec![(px(x), f.y0), (px(x), f.y1)], rgb(GRID)))?;
            }
        }
    }
    draw_frame_and_ticks(area, f, xa, ya)?;
    // Axis labels.
    let cx = (f.x0 + f.x1) / 2;
    let x_tick_h = text_size("0", TICK_PX).1 as i32;
    text(
        area,
        t.x_label,
        (cx, f.y1 + 10 + x_tick_h + 8),
        LABEL_PX,
        HPos::Center,
        VPos::Top,
        BLACK,
        false,
    )?;
    let cy = (f.y0 + f.y1) / 2;
    let lx = f.x0 - 8 - y_tick_width(ya) - 10;
    text(area, t.y_label, (lx, cy), LABEL_PX, HPos::Center, VPos::Bottom, BLACK, true)?;
    Ok(())
}

/// Frame, outward ticks and tick labels (no grid, no axis labels).
pub(crate) fn draw_frame_and_ticks<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    f: Frame,
    xa: &Axis,
    ya: &Axis,
) -> DrawResult<DB> {
    let inside = |v: f64, a: i32, b: i32| v >= a.min(b) as f64 - 0.5 && v <= a.max(b) as f64 + 0.5;
    let black = rgb(BLACK);
    area.draw(&Rectangle::new([(f.x0, f.y0), (f.x1, f.y1)], black.stroke_width(1)))?;
    for &m in &ya.minor {
        let y = px(f.y(ya, m));
        if inside(y as f64, f.y0, f.y1) {
            area.draw(&PathElement::new(vec![(f.x0 - 3, y), (f.x0, y)], black))?;
        }
    }
    for &m in &xa.minor {
        let x = px(f.x(xa, m));
        if inside(x as f64, f.x0, f.x1) {
            area.draw(&PathElement::new(vec![(x, f.y1), (x, f.y1 + 3)], black))?;
        }
    }
    for (m, s) in &ya.major {
        let y = px(f.y(ya, *m));
        if inside(y as f64, f.y0, f.y1) {
            area.draw(&PathElement::new(vec![(f.x0 - 6, y), (f.x0, y)], black))?;
            text(area, s, (f.x0 - 9, y), TICK_PX, HPos::Right, VPos::Center, BLACK, false)?;
        }
    }
    for (m, s) in &xa.major {
        let x = px(f.x(xa, *m));
        if inside(x as f64, f.x0, f.x1) {
            area.draw(&PathElement::new(vec![(x, f.y1), (x, f.y1 + 6)], black))?;
            text(area, s, (x, f.y1 + 9), TICK_PX, HPos::Center, VPos::Top, BLACK, false)?;
        }
    }
    Ok(())
}
