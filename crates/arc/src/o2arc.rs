//! ARCLE `O2ARCv2Env` 0.2.6 operations, reproduced exactly (see `reference/arc.md` §2–§3).
//!
//! Integer widths follow ARCLE's `np.int8` state: object positions wrap as int8 on moves,
//! and the int8 sums ARCLE forms from a stored object's position and size wrap too.

use crate::env::{ArcState, PairGrids};
use crate::grid::{self, Grid, Mask};

/// `reset_sel`: clears the object-selection display and ends object mode.
#[inline]
fn reset_sel<const S: usize>(s: &mut ArcState<S>) {
    s.selected = [0; S];
    s.object.active = false;
}

/// Colour `c` into every selected cell of the whole canvas (also outside `grid_dim`).
pub(crate) fn color<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, c: i8) {
    reset_sel(s);
    grid::fill(&mut s.grid, sel, c);
}

/// The 4-connected region of `colour` around `(r, c)` inside `allowed` (bitmask dilation,
/// at most `max_iters` expansions; `u32::MAX` for the whole region).
pub(crate) fn flood_region<const S: usize>(
    g: &Grid<S>,
    allowed: &Mask<S>,
    r: usize,
    c: usize,
    max_iters: u32,
) -> Mask<S> {
    let colour = g[r][c];
    let mut region = [0u32; S];
    for (i, row) in g.iter().enumerate() {
        let mut bits = 0u32;
        for (j, &v) in row.iter().enumerate() {
            bits |= ((v == colour) as u32) << j;
        }
        region[i] = bits & allowed[i];
    }
    let mut cur = [0u32; S];
    cur[r] = 1 << c;
    let rb = grid::row_bits::<S>();
    let mut it = 0;
    while it < max_iters {
        let mut next = [0u32; S];
        let mut changed = false;
        for i in 0..S {
            let mut v = cur[i] | (cur[i] << 1) | (cur[i] >> 1);
            if i > 0 {
                v |= cur[i - 1];
            }
            if i + 1 < S {
                v |= cur[i + 1];
            }
            next[i] = v & region[i] & rb;
            changed |= next[i] != cur[i];
        }
        cur = next;
        it += 1;
        if !changed {
            break;
        }
    }
    cur
}

/// FloodFill `c`: exactly one selected cell, inside `grid_dim`.
pub(crate) fn flood_fill<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, c: i8) {
    reset_sel(s);
    if grid::count(sel) != 1 {
        return;
    }
    let Some((r, col)) = grid::first(sel) else { return };
    let (h, w) = (s.dims[0] as usize, s.dims[1] as usize);
    if r >= h || col >= w {
        return;
    }
    let region = flood_region(&s.grid, &grid::top_left::<S>(h, w), r, col, u32::MAX);
    grid::fill(&mut s.grid, &region, c);
}

/// Bounding box for an object op: `(xmin, xmax, ymin, ymax, stored)`, where `stored` means
/// it came from the persistent object (int8 arithmetic in ARCLE).
fn init_objsel<const S: usize>(
    s: &mut ArcState<S>,
    sel: &Mask<S>,
) -> Option<(i32, i32, i32, i32, bool)> {
    if let Some((r0, r1, c0, c1)) = grid::bbox(sel) {
        let (h, w) = (r1 - r0 + 1, c1 - c0 + 1);
        let o = &mut s.object;
        o.dim = [h as i8, w as i8];
        o.object = [[0; S]; S];
        o.object_sel = [0; S];
        let wbits = u32::MAX >> (32 - w);
        for i in 0..h {
            let bits = sel[r0 + i];
            o.object_sel[i] = (bits >> c0) & wbits;
            let mut picked = [0i8; S];
            grid::blend_row(&mut picked, bits, &s.grid[r0 + i]);
            o.object[i][..w].copy_from_slice(&picked[c0..c0 + w]);
        }
        let zeros = [0i8; S];
        for (b, (g, &bits)) in o.background.iter_mut().zip(s.grid.iter().zip(sel.iter())) {
            *b = *g;
            grid::blend_row(b, bits, &zeros);
        }
        o.pos = [r0 as i8, c0 as i8];
        o.active = true;
        o.parity = 0;
        s.selected = *sel;
        Some((r0 as i32, r1 as i32, c0 as i32, c1 as i32, false))
    } else if s.object.active {
        let [x, y] = s.object.pos;
        let [h, w] = s.object.dim;
        let xmax = x.wrapping_add(h).wrapping_sub(1);
        let ymax = y.wrapping_add(w).wrapping_sub(1);
        Some((x as i32, xmax as i32, y as i32, ymax as i32, true))
    } else {
        None
    }
}

