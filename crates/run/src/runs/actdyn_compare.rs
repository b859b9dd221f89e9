//! Random against active data collection on the same seeds (`kestrel actdyn compare`): every
//! arm runs the base experiment on every seed, one experiment per thread, and the folder holds
//! each run's figures and, per metric, each arm's mean and median with 95 % intervals and the
//! paired difference between the arms. The experiment itself is [`super::actdyn`]'s.

use super::actdyn::{Actdyn, CurveAcc, Curves, failed};
use crate::base::{COMMIT, RunError};
use crate::launch::{Launch, Outcome, finish, start};
use crate::run::{Outputs, Run};
use crate::runs::actdyn::{ActdynConfig, ActdynRun};
use crate::summary::Summary;
use kestrel_actdyn::config::PolicyKind;
use kestrel_actdyn::eval::Evaluation;
use kestrel_core::Budget;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::Path;

/// `kestrel actdyn compare`'s config: the experiment, the seeds and the arms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct ActdynCompareConfig {
    /// The experiment every run repeats (`kestrel config actdyn`); each run sets its
    /// `policy.kind` from its arm and its `seed` from the seeds.
    #[documented(nested)]
    pub base: ActdynConfig,
    /// The first seed: the runs use `seed`, `seed + 1`, … (`num_seeds` of them).
    pub seed: u64,
    /// Seeds every arm runs (1 to 10,000).
    pub num_seeds: u64,
    /// The arms, each once: `random` (the random policy) and `active` (iCEM on the Fisher
    /// information); with two, the summary has the paired difference second − first.
    pub arms: Vec<ArmKind>,
}

impl Default for ActdynCompareConfig {
    /// E2 (RBF dynamics, iCEM on A-optimality) on seeds 0 to 9, random against active.
    fn default() -> Self {
        ActdynCompareConfig {
            base: ActdynConfig::e2(),
            seed: 0,
            num_seeds: 10,
            arms: vec![ArmKind::Random, ArmKind::Active],
        }
    }
}

impl ActdynCompareConfig {
    /// The seeds every arm runs.
    pub fn seeds(&self) -> Vec<u64> {
        (0..self.num_seeds).map(|i| self.seed.saturating_add(i)).collect()
    }

    /// The arms' names.
    fn arm_names(&self) -> Vec<&'static str> {
        self.arms.iter().map(|a| a.name()).collect()
    }
}

/// The `actdyn-compare` run kind.
pub struct ActdynCompare;

