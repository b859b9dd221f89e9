use crate::key::Key;
use crate::space::Spec;
use std::fmt::Debug;

/// A single-environment kernel with explicit state, params and key.
///
/// Batching, auto-reset, time limits and threads are written once, in [`crate::vec_env::VecEnv`].
///
/// Observations are flat: one agent's observation is `spec.obs_len()` elements of
/// `Self::Obs`, so an env can offer several observation layouts chosen in `Params`
/// (the layout sets `obs_len`) and still write into one contiguous column. Typed views over
/// a layout are the env's business (e.g. `kestrel_arc::FullObsView`).
pub trait Env: Send + Sync {
    /// What one tunes; `Default` reproduces the reference environment.
    type Params: Clone + Debug + Default + Send + Sync;
    /// What changes within an episode; heap-free where possible.
    type State: Clone + Debug + Send + Sync;
    /// One observation element (e.g. `i8` grid cells, `f32` features).
    type Obs: Copy + Default + Debug + Send + Sync + 'static;
    /// One agent's action.
    type Action: Copy + Default + Debug + Send + Sync + 'static;

    /// Spaces, number of agents and step limit under `params`.
    fn spec(&self, params: &Self::Params) -> Spec;

    /// Starts an episode: writes `num_agents * obs_len` observation elements.
    fn reset(&self, params: &Self::Params, key: Key, obs: &mut [Self::Obs]) -> Self::State;

    /// Advances one step. Writes one observation and one reward per agent and returns
    /// `terminated`. Time limits are not the env's business.
    fn step(
        &self,
        params: &Self::Params,
        state: &mut Self::State,
        actions: &[Self::Action],
        key: Key,
        obs: &mut [Self::Obs],
        rewards: &mut [f32],
    ) -> bool;

    /// Writes the observation of `state` (all agents) and returns `true`, for envs whose
    /// observation is a function of the state alone; `false` (the default), writing nothing,
    /// when it is not.
    /// [`crate::batch::BatchEnv::set_state`] on a [`crate::vec_env::VecEnv`] uses it to start a row from a given state (matching a
    /// peer from the same start state).
    fn observe(&self, params: &Self::Params, state: &Self::State, obs: &mut [Self::Obs]) -> bool {
        let _ = (params, state, obs);
        false
    }
}
