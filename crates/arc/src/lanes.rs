//! The structure-of-arrays ARC kernel for small canvases (`S ≤ 10`): [`ArcLanes`], a batch
//! of `jaxarc` envs stepped in blocks of [`LANES`] envs, one SIMD lane per env.
//!
//! Every cell of a block is a column of 64 bytes (`grid[r][c][lane]`), every selection row a
//! column of 64 `u16` bit rows, and every per-env scalar (op, dims, bbox, similarity) a
//! column of 64 values. A step computes each op's result for every lane and keeps the
//! lane's own with lane-wise selects: there is no per-env branch on the op. Ops that move
//! cells (moves, flips, rotations, paste) share one remap, `out[r][c] = src[ri(r)][ci(c)]`
//! with lane-wise row and column indices over the grid, its transpose or the clipboard, done
//! as two select passes (`2·S³` byte selects per block). Flood fill is a lane-wise bitmask
//! dilation. Everything is compiled by [`kestrel_core::simd::dispatch`] for the best vector
//! extension the CPU has; values do not depend on it.
//!
//! [`ArcLanes`] is the batched driver of these blocks: the same keys, auto-reset modes and
//! columns as [`VecEnv`](kestrel_core::VecEnv) over [`ArcEnv`], with the same results bit
//! for bit (`tests/lanes.rs`: every op, every bug switch, every selection form, both splits,
//! both layouts, all three auto-reset modes, 1 and 2 threads). Resets (about one step in
//! thirty under random actions) go one env at a time: a copy of a start state built once
//! per (task, pair, start source) up to [`MAX_START_STATES`], else [`ArcEnv::reset`]; the
//! `full` layout's extra fields go through [`ArcEnv`] itself. `o2arc` mode is not laned
//! (its object state machine runs per env): [`ArcLanes::new`] refuses it, and small `o2arc`
//! canvases run on `VecEnv`.

use crate::action::{ArcAction, SelKind};
use crate::env::{ArcEnv, ArcParams, ModeKind, SplitKind};
use crate::error::ArcError;
use crate::init::Start;
use crate::jaxarc::{JaxBugs, JaxRewards, JaxarcTable};
use crate::obs::LayoutKind;
use crate::ops::NUM_OPS;
use crate::state::{ArcState, PairGrids};
use kestrel_core::simd::{Simd, WithSimd, dispatch, for_each_bit_row};
use kestrel_core::{
    AutoReset, BatchEnv, CoreError, Env, FromInvalid, Key, Rng, StepKeys, Trajectory, end_episode,
};
use rayon::prelude::*;

/// Envs per block (one byte lane each in a 512-bit register).
pub const LANES: usize = 64;
const L: usize = LANES;

/// Largest canvas side [`ArcLanes`] takes (row bits fit a `u16`).
pub const MAX_LANE_SIDE: usize = 10;

/// One byte per cell per lane.
type Plane<const S: usize> = [[[i8; L]; S]; S];
/// One bit row per row per lane.
type Rows<const S: usize> = [[u16; L]; S];

/// The state of [`LANES`] envs, structure of arrays, plus the step's inputs and outputs.
#[derive(Clone)]
struct Block<const S: usize> {
    grid: Plane<S>,
    clip: Plane<S>,
    /// The pair's input padded with -1 beyond its dims (CopyInput's grid).
    input: Plane<S>,
    /// The pair's output (0 beyond its dims).
    target: Plane<S>,
    selected: Rows<S>,
    h: [u8; L],
    w: [u8; L],
    in_h: [u8; L],
    in_w: [u8; L],
    out_h: [u8; L],
    out_w: [u8; L],
    empty: [bool; L],
    sim: [f32; L],
    steps: [u32; L],
    task: [u32; L],
    pair: [u16; L],
    test: [bool; L],
    /// The step's op ids (clipped to 0–34) and raw selections (clipped to the canvas).
    op: [u8; L],
    raw: Rows<S>,
    /// Scratch of [`LaneActions::set_masks`]: each lane's selection as one word.
    words: [u64; L],
    /// The step's rewards and terminations.
    reward: [f32; L],
    term: [bool; L],
}

impl<const S: usize> Block<S> {
    fn new() -> Box<Self> {
        Box::new(Block {
            grid: [[[0; L]; S]; S],
            clip: [[[0; L]; S]; S],
            input: [[[0; L]; S]; S],
            target: [[[0; L]; S]; S],
            selected: [[0; L]; S],
            h: [0; L],
            w: [0; L],
            in_h: [0; L],
            in_w: [0; L],
            out_h: [0; L],
            out_w: [0; L],
            empty: [false; L],
            sim: [0.0; L],
            steps: [0; L],
            task: [0; L],
            pair: [0; L],
            test: [false; L],
            op: [NUM_OPS as u8 - 1; L],
            raw: [[0; L]; S],
            words: [0; L],
            reward: [0.0; L],
            term: [false; L],
        })
    }

    /// Lane `l` takes state `s` of pair `pg`.
    fn load(&mut self, l: usize, s: &ArcState<S>, pg: &PairGrids<S>) {
        let (ih, iw) = (pg.in_dims[0] as usize, pg.in_dims[1] as usize);
        for r in 0..S {
            for c in 0..S {
                self.grid[r][c][l] = s.grid[r][c];
                self.clip[r][c][l] = s.clip[r][c];
                self.input[r][c][l] = if r < ih && c < iw { pg.input[r][c] } else { -1 };
                self.target[r][c][l] = pg.output[r][c];
            }
            self.selected[r][l] = s.selected[r] as u16;
        }
        [self.h[l], self.w[l]] = s.dims;
        [self.in_h[l], self.in_w[l]] = pg.in_dims;
        [self.out_h[l], self.out_w[l]] = pg.out_dims;
        self.empty[l] = s.empty_target;
        self.sim[l] = s.similarity;
        self.steps[l] = s.steps;
        self.task[l] = s.task;
        self.pair[l] = s.pair;
        self.test[l] = s.test;
    }

    /// Lane `l`'s action.
    #[inline]
    fn set_action(&mut self, l: usize, a: &ArcAction<S>) {
        self.op[l] = a.op.clamp(0, NUM_OPS - 1) as u8;
        let m = a.sel.to_mask();
        for r in 0..S {
            self.raw[r][l] = m[r] as u16;
        }
    }
}

/// Lane-wise select by bit masks (`m ? a : b`): written so that a lane loop stays a vector
/// blend instead of a branch or a pointer select.
trait Pick: Copy {
    fn pick(m: bool, a: Self, b: Self) -> Self;
}

macro_rules! impl_pick {
    ($($t:ty),*) => {$(
        impl Pick for $t {
            #[inline(always)]
            fn pick(m: bool, a: $t, b: $t) -> $t {
                let k = (m as $t).wrapping_neg();
                (a & k) | (b & !k)
            }
        }
    )*};
}
impl_pick!(i8, u8, i16, u16, u32);

impl Pick for bool {
    #[inline(always)]
    fn pick(m: bool, a: bool, b: bool) -> bool {
        (m & a) | (!m & b)
    }
}

#[inline(always)]
fn pick<T: Pick>(m: bool, a: T, b: T) -> T {
    T::pick(m, a, b)
}

/// `v` as a cell index (255, which matches no cell, outside the canvas).
#[inline(always)]
fn ix<const S: usize>(v: i16) -> u8 {
    pick((v >= 0) & (v < S as i16), v as u8, 255)
}

/// An affine lane-wise index `a ± i`, with one wrapped position (`at → to`; `at = 255` for
/// none): how the remap reads rows (or columns) of its source.
#[derive(Clone, Copy)]
struct Axis {
    a: [i16; L],
    neg: [bool; L],
    at: [u8; L],
    to: [u8; L],
}

impl Axis {
    /// The index of every position `0..S`, per lane.
    #[inline(always)]
    fn indices<const S: usize>(&self) -> [[u8; L]; S] {
        let mut out = [[0u8; L]; S];
        for (i, o) in out.iter_mut().enumerate() {
            self.index::<S>(i, o);
        }
        out
    }

    #[inline(always)]
    fn index<const S: usize>(&self, i: usize, out: &mut [u8; L]) {
        for l in 0..L {
            let v = self.a[l] + pick(self.neg[l], -(i as i16), i as i16);
            out[l] = pick(self.at[l] == i as u8, self.to[l], ix::<S>(v));
        }
    }
}

/// Which lanes' op writes what, decided once per lane before the cell pass.
mod kind {
    /// Grid unchanged.
    pub const NONE: u8 = 0;
    /// A constant into the selected cells.
    pub const SEL: u8 = 1;
    /// A constant into the flood region.
    pub const REGION: u8 = 2;
    /// A constant into every cell (JaxARC's Clear of the whole canvas).
    pub const ALL: u8 = 3;
    /// A constant into the working area.
    pub const WORK: u8 = 4;
    /// The remap, clipped at 0, inside the bbox (moves, flips, bbox rotation).
    pub const BBOX: u8 = 5;
    /// JaxARC's canvas rotation merged over the grid with the bbox cleared.
    pub const CANVAS: u8 = 6;
    /// The remapped clipboard into the selected cells (paste).
    pub const PASTE: u8 = 7;
    /// The padded input (copy-input).
    pub const INPUT: u8 = 8;
    /// Resize to `nh × nw`.
    pub const RESIZE: u8 = 9;
}

