//! The rollout pieces MPPI, SMPPI and KMPPI share: keyed standard normals, rolling a control
//! sequence out through [`Dynamics`] in either peer's convention (one sample at a time, or a
//! block of samples in structure-of-arrays lanes), the control cost, the weights
//! `exp(−(S − min S)/λ)`, and the end of a command (clip, return, shift).

use crate::params::{ConventionKind, MAX_M, MAX_NU, MAX_NX, MppiError, MppiParams, invalid};
use crate::state::MppiState;
use kestrel_core::Key;
use kestrel_dynamics::Dynamics;
use rayon::prelude::*;

/// Samples per chunk of [`draw_normals`].
const NORMAL_CHUNK: usize = 8;

/// Resizes `z` to `k × per` (sample-major) and fills it with standard normals: the rows of
/// samples `8c..8c + 8` (fewer in the last chunk) are one [`kestrel_core::fill_normal_f32`]
/// draw from `key.fold_in(c)` (the one vectorised sampler; the same values on any thread
/// count and CPU). Shared by MPPI, SMPPI and KMPPI.
pub(crate) fn draw_normals(key: Key, k: usize, per: usize, z: &mut Vec<f64>) {
    z.resize(k * per, 0.0);
    let chunk = NORMAL_CHUNK * per.max(1);
    // Split only in tasks of ~4k normals: small K (as in tuning, where many commands already
    // run in parallel) stays on one thread.
    let min = (4096 / chunk).max(1);
    z.par_chunks_mut(chunk).enumerate().with_min_len(min).for_each(|(c, rows)| {
        kestrel_core::fill_normal_f32(key.fold_in(c as u64), rows);
    });
}

/// Checks the stochastic-rollout parameters (shared by MPPI, SMPPI and KMPPI).
pub(crate) fn validate_rollouts(p: &MppiParams) -> Result<(), MppiError> {
    if p.rollout_samples == 0 || p.rollout_samples > MAX_M {
        return Err(invalid("rollout_samples", p.rollout_samples, "1 to 16"));
    }
    if !p.rollout_var_cost.is_finite() {
        return Err(invalid("rollout_var_cost", p.rollout_var_cost, "a finite number"));
    }
    if !p.rollout_var_discount.is_finite() {
        return Err(invalid("rollout_var_discount", p.rollout_var_discount, "a finite number"));
    }
    Ok(())
}

/// Cost of rolling `acts` (`T × nu`, unscaled) out from `x0` with pytorch-mppi's convention:
/// controls scaled by `u_scale`, running cost on the post-transition state, terminal cost on
/// the final state, `rollout_samples` members. No allocation (states and control on the stack).
pub(crate) fn rollout_cost<D: Dynamics>(d: &D, x0: &[f64], acts: &[f64], p: &MppiParams) -> f64 {
    let nu = d.nu();
    rollout_cost_by(d, x0, acts.len() / nu, p, |tt, us| {
        for (u, v) in us.iter_mut().zip(&acts[tt * nu..(tt + 1) * nu]) {
            *u = p.u_scale * v;
        }
    })
}

