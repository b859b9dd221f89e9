//! Population-parallel MPPI autotuning.
//!
//! A [`TuneSpec`] names the tuned knobs (λ, per-dimension noise σ and μ, horizon), their
//! bounds and transforms; [`TuneSpec::to_params`] is the one pure function from a flat vector
//! to controller params — no shared mutable holder, so candidates evaluate in parallel (the
//! reason jax-mppi's tuner could not batch, see `shared/reference/mppi-es-qd.md` §3.5, §8c).
//! [`TuneProblem`] evaluates every candidate × episode as one parallel batch, with the same
//! random numbers for every candidate (common random numbers), so fitness depends only on
//! the params. Any `kestrel_evo` strategy drives it through the evo crate's one
//! [`kestrel_evo::Driver`] (the `mppi-tune` run kind in `kestrel-run` does); any [`Controller`]
//! (MPPI, SMPPI, KMPPI) can be tuned.

use crate::controller::Controller;
use crate::params::{MppiError, MppiParams};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_dynamics::Dynamics;
use kestrel_evo::Problem;
use rayon::prelude::*;

/// Which knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    /// Temperature λ.
    Lambda,
    /// Noise standard deviation of control dimension `d` (diagonal of Σ is σ²; off-diagonal
    /// entries of the base Σ are kept).
    Sigma(usize),
    /// Noise mean of control dimension `d`.
    Mu(usize),
    /// Horizon (rounded; the nominal sequence is padded with `u_init` or truncated).
    Horizon,
}

/// How a search coordinate maps to the knob's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KnobTransform {
    /// value = x.
    Linear,
    /// value = exp(x) (search in log space; for positive knobs).
    Log,
}

/// One tuned knob: bounds on its value and the transform.
#[derive(Clone, Debug, PartialEq)]
pub struct Tuned {
    /// The knob.
    pub knob: Knob,
    /// Smallest value.
    pub lower: f64,
    /// Largest value.
    pub upper: f64,
    /// Search-space transform.
    pub transform: KnobTransform,
}

impl Tuned {
    /// The search coordinate of knob value `v` (`ln v` for log knobs).
    pub fn to_search(&self, v: f64) -> f32 {
        (if self.transform == KnobTransform::Log { v.ln() } else { v }) as f32
    }

    /// The knob value search coordinate `x` sets: transformed back, clipped to
    /// `[lower, upper]` (NaN: `lower`), rounded for the horizon.
    pub fn value(&self, x: f32) -> f64 {
        let raw = if self.transform == KnobTransform::Log { (x as f64).exp() } else { x as f64 };
        let v = if raw.is_nan() { self.lower } else { raw.clamp(self.lower, self.upper) };
        if self.knob == Knob::Horizon { v.round().max(1.0) } else { v }
    }
}

/// The tuned knobs, in search-vector order.
#[derive(Clone, Debug, PartialEq)]
pub struct TuneSpec {
    /// One entry per search coordinate.
    pub knobs: Vec<Tuned>,
}

impl TuneSpec {
    /// Checks bounds and control dimensions against `nu`.
    pub fn validate(&self, nu: usize) -> Result<(), MppiError> {
        let bad = |v: String, a: &'static str| Err(MppiError::invalid("tune spec", v, a));
        if self.knobs.is_empty() {
            return bad("no knobs".into(), "at least one tuned knob");
        }
        for t in &self.knobs {
            if !(t.lower.is_finite() && t.upper.is_finite() && t.lower <= t.upper) {
                return bad(
                    format!("{:?} bounds [{}, {}]", t.knob, t.lower, t.upper),
                    "finite lower <= upper",
                );
            }
            if let Knob::Sigma(d) | Knob::Mu(d) = t.knob
                && d >= nu
            {
                return bad(format!("{:?}", t.knob), "a control dimension below nu");
            }
            let positive = matches!(t.knob, Knob::Lambda | Knob::Sigma(_) | Knob::Horizon);
            if t.lower <= 0.0 && (positive || t.transform == KnobTransform::Log) {
                return bad(
                    format!("{:?} lower {}", t.knob, t.lower),
                    "> 0 for lambda, sigma, horizon and log transforms",
                );
            }
        }
        Ok(())
    }

    /// Search dimensions.
    pub fn num_dims(&self) -> usize {
        self.knobs.len()
    }

    /// The search vector of the knobs' values in `p` (the start of a search).
    pub fn from_params(&self, p: &MppiParams, nu: usize) -> Vec<f32> {
        self.knobs
            .iter()
            .map(|t| {
                let v = match t.knob {
                    Knob::Lambda => p.lambda,
                    Knob::Sigma(d) => p.noise_sigma[d * nu + d].sqrt(),
                    Knob::Mu(d) => p.noise_mu[d],
                    Knob::Horizon => p.horizon as f64,
                }
                .clamp(t.lower, t.upper);
                t.to_search(v)
            })
            .collect()
    }

