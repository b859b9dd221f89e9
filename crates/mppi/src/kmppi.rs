//! Kernel-interpolation MPPI: noise is sampled on `num_support_pts` control points and
//! interpolated over the horizon with an RBF kernel, which smooths the sampled sequences.
//!
//! Paper: T. Kim et al., "Smooth Model Predictive Path Integral Control without Smoothing"
//! line of work, KMPPI as described in arXiv:2408.10450. Reference implementation:
//! pytorch-mppi 0.9.1 `KMPPI` (kernel `exp(−|t − t'|² / (1e-8 + 2σ²))`, support points at
//! `linspace(0, T−1, S)`, shift by re-interpolating θ at `Tk + 1`, returns `U[0]` of the
//! updated plan — jax-mppi's KMPPI returns `U[1]`, one of the peer defects).
//!
//! With `mppi.convention = JaxMppi` the step follows jax-mppi 0.3.0 `kmppi.command`, except
//! that the returned action is `U[0]` of the optimised plan (its off-by-one is not reproduced):
//!
//! | aspect | `PytorchMppi` (default) | `JaxMppi` |
//! |---|---|---|
//! | shift | before optimising: `U` rolled by 1, θ re-interpolated at `Tk + 1` | after optimising: θ re-interpolated at `Tk + u_per_command`, `U` re-interpolated from it |
//! | bounds | `u_min/u_max` on θ + ε and on the interpolated actions | the same divided by `u_scale` |
//! | null-action sample | zero actions | zero noise on θ |
//! | rollout | actions `· u_scale`, running cost on `x_{t+1}` | actions unscaled, running cost on `x_t`, terminal on `x_T` |
//! | control cost | `λ Σ_t U_tᵀ Σ⁻¹ (a_t − U_t)` over the horizon | `Σ_j εθ_jᵀ Σ⁻¹ εθ_j` over the support points (no λ), or `Σ \|εθ\|` |
//! | returned action | `U[..u_per_command]` | `U[..u_per_command] · u_scale` (before the shift) |

use crate::params::{ConventionKind, MppiParams, cholesky, inverse_spd};
use crate::rollout::{rollout_cost, rollout_cost_jax, weights};
use kestrel_core::FromInvalid;
use kestrel_dynamics::Dynamics;

use rayon::prelude::*;

/// KMPPI knobs on top of [`MppiParams`].
#[derive(Clone, Debug, PartialEq)]
pub struct KmppiParams {
    /// The MPPI params.
    pub mppi: MppiParams,
    /// Control points S (pytorch-mppi's default `T / 2`).
    pub num_support_pts: usize,
    /// RBF kernel width σ.
    pub kernel_sigma: f64,
}

/// Control points θ, the interpolated plan, and the last command's diagnostics.
#[derive(Clone, Debug)]
pub struct KmppiState {
    /// Control points, `S × nu`.
    pub theta: Vec<f64>,
    /// Interpolated nominal sequence, `T × nu`.
    pub u: Vec<f64>,
    /// Total cost of each sample.
    pub costs: Vec<f64>,
    /// Normalised weights.
    pub weights: Vec<f64>,
    normals: Vec<f64>,
    noise_theta: Vec<f64>,
    interp: Option<Interp>,
}

/// Interpolation matrices, which depend only on (horizon, support points, kernel σ): built on
/// the first command and again only when one of those changes.
#[derive(Clone, Debug)]
struct Interp {
    key: (usize, usize, u64, usize),
    /// Support points → the horizon's steps, `T × S`.
    horizon: Vec<f64>,
    /// Support points → themselves `shift` steps later, `S × S`.
    shift: Vec<f64>,
    /// Scratch for the shifted control points.
    theta: Vec<f64>,
}

/// A KMPPI controller over dynamics `D`.
pub struct Kmppi<D: Dynamics> {
    dynamics: D,
}

fn linspace(a: f64, b: f64, n: usize) -> Vec<f64> {
    if n == 1 {
        return vec![a];
    }
    (0..n).map(|i| a + (b - a) * i as f64 / (n - 1) as f64).collect()
}

