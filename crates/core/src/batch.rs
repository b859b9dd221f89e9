//! The one batched-env contract, [`BatchEnv`], and the bookkeeping every batch shares,
//! written once: the columns ([`Columns`]), the key tree of a step ([`StepKeys`]), the three
//! auto-reset modes ([`AutoReset`]), the time limit and the end of an episode
//! ([`count_step`], [`end_episode`]), `reset_rows` and `shard`'s checks.
//!
//! [`VecEnv`](crate::vec_env::VecEnv) (any [`Env`](crate::env::Env), one row per env) and specialised
//! kernels such as `kestrel_arc::ArcLanes` (many envs per SIMD lane) implement it; a kernel
//! writes only its physics and calls these for the rest, so both give the same keys, flags
//! and resets (`crates/arc/tests/lanes.rs` compares them bit for bit).

use crate::error::{CoreError, FromInvalid};
use crate::key::Key;
use crate::space::Spec;

/// Tag of a row's step key (`key.fold_in(t).fold_in(row).fold_in(KEY_STEP)`; see the crate
/// docs).
pub const KEY_STEP: u64 = 0;
/// Tag of a row's reset key.
pub const KEY_RESET: u64 = 1;
/// Tag of a row's policy key.
pub const KEY_POLICY: u64 = 2;

/// When a finished row starts its next episode (Gymnasium's `AutoresetMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoReset {
    /// In the step that ends the episode: `obs` is the new episode's first observation and
    /// `final_obs` the finished one's last (Gymnasium's `SAME_STEP`).
    #[default]
    SameStep,
    /// In the next step: the step that ends the episode returns its last observation in `obs`;
    /// the next step ignores that row's action and resets it (reward 0, both flags false)
    /// (Gymnasium's default `NEXT_STEP`).
    NextStep,
    /// Never: finished rows keep stepping until [`BatchEnv::reset_rows`] resets them
    /// (Gymnasium's `DISABLED`).
    Disabled,
}

/// The keys of one step of a batch, per row (the crate docs' tree): `row` is the batch's
/// local row, to which the batch's row offset is added, so a shard draws its global rows' keys.
#[derive(Clone, Copy, Debug)]
pub struct StepKeys {
    step: Key,
    prev: Key,
    row_offset: u64,
}

impl StepKeys {
    /// The keys of step `t` of the batch whose run key is `run`.
    pub fn new(run: Key, t: u64, row_offset: u64) -> Self {
        StepKeys { step: run.fold_in(t), prev: run.fold_in(t.saturating_sub(1)), row_offset }
    }
    /// Row `row`'s key of this step (derived once per row and step; its three tagged keys
    /// come from it).
    #[inline]
    pub fn row(&self, row: usize) -> RowKey {
        RowKey(self.step.fold_in(self.row_offset + row as u64))
    }
    /// The key of a next-step auto-reset in this step: the reset key of the step that ended
    /// the episode, so it starts the same episode a same-step reset would have.
    #[inline]
    pub fn pending_reset(&self, row: usize) -> Key {
        self.prev.fold_in(self.row_offset + row as u64).fold_in(KEY_RESET)
    }
}

/// One row's key of one step: the parent of the row's step, policy and reset keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowKey(Key);

impl RowKey {
    /// The key itself: what the first reset after [`Columns::restart`] draws from (untagged,
    /// see the crate docs).
    #[inline]
    pub fn key(self) -> Key {
        self.0
    }
    /// The key of the row's env step.
    #[inline]
    pub fn step(self) -> Key {
        self.0.fold_in(KEY_STEP)
    }
    /// The key of the row's policy.
    #[inline]
    pub fn policy(self) -> Key {
        self.0.fold_in(KEY_POLICY)
    }
    /// The key of a reset in this step (same-step auto-reset, `reset_rows`).
    #[inline]
    pub fn reset(self) -> Key {
        self.0.fold_in(KEY_RESET)
    }
}