/// Paints background, then the object's non-zero pixels at its position clipped to
/// `grid_dim`; then the object selection into `selected`.
fn apply_patch<const S: usize>(s: &mut ArcState<S>) {
    let o = &s.object;
    let (x, y) = (o.pos[0] as i32, o.pos[1] as i32);
    let (h, w) = (o.dim[0] as i32, o.dim[1] as i32);
    let (gh, gw) = (s.dims[0] as i32, s.dims[1] as i32);
    s.grid = o.background;
    s.selected = [0; S];
    if x + h > 0 && x < gh && y + w > 0 && y < gw {
        let (stx, edx, sty, edy) = (x.max(0), gh.min(x + h), y.max(0), gw.min(y + w));
        let (py0, py1) = ((sty - y) as usize, (edy - y) as usize);
        let width_bits = u32::MAX >> (32 - (edy - sty) as u32);
        for gx in stx..edx {
            let px = (gx - x) as usize;
            let dst = &mut s.grid[gx as usize][sty as usize..edy as usize];
            for (d, &v) in dst.iter_mut().zip(&o.object[px][py0..py1]) {
                *d = if v > 0 { v } else { *d };
            }
            s.selected[gx as usize] = ((o.object_sel[px] >> py0) & width_bits) << sty;
        }
    }
}

/// Replaces the object and its selection by `f` applied to their top-left `h × w` part
/// (`f` maps output `(i, j)` of an `oh × ow` result to a source cell).
fn transform_object<const S: usize>(
    s: &mut ArcState<S>,
    oh: usize,
    ow: usize,
    f: impl Fn(usize, usize) -> (usize, usize),
) {
    let o = &mut s.object;
    let mut obj = [[0i8; S]; S];
    let mut osel = [0u32; S];
    for i in 0..oh {
        for j in 0..ow {
            let (a, b) = f(i, j);
            obj[i][j] = o.object[a][b];
            osel[i] |= (o.object_sel[a] >> b & 1) << j;
        }
    }
    o.object = obj;
    o.object_sel = osel;
}

/// Move by `(dx, dy)`: ops 20–23 are U (−1, 0), D (+1, 0), R (0, +1), L (0, −1).
pub(crate) fn move_obj<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, dx: i8, dy: i8) {
    if init_objsel(s, sel).is_none() {
        return;
    }
    let [x, y] = s.object.pos;
    s.object.pos = [x.wrapping_add(dx), y.wrapping_add(dy)];
    apply_patch(s);
}

/// `np.rot90(k)` of the object (op 24: k=1, counter-clockwise; op 25: k=3, clockwise),
/// keeping ARCLE's rotation centre and its parity rule for odd × even objects.
pub(crate) fn rotate<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, k: i32) {
    let Some((xmin, xmax, ymin, ymax, stored)) = init_objsel(s, sel) else { return };
    let [h8, w8] = s.object.dim;
    let (h, w) = (h8 as usize, w8 as usize);
    // ARCLE adds int8 coordinates of a stored object in int8 (wrapping), fresh ones in int64.
    let sum = |a: i32, b: i32| {
        if stored { (a as i8).wrapping_add(b as i8) as f64 } else { (a + b) as f64 }
    };
    let cx = sum(xmax, xmin) * 0.5;
    let cy = sum(ymax, ymin) * 0.5;
    if h % 2 == w % 2 {
        let [x, y] = s.object.pos;
        s.object.pos =
            [(cx - cy + y as f64).floor() as i64 as i8, (cy - cx + x as f64).floor() as i64 as i8];
    } else {
        s.object.parity = (s.object.parity + k as i8) % 2;
        let sig = ((k + 2) % 4 - 2) as f64;
        let m = (1 - s.object.parity) as f64;
        let mx = (cx + sig * (cy - ymin as f64)).min(cx + sig * (cy - ymax as f64)) + m;
        let my = (cy - sig * (cx - xmin as f64)).min(cy - sig * (cx - xmax as f64)) + m;
        s.object.pos = [mx.floor() as i64 as i8, my.floor() as i64 as i8];
    }
    s.object.dim = [w8, h8];
    if k == 1 {
        transform_object(s, w, h, |i, j| (j, w - 1 - i));
    } else {
        transform_object(s, w, h, |i, j| (h - 1 - j, i));
    }
    apply_patch(s);
}

