//! The one batched driver: N copies of an [`Env`] stepped in parallel over rows.

use crate::FromInvalid;
use crate::{CoreError, Env, Key, Spec};
use rayon::prelude::*;

/// Tag of a row's step key (`key.fold_in(t).fold_in(row).fold_in(KEY_STEP)`; see the crate
/// docs). Batched drivers of one env kind (`kestrel_arc::ArcLanes`) derive the same keys.
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
    /// Never: finished rows keep stepping until [`VecEnv::reset_rows`] resets them
    /// (Gymnasium's `DISABLED`).
    Disabled,
}

/// One block of rows of every column, as the step loop takes it.
struct Rows<'a, E: Env> {
    st: &'a mut [E::State],
    ob: &'a mut [E::Obs],
    fo: &'a mut [E::Obs],
    rw: &'a mut [f32],
    ac: &'a mut [E::Action],
    te: &'a mut [bool],
    tr: &'a mut [bool],
    sc: &'a mut [u32],
    nr: &'a mut [bool],
}

/// N environments stepped together, with auto-reset ([`AutoReset`], same-step by default).
///
/// Columns are contiguous and row-major; per-agent columns (`obs`, `final_obs`,
/// `rewards`, actions) have `num_envs * num_agents` rows, per-env columns (`terminated`,
/// `truncated`) have `num_envs`. After [`VecEnv::step`], a row whose episode ended
/// (`terminated || truncated`) has already been reset: `obs` holds the first observation of
/// the new episode and `final_obs` the last observation of the finished one (`final_obs` of
/// rows that did not finish is stale and must not be read).
///
/// Rows are independent and draw from keys derived from `(seed, step, row)` (see the crate
/// docs), so row `i` is identical for any thread count and any `num_envs > i`. With a row
/// offset ([`VecEnv::shard`]), row `i` uses the keys of global row `offset + i`, so the shard
/// `[lo, hi)` of a large batch is bit-identical to those rows of the whole batch.
pub struct VecEnv<E: Env> {
    env: E,
    autoreset: AutoReset,
    row_offset: u64,
    needs_reset: Vec<bool>,
    params: E::Params,
    spec: Spec,
    num_envs: usize,
    obs_len: usize,
    key: Key,
    t: u64,
    states: Vec<E::State>,
    episode_steps: Vec<u32>,
    actions: Vec<E::Action>,
    obs: Vec<E::Obs>,
    final_obs: Vec<E::Obs>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

impl<E: Env> VecEnv<E> {
    /// Builds `num_envs` environments and resets them all from `seed`.
    pub fn new(env: E, params: E::Params, num_envs: usize, seed: u64) -> Result<Self, CoreError> {
        Self::shard(env, params, num_envs, seed, 0)
    }

    /// Rows `[row_offset, row_offset + num_envs)` of a batch seeded `seed`: each row draws
    /// the keys of its global row, so shards of one batch reproduce it exactly.
    pub fn shard(
        env: E,
        params: E::Params,
        num_envs: usize,
        seed: u64,
        row_offset: u64,
    ) -> Result<Self, CoreError> {
        if num_envs == 0 {
            return Err(CoreError::invalid("num_envs", "0", "at least 1"));
        }
        let spec = env.spec(&params);
        let a = spec.num_agents;
        let obs_len = spec.obs_len();
        // Two observation columns, the states and the small columns, per row.
        let row = 2 * (a * obs_len * size_of::<E::Obs>()) as u128
            + size_of::<E::State>() as u128
            + (a * (size_of::<E::Action>() + 4) + 8) as u128;
        crate::check_bytes("num_envs", num_envs, num_envs as u128, row)?;
        if row_offset.checked_add(num_envs as u64).is_none() {
            return Err(CoreError::invalid(
                "row_offset",
                row_offset,
                "row_offset + num_envs < 2^64",
            ));
        }
        let mut v = VecEnv {
            autoreset: AutoReset::SameStep,
            row_offset,
            needs_reset: vec![false; num_envs],
            states: Vec::with_capacity(num_envs),
            episode_steps: vec![0; num_envs],
            actions: vec![E::Action::default(); num_envs * a],
            obs: vec![E::Obs::default(); num_envs * a * obs_len],
            final_obs: vec![E::Obs::default(); num_envs * a * obs_len],
            rewards: vec![0.0; num_envs * a],
            terminated: vec![false; num_envs],
            truncated: vec![false; num_envs],
            env,
            params,
            spec,
            num_envs,
            obs_len,
            key: Key::new(seed),
            t: 0,
        };
        v.reset(seed);
        Ok(v)
    }

