//! Genetic algorithms that adapt their mutation rate: the 1/5 success rule, self-adaptation
//! per member, and group elite selection of mutation rates. Like [`crate::swarm::Swarm`], evosax's
//! `init(population, fitness)` is Kestrel's generation 0 (`ask` draws `x0 + σ z`, `tell`
//! stores it); every later generation mutates the kept population.
//!
//! | rule | children | mutation rate | paper | evosax 0.3.2 |
//! |---|---|---|---|---|
//! | [`GaRule::Mr15`] | each member `+ σ z`; the best `λ` of parents and children kept | ×2 when more than `std_ratio` (0.2) of the children beat their parent, else ×½ | Rechenberg, "Evolutionsstrategien", 1978 (the 1/5 rule) | `population_based/mr15_ga.py` |
//! | [`GaRule::Samr`] | the best member, then `λ − 1` elites drawn uniformly, each `+ σ_i z` | each child's own `σ_i = σ_parent · meta^u`, `u ~ U(−1, 1)` | Clune et al., "Natural selection fails to optimize mutation rates for long-term adaptation on rugged fitness landscapes", PLoS CB 2008 | `population_based/samr_ga.py` |
//! | [`GaRule::Gesmr`] | the best member unmutated, then `λ − 1` elites drawn uniformly in `g` groups, group `k` `+ σ_k z` | groups ranked by their best improvement, the best kept, the others drawn from the best half, each `· meta^u` | Kumar et al., "Effective Mutation Rate Adaptation through Group Elite Selection", GECCO 2022 | `population_based/gesmr_ga.py` |
//!
//! evosax's defaults: `std_init` 1 (Kestrel's σ), elite ratio 0.5; MR15 `std_ratio` 0.2,
//! `std_min` 0, `std_max` ∞; SAMR and GESMR `std_meta` 2, `std_min` 0, `std_max` 10; GESMR one
//! group (`λ − 1` must divide into the groups). NaN fitness ranks worst.
//!
//! evosax's bug (`bugs = "all"`, [`BugsKind`]): it keeps a failed member's fitness as NaN and
//! compares with it, so in MR15 a finite child of a NaN parent never counts as a success, and
//! in GESMR a group with a NaN child or parent ranks last whatever its other members did.
//! Kestrel's default reads NaN as `+inf`, the worst value: any finite child beats a failed
//! parent, and a group is ranked by its finite improvements.

use crate::error::EvoError;
use crate::error::check_sizes;
use crate::strategy::{BugsKind, Progress, Strategy, TellMetrics, check_lens, to_row};
use crate::swarm::{best_or_start, first_population};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// Which genetic algorithm a [`Ga`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaRule {
    /// The 1/5 success rule.
    Mr15,
    /// Self-adaptive mutation rates.
    Samr,
    /// Group elite selection of mutation rates.
    Gesmr,
}

/// A mutation-rate-adapting GA over `num_dims` with `pop_size` members.
#[derive(Clone, Debug)]
pub struct Ga {
    pop_size: usize,
    num_dims: usize,
    rule: GaRule,
    groups: usize,
}

/// [`Ga`]'s hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct GaParams {
    /// The first population's spread and the starting mutation rate.
    pub sigma: f64,
    /// Lower clip of the mutation rates.
    pub sigma_min: f64,
    /// Upper clip of the mutation rates.
    pub sigma_max: f64,
    /// MR15: the success fraction above which the rate doubles.
    pub std_ratio: f64,
    /// SAMR, GESMR: the rates' mutation base `meta` (`σ · meta^u`).
    pub std_meta: f64,
    /// The fraction of the population that may parent.
    pub elite_ratio: f64,
    /// evosax's bugs (see the module notes).
    pub bugs: BugsKind,
}

/// [`Ga`]'s state.
#[derive(Clone, Debug)]
pub struct GaState {
    /// The kept population (row-major).
    pub members: Vec<f32>,
    /// Its fitness as told, NaN kept (`+inf` before the first tell).
    pub fitness: Vec<f32>,
    /// The mutation rates: one (MR15), one per member (SAMR), one per group (GESMR).
    pub sigma: Vec<f64>,
    /// GESMR: the parents' fitness of the last asked children (their improvement is ranked).
    pub parent_fitness: Vec<f32>,
    /// The start point.
    pub start: Vec<f32>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    z: Vec<f64>,
    u: Vec<f64>,
    picks: Vec<u32>,
    order: Vec<usize>,
    pool: Vec<f32>,
    pool_f: Vec<f32>,
    pool_order: Vec<usize>,
    rates: Vec<f64>,
    delta: Vec<f32>,
    rank: Vec<usize>,
    sorted_rates: Vec<f64>,
    tell_picks: Vec<u32>,
    tell_u: Vec<f64>,
}