/// Counts a row's step and applies the time limit: `(terminated, truncated)` for the step
/// the env reported `terminated` for.
#[inline]
pub fn count_step(limit: Option<u32>, terminated: bool, steps: &mut u32) -> (bool, bool) {
    *steps += 1;
    (terminated, limit.is_some_and(|m| *steps >= m))
}

/// The end of a row's episode (its step was terminated or truncated): keeps the last
/// observation in `final_obs`, then as `mode` says. Returns the key the driver resets the row
/// with now ([`AutoReset::SameStep`]; its step count restarts), or `None` when the row
/// waits: for the next step ([`AutoReset::NextStep`], which marks `needs_reset`) or for
/// [`BatchEnv::reset_rows`] ([`AutoReset::Disabled`]).
#[inline]
pub fn end_episode<O: Copy>(
    mode: AutoReset,
    row_key: RowKey,
    obs: &[O],
    final_obs: &mut [O],
    steps: &mut u32,
    needs_reset: &mut bool,
) -> Option<Key> {
    final_obs.copy_from_slice(obs);
    match mode {
        AutoReset::SameStep => {
            *steps = 0;
            Some(row_key.reset())
        }
        AutoReset::NextStep => {
            *needs_reset = true;
            None
        }
        AutoReset::Disabled => None,
    }
}

/// The columns of a batch (Gymnasium's names), its step counter, keys and auto-reset mode:
/// what every [`BatchEnv`] holds beside its kernel's state.
///
/// Per-agent columns (`obs`, `final_obs`, `rewards`) have `num_envs * num_agents` rows,
/// per-env columns (`terminated`, `truncated`, `episode_steps`, `needs_reset`) `num_envs`.
/// After a step, a row whose episode ended has (same-step mode) already been reset: `obs`
/// holds the new episode's first observation and `final_obs` the finished one's last
/// (`final_obs` of other rows is stale).
#[derive(Clone, Debug)]
pub struct Columns<O> {
    spec: Spec,
    num_envs: usize,
    obs_len: usize,
    key: Key,
    t: u64,
    row_offset: u64,
    autoreset: AutoReset,
    /// Observations, row-major.
    pub obs: Vec<O>,
    /// Last observations of the episodes that ended in the last step.
    pub final_obs: Vec<O>,
    /// Rewards of the last step, one per agent row.
    pub rewards: Vec<f32>,
    /// Whether each env's episode terminated in the last step.
    pub terminated: Vec<bool>,
    /// Whether each env's episode hit the time limit in the last step.
    pub truncated: Vec<bool>,
    /// Steps of each env's current episode.
    pub episode_steps: Vec<u32>,
    /// Rows whose next step only resets them ([`AutoReset::NextStep`]).
    pub needs_reset: Vec<bool>,
}

impl<O: Copy + Default> Columns<O> {
    /// The columns of rows `[row_offset, row_offset + num_envs)` of a batch seeded `seed`,
    /// before any reset. `kernel_row_bytes` is what the kernel holds per env beside these
    /// columns (its state): the total must fit [`crate::error::MAX_BYTES`]. Fails for no envs, an
    /// offset past `u64`, or a size whose memory does not fit.
    pub fn new(
        spec: Spec,
        num_envs: usize,
        seed: u64,
        row_offset: u64,
        kernel_row_bytes: u128,
    ) -> Result<Self, CoreError> {
        if num_envs == 0 {
            return Err(CoreError::invalid("num_envs", "0", "at least 1"));
        }
        let (a, obs_len) = (spec.num_agents, spec.obs_len());
        let row =
            2 * (a * obs_len * size_of::<O>()) as u128 + kernel_row_bytes + (a * 4 + 8) as u128;
        crate::error::check_bytes("num_envs", num_envs, num_envs as u128, row)?;
        if row_offset.checked_add(num_envs as u64).is_none() {
            return Err(CoreError::invalid(
                "row_offset",
                row_offset,
                "row_offset + num_envs < 2^64",
            ));
        }
        Ok(Columns {
            obs: vec![O::default(); num_envs * a * obs_len],
            final_obs: vec![O::default(); num_envs * a * obs_len],
            rewards: vec![0.0; num_envs * a],
            terminated: vec![false; num_envs],
            truncated: vec![false; num_envs],
            episode_steps: vec![0; num_envs],
            needs_reset: vec![false; num_envs],
            spec,
            num_envs,
            obs_len,
            key: Key::new(seed),
            t: 0,
            row_offset,
            autoreset: AutoReset::SameStep,
        })
    }