/// [`rollout_cost`] with the scaled control of step `tt` written by `act(tt, us)` (called once
/// per step, in order). With `M = rollout_samples > 1` (pytorch-mppi's `_compute_rollout_costs`
/// for M > 1): the mean over members of (Σ_t c + terminal) plus
/// `rollout_var_cost · Σ_t rollout_var_discount^t · var_m(c_t)`, unbiased variance.
pub(crate) fn rollout_cost_by<D: Dynamics>(
    d: &D,
    x0: &[f64],
    t: usize,
    p: &MppiParams,
    mut act: impl FnMut(usize, &mut [f64]),
) -> f64 {
    let (nx, nu, m) = (d.nx(), d.nu(), p.rollout_samples);
    let mut us = [0.0f64; MAX_NU];
    if m <= 1 {
        let (mut xa, mut na) = ([0.0f64; MAX_NX], [0.0f64; MAX_NX]);
        let (mut x, mut next) = (&mut xa[..nx], &mut na[..nx]);
        x.copy_from_slice(x0);
        let mut total = 0.0;
        for tt in 0..t {
            act(tt, &mut us[..nu]);
            d.step(x, &us[..nu], tt, next);
            // Swap the buffers (a 16-byte copy here is a libc memmove call).
            std::mem::swap(&mut x, &mut next);
            total += d.running_cost(x, &us[..nu], tt);
        }
        return total + d.terminal_cost(x);
    }
    let mut xs = [[0.0f64; MAX_NX]; MAX_M];
    let mut next = [0.0f64; MAX_NX];
    let (mut sums, mut c) = ([0.0f64; MAX_M], [0.0f64; MAX_M]);
    xs[..m].iter_mut().for_each(|x| x[..nx].copy_from_slice(x0));
    let (mut var_total, mut disc) = (0.0, 1.0);
    for tt in 0..t {
        act(tt, &mut us[..nu]);
        for j in 0..m {
            d.step_member(&xs[j][..nx], &us[..nu], tt, j, &mut next[..nx]);
            xs[j][..nx].copy_from_slice(&next[..nx]);
            c[j] = d.running_cost(&xs[j][..nx], &us[..nu], tt);
            sums[j] += c[j];
        }
        let mean = c[..m].iter().sum::<f64>() / m as f64;
        let var = c[..m].iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (m - 1) as f64;
        var_total += var * disc;
        disc *= p.rollout_var_discount;
    }
    let mean = (0..m).map(|j| sums[j] + d.terminal_cost(&xs[j][..nx])).sum::<f64>() / m as f64;
    mean + var_total * p.rollout_var_cost
}

/// The control cost of one sample before its factor: pytorch-mppi `Σ_t U_tᵀ Σ⁻¹ ε_t`
/// (`|ε|` with `noise_abs_cost`), jax-mppi `Σ_t ε_tᵀ Σ⁻¹ ε_t` (`|ε|ᵀ|Σ⁻¹||ε|` with
/// `noise_abs_cost`). `e` and `u_nom` are `T × nu`.
#[inline]
pub(crate) fn control_cost(
    e: &[f64],
    u_nom: &[f64],
    sinv: &[f64],
    nu: usize,
    jax: bool,
    abs: bool,
) -> f64 {
    let mut ctrl = 0.0;
    if nu == 1 {
        // One control: a dot product (same terms, same order as the general loop).
        let s = sinv[0];
        for (ei, ui) in e.iter().zip(u_nom) {
            ctrl += match (jax, abs) {
                (true, true) => ei.abs() * s.abs() * ei.abs(),
                (true, false) => ei * s * ei,
                (false, true) => ui * s * ei.abs(),
                (false, false) => ui * s * ei,
            };
        }
        return ctrl;
    }
    for (et, ut) in e.chunks(nu).zip(u_nom.chunks(nu)) {
        for i in 0..nu {
            for j in 0..nu {
                let ej = et[j];
                ctrl += match (jax, abs) {
                    (true, true) => et[i].abs() * sinv[i * nu + j].abs() * ej.abs(),
                    (true, false) => et[i] * sinv[i * nu + j] * ej,
                    (false, true) => ut[i] * sinv[i * nu + j] * ej.abs(),
                    (false, false) => ut[i] * sinv[i * nu + j] * ej,
                };
            }
        }
    }
    ctrl
}

/// Samples rolled out together by [`rollout_block`].
pub(crate) const BLOCK: usize = 8;

