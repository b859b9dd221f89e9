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
//! [`crate::TuneProblem::episode_cost`]: over the same dynamics, the costs are exactly those of
//! [`crate::episode`] (tested against the built-in systems).

use crate::mppi::Mppi;
use crate::params::{Convention, MppiError, MppiParams, Precision};
use crate::rollout::draw_normals;
use crate::state::MppiState;
use crate::tune::TuneSpec;
use crate::{Controller, Dynamics};
use kestrel_core::{FromInvalid, Key};
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
    if starts.is_empty() || starts.iter().any(|s| s.len() != nx) || steps == 0 {
        return bad(
            "episodes",
            format!("{} starts, {steps} steps", starts.len()),
            "at least one start of nx values and one step",
        );
    }
    for p in params {
        if p.precision != Precision::F64 {
            return bad("precision", "f32".into(), "f64 with batched dynamics");
        }
        if p.rollout_samples > 1 {
            return bad(
                "rollout_samples",
                p.rollout_samples.to_string(),
                "1 with batched dynamics",
            );
        }
        if p.convention != first.convention {
            return bad("convention", "mixed".into(), "one convention for the population");
        }
    }
    let jax = first.convention == Convention::JaxMppi;
    let live: Vec<usize> =
        (0..params.len()).filter(|&c| mppi.validate(&params[c]).is_ok()).collect();
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
    let max_t = episodes.iter().map(|ep| params[ep.c].horizon).max().unwrap_or(0);
    let mut xr = vec![0.0; rows * nx];
    let mut costs = vec![0.0; rows];
    // Packed rows of one horizon step (the episodes whose horizon reaches it).
    let (mut xa, mut ua, mut na, mut ca) =
        (vec![0.0; rows * nx], vec![0.0; rows * nu], vec![0.0; rows * nx], vec![0.0; rows]);
    let mut active: Vec<usize> = Vec::with_capacity(rows);
    let n = episodes.len();
    let (mut xp, mut up, mut np, mut cp) =
        (vec![0.0; n * nx], vec![0.0; n * nu], vec![0.0; n * nx], vec![0.0; n]);
    let call = |r: Result<(), B::Error>| r.map_err(BatchedError::Dynamics);
    for t in 0..steps {
        // 1. Every episode samples (in parallel, each from its own normals).
        episodes.par_iter_mut().for_each(|ep| {
            let p = &params[ep.c];
            let mut z = std::mem::take(&mut ep.s.normals);
            let k = key.fold_in(ep.e as u64).fold_in(t as u64);
            draw_normals(k, p.num_samples, p.horizon * nu, &mut z);
            mppi.begin_command(p, &mut ep.s, &z, true);
            ep.s.normals = z;
        });
        // 2. Rollouts, one batch per horizon step.
        for (ep, &r0) in episodes.iter().zip(&first_row) {
            for k in 0..params[ep.c].num_samples {
                xr[(r0 + k) * nx..(r0 + k + 1) * nx].copy_from_slice(&ep.x);
            }
        }
        costs.fill(0.0);
        for tt in 0..max_t {
            active.clear();
            for (ep, &r0) in episodes.iter().zip(&first_row) {
                let (k, h) = (params[ep.c].num_samples, params[ep.c].horizon);
                if tt >= h {
                    continue;
                }
                for kk in 0..k {
                    let (m, src) = (active.len(), (kk * h + tt) * nu);
                    ua[m * nu..(m + 1) * nu].copy_from_slice(&ep.s.controls[src..src + nu]);
                    let r = r0 + kk;
                    xa[m * nx..(m + 1) * nx].copy_from_slice(&xr[r * nx..(r + 1) * nx]);
                    active.push(r);
                }
            }
            let m = active.len();
            let (x, u) = (&xa[..m * nx], &ua[..m * nu]);
            if jax {
                call(dynamics.running_cost(x, u, tt, &mut ca[..m]))?;
            }
            call(dynamics.step(x, u, tt, &mut na[..m * nx]))?;
            if !jax {
                call(dynamics.running_cost(&na[..m * nx], u, tt, &mut ca[..m]))?;
            }
            for (i, &r) in active.iter().enumerate() {
                costs[r] += ca[i];
                xr[r * nx..(r + 1) * nx].copy_from_slice(&na[i * nx..(i + 1) * nx]);
            }
        }
        if dynamics.terminal_cost(&xr, &mut ca).map_err(BatchedError::Dynamics)? {
            costs.iter_mut().zip(&ca).for_each(|(c, v)| *c += v);
        }
        // 3. Every episode updates its plan and commands.
        episodes.par_iter_mut().zip(&first_row).for_each(|(ep, &r0)| {
            let p = &params[ep.c];
            ep.s.costs.copy_from_slice(&costs[r0..r0 + p.num_samples]);
            mppi.end_command(p, &mut ep.s, &mut ep.out, true);
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
    spec: TuneSpec,
    base: MppiParams,
    starts: Vec<Vec<f64>>,
    steps: usize,
    error: Mutex<Option<B::Error>>,
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
        let (nx, nu) = (dynamics.nx(), dynamics.nu());
        spec.validate(nu)?;
        Mppi::new(Sizes { nx, nu }).validate(&base)?;
        if base.precision != Precision::F64 {
            return Err(MppiError::invalid("precision", "f32", "f64 with batched dynamics"));
        }
        if base.rollout_samples > 1 {
            let v = base.rollout_samples;
            return Err(MppiError::invalid("rollout_samples", v, "1 with batched dynamics"));
        }
        if starts.is_empty() || starts.iter().any(|s| s.len() != nx) || steps == 0 {
            return Err(MppiError::invalid(
                "episodes",
                format!("{} starts, {steps} steps", starts.len()),
                "at least one start of nx values and one step",
            ));
        }
        Ok(BatchedTuneProblem { dynamics, spec, base, starts, steps, error: Mutex::new(None) })
    }

    /// The first error of a call since the last take.
    pub fn take_error(&self) -> Option<B::Error> {
        self.error.lock().ok()?.take()
    }

    /// Whether a call has failed (the error not yet taken).
    pub fn failed(&self) -> bool {
        self.error.lock().map_or(true, |g| g.is_some())
    }

    /// `f` of the first error, if a call has failed (the error stays).
    pub fn with_error<R>(&self, f: impl FnOnce(&B::Error) -> R) -> Option<R> {
        self.error.lock().ok()?.as_ref().map(f)
    }
}

impl<B: BatchDynamics + Send + Sync> kestrel_evo::Problem for BatchedTuneProblem<B>
where
    B::Error: Send,
{
    fn num_dims(&self) -> usize {
        self.spec.num_dims()
    }

    /// Common random numbers: every candidate sees the same episodes, whatever its row.
    fn evaluate_rows(&self, key: Key, _first_row: u64, population: &[f32], fitness: &mut [f32]) {
        fitness.fill(f32::NAN);
        if self.failed() {
            return;
        }
        let (n, nu) = (self.spec.num_dims(), self.dynamics.nu());
        let params: Vec<MppiParams> =
            population.chunks(n).map(|x| self.spec.to_params(&self.base, nu, x)).collect();
        match population_costs(&self.dynamics, &params, &self.starts, self.steps, key) {
            Ok(c) => fitness.iter_mut().zip(c).for_each(|(f, c)| *f = c as f32),
            Err(BatchedError::Dynamics(e)) => {
                if let Ok(mut g) = self.error.lock() {
                    g.get_or_insert(e);
                }
            }
            // Checked in `new`; knobs change no precision, convention or start.
            Err(BatchedError::Invalid(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::System;
    use crate::tune::TuneProblem;

    /// A built-in system a row at a time, as a callback would compute it.
    struct Rows(System);

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
            (System::Nav2d, Convention::PytorchMppi),
            (System::Pendulum, Convention::PytorchMppi),
            (System::Basic, Convention::JaxMppi),
            (System::Nav2d, Convention::JaxMppi),
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
        let d = Rows(System::Nav2d);
        let p = System::Nav2d.default_params();
        let starts = vec![System::Nav2d.start()];
        let key = Key::new(0);
        let jax = MppiParams { convention: Convention::JaxMppi, ..p.clone() };
        let f32 = MppiParams { precision: Precision::F32, ..p.clone() };
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
        assert!(matches!(
            population_costs(&Fails, &[p], &starts, 2, key),
            Err(BatchedError::Dynamics("boom"))
        ));
    }
}
