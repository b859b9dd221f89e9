//! The systems MPPI is tested and benchmarked on. They live in `kestrel-dynamics` (where
//! `kestrel_envs::ControlEnv` also makes each an `Env`); re-exported here so controller code
//! needs one import.

pub use kestrel_dynamics::{
    BasicLinear, ContinuousCartPole, DiffDrive, DoubleIntegrator, Nav2d, PendulumDynamics,
};
