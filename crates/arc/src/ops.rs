//! The interface both op tables implement ([`OpTable`]): [`NUM_OPS`] named operations, a
//! Submit, the rule for an op id outside the table, and a step that edits an
//! [`ArcState`] and scores it. `o2arc.rs` (ARCLE `O2ARCv2Env`) and `jaxarc.rs` (JaxARC)
//! implement it; `env.rs` picks one per step with a `match` on the mode, so every call is
//! statically dispatched and nothing allocates.

use crate::grid::Mask;
use crate::state::{ArcState, PairGrids};

/// Number of operations in both op tables.
pub const NUM_OPS: i32 = 35;

/// One table of ARC operations and its rewards. Implemented by
/// [`O2arcTable`](crate::o2arc::O2arcTable) and [`JaxarcTable`](crate::jaxarc::JaxarcTable); a table value
/// carries the settings of [`ArcParams`](crate::env::ArcParams) its mode reads.
pub trait OpTable {
    /// A decoded operation.
    type Op: Copy + Eq + std::fmt::Debug;

    /// Operation names, indexed by op id.
    const NAMES: [&'static str; NUM_OPS as usize];

    /// The op an action's raw op id selects, or `None` when the step is ignored (state
    /// unchanged, reward 0, `terminated` as before).
    fn decode(op: i32) -> Option<Self::Op>;

    /// The op id of a decoded op (`decode(index(op)) == Some(op)`).
    fn index(op: Self::Op) -> i32;

    /// Whether `op` submits the working grid.
    fn is_submit(op: Self::Op) -> bool;

    /// Applies `op` with the selection `sel` (already clipped to the canvas) to `s`, whose
    /// pair is `pair`; returns `(reward, terminated)`. The caller counts the step.
    fn apply<const S: usize>(
        &self,
        s: &mut ArcState<S>,
        op: Self::Op,
        sel: &Mask<S>,
        pair: &PairGrids<S>,
    ) -> (f32, bool);

    /// The name of op id `op`, if it is in the table.
    fn name(op: i32) -> Option<&'static str> {
        usize::try_from(op).ok().and_then(|i| Self::NAMES.get(i).copied())
    }

    /// The op id named `name` (exact match), if any.
    fn index_of(name: &str) -> Option<i32> {
        Self::NAMES.iter().position(|&n| n == name).map(|i| i as i32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jaxarc::JaxarcTable;
    use crate::o2arc::O2arcTable;

    /// Names and decoded ops agree with op ids, both ways, in a table.
    fn check_table<T: OpTable>() {
        assert_eq!(T::NAMES.len(), NUM_OPS as usize);
        for (i, &name) in T::NAMES.iter().enumerate() {
            let id = i as i32;
            assert_eq!(T::name(id), Some(name));
            assert_eq!(T::index_of(name), Some(id), "{name}");
            let op = T::decode(id).expect("every id in the table decodes");
            assert_eq!(T::index(op), id);
            assert_eq!(T::is_submit(op), name == "Submit");
            // Variants are named as the table (`Color(3)` is "Color3", `RotateCw` "RotateCW").
            let dbg = format!("{op:?}").replace(['(', ')'], "");
            assert!(dbg.eq_ignore_ascii_case(name), "{dbg} vs {name}");
        }
        assert_eq!(T::name(-1), None);
        assert_eq!(T::name(NUM_OPS), None);
        assert_eq!(T::index_of("NoSuchOp"), None);
    }

    #[test]
    fn tables_name_every_op_both_ways() {
        check_table::<O2arcTable>();
        check_table::<JaxarcTable>();
    }

    #[test]
    fn out_of_range_ops_ignored_by_o2arc_clipped_by_jaxarc() {
        use crate::jaxarc::JaxarcOp;
        use crate::o2arc::O2arcOp;
        assert_eq!(O2arcTable::decode(-1), None);
        assert_eq!(O2arcTable::decode(NUM_OPS), None);
        assert_eq!(O2arcTable::decode(20), Some(O2arcOp::MoveU));
        assert_eq!(JaxarcTable::decode(-7), Some(JaxarcOp::Fill(0)));
        assert_eq!(JaxarcTable::decode(99), Some(JaxarcOp::Submit));
    }
}
