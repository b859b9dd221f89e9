//! Strategy hyper-parameters from a config or a Python dict: [`StrategyParams`], every knob of
//! every strategy as an optional override of its reference default (evosax's
//! `default_params`, Hansen's tutorial for CMA-ES). A run config holds them as its `[params]`
//! table (`--set params.lr=0.01`); the Python ask/tell objects take them as `params={...}` or
//! keyword arguments. A knob the chosen strategy does not have is an error naming the
//! strategies that have it, never silently ignored.

use crate::amalgam::AmalgamParams;
use crate::antithetic::AntitheticParams;
use crate::cma_es::CmaParams;
use crate::cr_fm_nes::CrFmNesParams;
use crate::de::DeParams;
use crate::diffusion::{AlphaSchedule, DiffusionParams};
use crate::error::EvoError;
use crate::evotf::EvoTfParams;
use crate::ga::GaParams;
use crate::gradient_es::GradientEsParams;
use crate::kind::StrategyKind;
use crate::les::LesParams;
use crate::local_search::LocalParams;
use crate::open_es::{OpenEsAdam, OpenEsParams};
use crate::pgpe::PgpeParams;
use crate::rm_es::RmParams;
use crate::shaping::ShapingKind;
use crate::snes::SnesParams;
use crate::strategy::BugsKind;
use crate::sv_cma_es::SvCmaParams;
use crate::sv_open_es::SvOpenEsParams;
use crate::swarm::SwarmParams;
use crate::weighted_es::WeightedEsParams;
use crate::xnes::XnesParams;
use kestrel_core::FromInvalid;
use serde::{Deserialize, Serialize};

use StrategyKind as K;

