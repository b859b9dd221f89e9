//! Environments for Kestrel, each a pure kernel over explicit state (see `kestrel_core::Env`).

pub mod cartpole;
pub mod pendulum;

pub use cartpole::{CartPole, CartPoleParams, CartPoleState};
pub use pendulum::{Pendulum, PendulumParams, PendulumState};
