//! Environments for Kestrel, each a pure kernel over explicit state (see `kestrel_core::Env`).

pub mod cartpole;
pub mod control;
pub mod pendulum;

pub use cartpole::{CartPole, CartPoleParams, CartPoleState};
pub use control::{
    BasicLinear, ContinuousCartPole, ControlEnv, ControlParams, ControlState, DiffDrive,
    DoubleIntegrator, Dynamics, Nav2d, PendulumDynamics,
};
pub use pendulum::{Pendulum, PendulumParams, PendulumState};
