//! JaxARC's grid initialisation: how a `jaxarc`-mode reset fills the working grid
//! (`jaxarc/envs/grid_initialization.py` in JaxARC 1.0.3, `GridInitializationConfig`).
//!
//! A reset picks one of four modes by weight and builds the start grid from it:
//! - **demo**: the episode pair's input (JaxARC: a training input drawn on its own);
//! - **permutation**: that input after one transform: a rotation by 0–3 quarter turns
//!   (counter-clockwise, as `jnp.rot90`), a left-right or up-down reflection, or a
//!   permutation of the ten colours (0 included);
//! - **empty**: zeros over the input's area;
//! - **random**: noise over the input's area, `sparse` (each cell coloured 1–9 with
//!   probability `random_density`) or `dense` (sparse at 0.7 × density, then each empty cell
//!   next to a coloured one coloured with probability 0.3).
//!
//! The target is always the episode pair's output. Kestrel's default is demo only, as
//! JaxARC's Hydra config (what its `make()` uses); `GridInitializationConfig()`'s class
//! defaults are demo 0.4, permutation 0.3, empty 0.2, random 0.1.
//!
//! Where JaxARC 1.0.3 misbehaves, [`JaxBugs`] switches its behaviour back on (all on in
//! [`JaxBugs::all`]; the golden test `tests/golden_jaxarc_init.rs` replays JaxARC's own
//! starts from its recorded draws):
//! - `wrong_pair_init`: demo and permutation starts copy a training input drawn on their
//!   own (in the test split too), and empty and random starts take training pair 0's area;
//! - `init_canvas_transform`: rotations and reflections turn the whole padded canvas while
//!   the working area stays where it was, so content moves into the padding;
//! - `init_zero_padding`: empty and random starts write 0 into the padding, a colour
//!   permutation maps the padding (-1, clipped to 0) as colour 0, and the noise is drawn over
//!   the whole canvas, so coloured cells in the padding seed dense clusters at the area's
//!   border (fixed: the area's own noise);
//! - `permutation_pick_all`: the transform is drawn from all three kinds, and a kind left
//!   out of `permutation_types` leaves the grid unchanged instead of not being drawn.
//!
//! Kestrel draws with its own generator ([`GridInit::draw`]), so starts agree with JaxARC's
//! in distribution, not key for key. JaxARC derives the transform kind, the quarter turns,
//! the reflection and the colour permutation from one key; Kestrel draws them independently.

use crate::error::ArcError;
use crate::grid::{self, Grid, Mask};
use crate::jaxarc::{JaxBugs, short_f32};
use crate::state::PairGrids;
use kestrel_core::{FromInvalid, Key};

/// A transform a permutation start can apply (JaxARC's `permutation_types`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Permutation {
    /// 0–3 quarter turns.
    Rotate,
    /// Left-right or up-down.
    Reflect,
    /// A permutation of the colours 0–9.
    #[serde(alias = "color_remap")]
    ColorRemap,
}

/// JaxARC's `random_pattern_type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Each cell coloured 1–9 with probability `random_density`.
    #[default]
    Sparse,
    /// Sparse at 0.7 × density, then empty neighbours of coloured cells filled with
    /// probability 0.3.
    Dense,
}

/// How a `jaxarc`-mode reset fills the working grid (JaxARC's `GridInitializationConfig`,
/// same keys). Weights need not sum to 1. `Default`: demo only (JaxARC's Hydra default).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct GridInit {
    /// Weight of starting from the pair's input.
    #[serde(serialize_with = "short_f32")]
    pub demo_weight: f32,
    /// Weight of starting from the input after a rotation, reflection or colour permutation.
    #[serde(serialize_with = "short_f32")]
    pub permutation_weight: f32,
    /// Weight of starting from zeros over the input's area.
    #[serde(serialize_with = "short_f32")]
    pub empty_weight: f32,
    /// Weight of starting from random colours over the input's area.
    #[serde(serialize_with = "short_f32")]
    pub random_weight: f32,
    /// Transforms a permutation start draws from: `rotate`, `reflect`, `color-remap` (JaxARC's `color_remap` reads too).
    pub permutation_types: Vec<Permutation>,
    /// Probability that a random start colours a cell (0 to 1).
    #[serde(serialize_with = "short_f32")]
    pub random_density: f32,
    /// Random starts' pattern: `sparse` or `dense`.
    pub random_pattern_type: Pattern,
}

