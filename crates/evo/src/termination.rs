//! pycma's termination criteria, so a strategy left running stops itself as pycma's does.
//!
//! Reference: pycma 4.5.0, `cma/evolution_strategy.py`, `_CMAStopDict._update` (the criteria
//! and their order) and `CMAEvolutionStrategy.tell` (the fitness histories); the defaults are
//! `cma.CMAOptions()`'s. [`StopOptions::pycma`] is pycma's default set, on by default for
//! CMA-ES and Sep-CMA-ES (pycma's own algorithm, and it with `CMA_diagonal`);
//! [`StopOptions::default`] has every criterion off, which is what evosax, the peer of the
//! other strategies, does. Every criterion can be set or turned off by its pycma name.
//!
//! | criterion | met when (after a generation) | pycma default |
//! |---|---|---|
//! | `ftarget` | best fitness so far ≤ ftarget | off |
//! | `maxfevals` | evaluations ≥ maxfevals | off |
//! | `maxiter` | generations ≥ maxiter | `100 + ⌊150 (n+3)² / √λ⌋` |
//! | `tolfacupx` | some σ·√C_ii > σ0 · tolfacupx | 1e3 |
//! | `tolx` | every σ·√C_ii < tolx and every σ·p_c,i < tolx | 1e-11 |
//! | `tolfun` | this generation's and the recent best values' ranges < tolfun | 1e-11 |
//! | `tolfunhist` | the recent best values' range < tolfunhist (10 or more kept) | 1e-12 |
//! | `tolstagnation` | medians of best and median fitness not improving over the history | `⌊100 + 100 n^1.5 / λ⌋` |
//! | `tolupsigma` | σ / max √eig(C) > σ0 · tolupsigma | 1e20 |
//! | `noeffectcoord` | adding 0.2 σ·√C_ii to the mean changes no f32 coordinate | on |
//! | `noeffectaxis` | adding 0.1 σ·√λ_i b_i (axis `g mod n`) changes no f32 coordinate | on |
//! | `tolconditioncov` | condition number of C > tolconditioncov | 1e14 |
//! | `tolflatfitness` | the best equals the 75th-percentile value for more than this many generations | 1 |
//!
//! "Recent best values" are the best fitness of each of the last `⌊10 + 30 n / λ⌋` generations
//! (pycma's `fit.hist`); the stagnation history keeps the best and median of every fifth
//! generation (`fit.histbest`, `fit.histmedian`). Two deliberate differences: the no-effect
//! tests compare in f32, the precision of Kestrel's populations, where pycma compares its f64
//! mean (a step too small to change an f32 coordinate has no effect on any sample); and NaN
//! fitness, which pycma never sees, is left out of the ranges. pycma's `tolx` compares
//! `σ·p_c` without an absolute value, so negative path entries always pass; Kestrel does the
//! same, to stop where pycma stops. Not reproduced: `tolfunrel` (off in pycma),
//! `tolxstagnation`, `timeout`, `callback`.

use crate::error::EvoError;
use crate::strategy::{Scales, TellMetrics, to_row};
use kestrel_core::FromInvalid;
use std::collections::VecDeque;

/// pycma's stop options by their pycma names; `None` is off.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StopOptions {
    /// Best fitness at or below.
    pub ftarget: Option<f64>,
    /// Evaluations.
    pub maxfevals: Option<u64>,
    /// Generations.
    pub maxiter: Option<u64>,
    /// Step-size increase over σ0 (divergence).
    pub tolfacupx: Option<f64>,
    /// Every coordinate's step below.
    pub tolx: Option<f64>,
    /// Fitness range of this generation and the recent ones below.
    pub tolfun: Option<f64>,
    /// Fitness range of the recent generations below.
    pub tolfunhist: Option<f64>,
    /// Generations without improvement of the medians.
    pub tolstagnation: Option<u64>,
    /// σ grown past σ0 times this relative to the largest axis ("creeping").
    pub tolupsigma: Option<f64>,
    /// A step of 0.2 σ√C_ii changes no coordinate.
    pub noeffectcoord: bool,
    /// A step of 0.1 σ along a principal axis changes nothing.
    pub noeffectaxis: bool,
    /// Condition number of the covariance above.
    pub tolconditioncov: Option<f64>,
    /// Generations of flat fitness tolerated.
    pub tolflatfitness: Option<u64>,
}

