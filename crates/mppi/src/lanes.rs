//! MPPI's f32 mode ([`PrecisionKind::F32`](crate::params::PrecisionKind)): one SIMD lane per sample.
//!
//! Samples are processed in blocks of [`LANES`]. A block's standard normals, its effective
//! noise and its controls are structure of arrays (`step × control × lane`), its states
//! `state × lane` on the stack; sampling, clamping, the control cost, the rollout through
//! [`Dynamics::step_batch_f32`] and the costs are lane-wise loops compiled, by
//! [`kestrel_core::simd::dispatch`], for the best vector extension of the CPU (values do not
//! depend on which). Blocks run in parallel; weights and the plan update are reduced in a
//! fixed order, so results do not depend on the thread count either. Nothing allocates once
//! the state's scratch has grown to the problem's size.

use crate::params::{ConventionKind, MAX_NU, MAX_NX, MppiParams};
use crate::state::MppiState;
use kestrel_core::Key;
use kestrel_core::simd::{Simd, WithSimd, clamp_f32 as clampf, dispatch, exp_f32};
use kestrel_dynamics::Dynamics;
use rayon::prelude::*;

/// Samples per block (one lane each).
pub(crate) const LANES: usize = 32;

/// Where a command's standard normals come from.
#[derive(Clone, Copy)]
pub(crate) enum Normals<'a> {
    /// Drawn per block: block `b`'s `T × nu × LANES` values are one
    /// [`kestrel_core::fill_normal_f32`] draw from `key.fold_in(b)`.
    Keyed(Key),
    /// Given sample-major (`K × T × nu`, [`crate::controller::Controller::command_with_normals`]).
    Given(&'a [f64]),
}

/// The command's constants in f32.
struct Consts {
    l: [f32; MAX_NU * MAX_NU],
    sinv: [f32; MAX_NU * MAX_NU],
    mu: [f32; MAX_NU],
    lo: [f32; MAX_NU],
    hi: [f32; MAX_NU],
    scale: f32,
    lambda: f32,
    jax: bool,
    abs: bool,
}

