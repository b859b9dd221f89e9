//! Population-parallel MPPI autotuning.
//!
//! A [`TuneSpec`] names the tuned knobs (λ, per-dimension noise σ and μ, horizon), their
//! bounds and transforms; [`TuneSpec::to_params`] is the one pure function from a flat vector
//! to controller params — no shared mutable holder, so candidates evaluate in parallel (the
//! reason jax-mppi's tuner could not batch, see `shared/reference/mppi-es-qd.md` §3.5, §8c).
//! [`TuneProblem`] evaluates every candidate × episode as one parallel batch, with the same
//! random numbers for every candidate (common random numbers), so fitness depends only on
//! the params. Any `kestrel_evo::Strategy` drives it through [`tune`].

use crate::mppi::{Convention, Dynamics, Mppi, MppiError, MppiParams};
use kestrel_core::Key;
use kestrel_evo::{Problem, Strategy, TellMetrics};
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
pub enum Transform {
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
    pub transform: Transform,
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
            if t.lower <= 0.0 && (positive || t.transform == Transform::Log) {
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
                (if t.transform == Transform::Log { v.ln() } else { v }) as f32
            })
            .collect()
    }

    /// Params for search vector `x`: `base` with each knob set (transformed, clipped).
    pub fn to_params(&self, base: &MppiParams, nu: usize, x: &[f32]) -> MppiParams {
        let mut p = base.clone();
        for (t, &xi) in self.knobs.iter().zip(x) {
            let raw = if t.transform == Transform::Log { (xi as f64).exp() } else { xi as f64 };
            let v = if raw.is_nan() { t.lower } else { raw.clamp(t.lower, t.upper) };
            match t.knob {
                Knob::Lambda => p.lambda = v,
                Knob::Sigma(d) => p.noise_sigma[d * nu + d] = v * v,
                Knob::Mu(d) => p.noise_mu[d] = v,
                Knob::Horizon => {
                    p.horizon = v.round().max(1.0) as usize;
                    p.u_per_command = p.u_per_command.min(p.horizon);
                }
            }
        }
        p
    }
}

/// Closed-loop evaluation of candidate params: each episode starts at one of `starts`, runs
/// `steps` MPPI commands on the true system (`dynamics` serves as model and plant), and
/// scores the summed running cost; fitness is the mean over episodes (minimised).
pub struct TuneProblem<D: Dynamics> {
    mppi: Mppi<D>,
    spec: TuneSpec,
    base: MppiParams,
    starts: Vec<Vec<f64>>,
    steps: usize,
}

impl<D: Dynamics> TuneProblem<D> {
    /// Validates the spec, the base params and the start states.
    pub fn new(
        dynamics: D,
        spec: TuneSpec,
        base: MppiParams,
        starts: Vec<Vec<f64>>,
        steps: usize,
    ) -> Result<Self, MppiError> {
        let mppi = Mppi::new(dynamics);
        let (nx, nu) = (mppi.dynamics().nx(), mppi.dynamics().nu());
        spec.validate(nu)?;
        mppi.validate(&base)?;
        if starts.is_empty() || starts.iter().any(|s| s.len() != nx) || steps == 0 {
            return Err(MppiError::invalid(
                "episodes",
                format!("{} starts, {steps} steps", starts.len()),
                "at least one start of nx values and one step",
            ));
        }
        Ok(TuneProblem { mppi, spec, base, starts, steps })
    }

    /// The spec.
    pub fn spec(&self) -> &TuneSpec {
        &self.spec
    }

    /// The params candidates start from.
    pub fn base_params(&self) -> MppiParams {
        self.base.clone()
    }

    /// Control size of the dynamics.
    pub fn nu(&self) -> usize {
        self.mppi.dynamics().nu()
    }

    /// The params a search vector stands for.
    pub fn params_of(&self, x: &[f32]) -> MppiParams {
        self.spec.to_params(&self.base, self.mppi.dynamics().nu(), x)
    }

    /// Mean closed-loop cost of params `p` (episodes in parallel).
    pub fn episode_cost(&self, key: Key, p: &MppiParams) -> f64 {
        let d = self.mppi.dynamics();
        let (nx, nu) = (d.nx(), d.nu());
        let total: f64 = (0..self.starts.len())
            .into_par_iter()
            .map(|e| {
                let mut s = self.mppi.init(p);
                let (mut x, mut next) = (self.starts[e].clone(), vec![0.0; nx]);
                let mut u = vec![0.0; p.u_per_command * nu];
                let mut us = vec![0.0; nu];
                let mut cost = 0.0;
                for t in 0..self.steps {
                    // Common random numbers: the key depends on episode and step, not on the candidate.
                    self.mppi.command(
                        key.fold_in(e as u64).fold_in(t as u64),
                        p,
                        &mut s,
                        &x,
                        &mut u,
                    );
                    // pytorch-mppi's convention returns the unscaled control, jax-mppi's the
                    // scaled one.
                    let scale = if p.convention == Convention::JaxMppi { 1.0 } else { p.u_scale };
                    for (ui, &v) in us.iter_mut().zip(&u[..nu]) {
                        *ui = scale * v;
                    }
                    d.step(&x, &us, t, &mut next);
                    std::mem::swap(&mut x, &mut next);
                    cost += d.running_cost(&x, &us, t);
                }
                if cost.is_nan() { f64::INFINITY } else { cost }
            })
            .collect::<Vec<_>>()
            .iter()
            .sum();
        total / self.starts.len() as f64
    }
}