/// One `jaxarc` step of a block (dispatched).
struct JaxStep<'a, const S: usize> {
    b: &'a mut Block<S>,
    bugs: JaxBugs,
    rewards: JaxRewards,
    train: bool,
}

impl<const S: usize> WithSimd for JaxStep<'_, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: Simd>(self, _simd: Sd) {
        jax_step(self.b, &self.bugs, &self.rewards, self.train);
    }
}

/// Per lane, the lowest `i < n` with `has(i, lane)` (`n` when none).
#[inline(always)]
fn first_of(n: usize, has: impl Fn(usize, usize) -> bool) -> [u8; L] {
    let mut lo = [n as u8; L];
    for i in (0..n).rev() {
        for l in 0..L {
            lo[l] = pick(has(i, l), i as u8, lo[l]);
        }
    }
    lo
}

/// Per lane, the highest `i < n` with `has(i, lane)` (0 when none).
#[inline(always)]
fn last_of(n: usize, has: impl Fn(usize, usize) -> bool) -> [u8; L] {
    let mut hi = [0u8; L];
    for i in 0..n {
        for l in 0..L {
            hi[l] = pick(has(i, l), i as u8, hi[l]);
        }
    }
    hi
}

/// The op ids the lane kernel reads, as JaxARC numbers them ([`JaxarcOp::index`](crate::jaxarc::JaxarcOp::index)): the scalar
/// table's numbering, named once.
mod id {
    use crate::jaxarc::JaxarcOp;

    const fn of(op: JaxarcOp) -> u8 {
        op.index() as u8
    }
    /// Ops `0..FLOOD_FILL` colour the selection with their id.
    pub const FLOOD_FILL: u8 = of(JaxarcOp::FloodFill(0));
    /// Ops `FLOOD_FILL..MOVE_UP` flood-fill with the colour `id - FLOOD_FILL`.
    pub const MOVE_UP: u8 = of(JaxarcOp::MoveUp);
    pub const MOVE_DOWN: u8 = of(JaxarcOp::MoveDown);
    pub const MOVE_LEFT: u8 = of(JaxarcOp::MoveLeft);
    pub const MOVE_RIGHT: u8 = of(JaxarcOp::MoveRight);
    pub const ROTATE_CW: u8 = of(JaxarcOp::RotateCw);
    pub const ROTATE_CCW: u8 = of(JaxarcOp::RotateCcw);
    /// Mirror left–right (the column axis reversed).
    pub const FLIP_H: u8 = of(JaxarcOp::FlipH);
    /// Mirror top–bottom (the row axis reversed).
    pub const FLIP_V: u8 = of(JaxarcOp::FlipV);
    pub const COPY: u8 = of(JaxarcOp::Copy);
    pub const PASTE: u8 = of(JaxarcOp::Paste);
    pub const CUT: u8 = of(JaxarcOp::Cut);
    pub const CLEAR: u8 = of(JaxarcOp::Clear);
    pub const COPY_INPUT: u8 = of(JaxarcOp::CopyInput);
    pub const RESIZE: u8 = of(JaxarcOp::Resize);
    pub const SUBMIT: u8 = of(JaxarcOp::Submit);
}

/// One step of every lane of `b` under JaxARC's rules (`jaxarc.rs` is the specification;
/// `tests/lanes.rs` checks the two agree bit for bit), in the order a reader follows: what is
/// selected ([`Selected::of`]), what each lane's op will do ([`Plan::of`]), the flood regions,
/// the remap of moved cells, the clipboard, the cell pass ([`write_cells`]), the score.
#[inline(always)]
fn jax_step<const S: usize>(b: &mut Block<S>, bugs: &JaxBugs, rw: &JaxRewards, train: bool) {
    let s = Selected::of(b, bugs);
    b.selected = s.sel;
    let p = Plan::of(b, &s, bugs);
    let region = flood_regions(b, &s, &p, bugs);
    let (ri, ci) = (p.ra.indices::<S>(), p.ca.indices::<S>());
    // One plane reused through the remap's passes (a block's step touches its planes in the
    // core's L1 cache: returning fresh planes cost 20% at two threads on one core's pair).
    let mut moved = [[[0i8; L]; S]; S];
    remap(b, &p, &ri, &ci, &mut moved);
    fill_clipboard(b, &s.sel, &p.copy);
    write_cells(b, &s, &p, &region, &ri, &ci, &moved);
    score(b, rw, bugs, train);
}

/// What a block's step reads of its selections: the selection ANDed with the working area,
/// its summaries (count, column bits, bbox), the clipboard's non-zero top-left (paste) and
/// resize's source corner.
struct Selected<const S: usize> {
    /// The working area's row bits.
    wrow: [u16; L],
    /// The selection inside the working area.
    sel: Rows<S>,
    cnt: [u32; L],
    cols: [u16; L],
    sr0: [u8; L],
    sr1: [u8; L],
    sc0: [u8; L],
    sc1: [u8; L],
    /// The clipboard's first non-zero row and column, and its non-zero rows.
    cr: [u8; L],
    cc: [u8; L],
    crow: [u16; L],
    /// Resize's source: its last non-empty row and that row's highest column, and whether
    /// it has any cell.
    rlast: [u8; L],
    clast: [u8; L],
    rany: [bool; L],
}

impl<const S: usize> Selected<S> {
    #[inline(always)]
    fn of(b: &Block<S>, bugs: &JaxBugs) -> Self {
        let mut wrow = [0u16; L];
        for l in 0..L {
            wrow[l] = ((1u32 << b.w[l]) - 1) as u16;
        }
        let mut sel = [[0u16; L]; S];
        for r in 0..S {
            for l in 0..L {
                sel[r][l] = pick((r as u8) < b.h[l], b.raw[r][l] & wrow[l], 0);
            }
        }
        let mut cnt = [0u32; L];
        let mut cols = [0u16; L];
        for row in &sel {
            for l in 0..L {
                cnt[l] += row[l].count_ones();
                cols[l] |= row[l];
            }
        }
        let (sr0, sr1) = (first_of(S, |r, l| sel[r][l] != 0), last_of(S, |r, l| sel[r][l] != 0));
        let (sc0, sc1) =
            (first_of(S, |c, l| cols[l] >> c & 1 != 0), last_of(S, |c, l| cols[l] >> c & 1 != 0));
        let mut crow = [0u16; L];
        let mut ccol = [0u16; L];
        for r in 0..S {
            for c in 0..S {
                for l in 0..L {
                    let nz = (b.clip[r][c][l] != 0) as u16;
                    crow[l] |= nz << r;
                    ccol[l] |= nz << c;
                }
            }
        }
        let cr = first_of(S, |r, l| crow[l] >> r & 1 != 0);
        let cc = first_of(S, |c, l| ccol[l] >> c & 1 != 0);
        let rsrc = if bugs.shrink_only_resize { &sel } else { &b.raw };
        let rlast = last_of(S, |r, l| rsrc[r][l] != 0);
        let mut lastrow = [0u16; L];
        for (r, row) in rsrc.iter().enumerate() {
            for l in 0..L {
                lastrow[l] = pick(rlast[l] == r as u8, row[l], lastrow[l]);
            }
        }
        let clast = last_of(S, |c, l| lastrow[l] >> c & 1 != 0);
        let mut rany = [false; L];
        for row in rsrc {
            for l in 0..L {
                rany[l] |= row[l] != 0;
            }
        }
        Selected { wrow, sel, cnt, cols, sr0, sr1, sc0, sc1, cr, cc, crow, rlast, clast, rany }
    }
}

/// What each lane's op does, decided once per lane before the cell pass: what it writes
/// ([`kind`]) and which constant, the remap's source and axes, the effective bbox, the new
/// dims, and whether it floods or fills the clipboard.
struct Plan {
    k: [u8; L],
    value: [i8; L],
    /// 0 the grid, 1 its transpose, 2 the clipboard.
    src: [u8; L],
    ra: Axis,
    ca: Axis,
    er0: [u8; L],
    er1: [u8; L],
    ec0: [u8; L],
    ec1: [u8; L],
    nh: [u8; L],
    nw: [u8; L],
    flood: [bool; L],
    copy: [bool; L],
}

