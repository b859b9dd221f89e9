//! Publication-quality figures for Kestrel runs: line plots, heat maps and sketches, each
//! written as PNG and SVG.
//!
//! Three figure types, all drawn with [`plotters`](https://docs.rs/plotters) on its bitmap
//! and SVG backends:
//!
//! - [`LinePlot`]: named `(x, y)` series with optional mean ± sd bands, labelled axes,
//!   legend, and a y scale chosen from the data ([`Scale::Auto`]: log, symlog or linear).
//! - [`Heatmaps`]: a grid of heat-map panels (NaN = empty cell, drawn light grey), each with
//!   axis labels and a colour bar; sequential (viridis) or diverging colour maps, one shared
//!   colour scale or one per panel.
//! - [`Sketch`]: a drawing surface in pixel coordinates (rectangles, lines, circles, text)
//!   for pictures that are not charts: episode sheets, animation strips, pendulum drawings.
//!
//! Each has `save(stem)`, which writes `stem.png` and `stem.svg` atomically (temp file +
//! rename). Drawing never panics: non-finite values are skipped, empty data draws axes and
//! a note, sizes are clamped.
//!
//! PNG text uses DejaVu Sans, embedded from the `dejavu` crate and rendered by `ab_glyph`
//! (no system fonts). SVG text names the generic `sans-serif` family, so an SVG needs no
//! font file. PNGs are encoded here with the `png` crate from plotters' RGB buffer.

mod axis;
mod base;
mod draw;
mod heat;
mod line;
mod sketch;

pub use axis::Scale;
pub use base::{PALETTE, PlotError, Rgb, save_rgb_png};
pub use heat::{ColourMap, Heatmaps, Panel};
pub use line::{LinePlot, Series};
pub use sketch::{Anchor, Sketch};
