//! The `jaxarc` op table: JaxARC 1.0.3 operations (`envs/grid_operations.py`) and rewards,
//! with their names ([`JAXARC_OPS`]), the decoded op ([`JaxarcOp`]), the reward weights
//! ([`JaxRewards`]) and each JaxARC bug behind a flag of [`JaxBugs`] (see
//! `reference/arc.md` §1.12). Padding is -1 outside the working area.
//!
//! Reference: JaxARC, arXiv:2601.17564 (<https://github.com/aadimator/JaxARC>).

use crate::grid::{self, Grid, Mask};
use crate::ops::{NUM_OPS, OpTable};
use crate::state::{ArcState, PairGrids};

/// Operation names of the `jaxarc` table (JaxARC 1.0.3), indexed by op id.
pub const JAXARC_OPS: [&str; NUM_OPS as usize] = [
    "Fill0",
    "Fill1",
    "Fill2",
    "Fill3",
    "Fill4",
    "Fill5",
    "Fill6",
    "Fill7",
    "Fill8",
    "Fill9",
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
    "MoveUp",
    "MoveDown",
    "MoveLeft",
    "MoveRight",
    "RotateCW",
    "RotateCCW",
    "FlipH",
    "FlipV",
    "Copy",
    "Paste",
    "Cut",
    "Clear",
    "CopyInput",
    "Resize",
    "Submit",
];

/// One `jaxarc` operation; the variants are in op-id order and named as in [`JAXARC_OPS`]
/// (up to the case of `CW`/`CCW`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JaxarcOp {
    /// Ops 0–9: colour the selected cells.
    Fill(i8),
    /// Ops 10–19: flood-fill the region around the one selected cell.
    FloodFill(i8),
    /// Op 20: shift the bbox content up (cyclic).
    MoveUp,
    /// Op 21: shift the bbox content down.
    MoveDown,
    /// Op 22: shift the bbox content left.
    MoveLeft,
    /// Op 23: shift the bbox content right.
    MoveRight,
    /// Op 24: rotate a square bbox clockwise.
    RotateCw,
    /// Op 25: rotate a square bbox counter-clockwise.
    RotateCcw,
    /// Op 26: mirror the bbox left–right.
    FlipH,
    /// Op 27: mirror the bbox top–bottom.
    FlipV,
    /// Op 28: copy the selected cells into the clipboard.
    Copy,
    /// Op 29: paste the clipboard into the selected cells.
    Paste,
    /// Op 30: copy, then clear the selected cells.
    Cut,
    /// Op 31: clear the selection (the working area when none).
    Clear,
    /// Op 32: the working grid becomes the input.
    CopyInput,
    /// Op 33: resize the working area to the selection's bottom-right corner.
    Resize,
    /// Op 34: submit the working grid (ends the episode).
    Submit,
}

impl JaxarcOp {
    /// The op with id `op`, or `None` outside 0–34.
    #[inline]
    pub const fn from_index(op: i32) -> Option<Self> {
        use JaxarcOp::*;
        Some(match op {
            0..=9 => Fill(op as i8),
            10..=19 => FloodFill((op - 10) as i8),
            20 => MoveUp,
            21 => MoveDown,
            22 => MoveLeft,
            23 => MoveRight,
            24 => RotateCw,
            25 => RotateCcw,
            26 => FlipH,
            27 => FlipV,
            28 => Copy,
            29 => Paste,
            30 => Cut,
            31 => Clear,
            32 => CopyInput,
            33 => Resize,
            34 => Submit,
            _ => return None,
        })
    }

    /// The op's id.
    pub const fn index(self) -> i32 {
        use JaxarcOp::*;
        match self {
            Fill(c) => c as i32,
            FloodFill(c) => 10 + c as i32,
            MoveUp => 20,
            MoveDown => 21,
            MoveLeft => 22,
            MoveRight => 23,
            RotateCw => 24,
            RotateCcw => 25,
            FlipH => 26,
            FlipV => 27,
            Copy => 28,
            Paste => 29,
            Cut => 30,
            Clear => 31,
            CopyInput => 32,
            Resize => 33,
            Submit => 34,
        }
    }
}