impl Plan {
    /// Branch-free per lane (picks, not branches, so the loop runs in vector lanes).
    #[inline(always)]
    fn of<const S: usize>(b: &Block<S>, s: &Selected<S>, bugs: &JaxBugs) -> Self {
        let ident = Axis { a: [0; L], neg: [false; L], at: [255; L], to: [0; L] };
        let mut p = Plan {
            k: [kind::NONE; L],
            value: [0; L],
            src: [0; L],
            ra: ident,
            ca: ident,
            er0: [0; L],
            er1: [0; L],
            ec0: [0; L],
            ec1: [0; L],
            nh: [0; L],
            nw: [0; L],
            flood: [false; L],
            copy: [false; L],
        };
        let inv = if bugs.inverted_moves { -1i16 } else { 1 };
        let last = (S - 1) as i16;
        let clear_kind = if bugs.clear_overwrites_padding { kind::ALL } else { kind::WORK };
        for l in 0..L {
            let op = b.op[l];
            let (h, w) = (b.h[l], b.w[l]);
            let any = s.cols[l] != 0;
            // The effective selection's bbox: the selection, else the working area.
            let has_eff = any | ((h > 0) & (w > 0));
            p.er0[l] = pick(any, s.sr0[l], 0);
            p.er1[l] = pick(any, s.sr1[l], h.wrapping_sub(1));
            p.ec0[l] = pick(any, s.sc0[l], 0);
            p.ec1[l] = pick(any, s.sc1[l], w.wrapping_sub(1));
            let (r0, r1) = (p.er0[l] as i16, p.er1[l] as i16);
            let (c0, c1) = (p.ec0[l] as i16, p.ec1[l] as i16);
            let square = r1 - r0 == c1 - c0;
            // Moves: content direction as named, flipped by the bug switch.
            let dr = inv * (pick(op == id::MOVE_DOWN, 1, 0) - pick(op == id::MOVE_UP, 1, 0));
            let dc = inv * (pick(op == id::MOVE_RIGHT, 1, 0) - pick(op == id::MOVE_LEFT, 1, 0));
            let is_move = (id::MOVE_UP..=id::MOVE_RIGHT).contains(&op) & has_eff;
            let is_rot = ((op == id::ROTATE_CW) | (op == id::ROTATE_CCW)) & has_eff & square;
            let cw = op == id::ROTATE_CW;
            let is_flip = ((op == id::FLIP_H) | (op == id::FLIP_V)) & has_eff;
            let paste = (op == id::PASTE) & any & (s.crow[l] != 0);
            let canvas = is_rot & bugs.canvas_rotation;
            let fill = op < id::FLOOD_FILL;
            let fl = (id::FLOOD_FILL..id::MOVE_UP).contains(&op) & (s.cnt[l] == 1);
            p.flood[l] = fl;
            p.copy[l] = (op == id::COPY) | (op == id::CUT);
            let resize = (op == id::RESIZE) & s.rany[l];
            // The op's kind, lowest priority first.
            let mut kl = pick(resize, kind::RESIZE, kind::NONE);
            kl = pick(op == id::COPY_INPUT, kind::INPUT, kl);
            kl = pick(paste, kind::PASTE, kl);
            kl = pick(is_move | is_rot | is_flip, kind::BBOX, kl);
            kl = pick(canvas, kind::CANVAS, kl);
            kl = pick(op == id::CLEAR, clear_kind, kl);
            kl = pick((op == id::CUT) | ((op == id::CLEAR) & any), kind::SEL, kl);
            kl = pick(fl, kind::REGION, kl);
            p.k[l] = pick(fill, kind::SEL, kl);
            // The constant an op writes: its colour, 0 (cut, clear), or -1 (resize's padding).
            let flood_colour = op as i8 - id::FLOOD_FILL as i8;
            let other = pick(op == id::RESIZE, -1, 0);
            p.value[l] = pick(fill, op as i8, pick(op < id::MOVE_UP, flood_colour, other));
            p.src[l] = pick(paste, 2, pick(is_rot, 1, 0));
            // Row axis: ri(r) = a ± r, with the move's wrap.
            let mut a = -dr;
            let mut neg = false;
            a = pick(paste, s.cr[l] as i16 - s.sr0[l] as i16, a);
            (a, neg) = (pick(op == id::FLIP_V, r0 + r1, a), neg | (op == id::FLIP_V));
            let (ba, bn) = (pick(cw, c0 - r0, c0 + r1), !cw);
            let (ka, kn) = (pick(cw, 0, last), !cw);
            let (ra_, rn_) = (pick(canvas, ka, ba), pick(canvas, kn, bn));
            p.ra.a[l] = pick(is_rot, ra_, a);
            p.ra.neg[l] = pick(is_rot, rn_, neg);
            p.ra.at[l] =
                pick(is_move & (dr > 0), p.er0[l], pick(is_move & (dr < 0), p.er1[l], 255));
            p.ra.to[l] = pick(dr > 0, p.er1[l], p.er0[l]);
            // Column axis.
            let mut a = -dc;
            let mut neg = false;
            a = pick(paste, s.cc[l] as i16 - s.sc0[l] as i16, a);
            (a, neg) = (pick(op == id::FLIP_H, c0 + c1, a), neg | (op == id::FLIP_H));
            let (ba, bn) = (pick(cw, r1 + c0, r0 - c0), cw);
            let (ka, kn) = (pick(cw, last, 0), cw);
            let (ca_, cn_) = (pick(canvas, ka, ba), pick(canvas, kn, bn));
            p.ca.a[l] = pick(is_rot, ca_, a);
            p.ca.neg[l] = pick(is_rot, cn_, neg);
            p.ca.at[l] =
                pick(is_move & (dc > 0), p.ec0[l], pick(is_move & (dc < 0), p.ec1[l], 255));
            p.ca.to[l] = pick(dc > 0, p.ec1[l], p.ec0[l]);
            // New dims.
            let input = (op == id::COPY_INPUT) & !bugs.copy_input_keeps_mask;
            p.nh[l] = pick(resize, s.rlast[l] + 1, pick(input, b.in_h[l], h));
            p.nw[l] = pick(resize, s.clast[l] + 1, pick(input, b.in_w[l], w));
        }
        p
    }
}

/// Flood regions: a lane-wise dilation from the one selected cell, only when a lane floods.
#[inline(always)]
fn flood_regions<const S: usize>(
    b: &Block<S>,
    s: &Selected<S>,
    p: &Plan,
    bugs: &JaxBugs,
) -> Rows<S> {
    let full = ((1u32 << S) - 1) as u16;
    let mut region = [[0u16; L]; S];
    if !p.flood.iter().any(|&f| f) {
        return region;
    }
    let mut colour = [0i8; L];
    for r in 0..S {
        for c in 0..S {
            for l in 0..L {
                let at = (s.sr0[l] == r as u8) & (s.sc0[l] == c as u8);
                colour[l] = pick(at, b.grid[r][c][l], colour[l]);
            }
        }
    }
    let mut same = [[0u16; L]; S];
    for r in 0..S {
        for c in 0..S {
            for l in 0..L {
                same[r][l] |= ((b.grid[r][c][l] == colour[l]) as u16) << c;
            }
        }
        for l in 0..L {
            let wm = pick((r as u8) < b.h[l], s.wrow[l], 0);
            same[r][l] &= if bugs.flood_fill_cap { full } else { wm };
            region[r][l] = pick(p.flood[l] & (s.sr0[l] == r as u8), 1 << s.sc0[l], 0);
        }
    }
    let cap = if bugs.flood_fill_cap { 64 } else { u32::MAX };
    let mut it = 0;
    while it < cap {
        let mut next = [[0u16; L]; S];
        let mut changed = 0u16;
        for i in 0..S {
            for l in 0..L {
                let cur = region[i][l];
                let mut v = cur | (cur << 1) | (cur >> 1);
                if i > 0 {
                    v |= region[i - 1][l];
                }
                if i + 1 < S {
                    v |= region[i + 1][l];
                }
                next[i][l] = v & same[i][l] & full;
                changed |= next[i][l] ^ cur;
            }
        }
        region = next;
        it += 1;
        if changed == 0 {
            break;
        }
    }
    region
}

/// The remap into `out`: `out[r][c] = source[ri(r)][ci(c)]`, the source per lane the grid,
/// its transpose or the clipboard (0 where an index is off the canvas), as two select passes.
#[inline(always)]
fn remap<const S: usize>(
    b: &Block<S>,
    p: &Plan,
    ri: &[[u8; L]; S],
    ci: &[[u8; L]; S],
    out: &mut Plane<S>,
) {
    // `out` holds the source until the row pass has read it.
    let source = out;
    for r in 0..S {
        for c in 0..S {
            for l in 0..L {
                let (clip, t, g) = (b.clip[r][c][l], b.grid[c][r][l], b.grid[r][c][l]);
                source[r][c][l] = pick(p.src[l] == 2, clip, pick(p.src[l] == 1, t, g));
            }
        }
    }
    let mut rows = [[[0i8; L]; S]; S];
    for r in 0..S {
        for q in 0..S {
            let mut eq = [false; L];
            for l in 0..L {
                eq[l] = ri[r][l] == q as u8;
            }
            for c in 0..S {
                for l in 0..L {
                    rows[r][c][l] = pick(eq[l], source[q][c][l], rows[r][c][l]);
                }
            }
        }
    }
    let mut ceq = [[[false; L]; S]; S];
    for c in 0..S {
        for q in 0..S {
            for l in 0..L {
                ceq[c][q][l] = ci[c][l] == q as u8;
            }
        }
    }
    let out = source;
    *out = [[[0i8; L]; S]; S];
    for r in 0..S {
        for c in 0..S {
            for q in 0..S {
                for l in 0..L {
                    out[r][c][l] = pick(ceq[c][q][l], rows[r][q][l], out[r][c][l]);
                }
            }
        }
    }
}

/// Copy and cut fill the clipboard from the grid before it changes.
#[inline(always)]
fn fill_clipboard<const S: usize>(b: &mut Block<S>, sel: &Rows<S>, copy: &[bool; L]) {
    for r in 0..S {
        for c in 0..S {
            for l in 0..L {
                let on = sel[r][l] >> c & 1 != 0;
                let v = pick(on, b.grid[r][c][l], 0);
                b.clip[r][c][l] = pick(copy[l], v, b.clip[r][c][l]);
            }
        }
    }
}