impl Run for ActdynCompare {
    const NAME: &'static str = "actdyn-compare";
    const COMMAND: &'static str = "actdyn compare";
    const ABOUT: &'static str = "Random against active on the same seeds, one experiment per thread, with confidence intervals.";
    const METRICS: &'static [&'static str] = &["obs_r2_k5_random", "obs_r2_k5_active"];
    const CURVE: &'static str = "obs_r2_k5";
    type Config = ActdynCompareConfig;

    fn defaults(_: Option<&ActdynCompareConfig>) -> ActdynCompareConfig {
        ActdynCompareConfig::default()
    }

    const PRESETS: &'static [&'static str] = Actdyn::PRESETS;

    /// The default comparison over `actdyn`'s preset (`e1`, `e2`) as its base.
    fn preset(name: &str) -> Option<ActdynCompareConfig> {
        Some(ActdynCompareConfig { base: Actdyn::preset(name)?, ..ActdynCompareConfig::default() })
    }

    /// Per metric, each arm's mean (`obs_r2_k5_random`) and, with two arms, the paired
    /// difference (`obs_r2_k5_difference`); per run, the same figures as columns.
    fn outputs(c: &ActdynCompareConfig) -> Outputs {
        // The RBF grid's coverage is a number only with RBF dynamics.
        let rbf = matches!(c.base.model.dynamics, kestrel_actdyn::model::DynamicsKind::Rbf { .. });
        let names: Vec<&str> =
            metric_fns().iter().map(|m| m.0).filter(|m| rbf || *m != "covered_fraction").collect();
        let mut summary = vec!["seed".to_string(), "num_seeds".to_string()];
        for m in &names {
            summary.extend(c.arm_names().iter().map(|a| format!("{m}_{a}")));
            if c.arms.len() == 2 {
                summary.push(format!("{m}_difference"));
            }
        }
        Outputs::new(&[], &["seed", "seconds"])
            .summary(summary)
            .columns(names.iter().map(|m| m.to_string()))
    }

    fn validate(c: &ActdynCompareConfig) -> Result<(), RunError> {
        if !(1..=10_000).contains(&c.num_seeds) {
            return Err(kestrel_core::Invalid::new("num_seeds", c.num_seeds, "1 to 10000").into());
        }
        if c.seed.checked_add(c.num_seeds).is_none() {
            return Err(
                kestrel_core::Invalid::new("seed", c.seed, "seed + num_seeds below 2^64").into()
            );
        }
        let a = &c.arms;
        if a.is_empty() || (1..a.len()).any(|i| a[..i].contains(&a[i])) {
            let names = c.arm_names().join(",");
            return Err(kestrel_core::Invalid::new(
                "arms",
                names,
                "random and/or active, each once",
            )
            .into());
        }
        // What runs: the base with each arm's policy (its own policy.kind is not used).
        for arm in a {
            let mut run = c.base.clone();
            run.policy.kind = arm.policy();
            run.validate().map_err(base_named)?;
        }
        Ok(())
    }

    /// One experiment per worker at a time (the heavier arm's estimate on one thread, without
    /// the checkpoint and saved transitions a comparison's runs do not write) and every run's
    /// curves and evaluation kept to the end.
    fn budget(c: &ActdynCompareConfig, threads: usize) -> Budget {
        let heavier = c
            .arms
            .iter()
            .map(|arm| {
                // As `run_quiet` runs it: nothing saved, no checkpoint.
                let mut run = ActdynConfig { save_every: 0, ..c.base.clone() };
                run.policy.kind = arm.policy();
                run.budget_of(1, false)
            })
            .max_by_key(|b| b.total())
            .unwrap_or_default();
        let runs = (c.arms.len() as u128).saturating_mul(c.num_seeds as u128);
        let mut b = Budget::new();
        super::fixed(&mut b);
        b.add_nested(
            "each worker's experiment: ",
            "base",
            &heavier,
            (threads as u128).min(runs.max(1)),
        );
        // A point per 100 steps of three curves, and the evaluation's few hundred numbers.
        let points = (c.base.steps / 100 + 1) as u128;
        b.add(
            "each run's curves and evaluation",
            "num_seeds, arms, base.steps",
            runs,
            24 * points + 8192,
        );
        b
    }

    fn run(
        c: ActdynCompareConfig,
        _: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run(c, launch)
    }
}

/// An error of the base experiment, its field named as the comparison's key
/// (`base.policy.horizon`).
fn base_named(e: kestrel_actdyn::ActdynError) -> RunError {
    match e {
        kestrel_actdyn::ActdynError::Invalid(mut i) => {
            i.field = format!("base.{}", i.field).into();
            RunError::Invalid(i)
        }
        e => e.into(),
    }
}

/// The figures compared, per run: (key, label, value).
fn metric_fns() -> Vec<(&'static str, &'static str, MetricFn)> {
    vec![
        ("elbo_last100", "ELBO/T (last 100)", Box::new(|r| r.curves.elbo_last100)),
        ("ll_last100", "LL/T/N_y (last 100)", Box::new(|r| r.curves.ll_last100)),
        ("kl_last100", "KL/T/D (last 100)", Box::new(|r| r.curves.kl_last100)),
        ("obs_r2_k0", "obs R² k=0", Box::new(|r| r.evaluation.obs_r2_by_k[0])),
        (
            "obs_r2_k5",
            "obs R² k=5",
            Box::new(|r| r.evaluation.obs_r2_by_k.get(5).copied().unwrap_or(f64::NAN)),
        ),
        (
            "obs_r2_k10",
            "obs R² k=10",
            Box::new(|r| r.evaluation.obs_r2_by_k.get(10).copied().unwrap_or(f64::NAN)),
        ),
        ("latent_r2_0", "latent R² dim 0", Box::new(|r| r.evaluation.latent_r2[0])),
        ("latent_r2_1", "latent R² dim 1", Box::new(|r| r.evaluation.latent_r2[1])),
        ("log10_vf_rel_err", "log10 VF rel. error", Box::new(|r| r.evaluation.vf_rel_err.log10())),
        (
            "covered_fraction",
            "RBF centres visited",
            Box::new(|r| r.covered_fraction.unwrap_or(f64::NAN)),
        ),
    ]
}

