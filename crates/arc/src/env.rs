//! The ARC grid-editing environment, with two named semantics modes.
//!
//! | | `o2arc` (default, ARCLE `O2ARCv2Env` 0.2.6) | `jaxarc` (JaxARC 1.0.3) |
//! |---|---|---|
//! | observation | `compact`: grid (`S×S` i8) + dims; `full`: [`FullObsView`](crate::obs::FullObsView) layout | same layouts; grid padded with -1 |
//! | action | [`ArcAction`]: op 0–34 + mask, bbox or point selection | same; op ids per JaxARC's table |
//! | reward | 1 for a Submit whose grid equals the answer (dims and cells), else 0 | similarity delta + step penalty + success bonus / unsolved penalty ([`JaxRewards`]) |
//! | terminated | correct Submit, or trials exhausted (`max_trials`); sticky as in ARCLE | every Submit |
//! | truncated | `max_episode_steps` (default 150; ARCLE itself has none) applied by `VecEnv` | same (JaxARC: 150) |
//!
//! The operations and their rewards are the mode's op table (`o2arc.rs`, `jaxarc.rs`,
//! behind [`OpTable`]); the state is in `state.rs` and the observation writer in `obs.rs`.
//! This file holds the params, the env and the dispatch to a table.
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

use crate::action::ArcAction;
use crate::error::ArcError;
use crate::init::{GridInit, Start};
use crate::jaxarc::{self, JaxBugs, JaxRewards, JaxarcTable};
use crate::o2arc::O2arcTable;
use crate::obs::{self, LayoutKind};
use crate::ops::{NUM_OPS, OpTable};
use crate::state::{ArcState, PairGrids, TaskGrids};
use crate::task::TaskBank;
use kestrel_core::FromInvalid;
use kestrel_core::{Env, Key, Space, Spec};
use std::sync::Arc;

/// Which environment's rules (configs spell them `o2arc`, `jaxarc`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModeKind {
    /// ARCLE `O2ARCv2Env` 0.2.6.
    #[default]
    O2arc,
    /// JaxARC 1.0.3 (bugs fixed unless switched back on in [`JaxBugs`]).
    Jaxarc,
}

/// Which pairs an episode is drawn from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SplitKind {
    /// Demonstration pairs (ARCLE `adaptation=True`, JaxARC train mode).
    #[default]
    Train,
    /// Test pairs (ARCLE `adaptation=False`, JaxARC eval mode).
    Test,
}

/// Everything one tunes. `Default` is ARCLE `O2ARCv2Env` with a 150-step limit.
#[derive(Clone, Debug, PartialEq)]
pub struct ArcParams {
    /// Semantics mode.
    pub mode: ModeKind,
    /// Observation layout.
    pub layout: LayoutKind,
    /// Train or test pairs.
    pub split: SplitKind,
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
    /// How a reset fills the working grid (jaxarc only; demo only by default).
    pub init: GridInit,
}

impl Default for ArcParams {
    fn default() -> Self {
        ArcParams {
            mode: ModeKind::O2arc,
            layout: LayoutKind::Compact,
            split: SplitKind::Train,
            tasks: None,
            pair: None,
            max_trials: -1,
            reset_on_submit: false,
            max_episode_steps: Some(150),
            rewards: JaxRewards::default(),
            bugs: JaxBugs::default(),
            demo_pairs: 1,
            init: GridInit::default(),
        }
    }
}

impl ArcParams {
    /// JaxARC mode with its bugs fixed.
    pub fn jaxarc() -> Self {
        ArcParams { mode: ModeKind::Jaxarc, ..Default::default() }
    }

    /// The `o2arc` op table with these params' settings.
    #[inline]
    pub fn o2arc_table(&self) -> O2arcTable {
        O2arcTable { max_trials: self.max_trials, reset_on_submit: self.reset_on_submit }
    }

    /// The `jaxarc` op table with these params' settings.
    #[inline]
    pub fn jaxarc_table(&self) -> JaxarcTable {
        JaxarcTable {
            rewards: self.rewards,
            bugs: self.bugs,
            train: self.split == SplitKind::Train,
        }
    }
}