/// Every cell: `m1 ? x1 : (m2 ? 0 : old)`, where the lane's op picks which masks make `m1`
/// and `m2` and which value is `x1` (the op's value, the remap, or the input); then the new
/// dims.
#[inline(always)]
fn write_cells<const S: usize>(
    b: &mut Block<S>,
    s: &Selected<S>,
    p: &Plan,
    region: &Rows<S>,
    ri: &[[u8; L]; S],
    ci: &[[u8; L]; S],
    remap: &Plane<S>,
) {
    let full = ((1u32 << S) - 1) as u16;
    let (mut u_sel, mut u_reg, mut u_all, mut u_work) =
        ([false; L], [false; L], [false; L], [false; L]);
    let (mut u_inb, mut u_insrc, mut u_new) = ([false; L], [false; L], [false; L]);
    let (mut u_input, mut u_m, mut u_clamp, mut u_inb0, mut u_kept) =
        ([false; L], [false; L], [false; L], [false; L], [false; L]);
    for l in 0..L {
        let kl = p.k[l];
        u_sel[l] = (kl == kind::SEL) | (kl == kind::PASTE);
        u_reg[l] = kl == kind::REGION;
        u_all[l] = (kl == kind::ALL) | (kl == kind::INPUT);
        u_work[l] = kl == kind::WORK;
        u_inb[l] = kl == kind::BBOX;
        u_insrc[l] = kl == kind::CANVAS;
        u_new[l] = kl == kind::RESIZE;
        u_input[l] = kl == kind::INPUT;
        u_m[l] = (kl == kind::BBOX) | (kl == kind::CANVAS) | (kl == kind::PASTE);
        u_clamp[l] = kl == kind::BBOX;
        u_inb0[l] = kl == kind::CANVAS;
        u_kept[l] = kl == kind::RESIZE;
    }
    // The masks as row bits per lane, so the cell pass tests three bits: `m1` without the
    // canvas rotation's `m > 0` term, that term's area (the rotation's source inside the
    // bbox), and `m2`.
    let bits_below = |n: u8| -> u16 { ((1u32 << n) - 1) as u16 };
    let mut c_in = [0u16; L];
    let mut c_src = [0u16; L];
    let mut c_new = [0u16; L];
    let mut c_kept = [0u16; L];
    for l in 0..L {
        // (`ec1` is 255 for an empty working area: every column.)
        let end = (p.ec1[l] as u16 + 1).min(S as u16) as u8;
        c_in[l] = bits_below(end) & !bits_below(p.ec0[l].min(S as u8));
        c_new[l] = bits_below(p.nw[l]);
        c_kept[l] = bits_below(b.w[l].min(p.nw[l]));
    }
    for (c, ci) in ci.iter().enumerate() {
        for l in 0..L {
            c_src[l] |= (((p.er0[l] <= ci[l]) & (ci[l] <= p.er1[l])) as u16) << c;
        }
    }
    let mut m1row = [[0u16; L]; S];
    let mut srcrow = [[0u16; L]; S];
    let mut m2row = [[0u16; L]; S];
    for r in 0..S {
        let rb = r as u8;
        for l in 0..L {
            let r_in = (p.er0[l] <= rb) & (rb <= p.er1[l]);
            let r_src = (p.ec0[l] <= ri[r][l]) & (ri[r][l] <= p.ec1[l]);
            m1row[r][l] = pick(u_sel[l], s.sel[r][l], 0)
                | pick(u_reg[l], region[r][l], 0)
                | pick(u_all[l], full, 0)
                | pick(u_work[l] & (rb < b.h[l]), s.wrow[l], 0)
                | pick(u_inb[l] & r_in, c_in[l], 0)
                | pick(u_new[l], !pick(rb < p.nh[l], c_new[l], 0), 0);
            srcrow[r][l] = pick(u_insrc[l] & r_src, c_src[l], 0);
            m2row[r][l] = pick(u_inb0[l] & r_in, c_in[l], 0)
                | pick(u_kept[l], !pick(rb < b.h[l].min(p.nh[l]), c_kept[l], 0), 0);
        }
    }
    for r in 0..S {
        for c in 0..S {
            for l in 0..L {
                let old = b.grid[r][c][l];
                let m = remap[r][c][l];
                let m1 = (m1row[r][l] >> c & 1 != 0) | ((srcrow[r][l] >> c & 1 != 0) & (m > 0));
                let x1 = pick(
                    u_input[l],
                    b.input[r][c][l],
                    pick(u_m[l], pick(u_clamp[l], m.max(0), m), p.value[l]),
                );
                let m2 = m2row[r][l] >> c & 1 != 0;
                b.grid[r][c][l] = pick(m1, x1, pick(m2, 0, old));
            }
        }
    }
    b.h = p.nh;
    b.w = p.nw;
}

/// The similarity to the target over the new dims, the reward and termination (Submit ends
/// the episode), and the step count.
#[inline(always)]
fn score<const S: usize>(b: &mut Block<S>, rw: &JaxRewards, bugs: &JaxBugs, train: bool) {
    let (mut th, mut tw, mut mh, mut mw) = ([0u8; L], [0u8; L], [0u8; L], [0u8; L]);
    for l in 0..L {
        th[l] = pick(b.empty[l], 0, b.out_h[l]);
        tw[l] = pick(b.empty[l], 0, b.out_w[l]);
        mh[l] = th[l].min(b.h[l]);
        mw[l] = tw[l].min(b.w[l]);
    }
    let mut matches = [0u8; L];
    for r in 0..S {
        for c in 0..S {
            for l in 0..L {
                let inside = ((r as u8) < mh[l]) & ((c as u8) < mw[l]);
                matches[l] += (inside & (b.grid[r][c][l] == b.target[r][c][l])) as u8;
            }
        }
    }
    for l in 0..L {
        let (th, tw) = (th[l] as u32, tw[l] as u32);
        let (wh, ww) = (b.h[l] as u32, b.w[l] as u32);
        let tt = th * tw;
        let denom =
            if bugs.top_left_similarity { tt } else { tt + wh * ww - th.min(wh) * tw.min(ww) };
        let sim = if tt == 0 {
            if wh * ww > 0 { 0.0 } else { 1.0 }
        } else {
            matches[l] as f32 / denom as f32
        };
        let old = b.sim[l];
        b.sim[l] = sim;
        let submit = b.op[l] == id::SUBMIT;
        let solved = submit && sim >= 1.0;
        let bonus = if solved { rw.success_bonus } else { 0.0 };
        let penalty = if submit && !solved { rw.unsolved_submission_penalty } else { 0.0 };
        b.reward[l] = if train {
            rw.similarity_weight * (sim - old) + rw.step_penalty + bonus + penalty
        } else {
            rw.step_penalty + bonus + penalty
        };
        b.term[l] = submit;
        b.steps[l] = b.steps[l].wrapping_add(1);
    }
}

/// The compact observations (grid, then dims) of a block's first `valid` lanes, written
/// row-major: an 8×8 byte transpose per 8 cells × 8 lanes (three swap stages over `u64`
/// words, eight lane groups side by side), dispatched.
struct WriteCompact<'a, const S: usize> {
    b: &'a Block<S>,
    ob: &'a mut [i8],
    valid: usize,
}

impl<const S: usize> WithSimd for WriteCompact<'_, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: Simd>(self, _simd: Sd) {
        let WriteCompact { b, ob, valid } = self;
        let per = S * S + 2;
        let cells = b.grid.as_flattened();
        // Bytes 8g..8g+8 of row k of the observation across lanes (0 past its end).
        let word = |k: usize, g: usize| -> u64 {
            let bytes: [u8; 8] = if k < S * S {
                std::array::from_fn(|t| cells[k][8 * g + t] as u8)
            } else if k == S * S {
                std::array::from_fn(|t| b.h[8 * g + t])
            } else if k == S * S + 1 {
                std::array::from_fn(|t| b.w[8 * g + t])
            } else {
                [0; 8]
            };
            u64::from_le_bytes(bytes)
        };
        // One octet of cells at a time: w[t][g] holds cells 8j..8j+8 of lane 8g+t after the
        // transposes, written as one whole word per lane. A lane's last word spills into the
        // next lane's first word, so the last octet goes first and the others overwrite the
        // spill; the block's last lane ends with a partial word.
        let oct = per.div_ceil(8);
        for j in std::iter::once(oct - 1).chain(0..oct - 1) {
            let mut w = [[0u64; 8]; 8];
            for (i, wi) in w.iter_mut().enumerate() {
                for (g, v) in wi.iter_mut().enumerate() {
                    *v = word(8 * j + i, g);
                }
            }
            transpose8(&mut w);
            for l in 0..valid {
                let bytes = w[l % 8][l / 8].to_le_bytes().map(|v| v as i8);
                let at = l * per + 8 * j;
                if at + 8 <= ob.len() {
                    let dst: &mut [i8; 8] = (&mut ob[at..at + 8]).try_into().unwrap();
                    *dst = bytes;
                } else {
                    for (o, &v) in ob[at..].iter_mut().zip(&bytes) {
                        *o = v;
                    }
                }
            }
        }
    }
}

