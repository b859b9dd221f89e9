//! Active learning of latent dynamics (the reference: `active-dynamics` at commit `ceeba42`,
//! described in `shared/reference/actdyn.md`).
//!
//! A sequential VAE learns a latent vector field from high-dimensional observations while a
//! planner chooses the actions that should teach it fastest.
//!
//! - [`rbf`]: radial-basis features on a grid of centres (computed separably).
//! - [`fisher`]: Fisher information of RBF dynamics weights along predicted trajectories,
//!   A- and D-optimality, as batched trajectory costs.
//! - [`model`]: the sequential VAE (GRU encoder, MLP or RBF latent dynamics, decoder) and its
//!   ELBO with the multi-step KL, forward and backward.

pub mod bench;
pub mod config;
pub mod env;
mod error;
pub mod eval;
pub mod fisher;
pub mod model;
pub mod rbf;
pub mod train;

pub use error::ActdynError;