    /// Starts the batch over from `seed`: step counter 0, flags, rewards and counts cleared.
    /// Returns the keys of step 0: the kernel resets row `i` with
    /// [`StepKeys::row`]`(i).`[`key`](RowKey::key)`()` (the first reset is untagged; see the
    /// crate docs).
    pub fn restart(&mut self, seed: u64) -> StepKeys {
        self.key = Key::new(seed);
        self.t = 0;
        self.rewards.fill(0.0);
        self.terminated.fill(false);
        self.truncated.fill(false);
        self.episode_steps.fill(0);
        self.needs_reset.fill(false);
        self.keys()
    }

    /// Advances the step counter: the keys of the new step.
    pub fn next_step(&mut self) -> StepKeys {
        self.t += 1;
        self.keys()
    }

    /// The keys of the current step (what `reset_rows` draws from).
    pub fn keys(&self) -> StepKeys {
        StepKeys::new(self.key, self.t, self.row_offset)
    }

    /// Checks a `reset_rows` mask's length (an error that changes nothing). The kernel then
    /// resets each selected row with [`RowKey::reset`] of [`Columns::keys`] and calls
    /// [`Columns::start_row`].
    pub fn check_mask(&self, mask: &[bool]) -> Result<(), CoreError> {
        if mask.len() != self.num_envs {
            return Err(CoreError::Length {
                what: "reset mask",
                expected: self.num_envs,
                got: mask.len(),
            });
        }
        Ok(())
    }

    /// Row `i` at the start of an episode: its step count, flags and rewards cleared.
    pub fn start_row(&mut self, i: usize) {
        let a = self.spec.num_agents;
        self.episode_steps[i] = 0;
        self.needs_reset[i] = false;
        self.terminated[i] = false;
        self.truncated[i] = false;
        self.rewards[i * a..(i + 1) * a].fill(0.0);
    }

    /// Checks a row index (`set_state`): an error naming it when it is past `num_envs`.
    pub fn check_row(&self, i: usize) -> Result<(), CoreError> {
        if i >= self.num_envs {
            return Err(CoreError::invalid(
                "row",
                i,
                format!("below num_envs = {}", self.num_envs),
            ));
        }
        Ok(())
    }

    /// Observation elements per env row (`num_agents * obs_len`).
    #[inline]
    pub fn per_env(&self) -> usize {
        self.spec.num_agents * self.obs_len
    }
    /// The auto-reset mode.
    pub fn autoreset(&self) -> AutoReset {
        self.autoreset
    }
    /// Sets when finished rows reset (takes effect from the next step).
    pub fn set_autoreset(&mut self, mode: AutoReset) {
        self.autoreset = mode;
    }
    /// The spec of one env.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
    /// Number of envs.
    pub fn num_envs(&self) -> usize {
        self.num_envs
    }
    /// Elements of one agent's observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }
    /// The global index of row 0.
    pub fn row_offset(&self) -> u64 {
        self.row_offset
    }
    /// Steps taken since the last reset.
    pub fn t(&self) -> u64 {
        self.t
    }
}

