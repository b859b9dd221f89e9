//! The built-in systems with their start states and MPPI settings (the CLI's `--env`, the
//! Python package's built-in systems), and the three controllers by name.
//!
//! [`System`] is itself a [`Dynamics`] (one `match` per step onto the concrete system), so a
//! run can pick its system from a config without generics; hot benchmarks use the concrete
//! types.

use crate::controller::{Controller, Episode, episode};
use crate::params::{MppiError, MppiParams};
use crate::systems::{BasicLinear, ContinuousCartPole, DiffDrive, Nav2d, PendulumDynamics};
use crate::{Kmppi, KmppiParams, Mppi, Smppi, SmppiParams};
use kestrel_core::Key;
use kestrel_dynamics::Dynamics;

/// The systems the CLI and the bindings can drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum System {
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

impl System {
    /// Every system.
    pub const ALL: [System; 5] =
        [System::Pendulum, System::Nav2d, System::Basic, System::Cartpole, System::DiffDrive];

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            System::Pendulum => "pendulum",
            System::Nav2d => "nav2d",
            System::Basic => "basic",
            System::Cartpole => "cartpole",
            System::DiffDrive => "diff-drive",
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
            System::Pendulum => MppiParams {
                num_samples: 100,
                horizon: 15,
                u_min: vec![-2.0],
                u_max: vec![2.0],
                ..MppiParams::new(1, 10.0)
            },
            System::Nav2d => MppiParams {
                num_samples: 500,
                horizon: 20,
                u_min: vec![-1.0; 2],
                u_max: vec![1.0; 2],
                ..MppiParams::new(2, 1.0)
            },
            System::Basic => {
                MppiParams { num_samples: 50, horizon: 15, lambda: 5.0, ..MppiParams::new(1, 1.0) }
            }
            System::Cartpole => MppiParams {
                num_samples: 500,
                horizon: 50,
                u_min: vec![-10.0],
                u_max: vec![10.0],
                ..MppiParams::new(1, 10.0)
            },
            System::DiffDrive => MppiParams {
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
            System::Pendulum => {
                let $d = PendulumDynamics;
                $body
            }
            System::Nav2d => {
                let $d = Nav2d;
                $body
            }
            System::Basic => {
                let $d = BasicLinear;
                $body
            }
            System::Cartpole => {
                let $d = ContinuousCartPole;
                $body
            }
            System::DiffDrive => {
                let $d = DiffDrive;
                $body
            }
        }
    };
}

impl Dynamics for System {
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

/// A closed-loop MPPI run: the system, the episode, and every knob of every controller (the
/// shared MPPI params, then SMPPI's and KMPPI's own, used only by that controller). Defaults
/// come from [`System::default_params`] ([`MppiRunConfig::defaults`]).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(deny_unknown_fields)]
pub struct MppiRunConfig {
    /// The system (model and plant).
    pub system: System,
    /// Closed-loop steps.
    pub steps: usize,
    /// Seed: step `t` commands with `Key::new(seed).fold_in(t)`.
    pub seed: u64,
    /// Which controller.
    pub controller: ControllerKind,
    /// The shared MPPI knobs.
    #[documented(nested)]
    pub mppi: MppiParams,
    /// SMPPI's knobs (besides `mppi`).
    #[documented(nested)]
    pub smppi: SmppiExtras,
    /// KMPPI's knobs (besides `mppi`).
    #[documented(nested)]
    pub kmppi: KmppiExtras,
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

impl MppiRunConfig {
    /// Heap bytes of one controller of this config planning over `horizon` steps (the
    /// config's own, or a tuned one), with `threads` workers' scratch: the noise, its normals
    /// and the sampled controls (K × T × nu each; f32 lanes padded to 32 samples), costs and
    /// the plan (mppi.rs, rollout.rs, lanes.rs, smppi.rs, kmppi.rs).
    pub fn controller_bytes(&self, horizon: usize, threads: usize) -> u128 {
        let k = self.mppi.num_samples as u128;
        let t = horizon as u128;
        let nu = self.system.nu() as u128;
        let th = threads as u128;
        let ktn = k.saturating_mul(t).saturating_mul(nu);
        match self.controller {
            ControllerKind::Mppi => match self.mppi.precision {
                crate::Precision::F64 => ktn.saturating_mul(24).saturating_add(16 * k + 8 * t * nu),
                crate::Precision::F32 => {
                    let k32 = k.div_ceil(32).saturating_mul(32);
                    let lanes = k32.saturating_mul(t).saturating_mul(nu).saturating_mul(33) / 4;
                    ktn.saturating_mul(8)
                        .saturating_add(lanes)
                        .saturating_add(8 * k32 + 16 * k + 12 * t * nu)
                }
            },
            ControllerKind::Smppi => ktn
                .saturating_mul(16)
                .saturating_add(16 * k + 16 * t * nu)
                .saturating_add(th.saturating_mul(8 * t * nu)),
            ControllerKind::Kmppi => {
                let s = self.kmppi.num_support_pts as u128;
                k.saturating_mul(s)
                    .saturating_mul(nu)
                    .saturating_mul(16)
                    .saturating_add(16 * k + 8 * t * nu + 16 * s * nu)
                    .saturating_add(t.saturating_mul(s).saturating_mul(8))
                    .saturating_add(s.saturating_mul(s).saturating_mul(8))
                    .saturating_add(th.saturating_mul(s.saturating_add(t)).saturating_mul(8 * nu))
            }
        }
    }