/// The ARC environment over an `S × S` canvas (`S ≤ 32`; ARC uses 30, Mini-ARC 5).
#[derive(Clone, Debug)]
pub struct ArcEnv<const S: usize> {
    bank: Arc<TaskBank>,
    tasks: Arc<[TaskGrids<S>]>,
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
                train: t.train.iter().map(PairGrids::from_pair).collect(),
                test: t.test.iter().map(PairGrids::from_pair).collect(),
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
        p.init.validate(p.mode == ModeKind::Jaxarc)
    }

    /// The padded grids of a state's pair.
    #[inline]
    pub fn pair_of(&self, s: &ArcState<S>) -> &PairGrids<S> {
        self.pair_grids(s.task, s.pair, s.test)
    }

    /// The padded grids of pair `pair` of task `task` (test or train split).
    ///
    /// # Panics
    /// If the task or pair is not in the env.
    #[inline]
    pub fn pair_grids(&self, task: u32, pair: u16, test: bool) -> &PairGrids<S> {
        let t = &self.tasks[task as usize];
        if test { &t.test[pair as usize] } else { &t.train[pair as usize] }
    }

    /// Checks that a given state's task, pair and dims are in this env (what stepping and
    /// observing it index), naming the field that is not.
    pub fn check_state(&self, s: &ArcState<S>) -> Result<(), ArcError> {
        let Some(t) = self.tasks.get(s.task as usize) else {
            return Err(ArcError::invalid("state.task", s.task, "a task of the env"));
        };
        let n = if s.test { t.test.len() } else { t.train.len() };
        if s.pair as usize >= n {
            return Err(ArcError::invalid("state.pair", s.pair, format!("below {n}")));
        }
        if s.dims.iter().any(|&d| d as usize > S) {
            return Err(ArcError::invalid(
                "state.dims",
                format!("{:?}", s.dims),
                format!("at most {S}"),
            ));
        }
        Ok(())
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
        self.init_state_with(p, task, pair, test, &self.draw_start(p, task, key))
    }

    /// [`ArcEnv::init_state`] with the working grid made by `start` (as
    /// [`ArcEnv::draw_start`] draws it, or recorded from JaxARC; read in `jaxarc` mode only).
    pub fn init_state_with(
        &self,
        p: &ArcParams,
        task: u32,
        pair: u16,
        test: bool,
        start: &Start<S>,
    ) -> ArcState<S> {
        let task = task % self.tasks.len() as u32;
        let t = &self.tasks[task as usize];
        let n = if test { t.test.len() } else { t.train.len() };
        let pair = (pair as usize % n) as u16;
        let pg = if test { &t.test[pair as usize] } else { &t.train[pair as usize] };
        let mut s = ArcState::new(task, pair, test, pg, p.max_trials);
        if p.mode == ModeKind::Jaxarc {
            (s.grid, s.dims) = p.init.build(start, &p.bugs, &t.train, pg);
            s.empty_target = test && p.bugs.eval_no_success;
            s.similarity = jaxarc::state_similarity(&s, pg, &p.bugs);
        }
        s
    }

    /// The start a reset of `task` from `key` makes ([`GridInit::draw`]; a demo start of the
    /// episode's own pair in `o2arc` mode).
    pub fn draw_start(&self, p: &ArcParams, task: u32, key: Key) -> Start<S> {
        if p.mode != ModeKind::Jaxarc {
            return Start::Demo { source: 0 };
        }
        let t = &self.tasks[task as usize % self.tasks.len()];
        p.init.draw(&p.bugs, t.train.len(), key)
    }

    /// How close `s`'s working grid is to its target, in `[0, 1]` (1: equal dims and cells):
    /// JaxARC's `compute_grid_similarity`. In `jaxarc` mode the value the kernel keeps (under
    /// the params' bug profile, what its reward uses); in `o2arc` mode, which has no such
    /// measure, computed with every bug off (matches over the union of both areas).
    #[inline]
    pub fn similarity(&self, p: &ArcParams, s: &ArcState<S>) -> f32 {
        match p.mode {
            ModeKind::Jaxarc => s.similarity,
            ModeKind::O2arc => {
                jaxarc::state_similarity(s, self.pair_of(s), &jaxarc::JaxBugs::default())
            }
        }
    }

    /// The similarity ([`ArcEnv::similarity`]) of the state observation `obs` shows (its
    /// compact part: any layout) in an episode on pair `pair` of task `task`: for the last
    /// state of an episode that a same-step reset has replaced, of which only the final
    /// observation is left. `None` for an observation too short or an instance not in the env.
    pub fn obs_similarity(
        &self,
        p: &ArcParams,
        (task, pair, test): (u32, u16, bool),
        obs: &[i8],
    ) -> Option<f32> {
        let t = self.tasks.get(task as usize)?;
        let pg = if test { t.test.get(pair as usize)? } else { t.train.get(pair as usize)? };
        let n = S * S;
        let cells = obs.get(..n + 2)?;
        let mut s = ArcState::new(task, pair, test, pg, p.max_trials);
        for (row, src) in s.grid.iter_mut().zip(cells.chunks_exact(S)) {
            row.copy_from_slice(src);
        }
        s.dims = [cells[n] as u8, cells[n + 1] as u8];
        Some(match p.mode {
            ModeKind::Jaxarc => {
                s.empty_target = test && p.bugs.eval_no_success;
                jaxarc::state_similarity(&s, pg, &p.bugs)
            }
            ModeKind::O2arc => self.similarity(p, &s),
        })
    }

    /// Applies one action to a state; returns `(reward, terminated)`. No allocation.
    #[inline]
    pub fn apply(&self, p: &ArcParams, s: &mut ArcState<S>, a: &ArcAction<S>) -> (f32, bool) {
        s.steps = s.steps.wrapping_add(1);
        match p.mode {
            ModeKind::O2arc => self.apply_with(&p.o2arc_table(), s, a),
            ModeKind::Jaxarc => self.apply_with(&p.jaxarc_table(), s, a),
        }
    }

    /// One step of table `T` (statically dispatched): decode the op, then apply it.
    #[inline]
    fn apply_with<T: OpTable>(
        &self,
        table: &T,
        s: &mut ArcState<S>,
        a: &ArcAction<S>,
    ) -> (f32, bool) {
        let Some(op) = T::decode(a.op) else { return (0.0, s.terminated) };
        table.apply(s, op, &a.sel.to_mask(), self.pair_of(s))
    }

    /// Writes the observation of `s` in the params' layout.
    #[inline]
    pub fn write_obs(&self, p: &ArcParams, s: &ArcState<S>, obs: &mut [i8]) {
        obs::write_compact(s, obs);
        if p.layout == LayoutKind::Full {
            let demos = &self.tasks[s.task as usize].train;
            let pad_input = p.mode == ModeKind::Jaxarc;
            obs::write_full(s, self.pair_of(s), pad_input, demos, p.demo_pairs as usize, obs);
        }
    }

    /// Tasks, and each task's (training, test) pair counts.
    pub(crate) fn pair_counts(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.tasks.iter().map(|t| (t.train.len(), t.test.len()))
    }

    /// Samples task and pair from `key` as `reset` does.
    pub fn sample_instance(&self, p: &ArcParams, key: Key) -> (u32, u16) {
        let mut rng = key.fold_in(1).rng();
        let task = match &p.tasks {
            Some(ts) if !ts.is_empty() => ts[rng.below(ts.len() as u32) as usize],
            _ => rng.below(self.tasks.len() as u32),
        } % self.tasks.len() as u32;
        let t = &self.tasks[task as usize];
        let n = if p.split == SplitKind::Test { t.test.len() } else { t.train.len() } as u32;
        let pair = match p.pair {
            Some(i) => i as u32 % n,
            None => rng.below(n),
        };
        (task, pair as u16)
    }
}

