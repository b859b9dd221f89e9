//! The one registry of strategies and the one ask → evaluate → tell driver.
//!
//! [`StrategyKind`] names every strategy (the config and CLI spelling is kebab-case:
//! `cma-es`, `sep-cma-es`, `snes`, `xnes`, `open-es`, `pgpe`, `de`) with its population-size
//! rule and its step-size field; [`StrategyKind::build`] gives a ready [`Optimizer`]: a
//! strategy with its params and state behind one object-safe interface (what the Python
//! ask/tell objects and the tuners hold).
//!
//! [`Driver`] runs generations: ask, repair to the bounds, evaluate the whole population in
//! one batched call, penalise, tell, report. Every ES run in Kestrel goes through it:
//! `kestrel evo run` and `evo bench`, the IPOP/BIPOP restarts, the MPPI autotuner.
//!
//! # Key tree
//!
//! ```text
//! run      = Key::new(seed)
//! init     = run                                   // the strategy's initial state
//! gen_g    = run.fold_in(g + 1)                    // g = 0, 1, ... (generations told before)
//! ask      = gen_g.fold_in(0)
//! evaluate = gen_g.fold_in(1)   or run.fold_in(0) with common random numbers
//! tell     = gen_g.fold_in(2)
//! ```
//!
//! With [`EvalKeys::Common`] every generation is evaluated with the same key (common random
//! numbers: a stochastic problem then scores a candidate the same way in every generation,
//! so costs are comparable across generations, as the MPPI tuner needs). The generation
//! index comes from the driver's own counter, so a run split into pieces (or resumed from a
//! cloned driver) draws exactly what one uninterrupted run draws.

use crate::amalgam::{Amalgam, AmalgamKind};
use crate::antithetic::{Antithetic, AntitheticRule};
use crate::bounds::Bounds;
use crate::cma_anchored_les::{CalesNet, CmaAnchoredLes};
use crate::cma_es::CmaEs;
use crate::cr_fm_nes::CrFmNes;
use crate::de::DifferentialEvolution;
use crate::diffusion::DiffusionEvolution;
use crate::error::EvoError;
use crate::evotf::{EvoTf, EvoTfNet};
use crate::ga::{Ga, GaRule};
use crate::gradient_es::{GradientEs, GradientRule};
use crate::hyper::StrategyParams;
use crate::kind::{StrategyKind, sv_cma_default_particles, sv_default_particles};
use crate::les::{Les, LesNet};
use crate::lga::{Lga, LgaNet};
use crate::local_search::{LocalRule, LocalSearch};
use crate::ma_es::{MaEs, MaKind};
use crate::open_es::OpenEs;
use crate::pgpe::Pgpe;
use crate::problem;
use crate::problem::Problem;
use crate::rm_es::RmEs;
use crate::sep_cma_es::SepCmaEs;
use crate::snes::Snes;
use crate::strategy::{Progress, Strategy, TellMetrics};
use crate::sv_cma_es::SvCmaEs;
use crate::sv_open_es::SvOpenEs;
use crate::swarm::{Swarm, SwarmRule};
use crate::weighted_es::{DES_TEMPERATURE, WeightRule, WeightedEs};
use crate::xnes::Xnes;
use kestrel_core::FromInvalid;
use kestrel_core::Key;

impl StrategyKind {
    /// The weights file a learned strategy reads (`params.params_path`), or an error saying
    /// what is missing and where evosax keeps it.
    fn weights_path(self, params: &StrategyParams, num_dims: usize) -> Result<&str, EvoError> {
        params.params_path.as_deref().ok_or_else(|| {
            EvoError::invalid(
                "params.params_path",
                "not set",
                format!(
                    "the path of evosax 0.3.2's {} checkpoint: {} meta-learned weights, which \
                     Kestrel does not ship (evosax's default is <site-packages>/evosax/algorithms/\
                     ckpt/{}; `tools/evosax-ckpt` fetches evosax's wheel and prints that folder)",
                    self.evosax_name(),
                    self.evosax_name(),
                    self.evosax_weights(num_dims).unwrap_or("")
                ),
            )
        })
    }

    /// A ready optimiser: the strategy with `pop_size` rows (see [`StrategyKind::pop_size`])
    /// of `mean.len()` dimensions, its reference defaults with the initial step size `sigma`,
    /// initialised at `mean` with `key`.
    pub fn build(
        self,
        pop_size: Option<usize>,
        sigma: f64,
        mean: &[f32],
        key: Key,
    ) -> Result<Box<dyn Optimizer>, EvoError> {
        self.build_with(pop_size, sigma, &StrategyParams::default(), mean, key)
    }