/// One compared figure of a run.
type MetricFn = Box<dyn Fn(&ArmResult) -> f64>;

/// An arm of a comparison: the policy every seed runs with (the paper's names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArmKind {
    /// The run's config with the random policy.
    Random,
    /// The run's config with iCEM on the Fisher information.
    Active,
}

impl ArmKind {
    /// Every arm.
    pub const ALL: [ArmKind; 2] = [ArmKind::Random, ArmKind::Active];

    /// Its one spelling (`random`, `active`).
    pub fn name(self) -> &'static str {
        match self {
            ArmKind::Random => "random",
            ArmKind::Active => "active",
        }
    }

    fn policy(self) -> PolicyKind {
        match self {
            ArmKind::Random => PolicyKind::Random,
            ArmKind::Active => PolicyKind::Icem,
        }
    }
}

/// What one arm of a comparison gave on one seed.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArmResult {
    /// `random` or `active`.
    pub arm: String,
    /// Seed.
    pub seed: u64,
    /// Final evaluation.
    pub evaluation: Evaluation,
    /// Training curves.
    pub curves: Curves,
    /// Fraction of RBF centres visited.
    pub covered_fraction: Option<f64>,
    /// Wall time of the run (s).
    pub seconds: f64,
}

/// Runs `c` with the given policy to the end (no folder), returning its evaluation.
pub fn run_quiet(c: &ActdynConfig) -> Result<(Evaluation, Curves, Option<f64>, f64), RunError> {
    let t0 = std::time::Instant::now();
    // Nothing is persisted here, so transitions are not kept.
    let mut run = ActdynRun::new(ActdynConfig { save_every: 0, ..c.clone() })?;
    let mut acc = CurveAcc::default();
    let t = c.train.window;
    while run.steps_done() < c.steps {
        let r = run.step()?;
        if let Some(tr) = &r.train {
            acc.push(r.step, tr.terms.logged(t, c.env.obs_dim, 2));
        }
    }
    let data = run.validation_data();
    let e = run.evaluate(&data);
    Ok((e, acc.finish(), run.covered_fraction(), t0.elapsed().as_secs_f64()))
}

/// Mean and 95 % confidence half-width (Student t) of the finite values, with their count.
pub fn mean_ci(v: &[f64]) -> (f64, f64, usize) {
    let x: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let st = crate::stats::Stats::of(&x);
    (st.mean, st.ci95, st.n)
}

/// Median and a distribution-free confidence interval for it of at least 95 % coverage (order
/// statistics x_(k) and x_(n+1−k) with the largest k whose binomial tail P(Bin(n, ½) < k) is at
/// most 2.5 %; the whole range when n < 6). −∞ counts as the smallest value; NaN is dropped.
pub fn median_ci(v: &[f64]) -> (f64, f64, f64) {
    let mut x: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if x.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    x.sort_by(|a, b| a.total_cmp(b));
    let n = x.len();
    // P(Bin(n, ½) ≤ j) accumulated in f64.
    let mut k = 1;
    let (mut cdf, mut pmf) = (0.0f64, 0.5f64.powi(n as i32));
    for j in 0..n {
        cdf += pmf;
        if cdf > 0.025 {
            break;
        }
        k = j + 1;
        pmf *= (n - j) as f64 / (j + 1) as f64;
    }
    let k = k.min(n.div_ceil(2));
    (median(&x), x[k - 1], x[n - k])
}

