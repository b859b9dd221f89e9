//! Smooth MPPI: sampling in a lifted (derivative) control space and penalising changes of the
//! action sequence.
//!
//! Paper: T. Kim et al., "Smooth Model Predictive Path Integral Control without Smoothing",
//! IEEE RA-L 2022, arXiv:2112.09988. Reference implementation: pytorch-mppi 0.9.1 `SMPPI`,
//! reproduced including one quirk: the perturbed actions are built from the *unclamped*
//! lifted control (it clamps to `u_min/u_max` but then uses the unclamped value), so
//! `u_min/u_max` do not bound the lifted control. `clamp_lifted_control: true` applies the
//! clamp as documented.
//!
//! With `mppi.convention = JaxMppi` the step follows jax-mppi 0.3.0 `smppi.command`:
//!
//! | aspect | `PytorchMppi` (default) | `JaxMppi` |
//! |---|---|---|
//! | shift | before optimising, by 1 | after optimising, by `u_per_command` (actions held at `A[T−s−1]`) |
//! | lifted-control bounds | not applied (quirk above) unless `clamp_lifted_control` | `clamp(U + ε, u_min/u_scale, u_max/u_scale)` |
//! | action bounds | `action_min/max` | `action_min/max / u_scale` |
//! | null-action sample | zero action | zero noise |
//! | rollout | actions `· u_scale`, running cost on `x_{t+1}` | actions unscaled, running cost on `x_t`, terminal on `x_T` |
//! | control cost | `λ Σ_t U_tᵀ Σ⁻¹ ε_t` | `Σ_t ε_tᵀ Σ⁻¹ ε_t` (no 0.5, no λ), or `Σ \|ε\|` |
//! | smoothness cost | `w Σ_t \|u_scale Δa_t\|²` | the same |
//! | returned action | `A[..u_per_command]` | `A[..u_per_command] · u_scale` (before the shift) |

use crate::params::{ConventionKind, MppiParams, cholesky, inverse_spd};
use crate::rollout::{rollout_cost, rollout_cost_jax, weights};
use kestrel_core::FromInvalid;
use kestrel_dynamics::Dynamics;

use rayon::prelude::*;

/// SMPPI knobs on top of [`MppiParams`] (whose `u_min/u_max` bound the lifted control).
#[derive(Clone, Debug, PartialEq)]
pub struct SmppiParams {
    /// The MPPI params (noise, λ, samples, horizon, lifted-control bounds...).
    pub mppi: MppiParams,
    /// Weight of `Σ_t |u_scale (a_{t+1} − a_t)|²`.
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

/// Lifted nominal sequence, the action sequence, and the last command's diagnostics.
#[derive(Clone, Debug)]
pub struct SmppiState {
    /// Lifted (derivative) controls, `T × nu`.
    pub u: Vec<f64>,
    /// Actions, `T × nu`.
    pub actions: Vec<f64>,
    /// Total cost of each sample.
    pub costs: Vec<f64>,
    /// Normalised weights.
    pub weights: Vec<f64>,
    /// Effective lifted noise, `K × T × nu`.
    pub noise: Vec<f64>,
    normals: Vec<f64>,
}

/// An SMPPI controller over dynamics `D`.
pub struct Smppi<D: Dynamics> {
    dynamics: D,
}

impl<D: Dynamics> Smppi<D> {
    /// A controller for `dynamics`.
    pub fn new(dynamics: D) -> Self {
        Smppi { dynamics }
    }

    /// The dynamics.
    pub fn dynamics(&self) -> &D {
        &self.dynamics
    }

    /// Checks the MPPI params and the SMPPI extras.
    pub fn validate(&self, p: &SmppiParams) -> Result<(), crate::params::MppiError> {
        crate::mppi::Mppi::new(&self.dynamics).validate(&p.mppi)?;
        if !p.mppi.specific_actions.is_empty() {
            return Err(crate::params::MppiError::invalid(
                "specific_actions",
                format!("{} sequences", p.mppi.specific_actions.len()),
                "none for SMPPI (plain MPPI's sampler only)",
            ));
        }
        if p.mppi.precision != crate::params::PrecisionKind::F64 {
            return Err(crate::params::MppiError::invalid(
                "precision",
                "f32",
                "f64 for SMPPI (the f32 lanes are MPPI's)",
            ));
        }
        let nu = self.dynamics.nu();
        let bad = |f: &'static str, v: String, a: &'static str| {
            Err(crate::params::MppiError::invalid(f, v, a))
        };
        if !(p.delta_t.is_finite() && p.delta_t > 0.0) {
            return bad("delta_t", p.delta_t.to_string(), "finite and > 0");
        }
        if !(p.w_action_seq_cost.is_finite() && p.w_action_seq_cost >= 0.0) {
            return bad("w_action_seq_cost", p.w_action_seq_cost.to_string(), "finite and >= 0");
        }
        if p.action_min.len() != nu
            || p.action_max.len() != nu
            || (0..nu).any(|i| {
                p.action_min[i].is_nan()
                    || p.action_max[i].is_nan()
                    || p.action_min[i] > p.action_max[i]
            })
        {
            return bad(
                "action_min/action_max",
                format!("{:?}/{:?}", p.action_min, p.action_max),
                "nu values each with min <= max",
            );
        }
        Ok(())
    }

