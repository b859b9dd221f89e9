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
use crate::base::{PlotError, Rgb, encode_png};

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
    let buf = rgb_bytes(fig, path)?;
    encode_png(path, w, h, &buf)
}

/// Rasterises `fig` into RGB bytes (row-major, 3 per pixel, `size()` pixels); `path` names
/// the figure in errors.
pub(crate) fn rgb_bytes<F: Figure>(fig: &F, path: &Path) -> Result<Vec<u8>, PlotError> {
    let (w, h) = fig.size();
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        let what = path.display().to_string();
        root.fill(&WHITE).map_err(|e| draw_err(&what, e))?;
        fig.draw(&root).map_err(|e| draw_err(&what, e))?;
        root.present().map_err(|e| draw_err(&what, e))?;
    }
    Ok(buf)
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

/// The output methods of a figure type (PNG and SVG bytes, atomic saves), written once.
macro_rules! figure_output {
    ($t:ty, $what:literal) => {
        impl $t {
            #[doc = concat!("The ", $what, " as PNG bytes.")]
            pub fn png(&self) -> Result<Vec<u8>, $crate::base::PlotError> {
                $crate::draw::png_bytes(self, std::path::Path::new($what))
            }

            #[doc = concat!("The ", $what, " as RGB pixels: row-major, 3 bytes per pixel, its")]
            /// width × height (what a Gymnasium `rgb_array` frame holds).
            pub fn rgb(&self) -> Result<Vec<u8>, $crate::base::PlotError> {
                $crate::draw::rgb_bytes(self, std::path::Path::new($what))
            }

            #[doc = concat!("The ", $what, "'s width and height in pixels.")]
            pub fn pixels(&self) -> (u32, u32) {
                $crate::draw::Figure::size(self)
            }

            #[doc = concat!("The ", $what, " as SVG text.")]
            pub fn svg(&self) -> Result<String, $crate::base::PlotError> {
                $crate::draw::svg_string(self)
            }

            /// Writes `stem.png` and `stem.svg` atomically; returns their paths.
            pub fn save(
                &self,
                stem: &std::path::Path,
            ) -> Result<Vec<std::path::PathBuf>, $crate::base::PlotError> {
                $crate::base::save_both(stem, |p| $crate::draw::png_bytes(self, p), || self.svg())
            }

            /// Writes only `stem.png`; returns its path.
            pub fn save_png(
                &self,
                stem: &std::path::Path,
            ) -> Result<std::path::PathBuf, $crate::base::PlotError> {
                let p = $crate::base::with_ext(stem, "png");
                $crate::base::write_atomic(&p, &$crate::draw::png_bytes(self, &p)?)?;
                Ok(p)
            }

            /// Writes only `stem.svg`; returns its path.
            pub fn save_svg(
                &self,
                stem: &std::path::Path,
            ) -> Result<std::path::PathBuf, $crate::base::PlotError> {
                let p = $crate::base::with_ext(stem, "svg");
                $crate::base::write_atomic(&p, self.svg()?.as_bytes())?;
                Ok(p)
            }
        }
    };
}
pub(crate) use figure_output;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_util::decode;

    /// Rounding to pixels: halves away from zero, NaN to 0, anything huge saturating at ±10⁷.
    #[test]
    fn px_rounds_and_saturates() {
        assert_eq!((px(2.5), px(-2.5), px(2.49), px(-0.4)), (3, -3, 2, 0));
        assert_eq!((px(f64::NAN), px(1e300), px(f64::NEG_INFINITY)), (0, 10_000_000, -10_000_000));
    }

    /// The frame maps an axis's ends to its edges, x left to right and y bottom to top (top
    /// to bottom for an axis running high to low), linearly in between.
    #[test]
    fn frame_maps_axis_ends_to_its_edges() {
        let f = Frame { x0: 100, y0: 20, x1: 300, y1: 220 };
        let a = Axis { lo: 0.0, hi: 10.0, major: vec![], minor: vec![] };
        assert_eq!((f.x(&a, 0.0), f.x(&a, 10.0), f.x(&a, 2.5)), (100.0, 300.0, 150.0));
        assert_eq!((f.y(&a, 0.0), f.y(&a, 10.0), f.y(&a, 2.5)), (220.0, 20.0, 170.0));
        let rev = Axis { lo: 10.0, hi: 0.0, ..a };
        assert_eq!((f.y(&rev, 10.0), f.y(&rev, 0.0)), (220.0, 20.0));
    }

    /// One text at the centre of a 240 × 120 image.
    struct Label {
        s: &'static str,
        size: f64,
        rotate: bool,
    }

    impl Figure for Label {
        fn size(&self) -> (u32, u32) {
            (240, 120)
        }
        fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
            let (s, size) = (self.s, self.size);
            text(root, s, (120, 60), size, HPos::Center, VPos::Center, BLACK, self.rotate)
        }
    }

    /// The ink of centred PNG text: centred on the anchor (caps only, so the centre anchor,
    /// half the cap height, is the ink's middle), no wider than `text_size` says, and a
    /// quarter turn swaps its width and height about the same centre. Empty text and a
    /// non-positive or NaN size draw nothing; SVG keeps the text as text.
    #[test]
    fn png_text_is_centred_on_its_anchor_and_turns_about_it() {
        let ink = |l: &Label| {
            let (w, h, rgb) = decode(&png_bytes(l, Path::new("t.png")).unwrap());
            let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
            for (i, p) in rgb.chunks_exact(3).enumerate() {
                if p[0] < 128 {
                    let (x, y) = (i as u32 % w, i as u32 / w);
                    (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
                }
            }
            assert_eq!((w, h), (240, 120));
            (x0, y0, x1, y1)
        };
        let flat = Label { s: "HEXH", size: 30.0, rotate: false };
        let (x0, y0, x1, y1) = ink(&flat);
        let (tw, th) = text_size(flat.s, flat.size);
        let (iw, ih) = (x1 - x0 + 1, y1 - y0 + 1);
        assert!(iw <= tw && iw * 10 >= tw * 8, "ink {iw} wide, text_size {tw}");
        assert!(ih < th && ih * 2 > th, "cap height {ih} of a {th} line");
        assert!(
            (x0 + x1).abs_diff(240) <= 4 && (y0 + y1).abs_diff(120) <= 4,
            "{x0}..{x1}, {y0}..{y1}"
        );
        let (r0, s0, r1, s1) = ink(&Label { rotate: true, ..flat });
        assert!((r1 - r0 + 1).abs_diff(ih) <= 1 && (s1 - s0 + 1).abs_diff(iw) <= 1, "turned");
        assert!(
            (r0 + r1).abs_diff(240) <= 4 && (s0 + s1).abs_diff(120) <= 4,
            "{r0}..{r1}, {s0}..{s1}"
        );
        for blank in
            [Label { s: "", ..flat }, Label { size: 0.0, ..flat }, Label { size: f64::NAN, ..flat }]
        {
            assert_eq!(ink(&blank), (u32::MAX, u32::MAX, 0, 0), "nothing drawn for {:?}", blank.s);
        }
        let svg = svg_string(&flat).unwrap();
        assert!(svg.contains("HEXH") && svg.contains(r#"font-family="sans-serif""#), "{svg}");
    }
}
