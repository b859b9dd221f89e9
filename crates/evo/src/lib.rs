//! Evolution strategies for Kestrel: one verb set (`init / ask / tell`) over explicit key,
//! state and params, a batched [`Problem`] interface, fitness shaping and box bounds.
//!
//! Conventions (DESIGN.md §4): a population is row-major `pop_size × num_dims` `f32`;
//! fitness is **minimised**; NaN and ±inf fitness rank worst and are counted in
//! [`TellMetrics::nonfinite`]. Strategy internals run in `f64`. This crate is also the
//! engine of the MPPI autotuner, so it speaks plain slices only.
//!
//! | strategy | paper | reference implementation |
//! |---|---|---|
//! | [`CmaEs`] | Hansen, "The CMA Evolution Strategy: A Tutorial", arXiv:1604.00772 | pycma; evosax 0.3.2 `CMA_ES` (golden) |
//! | [`SepCmaEs`] | Ros & Hansen, "A Simple Modification in CMA-ES Achieving Linear Time and Space Complexity", PPSN 2008 | evosax `Sep_CMA_ES` (golden) |
//! | [`Snes`] | Schaul, Glasmachers & Schmidhuber, "High Dimensions and Heavy Tails for Natural Evolution Strategies", GECCO 2011 | evosax `SNES` (golden) |
//! | [`Xnes`] | Glasmachers et al., "Exponential Natural Evolution Strategies", GECCO 2010 | evosax `xNES` (defaults; Kestrel uses the true matrix exponential) |
//! | [`Pgpe`] | Sehnke et al., "Parameter-exploring policy gradients", 2010; ClipUp, arXiv:2008.02387 | evosax `PGPE` |
//! | [`DifferentialEvolution`] | Storn & Price, J. Global Optimization 11, 1997 | evosax `DifferentialEvolution` |
//! | [`WeightedEs`] (Simple ES) | Rechenberg 1973; estool's `es.py` | evosax `SimpleES` (golden) |
//! | [`WeightedEs`] (DES) | Lange et al., "Discovering Evolution Strategies via Meta-Black-Box Optimization", ICLR 2023 | evosax `DiscoveredES` (golden) |
//! | [`MaEs`] (MA-ES) | Beyer & Sendhoff, "Simplify Your Covariance Matrix Adaptation Evolution Strategy", IEEE TEVC 2017 | evosax `MA_ES` (golden) |
//! | [`MaEs`] (LM-MA-ES) | Loshchilov, Glasmachers & Beyer, "Large Scale Black-box Optimization by Limited-Memory Matrix Adaptation", IEEE TEVC 2019 | evosax `LM_MA_ES` (golden) |
//! | [`Antithetic`] (ARS) | Mania, Guy & Recht, "Simple random search provides a competitive approach to reinforcement learning", NeurIPS 2018 | evosax `ARS` (golden) |
//! | [`Antithetic`] (ESMC) | Merchant et al., "Learn2Hop", ICML 2021 | evosax `ESMC` (golden) |
//! | [`LocalSearch`] (hill climbing, random search, simulated annealing, gradientless descent) | Rere et al. 2015 (annealing); Golovin et al., "Gradientless Descent", ICLR 2020 | evosax `HillClimbing`, `RandomSearch`, `SimulatedAnnealing`, `GradientlessDescent` (golden) |
//! | [`Swarm`] (PSO, simple GA) | Kennedy & Eberhart, "Particle swarm optimization", ICNN 1995; the simple GA | evosax `PSO`, `SimpleGA` (golden) |
//! | [`Ga`] (MR15, SAMR, GESMR) | Rechenberg 1978; Clune et al., PLoS CB 2008; Kumar et al., "Effective Mutation Rate Adaptation through Group Elite Selection", GECCO 2022 | evosax `MR15_GA`, `SAMR_GA`, `GESMR_GA` (golden) |
//! | [`OpenEs`] | Salimans et al., "Evolution Strategies as a Scalable Alternative to RL", arXiv:1703.03864 | evosax `Open_ES` with optax OpenEsAdam (golden) |

mod amalgam;
mod antithetic;
pub mod bench;
mod bounds;
mod cma_anchored_les;
mod cma_es;
mod cr_fm_nes;
mod de;
mod diffusion;
pub mod driver;
mod eigen;
mod error;
mod evotf;
mod ga;
mod gradient_es;
pub mod hyper;
mod kind;
mod learned_ckpt;
mod les;
mod lga;
mod local_search;
mod ma_es;
pub mod memory;
pub mod neuro;
mod open_es;
mod pgpe;
pub mod problem;
pub mod qd;
pub mod restarts;
mod rm_es;
mod sep_cma_es;
pub mod shaping;
mod snes;
mod strategy;
mod sv_cma_es;
mod sv_open_es;
mod swarm;
pub mod termination;
mod weighted_es;
mod xnes;

pub use amalgam::{Amalgam, AmalgamKind, AmalgamParams, AmalgamState};
pub use antithetic::{Antithetic, AntitheticParams, AntitheticRule, AntitheticState};
pub use bounds::{BoundKind, Bounds, PENALTY_WEIGHT};
pub use cma_anchored_les::{CALES_SIGMA_INIT, CalesNet, CalesParams, CalesState, CmaAnchoredLes};
pub use cma_es::{CmaEs, CmaParams, CmaState, default_pop_size};
pub use cr_fm_nes::{CrFmNes, CrFmNesParams, CrFmNesState};
pub use de::{DeParams, DeState, DifferentialEvolution};
pub use diffusion::{AlphaSchedule, DiffusionEvolution, DiffusionParams, DiffusionState};
pub use driver::{Driver, EvalKeys, Generation, Instance, Optimizer, Stop, StopRules};
pub use error::EvoError;
pub use evotf::{EvoTf, EvoTfFeatures, EvoTfNet, EvoTfParams, EvoTfSizes, EvoTfState};
pub use ga::{Ga, GaDraws, GaParams, GaRule, GaState};
pub use gradient_es::{GradientEs, GradientEsParams, GradientEsState, GradientRule};
pub use hyper::StrategyParams;
pub use kind::{
    EVOSAX_CLASS_NAMES, EVOSAX_NAMES, StrategyKind, sv_cma_default_particles, sv_default_particles,
};
pub use learned_ckpt::{Checkpoint, CkptArray, ConfigValue};
pub use les::{Les, LesNet, LesParams, LesState};
pub use lga::{Lga, LgaNet, LgaParams, LgaState};
pub use local_search::{LocalParams, LocalRule, LocalSearch, LocalState};
pub use ma_es::{MaEs, MaKind, MaParams, MaState};
pub use open_es::{OpenEs, OpenEsAdam, OpenEsParams, OpenEsState};
pub use pgpe::{Pgpe, PgpeParams, PgpeState};
pub use problem::Problem;
pub use rm_es::{RmEs, RmParams, RmState};
pub use sep_cma_es::{SepCmaEs, SepCmaState};
pub use snes::{Snes, SnesParams, SnesState};
pub use strategy::{BugsKind, Progress, Scales, StateDict, StateTensors, Strategy, TellMetrics};
pub use sv_cma_es::{SvCmaEs, SvCmaParams, SvCmaState};
pub use sv_open_es::{SvOpenEs, SvOpenEsParams, SvOpenEsState};
pub use swarm::{Swarm, SwarmDraws, SwarmParams, SwarmRule, SwarmState};
pub use weighted_es::{WeightRule, WeightedEs, WeightedEsParams, WeightedEsState};
pub use xnes::{Xnes, XnesParams, XnesState};