/// Declares [`StrategyParams`] (one optional override per knob), the strategies that own
/// each knob (`OWNERS`, for errors) and [`StrategyParams::set_keys`], from one list, so a
/// knob's name is written once.
macro_rules! strategy_params {
    ($($(#[doc = $doc:expr])* $name:ident: $ty:ty => [$($owner:ident),+],)*) => {
        /// Overrides of a strategy's hyper-parameters; absent keys keep the strategy's
        /// reference default (which depends on the population size and dimension where the
        /// reference says so).
        #[derive(
            Clone, Debug, Default, PartialEq, Serialize, Deserialize, kestrel_core::Documented,
        )]
        #[serde(default, deny_unknown_fields)]
        pub struct StrategyParams {
            $($(#[doc = $doc])* pub $name: Option<$ty>,)*
        }

        /// Which strategies have each knob, in field order.
        const OWNERS: &[(&str, &[StrategyKind])] = &[$((stringify!($name), &[$(K::$owner),+]),)*];

        impl StrategyParams {
            /// The knobs that are set, by config name, in field order.
            pub fn set_keys(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $(if self.$name.is_some() {
                    keys.push(stringify!($name));
                })*
                keys
            }
        }
    };
}

strategy_params! {
    /// CMA-ES, Sep-CMA-ES, MA-ES, LM-MA-ES, MR15/SAMR/GESMR GA: lower clip of the step size or
    /// mutation rate (default 0; Rm-ES's 0.001).
    sigma_min: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs, LmMaEs, Mr15Ga, SamrGa, GesmrGa, RmEs],
    /// CMA-ES, Sep-CMA-ES, MA-ES, LM-MA-ES, Rm-ES: upper clip of the step size (default 1e8); MR15 GA
    /// (default inf), SAMR and GESMR GA (default 10): of the mutation rate.
    sigma_max: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs, LmMaEs, Mr15Ga, SamrGa, GesmrGa, RmEs],
    /// CMA-ES, Sep-CMA-ES, MA-ES, LM-MA-ES: learning rate of the mean (`c_m`, default 1).
    c_mean: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs, LmMaEs],
    /// CMA-ES, Sep-CMA-ES, MA-ES, LM-MA-ES: step-size path learning rate (`c_σ`, in (0, 1]);
    /// Rm-ES: the success rule's smoothing (default 0.3).
    c_sigma: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs, LmMaEs, RmEs],
    /// CMA-ES, Sep-CMA-ES, MA-ES, LM-MA-ES, Rm-ES: step-size damping (`d_σ`, > 0; Rm-ES's
    /// default 1).
    d_sigma: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs, LmMaEs, RmEs],
    /// CMA-ES, Sep-CMA-ES: covariance path learning rate (`c_c`, in (0, 1]); Rm-ES: its
    /// path's (default 2 / (n + 7)).
    c_c: f64 => [CmaEs, SvCmaEs, SepCmaEs, RmEs],
    /// CMA-ES, Sep-CMA-ES, MA-ES: rank-one learning rate (`c_1`; `c_1 + c_μ` at most 1);
    /// Rm-ES: the paths' weight (default 1 / (3√n + 5)).
    c_1: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs, RmEs],
    /// CMA-ES, Sep-CMA-ES, MA-ES: rank-μ learning rate (`c_μ`).
    c_mu: f64 => [CmaEs, SvCmaEs, SepCmaEs, MaEs],
    /// CMA-ES, SV-CMA-ES (each particle): decompose the covariance lazily (off: every
    /// generation, as evosax).
    lazy_eigen: bool => [CmaEs, SvCmaEs],
    /// CMA-ES, SV-CMA-ES: the lazy rule's constant (default 2.5; pycma's 0.1).
    lazy_gap: f64 => [CmaEs, SvCmaEs],
    /// SNES, xNES, CR-FM-NES: learning rate of the mean (default 1); EvoTF: scale of its
    /// mean update (evosax's `lr_mean`, default 1).
    lr_mean: f64 => [Snes, Xnes, CrFmNes, EvoTfEs],
    /// SNES, xNES: learning rate of the step sizes; EvoTF: scale of its log-step update
    /// (evosax's `lr_std`, default 1).
    lr_sigma: f64 => [Snes, Xnes, EvoTfEs],
    /// xNES: learning rate of the shape matrix B; CR-FM-NES: of its shape `v`, `D` (default
    /// tanh((min(0.02 λ, 3 ln n) + 5) / (0.23 n + 25))).
    lr_b: f64 => [Xnes, CrFmNes],
    /// OpenAI-ES: OpenEsAdam's learning rate (default 0.05); PGPE: ClipUp's (default 0.01); Simple
    /// ES, DES: SGD's on the mean (default 1); ARS, Persistent ES, Noise-Reuse ES, ASEBO:
    /// OpenEsAdam's (default 1e-3); ESMC: OpenEsAdam's at the start (default 1e-2); Guided ES: SGD's
    /// (default 1e-3); SV-OpenAI-ES: SGD's (default 1e-3).
    lr: f64 => [OpenEs, Pgpe, SimpleEs, Des, Ars, Esmc, PersistentEs, NoiseReuseEs, GuidedEs, Asebo, SvOpenEs],
    /// OpenAI-ES, ARS, ESMC, Persistent ES, Noise-Reuse ES, ASEBO: OpenEsAdam's first-moment decay
    /// (in [0, 1), default 0.9).
    beta1: f64 => [OpenEs, Ars, Esmc, PersistentEs, NoiseReuseEs, Asebo],
    /// OpenAI-ES, ARS, ESMC, Persistent ES, Noise-Reuse ES, ASEBO: OpenEsAdam's second-moment decay
    /// (in [0, 1), default 0.999).
    beta2: f64 => [OpenEs, Ars, Esmc, PersistentEs, NoiseReuseEs, Asebo],
    /// OpenAI-ES, ARS, ESMC, Persistent ES, Noise-Reuse ES, ASEBO: OpenEsAdam's epsilon (> 0,
    /// default 1e-8).
    eps: f64 => [OpenEs, Ars, Esmc, PersistentEs, NoiseReuseEs, Asebo],
    /// Persistent ES, Noise-Reuse ES: steps of one inner problem (evosax's `T`, ≥ 1, default
    /// 100).
    inner_steps: u64 => [PersistentEs, NoiseReuseEs],
    /// Persistent ES, Noise-Reuse ES: inner steps unrolled per generation (evosax's `K`, ≥ 1,
    /// default 10).
    unroll_steps: u64 => [PersistentEs, NoiseReuseEs],
    /// Guided ES: the full space's share of the sampling covariance (`α`, in [0, 1], default
    /// 0.5; the rest goes to the gradients' subspace); SV-OpenAI-ES, SV-CMA-ES: the kernel
    /// repulsion's weight (evosax's `alpha` too; >= 0, default 1).
    alpha: f64 => [GuidedEs, SvOpenEs, SvCmaEs],
    /// Guided ES: the gradient estimate's scale (`β`, > 0, default 1).
    beta: f64 => [GuidedEs],
    /// Guided ES, ASEBO: dimension of the gradient subspace (in 1..=num_dims, default 1).
    subspace_dims: usize => [GuidedEs, Asebo],
    /// ARS, ESMC: the learning rate's factor per `lr_decay_steps` updates (in (0, 1]; ESMC's
    /// default 0.98, ARS's 1).
    lr_decay: f64 => [Ars, Esmc],
    /// ARS, ESMC: updates per factor of `lr_decay` (> 0; ESMC's default 10).
    lr_decay_steps: f64 => [Ars, Esmc],
    /// ARS: the fraction of pairs whose differences make the gradient; simple GA: the fraction
    /// of the population that may parent (in (0, 1], default 0.5 for both).
    elite_ratio: f64 => [Ars, SimpleGa, SamrGa, GesmrGa],
    /// MR15 GA: the fraction of children beating their parent above which the rate doubles
    /// (in (0, 1), default 0.2, the 1/5 rule).
    std_ratio: f64 => [Mr15Ga],
    /// SAMR, GESMR GA: the base of the rates' mutation `σ · meta^u`, u ~ U(−1, 1) (> 1, default 2).
    std_meta: f64 => [SamrGa, GesmrGa],
    /// GESMR GA: groups of mutation rate (pop_size − 1 divisible by it; default 1).
    num_groups: usize => [GesmrGa],
    /// PSO: the velocity's inertia `w` (>= 0, default 0.75).
    inertia_coeff: f64 => [Pso],
    /// PSO: the pull to each particle's own best `c₁` (>= 0, default 1.5).
    cognitive_coeff: f64 => [Pso],
    /// PSO: the pull to the swarm's best `c₂` (>= 0, default 2).
    social_coeff: f64 => [Pso],
    /// Gradientless descent: the smallest sampling radius (> 0, default 0.001).
    radius_min: f64 => [GradientlessDescent],
    /// Gradientless descent: the largest sampling radius (default 0.2; at least radius_min).
    radius_max: f64 => [GradientlessDescent],
    /// Gradientless descent: candidates per halving of the radius (> 0, default 5).
    radius_decay: f64 => [GradientlessDescent],
    /// Simulated annealing: the starting temperature (> 0, default 1).
    temperature_init: f64 => [SimulatedAnnealing],
    /// Simulated annealing: the lowest temperature (> 0, default 0.1).
    temperature_limit: f64 => [SimulatedAnnealing],
    /// Simulated annealing: the temperature's factor per generation (in (0, 1], default 0.999).
    temperature_decay: f64 => [SimulatedAnnealing],
    /// Simulated annealing: Boltzmann's constant of the acceptance rule (> 0, default 5).
    boltzmann_constant: f64 => [SimulatedAnnealing],
    /// OpenAI-ES: mirrored sampling `z, −z` (default true; the population is even either way).
    antithetic: bool => [OpenEs],
    /// OpenAI-ES, PGPE: fitness shaping: centered-rank (default), z-score or raw.
    shaping: ShapingKind => [OpenEs, Pgpe],
    /// PGPE: learning rate of the step sizes (default 0.1); Simple ES, DES: the rate at which
    /// the step sizes move to the weighted spread (evosax's `c_std` / `lr_std`, default 0.1).
    sigma_lr: f64 => [Pgpe, SimpleEs, Des],
    /// DES: the temperature of its rank weights' sigmoid (default 12.5); Diffusion Evolution:
    /// of its energy weights exp(−f / T) (default 1).
    temperature: f64 => [Des, DiffusionEvolution],
    /// MA-ES, LM-MA-ES, simulated annealing, MR15 and GESMR GA, Rm-ES, iAMaLGaM, CR-FM-NES, xNES: evosax
    /// 0.3.2's bugs: `none`
    /// (fixed, default) or `all` (evosax's, to reproduce its runs; each strategy's docs name
    /// them).
    bugs: BugsKind => [MaEs, LmMaEs, SimulatedAnnealing, Mr15Ga, GesmrGa, RmEs, IamalgamFull, IamalgamUnivariate, CrFmNes, Xnes],
    /// SV-OpenAI-ES, SV-CMA-ES: particles, each a search with its own block of pop_size / k
    /// rows (a divisor of pop_size; SV-OpenAI-ES's blocks even, SV-CMA-ES's at least 4 rows;
    /// default the most, up to 4, that do: 4 for 16 rows).
    num_populations: usize => [SvOpenEs, SvCmaEs],
    /// SV-OpenAI-ES, SV-CMA-ES: the RBF kernel's length scale (`kernel_std`, > 0, default 1).
    kernel_std: f64 => [SvOpenEs, SvCmaEs],
    /// Diffusion Evolution: generations of its noise schedule (evosax's `num_generations`, in
    /// 2..=1048576, default 128; past them the population stays).
    num_generations: usize => [DiffusionEvolution],
    /// Diffusion Evolution: the noise schedule: cosine (default), ddim or ddpm.
    alpha_schedule: AlphaSchedule => [DiffusionEvolution],
    /// Diffusion Evolution: the DDIM noise scale (`std_m`, in (0, 1], default 1).
    std_m: f64 => [DiffusionEvolution],
    /// Diffusion Evolution: members are divided by it before each step, multiplied after
    /// (`scale_factor`, > 0, default 1).
    scale_factor: f64 => [DiffusionEvolution],
    /// Diffusion Evolution: weigh the members in a random projection to this many dimensions
    /// (evosax's `num_latent_dims`, in 1..=num_dims; default none).
    num_latent_dims: usize => [DiffusionEvolution],
    /// LES, LGA, CMA-anchored LES, EvoTF: the file of evosax 0.3.2's meta-learned weights it
    /// reads (evosax's `params_path`; required: Kestrel ships none; evosax's defaults are its
    /// `algorithms/ckpt/les/2023_10_les_v2.pkl`, `lga/2023_04_lga_v4.pkl` (`v7` above 50
    /// dimensions), `cma_anchored_les/2026_10_cma_anchored_les.pkl` and
    /// `evotf/2024_03_SNES_small.pkl`).
    params_path: String => [Les, Lga, CmaAnchoredLes, EvoTfEs],
    /// EvoTF: generations its transformer sees (evosax's `max_context_len`, in 1..=5000,
    /// default 100).
    max_context_len: usize => [EvoTfEs],
    /// Rm-ES: evolution paths kept (evosax's `m`, in 1..=1024, default 1).
    num_paths: usize => [RmEs],
    /// Rm-ES: the generation gap below which the closest pair of kept paths is thinned
    /// (evosax's `T`, > 0, default 20).
    path_gap: f64 => [RmEs],
    /// Rm-ES: the success rule's target rate (`q*`, in (0, 1), default 0.3).
    q_star: f64 => [RmEs],
    /// iAMaLGaM: the covariance's learning rate (`η_Σ`, in (0, 1]; default
    /// 1 − exp(−1.1 μ^1.2 / n^1.6), μ = λ/2).
    eta_std: f64 => [IamalgamFull, IamalgamUnivariate],
    /// iAMaLGaM: the mean shift's learning rate (in (0, 1]; default 1 − exp(−1.2 μ^0.31 / √n)).
    eta_shift: f64 => [IamalgamFull, IamalgamUnivariate],
    /// iAMaLGaM: the anticipated mean shift's step, in mean shifts (`δ_AMS`, >= 0, default 2).
    delta_ams: f64 => [IamalgamFull, IamalgamUnivariate],
    /// iAMaLGaM: the standard deviation ratio above which the variance multiplier grows
    /// (`θ_SDR`, > 0, default 1).
    theta_sdr: f64 => [IamalgamFull, IamalgamUnivariate],
    /// iAMaLGaM: generations without improvement before the variance multiplier may fall
    /// below 1 (default 50).
    nis_max_gens: u64 => [IamalgamFull, IamalgamUnivariate],
    /// PGPE: largest relative change of a step size per generation (default 0.2).
    sigma_max_change: f64 => [Pgpe],
    /// PGPE: ClipUp's largest velocity norm (default 0.02).
    max_velocity: f64 => [Pgpe],
    /// PGPE: ClipUp's momentum (in [0, 1), default 0.9).
    momentum: f64 => [Pgpe],
    /// DE: binomial crossover rate `CR` (in [0, 1], default 0.9); simple GA: each gene's chance
    /// to come from the second parent (in [0, 1], default 0).
    crossover_rate: f64 => [De, SimpleGa],
    /// DE: differential weight `F` (in (0, 2], default 0.8).
    differential_weight: f64 => [De],
    /// DE: the base vector is the current best (default true; false: a random member).
    elitism: bool => [De],
}