/// Rolls out `out.len() ≤ BLOCK` samples from `x0` through [`Dynamics::step_batch`] (states
/// in structure of arrays, one lane per sample) and writes each one's running + terminal cost
/// (`M = 1`); `controls` holds their scaled controls (`sample × step × nu`). `cost_before`:
/// jax-mppi's running cost on the state before each step; otherwise pytorch-mppi's, on the
/// state after. Per sample the arithmetic is that of [`rollout_cost_by`] / [`rollout_cost_jax`].
pub(crate) fn rollout_block<D: Dynamics>(
    d: &D,
    x0: &[f64],
    t: usize,
    cost_before: bool,
    out: &mut [f64],
    controls: &[f64],
) {
    let (nx, nu, nb) = (d.nx(), d.nu(), out.len());
    let mut xa = [0.0f64; MAX_NX * BLOCK];
    let mut xb = [0.0f64; MAX_NX * BLOCK];
    let mut us = [0.0f64; MAX_NU * BLOCK];
    for i in 0..nx {
        xa[i * nb..(i + 1) * nb].fill(x0[i]);
    }
    out.fill(0.0);
    for tt in 0..t {
        // States alternate between the two arrays (no copies).
        let (cur, next) = if tt.is_multiple_of(2) { (&xa, &mut xb) } else { (&xb, &mut xa) };
        for b in 0..nb {
            let u = &controls[(b * t + tt) * nu..(b * t + tt + 1) * nu];
            (0..nu).for_each(|i| us[i * nb + b] = u[i]);
        }
        let (cur, next, u) = (&cur[..nx * nb], &mut next[..nx * nb], &us[..nu * nb]);
        if cost_before {
            d.running_cost_batch(cur, u, tt, out, nb);
        }
        d.step_batch(cur, u, tt, next, nb);
        if !cost_before {
            d.running_cost_batch(next, u, tt, out, nb);
        }
    }
    let fin = if t.is_multiple_of(2) { &xa } else { &xb };
    d.terminal_cost_batch(&fin[..nx * nb], out, nb);
}

/// jax-mppi's rollout: the running cost is charged on the state *before* each step (so `x_0`
/// counts), the terminal cost on `x_T`; the control of step `tt` is written by `act(tt, us)`
/// (called once per step, in order). No allocation.
pub(crate) fn rollout_cost_jax<D: Dynamics>(
    d: &D,
    x0: &[f64],
    t: usize,
    mut act: impl FnMut(usize, &mut [f64]),
) -> f64 {
    let (nx, nu) = (d.nx(), d.nu());
    let (mut xa, mut na) = ([0.0f64; MAX_NX], [0.0f64; MAX_NX]);
    let (mut x, mut next) = (&mut xa[..nx], &mut na[..nx]);
    x.copy_from_slice(x0);
    let mut us = [0.0f64; MAX_NU];
    let mut total = 0.0;
    for tt in 0..t {
        act(tt, &mut us[..nu]);
        total += d.running_cost(x, &us[..nu], tt);
        d.step(x, &us[..nu], tt, next);
        std::mem::swap(&mut x, &mut next);
    }
    total + d.terminal_cost(x)
}

/// Normalised weights `exp(−(S − min S)/λ)` (non-finite costs weigh 0; if every cost is
/// infinite no sample is informative and all weights are 0).
pub(crate) fn weights(costs: &[f64], lambda: f64, w: &mut [f64]) {
    let beta = costs.iter().cloned().fold(f64::INFINITY, f64::min);
    for (wk, c) in w.iter_mut().zip(costs) {
        *wk = if beta.is_finite() && c.is_finite() { (-(c - beta) / lambda).exp() } else { 0.0 };
    }
    let eta: f64 = w.iter().sum();
    if eta > 0.0 {
        w.iter_mut().for_each(|x| *x /= eta);
    }
}

/// After the update: jax-mppi clips the plan, returns its scaled, clipped first controls and
/// shifts by `u_per_command`; pytorch-mppi returns the first controls as they are.
pub(crate) fn finish(p: &MppiParams, s: &mut MppiState, out: &mut [f64], shift: bool) {
    let nu = p.u_init.len();
    let t = p.horizon;
    if p.convention == ConventionKind::JaxMppi {
        for (idx, u) in s.u.iter_mut().enumerate() {
            let i = idx % nu;
            *u = u.max(p.u_min[i] / p.u_scale).min(p.u_max[i] / p.u_scale);
        }
        for (idx, o) in out.iter_mut().enumerate() {
            let i = idx % nu;
            *o = (s.u[idx] * p.u_scale).max(p.u_min[i]).min(p.u_max[i]);
        }
        if shift {
            let k_shift = p.u_per_command.min(t) * nu;
            s.u.copy_within(k_shift.., 0);
            for r in 0..p.u_per_command.min(t) {
                s.u[(t - 1 - r) * nu..(t - r) * nu].copy_from_slice(&p.u_init);
            }
        }
    } else {
        out.copy_from_slice(&s.u[..p.u_per_command * nu]);
    }
}
