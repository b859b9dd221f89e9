//! The `o2arc` op table: ARCLE `O2ARCv2Env` 0.2.6 operations, reproduced exactly (see
//! `reference/arc.md` §2–§3), with their names ([`O2ARC_OPS`]), the decoded op
//! ([`O2arcOp`]), and [`O2arcTable`], which applies them and scores Submits.
//!
//! Integer widths follow ARCLE's `np.int8` state: object positions wrap as int8 on moves,
//! and the int8 sums ARCLE forms from a stored object's position and size wrap too.
//!
//! Reference: ARCLE, Lee et al. 2024 (<https://github.com/ConfeitoHS/arcle>).

use crate::grid::{self, Mask};
use crate::ops::{NUM_OPS, OpTable};
use crate::state::{ArcState, PairGrids};

/// Operation names of the `o2arc` table (ARCLE `O2ARCv2Env`), indexed by op id.
pub const O2ARC_OPS: [&str; NUM_OPS as usize] = [
    "Color0",
    "Color1",
    "Color2",
    "Color3",
    "Color4",
    "Color5",
    "Color6",
    "Color7",
    "Color8",
    "Color9",
    "FloodFill0",
    "FloodFill1",
    "FloodFill2",
    "FloodFill3",
    "FloodFill4",
    "FloodFill5",
    "FloodFill6",
    "FloodFill7",
    "FloodFill8",
    "FloodFill9",
    "MoveU",
    "MoveD",
    "MoveR",
    "MoveL",
    "Rotate90",
    "Rotate270",
    "FlipH",
    "FlipV",
    "CopyI",
    "CopyO",
    "Paste",
    "CopyFromInput",
    "ResetGrid",
    "ResizeGrid",
    "Submit",
];

/// One `o2arc` operation; the variants are in op-id order and named as in [`O2ARC_OPS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum O2arcOp {
    /// Ops 0–9: colour every selected canvas cell.
    Color(i8),
    /// Ops 10–19: flood-fill the region around the one selected cell.
    FloodFill(i8),
    /// Op 20: move the object up.
    MoveU,
    /// Op 21: move the object down.
    MoveD,
    /// Op 22: move the object right.
    MoveR,
    /// Op 23: move the object left.
    MoveL,
    /// Op 24: rotate the object a quarter turn counter-clockwise (`np.rot90(k=1)`).
    Rotate90,
    /// Op 25: rotate the object a quarter turn clockwise (`np.rot90(k=3)`).
    Rotate270,
    /// Op 26: mirror the object left–right.
    FlipH,
    /// Op 27: mirror the object top–bottom.
    FlipV,
    /// Op 28: copy the selection of the input into the clipboard.
    CopyI,
    /// Op 29: copy the selection of the working grid into the clipboard.
    CopyO,
    /// Op 30: paste the clipboard at the selection.
    Paste,
    /// Op 31: the working grid becomes the input.
    CopyFromInput,
    /// Op 32: clear the canvas.
    ResetGrid,
    /// Op 33: resize the working grid to the selection's bbox.
    ResizeGrid,
    /// Op 34: submit the working grid.
    Submit,
}

impl O2arcOp {
    /// The op with id `op`, or `None` outside 0–34.
    #[inline]
    pub const fn from_index(op: i32) -> Option<Self> {
        use O2arcOp::*;
        Some(match op {
            0..=9 => Color(op as i8),
            10..=19 => FloodFill((op - 10) as i8),
            20 => MoveU,
            21 => MoveD,
            22 => MoveR,
            23 => MoveL,
            24 => Rotate90,
            25 => Rotate270,
            26 => FlipH,
            27 => FlipV,
            28 => CopyI,
            29 => CopyO,
            30 => Paste,
            31 => CopyFromInput,
            32 => ResetGrid,
            33 => ResizeGrid,
            34 => Submit,
            _ => return None,
        })
    }