    /// Resets every row from `seed` (step counter back to 0).
    pub fn reset(&mut self, seed: u64) {
        self.key = Key::new(seed);
        self.t = 0;
        let k0 = self.key.fold_in(0);
        let per = self.spec.num_agents * self.obs_len;
        let (env, params, off) = (&self.env, &self.params, self.row_offset);
        self.states = self
            .obs
            .par_chunks_mut(per.max(1))
            .take(self.num_envs)
            .enumerate()
            .map(|(i, obs)| env.reset(params, k0.fold_in(off + i as u64), obs))
            .collect();
        self.needs_reset.iter_mut().for_each(|r| *r = false);
        self.episode_steps.iter_mut().for_each(|s| *s = 0);
        self.rewards.iter_mut().for_each(|r| *r = 0.0);
        self.terminated.iter_mut().for_each(|d| *d = false);
        self.truncated.iter_mut().for_each(|d| *d = false);
    }

    /// Sets when finished rows reset (takes effect from the next step).
    pub fn set_autoreset(&mut self, mode: AutoReset) {
        self.autoreset = mode;
    }

    /// The auto-reset mode.
    pub fn autoreset(&self) -> AutoReset {
        self.autoreset
    }

    /// The global index of row 0.
    pub fn row_offset(&self) -> u64 {
        self.row_offset
    }

    /// Resets the rows where `mask` is true now (the [`AutoReset::Disabled`] way, usable in
    /// every mode), with the keys of the current step counter; their flags and rewards are
    /// cleared. A mask of the wrong length is an error and changes nothing.
    pub fn reset_rows(&mut self, mask: &[bool]) -> Result<(), CoreError> {
        if mask.len() != self.num_envs {
            return Err(CoreError::Length {
                what: "reset mask",
                expected: self.num_envs,
                got: mask.len(),
            });
        }
        let k = self.key.fold_in(self.t);
        let a = self.spec.num_agents;
        let per = a * self.obs_len;
        for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
            let row_key = k.fold_in(self.row_offset + i as u64);
            let obs = &mut self.obs[i * per..(i + 1) * per];
            self.states[i] = self.env.reset(&self.params, row_key.fold_in(KEY_RESET), obs);
            self.start_row(i);
        }
        Ok(())
    }

    /// Row `i` at the start of an episode: step count, flags and rewards cleared.
    fn start_row(&mut self, i: usize) {
        let a = self.spec.num_agents;
        self.episode_steps[i] = 0;
        self.needs_reset[i] = false;
        self.terminated[i] = false;
        self.truncated[i] = false;
        self.rewards[i * a..(i + 1) * a].iter_mut().for_each(|r| *r = 0.0);
    }

    /// Puts row `i` into `state` as the first state of a fresh episode (step count 0, flags
    /// and rewards cleared, observation rewritten). An error, changing nothing, when the row
    /// is out of range or the env cannot observe a given state ([`Env::observe`]).
    pub fn set_state(&mut self, i: usize, state: E::State) -> Result<(), CoreError> {
        if i >= self.num_envs {
            return Err(CoreError::invalid(
                "row",
                i,
                format!("below num_envs = {}", self.num_envs),
            ));
        }
        let per = self.spec.num_agents * self.obs_len;
        // An env that cannot observe a state writes nothing and says so.
        if !self.env.observe(&self.params, &state, &mut self.obs[i * per..(i + 1) * per]) {
            return Err(CoreError::invalid(
                "state",
                "given",
                "an env whose observation is a function of its state",
            ));
        }
        self.states[i] = state;
        self.start_row(i);
        Ok(())
    }

    /// Steps every row with the given actions (`num_envs * num_agents`, row-major).
    ///
    /// # Panics
    /// If `actions.len() != num_envs * num_agents`; [`VecEnv::try_step`] returns an error
    /// instead.
    pub fn step(&mut self, actions: &[E::Action]) {
        if let Err(e) = self.try_step(actions) {
            panic!("VecEnv::step: {e}");
        }
    }