/// Where [`BatchEnv::rollout_with`] writes its steps: the step columns of each of `steps`
/// steps, step-major (`[t][row]`, the layout of CleanRL's rollout buffers).
pub struct Trajectory<'a, O> {
    /// The observations after each step: `steps * num_envs * num_agents * obs_len`.
    pub obs: &'a mut [O],
    /// The last observations of the episodes that ended in each step (same shape as `obs`),
    /// written on those rows only (the rest is left as it was); `None` skips them (they
    /// matter under [`AutoReset::SameStep`], where `obs` already holds the next episode's).
    pub final_obs: Option<&'a mut [O]>,
    /// Rewards: `steps * num_envs * num_agents`.
    pub rewards: &'a mut [f32],
    /// Terminations: `steps * num_envs`.
    pub terminated: &'a mut [bool],
    /// Truncations: `steps * num_envs`.
    pub truncated: &'a mut [bool],
}

impl<O: Copy + Default> Trajectory<'_, O> {
    /// The number of steps the buffers hold for these columns, or the first buffer whose
    /// length is not a whole number of steps (or disagrees with the others).
    pub fn steps(&self, c: &Columns<O>) -> Result<usize, CoreError> {
        let n = c.num_envs();
        let steps = self.terminated.len() / n;
        let (a, per) = (c.spec().num_agents, c.per_env());
        let wrong = |what: &'static str, expected: usize, got: usize| {
            (expected != got).then_some(CoreError::Length { what, expected, got })
        };
        let err = wrong("trajectory terminated", steps * n, self.terminated.len())
            .or_else(|| wrong("trajectory truncated", steps * n, self.truncated.len()))
            .or_else(|| wrong("trajectory rewards", steps * n * a, self.rewards.len()))
            .or_else(|| wrong("trajectory obs", steps * n * per, self.obs.len()))
            .or_else(|| {
                let fo = self.final_obs.as_ref()?;
                wrong("trajectory final_obs", steps * n * per, fo.len())
            });
        match err {
            Some(e) => Err(e),
            None => Ok(steps),
        }
    }
}

impl<O: Copy> Trajectory<'_, O> {
    /// Copies a block's columns after its step into this one-step part of a trajectory (see
    /// [`Trajectory::blocks`]) (`per`: elements of one env's observation).
    #[inline]
    pub fn copy_from(
        &mut self,
        per: usize,
        obs: &[O],
        final_obs: &[O],
        rewards: &[f32],
        terminated: &[bool],
        truncated: &[bool],
    ) {
        self.obs.copy_from_slice(obs);
        self.copy_flags_from(per, final_obs, rewards, terminated, truncated);
    }

    /// [`Trajectory::copy_from`] but the observations, which the step wrote in place.
    pub fn copy_flags_from(
        &mut self,
        per: usize,
        final_obs: &[O],
        rewards: &[f32],
        terminated: &[bool],
        truncated: &[bool],
    ) {
        self.rewards.copy_from_slice(rewards);
        self.terminated.copy_from_slice(terminated);
        self.truncated.copy_from_slice(truncated);
        if let Some(fo) = self.final_obs.as_deref_mut() {
            for (j, _) in
                terminated.iter().zip(truncated).enumerate().filter(|(_, (te, tr))| **te || **tr)
            {
                fo[j * per..(j + 1) * per].copy_from_slice(&final_obs[j * per..(j + 1) * per]);
            }
        }
    }
}

