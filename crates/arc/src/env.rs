//! The ARC grid-editing environment, with two named semantics modes.
//!
//! | | `o2arc` (default, ARCLE `O2ARCv2Env` 0.2.6) | `jaxarc` (JaxARC 1.0.3) |
//! |---|---|---|
//! | observation | `compact`: grid (`S×S` i8) + dims; `full`: [`FullObsView`] layout | same layouts; grid padded with -1 |
//! | action | [`ArcAction`]: op 0–34 + mask, bbox or point selection | same; op ids per JaxARC's table |
//! | reward | 1 for a Submit whose grid equals the answer (dims and cells), else 0 | similarity delta + step penalty + success bonus / unsolved penalty ([`JaxRewards`]) |
//! | terminated | correct Submit, or trials exhausted (`max_trials`); sticky as in ARCLE | every Submit |
//! | truncated | `max_episode_steps` (default 150; ARCLE itself has none) applied by `VecEnv` | same (JaxARC: 150) |
//!
//! Invalid actions, one behaviour each (tested):
//! - op outside 0–34: `o2arc` ignores the step (state unchanged, reward 0; ARCLE raises
//!   `IndexError`, or runs Python's negative index); `jaxarc` clips to 0–34 as JaxARC does.
//! - bbox and point coordinates are clipped to the canvas `[0, S-1]` (JaxARC's wrappers);
//!   bbox corners are ordered. Mask bits beyond column `S-1` are ignored.
//! - a selection outside `grid_dim` but on the canvas is kept in `o2arc` (ARCLE edits the
//!   stale cells there) and dropped in `jaxarc` (ANDed with the working mask).
//!
//! References: ARCLE, Lee et al. 2024 (<https://github.com/ConfeitoHS/arcle>); JaxARC,
//! arXiv:2601.17564 (<https://github.com/aadimator/JaxARC>). Exact semantics are in
//! `shared/reference/arc.md` and proven by the golden tests in `tests/golden_*.rs`.

use crate::grid::{self, Grid, Mask};
use crate::task::TaskBank;
use crate::{ArcError, jaxarc, o2arc};
use kestrel_core::{Env, Key, Rng, Space, Spec};
use std::sync::Arc;

/// Number of operations in both op tables.
pub const NUM_OPS: i32 = 35;

/// Which environment's rules.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// ARCLE `O2ARCv2Env` 0.2.6.
    #[default]
    O2arc,
    /// JaxARC 1.0.3 (bugs fixed unless switched back on in [`JaxBugs`]).
    Jaxarc,
}

/// Observation layout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// Working grid (`S×S`) then its dims `[h, w]`: `S*S + 2` elements.
    #[default]
    Compact,
    /// Everything ARCLE's observation dict exposes plus demonstration pairs; see
    /// [`FullObsView`].
    Full,
}

/// Which pairs an episode is drawn from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Split {
    /// Demonstration pairs (ARCLE `adaptation=True`, JaxARC train mode).
    #[default]
    Train,
    /// Test pairs (ARCLE `adaptation=False`, JaxARC eval mode).
    Test,
}

/// JaxARC reward weights. `Default` is JaxARC's Hydra `reward/training.yaml`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JaxRewards {
    /// Added every step.
    pub step_penalty: f32,
    /// Added on a solved Submit.
    pub success_bonus: f32,
    /// Added on an unsolved Submit.
    pub unsolved_submission_penalty: f32,
    /// Weight of the similarity improvement (train split only).
    pub similarity_weight: f32,
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
    /// The start grid is a random train input, not the episode pair's input.
    pub wrong_pair_init: bool,
    /// On the test split the target is empty, so no Submit can succeed.
    pub eval_no_success: bool,
    /// Similarity only checks the target's top-left rectangle (a larger grid can score 1).
    pub top_left_similarity: bool,
    /// Clear with an empty selection zeroes the whole canvas, padding included.
    pub clear_overwrites_padding: bool,
    /// Copy-input keeps the old working mask (so -1 padding can enter the working area).
    pub copy_input_keeps_mask: bool,
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
        }
    }
}

/// Everything one tunes. `Default` is ARCLE `O2ARCv2Env` with a 150-step limit.
#[derive(Clone, Debug, PartialEq)]
pub struct ArcParams {
    /// Semantics mode.
    pub mode: Mode,
    /// Observation layout.
    pub layout: Layout,
    /// Train or test pairs.
    pub split: Split,
    /// Tasks to sample from uniformly (indices into the bank); `None` for all.
    pub tasks: Option<Arc<[u32]>>,
    /// Fixed pair index (taken modulo the number of pairs); `None` for uniform.
    pub pair: Option<u16>,
    /// ARCLE `max_trial`: Submits allowed (-1 for unlimited; o2arc only).
    pub max_trials: i8,
    /// ARCLE `reset_on_submit` (o2arc only).
    pub reset_on_submit: bool,
    /// Truncation limit applied by `VecEnv`.
    pub max_episode_steps: Option<u32>,
    /// JaxARC reward weights (jaxarc only).
    pub rewards: JaxRewards,
    /// JaxARC bug switches (jaxarc only).
    pub bugs: JaxBugs,
    /// Demonstration pairs written into the `full` layout (0–10).
    pub demo_pairs: u8,
}