impl<const S: usize> Env for ArcEnv<S> {
    type Params = ArcParams;
    type State = ArcState<S>;
    type Obs = i8;
    type Action = ArcAction<S>;

    fn spec(&self, p: &ArcParams) -> Spec {
        let low = if p.mode == ModeKind::Jaxarc { -1.0 } else { 0.0 };
        Spec {
            obs_space: obs::obs_space::<S>(p.layout, low, p.demo_pairs),
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
        let s = self.init_state(p, task, pair, p.split == SplitKind::Test, key);
        self.write_obs(p, &s, obs);
        s
    }

    /// Writes the observation of a state whose task, pair and dims are in this env (false,
    /// writing nothing, for any other).
    fn observe(&self, p: &ArcParams, s: &ArcState<S>, obs: &mut [i8]) -> bool {
        if self.check_state(s).is_err() {
            return false;
        }
        self.write_obs(p, s, obs);
        true
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::{GridData, Pair, Task};

    /// A grid of `h × w` cells, all colour `c`.
    fn g(h: usize, w: usize, c: u8) -> GridData {
        GridData { h, w, cells: vec![c; h * w] }
    }

    fn pair(h: usize, w: usize) -> Pair {
        Pair { input: g(h, w, 1), output: g(h, w, 2) }
    }

    fn task(id: &str, train: usize, test: usize) -> Task {
        Task {
            id: id.into(),
            group: String::new(),
            train: (0..train).map(|i| pair(2 + i, 3)).collect(),
            test: (0..test).map(|_| pair(3, 3)).collect(),
        }
    }

    /// Two tasks: `a` with 2 training pairs and 1 test pair, `b` with 3 and 2.
    fn env() -> ArcEnv<5> {
        ArcEnv::new(Arc::new(TaskBank::from_tasks(vec![task("a", 2, 1), task("b", 3, 2)]))).unwrap()
    }

    /// Construction refuses an empty bank and a grid beyond the canvas, naming the task, the
    /// grid (pairs counted train first, then test) and both sizes.
    #[test]
    fn new_names_the_grid_that_does_not_fit() {
        let e = ArcEnv::<5>::new(Arc::new(TaskBank::from_tasks(vec![]))).unwrap_err();
        assert_eq!(e.to_string(), "invalid task bank = empty: at least one task");
        let mut t = task("big", 2, 1);
        t.test[0].output = g(4, 6, 0);
        let e = ArcEnv::<5>::new(Arc::new(TaskBank::from_tasks(vec![task("ok", 1, 1), t])));
        assert_eq!(
            e.unwrap_err().to_string(),
            "task big: pair 2 output is 4x6, larger than the 5x5 canvas"
        );
    }

    /// `check_state` and `validate` name the field and the value that is out of range, and
    /// `observe` writes nothing for a state that fails the check.
    #[test]
    fn bad_states_and_params_name_the_field_and_value() {
        let env = env();
        let p = ArcParams::default();
        let good = env.init_state(&p, 0, 0, true, Key::new(1));
        env.check_state(&good).unwrap();
        let with = |f: &dyn Fn(&mut ArcState<5>)| {
            let mut s = good.clone();
            f(&mut s);
            env.check_state(&s).unwrap_err().to_string()
        };
        assert_eq!(with(&|s| s.task = 2), "invalid state.task = 2: a task of the env");
        assert_eq!(
            with(&|s| s.pair = 1),
            "invalid state.pair = 1: below 1",
            "task a has 1 test pair"
        );
        assert_eq!(with(&|s| s.dims = [6, 1]), "invalid state.dims = [6, 1]: at most 5");
        let mut bad = good.clone();
        bad.task = 7;
        let mut obs = vec![42i8; env.spec(&p).obs_space.flat_len()];
        assert!(!env.observe(&p, &bad, &mut obs));
        assert!(obs.iter().all(|&v| v == 42), "nothing written");
        assert!(env.observe(&p, &good, &mut obs));

        let v = |p: ArcParams| env.validate(&p).unwrap_err().to_string();
        assert_eq!(
            v(ArcParams { tasks: Some(Arc::from(vec![])), ..ArcParams::default() }),
            "invalid tasks = []: a non-empty list of task indices"
        );
        assert_eq!(
            v(ArcParams { tasks: Some(Arc::from(vec![1, 2])), ..ArcParams::default() }),
            "invalid tasks = 2: indices below 2"
        );
        assert_eq!(
            v(ArcParams { max_episode_steps: Some(0), ..ArcParams::default() }),
            "invalid max_episode_steps = 0: at least 1, or none"
        );
        env.validate(&ArcParams { max_episode_steps: None, ..ArcParams::default() }).unwrap();
    }

    /// Sampling stays within `tasks` and the split's pairs, a fixed pair wraps modulo the
    /// split's pair count, and every (task, pair) of the split is reached; `init_state` wraps
    /// task and pair indices the same way.
    #[test]
    fn sampling_respects_task_list_split_and_fixed_pair() {
        let env = env();
        let only_b =
            ArcParams { tasks: Some(Arc::from(vec![1])), pair: Some(4), ..ArcParams::default() };
        for seed in 0..40 {
            assert_eq!(
                env.sample_instance(&only_b, Key::new(seed)),
                (1, 1),
                "4 mod 3 training pairs"
            );
        }
        let test = ArcParams { split: SplitKind::Test, ..ArcParams::default() };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let (t, pr) = env.sample_instance(&test, Key::new(seed));
            assert!(t < 2 && pr < [1, 2][t as usize], "({t}, {pr})");
            seen.insert((t, pr));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [(0, 0), (1, 0), (1, 1)]);
        let s = env.init_state(&ArcParams::default(), 3, 5, false, Key::new(0));
        assert_eq!((s.task, s.pair, s.test), (1, 2, false), "task 3 mod 2, pair 5 mod 3");
        assert_eq!(s.dims, [4, 3], "training pair 2 of task b is 4 × 3");
    }
}
