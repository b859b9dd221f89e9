//! The MPPI controller ([`Mppi`]): sampling around the nominal plan, rollouts in parallel
//! over samples, the weighted update, in pytorch-mppi's or jax-mppi's convention and in f64 or
//! f32 lanes ([`crate::lanes`]). Its knobs are in [`crate::params`], its state in
//! [`crate::state`], the shared rollout pieces in [`crate::rollout`].

use crate::controller::Controller;
use crate::params::{
    ConventionKind, MAX_NU, MAX_NX, MppiError, MppiParams, PrecisionKind, cholesky, invalid,
    inverse_spd,
};
use crate::rollout::{
    BLOCK, control_cost, draw_normals, finish, rollout_block, rollout_cost_by, validate_rollouts,
    weights,
};
use crate::state::MppiState;
use kestrel_core::{FromInvalid, Key};
use kestrel_dynamics::Dynamics;
use rayon::prelude::*;

/// An MPPI controller over dynamics `D`.
pub struct Mppi<D: Dynamics> {
    dynamics: D,
}

impl<D: Dynamics> Mppi<D> {
    /// A controller for `dynamics`.
    pub fn new(dynamics: D) -> Self {
        Mppi { dynamics }
    }

    /// The dynamics.
    pub fn dynamics(&self) -> &D {
        &self.dynamics
    }

    /// Checks params against the dynamics (sizes, λ > 0, Σ positive definite).
    pub fn validate(&self, p: &MppiParams) -> Result<(), MppiError> {
        let (nx, nu) = (self.dynamics.nx(), self.dynamics.nu());
        if nx == 0 || nx > MAX_NX || nu == 0 || nu > MAX_NU {
            return Err(invalid("nx/nu", format!("{nx}/{nu}"), "1..=32 states and 1..=8 controls"));
        }
        if p.num_samples == 0 || p.horizon == 0 {
            return Err(invalid(
                "num_samples/horizon",
                format!("{}/{}", p.num_samples, p.horizon),
                "at least 1 each",
            ));
        }
        // Normals, noise and controls of every sample: three K × T × nu f64 buffers.
        let cells = p.num_samples as u128
            * p.horizon as u128
            * nu as u128
            * p.rollout_samples.max(1) as u128;
        kestrel_core::check_bytes("num_samples", p.num_samples, cells, 24)?;
        if !(p.lambda.is_finite() && p.lambda > 0.0) {
            return Err(invalid("lambda", p.lambda, "finite and > 0"));
        }
        for (f, v, n) in [
            ("noise_sigma", &p.noise_sigma, nu * nu),
            ("noise_mu", &p.noise_mu, nu),
            ("u_min", &p.u_min, nu),
            ("u_max", &p.u_max, nu),
            ("u_init", &p.u_init, nu),
        ] {
            if v.len() != n {
                return Err(invalid(
                    f,
                    format!("{} values", v.len()),
                    "nu (nu × nu for noise_sigma) values",
                ));
            }
        }
        if cholesky(&p.noise_sigma, nu).is_none() {
            return Err(invalid(
                "noise_sigma",
                format!("{:?}", p.noise_sigma),
                "a symmetric positive definite matrix",
            ));
        }
        if let Some(i) =
            (0..nu).find(|&i| p.u_min[i].is_nan() || p.u_max[i].is_nan() || p.u_min[i] > p.u_max[i])
        {
            return Err(invalid(
                "u_min/u_max",
                format!("dimension {i}: [{}, {}]", p.u_min[i], p.u_max[i]),
                "u_min <= u_max",
            ));
        }
        if p.u_per_command == 0 || p.u_per_command > p.horizon {
            return Err(invalid("u_per_command", p.u_per_command, "1 to horizon"));
        }
        validate_rollouts(p)?;
        let row = p.horizon * nu;
        if let Some(i) = p.specific_actions.iter().position(|a| a.len() != row) {
            return Err(MppiError::invalid(
                format!("specific_actions[{i}]"),
                format!("{} values", p.specific_actions[i].len()),
                format!("horizon × nu = {row}"),
            ));
        }
        check_specific(p, p.specific_actions.len(), p.specific_actions.iter().flatten())?;
        if p.precision == PrecisionKind::F32 {
            // What f32 arithmetic must represent: λ as a normal f32, Σ without overflow.
            if !(1e-30..=1e30).contains(&p.lambda) {
                return Err(invalid("lambda", p.lambda, "1e-30 to 1e30 with precision f32"));
            }
            if let Some(v) = p.noise_sigma.iter().find(|v| v.abs() > 1e30) {
                return Err(invalid("noise_sigma", v, "entries within ±1e30 with precision f32"));
            }
        }
        if p.rollout_samples > 1 && p.precision == PrecisionKind::F32 {
            return Err(invalid(
                "rollout_samples",
                p.rollout_samples,
                "1 with precision f32 (stochastic rollouts run in f64)",
            ));
        }
        if p.rollout_samples > 1 && p.convention == ConventionKind::JaxMppi {
            return Err(invalid(
                "rollout_samples",
                p.rollout_samples,
                "1 under the jax-mppi convention (it has no stochastic rollouts)",
            ));
        }
        Ok(())
    }

