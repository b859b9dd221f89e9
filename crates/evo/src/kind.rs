//! The names of the strategies: [`StrategyKind`], with evosax 0.3.2's spellings, each
//! strategy's population-size rule and the Stein variational particle counts. Below the
//! hyper-parameters (`crate::hyper`) and the driver (`crate::driver`), which build a strategy
//! from a kind; it imports neither.

use crate::cma_es::default_pop_size;
use crate::error::EvoError;
use kestrel_core::FromInvalid;

/// Every strategy, by name. Serialised in kebab-case (`cma-es`, `sep-cma-es`, `snes`,
/// `xnes`, `open-es`, `pgpe`, `de`, `simple-es`, `des`, `ma-es`, `lm-ma-es`); read from its
/// kebab-case name or evosax 0.3.2's (`CMA_ES`, `Sep_CMA_ES`, `Open_ES`, `LM_MA_ES`, ...), in
/// any case and with `-` or `_` ([`StrategyKind::parse`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", try_from = "String")]
pub enum StrategyKind {
    /// [`CmaEs`](crate::CmaEs).
    CmaEs,
    /// [`SepCmaEs`](crate::SepCmaEs).
    SepCmaEs,
    /// [`Snes`](crate::Snes).
    Snes,
    /// [`Xnes`](crate::Xnes).
    Xnes,
    /// [`OpenEs`](crate::OpenEs) (antithetic: even population).
    OpenEs,
    /// [`Pgpe`](crate::Pgpe) (antithetic: even population).
    Pgpe,
    /// [`DifferentialEvolution`](crate::DifferentialEvolution).
    De,
    /// [`WeightedEs`](crate::WeightedEs) with the elite rule (evosax `SimpleES`).
    SimpleEs,
    /// [`WeightedEs`](crate::WeightedEs) with the discovered rule (evosax `DiscoveredES`, the `DES` entry).
    Des,
    /// [`MaEs`](crate::MaEs), full matrix (evosax `MA_ES`).
    MaEs,
    /// [`MaEs`](crate::MaEs), limited memory (evosax `LM_MA_ES`).
    LmMaEs,
    /// [`Antithetic`](crate::Antithetic), Augmented Random Search (evosax `ARS`; even population).
    Ars,
    /// [`Antithetic`](crate::Antithetic), ESMC (evosax `ESMC`; even population, at least 4).
    Esmc,
    /// [`LocalSearch`](crate::LocalSearch), hill climbing (evosax `HillClimbing`).
    HillClimbing,
    /// [`LocalSearch`](crate::LocalSearch), random search around the start (evosax `RandomSearch`).
    RandomSearch,
    /// [`LocalSearch`](crate::LocalSearch), simulated annealing (evosax `SimulatedAnnealing`).
    SimulatedAnnealing,
    /// [`LocalSearch`](crate::LocalSearch), gradientless descent (evosax `GradientlessDescent`).
    GradientlessDescent,
    /// [`Swarm`](crate::Swarm), particle swarm optimisation (evosax `PSO`).
    Pso,
    /// [`Swarm`](crate::Swarm), the simple genetic algorithm (evosax `SimpleGA`).
    SimpleGa,
    /// [`Ga`](crate::Ga), the 1/5 success rule (evosax `MR15_GA`).
    Mr15Ga,
    /// [`Ga`](crate::Ga), self-adaptive mutation rates (evosax `SAMR_GA`).
    SamrGa,
    /// [`Ga`](crate::Ga), group elite selection of mutation rates (evosax `GESMR_GA`).
    GesmrGa,
    /// [`GradientEs`](crate::GradientEs), Persistent ES over unrolled inner problems (evosax `PersistentES`;
    /// even population).
    PersistentEs,
    /// [`GradientEs`](crate::GradientEs), Noise-Reuse ES over unrolled inner problems (evosax `NoiseReuseES`;
    /// even population).
    NoiseReuseEs,
    /// [`GradientEs`](crate::GradientEs), Guided ES along the surrogate gradients given (evosax `GuidedES`; even
    /// population).
    GuidedEs,
    /// [`GradientEs`](crate::GradientEs), ASEBO's learned gradient subspace (evosax `ASEBO`; even population).
    Asebo,
    /// [`RmEs`](crate::RmEs), the rank-m evolution strategy (evosax `Rm_ES`).
    RmEs,
    /// [`Amalgam`](crate::Amalgam), full covariance (evosax `iAMaLGaM_Full`).
    IamalgamFull,
    /// [`Amalgam`](crate::Amalgam), one variance per coordinate (evosax `iAMaLGaM_Univariate`).
    IamalgamUnivariate,
    /// [`CrFmNes`](crate::CrFmNes), the cost-reduced fast-moving NES (evosax `CR_FM_NES`; even population).
    CrFmNes,
    /// [`SvOpenEs`](crate::SvOpenEs), Stein variational OpenAI-ES (evosax `SV_Open_ES`; `num_populations`
    /// particles of an even size each).
    SvOpenEs,
    /// [`SvCmaEs`](crate::SvCmaEs), Stein variational CMA-ES (evosax `SV_CMA_ES`; `num_populations` CMA-ES
    /// particles of at least 4 rows each).
    SvCmaEs,
    /// [`DiffusionEvolution`](crate::DiffusionEvolution), evolution as DDIM denoising (evosax `DiffusionEvolution`).
    DiffusionEvolution,
    /// [`Les`](crate::Les), the learned evolution strategy (evosax `LES` / `LearnedES`; its weights from
    /// evosax's checkpoint at `params_path`).
    Les,
    /// [`Lga`](crate::Lga), the learned genetic algorithm (evosax `LGA` / `LearnedGA`; its weights from
    /// evosax's checkpoint at `params_path`).
    Lga,
    /// [`CmaAnchoredLes`](crate::CmaAnchoredLes), separable CMA-ES with meta-learned gates (evosax
    /// `CMAAnchoredLES`; its weights from evosax's checkpoint at `params_path`).
    CmaAnchoredLes,
    /// [`EvoTf`](crate::EvoTf), the Evolution Transformer (evosax `EvoTF_ES`; its weights and architecture
    /// from evosax's checkpoint at `params_path`).
    #[serde(rename = "evotf-es")]
    EvoTfEs,
}