/// One command in f32 (see the module notes); the conventions are those of the f64
/// [`crate::mppi::Mppi::command_by`], step for step.
pub(crate) fn command<D: Dynamics>(
    d: &D,
    p: &MppiParams,
    s: &mut MppiState,
    x0: &[f64],
    normals: Normals<'_>,
    out: &mut [f64],
    shift: bool,
) {
    let (k, t, nu, nx) = (p.num_samples, p.horizon, d.nu(), d.nx());
    assert_eq!(x0.len(), nx, "Mppi::command: state length");
    assert_eq!(s.u.len(), t * nu, "Mppi::command: the state was made for another horizon");
    if let Normals::Given(z) = normals {
        assert_eq!(z.len(), k * t * nu, "Mppi::command: normals length");
    }
    let jax = p.convention == ConventionKind::JaxMppi;
    if shift && !jax {
        s.u.copy_within(nu.., 0);
        s.u[(t - 1) * nu..].copy_from_slice(&p.u_init);
    }
    let l = crate::params::cholesky(&p.noise_sigma, nu).expect("validated noise_sigma");
    let sinv = crate::params::inverse_spd(&l, nu);
    let mut c = Consts {
        l: [0.0; MAX_NU * MAX_NU],
        sinv: [0.0; MAX_NU * MAX_NU],
        mu: [0.0; MAX_NU],
        lo: [0.0; MAX_NU],
        hi: [0.0; MAX_NU],
        scale: p.u_scale as f32,
        lambda: p.lambda as f32,
        jax,
        abs: p.noise_abs_cost,
    };
    for i in 0..nu * nu {
        (c.l[i], c.sinv[i]) = (l[i] as f32, sinv[i] as f32);
    }
    for i in 0..nu {
        (c.mu[i], c.lo[i], c.hi[i]) = (p.noise_mu[i] as f32, p.u_min[i] as f32, p.u_max[i] as f32);
    }
    let per = t * nu;
    let blocks = k.div_ceil(LANES);
    let mut sc = std::mem::take(&mut s.lanes);
    sc.z.resize(blocks * LANES * per, 0.0);
    sc.eps.resize(blocks * LANES * per, 0.0);
    sc.cost.resize(blocks * LANES, 0.0);
    sc.w.resize(blocks * LANES, 0.0);
    sc.partial.resize(blocks * per, 0.0);
    sc.unom.clear();
    sc.unom.extend(s.u.iter().map(|&v| v as f32));
    let null = p.sample_null_action;
    // Tasks of at least ~4k lane-steps: small K (as in tuning, where many commands already run
    // in parallel) stays on one thread.
    let min_blocks = (4096 / (LANES * t).max(1)).max(1);
    {
        let (c, unom) = (&c, &sc.unom[..]);
        sc.z.par_chunks_mut(LANES * per)
            .zip(sc.eps.par_chunks_mut(LANES * per))
            .zip(sc.cost.par_chunks_mut(LANES))
            .enumerate()
            .with_min_len(min_blocks)
            .for_each(|(b, ((z, eps), cost))| {
                match normals {
                    Normals::Keyed(key) => kestrel_core::fill_normal_f32(key.fold_in(b as u64), z),
                    Normals::Given(given) => {
                        for lane in 0..LANES {
                            let kk = b * LANES + lane;
                            for r in 0..per {
                                z[r * LANES + lane] =
                                    if kk < k { given[kk * per + r] as f32 } else { 0.0 };
                            }
                        }
                    }
                }
                dispatch(Block {
                    d,
                    c,
                    x0,
                    unom,
                    t,
                    null: null && b == 0,
                    valid: (k - b * LANES).min(LANES),
                    z,
                    eps,
                    cost,
                });
            });
    }
    // Weights exp(−(S − min S)/λ), normalised (non-finite costs and padding lanes weigh 0).
    s.costs.clear();
    s.costs.extend(sc.cost[..k].iter().map(|&v| v as f64));
    let beta = sc.cost[..k].iter().cloned().fold(f32::INFINITY, f32::min);
    dispatch(Weights { cost: &sc.cost, w: &mut sc.w, beta, lambda: c.lambda });
    let mut acc = [0.0f64; 8];
    for (i, &w) in sc.w[..k].iter().enumerate() {
        acc[i % 8] += w as f64;
    }
    let eta = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    s.weights.resize(k, 0.0);
    if eta > 0.0 {
        for (sw, w) in s.weights.iter_mut().zip(sc.w.iter_mut()) {
            *sw = *w as f64 / eta;
            *w = *sw as f32;
        }
    } else {
        s.weights.fill(0.0);
        sc.w.fill(0.0);
    }
    // U += Σ_k ω_k ε_k: each block's sum in parallel (a fixed lane order), then the blocks in
    // order (no update when no sample weighs). The effective noise goes out sample-major to
    // `s.noise` on the way.
    s.noise.resize(k * per, 0.0);
    sc.partial
        .par_chunks_mut(per)
        .zip(sc.eps.par_chunks(LANES * per))
        .zip(sc.w.par_chunks(LANES))
        .zip(s.noise.par_chunks_mut(LANES * per))
        .with_min_len(min_blocks)
        .for_each(|(((partial, eps), w), noise)| {
            dispatch(Update { eps, w, partial, noise });
        });
    if eta > 0.0 {
        for part in sc.partial.chunks_exact(per) {
            for (u, v) in s.u.iter_mut().zip(part) {
                *u += v;
            }
        }
    }
    s.lanes = sc;
    crate::rollout::finish(p, s, out, shift);
}

/// The effective noise of one block (lanes) written sample-major (`noise` holds the block's
/// real samples only).
#[inline(always)]
fn transpose_out(eps: &[f32], noise: &mut [f64]) {
    let per = eps.len() / LANES;
    for (lane, row) in noise.chunks_exact_mut(per).enumerate() {
        for (r, v) in row.iter_mut().enumerate() {
            *v = eps[r * LANES + lane] as f64;
        }
    }
}

/// One block: sample, clamp, control cost, roll out, total cost.
struct Block<'a, D> {
    d: &'a D,
    c: &'a Consts,
    x0: &'a [f64],
    unom: &'a [f32],
    t: usize,
    /// Lane 0 is the null-action sample.
    null: bool,
    /// Real samples in the block (the rest are padding, cost +∞).
    valid: usize,
    z: &'a [f32],
    eps: &'a mut [f32],
    cost: &'a mut [f32],
}

