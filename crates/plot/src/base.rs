//! What every module of `kestrel-plot` stands on: its error ([`PlotError`]), the palette,
//! and writing an image's files atomically.

use std::path::{Path, PathBuf};

/// An sRGB colour, `[red, green, blue]`.
pub type Rgb = [u8; 3];

/// The Okabe–Ito colour-blind-safe palette, in the order series take it (yellow last: it
/// reads poorly on white).
pub const PALETTE: [Rgb; 8] = [
    [0, 114, 178],   // blue
    [213, 94, 0],    // vermillion
    [0, 158, 115],   // bluish green
    [204, 121, 167], // reddish purple
    [230, 159, 0],   // orange
    [86, 180, 233],  // sky blue
    [0, 0, 0],       // black
    [240, 228, 66],  // yellow
];

/// An error writing or drawing a figure.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Writing a file failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Encoding the PNG failed.
    #[error("encoding PNG {path}: {message}")]
    Png {
        /// The file being written.
        path: PathBuf,
        /// What the encoder said.
        message: String,
    },
    /// The drawing backend failed (a font or backend error).
    #[error("drawing {what}: {message}")]
    Draw {
        /// Which figure or file.
        what: String,
        /// What plotters said.
        message: String,
    },
}

/// Writes `bytes` to `path` atomically ([`kestrel_core::write_atomic`]), so a reader never
/// sees a half-written file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    kestrel_core::write_atomic(path, bytes)
        .map_err(|e| PlotError::Io { path: e.path, source: e.source })
}

/// `stem` with the extension `ext` appended (`runs/x/cost` → `runs/x/cost.png`), keeping any
/// dots already in the stem's name.
pub(crate) fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Encodes a row-major RGB buffer as PNG bytes.
pub(crate) fn encode_png(path: &Path, w: u32, h: u32, rgb: &[u8]) -> Result<Vec<u8>, PlotError> {
    let err =
        |e: png::EncodingError| PlotError::Png { path: path.to_path_buf(), message: e.to_string() };
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc.write_header().map_err(err)?;
        writer.write_image_data(rgb).map_err(err)?;
        writer.finish().map_err(err)?;
    }
    Ok(out)
}

/// Writes a row-major RGB image (`w × h`, 3 bytes a pixel) to `path` as PNG, atomically: an
/// image drawn elsewhere (an ARC task's pairs) through the same encoder as the figures.
pub fn save_rgb_png(path: &Path, w: u32, h: u32, rgb: &[u8]) -> Result<(), PlotError> {
    write_atomic(path, &encode_png(path, w, h, rgb)?)
}

/// Saves a figure that can render itself as PNG bytes and SVG text: `stem.png`, `stem.svg`.
pub(crate) fn save_both(
    stem: &Path,
    png: impl FnOnce(&Path) -> Result<Vec<u8>, PlotError>,
    svg: impl FnOnce() -> Result<String, PlotError>,
) -> Result<Vec<PathBuf>, PlotError> {
    let (p, s) = (with_ext(stem, "png"), with_ext(stem, "svg"));
    write_atomic(&p, &png(&p)?)?;
    write_atomic(&s, svg()?.as_bytes())?;
    Ok(vec![p, s])
}

#[cfg(test)]
pub(crate) mod test_util {
    /// Decodes PNG bytes: (width, height, RGB pixels).
    pub fn decode(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let dec = png::Decoder::new(bytes);
        let mut r = dec.read_info().unwrap();
        let mut buf = vec![0; r.output_buffer_size()];
        let info = r.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        assert_eq!(info.color_type, png::ColorType::Rgb);
        (info.width, info.height, buf)
    }

    /// The number of distinct colours among the pixels.
    pub fn distinct_colours(rgb: &[u8]) -> usize {
        let mut v: Vec<[u8; 3]> = rgb.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        v.sort_unstable();
        v.dedup();
        v.len()
    }

    /// Whether any pixel is close to `c` (each channel within `tol`).
    pub fn has_colour(rgb: &[u8], c: [u8; 3], tol: u8) -> bool {
        rgb.chunks_exact(3).any(|p| (0..3).all(|k| p[k].abs_diff(c[k]) <= tol))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RGB image saved as PNG reads back pixel for pixel.
    #[test]
    fn rgb_pngs_read_back_as_written() {
        let path =
            std::env::temp_dir().join(format!("kestrel-plot-rgb-{}.png", std::process::id()));
        let rgb: Vec<u8> = (0..3 * 4 * 2).map(|i| (i * 10) as u8).collect();
        save_rgb_png(&path, 4, 2, &rgb).unwrap();
        let (w, h, back) = test_util::decode(&std::fs::read(&path).unwrap());
        assert_eq!((w, h), (4, 2));
        assert_eq!(back, rgb);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn with_ext_appends_and_keeps_dots() {
        assert_eq!(with_ext(Path::new("a/b.c/cost"), "png"), PathBuf::from("a/b.c/cost.png"));
        assert_eq!(with_ext(Path::new("run.v2"), "svg"), PathBuf::from("run.v2.svg"));
    }

    #[test]
    fn an_io_error_names_the_path() {
        let e = write_atomic(Path::new("/nonexistent-dir-kestrel/x.png"), b"x").unwrap_err();
        assert!(e.to_string().contains("/nonexistent-dir-kestrel/x.png"), "{e}");
    }
}