    /// Heap bytes of an episode's record (states, controls and costs per step; doubling
    /// `Vec`s counted at twice their length) and of its written trajectory and plots (about
    /// 500 B per step, measured).
    pub fn episode_bytes(&self) -> u128 {
        let steps = self.steps as u128 + 1;
        let (nx, nu) = (self.system.nx() as u128, self.system.nu() as u128);
        steps.saturating_mul(2 * 24 + 2 * 24 + 8 * nx + 8 * nu + 8 + 500)
    }

    /// The defaults for `system`: its MPPI params; SMPPI integrating with Δt = 1 and its action
    /// bounded by the system's control bounds (the lifted control by ±1 per step); KMPPI with
    /// `T / 2` control points and kernel width 1 (pytorch-mppi's defaults).
    pub fn defaults(controller: ControllerKind, system: System) -> Self {
        Self::defaults_for(controller, system, 200, 0)
    }

    /// [`MppiRunConfig::defaults`] with the episode's length and seed.
    pub fn defaults_for(
        controller: ControllerKind,
        system: System,
        steps: usize,
        seed: u64,
    ) -> Self {
        let mppi = system.default_params();
        let nu = system.nu();
        let smppi = SmppiExtras {
            w_action_seq_cost: 1.0,
            delta_t: 1.0,
            action_min: mppi.u_min.clone(),
            action_max: mppi.u_max.clone(),
            clamp_lifted_control: false,
        };
        let lifted = MppiParams { u_min: vec![-1.0; nu], u_max: vec![1.0; nu], ..mppi.clone() };
        let kmppi = KmppiExtras { num_support_pts: (mppi.horizon / 2).max(1), kernel_sigma: 1.0 };
        MppiRunConfig {
            system,
            steps,
            seed,
            controller,
            mppi: if controller == ControllerKind::Smppi { lifted } else { mppi },
            smppi,
            kmppi,
        }
    }

    /// Runs `f` with the configured controller over `dynamics` and its params, validated.
    pub fn with_controller<D: Dynamics + 'static, R>(
        &self,
        dynamics: D,
        f: impl ControllerVisitor<D, Output = R>,
    ) -> Result<R, MppiError> {
        match self.controller {
            ControllerKind::Mppi => {
                let c = Mppi::new(dynamics);
                c.validate(&self.mppi)?;
                Ok(f.visit(c, self.mppi.clone()))
            }
            ControllerKind::Smppi => {
                let c = Smppi::new(dynamics);
                let e = &self.smppi;
                let p = SmppiParams {
                    mppi: self.mppi.clone(),
                    w_action_seq_cost: e.w_action_seq_cost,
                    delta_t: e.delta_t,
                    action_min: e.action_min.clone(),
                    action_max: e.action_max.clone(),
                    clamp_lifted_control: e.clamp_lifted_control,
                };
                c.validate(&p)?;
                Ok(f.visit(c, p))
            }
            ControllerKind::Kmppi => {
                let c = Kmppi::new(dynamics);
                let p = KmppiParams {
                    mppi: self.mppi.clone(),
                    num_support_pts: self.kmppi.num_support_pts,
                    kernel_sigma: self.kmppi.kernel_sigma,
                };
                c.validate(&p)?;
                Ok(f.visit(c, p))
            }
        }
    }