    /// A fresh state with the nominal sequence `u_init` repeated (pytorch-mppi draws it from
    /// the noise instead; use [`Mppi::reset_random`] for that).
    pub fn init(&self, p: &MppiParams) -> MppiState {
        let (k, t, nu) = (p.num_samples, p.horizon, self.dynamics.nu());
        MppiState {
            u: p.u_init.repeat(t),
            costs: vec![0.0; k],
            weights: vec![0.0; k],
            noise: vec![0.0; k * t * nu],
            normals: Vec::new(),
            controls: Vec::new(),
            specific: p.specific_actions.concat(),
            lanes: Default::default(),
        }
    }

    /// Replaces the sequences the next commands try in place of samples (pytorch-mppi's
    /// `SpecificActionSampler.sample_trajectories`, called before a command): `actions` holds
    /// whole `horizon × nu` sequences, row-major; they stay until replaced. Checked as
    /// [`MppiParams::specific_actions`] is.
    pub fn set_specific(
        &self,
        p: &MppiParams,
        s: &mut MppiState,
        actions: &[f64],
    ) -> Result<(), MppiError> {
        let row = p.horizon * self.dynamics.nu();
        if !actions.len().is_multiple_of(row) {
            return Err(invalid(
                "specific_actions",
                format!("{} values", actions.len()),
                "whole sequences of horizon × nu values",
            ));
        }
        check_specific(p, actions.len() / row, actions.iter())?;
        s.specific.clear();
        s.specific.extend_from_slice(actions);
        Ok(())
    }

    /// Nominal sequence drawn from `N(μ, Σ)` (pytorch-mppi's `U_init=None` and `reset()`).
    pub fn reset_random(&self, key: Key, p: &MppiParams, s: &mut MppiState) {
        let nu = self.dynamics.nu();
        let l = cholesky(&p.noise_sigma, nu).expect("validated noise_sigma");
        let mut rng = key.rng();
        for row in s.u.chunks_exact_mut(nu) {
            let mut z = [0.0; MAX_NU];
            z[..nu].iter_mut().for_each(|v| *v = rng.standard_normal());
            for i in 0..nu {
                row[i] = p.noise_mu[i] + (0..=i).map(|j| l[i * nu + j] * z[j]).sum::<f64>();
            }
        }
    }

