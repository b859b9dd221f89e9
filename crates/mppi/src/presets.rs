//! The built-in systems with their start states and MPPI settings (a run config's `system`,
//! the Python package's built-in systems), and the three controllers by name with their own
//! knobs ([`with_controller`] builds one from them). The run config that gathers them is
//! `kestrel_run::runs::mppi::MppiRunConfig`.
//!
//! [`SystemKind`] is itself a [`Dynamics`] (one `match` per step onto the concrete system), so a
//! run can pick its system from a config without generics; hot benchmarks use the concrete
//! types.

use crate::controller::Controller;
use crate::kmppi::{Kmppi, KmppiParams};
use crate::mppi::Mppi;
use crate::params::{MppiError, MppiParams};
use crate::smppi::{Smppi, SmppiParams};
use crate::systems::{BasicLinear, ContinuousCartPole, DiffDrive, Nav2d, PendulumDynamics};
use kestrel_dynamics::Dynamics;

/// The systems the CLI and the bindings can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SystemKind {
    /// Gym pendulum swing-up (start hanging down).
    Pendulum,
    /// 2-D navigation around a Gaussian hill (pytorch-mppi's `Toy2DEnvironment`).
    Nav2d,
    /// jax-mppi's basic linear system.
    Basic,
    /// Continuous-force cart-pole balancing (Gymnasium's equations), from a 0.2 rad tilt.
    Cartpole,
    /// Differential-drive robot driving to (2, 1) from the origin facing +x.
    DiffDrive,
}

impl SystemKind {
    /// Every system.
    pub const ALL: [SystemKind; 5] = [
        SystemKind::Pendulum,
        SystemKind::Nav2d,
        SystemKind::Basic,
        SystemKind::Cartpole,
        SystemKind::DiffDrive,
    ];

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            SystemKind::Pendulum => "pendulum",
            SystemKind::Nav2d => "nav2d",
            SystemKind::Basic => "basic",
            SystemKind::Cartpole => "cartpole",
            SystemKind::DiffDrive => "diff-drive",
        }
    }

    /// The task's start state.
    pub fn start(self) -> Vec<f64> {
        let mut x = vec![0.0; self.nx()];
        self.initial_state(&mut x);
        x
    }

    /// The MPPI settings this system is run with by default.
    pub fn default_params(self) -> MppiParams {
        match self {
            SystemKind::Pendulum => MppiParams {
                num_samples: 100,
                horizon: 15,
                u_min: vec![-2.0],
                u_max: vec![2.0],
                ..MppiParams::new(1, 10.0)
            },
            SystemKind::Nav2d => MppiParams {
                num_samples: 500,
                horizon: 20,
                u_min: vec![-1.0; 2],
                u_max: vec![1.0; 2],
                ..MppiParams::new(2, 1.0)
            },
            SystemKind::Basic => {
                MppiParams { num_samples: 50, horizon: 15, lambda: 5.0, ..MppiParams::new(1, 1.0) }
            }
            SystemKind::Cartpole => MppiParams {
                num_samples: 500,
                horizon: 50,
                u_min: vec![-10.0],
                u_max: vec![10.0],
                ..MppiParams::new(1, 10.0)
            },
            SystemKind::DiffDrive => MppiParams {
                num_samples: 300,
                horizon: 20,
                u_min: vec![-1.0, -2.0],
                u_max: vec![1.0, 2.0],
                ..MppiParams::new(2, 1.0)
            },
        }
    }
}

macro_rules! each_system {
    ($self:expr, $d:ident => $body:expr) => {
        match $self {
            SystemKind::Pendulum => {
                let $d = PendulumDynamics;
                $body
            }
            SystemKind::Nav2d => {
                let $d = Nav2d;
                $body
            }
            SystemKind::Basic => {
                let $d = BasicLinear;
                $body
            }
            SystemKind::Cartpole => {
                let $d = ContinuousCartPole;
                $body
            }
            SystemKind::DiffDrive => {
                let $d = DiffDrive;
                $body
            }
        }
    };
}