    /// Checks the episode and every knob of the configured controller.
    pub fn validate(&self) -> Result<(), MppiError> {
        if self.steps == 0 {
            return Err(MppiError::from(kestrel_core::Invalid::new("steps", 0, "at least 1")));
        }
        struct Check;
        impl<D: Dynamics> ControllerVisitor<D> for Check {
            type Output = ();
            fn visit<C: Controller<Dyn = D>>(self, _c: C, _p: C::Params) {}
        }
        self.visit(Check)
    }

    /// Runs `f` with the configured controller over the configured system's concrete dynamics
    /// (one `match` here, so the rollouts are statically dispatched and inlined).
    pub fn visit<R, V>(&self, f: V) -> Result<R, MppiError>
    where
        V: ControllerVisitor<PendulumDynamics, Output = R>
            + ControllerVisitor<Nav2d, Output = R>
            + ControllerVisitor<BasicLinear, Output = R>
            + ControllerVisitor<ContinuousCartPole, Output = R>
            + ControllerVisitor<DiffDrive, Output = R>,
    {
        each_system!(self.system, d => self.with_controller(d, f))
    }

    /// The configured episode: `steps` commands of the configured controller on the system
    /// from its start; `observe(t, cost)` sees every step, and ends the episode there by
    /// returning false.
    pub fn episode(&self, observe: impl FnMut(usize, f64) -> bool) -> Result<Episode, MppiError> {
        let (system, steps, key) = (self.system, self.steps, Key::new(self.seed));
        struct Run<F> {
            start: Vec<f64>,
            steps: usize,
            key: Key,
            observe: F,
        }
        impl<D: Dynamics, F: FnMut(usize, f64) -> bool> ControllerVisitor<D> for Run<F> {
            type Output = Episode;
            fn visit<C: Controller<Dyn = D>>(self, c: C, p: C::Params) -> Episode {
                episode(&c, &p, &self.start, self.steps, self.key, true, self.observe)
            }
        }
        self.visit(Run { start: system.start(), steps, key, observe })
    }
}

/// A computation generic over the controller (what [`MppiRunConfig::with_controller`]
/// runs once it has built the configured one).
pub trait ControllerVisitor<D: Dynamics> {
    /// What the computation returns.
    type Output;
    /// Runs it with controller `c` and its params `p`.
    fn visit<C: Controller<Dyn = D> + 'static>(self, c: C, p: C::Params) -> Self::Output;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_controller_swings_up_or_stabilises_every_system() {
        for system in System::ALL {
            assert_eq!(system.start().len(), system.nx());
            for kind in [ControllerKind::Mppi, ControllerKind::Smppi, ControllerKind::Kmppi] {
                let mut cfg = MppiRunConfig::defaults_for(kind, system, 10, 1);
                cfg.mppi.num_samples = cfg.mppi.num_samples.min(64);
                let ep = cfg.episode(|_, _| true).unwrap();
                assert_eq!(ep.states.len(), 11, "{system:?} {kind:?}");
                assert_eq!(ep.controls.len(), 10);
                assert!(ep.total_cost.is_finite(), "{system:?} {kind:?}");
            }
        }
    }

    #[test]
    fn the_system_enum_steps_exactly_as_the_concrete_system() {
        let (mut a, mut b) = ([0.0; 2], [0.0; 2]);
        System::Pendulum.step(&[3.0, 0.5], &[1.3], 0, &mut a);
        PendulumDynamics.step(&[3.0, 0.5], &[1.3], 0, &mut b);
        assert_eq!(a, b);
    }
}