    /// [`StrategyKind::build`] with hyper-parameter overrides (a knob this strategy does not
    /// have, or a value out of its range, is an error naming it).
    pub fn build_with(
        self,
        pop_size: Option<usize>,
        sigma: f64,
        params: &StrategyParams,
        mean: &[f32],
        key: Key,
    ) -> Result<Box<dyn Optimizer>, EvoError> {
        params.check_for(self)?;
        let n = mean.len();
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(EvoError::invalid("sigma", sigma, "finite and > 0"));
        }
        if let Some(i) = mean.iter().position(|x| !x.is_finite()) {
            return Err(EvoError::invalid(format!("x0[{i}]"), mean[i], "finite"));
        }
        let pop = self.check_memory(pop_size, n)?;
        Ok(match self {
            StrategyKind::CmaEs => {
                let s = CmaEs::new(pop, n)?;
                let p = params
                    .cma(crate::cma_es::CmaParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::SepCmaEs => {
                let s = SepCmaEs::new(pop, n)?;
                let p = params
                    .cma(crate::cma_es::CmaParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Snes => {
                let s = Snes::new(pop, n)?;
                let p = params
                    .snes(crate::snes::SnesParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Xnes => {
                let s = Xnes::new(pop, n)?;
                let p = params
                    .xnes(crate::xnes::XnesParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::OpenEs => {
                let s = OpenEs::new(pop, n)?;
                let p =
                    params.open_es(crate::open_es::OpenEsParams { sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Pgpe => {
                let s = Pgpe::new(pop, n)?;
                let p = params
                    .pgpe(crate::pgpe::PgpeParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::De => {
                let s = DifferentialEvolution::new(pop, n)?;
                let p =
                    params.de(crate::de::DeParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::SimpleEs | StrategyKind::Des => {
                let rule = if self == StrategyKind::SimpleEs {
                    WeightRule::Elite
                } else {
                    WeightRule::Discovered { temperature: params.temperature(DES_TEMPERATURE)? }
                };
                let s = WeightedEs::new(pop, n, rule)?;
                let p = params.weighted(crate::weighted_es::WeightedEsParams {
                    sigma_init: sigma,
                    ..s.default_params()
                })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::MaEs | StrategyKind::LmMaEs => {
                let kind =
                    if self == StrategyKind::MaEs { MaKind::Full } else { MaKind::LimitedMemory };
                let s = MaEs::new(pop, n, kind)?;
                let mut p = s.default_params();
                p.cma = params.cma(crate::cma_es::CmaParams { sigma_init: sigma, ..p.cma })?;
                p.bugs = params.bugs.unwrap_or_default();
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Ars | StrategyKind::Esmc => {
                let rule = if self == StrategyKind::Ars {
                    AntitheticRule::Ars
                } else {
                    AntitheticRule::Esmc
                };
                let s = Antithetic::new(pop, n, rule)?;
                let p = params.antithetic(crate::antithetic::AntitheticParams {
                    sigma,
                    ..s.default_params()
                })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::HillClimbing
            | StrategyKind::RandomSearch
            | StrategyKind::SimulatedAnnealing
            | StrategyKind::GradientlessDescent => {
                let rule = match self {
                    StrategyKind::HillClimbing => LocalRule::HillClimbing,
                    StrategyKind::RandomSearch => LocalRule::RandomSearch,
                    StrategyKind::SimulatedAnnealing => LocalRule::SimulatedAnnealing,
                    _ => LocalRule::GradientlessDescent,
                };
                let s = LocalSearch::new(pop, n, rule)?;
                let p = params
                    .local(crate::local_search::LocalParams { sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Pso | StrategyKind::SimpleGa => {
                let rule =
                    if self == StrategyKind::Pso { SwarmRule::Pso } else { SwarmRule::SimpleGa };
                let s = Swarm::new(pop, n, rule)?;
                let p = params.swarm(crate::swarm::SwarmParams { sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Mr15Ga | StrategyKind::SamrGa | StrategyKind::GesmrGa => {
                let rule = match self {
                    StrategyKind::Mr15Ga => GaRule::Mr15,
                    StrategyKind::SamrGa => GaRule::Samr,
                    _ => GaRule::Gesmr,
                };
                let s = Ga::new(pop, n, rule, params.num_groups.unwrap_or(1))?;
                let p = params.ga(crate::ga::GaParams { sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::PersistentEs
            | StrategyKind::NoiseReuseEs
            | StrategyKind::GuidedEs
            | StrategyKind::Asebo => {
                let rule = match self {
                    StrategyKind::PersistentEs => GradientRule::Persistent,
                    StrategyKind::NoiseReuseEs => GradientRule::NoiseReuse,
                    StrategyKind::GuidedEs => GradientRule::Guided,
                    _ => GradientRule::Asebo,
                };
                let s = GradientEs::new(pop, n, rule, params.subspace_dims.unwrap_or(1))?;
                let p = params.gradient(crate::gradient_es::GradientEsParams {
                    sigma,
                    ..s.default_params()
                })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::RmEs => {
                let s = RmEs::new(pop, n, params.num_paths.unwrap_or(1))?;
                let mut p = s.default_params();
                p.cma = params.cma(crate::cma_es::CmaParams { sigma_init: sigma, ..p.cma })?;
                let p = params.rm(p)?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::IamalgamFull | StrategyKind::IamalgamUnivariate => {
                let kind = if self == StrategyKind::IamalgamFull {
                    AmalgamKind::Full
                } else {
                    AmalgamKind::Univariate
                };
                let s = Amalgam::new(pop, n, kind)?;
                let p = params
                    .amalgam(crate::amalgam::AmalgamParams { sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::CrFmNes => {
                let s = CrFmNes::new(pop, n)?;
                let p = params.cr_fm_nes(crate::cr_fm_nes::CrFmNesParams {
                    sigma_init: sigma,
                    ..s.default_params()
                })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::SvOpenEs => {
                let s = SvOpenEs::new(
                    pop,
                    n,
                    params.num_populations.unwrap_or_else(|| sv_default_particles(pop)),
                )?;
                let p =
                    params.sv(crate::sv_open_es::SvOpenEsParams { sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::SvCmaEs => {
                let k = params.num_populations.unwrap_or_else(|| sv_cma_default_particles(pop));
                let s = SvCmaEs::new(pop, n, k)?;
                let mut p = s.default_params();
                p.cma = params.cma(crate::cma_es::CmaParams { sigma_init: sigma, ..p.cma })?;
                let p = params.sv_cma(p)?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Les => {
                // The sizes first: a bad size is named before a missing file.
                crate::error::check_sizes(pop, n, 2)?;
                let net = LesNet::read(std::path::Path::new(self.weights_path(params, n)?))?;
                let s = Les::new(pop, n, std::sync::Arc::new(net))?;
                let p = params.les(crate::les::LesParams { sigma_init: sigma })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::Lga => {
                crate::error::check_sizes(pop, n, 2)?;
                let net = LgaNet::read(std::path::Path::new(self.weights_path(params, n)?))?;
                let s = Lga::new(pop, n, std::sync::Arc::new(net))?;
                Box::new(Instance::new(s, crate::lga::LgaParams { sigma }, key, mean))
            }
            StrategyKind::CmaAnchoredLes => {
                crate::error::check_sizes(pop, n, 2)?;
                let net = CalesNet::read(std::path::Path::new(self.weights_path(params, n)?))?;
                let s = CmaAnchoredLes::new(pop, n, std::sync::Arc::new(net))?;
                Box::new(Instance::new(
                    s,
                    crate::cma_anchored_les::CalesParams { sigma_init: sigma },
                    key,
                    mean,
                ))
            }
            StrategyKind::EvoTfEs => {
                crate::error::check_sizes(pop, n, 2)?;
                let context = params.max_context_len.unwrap_or(100);
                crate::evotf::check_context(context)?;
                let net = EvoTfNet::read(std::path::Path::new(self.weights_path(params, n)?))?;
                let s = EvoTf::new(pop, n, context, std::sync::Arc::new(net))?;
                let p = params
                    .evotf(crate::evotf::EvoTfParams { sigma_init: sigma, ..s.default_params() })?;
                Box::new(Instance::new(s, p, key, mean))
            }
            StrategyKind::DiffusionEvolution => {
                let s = DiffusionEvolution::new(pop, n, params.num_latent_dims)?;
                let p = s.params_for(
                    params.alpha_schedule.unwrap_or_default(),
                    params.num_generations.unwrap_or(128),
                )?;
                let p = params.diffusion(crate::diffusion::DiffusionParams { sigma, ..p })?;
                Box::new(Instance::new(s, p, key, mean))
            }
        })
    }
}

/// A strategy with its params and state: what a run steps. Object-safe, so a run, a Python
/// ask/tell object or a tuner can hold any strategy.
pub trait Optimizer: Send + Sync {
    /// Rows of a population.
    fn pop_size(&self) -> usize;
    /// Columns of a population.
    fn num_dims(&self) -> usize;
    /// Samples a population (`pop_size × num_dims`, row-major).
    fn ask(&mut self, key: Key, population: &mut [f32]);
    /// Updates the state from a population and its fitness (minimised).
    fn tell(&mut self, key: Key, population: &[f32], fitness: &[f32]) -> TellMetrics;
    /// The current search mean.
    fn mean(&self) -> Vec<f32>;
    /// Best-so-far bookkeeping.
    fn progress(&self) -> &Progress;
    /// A copy of the optimiser (state included): the run continues identically from either.
    fn boxed_clone(&self) -> Box<dyn Optimizer>;
    /// The search distribution's scales ([`Strategy::scales`]); false: only a step size.
    fn scales(&self, axis: usize, out: &mut crate::strategy::Scales) -> bool;

    /// The strategy state as named arrays ([`crate::strategy::StateDict`]).
    fn state_dict(&self) -> crate::strategy::StateDict;

    /// Overwrites the state from a [`Optimizer::state_dict`] of the same strategy and sizes;
    /// a mismatch is an error that changes nothing.
    fn load_state_dict(&mut self, dict: &[(String, Vec<f64>)]) -> Result<(), EvoError>;

    /// The surrogate gradient for the next ask ([`Strategy::set_gradient`]: Guided ES only).
    fn set_gradient(&mut self, grad: &[f32]) -> Result<(), EvoError>;

    /// [`Optimizer::ask`] with the buffer's length checked: an error, not a panic, for input
    /// from outside (the Python package).
    fn try_ask(&mut self, key: Key, population: &mut [f32]) -> Result<(), EvoError> {
        let want = self.pop_size() * self.num_dims();
        if population.len() != want {
            return Err(EvoError::invalid(
                "population",
                format!("{} values", population.len()),
                format!(
                    "pop_size × num_dims = {} × {} = {want} values",
                    self.pop_size(),
                    self.num_dims()
                ),
            ));
        }
        self.ask(key, population);
        Ok(())
    }

    /// [`Optimizer::tell`] with the shapes checked and NaN refused (±∞ fitness is allowed:
    /// it ranks last or first), so outside input never reaches a panic or a NaN state.
    fn try_tell(
        &mut self,
        key: Key,
        population: &[f32],
        fitness: &[f32],
    ) -> Result<TellMetrics, EvoError> {
        let (p, d) = (self.pop_size(), self.num_dims());
        if population.len() != p * d {
            return Err(EvoError::invalid(
                "population",
                format!("{} values", population.len()),
                format!("pop_size × num_dims = {p} × {d} = {} values", p * d),
            ));
        }
        if fitness.len() != p {
            return Err(EvoError::invalid(
                "fitness",
                format!("{} values", fitness.len()),
                format!("pop_size = {p} values"),
            ));
        }
        if let Some(i) = population.iter().position(|v| !v.is_finite()) {
            return Err(EvoError::invalid(
                format!("population[{}][{}]", i / d.max(1), i % d.max(1)),
                population[i],
                "a finite number",
            ));
        }
        if let Some(i) = fitness.iter().position(|v| v.is_nan()) {
            return Err(EvoError::invalid(
                format!("fitness[{i}]"),
                "NaN",
                "a number (±inf allowed)",
            ));
        }
        Ok(self.tell(key, population, fitness))
    }
}

/// A [`Strategy`] with its params and state.
#[derive(Clone, Debug)]
pub struct Instance<S: Strategy> {
    /// The strategy (sizes and constants).
    pub strategy: S,
    /// Its hyper-parameters.
    pub params: S::Params,
    /// Its state.
    pub state: S::State,
}

impl<S: Strategy> Instance<S> {
    /// `strategy` initialised at `mean` with `key`.
    pub fn new(strategy: S, params: S::Params, key: Key, mean: &[f32]) -> Self {
        let state = strategy.init(key, &params, mean);
        Instance { strategy, params, state }
    }
}

impl<S: Strategy + Clone + 'static> Optimizer for Instance<S> {
    fn pop_size(&self) -> usize {
        self.strategy.pop_size()
    }
    fn num_dims(&self) -> usize {
        self.strategy.num_dims()
    }
    fn ask(&mut self, key: Key, population: &mut [f32]) {
        self.strategy.ask(key, &mut self.state, &self.params, population)
    }
    fn tell(&mut self, key: Key, population: &[f32], fitness: &[f32]) -> TellMetrics {
        self.strategy.tell(key, population, fitness, &mut self.state, &self.params)
    }
    fn mean(&self) -> Vec<f32> {
        self.strategy.mean(&self.state)
    }
    fn progress(&self) -> &Progress {
        self.strategy.progress(&self.state)
    }
    fn boxed_clone(&self) -> Box<dyn Optimizer> {
        Box::new(self.clone())
    }
    fn scales(&self, axis: usize, out: &mut crate::strategy::Scales) -> bool {
        self.strategy.scales(&self.state, axis, out)
    }
    fn state_dict(&self) -> crate::strategy::StateDict {
        use crate::strategy::StateTensors;
        self.state.state_dict()
    }
    fn load_state_dict(&mut self, dict: &[(String, Vec<f64>)]) -> Result<(), EvoError> {
        use crate::strategy::StateTensors;
        self.state.load_state_dict(dict)
    }
    fn set_gradient(&mut self, grad: &[f32]) -> Result<(), EvoError> {
        self.strategy.set_gradient(&mut self.state, grad)
    }
}

impl Clone for Box<dyn Optimizer> {
    fn clone(&self) -> Self {
        self.boxed_clone()
    }
}

impl Optimizer for Box<dyn Optimizer> {
    fn pop_size(&self) -> usize {
        (**self).pop_size()
    }
    fn num_dims(&self) -> usize {
        (**self).num_dims()
    }
    fn ask(&mut self, key: Key, population: &mut [f32]) {
        (**self).ask(key, population)
    }
    fn tell(&mut self, key: Key, population: &[f32], fitness: &[f32]) -> TellMetrics {
        (**self).tell(key, population, fitness)
    }
    fn mean(&self) -> Vec<f32> {
        (**self).mean()
    }
    fn progress(&self) -> &Progress {
        (**self).progress()
    }
    fn boxed_clone(&self) -> Box<dyn Optimizer> {
        (**self).boxed_clone()
    }
    fn scales(&self, axis: usize, out: &mut crate::strategy::Scales) -> bool {
        (**self).scales(axis, out)
    }
    fn state_dict(&self) -> crate::strategy::StateDict {
        (**self).state_dict()
    }
    fn load_state_dict(&mut self, dict: &[(String, Vec<f64>)]) -> Result<(), EvoError> {
        (**self).load_state_dict(dict)
    }
    fn set_gradient(&mut self, grad: &[f32]) -> Result<(), EvoError> {
        (**self).set_gradient(grad)
    }
}

/// Which key the problem sees in each generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EvalKeys {
    /// A fresh key per generation (`run.fold_in(g + 1).fold_in(1)`).
    #[default]
    PerGeneration,
    /// The same key every generation (`run.fold_in(0)`): common random numbers.
    Common,
}

impl EvalKeys {
    /// The key the problem sees in generation `generation` (0-based) of a run keyed `run`.
    pub fn key(self, run: Key, generation: u64) -> Key {
        match self {
            EvalKeys::PerGeneration => run.fold_in(generation + 1).fold_in(1),
            EvalKeys::Common => run.fold_in(0),
        }
    }
}

/// What one generation reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Generation {
    /// The strategy's metrics (generation count, best so far, best in generation,
    /// non-finite count, step size).
    pub metrics: TellMetrics,
    /// Evaluations so far (this generation's included).
    pub evals: u64,
    /// Restarts before this generation (0 without restarts; see [`crate::restarts`]).
    pub restart: u32,
    /// This generation's population size (it changes between IPOP/BIPOP restarts).
    pub pop_size: usize,
}

/// Why [`Driver::run`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// All requested generations ran.
    Generations,
    /// The best fitness reached the target.
    Target,
    /// The observer asked to stop.
    Observer,
    /// The evaluation budget ([`StopRules::max_evals`]) is spent.
    MaxEvals,
    /// The fitness stalled ([`StopRules::tol_fun`]).
    TolFun,
    /// The step size fell below [`StopRules::tol_x`].
    TolX,
    /// Every restart ran and ended by its own stop rules ([`crate::restarts`]).
    Restarts,
}

impl Stop {
    /// A short phrase for summaries.
    pub fn describe(self) -> &'static str {
        match self {
            Stop::Generations => "generations spent",
            Stop::Target => "target reached",
            Stop::Observer => "stopped by its observer",
            Stop::MaxEvals => "evaluation budget spent",
            Stop::TolFun => "fitness stalled (tol_fun)",
            Stop::TolX => "step size below tol_x",
            Stop::Restarts => "every restart ran",
        }
    }
}

/// pycma-style stop rules of a run (each off when `None`), checked after every generation in
/// this order: `target`, `max_evals`, `tol_fun`, `tol_x`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StopRules {
    /// Stop once the best fitness is at or below this (pycma's `ftarget`).
    pub target: Option<f32>,
    /// Stop once this many evaluations are spent (pycma's `maxfevals`).
    pub max_evals: Option<u64>,
    /// Stop once the best fitness of each of the last `10 + ⌈30 n / λ⌉` generations and every
    /// fitness of this one lie within a range below this (pycma's `tolfun`).
    pub tol_fun: Option<f64>,
    /// Stop once the step size ([`TellMetrics::sigma`]) is below this (pycma's `tolx`, here
    /// on σ alone).
    pub tol_x: Option<f64>,
}

/// pycma's `tolfun` bookkeeping: the best fitness of each of the last `10 + ⌈30 n / λ⌉`
/// generations. Shared by [`Driver::run_until`] and the restarted runs of
/// [`crate::restarts`].
pub(crate) struct FitnessHistory {
    window: usize,
    best: std::collections::VecDeque<f32>,
}

impl FitnessHistory {
    /// An empty history for `num_dims` dimensions and populations of `pop_size`.
    pub(crate) fn new(num_dims: usize, pop_size: usize) -> Self {
        let window = 10 + (30 * num_dims).div_ceil(pop_size.max(1));
        FitnessHistory { window, best: std::collections::VecDeque::with_capacity(window + 1) }
    }

    /// Adds a generation (its best and every fitness value); true once the window is full and
    /// the finite values of both lie within a range below `tol`.
    pub(crate) fn stalled(&mut self, best_in_generation: f32, fitness: &[f32], tol: f64) -> bool {
        self.best.push_back(best_in_generation);
        if self.best.len() > self.window {
            self.best.pop_front();
        }
        let (lo, hi) = fitness
            .iter()
            .copied()
            .filter(|f| f.is_finite())
            .chain(self.best.iter().copied())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), f| (a.min(f), b.max(f)));
        self.best.len() == self.window && ((hi - lo) as f64) < tol
    }
}

impl StopRules {
    /// Checks the values (finite and positive where set).
    pub fn validate(&self) -> Result<(), EvoError> {
        if self.target.is_some_and(f32::is_nan) {
            return Err(EvoError::invalid("target", "NaN", "a number (or absent)"));
        }
        if self.max_evals == Some(0) {
            return Err(EvoError::invalid("max_evals", 0, "at least 1 (or absent)"));
        }
        for (name, v) in [("tol_fun", self.tol_fun), ("tol_x", self.tol_x)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(EvoError::invalid(name, v, "finite and > 0 (or absent)"));
            }
        }
        Ok(())
    }
}

/// The ask → repair → evaluate → penalise → tell loop over any [`Optimizer`] (the one in
/// Kestrel; see the module docs for its key tree). Cloning a driver clones the optimiser:
/// the clone continues exactly as the original would.
pub struct Driver<'p, O: Optimizer = Box<dyn Optimizer>> {
    optimizer: O,
    problem: &'p dyn Problem,
    bounds: Option<Bounds>,
    key: Key,
    eval_keys: EvalKeys,
    generation: u64,
    evals: u64,
    population: Vec<f32>,
    fitness: Vec<f32>,
}

impl<O: Optimizer + Clone> Clone for Driver<'_, O> {
    fn clone(&self) -> Self {
        Driver {
            optimizer: self.optimizer.clone(),
            problem: self.problem,
            bounds: self.bounds.clone(),
            key: self.key,
            eval_keys: self.eval_keys,
            generation: self.generation,
            evals: self.evals,
            population: self.population.clone(),
            fitness: self.fitness.clone(),
        }
    }
}

impl<'p, O: Optimizer> Driver<'p, O> {
    /// A driver of `optimizer` on `problem` with the run key `key` (the key the optimiser
    /// was initialised with, by the module's key tree).
    pub fn new(optimizer: O, problem: &'p dyn Problem, key: Key) -> Result<Self, EvoError> {
        if optimizer.num_dims() != problem.num_dims() {
            return Err(EvoError::invalid(
                "num_dims",
                optimizer.num_dims(),
                format!("the problem's {} dimensions", problem.num_dims()),
            ));
        }
        let (lam, n) = (optimizer.pop_size(), optimizer.num_dims());
        let cells = lam.checked_mul(n).ok_or_else(|| {
            EvoError::invalid("pop_size", lam, "pop_size × num_dims within memory")
        })?;
        let mut population = Vec::new();
        population.try_reserve_exact(cells).map_err(|_| {
            EvoError::invalid(
                "pop_size",
                lam,
                format!("a population that fits in memory ({cells} values of f32 asked)"),
            )
        })?;
        population.resize(cells, 0.0);
        Ok(Driver {
            optimizer,
            problem,
            bounds: None,
            key,
            eval_keys: EvalKeys::PerGeneration,
            generation: 0,
            evals: 0,
            population,
            fitness: vec![0.0; lam],
        })
    }

    /// Repairs every asked population to `bounds` (and penalises by them, in
    /// [`crate::bounds::BoundKind::Penalty`]).
    pub fn with_bounds(mut self, bounds: Bounds) -> Result<Self, EvoError> {
        if bounds.num_dims() != self.optimizer.num_dims() {
            return Err(EvoError::invalid(
                "bounds",
                format!("{} dimensions", bounds.num_dims()),
                "one bound per search dimension",
            ));
        }
        self.bounds = Some(bounds);
        Ok(self)
    }

    /// Continues a run checkpointed after `generation` generations and `evals` evaluations,
    /// the optimiser loaded from that checkpoint's `state_dict`: the keys then follow the
    /// uninterrupted run's (they derive from the generation count, see the module's key tree).
    pub fn resumed_at(mut self, generation: u64, evals: u64) -> Self {
        self.generation = generation;
        self.evals = evals;
        self
    }

    /// Chooses which key the problem sees (default [`EvalKeys::PerGeneration`]).
    pub fn with_eval_keys(mut self, eval_keys: EvalKeys) -> Self {
        self.eval_keys = eval_keys;
        self
    }

    /// Runs one generation and returns its report.
    pub fn step(&mut self) -> Generation {
        self.step_timed().0
    }

    /// [`Driver::step`] with the wall time of its three phases: ask (with the repair),
    /// evaluate (with the penalty), tell. For benchmarks; the numbers are the same.
    pub fn step_timed(&mut self) -> (Generation, [std::time::Duration; 3]) {
        let t0 = std::time::Instant::now();
        let k = self.key.fold_in(self.generation + 1);
        self.optimizer.ask(k.fold_in(0), &mut self.population);
        if let Some(b) = &self.bounds {
            b.repair(&mut self.population);
        }
        let t1 = std::time::Instant::now();
        let key_eval = self.eval_keys.key(self.key, self.generation);
        self.problem.evaluate(key_eval, &self.population, &mut self.fitness);
        if let Some(b) = &self.bounds {
            b.penalize(&self.population, &mut self.fitness);
        }
        let t2 = std::time::Instant::now();
        let metrics = self.optimizer.tell(k.fold_in(2), &self.population, &self.fitness);
        let t3 = std::time::Instant::now();
        self.generation += 1;
        self.evals += self.fitness.len() as u64;
        let pop_size = self.fitness.len();
        (
            Generation { metrics, evals: self.evals, restart: 0, pop_size },
            [t1 - t0, t2 - t1, t3 - t2],
        )
    }

    /// Runs up to `generations` more generations, stopping early once the best fitness is at
    /// or below `target` or when `observe` returns `false`; `observe` sees every generation.
    pub fn run(
        &mut self,
        generations: u64,
        target: Option<f32>,
        observe: impl FnMut(&Generation) -> bool,
    ) -> Stop {
        self.run_until(generations, &StopRules { target, ..StopRules::default() }, observe)
    }

    /// [`Driver::run`] with every [`StopRules`] rule; `observe` sees every generation and
    /// may stop the run by returning `false`.
    pub fn run_until(
        &mut self,
        generations: u64,
        rules: &StopRules,
        mut observe: impl FnMut(&Generation) -> bool,
    ) -> Stop {
        let mut history = FitnessHistory::new(self.optimizer.num_dims(), self.fitness.len());
        for _ in 0..generations {
            let g = self.step();
            let go_on = observe(&g);
            if rules.target.is_some_and(|t| g.metrics.best_so_far <= t) {
                return Stop::Target;
            }
            if rules.max_evals.is_some_and(|m| self.evals >= m) {
                return Stop::MaxEvals;
            }
            if let Some(tol) = rules.tol_fun
                && history.stalled(g.metrics.best_in_generation, &self.fitness, tol)
            {
                return Stop::TolFun;
            }
            if rules.tol_x.is_some_and(|t| g.metrics.sigma < t) {
                return Stop::TolX;
            }
            if !go_on {
                return Stop::Observer;
            }
        }
        Stop::Generations
    }

    /// Generations run.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Evaluations spent.
    pub fn evals(&self) -> u64 {
        self.evals
    }

    /// The optimiser (its state, for inspection).
    pub fn optimizer(&self) -> &O {
        &self.optimizer
    }

    /// The last population asked (after repair).
    pub fn population(&self) -> &[f32] {
        &self.population
    }

    /// The last fitness values (after penalties).
    pub fn fitness(&self) -> &[f32] {
        &self.fitness
    }

    /// Best-so-far bookkeeping.
    pub fn progress(&self) -> &Progress {
        self.optimizer.progress()
    }

    /// Gives the optimiser back.
    pub fn into_optimizer(self) -> O {
        self.optimizer
    }
}

/// A benchmark problem by its config name (see [`problem::Function::parse`]), shifted by
/// `run.fold_in(7)` within ±`shift` and rotated by `run.fold_in(8)` when asked.
pub fn benchmark(
    function: &str,
    num_dims: usize,
    shift: f64,
    rotate: bool,
    run: Key,
) -> Result<problem::Benchmark, EvoError> {
    if !(shift.is_finite() && shift >= 0.0) {
        return Err(EvoError::invalid("shift", shift, "finite and >= 0"));
    }
    let mut b = problem::Benchmark::new(problem::Function::parse(function)?, num_dims)?;
    if shift > 0.0 {
        b = b.shifted(run.fold_in(7), shift);
    }
    if rotate {
        b = b.rotated(run.fold_in(8));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::EVOSAX_NAMES;
    use crate::problem::{Benchmark, Function};

    #[test]
    fn names_round_trip_and_unknown_names_list_the_accepted_ones() {
        for k in StrategyKind::ALL {
            assert_eq!(StrategyKind::parse(k.name()).unwrap(), k);
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.name()));
        }
        let e = StrategyKind::parse("cmaess").unwrap_err().to_string();
        assert!(e.contains("strategy") && e.contains("cmaess") && e.contains("sep-cma-es"), "{e}");
        // evosax's spellings, as jax_mppi's EvoSaxOptimizer passes them, name the same kinds.
        for (name, k) in EVOSAX_NAMES {
            assert_eq!(StrategyKind::parse(name).unwrap(), k, "{name}");
            assert_eq!(k.evosax_name(), name);
            let json = serde_json::from_str::<StrategyKind>(&format!("\"{name}\""));
            assert_eq!(json.unwrap(), k, "{name} from a config");
        }
        // Every strategy has its evosax name, each once.
        for k in StrategyKind::ALL {
            assert_eq!(EVOSAX_NAMES.iter().filter(|(_, e)| *e == k).count(), 1, "{k}");
        }
        assert_eq!(StrategyKind::parse("DiscoveredES").unwrap(), StrategyKind::Des);
        assert_eq!(StrategyKind::parse("LearnedES").unwrap(), StrategyKind::Les);
        assert_eq!(StrategyKind::parse("LearnedGA").unwrap(), StrategyKind::Lga);
        assert_eq!(StrategyKind::parse("cma_es").unwrap(), StrategyKind::CmaEs);
        assert_eq!(StrategyKind::parse("Open-ES").unwrap(), StrategyKind::OpenEs);
    }

    #[test]
    fn every_strategy_builds_and_improves_the_sphere() {
        let prob = Benchmark::new(Function::Sphere, 6).unwrap();
        // The learned ones need evosax's weights: tests/conformance.rs runs them with those.
        for k in StrategyKind::ALL.into_iter().filter(|k| k.evosax_weights(6).is_none()) {
            let opt = k.build(None, 0.5, &[1.0; 6], Key::new(3)).unwrap();
            let mut d = Driver::new(opt, &prob, Key::new(3)).unwrap();
            let first = d.step().metrics.best_so_far;
            d.run(60, None, |_| true);
            assert!(
                d.progress().best_fitness < first,
                "{k}: {first} -> {}",
                d.progress().best_fitness
            );
            assert_eq!(d.evals(), 61 * d.optimizer().pop_size() as u64);
        }
    }

    #[test]
    fn a_run_split_in_two_equals_one_run_and_a_clone_continues_identically() {
        let prob = Benchmark::new(Function::Rosenbrock, 5).unwrap();
        let build = || StrategyKind::CmaEs.build(None, 0.3, &[0.0; 5], Key::new(9)).unwrap();
        let mut whole = Driver::new(build(), &prob, Key::new(9)).unwrap();
        whole.run(40, None, |_| true);
        let mut split = Driver::new(build(), &prob, Key::new(9)).unwrap();
        split.run(15, None, |_| true);
        let mut copy = split.clone();
        split.run(25, None, |_| true);
        copy.run(25, None, |_| true);
        assert_eq!(whole.progress(), split.progress());
        assert_eq!(whole.progress(), copy.progress());
        assert_eq!(whole.optimizer().mean(), copy.optimizer().mean());
    }

    #[test]
    fn bad_sizes_and_values_are_errors() {
        assert!(StrategyKind::CmaEs.build(Some(2), 0.5, &[0.0; 3], Key::new(0)).is_err());
        assert!(StrategyKind::Snes.build(None, f64::NAN, &[0.0; 3], Key::new(0)).is_err());
        assert!(StrategyKind::Snes.build(None, 0.5, &[f32::INFINITY; 3], Key::new(0)).is_err());
        // Antithetic strategies take even sizes only; an odd one is refused, not rounded.
        assert_eq!(StrategyKind::OpenEs.pop_size(Some(8), 3).unwrap(), 8);
        for s in [StrategyKind::OpenEs, StrategyKind::Pgpe] {
            let e = s.pop_size(Some(3), 3).unwrap_err().to_string();
            assert!(e.contains("pop_size") && e.contains("3") && e.contains("even"), "{e}");
        }
        let prob = Benchmark::new(Function::Sphere, 4).unwrap();
        let opt = StrategyKind::Snes.build(None, 0.5, &[0.0; 3], Key::new(0)).unwrap();
        assert!(Driver::new(opt, &prob, Key::new(0)).is_err());
    }

    #[test]
    fn the_target_stops_the_run() {
        let prob = Benchmark::new(Function::Sphere, 3).unwrap();
        let opt = StrategyKind::CmaEs.build(None, 0.5, &[1.0; 3], Key::new(1)).unwrap();
        let mut d = Driver::new(opt, &prob, Key::new(1)).unwrap();
        assert_eq!(d.run(10_000, Some(1e-6), |_| true), Stop::Target);
        assert!(d.progress().best_fitness <= 1e-6);
        assert!(d.generation() < 10_000);
    }
}