/// The draws of one `ask` after the first, and of GESMR's `tell`.
pub struct GaDraws<'a> {
    /// `pop_size × num_dims` mutation normals.
    pub normals: &'a [f64],
    /// SAMR, GESMR: the `pop_size − 1` elites drawn (ranks below the elite count).
    pub picks: &'a [u32],
    /// SAMR: `pop_size` uniforms in `[−1, 1)` of the rates' mutation.
    pub uniforms: &'a [f64],
}

impl Ga {
    /// The GA; `pop_size ≥ 2`; GESMR with `groups` groups (`pop_size − 1` divisible by it).
    pub fn new(
        pop_size: usize,
        num_dims: usize,
        rule: GaRule,
        groups: usize,
    ) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        if rule == GaRule::Gesmr && (groups == 0 || !(pop_size - 1).is_multiple_of(groups)) {
            return Err(EvoError::invalid(
                "params.num_groups",
                groups,
                format!("at least 1 and dividing pop_size − 1 = {}", pop_size - 1),
            ));
        }
        Ok(Ga { pop_size, num_dims, rule, groups: groups.max(1) })
    }

    /// Members that may parent: `max(1, ⌊elite_ratio λ⌋)`.
    pub fn num_elites(&self, p: &GaParams) -> usize {
        ((p.elite_ratio * self.pop_size as f64) as usize).clamp(1, self.pop_size)
    }

    /// GESMR: groups whose rates are kept and drawn from, `max(1, ⌊g / 2⌋)`.
    pub fn num_rate_elites(&self) -> usize {
        (self.groups / 2).max(1)
    }

    /// GESMR: the number of groups.
    pub fn groups(&self) -> usize {
        self.groups
    }

    /// Generation 0: `x0 + σ z` from given normals.
    pub fn ask_first(&self, s: &GaState, p: &GaParams, z: &[f64], population: &mut [f32]) {
        check_lens("Ga::ask", self.pop_size, self.num_dims, population, None);
        first_population(&s.start, p.sigma, z, population);
    }

    /// The members in fitness order (NaN last, ties in index order), as evosax's argsort.
    fn sort(s: &mut GaState) {
        s.order.iter_mut().enumerate().for_each(|(i, o)| *o = i);
        let f = &s.fitness;
        s.order.sort_by(|&a, &b| worst_nan(f[a]).total_cmp(&worst_nan(f[b])));
    }

    /// A later generation from given draws ([`GaDraws`]); SAMR keeps its children's rates and
    /// GESMR its children's parents' fitness in the state, for `tell`.
    pub fn ask_from(&self, s: &mut GaState, p: &GaParams, d: &GaDraws<'_>, population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Ga::ask", lam, n, population, None);
        match self.rule {
            GaRule::Mr15 => {
                for i in 0..lam {
                    for j in 0..n {
                        let x = s.members[i * n + j] as f64;
                        population[i * n + j] = to_row(x + s.sigma[0] * d.normals[i * n + j]);
                    }
                }
            }
            GaRule::Samr | GaRule::Gesmr => {
                Self::sort(s);
                // Child 0 is the best member; child i ≥ 1 the elite of rank picks[i − 1].
                let parent = |s: &GaState, i: usize| {
                    if i == 0 { s.order[0] } else { s.order[d.picks[i - 1] as usize] }
                };
                let per_group = (lam - 1) / self.groups;
                let mut rates = std::mem::take(&mut s.rates);
                for (i, r) in rates.iter_mut().enumerate() {
                    *r = if self.rule == GaRule::Samr {
                        let v = s.sigma[parent(s, i)] * p.std_meta.powf(d.uniforms[i]);
                        v.clamp(p.sigma_min, p.sigma_max)
                    } else if i == 0 {
                        0.0
                    } else {
                        s.sigma[(i - 1) / per_group]
                    };
                }
                for i in 0..lam {
                    let a = parent(s, i);
                    for j in 0..n {
                        let x = s.members[a * n + j] as f64;
                        population[i * n + j] = to_row(x + rates[i] * d.normals[i * n + j]);
                    }
                    if self.rule == GaRule::Gesmr {
                        s.parent_fitness[i] = s.fitness[a];
                    }
                }
                if self.rule == GaRule::Samr {
                    s.sigma.copy_from_slice(&rates);
                }
                s.rates = rates;
            }
        }
    }

    /// [`Strategy::tell`] with GESMR's draws given: the `g − 1` rate elites drawn (ranks) and
    /// `g` uniforms in `[−1, 1)` (ignored by the other rules).
    pub fn tell_with(
        &self,
        picks: &[u32],
        uniforms: &[f64],
        population: &[f32],
        fitness: &[f32],
        s: &mut GaState,
        p: &GaParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Ga::tell", lam, n, population, Some(fitness));
        let first = s.progress.generation == 0;
        let (best, bad) = s.progress.record(population, fitness);
        let evosax = p.bugs == BugsKind::All;
        if first {
            // evosax's init: the evaluated first population, nothing adapted yet.
            s.members.copy_from_slice(population);
            s.fitness.copy_from_slice(fitness);
            return s.progress.metrics(best, bad, p.sigma);
        }
        match self.rule {
            GaRule::Mr15 => {
                let beats =
                    |f: f32, old: f32| if evosax { f < old } else { worst_nan(f) < worst_nan(old) };
                let better =
                    fitness.iter().zip(&s.fitness).filter(|(f, o)| beats(**f, **o)).count();
                let rate = if better as f64 / lam as f64 > p.std_ratio { 2.0 } else { 0.5 };
                s.sigma[0] = (s.sigma[0] * rate).clamp(p.sigma_min, p.sigma_max);
                // The best λ of children then parents (a stable sort: children first on ties).
                s.pool[..lam * n].copy_from_slice(population);
                s.pool[lam * n..].copy_from_slice(&s.members);
                s.pool_f[..lam].copy_from_slice(fitness);
                s.pool_f[lam..].copy_from_slice(&s.fitness);
                let pool_f = &s.pool_f;
                s.pool_order.iter_mut().enumerate().for_each(|(k, o)| *o = k);
                s.pool_order
                    .sort_by(|&a, &b| worst_nan(pool_f[a]).total_cmp(&worst_nan(pool_f[b])));
                for (k, &i) in s.pool_order.iter().take(lam).enumerate() {
                    s.members[k * n..(k + 1) * n].copy_from_slice(&s.pool[i * n..(i + 1) * n]);
                    s.fitness[k] = s.pool_f[i];
                }
            }
            GaRule::Samr => {
                s.members.copy_from_slice(population);
                s.fitness.copy_from_slice(fitness);
            }
            GaRule::Gesmr => {
                // Each group's best improvement on its parents, the groups ranked by it
                // (evosax: raw differences, so a NaN one makes its group NaN, ranked last).
                let per = (lam - 1) / self.groups;
                let diff = |i: usize| {
                    if evosax {
                        fitness[i] - s.parent_fitness[i]
                    } else {
                        worst_nan(fitness[i]) - worst_nan(s.parent_fitness[i])
                    }
                };
                for k in 0..self.groups {
                    let d =
                        (1 + k * per..1 + (k + 1) * per).map(diff).fold(f32::INFINITY, |a, d| {
                            if a.is_nan() || d.is_nan() { f32::NAN } else { a.min(d) }
                        });
                    s.delta[k] = worst_nan(d);
                }
                let delta = &s.delta;
                s.rank.iter_mut().enumerate().for_each(|(k, o)| *o = k);
                s.rank.sort_by(|&a, &b| delta[a].total_cmp(&delta[b]));
                // The kept rate is the best group's; the others are drawn from the rate elites,
                // read from the ranking before any rate is overwritten.
                for (r, &k) in s.sorted_rates.iter_mut().zip(&s.rank) {
                    *r = s.sigma[k];
                }
                for k in 0..self.groups {
                    let r = if k == 0 {
                        s.sorted_rates[0]
                    } else {
                        s.sorted_rates[picks[k - 1] as usize]
                    };
                    s.sigma[k] = (r * p.std_meta.powf(uniforms[k])).clamp(p.sigma_min, p.sigma_max);
                }
                s.members.copy_from_slice(population);
                s.fitness.copy_from_slice(fitness);
            }
        }
        let sigma = s.sigma.iter().sum::<f64>() / s.sigma.len() as f64;
        s.progress.metrics(best, bad, sigma)
    }
}

