//! Environments for Kestrel, each a pure kernel over explicit state (see `kestrel_core::Env`).
//! Includes actdyn's latent vector-field systems ([`vectorfield`]).

pub mod asymexp;
pub mod cartpole;
pub mod control;
mod error;
pub mod grid;
pub mod pendulum;
pub mod treasure;
pub mod vectorfield;

pub use cartpole::{CartPole, CartPoleParams, CartPoleState};
pub use control::{
    BasicLinear, ContinuousCartPole, ControlEnv, ControlParams, ControlState, DiffDrive,
    DoubleIntegrator, Nav2d, PendulumDynamics,
};
pub use error::EnvError;
pub use grid::{GridConfig, GridMap, GridParams, GridWorld};
pub use pendulum::{Pendulum, PendulumParams, PendulumState};
pub use treasure::{TreasureHunt, TreasureItem, TreasureObs, TreasureParams, TreasureState};
/// Checks a physical constant or size is finite and positive (every env's params use it).
pub(crate) fn positive(field: &'static str, v: f64) -> Result<(), EnvError> {
    if v.is_finite() && v > 0.0 {
        return Ok(());
    }
    Err(kestrel_core::Invalid::new(field, v, "a finite number > 0").into())
}

/// Checks an episode limit is at least one step.
pub(crate) fn limit(steps: u32) -> Result<(), EnvError> {
    if steps == 0 {
        return Err(kestrel_core::Invalid::new("max_episode_steps", 0, "at least 1").into());
    }
    Ok(())
}

pub use vectorfield::{
    ActionModel, DoubleLimitCycle, Duffing, LimitCycle, Linear, Mlp, MultiAttractor,
    MultiAttractorConfig, NoiseConvention, ObsMap, ObsNoise, ObservationModel, PoissonVariant,
    Snowman, VanDerPol, VectorField, VectorFieldEnv, VectorFieldParams, VectorFieldState,
};
