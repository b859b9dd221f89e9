//! The one batched driver: N copies of an [`Env`] stepped in parallel over rows.

use crate::FromInvalid;
use crate::{CoreError, Env, Key, Spec};
use rayon::prelude::*;

/// Tags of the per-row keys (see the crate docs).
const KEY_STEP: u64 = 0;
const KEY_RESET: u64 = 1;
const KEY_POLICY: u64 = 2;

/// N environments stepped together, with same-step auto-reset.
///
/// Columns are contiguous and row-major; per-agent columns (`obs`, `final_obs`,
/// `rewards`, actions) have `num_envs * num_agents` rows, per-env columns (`terminated`,
/// `truncated`) have `num_envs`. After [`VecEnv::step`], a row whose episode ended
/// (`terminated || truncated`) has already been reset: `obs` holds the first observation of
/// the new episode and `final_obs` the last observation of the finished one (`final_obs` of
/// rows that did not finish is stale and must not be read).
///
/// Rows are independent and draw from keys derived from `(seed, step, row)` (see the crate
/// docs), so row `i` is identical for any thread count and any `num_envs > i`.
pub struct VecEnv<E: Env> {
    env: E,
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
        let mut v = VecEnv {
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
        let (env, params) = (&self.env, &self.params);
        self.states = self
            .obs
            .par_chunks_mut(per.max(1))
            .take(self.num_envs)
            .enumerate()
            .map(|(i, obs)| env.reset(params, k0.fold_in(i as u64), obs))
            .collect();
        self.episode_steps.iter_mut().for_each(|s| *s = 0);
        self.rewards.iter_mut().for_each(|r| *r = 0.0);
        self.terminated.iter_mut().for_each(|d| *d = false);
        self.truncated.iter_mut().for_each(|d| *d = false);
    }

    /// Steps every row with the given actions (`num_envs * num_agents`, row-major).
    ///
    /// # Panics
    /// If `actions.len() != num_envs * num_agents` (checked once per call).
    pub fn step(&mut self, actions: &[E::Action]) {
        assert_eq!(actions.len(), self.actions.len(), "VecEnv::step: actions length");
        self.actions.copy_from_slice(actions);
        self.run(None::<&fn(usize, Key, &[E::Obs], &mut [E::Action])>);
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
        let a = self.spec.num_agents;
        let per = a * self.obs_len;
        let limit = self.spec.max_episode_steps;
        let threads = rayon::current_num_threads().max(1);
        let block = self.num_envs.div_ceil(threads * 4).max(16);
        let (env, params) = (&self.env, &self.params);
        self.states
            .par_chunks_mut(block)
            .zip(self.obs.par_chunks_mut(block * per))
            .zip(self.final_obs.par_chunks_mut(block * per))
            .zip(self.rewards.par_chunks_mut(block * a))
            .zip(self.actions.par_chunks_mut(block * a))
            .zip(self.terminated.par_chunks_mut(block))
            .zip(self.truncated.par_chunks_mut(block))
            .zip(self.episode_steps.par_chunks_mut(block))
            .enumerate()
            .for_each(|(b, (((((((st, ob), fo), rw), ac), te), tr), sc))| {
                for j in 0..st.len() {
                    let row = b * block + j;
                    let row_key = step_key.fold_in(row as u64);
                    let key_step = row_key.fold_in(KEY_STEP);
                    let obs = &mut ob[j * per..(j + 1) * per];
                    let acts = &mut ac[j * a..(j + 1) * a];
                    if let Some(p) = policy {
                        p(row, row_key.fold_in(KEY_POLICY), obs, acts);
                    }
                    let rws = &mut rw[j * a..(j + 1) * a];
                    let term = env.step(params, &mut st[j], acts, key_step, obs, rws);
                    sc[j] += 1;
                    let trunc = limit.is_some_and(|m| sc[j] >= m);
                    te[j] = term;
                    tr[j] = trunc;
                    if term || trunc {
                        fo[j * per..(j + 1) * per].copy_from_slice(obs);
                        st[j] = env.reset(params, row_key.fold_in(KEY_RESET), obs);
                        sc[j] = 0;
                    }
                }
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
    fn zero_envs_is_an_error() {
        assert!(VecEnv::new(Counter, (), 0, 0).is_err());
    }
}
