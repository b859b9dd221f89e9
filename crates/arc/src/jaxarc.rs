//! JaxARC 1.0.3 operations (`envs/grid_operations.py`), with each of its bugs behind a flag
//! of [`JaxBugs`] (see `reference/arc.md` §1.12). Padding is -1 outside the working area.

use crate::env::{ArcState, JaxBugs, PairGrids};
use crate::grid::{self, Grid, Mask};
use crate::o2arc::flood_region;

/// Writes `v` where `v > 0`, else 0, for every cell of the inclusive bbox, reading the
/// source cell through `src(r, c)` (JaxARC's `where(region > 0, region, cleared)`).
#[inline]
fn write_bbox<const S: usize>(
    g: &mut Grid<S>,
    (r0, r1, c0, c1): (usize, usize, usize, usize),
    src: impl Fn(&Grid<S>, usize, usize) -> i8,
) {
    let old = *g;
    for r in r0..=r1 {
        for c in c0..=c1 {
            let v = src(&old, r, c);
            g[r][c] = if v > 0 { v } else { 0 };
        }
    }
}

/// Cyclic shift of the bbox content: `dr`/`dc` is where content goes (+1 down/right).
fn shift<const S: usize>(g: &mut Grid<S>, b: (usize, usize, usize, usize), dr: i32, dc: i32) {
    let (r0, r1, c0, c1) = b;
    write_bbox(g, b, |o, r, c| {
        let sr = if dr > 0 {
            if r == r0 { r1 } else { r - 1 }
        } else if dr < 0 {
            if r == r1 { r0 } else { r + 1 }
        } else {
            r
        };
        let sc = if dc > 0 {
            if c == c0 { c1 } else { c - 1 }
        } else if dc < 0 {
            if c == c1 { c0 } else { c + 1 }
        } else {
            c
        };
        o[sr][sc]
    });
}

/// Similarity of the working area to the target (JaxARC `compute_grid_similarity`; with
/// `top_left_similarity` off, the denominator is the union of both areas, so 1.0 needs
/// equal dims).
pub(crate) fn similarity<const S: usize>(
    g: &Grid<S>,
    dims: [u8; 2],
    target: &Grid<S>,
    tdims: [u8; 2],
    bugs: &JaxBugs,
) -> f32 {
    let (th, tw) = (tdims[0] as usize, tdims[1] as usize);
    let (wh, ww) = (dims[0] as usize, dims[1] as usize);
    if th * tw == 0 {
        return if wh * ww > 0 { 0.0 } else { 1.0 };
    }
    // Full-width rows (vectorised, no data-dependent inner bound).
    let (hmin, wmin) = (th.min(wh), tw.min(ww));
    let mut matches = 0u32;
    for r in 0..hmin {
        for c in 0..S {
            matches += ((c < wmin) & (g[r][c] == target[r][c])) as u32;
        }
    }
    let denom = if bugs.top_left_similarity {
        th * tw
    } else {
        th * tw + wh * ww - th.min(wh) * tw.min(ww)
    };
    matches as f32 / denom as f32
}

