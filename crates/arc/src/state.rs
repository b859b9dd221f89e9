//! The state of one ARC episode: [`ArcState`] (both modes), ARCLE's persistent
//! [`ObjectState`], and the canvas-padded grids of a task's pairs ([`PairGrids`]) that the
//! op tables and the observation writer read. Plain data; the operations that change a
//! state are in `o2arc.rs` (ARCLE) and `jaxarc.rs` (JaxARC).

use crate::grid::{self, Grid, Mask};
use crate::task::Pair;

/// A pair padded onto the canvas (0 outside its dims).
#[derive(Clone, Debug)]
pub struct PairGrids<const S: usize> {
    /// Input grid.
    pub input: Grid<S>,
    /// Input `[h, w]`.
    pub in_dims: [u8; 2],
    /// Output grid.
    pub output: Grid<S>,
    /// Output `[h, w]`.
    pub out_dims: [u8; 2],
}

impl<const S: usize> PairGrids<S> {
    /// Pads a task pair onto the canvas (the caller has checked that it fits).
    pub(crate) fn from_pair(p: &Pair) -> Self {
        PairGrids {
            input: grid::from_cells(&p.input.cells, p.input.h, p.input.w, 0),
            in_dims: [p.input.h as u8, p.input.w as u8],
            output: grid::from_cells(&p.output.cells, p.output.h, p.output.w, 0),
            out_dims: [p.output.h as u8, p.output.w as u8],
        }
    }
}

/// The padded pairs of one task.
#[derive(Clone, Debug)]
pub(crate) struct TaskGrids<const S: usize> {
    /// Demonstration pairs.
    pub(crate) train: Box<[PairGrids<S>]>,
    /// Test pairs.
    pub(crate) test: Box<[PairGrids<S>]>,
}

/// ARCLE's persistent object state (`object_states`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectState<const S: usize> {
    /// Object mode on.
    pub active: bool,
    /// Object pixels, top-left aligned.
    pub object: Grid<S>,
    /// Object selection, top-left aligned.
    pub object_sel: Mask<S>,
    /// Object `[h, w]`.
    pub dim: [i8; 2],
    /// Object top-left `[row, col]`; may be negative or beyond the grid.
    pub pos: [i8; 2],
    /// The grid with the object's pixels zeroed.
    pub background: Grid<S>,
    /// Parity used when rotating odd × even objects.
    pub parity: i8,
}

/// One ARC episode's state (both modes; fields a mode does not use stay zero).
#[derive(Clone, Debug, PartialEq)]
pub struct ArcState<const S: usize> {
    /// Task index in the bank.
    pub task: u32,
    /// Pair index within the split.
    pub pair: u16,
    /// Whether the pair is a test pair.
    pub test: bool,
    /// Working grid (o2arc: 0-padded, may hold stale colours beyond dims; jaxarc: -1 padded).
    pub grid: Grid<S>,
    /// Working grid `[h, w]` (jaxarc: the working mask, always a top-left rectangle).
    pub dims: [u8; 2],
    /// o2arc: the object-selection display; jaxarc: the last masked selection.
    pub selected: Mask<S>,
    /// Clipboard (o2arc: top-left aligned; jaxarc: at canvas positions).
    pub clip: Grid<S>,
    /// o2arc clipboard `[h, w]`.
    pub clip_dim: [u8; 2],
    /// o2arc object state.
    pub object: ObjectState<S>,
    /// o2arc remaining Submits (-1 unlimited; decrements and wraps as ARCLE's int8).
    pub trials: i8,
    /// o2arc sticky terminated flag.
    pub terminated: bool,
    /// Submits so far (o2arc).
    pub submit_count: u32,
    /// Steps taken.
    pub steps: u32,
    /// jaxarc similarity to the target after the last step.
    pub similarity: f32,
    /// jaxarc: whether the target is empty (test split with `eval_no_success`).
    pub empty_target: bool,
}

impl<const S: usize> ArcState<S> {
    /// ARCLE's fresh state for pair `pg` (task `task`, pair `pair` of its split): the
    /// working grid is the pair's input, everything else empty, `trials` Submits left.
    /// JaxARC's start state adds padding and its similarity on top (`ArcEnv::init_state`).
    pub(crate) fn new(task: u32, pair: u16, test: bool, pg: &PairGrids<S>, trials: i8) -> Self {
        ArcState {
            task,
            pair,
            test,
            grid: pg.input,
            dims: pg.in_dims,
            selected: [0; S],
            clip: [[0; S]; S],
            clip_dim: [0; 2],
            object: ObjectState {
                active: false,
                object: [[0; S]; S],
                object_sel: [0; S],
                dim: [0; 2],
                pos: [0; 2],
                background: [[0; S]; S],
                parity: 0,
            },
            trials,
            terminated: false,
            submit_count: 0,
            steps: 0,
            similarity: 0.0,
            empty_target: false,
        }
    }
}