/// A summary cell (median [CI]; mean ± CI (n)) and the same numbers as JSON.
fn describe(v: &[f64]) -> (String, serde_json::Value) {
    let (m, ci, n) = mean_ci(v);
    let (med, lo, hi) = median_ci(v);
    let text = format!(
        "{} [{}, {}]; mean {} ± {} (n {n})",
        short(med),
        short(lo),
        short(hi),
        short(m),
        short(ci)
    );
    (text, json!({"mean": m, "ci95": ci, "median": med, "median_ci": [lo, hi], "n": n}))
}

/// A number in a short form: 4 decimals, or scientific when very large or small.
pub fn short(x: f64) -> String {
    if x.is_finite() && x != 0.0 && (x.abs() >= 1e4 || x.abs() < 1e-3) {
        format!("{x:.3e}")
    } else {
        format!("{x:.4}")
    }
}

/// Median of the values (NaN when empty; −∞ counts as smallest).
pub fn median(v: &[f64]) -> f64 {
    let mut x: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if x.is_empty() {
        return f64::NAN;
    }
    x.sort_by(|a, b| a.total_cmp(b));
    let n = x.len();
    if n % 2 == 1 { x[n / 2] } else { 0.5 * (x[n / 2 - 1] + x[n / 2]) }
}

/// Runs the arms (`random`: the base with the random policy; `active`: with iCEM) on every
/// seed, one experiment per thread, into one folder: `metrics.jsonl` (one line per run: its
/// figures, evaluation and curves), `comparison.json` and `summary.md/json` (per metric: mean
/// ± 95 % CI and median per arm, and the paired difference of the second arm from the first).
pub fn run(cc: ActdynCompareConfig, launch: Launch<'_>) -> Result<Outcome, RunError> {
    ActdynCompare::validate(&cc)?;
    let (c, seeds, arms) = (&cc.base, cc.seeds(), &cc.arms);
    let mut jobs = Vec::new();
    for arm in arms {
        for &seed in &seeds {
            let mut cfg = c.clone();
            cfg.policy.kind = arm.policy();
            cfg.seed = seed;
            jobs.push((arm.name().to_string(), cfg));
        }
    }
    // What only building a run checks (the planner's sizes, say), once per arm before the
    // folder exists, its errors named as the comparison's keys.
    for arm in arms {
        let first = jobs.iter().find(|j| j.0 == arm.name()).map(|j| j.1.clone());
        if let Some(cfg) = first {
            ActdynRun::new(cfg).map_err(base_named)?;
        }
    }
    let arms: Vec<String> = arms.iter().map(|a| a.name().to_string()).collect();
    let (dir, mut metrics) =
        start(&launch, "actdyn", &format!("compare-{}", arms.join("-")), cc.seed, &cc)?;
    let launch = std::sync::Mutex::new(launch);
    // Why the launch stopped the comparison: later jobs do not start (running ones finish).
    let stop: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let done = std::sync::atomic::AtomicU64::new(0);
    let total = jobs.len() as u64;
    let r = (|| -> Result<String, RunError> {
        let results: Vec<Result<ArmResult, RunError>> = jobs
            .par_iter()
            .with_max_len(1)
            .map(|(arm, cfg)| {
                if let Some(why) = stop.lock().ok().and_then(|s| s.clone()) {
                    return Err(RunError::Stopped(why));
                }
                let (evaluation, curves, covered_fraction, seconds) = run_quiet(cfg)?;
                let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                if let Ok(mut l) = launch.lock() {
                    let mut p = l.progress(total, "runs");
                    p.tick(n, &format!("{arm} seed {} in {seconds:.1} s", cfg.seed));
                    if let (Err(RunError::Stopped(why)), Ok(mut s)) = (p.stopped(), stop.lock()) {
                        *s = Some(why);
                    }
                }
                Ok(ArmResult {
                    arm: arm.clone(),
                    seed: cfg.seed,
                    evaluation,
                    curves,
                    covered_fraction,
                    seconds,
                })
            })
            .collect();
        let results: Vec<ArmResult> = results.into_iter().collect::<Result<_, _>>()?;
        let metric_fns = metric_fns();
        for (i, r) in results.iter().enumerate() {
            let mut line = serde_json::to_value(r).map_err(failed)?;
            for (key, _, f) in &metric_fns {
                line[*key] = json!(f(r));
            }
            metrics.log(i as u64 + 1, line)?;
        }
        metrics.finish()?;
        let mut summary = Summary::new(format!(
            "actdyn compare: {} on {} seeds, {:?} profile, {} steps",
            arms.join(" vs "),
            seeds.len(),
            c.profile,
            c.steps
        ))
        .value("seed", "first seed", cc.seed)
        .value("num_seeds", "seeds", seeds.len())
        .value("commit", "commit", COMMIT);
        let mut rows = Vec::new();
        let mut json_rows = serde_json::Map::new();
        for (key, label, f) in &metric_fns {
            let mut row = vec![label.to_string()];
            let mut j = serde_json::Map::new();
            for arm in &arms {
                let v: Vec<f64> = results.iter().filter(|r| &r.arm == arm).map(f).collect();
                let (text, mut stats) = describe(&v);
                row.push(text);
                summary = summary.value(
                    &format!("{key}_{arm}"),
                    &format!("{label}, {arm}, mean"),
                    stats["mean"].clone(),
                );
                stats["values"] = json!(v);
                j.insert(arm.clone(), stats);
            }
            if arms.len() == 2 {
                let d: Vec<f64> = seeds
                    .iter()
                    .filter_map(|s| {
                        let a = results.iter().find(|r| r.arm == arms[1] && r.seed == *s)?;
                        let b = results.iter().find(|r| r.arm == arms[0] && r.seed == *s)?;
                        Some(f(a) - f(b))
                    })
                    .collect();
                let (text, mut stats) = describe(&d);
                summary = summary.value(
                    &format!("{key}_difference"),
                    &format!("{label}, {} − {} per seed, mean", arms[1], arms[0]),
                    stats["mean"].clone(),
                );
                let wins = d.iter().filter(|x| **x > 0.0).count();
                row.push(format!("{text}; {wins} seeds > 0"));
                stats["positive"] = json!(wins);
                j.insert("paired_difference".into(), stats);
            }
            rows.push(row);
            json_rows.insert(key.to_string(), serde_json::Value::Object(j));
        }
        let mut header: Vec<String> = vec!["metric".into()];
        header.extend(arms.iter().map(|a| format!("{a}: median [95% CI]; mean ± 95% CI")));
        if arms.len() == 2 {
            header.push(format!("{} − {} (paired, per seed)", arms[1], arms[0]));
        }
        let header_refs: Vec<&str> = header.iter().map(|s| s.as_str()).collect();
        crate::base::write_atomic(
            &dir.join("comparison.json"),
            serde_json::to_string_pretty(&serde_json::Value::Object(json_rows))
                .map_err(failed)?
                .as_bytes(),
        )?;
        summary
            .table("comparison", &header_refs, rows)
            .file("config.toml", "the comparison (the base's policy and seed are set per run)")
            .file("metrics.jsonl", "one line per run: its figures, evaluation and curves")
            .file("comparison.json", "per metric and arm: mean, 95% CI, median, values")
            .write(dir.path())?;
        Ok(format!("{} runs; run folder {}", results.len(), dir.path().display()))
    })();
    finish(dir, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        let (m, lo, hi) = median_ci(&v);
        // n = 10: P(Bin ≤ 1) = 1.1 % ≤ 2.5 % < P(Bin ≤ 2) = 5.5 %, so x_(2) and x_(9).
        assert_eq!((m, lo, hi), (5.5, 2.0, 9.0));
        assert_eq!(median_ci(&[3.0, 1.0]), (2.0, 1.0, 3.0));
        let (mean, ci, n) = mean_ci(&[1.0, 2.0, 3.0, f64::NEG_INFINITY]);
        assert_eq!((mean, n), (2.0, 3));
        assert!((ci - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(median(&[f64::NEG_INFINITY, 1.0, 2.0]), 1.0);
        assert_eq!(short(1e51), "1.000e51");
    }
}
