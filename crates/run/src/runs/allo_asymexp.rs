//! `kestrel allo asymexp`: ALLO as `exp_alcl/allo.py` of `tarod13/asymexp` trains it
//! (reference §1.6b, §1.7, §1.8), read top to bottom:
//!
//! 1. the map in the reference's format ([`resolve_map`], `kestrel_envs::asymexp`);
//! 2. collection: `num_envs` environments × `num_samples / num_envs` steps, one row each, and the
//!    empirical `(state, action)` counts (`kestrel_agents::asymexp::collect`);
//! 3. the ground truth from those counts (`kestrel_agents::laplacian::empirical`): the
//!    thresholded version's symmetrised transition matrix, or the final version's
//!    inverse-weighted Laplacian (with the simple and weighted ones also scored);
//! 4. per step: two batches from the rows (`kestrel_replay::RowReplay`), one update
//!    (`kestrel_agents::asymexp::Asymexp`: one encoder pass over the distinct states, Adam on
//!    the encoder, SGD on the duals and barrier);
//! 5. every `log_every` steps the loss terms and the duals (`metrics.jsonl`, written by the
//!    metrics thread), every `eval_every` steps the cosine similarities; at checkpoints the
//!    heat maps, learning curves and dual evolution are drawn on their own thread.
//!
//! Its config nests the learner's ([`AsymexpConfig`], the script's `Args`) whole; the paper's
//! ALLO is `kestrel allo train` (`runs/allo.rs`). The checkpoints' drawings and curves are
//! `crate::figures`'.

use crate::base::{COMMIT, RunError};
use crate::figures::{Drawer, curve_plots, eigen_heatmaps};
use crate::launch::{Checkpoints, Launch, Outcome, finish};
use crate::resume::{Resumable, open};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_agents::AgentError;
use kestrel_agents::asymexp::{
    Asymexp, AsymexpConfig, AsymexpStep, Collected, KeyDraws, VersionKind, collect,
};
use kestrel_agents::laplacian::empirical::{self, Decomposed, TruthRuleKind};
use kestrel_core::{Budget, FromInvalid, Key};
use kestrel_envs::GridMap;
use kestrel_envs::asymexp::AsymexpMap;
use kestrel_plot::Heatmaps;
use kestrel_replay::RowRuleKind;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::path::Path;

/// `kestrel allo asymexp`'s config: `exp_alcl/allo.py`'s `Args` (d 10, batch 256, 1000
/// environments × 1000 steps, 20,000 steps, seed 42, lr 3e-4, discount 0.2, encoder
/// 2-256-256-256-256-10, cosine and logs every 100 steps, checkpoints every 5,000) on its
/// default map, `room4`: `builtin:four-rooms`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct AlloAsymexpConfig {
    /// A map file in the reference's format (legacy or, in the final version, comma format
    /// with doors) or `builtin:NAME` (open-N, rooms-K-N, four-rooms, maze-N-SEED; walls `X`).
    pub map: String,
    /// The learner as the script's `Args` spell it: `version` (`thresholded`, tree 4deb141, the
    /// one the seed quotes, or `final`, ba956b1: the ground truth, the map parser and whether
    /// `threshold` exists), sizes, rates, duals, barrier, perturbation, threshold.
    #[documented(nested)]
    pub learner: AsymexpConfig,
    /// Transitions collected in all: `num_envs` × steps per environment.
    pub num_samples: usize,
    /// Collecting environments, one replay row each (`num_envs`).
    pub num_envs: usize,
    /// Steps per episode (`max_episode_length`); the goal `G` also ends one.
    pub max_episode_length: usize,
    /// Replay pairs: `reference` (its rule; a first state at an episode's end with no later
    /// terminal stops the run, as the reference raises) or `within-episode`.
    pub sampling: RowRuleKind,
    /// Irreversible doors placed at random among the map's reversible moves (`--use_doors
    /// --num_doors`; 0: none), each blocking a move's reverse.
    pub num_doors: usize,
    /// The doors' seed (`door_seed`, numpy's `RandomState`: the reference's doors exactly).
    pub door_seed: u32,
    /// Ground truth: `reference` (its oddities: the clip to 1, |λ| order, the symmetric part
    /// of the inverse-weighted Laplacian, NaN on goal maps) or `fixed`.
    pub truth: TruthRuleKind,
    /// Gradient steps in total (a resumed run's included).
    pub steps: u64,
    /// Seed (data, initialisation and batches).
    pub seed: u64,
    /// Evaluate the cosine similarities every this many steps.
    pub eval_every: u64,
    /// Log the loss terms and the duals every this many steps (`metrics.jsonl`, written off
    /// the training thread).
    pub log_every: u64,
    /// Checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: u64,
}

impl Default for AlloAsymexpConfig {
    fn default() -> Self {
        AlloAsymexpConfig {
            map: "builtin:four-rooms".into(),
            learner: AsymexpConfig::reference(VersionKind::Thresholded),
            num_samples: 1_000_000,
            num_envs: 1000,
            max_episode_length: 1000,
            sampling: RowRuleKind::Reference,
            num_doors: 0,
            door_seed: 42,
            truth: TruthRuleKind::Reference,
            steps: 20_000,
            seed: 42,
            eval_every: 100,
            log_every: 100,
            checkpoint_every: 5000,
        }
    }
}

/// The `allo-asymexp` run kind.
pub struct AlloAsymexp;