/// Applies operation `op` (already clipped to 0..=34). `raw` is the action's selection on
/// the canvas; JaxARC ANDs it with the working mask first.
pub(crate) fn apply<const S: usize>(
    s: &mut ArcState<S>,
    op: i32,
    raw: &Mask<S>,
    pair: &PairGrids<S>,
    bugs: &JaxBugs,
) {
    let (h, w) = (s.dims[0] as usize, s.dims[1] as usize);
    let wm = grid::top_left::<S>(h, w);
    let sel = grid::and(raw, &wm);
    s.selected = sel;
    let eff = || if grid::any(&sel) { sel } else { wm };
    match op {
        0..=9 => grid::fill(&mut s.grid, &sel, op as i8),
        10..=19 if grid::count(&sel) == 1 => {
            let (r, c) = grid::first(&sel).unwrap_or((0, 0));
            let (allowed, iters) =
                if bugs.flood_fill_cap { ([grid::row_bits::<S>(); S], 64) } else { (wm, u32::MAX) };
            let region = flood_region(&s.grid, &allowed, r, c, iters);
            grid::fill(&mut s.grid, &region, (op - 10) as i8);
        }
        20..=23 => {
            if let Some(b) = grid::bbox(&eff()) {
                // Content direction of ops 20-23 as named (up, down, left, right).
                let (dr, dc) = [(-1, 0), (1, 0), (0, -1), (0, 1)][(op - 20) as usize];
                let m = if bugs.inverted_moves { -1 } else { 1 };
                shift(&mut s.grid, b, dr * m, dc * m);
            }
        }
        24 | 25 => {
            if let Some(b @ (r0, r1, c0, c1)) = grid::bbox(&eff())
                && r1 - r0 == c1 - c0
            {
                let cw = op == 24;
                if bugs.canvas_rotation {
                    rotate_canvas(&mut s.grid, b, cw);
                } else {
                    let n = r1 - r0;
                    write_bbox(&mut s.grid, b, |o, r, c| {
                        let (i, j) = (r - r0, c - c0);
                        if cw { o[r0 + n - j][c0 + i] } else { o[r0 + j][c0 + n - i] }
                    });
                }
            }
        }
        26 | 27 => {
            if let Some(b @ (r0, r1, c0, c1)) = grid::bbox(&eff()) {
                if op == 26 {
                    write_bbox(&mut s.grid, b, |o, r, c| o[r][c1 + c0 - c]);
                } else {
                    write_bbox(&mut s.grid, b, |o, r, c| o[r1 + r0 - r][c]);
                }
            }
        }
        28 | 30 => {
            for r in 0..S {
                for c in 0..S {
                    s.clip[r][c] = if grid::get(&sel, r, c) { s.grid[r][c] } else { 0 };
                }
            }
            if op == 30 {
                grid::fill(&mut s.grid, &sel, 0);
            }
        }
        29 => paste(s, &sel),
        31 => {
            if grid::any(&sel) {
                grid::fill(&mut s.grid, &sel, 0);
            } else if bugs.clear_overwrites_padding {
                s.grid = [[0; S]; S];
            } else {
                grid::fill(&mut s.grid, &wm, 0);
            }
        }
        32 => {
            s.grid = pair.input;
            let (ih, iw) = (pair.in_dims[0] as usize, pair.in_dims[1] as usize);
            pad(&mut s.grid, ih, iw);
            if !bugs.copy_input_keeps_mask {
                s.dims = pair.in_dims;
            }
        }
        33 => {
            let src = if bugs.shrink_only_resize { sel } else { *raw };
            if let Some(r) = src.iter().rposition(|&b| b != 0) {
                let c = 31 - src[r].leading_zeros() as usize;
                let (nh, nw) = (r + 1, c + 1);
                for (i, row) in s.grid.iter_mut().enumerate() {
                    for (j, v) in row.iter_mut().enumerate() {
                        let inside_new = i < nh && j < nw;
                        let kept = i < h.min(nh) && j < w.min(nw);
                        if !inside_new {
                            *v = -1;
                        } else if !kept {
                            *v = 0;
                        }
                    }
                }
                s.dims = [nh as u8, nw as u8];
            }
        }
        _ => {} // 10-19 without exactly one cell, and 34 submit: grid unchanged
    }
}

/// Sets every cell outside the top-left `h × w` to -1.
pub(crate) fn pad<const S: usize>(g: &mut Grid<S>, h: usize, w: usize) {
    for (i, row) in g.iter_mut().enumerate() {
        for (j, v) in row.iter_mut().enumerate() {
            if i >= h || j >= w {
                *v = -1;
            }
        }
    }
}

/// JaxARC's `jnp.rot90` of the canvas-sized array that is zero outside the bbox, merged
/// over the grid with the bbox cleared (rotates about the canvas centre).
fn rotate_canvas<const S: usize>(
    g: &mut Grid<S>,
    (r0, r1, c0, c1): (usize, usize, usize, usize),
    cw: bool,
) {
    let inside = |r: usize, c: usize| r >= r0 && r <= r1 && c >= c0 && c <= c1;
    let old = *g;
    for r in 0..S {
        for c in 0..S {
            let (sr, sc) = if cw { (S - 1 - c, r) } else { (c, S - 1 - r) };
            let v = if inside(sr, sc) { old[sr][sc] } else { 0 };
            let cleared = if inside(r, c) { 0 } else { old[r][c] };
            g[r][c] = if v > 0 { v } else { cleared };
        }
    }
}

/// PASTE: aligns the clipboard's non-zero top-left (min row, min column, separately) with
/// the selection's, and writes into selected cells only (0 where the source is off-canvas).
fn paste<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>) {
    let (mut cr, mut cc, mut has_clip) = (usize::MAX, usize::MAX, false);
    for r in 0..S {
        for c in 0..S {
            if s.clip[r][c] != 0 {
                has_clip = true;
                cr = cr.min(r);
                cc = cc.min(c);
            }
        }
    }
    let Some((sr, _, sc, _)) = grid::bbox(sel) else { return };
    if !has_clip {
        return;
    }
    let (off_r, off_c) = (sr as i32 - cr as i32, sc as i32 - cc as i32);
    for r in 0..S {
        let mut bits = sel[r];
        while bits != 0 {
            let c = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let (qr, qc) = (r as i32 - off_r, c as i32 - off_c);
            let inb = (0..S as i32).contains(&qr) && (0..S as i32).contains(&qc);
            s.grid[r][c] = if inb { s.clip[qr as usize][qc as usize] } else { 0 };
        }
    }
}