/// `K(t, tk) K(tk, tk)⁻¹` (rows: `t`, columns: `tk`), by Gaussian elimination with partial
/// pivoting ([`kestrel_core::linalg::solve`]) on the transposed system (the kernel matrix is
/// symmetric); a singular kernel matrix gives NaN rows (costs NaN: such params rank last).
fn interp_matrix(t: &[f64], tk: &[f64], sigma: f64) -> Vec<f64> {
    let k = |a: f64, b: f64| (-(a - b) * (a - b) / (1e-8 + 2.0 * sigma * sigma)).exp();
    let s = tk.len();
    let mut out = vec![0.0; t.len() * s];
    for (r, &ti) in t.iter().enumerate() {
        // Solve Ktktk x = K(ti, tk)ᵀ (Ktktk symmetric, so x is row r of K Ktktk⁻¹).
        let mut a: Vec<f64> = (0..s)
            .flat_map(|i| (0..s).map(move |j| (i, j)))
            .map(|(i, j)| k(tk[i], tk[j]))
            .collect();
        let row = &mut out[r * s..(r + 1) * s];
        row.iter_mut().zip(tk).for_each(|(o, &tj)| *o = k(ti, tj));
        if !kestrel_core::linalg::solve(&mut a, s, row, 1) {
            row.fill(f64::NAN);
        }
    }
    out
}

impl<D: Dynamics> Kmppi<D> {
    /// A controller for `dynamics`.
    pub fn new(dynamics: D) -> Self {
        Kmppi { dynamics }
    }

    /// Checks the MPPI params and the KMPPI extras.
    pub fn validate(&self, p: &KmppiParams) -> Result<(), crate::params::MppiError> {
        crate::mppi::Mppi::new(&self.dynamics).validate(&p.mppi)?;
        if !p.mppi.specific_actions.is_empty() {
            return Err(crate::params::MppiError::invalid(
                "specific_actions",
                format!("{} sequences", p.mppi.specific_actions.len()),
                "none for KMPPI (plain MPPI's sampler only)",
            ));
        }
        if p.mppi.precision != crate::params::PrecisionKind::F64 {
            return Err(crate::params::MppiError::invalid(
                "precision",
                "f32",
                "f64 for KMPPI (the f32 lanes are MPPI's)",
            ));
        }
        if p.num_support_pts == 0
            || p.num_support_pts > p.mppi.horizon
            || !(p.kernel_sigma.is_finite() && p.kernel_sigma > 0.0)
        {
            return Err(crate::params::MppiError::invalid(
                "num_support_pts/kernel_sigma",
                format!("{}/{}", p.num_support_pts, p.kernel_sigma),
                "1 to horizon support points and a finite sigma > 0",
            ));
        }
        Ok(())
    }

    /// Zero control points and plan.
    pub fn init(&self, p: &KmppiParams) -> KmppiState {
        let (k, nu) = (p.mppi.num_samples, self.dynamics.nu());
        KmppiState {
            theta: vec![0.0; p.num_support_pts * nu],
            u: vec![0.0; p.mppi.horizon * nu],
            costs: vec![0.0; k],
            weights: vec![0.0; k],
            normals: Vec::new(),
            noise_theta: Vec::new(),
            interp: None,
        }
    }
}

impl<D: Dynamics> crate::controller::Controller for Kmppi<D> {
    type Params = KmppiParams;
    type State = KmppiState;
    type Dyn = D;