impl<D: Dynamics> WithSimd for Block<'_, D> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        const L: usize = LANES;
        let Block { d, c, x0, unom, t, null, valid, z, eps, cost } = self;
        let (nx, nu) = (d.nx(), d.nu());
        let mut xa = [0.0f32; MAX_NX * L];
        let mut xb = [0.0f32; MAX_NX * L];
        let mut us = [0.0f32; MAX_NU * L];
        for i in 0..nx {
            xa[i * L..(i + 1) * L].fill(x0[i] as f32);
        }
        let (mut run, mut ctrl) = ([0.0f32; L], [0.0f32; L]);
        for tt in 0..t {
            for i in 0..nu {
                let un = unom[tt * nu + i];
                let (lo, hi, scale) = (c.lo[i], c.hi[i], c.scale);
                let mut noise = [c.mu[i]; L];
                for j in 0..=i {
                    let lij = c.l[i * nu + j];
                    let zr = &z[(tt * nu + j) * L..][..L];
                    for lane in 0..L {
                        noise[lane] += lij * zr[lane];
                    }
                }
                let er = &mut eps[(tt * nu + i) * L..][..L];
                let ur = &mut us[i * L..][..L];
                if c.jax {
                    // Raw ε kept; bounds on the scaled action.
                    for lane in 0..L {
                        er[lane] = noise[lane];
                        ur[lane] = clampf(scale * (un + noise[lane]), lo, hi);
                    }
                    if null {
                        er[0] = 0.0;
                        ur[0] = clampf(scale * un, lo, hi);
                    }
                } else {
                    for lane in 0..L {
                        let v = clampf(un + noise[lane], lo, hi);
                        er[lane] = v - un;
                        ur[lane] = scale * v;
                    }
                    if null {
                        let v = clampf(0.0, lo, hi);
                        er[0] = v - un;
                        ur[0] = scale * v;
                    }
                }
            }
            // Control cost: jax-mppi εᵀΣ⁻¹ε, pytorch-mppi Uᵀ Σ⁻¹ ε (|·| with noise_abs_cost).
            for i in 0..nu {
                let ei = &eps[(tt * nu + i) * L..][..L];
                for j in 0..nu {
                    let sij = c.sinv[i * nu + j];
                    let ej = &eps[(tt * nu + j) * L..][..L];
                    match (c.jax, c.abs) {
                        (true, false) => {
                            (0..L).for_each(|lane| ctrl[lane] += ei[lane] * sij * ej[lane])
                        }
                        (true, true) => (0..L).for_each(|lane| {
                            ctrl[lane] += ei[lane].abs() * sij.abs() * ej[lane].abs()
                        }),
                        (false, false) => {
                            let ui = unom[tt * nu + i];
                            (0..L).for_each(|lane| ctrl[lane] += ui * sij * ej[lane])
                        }
                        (false, true) => {
                            let ui = unom[tt * nu + i];
                            (0..L).for_each(|lane| ctrl[lane] += ui * sij * ej[lane].abs())
                        }
                    }
                }
            }
            let (cur, next) = if tt.is_multiple_of(2) { (&xa, &mut xb) } else { (&xb, &mut xa) };
            let (cur, next, u) = (&cur[..nx * L], &mut next[..nx * L], &us[..nu * L]);
            if c.jax {
                d.running_cost_batch_f32(cur, u, tt, &mut run, L);
            }
            d.step_batch_f32(cur, u, tt, next, L);
            if !c.jax {
                d.running_cost_batch_f32(next, u, tt, &mut run, L);
            }
        }
        let fin = if t.is_multiple_of(2) { &xa } else { &xb };
        d.terminal_cost_batch_f32(&fin[..nx * L], &mut run, L);
        let factor = if c.jax { 0.5 } else { c.lambda };
        for lane in 0..L {
            let total = run[lane] + factor * ctrl[lane];
            cost[lane] = if lane >= valid || total.is_nan() { f32::INFINITY } else { total };
        }
    }
}

/// Unnormalised weights `exp(−(c − β)/λ)`, 0 for non-finite costs (and padding).
struct Weights<'a> {
    cost: &'a [f32],
    w: &'a mut [f32],
    beta: f32,
    lambda: f32,
}

impl WithSimd for Weights<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        let finite_beta = self.beta.is_finite();
        for (w, &c) in self.w.iter_mut().zip(self.cost) {
            let e = exp_f32(-(c - self.beta) / self.lambda);
            *w = if finite_beta && c.is_finite() { e } else { 0.0 };
        }
    }
}

/// One block's `Σ_lane ω ε` per (step, control), summed in a fixed lane order (8 partial sums
/// of 4 lanes each, then a tree), and its noise written out sample-major.
struct Update<'a> {
    eps: &'a [f32],
    w: &'a [f32],
    partial: &'a mut [f64],
    noise: &'a mut [f64],
}

impl WithSimd for Update<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, _simd: S) {
        const L: usize = LANES;
        let w: &[f32; L] = self.w.try_into().expect("a block of weights");
        for (r, out) in self.partial.iter_mut().enumerate() {
            let e = &self.eps[r * L..][..L];
            let mut acc = [0.0f32; 8];
            for q in 0..L / 8 {
                for lane in 0..8 {
                    acc[lane] += w[q * 8 + lane] * e[q * 8 + lane];
                }
            }
            *out = (((acc[0] + acc[1]) + (acc[2] + acc[3]))
                + ((acc[4] + acc[5]) + (acc[6] + acc[7]))) as f64;
        }
        transpose_out(self.eps, self.noise);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_dynamics::BasicLinear;

