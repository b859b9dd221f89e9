//! Environments for Kestrel, each a pure kernel over explicit state (see `kestrel_core::Env`).

pub mod cartpole;

pub use cartpole::{CartPole, CartPoleParams, CartPoleState};
