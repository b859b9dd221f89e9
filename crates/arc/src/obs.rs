//! Observations of the ARC environment: the two layouts ([`LayoutKind`]), the offsets of the
//! `full` layout ([`FullOffsets`]) with a typed view of it ([`FullObsView`]), the
//! observation space of each layout, and the code that writes a state's observation
//! (plain copies, no allocation).

use crate::grid::{self, Grid, Mask};
use crate::state::{ArcState, PairGrids};
use kestrel_core::Space;

/// Observation layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayoutKind {
    /// Working grid (`S×S`) then its dims `[h, w]`: `S*S + 2` elements.
    #[default]
    Compact,
    /// Everything ARCLE's observation dict exposes plus demonstration pairs; see
    /// [`FullObsView`].
    Full,
}

impl std::str::FromStr for LayoutKind {
    type Err = crate::error::ArcError;
    /// `compact` or `full`.
    fn from_str(s: &str) -> Result<Self, crate::error::ArcError> {
        match s {
            "compact" => Ok(LayoutKind::Compact),
            "full" => Ok(LayoutKind::Full),
            _ => {
                Err(kestrel_core::Invalid::new("layout", format!("{s:?}"), "compact or full")
                    .into())
            }
        }
    }
}

/// Writes the `compact` observation of `s` (grid, then dims): the first `S*S + 2`
/// elements of either layout.
#[inline]
pub(crate) fn write_compact<const S: usize>(s: &ArcState<S>, obs: &mut [i8]) {
    let n = S * S;
    put_grid(&mut obs[..n], &s.grid);
    obs[n] = s.dims[0] as i8;
    obs[n + 1] = s.dims[1] as i8;
}

/// Writes the rest of the `full` observation of `s` after [`write_compact`]: its pair
/// `pair` (input padded with -1 beyond its dims when `pad_input`, as JaxARC), ARCLE's
/// state fields, and the first `demo_pairs` of the task's demonstration pairs `demos`
/// (zeros past the last one).
#[inline]
pub(crate) fn write_full<const S: usize>(
    s: &ArcState<S>,
    pair: &PairGrids<S>,
    pad_input: bool,
    demos: &[PairGrids<S>],
    demo_pairs: usize,
    obs: &mut [i8],
) {
    let n = S * S;
    let o = FullOffsets::new(S);
    put_grid(&mut obs[o.input..o.input + n], &pair.input);
    if pad_input {
        let (ih, iw) = (pair.in_dims[0] as usize, pair.in_dims[1] as usize);
        for (r, row) in obs[o.input..o.input + n].chunks_exact_mut(S).enumerate() {
            row[if r < ih { iw } else { 0 }..].fill(-1);
        }
    }
    obs[o.input_dim] = pair.in_dims[0] as i8;
    obs[o.input_dim + 1] = pair.in_dims[1] as i8;
    put_mask(&mut obs[o.selected..o.selected + n], &s.selected);
    put_grid(&mut obs[o.clip..o.clip + n], &s.clip);
    obs[o.clip_dim] = s.clip_dim[0] as i8;
    obs[o.clip_dim + 1] = s.clip_dim[1] as i8;
    obs[o.active] = s.object.active as i8;
    put_grid(&mut obs[o.object..o.object + n], &s.object.object);
    put_mask(&mut obs[o.object_sel..o.object_sel + n], &s.object.object_sel);
    obs[o.object_dim..o.object_dim + 2].copy_from_slice(&s.object.dim);
    obs[o.object_pos..o.object_pos + 2].copy_from_slice(&s.object.pos);
    put_grid(&mut obs[o.background..o.background + n], &s.object.background);
    obs[o.rotation_parity] = s.object.parity;
    obs[o.trials_remain] = s.trials;
    obs[o.terminated] = s.terminated as i8;
    for k in 0..demo_pairs {
        let base = o.demos + k * o.demo_stride;
        let d = &mut obs[base..base + o.demo_stride];
        match demos.get(k) {
            Some(pg) => {
                put_grid(&mut d[..n], &pg.input);
                d[n..n + 2].copy_from_slice(&[pg.in_dims[0] as i8, pg.in_dims[1] as i8]);
                put_grid(&mut d[n + 2..2 * n + 2], &pg.output);
                d[2 * n + 2..2 * n + 4]
                    .copy_from_slice(&[pg.out_dims[0] as i8, pg.out_dims[1] as i8]);
            }
            None => d.fill(0),
        }
    }
}

#[inline]
fn put_grid<const S: usize>(dst: &mut [i8], g: &Grid<S>) {
    dst.copy_from_slice(g.as_flattened());
}

#[inline]
fn put_mask<const S: usize>(dst: &mut [i8], m: &Mask<S>) {
    for (d, &bits) in dst.chunks_exact_mut(S).zip(m.iter()) {
        grid::bits_to_cells(bits, d);
    }
}

/// The observation space of `layout` on an `S × S` canvas, as a dict in element order;
/// `low` is the lowest cell value of the working grid, input and clipboard (-1 with
/// JaxARC's padding, else 0).
pub(crate) fn obs_space<const S: usize>(layout: LayoutKind, low: f64, demo_pairs: u8) -> Space {
    let n = S * S;
    let cell = |low: f64| Space::Box { low, high: 9.0, shape: vec![S, S] };
    let dims = Space::Box { low: 0.0, high: S as f64, shape: vec![2] };
    let mut parts = vec![("grid", cell(low)), ("grid_dim", dims.clone())];
    if layout == LayoutKind::Full {
        let bin = |shape: Vec<usize>| Space::Box { low: 0.0, high: 1.0, shape };
        let i8box = |shape: Vec<usize>| Space::Box { low: -128.0, high: 127.0, shape };
        parts.extend([
            ("input", cell(low)),
            ("input_dim", dims.clone()),
            ("selected", bin(vec![S, S])),
            ("clip", cell(low)),
            ("clip_dim", dims.clone()),
            ("active", bin(vec![1])),
            ("object", cell(0.0)),
            ("object_sel", bin(vec![S, S])),
            ("object_dim", dims.clone()),
            ("object_pos", i8box(vec![2])),
            ("background", cell(0.0)),
            ("rotation_parity", bin(vec![1])),
            ("trials_remain", i8box(vec![1])),
            ("terminated", bin(vec![1])),
            (
                "demos",
                Space::Box {
                    low: 0.0,
                    high: S.max(9) as f64,
                    shape: vec![demo_pairs as usize, 2 * n + 4],
                },
            ),
        ]);
    }
    Space::Dict(parts)
}