/// `value` inside `[lo, hi]` (each end open or closed), else an error naming `field`.
fn check(field: &str, value: f64, lo: (f64, bool), hi: (f64, bool)) -> Result<(), EvoError> {
    let above = if lo.1 { value >= lo.0 } else { value > lo.0 };
    let below = if hi.1 { value <= hi.0 } else { value < hi.0 };
    if value.is_finite() && above && below {
        return Ok(());
    }
    let l = if lo.1 { "[" } else { "(" };
    let h = if hi.1 { "]" } else { ")" };
    let hi_s = if hi.0.is_infinite() { "inf".to_string() } else { hi.0.to_string() };
    Err(EvoError::invalid(format!("params.{field}"), value, format!("in {l}{}, {hi_s}{h}", lo.0)))
}

const POS: (f64, bool) = (0.0, false);
const NONNEG: (f64, bool) = (0.0, true);
const INF: (f64, bool) = (f64::INFINITY, false);
const ONE: (f64, bool) = (1.0, true);
const BELOW_ONE: (f64, bool) = (1.0, false);
const TWO: (f64, bool) = (2.0, true);
const ABOVE_ONE: (f64, bool) = (1.0, false);

/// Copies each set override into the params: `field in LO..HI` checks the value first (a
/// closed or open end each, see [`check`]); a plain `field` (a flag or an enum) is copied.
macro_rules! set {
    ($s:ident, $p:ident: $($f:ident in $lo:ident..$hi:ident),+) => {
        $(if let Some(v) = $s.$f {
            check(stringify!($f), v, $lo, $hi)?;
            $p.$f = v;
        })+
    };
    ($s:ident, $p:ident: $($f:ident),+) => {
        $(if let Some(v) = $s.$f {
            $p.$f = v;
        })+
    };
}

