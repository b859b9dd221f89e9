//! Neuroevolution: a small MLP policy per candidate, evaluated on any single-agent [`Env`].
//!
//! One `evaluate` call runs every candidate's episodes as independent rows in parallel; each
//! row runs its whole episode (keys from `(key, row, step)`), so there is one fork-join per
//! generation rather than one per environment step (a per-step batch of a few hundred cheap
//! rows is dominated by synchronisation), no steps are wasted after an episode ends, and the
//! result does not depend on the thread count.

use crate::error::EvoError;
use crate::problem::Problem;
use kestrel_core::FromInvalid;
use kestrel_core::{Env, Key};
use rayon::prelude::*;

/// Widest layer the stack-allocated forward pass supports.
pub const MAX_WIDTH: usize = 64;

/// An MLP policy problem: fitness is minus the mean undiscounted return over `episodes`
/// episodes (each to termination or truncation, at most `max_steps` steps).
pub struct Neuro<E: Env> {
    env: E,
    params: E::Params,
    sizes: Vec<usize>,
    num_dims: usize,
    episodes: usize,
    max_steps: u32,
    obs_to_f32: fn(E::Obs) -> f32,
    to_action: fn(&[f32]) -> E::Action,
}

impl<E: Env + Clone> Neuro<E> {
    /// `hidden` tanh layers between the env's observation and `outputs` linear outputs;
    /// `to_action` maps the outputs to an action (e.g. argmax).
    #[allow(clippy::too_many_arguments)] // a flat constructor reads better than a one-use struct here
    pub fn new(
        env: E,
        params: E::Params,
        hidden: &[usize],
        outputs: usize,
        episodes: usize,
        max_steps: u32,
        obs_to_f32: fn(E::Obs) -> f32,
        to_action: fn(&[f32]) -> E::Action,
    ) -> Result<Self, EvoError> {
        let spec = env.spec(&params);
        if spec.num_agents != 1 {
            return Err(EvoError::invalid(
                "env",
                format!("{} agents", spec.num_agents),
                "a single-agent env",
            ));
        }
        let mut sizes = vec![spec.obs_len()];
        sizes.extend_from_slice(hidden);
        sizes.push(outputs);
        if sizes.iter().any(|&w| w == 0 || w > MAX_WIDTH) {
            return Err(EvoError::invalid(
                "layer sizes",
                format!("{sizes:?}"),
                "1 to 64 units per layer",
            ));
        }
        if episodes == 0 || max_steps == 0 {
            return Err(EvoError::invalid(
                "episodes/max_steps",
                format!("{episodes}/{max_steps}"),
                "at least 1 each",
            ));
        }
        let num_dims = sizes.windows(2).map(|w| w[0] * w[1] + w[1]).sum();
        Ok(Neuro { env, params, sizes, num_dims, episodes, max_steps, obs_to_f32, to_action })
    }

    /// Layer widths, input first.
    pub fn sizes(&self) -> &[usize] {
        &self.sizes
    }
}

/// Forward pass ([`kestrel_nn::row::mlp_row`]): per layer `W` (out × in, row-major) then `b`,
/// laid out one layer after another; tanh on hidden layers.
fn forward(weights: &[f32], sizes: &[usize], input: &[f32], out: &mut [f32; MAX_WIDTH]) -> usize {
    let n = *sizes.last().expect("at least two layers");
    let layer = |l: usize| {
        let off: usize = sizes[..=l].windows(2).map(|w| w[0] * w[1] + w[1]).sum();
        let (n_in, n_out) = (sizes[l], sizes[l + 1]);
        (
            &weights[off..off + n_in * n_out],
            &weights[off + n_in * n_out..off + n_in * n_out + n_out],
        )
    };
    kestrel_nn::row::mlp_row::<f32, MAX_WIDTH>(
        sizes.len() - 1,
        layer,
        kestrel_nn::Activation::Tanh,
        input,
        &mut out[..n],
    );
    n
}

impl<E: Env + Clone> Problem for Neuro<E>
where
    E::Params: Sync,
{
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn evaluate_rows(&self, key: Key, first_row: u64, population: &[f32], fitness: &mut [f32]) {
        let (nd, eps) = (self.num_dims, self.episodes);
        assert_eq!(
            population.len(),
            fitness.len() * nd,
            "Neuro::evaluate: population must be rows x num_dims"
        );
        let spec = self.env.spec(&self.params);
        let limit = spec.max_episode_steps.map_or(self.max_steps, |m| m.min(self.max_steps));
        let obs_len = spec.obs_len();
        let (sizes, f, act) = (&self.sizes, self.obs_to_f32, self.to_action);
        let episode = |row: usize| -> f64 {
            let c = row / eps;
            let weights = &population[c * nd..(c + 1) * nd];
            // Episode keys follow the global candidate: (first_row + c)·episodes + e.
            let key_row = key.fold_in(first_row * eps as u64 + row as u64);
            let mut obs = vec![E::Obs::default(); obs_len];
            let mut state = self.env.reset(&self.params, key_row, &mut obs);
            let (mut ret, mut reward) = (0.0, [0.0f32]);
            for t in 0..limit {
                let mut input = [0f32; MAX_WIDTH];
                for (i, o) in input.iter_mut().zip(&obs) {
                    *i = f(*o);
                }
                let mut out = [0f32; MAX_WIDTH];
                let n = forward(weights, sizes, &input[..obs_len], &mut out);
                let a = [act(&out[..n])];
                let done = self.env.step(
                    &self.params,
                    &mut state,
                    &a,
                    key_row.fold_in(t as u64 + 1),
                    &mut obs,
                    &mut reward,
                );
                ret += reward[0] as f64;
                if done {
                    break;
                }
            }
            ret
        };
        fitness.par_iter_mut().enumerate().for_each(|(c, fit)| {
            let total: f64 = (c * eps..(c + 1) * eps).map(episode).sum();
            *fit = -(total / eps as f64) as f32;
        });
    }
}

/// Index of the largest output (ties: the first).
pub fn argmax(out: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &v) in out.iter().enumerate() {
        if v > out[best] {
            best = i;
        }
    }
    best as u32
}
/// The neuroevolution problem of `problem = "cartpole"`.
pub fn cartpole_problem() -> Result<Neuro<kestrel_envs::CartPole>, EvoError> {
    let params = kestrel_envs::CartPoleParams::default();
    Neuro::new(kestrel_envs::CartPole, params, &[8], 2, 2, 500, |o| o, argmax)
}

/// The search dimensions of [`cartpole_problem`]: a 4-8-2 MLP's weights and biases.
pub const CARTPOLE_DIMS: usize = 4 * 8 + 8 + 8 * 2 + 2;
