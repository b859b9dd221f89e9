//! One ARC action ([`ArcAction`]: an op id and a [`Selection`]) and the uniform random
//! action both peers' `action_space.sample()` draws ([`sample_action`]). The op id is
//! interpreted by the mode's op table (`o2arc.rs`, `jaxarc.rs`).

use crate::grid::{self, Mask};
use crate::ops::NUM_OPS;
use kestrel_core::Rng;

/// A selection, in one of three forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection<const S: usize> {
    /// A cell mask (bit `c` of row `r`).
    Mask(Mask<S>),
    /// An inclusive rectangle between two corners (any order; clipped to the canvas).
    BBox {
        /// First corner row.
        r1: i32,
        /// First corner column.
        c1: i32,
        /// Second corner row.
        r2: i32,
        /// Second corner column.
        c2: i32,
    },
    /// One cell (clipped to the canvas).
    Point {
        /// Row.
        row: i32,
        /// Column.
        col: i32,
    },
}

impl<const S: usize> Selection<S> {
    /// The selection as a canvas mask (coordinates clipped, extra mask bits dropped).
    #[inline]
    pub fn to_mask(&self) -> Mask<S> {
        let clip = |v: i32| v.clamp(0, S as i32 - 1) as usize;
        match *self {
            Selection::Mask(m) => {
                let rb = grid::row_bits::<S>();
                std::array::from_fn(|r| m[r] & rb)
            }
            Selection::BBox { r1, c1, r2, c2 } => {
                let (a, b, c, d) = (clip(r1), clip(r2), clip(c1), clip(c2));
                grid::rect(a.min(b), a.max(b), c.min(d), c.max(d))
            }
            Selection::Point { row, col } => {
                let mut m = [0; S];
                m[clip(row)] = 1 << clip(col);
                m
            }
        }
    }
}

/// One action: an operation id and a selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArcAction<const S: usize> {
    /// Operation id (0–34; see the mode's op table).
    pub op: i32,
    /// Where it applies.
    pub sel: Selection<S>,
}

impl<const S: usize> Default for ArcAction<S> {
    fn default() -> Self {
        ArcAction { op: 0, sel: Selection::Mask([0; S]) }
    }
}

/// Which kind of random selection [`sample_action`] draws (configs spell them `mask`, `bbox`,
/// `point`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelKind {
    /// i.i.d. Bernoulli(0.5) cells over the canvas (`action_space.sample()` in both peers).
    Mask,
    /// Uniform corners over the canvas.
    #[serde(rename = "bbox")]
    BBox,
    /// One uniform cell.
    Point,
}

impl std::str::FromStr for SelKind {
    type Err = crate::error::ArcError;
    /// `mask`, `bbox` or `point`.
    fn from_str(s: &str) -> Result<Self, crate::error::ArcError> {
        match s {
            "mask" => Ok(SelKind::Mask),
            "bbox" => Ok(SelKind::BBox),
            "point" => Ok(SelKind::Point),
            _ => {
                Err(kestrel_core::Invalid::new("sel", format!("{s:?}"), "mask, bbox or point")
                    .into())
            }
        }
    }
}

/// A uniformly random valid action: op uniform over 0–34 and a selection of `kind`.
#[inline]
pub fn sample_action<const S: usize>(rng: &mut Rng, kind: SelKind) -> ArcAction<S> {
    let op = rng.below(NUM_OPS as u32) as i32;
    let sel = match kind {
        SelKind::Mask => {
            // 32 fair bits per row: two rows per 64-bit draw.
            let rb = grid::row_bits::<S>();
            let mut m = [0u32; S];
            for pair in m.chunks_mut(2) {
                let bits = rng.next_u64();
                pair[0] = bits as u32 & rb;
                if let Some(r) = pair.get_mut(1) {
                    *r = (bits >> 32) as u32 & rb;
                }
            }
            Selection::Mask(m)
        }
        SelKind::BBox => {
            let x = rng.next_u64();
            let d = |k: u32| ((((x >> (16 * k)) & 0xffff) * S as u64) >> 16) as i32;
            Selection::BBox { r1: d(0), c1: d(1), r2: d(2), c2: d(3) }
        }
        SelKind::Point => {
            let x = rng.next_u64();
            Selection::Point {
                row: (((x & 0xffff_ffff) * S as u64) >> 32) as i32,
                col: (((x >> 32) * S as u64) >> 32) as i32,
            }
        }
    };
    ArcAction { op, sel }
}