impl StrategyParams {
    /// The knobs `kind` has, by config name, in field order (for messages that suggest only
    /// the keys of the strategy in use).
    pub fn keys_of(kind: StrategyKind) -> Vec<&'static str> {
        OWNERS.iter().filter(|(_, o)| o.contains(&kind)).map(|(k, _)| *k).collect()
    }

    /// The knobs `kind` has with their docs (which give the defaults), in field order: the
    /// one listing `kestrel evo strategies` and `kestrel.evo.strategies()` print.
    pub fn docs_of(kind: StrategyKind) -> Vec<(&'static str, &'static str)> {
        use kestrel_core::Documented;
        let fields = Self::fields();
        Self::keys_of(kind)
            .into_iter()
            .map(|key| (key, fields.iter().find(|f| f.name == key).map_or("", |f| f.doc)))
            .collect()
    }

    /// The strategies that have knob `key` (empty: no strategy has it).
    pub fn owners_of(key: &str) -> &'static [StrategyKind] {
        OWNERS.iter().find(|(k, _)| *k == key).map_or(&[], |(_, o)| o)
    }

    /// `"a, b and c"`: the strategies that have knob `key`, for messages.
    pub fn owner_list(key: &str) -> String {
        let names: Vec<&str> = Self::owners_of(key).iter().map(|o| o.name()).collect();
        match names.split_last() {
            None => String::new(),
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }

    /// Errors for a knob that `kind` does not have.
    pub fn check_for(&self, kind: StrategyKind) -> Result<(), EvoError> {
        for k in self.set_keys() {
            if !Self::owners_of(k).contains(&kind) {
                return Err(EvoError::invalid(
                    format!("params.{k}"),
                    format!("set for {}", kind.name()),
                    format!("a knob of {} only", Self::owner_list(k)),
                ));
            }
        }
        Ok(())
    }

    /// CMA-ES / Sep-CMA-ES params with these overrides.
    pub fn cma(&self, mut p: CmaParams) -> Result<CmaParams, EvoError> {
        set!(self, p: sigma_min in NONNEG..INF, sigma_max in POS..INF);
        if p.sigma_min > p.sigma_max {
            return Err(EvoError::invalid(
                "params.sigma_min",
                p.sigma_min,
                format!("at most sigma_max = {}", p.sigma_max),
            ));
        }
        set!(self, p: c_mean in POS..INF, c_sigma in POS..ONE, d_sigma in POS..INF);
        set!(self, p: c_c in POS..ONE, c_1 in NONNEG..ONE, c_mu in NONNEG..ONE);
        if p.c_1 + p.c_mu > 1.0 {
            return Err(EvoError::invalid("params.c_1 + params.c_mu", p.c_1 + p.c_mu, "at most 1"));
        }
        set!(self, p: lazy_gap in POS..INF);
        set!(self, p: lazy_eigen);
        Ok(p)
    }

    /// SNES params with these overrides.
    pub fn snes(&self, mut p: SnesParams) -> Result<SnesParams, EvoError> {
        set!(self, p: lr_mean in POS..INF, lr_sigma in POS..INF);
        Ok(p)
    }

    /// xNES params with these overrides.
    pub fn xnes(&self, mut p: XnesParams) -> Result<XnesParams, EvoError> {
        set!(self, p: lr_mean in POS..INF, lr_sigma in POS..INF, lr_b in POS..INF);
        set!(self, p: bugs);
        Ok(p)
    }

    /// OpenEsAdam with these overrides (`lr`, `beta1`, `beta2`, `eps`): OpenAI-ES's, ARS's, ESMC's.
    fn adam(&self, mut adam: OpenEsAdam) -> Result<OpenEsAdam, EvoError> {
        set!(self, adam: lr in POS..INF, beta1 in NONNEG..BELOW_ONE, beta2 in NONNEG..BELOW_ONE);
        set!(self, adam: eps in POS..INF);
        Ok(adam)
    }

    /// OpenAI-ES params with these overrides (`lr`, `beta1`, `beta2`, `eps` are OpenEsAdam's).
    pub fn open_es(&self, mut p: OpenEsParams) -> Result<OpenEsParams, EvoError> {
        p.adam = self.adam(p.adam)?;
        set!(self, p: antithetic, shaping);
        Ok(p)
    }

    /// PGPE params with these overrides.
    pub fn pgpe(&self, mut p: PgpeParams) -> Result<PgpeParams, EvoError> {
        set!(self, p: lr in POS..INF, sigma_lr in NONNEG..INF, sigma_max_change in NONNEG..INF);
        set!(self, p: max_velocity in POS..INF, momentum in NONNEG..BELOW_ONE);
        set!(self, p: shaping);
        Ok(p)
    }

    /// DES's rank-weight temperature: the override, checked, or `default`.
    pub fn temperature(&self, default: f64) -> Result<f64, EvoError> {
        match self.temperature {
            Some(v) => check("temperature", v, POS, INF).map(|()| v),
            None => Ok(default),
        }
    }

    /// Simple ES / DES params with these overrides (`temperature` is read by
    /// [`StrategyKind::build_with`] through [`StrategyParams::temperature`]: it makes the
    /// weights).
    pub fn weighted(&self, mut p: WeightedEsParams) -> Result<WeightedEsParams, EvoError> {
        set!(self, p: lr in POS..INF, sigma_lr in NONNEG..ONE);
        Ok(p)
    }

    /// ARS / ESMC params with these overrides.
    pub fn antithetic(&self, mut p: AntitheticParams) -> Result<AntitheticParams, EvoError> {
        p.adam = self.adam(p.adam)?;
        set!(self, p: lr_decay in POS..ONE, lr_decay_steps in POS..INF, elite_ratio in POS..ONE);
        Ok(p)
    }

    /// Persistent ES / Noise-Reuse ES / Guided ES / ASEBO params with these overrides
    /// (`subspace_dims` is read by [`StrategyKind::build_with`], which sizes the strategy).
    pub fn gradient(&self, mut p: GradientEsParams) -> Result<GradientEsParams, EvoError> {
        p.adam = self.adam(p.adam)?;
        for (key, v) in [("inner_steps", self.inner_steps), ("unroll_steps", self.unroll_steps)] {
            if v == Some(0) {
                return Err(EvoError::invalid(format!("params.{key}"), 0, "at least 1"));
            }
        }
        set!(self, p: inner_steps, unroll_steps);
        set!(self, p: alpha in NONNEG..ONE, beta in POS..INF);
        Ok(p)
    }

    /// Local-search params with these overrides.
    pub fn local(&self, mut p: LocalParams) -> Result<LocalParams, EvoError> {
        set!(self, p: radius_min in POS..INF, radius_max in POS..INF, radius_decay in POS..INF);
        if p.radius_max < p.radius_min {
            return Err(EvoError::invalid(
                "params.radius_max",
                p.radius_max,
                format!("at least radius_min = {}", p.radius_min),
            ));
        }
        set!(self, p: temperature_init in POS..INF, temperature_limit in POS..INF);
        set!(self, p: temperature_decay in POS..ONE, boltzmann_constant in POS..INF);
        set!(self, p: bugs);
        Ok(p)
    }

    /// PSO / simple GA params with these overrides.
    pub fn swarm(&self, mut p: SwarmParams) -> Result<SwarmParams, EvoError> {
        set!(self, p: inertia_coeff in NONNEG..INF, cognitive_coeff in NONNEG..INF);
        set!(self, p: social_coeff in NONNEG..INF, crossover_rate in NONNEG..ONE);
        set!(self, p: elite_ratio in POS..ONE);
        Ok(p)
    }

    /// MR15 / SAMR / GESMR GA params with these overrides (`num_groups` is read by
    /// [`StrategyKind::build_with`], which sizes the strategy).
    pub fn ga(&self, mut p: GaParams) -> Result<GaParams, EvoError> {
        set!(self, p: sigma_min in NONNEG..INF);
        if let Some(v) = self.sigma_max {
            if v.is_nan() || v <= 0.0 {
                return Err(EvoError::invalid("params.sigma_max", v, "> 0 (inf allowed)"));
            }
            p.sigma_max = v;
        }
        if p.sigma_min > p.sigma_max {
            return Err(EvoError::invalid(
                "params.sigma_min",
                p.sigma_min,
                format!("at most sigma_max = {}", p.sigma_max),
            ));
        }
        set!(self, p: std_ratio in POS..BELOW_ONE, elite_ratio in POS..ONE);
        set!(self, p: std_meta in ABOVE_ONE..INF);
        set!(self, p: bugs);
        Ok(p)
    }

    /// Diffusion Evolution params with these overrides (`num_generations`, `alpha_schedule` and
    /// `num_latent_dims` are read by [`StrategyKind::build_with`], which sizes the strategy).
    pub fn diffusion(&self, mut p: DiffusionParams) -> Result<DiffusionParams, EvoError> {
        set!(self, p: std_m in POS..ONE, scale_factor in POS..INF, temperature in POS..INF);
        Ok(p)
    }

    /// SV-OpenAI-ES params with these overrides (`num_populations` is read by
    /// [`StrategyKind::build_with`], which sizes the strategy).
    pub fn sv(&self, mut p: SvOpenEsParams) -> Result<SvOpenEsParams, EvoError> {
        set!(self, p: lr in POS..INF, kernel_std in POS..INF);
        set!(self, p: alpha in NONNEG..INF);
        Ok(p)
    }

    /// SV-CMA-ES params with these overrides (its particles' CMA-ES rates go through
    /// [`StrategyParams::cma`]; `num_populations` is read by [`StrategyKind::build_with`]).
    pub fn sv_cma(&self, mut p: SvCmaParams) -> Result<SvCmaParams, EvoError> {
        set!(self, p: kernel_std in POS..INF);
        set!(self, p: alpha in NONNEG..INF);
        Ok(p)
    }

    /// LES params with these overrides (`params_path` is read by
    /// [`StrategyKind::build_with`], which loads the networks).
    pub fn les(&self, p: LesParams) -> Result<LesParams, EvoError> {
        Ok(p)
    }

    /// EvoTF params with these overrides (`params_path` and `max_context_len` are read by
    /// [`StrategyKind::build_with`], which loads the networks and sizes the context).
    pub fn evotf(&self, mut p: EvoTfParams) -> Result<EvoTfParams, EvoError> {
        set!(self, p: lr_mean in POS..INF, lr_sigma in POS..INF);
        Ok(p)
    }

    /// CR-FM-NES params with these overrides.
    pub fn cr_fm_nes(&self, mut p: CrFmNesParams) -> Result<CrFmNesParams, EvoError> {
        set!(self, p: lr_mean in POS..INF, lr_b in POS..INF);
        set!(self, p: bugs);
        Ok(p)
    }

    /// Rm-ES params with these overrides (its CMA-ES rates go through [`StrategyParams::cma`];
    /// `num_paths` is read by [`StrategyKind::build_with`], which sizes the strategy).
    pub fn rm(&self, mut p: RmParams) -> Result<RmParams, EvoError> {
        set!(self, p: path_gap in POS..INF, q_star in POS..BELOW_ONE);
        set!(self, p: bugs);
        Ok(p)
    }

    /// iAMaLGaM params with these overrides.
    pub fn amalgam(&self, mut p: AmalgamParams) -> Result<AmalgamParams, EvoError> {
        set!(self, p: eta_std in POS..ONE, eta_shift in POS..ONE, delta_ams in NONNEG..INF);
        set!(self, p: theta_sdr in POS..INF);
        set!(self, p: nis_max_gens, bugs);
        Ok(p)
    }

    /// DE params with these overrides.
    pub fn de(&self, mut p: DeParams) -> Result<DeParams, EvoError> {
        set!(self, p: crossover_rate in NONNEG..ONE, differential_weight in POS..TWO);
        set!(self, p: elitism);
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_core::Documented;

    #[test]
    fn every_knob_has_owners_and_a_doc() {
        let fields: Vec<&str> = StrategyParams::fields().iter().map(|f| f.name).collect();
        let owned: Vec<&str> = OWNERS.iter().map(|(k, _)| *k).collect();
        assert_eq!(fields, owned);
        let all = StrategyParams {
            sigma_min: Some(0.0),
            lazy_eigen: Some(true),
            shaping: Some(ShapingKind::Raw),
            elitism: Some(false),
            ..StrategyParams::default()
        };
        assert_eq!(all.set_keys(), ["sigma_min", "lazy_eigen", "shaping", "elitism"]);
        // Each key alone reads back as exactly that key (the `set` list follows OWNERS).
        for (k, _) in OWNERS {
            let one =
                [0.5.into(), true.into(), "raw".into(), "all".into(), 3.into(), "ddpm".into()]
                    .into_iter()
                    .find_map(|v| {
                        let v: serde_json::Value = v;
                        serde_json::from_value::<StrategyParams>(serde_json::json!({ *k: v })).ok()
                    })
                    .unwrap_or_else(|| panic!("{k}: no value parses"));
            assert_eq!(one.set_keys(), [*k]);
        }
    }

    #[test]
    fn knobs_of_other_strategies_and_values_out_of_range_are_refused_by_name() {
        let p = StrategyParams { lr: Some(0.01), ..StrategyParams::default() };
        p.check_for(StrategyKind::OpenEs).unwrap();
        p.check_for(StrategyKind::Pgpe).unwrap();
        let e = p.check_for(StrategyKind::CmaEs).unwrap_err().to_string();
        assert!(e.contains("params.lr") && e.contains("a knob of open-es, pgpe, "), "{e}");
        assert!(e.contains(" and sv-open-es only"), "{e}");
        for (bad, want) in [
            (StrategyParams { beta1: Some(1.0), ..Default::default() }, "params.beta1"),
            (StrategyParams { lr: Some(f64::NAN), ..Default::default() }, "params.lr"),
            (StrategyParams { eps: Some(0.0), ..Default::default() }, "params.eps"),
        ] {
            let o = OpenEsParams {
                sigma: 0.1,
                adam: crate::open_es::OpenEsAdam::default(),
                antithetic: true,
                shaping: ShapingKind::CenteredRank,
            };
            let e = bad.open_es(o).unwrap_err().to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        let d = DeParams {
            sigma_init: 1.0,
            crossover_rate: 0.9,
            differential_weight: 0.8,
            elitism: true,
        };
        let e = StrategyParams { crossover_rate: Some(1.5), ..Default::default() }.de(d.clone());
        assert!(e.unwrap_err().to_string().contains("params.crossover_rate"));
        let got =
            StrategyParams { differential_weight: Some(0.5), ..Default::default() }.de(d).unwrap();
        assert_eq!(got.differential_weight, 0.5);
    }
}