    fn dynamics(&self) -> &D {
        &self.dynamics
    }
    fn validate(&self, p: &KmppiParams) -> Result<(), crate::params::MppiError> {
        Kmppi::validate(self, p)
    }
    fn init(&self, p: &KmppiParams) -> KmppiState {
        Kmppi::init(self, p)
    }
    fn base(p: &KmppiParams) -> &MppiParams {
        &p.mppi
    }
    fn base_mut(p: &mut KmppiParams) -> &mut MppiParams {
        &mut p.mppi
    }
    fn normals_per_sample(&self, p: &KmppiParams) -> usize {
        p.num_support_pts * self.dynamics.nu()
    }
    fn normals_buffer(s: &mut KmppiState) -> &mut Vec<f64> {
        &mut s.normals
    }
    /// One control step with given standard normals `z` (`K × S × nu`), pytorch-mppi's order.
    fn command_with_normals(
        &self,
        p: &KmppiParams,
        s: &mut KmppiState,
        x0: &[f64],
        z: &[f64],
        out: &mut [f64],
        shift: bool,
    ) {
        let d = &self.dynamics;
        let m = &p.mppi;
        let (k, t, nu, sp) = (m.num_samples, m.horizon, d.nu(), p.num_support_pts);
        assert_eq!(z.len(), k * sp * nu, "Kmppi::command: normals length");
        assert_eq!(
            s.u.len(),
            t * nu,
            "Kmppi::command: the state was made for another horizon (call init)"
        );
        let jax = m.convention == ConventionKind::JaxMppi;
        let steps = if jax { m.u_per_command } else { 1 };
        let key = (t, sp, p.kernel_sigma.to_bits(), steps);
        let mut cache = match s.interp.take() {
            Some(c) if c.key == key => c,
            _ => {
                let tk = linspace(0.0, (t - 1) as f64, sp);
                let hs = linspace(0.0, (t - 1) as f64, t);
                let shifted: Vec<f64> = tk.iter().map(|v| v + steps as f64).collect();
                Interp {
                    key,
                    horizon: interp_matrix(&hs, &tk, p.kernel_sigma),
                    shift: interp_matrix(&shifted, &tk, p.kernel_sigma),
                    theta: vec![0.0; sp * nu],
                }
            }
        };
        let kk_h = &cache.horizon;
        let interp = |kk: &[f64], rows: usize, theta: &[f64], dst: &mut [f64]| {
            for r in 0..rows {
                for i in 0..nu {
                    dst[r * nu + i] = (0..sp).map(|j| kk[r * sp + j] * theta[j * nu + i]).sum();
                }
            }
        };
        if shift && !jax {
            s.u.copy_within(nu.., 0);
            s.u[(t - 1) * nu..].copy_from_slice(&m.u_init);
            interp(&cache.shift, sp, &s.theta, &mut cache.theta);
            s.theta.copy_from_slice(&cache.theta);
        }
        let l = cholesky(&m.noise_sigma, nu).expect("validated noise_sigma");
        let sinv = inverse_spd(&l, nu);
        let (theta, u_nom) = (&s.theta, &s.u);
        let (mut noise_theta, mut costs, mut w) = (
            std::mem::take(&mut s.noise_theta),
            std::mem::take(&mut s.costs),
            std::mem::take(&mut s.weights),
        );
        noise_theta.resize(k * sp * nu, 0.0);
        costs.resize(k, 0.0);
        w.resize(k, 0.0);
        noise_theta.par_chunks_mut(sp * nu).zip(costs.par_iter_mut()).enumerate().for_each_init(
            || (vec![0.0; sp * nu], vec![0.0; t * nu]),
            |(pts, acts), (kk, (nt, cost))| {
                if jax {
                    let null = m.sample_null_action && kk == 0;
                    let us = m.u_scale;
                    for j in 0..sp {
                        let zk = &z[(kk * sp + j) * nu..];
                        for i in 0..nu {
                            let noise = if null {
                                0.0
                            } else {
                                m.noise_mu[i] + (0..=i).map(|q| l[i * nu + q] * zk[q]).sum::<f64>()
                            };
                            let v = (theta[j * nu + i] + noise)
                                .max(m.u_min[i] / us)
                                .min(m.u_max[i] / us);
                            pts[j * nu + i] = v;
                            nt[j * nu + i] = v - theta[j * nu + i];
                        }
                    }
                    interp(kk_h, t, pts, acts);
                    for (idx, a) in acts.iter_mut().enumerate() {
                        let i = idx % nu;
                        *a = a.max(m.u_min[i] / us).min(m.u_max[i] / us);
                    }
                    let total = rollout_cost_jax(d, x0, t, |tt, u| {
                        u.copy_from_slice(&acts[tt * nu..(tt + 1) * nu])
                    });
                    let mut ctrl = 0.0;
                    for j in 0..sp {
                        let ej = &nt[j * nu..(j + 1) * nu];
                        if m.noise_abs_cost {
                            ctrl += ej.iter().map(|v| v.abs()).sum::<f64>();
                        } else {
                            for a in 0..nu {
                                for b in 0..nu {
                                    ctrl += ej[a] * sinv[a * nu + b] * ej[b];
                                }
                            }
                        }
                    }
                    let c = total + ctrl;
                    *cost = if c.is_nan() { f64::INFINITY } else { c };
                    return;
                }
                for j in 0..sp {
                    let zk = &z[(kk * sp + j) * nu..];
                    for i in 0..nu {
                        let noise =
                            m.noise_mu[i] + (0..=i).map(|q| l[i * nu + q] * zk[q]).sum::<f64>();
                        let v = (theta[j * nu + i] + noise).max(m.u_min[i]).min(m.u_max[i]);
                        pts[j * nu + i] = v;
                        nt[j * nu + i] = v - theta[j * nu + i];
                    }
                }
                interp(kk_h, t, pts, acts);
                for (idx, a) in acts.iter_mut().enumerate() {
                    let i = idx % nu;
                    if m.sample_null_action && kk == 0 {
                        *a = 0.0;
                    }
                    *a = a.max(m.u_min[i]).min(m.u_max[i]);
                }
                let total = rollout_cost(d, x0, &acts[..], m);
                let mut ctrl = 0.0;
                for tt in 0..t {
                    for i in 0..nu {
                        for j in 0..nu {
                            let e = acts[tt * nu + j] - u_nom[tt * nu + j];
                            let e = if m.noise_abs_cost { e.abs() } else { e };
                            ctrl += u_nom[tt * nu + i] * sinv[i * nu + j] * e;
                        }
                    }
                }
                let c = total + m.lambda * ctrl;
                *cost = if c.is_nan() { f64::INFINITY } else { c };
            },
        );
        weights(&costs, m.lambda, &mut w);
        for kk in 0..k {
            if w[kk] != 0.0 {
                for (th, e) in
                    s.theta.iter_mut().zip(&noise_theta[kk * sp * nu..(kk + 1) * sp * nu])
                {
                    *th += w[kk] * e;
                }
            }
        }
        interp(kk_h, t, &s.theta, &mut s.u);
        out.copy_from_slice(&s.u[..m.u_per_command * nu]);
        if jax {
            out.iter_mut().for_each(|o| *o *= m.u_scale);
            if shift {
                interp(&cache.shift, sp, &s.theta, &mut cache.theta);
                s.theta.copy_from_slice(&cache.theta);
                interp(&cache.horizon, t, &s.theta, &mut s.u);
            }
        }
        (s.costs, s.weights, s.noise_theta) = (costs, w, noise_theta);
        s.interp = Some(cache);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Controller;
    use crate::params::PrecisionKind;
    use kestrel_dynamics::BasicLinear;

    /// `linspace` hits both ends, and the interpolation matrix maps the support points to
    /// themselves (`K K⁻¹ = I`); with one support point `c` it is the kernel ratio
    /// `k(t, c) / k(c, c) = exp(−(t − c)² / (1e-8 + 2σ²))`.
    #[test]
    fn interpolation_reproduces_the_support_points() {
        assert_eq!(linspace(0.0, 9.0, 4), [0.0, 3.0, 6.0, 9.0]);
        assert_eq!(linspace(2.0, 5.0, 1), [2.0]);
        let tk = linspace(0.0, 9.0, 4);
        let m = interp_matrix(&tk, &tk, 1.5);
        for r in 0..4 {
            for c in 0..4 {
                let want = if r == c { 1.0 } else { 0.0 };
                assert!((m[r * 4 + c] - want).abs() < 1e-12, "({r}, {c}): {}", m[r * 4 + c]);
            }
        }
        let m = interp_matrix(&[3.0, 5.0], &[4.0], 1.0);
        let want = (-1.0f64 / (1e-8 + 2.0)).exp();
        assert!((m[0] - want).abs() < 1e-15 && (m[1] - want).abs() < 1e-15, "{m:?}");
    }

    /// `validate` names the field and the value: support points 0 or above the horizon, a
    /// non-positive or NaN σ, and the f32 precision KMPPI does not have.
    #[test]
    fn validate_names_support_points_sigma_and_precision() {
        let c = Kmppi::new(BasicLinear);
        let ok = KmppiParams {
            mppi: MppiParams { horizon: 6, ..MppiParams::new(1, 1.0) },
            num_support_pts: 3,
            kernel_sigma: 1.0,
        };
        c.validate(&ok).unwrap();
        let err = |f: &dyn Fn(&mut KmppiParams)| {
            let mut p = ok.clone();
            f(&mut p);
            c.validate(&p).unwrap_err().to_string()
        };
        let accepted = "1 to horizon support points and a finite sigma > 0";
        assert_eq!(
            err(&|p| p.num_support_pts = 0),
            format!("invalid num_support_pts/kernel_sigma = 0/1: {accepted}")
        );
        assert_eq!(
            err(&|p| p.num_support_pts = 7),
            format!("invalid num_support_pts/kernel_sigma = 7/1: {accepted}")
        );
        assert!(err(&|p| p.kernel_sigma = 0.0).contains("= 3/0:"));
        assert!(err(&|p| p.kernel_sigma = f64::NAN).contains("= 3/NaN:"));
        assert!(
            err(&|p| p.mppi.precision = PrecisionKind::F32).starts_with("invalid precision = f32")
        );
    }

    /// With one sample its weight is 1, so the control points become the clamped sampled
    /// ones: θ = clamp(z) (σ = 1, θ = 0), and the plan passes through them at the support
    /// steps 0, 2, 4 of a 5-step horizon. jax-mppi's convention bounds by `u_min/u_max /
    /// u_scale` and returns the first action times `u_scale`.
    #[test]
    fn one_sample_moves_the_plan_to_its_clamped_control_points() {
        let c = Kmppi::new(BasicLinear);
        let mppi = MppiParams {
            num_samples: 1,
            horizon: 5,
            u_min: vec![-0.8],
            u_max: vec![0.5],
            ..MppiParams::new(1, 1.0)
        };
        let p = KmppiParams { mppi, num_support_pts: 3, kernel_sigma: 1.0 };
        c.validate(&p).unwrap();
        let z = [2.0, -1.0, 0.3];
        let (x0, mut out) = ([1.0, -0.5], [0.0]);
        let mut s = c.init(&p);
        c.command_with_normals(&p, &mut s, &x0, &z, &mut out, false);
        assert_eq!(s.weights, [1.0]);
        let want = [0.5, -0.8, 0.3];
        for (j, w) in want.iter().enumerate() {
            assert!((s.theta[j] - w).abs() < 1e-12, "θ[{j}] = {}", s.theta[j]);
            assert!((s.u[2 * j] - w).abs() < 1e-9, "U[{}] = {}", 2 * j, s.u[2 * j]);
        }
        assert!((out[0] - 0.5).abs() < 1e-9, "{out:?}");

        let mut jp = p.clone();
        jp.mppi.convention = ConventionKind::JaxMppi;
        jp.mppi.u_scale = 2.0;
        let mut s = c.init(&jp);
        c.command_with_normals(&jp, &mut s, &x0, &z, &mut out, false);
        let want = [0.25, -0.4, 0.25];
        for (j, w) in want.iter().enumerate() {
            assert!((s.theta[j] - w).abs() < 1e-12, "jax θ[{j}] = {}", s.theta[j]);
        }
        assert!((out[0] - 0.5).abs() < 1e-9, "U[0] · u_scale: {out:?}");
    }
}