impl<D: Dynamics> Problem for TuneProblem<D> {
    fn num_dims(&self) -> usize {
        self.spec.num_dims()
    }

    fn evaluate(&self, key: Key, population: &[f32], fitness: &mut [f32]) {
        let n = self.spec.num_dims();
        population.par_chunks(n).zip(fitness.par_iter_mut()).for_each(|(x, f)| {
            *f = self.episode_cost(key, &self.params_of(x)) as f32;
        });
    }
}

/// What a tuning run returns.
#[derive(Clone, Debug)]
pub struct TuneResult {
    /// Best search vector.
    pub best_x: Vec<f32>,
    /// Its mean closed-loop cost.
    pub best_cost: f32,
    /// The params it stands for.
    pub best_params: MppiParams,
    /// One entry per generation.
    pub history: Vec<TellMetrics>,
}

/// Runs `generations` of `strategy` from the base params' knob values. The same `key`
/// (hence the same episodes' noise) scores every generation, so costs are comparable.
pub fn tune<S: Strategy, D: Dynamics>(
    strategy: &S,
    sp: &S::Params,
    problem: &TuneProblem<D>,
    generations: u64,
    key: Key,
) -> TuneResult {
    tune_observed(strategy, sp, problem, generations, key, |_| {})
}

/// [`tune`] calling `on_generation` with each generation's metrics as it ends (progress
/// lines, metric streams); the result is the same.
pub fn tune_observed<S: Strategy, D: Dynamics>(
    strategy: &S,
    sp: &S::Params,
    problem: &TuneProblem<D>,
    generations: u64,
    key: Key,
    mut on_generation: impl FnMut(&TellMetrics),
) -> TuneResult {
    let mut t = Tuner::new(strategy, sp, problem, key);
    for _ in 0..generations {
        on_generation(t.step());
    }
    t.result()
}

/// A tuning run that advances one generation at a time and can be resumed: the run is a plain
/// value (strategy state, generation counter, history), so a clone taken at any generation
/// continues exactly as the original would (`run(a)` then `run(b)` equals `run(a + b)`, and
/// equals [`tune`] for `a + b` generations). Generation `g` uses `key.fold_in(g + 1)` for
/// ask/tell and `key` for the episodes, so nothing depends on how the run was split.
pub struct Tuner<'a, S: Strategy, D: Dynamics> {
    strategy: &'a S,
    sp: &'a S::Params,
    problem: &'a TuneProblem<D>,
    key: Key,
    state: S::State,
    x0: Vec<f32>,
    generation: u64,
    history: Vec<TellMetrics>,
    pop: Vec<f32>,
    fit: Vec<f32>,
}

// By hand: a derive would demand `S: Clone` and `D: Clone`, which are only borrowed.
impl<S: Strategy, D: Dynamics> Clone for Tuner<'_, S, D> {
    fn clone(&self) -> Self {
        Tuner {
            strategy: self.strategy,
            sp: self.sp,
            problem: self.problem,
            key: self.key,
            state: self.state.clone(),
            x0: self.x0.clone(),
            generation: self.generation,
            history: self.history.clone(),
            pop: self.pop.clone(),
            fit: self.fit.clone(),
        }
    }
}

impl<'a, S: Strategy, D: Dynamics> Tuner<'a, S, D> {
    /// Starts at the base params' knob values.
    ///
    /// # Panics
    /// If the strategy's dimension differs from the spec's.
    pub fn new(strategy: &'a S, sp: &'a S::Params, problem: &'a TuneProblem<D>, key: Key) -> Self {
        let (lam, n) = (strategy.pop_size(), strategy.num_dims());
        assert_eq!(n, problem.num_dims(), "tune: strategy and problem dimensions");
        let x0 = problem.spec.from_params(&problem.base, problem.mppi.dynamics().nu());
        let state = strategy.init(key, sp, &x0);
        Tuner {
            strategy,
            sp,
            problem,
            key,
            state,
            x0,
            generation: 0,
            history: Vec::new(),
            pop: vec![0.0; lam * n],
            fit: vec![0.0; lam],
        }
    }

    /// Runs one generation (ask, every candidate's episodes as one parallel batch, tell) and
    /// returns its metrics.
    pub fn step(&mut self) -> &TellMetrics {
        let g = self.generation;
        let (st, sp) = (&mut self.state, self.sp);
        self.strategy.ask(self.key.fold_in(g + 1), st, sp, &mut self.pop);
        self.problem.evaluate(self.key, &self.pop, &mut self.fit);
        let m = self.strategy.tell(self.key.fold_in(g + 1), &self.pop, &self.fit, st, sp);
        self.history.push(m);
        self.generation += 1;
        self.history.last().expect("just pushed")
    }

    /// Runs `generations` more generations.
    pub fn run(&mut self, generations: u64) {
        for _ in 0..generations {
            self.step();
        }
    }

    /// Generations run so far.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Metrics of every generation so far.
    pub fn history(&self) -> &[TellMetrics] {
        &self.history
    }

    /// The strategy state (for inspection).
    pub fn state(&self) -> &S::State {
        &self.state
    }

    /// Best params so far (the base params before any finite cost), with the full history.
    pub fn result(&self) -> TuneResult {
        let pr = self.strategy.progress(&self.state);
        let best_x =
            if pr.best_fitness.is_finite() { pr.best_solution.clone() } else { self.x0.clone() };
        TuneResult {
            best_params: self.problem.params_of(&best_x),
            best_cost: pr.best_fitness,
            best_x,
            history: self.history.clone(),
        }
    }
}