impl Default for GridInit {
    fn default() -> Self {
        GridInit {
            demo_weight: 1.0,
            permutation_weight: 0.0,
            empty_weight: 0.0,
            random_weight: 0.0,
            permutation_types: vec![
                Permutation::Rotate,
                Permutation::Reflect,
                Permutation::ColorRemap,
            ],
            random_density: 0.3,
            random_pattern_type: Pattern::Sparse,
        }
    }
}

/// One start's transform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// The grid unchanged.
    Identity,
    /// `k` counter-clockwise quarter turns (0–3).
    Rotate(u8),
    /// Columns reversed (`jnp.fliplr`).
    FlipLr,
    /// Rows reversed (`jnp.flipud`).
    FlipUd,
    /// Colour `c` becomes `map[c]`.
    Remap([i8; 10]),
}

/// The random cells of a random start, over the whole canvas (as JaxARC draws them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Noise<const S: usize> {
    /// Cells the sparse pattern colours.
    pub base: Mask<S>,
    /// Their colours (1–9).
    pub colors: Grid<S>,
    /// Dense only: cells a neighbour may fill (probability 0.3 each).
    pub cluster: Mask<S>,
    /// Dense only: the colours those cells get (1–9).
    pub cluster_colors: Grid<S>,
}

/// Every random choice of one start: drawn by [`GridInit::draw`], or recorded from JaxARC
/// (the golden test). The noise is held inline, not boxed: a reset allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Start<const S: usize> {
    /// The input of the episode pair, or of training pair `source` under `wrong_pair_init`.
    Demo {
        /// Training pair (taken modulo their number; read only under `wrong_pair_init`).
        source: usize,
    },
    /// As `Demo`, then a transform.
    Permutation {
        /// As in `Demo`.
        source: usize,
        /// The transform.
        transform: Transform,
    },
    /// Zeros over the area.
    Empty,
    /// Noise over the area (sparse or dense by [`GridInit::random_pattern_type`]).
    Random(Noise<S>),
}

impl GridInit {
    /// `GridInitializationConfig()`'s class defaults in JaxARC 1.0.3: demo 0.4, permutation
    /// 0.3, empty 0.2, random 0.1, every permutation kind, sparse noise at 0.3.
    pub fn jaxarc_mixture() -> Self {
        GridInit {
            demo_weight: 0.4,
            permutation_weight: 0.3,
            empty_weight: 0.2,
            random_weight: 0.1,
            ..GridInit::default()
        }
    }

    /// Whether every start is a demo start (the weights of the other modes are 0).
    pub fn demo_only(&self) -> bool {
        self.permutation_weight == 0.0 && self.empty_weight == 0.0 && self.random_weight == 0.0
    }

    /// Checks the weights and the density (as JaxARC's `validate`), naming the key under
    /// `init.`; in `o2arc` mode (`jaxarc` false) only demo starts are allowed.
    pub fn validate(&self, jaxarc: bool) -> Result<(), ArcError> {
        if !jaxarc && !self.demo_only() {
            return Err(ArcError::invalid(
                "init",
                "a permutation, empty or random weight above 0",
                "demo starts only in o2arc mode (JaxARC's grid initialisation)",
            ));
        }
        for (key, w) in self.weights_named() {
            if !(w.is_finite() && w >= 0.0) {
                return Err(ArcError::invalid(key, w, "a finite weight, 0 or more"));
            }
        }
        let sum = self.weights().iter().sum::<f32>();
        if sum <= 0.0 {
            return Err(ArcError::invalid(
                "init.demo_weight",
                self.demo_weight,
                "a positive weight on at least one mode (all four are 0)",
            ));
        }
        // Each weight finite can still overflow the sum, which the mode draw divides by.
        if !sum.is_finite() {
            return Err(ArcError::invalid(
                "init.demo_weight",
                self.demo_weight,
                "weights whose sum is finite (the four overflow f32)",
            ));
        }
        if !(0.0..=1.0).contains(&self.random_density) {
            return Err(ArcError::invalid("init.random_density", self.random_density, "0 to 1"));
        }
        if self.permutation_weight > 0.0 && self.permutation_types.is_empty() {
            return Err(ArcError::invalid(
                "init.permutation_types",
                "[]",
                "at least one of rotate, reflect, color-remap when permutation_weight > 0",
            ));
        }
        Ok(())
    }

