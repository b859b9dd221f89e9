//! ARC for Kestrel: the task bank (every common JSON layout, precise errors), procedural
//! task families as the embedded default, and [`ArcEnv`], the grid-editing environment
//! with ARCLE's `O2ARCv2Env` and JaxARC's semantics as named modes.

mod env;
mod error;
pub mod generator;
pub mod grid;
mod jaxarc;
mod o2arc;
pub mod render;
mod task;

pub use env::{
    ArcAction, ArcEnv, ArcParams, ArcState, FullObsView, FullOffsets, JaxBugs, JaxRewards, Layout,
    Mode, NUM_OPS, ObjectState, PairGrids, SelKind, Selection, Split, sample_action,
};
pub use error::ArcError;
pub use task::{GridData, LoadOptions, MAX_SIDE, Pair, Skipped, Task, TaskBank};

/// Operation names of the `o2arc` table (ARCLE `O2ARCv2Env`).
pub const O2ARC_OPS: [&str; 35] = [
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

/// Operation names of the `jaxarc` table (JaxARC 1.0.3).
pub const JAXARC_OPS: [&str; 35] = [
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