    /// The op's id.
    pub const fn index(self) -> i32 {
        use O2arcOp::*;
        match self {
            Color(c) => c as i32,
            FloodFill(c) => 10 + c as i32,
            MoveU => 20,
            MoveD => 21,
            MoveR => 22,
            MoveL => 23,
            Rotate90 => 24,
            Rotate270 => 25,
            FlipH => 26,
            FlipV => 27,
            CopyI => 28,
            CopyO => 29,
            Paste => 30,
            CopyFromInput => 31,
            ResetGrid => 32,
            ResizeGrid => 33,
            Submit => 34,
        }
    }
}

/// The `o2arc` table with the [`ArcParams`](crate::env::ArcParams) settings it reads.
///
/// An op id outside 0–34 is ignored (ARCLE raises `IndexError`, or runs Python's negative
/// index). Reward: 1 for a Submit whose grid equals the answer (dims and cells), else 0;
/// `terminated` is sticky, set by a correct Submit or when trials run out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct O2arcTable {
    /// ARCLE `max_trial`: Submits allowed (-1 for unlimited), what a replaced state gets.
    pub max_trials: i8,
    /// ARCLE `reset_on_submit`.
    pub reset_on_submit: bool,
}

impl OpTable for O2arcTable {
    type Op = O2arcOp;

    const NAMES: [&'static str; NUM_OPS as usize] = O2ARC_OPS;

    #[inline]
    fn decode(op: i32) -> Option<O2arcOp> {
        O2arcOp::from_index(op)
    }

    fn index(op: O2arcOp) -> i32 {
        op.index()
    }

    fn is_submit(op: O2arcOp) -> bool {
        op == O2arcOp::Submit
    }

    #[inline]
    fn apply<const S: usize>(
        &self,
        s: &mut ArcState<S>,
        op: O2arcOp,
        sel: &Mask<S>,
        pair: &PairGrids<S>,
    ) -> (f32, bool) {
        match op {
            O2arcOp::Color(c) => color(s, sel, c),
            O2arcOp::FloodFill(c) => flood_fill(s, sel, c),
            O2arcOp::MoveU => move_obj(s, sel, -1, 0),
            O2arcOp::MoveD => move_obj(s, sel, 1, 0),
            O2arcOp::MoveR => move_obj(s, sel, 0, 1),
            O2arcOp::MoveL => move_obj(s, sel, 0, -1),
            O2arcOp::Rotate90 => rotate(s, sel, 1),
            O2arcOp::Rotate270 => rotate(s, sel, 3),
            O2arcOp::FlipH => flip(s, sel, true),
            O2arcOp::FlipV => flip(s, sel, false),
            O2arcOp::CopyI => copy(s, sel, pair, true),
            O2arcOp::CopyO => copy(s, sel, pair, false),
            O2arcOp::Paste => paste(s, sel),
            O2arcOp::CopyFromInput => copy_from_input(s, pair),
            O2arcOp::ResetGrid => reset_grid(s),
            O2arcOp::ResizeGrid => resize(s, sel),
            O2arcOp::Submit => return self.submit(s, pair),
        }
        (0.0, s.terminated)
    }
}

impl O2arcTable {
    /// Submit (ARCLE `AbstractARCEnv.submit`, then `O2ARCv2Env.reward`). With
    /// `reset_on_submit`, ARCLE replaces the state dict, and its final trials check then
    /// touches only the discarded one.
    fn submit<const S: usize>(&self, s: &mut ArcState<S>, pair: &PairGrids<S>) -> (f32, bool) {
        let mut replaced = false;
        if s.trials != 0 {
            s.trials = s.trials.wrapping_sub(1);
            s.submit_count += 1;
            if solved(s, pair) {
                s.terminated = true;
            }
            if self.reset_on_submit {
                let (count, steps) = (s.submit_count, s.steps);
                *s = ArcState::new(s.task, s.pair, s.test, pair, self.max_trials);
                (s.submit_count, s.steps) = (count, steps);
                replaced = true;
            }
        }
        if !replaced && s.trials == 0 {
            s.terminated = true;
        }
        let r = if solved(s, pair) { 1.0 } else { 0.0 };
        (r, s.terminated)
    }
}

/// `reset_sel`: clears the object-selection display and ends object mode.
#[inline]
fn reset_sel<const S: usize>(s: &mut ArcState<S>) {
    s.selected = [0; S];
    s.object.active = false;
}

/// Colour `c` into every selected cell of the whole canvas (also outside `grid_dim`).
fn color<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, c: i8) {
    reset_sel(s);
    grid::fill(&mut s.grid, sel, c);
}

