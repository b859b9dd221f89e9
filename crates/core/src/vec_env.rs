//! The one batched driver of any [`Env`]: N copies stepped in parallel over rows, a
//! [`BatchEnv`] whose bookkeeping (keys, auto-reset, time limit) is `crate::batch`'s.

use crate::batch::BatchEnv;
use crate::batch::{Columns, StepKeys, count_step, end_episode};
use crate::env::Env;
use crate::error::{CoreError, FromInvalid};
use crate::key::Key;
use rayon::prelude::*;

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

/// N environments stepped together, with auto-reset ([`crate::batch::AutoReset`], same-step by default):
/// the [`BatchEnv`] of any [`Env`] (columns and their meaning: [`Columns`]).
///
/// Rows are independent and draw from keys derived from `(seed, step, row)` (see the crate
/// docs), so row `i` is identical for any thread count and any `num_envs > i`. With a row
/// offset ([`BatchEnv::shard`]), row `i` uses the keys of global row `offset + i`, so the
/// shard `[lo, hi)` of a large batch is bit-identical to those rows of the whole batch.
pub struct VecEnv<E: Env> {
    env: E,
    params: E::Params,
    cols: Columns<E::Obs>,
    states: Vec<E::State>,
    actions: Vec<E::Action>,
}

impl<E: Env> BatchEnv for VecEnv<E> {
    type Kernel = E;
    type Params = E::Params;
    type State = E::State;
    type Obs = E::Obs;
    type Action = E::Action;
    type Error = CoreError;

    fn shard(
        env: E,
        params: E::Params,
        num_envs: usize,
        seed: u64,
        row_offset: u64,
    ) -> Result<Self, CoreError> {
        let spec = env.spec(&params);
        let a = spec.num_agents;
        let kernel_row = (size_of::<E::State>() + a * size_of::<E::Action>()) as u128;
        let cols = Columns::new(spec, num_envs, seed, row_offset, kernel_row)?;
        let mut v = VecEnv {
            states: Vec::with_capacity(num_envs),
            actions: vec![E::Action::default(); num_envs * a],
            env,
            params,
            cols,
        };
        v.reset(seed);
        Ok(v)
    }

    fn columns(&self) -> &Columns<E::Obs> {
        &self.cols
    }

    fn set_autoreset(&mut self, mode: crate::batch::AutoReset) {
        self.cols.set_autoreset(mode);
    }

    fn reset(&mut self, seed: u64) {
        let keys = self.cols.restart(seed);
        let (per, n) = (self.cols.per_env(), self.cols.num_envs());
        let (env, params) = (&self.env, &self.params);
        self.states = self
            .cols
            .obs
            .par_chunks_mut(per.max(1))
            .take(n)
            .enumerate()
            .map(|(i, obs)| env.reset(params, keys.row(i).key(), obs))
            .collect();
    }

    fn reset_rows(&mut self, mask: &[bool]) -> Result<(), CoreError> {
        self.cols.check_mask(mask)?;
        let (keys, per) = (self.cols.keys(), self.cols.per_env());
        for (i, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
            let obs = &mut self.cols.obs[i * per..(i + 1) * per];
            self.states[i] = self.env.reset(&self.params, keys.row(i).reset(), obs);
            self.cols.start_row(i);
        }
        Ok(())
    }