impl<'a, O> Trajectory<'a, O> {
    /// The trajectory cut into blocks of `rows` envs, block-major: entry `b * steps + t` is
    /// block `b`'s part of step `t` (`per`: elements of one env's observation, `agents`: reward
    /// rows per env), so each block's steps can be written on one thread.
    pub fn blocks(
        self,
        n: usize,
        steps: usize,
        rows: usize,
        per: usize,
        agents: usize,
    ) -> Vec<Trajectory<'a, O>> {
        let Trajectory { obs, final_obs, rewards, terminated, truncated } = self;
        let cut = |v: &'a mut [O]| -> Vec<std::slice::ChunksMut<'a, O>> {
            v.chunks_mut((n * per).max(1)).map(|s| s.chunks_mut((rows * per).max(1))).collect()
        };
        let mut ob = cut(obs);
        let mut fo = final_obs.map(cut);
        let mut rw: Vec<_> =
            rewards.chunks_mut((n * agents).max(1)).map(|s| s.chunks_mut(rows * agents)).collect();
        let mut te: Vec<_> = terminated.chunks_mut(n.max(1)).map(|s| s.chunks_mut(rows)).collect();
        let mut tr: Vec<_> = truncated.chunks_mut(n.max(1)).map(|s| s.chunks_mut(rows)).collect();
        let blocks = n.div_ceil(rows);
        let mut out = Vec::with_capacity(blocks * steps);
        for _ in 0..blocks {
            for t in 0..steps {
                out.push(Trajectory {
                    obs: ob[t].next().unwrap_or_default(),
                    final_obs: fo.as_mut().map(|f| f[t].next().unwrap_or_default()),
                    rewards: rw[t].next().unwrap_or_default(),
                    terminated: te[t].next().unwrap_or_default(),
                    truncated: tr[t].next().unwrap_or_default(),
                });
            }
        }
        out
    }
}

/// A batch of one env kind: what every front end (the Python vector envs, the env registry,
/// benchmarks) steps. Implementors hold a [`Columns`] and a kernel; the column accessors are
/// provided.
pub trait BatchEnv: Send + Sized {
    /// The env kernel the batch is built from.
    type Kernel;
    /// The params every row runs with.
    type Params;
    /// One env's state.
    type State;
    /// One observation element.
    type Obs: Copy + Default + Send + Sync;
    /// One agent's action.
    type Action: Copy + Default + Send + Sync;
    /// The crate's error (it wraps [`CoreError`]).
    type Error: From<CoreError> + std::error::Error;

    /// Rows `[row_offset, row_offset + num_envs)` of a batch seeded `seed`, reset: each row
    /// draws the keys of its global row, so shards of one batch reproduce it exactly.
    fn shard(
        kernel: Self::Kernel,
        params: Self::Params,
        num_envs: usize,
        seed: u64,
        row_offset: u64,
    ) -> Result<Self, Self::Error>;

    /// `num_envs` rows, reset from `seed` (the shard at offset 0).
    fn new(
        kernel: Self::Kernel,
        params: Self::Params,
        num_envs: usize,
        seed: u64,
    ) -> Result<Self, Self::Error> {
        Self::shard(kernel, params, num_envs, seed, 0)
    }

    /// The columns (read-only: only the kernel writes them).
    fn columns(&self) -> &Columns<Self::Obs>;

    /// Sets when finished rows reset (takes effect from the next step).
    fn set_autoreset(&mut self, mode: AutoReset);

    /// Resets every row from `seed` (step counter back to 0).
    fn reset(&mut self, seed: u64);

    /// Resets the rows where `mask` is true now (the [`AutoReset::Disabled`] way, usable in
    /// every mode) with the keys of the current step; their flags and rewards are cleared. A
    /// mask of the wrong length is an error and changes nothing.
    fn reset_rows(&mut self, mask: &[bool]) -> Result<(), Self::Error>;

    /// Steps every row with `actions` (`num_envs * num_agents`, row-major). A wrong length is
    /// an error that changes nothing.
    fn try_step(&mut self, actions: &[Self::Action]) -> Result<(), Self::Error>;

    /// Steps every row with actions chosen by `policy(row, key_policy, obs, actions_out)`,
    /// called just before the row's step (`obs` is the row's current observation, all agents).
    fn step_with<F>(&mut self, policy: F)
    where
        F: Fn(usize, Key, &[Self::Obs], &mut [Self::Action]) + Sync;