    /// Params for search vector `x`: `base` with each knob set (transformed, clipped).
    pub fn to_params(&self, base: &MppiParams, nu: usize, x: &[f32]) -> MppiParams {
        let mut p = base.clone();
        for (t, &xi) in self.knobs.iter().zip(x) {
            let v = t.value(xi);
            match t.knob {
                Knob::Lambda => p.lambda = v,
                Knob::Sigma(d) => p.noise_sigma[d * nu + d] = v * v,
                Knob::Mu(d) => p.noise_mu[d] = v,
                Knob::Horizon => {
                    p.horizon = v as usize;
                    p.u_per_command = p.u_per_command.min(p.horizon);
                }
            }
        }
        p
    }
}

/// Checks a tuner's episodes: at least one start, each of `nx` values, and at least one step.
pub(crate) fn check_episodes(
    starts: &[Vec<f64>],
    nx: usize,
    steps: usize,
) -> Result<(), MppiError> {
    if starts.is_empty() || starts.iter().any(|s| s.len() != nx) || steps == 0 {
        return Err(MppiError::invalid(
            "episodes",
            format!("{} starts, {steps} steps", starts.len()),
            "at least one start of nx values and one step",
        ));
    }
    Ok(())
}

/// Closed-loop evaluation of candidate params: each episode starts at one of `starts`, runs
/// `steps` commands of the controller on the true system (its dynamics serve as model and
/// plant, [`crate::controller::episode`]), and scores the summed running cost; fitness is the mean over
/// episodes (minimised). Episode `e` uses the key `key.fold_in(e)` for every candidate
/// (common random numbers), so fitness depends only on the params. Params that fail
/// validation (a tuned horizon below KMPPI's support points, say) cost `+inf`.
pub struct TuneProblem<C: Controller> {
    controller: C,
    spec: TuneSpec,
    base: C::Params,
    starts: Vec<Vec<f64>>,
    steps: usize,
}

impl<C: Controller> TuneProblem<C> {
    /// Validates the spec, the base params and the start states.
    pub fn new(
        controller: C,
        spec: TuneSpec,
        base: C::Params,
        starts: Vec<Vec<f64>>,
        steps: usize,
    ) -> Result<Self, MppiError> {
        let (nx, nu) = (controller.dynamics().nx(), controller.dynamics().nu());
        spec.validate(nu)?;
        controller.validate(&base)?;
        check_episodes(&starts, nx, steps)?;
        Ok(TuneProblem { controller, spec, base, starts, steps })
    }

    /// The start states of every candidate's episodes.
    pub fn starts(&self) -> &[Vec<f64>] {
        &self.starts
    }

    /// Commands per episode.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// The spec.
    pub fn spec(&self) -> &TuneSpec {
        &self.spec
    }

    /// The params candidates start from.
    pub fn base_params(&self) -> C::Params {
        self.base.clone()
    }

    /// The controller.
    pub fn controller(&self) -> &C {
        &self.controller
    }

    /// Control size of the dynamics.
    pub fn nu(&self) -> usize {
        self.controller.dynamics().nu()
    }

    /// The search vector of the base params (where a search starts).
    pub fn start_vector(&self) -> Vec<f32> {
        self.spec.from_params(C::base(&self.base), self.nu())
    }

    /// The params a search vector stands for.
    pub fn params_of(&self, x: &[f32]) -> C::Params {
        let mut p = self.base.clone();
        *C::base_mut(&mut p) = self.spec.to_params(C::base(&self.base), self.nu(), x);
        p
    }

    /// Mean closed-loop cost of params `p` (episodes in parallel).
    pub fn episode_cost(&self, key: Key, p: &C::Params) -> f64 {
        if self.controller.validate(p).is_err() {
            return f64::INFINITY;
        }
        let costs: Vec<f64> = (0..self.starts.len())
            .into_par_iter()
            .map(|e| {
                let key_e = key.fold_in(e as u64);
                crate::controller::episode(
                    &self.controller,
                    p,
                    &self.starts[e],
                    self.steps,
                    key_e,
                    false,
                    |_, _| true,
                )
                .total_cost
            })
            .collect();
        costs.iter().sum::<f64>() / self.starts.len() as f64
    }
}

impl<C: Controller> Problem for TuneProblem<C> {
    fn num_dims(&self) -> usize {
        self.spec.num_dims()
    }

    /// Common random numbers: every candidate sees the same episodes, whatever its row.
    fn evaluate_rows(&self, key: Key, _first_row: u64, population: &[f32], fitness: &mut [f32]) {
        let n = self.spec.num_dims();
        population.par_chunks(n).zip(fitness.par_iter_mut()).for_each(|(x, f)| {
            *f = self.episode_cost(key, &self.params_of(x)) as f32;
        });
    }
}