/// NaN as `+inf`, the worst value.
fn worst_nan(f: f32) -> f32 {
    if f.is_nan() { f32::INFINITY } else { f }
}

/// `n` uniforms in `[−1, 1)`.
fn signed_uniforms(rng: &mut kestrel_core::Rng, out: &mut [f64]) {
    out.iter_mut().for_each(|u| *u = 2.0 * rng.uniform_f64() - 1.0);
}

impl Strategy for Ga {
    type Params = GaParams;
    type State = GaState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> GaParams {
        let (max, ratio) = match self.rule {
            GaRule::Mr15 => (f64::INFINITY, 0.2),
            _ => (10.0, 0.2),
        };
        GaParams {
            sigma: 1.0,
            sigma_min: 0.0,
            sigma_max: max,
            std_ratio: ratio,
            std_meta: 2.0,
            elite_ratio: 0.5,
            bugs: BugsKind::None,
        }
    }

    fn init(&self, _key: Key, p: &GaParams, mean: &[f32]) -> GaState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "Ga::init: mean must have num_dims values");
        let rates = match self.rule {
            GaRule::Mr15 => 1,
            GaRule::Samr => lam,
            GaRule::Gesmr => self.groups,
        };
        let mr15 = self.rule == GaRule::Mr15;
        GaState {
            members: mean.repeat(lam),
            fitness: vec![f32::INFINITY; lam],
            sigma: vec![p.sigma; rates],
            parent_fitness: vec![f32::INFINITY; if self.rule == GaRule::Gesmr { lam } else { 0 }],
            start: mean.to_vec(),
            progress: Progress::new(n),
            z: vec![0.0; lam * n],
            u: vec![0.0; lam],
            picks: vec![0; lam.saturating_sub(1)],
            order: vec![0; lam],
            pool: vec![0.0; if mr15 { 2 * lam * n } else { 0 }],
            pool_f: vec![0.0; if mr15 { 2 * lam } else { 0 }],
            pool_order: vec![0; if mr15 { 2 * lam } else { 0 }],
            rates: vec![0.0; lam],
            delta: vec![0.0; self.groups],
            rank: vec![0; self.groups],
            sorted_rates: vec![0.0; self.groups],
            tell_picks: vec![0; self.groups - 1],
            tell_u: vec![0.0; self.groups],
        }
    }

    fn ask(&self, key: Key, s: &mut GaState, p: &GaParams, population: &mut [f32]) {
        fill_normal_f32(key, &mut s.z);
        if s.progress.generation == 0 {
            return self.ask_first(s, p, &s.z, population);
        }
        let mut rng = key.fold_in(1).rng();
        let k = self.num_elites(p) as u32;
        s.picks.iter_mut().for_each(|q| *q = rng.below(k));
        signed_uniforms(&mut rng, &mut s.u);
        let (z, q, u) =
            (std::mem::take(&mut s.z), std::mem::take(&mut s.picks), std::mem::take(&mut s.u));
        self.ask_from(s, p, &GaDraws { normals: &z, picks: &q, uniforms: &u }, population);
        (s.z, s.picks, s.u) = (z, q, u);
    }

    fn tell(
        &self,
        key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut GaState,
        p: &GaParams,
    ) -> TellMetrics {
        let mut rng = key.rng();
        let k = self.num_rate_elites() as u32;
        let (mut picks, mut u) = (std::mem::take(&mut s.tell_picks), std::mem::take(&mut s.tell_u));
        picks.iter_mut().for_each(|q| *q = rng.below(k));
        signed_uniforms(&mut rng, &mut u);
        let m = self.tell_with(&picks, &u, population, fitness, s, p);
        (s.tell_picks, s.tell_u) = (picks, u);
        m
    }

    fn mean(&self, s: &GaState) -> Vec<f32> {
        best_or_start(&s.progress, &s.start)
    }
    fn progress<'a>(&self, state: &'a GaState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(GaState {
    vec32 members,
    vec32 fitness,
    vec sigma,
    vec32 parent_fitness,
    vec32 start
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_fifth_rule_doubles_on_success_and_halves_otherwise() {
        let s = Ga::new(4, 1, GaRule::Mr15, 1).unwrap();
        let p = s.default_params();
        let mut st = s.init(Key::new(0), &p, &[0.0]);
        s.tell_with(&[], &[], &[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.0], &mut st, &p);
        // Two of four children beat their parent: 0.5 > 0.2, the rate doubles; the best four of
        // eight are kept.
        s.tell_with(&[], &[], &[5.0, 6.0, 7.0, 8.0], &[0.5, 9.0, 0.1, 9.0], &mut st, &p);
        assert_eq!(st.sigma[0], 2.0);
        assert_eq!(st.members, [7.0, 5.0, 1.0, 2.0]);
        s.tell_with(&[], &[], &[0.0; 4], &[9.0; 4], &mut st, &p);
        assert_eq!(st.sigma[0], 1.0);
        assert!(Ga::new(8, 2, GaRule::Gesmr, 2).is_err(), "7 members do not split in 2 groups");
    }
}