/// The Stein variational strategies' default number of particles for `pop_size` rows (evosax
/// takes it as a required argument): the most, up to 4, that split the rows into blocks of an
/// even size (16 rows: 4 of 4; 12: 3 of 4; 14: 1 of 14).
pub fn sv_default_particles(pop_size: usize) -> usize {
    (1..=4).rev().find(|k| pop_size.is_multiple_of(2 * k)).unwrap_or(1)
}

/// SV-CMA-ES's default number of particles for `pop_size` rows: the most, up to 4, that split
/// the rows into blocks of at least 4 (CMA-ES's smallest population): 40 rows: 4 of 10; 12: 3
/// of 4; 10: 2 of 5; 7: 1 of 7.
pub fn sv_cma_default_particles(pop_size: usize) -> usize {
    (1..=4).rev().find(|&k| pop_size.is_multiple_of(k) && pop_size / k >= 4).unwrap_or(1)
}

impl TryFrom<String> for StrategyKind {
    type Error = EvoError;
    fn try_from(s: String) -> Result<Self, EvoError> {
        Self::parse(&s)
    }
}

/// evosax 0.3.2's algorithm names (`evosax.algorithms`, the 29 distribution-based and 8
/// population-based entries jax_mppi's `EvoSaxOptimizer` looks up with `getattr`), each with
/// the Kestrel strategy it names.
pub const EVOSAX_NAMES: [(&str, StrategyKind); 37] = [
    ("ARS", StrategyKind::Ars),
    ("ASEBO", StrategyKind::Asebo),
    ("CMAAnchoredLES", StrategyKind::CmaAnchoredLes),
    ("CMA_ES", StrategyKind::CmaEs),
    ("CR_FM_NES", StrategyKind::CrFmNes),
    ("DES", StrategyKind::Des),
    ("ESMC", StrategyKind::Esmc),
    ("EvoTF_ES", StrategyKind::EvoTfEs),
    ("GradientlessDescent", StrategyKind::GradientlessDescent),
    ("GuidedES", StrategyKind::GuidedEs),
    ("HillClimbing", StrategyKind::HillClimbing),
    ("iAMaLGaM_Full", StrategyKind::IamalgamFull),
    ("iAMaLGaM_Univariate", StrategyKind::IamalgamUnivariate),
    ("LES", StrategyKind::Les),
    ("LM_MA_ES", StrategyKind::LmMaEs),
    ("MA_ES", StrategyKind::MaEs),
    ("NoiseReuseES", StrategyKind::NoiseReuseEs),
    ("Open_ES", StrategyKind::OpenEs),
    ("PersistentES", StrategyKind::PersistentEs),
    ("PGPE", StrategyKind::Pgpe),
    ("RandomSearch", StrategyKind::RandomSearch),
    ("Rm_ES", StrategyKind::RmEs),
    ("Sep_CMA_ES", StrategyKind::SepCmaEs),
    ("SimulatedAnnealing", StrategyKind::SimulatedAnnealing),
    ("SimpleES", StrategyKind::SimpleEs),
    ("SNES", StrategyKind::Snes),
    ("SV_CMA_ES", StrategyKind::SvCmaEs),
    ("SV_Open_ES", StrategyKind::SvOpenEs),
    ("xNES", StrategyKind::Xnes),
    ("DifferentialEvolution", StrategyKind::De),
    ("DiffusionEvolution", StrategyKind::DiffusionEvolution),
    ("GESMR_GA", StrategyKind::GesmrGa),
    ("LGA", StrategyKind::Lga),
    ("MR15_GA", StrategyKind::Mr15Ga),
    ("PSO", StrategyKind::Pso),
    ("SAMR_GA", StrategyKind::SamrGa),
    ("SimpleGA", StrategyKind::SimpleGa),
];