/// FlipH (`fliplr`, op 26) or FlipV (`flipud`, op 27) of the object.
pub(crate) fn flip<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, horizontal: bool) {
    if init_objsel(s, sel).is_none() {
        return;
    }
    let (h, w) = (s.object.dim[0] as usize, s.object.dim[1] as usize);
    let o = &mut s.object;
    if horizontal {
        for i in 0..h {
            o.object[i][..w].reverse();
            o.object_sel[i] = o.object_sel[i].reverse_bits() >> (32 - w);
        }
    } else {
        o.object[..h].reverse();
        o.object_sel[..h].reverse();
    }
    apply_patch(s);
}

/// CopyI (op 28, from the input) / CopyO (op 29, from the working grid): non-black selected
/// cells of the bbox go top-left into the clipboard. ARCLE's bounds check lets the bbox
/// reach one row/column past the source's dims.
pub(crate) fn copy<const S: usize>(
    s: &mut ArcState<S>,
    sel: &Mask<S>,
    pair: &PairGrids<S>,
    from_input: bool,
) {
    reset_sel(s);
    let Some((r0, r1, c0, c1)) = grid::bbox(sel) else { return };
    let (src, sd) = if from_input { (&pair.input, pair.in_dims) } else { (&s.grid, s.dims) };
    if r1 > sd[0] as usize || c1 > sd[1] as usize {
        return;
    }
    let (h, w) = (r1 - r0 + 1, c1 - c0 + 1);
    // ARCLE copies where `src != 0 && sel`; copying a 0 is the same as skipping it.
    let mut clip = [[0i8; S]; S];
    for i in 0..h {
        let mut picked = [0i8; S];
        grid::blend_row(&mut picked, sel[r0 + i], &src[r0 + i]);
        clip[i][..w].copy_from_slice(&picked[c0..c0 + w]);
    }
    s.clip = clip;
    s.clip_dim = [h as u8, w as u8];
}

/// Paste (op 30, `paste_blank=True`): the clipboard, zeros included, with its top-left at
/// the selection bbox's top-left, truncated at the canvas (not `grid_dim`).
pub(crate) fn paste<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>) {
    reset_sel(s);
    let Some((r0, _, c0, _)) = grid::bbox(sel) else { return };
    let (h, w) = (s.clip_dim[0] as usize, s.clip_dim[1] as usize);
    if h == 0 || w == 0 {
        return;
    }
    for i in 0..h.min(S - r0) {
        for j in 0..w.min(S - c0) {
            s.grid[r0 + i][c0 + j] = s.clip[i][j];
        }
    }
}

/// CopyFromInput (op 31): the grid and its dims become the input's.
pub(crate) fn copy_from_input<const S: usize>(s: &mut ArcState<S>, pair: &PairGrids<S>) {
    reset_sel(s);
    s.grid = pair.input;
    s.dims = pair.in_dims;
}

/// ResetGrid (op 32): every canvas cell to 0, dims kept.
pub(crate) fn reset_grid<const S: usize>(s: &mut ArcState<S>) {
    reset_sel(s);
    s.grid = [[0; S]; S];
}

/// ResizeGrid (op 33): with a selection, the grid is cleared and its dims become the
/// selection bbox's size.
pub(crate) fn resize<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>) {
    reset_sel(s);
    let Some((r0, r1, c0, c1)) = grid::bbox(sel) else { return };
    s.grid = [[0; S]; S];
    s.dims = [(r1 - r0 + 1) as u8, (c1 - c0 + 1) as u8];
}

/// Whether the grid equals the pair's output exactly (dims and cells).
pub(crate) fn solved<const S: usize>(s: &ArcState<S>, pair: &PairGrids<S>) -> bool {
    s.dims == pair.out_dims
        && (0..pair.out_dims[0] as usize).all(|r| {
            let w = pair.out_dims[1] as usize;
            s.grid[r][..w] == pair.output[r][..w]
        })
}