/// Every option name, in pycma's order of checking.
pub const OPTION_NAMES: [&str; 13] = [
    "ftarget",
    "maxfevals",
    "maxiter",
    "tolfacupx",
    "tolx",
    "tolfun",
    "tolfunhist",
    "tolstagnation",
    "tolupsigma",
    "noeffectcoord",
    "noeffectaxis",
    "tolconditioncov",
    "tolflatfitness",
];

impl StopOptions {
    /// pycma's defaults for `num_dims` and `pop_size` (`cma.CMAOptions()`).
    pub fn pycma(num_dims: usize, pop_size: usize) -> Self {
        let (n, lam) = (num_dims as f64, pop_size as f64);
        StopOptions {
            ftarget: None,
            maxfevals: None,
            maxiter: Some(100 + (150.0 * (n + 3.0).powi(2) / lam.sqrt()).floor() as u64),
            tolfacupx: Some(1e3),
            tolx: Some(1e-11),
            tolfun: Some(1e-11),
            tolfunhist: Some(1e-12),
            tolstagnation: Some((100.0 + 100.0 * n.powf(1.5) / lam).floor() as u64),
            tolupsigma: Some(1e20),
            noeffectcoord: true,
            noeffectaxis: true,
            tolconditioncov: Some(1e14),
            tolflatfitness: Some(1),
        }
    }

    /// Sets option `name` from a number; `None` turns it off (for the two no-effect tests,
    /// any number but 0 turns them on). An unknown name or a bad value is an error naming it.
    pub fn set(&mut self, name: &str, value: Option<f64>) -> Result<(), EvoError> {
        let field = format!("options.{name}");
        let pos = |v: f64| -> Result<f64, EvoError> {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(EvoError::invalid(field.clone(), v, "finite and > 0 (or None: off)"))
            }
        };
        let count = |v: f64| -> Result<u64, EvoError> {
            if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 2f64.powi(53) {
                Ok(v as u64)
            } else {
                Err(EvoError::invalid(field.clone(), v, "a whole number >= 0 (or None: off)"))
            }
        };
        match name {
            "ftarget" => {
                if value.is_some_and(f64::is_nan) {
                    return Err(EvoError::invalid(field, "NaN", "a number (or None: off)"));
                }
                self.ftarget = value
            }
            "maxfevals" => self.maxfevals = value.map(count).transpose()?,
            "maxiter" => self.maxiter = value.map(count).transpose()?,
            "tolfacupx" => self.tolfacupx = value.map(pos).transpose()?,
            "tolx" => self.tolx = value.map(pos).transpose()?,
            "tolfun" => self.tolfun = value.map(pos).transpose()?,
            "tolfunhist" => self.tolfunhist = value.map(pos).transpose()?,
            "tolstagnation" => self.tolstagnation = value.map(count).transpose()?,
            "tolupsigma" => self.tolupsigma = value.map(pos).transpose()?,
            "tolconditioncov" => self.tolconditioncov = value.map(pos).transpose()?,
            "tolflatfitness" => self.tolflatfitness = value.map(count).transpose()?,
            "noeffectcoord" => self.noeffectcoord = value.is_some_and(|v| v != 0.0),
            "noeffectaxis" => self.noeffectaxis = value.is_some_and(|v| v != 0.0),
            _ => {
                return Err(EvoError::invalid(
                    "options",
                    format!("{name:?}"),
                    format!("a stop option: one of {}", OPTION_NAMES.join(", ")),
                ));
            }
        }
        Ok(())
    }

    /// Option `name`'s setting as pycma's `stop()` reports it (`None` when off).
    pub fn get(&self, name: &str) -> Option<f64> {
        let flag = |b: bool| b.then_some(1.0);
        match name {
            "ftarget" => self.ftarget,
            "maxfevals" => self.maxfevals.map(|v| v as f64),
            "maxiter" => self.maxiter.map(|v| v as f64),
            "tolfacupx" => self.tolfacupx,
            "tolx" => self.tolx,
            "tolfun" => self.tolfun,
            "tolfunhist" => self.tolfunhist,
            "tolstagnation" => self.tolstagnation.map(|v| v as f64),
            "tolupsigma" => self.tolupsigma,
            "noeffectcoord" => flag(self.noeffectcoord),
            "noeffectaxis" => flag(self.noeffectaxis),
            "tolconditioncov" => self.tolconditioncov,
            "tolflatfitness" => self.tolflatfitness.map(|v| v as f64),
            _ => None,
        }
    }
}

