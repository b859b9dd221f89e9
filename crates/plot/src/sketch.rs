//! A drawing surface in pixel coordinates for pictures that are not charts: episode sheets of
//! coloured cells, animation frame strips, pendulum and cart drawings.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use crate::base::Rgb;
use crate::draw::{DrawResult, Figure, px, rgb, text};

/// Where a text's position sits on the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Anchor {
    /// The position is the text's top-left corner.
    #[default]
    TopLeft,
    /// The position is the middle of the text's top edge.
    TopCentre,
    /// The position is the text's centre.
    Centre,
    /// The position is the middle of the text's left edge.
    Left,
}

#[derive(Clone, Debug, PartialEq)]
enum Op {
    Rect { x0: f64, y0: f64, x1: f64, y1: f64, fill: Rgb },
    Outline { x0: f64, y0: f64, x1: f64, y1: f64, colour: Rgb, width: f64 },
    Line { pts: Vec<(f64, f64)>, colour: Rgb, width: f64 },
    Circle { x: f64, y: f64, r: f64, colour: Rgb, filled: bool },
    Text { x: f64, y: f64, size: f64, text: String, colour: Rgb, anchor: Anchor },
}

/// A white canvas of `width × height` pixels on which shapes and text are recorded, then
/// rendered to PNG (raster, embedded font) or SVG (vector). Coordinates are pixels from the
/// top-left corner, as `f64`; shapes with a non-finite coordinate are skipped and shapes off
/// the canvas are clipped.
///
/// ```no_run
/// use kestrel_plot::{Anchor, Sketch};
/// let mut s = Sketch::new(200, 120);
/// s.rect(10.0, 10.0, 60.0, 60.0, [0, 114, 178]);
/// s.line(&[(100.0, 60.0), (150.0, 20.0)], [213, 94, 0], 3.0);
/// s.circle((150.0, 20.0), 6.0, [0, 0, 0]);
/// s.text((10.0, 90.0), 16.0, "t = 0.50 s", [0, 0, 0], Anchor::TopLeft);
/// s.save(std::path::Path::new("runs/x/frame"))?;
/// # Ok::<(), kestrel_plot::PlotError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Sketch {
    width: u32,
    height: u32,
    background: Rgb,
    ops: Vec<Op>,
}