    /// Steps `steps` times (the buffers' length says how many), writing each step's columns
    /// into `out`, with actions chosen by `policy(t, row, key_policy, obs, actions_out)`: the
    /// same results as `steps` calls of [`BatchEnv::step_with`], each followed by a copy of
    /// the columns. Buffers of the wrong length are an error that changes nothing.
    ///
    /// This provided version is that loop; a kernel whose rows are independent may run each
    /// block of rows through all the steps on one thread instead (one hand-off to the pool for
    /// the whole rollout, and the block's state stays in that thread's cache).
    fn rollout_with<F>(
        &mut self,
        out: Trajectory<'_, Self::Obs>,
        policy: F,
    ) -> Result<(), Self::Error>
    where
        F: Fn(usize, usize, Key, &[Self::Obs], &mut [Self::Action]) + Sync,
    {
        let steps = out.steps(self.columns())?;
        let (n, per, agents) = (self.num_envs(), self.columns().per_env(), self.spec().num_agents);
        for (t, mut o) in out.blocks(n, steps, n, per, agents).into_iter().enumerate() {
            self.step_with(|row, key, obs, a| policy(t, row, key, obs, a));
            let c = self.columns();
            o.copy_from(per, &c.obs, &c.final_obs, &c.rewards, &c.terminated, &c.truncated);
        }
        Ok(())
    }

    /// Row `i`'s state, or `None` past `num_envs`.
    fn state(&self, i: usize) -> Option<Self::State>;

    /// Puts row `i` into `state` as the first state of a fresh episode (step count 0, flags
    /// and rewards cleared, observation rewritten); an error, changing nothing, for a row past
    /// `num_envs` or a state the env cannot start from.
    fn set_state(&mut self, i: usize, state: Self::State) -> Result<(), Self::Error>;

    /// [`BatchEnv::try_step`] for actions known to have the right length.
    ///
    /// # Panics
    /// On a wrong length.
    fn step(&mut self, actions: &[Self::Action]) {
        if let Err(e) = self.try_step(actions) {
            panic!("BatchEnv::step: {e}");
        }
    }