    /// [`VecEnv::step`], with a wrong actions length an error that changes nothing.
    pub fn try_step(&mut self, actions: &[E::Action]) -> Result<(), CoreError> {
        if actions.len() != self.actions.len() {
            return Err(CoreError::Length {
                what: "actions",
                expected: self.actions.len(),
                got: actions.len(),
            });
        }
        self.actions.copy_from_slice(actions);
        self.run(None::<&fn(usize, Key, &[E::Obs], &mut [E::Action])>);
        Ok(())
    }

    /// Steps every row with actions chosen by `policy(row, key_policy, obs, actions_out)`,
    /// called inside the parallel loop just before the row's step (so sampling is fused
    /// with stepping). `obs` is the row's current observation (all agents).
    pub fn step_with<F>(&mut self, policy: F)
    where
        F: Fn(usize, Key, &[E::Obs], &mut [E::Action]) + Sync,
    {
        self.run(Some(&policy));
    }

    fn run<F>(&mut self, policy: Option<&F>)
    where
        F: Fn(usize, Key, &[E::Obs], &mut [E::Action]) + Sync,
    {
        self.t += 1;
        let step_key = self.key.fold_in(self.t);
        // A next-step reset uses the key of the step that ended the episode, so it starts the
        // same episode a same-step reset would have.
        let prev_key = self.key.fold_in(self.t - 1);
        let a = self.spec.num_agents;
        let per = a * self.obs_len;
        let limit = self.spec.max_episode_steps;
        let threads = rayon::current_num_threads().max(1);
        // At least 64 rows a task: below that the hand-off to the pool costs more than the rows.
        let block = self.num_envs.div_ceil(threads * 4).max(64);
        let (env, params, off, mode) = (&self.env, &self.params, self.row_offset, self.autoreset);
        let chunk = |b: usize, Rows { st, ob, fo, rw, ac, te, tr, sc, nr }: Rows<'_, E>| {
            for j in 0..st.len() {
                let row = b * block + j;
                let row_key = step_key.fold_in(off + row as u64);
                let key_step = row_key.fold_in(KEY_STEP);
                let obs = &mut ob[j * per..(j + 1) * per];
                let acts = &mut ac[j * a..(j + 1) * a];
                let rws = &mut rw[j * a..(j + 1) * a];
                if nr[j] {
                    // Next-step auto-reset: this step only starts the new episode.
                    let reset_key = prev_key.fold_in(off + row as u64).fold_in(KEY_RESET);
                    st[j] = env.reset(params, reset_key, obs);
                    rws.iter_mut().for_each(|r| *r = 0.0);
                    (te[j], tr[j], sc[j], nr[j]) = (false, false, 0, false);
                    continue;
                }
                if let Some(p) = policy {
                    p(row, row_key.fold_in(KEY_POLICY), obs, acts);
                }
                let term = env.step(params, &mut st[j], acts, key_step, obs, rws);
                sc[j] += 1;
                let trunc = limit.is_some_and(|m| sc[j] >= m);
                te[j] = term;
                tr[j] = trunc;
                if term || trunc {
                    fo[j * per..(j + 1) * per].copy_from_slice(obs);
                    match mode {
                        AutoReset::SameStep => {
                            st[j] = env.reset(params, row_key.fold_in(KEY_RESET), obs);
                            sc[j] = 0;
                        }
                        AutoReset::NextStep => nr[j] = true,
                        AutoReset::Disabled => {}
                    }
                }
            }
        };
        if self.num_envs <= block {
            // One chunk: step it on this thread (no hand-off to the pool, which costs
            // microseconds per call at small batches).
            chunk(
                0,
                Rows {
                    st: &mut self.states,
                    ob: &mut self.obs,
                    fo: &mut self.final_obs,
                    rw: &mut self.rewards,
                    ac: &mut self.actions,
                    te: &mut self.terminated,
                    tr: &mut self.truncated,
                    sc: &mut self.episode_steps,
                    nr: &mut self.needs_reset,
                },
            );
            return;
        }
        self.states
            .par_chunks_mut(block)
            .zip(self.obs.par_chunks_mut(block * per))
            .zip(self.final_obs.par_chunks_mut(block * per))
            .zip(self.rewards.par_chunks_mut(block * a))
            .zip(self.actions.par_chunks_mut(block * a))
            .zip(self.terminated.par_chunks_mut(block))
            .zip(self.truncated.par_chunks_mut(block))
            .zip(self.episode_steps.par_chunks_mut(block))
            .zip(self.needs_reset.par_chunks_mut(block))
            .enumerate()
            .for_each(|(b, ((((((((st, ob), fo), rw), ac), te), tr), sc), nr))| {
                chunk(b, Rows { st, ob, fo, rw, ac, te, tr, sc, nr })
            });
    }

    /// The environment kernel.
    pub fn env(&self) -> &E {
        &self.env
    }
    /// The params every row runs with.
    pub fn params(&self) -> &E::Params {
        &self.params
    }
    /// The spec under these params.
    pub fn spec(&self) -> &Spec {
        &self.spec
    }
    /// Number of environments (rows of the per-env columns).
    pub fn num_envs(&self) -> usize {
        self.num_envs
    }
    /// Elements of one agent's observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }
    /// Current observations, `num_envs * num_agents * obs_len` elements.
    pub fn obs(&self) -> &[E::Obs] {
        &self.obs
    }
    /// Last observation of episodes that ended in the last step (valid only on those rows).
    pub fn final_obs(&self) -> &[E::Obs] {
        &self.final_obs
    }
    /// Rewards of the last step, one per agent row.
    pub fn rewards(&self) -> &[f32] {
        &self.rewards
    }
    /// Whether each env's episode terminated in the last step.
    pub fn terminated(&self) -> &[bool] {
        &self.terminated
    }
    /// Whether each env's episode hit the step limit in the last step.
    pub fn truncated(&self) -> &[bool] {
        &self.truncated
    }
    /// Actions used in the last step.
    pub fn actions(&self) -> &[E::Action] {
        &self.actions
    }
    /// Per-env states (for inspection, checkpoints and golden tests).
    pub fn states(&self) -> &[E::State] {
        &self.states
    }
    /// Steps taken in each env's current episode.
    pub fn episode_steps(&self) -> &[u32] {
        &self.episode_steps
    }
    /// Rows that the next step resets instead of stepping ([`AutoReset::NextStep`]).
    pub fn needs_reset(&self) -> &[bool] {
        &self.needs_reset
    }
    /// Number of `step` calls since the last reset.
    pub fn t(&self) -> u64 {
        self.t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Space;

    /// Counts up by the action; terminates at 10; reward = new value.
    #[derive(Clone, Debug)]
    struct Counter;
    impl Env for Counter {
        type Params = ();
        type State = u32;
        type Obs = f32;
        type Action = u32;
        fn spec(&self, _: &()) -> Spec {
            Spec {
                obs_space: Space::Box { low: 0.0, high: 20.0, shape: vec![1] },
                action_space: Space::Discrete { n: 3 },
                num_agents: 1,
                max_episode_steps: Some(4),
            }
        }
        fn reset(&self, _: &(), key: Key, obs: &mut [f32]) -> u32 {
            let s = key.rng().below(3);
            obs[0] = s as f32;
            s
        }
        fn step(
            &self,
            _: &(),
            s: &mut u32,
            a: &[u32],
            _: Key,
            obs: &mut [f32],
            r: &mut [f32],
        ) -> bool {
            *s += a[0];
            obs[0] = *s as f32;
            r[0] = *s as f32;
            *s >= 10
        }
        fn observe(&self, _: &(), s: &u32, obs: &mut [f32]) -> bool {
            obs[0] = *s as f32;
            true
        }
    }

    #[test]
    fn set_state_starts_a_fresh_episode_from_the_given_state() {
        let mut v = VecEnv::new(Counter, (), 2, 0).unwrap();
        v.step(&[1, 1]);
        v.set_state(1, 8).unwrap();
        assert_eq!((v.obs()[1], v.episode_steps()[1], v.rewards()[1]), (8.0, 0, 0.0));
        v.step(&[0, 2]);
        assert_eq!((v.terminated()[1], v.final_obs()[1]), (true, 10.0));
        let e = v.set_state(2, 0).unwrap_err().to_string();
        assert!(e.contains("row") && e.contains('2'), "{e}");
    }

    #[test]
    fn time_limit_and_autoreset() {
        let mut v = VecEnv::new(Counter, (), 3, 0).unwrap();
        for t in 1..=4 {
            v.step(&[0, 0, 0]);
            assert_eq!(v.truncated(), &[t == 4; 3]);
            assert_eq!(v.terminated(), &[false; 3]);
        }
        assert_eq!(v.episode_steps(), &[0, 0, 0]);
    }

    #[test]
    fn termination_keeps_final_obs() {
        let mut v = VecEnv::new(Counter, (), 1, 0).unwrap();
        let start = v.obs()[0];
        v.step(&[2]);
        v.step(&[2]);
        v.step(&[2]);
        v.step_with(|_, _, _, a| a[0] = 20);
        assert!(v.terminated()[0] && v.truncated()[0]);
        assert_eq!(v.final_obs()[0], start + 26.0);
    }

    #[test]
    fn next_step_autoreset_returns_the_last_obs_then_resets() {
        let mut same = VecEnv::new(Counter, (), 2, 5).unwrap();
        let mut next = VecEnv::new(Counter, (), 2, 5).unwrap();
        next.set_autoreset(AutoReset::NextStep);
        for _ in 0..3 {
            same.step(&[1, 1]);
            next.step(&[1, 1]);
        }
        same.step(&[1, 1]);
        next.step(&[1, 1]);
        // Truncated at 4: same-step shows the new episode, next-step the last observation.
        assert_eq!(next.truncated(), &[true, true]);
        assert_eq!(next.obs(), same.final_obs());
        assert_eq!(next.needs_reset(), &[true, true]);
        // The next step ignores the action and resets with the same key as same-step did.
        next.step(&[2, 2]);
        assert_eq!(next.obs(), same.obs());
        assert_eq!(next.rewards(), &[0.0, 0.0]);
        assert_eq!(next.truncated(), &[false, false]);
        assert_eq!(next.episode_steps(), &[0, 0]);
    }

    #[test]
    fn disabled_autoreset_waits_for_reset_rows() {
        let mut v = VecEnv::new(Counter, (), 2, 1).unwrap();
        v.set_autoreset(AutoReset::Disabled);
        for _ in 0..4 {
            v.step(&[1, 1]);
        }
        assert_eq!(v.truncated(), &[true, true]);
        let before = v.obs().to_vec();
        v.reset_rows(&[true, false]).unwrap();
        assert_eq!(v.episode_steps(), &[0, 4]);
        assert_eq!(v.obs()[1], before[1]);
        assert!(!v.truncated()[0] && v.truncated()[1]);
        assert!(v.reset_rows(&[true]).is_err());
    }

    #[test]
    fn a_shard_reproduces_its_rows_of_the_whole_batch() {
        for mode in [AutoReset::SameStep, AutoReset::NextStep] {
            let mut whole = VecEnv::new(Counter, (), 8, 3).unwrap();
            let mut shard = VecEnv::shard(Counter, (), 3, 3, 2).unwrap();
            whole.set_autoreset(mode);
            shard.set_autoreset(mode);
            for t in 0..12u32 {
                let acts: Vec<u32> = (0..8).map(|i| (i + t) % 3).collect();
                whole.step(&acts);
                shard.step(&acts[2..5]);
                assert_eq!(shard.obs(), &whole.obs()[2..5]);
                assert_eq!(shard.truncated(), &whole.truncated()[2..5]);
            }
        }
        assert!(VecEnv::shard(Counter, (), 2, 0, u64::MAX).is_err());
    }

    #[test]
    fn a_wrong_actions_length_is_an_error_that_changes_nothing() {
        let mut v = VecEnv::new(Counter, (), 2, 0).unwrap();
        let obs = v.obs().to_vec();
        let e = v.try_step(&[1]).unwrap_err().to_string();
        assert!(e.contains("actions") && e.contains('2') && e.contains('1'), "{e}");
        assert_eq!((v.obs(), v.t()), (&obs[..], 0));
    }

    #[test]
    fn zero_envs_is_an_error() {
        assert!(VecEnv::new(Counter, (), 0, 0).is_err());
    }
}
