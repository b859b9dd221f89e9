//! Closed-loop episodes of a whole population of MPPI controllers over dynamics evaluated a
//! batch at a time (the Python package's callbacks): what tuning a system written outside
//! Rust needs. Seed 000's recommendation: one call per time step for every candidate, start
//! and sample, instead of one Python loop per candidate (pytorch-mppi's `autotune` evaluates
//! its candidates one after another).
//!
//! Every episode in flight (candidate × start) runs its own [`Mppi`] state; a command is
//! [`Mppi::begin_command`] for all of them, their samples' rollouts as one batch per horizon
//! step, then [`Mppi::end_command`]; the plant step of every episode is one more batch. Episode
//! `e` of every candidate is keyed `key.fold_in(e)` and its command `t` `.fold_in(t)`, as
//! [`crate::tune::TuneProblem::episode_cost`]: over the same dynamics, the costs are exactly those of
//! [`crate::controller::episode`] (tested against the built-in systems).

use crate::controller::Controller;
use crate::mppi::Mppi;
use crate::params::{ConventionKind, MppiError, MppiParams, PrecisionKind};
use crate::state::MppiState;
use crate::tune::{TuneProblem, TuneSpec};
use kestrel_core::{FromInvalid, Key};
use kestrel_dynamics::Dynamics;
use rayon::prelude::*;
use std::sync::Mutex;

/// Dynamics and costs for many rows at once: `x` is `rows × nx`, `u` `rows × nu`, row-major.
/// Called from one thread at a time.
pub trait BatchDynamics {
    /// What a failed call reports (a Python exception, say).
    type Error;
    /// State size.
    fn nx(&self) -> usize;
    /// Control size.
    fn nu(&self) -> usize;
    /// Writes the next state of every row (`t`: the horizon step in a rollout, the episode's
    /// step on the plant).
    fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) -> Result<(), Self::Error>;
    /// Writes every row's running cost to `out` (`rows`).
    fn running_cost(
        &self,
        x: &[f64],
        u: &[f64],
        t: usize,
        out: &mut [f64],
    ) -> Result<(), Self::Error>;
    /// Writes every row's terminal cost to `out`; `Ok(false)` when there is none.
    fn terminal_cost(&self, x: &[f64], out: &mut [f64]) -> Result<bool, Self::Error>;
}

/// Dynamics of which Rust knows the sizes only (the rollouts are someone else's: a batch
/// call here, the Python package's callback controller): what [`Mppi`]'s sampling and update
/// need. Stepping it keeps the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    /// State size.
    pub nx: usize,
    /// Control size.
    pub nu: usize,
}

impl Dynamics for Sizes {
    fn nx(&self) -> usize {
        self.nx
    }
    fn nu(&self) -> usize {
        self.nu
    }
    /// Not the system: the rollouts are [`BatchDynamics::step`]'s.
    fn step(&self, x: &[f64], _u: &[f64], _t: usize, next: &mut [f64]) {
        next.copy_from_slice(x);
    }
    fn running_cost(&self, _x: &[f64], _u: &[f64], _t: usize) -> f64 {
        0.0
    }
}

/// Samples that share a horizon and a controls buffer: rows `first_row..first_row + num_samples` of
/// a rollout, sample `k`'s control at step `t` at `controls[(k·horizon + t)·nu..]`.
#[derive(Clone, Copy, Debug)]
pub struct Block<'a> {
    /// The block's first row.
    pub first_row: usize,
    /// Its samples (rows).
    pub num_samples: usize,
    /// Its horizon.
    pub horizon: usize,
    /// Its controls, `num_samples × horizon × nu`.
    pub controls: &'a [f64],
}

/// The packed rows of one horizon step, reused between calls.
#[derive(Clone, Debug, Default)]
pub struct RolloutScratch {
    xa: Vec<f64>,
    ua: Vec<f64>,
    na: Vec<f64>,
    ca: Vec<f64>,
    active: Vec<usize>,
}