/// Transposes 8×8 bytes held as eight `u64` rows (byte `t` of row `i` goes to byte `i` of
/// row `t`), for eight matrices side by side.
#[inline(always)]
fn transpose8(w: &mut [[u64; 8]; 8]) {
    #[inline(always)]
    fn swap(w: &mut [[u64; 8]; 8], i: usize, j: usize, shift: u32, lo: u64) {
        for g in 0..8 {
            let (a, b) = (w[i][g], w[j][g]);
            w[i][g] = (a & lo) | ((b & lo) << shift);
            w[j][g] = ((a >> shift) & lo) | (b & !lo);
        }
    }
    for i in 0..4 {
        swap(w, i, i + 4, 32, 0x0000_0000_FFFF_FFFF);
    }
    for i in [0, 1, 4, 5] {
        swap(w, i, i + 2, 16, 0x0000_FFFF_0000_FFFF);
    }
    for i in [0, 2, 4, 6] {
        swap(w, i, i + 1, 8, 0x00FF_00FF_00FF_00FF);
    }
}

/// The per-env columns of a block's step (rewards, flags, episode steps), lane-wise
/// ([`kestrel_core::count_step`] without a branch); returns the lanes to restart (a pending
/// next-step reset, or an episode that ended) as bits.
struct Flags<'a, const S: usize> {
    b: &'a Block<S>,
    rw: &'a mut [f32],
    te: &'a mut [bool],
    tr: &'a mut [bool],
    sc: &'a mut [u32],
    nr: &'a [bool],
    limit: Option<u32>,
}

impl<const S: usize> WithSimd for Flags<'_, S> {
    type Output = u64;
    #[inline(always)]
    fn with_simd<Sd: Simd>(self, _simd: Sd) -> u64 {
        let Flags { b, rw, te, tr, sc, nr, limit } = self;
        let (has_limit, m) = (limit.is_some(), limit.unwrap_or(0));
        let n = nr.len();
        let (rw, te, tr, sc) = (&mut rw[..n], &mut te[..n], &mut tr[..n], &mut sc[..n]);
        let mut restart = 0u64;
        for l in 0..n {
            let was = nr[l];
            sc[l] = pick(was, 0, sc[l] + 1);
            rw[l] = f32::from_bits(pick(was, 0, b.reward[l].to_bits()));
            te[l] = !was & b.term[l];
            tr[l] = !was & has_limit & (sc[l] >= m);
            restart |= ((was | te[l] | tr[l]) as u64) << l;
        }
        restart
    }
}

/// Random actions of one block as `sample_action` draws them from each row's policy key
/// (dispatched; lanes at or past `valid` are left as they are).
struct Sample<'a, const S: usize> {
    b: &'a mut Block<S>,
    keys: StepKeys,
    first: usize,
    kind: SelKind,
}

impl<const S: usize> WithSimd for Sample<'_, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: Simd>(self, _simd: Sd) {
        let Sample { b, keys, first, kind } = self;
        let rb = ((1u32 << S) - 1) as u16;
        let span =
            |lo: u64, hi: u64| -> u16 { ((((2u32 << hi) - 1) & !((1u32 << lo) - 1)) as u16) & rb };
        // The policy key's generator per lane, after its first draw (the op).
        let mut rngs: [Rng; L] = std::array::from_fn(|l| keys.row(first + l).policy().rng());
        for l in 0..L {
            b.op[l] = rngs[l].below(NUM_OPS as u32) as u8;
        }
        match kind {
            SelKind::BBox => {
                for l in 0..L {
                    let x = rngs[l].next_u64();
                    let d = |k: u32| (((x >> (16 * k)) & 0xffff) * S as u64) >> 16;
                    let (r1, c1, r2, c2) = (d(0), d(1), d(2), d(3));
                    let (lo, hi) = (r1.min(r2), r1.max(r2));
                    let bits = span(c1.min(c2), c1.max(c2));
                    for r in 0..S {
                        let inside = (r as u64) >= lo && (r as u64) <= hi;
                        b.raw[r][l] = if inside { bits } else { 0 };
                    }
                }
            }
            SelKind::Point => {
                for l in 0..L {
                    let x = rngs[l].next_u64();
                    let row = ((x & 0xffff_ffff) * S as u64) >> 32;
                    let col = ((x >> 32) * S as u64) >> 32;
                    for r in 0..S {
                        b.raw[r][l] = if r as u64 == row { 1 << col } else { 0 };
                    }
                }
            }
            SelKind::Mask => {
                // Two rows per 64-bit draw.
                for (l, rng) in rngs.iter_mut().enumerate() {
                    let mut r = 0;
                    while r < S {
                        let bits = rng.next_u64();
                        b.raw[r][l] = bits as u16 & rb;
                        if r + 1 < S {
                            b.raw[r + 1][l] = (bits >> 32) as u16 & rb;
                        }
                        r += 2;
                    }
                }
            }
        }
    }
}

/// Where a step's actions come from.
enum Actions<'a, F, const S: usize> {
    Given(&'a [ArcAction<S>]),
    Policy(&'a F),
    Random(SelKind),
    /// Written a block at a time (`first` row, `valid` lanes) by [`ArcLanes::rollout_lanes`]'
    /// caller.
    Blocks(&'a (dyn Fn(usize, usize, &mut LaneActions<'_, S>) + Sync)),
}

/// The policy type of the steps that take none.
type NoPolicy<const S: usize> = fn(usize, Key, &[i8], &mut [ArcAction<S>]);

/// `num_envs` `jaxarc` envs over an `S × S` canvas (`S ≤ 10`), stepped in blocks of
/// [`LANES`] envs by the structure-of-arrays kernel: a [`BatchEnv`] with the same keys,
/// auto-reset and results as [`VecEnv`](kestrel_core::VecEnv)`<ArcEnv<S>>` (see the module
/// docs).
pub struct ArcLanes<const S: usize> {
    env: ArcEnv<S>,
    params: ArcParams,
    table: JaxarcTable,
    cols: kestrel_core::Columns<i8>,
    blocks: Vec<Box<Block<S>>>,
    starts: Option<Starts<S>>,
}

/// Every start state a reset can draw when every start is a demo start (each task, pair
/// and `wrong_pair_init` source of [`ArcEnv::draw_start`]), built once, so a reset copies a
/// state instead of building it.
struct Starts<const S: usize> {
    /// Per task: its first state's index and its number of start sources per pair.
    tasks: Vec<(usize, usize)>,
    states: Vec<ArcState<S>>,
}

/// Start states [`ArcLanes`] keeps at most (about 4 MB at the 10×10 canvas): a bank and
/// params with more (every task's pairs of the split, times its training pairs under
/// `wrong_pair_init`) reset through [`ArcEnv::reset`], with the same results.
pub const MAX_START_STATES: usize = 1 << 13;

impl<const S: usize> Starts<S> {
    fn new(env: &ArcEnv<S>, p: &ArcParams) -> Option<Self> {
        if !p.init.demo_only() {
            return None; // permutation, empty and random starts are not a finite set
        }
        let test = p.split == SplitKind::Test;
        let wrong = p.bugs.wrong_pair_init;
        let mut tasks = Vec::new();
        let mut total = 0usize;
        for (train, tests) in env.pair_counts() {
            let sources = if wrong { train } else { 1 };
            tasks.push((total, sources));
            total += if test { tests } else { train } * sources;
            if total > MAX_START_STATES {
                return None;
            }
        }
        let mut states = Vec::with_capacity(total);
        for (task, (train, tests)) in env.pair_counts().enumerate() {
            for pair in 0..if test { tests } else { train } {
                for source in 0..tasks[task].1 {
                    let start = Start::Demo { source };
                    states.push(env.init_state_with(p, task as u32, pair as u16, test, &start));
                }
            }
        }
        Some(Starts { tasks, states })
    }

    /// The state [`ArcEnv::reset`] starts from `key`.
    #[inline]
    fn get(&self, env: &ArcEnv<S>, p: &ArcParams, key: Key) -> &ArcState<S> {
        let (task, pair) = env.sample_instance(p, key);
        let (first, sources) = self.tasks[task as usize];
        let source = match env.draw_start(p, task, key) {
            Start::Demo { source } if sources > 1 => source,
            _ => 0,
        };
        &self.states[first + pair as usize * sources + source]
    }
}

/// Resets lane `l` of `b` from `key`, writing its observation (`ArcEnv::reset`'s result).
#[inline]
fn reset_lane<const S: usize>(
    env: &ArcEnv<S>,
    p: &ArcParams,
    starts: Option<&Starts<S>>,
    key: Key,
    b: &mut Block<S>,
    l: usize,
    obs: &mut [i8],
) {
    match starts {
        Some(st) => {
            let s = st.get(env, p, key);
            env.write_obs(p, s, obs);
            b.load(l, s, env.pair_of(s));
        }
        None => {
            let s = env.reset(p, key, obs);
            b.load(l, &s, env.pair_of(&s));
        }
    }
}