/// JaxARC reward weights. `Default` is JaxARC's Hydra `reward/training.yaml`.
#[derive(
    Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct JaxRewards {
    /// Added every step.
    #[serde(serialize_with = "short_f32")]
    pub step_penalty: f32,
    /// Added on a solved Submit.
    #[serde(serialize_with = "short_f32")]
    pub success_bonus: f32,
    /// Added on an unsolved Submit.
    #[serde(serialize_with = "short_f32")]
    pub unsolved_submission_penalty: f32,
    /// Weight of the similarity improvement (train split only).
    #[serde(serialize_with = "short_f32")]
    pub similarity_weight: f32,
}

/// An `f32` written as the shortest decimal that reads back as it (`-0.005`, not the f64
/// `-0.004999999888241291` a plain widening prints in a config).
pub(crate) fn short_f32<S: serde::Serializer>(v: &f32, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(v.to_string().parse().unwrap_or(f64::from(*v)))
}

impl Default for JaxRewards {
    fn default() -> Self {
        JaxRewards {
            step_penalty: -0.005,
            success_bonus: 10.0,
            unsolved_submission_penalty: -1.0,
            similarity_weight: 1.0,
        }
    }
}

/// JaxARC 1.0.3 bugs (`reference/arc.md` §1.12), each fixed by default and switchable back
/// on to replicate published JaxARC results. [`JaxBugs::all`] turns every one on.
/// (JaxARC's recompiles and wrong `discount` have no counterpart: Kestrel compiles nothing
/// and keeps `terminated` and `truncated` apart.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JaxBugs {
    /// Ops 20–23 move content opposite to their names.
    pub inverted_moves: bool,
    /// Rotation turns about the canvas centre instead of the bbox.
    pub canvas_rotation: bool,
    /// Resize takes the selection after masking, so it can only shrink.
    pub shrink_only_resize: bool,
    /// Flood fill stops after 64 dilation steps and ignores the working mask.
    pub flood_fill_cap: bool,
    /// The start grid is a random train input, not the episode pair's input (empty and
    /// random starts: training pair 0's area; [`GridInit`](crate::init::GridInit)).
    pub wrong_pair_init: bool,
    /// On the test split the target is empty, so no Submit can succeed.
    pub eval_no_success: bool,
    /// Similarity only checks the target's top-left rectangle (a larger grid can score 1).
    pub top_left_similarity: bool,
    /// Clear with an empty selection zeroes the whole canvas, padding included.
    pub clear_overwrites_padding: bool,
    /// Copy-input keeps the old working mask (so -1 padding can enter the working area).
    pub copy_input_keeps_mask: bool,
    /// Rotation and reflection starts turn the whole canvas, the working area staying put.
    pub init_canvas_transform: bool,
    /// Empty and random starts write 0 into the padding; a colour-permutation start maps
    /// the padding as colour 0.
    pub init_zero_padding: bool,
    /// A permutation start draws its transform from all three kinds, one not in
    /// `permutation_types` leaving the grid unchanged.
    pub permutation_pick_all: bool,
}

impl JaxBugs {
    /// Every JaxARC 1.0.3 bug switched on (bit-compatible with the package).
    pub const fn all() -> Self {
        JaxBugs {
            inverted_moves: true,
            canvas_rotation: true,
            shrink_only_resize: true,
            flood_fill_cap: true,
            wrong_pair_init: true,
            eval_no_success: true,
            top_left_similarity: true,
            clear_overwrites_padding: true,
            copy_input_keeps_mask: true,
            init_canvas_transform: true,
            init_zero_padding: true,
            permutation_pick_all: true,
        }
    }
}

/// The `jaxarc` table with the [`ArcParams`](crate::env::ArcParams) settings it reads.
///
/// An op id outside 0–34 is clipped to it, as JaxARC does. Reward per step:
/// `step_penalty`, plus the similarity improvement times `similarity_weight` (train split
/// only), plus `success_bonus` on a solved Submit or `unsolved_submission_penalty` on an
/// unsolved one. Every Submit terminates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JaxarcTable {
    /// Reward weights.
    pub rewards: JaxRewards,
    /// Bug switches.
    pub bugs: JaxBugs,
    /// Whether the episode is on the train split (the similarity term counts).
    pub train: bool,
}