/// evosax's class names where its registry key differs (`evosax.algorithms.DiscoveredES` is
/// the registry's `DES`): the names `getattr(evosax.algorithms, name)` finds, as jax_mppi's
/// optimizer looks them up.
pub const EVOSAX_CLASS_NAMES: [(&str, &str); 3] =
    [("DiscoveredES", "DES"), ("LearnedES", "LES"), ("LearnedGA", "LGA")];

/// A name folded for matching: lower case, `_` as `-`.
fn fold(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('_', "-")
}

impl StrategyKind {
    /// Every strategy, in documentation order.
    pub const ALL: [StrategyKind; 37] = [
        StrategyKind::CmaEs,
        StrategyKind::SepCmaEs,
        StrategyKind::Snes,
        StrategyKind::Xnes,
        StrategyKind::OpenEs,
        StrategyKind::Pgpe,
        StrategyKind::De,
        StrategyKind::SimpleEs,
        StrategyKind::Des,
        StrategyKind::MaEs,
        StrategyKind::LmMaEs,
        StrategyKind::Ars,
        StrategyKind::Esmc,
        StrategyKind::HillClimbing,
        StrategyKind::RandomSearch,
        StrategyKind::SimulatedAnnealing,
        StrategyKind::GradientlessDescent,
        StrategyKind::Pso,
        StrategyKind::SimpleGa,
        StrategyKind::Mr15Ga,
        StrategyKind::SamrGa,
        StrategyKind::GesmrGa,
        StrategyKind::PersistentEs,
        StrategyKind::NoiseReuseEs,
        StrategyKind::GuidedEs,
        StrategyKind::Asebo,
        StrategyKind::RmEs,
        StrategyKind::IamalgamFull,
        StrategyKind::IamalgamUnivariate,
        StrategyKind::CrFmNes,
        StrategyKind::SvOpenEs,
        StrategyKind::SvCmaEs,
        StrategyKind::DiffusionEvolution,
        StrategyKind::Les,
        StrategyKind::Lga,
        StrategyKind::CmaAnchoredLes,
        StrategyKind::EvoTfEs,
    ];