    fn try_step(&mut self, actions: &[E::Action]) -> Result<(), CoreError> {
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

    fn step_with<F>(&mut self, policy: F)
    where
        F: Fn(usize, Key, &[E::Obs], &mut [E::Action]) + Sync,
    {
        self.run(Some(&policy));
    }

    fn state(&self, i: usize) -> Option<E::State> {
        self.states.get(i).cloned()
    }

    /// Also an error, changing nothing, when the env cannot observe a given state
    /// ([`Env::observe`]).
    fn set_state(&mut self, i: usize, state: E::State) -> Result<(), CoreError> {
        self.cols.check_row(i)?;
        let per = self.cols.per_env();
        // An env that cannot observe a state writes nothing and says so.
        if !self.env.observe(&self.params, &state, &mut self.cols.obs[i * per..(i + 1) * per]) {
            return Err(CoreError::invalid(
                "state",
                "given",
                "an env whose observation is a function of its state",
            ));
        }
        self.states[i] = state;
        self.cols.start_row(i);
        Ok(())
    }
}

impl<E: Env> VecEnv<E> {
    fn run<F>(&mut self, policy: Option<&F>)
    where
        F: Fn(usize, Key, &[E::Obs], &mut [E::Action]) + Sync,
    {
        let keys: StepKeys = self.cols.next_step();
        let a = self.cols.spec().num_agents;
        let per = self.cols.per_env();
        let limit = self.cols.spec().max_episode_steps;
        let mode = self.cols.autoreset();
        let num_envs = self.cols.num_envs();
        let threads = rayon::current_num_threads().max(1);
        // At least 64 rows a task: below that the hand-off to the pool costs more than the rows.
        let block = num_envs.div_ceil(threads * 4).max(64);
        let (env, params) = (&self.env, &self.params);
        let chunk = |b: usize, Rows { st, ob, fo, rw, ac, te, tr, sc, nr }: Rows<'_, E>| {
            for j in 0..st.len() {
                let row = b * block + j;
                let obs = &mut ob[j * per..(j + 1) * per];
                let acts = &mut ac[j * a..(j + 1) * a];
                let rws = &mut rw[j * a..(j + 1) * a];
                if nr[j] {
                    // Next-step auto-reset: this step only starts the new episode.
                    st[j] = env.reset(params, keys.pending_reset(row), obs);
                    rws.fill(0.0);
                    (te[j], tr[j], sc[j], nr[j]) = (false, false, 0, false);
                    continue;
                }
                // The row's key once; its tagged keys from it.
                let rk = keys.row(row);
                if let Some(p) = policy {
                    p(row, rk.policy(), obs, acts);
                }
                let term = env.step(params, &mut st[j], acts, rk.step(), obs, rws);
                (te[j], tr[j]) = count_step(limit, term, &mut sc[j]);
                if te[j] || tr[j] {
                    let fo = &mut fo[j * per..(j + 1) * per];
                    if let Some(k) = end_episode(mode, rk, obs, fo, &mut sc[j], &mut nr[j]) {
                        st[j] = env.reset(params, k, obs);
                    }
                }
            }
        };
        let c = &mut self.cols;
        if num_envs <= block {
            // One chunk: step it on this thread (no hand-off to the pool, which costs
            // microseconds per call at small batches).
            chunk(
                0,
                Rows {
                    st: &mut self.states,
                    ob: &mut c.obs,
                    fo: &mut c.final_obs,
                    rw: &mut c.rewards,
                    ac: &mut self.actions,
                    te: &mut c.terminated,
                    tr: &mut c.truncated,
                    sc: &mut c.episode_steps,
                    nr: &mut c.needs_reset,
                },
            );
            return;
        }
        self.states
            .par_chunks_mut(block)
            .zip(c.obs.par_chunks_mut(block * per))
            .zip(c.final_obs.par_chunks_mut(block * per))
            .zip(c.rewards.par_chunks_mut(block * a))
            .zip(self.actions.par_chunks_mut(block * a))
            .zip(c.terminated.par_chunks_mut(block))
            .zip(c.truncated.par_chunks_mut(block))
            .zip(c.episode_steps.par_chunks_mut(block))
            .zip(c.needs_reset.par_chunks_mut(block))
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
    /// Actions used in the last step.
    pub fn actions(&self) -> &[E::Action] {
        &self.actions
    }
    /// Per-env states (for inspection, checkpoints and golden tests).
    pub fn states(&self) -> &[E::State] {
        &self.states
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::AutoReset;
    use crate::space::{Space, Spec};

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