/// Rolls every block's samples out from the states in `x` (`rows × nx`, left holding the
/// final states) and writes each row's rollout cost to `costs` (`rows`): one call of the
/// dynamics and one of the running cost per horizon step for every row whose horizon reaches
/// it (jax-mppi's convention costs the state before the step, pytorch-mppi's the state
/// reached), then one of the terminal cost for all rows. The one rollout of the batched
/// tuner and of the Python package's callback controller.
pub fn rollout_costs<B: BatchDynamics>(
    dynamics: &B,
    jax: bool,
    blocks: &[Block<'_>],
    x: &mut [f64],
    costs: &mut [f64],
    s: &mut RolloutScratch,
) -> Result<(), B::Error> {
    let (nx, nu) = (dynamics.nx(), dynamics.nu());
    let rows = costs.len();
    s.xa.resize(rows * nx, 0.0);
    s.na.resize(rows * nx, 0.0);
    s.ua.resize(rows * nu, 0.0);
    s.ca.resize(rows, 0.0);
    costs.fill(0.0);
    let max_t = blocks.iter().map(|b| b.horizon).max().unwrap_or(0);
    for tt in 0..max_t {
        s.active.clear();
        for b in blocks.iter().filter(|b| tt < b.horizon) {
            for kk in 0..b.num_samples {
                let (m, src, r) = (s.active.len(), (kk * b.horizon + tt) * nu, b.first_row + kk);
                s.ua[m * nu..(m + 1) * nu].copy_from_slice(&b.controls[src..src + nu]);
                s.xa[m * nx..(m + 1) * nx].copy_from_slice(&x[r * nx..(r + 1) * nx]);
                s.active.push(r);
            }
        }
        let m = s.active.len();
        let (xa, u) = (&s.xa[..m * nx], &s.ua[..m * nu]);
        if jax {
            dynamics.running_cost(xa, u, tt, &mut s.ca[..m])?;
        }
        dynamics.step(xa, u, tt, &mut s.na[..m * nx])?;
        if !jax {
            dynamics.running_cost(&s.na[..m * nx], u, tt, &mut s.ca[..m])?;
        }
        for (i, &r) in s.active.iter().enumerate() {
            costs[r] += s.ca[i];
            x[r * nx..(r + 1) * nx].copy_from_slice(&s.na[i * nx..(i + 1) * nx]);
        }
    }
    if dynamics.terminal_cost(x, &mut s.ca[..rows])? {
        costs.iter_mut().zip(&s.ca).for_each(|(c, v)| *c += v);
    }
    Ok(())
}

/// What batched episodes need of every candidate's params beyond [`Mppi::validate`]: float64
/// and one rollout per sample (the callbacks roll out each sample once, in f64).
pub fn check_base(p: &MppiParams) -> Result<(), MppiError> {
    if p.precision != PrecisionKind::F64 {
        return Err(MppiError::invalid("precision", "f32", "f64 with batched dynamics"));
    }
    if p.rollout_samples > 1 {
        let v = p.rollout_samples;
        return Err(MppiError::invalid("rollout_samples", v, "1 with batched dynamics"));
    }
    Ok(())
}

/// The memory of [`population_costs`] for `episodes` episodes of params like `p`: every
/// episode's MPPI state (noise, normals and controls of K × T × nu, costs and weights of K)
/// and the rollout rows (states, packed states and controls, next states, costs), checked
/// against [`kestrel_core::check_bytes`]'s limit under `field`.
pub fn check_memory(
    field: &'static str,
    value: impl ToString,
    p: &MppiParams,
    nx: usize,
    nu: usize,
    episodes: usize,
) -> Result<(), MppiError> {
    let (k, t) = (p.num_samples as u128, p.horizon as u128);
    let (nx, nu, e) = (nx as u128, nu as u128, episodes as u128);
    let per_episode = 3 * k * t * nu + 2 * k + t * nu;
    let rows = e.saturating_mul(k);
    let cells = e.saturating_mul(per_episode).saturating_add(rows.saturating_mul(3 * nx + nu + 2));
    Ok(kestrel_core::check_bytes(field, value, cells, 8)?)
}

/// Why [`population_costs`] failed.
#[derive(Debug)]
pub enum BatchedError<E> {
    /// The population or its starts were refused before anything ran.
    Invalid(MppiError),
    /// A call of the dynamics failed (and the episodes stopped there).
    Dynamics(E),
}

/// The mean closed-loop cost of each candidate's params over `starts`: `steps` commands per
/// episode, the running cost of the state reached summed (`+inf` if NaN), the mean over the
/// starts in start order. Params that fail validation (a tuned horizon of 0, say) cost `+inf`
/// and run nothing. Plain MPPI in float64 with one rollout per sample, one convention for the
/// whole population: anything else is refused.
pub fn population_costs<B: BatchDynamics>(
    dynamics: &B,
    params: &[MppiParams],
    starts: &[Vec<f64>],
    steps: usize,
    key: Key,
) -> Result<Vec<f64>, BatchedError<B::Error>> {
    let (nx, nu) = (dynamics.nx(), dynamics.nu());
    let bad = |f: &'static str, v: String, ok: &'static str| {
        Err(BatchedError::Invalid(MppiError::invalid(f, v, ok)))
    };
    let mppi = Mppi::new(Sizes { nx, nu });
    if let Err(e) = mppi.validate(&MppiParams::new(nu, 1.0)) {
        return Err(BatchedError::Invalid(e));
    }
    let Some(first) = params.first() else { return Ok(Vec::new()) };
    crate::tune::check_episodes(starts, nx, steps).map_err(BatchedError::Invalid)?;
    for p in params {
        check_base(p).map_err(BatchedError::Invalid)?;
        if p.convention != first.convention {
            return bad("convention", "mixed".into(), "one convention for the population");
        }
    }
    let jax = first.convention == ConventionKind::JaxMppi;
    let live: Vec<usize> =
        (0..params.len()).filter(|&c| mppi.validate(&params[c]).is_ok()).collect();
    if live.is_empty() {
        // Nothing to roll out: no call with empty arrays.
        return Ok(vec![f64::INFINITY; params.len()]);
    }
    let ne = starts.len();
    // Episodes in flight: candidate-major, start-minor.
    struct Episode {
        c: usize,
        e: usize,
        s: MppiState,
        x: Vec<f64>,
        out: Vec<f64>,
        total: f64,
    }
    let mut episodes: Vec<Episode> = live
        .iter()
        .flat_map(|&c| (0..ne).map(move |e| (c, e)))
        .map(|(c, e)| Episode {
            c,
            e,
            s: mppi.init(&params[c]),
            x: starts[e].clone(),
            out: vec![0.0; params[c].u_per_command * nu],
            total: 0.0,
        })
        .collect();
    // Rollout rows: every episode's samples, in episode order; each row's state in its slot.
    let first_row: Vec<usize> = episodes
        .iter()
        .scan(0, |acc, ep| {
            let r = *acc;
            *acc += params[ep.c].num_samples;
            Some(r)
        })
        .collect();
    let rows = episodes.iter().map(|ep| params[ep.c].num_samples).sum::<usize>();
    let mut xr = vec![0.0; rows * nx];
    let mut costs = vec![0.0; rows];
    let mut scratch = RolloutScratch::default();
    let n = episodes.len();
    let (mut xp, mut up, mut np, mut cp) =
        (vec![0.0; n * nx], vec![0.0; n * nu], vec![0.0; n * nx], vec![0.0; n]);
    let call = |r: Result<(), B::Error>| r.map_err(BatchedError::Dynamics);
    for t in 0..steps {
        // 1. Every episode samples (in parallel, each from its own normals).
        episodes.par_iter_mut().for_each(|ep| {
            let k = key.fold_in(ep.e as u64).fold_in(t as u64);
            mppi.begin_command(k, &params[ep.c], &mut ep.s);
        });
        // 2. Rollouts, one batch per horizon step for every episode's samples.
        for (ep, &r0) in episodes.iter().zip(&first_row) {
            for k in 0..params[ep.c].num_samples {
                xr[(r0 + k) * nx..(r0 + k + 1) * nx].copy_from_slice(&ep.x);
            }
        }
        let blocks: Vec<Block<'_>> = episodes
            .iter()
            .zip(&first_row)
            .map(|(ep, &r0)| Block {
                first_row: r0,
                num_samples: params[ep.c].num_samples,
                horizon: params[ep.c].horizon,
                controls: &ep.s.controls,
            })
            .collect();
        rollout_costs(dynamics, jax, &blocks, &mut xr, &mut costs, &mut scratch)
            .map_err(BatchedError::Dynamics)?;
        drop(blocks);
        // 3. Every episode updates its plan and commands.
        episodes.par_iter_mut().zip(&first_row).for_each(|(ep, &r0)| {
            let p = &params[ep.c];
            ep.s.costs.copy_from_slice(&costs[r0..r0 + p.num_samples]);
            mppi.end_command(p, &mut ep.s, &mut ep.out);
        });
        // 4. The plant: one batch for every episode.
        for (i, ep) in episodes.iter().enumerate() {
            xp[i * nx..(i + 1) * nx].copy_from_slice(&ep.x);
            let u = &mut up[i * nu..(i + 1) * nu];
            <Mppi<Sizes> as Controller>::applied(&params[ep.c], &ep.out[..nu], u);
        }
        call(dynamics.step(&xp, &up, t, &mut np))?;
        call(dynamics.running_cost(&np, &up, t, &mut cp))?;
        for (i, ep) in episodes.iter_mut().enumerate() {
            ep.x.copy_from_slice(&np[i * nx..(i + 1) * nx]);
            ep.total += cp[i];
        }
    }
    let mut out = vec![f64::INFINITY; params.len()];
    for (j, &c) in live.iter().enumerate() {
        let sum: f64 = episodes[j * ne..(j + 1) * ne]
            .iter()
            .map(|ep| if ep.total.is_nan() { f64::INFINITY } else { ep.total })
            .sum();
        out[c] = sum / ne as f64;
    }
    Ok(out)
}

/// The tuner's problem over batched dynamics: a generation's candidates (rows of the knobs'
/// search coordinates, as [`crate::tune::TuneProblem`]'s) cost [`population_costs`] over the
/// starts, one call per step for all of them. A failing call's error is kept (the first one)
/// and the generation's fitness is NaN; [`BatchedTuneProblem::take_error`] hands it over.
pub struct BatchedTuneProblem<B: BatchDynamics> {
    dynamics: B,
    /// The spec, base params, starts and steps, checked as the built-in tuner checks them;
    /// its controller has the sizes only.
    problem: TuneProblem<Mppi<Sizes>>,
    error: Mutex<Option<BatchedError<B::Error>>>,
}

impl<B: BatchDynamics> BatchedTuneProblem<B> {
    /// Checks the spec, the base params (plain MPPI in float64, one rollout per sample) and
    /// the starts.
    pub fn new(
        dynamics: B,
        spec: TuneSpec,
        base: MppiParams,
        starts: Vec<Vec<f64>>,
        steps: usize,
    ) -> Result<Self, MppiError> {
        check_base(&base)?;
        let sizes = Sizes { nx: dynamics.nx(), nu: dynamics.nu() };
        let problem = TuneProblem::new(Mppi::new(sizes), spec, base, starts, steps)?;
        Ok(BatchedTuneProblem { dynamics, problem, error: Mutex::new(None) })
    }

    /// The first error of a call since the last take.
    pub fn take_error(&self) -> Option<BatchedError<B::Error>> {
        self.error.lock().ok()?.take()
    }

    /// Whether a call has failed (the error not yet taken).
    pub fn failed(&self) -> bool {
        self.error.lock().map_or(true, |g| g.is_some())
    }

    /// `f` of the first error, if a call has failed (the error stays).
    pub fn with_error<R>(&self, f: impl FnOnce(&BatchedError<B::Error>) -> R) -> Option<R> {
        self.error.lock().ok()?.as_ref().map(f)
    }
}

impl<B: BatchDynamics + Send + Sync> kestrel_evo::Problem for BatchedTuneProblem<B>
where
    B::Error: Send,
{
    fn num_dims(&self) -> usize {
        self.problem.num_dims()
    }

    /// Common random numbers: every candidate sees the same episodes, whatever its row.
    fn evaluate_rows(&self, key: Key, _first_row: u64, population: &[f32], fitness: &mut [f32]) {
        fitness.fill(f32::NAN);
        if self.failed() {
            return;
        }
        let p = &self.problem;
        let params: Vec<MppiParams> =
            population.chunks(p.num_dims()).map(|x| p.params_of(x)).collect();
        match population_costs(&self.dynamics, &params, p.starts(), p.steps(), key) {
            Ok(c) => fitness.iter_mut().zip(c).for_each(|(f, c)| *f = c as f32),
            // A refusal (checked in `new`: knobs change no precision, convention or start)
            // stops the run as a failed call does.
            Err(e) => {
                if let Ok(mut g) = self.error.lock() {
                    g.get_or_insert(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::SystemKind;

    /// A built-in system a row at a time, as a callback would compute it.
    struct Rows(SystemKind);

    impl BatchDynamics for Rows {
        type Error = String;
        fn nx(&self) -> usize {
            self.0.nx()
        }
        fn nu(&self) -> usize {
            self.0.nu()
        }
        fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) -> Result<(), String> {
            let (nx, nu) = (self.nx(), self.nu());
            for ((x, u), n) in x.chunks(nx).zip(u.chunks(nu)).zip(next.chunks_mut(nx)) {
                self.0.step(x, u, t, n);
            }
            Ok(())
        }
        fn running_cost(
            &self,
            x: &[f64],
            u: &[f64],
            t: usize,
            out: &mut [f64],
        ) -> Result<(), String> {
            let (nx, nu) = (self.nx(), self.nu());
            for ((x, u), c) in x.chunks(nx).zip(u.chunks(nu)).zip(out.iter_mut()) {
                *c = self.0.running_cost(x, u, t);
            }
            Ok(())
        }
        fn terminal_cost(&self, x: &[f64], out: &mut [f64]) -> Result<bool, String> {
            for (x, c) in x.chunks(self.nx()).zip(out.iter_mut()) {
                *c = self.0.terminal_cost(x);
            }
            Ok(true)
        }
    }

    /// Over the same dynamics, every candidate's cost is exactly the tuner's own (its episodes
    /// one controller at a time), with several starts, horizons that differ between candidates,
    /// both conventions, and an invalid candidate at +inf.
    #[test]
    fn batched_episodes_cost_exactly_what_single_episodes_cost() {
        let cases = [
            (SystemKind::Nav2d, ConventionKind::PytorchMppi),
            (SystemKind::Pendulum, ConventionKind::PytorchMppi),
            (SystemKind::Basic, ConventionKind::JaxMppi),
            (SystemKind::Nav2d, ConventionKind::JaxMppi),
        ];
        for (system, convention) in cases {
            let base = MppiParams { num_samples: 24, convention, ..system.default_params() };
            let mut params: Vec<MppiParams> = [(0.5, 8), (2.0, 12), (1.0, 5)]
                .iter()
                .map(|&(lambda, horizon)| MppiParams { lambda, horizon, ..base.clone() })
                .collect();
            params.push(MppiParams { horizon: 0, ..base.clone() });
            let mut start = system.start();
            let starts = vec![start.clone(), {
                start[0] += 0.3;
                start
            }];
            let key = Key::new(7).fold_in(0);
            let got = population_costs(&Rows(system), &params, &starts, 6, key).unwrap();
            let spec =
                TuneSpec::from_names(&[crate::tune::KnobKind::Lambda], system.nu(), &base).unwrap();
            let problem =
                TuneProblem::new(Mppi::new(system), spec, base.clone(), starts.clone(), 6).unwrap();
            for (c, p) in params.iter().enumerate() {
                let want = problem.episode_cost(key, p);
                assert_eq!(got[c], want, "{system:?} {convention:?} candidate {c}");
            }
            assert!(got[3].is_infinite() && got[..3].iter().all(|c| c.is_finite()), "{got:?}");
        }
    }

    /// Mixed conventions, f32, a wrong start and a failing call are errors, not costs.
    #[test]
    fn bad_populations_and_failing_calls_are_errors() {
        let d = Rows(SystemKind::Nav2d);
        let p = SystemKind::Nav2d.default_params();
        let starts = vec![SystemKind::Nav2d.start()];
        let key = Key::new(0);
        let jax = MppiParams { convention: ConventionKind::JaxMppi, ..p.clone() };
        let f32 = MppiParams { precision: PrecisionKind::F32, ..p.clone() };
        for (params, what) in [(vec![p.clone(), jax], "convention"), (vec![f32], "precision")] {
            match population_costs(&d, &params, &starts, 2, key) {
                Err(BatchedError::Invalid(e)) => assert!(e.to_string().contains(what), "{e}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        let r = population_costs(&d, std::slice::from_ref(&p), &[vec![0.0; 3]], 2, key);
        assert!(matches!(r, Err(BatchedError::Invalid(_))));
        struct Fails;
        impl BatchDynamics for Fails {
            type Error = &'static str;
            fn nx(&self) -> usize {
                2
            }
            fn nu(&self) -> usize {
                2
            }
            fn step(
                &self,
                _: &[f64],
                _: &[f64],
                _: usize,
                _: &mut [f64],
            ) -> Result<(), &'static str> {
                Err("boom")
            }
            fn running_cost(
                &self,
                _: &[f64],
                _: &[f64],
                _: usize,
                _: &mut [f64],
            ) -> Result<(), &'static str> {
                Ok(())
            }
            fn terminal_cost(&self, _: &[f64], _: &mut [f64]) -> Result<bool, &'static str> {
                Ok(false)
            }
        }
        let dead = MppiParams { horizon: 0, ..p.clone() };
        // Nothing valid to roll out: +inf for all, and no call of the dynamics at all.
        let r = population_costs(&Fails, std::slice::from_ref(&dead), &starts, 2, key);
        assert!(matches!(r.as_deref(), Ok([c]) if c.is_infinite()), "{r:?}");
        assert!(matches!(
            population_costs(&Fails, &[p], &starts, 2, key),
            Err(BatchedError::Dynamics("boom"))
        ));
    }
}