impl Sketch {
    /// A white canvas `width × height` pixels (each clamped to 1–16384).
    pub fn new(width: u32, height: u32) -> Self {
        Sketch {
            width: width.clamp(1, 16384),
            height: height.clamp(1, 16384),
            background: [255; 3],
            ops: Vec::new(),
        }
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Sets the background colour (default white).
    pub fn background(&mut self, colour: Rgb) -> &mut Self {
        self.background = colour;
        self
    }

    /// A filled rectangle covering `[x0, x1) × [y0, y1)`.
    pub fn rect(&mut self, x0: f64, y0: f64, x1: f64, y1: f64, fill: Rgb) -> &mut Self {
        self.ops.push(Op::Rect { x0, y0, x1, y1, fill });
        self
    }

    /// A rectangle outline of `width` pixels.
    pub fn rect_outline(
        &mut self,
        x0: f64,
        y0: f64,
        x1: f64,
        y1: f64,
        colour: Rgb,
        width: f64,
    ) -> &mut Self {
        self.ops.push(Op::Outline { x0, y0, x1, y1, colour, width });
        self
    }

    /// A polyline through `points`, `width` pixels wide (a segment is two points).
    pub fn line(&mut self, points: &[(f64, f64)], colour: Rgb, width: f64) -> &mut Self {
        self.ops.push(Op::Line { pts: points.to_vec(), colour, width });
        self
    }

    /// A filled circle.
    pub fn circle(&mut self, centre: (f64, f64), radius: f64, fill: Rgb) -> &mut Self {
        self.ops.push(Op::Circle {
            x: centre.0,
            y: centre.1,
            r: radius,
            colour: fill,
            filled: true,
        });
        self
    }

    /// A circle outline (1 pixel).
    pub fn circle_outline(&mut self, centre: (f64, f64), radius: f64, colour: Rgb) -> &mut Self {
        self.ops.push(Op::Circle { x: centre.0, y: centre.1, r: radius, colour, filled: false });
        self
    }

    /// Text in the embedded font, `size` pixels (about 1.24 × the letter height), placed by
    /// `anchor` at `pos`.
    pub fn text(
        &mut self,
        pos: (f64, f64),
        size: f64,
        text: &str,
        colour: Rgb,
        anchor: Anchor,
    ) -> &mut Self {
        self.ops.push(Op::Text {
            x: pos.0,
            y: pos.1,
            size,
            text: text.to_string(),
            colour,
            anchor,
        });
        self
    }
}

fn fin(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

/// A stroke width in whole pixels, at least 1.
fn stroke(w: f64) -> u32 {
    if w.is_finite() { w.round().clamp(1.0, 200.0) as u32 } else { 1 }
}

impl Figure for Sketch {
    fn size(&self) -> (u32, u32) {
        (self.width, self.height)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        if self.background != [255; 3] {
            root.fill(&rgb(self.background))?;
        }
        // Keep coordinates near the canvas so that rasterising never works on huge numbers.
        let lim = 4.0 * self.width.max(self.height) as f64 + 1000.0;
        let c = |v: f64| px(v.clamp(-lim, lim));
        for op in &self.ops {
            match op {
                Op::Rect { x0, y0, x1, y1, fill } if fin(&[*x0, *y0, *x1, *y1]) => {
                    let (a, b) = ((c(*x0), c(*y0)), (c(*x1), c(*y1)));
                    if a.0 != b.0 && a.1 != b.1 {
                        root.draw(&Rectangle::new([a, b], rgb(*fill).filled()))?;
                    }
                }
                Op::Outline { x0, y0, x1, y1, colour, width } if fin(&[*x0, *y0, *x1, *y1]) => {
                    let (a, b) = ((c(*x0), c(*y0)), (c(*x1), c(*y1)));
                    root.draw(&Rectangle::new([a, b], rgb(*colour).stroke_width(stroke(*width))))?;
                }
                Op::Line { pts, colour, width } => {
                    // Non-finite points break the line.
                    let mut run: Vec<(i32, i32)> = Vec::new();
                    let style = rgb(*colour).stroke_width(stroke(*width));
                    for p in pts.iter().chain(std::iter::once(&(f64::NAN, f64::NAN))) {
                        if p.0.is_finite() && p.1.is_finite() {
                            run.push((c(p.0), c(p.1)));
                        } else if !run.is_empty() {
                            if run.len() >= 2 {
                                root.draw(&PathElement::new(std::mem::take(&mut run), style))?;
                            }
                            run.clear();
                        }
                    }
                }
                Op::Circle { x, y, r, colour, filled } if fin(&[*x, *y, *r]) && *r > 0.0 => {
                    let r = r.min(lim).round().max(1.0) as u32;
                    let style =
                        if *filled { rgb(*colour).filled() } else { rgb(*colour).stroke_width(1) };
                    root.draw(&Circle::new((c(*x), c(*y)), r, style))?;
                }
                Op::Text { x, y, size, text: t, colour, anchor }
                    if fin(&[*x, *y, *size]) && *size > 0.0 =>
                {
                    let (h, v) = match anchor {
                        Anchor::TopLeft => (HPos::Left, VPos::Top),
                        Anchor::TopCentre => (HPos::Center, VPos::Top),
                        Anchor::Centre => (HPos::Center, VPos::Center),
                        Anchor::Left => (HPos::Left, VPos::Center),
                    };
                    text(root, t, (c(*x), c(*y)), size.min(500.0), h, v, *colour, false)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}

crate::draw::figure_output!(Sketch, "sketch");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::test_util::{decode, has_colour};

    #[test]
    fn shapes_and_text_are_drawn() {
        let mut s = Sketch::new(160, 90);
        s.rect(0.0, 0.0, 40.0, 40.0, [200, 10, 10])
            .line(&[(50.0, 80.0), (150.0, 10.0)], [10, 10, 200], 3.0)
            .circle((120.0, 60.0), 8.0, [10, 160, 10])
            .text((4.0, 60.0), 16.0, "t=3", [0, 0, 0], Anchor::TopLeft);
        let (w, h, px) = decode(&s.png().unwrap());
        assert_eq!((w, h), (160, 90));
        for c in [[200, 10, 10], [10, 10, 200], [10, 160, 10], [0, 0, 0]] {
            assert!(has_colour(&px, c, 4), "{c:?} missing");
        }
        let svg = s.svg().unwrap();
        assert!(svg.contains("t=3") && svg.contains("<circle") && svg.contains("<rect"));
    }

    #[test]
    fn odd_shapes_do_not_panic() {
        let mut s = Sketch::new(0, 0);
        let w = [f64::NAN, f64::INFINITY, -1e300, 1e300, 0.0, -5.0];
        for &a in &w {
            for &b in &w {
                s.rect(a, b, b, a, [1, 2, 3]);
                s.rect_outline(a, b, -a, -b, [1, 2, 3], a);
                s.line(&[(a, b), (b, a), (0.0, 0.0)], [1, 2, 3], b);
                s.line(&[], [0; 3], 1.0);
                s.circle((a, b), b, [1, 2, 3]);
                s.circle_outline((0.0, 0.0), a, [1, 2, 3]);
                s.text((a, b), a, "x", [0; 3], Anchor::Centre);
                s.text((1.0, 1.0), b, "", [0; 3], Anchor::TopCentre);
            }
        }
        assert_eq!((s.width(), s.height()), (1, 1));
        s.png().unwrap();
        s.svg().unwrap();
        let mut big = Sketch::new(u32::MAX, 3);
        big.background([0, 0, 0]);
        assert_eq!(big.width(), 16384);
    }

    #[test]
    fn save_writes_png_and_svg() {
        let dir = std::env::temp_dir().join(format!("kestrel-plot-sketch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Sketch::new(10, 10);
        s.rect(0.0, 0.0, 5.0, 5.0, [0; 3]);
        let p = s.save_png(&dir.join("a")).unwrap();
        assert_eq!(decode(&std::fs::read(p).unwrap()).0, 10);
        let q = s.save_svg(&dir.join("a")).unwrap();
        assert!(std::fs::read_to_string(q).unwrap().starts_with("<svg"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