/// The histories and verdict of the stop criteria over one run (pycma's `fit` bookkeeping and
/// `_CMAStopDict`). [`Termination::update`] after every `tell`; [`Termination::met`] lists the
/// criteria met by the last generation, empty while the run should go on.
#[derive(Clone, Debug)]
pub struct Termination {
    /// The options in force.
    pub options: StopOptions,
    sigma0: f64,
    hist_len: usize,
    hist: VecDeque<f32>,
    hist_best: VecDeque<f32>,
    hist_median: VecDeque<f32>,
    flat: u64,
    evals: u64,
    evals_best: u64,
    best: f32,
    sorted: Vec<f32>,
    scratch: Vec<f32>,
    met: Vec<&'static str>,
}

impl Termination {
    /// Fresh histories for a run of `num_dims` and `pop_size` that starts at step size
    /// `sigma0`.
    pub fn new(options: StopOptions, num_dims: usize, pop_size: usize, sigma0: f64) -> Self {
        let hist_len = (10.0 + 30.0 * num_dims as f64 / pop_size as f64).floor() as usize;
        Termination {
            options,
            sigma0,
            hist_len,
            hist: VecDeque::with_capacity(hist_len + 1),
            hist_best: VecDeque::new(),
            hist_median: VecDeque::new(),
            flat: 0,
            evals: 0,
            evals_best: 0,
            best: f32::INFINITY,
            sorted: Vec::with_capacity(pop_size),
            scratch: Vec::new(),
            met: Vec::new(),
        }
    }

    /// The criteria met by the last generation, in pycma's order (empty: go on).
    pub fn met(&self) -> &[&'static str] {
        &self.met
    }

    /// Evaluations counted so far.
    pub fn evals(&self) -> u64 {
        self.evals
    }

    /// Evaluations counted when the best so far was found.
    pub fn evals_best(&self) -> u64 {
        self.evals_best
    }