impl Default for ArcParams {
    fn default() -> Self {
        ArcParams {
            mode: Mode::O2arc,
            layout: Layout::Compact,
            split: Split::Train,
            tasks: None,
            pair: None,
            max_trials: -1,
            reset_on_submit: false,
            max_episode_steps: Some(150),
            rewards: JaxRewards::default(),
            bugs: JaxBugs::default(),
            demo_pairs: 1,
        }
    }
}

impl ArcParams {
    /// JaxARC mode with its bugs fixed.
    pub fn jaxarc() -> Self {
        ArcParams { mode: Mode::Jaxarc, ..Default::default() }
    }
}

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

/// Which kind of random selection [`sample_action`] draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelKind {
    /// i.i.d. Bernoulli(0.5) cells over the canvas (`action_space.sample()` in both peers).
    Mask,
    /// Uniform corners over the canvas.
    BBox,
    /// One uniform cell.
    Point,
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

#[derive(Clone, Debug)]
struct TaskGrids<const S: usize> {
    train: Box<[PairGrids<S>]>,
    test: Box<[PairGrids<S>]>,
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

/// The ARC environment over an `S × S` canvas (`S ≤ 32`; ARC uses 30, Mini-ARC 5).
#[derive(Clone, Debug)]
pub struct ArcEnv<const S: usize> {
    bank: Arc<TaskBank>,
    tasks: Arc<[TaskGrids<S>]>,
}

fn pad_pair<const S: usize>(p: &crate::Pair) -> PairGrids<S> {
    PairGrids {
        input: grid::from_cells(&p.input.cells, p.input.h, p.input.w, 0),
        in_dims: [p.input.h as u8, p.input.w as u8],
        output: grid::from_cells(&p.output.cells, p.output.h, p.output.w, 0),
        out_dims: [p.output.h as u8, p.output.w as u8],
    }
}

impl<const S: usize> ArcEnv<S> {
    /// An environment over every task of `bank`. Fails if the bank is empty or a task has a
    /// grid larger than the canvas (use [`TaskBank::retain_fitting`] first to drop those).
    pub fn new(bank: Arc<TaskBank>) -> Result<Self, ArcError> {
        if S == 0 || S > 32 {
            return Err(ArcError::invalid("canvas size", S, "1 to 32"));
        }
        if bank.is_empty() {
            return Err(ArcError::invalid("task bank", "empty", "at least one task"));
        }
        let mut tasks = Vec::with_capacity(bank.len());
        for t in bank.tasks() {
            for (what, g) in t.train.iter().chain(&t.test).enumerate().flat_map(|(i, p)| {
                [(format!("pair {i} input"), &p.input), (format!("pair {i} output"), &p.output)]
            }) {
                if g.h > S || g.w > S {
                    return Err(ArcError::TooLarge {
                        task: t.id.clone(),
                        what,
                        h: g.h,
                        w: g.w,
                        s: S,
                    });
                }
            }
            tasks.push(TaskGrids {
                train: t.train.iter().map(pad_pair).collect(),
                test: t.test.iter().map(pad_pair).collect(),
            });
        }
        Ok(ArcEnv { bank, tasks: tasks.into() })
    }

    /// The task bank.
    pub fn bank(&self) -> &Arc<TaskBank> {
        &self.bank
    }

    /// Checks params against this env (task indices, demo pairs); kernels never fail.
    pub fn validate(&self, p: &ArcParams) -> Result<(), ArcError> {
        if let Some(ts) = &p.tasks {
            if ts.is_empty() {
                return Err(ArcError::invalid("tasks", "[]", "a non-empty list of task indices"));
            }
            if let Some(&bad) = ts.iter().find(|&&t| t as usize >= self.tasks.len()) {
                return Err(ArcError::invalid(
                    "tasks",
                    bad,
                    format!("indices below {}", self.tasks.len()),
                ));
            }
        }
        if p.demo_pairs > 10 {
            return Err(ArcError::invalid("demo_pairs", p.demo_pairs, "0 to 10"));
        }
        if p.max_episode_steps == Some(0) {
            return Err(ArcError::invalid("max_episode_steps", 0, "at least 1, or none"));
        }
        Ok(())
    }