    /// Zero lifted controls and actions (pytorch-mppi's `U_init=None`).
    pub fn init(&self, p: &SmppiParams) -> SmppiState {
        let (k, t, nu) = (p.mppi.num_samples, p.mppi.horizon, self.dynamics.nu());
        SmppiState {
            u: vec![0.0; t * nu],
            actions: vec![0.0; t * nu],
            costs: vec![0.0; k],
            weights: vec![0.0; k],
            noise: vec![0.0; k * t * nu],
            normals: Vec::new(),
        }
    }
}

/// `Σ_t |u_scale (a_{t+1} − a_t)|²` over a `T × nu` action sequence.
fn smoothness(acts: &[f64], t: usize, nu: usize, u_scale: f64) -> f64 {
    let mut smooth = 0.0;
    for tt in 0..t.saturating_sub(1) {
        for i in 0..nu {
            let diff = u_scale * (acts[(tt + 1) * nu + i] - acts[tt * nu + i]);
            smooth += diff * diff;
        }
    }
    smooth
}

impl<D: Dynamics> crate::controller::Controller for Smppi<D> {
    type Params = SmppiParams;
    type State = SmppiState;
    type Dyn = D;

    fn dynamics(&self) -> &D {
        &self.dynamics
    }
    fn validate(&self, p: &SmppiParams) -> Result<(), crate::params::MppiError> {
        Smppi::validate(self, p)
    }
    fn init(&self, p: &SmppiParams) -> SmppiState {
        Smppi::init(self, p)
    }
    fn base(p: &SmppiParams) -> &MppiParams {
        &p.mppi
    }
    fn base_mut(p: &mut SmppiParams) -> &mut MppiParams {
        &mut p.mppi
    }
    fn normals_per_sample(&self, p: &SmppiParams) -> usize {
        p.mppi.horizon * self.dynamics.nu()
    }
    fn normals_buffer(s: &mut SmppiState) -> &mut Vec<f64> {
        &mut s.normals
    }
    /// One control step with given standard normals `z` (`K × T × nu`), pytorch-mppi's order:
    /// shift, lifted samples, actions `a = clamp(A + v·Δt)`, effective noise
    /// `(a − A)/Δt − U`, rollout + control cost + smoothness cost, weights, `U += Σ ω ε`,
    /// `A += U·Δt`; returns `A[..u_per_command]`.
    fn command_with_normals(
        &self,
        p: &SmppiParams,
        s: &mut SmppiState,
        x0: &[f64],
        z: &[f64],
        out: &mut [f64],
        shift: bool,
    ) {
        let d = &self.dynamics;
        let m = &p.mppi;
        let (k, t, nu) = (m.num_samples, m.horizon, d.nu());
        assert_eq!(z.len(), k * t * nu, "Smppi::command: normals length");
        assert_eq!(
            s.u.len(),
            t * nu,
            "Smppi::command: the state was made for another horizon (call init)"
        );
        let jax = m.convention == ConventionKind::JaxMppi;
        if shift && !jax {
            s.u.copy_within(nu.., 0);
            s.u[(t - 1) * nu..].copy_from_slice(&m.u_init);
            s.actions.copy_within(nu.., 0);
            if t >= 2 {
                s.actions.copy_within((t - 2) * nu..(t - 1) * nu, (t - 1) * nu);
            }
        }
        let l = cholesky(&m.noise_sigma, nu).expect("validated noise_sigma");
        let sinv = inverse_spd(&l, nu);
        let (u_nom, a_nom) = (&s.u, &s.actions);
        let (mut eps, mut costs, mut w) = (
            std::mem::take(&mut s.noise),
            std::mem::take(&mut s.costs),
            std::mem::take(&mut s.weights),
        );
        eps.resize(k * t * nu, 0.0);
        costs.resize(k, 0.0);
        w.resize(k, 0.0);
        // One action buffer per rayon task, not per sample.
        eps.par_chunks_mut(t * nu).zip(costs.par_iter_mut()).enumerate().for_each_init(
            || vec![0.0; t * nu],
            |acts, (kk, (e, cost))| {
                if jax {
                    let null = m.sample_null_action && kk == 0;
                    let us = m.u_scale;
                    for tt in 0..t {
                        let zk = &z[(kk * t + tt) * nu..];
                        for i in 0..nu {
                            let noise = if null {
                                0.0
                            } else {
                                m.noise_mu[i] + (0..=i).map(|j| l[i * nu + j] * zk[j]).sum::<f64>()
                            };
                            let (un, an) = (u_nom[tt * nu + i], a_nom[tt * nu + i]);
                            let v = (un + noise).max(m.u_min[i] / us).min(m.u_max[i] / us);
                            let a = (an + v * p.delta_t)
                                .max(p.action_min[i] / us)
                                .min(p.action_max[i] / us);
                            acts[tt * nu + i] = a;
                            e[tt * nu + i] = (a - an) / p.delta_t - un;
                        }
                    }
                    let total = rollout_cost_jax(d, x0, t, |tt, u| {
                        u.copy_from_slice(&acts[tt * nu..(tt + 1) * nu])
                    });
                    let mut ctrl = 0.0;
                    for tt in 0..t {
                        let et = &e[tt * nu..(tt + 1) * nu];
                        if m.noise_abs_cost {
                            ctrl += et.iter().map(|v| v.abs()).sum::<f64>();
                        } else {
                            for i in 0..nu {
                                for j in 0..nu {
                                    ctrl += et[i] * sinv[i * nu + j] * et[j];
                                }
                            }
                        }
                    }
                    let c = total + ctrl + p.w_action_seq_cost * smoothness(&acts[..], t, nu, us);
                    *cost = if c.is_nan() { f64::INFINITY } else { c };
                    return;
                }
                for tt in 0..t {
                    for i in 0..nu {
                        let zk = &z[(kk * t + tt) * nu..];
                        let noise =
                            m.noise_mu[i] + (0..=i).map(|j| l[i * nu + j] * zk[j]).sum::<f64>();
                        let mut v = u_nom[tt * nu + i] + noise;
                        if p.clamp_lifted_control {
                            v = v.max(m.u_min[i]).min(m.u_max[i]);
                        }
                        let mut a = a_nom[tt * nu + i] + v * p.delta_t;
                        if m.sample_null_action && kk == 0 {
                            a = 0.0;
                        }
                        a = a.max(p.action_min[i]).min(p.action_max[i]);
                        acts[tt * nu + i] = a;
                        e[tt * nu + i] = (a - a_nom[tt * nu + i]) / p.delta_t - u_nom[tt * nu + i];
                    }
                }
                // Rollout on the actions (scaled), then the control and smoothness costs.
                let total = rollout_cost(d, x0, &acts[..], m);
                let mut ctrl = 0.0;
                for tt in 0..t {
                    for i in 0..nu {
                        for j in 0..nu {
                            let ej = if m.noise_abs_cost {
                                e[tt * nu + j].abs()
                            } else {
                                e[tt * nu + j]
                            };
                            ctrl += u_nom[tt * nu + i] * sinv[i * nu + j] * ej;
                        }
                    }
                }
                let smooth = smoothness(&acts[..], t, nu, m.u_scale);
                let c = total + m.lambda * ctrl + p.w_action_seq_cost * smooth;
                *cost = if c.is_nan() { f64::INFINITY } else { c };
            },
        );
        weights(&costs, m.lambda, &mut w);
        for kk in 0..k {
            if w[kk] != 0.0 {
                for (u, e) in s.u.iter_mut().zip(&eps[kk * t * nu..(kk + 1) * t * nu]) {
                    *u += w[kk] * e;
                }
            }
        }
        for (a, u) in s.actions.iter_mut().zip(&s.u) {
            *a += u * p.delta_t;
        }
        out.copy_from_slice(&s.actions[..m.u_per_command * nu]);
        if jax {
            out.iter_mut().for_each(|o| *o *= m.u_scale);
            if shift {
                // Roll both sequences left by u_per_command; U is refilled with u_init, the
                // actions hold the last action that stays in the plan, A[T − s − 1].
                let sh = m.u_per_command.min(t);
                let hold = (t - sh).saturating_sub(1) * nu;
                let last: [f64; crate::params::MAX_NU] =
                    std::array::from_fn(|i| if i < nu { s.actions[hold + i] } else { 0.0 });
                s.u.copy_within(sh * nu.., 0);
                s.actions.copy_within(sh * nu.., 0);
                for r in t - sh..t {
                    s.u[r * nu..(r + 1) * nu].copy_from_slice(&m.u_init);
                    s.actions[r * nu..(r + 1) * nu].copy_from_slice(&last[..nu]);
                }
            }
        }
        (s.costs, s.weights, s.noise) = (costs, w, eps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Controller;
    use crate::params::PrecisionKind;
    use kestrel_dynamics::BasicLinear;

    /// The smoothness cost by hand: actions `(0, 1), (1, 1), (3, 0)` scaled by 2 differ by
    /// `(2, 0)` and `(4, −2)`, so 4 + 16 + 4 = 24; one step or none has no differences.
    #[test]
    fn smoothness_sums_squared_scaled_differences() {
        let acts = [0.0, 1.0, 1.0, 1.0, 3.0, 0.0];
        assert_eq!(smoothness(&acts, 3, 2, 2.0), 24.0);
        assert_eq!(smoothness(&acts, 1, 2, 2.0), 0.0);
        assert_eq!(smoothness(&[], 0, 2, 2.0), 0.0);
    }

    fn params(k: usize, t: usize) -> SmppiParams {
        SmppiParams {
            mppi: MppiParams { num_samples: k, horizon: t, ..MppiParams::new(1, 1.0) },
            w_action_seq_cost: 0.5,
            delta_t: 0.5,
            action_min: vec![-1.0],
            action_max: vec![1.5],
            clamp_lifted_control: false,
        }
    }

    /// `validate` names the field and the value it refuses.
    #[test]
    fn validate_names_the_field_and_value() {
        let c = Smppi::new(BasicLinear);
        c.validate(&params(8, 4)).unwrap();
        let err = |f: &dyn Fn(&mut SmppiParams)| {
            let mut p = params(8, 4);
            f(&mut p);
            c.validate(&p).unwrap_err().to_string()
        };
        assert_eq!(err(&|p| p.delta_t = 0.0), "invalid delta_t = 0: finite and > 0");
        assert_eq!(
            err(&|p| p.w_action_seq_cost = -1.0),
            "invalid w_action_seq_cost = -1: finite and >= 0"
        );
        assert_eq!(
            err(&|p| (p.action_min, p.action_max) = (vec![1.0], vec![0.0])),
            "invalid action_min/action_max = [1.0]/[0.0]: nu values each with min <= max"
        );
        assert!(err(&|p| p.action_max = vec![1.0, 2.0]).contains("[-1.0]/[1.0, 2.0]"));
        assert!(
            err(&|p| p.mppi.precision = PrecisionKind::F32).starts_with("invalid precision = f32")
        );
    }

    /// With one sample (weight 1) from a zero plan, the actions become
    /// `clamp(z·Δt, action bounds)` and the lifted plan their derivative `a / Δt`. The
    /// lifted bounds `u_min/u_max` do not bind (pytorch-mppi's quirk) unless
    /// `clamp_lifted_control`.
    #[test]
    fn one_sample_integrates_its_lifted_noise_into_the_actions() {
        let c = Smppi::new(BasicLinear);
        let mut p = params(1, 3);
        (p.mppi.u_min, p.mppi.u_max) = (vec![-0.1], vec![0.1]);
        let z = [1.0, 4.0, -6.0];
        let run = |p: &SmppiParams| {
            let (mut s, mut out) = (c.init(p), [0.0]);
            c.command_with_normals(p, &mut s, &[1.0, -0.5], &z, &mut out, false);
            assert_eq!(s.weights, [1.0]);
            (s, out[0])
        };
        let (s, out) = run(&p);
        let want_a = [0.5, 1.5, -1.0];
        for t in 0..3 {
            assert!((s.actions[t] - want_a[t]).abs() < 1e-12, "A[{t}] = {}", s.actions[t]);
            assert!((s.u[t] - want_a[t] / 0.5).abs() < 1e-12, "U[{t}] = {}", s.u[t]);
        }
        assert!((out - 0.5).abs() < 1e-12);
        p.clamp_lifted_control = true;
        let (s, _) = run(&p);
        let want_a = [0.05, 0.05, -0.05];
        for t in 0..3 {
            assert!((s.actions[t] - want_a[t]).abs() < 1e-12, "clamped A[{t}] = {}", s.actions[t]);
        }
    }
}