    /// Records a generation (`fitness` as told, `metrics` as `tell` returned them, `scales`
    /// of the state after the tell) and decides which criteria it meets.
    pub fn update(&mut self, metrics: &TellMetrics, fitness: &[f32], scales: &Scales) {
        let o = self.options;
        self.evals += fitness.len() as u64;
        if metrics.best_so_far < self.best {
            self.best = metrics.best_so_far;
            self.evals_best = self.evals;
        }
        let g = metrics.generation;
        self.sorted.clear();
        self.sorted.extend(fitness.iter().copied().filter(|f| !f.is_nan()));
        self.sorted.sort_by(f32::total_cmp);
        let fit = &self.sorted;
        self.met.clear();
        let Some(&first) = fit.first() else {
            // Every value NaN: nothing to compare; only the budgets can stop the run.
            self.budgets(g);
            return;
        };
        let last = fit[fit.len() - 1];
        let gen_median = median_of_sorted(fit) as f32;
        self.hist.push_front(first);
        if self.hist.len() > self.hist_len {
            self.hist.pop_back();
        }
        if g.is_multiple_of(5) {
            self.hist_best.push_front(first);
            self.hist_median.push_front(gen_median);
            if self.hist_best.len() > 20_000 {
                self.hist_best.pop_back();
                self.hist_median.pop_back();
            }
        }
        if fit[0] < fit[(0.75 * fit.len() as f64) as usize] {
            self.flat = 0;
        } else {
            self.flat += 1;
        }
        let mut met = std::mem::take(&mut self.met);
        let mut stop = |name: &'static str, cond: bool| {
            if cond {
                met.push(name)
            }
        };
        stop("ftarget", o.ftarget.is_some_and(|t| (metrics.best_so_far as f64) <= t));
        stop("maxfevals", o.maxfevals.is_some_and(|m| self.evals >= m));
        stop("maxiter", o.maxiter.is_some_and(|m| g >= m));
        let s = scales.sigma;
        let step = |c: f64| s * c;
        stop(
            "tolfacupx",
            o.tolfacupx.is_some_and(|t| scales.coord.iter().any(|&c| step(c) > self.sigma0 * t)),
        );
        stop(
            "tolx",
            o.tolx.is_some_and(|t| {
                scales.coord.iter().all(|&c| step(c) < t) && scales.path.iter().all(|&p| s * p < t)
            }),
        );
        let range = |h: &VecDeque<f32>| {
            let (lo, hi) = h
                .iter()
                .filter(|v| !v.is_nan())
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| (a.min(v), b.max(v)));
            hi as f64 - lo as f64
        };
        let hist_range = range(&self.hist);
        let current = last as f64 - first as f64;
        stop("tolfun", o.tolfun.is_some_and(|t| current < t && hist_range < t));
        stop("tolfunhist", o.tolfunhist.is_some_and(|t| self.hist.len() > 9 && hist_range < t));
        if let Some(ts) = o.tolstagnation.filter(|&t| t > 0) {
            let n = scales.mean.len() as f64;
            let lam = fitness.len() as f64;
            let l = (ts as f64 / 10.0).max(self.hist_best.len() as f64 / 10.0);
            if l <= g as f64 {
                let l = l as usize;
                let long = self.hist_best.len() > 100 && 2 * l < self.hist_best.len();
                let stalled = g as f64 > n * (5.0 + 100.0 / lam)
                    && (self.evals - self.evals_best) as f64 / lam > ts as f64 / 2.0
                    && long
                    && {
                        // The newer half's medians no better than the older half's.
                        let s = &mut self.scratch;
                        median(&self.hist_median, 0..l, s) >= median(&self.hist_median, l..2 * l, s)
                            && median(&self.hist_best, 0..l, s)
                                >= median(&self.hist_best, l..2 * l, s)
                    };
                stop("tolstagnation", stalled);
            }
        }
        let (dmin, dmax) = scales.root_eig;
        stop("tolupsigma", o.tolupsigma.is_some_and(|t| s / dmax > self.sigma0 * t));
        let moves = |m: f64, d: f64| to_row(m) != to_row(m + d);
        stop(
            "noeffectcoord",
            o.noeffectcoord
                && scales.mean.iter().zip(&scales.coord).any(|(&m, &c)| !moves(m, 0.2 * s * c)),
        );
        stop(
            "noeffectaxis",
            o.noeffectaxis
                && !scales.axis.is_empty()
                && scales.mean.iter().zip(&scales.axis).all(|(&m, &a)| !moves(m, 0.1 * s * a)),
        );
        stop("tolconditioncov", o.tolconditioncov.is_some_and(|t| dmax > t.sqrt() * dmin));
        stop("tolflatfitness", o.tolflatfitness.is_some_and(|t| self.flat > t));
        self.met = met;
    }

    /// The histories as named arrays (what a pickle keeps, so a restored run stops where the
    /// uninterrupted one does).
    pub fn state_dict(&self) -> crate::strategy::StateDict {
        let f = |h: &VecDeque<f32>| h.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        vec![
            ("hist".into(), f(&self.hist)),
            ("hist_best".into(), f(&self.hist_best)),
            ("hist_median".into(), f(&self.hist_median)),
            ("flat".into(), vec![self.flat as f64]),
            ("evals".into(), vec![self.evals as f64]),
            ("evals_best".into(), vec![self.evals_best as f64]),
            ("best".into(), vec![self.best as f64]),
        ]
    }

    /// Restores [`Termination::state_dict`]; a missing or malformed entry is an error that
    /// changes nothing.
    pub fn load_state_dict(&mut self, dict: &[(String, Vec<f64>)]) -> Result<(), EvoError> {
        let get = |name: &str| {
            dict.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice()).ok_or_else(|| {
                EvoError::invalid(format!("termination.{name}"), "missing", "present")
            })
        };
        let one = |name: &str| -> Result<f64, EvoError> {
            match get(name)? {
                [v] if v.is_finite() || name == "best" => Ok(*v),
                v => Err(EvoError::invalid(
                    format!("termination.{name}"),
                    format!("{} values", v.len()),
                    "one finite value",
                )),
            }
        };
        let (h, hb, hm) = (get("hist")?, get("hist_best")?, get("hist_median")?);
        if hb.len() != hm.len() || h.len() > self.hist_len {
            return Err(EvoError::invalid(
                "termination.hist",
                format!("{}, {} and {} values", h.len(), hb.len(), hm.len()),
                format!(
                    "at most {} recent values and equally long stagnation histories",
                    self.hist_len
                ),
            ));
        }
        let (flat, evals, evals_best, best) =
            (one("flat")?, one("evals")?, one("evals_best")?, one("best")?);
        let q = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<VecDeque<f32>>();
        (self.hist, self.hist_best, self.hist_median) = (q(h), q(hb), q(hm));
        (self.flat, self.evals, self.evals_best) = (flat as u64, evals as u64, evals_best as u64);
        self.best = best as f32;
        self.met.clear();
        Ok(())
    }

    fn budgets(&mut self, g: u64) {
        let o = &self.options;
        if o.maxfevals.is_some_and(|m| self.evals >= m) {
            self.met.push("maxfevals");
        }
        if o.maxiter.is_some_and(|m| g >= m) {
            self.met.push("maxiter");
        }
    }
}