/// What a block's step reads beside the block: the env, its tables and the batch's settings.
struct Ctx<'a, const S: usize> {
    env: &'a ArcEnv<S>,
    params: &'a ArcParams,
    table: &'a JaxarcTable,
    starts: Option<&'a Starts<S>>,
    full: bool,
    per: usize,
    limit: Option<u32>,
    n: usize,
    mode: AutoReset,
}

impl<'a, const S: usize> Ctx<'a, S> {
    /// The context of a batch with these parts and columns (read now: the columns are not
    /// kept).
    fn of(
        env: &'a ArcEnv<S>,
        params: &'a ArcParams,
        table: &'a JaxarcTable,
        starts: Option<&'a Starts<S>>,
        cols: &kestrel_core::Columns<i8>,
    ) -> Self {
        Ctx {
            env,
            params,
            table,
            starts,
            full: params.layout == LayoutKind::Full,
            per: cols.per_env(),
            limit: cols.spec().max_episode_steps,
            n: cols.num_envs(),
            mode: cols.autoreset(),
        }
    }

    /// Block `bi`'s step with `keys`: its actions, the kernel, observations, flags and resets.
    #[inline]
    fn step<F>(
        &self,
        keys: StepKeys,
        bi: usize,
        b: &mut Block<S>,
        c: BlockRows<'_>,
        actions: &Actions<'_, F, S>,
    ) where
        F: Fn(usize, Key, &[i8], &mut [ArcAction<S>]) + Sync,
    {
        let Ctx { env, params, table, starts, full, per, limit, n, mode } = *self;
        let BlockRows { ob, fo, rw, te, tr, sc, nr } = c;

        let first = bi * L;
        let valid = (n - first).min(L);
        match actions {
            Actions::Given(a) => {
                for l in 0..valid {
                    b.set_action(l, &a[first + l]);
                }
            }
            Actions::Policy(p) => {
                for l in 0..valid {
                    let row = first + l;
                    let mut a = [ArcAction::<S>::default()];
                    if !nr[l] {
                        p(row, keys.row(row).policy(), &ob[l * per..(l + 1) * per], &mut a);
                    }
                    b.set_action(l, &a[0]);
                }
            }
            Actions::Random(kind) => dispatch(Sample { b: &mut *b, keys, first, kind: *kind }),
            Actions::Blocks(f) => f(first, valid, &mut LaneActions { b: &mut *b }),
        }
        dispatch(JaxStep {
            b: &mut *b,
            bugs: table.bugs,
            rewards: table.rewards,
            train: table.train,
        });
        // Observations of every lane, then the columns lane-wise; resets (one lane in
        // about thirty under random actions) one at a time.
        if full {
            for l in 0..valid {
                let s = lane_state(env, params, b, l);
                env.write_obs(params, &s, &mut ob[l * per..(l + 1) * per]);
            }
        } else {
            dispatch(WriteCompact { b: &*b, ob: &mut *ob, valid });
        }
        let mut restart = dispatch(Flags {
            b: &*b,
            rw: &mut *rw,
            te: &mut *te,
            tr: &mut *tr,
            sc: &mut *sc,
            nr: &*nr,
            limit,
        });
        while restart != 0 {
            let l = restart.trailing_zeros() as usize;
            restart &= restart - 1;
            let row = first + l;
            let obs = &mut ob[l * per..(l + 1) * per];
            if nr[l] {
                // Next-step auto-reset: this step only starts the new episode.
                reset_lane(env, params, starts, keys.pending_reset(row), b, l, obs);
                nr[l] = false;
                continue;
            }
            let fo = &mut fo[l * per..(l + 1) * per];
            if let Some(k) = end_episode(mode, keys.row(row), obs, fo, &mut sc[l], &mut nr[l]) {
                reset_lane(env, params, starts, k, b, l, obs);
            }
        }
    }
}

/// One block's actions, as [`ArcLanes::rollout_lanes`]' caller writes them: lane `l` is row
/// `first + l` of the batch.
pub struct LaneActions<'a, const S: usize> {
    b: &'a mut Block<S>,
}

impl<const S: usize> LaneActions<'_, S> {
    /// Lane `l`'s op id (clipped to 0–34, as [`ArcAction`]'s is) and selection as bit rows
    /// (bit `c` of row `r` is cell `(r, c)`; bits past the canvas are dropped): the same action
    /// as [`ArcAction`] with [`Selection::Mask`](crate::action::Selection::Mask) of those rows.
    #[inline]
    pub fn set_mask(&mut self, l: usize, op: i64, rows: [u32; S]) {
        self.b.op[l] = op.clamp(0, NUM_OPS as i64 - 1) as u8;
        let rb = crate::grid::row_bits::<S>();
        for (raw, m) in self.b.raw.iter_mut().zip(rows) {
            raw[l] = (m & rb) as u16;
        }
    }

    /// Lanes `0..ops.len()` at once: [`Self::set_mask`] of each lane's op id and of its
    /// selection's `S × S` bytes in `sel` (0 or 1, lane after lane, row-major: numpy's boolean
    /// masks; checked by the caller). Each lane's bytes are read as one bit string
    /// ([`for_each_bit_row`]: one load and compare with AVX-512); up to 8x8 (a word a lane)
    /// the rows of every lane are then cut in one vector pass.
    ///
    /// # Panics
    ///
    /// If `ops` has more than [`LANES`] lanes or `sel` is not `S × S` bytes a lane.
    #[inline]
    pub fn set_masks(&mut self, ops: &[i64], sel: &[u8]) {
        let (n, cells) = (ops.len(), S * S);
        assert!(n <= L && sel.len() == n * cells, "set_masks: {n} lanes, {} bytes", sel.len());
        if cells > 64 {
            let row_mask = (1u128 << S) - 1;
            for_each_bit_row(sel, cells, |l, bits| {
                let rows = std::array::from_fn(|r| ((bits >> (r * S)) & row_mask) as u32);
                self.set_mask(l, ops[l], rows);
            });
            return;
        }
        let b = &mut *self.b;
        for_each_bit_row(sel, cells, |l, bits| b.words[l] = bits as u64);
        dispatch(SetMasks { b, ops });
    }

    /// Lanes `0..ops.len()` at once from coordinate columns, one value a lane: points
    /// (`[rows, cols]`) or boxes (`[r1, c1, r2, c2]`, corners in either order), clipped to the
    /// canvas: the masks of [`Selection::Point`](crate::action::Selection::Point) and
    /// [`Selection::BBox`](crate::action::Selection::BBox), every lane's row `r` in one vector pass.
    ///
    /// # Panics
    ///
    /// If `ops` has more than [`LANES`] lanes, or there are not 2 or 4 columns of its length.
    #[inline]
    pub fn set_coords(&mut self, ops: &[i64], coords: &[&[i64]]) {
        let n = ops.len();
        assert!(
            n <= L && matches!(coords.len(), 2 | 4) && coords.iter().all(|c| c.len() == n),
            "set_coords: {n} lanes, {} columns",
            coords.len()
        );
        dispatch(SetCoords { b: &mut *self.b, ops, coords });
    }

    /// Lane `l`'s action.
    #[inline]
    pub fn set(&mut self, l: usize, a: &ArcAction<S>) {
        self.b.set_action(l, a);
    }
}

/// [`LaneActions::set_masks`]' vector pass: op ids clipped, rows cut out of the words.
struct SetMasks<'a, const S: usize> {
    b: &'a mut Block<S>,
    ops: &'a [i64],
}

/// Op ids clipped to 0–34, lane-wise.
#[inline(always)]
fn clip_ops(out: &mut [u8], ops: &[i64]) {
    for (o, &op) in out.iter_mut().zip(ops) {
        *o = op.clamp(0, NUM_OPS as i64 - 1) as u8;
    }
}

impl<const S: usize> WithSimd for SetMasks<'_, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: Simd>(self, _simd: Sd) {
        let SetMasks { b, ops } = self;
        let n = ops.len();
        clip_ops(&mut b.op[..n], ops);
        let rb = u64::from(crate::grid::row_bits::<S>());
        for (r, raw) in b.raw.iter_mut().enumerate() {
            for (x, &w) in raw[..n].iter_mut().zip(&b.words[..n]) {
                *x = ((w >> (r * S)) & rb) as u16;
            }
        }
    }
}

/// [`LaneActions::set_coords`]' vector pass: op ids clipped, each row of every lane's point or
/// box (as [`Selection::to_mask`](crate::action::Selection::to_mask) draws them).
struct SetCoords<'a, const S: usize> {
    b: &'a mut Block<S>,
    ops: &'a [i64],
    coords: &'a [&'a [i64]],
}

