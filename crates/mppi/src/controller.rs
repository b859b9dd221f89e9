//! The one controller interface MPPI, SMPPI and KMPPI implement, and the one closed-loop
//! episode every caller (the CLI's `mppi run`, the autotuner, tests) runs.
//!
//! A controller is pure: explicit params and state, a key per command. [`Controller::command`]
//! is written once here (draw the standard normals of samples `8c..8c + 8` as one vectorised
//! draw from `key.fold_in(c)`, then the controller's own
//! [`Controller::command_with_normals`]: shift, sample, roll out, weight, update).
//! [`Controller::base`] exposes the shared MPPI knobs (K, T, λ, Σ, μ, bounds...) so the tuner
//! can set them on any controller.

use crate::params::{ConventionKind, MppiError, MppiParams};
use crate::rollout::draw_normals;
use kestrel_core::Key;
use kestrel_dynamics::Dynamics;

/// An MPPI-family controller over its dynamics.
pub trait Controller: Send + Sync {
    /// The controller's params (the MPPI knobs and its own).
    type Params: Clone + std::fmt::Debug + Send + Sync;
    /// Nominal plan, diagnostics and reusable buffers.
    type State: Clone + std::fmt::Debug + Send + Sync;
    /// The dynamics rolled out.
    type Dyn: Dynamics;

    /// The dynamics.
    fn dynamics(&self) -> &Self::Dyn;
    /// Checks params against the dynamics.
    fn validate(&self, p: &Self::Params) -> Result<(), MppiError>;
    /// A fresh state (the plan at its initial value).
    fn init(&self, p: &Self::Params) -> Self::State;
    /// The shared MPPI knobs inside the params.
    fn base(p: &Self::Params) -> &MppiParams;
    /// The shared MPPI knobs, to change them (tuning).
    fn base_mut(p: &mut Self::Params) -> &mut MppiParams;
    /// Standard normals per sample of one command (`T × nu`, or `S × nu` for KMPPI).
    fn normals_per_sample(&self, p: &Self::Params) -> usize;
    /// The state's normals buffer (reused across commands).
    fn normals_buffer(s: &mut Self::State) -> &mut Vec<f64>;
    /// One control step with given standard normals `z`: shift the plan (when `shift`),
    /// sample, roll out, weight, update; writes `u_per_command × nu` controls to `out`.
    fn command_with_normals(
        &self,
        p: &Self::Params,
        s: &mut Self::State,
        x0: &[f64],
        z: &[f64],
        out: &mut [f64],
        shift: bool,
    );

    /// One control step from state `x0`, the standard normals from one vectorised draw per 8
    /// samples, `key.fold_in(c)` for samples `8c..8c + 8` (in parallel; the result does not
    /// depend on the thread count). MPPI's f32 mode draws per block of 32 lanes instead
    /// ([`crate::params::PrecisionKind`]).
    fn command(
        &self,
        key: Key,
        p: &Self::Params,
        s: &mut Self::State,
        x0: &[f64],
        out: &mut [f64],
    ) {
        keyed_command(self, key, p, s, x0, out)
    }

    /// Puts the plan back to its initial value (a new episode).
    fn reset(&self, p: &Self::Params, s: &mut Self::State) {
        *s = self.init(p);
    }

    /// The control applied to the system from the first row of `command`'s output:
    /// pytorch-mppi's convention returns the unscaled control, jax-mppi's the scaled one.
    fn applied(p: &Self::Params, out: &[f64], applied: &mut [f64]) {
        let b = Self::base(p);
        let scale = if b.convention == ConventionKind::JaxMppi { 1.0 } else { b.u_scale };
        for (a, &u) in applied.iter_mut().zip(out) {
            *a = scale * u;
        }
    }
}

/// [`Controller::command`]'s definition (for controllers that override it for some params):
/// the sample-major keyed normals into the state's buffer, then `command_with_normals`.
pub(crate) fn keyed_command<C: Controller + ?Sized>(
    c: &C,
    key: Key,
    p: &C::Params,
    s: &mut C::State,
    x0: &[f64],
    out: &mut [f64],
) {
    let mut z = std::mem::take(C::normals_buffer(s));
    draw_normals(key, C::base(p).num_samples, c.normals_per_sample(p), &mut z);
    c.command_with_normals(p, s, x0, &z, out, true);
    *C::normals_buffer(s) = z;
}

/// A closed-loop run: every state visited, the control applied at each step, and its cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Episode {
    /// `steps + 1` states, the start first.
    pub states: Vec<Vec<f64>>,
    /// `steps` applied controls.
    pub controls: Vec<Vec<f64>>,
    /// `steps` running costs of the state reached.
    pub costs: Vec<f64>,
    /// Sum of the running costs (`+inf` if any is NaN).
    pub total_cost: f64,
}

/// Runs `steps` commands closed loop on the controller's own dynamics (model = plant) from
/// `start`: step `t` commands with `key.fold_in(t)`, applies the first control (scaled as
/// the convention says) and adds the running cost of the state reached. With `record` the
/// states and controls are kept; without it only the costs are (the tuner's case).
/// `observe(t, cost)` sees every step (progress lines); returning false ends the episode
/// there (a stopped run), with the costs, states and controls of the steps taken.
pub fn episode<C: Controller>(
    controller: &C,
    p: &C::Params,
    start: &[f64],
    steps: usize,
    key: Key,
    record: bool,
    mut observe: impl FnMut(usize, f64) -> bool,
) -> Episode {
    let d = controller.dynamics();
    let (nx, nu) = (d.nx(), d.nu());
    let mut s = controller.init(p);
    let (mut x, mut next) = (start.to_vec(), vec![0.0; nx]);
    let mut out = vec![0.0; C::base(p).u_per_command * nu];
    let mut u = vec![0.0; nu];
    let mut ep = Episode { costs: Vec::with_capacity(steps), ..Episode::default() };
    if record {
        ep.states.push(x.clone());
    }
    for t in 0..steps {
        controller.command(key.fold_in(t as u64), p, &mut s, &x, &mut out);
        C::applied(p, &out[..nu], &mut u);
        d.step(&x, &u, t, &mut next);
        std::mem::swap(&mut x, &mut next);
        let c = d.running_cost(&x, &u, t);
        ep.costs.push(c);
        let go = observe(t, c);
        if record {
            ep.states.push(x.clone());
            ep.controls.push(u.clone());
        }
        if !go {
            break;
        }
    }
    let total: f64 = ep.costs.iter().sum();
    ep.total_cost = if total.is_nan() { f64::INFINITY } else { total };
    ep
}