/// The median of sorted values (the mean of the middle two for an even count).
fn median_of_sorted(v: &[f32]) -> f64 {
    let k = v.len() / 2;
    if v.len() % 2 == 1 { v[k] as f64 } else { 0.5 * (v[k - 1] as f64 + v[k] as f64) }
}

/// The median of `h[range]`, sorted in `scratch` (pycma's `np.median` of a history slice).
fn median(h: &VecDeque<f32>, range: std::ops::Range<usize>, scratch: &mut Vec<f32>) -> f64 {
    scratch.clear();
    scratch.extend(h.range(range));
    scratch.sort_by(f32::total_cmp);
    median_of_sorted(scratch)
}

/// [`Scales`] of an isotropic distribution of step size `sigma` around `mean`.
pub fn isotropic(sigma: f64, mean: &[f32], out: &mut Scales) {
    out.sigma = sigma;
    out.mean.clear();
    out.mean.extend(mean.iter().map(|&m| m as f64));
    out.coord.clear();
    out.coord.resize(mean.len(), 1.0);
    out.path.clear();
    out.axis.clear();
    out.root_eig = (1.0, 1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(g: u64, best: f32) -> TellMetrics {
        TellMetrics {
            generation: g,
            best_in_generation: best,
            best_so_far: best,
            nonfinite: 0,
            sigma: 1.0,
        }
    }

    #[test]
    fn pycma_defaults_for_10_dimensions_and_10_samples() {
        let o = StopOptions::pycma(10, 10);
        // cma.CMAOptions().eval("maxiter", {"N": 10, "popsize": 10}) == 100 + 150*169//10**0.5
        assert_eq!(o.maxiter, Some(100 + 8016));
        assert_eq!(o.tolstagnation, Some(416));
        assert_eq!((o.tolx, o.tolfun, o.tolfunhist), (Some(1e-11), Some(1e-11), Some(1e-12)));
    }

    #[test]
    fn flat_fitness_and_a_stalled_history_stop_the_run() {
        let mut t = Termination::new(StopOptions::pycma(2, 6), 2, 6, 1.0);
        let mut sc = Scales::default();
        isotropic(1.0, &[0.0, 0.0], &mut sc);
        t.update(&metrics(1, 1.0), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &sc);
        assert!(t.met().is_empty(), "{:?}", t.met());
        for g in 2..40 {
            t.update(&metrics(g, 1.0), &[1.0; 6], &sc);
        }
        assert!(
            t.met().contains(&"tolfun") && t.met().contains(&"tolflatfitness"),
            "{:?}",
            t.met()
        );
        // A step too small to change an f32 coordinate of the mean has no effect.
        isotropic(1e-12, &[1.0, 1.0], &mut sc);
        t.update(&metrics(41, 1.0), &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &sc);
        assert!(t.met().contains(&"noeffectcoord") && t.met().contains(&"tolx"), "{:?}", t.met());
    }

    #[test]
    fn options_are_set_by_pycma_name_and_bad_ones_refused() {
        let mut o = StopOptions::default();
        o.set("tolfun", Some(1e-3)).unwrap();
        o.set("maxiter", Some(50.0)).unwrap();
        assert_eq!((o.tolfun, o.maxiter), (Some(1e-3), Some(50)));
        o.set("tolfun", None).unwrap();
        assert_eq!(o.tolfun, None);
        let e = o.set("tolfnu", Some(1.0)).unwrap_err().to_string();
        assert!(e.contains("tolfnu") && e.contains("tolfun"), "{e}");
        let e = o.set("maxiter", Some(-1.0)).unwrap_err().to_string();
        assert!(e.contains("options.maxiter") && e.contains("-1"), "{e}");
        assert!(o.set("tolx", Some(f64::NAN)).is_err());
    }
}