impl Run for AlloAsymexp {
    const NAME: &'static str = "allo-asymexp";
    const COMMAND: &'static str = "allo asymexp";
    const ABOUT: &'static str = "Train ALLO as asymexp's exp_alcl/allo.py does (its defaults, data, ground truth and logs).";
    const RESUMABLE: bool = true;
    const BUDGET: &'static str = "steps";
    const METRICS: &'static [&'static str] = &["cosine_similarity"];
    const CURVE: &'static str = "cosine_similarity";
    type Config = AlloAsymexpConfig;

    fn defaults(_: Option<&AlloAsymexpConfig>) -> AlloAsymexpConfig {
        AlloAsymexpConfig::default()
    }

    fn without_budget(c: &AlloAsymexpConfig) -> AlloAsymexpConfig {
        AlloAsymexpConfig { steps: 0, ..c.clone() }
    }

    fn budget(c: &AlloAsymexpConfig, _threads: usize) -> Budget {
        budget(c)
    }

    fn outputs(c: &AlloAsymexpConfig) -> Outputs {
        outputs(c)
    }

    /// The fields, the map (with its doors) and whether its truth is defined.
    fn validate(c: &AlloAsymexpConfig) -> Result<(), RunError> {
        c.validate()?;
        check_truth(c, &run_map(c)?)?;
        Ok(())
    }

    fn run(
        c: AlloAsymexpConfig,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run(c, resume, launch)
    }
}

/// Largest map the run takes: its ground truth inverts and decomposes dense `S × S`
/// matrices.
pub const MAX_STATES: usize = 4096;

impl AlloAsymexpConfig {
    /// The steps each environment collects, with every field checked.
    pub fn validate(&self) -> Result<usize, AgentError> {
        if self.num_envs == 0 || self.num_envs > 1_000_000 {
            return Err(AgentError::invalid("num_envs", self.num_envs, "1 to 1,000,000"));
        }
        if !(1..=1_000_000_000).contains(&self.num_samples)
            || !self.num_samples.is_multiple_of(self.num_envs)
        {
            return Err(AgentError::invalid(
                "num_samples",
                self.num_samples,
                format!(
                    "1 to 1,000,000,000 and a multiple of num_envs = {} (steps per environment)",
                    self.num_envs
                ),
            ));
        }
        if self.max_episode_length == 0 {
            return Err(AgentError::invalid("max_episode_length", 0, "at least 1"));
        }
        for (k, v) in
            [("steps", self.steps), ("eval_every", self.eval_every), ("log_every", self.log_every)]
        {
            if v == 0 {
                return Err(AgentError::invalid(k, 0, "at least 1"));
            }
        }
        // The learner's fields by their path in this config.
        self.learner.validate().map_err(|e| super::under("learner", e))?;
        if self.learner.version == VersionKind::Final && self.learner.discount >= 1.0 {
            return Err(AgentError::invalid(
                "learner.discount",
                self.learner.discount,
                "below 1 (the final truth's SR)",
            ));
        }
        Ok(self.num_samples / self.num_envs)
    }
}

/// The run's map: [`resolve_map`], then `asymexp.num_doors` random doors.
pub fn run_map(c: &AlloAsymexpConfig) -> Result<AsymexpMap, AgentError> {
    let mut map = resolve_map(&c.map, c.learner.version)?;
    let n = c.num_doors;
    if n > 0 {
        if !map.blocked.is_empty() {
            return Err(AgentError::invalid(
                "num_doors",
                n,
                format!(
                    "0 with {} (its own doors; the reference's random doors replace them)",
                    c.map
                ),
            ));
        }
        let doors = map.random_doors(n, c.door_seed);
        map.add_doors(&doors)?;
    }
    Ok(map)
}