/// FloodFill `c`: exactly one selected cell, inside `grid_dim`.
fn flood_fill<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, c: i8) {
    reset_sel(s);
    if grid::count(sel) != 1 {
        return;
    }
    let Some((r, col)) = grid::first(sel) else { return };
    let (h, w) = (s.dims[0] as usize, s.dims[1] as usize);
    if r >= h || col >= w {
        return;
    }
    let region = grid::flood_region(&s.grid, &grid::top_left::<S>(h, w), r, col, u32::MAX);
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
        let zeros = [0i8; S];
        let wbits = u32::MAX >> (32 - w);
        for i in 0..h {
            let bits = sel[r0 + i];
            o.object_sel[i] = (bits >> c0) & wbits;
            let mut picked = [0i8; S];
            grid::select_row(&mut picked, bits, &s.grid[r0 + i], &zeros);
            o.object[i][..w].copy_from_slice(&picked[c0..c0 + w]);
        }
        for (b, (g, &bits)) in o.background.iter_mut().zip(s.grid.iter().zip(sel.iter())) {
            grid::select_row(b, bits, &zeros, g);
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

/// Move by `(dx, dy)`: MoveU (−1, 0), MoveD (+1, 0), MoveR (0, +1), MoveL (0, −1).
fn move_obj<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, dx: i8, dy: i8) {
    if init_objsel(s, sel).is_none() {
        return;
    }
    let [x, y] = s.object.pos;
    s.object.pos = [x.wrapping_add(dx), y.wrapping_add(dy)];
    apply_patch(s);
}

/// `np.rot90(k)` of the object (Rotate90: k=1, counter-clockwise; Rotate270: k=3, clockwise),
/// keeping ARCLE's rotation centre and its parity rule for odd × even objects.
fn rotate<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, k: i32) {
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

/// FlipH (`fliplr`) or FlipV (`flipud`) of the object.
fn flip<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, horizontal: bool) {
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

/// CopyI (from the input) / CopyO (from the working grid): non-black selected
/// cells of the bbox go top-left into the clipboard. ARCLE's bounds check lets the bbox
/// reach one row/column past the source's dims.
fn copy<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>, pair: &PairGrids<S>, from_input: bool) {
    reset_sel(s);
    let Some((r0, r1, c0, c1)) = grid::bbox(sel) else { return };
    let (src, sd) = if from_input { (&pair.input, pair.in_dims) } else { (&s.grid, s.dims) };
    if r1 > sd[0] as usize || c1 > sd[1] as usize {
        return;
    }
    let (h, w) = (r1 - r0 + 1, c1 - c0 + 1);
    // ARCLE copies where `src != 0 && sel`; copying a 0 is the same as skipping it.
    let mut clip = [[0i8; S]; S];
    let zeros = [0i8; S];
    for i in 0..h {
        let mut picked = [0i8; S];
        grid::select_row(&mut picked, sel[r0 + i], &src[r0 + i], &zeros);
        clip[i][..w].copy_from_slice(&picked[c0..c0 + w]);
    }
    s.clip = clip;
    s.clip_dim = [h as u8, w as u8];
}