impl Dynamics for SystemKind {
    fn nx(&self) -> usize {
        each_system!(self, d => d.nx())
    }
    fn nu(&self) -> usize {
        each_system!(self, d => d.nu())
    }
    #[inline]
    fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) {
        each_system!(self, d => d.step(x, u, t, next))
    }
    #[inline]
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64 {
        each_system!(self, d => d.running_cost(x, u, t))
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        each_system!(self, d => d.terminal_cost(x))
    }
    fn initial_state(&self, x: &mut [f64]) {
        each_system!(self, d => d.initial_state(x))
    }
    fn terminated(&self, x: &[f64]) -> bool {
        each_system!(self, d => d.terminated(x))
    }
    // The batched methods forward too, so the enum gives the concrete systems' values (a
    // match per batch, not per sample).
    fn step_batch(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64], n: usize) {
        each_system!(self, d => d.step_batch(x, u, t, next, n))
    }
    fn running_cost_batch(&self, x: &[f64], u: &[f64], t: usize, cost: &mut [f64], n: usize) {
        each_system!(self, d => d.running_cost_batch(x, u, t, cost, n))
    }
    fn terminal_cost_batch(&self, x: &[f64], cost: &mut [f64], n: usize) {
        each_system!(self, d => d.terminal_cost_batch(x, cost, n))
    }
    fn step_batch_f32(&self, x: &[f32], u: &[f32], t: usize, next: &mut [f32], n: usize) {
        each_system!(self, d => d.step_batch_f32(x, u, t, next, n))
    }
    fn running_cost_batch_f32(&self, x: &[f32], u: &[f32], t: usize, cost: &mut [f32], n: usize) {
        each_system!(self, d => d.running_cost_batch_f32(x, u, t, cost, n))
    }
    fn terminal_cost_batch_f32(&self, x: &[f32], cost: &mut [f32], n: usize) {
        each_system!(self, d => d.terminal_cost_batch_f32(x, cost, n))
    }
}

/// The three controllers, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControllerKind {
    /// [`Mppi`].
    Mppi,
    /// [`Smppi`] (smooth MPPI: noise on the action's derivative).
    Smppi,
    /// [`Kmppi`] (kernel interpolation between control points).
    Kmppi,
}

impl ControllerKind {
    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::Mppi => "mppi",
            ControllerKind::Smppi => "smppi",
            ControllerKind::Kmppi => "kmppi",
        }
    }
}

/// SMPPI's own knobs.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct SmppiExtras {
    /// Weight of the action-sequence smoothness cost.
    pub w_action_seq_cost: f64,
    /// Integration step from lifted control to action.
    pub delta_t: f64,
    /// Lower action bound per dimension.
    pub action_min: Vec<f64>,
    /// Upper action bound per dimension.
    pub action_max: Vec<f64>,
    /// Bound the lifted control before integrating (pytorch-mppi does not).
    pub clamp_lifted_control: bool,
}

/// KMPPI's own knobs.
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct KmppiExtras {
    /// Control points S.
    pub num_support_pts: usize,
    /// RBF kernel width.
    pub kernel_sigma: f64,
}

/// Runs `f` with the controller `kind` over `dynamics`, its params made from the shared MPPI
/// knobs and that controller's own (`smppi`, `kmppi`; the others' are ignored), validated.
pub fn with_controller<D: Dynamics + 'static, V: ControllerVisitor>(
    kind: ControllerKind,
    mppi: &MppiParams,
    smppi: &SmppiExtras,
    kmppi: &KmppiExtras,
    dynamics: D,
    f: V,
) -> Result<V::Output, MppiError> {
    match kind {
        ControllerKind::Mppi => {
            let c = Mppi::new(dynamics);
            c.validate(mppi)?;
            Ok(f.visit(c, mppi.clone()))
        }
        ControllerKind::Smppi => {
            let c = Smppi::new(dynamics);
            let p = SmppiParams {
                mppi: mppi.clone(),
                w_action_seq_cost: smppi.w_action_seq_cost,
                delta_t: smppi.delta_t,
                action_min: smppi.action_min.clone(),
                action_max: smppi.action_max.clone(),
                clamp_lifted_control: smppi.clamp_lifted_control,
            };
            c.validate(&p)?;
            Ok(f.visit(c, p))
        }
        ControllerKind::Kmppi => {
            let c = Kmppi::new(dynamics);
            let p = KmppiParams {
                mppi: mppi.clone(),
                num_support_pts: kmppi.num_support_pts,
                kernel_sigma: kmppi.kernel_sigma,
            };
            c.validate(&p)?;
            Ok(f.visit(c, p))
        }
    }
}

/// A computation generic over the controller (what [`with_controller`] runs once it has built
/// the configured one).
pub trait ControllerVisitor {
    /// What the computation returns.
    type Output;
    /// Runs it with controller `c` and its params `p`.
    fn visit<C: Controller + 'static>(self, c: C, p: C::Params) -> Self::Output;
}

/// A computation generic over the dynamics (what [`SystemKind::visit`] runs on the concrete one).
pub trait DynamicsVisitor {
    /// What the computation returns.
    type Output;
    /// Runs it with the system's concrete dynamics.
    fn visit<D: Dynamics + 'static>(self, d: D) -> Self::Output;
}

impl SystemKind {
    /// Runs `f` over this system's concrete dynamics (one `match` here, so what `f` does with
    /// them is statically dispatched and inlined).
    pub fn visit<V: DynamicsVisitor>(self, f: V) -> V::Output {
        each_system!(self, d => f.visit(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_enum_steps_exactly_as_the_concrete_system() {
        let (mut a, mut b) = ([0.0; 2], [0.0; 2]);
        SystemKind::Pendulum.step(&[3.0, 0.5], &[1.3], 0, &mut a);
        PendulumDynamics.step(&[3.0, 0.5], &[1.3], 0, &mut b);
        assert_eq!(a, b);
    }
}