/// Refuses, before any work, a map on which the final version's reference truth is NaN: a
/// state that is never left (the goal `G`, or a state a fixed start `S` never reaches) makes
/// the visit distribution singular.
pub fn check_truth(c: &AlloAsymexpConfig, map: &AsymexpMap) -> Result<(), AgentError> {
    if c.learner.version != VersionKind::Final || c.truth != TruthRuleKind::Reference {
        return Ok(());
    }
    let why = if let Some(g) = map.goal {
        Some(format!("its goal G (full index {g}) is never left"))
    } else if let Some(s0) = map.start_state() {
        let mut seen = vec![false; map.num_states()];
        let mut stack = vec![s0];
        seen[s0 as usize] = true;
        while let Some(s) = stack.pop() {
            for &t in &map.next[s as usize * 4..s as usize * 4 + 4] {
                if !seen[t as usize] {
                    seen[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        seen.iter().position(|&v| !v).map(|s| format!("state {s} is out of reach of its start S"))
    } else {
        None
    };
    match why {
        Some(why) => Err(AgentError::invalid(
            "truth",
            format!("\"reference\" on {}: {why}", c.map),
            "\"fixed\" on this map (the reference's inverse-weighted truth is NaN where a state is never left)",
        )),
        None => Ok(()),
    }
}

/// The map of an asymexp run: a file in the reference's format, or `builtin:NAME` (drawn by
/// `GridMap::builtin`, walls `X`).
pub fn resolve_map(spec: &str, version: VersionKind) -> Result<AsymexpMap, AgentError> {
    let map = match spec.strip_prefix("builtin:") {
        Some(name) => {
            let g = GridMap::builtin(name)?;
            AsymexpMap::parse(g.to_text().trim_end_matches('\n'), spec, version)?
        }
        None => AsymexpMap::load(Path::new(spec), version)?,
    };
    if map.num_states() > MAX_STATES {
        return Err(AgentError::invalid(
            "map",
            format!("{spec} ({} states)", map.num_states()),
            format!("at most {MAX_STATES} states (the ground truth inverts and decomposes S × S)"),
        ));
    }
    Ok(map)
}

/// The ground truth a run scores against: the main one (`cosine_similarity`) and, in the
/// final version, the other two Laplacians.
#[derive(Clone, Debug)]
pub struct Truth {
    /// What the main one is (`sym_transition_matrix` or `invweighted`).
    pub name: &'static str,
    /// The main truth.
    pub main: Decomposed,
    /// The others, named as the reference's metric suffixes.
    pub others: Vec<(&'static str, Decomposed)>,
}

impl Truth {
    fn of(c: &AlloAsymexpConfig, map: &AsymexpMap, data: &Collected) -> Result<Self, AgentError> {
        let (n, k) = (map.num_states(), c.learner.num_eigenvectors);
        if k > n {
            return Err(AgentError::invalid(
                "learner.num_eigenvectors",
                k,
                format!("at most the map's {n} states"),
            ));
        }
        let rule = c.truth;
        Ok(match c.learner.version {
            VersionKind::Thresholded => Truth {
                name: "sym_transition_matrix",
                main: empirical::thresholded(&data.counts, &map.next, n, k, rule)?,
                others: Vec::new(),
            },
            VersionKind::Final => {
                let t = empirical::final_truth(
                    &data.counts,
                    &map.next,
                    n,
                    k,
                    c.learner.discount,
                    rule,
                )?;
                Truth {
                    name: "invweighted",
                    main: t.invweighted,
                    others: vec![("simple", t.simple), ("weighted", t.weighted)],
                }
            }
        })
    }

    /// The cosine metric of a representation (`S × d`): `{cosine_sim_avg, cosine_sim_i, and
    /// the others' averages}`, and the main average.
    fn score(&self, rep: &[f64], d: usize) -> (f64, Map<String, Value>) {
        let (avg, sims) = empirical::cosine(rep, d, &self.main);
        let mut m = Map::new();
        m.insert("cosine_similarity".into(), json!(avg));
        for (i, s) in sims.iter().enumerate() {
            m.insert(format!("cosine_sim_{i}"), json!(s));
        }
        for (name, t) in &self.others {
            m.insert(format!("cosine_sim_avg_{name}"), json!(empirical::cosine(rep, d, t).0));
        }
        (avg, m)
    }
}

/// What an asymexp run reports through `observe`.
pub enum AsymexpEvent<'a> {
    /// The data is collected and the ground truth computed.
    Ready {
        /// Transitions collected.
        num_samples: u64,
        /// The truth.
        truth: &'a Truth,
    },
    /// A step: its terms; `scores` at evaluation steps (after the update, as the reference).
    Step {
        /// Steps done.
        step: u64,
        /// The step's terms and gradient norm.
        out: &'a AsymexpStep,
        /// The duals the step's loss used, before its update (`d × d`; the reference's logged
        /// `dual_i` are these).
        duals: &'a [f32],
        /// The barrier the step's loss used.
        barrier: f64,
        /// The cosine metrics, at evaluation steps.
        scores: Option<(f64, Map<String, Value>)>,
    },
    /// A checkpoint is due.
    Checkpoint {
        /// Steps done.
        step: u64,
        /// The learner.
        learner: &'a Asymexp<f32>,
    },
}

/// An asymexp run, validated: its map and learner (fresh or resumed).
pub struct AsymexpRun {
    config: AlloAsymexpConfig,
    map: AsymexpMap,
    learner: Asymexp<f32>,
    num_steps: usize,
}

impl AsymexpRun {
    /// Loads the map and builds a fresh learner (initialisation key `Key::new(seed).fold_in(1)`).
    pub fn new(config: AlloAsymexpConfig) -> Result<Self, AgentError> {
        let num_steps = config.validate()?;
        let cfg = config.learner.clone();
        let map = run_map(&config)?;
        check_truth(&config, &map)?;
        if config.learner.num_eigenvectors > map.num_states() {
            return Err(AgentError::invalid(
                "learner.num_eigenvectors",
                config.learner.num_eigenvectors,
                format!("at most the map's {} states", map.num_states()),
            ));
        }
        let learner = Asymexp::new(cfg, map.coords(), Key::new(config.seed).fold_in(1))?;
        Ok(AsymexpRun { config, map, learner, num_steps })
    }

    /// The map.
    pub fn map(&self) -> &AsymexpMap {
        &self.map
    }

    /// The learner.
    pub fn learner(&self) -> &Asymexp<f32> {
        &self.learner
    }

    /// Collects (key `Key::new(seed).fold_in(0xa5)`), builds the truth and trains up to
    /// `steps` (step `t`: batches from `Key::new(seed).fold_in(2).fold_in(t)`).
    pub fn run(
        &mut self,
        mut observe: impl FnMut(AsymexpEvent<'_>) -> Result<bool, AgentError>,
    ) -> Result<(), AgentError> {
        let c = self.config.clone();
        let a = &c;
        let mut draws = KeyDraws::new(&self.map, Key::new(c.seed).fold_in(0xa5));
        let data = collect(
            &self.map,
            a.num_envs,
            self.num_steps,
            a.max_episode_length,
            a.sampling,
            &mut draws,
        )?;
        if a.sampling == RowRuleKind::Reference {
            let dead = data.replay.rows_with_dead_ends();
            if let Some(&r) = dead.first() {
                return Err(AgentError::invalid(
                    "sampling",
                    format!(
                        "\"reference\" on this data: {} of {} rows (row {r} first) end an episode \
                         before their last slot with no later terminal, where the reference's \
                         sampler raises (AssertionError) at the first such draw",
                        dead.len(),
                        data.replay.num_rows()
                    ),
                    "\"within-episode\" (or episodes that end only at the row's end: \
                     max_episode_length dividing the steps per environment, no goal)",
                ));
            }
        }
        let truth = Truth::of(&c, &self.map, &data)?;
        if !observe(AsymexpEvent::Ready { num_samples: data.transitions, truth: &truth })? {
            return Ok(());
        }
        let b = c.learner.batch_size;
        let (mut obs, mut next, mut obs2, mut unused) =
            (vec![0u32; b], vec![0u32; b], vec![0u32; b], vec![0u32; b]);
        let key = Key::new(c.seed).fold_in(2);
        let d = c.learner.num_eigenvectors;
        let mut duals = self.learner.mult.duals.clone();
        let offsets = kestrel_replay::TruncatedGeometric::tabulated(c.learner.discount);
        while self.learner.steps < c.steps {
            let t = self.learner.steps;
            let k = key.fold_in(t);
            data.replay.sample_with(k.fold_in(0), &offsets, a.sampling, &mut obs, &mut next)?;
            data.replay.sample_with(k.fold_in(1), &offsets, a.sampling, &mut obs2, &mut unused)?;
            duals.copy_from_slice(&self.learner.mult.duals);
            let barrier = self.learner.mult.barrier as f64;
            self.learner.step_on(&obs, &next, &obs2)?;
            let done = t + 1;
            let scores = (done.is_multiple_of(c.eval_every) || done == c.steps)
                .then(|| truth.score(&self.learner.representation(), d));
            let out = self.learner.last_step();
            let go =
                observe(AsymexpEvent::Step { step: done, out, duals: &duals, barrier, scores })?;
            if c.checkpoint_every > 0 && done.is_multiple_of(c.checkpoint_every) {
                observe(AsymexpEvent::Checkpoint { step: done, learner: &self.learner })?;
            }
            if !go {
                break;
            }
        }
        Ok(())
    }
}

/// The loss terms of a step's `metrics.jsonl` line, by the reference's names, in the order
/// [`step_fields`] writes their values.
const STEP_TERMS: [&str; 14] = [
    "allo",
    "graph_loss",
    "dual_loss",
    "dual_loss_neg",
    "barrier_loss",
    "approx_eigenvalue_sum",
    "total_norm_error",
    "total_error",
    "total_two_component_error",
    "distance_to_constraint_manifold",
    "distance_to_origin",
    "grad_norm",
    "barrier_coef",
    "encoder_rows",
];

/// The duals a step's line logs, as the reference does: `(i, i)` for the first 11 and `(i, j)`
/// below the diagonal in the first two columns, with `dual_i` / `dual_i_j` names.
fn logged_duals(d: usize) -> impl Iterator<Item = (usize, usize, String)> {
    (0..d.min(11)).flat_map(|i| {
        std::iter::once((i, i, format!("dual_{i}")))
            .chain((0..i.min(2)).map(move |j| (i, j, format!("dual_{i}_{j}"))))
    })
}

/// One `metrics.jsonl` line of a step, with the reference's names (its `cosine_sim_avg` is
/// the registry's `cosine_similarity`): the loss and its terms, the barrier, the duals'
/// diagonal and first two columns, all before the step's update, as the reference logs them.
pub fn step_fields(out: &AsymexpStep, duals: &[f32], barrier: f64, d: usize) -> Map<String, Value> {
    let t = &out.terms;
    let values = [
        t.allo,
        t.graph_loss,
        t.dual_loss_pos,
        t.dual_loss_neg,
        t.barrier_loss_pos,
        t.eigenvalue_sum,
        t.total_norm_error,
        t.total_error,
        t.total_two_component_error,
        t.distance_to_constraint_manifold,
        t.distance_to_origin,
        out.grad_norm,
        barrier,
        out.encoder_rows as f64,
    ];
    let mut m: Map<String, Value> =
        STEP_TERMS.iter().zip(values).map(|(k, v)| (k.to_string(), json!(v))).collect();
    for (i, j, name) in logged_duals(d) {
        m.insert(name, json!(duals[i * d + j] as f64));
    }
    for i in 0..d.min(11) {
        m.insert(format!("graph_perturbation_{i}"), json!(t.graph_perturbation[i]));
    }
    m
}

/// What a run of this kind writes ([`crate::run::Run::outputs`]): the step lines of
/// [`step_fields`], the evaluations' cosines (`Truth::score`: the final version's other two
/// Laplacians too) and the summary.
pub fn outputs(c: &AlloAsymexpConfig) -> Outputs {
    let d = c.learner.num_eigenvectors;
    let others: &[&str] = match c.learner.version {
        VersionKind::Thresholded => &[],
        VersionKind::Final => &["simple", "weighted"],
    };
    Outputs::new(&["barrier", "cosine_similarity", "ms_per_step", "steps"], &STEP_TERMS)
        .summary(others.iter().map(|o| format!("cosine_similarity_{o}")))
        .columns(logged_duals(d).map(|(_, _, name)| name))
        .columns((0..d.min(11)).map(|i| format!("graph_perturbation_{i}")))
        .columns(std::iter::once("cosine_similarity".to_string()))
        .columns((0..d).map(|i| format!("cosine_sim_{i}")))
        .columns(others.iter().map(|o| format!("cosine_sim_avg_{o}")))
}

/// Trains into a new folder or resumes one. Writes `config.toml`, `record.json`, `metrics.jsonl` (a line per log step),
/// `checkpoint/`, `eigenvectors[-STEP].png/svg`, `learning_curves.png/svg`,
/// `dual_evolution.png/svg`, `cosine.png/svg`, `summary.md/json`.
pub fn run(
    c: AlloAsymexpConfig,
    resume: Option<&Path>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let stem = c.map.trim_start_matches("builtin:");
    let stem = stem.rsplit('/').next().unwrap_or(stem).trim_end_matches(".txt");
    let name = stem.to_string();
    let (mut run, dir, mut metrics, stamp) =
        open::<AsymexpRun>(&mut launch, &c, resume, &name, c.seed)?;
    // The curves are drawn from every logged line, the earlier launches' and this one's.
    let mut history = match resume {
        Some(_) => crate::metrics::read_metrics(&dir.join("metrics.jsonl"))?,
        None => Vec::new(),
    };
    let r = (|| -> Result<String, RunError> {
        let c = run.config.clone();
        let d = c.learner.num_eigenvectors;
        let map = run.map().clone();
        let begin = run.learner().steps;
        let mut progress = launch.progress(c.steps, "steps");
        let mut drawer = Drawer::new();
        let mut truth_held = None;
        let mut last_scores = (f64::NAN, Map::new());
        let mut ckpts = Checkpoints::new(dir.path(), stamp, begin);
        let mut t0 = std::time::Instant::now();
        run.run(|e| {
            match e {
                AsymexpEvent::Ready { num_samples, truth } => {
                    // Steps are timed from here: collection and the truth are not steps.
                    t0 = std::time::Instant::now();
                    truth_held = Some(truth.clone());
                    if !progress.tick(begin, &format!("{num_samples} transitions collected")) {
                        return Ok(false);
                    }
                }
                AsymexpEvent::Step { step, out, duals, barrier, scores } => {
                    let logged =
                        step.is_multiple_of(c.log_every) || step == c.steps || scores.is_some();
                    if let Some(s) = scores {
                        last_scores = s;
                    }
                    if logged {
                        let mut f = step_fields(out, duals, barrier, d);
                        if step.is_multiple_of(c.eval_every) || step == c.steps {
                            f.extend(last_scores.1.clone());
                        }
                        history.push(Value::Object({
                            let mut h = f.clone();
                            h.insert("global_step".into(), json!(step));
                            h
                        }));
                        metrics.log(step, Value::Object(f)).map_err(|e| {
                            AgentError::invalid("metrics", e, "a writable run folder")
                        })?;
                    }
                    let cos = if last_scores.0.is_nan() {
                        "-".into()
                    } else {
                        format!("{:.4}", last_scores.0)
                    };
                    if !progress.tick(step, &format!("cos {cos} allo {:.4}", out.terms.allo)) {
                        return Ok(false);
                    }
                }
                AsymexpEvent::Checkpoint { step, learner } => {
                    ckpts.save(step, |dd, s| learner.save_checkpoint(dd, s))?;
                    // Heat maps and curves of this checkpoint, drawn off the training thread.
                    let (rep, map, truth, hist) = (
                        learner.representation(),
                        map.clone(),
                        truth_held.clone().expect("the truth comes before any step"),
                        history.clone(),
                    );
                    let (stem, folder) =
                        (dir.join(&format!("eigenvectors-{step}")), dir.path().to_path_buf());
                    let (version, gamma) = (c.learner.version, c.learner.discount);
                    drawer.spawn(move || {
                        heatmaps(&map, &truth.main, &rep, d).save(&stem)?;
                        draw_curves(&folder, &hist, &truth, d, version, gamma)
                    })?;
                }
            }
            Ok(true)
        })?;
        let secs = t0.elapsed().as_secs_f64();
        drawer.wait()?;
        let learner = run.learner();
        ckpts.save(learner.steps, |dd, s| learner.save_checkpoint(dd, s))?;
        metrics.finish()?;
        progress.stopped()?;
        let truth = truth_held
            .ok_or_else(|| RunError::Failed("stopped before the data was collected".into()))?;
        let rep = learner.representation();
        let (avg, scores) = truth.score(&rep, d);
        heatmaps(&map, &truth.main, &rep, d).save(&dir.join("eigenvectors"))?;
        draw_curves(dir.path(), &history, &truth, d, c.learner.version, c.learner.discount)?;
        let per_step = 1e3 * secs / (learner.steps - begin).max(1) as f64;
        let dd = learner.config().num_eigenvectors;
        let est: Vec<f64> = (0..dd)
            .map(|i| {
                estimate(
                    c.learner.version,
                    c.learner.discount,
                    learner.mult.duals[i * dd + i] as f64,
                )
            })
            .collect();
        let rows: Vec<Vec<String>> = (0..d.min(truth.main.k))
            .map(|i| {
                vec![
                    format!("{}", i + 1),
                    format!(
                        "{:.4}",
                        scores[&format!("cosine_sim_{i}")].as_f64().unwrap_or(f64::NAN)
                    ),
                    format!("{:.4}", truth.main.eigenvalues[i]),
                    format!("{:.4}", est[i]),
                ]
            })
            .collect();
        let mut summary =
            Summary::new(format!("allo asymexp ({:?}) on {}", c.learner.version, c.map))
                .item(
                    "steps",
                    "steps",
                    learner.steps,
                    format!(
                        "{} ({} this launch, {secs:.1} s, {per_step:.2} ms/step)",
                        learner.steps,
                        learner.steps - begin
                    ),
                )
                .value(
                    "cosine_similarity",
                    &format!("average cosine similarity ({})", truth.name),
                    avg,
                )
                .value("ms_per_step", "ms per step (this launch)", per_step)
                .value("barrier", "barrier", learner.mult.barrier as f64);
        for (name, _) in &truth.others {
            let key = format!("cosine_sim_avg_{name}");
            summary = summary.value(
                match *name {
                    "simple" => "cosine_similarity_simple",
                    _ => "cosine_similarity_weighted",
                },
                &format!("average cosine similarity ({name})"),
                scores[&key].as_f64().unwrap_or(f64::NAN),
            );
        }
        summary
            .value("commit", "commit", COMMIT)
            .table(
                "components",
                &["component", "cosine", "true eigenvalue", "estimate from the duals"],
                rows,
            )
            .file("config.toml", "the resolved config")
            .file(
                "metrics.jsonl",
                "loss terms and duals every log_every steps, cosines every eval_every",
            )
            .file(
                "eigenvectors.png",
                "true (top) and learned (bottom, sign-aligned) eigenvectors (also .svg)",
            )
            .file("learning_curves.png", "the loss and its terms per log step (also .svg)")
            .file(
                "dual_evolution.png",
                "eigenvalue estimates from the duals against the truth (also .svg)",
            )
            .file("cosine.png", "average cosine similarity per evaluation (also .svg)")
            .file("checkpoint/", "resume with `--resume <this folder>`")
            .write(dir.path())?;
        Ok(format!(
            "average cosine similarity {avg:.4} ({}) after {} steps ({per_step:.2} ms/step); run folder {}",
            truth.name,
            learner.steps,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

impl Resumable for AsymexpRun {
    type Kind = AlloAsymexp;
    const UNIT: &'static str = "steps";
    fn fresh(c: &AlloAsymexpConfig) -> Result<Self, RunError> {
        Ok(AsymexpRun::new(c.clone())?)
    }
    fn load(c: &AlloAsymexpConfig, set: &Path) -> Result<Self, RunError> {
        let mut run = AsymexpRun::new(c.clone())?;
        let cfg = run.learner.config().clone();
        run.learner = Asymexp::load_checkpoint(cfg, run.map.coords(), set)?;
        Ok(run)
    }
    fn done(&self) -> u64 {
        self.learner.steps
    }
}

/// The eigenvalue estimate from a dual `β_ii` that matches the version's truth: the
/// thresholded version's plot read-out `(γ + ½β)/(γ(1 + ½β))` (½β clipped at −0.99), an
/// eigenvalue of the transition matrix it scores against; the final version's Laplacian
/// eigenvalue `−½β` (the sign of the logged `approx_eigenvalue_sum`; its own plot's `+½β`
/// has the opposite sign). The three read-outs: `kestrel_agents::asymexp::eigenvalue_readouts`.
pub fn estimate(version: VersionKind, gamma: f64, beta: f64) -> f64 {
    let [logged, _, thr] = kestrel_agents::asymexp::eigenvalue_readouts(&[beta], gamma);
    match version {
        VersionKind::Thresholded => thr[0],
        VersionKind::Final => logged[0],
    }
}

/// The curves from the logged lines ([`curve_plots`]), the duals read out as
/// [`estimate`] against the main truth's eigenvalues.
fn draw_curves(
    folder: &Path,
    history: &[Value],
    truth: &Truth,
    d: usize,
    version: VersionKind,
    gamma: f64,
) -> Result<(), RunError> {
    let m = d.min(truth.main.k);
    curve_plots(
        folder,
        history,
        &["allo", "graph_loss", "dual_loss", "dual_loss_neg", "barrier_loss", "total_error"],
        |b| estimate(version, gamma, b),
        &truth.main.eigenvalues[..m],
        &format!("average cosine similarity ({})", truth.name),
    )
}

/// True (top) and learned (bottom, sign-aligned) eigenvectors over the map.
fn heatmaps(map: &AsymexpMap, truth: &Decomposed, rep: &[f64], d: usize) -> Heatmaps {
    let k = truth.k;
    eigen_heatmaps(
        (map.width, map.height),
        map.num_states(),
        d.min(k),
        |s| map.xy(s as u32),
        |i, s| truth.vectors[s * k + i],
        rep,
        d,
    )
}

/// The run's peak heap bytes as named terms: collection's rows and counts, the dense
/// ground truth (S × S matrices and their decompositions), the encoder and Adam, a step's
/// buffers, and a checkpoint's drawings.
pub fn budget(c: &AlloAsymexpConfig) -> Budget {
    let n = run_map(c).map_or(0.0, |m| m.num_states() as f64);
    let (d, b) = (c.learner.num_eigenvectors as f64, c.learner.batch_size as f64);
    let mut sizes = vec![2.0];
    sizes.extend(c.learner.hidden.iter().map(|&h| h as f64));
    sizes.push(d);
    let p: f64 = sizes.windows(2).map(|w| (w[0] + 1.0) * w[1]).sum();
    let widest = sizes.iter().fold(0.0f64, |a, &v| a.max(v));
    let envs = c.num_envs as f64;
    let steps = (c.num_samples as f64 / envs.max(1.0)).ceil();
    let eps = (steps / c.max_episode_length.max(1) as f64).floor();
    // A row: about one state per step, two more per finished episode (reserved up front).
    let states = envs * (steps + 1.0 + 2.0 * eps).min(2.0 * steps + 1.0);
    let map = format!("map = {:?} ({n} states)", c.map);
    let mut bg = Budget::new();
    let mut add = |what: &'static str, fields: String, bytes: f64| {
        bg.add(what, fields, bytes.max(0.0) as u128, 1);
    };
    add("kernel buffers, run folder", "fixed".into(), runs::MATRIX_FIXED);
    add("map and its one-step table (envs/asymexp.rs)", map.clone(), 40.0 * n + 1024.0);
    add(
        "encoder, gradient, Adam state (asymexp.rs)",
        format!(
            "learner.hidden = {:?}, learner.num_eigenvectors = {}",
            c.learner.hidden, c.learner.num_eigenvectors
        ),
        16.0 * p + 16.0 * d * d,
    );
    // States (4 B), terminal positions and episode ends (two per episode, doubling `Vec`s),
    // row offsets; collection's three per-row buffers.
    let rows_bytes = 4.0 * states
        + 2.0 * 8.0 * runs::np2(envs * (2.0 * eps + 1.0))
        + 4.0 * 4.0 * runs::np2(envs);
    add(
        "replay rows and collection buffers (replay/rows.rs)",
        format!("num_samples = {}, num_envs = {}", c.num_samples, c.num_envs),
        rows_bytes + 9.0 * (2.0 * steps + 1.0) + 32.0 * n,
    );
    add(
        "ground truth: S × S matrices, decompositions (laplacian.rs)",
        map,
        8.0 * n * n * 12.0 + 64.0 * n,
    );
    let m = (3.0 * b).min(n.max(1.0));
    add(
        "step buffers and activations (asymexp.rs)",
        format!(
            "learner.batch_size = {}, learner.hidden = {:?}",
            c.learner.batch_size, c.learner.hidden
        ),
        4.0 * (3.0 * b) * (3.0 * d + 4.0) + 8.0 * m * widest * sizes.len() as f64 + 32.0 * n,
    );
    add(
        "evaluation and a checkpoint's drawings",
        format!("learner.num_eigenvectors = {}", c.learner.num_eigenvectors),
        3.0 * (8.0 * n * (d + widest) + 16.0 * d * n) + 6.0 * 2_000_000.0,
    );
    bg
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::RunKind;
    use crate::run::Layers;

    fn small() -> AlloAsymexpConfig {
        AlloAsymexpConfig {
            map: "builtin:rooms-2-3".into(),
            num_samples: 20 * 40,
            steps: 20,
            learner: AsymexpConfig { batch_size: 32, hidden: vec![16, 16], ..ref_() },
            eval_every: 10,
            log_every: 5,
            checkpoint_every: 10,
            num_envs: 20,
            max_episode_length: 40,
            ..AlloAsymexpConfig::default()
        }
    }

    fn ref_() -> AsymexpConfig {
        AsymexpConfig::default()
    }

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    /// The run's own defaults are the script's; a key given wins; a 0.1 `allo train` config
    /// with `profile = "asymexp"` is refused saying what to write, and a 0.1 paper config
    /// (`profile = "paper"` and the `[asymexp]` defaults it wrote) still loads.
    #[test]
    fn defaults_keys_and_the_old_profile() {
        let c = crate::run::load::<AlloAsymexp>(Layers::table(&table("steps = 7")), None).unwrap();
        assert_eq!(c, AlloAsymexpConfig { steps: 7, ..AlloAsymexpConfig::default() });
        let text = "[learner]\nversion = \"final\"\nthreshold = 0.1";
        let f = crate::run::load::<AlloAsymexp>(Layers::table(&table(text)), None).unwrap();
        assert_eq!(f.learner.version, VersionKind::Final);
        let e = RunKind::of::<crate::runs::allo_asymexp::AlloAsymexp>()
            .check(Layers::table(&table(text)), "t");
        assert!(e.unwrap_err().to_string().contains("learner.threshold"));
        let old = "profile = \"asymexp\"\n[asymexp]\nversion = \"final\"";
        let e = RunKind::of::<crate::runs::allo::AlloTrain>()
            .check(Layers::table(&table(old)), "old.toml");
        let e = e.unwrap_err().to_string();
        assert!(e.contains("profile = \"asymexp\"") && e.contains("allo-asymexp"), "{e}");
        assert!(e.contains("[learner]"), "{e}");
        let paper = "profile = \"paper\"\n[asymexp]\nversion = \"thresholded\"\nnum_envs = 1000\n\
            max_episode_length = 1000\nduals_init = -2.0\ninit_dual_diag = false\nmax_barrier = 0.5\n\
            step_size_duals = 1.0\nstep_size_duals_i = 0.0\nintegral_decay = 0.99\n\
            perturbation = \"none\"\ngraph_epsilon = 0.01\ngraph_variance_scale = 0.1\n\
            sampling = \"reference\"\nnum_doors = 0\ndoor_seed = 42\ntruth = \"reference\"";
        RunKind::of::<crate::runs::allo::AlloTrain>()
            .check(Layers::table(&table(paper)), "0.1 folder")
            .unwrap();
        let changed = paper.replace("num_doors = 0", "num_doors = 2");
        let e = RunKind::of::<crate::runs::allo::AlloTrain>()
            .check(Layers::table(&table(&changed)), "t")
            .unwrap_err();
        assert!(e.to_string().contains("allo-asymexp"), "{e}");
    }

    /// Settings that do not apply, or cannot work, are refused by name before any work.
    #[test]
    fn bad_asymexp_configs_are_refused_by_name() {
        let a = AlloAsymexpConfig::default;
        let l = |c: AsymexpConfig| AlloAsymexpConfig { learner: c, ..a() };
        let goal = std::env::temp_dir().join(format!("kestrel-goal-{}.txt", std::process::id()));
        std::fs::write(&goal, "XXXXXXX\nXS    X\nX XXX X\nX   XGX\nXXXXXXX").unwrap();
        for (c, field) in [
            (AlloAsymexpConfig { num_samples: 1_000_001, ..a() }, "num_samples"),
            (AlloAsymexpConfig { num_envs: 0, ..a() }, "num_envs"),
            (AlloAsymexpConfig { max_episode_length: 0, ..a() }, "max_episode_length"),
            (l(AsymexpConfig { integral_decay: 1.5, ..ref_() }), "learner.integral_decay"),
            (
                l(AsymexpConfig { graph_variance_scale: f64::NAN, ..ref_() }),
                "learner.graph_variance_scale",
            ),
            (l(AsymexpConfig { lr: f64::NAN, ..ref_() }), "learner.lr"),
            (l(AsymexpConfig { hidden: vec![0], ..ref_() }), "learner.hidden"),
            (AlloAsymexpConfig { log_every: 0, ..a() }, "log_every"),
            (AlloAsymexpConfig { map: "builtin:open-70".into(), ..a() }, "at most 4096 states"),
            (AlloAsymexpConfig { map: "/no/such/map.txt".into(), ..a() }, "/no/such/map.txt"),
            (
                AlloAsymexpConfig {
                    map: "builtin:open-3".into(),
                    ..l(AsymexpConfig { num_eigenvectors: 20, ..ref_() })
                },
                "learner.num_eigenvectors",
            ),
        ] {
            let e = AsymexpRun::new(c.clone())
                .err()
                .map(|e| e.to_string())
                .or_else(|| AlloAsymexp::validate(&c).err().map(|e| e.to_string()))
                .unwrap_or_else(|| panic!("{field}: accepted"));
            assert!(e.contains(field), "{field}: {e}");
        }
        // The same map with the mended truth runs.
        let goal_map = || AlloAsymexpConfig {
            map: goal.to_string_lossy().into(),
            learner: AsymexpConfig { version: VersionKind::Final, ..small().learner },
            truth: TruthRuleKind::Fixed,
            ..small()
        };
        // With a goal, episodes end inside rows: the reference's sampler would raise at the
        // first dead-end draw, so that is refused once the data is in, before any step.
        let e = AsymexpRun::new(goal_map()).unwrap().run(|_| Ok(true)).unwrap_err().to_string();
        assert!(e.contains("sampling") && e.contains("within-episode"), "{e}");
        let within = AlloAsymexpConfig { sampling: RowRuleKind::WithinEpisode, ..goal_map() };
        let mut r = AsymexpRun::new(within).unwrap();
        r.run(|_| Ok(true)).unwrap();
        assert_eq!(r.learner().steps, 20);
        let _ = std::fs::remove_file(&goal);
    }

    /// Random doors block the reverse of the moves numpy's seed picks, and are refused on a
    /// map with its own doors.
    #[test]
    fn random_doors_reach_the_map() {
        let c = AlloAsymexpConfig { num_doors: 3, ..small() };
        let m = run_map(&c).unwrap();
        let base = resolve_map(&c.map, VersionKind::Thresholded).unwrap();
        assert_eq!(m.blocked.len(), 3);
        let doors = base.random_doors(3, 42);
        for &(_, _, t, rev) in &doors {
            assert_eq!(m.next[t as usize * 4 + rev as usize], t, "the reverse move stays");
        }
        let own = std::env::temp_dir().join(format!("kestrel-doors-{}.txt", std::process::id()));
        std::fs::write(&own, "X,X,X,X\nX,.,DR,X\nX,.,.,X\nX,X,X,X").unwrap();
        let c2 = AlloAsymexpConfig {
            map: own.to_string_lossy().into(),
            learner: AsymexpConfig { version: VersionKind::Final, ..small().learner },
            num_doors: 1,
            ..small()
        };
        assert!(run_map(&c2).unwrap_err().to_string().contains("num_doors"));
        let _ = std::fs::remove_file(&own);
    }

    /// A short run reports every step, evaluates and checkpoints on schedule, and a run resumed
    /// from its step-10 checkpoint ends exactly where the straight run ends.
    #[test]
    fn a_short_run_checkpoints_and_resumes_exactly() {
        let dir =
            std::env::temp_dir().join(format!("kestrel-asymexp-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let stamp = kestrel_nn::Stamp::new("allo-asymexp", json!({"t": 1}), "test");
        let mut straight = AsymexpRun::new(small()).unwrap();
        let (mut steps, mut evals, mut ckpts) = (0, 0, 0);
        straight
            .run(|e| {
                match e {
                    AsymexpEvent::Step { scores, out, .. } => {
                        steps += 1;
                        assert!(out.terms.allo.is_finite());
                        if let Some((avg, _)) = scores {
                            evals += 1;
                            assert!((0.0..=1.0).contains(&avg));
                        }
                    }
                    AsymexpEvent::Checkpoint { step, learner } => {
                        ckpts += 1;
                        if step == 10 {
                            learner.save_checkpoint(&dir, &stamp).unwrap();
                        }
                    }
                    AsymexpEvent::Ready { num_samples, .. } => assert_eq!(num_samples, 800),
                }
                Ok(true)
            })
            .unwrap();
        assert_eq!((steps, evals, ckpts), (20, 2, 2));
        let (mut resumed, note) = AsymexpRun::resumed(&small(), &dir, &stamp).unwrap();
        assert!(note.is_none(), "{note:?}");
        assert_eq!(resumed.learner().steps, 10);
        resumed.run(|_| Ok(true)).unwrap();
        assert_eq!(resumed.learner().trainee.params, straight.learner().trainee.params);
        assert_eq!(resumed.learner().mult, straight.learner().mult);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The whole run writes its folder: metrics every log step (duals and loss terms, cosines
    /// at evaluations), the heat maps, learning curves, dual evolution and cosine plots; the
    /// final version scores the three Laplacians; a resume with more steps continues it.
    #[test]
    fn a_run_folder_holds_its_metrics_and_plots_and_resumes() {
        let out =
            std::env::temp_dir().join(format!("kestrel-asymexp-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        for version in [VersionKind::Thresholded, VersionKind::Final] {
            let c = AlloAsymexpConfig {
                learner: AsymexpConfig { version, ..small().learner },
                ..small()
            };
            let mut p = crate::launch::quiet;
            let l = Launch { out_dir: out.clone(), argv: vec!["t".into()], progress: &mut p };
            let o = run(c.clone(), None, l).unwrap();
            for f in [
                "eigenvectors.png",
                "eigenvectors-10.png",
                "learning_curves.png",
                "dual_evolution.png",
                "cosine.png",
                "summary.json",
            ] {
                assert!(o.dir.join(f).is_file(), "{version:?}: {f} missing");
            }
            let lines = crate::metrics::read_metrics(&o.dir.join("metrics.jsonl")).unwrap();
            let steps: Vec<u64> =
                lines.iter().map(|l| l["global_step"].as_u64().unwrap()).collect();
            assert_eq!(steps, [5, 10, 15, 20]);
            assert!(
                lines[1]["cosine_similarity"].is_number()
                    && lines[0].get("cosine_similarity").is_none()
            );
            assert!(
                lines[0]["dual_9"].is_number()
                    && lines[0]["dual_9_1"].is_number()
                    && lines[0]["grad_norm"].is_number()
            );
            let s: Value =
                serde_json::from_str(&std::fs::read_to_string(o.dir.join("summary.json")).unwrap())
                    .unwrap();
            assert_eq!(
                s["cosine_similarity_simple"].is_number(),
                version == VersionKind::Final,
                "{s}"
            );
            // Resume with more steps: the folder goes on from step 20.
            let sets = ["steps=30".to_string()];
            let layers =
                Layers { preset: None, file: None, table: &toml::Table::new(), sets: &sets };
            let mut p = crate::launch::quiet;
            let l = Launch { out_dir: out.clone(), argv: vec!["t".into()], progress: &mut p };
            let r = RunKind::of::<crate::runs::allo_asymexp::AlloAsymexp>()
                .launch(layers, Some(&o.dir), l)
                .unwrap();
            assert_eq!(r.dir, o.dir);
            let lines = crate::metrics::read_metrics(&o.dir.join("metrics.jsonl")).unwrap();
            assert_eq!(lines.last().unwrap()["global_step"], 30);
        }
        let _ = std::fs::remove_dir_all(&out);
    }
}
