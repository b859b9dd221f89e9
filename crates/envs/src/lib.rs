//! Environments for Kestrel, each a pure kernel over explicit state (see `kestrel_core::Env`).

pub mod cartpole;
pub mod control;
mod error;
pub mod grid;
pub mod pendulum;
pub mod treasure;

pub use cartpole::{CartPole, CartPoleParams, CartPoleState};
pub use control::{
    BasicLinear, ContinuousCartPole, ControlEnv, ControlParams, ControlState, DiffDrive,
    DoubleIntegrator, Dynamics, Nav2d, PendulumDynamics,
};
pub use error::EnvError;
pub use grid::{GridMap, GridParams, GridWorld};
pub use pendulum::{Pendulum, PendulumParams, PendulumState};
pub use treasure::{TreasureHunt, TreasureObs, TreasureParams, TreasureState};