    /// The padded grids of a state's pair.
    #[inline]
    pub fn pair_of(&self, s: &ArcState<S>) -> &PairGrids<S> {
        let t = &self.tasks[s.task as usize];
        if s.test { &t.test[s.pair as usize] } else { &t.train[s.pair as usize] }
    }

    /// A fresh state for a given task and pair (what `reset` builds after sampling).
    pub fn init_state(
        &self,
        p: &ArcParams,
        task: u32,
        pair: u16,
        test: bool,
        key: Key,
    ) -> ArcState<S> {
        let task = task % self.tasks.len() as u32;
        let t = &self.tasks[task as usize];
        let n = if test { t.test.len() } else { t.train.len() };
        let pair = (pair as usize % n) as u16;
        let pg = if test { &t.test[pair as usize] } else { &t.train[pair as usize] };
        let mut s = ArcState {
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
            trials: p.max_trials,
            terminated: false,
            submit_count: 0,
            steps: 0,
            similarity: 0.0,
            empty_target: false,
        };
        if p.mode == Mode::Jaxarc {
            if p.bugs.wrong_pair_init {
                let i = key.fold_in(2).rng().below(t.train.len() as u32) as usize;
                s.grid = t.train[i].input;
                s.dims = t.train[i].in_dims;
            }
            jaxarc::pad(&mut s.grid, s.dims[0] as usize, s.dims[1] as usize);
            s.empty_target = test && p.bugs.eval_no_success;
            s.similarity = self.jax_similarity(p, &s);
        }
        s
    }

    #[inline]
    fn jax_similarity(&self, p: &ArcParams, s: &ArcState<S>) -> f32 {
        let pg = self.pair_of(s);
        let td = if s.empty_target { [0, 0] } else { pg.out_dims };
        jaxarc::similarity(&s.grid, s.dims, &pg.output, td, &p.bugs)
    }

    /// Applies one action to a state; returns `(reward, terminated)`. No allocation.
    #[inline]
    pub fn apply(&self, p: &ArcParams, s: &mut ArcState<S>, a: &ArcAction<S>) -> (f32, bool) {
        s.steps = s.steps.wrapping_add(1);
        match p.mode {
            Mode::O2arc => self.apply_o2arc(p, s, a),
            Mode::Jaxarc => self.apply_jaxarc(p, s, a),
        }
    }

    fn apply_o2arc(&self, p: &ArcParams, s: &mut ArcState<S>, a: &ArcAction<S>) -> (f32, bool) {
        if !(0..NUM_OPS).contains(&a.op) {
            return (0.0, s.terminated);
        }
        let sel = a.sel.to_mask();
        let pair = self.pair_of(s);
        match a.op {
            op @ 0..=9 => o2arc::color(s, &sel, op as i8),
            op @ 10..=19 => o2arc::flood_fill(s, &sel, (op - 10) as i8),
            20 => o2arc::move_obj(s, &sel, -1, 0),
            21 => o2arc::move_obj(s, &sel, 1, 0),
            22 => o2arc::move_obj(s, &sel, 0, 1),
            23 => o2arc::move_obj(s, &sel, 0, -1),
            24 => o2arc::rotate(s, &sel, 1),
            25 => o2arc::rotate(s, &sel, 3),
            26 => o2arc::flip(s, &sel, true),
            27 => o2arc::flip(s, &sel, false),
            28 => o2arc::copy(s, &sel, pair, true),
            29 => o2arc::copy(s, &sel, pair, false),
            30 => o2arc::paste(s, &sel),
            31 => o2arc::copy_from_input(s, pair),
            32 => o2arc::reset_grid(s),
            33 => o2arc::resize(s, &sel),
            _ => {
                // Submit (ARCLE `AbstractARCEnv.submit`, then `O2ARCv2Env.reward`).
                // With `reset_on_submit`, ARCLE replaces the state dict, and its final
                // trials check then touches only the discarded one.
                let mut replaced = false;
                if s.trials != 0 {
                    s.trials = s.trials.wrapping_sub(1);
                    s.submit_count += 1;
                    if o2arc::solved(s, pair) {
                        s.terminated = true;
                    }
                    if p.reset_on_submit {
                        let (count, steps) = (s.submit_count, s.steps);
                        *s = self.init_state(p, s.task, s.pair, s.test, Key::new(0));
                        (s.submit_count, s.steps) = (count, steps);
                        replaced = true;
                    }
                }
                if !replaced && s.trials == 0 {
                    s.terminated = true;
                }
                let r = if o2arc::solved(s, self.pair_of(s)) { 1.0 } else { 0.0 };
                return (r, s.terminated);
            }
        }
        (0.0, s.terminated)
    }