/// Paste (`paste_blank=True`): the clipboard, zeros included, with its top-left at
/// the selection bbox's top-left, truncated at the canvas (not `grid_dim`).
fn paste<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>) {
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

/// CopyFromInput: the grid and its dims become the input's.
fn copy_from_input<const S: usize>(s: &mut ArcState<S>, pair: &PairGrids<S>) {
    reset_sel(s);
    s.grid = pair.input;
    s.dims = pair.in_dims;
}

/// ResetGrid: every canvas cell to 0, dims kept.
fn reset_grid<const S: usize>(s: &mut ArcState<S>) {
    reset_sel(s);
    s.grid = [[0; S]; S];
}

/// ResizeGrid: with a selection, the grid is cleared and its dims become the
/// selection bbox's size.
fn resize<const S: usize>(s: &mut ArcState<S>, sel: &Mask<S>) {
    reset_sel(s);
    let Some((r0, r1, c0, c1)) = grid::bbox(sel) else { return };
    s.grid = [[0; S]; S];
    s.dims = [(r1 - r0 + 1) as u8, (c1 - c0 + 1) as u8];
}

/// Whether the grid equals the pair's output exactly (dims and cells).
fn solved<const S: usize>(s: &ArcState<S>, pair: &PairGrids<S>) -> bool {
    s.dims == pair.out_dims
        && (0..pair.out_dims[0] as usize).all(|r| {
            let w = pair.out_dims[1] as usize;
            s.grid[r][..w] == pair.output[r][..w]
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;

    /// A canvas grid from digit rows (the rest 0).
    fn canvas<const S: usize>(rows: &[&str]) -> Grid<S> {
        let mut g = [[0; S]; S];
        for (r, row) in rows.iter().enumerate() {
            for (c, b) in row.bytes().enumerate() {
                g[r][c] = (b - b'0') as i8;
            }
        }
        g
    }

    /// A pair with input `input` (`in_dims`) and output `output` (`out_dims`), and the fresh
    /// state on it with `trials` Submits.
    fn setup(
        input: &[&str],
        in_dims: [u8; 2],
        output: &[&str],
        out_dims: [u8; 2],
        trials: i8,
    ) -> (PairGrids<4>, ArcState<4>) {
        let pg = PairGrids { input: canvas(input), in_dims, output: canvas(output), out_dims };
        let s = ArcState::new(0, 0, false, &pg, trials);
        (pg, s)
    }

    const NONE: Mask<4> = [0; 4];

    /// Submit: reward 1 only for the exact answer (cells and dims), each Submit spends a
    /// trial, the episode ends when trials run out and stays ended, and a Submit with no
    /// trials left counts nothing.
    #[test]
    fn submit_rewards_exact_answers_and_spends_trials() {
        let table = O2arcTable { max_trials: 2, reset_on_submit: false };
        let (pg, mut s) = setup(&["12", "34"], [2, 2], &["12", "34"], [2, 2], 2);
        assert_eq!(table.apply(&mut s, O2arcOp::Submit, &NONE, &pg), (1.0, true));
        assert_eq!((s.trials, s.submit_count), (1, 1));

        // Same cells, wrong dims: not solved.
        let (pg, mut s) = setup(&["12", "34"], [2, 3], &["12", "34"], [2, 2], 2);
        assert_eq!(table.apply(&mut s, O2arcOp::Submit, &NONE, &pg), (0.0, false));
        assert_eq!(table.apply(&mut s, O2arcOp::Submit, &NONE, &pg), (0.0, true), "out of trials");
        assert_eq!(table.apply(&mut s, O2arcOp::Submit, &NONE, &pg), (0.0, true), "sticky");
        assert_eq!((s.trials, s.submit_count), (0, 2));
        assert_eq!(table.apply(&mut s, O2arcOp::Color(1), &NONE, &pg), (0.0, true));

        // Unlimited trials (-1) never run out.
        let (pg, mut s) = setup(&["1"], [1, 1], &["2"], [1, 1], -1);
        let table = O2arcTable { max_trials: -1, reset_on_submit: false };
        for _ in 0..5 {
            assert_eq!(table.apply(&mut s, O2arcOp::Submit, &NONE, &pg), (0.0, false));
        }
        assert_eq!(s.submit_count, 5);
    }

    /// Object ops on a 2 × 2 object `12/34` at (1, 1) against their definitions: `np.rot90`
    /// (k = 1 gives `24/13`), `fliplr` (`21/43`), `flipud` (`34/12`) and a move right that
    /// leaves black behind; an op with an empty selection acts on the stored object, so a
    /// turn and its inverse, a flip twice and a move and its opposite restore the grid.
    #[test]
    fn object_ops_transform_and_round_trip() {
        let start = ["0000", "0120", "0340", "0000"];
        let (pg, s0) = setup(&start, [4, 4], &start, [4, 4], -1);
        let t = O2arcTable { max_trials: -1, reset_on_submit: false };
        let obj = grid::rect::<4>(1, 2, 1, 2);
        let cases = [
            (O2arcOp::Rotate90, O2arcOp::Rotate270, ["0000", "0240", "0130", "0000"]),
            (O2arcOp::Rotate270, O2arcOp::Rotate90, ["0000", "0310", "0420", "0000"]),
            (O2arcOp::FlipH, O2arcOp::FlipH, ["0000", "0210", "0430", "0000"]),
            (O2arcOp::FlipV, O2arcOp::FlipV, ["0000", "0340", "0120", "0000"]),
            (O2arcOp::MoveR, O2arcOp::MoveL, ["0000", "0012", "0034", "0000"]),
            (O2arcOp::MoveU, O2arcOp::MoveD, ["0120", "0340", "0000", "0000"]),
        ];
        for (op, inverse, want) in cases {
            let mut s = s0.clone();
            t.apply(&mut s, op, &obj, &pg);
            assert_eq!(s.grid, canvas::<4>(&want), "{op:?}");
            assert!(s.object.active, "{op:?} starts object mode");
            t.apply(&mut s, inverse, &NONE, &pg);
            assert_eq!(s.grid, s0.grid, "{op:?} then {inverse:?} on the stored object");
        }
    }

    /// Copy, paste, colour and resize at the edges: CopyO takes the selection's non-black
    /// cells top-left aligned, and refuses a bbox more than one row past the dims; Paste
    /// writes the clipboard (zeros included) and is cut at the canvas; Colour also edits
    /// cells outside the dims, FloodFill does not; ResizeGrid clears and takes the bbox size.
    #[test]
    fn copy_paste_colour_and_resize_follow_arcle_at_the_edges() {
        let (pg, s0) = setup(&["12", "30"], [2, 2], &["0"], [1, 1], -1);
        let t = O2arcTable { max_trials: -1, reset_on_submit: false };
        let mut s = s0.clone();
        t.apply(&mut s, O2arcOp::CopyO, &grid::rect(0, 1, 0, 1), &pg);
        assert_eq!((s.clip, s.clip_dim), (canvas(&["12", "30"]), [2, 2]));
        t.apply(&mut s, O2arcOp::Paste, &grid::rect(2, 2, 1, 1), &pg);
        assert_eq!(s.grid, canvas(&["12", "30", "012", "030"]));
        t.apply(&mut s, O2arcOp::Paste, &grid::rect(3, 3, 3, 3), &pg);
        assert_eq!(s.grid[3], [0, 3, 0, 1], "only the clipboard's top-left fits the canvas");

        let mut s = s0.clone();
        let before = s.clip;
        t.apply(&mut s, O2arcOp::CopyO, &grid::rect(3, 3, 0, 0), &pg);
        assert_eq!((s.clip, s.clip_dim), (before, [0, 0]), "row 3 is two past 2 rows");
        t.apply(&mut s, O2arcOp::CopyI, &grid::rect(1, 2, 0, 0), &pg);
        assert_eq!(
            (s.clip[0][0], s.clip[1][0], s.clip_dim),
            (3, 0, [2, 1]),
            "one row past is allowed"
        );

        let mut s = s0.clone();
        t.apply(&mut s, O2arcOp::Color(7), &grid::rect(3, 3, 3, 3), &pg);
        assert_eq!(s.grid[3][3], 7, "outside the 2 × 2 dims");
        t.apply(&mut s, O2arcOp::FloodFill(5), &grid::rect(3, 3, 3, 3), &pg);
        assert_eq!(s.grid[3][3], 7, "flood fill starts inside the dims only");
        t.apply(&mut s, O2arcOp::FloodFill(5), &grid::rect(1, 1, 1, 1), &pg);
        assert_eq!(s.grid, canvas(&["12", "35", "", "0007"]), "the one black cell is its region");
        t.apply(&mut s, O2arcOp::ResizeGrid, &grid::rect(0, 2, 1, 3), &pg);
        assert_eq!((s.grid, s.dims), ([[0; 4]; 4], [3, 3]));
    }
}