impl<const S: usize> WithSimd for SetCoords<'_, S> {
    type Output = ();
    #[inline(always)]
    fn with_simd<Sd: Simd>(self, _simd: Sd) {
        let SetCoords { b, ops, coords } = self;
        let n = ops.len();
        clip_ops(&mut b.op[..n], ops);
        let clip = |v: i64| v.clamp(0, S as i64 - 1) as u32;
        match coords {
            [rows, cols] => {
                for (r, raw) in b.raw.iter_mut().enumerate() {
                    for ((x, &row), &col) in raw[..n].iter_mut().zip(*rows).zip(*cols) {
                        let bit = (1u32 << clip(col)) as u16;
                        *x = if clip(row) == r as u32 { bit } else { 0 };
                    }
                }
            }
            [r1, c1, r2, c2] => {
                // Each lane's rows and column bits once (four i64 columns read once), then
                // every row from them in 16-bit lanes.
                let (mut lo, mut hi, mut bits) = ([0u16; L], [0u16; L], [0u16; L]);
                let corners = r1.iter().zip(*c1).zip(r2.iter().zip(*c2));
                for (l, ((&r1, &c1), (&r2, &c2))) in corners.enumerate() {
                    let (r1, r2, c1, c2) = (clip(r1), clip(r2), clip(c1), clip(c2));
                    let (c0, c1) = (c1.min(c2), c1.max(c2));
                    bits[l] = ((u32::MAX >> (31 - c1)) & (u32::MAX << c0)) as u16;
                    (lo[l], hi[l]) = (r1.min(r2) as u16, r1.max(r2) as u16);
                }
                for (r, raw) in b.raw.iter_mut().enumerate() {
                    let r = r as u16;
                    for (l, x) in raw[..n].iter_mut().enumerate() {
                        *x = if lo[l] <= r && r <= hi[l] { bits[l] } else { 0 };
                    }
                }
            }
            _ => unreachable!("set_coords checks 2 or 4 columns"),
        }
    }
}

/// One block's rows of every column.
struct BlockRows<'a> {
    ob: &'a mut [i8],
    fo: &'a mut [i8],
    rw: &'a mut [f32],
    te: &'a mut [bool],
    tr: &'a mut [bool],
    sc: &'a mut [u32],
    nr: &'a mut [bool],
}

impl<'a> BlockRows<'a> {
    /// The columns cut into chunks of `rows` envs (`per` observation elements each), in
    /// parallel.
    fn chunks(
        c: &'a mut kestrel_core::Columns<i8>,
        rows: usize,
        per: usize,
    ) -> impl IndexedParallelIterator<Item = BlockRows<'a>> {
        c.obs
            .par_chunks_mut(rows * per)
            .zip(c.final_obs.par_chunks_mut(rows * per))
            .zip(c.rewards.par_chunks_mut(rows))
            .zip(c.terminated.par_chunks_mut(rows))
            .zip(c.truncated.par_chunks_mut(rows))
            .zip(c.episode_steps.par_chunks_mut(rows))
            .zip(c.needs_reset.par_chunks_mut(rows))
            .map(|((((((ob, fo), rw), te), tr), sc), nr)| BlockRows { ob, fo, rw, te, tr, sc, nr })
    }

    /// Envs `lanes` of these rows (clipped to the rows there are).
    fn lanes(&mut self, lanes: std::ops::Range<usize>, per: usize) -> BlockRows<'_> {
        let lanes = lanes.start.min(self.rw.len())..lanes.end.min(self.rw.len());
        let cells = lanes.start * per..lanes.end * per;
        BlockRows {
            ob: &mut self.ob[cells.clone()],
            fo: &mut self.fo[cells],
            rw: &mut self.rw[lanes.clone()],
            te: &mut self.te[lanes.clone()],
            tr: &mut self.tr[lanes.clone()],
            sc: &mut self.sc[lanes.clone()],
            nr: &mut self.nr[lanes],
        }
    }
}

impl<const S: usize> BatchEnv for ArcLanes<S> {
    type Kernel = ArcEnv<S>;
    type Params = ArcParams;
    type State = ArcState<S>;
    type Obs = i8;
    type Action = ArcAction<S>;
    type Error = ArcError;

    /// Params checked as [`ArcEnv::validate`] does; fails for `S > 10` or `o2arc` mode too.
    fn shard(
        env: ArcEnv<S>,
        params: ArcParams,
        num_envs: usize,
        seed: u64,
        row_offset: u64,
    ) -> Result<Self, ArcError> {
        if S > MAX_LANE_SIDE {
            return Err(ArcError::invalid("canvas size", S, "at most 10 for the lane kernel"));
        }
        if params.mode != ModeKind::Jaxarc {
            return Err(ArcError::invalid(
                "mode",
                "o2arc",
                "jaxarc for the lane kernel (o2arc runs on VecEnv)",
            ));
        }
        env.validate(&params)?;
        let spec = env.spec(&params);
        let kernel_row = (size_of::<Block<S>>().div_ceil(L) + 4) as u128;
        let cols = kestrel_core::Columns::new(spec, num_envs, seed, row_offset, kernel_row)?;
        let mut v = ArcLanes {
            table: params.jaxarc_table(),
            blocks: (0..num_envs.div_ceil(L)).map(|_| Block::new()).collect(),
            starts: Starts::new(&env, &params),
            env,
            params,
            cols,
        };
        v.reset(seed);
        Ok(v)
    }

    fn columns(&self) -> &kestrel_core::Columns<i8> {
        &self.cols
    }

    fn set_autoreset(&mut self, mode: kestrel_core::AutoReset) {
        self.cols.set_autoreset(mode);
    }

    fn reset(&mut self, seed: u64) {
        let keys = self.cols.restart(seed);
        let per = self.cols.per_env();
        for i in 0..self.cols.num_envs() {
            reset_lane(
                &self.env,
                &self.params,
                self.starts.as_ref(),
                keys.row(i).key(),
                &mut self.blocks[i / L],
                i % L,
                &mut self.cols.obs[i * per..(i + 1) * per],
            );
        }
    }

    fn reset_rows(&mut self, mask: &[bool]) -> Result<(), ArcError> {
        self.cols.check_mask(mask)?;
        let (keys, per) = (self.cols.keys(), self.cols.per_env());
        for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
            reset_lane(
                &self.env,
                &self.params,
                self.starts.as_ref(),
                keys.row(i).reset(),
                &mut self.blocks[i / L],
                i % L,
                &mut self.cols.obs[i * per..(i + 1) * per],
            );
            self.cols.start_row(i);
        }
        Ok(())
    }

    fn try_step(&mut self, actions: &[ArcAction<S>]) -> Result<(), ArcError> {
        if actions.len() != self.cols.num_envs() {
            return Err(CoreError::Length {
                what: "actions",
                expected: self.cols.num_envs(),
                got: actions.len(),
            }
            .into());
        }
        self.run::<NoPolicy<S>>(Actions::Given(actions));
        Ok(())
    }

    fn step_with<F>(&mut self, policy: F)
    where
        F: Fn(usize, Key, &[i8], &mut [ArcAction<S>]) + Sync,
    {
        self.run(Actions::Policy(&policy));
    }

    /// Each block of [`LANES`] envs goes through every step on one thread, writing its part of
    /// each step's columns as it goes: one hand-off to the pool for the whole rollout, where
    /// stepping one step at a time hands off and joins once a step.
    fn rollout_with<F>(&mut self, out: Trajectory<'_, i8>, policy: F) -> Result<(), ArcError>
    where
        F: Fn(usize, usize, Key, &[i8], &mut [ArcAction<S>]) + Sync,
    {
        // In place: no, the policy reads the last step's observations from the columns.
        self.rollout(out, false, |ctx, t, keys, bi, b, rows| {
            let p = |row, key, obs: &[i8], a: &mut [ArcAction<S>]| policy(t, row, key, obs, a);
            ctx.step(keys, bi, b, rows, &Actions::Policy(&p));
        })
    }

    fn state(&self, i: usize) -> Option<ArcState<S>> {
        (i < self.cols.num_envs())
            .then(|| lane_state(&self.env, &self.params, &self.blocks[i / L], i % L))
    }

    /// Also fails for a task or pair not in the env, or dims beyond the canvas.
    fn set_state(&mut self, i: usize, state: ArcState<S>) -> Result<(), ArcError> {
        self.cols.check_row(i)?;
        self.env.check_state(&state)?;
        let per = self.cols.per_env();
        self.env.write_obs(&self.params, &state, &mut self.cols.obs[i * per..(i + 1) * per]);
        let pg = self.env.pair_of(&state);
        self.blocks[i / L].load(i % L, &state, pg);
        self.cols.start_row(i);
        Ok(())
    }
}