/// Element offsets of the `full` observation layout for an `S × S` canvas (`n = S*S`):
///
/// | field | offset | len | ARCLE key |
/// |---|---|---|---|
/// | grid, grid_dim | 0, n | n, 2 | `grid`, `grid_dim` |
/// | input, input_dim | `input`, `input_dim` | n, 2 | `input`, `input_dim` |
/// | selected | `selected` | n | `selected` |
/// | clip, clip_dim | `clip`, `clip_dim` | n, 2 | `clip`, `clip_dim` |
/// | active | `active` | 1 | `object_states.active` |
/// | object, object_sel | `object`, `object_sel` | n, n | `object_states.object`, `.object_sel` |
/// | object_dim, object_pos | | 2, 2 | `object_states.object_dim`, `.object_pos` |
/// | background | `background` | n | `object_states.background` |
/// | rotation_parity, trials_remain, terminated | | 1, 1, 1 | same names |
/// | demos | `demos` | `demo_pairs × (2n + 4)` | input, in dims, output, out dims per pair |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct FullOffsets {
    pub input: usize,
    pub input_dim: usize,
    pub selected: usize,
    pub clip: usize,
    pub clip_dim: usize,
    pub active: usize,
    pub object: usize,
    pub object_sel: usize,
    pub object_dim: usize,
    pub object_pos: usize,
    pub background: usize,
    pub rotation_parity: usize,
    pub trials_remain: usize,
    pub terminated: usize,
    pub demos: usize,
    pub demo_stride: usize,
}

impl FullOffsets {
    /// Offsets for an `s × s` canvas.
    pub const fn new(s: usize) -> Self {
        let n = s * s;
        let input = n + 2;
        let input_dim = input + n;
        let selected = input_dim + 2;
        let clip = selected + n;
        let clip_dim = clip + n;
        let active = clip_dim + 2;
        let object = active + 1;
        let object_sel = object + n;
        let object_dim = object_sel + n;
        let object_pos = object_dim + 2;
        let background = object_pos + 2;
        let rotation_parity = background + n;
        let trials_remain = rotation_parity + 1;
        let terminated = trials_remain + 1;
        let demos = terminated + 1;
        FullOffsets {
            input,
            input_dim,
            selected,
            clip,
            clip_dim,
            active,
            object,
            object_sel,
            object_dim,
            object_pos,
            background,
            rotation_parity,
            trials_remain,
            terminated,
            demos,
            demo_stride: 2 * n + 4,
        }
    }

    /// Elements of one `full` observation with `demo_pairs` pairs.
    pub const fn len(&self, demo_pairs: usize) -> usize {
        self.demos + demo_pairs * self.demo_stride
    }
}

/// A typed, read-only view of one `full` observation.
#[derive(Clone, Copy, Debug)]
pub struct FullObsView<'a, const S: usize> {
    obs: &'a [i8],
    off: FullOffsets,
}

impl<'a, const S: usize> FullObsView<'a, S> {
    /// Views `obs` (one agent's `full` observation).
    pub fn new(obs: &'a [i8]) -> Self {
        FullObsView { obs, off: FullOffsets::new(S) }
    }
    fn grid(&self, at: usize) -> &'a [i8] {
        &self.obs[at..at + S * S]
    }
    /// Working grid, row-major `S*S`.
    pub fn grid_cells(&self) -> &'a [i8] {
        self.grid(0)
    }
    /// Working grid `[h, w]`.
    pub fn grid_dim(&self) -> [i8; 2] {
        [self.obs[S * S], self.obs[S * S + 1]]
    }
    /// Input grid.
    pub fn input(&self) -> &'a [i8] {
        self.grid(self.off.input)
    }
    /// Selection display (0/1).
    pub fn selected(&self) -> &'a [i8] {
        self.grid(self.off.selected)
    }
    /// Clipboard.
    pub fn clip(&self) -> &'a [i8] {
        self.grid(self.off.clip)
    }
    /// Clipboard `[h, w]`.
    pub fn clip_dim(&self) -> [i8; 2] {
        [self.obs[self.off.clip_dim], self.obs[self.off.clip_dim + 1]]
    }
    /// Object position.
    pub fn object_pos(&self) -> [i8; 2] {
        [self.obs[self.off.object_pos], self.obs[self.off.object_pos + 1]]
    }
    /// Remaining trials.
    pub fn trials_remain(&self) -> i8 {
        self.obs[self.off.trials_remain]
    }
    /// Demonstration pair `k`: (input, in dims, output, out dims).
    pub fn demo(&self, k: usize) -> (&'a [i8], [i8; 2], &'a [i8], [i8; 2]) {
        let n = S * S;
        let d = &self.obs[self.off.demos + k * self.off.demo_stride..][..self.off.demo_stride];
        (&d[..n], [d[n], d[n + 1]], &d[n + 2..2 * n + 2], [d[2 * n + 2], d[2 * n + 3]])
    }
}