    /// Unnormalised weights `exp(−(c − β)/λ)` within `exp_f32`'s 3·10⁻⁷ relative error;
    /// non-finite costs weigh 0, and so does everything when β itself is not finite.
    #[test]
    fn weights_are_exp_of_the_excess_cost_and_zero_for_non_finite() {
        let cost = [3.0, 1.0, f32::INFINITY, f32::NAN, 2.0, 1.5];
        let mut w = [9.0f32; 6];
        dispatch(Weights { cost: &cost, w: &mut w, beta: 1.0, lambda: 0.5 });
        let want = [(-4.0f64).exp(), 1.0, 0.0, 0.0, (-2.0f64).exp(), (-1.0f64).exp()];
        for (i, (&got, &want)) in w.iter().zip(&want).enumerate() {
            assert!((f64::from(got) - want).abs() <= 1e-6 * want, "w[{i}] = {got}, want {want}");
        }
        let cost = [f32::INFINITY; 4];
        let mut w = [9.0f32; 4];
        dispatch(Weights { cost: &cost, w: &mut w, beta: f32::INFINITY, lambda: 1.0 });
        assert_eq!(w, [0.0; 4]);
    }

    /// A block's update: row `r` of `partial` is `Σ_lane ω_lane ε[r][lane]` (integers, so
    /// exact in any order), and the noise goes out sample-major for the block's real samples
    /// only (`noise[lane·per + r] = ε[r·LANES + lane]`).
    #[test]
    fn update_sums_weighted_noise_per_row_and_transposes_it() {
        let per = 3;
        let eps: Vec<f32> =
            (0..per * LANES).map(|i| (i / LANES * 100 + i % LANES) as f32).collect();
        let mut w = [0.0f32; LANES];
        (w[0], w[5], w[31]) = (1.0, 0.5, 0.25);
        let (mut partial, mut noise) = (vec![0.0; per], vec![0.0; 2 * per]);
        dispatch(Update { eps: &eps, w: &w, partial: &mut partial, noise: &mut noise });
        for (r, &got) in partial.iter().enumerate() {
            let e = |lane: usize| (100 * r + lane) as f64;
            assert_eq!(got, e(0) + 0.5 * e(5) + 0.25 * e(31), "row {r}");
        }
        assert_eq!(noise, [0.0, 100.0, 200.0, 1.0, 101.0, 201.0]);
    }

    /// One block of one step on `x' = x + 0.1 u` (BasicLinear, `|x|² + 0.01 u²`, terminal
    /// `10 |x|²`) from `(1, −0.5)` with a zero plan, each lane's cost by hand. pytorch-mppi:
    /// `u = clamp(z, ±1)`, running cost on `x'`, control cost `U Σ⁻¹ ε = 0`; the null lane
    /// samples `u = 0`. jax-mppi: running cost on `x₀`, plus `0.5 z²` of the raw, unclamped
    /// noise. Lanes past `valid` cost +∞.
    #[test]
    fn a_block_costs_each_lane_as_computed_by_hand() {
        let mut c = Consts {
            l: [0.0; MAX_NU * MAX_NU],
            sinv: [0.0; MAX_NU * MAX_NU],
            mu: [0.0; MAX_NU],
            lo: [-1.0; MAX_NU],
            hi: [1.0; MAX_NU],
            scale: 1.0,
            lambda: 1.0,
            jax: false,
            abs: false,
        };
        (c.l[0], c.sinv[0]) = (1.0, 1.0);
        let z: Vec<f32> = (0..LANES).map(|l| (l as f32 - 1.0) * 0.1).collect();
        let sq = |u: f64| (1.0 + 0.1 * u).powi(2) + (-0.5 + 0.1 * u).powi(2);
        for (jax, null) in [(false, false), (false, true), (true, false)] {
            c.jax = jax;
            let (mut eps, mut cost) = (vec![0.0f32; LANES], vec![0.0f32; LANES]);
            dispatch(Block {
                d: &BasicLinear,
                c: &c,
                x0: &[1.0, -0.5],
                unom: &[0.0],
                t: 1,
                null,
                valid: 21,
                z: &z,
                eps: &mut eps,
                cost: &mut cost,
            });
            for lane in 0..LANES {
                let zl = f64::from(z[lane]);
                let u = if null && lane == 0 { 0.0 } else { zl.clamp(-1.0, 1.0) };
                let want = if lane >= 21 {
                    f64::INFINITY
                } else if jax {
                    1.25 + 0.01 * u * u + 10.0 * sq(u) + 0.5 * zl * zl
                } else {
                    11.0 * sq(u) + 0.01 * u * u
                };
                let got = f64::from(cost[lane]);
                assert!(
                    got == want || (got - want).abs() <= 1e-5 * want,
                    "jax {jax}, null {null}, lane {lane}: {got} vs {want}"
                );
            }
        }
    }
}