/// A kind of tunable knob, as a config names it: `sigma` and `mu` stand for every control
/// dimension's, each becoming one [`Knob`] per dimension ([`TuneSpec::from_names`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KnobKind {
    /// λ, log-scale in `[1e-3, 1e3]`.
    Lambda,
    /// Noise σ per control dimension, log-scale in `[1e-3, 1e2]`.
    Sigma,
    /// Noise μ per control dimension, linear in `[−5, 5]`.
    Mu,
    /// Horizon, linear in `[2, 3 T]`.
    Horizon,
}

impl TuneSpec {
    /// The spec of `names` for a system with `nu` controls and base params `base`.
    pub fn from_names(names: &[KnobKind], nu: usize, base: &MppiParams) -> Result<Self, MppiError> {
        if let Some((i, n)) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)) {
            return Err(MppiError::invalid(
                "knobs",
                format!(
                    "{n:?} twice (entries {} and {i})",
                    names.iter().position(|m| m == n).unwrap_or(0)
                ),
                "each knob at most once",
            ));
        }
        let mut knobs = Vec::new();
        let t = |knob, lower, upper, transform| Tuned { knob, lower, upper, transform };
        for n in names {
            match n {
                KnobKind::Lambda => knobs.push(t(Knob::Lambda, 1e-3, 1e3, KnobTransform::Log)),
                KnobKind::Sigma => (0..nu)
                    .for_each(|d| knobs.push(t(Knob::Sigma(d), 1e-3, 1e2, KnobTransform::Log))),
                KnobKind::Mu => (0..nu)
                    .for_each(|d| knobs.push(t(Knob::Mu(d), -5.0, 5.0, KnobTransform::Linear))),
                KnobKind::Horizon => knobs.push(t(
                    Knob::Horizon,
                    2.0,
                    (3 * base.horizon).max(2) as f64,
                    KnobTransform::Linear,
                )),
            }
        }
        let spec = TuneSpec { knobs };
        spec.validate(nu)?;
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Knob names map to the search vector in order, `sigma` and `mu` once per control, and the
    /// vector round-trips through the params (inside the bounds; log knobs in log space).
    #[test]
    fn knob_names_expand_per_control_and_round_trip_through_params() {
        let base = crate::presets::SystemKind::Nav2d.default_params();
        let names = [KnobKind::Lambda, KnobKind::Sigma, KnobKind::Mu, KnobKind::Horizon];
        let spec = TuneSpec::from_names(&names, 2, &base).unwrap();
        let knobs: Vec<Knob> = spec.knobs.iter().map(|t| t.knob).collect();
        assert_eq!(
            knobs,
            [Knob::Lambda, Knob::Sigma(0), Knob::Sigma(1), Knob::Mu(0), Knob::Mu(1), Knob::Horizon]
        );
        assert_eq!(spec.num_dims(), 6);
        let x = [0.5f32.ln(), 2.0f32.ln(), 0.25f32.ln(), -1.0, 1.5, 7.0];
        let p = spec.to_params(&base, 2, &x);
        assert!((p.lambda - 0.5).abs() < 1e-6 && (p.noise_sigma[0] - 4.0).abs() < 1e-5);
        assert!((p.noise_sigma[3] - 0.0625).abs() < 1e-6 && p.noise_mu == [-1.0, 1.5]);
        assert_eq!(p.horizon, 7);
        let back = spec.from_params(&p, 2);
        for (a, b) in back.iter().zip(x) {
            assert!((a - b).abs() < 1e-5, "{back:?} vs {x:?}");
        }
        // Out of bounds and NaN clip to the bounds, never pass through.
        let p = spec.to_params(&base, 2, &[f32::NAN, 50.0, -50.0, 9.0, -9.0, 1e6]);
        assert_eq!(p.lambda, 1e-3);
        assert!((p.noise_sigma[0] - 1e4).abs() < 1e-6 && (p.noise_sigma[3] - 1e-6).abs() < 1e-12);
        assert_eq!((p.noise_mu[0], p.noise_mu[1], p.horizon), (5.0, -5.0, 3 * base.horizon));
    }

    /// A knob named twice, an empty list and an odd population for an antithetic strategy are
    /// refused by name, never silently deduplicated or rounded.
    #[test]
    fn repeated_knobs_and_odd_antithetic_populations_are_refused() {
        let base = crate::presets::SystemKind::Nav2d.default_params();
        let e =
            TuneSpec::from_names(&[KnobKind::Lambda, KnobKind::Sigma, KnobKind::Lambda], 2, &base)
                .unwrap_err()
                .to_string();
        assert!(e.contains("knobs") && e.contains("Lambda twice (entries 0 and 2)"), "{e}");
        assert!(TuneSpec::from_names(&[], 2, &base).is_err());
    }
}
