//! Learners for Kestrel.
//!
//! - [`allo`]: ALLO Laplacian representation learning on grid maps (and the GGDO baseline),
//!   with data collection over `VecEnv` and the paper's ground truth and metric
//!   ([`laplacian`]).
//! - [`asymexp`]: ALLO as `exp_alcl/allo.py` of `tarod13/asymexp` computes it (its loss,
//!   optimisers, collection rows), with its empirical ground truth in
//!   [`laplacian::empirical`].
//! - [`iqn`]: implicit quantile network agents (sorrel's iRainbow), one learner per agent.
//!
//! Parts only: the whole runs that train them (config, loop, folder) are `kestrel-run`'s
//! `runs::allo` and `runs::hunt`.

pub mod allo;
pub mod asymexp;
pub mod bench;
mod distinct;
mod error;
pub mod iqn;
pub mod laplacian;

pub use error::AgentError;