    /// The config spelling.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::CmaEs => "cma-es",
            StrategyKind::SepCmaEs => "sep-cma-es",
            StrategyKind::Snes => "snes",
            StrategyKind::Xnes => "xnes",
            StrategyKind::OpenEs => "open-es",
            StrategyKind::Pgpe => "pgpe",
            StrategyKind::De => "de",
            StrategyKind::SimpleEs => "simple-es",
            StrategyKind::Des => "des",
            StrategyKind::MaEs => "ma-es",
            StrategyKind::LmMaEs => "lm-ma-es",
            StrategyKind::Ars => "ars",
            StrategyKind::Esmc => "esmc",
            StrategyKind::HillClimbing => "hill-climbing",
            StrategyKind::RandomSearch => "random-search",
            StrategyKind::SimulatedAnnealing => "simulated-annealing",
            StrategyKind::GradientlessDescent => "gradientless-descent",
            StrategyKind::Pso => "pso",
            StrategyKind::SimpleGa => "simple-ga",
            StrategyKind::Mr15Ga => "mr15-ga",
            StrategyKind::SamrGa => "samr-ga",
            StrategyKind::GesmrGa => "gesmr-ga",
            StrategyKind::PersistentEs => "persistent-es",
            StrategyKind::NoiseReuseEs => "noise-reuse-es",
            StrategyKind::GuidedEs => "guided-es",
            StrategyKind::Asebo => "asebo",
            StrategyKind::RmEs => "rm-es",
            StrategyKind::IamalgamFull => "iamalgam-full",
            StrategyKind::IamalgamUnivariate => "iamalgam-univariate",
            StrategyKind::CrFmNes => "cr-fm-nes",
            StrategyKind::SvOpenEs => "sv-open-es",
            StrategyKind::SvCmaEs => "sv-cma-es",
            StrategyKind::DiffusionEvolution => "diffusion-evolution",
            StrategyKind::Les => "les",
            StrategyKind::Lga => "lga",
            StrategyKind::CmaAnchoredLes => "cma-anchored-les",
            StrategyKind::EvoTfEs => "evotf-es",
        }
    }

    /// evosax 0.3.2's name of this strategy.
    pub fn evosax_name(self) -> &'static str {
        EVOSAX_NAMES.iter().find(|(_, k)| *k == self).map(|(n, _)| *n).unwrap_or("")
    }

    /// The strategy named `name`: its config spelling or evosax's, in any case, with `-` or
    /// `_` (`cma-es`, `CMA_ES`, `cma_es`, `Sep_CMA_ES`, `open_es`, `lm-ma-es`, `SimpleES`,
    /// `DifferentialEvolution`, ...); any other name is an error naming the closest and
    /// listing all.
    pub fn parse(name: &str) -> Result<Self, EvoError> {
        let f = fold(name);
        if let Some(k) = Self::ALL.into_iter().find(|k| k.name() == f) {
            return Ok(k);
        }
        let key = EVOSAX_CLASS_NAMES.iter().find(|(c, _)| fold(c) == f).map(|(_, k)| fold(k));
        let f = key.unwrap_or(f);
        if let Some((_, kind)) = EVOSAX_NAMES.iter().find(|(n, _)| fold(n) == f) {
            return Ok(*kind);
        }
        let all = Self::ALL.iter().map(|k| k.name()).chain(EVOSAX_NAMES.iter().map(|(n, _)| *n));
        let near = kestrel_core::closest(name, all)
            .map_or(String::new(), |c| format!("did you mean {c:?}? "));
        Err(EvoError::invalid(
            "strategy",
            format!("{name:?}"),
            format!("{near}{}", Self::accepted_names()),
        ))
    }

    /// The meta-learned strategies' default weights: the file of evosax 0.3.2's
    /// `algorithms/ckpt` folder its `__init__` loads when given no `params_path`
    /// at `num_dims` (`les/2023_10_les_v2.pkl` for LES; LGA's `lga/2023_04_lga_v4.pkl` up to
    /// 50 dimensions, `v7` above); `None` for every other strategy.
    pub fn evosax_weights(self, num_dims: usize) -> Option<&'static str> {
        match self {
            StrategyKind::Les => Some("les/2023_10_les_v2.pkl"),
            StrategyKind::Lga if num_dims > 50 => Some("lga/2023_04_lga_v7.pkl"),
            StrategyKind::Lga => Some("lga/2023_04_lga_v4.pkl"),
            StrategyKind::CmaAnchoredLes => Some("cma_anchored_les/2026_10_cma_anchored_les.pkl"),
            StrategyKind::EvoTfEs => Some("evotf/2024_03_SNES_small.pkl"),
            _ => None,
        }
    }

    /// `"cma-es, sep-cma-es, ..."`, for error messages.
    pub fn accepted_names() -> String {
        format!(
            "one of {} (or evosax's names: {})",
            Self::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
            Self::ALL.iter().map(|k| k.evosax_name()).collect::<Vec<_>>().join(", ")
        )
    }

    /// The default population for `num_dims`: `4 + ⌊3 ln n⌋` (Hansen's rule) for every
    /// strategy, at least 16 and even for the antithetic ones (OpenAI-ES, PGPE), at least
    /// `10 min(n, 10)` for differential evolution.
    pub fn default_pop_size(self, num_dims: usize) -> usize {
        let def = default_pop_size(num_dims);
        match self {
            k if k.antithetic() => {
                let p = def.max(16);
                p + p % 2
            }
            StrategyKind::De => def.max(10 * num_dims.min(10)),
            // Four CMA-ES particles of Hansen's size each.
            StrategyKind::SvCmaEs => 4 * def,
            _ => def,
        }
    }

    /// Whether the strategy samples mirrored pairs (its population is even).
    pub fn antithetic(self) -> bool {
        matches!(
            self,
            StrategyKind::OpenEs
                | StrategyKind::Pgpe
                | StrategyKind::Ars
                | StrategyKind::Esmc
                | StrategyKind::PersistentEs
                | StrategyKind::NoiseReuseEs
                | StrategyKind::GuidedEs
                | StrategyKind::Asebo
                | StrategyKind::CrFmNes
                | StrategyKind::SvOpenEs
        )
    }

    /// The smallest population the strategy accepts.
    pub fn min_pop_size(self) -> usize {
        match self {
            StrategyKind::CmaEs
            | StrategyKind::SepCmaEs
            | StrategyKind::De
            | StrategyKind::MaEs
            | StrategyKind::LmMaEs
            | StrategyKind::RmEs
            | StrategyKind::CrFmNes
            | StrategyKind::SvCmaEs
            | StrategyKind::Esmc => 4,
            StrategyKind::HillClimbing
            | StrategyKind::RandomSearch
            | StrategyKind::SimulatedAnnealing
            | StrategyKind::GradientlessDescent => 1,
            _ => 2,
        }
    }

    /// `requested` checked for the strategy (the default when `None`). Sizes below
    /// [`StrategyKind::min_pop_size`] are errors, and so are odd sizes for the antithetic
    /// strategies (OpenAI-ES, PGPE), which sample in mirrored pairs: a size is never changed
    /// behind the user's back.
    pub fn pop_size(self, requested: Option<usize>, num_dims: usize) -> Result<usize, EvoError> {
        let Some(p) = requested else { return Ok(self.default_pop_size(num_dims)) };
        if p < self.min_pop_size() {
            return Err(EvoError::invalid(
                "pop_size",
                p,
                format!("at least {} for {}", self.min_pop_size(), self.name()),
            ));
        }
        if self.antithetic() && p % 2 == 1 {
            return Err(EvoError::invalid(
                "pop_size",
                p,
                format!("an even number for {} (it samples antithetic pairs)", self.name()),
            ));
        }
        Ok(p)
    }

    /// Checks, before anything is allocated, that this strategy's state at `num_dims` with the
    /// population `requested` (absent: its default for `num_dims`) fits
    /// [`kestrel_core::MAX_BYTES`]: the population it resolves to, or an error naming the
    /// size that makes it big (`pop_size` where a smaller population would fit, else
    /// `num_dims`) with the estimate ([`StrategyKind::state_bytes`]).
    pub fn check_memory(
        self,
        requested: Option<usize>,
        num_dims: usize,
    ) -> Result<usize, EvoError> {
        if num_dims == 0 {
            return Err(EvoError::invalid("num_dims", num_dims, "at least 1"));
        }
        let pop = self.pop_size(requested, num_dims)?;
        let bytes = self.state_bytes(num_dims, pop);
        if bytes <= kestrel_core::MAX_BYTES {
            return Ok(pop);
        }
        let at_min = self.state_bytes(num_dims, self.min_pop_size().max(1));
        let (field, value) = match requested {
            Some(p) if at_min <= kestrel_core::MAX_BYTES => ("pop_size", p),
            _ => ("num_dims", num_dims),
        };
        Err(EvoError::invalid(
            field,
            value,
            format!(
                "a size whose memory fits: {} at num_dims = {num_dims} with pop_size = {pop} needs \
                 about {} (the limit is {})",
                self.name(),
                kestrel_core::human(bytes),
                kestrel_core::human(kestrel_core::MAX_BYTES)
            ),
        ))
    }
}

impl std::fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for StrategyKind {
    type Err = EvoError;
    fn from_str(s: &str) -> Result<Self, EvoError> {
        Self::parse(s)
    }
}