    fn apply_jaxarc(&self, p: &ArcParams, s: &mut ArcState<S>, a: &ArcAction<S>) -> (f32, bool) {
        let op = a.op.clamp(0, NUM_OPS - 1);
        let raw = a.sel.to_mask();
        let old = s.similarity;
        jaxarc::apply(s, op, &raw, self.pair_of(s), &p.bugs);
        s.similarity = self.jax_similarity(p, s);
        let submit = op == 34;
        let solved = submit && s.similarity >= 1.0;
        let r = &p.rewards;
        let bonus = if solved { r.success_bonus } else { 0.0 };
        let penalty = if submit && !solved { r.unsolved_submission_penalty } else { 0.0 };
        let reward = match p.split {
            Split::Train => {
                r.similarity_weight * (s.similarity - old) + r.step_penalty + bonus + penalty
            }
            Split::Test => r.step_penalty + bonus + penalty,
        };
        (reward, submit)
    }

    /// Writes the observation of `s` in the params' layout.
    #[inline]
    pub fn write_obs(&self, p: &ArcParams, s: &ArcState<S>, obs: &mut [i8]) {
        let n = S * S;
        put_grid(&mut obs[..n], &s.grid);
        obs[n] = s.dims[0] as i8;
        obs[n + 1] = s.dims[1] as i8;
        if p.layout == Layout::Compact {
            return;
        }
        let o = FullOffsets::new(S);
        let pg = self.pair_of(s);
        put_grid(&mut obs[o.input..o.input + n], &pg.input);
        if p.mode == Mode::Jaxarc {
            let (ih, iw) = (pg.in_dims[0] as usize, pg.in_dims[1] as usize);
            for (r, row) in obs[o.input..o.input + n].chunks_exact_mut(S).enumerate() {
                row[if r < ih { iw } else { 0 }..].fill(-1);
            }
        }
        obs[o.input_dim] = pg.in_dims[0] as i8;
        obs[o.input_dim + 1] = pg.in_dims[1] as i8;
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
        let t = &self.tasks[s.task as usize];
        for k in 0..p.demo_pairs as usize {
            let base = o.demos + k * o.demo_stride;
            let d = &mut obs[base..base + o.demo_stride];
            match t.train.get(k) {
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

    /// Samples task and pair from `key` as `reset` does.
    pub fn sample_instance(&self, p: &ArcParams, key: Key) -> (u32, u16) {
        let mut rng = key.fold_in(1).rng();
        let task = match &p.tasks {
            Some(ts) if !ts.is_empty() => ts[rng.below(ts.len() as u32) as usize],
            _ => rng.below(self.tasks.len() as u32),
        } % self.tasks.len() as u32;
        let t = &self.tasks[task as usize];
        let n = if p.split == Split::Test { t.test.len() } else { t.train.len() } as u32;
        let pair = match p.pair {
            Some(i) => i as u32 % n,
            None => rng.below(n),
        };
        (task, pair as u16)
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

impl<const S: usize> Env for ArcEnv<S> {
    type Params = ArcParams;
    type State = ArcState<S>;
    type Obs = i8;
    type Action = ArcAction<S>;

    fn spec(&self, p: &ArcParams) -> Spec {
        let n = S * S;
        let cell = |low: f64| Space::Box { low, high: 9.0, shape: vec![S, S] };
        let dims = Space::Box { low: 0.0, high: S as f64, shape: vec![2] };
        let low = if p.mode == Mode::Jaxarc { -1.0 } else { 0.0 };
        let mut parts = vec![("grid", cell(low)), ("grid_dim", dims.clone())];
        if p.layout == Layout::Full {
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
                        shape: vec![p.demo_pairs as usize, 2 * n + 4],
                    },
                ),
            ]);
        }
        Spec {
            obs_space: Space::Dict(parts),
            action_space: Space::Dict(vec![
                ("operation", Space::Discrete { n: NUM_OPS as u64 }),
                ("selection", Space::Box { low: 0.0, high: 1.0, shape: vec![S, S] }),
            ]),
            num_agents: 1,
            max_episode_steps: p.max_episode_steps,
        }
    }

    fn reset(&self, p: &ArcParams, key: Key, obs: &mut [i8]) -> ArcState<S> {
        let (task, pair) = self.sample_instance(p, key);
        let s = self.init_state(p, task, pair, p.split == Split::Test, key);
        self.write_obs(p, &s, obs);
        s
    }

    #[inline]
    fn step(
        &self,
        p: &ArcParams,
        s: &mut ArcState<S>,
        actions: &[ArcAction<S>],
        _key: Key,
        obs: &mut [i8],
        rewards: &mut [f32],
    ) -> bool {
        let (r, term) = self.apply(p, s, &actions[0]);
        rewards[0] = r;
        self.write_obs(p, s, obs);
        term
    }
}
