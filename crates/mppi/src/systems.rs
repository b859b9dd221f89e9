//! The systems MPPI is tested and benchmarked on. They live in `kestrel-envs`
//! ([`kestrel_envs::control`], where [`kestrel_envs::ControlEnv`] also makes each an `Env`);
//! re-exported here so controller code needs one import.

pub use kestrel_envs::control::{
    BasicLinear, ContinuousCartPole, DiffDrive, DoubleIntegrator, Nav2d, PendulumDynamics,
};
