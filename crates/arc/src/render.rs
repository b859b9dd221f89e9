//! Rendering of grids and tasks: ANSI terminal blocks and RGB images (encoded by the CLI).

use crate::task::{GridData, Task};
use std::fmt::Write;

/// RGB of ARC colours 0–9 (the palette of the ARC web viewer, also JaxARC's).
pub const PALETTE: [[u8; 3]; 10] = [
    [0x00, 0x00, 0x00],
    [0x00, 0x74, 0xD9],
    [0xFF, 0x41, 0x36],
    [0x2E, 0xCC, 0x40],
    [0xFF, 0xDC, 0x00],
    [0xAA, 0xAA, 0xAA],
    [0xF0, 0x12, 0xBE],
    [0xFF, 0x85, 0x1B],
    [0x7F, 0xDB, 0xFF],
    [0x87, 0x0C, 0x25],
];

/// ANSI 256-colour codes of ARC colours 0–9 (ARCLE's `ansi256arc`).
pub const ANSI256: [u8; 10] = [0, 12, 9, 10, 11, 8, 13, 208, 14, 52];

/// One grid as coloured terminal rows (two spaces per cell).
pub fn ansi_grid(g: &GridData) -> Vec<String> {
    (0..g.h)
        .map(|r| {
            let mut s = String::new();
            for c in 0..g.w {
                let _ = write!(s, "\x1b[48;5;{}m  ", ANSI256[g.at(r, c).min(9) as usize]);
            }
            s.push_str("\x1b[0m");
            s
        })
        .collect()
}

/// Every pair of a task side by side (input → output), one pair per block of rows.
pub fn ansi_task(t: &Task) -> String {
    let mut out = String::new();
    for (name, pairs) in [("train", &t.train), ("test", &t.test)] {
        for (i, p) in pairs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}[{i}]: {}x{} -> {}x{}",
                p.input.h, p.input.w, p.output.h, p.output.w
            );
            let (a, b) = (ansi_grid(&p.input), ansi_grid(&p.output));
            for r in 0..a.len().max(b.len()) {
                let left = a.get(r).map_or_else(|| " ".repeat(2 * p.input.w), |s| s.clone());
                let right = b.get(r).map_or("", |s| s.as_str());
                let _ = writeln!(out, "{left}   {right}");
            }
            out.push('\n');
        }
    }
    out
}

/// Every pair of a task as digits (for a file or a pipe: no escape codes).
pub fn text_task(t: &Task) -> String {
    let mut out = String::new();
    for (name, pairs) in [("train", &t.train), ("test", &t.test)] {
        for (i, p) in pairs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}[{i}]: {}x{} -> {}x{}",
                p.input.h, p.input.w, p.output.h, p.output.w
            );
            let row = |g: &GridData, r: usize| -> String {
                (0..g.w).map(|c| char::from(b'0' + g.at(r, c).min(9))).collect()
            };
            for r in 0..p.input.h.max(p.output.h) {
                let left = if r < p.input.h { row(&p.input, r) } else { " ".repeat(p.input.w) };
                let right = if r < p.output.h { row(&p.output, r) } else { String::new() };
                let _ = writeln!(out, "{left}   {right}");
            }
            out.push('\n');
        }
    }
    out
}

/// An RGB image (row-major, 3 bytes per pixel) of every pair of a task: pairs stacked
/// vertically, input left and output right, `cell` pixels per cell, grey separators.
pub fn task_image(t: &Task, cell: usize) -> (usize, usize, Vec<u8>) {
    let pairs: Vec<_> = t.train.iter().chain(&t.test).collect();
    let gap = cell.max(2);
    let col_w = |f: fn(&crate::task::Pair) -> &GridData| {
        pairs.iter().map(|p| f(p).w).max().unwrap_or(1) * cell
    };
    let (wi, wo) = (col_w(|p| &p.input), col_w(|p| &p.output));
    let width = gap + wi + gap + wo + gap;
    let heights: Vec<usize> = pairs.iter().map(|p| p.input.h.max(p.output.h) * cell).collect();
    let height = gap + heights.iter().map(|h| h + gap).sum::<usize>();
    let mut img = vec![0x40u8; width * height * 3];
    let mut y0 = gap;
    for (p, h) in pairs.iter().zip(&heights) {
        for (g, x0) in [(&p.input, gap), (&p.output, gap + wi + gap)] {
            for r in 0..g.h * cell {
                for c in 0..g.w * cell {
                    let rgb = PALETTE[g.at(r / cell, c / cell).min(9) as usize];
                    let edge = cell >= 6 && (r % cell == 0 || c % cell == 0);
                    let px = ((y0 + r) * width + x0 + c) * 3;
                    img[px..px + 3].copy_from_slice(&if edge { [0x30; 3] } else { rgb });
                }
            }
        }
        y0 += h + gap;
    }
    (width, height, img)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::Pair;

    #[test]
    fn image_has_the_colours_of_the_cells() {
        let g = GridData::from_rows(&[vec![1, 2], vec![3, 4]]);
        let t = Task {
            id: "x".into(),
            group: String::new(),
            train: vec![Pair { input: g.clone(), output: g }],
            test: vec![],
        };
        let (w, h, img) = task_image(&t, 4);
        assert_eq!(img.len(), w * h * 3);
        let px = |x: usize, y: usize| &img[(y * w + x) * 3..(y * w + x) * 3 + 3];
        assert_eq!(px(4 + 1, 4 + 1), PALETTE[1]);
        assert_eq!(px(4 + 5, 4 + 5), PALETTE[4]);
        assert!(ansi_task(&t).contains("48;5;12m"));
        assert!(!text_task(&t).contains('\x1b'));
    }
}