impl OpTable for JaxarcTable {
    type Op = JaxarcOp;

    const NAMES: [&'static str; NUM_OPS as usize] = JAXARC_OPS;

    #[inline]
    fn decode(op: i32) -> Option<JaxarcOp> {
        JaxarcOp::from_index(op.clamp(0, NUM_OPS - 1))
    }

    fn index(op: JaxarcOp) -> i32 {
        op.index()
    }

    fn is_submit(op: JaxarcOp) -> bool {
        op == JaxarcOp::Submit
    }

    #[inline]
    fn apply<const S: usize>(
        &self,
        s: &mut ArcState<S>,
        op: JaxarcOp,
        sel: &Mask<S>,
        pair: &PairGrids<S>,
    ) -> (f32, bool) {
        let old = s.similarity;
        edit(s, op, sel, pair, &self.bugs);
        s.similarity = state_similarity(s, pair, &self.bugs);
        let submit = op == JaxarcOp::Submit;
        let solved = submit && s.similarity >= 1.0;
        let r = &self.rewards;
        let bonus = if solved { r.success_bonus } else { 0.0 };
        let penalty = if submit && !solved { r.unsolved_submission_penalty } else { 0.0 };
        let reward = if self.train {
            r.similarity_weight * (s.similarity - old) + r.step_penalty + bonus + penalty
        } else {
            r.step_penalty + bonus + penalty
        };
        (reward, submit)
    }
}

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
fn similarity<const S: usize>(
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

/// Applies `op` to the grid. `raw` is the action's selection on the canvas; JaxARC ANDs
/// it with the working mask first.
fn edit<const S: usize>(
    s: &mut ArcState<S>,
    op: JaxarcOp,
    raw: &Mask<S>,
    pair: &PairGrids<S>,
    bugs: &JaxBugs,
) {
    use JaxarcOp::*;
    let (h, w) = (s.dims[0] as usize, s.dims[1] as usize);
    let wm = grid::top_left::<S>(h, w);
    let sel = grid::and(raw, &wm);
    s.selected = sel;
    let eff = || if grid::any(&sel) { sel } else { wm };
    match op {
        Fill(c) => grid::fill(&mut s.grid, &sel, c),
        FloodFill(c) if grid::count(&sel) == 1 => {
            let (r, col) = grid::first(&sel).unwrap_or((0, 0));
            let (allowed, iters) =
                if bugs.flood_fill_cap { ([grid::row_bits::<S>(); S], 64) } else { (wm, u32::MAX) };
            let region = grid::flood_region(&s.grid, &allowed, r, col, iters);
            grid::fill(&mut s.grid, &region, c);
        }
        MoveUp | MoveDown | MoveLeft | MoveRight => {
            if let Some(b) = grid::bbox(&eff()) {
                // Content direction as named.
                let (dr, dc) = match op {
                    MoveUp => (-1, 0),
                    MoveDown => (1, 0),
                    MoveLeft => (0, -1),
                    _ => (0, 1),
                };
                let m = if bugs.inverted_moves { -1 } else { 1 };
                shift(&mut s.grid, b, dr * m, dc * m);
            }
        }
        RotateCw | RotateCcw => {
            if let Some(b @ (r0, r1, c0, c1)) = grid::bbox(&eff())
                && r1 - r0 == c1 - c0
            {
                let cw = op == RotateCw;
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
        FlipH | FlipV => {
            if let Some(b @ (r0, r1, c0, c1)) = grid::bbox(&eff()) {
                if op == FlipH {
                    write_bbox(&mut s.grid, b, |o, r, c| o[r][c1 + c0 - c]);
                } else {
                    write_bbox(&mut s.grid, b, |o, r, c| o[r1 + r0 - r][c]);
                }
            }
        }
        Copy | Cut => {
            for r in 0..S {
                for c in 0..S {
                    s.clip[r][c] = if grid::get(&sel, r, c) { s.grid[r][c] } else { 0 };
                }
            }
            if op == Cut {
                grid::fill(&mut s.grid, &sel, 0);
            }
        }
        Paste => paste(s, &sel),
        Clear => {
            if grid::any(&sel) {
                grid::fill(&mut s.grid, &sel, 0);
            } else if bugs.clear_overwrites_padding {
                s.grid = [[0; S]; S];
            } else {
                grid::fill(&mut s.grid, &wm, 0);
            }
        }
        CopyInput => {
            s.grid = pair.input;
            let (ih, iw) = (pair.in_dims[0] as usize, pair.in_dims[1] as usize);
            grid::fill_outside(&mut s.grid, ih, iw, -1);
            if !bugs.copy_input_keeps_mask {
                s.dims = pair.in_dims;
            }
        }
        Resize => {
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
        FloodFill(_) | Submit => {} // flood fill without exactly one cell; submit: grid unchanged
    }
}

/// Similarity of `s` to its pair's target (the empty target when `s.empty_target`).
#[inline]
pub(crate) fn state_similarity<const S: usize>(
    s: &ArcState<S>,
    pair: &PairGrids<S>,
    bugs: &JaxBugs,
) -> f32 {
    let td = if s.empty_target { [0, 0] } else { pair.out_dims };
    similarity(&s.grid, s.dims, &pair.output, td, bugs)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{ArcEnv, ArcParams};
    use crate::task::{GridData, Pair, Task, TaskBank};
    use kestrel_core::Key;
    use std::sync::Arc;

    /// A canvas grid from digit rows (the rest 0).
    fn grid<const S: usize>(rows: &[&str]) -> Grid<S> {
        let mut g = [[0; S]; S];
        for (r, row) in rows.iter().enumerate() {
            for (c, b) in row.bytes().enumerate() {
                g[r][c] = (b - b'0') as i8;
            }
        }
        g
    }

    /// Similarity is matches over the union of the working and target areas: a 2 × 3 working
    /// grid that matches 3 of a 2 × 2 target's cells scores 3 / (4 + 6 − 4) = 0.5, or 3 / 4
    /// when only the target's rectangle counts (`top_left_similarity`); an empty target
    /// scores 1 only against an empty working area.
    #[test]
    fn similarity_is_matches_over_the_union_of_areas() {
        let target = grid::<4>(&["12", "34"]);
        let work = grid::<4>(&["120", "300"]);
        let fixed = JaxBugs::default();
        let bug = JaxBugs { top_left_similarity: true, ..JaxBugs::default() };
        assert_eq!(similarity(&work, [2, 3], &target, [2, 2], &fixed), 0.5);
        assert_eq!(similarity(&work, [2, 3], &target, [2, 2], &bug), 0.75);
        assert_eq!(similarity(&target, [2, 2], &target, [2, 2], &fixed), 1.0);
        // A larger grid containing the target scores 1 only with the bug.
        let big = grid::<4>(&["120", "340", "000"]);
        assert_eq!(similarity(&big, [3, 3], &target, [2, 2], &bug), 1.0);
        assert_eq!(similarity(&big, [3, 3], &target, [2, 2], &fixed), 4.0 / 9.0);
        assert_eq!(similarity(&work, [2, 3], &target, [0, 0], &fixed), 0.0);
        assert_eq!(similarity(&work, [0, 0], &target, [0, 0], &fixed), 1.0);
    }

    /// Moves are cyclic inside the bbox and leave the rest alone (right: `abc` → `cab`),
    /// opposite moves undo each other, four quarter turns and a turn and its inverse are the
    /// identity, and about a bbox centred on the canvas the buggy canvas rotation agrees
    /// with the bbox rotation.
    #[test]
    fn moves_and_rotations_round_trip_inside_the_bbox() {
        let g0 = grid::<5>(&["12345", "67891", "23456", "78912", "34567"]);
        let b = (0, 1, 0, 2);
        let mut g = g0;
        shift(&mut g, b, 0, 1);
        assert_eq!(g[0][..], [3, 1, 2, 4, 5]);
        assert_eq!(g[1][..], [8, 6, 7, 9, 1]);
        assert_eq!(g[2..], g0[2..]);
        shift(&mut g, b, 0, -1);
        assert_eq!(g, g0);
        shift(&mut g, b, 1, 0);
        assert_eq!((&g[0][..3], &g[1][..3]), (&g0[1][..3], &g0[0][..3]), "two rows swap");
        shift(&mut g, b, -1, 0);
        assert_eq!(g, g0);

        let bugs = JaxBugs::default();
        let sq = grid::rect::<5>(1, 3, 1, 3);
        let pg = PairGrids { input: g0, in_dims: [5, 5], output: g0, out_dims: [5, 5] };
        let mut s = ArcState::new(0, 0, false, &pg, -1);
        edit(&mut s, JaxarcOp::RotateCw, &grid::rect::<5>(0, 1, 0, 1), &pg, &bugs);
        assert_eq!(
            (&s.grid[0][..2], &s.grid[1][..2]),
            (&[6, 1][..], &[7, 2][..]),
            "12/67 turns to 61/72"
        );
        s.grid = g0;
        edit(&mut s, JaxarcOp::RotateCw, &sq, &pg, &bugs);
        assert_ne!(s.grid, g0);
        let once = s.grid;
        edit(&mut s, JaxarcOp::RotateCcw, &sq, &pg, &bugs);
        assert_eq!(s.grid, g0, "counter-clockwise undoes clockwise");
        for _ in 0..4 {
            edit(&mut s, JaxarcOp::RotateCw, &sq, &pg, &bugs);
        }
        assert_eq!(s.grid, g0, "four quarter turns");
        let canvas = JaxBugs { canvas_rotation: true, ..bugs };
        edit(&mut s, JaxarcOp::RotateCw, &sq, &pg, &canvas);
        assert_eq!(s.grid, once, "a centred bbox turns the same about the canvas centre");
    }

    /// The reward of the train split is `similarity gain + step penalty` (+ success bonus on a
    /// solved Submit), of the test split the penalty and bonuses only; every Submit
    /// terminates; op ids outside 0–34 clip to Fill0 and Submit.
    #[test]
    fn reward_is_similarity_gain_step_penalty_and_submit_terms() {
        let data = |rows: &[&[u8]]| {
            GridData::from_rows(&rows.iter().map(|r| r.to_vec()).collect::<Vec<_>>())
        };
        let p = Pair { input: data(&[&[1, 0], &[0, 0]]), output: data(&[&[1, 2], &[0, 0]]) };
        let t =
            Task { id: "t".into(), group: String::new(), train: vec![p.clone()], test: vec![p] };
        let env = ArcEnv::<4>::new(Arc::new(TaskBank::from_tasks(vec![t]))).unwrap();
        let params = ArcParams::jaxarc();
        let pg = env.pair_grids(0, 0, false).clone();
        let mut s = env.init_state(&params, 0, 0, false, Key::new(0));
        assert_eq!(s.similarity, 0.75, "3 of 4 cells match");
        assert_eq!(s.grid[0][2], -1, "padding outside the working area");
        let train = params.jaxarc_table();
        let test = JaxarcTable { train: false, ..train };
        let point = grid::rect::<4>(0, 0, 1, 1);
        let (r, done) = train.apply(&mut s.clone(), JaxarcOp::Fill(2), &point, &pg);
        assert!((r - (0.25 - 0.005)).abs() < 1e-6 && !done, "{r}");
        let (r, _) = test.apply(&mut s.clone(), JaxarcOp::Fill(2), &point, &pg);
        assert!((r + 0.005).abs() < 1e-7, "{r}");
        let (r, done) = train.apply(&mut s.clone(), JaxarcOp::Submit, &[0; 4], &pg);
        assert!((r - (-0.005 - 1.0)).abs() < 1e-6 && done, "unsolved submit: {r}");
        train.apply(&mut s, JaxarcOp::Fill(2), &point, &pg);
        let (r, done) = train.apply(&mut s, JaxarcOp::Submit, &[0; 4], &pg);
        assert!((r - (-0.005 + 10.0)).abs() < 1e-6 && done, "solved submit: {r}");
        assert_eq!(JaxarcTable::decode(-3), Some(JaxarcOp::Fill(0)));
        assert_eq!(JaxarcTable::decode(99), Some(JaxarcOp::Submit));
        for op in 0..NUM_OPS {
            assert_eq!(JaxarcOp::from_index(op).map(JaxarcOp::index), Some(op), "id round trip");
        }
    }
}