impl<const S: usize> ArcLanes<S> {
    /// [`BatchEnv::rollout_with`] with actions written a block of lanes at a time:
    /// `fill(t, first, valid, lanes)` sets lanes `0..valid` (rows `first..first + valid`) for
    /// step `t`, e.g. straight from a front end's arrays, without an [`ArcAction`] a row. Rows
    /// that a next-step auto-reset only resets ignore their action, as in every step.
    pub fn rollout_lanes<G>(&mut self, out: Trajectory<'_, i8>, fill: G) -> Result<(), ArcError>
    where
        G: Fn(usize, usize, usize, &mut LaneActions<'_, S>) + Sync,
    {
        self.rollout(out, true, |ctx, t, keys, bi, b, rows| {
            let f = |first, valid, la: &mut LaneActions<'_, S>| fill(t, first, valid, la);
            ctx.step(keys, bi, b, rows, &Actions::<NoPolicy<S>, S>::Blocks(&f));
        })
    }

    /// `steps` steps (the buffers' length), each block of lanes through all of them on one
    /// thread: `step(ctx, t, keys, block, lanes, rows)` steps one block once. `in_place`:
    /// every step but the last writes its observations into `out` itself (no copy), for
    /// `step`s that read no observation.
    fn rollout<St>(
        &mut self,
        out: Trajectory<'_, i8>,
        in_place: bool,
        step: St,
    ) -> Result<(), ArcError>
    where
        St: Fn(&Ctx<'_, S>, usize, StepKeys, usize, &mut Block<S>, BlockRows<'_>) + Sync,
    {
        let steps = out.steps(&self.cols)?;
        if steps == 0 {
            return Ok(());
        }
        let keys: Vec<StepKeys> = (0..steps).map(|_| self.cols.next_step()).collect();
        let ctx = Ctx::of(&self.env, &self.params, &self.table, self.starts.as_ref(), &self.cols);
        let (n, per) = (ctx.n, ctx.per);
        let mut outs = out.blocks(n, steps, L, per, 1);
        let (keys, step, ctx) = (&keys, &step, &ctx);
        let c = &mut self.cols;
        // Four groups of blocks per thread, each group step by step through its blocks: a
        // step's actions and outputs of a group are contiguous (the prefetcher follows them;
        // a block through all steps before the next jumped a whole step's arrays each step).
        let threads = rayon::current_num_threads();
        let group = self.blocks.len().div_ceil(4 * threads);
        self.blocks
            .par_chunks_mut(group)
            .zip(BlockRows::chunks(c, group * L, per))
            .zip(outs.par_chunks_mut(group * steps))
            .enumerate()
            .for_each(|(g, ((bs, mut cols), o))| {
                for t in 0..steps {
                    for (k, b) in bs.iter_mut().enumerate() {
                        let mut rows = cols.lanes(k * L..(k + 1) * L, per);
                        let out = &mut o[k * steps + t];
                        if in_place && t + 1 < steps {
                            // The observations straight into the output (the step writes
                            // every lane's); the last step's go to the columns, which hold
                            // the current ones afterwards.
                            let mut r = rows.lanes(0..L, per);
                            r.ob = &mut *out.obs;
                            step(ctx, t, keys[t], g * group + k, b, r);
                            let BlockRows { fo, rw, te, tr, .. } = rows;
                            out.copy_flags_from(per, fo, rw, te, tr);
                        } else {
                            step(ctx, t, keys[t], g * group + k, b, rows.lanes(0..L, per));
                            let BlockRows { ob, fo, rw, te, tr, .. } = rows;
                            out.copy_from(per, ob, fo, rw, te, tr);
                        }
                    }
                }
            });
        Ok(())
    }

    /// Steps every env with uniformly random actions of selection form `kind`, drawn lane-wise
    /// inside the kernel: the same actions as [`BatchEnv::step_with`] with a policy calling
    /// [`sample_action`](crate::action::sample_action) on its key.
    pub fn step_random(&mut self, kind: SelKind) {
        self.run::<NoPolicy<S>>(Actions::Random(kind));
    }

    fn run<F>(&mut self, actions: Actions<'_, F, S>)
    where
        F: Fn(usize, Key, &[i8], &mut [ArcAction<S>]) + Sync,
    {
        let keys = self.cols.next_step();
        let ctx = Ctx::of(&self.env, &self.params, &self.table, self.starts.as_ref(), &self.cols);
        let (n, per) = (ctx.n, ctx.per);
        let actions = &actions;
        let block =
            |bi: usize, b: &mut Block<S>, c: BlockRows<'_>| ctx.step(keys, bi, b, c, actions);
        let rows = |bi: usize| -> std::ops::Range<usize> { bi * L..((bi + 1) * L).min(n) };
        let c = &mut self.cols;
        if self.blocks.len() == 1 {
            let r = rows(0);
            block(
                0,
                &mut self.blocks[0],
                BlockRows {
                    ob: &mut c.obs[..],
                    fo: &mut c.final_obs[..],
                    rw: &mut c.rewards[r.clone()],
                    te: &mut c.terminated[r.clone()],
                    tr: &mut c.truncated[r.clone()],
                    sc: &mut c.episode_steps[r.clone()],
                    nr: &mut c.needs_reset[r],
                },
            );
            return;
        }
        // Eight tasks per thread, of at least four blocks while every thread still gets one.
        // Every task is a hand-off between threads, so small batches take few (1,024 envs on 2
        // threads: four tasks run 8% faster than sixteen); large ones take more so that a
        // worker that wakes late (tens of microseconds on a virtual machine, after the caller
        // paused between steps) still finds its share: 4,096 envs stepped from Python with a
        // serial pass before each step took 218 µs in four tasks and 164 µs in sixteen.
        let (blocks, threads) = (self.blocks.len(), rayon::current_num_threads());
        let min_len = blocks.div_ceil(8 * threads).max(blocks.div_ceil(threads).min(4));
        self.blocks
            .par_iter_mut()
            .zip(BlockRows::chunks(c, L, per))
            .enumerate()
            .with_min_len(min_len)
            .for_each(|(bi, (b, rows))| block(bi, b, rows));
    }

    /// The env kernel.
    pub fn env(&self) -> &ArcEnv<S> {
        &self.env
    }

    /// Each env's similarity to its target ([`ArcEnv::similarity`]), into `out` (one per env).
    ///
    /// # Panics
    /// If `out` is not `num_envs` long.
    pub fn similarities(&self, out: &mut [f32]) {
        assert_eq!(out.len(), self.num_envs(), "similarities: one per env");
        for (o, b) in out.chunks_mut(L).zip(&self.blocks) {
            o.copy_from_slice(&b.sim[..o.len()]);
        }
    }

    /// Env `i`'s episode: its task, pair and whether the pair is a test pair (`None` past the
    /// batch).
    pub fn instance(&self, i: usize) -> Option<(u32, u16, bool)> {
        let (b, l) = (self.blocks.get(i / L)?, i % L);
        (i < self.cols.num_envs()).then(|| (b.task[l], b.pair[l], b.test[l]))
    }

    /// The params.
    pub fn params(&self) -> &ArcParams {
        &self.params
    }
}

/// Lane `l` of `b` as an [`ArcState`].
fn lane_state<const S: usize>(
    env: &ArcEnv<S>,
    p: &ArcParams,
    b: &Block<S>,
    l: usize,
) -> ArcState<S> {
    let (task, pair, test) = (b.task[l], b.pair[l], b.test[l]);
    let pg = env.pair_grids(task, pair, test);
    let mut s = ArcState::new(task, pair, test, pg, p.max_trials);
    for r in 0..S {
        for c in 0..S {
            s.grid[r][c] = b.grid[r][c][l];
            s.clip[r][c] = b.clip[r][c][l];
        }
        s.selected[r] = b.selected[r][l] as u32;
    }
    s.dims = [b.h[l], b.w[l]];
    s.similarity = b.sim[l];
    s.steps = b.steps[l];
    s.empty_target = b.empty[l];
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The register transpose of the observation pass against its definition: byte `t` of row
    /// `i` becomes byte `i` of row `t`, in each of the eight matrices independently.
    #[test]
    fn transpose8_moves_byte_t_of_row_i_to_byte_i_of_row_t() {
        let mut r = Key::new(3).rng();
        let mut w = [[0u64; 8]; 8];
        for row in w.iter_mut() {
            for v in row.iter_mut() {
                *v = (r.uniform_f64() * u64::MAX as f64) as u64 ^ (r.uniform_f64() * 1e9) as u64;
            }
        }
        let byte = |v: u64, t: usize| (v >> (8 * t)) & 0xff;
        let before = w;
        transpose8(&mut w);
        for g in 0..8 {
            for i in 0..8 {
                for t in 0..8 {
                    assert_eq!(byte(w[t][g], i), byte(before[i][g], t), "matrix {g} ({i}, {t})");
                }
            }
        }
        transpose8(&mut w);
        assert_eq!(w, before, "a transpose is its own inverse");
    }

    /// The lane-wise helpers of the cell pass: indices outside the canvas become 255 (no
    /// cell), the first/last row with a property per lane (n / 0 when none), and the remap's
    /// affine axis with its one wrapped position.
    #[test]
    fn lane_helpers_follow_their_scalar_definitions() {
        assert_eq!((ix::<5>(-1), ix::<5>(0), ix::<5>(4), ix::<5>(5)), (255, 0, 4, 255));
        let has = |i: usize, l: usize| !l.is_multiple_of(7) && (i == l % 5 || i == (l + 2) % 5);
        let (lo, hi) = (first_of(5, has), last_of(5, has));
        for l in 0..L {
            let rows: Vec<usize> = (0..5).filter(|&i| has(i, l)).collect();
            assert_eq!(lo[l] as usize, rows.first().copied().unwrap_or(5), "lane {l}");
            assert_eq!(hi[l] as usize, rows.last().copied().unwrap_or(0), "lane {l}");
        }
        let mut axis = Axis { a: [4; L], neg: [true; L], at: [255; L], to: [0; L] };
        axis.neg[1] = false;
        axis.a[1] = 1;
        axis.at[2] = 3;
        axis.to[2] = 9;
        let mut out = [0u8; L];
        axis.index::<5>(3, &mut out);
        assert_eq!((out[0], out[1], out[2]), (1, 4, 9), "4 - 3, 1 + 3, the wrapped position");
        axis.index::<5>(4, &mut out);
        assert_eq!((out[0], out[1]), (0, 255), "1 + 4 is outside a 5-wide canvas");
    }
}