    fn weights(&self) -> [f32; 4] {
        [self.demo_weight, self.permutation_weight, self.empty_weight, self.random_weight]
    }

    fn weights_named(&self) -> [(&'static str, f32); 4] {
        let w = self.weights();
        [
            ("init.demo_weight", w[0]),
            ("init.permutation_weight", w[1]),
            ("init.empty_weight", w[2]),
            ("init.random_weight", w[3]),
        ]
    }

    /// The start a reset from `key` makes, for a task with `train` training pairs. Demo-only
    /// params draw only the `wrong_pair_init` source, from the stream resets always used.
    pub fn draw<const S: usize>(&self, bugs: &JaxBugs, train: usize, key: Key) -> Start<S> {
        let mode =
            if self.demo_only() { 0 } else { key.fold_in(3).rng().categorical(&self.weights()) };
        let source = if bugs.wrong_pair_init && mode <= 1 {
            key.fold_in(2).rng().below(train as u32) as usize
        } else {
            0
        };
        let mut rng = key.fold_in(4).rng();
        match mode {
            0 => Start::Demo { source },
            1 => {
                let all = [Permutation::Rotate, Permutation::Reflect, Permutation::ColorRemap];
                let kind = if bugs.permutation_pick_all {
                    let k = all[rng.below(3) as usize];
                    self.permutation_types.contains(&k).then_some(k)
                } else {
                    // The enabled kinds in a fixed order, so a draw does not depend on how
                    // `permutation_types` lists them.
                    let mut on = [Permutation::Rotate; 3];
                    let mut n = 0;
                    for k in all.into_iter().filter(|k| self.permutation_types.contains(k)) {
                        on[n] = k;
                        n += 1;
                    }
                    (n > 0).then(|| on[rng.below(n as u32) as usize])
                };
                let transform = match kind {
                    None => Transform::Identity,
                    Some(Permutation::Rotate) => Transform::Rotate(rng.below(4) as u8),
                    Some(Permutation::Reflect) => {
                        if rng.below(2) == 0 {
                            Transform::FlipLr
                        } else {
                            Transform::FlipUd
                        }
                    }
                    Some(Permutation::ColorRemap) => {
                        let mut map: [i8; 10] = std::array::from_fn(|c| c as i8);
                        for i in (1..10).rev() {
                            map.swap(i, rng.below(i as u32 + 1) as usize);
                        }
                        Transform::Remap(map)
                    }
                };
                Start::Permutation { source, transform }
            }
            2 => Start::Empty,
            _ => {
                let dense = self.random_pattern_type == Pattern::Dense;
                let density = if dense { self.random_density * 0.7 } else { self.random_density };
                let mut n = Noise {
                    base: [0; S],
                    colors: [[0; S]; S],
                    cluster: [0; S],
                    cluster_colors: [[0; S]; S],
                };
                for r in 0..S {
                    for c in 0..S {
                        n.base[r] |= u32::from(rng.bernoulli(density)) << c;
                        n.colors[r][c] = 1 + rng.below(9) as i8;
                        if dense {
                            n.cluster[r] |= u32::from(rng.bernoulli(0.3)) << c;
                            n.cluster_colors[r][c] = 1 + rng.below(9) as i8;
                        }
                    }
                }
                Start::Random(n)
            }
        }
    }

    /// The working grid and its `[h, w]` that `start` makes for an episode on pair `own`
    /// of a task with training pairs `train` (cells outside the area -1 unless a bug
    /// writes there).
    pub(crate) fn build<const S: usize>(
        &self,
        start: &Start<S>,
        bugs: &JaxBugs,
        train: &[PairGrids<S>],
        own: &PairGrids<S>,
    ) -> (Grid<S>, [u8; 2]) {
        let source = |i: usize| if bugs.wrong_pair_init { &train[i % train.len()] } else { own };
        let padded = |pg: &PairGrids<S>| {
            let mut g = pg.input;
            grid::fill_outside(&mut g, pg.in_dims[0].into(), pg.in_dims[1].into(), -1);
            (g, pg.in_dims)
        };
        match start {
            Start::Demo { source: i } => padded(source(*i)),
            Start::Permutation { source: i, transform } => {
                let (g, dims) = padded(source(*i));
                apply(g, dims, *transform, bugs)
            }
            Start::Empty | Start::Random(_) => {
                let area = source(0).in_dims;
                let mut g = [[0i8; S]; S];
                if let Start::Random(n) = start {
                    // JaxARC draws the noise over the whole canvas, so coloured cells in
                    // the padding seed dense clusters at the area's border; fixed, the
                    // noise is the area's own.
                    let own = (!bugs.init_zero_padding).then_some(area);
                    g = pattern(n, self.random_pattern_type, own);
                }
                let pad = if bugs.init_zero_padding { 0 } else { -1 };
                grid::fill_outside(&mut g, area[0].into(), area[1].into(), pad);
                (g, area)
            }
        }
    }
}

/// `t` applied to the padded grid `g` with area `dims`: over the whole canvas with the area
/// kept (`init_canvas_transform`), or over the area, which a quarter turn transposes.
fn apply<const S: usize>(
    g: Grid<S>,
    dims: [u8; 2],
    t: Transform,
    bugs: &JaxBugs,
) -> (Grid<S>, [u8; 2]) {
    let canvas = bugs.init_canvas_transform;
    let [h, w] = if canvas { [S, S] } else { dims.map(usize::from) };
    // Output cell (r, c) of the h' × w' result reads input cell at(r, c).
    let moved = |at: &dyn Fn(usize, usize) -> (usize, usize), oh: usize, ow: usize| {
        let mut out = [[-1i8; S]; S];
        for (r, row) in out.iter_mut().enumerate().take(oh) {
            for (c, x) in row.iter_mut().enumerate().take(ow) {
                let (i, j) = at(r, c);
                *x = g[i][j];
            }
        }
        let new = if canvas { dims } else { [oh as u8, ow as u8] };
        (out, new)
    };
    match t {
        Transform::Identity | Transform::Rotate(0) => (g, dims),
        // jnp.rot90(m, 1)[r][c] = m[c][w-1-r]; k = 2 and 3 follow.
        Transform::Rotate(1) => moved(&|r, c| (c, w - 1 - r), w, h),
        Transform::Rotate(2) => moved(&|r, c| (h - 1 - r, w - 1 - c), h, w),
        Transform::Rotate(_) => moved(&|r, c| (h - 1 - c, r), w, h),
        Transform::FlipLr => moved(&|r, c| (r, w - 1 - c), h, w),
        Transform::FlipUd => moved(&|r, c| (h - 1 - r, c), h, w),
        Transform::Remap(map) => {
            let mut out = g;
            for (r, row) in out.iter_mut().enumerate() {
                for (c, x) in row.iter_mut().enumerate() {
                    let inside = r < h && c < w;
                    if inside || bugs.init_zero_padding {
                        // JaxARC clips to 0–9 first, so its -1 padding maps as colour 0.
                        *x = map[(*x).clamp(0, 9) as usize];
                    }
                }
            }
            (out, dims)
        }
    }
}

/// The random pattern over the whole canvas (JaxARC's `_generate_sparse_pattern` and
/// `_generate_dense_pattern`, whose 3 × 3 convolution marks the empty cells next to a
/// coloured one).
fn pattern<const S: usize>(n: &Noise<S>, p: Pattern, area: Option<[u8; 2]>) -> Grid<S> {
    let bit = |m: &Mask<S>, r: usize, c: usize| m[r] >> c & 1 != 0;
    let [h, w] = area.map_or([S, S], |a| a.map(usize::from));
    let base: Grid<S> =
        std::array::from_fn(|r| {
            std::array::from_fn(|c| {
                if r < h && c < w && bit(&n.base, r, c) { n.colors[r][c] } else { 0 }
            })
        });
    if p == Pattern::Sparse {
        return base;
    }
    std::array::from_fn(|r| {
        std::array::from_fn(|c| {
            let near = (r.saturating_sub(1)..(r + 2).min(S))
                .any(|i| (c.saturating_sub(1)..(c + 2).min(S)).any(|j| base[i][j] != 0));
            if base[r][c] == 0 && near && bit(&n.cluster, r, c) {
                n.cluster_colors[r][c]
            } else {
                base[r][c]
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{GridData, Pair};

    const S: usize = 5;

    /// A pair whose `h × w` input reads 1, 2, 3, … row by row (0 after 9 wraps to 1).
    fn pair(h: usize, w: usize) -> PairGrids<S> {
        let cells = (0..h * w).map(|i| (i % 9 + 1) as u8).collect();
        let input = GridData { h, w, cells };
        PairGrids::from_pair(&Pair { output: input.clone(), input })
    }

    /// The rows of a canvas as strings, `.` for -1.
    fn rows(g: &Grid<S>) -> Vec<String> {
        g.iter()
            .map(|r| {
                r.iter().map(|&v| if v < 0 { '.' } else { (b'0' + v as u8) as char }).collect()
            })
            .collect()
    }

    fn built(start: Start<S>, bugs: JaxBugs) -> (Vec<String>, [u8; 2]) {
        let train = [pair(1, 1), pair(3, 2)];
        let (g, d) = GridInit::default().build(&start, &bugs, &train, &pair(2, 3));
        (rows(&g), d)
    }

    fn permuted(t: Transform, bugs: JaxBugs) -> (Vec<String>, [u8; 2]) {
        built(Start::Permutation { source: 1, transform: t }, bugs)
    }

    const FIXED: JaxBugs = JaxBugs {
        inverted_moves: false,
        canvas_rotation: false,
        shrink_only_resize: false,
        flood_fill_cap: false,
        wrong_pair_init: false,
        eval_no_success: false,
        top_left_similarity: false,
        clear_overwrites_padding: false,
        copy_input_keeps_mask: false,
        init_canvas_transform: false,
        init_zero_padding: false,
        permutation_pick_all: false,
    };

    /// Fixed: every start is made from the episode pair's own input (the 2 × 3 grid 123/456),
    /// transformed within its area (a quarter turn transposes it), padding -1.
    #[test]
    fn fixed_starts_transform_the_own_input_within_its_area() {
        let pad = ".....";
        let g = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            built(Start::Demo { source: 1 }, FIXED),
            (g(&["123..", "456..", pad, pad, pad]), [2, 3])
        );
        let ccw = g(&["36...", "25...", "14...", pad, pad]);
        assert_eq!(
            permuted(Transform::Rotate(1), FIXED),
            (ccw, [3, 2]),
            "jnp.rot90 turns counter-clockwise"
        );
        assert_eq!(
            permuted(Transform::Rotate(2), FIXED),
            (g(&["654..", "321..", pad, pad, pad]), [2, 3])
        );
        assert_eq!(
            permuted(Transform::Rotate(3), FIXED),
            (g(&["41...", "52...", "63...", pad, pad]), [3, 2])
        );
        assert_eq!(permuted(Transform::Rotate(0), FIXED).0, g(&["123..", "456..", pad, pad, pad]));
        assert_eq!(permuted(Transform::FlipLr, FIXED).0, g(&["321..", "654..", pad, pad, pad]));
        assert_eq!(permuted(Transform::FlipUd, FIXED).0, g(&["456..", "123..", pad, pad, pad]));
        let swap = Transform::Remap([5, 9, 8, 7, 6, 0, 4, 3, 2, 1]);
        assert_eq!(
            permuted(swap, FIXED).0,
            g(&["987..", "604..", pad, pad, pad]),
            "padding stays -1"
        );
        assert_eq!(built(Start::Empty, FIXED), (g(&["000..", "000..", pad, pad, pad]), [2, 3]));
    }

    /// With JaxARC's bugs: demo and permutation starts copy training pair `source` (the
    /// 3 × 2 grid 12/34/56), transforms turn the whole canvas with the area kept, empty and
    /// random starts take training pair 0's area (1 × 1) with 0 padding, and a colour
    /// permutation maps the padding as colour 0.
    #[test]
    fn jaxarc_bugs_copy_another_pair_and_turn_the_canvas() {
        let all = JaxBugs::all();
        let g = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let pad = ".....";
        assert_eq!(
            built(Start::Demo { source: 3 }, all),
            (g(&["12...", "34...", "56...", pad, pad]), [3, 2])
        );
        assert_eq!(
            permuted(Transform::Rotate(1), all),
            (g(&[pad, pad, pad, "246..", "135.."]), [3, 2]),
            "content turned into the padding; the area still the top-left 3 x 2"
        );
        assert_eq!(permuted(Transform::FlipLr, all).0, g(&["...21", "...43", "...65", pad, pad]));
        let remap = Transform::Remap([7, 9, 8, 1, 2, 3, 4, 5, 6, 0]);
        assert_eq!(permuted(remap, all).0, g(&["98777", "12777", "34777", "77777", "77777"]));
        assert_eq!(built(Start::Empty, all), (g(&["00000"; 5]), [1, 1]));
    }

    /// The random pattern: sparse colours exactly the base cells; dense also colours the
    /// empty cluster cells that touch a base cell (the 3 × 3 neighbourhood), and nothing
    /// else; the area is training pair 0's under the bug, the own input's when fixed.
    #[test]
    fn random_patterns_follow_the_neighbourhood_rule() {
        let mut n = Noise::<S> {
            base: [0b00001, 0, 0, 0, 0],
            colors: [[3; S]; S],
            cluster: [0b11111; S],
            cluster_colors: [[8; S]; S],
        };
        n.colors[0][0] = 4;
        assert_eq!(
            rows(&pattern(&n, Pattern::Sparse, None)),
            ["40000", "00000", "00000", "00000", "00000"]
        );
        assert_eq!(
            rows(&pattern(&n, Pattern::Dense, None)),
            ["48000", "88000", "00000", "00000", "00000"]
        );
        // A coloured cell outside the area seeds clusters on the whole canvas (JaxARC), not
        // within the area (fixed).
        let mut out = n.clone();
        out.base = [0b00100, 0, 0, 0, 0];
        assert_eq!(rows(&pattern(&out, Pattern::Dense, None))[..2], ["08380", "08880"]);
        assert_eq!(rows(&pattern(&out, Pattern::Dense, Some([2, 2])))[..2], ["00000", "00000"]);
        n.cluster = [0b00000, 0b00010, 0, 0, 0];
        assert_eq!(rows(&pattern(&n, Pattern::Dense, None))[..2], ["40000", "08000"]);
        let init = GridInit { random_pattern_type: Pattern::Dense, ..GridInit::default() };
        let train = [pair(1, 1), pair(3, 2)];
        let (g, d) = init.build(&Start::Random(n.clone()), &FIXED, &train, &pair(2, 3));
        assert_eq!(
            (rows(&g), d),
            (["400..", "080..", ".....", ".....", "....."].map(String::from).to_vec(), [2, 3])
        );
        let (g, d) = init.build(&Start::Random(n), &JaxBugs::all(), &train, &pair(2, 3));
        assert_eq!(
            (rows(&g), d),
            (["40000", "00000", "00000", "00000", "00000"].map(String::from).to_vec(), [1, 1])
        );
    }

    /// Kestrel's draws: modes by weight, transforms among the enabled kinds (or among all
    /// three, a disabled one the identity, under the bug), colour maps that are
    /// permutations, noise at the density with colours 1–9, and demo-only params reading
    /// nothing but the `wrong_pair_init` source.
    #[test]
    fn draws_follow_the_weights_and_the_kinds() {
        let init = GridInit { random_pattern_type: Pattern::Dense, ..GridInit::jaxarc_mixture() };
        let n = 20_000;
        let (mut modes, mut base, mut cluster, mut remaps) = ([0usize; 4], 0u32, 0u32, 0);
        for k in 0..n {
            match init.draw::<S>(&FIXED, 3, Key::new(k)) {
                Start::Demo { source } => (modes[0] += 1, assert_eq!(source, 0)).0,
                Start::Permutation { transform, .. } => {
                    modes[1] += 1;
                    if let Transform::Remap(m) = transform {
                        remaps += 1;
                        let mut sorted = m;
                        sorted.sort();
                        assert_eq!(sorted, std::array::from_fn(|c| c as i8));
                    }
                }
                Start::Empty => modes[2] += 1,
                Start::Random(z) => {
                    modes[3] += 1;
                    base += z.base.iter().map(|r| r.count_ones()).sum::<u32>();
                    cluster += z.cluster.iter().map(|r| r.count_ones()).sum::<u32>();
                    let colours = z.colors.iter().chain(&z.cluster_colors).flatten();
                    assert!(colours.clone().all(|c| (1..=9).contains(c)));
                }
            }
        }
        for (m, w) in modes.iter().zip([0.4, 0.3, 0.2, 0.1]) {
            assert!((*m as f64 / n as f64 - w).abs() < 0.015, "{modes:?}");
        }
        let cells = (modes[3] * S * S) as f64;
        assert!((base as f64 / cells - 0.21).abs() < 0.01, "dense base density 0.7 x 0.3");
        assert!((cluster as f64 / cells - 0.3).abs() < 0.01);
        assert!((remaps as f64 / modes[1] as f64 - 1.0 / 3.0).abs() < 0.03);

        let rotate_only = GridInit {
            demo_weight: 0.0,
            permutation_weight: 1.0,
            permutation_types: vec![Permutation::Rotate],
            ..GridInit::default()
        };
        let identity = |bugs: &JaxBugs| {
            (0..3000)
                .filter(|&k| {
                    let s = rotate_only.draw::<S>(bugs, 1, Key::new(k));
                    let Start::Permutation { transform, .. } = s else { panic!("{s:?}") };
                    assert!(matches!(transform, Transform::Identity | Transform::Rotate(_)));
                    matches!(transform, Transform::Identity | Transform::Rotate(0))
                })
                .count() as f64
                / 3000.0
        };
        assert!((identity(&FIXED) - 0.25).abs() < 0.03, "only the 0 turn is the identity");
        assert!((identity(&JaxBugs::all()) - 0.75).abs() < 0.03, "2/3 + 1/3 x 1/4 under the bug");

        let demo = GridInit::default();
        let wrong = JaxBugs { wrong_pair_init: true, ..FIXED };
        let sources: std::collections::BTreeSet<usize> = (0..200)
            .map(|k| match demo.draw::<S>(&wrong, 3, Key::new(k)) {
                Start::Demo { source } => {
                    assert_eq!(
                        source as u32,
                        Key::new(k).fold_in(2).rng().below(3),
                        "the stream resets used"
                    );
                    source
                }
                s => panic!("{s:?}"),
            })
            .collect();
        assert_eq!(sources.into_iter().collect::<Vec<_>>(), [0, 1, 2]);
    }

    /// Bad settings name the key and the value.
    #[test]
    fn bad_settings_name_the_key() {
        let e = |g: GridInit, jaxarc: bool| g.validate(jaxarc).unwrap_err().to_string();
        let d = GridInit::default();
        d.validate(true).unwrap();
        d.validate(false).unwrap();
        assert_eq!(
            e(GridInit { empty_weight: -1.0, ..d.clone() }, true),
            "invalid init.empty_weight = -1: a finite weight, 0 or more"
        );
        assert!(
            e(GridInit { random_weight: f32::NAN, ..d.clone() }, true)
                .contains("init.random_weight = NaN")
        );
        assert!(e(GridInit { demo_weight: 0.0, ..d.clone() }, true).contains("all four are 0"));
        let huge = GridInit { demo_weight: f32::MAX, random_weight: f32::MAX, ..d.clone() };
        assert!(e(huge, true).contains("sum is finite"));
        GridInit::jaxarc_mixture().validate(true).unwrap();
        assert_eq!(
            e(GridInit { random_density: 1.5, ..d.clone() }, true),
            "invalid init.random_density = 1.5: 0 to 1"
        );
        let none = GridInit { permutation_weight: 1.0, permutation_types: vec![], ..d.clone() };
        assert!(e(none.clone(), true).starts_with("invalid init.permutation_types = []"));
        GridInit { permutation_weight: 0.0, ..none }.validate(true).unwrap();
        assert!(e(GridInit { empty_weight: 0.5, ..d }, false).contains("o2arc"));
    }
}