    /// Batched form (pytorch-mppi's `MPPI_Batched`): one command for each of N environments,
    /// all sharing one draw of standard normals (as pytorch-mppi shares one `K × T × nu` noise
    /// tensor) with per-environment weights. `states` holds N states, `x0s` N × nx rows, `out`
    /// N × u_per_command × nu. Environments run in parallel; env `i` gets exactly what a single
    /// `command_with_normals` with the same normals would give it.
    pub fn command_batch(
        &self,
        key: Key,
        p: &MppiParams,
        states: &mut [MppiState],
        x0s: &[f64],
        out: &mut [f64],
    ) {
        let (nx, nu) = (self.dynamics.nx(), self.dynamics.nu());
        let n = states.len();
        assert_eq!(x0s.len(), n * nx, "Mppi::command_batch: states length");
        let per_out = p.u_per_command * nu;
        assert_eq!(out.len(), n * per_out, "Mppi::command_batch: output length");
        let mut z = Vec::new();
        draw_normals(key, p.num_samples, p.horizon * nu, &mut z);
        states.par_iter_mut().zip(x0s.par_chunks(nx)).zip(out.par_chunks_mut(per_out)).for_each(
            |((s, x0), o)| {
                self.command_with_normals(p, s, x0, &z, o, true);
            },
        );
    }
}

impl<D: Dynamics> crate::controller::Controller for Mppi<D> {
    type Params = MppiParams;
    type State = MppiState;
    type Dyn = D;

    fn dynamics(&self) -> &D {
        &self.dynamics
    }
    fn validate(&self, p: &MppiParams) -> Result<(), crate::params::MppiError> {
        Mppi::validate(self, p)
    }
    fn init(&self, p: &MppiParams) -> MppiState {
        Mppi::init(self, p)
    }
    fn base(p: &MppiParams) -> &MppiParams {
        p
    }
    fn base_mut(p: &mut MppiParams) -> &mut MppiParams {
        p
    }
    fn normals_per_sample(&self, p: &MppiParams) -> usize {
        p.horizon * self.dynamics.nu()
    }
    fn normals_buffer(s: &mut MppiState) -> &mut Vec<f64> {
        &mut s.normals
    }
    /// With [`PrecisionKind::F32`], the block-major keyed normals of [`PrecisionKind`]'s table, drawn
    /// inside the parallel blocks; with `F64`, the trait's sample-major draw.
    fn command(&self, key: Key, p: &MppiParams, s: &mut MppiState, x0: &[f64], out: &mut [f64]) {
        if p.precision == PrecisionKind::F32 {
            let n = crate::lanes::Normals::Keyed(key);
            return crate::lanes::command(&self.dynamics, p, s, x0, n, out, true);
        }
        crate::controller::keyed_command(self, key, p, s, x0, out)
    }
    /// One control step with given standard normals `z` (`K × T × nu`): shift (if asked),
    /// sample `ε = μ + L z`, clamp `U + ε`, roll out, weight, update, return `U[..u_per_command]`.
    /// On return `s.noise` holds the effective noise. [`PrecisionKind::F32`] runs `lanes.rs`.
    fn command_with_normals(
        &self,
        p: &MppiParams,
        s: &mut MppiState,
        x0: &[f64],
        z: &[f64],
        out: &mut [f64],
        shift: bool,
    ) {
        let d = &self.dynamics;
        if p.precision == PrecisionKind::F32 {
            let n = crate::lanes::Normals::Given(z);
            return crate::lanes::command(d, p, s, x0, n, out, shift);
        }
        assert_eq!(x0.len(), d.nx(), "Mppi::command: state length");
        self.command_by(p, s, z, out, shift, |ph| match ph {
            Phase::Block { ctl, costs } => {
                let t = p.horizon;
                if p.rollout_samples > 1 {
                    let nu = d.nu();
                    for (v, c) in ctl.chunks(t * nu).zip(costs.iter_mut()) {
                        *c = rollout_cost_by(d, x0, t, p, |tt, us| {
                            us.copy_from_slice(&v[tt * nu..(tt + 1) * nu])
                        });
                    }
                } else {
                    rollout_block(d, x0, t, p.convention == ConventionKind::JaxMppi, costs, ctl);
                }
                true
            }
            Phase::All { .. } => true,
        });
    }
}

