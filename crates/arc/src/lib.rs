//! ARC for Kestrel: the task bank (every common JSON layout, precise errors), procedural
//! task families as the embedded default, and [`ArcEnv`], the grid-editing environment
//! with ARCLE's `O2ARCv2Env` and JaxARC's semantics as named modes.
//!
//! Modules, each depending only on those below it:
//! - `lanes`: [`ArcLanes`], the structure-of-arrays `jaxarc` kernel and its batched driver for
//!   canvases up to 10×10 (blocks of 64 envs; bit-identical to `VecEnv<ArcEnv>`);
//! - `env`: [`ArcEnv`], [`ArcParams`], and the per-step dispatch to the mode's op table;
//! - `init`: [`GridInit`], JaxARC's four ways a reset fills the working grid;
//! - `o2arc`, `jaxarc`: the two op tables behind [`OpTable`] (ops, names, rewards);
//! - `action`, `obs`: [`ArcAction`] and its sampler; the observation layouts and writer;
//! - `state`: [`ArcState`] and the padded pair grids;
//! - [`grid`]: fixed-size grids and row-bitmask selections.
//!
//! Beside them: [`trace`] (actions as JSON), [`bench`](mod@bench) (throughput measurements), [`render`].

mod action;
pub mod bench;
mod config;
mod env;
mod error;
pub mod generator;
pub mod grid;
mod init;
mod jaxarc;
mod lanes;
mod o2arc;
mod obs;
mod ops;
pub mod render;
mod state;
mod task;
pub mod trace;

pub use action::{ArcAction, SelKind, Selection, sample_action};
pub use config::{ArcConfig, CANVASES, JaxBugsKind};
pub use env::{ArcEnv, ArcParams, ModeKind, SplitKind};
pub use error::ArcError;
pub use init::{GridInit, Noise, Pattern, Permutation, Start, Transform};
pub use jaxarc::{JAXARC_OPS, JaxBugs, JaxRewards, JaxarcOp, JaxarcTable};
pub use lanes::{ArcLanes, LANES, LaneActions, MAX_LANE_SIDE, MAX_START_STATES};
pub use o2arc::{O2ARC_OPS, O2arcOp, O2arcTable};
pub use obs::{FullObsView, FullOffsets, LayoutKind};
pub use ops::{NUM_OPS, OpTable};
pub use state::{ArcState, ObjectState, PairGrids};
pub use task::{GridData, LoadOptions, MAX_SIDE, Pair, Skipped, Task, TaskBank};