    /// The auto-reset mode.
    fn autoreset(&self) -> AutoReset {
        self.columns().autoreset()
    }
    /// The spec of one env.
    fn spec(&self) -> &Spec {
        self.columns().spec()
    }
    /// Number of envs (rows of the per-env columns).
    fn num_envs(&self) -> usize {
        self.columns().num_envs()
    }
    /// Elements of one agent's observation.
    fn obs_len(&self) -> usize {
        self.columns().obs_len()
    }
    /// The global index of row 0.
    fn row_offset(&self) -> u64 {
        self.columns().row_offset()
    }
    /// Current observations, `num_envs * num_agents * obs_len` elements.
    fn obs(&self) -> &[Self::Obs] {
        &self.columns().obs
    }
    /// Last observation of episodes that ended in the last step (valid only on those rows).
    fn final_obs(&self) -> &[Self::Obs] {
        &self.columns().final_obs
    }
    /// Rewards of the last step, one per agent row.
    fn rewards(&self) -> &[f32] {
        &self.columns().rewards
    }
    /// Whether each env's episode terminated in the last step.
    fn terminated(&self) -> &[bool] {
        &self.columns().terminated
    }
    /// Whether each env's episode hit the step limit in the last step.
    fn truncated(&self) -> &[bool] {
        &self.columns().truncated
    }
    /// Steps taken in each env's current episode.
    fn episode_steps(&self) -> &[u32] {
        &self.columns().episode_steps
    }
    /// Rows that the next step resets instead of stepping ([`AutoReset::NextStep`]).
    fn needs_reset(&self) -> &[bool] {
        &self.columns().needs_reset
    }
    /// Number of steps since the last reset.
    fn t(&self) -> u64 {
        self.columns().t()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::Space;

    fn spec(agents: usize) -> Spec {
        Spec {
            obs_space: Space::Box { low: 0.0, high: 1.0, shape: vec![3] },
            action_space: Space::Discrete { n: 2 },
            num_agents: agents,
            max_episode_steps: Some(4),
        }
    }

    #[test]
    fn step_keys_follow_the_documented_tree() {
        let run = Key::new(7);
        let k = StepKeys::new(run, 5, 10);
        assert_eq!(k.row(2).key(), run.fold_in(5).fold_in(12));
        assert_eq!(k.row(2).step(), run.fold_in(5).fold_in(12).fold_in(KEY_STEP));
        assert_eq!(k.row(2).policy(), run.fold_in(5).fold_in(12).fold_in(KEY_POLICY));
        assert_eq!(k.row(2).reset(), run.fold_in(5).fold_in(12).fold_in(KEY_RESET));
        assert_eq!(k.pending_reset(2), StepKeys::new(run, 4, 10).row(2).reset());
        let mut c = Columns::<f32>::new(spec(1), 3, 7, 10, 0).unwrap();
        assert_eq!(c.restart(7).row(2).key(), run.fold_in(0).fold_in(12), "the first reset's key");
    }

    #[test]
    fn the_limit_truncates_at_exactly_max_episode_steps() {
        let mut steps = 0;
        assert_eq!(count_step(Some(2), false, &mut steps), (false, false));
        assert_eq!(count_step(Some(2), true, &mut steps), (true, true));
        assert_eq!(count_step(None, false, &mut steps), (false, false));
        assert_eq!(steps, 3);
    }

    #[test]
    fn each_mode_ends_an_episode_its_own_way() {
        let keys = StepKeys::new(Key::new(1), 3, 0);
        for (mode, resets, waits) in [
            (AutoReset::SameStep, true, false),
            (AutoReset::NextStep, false, true),
            (AutoReset::Disabled, false, false),
        ] {
            let (mut fo, mut steps, mut nr) = ([0.0f32; 2], 4, false);
            let k = end_episode(mode, keys.row(1), &[1.0, 2.0], &mut fo, &mut steps, &mut nr);
            assert_eq!(fo, [1.0, 2.0], "{mode:?}");
            assert_eq!(k, resets.then(|| keys.row(1).reset()), "{mode:?}");
            assert_eq!((steps == 0, nr), (resets, waits), "{mode:?}");
        }
    }

    #[test]
    fn columns_check_sizes_masks_and_rows() {
        assert!(Columns::<f32>::new(spec(1), 0, 0, 0, 0).is_err());
        assert!(Columns::<f32>::new(spec(1), 2, 0, u64::MAX, 0).is_err());
        let e = Columns::<f32>::new(spec(1), usize::MAX / 2, 0, 0, 0).unwrap_err().to_string();
        assert!(e.contains("num_envs") && e.contains("GiB"), "{e}");
        let mut c = Columns::<f32>::new(spec(2), 3, 0, 0, 0).unwrap();
        assert_eq!((c.obs.len(), c.rewards.len(), c.terminated.len(), c.per_env()), (18, 6, 3, 6));
        assert!(c.check_mask(&[true]).is_err() && c.check_mask(&[true, false, true]).is_ok());
        c.rewards.fill(1.0);
        c.truncated[1] = true;
        c.episode_steps[1] = 4;
        c.start_row(1);
        assert_eq!(
            (&c.rewards[..], c.truncated[1], c.episode_steps[1]),
            (&[1.0, 1.0, 0.0, 0.0, 1.0, 1.0][..], false, 0)
        );
        assert!(c.check_row(3).is_err() && c.check_row(2).is_ok());
        assert_eq!((c.next_step().row(0), c.t()), (StepKeys::new(Key::new(0), 1, 0).row(0), 1));
        c.restart(9);
        assert_eq!((c.t(), c.rewards.iter().sum::<f32>()), (0, 0.0));
    }
}