/// Where [`Mppi::command_by`] asks for rollout costs.
pub enum Phase<'a> {
    /// One block of samples (called in parallel): `ctl` holds their scaled controls
    /// (`sample × step × nu`); write each sample's rollout cost to `costs` and return `true`.
    /// Return `false` to leave the costs to the [`Phase::All`] call.
    Block {
        /// Scaled controls of the block's samples.
        ctl: &'a [f64],
        /// Their rollout costs (running + terminal), to write.
        costs: &'a mut [f64],
    },
    /// Every sample at once (after the blocks, only when a block returned `false`): `ctl` is
    /// `K × T × nu`, `costs` K.
    All {
        /// Scaled controls of every sample.
        ctl: &'a [f64],
        /// Their rollout costs, to write.
        costs: &'a mut [f64],
    },
}

impl<D: Dynamics> Mppi<D> {
    /// [`Controller::command`](crate::controller::Controller::command) with the rollout costs from
    /// `rollout` ([`Mppi::command_by`]): the same normals from `key`, the same plan shift.
    pub fn command_keyed_by(
        &self,
        key: Key,
        p: &MppiParams,
        s: &mut MppiState,
        out: &mut [f64],
        rollout: impl Fn(Phase<'_>) -> bool + Sync,
    ) {
        let mut z = std::mem::take(&mut s.normals);
        draw_normals(key, p.num_samples, p.horizon * self.dynamics.nu(), &mut z);
        self.command_by(p, s, &z, out, true, rollout);
        s.normals = z;
    }

    /// [`Controller::command_with_normals`](crate::controller::Controller::command_with_normals) with the
    /// rollout costs supplied by `rollout` ([`Phase`]): the built-in dynamics cost each block in
    /// parallel; dynamics outside Rust (the Python package's batched callback, called once per
    /// horizon step for all samples) take every sample at once. Shift, sampling, control costs,
    /// weights and the update are the same code either way.
    pub fn command_by(
        &self,
        p: &MppiParams,
        s: &mut MppiState,
        z: &[f64],
        out: &mut [f64],
        shift: bool,
        rollout: impl Fn(Phase<'_>) -> bool + Sync,
    ) {
        if !self.begin(p, s, z, shift, &rollout) {
            rollout(Phase::All { ctl: &s.controls, costs: &mut s.costs });
            self.add_control_costs(p, s);
        }
        self.weigh_and_update(p, s, out, shift);
    }

    /// The first half of a command whose rollouts are someone else's (the population tuner
    /// over batched dynamics, [`crate::batched`], which rolls out many controllers' samples
    /// in one call): shift and sample with the normals of `key`, as
    /// [`Mppi::command_keyed_by`]. On return `MppiState::controls` holds every sample's
    /// scaled, clamped controls (`K × T × nu`); write each sample's rollout cost (running +
    /// terminal) to [`MppiState::costs`], then call [`Mppi::end_command`]. The two halves do
    /// exactly what [`Mppi::command_keyed_by`] does.
    pub fn begin_command(&self, key: Key, p: &MppiParams, s: &mut MppiState) {
        let mut z = std::mem::take(&mut s.normals);
        draw_normals(key, p.num_samples, p.horizon * self.dynamics.nu(), &mut z);
        self.begin(p, s, &z, true, &|_| false);
        s.normals = z;
    }

    /// The second half (after [`Mppi::begin_command`] and the costs): control costs, weights,
    /// the plan's update, and the command into `out`.
    pub fn end_command(&self, p: &MppiParams, s: &mut MppiState, out: &mut [f64]) {
        self.add_control_costs(p, s);
        self.weigh_and_update(p, s, out, true);
    }

    /// Shift, sample, and the blocks' rollouts; `true` when every block wrote its costs (and
    /// its control costs were added).
    fn begin(
        &self,
        p: &MppiParams,
        s: &mut MppiState,
        z: &[f64],
        shift: bool,
        rollout: &(impl Fn(Phase<'_>) -> bool + Sync),
    ) -> bool {
        let d = &self.dynamics;
        let (k, t, nu) = (p.num_samples, p.horizon, d.nu());
        assert_eq!(z.len(), k * t * nu, "Mppi::command: normals length");
        assert_eq!(
            s.u.len(),
            t * nu,
            "Mppi::command: the state was made for another horizon (call init)"
        );
        let jax = p.convention == ConventionKind::JaxMppi;
        if shift && !jax {
            s.u.copy_within(nu.., 0);
            s.u[(t - 1) * nu..].copy_from_slice(&p.u_init);
        }
        let l = cholesky(&p.noise_sigma, nu).expect("validated noise_sigma");
        let sigma_inv = inverse_spd(&l, nu);
        let (mut eps, mut costs, mut ctl) = (
            std::mem::take(&mut s.noise),
            std::mem::take(&mut s.costs),
            std::mem::take(&mut s.controls),
        );
        eps.resize(k * t * nu, 0.0);
        costs.resize(k, 0.0);
        ctl.resize(k * t * nu, 0.0);
        let u_nom = &s.u;
        let s_specific = &s.specific;
        let num_specific = s_specific.len() / (t * nu);
        let first_specific = p.sample_null_action as usize;
        // Sample, clamp, keep the effective noise; roll out; per-sample cost. Samples are
        // independent; they are rolled out in blocks of `BLOCK` interleaved step by step (the
        // transitions of one sample form a dependency chain, those of a block overlap in the
        // CPU), with states and controls on the stack, so nothing allocates per sample. Each
        // sample's arithmetic is in the same order as one at a time.
        let min_blocks = (4096 / (t.max(1) * BLOCK)).max(1);
        let row = t * nu;
        let all_done = eps
            .par_chunks_mut(BLOCK * row)
            .zip(ctl.par_chunks_mut(BLOCK * row))
            .zip(costs.par_chunks_mut(BLOCK))
            .enumerate()
            .with_min_len(min_blocks)
            .map(|(blk, ((e_blk, v_blk), c_blk))| {
                // Noise ε = μ + L z, the clamped control (scaled) and the effective noise, for
                // the block's samples (row-major `sample × step × control`, as z).
                let k0 = blk * BLOCK;
                let z_blk = &z[k0 * row..k0 * row + e_blk.len()];
                let nb = c_blk.len();
                for b in 0..nb {
                    let null = p.sample_null_action && k0 + b == 0;
                    // A specific sequence in place of this sample (pytorch-mppi's order:
                    // the null action first, then the sampler's rows).
                    let j = (k0 + b).wrapping_sub(first_specific);
                    let specific = (j < num_specific).then(|| &s_specific[j * row..(j + 1) * row]);
                    for tt in 0..t {
                        let o = (b * t + tt) * nu;
                        let (e, v) = (&mut e_blk[o..o + nu], &mut v_blk[o..o + nu]);
                        let zr = &z_blk[o..o + nu];
                        let un = &u_nom[tt * nu..(tt + 1) * nu];
                        for i in 0..nu {
                            let noise =
                                p.noise_mu[i] + (0..=i).map(|j| l[i * nu + j] * zr[j]).sum::<f64>();
                            if jax {
                                // Raw ε is kept; bounds apply to the scaled action.
                                let ei = if null { 0.0 } else { noise };
                                e[i] = ei;
                                v[i] = (p.u_scale * (un[i] + ei)).max(p.u_min[i]).min(p.u_max[i]);
                            } else {
                                let vi = match specific {
                                    _ if null => 0.0,
                                    Some(a) => a[tt * nu + i],
                                    None => un[i] + noise,
                                };
                                let vi = vi.max(p.u_min[i]).min(p.u_max[i]);
                                e[i] = vi - un[i];
                                v[i] = p.u_scale * vi;
                            }
                        }
                    }
                }
                let done = rollout(Phase::Block { ctl: v_blk, costs: c_blk });
                if done {
                    control_costs(p, u_nom, &sigma_inv, e_blk, c_blk);
                }
                done
            })
            .reduce(|| true, |a, b| a && b);
        s.costs = costs;
        s.noise = eps;
        s.controls = ctl;
        all_done
    }

    /// Adds the control costs to the rollout costs in `s.costs` (blocks in parallel).
    fn add_control_costs(&self, p: &MppiParams, s: &mut MppiState) {
        let (t, nu) = (p.horizon, self.dynamics.nu());
        let l = cholesky(&p.noise_sigma, nu).expect("validated noise_sigma");
        let sigma_inv = inverse_spd(&l, nu);
        let min_blocks = (4096 / (t.max(1) * BLOCK)).max(1);
        let (u_nom, eps) = (&s.u, &s.noise);
        eps.par_chunks(BLOCK * t * nu)
            .zip(s.costs.par_chunks_mut(BLOCK))
            .with_min_len(min_blocks)
            .for_each(|(e_blk, c_blk)| control_costs(p, u_nom, &sigma_inv, e_blk, c_blk));
    }

    /// Weights from the total costs, the plan's update, and the command into `out`.
    fn weigh_and_update(&self, p: &MppiParams, s: &mut MppiState, out: &mut [f64], shift: bool) {
        let (k, t, nu) = (p.num_samples, p.horizon, self.dynamics.nu());
        let mut w = std::mem::take(&mut s.weights);
        w.resize(k, 0.0);
        weights(&s.costs, p.lambda, &mut w);
        for kk in 0..k {
            if w[kk] != 0.0 {
                for (u, e) in s.u.iter_mut().zip(&s.noise[kk * t * nu..(kk + 1) * t * nu]) {
                    *u += w[kk] * e;
                }
            }
        }
        s.weights = w;
        finish(p, s, out, shift);
    }
}

/// The checks of `n` specific sequences (`values`, whole rows): finite, room among the
/// samples, pytorch-mppi's convention in f64.
fn check_specific<'a>(
    p: &MppiParams,
    n: usize,
    mut values: impl Iterator<Item = &'a f64>,
) -> Result<(), MppiError> {
    if n == 0 {
        return Ok(());
    }
    if let Some(v) = values.find(|v| !v.is_finite()) {
        return Err(invalid("specific_actions", v, "finite values"));
    }
    let room = p.num_samples - p.sample_null_action as usize;
    if n > room {
        let null = if p.sample_null_action { " - 1 (the null action)" } else { "" };
        return Err(MppiError::invalid(
            "specific_actions",
            format!("{n} sequences"),
            format!("at most num_samples{null} = {room}"),
        ));
    }
    if p.convention != ConventionKind::PytorchMppi {
        let why = "none under the jax-mppi convention (it has no specific sampler)";
        return Err(invalid("specific_actions", format!("{n} sequences"), why));
    }
    if p.precision != PrecisionKind::F64 {
        let why = "none with precision f32 (the lanes sample on their own)";
        return Err(invalid("specific_actions", format!("{n} sequences"), why));
    }
    Ok(())
}

/// Adds each sample's control cost (λ-weighted; jax-mppi's ½ without λ) to its rollout cost;
/// a NaN total becomes +∞.
fn control_costs(
    p: &MppiParams,
    u_nom: &[f64],
    sigma_inv: &[f64],
    e_blk: &[f64],
    c_blk: &mut [f64],
) {
    let nu = p.u_init.len();
    let jax = p.convention == ConventionKind::JaxMppi;
    for (e, cost) in e_blk.chunks(p.horizon * nu).zip(c_blk.iter_mut()) {
        let ctrl = control_cost(e, u_nom, &sigma_inv[..nu * nu], nu, jax, p.noise_abs_cost);
        let total = *cost + if jax { 0.5 * ctrl } else { p.lambda * ctrl };
        *cost = if total.is_nan() { f64::INFINITY } else { total };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Σ is read whole: an upper triangle that differs from the lower one is refused, not
    /// silently replaced by it (the Cholesky factor reads only the lower triangle).
    #[test]
    fn an_asymmetric_noise_covariance_is_refused() {
        struct Two;
        impl Dynamics for Two {
            fn nx(&self) -> usize {
                2
            }
            fn nu(&self) -> usize {
                2
            }
            fn step(&self, x: &[f64], u: &[f64], _t: usize, n: &mut [f64]) {
                n[0] = x[0] + u[0];
                n[1] = x[1] + u[1];
            }
            fn running_cost(&self, x: &[f64], _u: &[f64], _t: usize) -> f64 {
                x[0] * x[0] + x[1] * x[1]
            }
        }
        let m = Mppi::new(Two);
        let ok = MppiParams { noise_sigma: vec![1.0, 0.5, 0.5, 1.0], ..MppiParams::new(2, 1.0) };
        m.validate(&ok).unwrap();
        let bad = MppiParams { noise_sigma: vec![1.0, 0.5, 0.0, 1.0], ..ok };
        let e = m.validate(&bad).unwrap_err().to_string();
        assert!(e.contains("noise_sigma") && e.contains("symmetric"), "{e}");
    }

    /// Specific sequences are refused by field and value where they cannot be honoured.
    #[test]
    fn bad_specific_actions_are_refused_by_name() {
        let m = Mppi::new(kestrel_dynamics::BasicLinear);
        let p = MppiParams { num_samples: 3, horizon: 2, ..MppiParams::new(1, 1.0) };
        let err = |q: MppiParams| m.validate(&q).unwrap_err().to_string();
        let with = |rows: Vec<Vec<f64>>| MppiParams { specific_actions: rows, ..p.clone() };
        m.validate(&with(vec![vec![0.5, 0.5]; 3])).unwrap();
        assert!(err(with(vec![vec![0.5]])).contains("specific_actions[0] = 1 values"));
        assert!(err(with(vec![vec![0.5, f64::NAN]])).contains("finite"));
        assert!(err(with(vec![vec![0.5, 0.5]; 4])).contains("at most num_samples = 3"));
        let null = MppiParams { sample_null_action: true, ..with(vec![vec![0.5, 0.5]; 3]) };
        assert!(err(null).contains("the null action"));
        let jax = MppiParams { convention: ConventionKind::JaxMppi, ..with(vec![vec![0.5, 0.5]]) };
        assert!(err(jax).contains("jax-mppi"));
        let f32 = MppiParams { precision: PrecisionKind::F32, ..with(vec![vec![0.5, 0.5]]) };
        assert!(err(f32).contains("f32"));
        let mut s = m.init(&p);
        let e = m.set_specific(&p, &mut s, &[0.5, 0.5, 0.5]).unwrap_err().to_string();
        assert!(e.contains("whole sequences"), "{e}");
        m.set_specific(&p, &mut s, &[0.5, 0.5, -0.5, -0.5]).unwrap();
        let smppi = crate::smppi::Smppi::new(kestrel_dynamics::BasicLinear);
        let sp = crate::smppi::SmppiParams {
            mppi: with(vec![vec![0.5, 0.5]]),
            w_action_seq_cost: 1.0,
            delta_t: 1.0,
            action_min: vec![-1.0],
            action_max: vec![1.0],
            clamp_lifted_control: false,
        };
        assert!(smppi.validate(&sp).unwrap_err().to_string().contains("SMPPI"));
    }

    #[test]
    fn all_infinite_costs_leave_the_plan_alone() {
        struct Bad;
        impl Dynamics for Bad {
            fn nx(&self) -> usize {
                1
            }
            fn nu(&self) -> usize {
                1
            }
            fn step(&self, x: &[f64], _u: &[f64], _t: usize, n: &mut [f64]) {
                n[0] = x[0];
            }
            fn running_cost(&self, _x: &[f64], _u: &[f64], _t: usize) -> f64 {
                f64::NAN
            }
        }
        let m = Mppi::new(Bad);
        // Both precisions (40 samples: two f32 blocks, the second partly padding).
        for precision in [PrecisionKind::F64, PrecisionKind::F32] {
            let p =
                MppiParams { num_samples: 40, horizon: 4, precision, ..MppiParams::new(1, 1.0) };
            let mut s = m.init(&p);
            let mut out = [0.0];
            m.command(Key::new(1), &p, &mut s, &[0.0], &mut out);
            assert_eq!(out, [0.0], "{precision:?}");
            assert!(s.weights.iter().all(|&w| w == 0.0), "{precision:?}");
            assert!(s.costs.iter().all(|c| c.is_infinite()), "{precision:?}");
        }
    }
}
