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
pub use vectorfield::{
    ActionModel, DoubleLimitCycle, Duffing, LimitCycle, Linear, Mlp, MultiAttractor,
    MultiAttractorConfig, NoiseConvention, ObsMap, ObsNoise, ObservationModel, PoissonVariant,
    Snowman, VanDerPol, VectorField, VectorFieldEnv, VectorFieldParams, VectorFieldState,
};
