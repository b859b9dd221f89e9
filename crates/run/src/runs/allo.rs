//! ALLO training runs with their folders (`kestrel allo train`, the Python package's
//! `kestrel.allo.train`): checkpoints every `checkpoint_every` steps with heat maps drawn off
//! the training thread, exact resume from a folder. The config ([`AlloRunConfig`]), its checks,
//! its memory budget and the training loop ([`AlloRun::run`]) are here; the learner, the data
//! collection and the ground truth are `kestrel-agents`' parts.

use crate::base::{COMMIT, RunError};
use crate::figures::{Drawer, curve_plots, eigen_heatmaps};
use crate::launch::{Checkpoints, Launch, Outcome, finish};
use crate::resume::{Resumable, open};
use crate::run::{Outputs, Run};
use crate::runs;
use crate::summary::Summary;
use kestrel_agents::AgentError;
use kestrel_agents::allo::{Allo as AlloLearner, AlloConfig, MethodKind, StepMetrics, collect};
use kestrel_agents::laplacian::GroundTruth;
use kestrel_agents::laplacian::ground_truth;
use kestrel_core::FromInvalid;
use kestrel_core::{Budget, Key};
use kestrel_envs::GridMap;
use kestrel_plot::Heatmaps;
use kestrel_replay::EpisodicReplay;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use std::path::Path;
use std::sync::Arc;

/// `kestrel allo train`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
pub struct AlloRunConfig {
    /// Removed in 0.2.0: `profile = "asymexp"` is its own run kind now, `allo-asymexp`
    /// (`kestrel allo asymexp`); a config that sets it is refused with what to write instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// A map file or `builtin:NAME` (open-N, rooms-K-N, four-rooms, maze-N-SEED), as
    /// `GridWorld-v0` spells it, in the paper code's text format.
    pub map: String,
    /// The learner (`kestrel_agents::allo::AlloConfig`, whole): the method, the paper's d,
    /// the encoder, the batch, the rates; its defaults the method's (`learner.method =
    /// "ggdo"` alone gives GGDO's barrier).
    #[documented(nested)]
    pub learner: AlloConfig,
    /// Transition samples collected, in 50-step episodes (the paper's 12-map study: 3,000,000).
    pub num_samples: usize,
    /// Gradient steps in total (a resumed run's included).
    pub steps: u64,
    /// Seed (data, initialisation and batches).
    pub seed: u64,
    /// Evaluate the cosine similarity every this many steps.
    pub eval_every: u64,
    /// Log the loss terms and the duals every this many steps (`metrics.jsonl`, written off
    /// the training thread; paper: every evaluation).
    pub log_every: u64,
    /// Checkpoint every this many steps (0: only at the end).
    pub checkpoint_every: u64,
    /// Removed in 0.2.0 with `profile` (its keys are `allo-asymexp`'s); refused with what to
    /// write instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asymexp: Option<toml::Table>,
}

impl Default for AlloRunConfig {
    fn default() -> Self {
        AlloRunConfig {
            profile: None,
            map: "builtin:rooms-2-5".into(),
            learner: AlloConfig::paper(),
            num_samples: 3_000_000,
            steps: 20_000,
            seed: 0,
            eval_every: 1000,
            log_every: 1000,
            checkpoint_every: 10_000,
            asymexp: None,
        }
    }
}

/// The learner's keys, top-level until 0.2.0 (`batch_size` is `learner.batch_size`, `barrier`
/// `learner.barrier_init`, ...): read with a warning until 0.3.0.
const RENAMED: crate::config::Renamed = &[
    ("method", "learner.method"),
    ("num_eigenvectors", "learner.num_eigenvectors"),
    ("batch_size", "learner.batch_size"),
    ("barrier", "learner.barrier_init"),
    ("lr_barrier", "learner.lr_barrier"),
    ("lr", "learner.lr"),
    ("discount", "learner.discount"),
    ("hidden", "learner.hidden"),
    ("convention", "learner.convention"),
];

impl AlloRunConfig {
    /// Checks everything that needs no map: sizes and intervals.
    pub fn validate(&self) -> Result<(), AgentError> {
        // A 0.1 folder's `config.toml` holds `profile = "paper"` and the `[asymexp]` defaults:
        // the same run, so it still loads.
        let paper = self.profile.as_deref().is_none_or(|p| p == "paper");
        if !paper || self.asymexp.as_ref().is_some_and(|t| *t != old_asymexp_defaults()) {
            return Err(removed_profile(self));
        }
        // The learner's fields by their path in this config.
        self.learner.validate().map_err(|e| super::under("learner", e))?;
        if self.log_every == 0 {
            return Err(AgentError::invalid("log_every", 0, "at least 1"));
        }
        if !(1..=1_000_000_000).contains(&self.num_samples) {
            // Within this range, the memory is the run's budget's to refuse
            // (`AlloRunConfig::budget`: about 4.4 bytes per sample).
            return Err(AgentError::invalid("num_samples", self.num_samples, "1 to 1,000,000,000"));
        }
        if self.steps == 0 {
            return Err(AgentError::invalid("steps", 0, "at least 1"));
        }
        if self.eval_every == 0 {
            return Err(AgentError::invalid("eval_every", 0, "at least 1"));
        }
        Ok(())
    }
}

/// The `[asymexp]` table 0.1 wrote into every `allo train` folder's `config.toml`.
fn old_asymexp_defaults() -> toml::Table {
    let text = "version = \"thresholded\"\nnum_envs = 1000\nmax_episode_length = 1000\n\
        duals_init = -2.0\ninit_dual_diag = false\nmax_barrier = 0.5\nstep_size_duals = 1.0\n\
        step_size_duals_i = 0.0\nintegral_decay = 0.99\nperturbation = \"none\"\n\
        graph_epsilon = 0.01\ngraph_variance_scale = 0.1\nsampling = \"reference\"\n\
        num_doors = 0\ndoor_seed = 42\ntruth = \"reference\"\n";
    text.parse().unwrap_or_default()
}

/// The error of a 0.1 config that sets `profile` or `[asymexp]`: what to write instead (the
/// run kind `allo-asymexp`, whose config nests the learner's keys under `learner`).
fn removed_profile(c: &AlloRunConfig) -> AgentError {
    let (field, value) = match &c.profile {
        Some(p) if p != "paper" => ("profile", format!("{p:?}")),
        _ => ("asymexp", "a table other than 0.1's defaults".to_string()),
    };
    AgentError::invalid(
        field,
        value,
        "absent: since 0.2.0 asymexp's ALLO is its own run kind, `allo-asymexp` (`kestrel allo \
         asymexp`, `kestrel config allo-asymexp`, Python `kestrel.allo.asymexp`); in its config \
         num_eigenvectors, hidden, batch_size, lr, discount, barrier (as barrier_init) and \
         asymexp.{version, duals_init, init_dual_diag, max_barrier, step_size_duals, \
         step_size_duals_i, integral_decay, perturbation, graph_epsilon, graph_variance_scale, \
         threshold} go under [learner], and asymexp.{num_envs, max_episode_length, sampling, \
         num_doors, door_seed, truth} are top-level keys (the paper's ALLO sets neither key)",
    )
}

/// What an ALLO run reports through `observe`.
pub enum AlloEvent<'a> {
    /// The data is collected and the ground truth computed.
    Ready {
        /// Transition samples in the replay.
        num_samples: usize,
    },
    /// A gradient step (every step; `cosine` is the last evaluation's, NaN before the first).
    Step {
        /// Steps done.
        step: u64,
        /// The step's metrics.
        metrics: &'a StepMetrics,
        /// The duals after the step (`d × d`).
        duals: &'a [f64],
        /// Average cosine similarity at the last evaluation.
        cosine: f64,
        /// Whether this step was evaluated.
        evaluated: bool,
    },
    /// A checkpoint is due (every `checkpoint_every` steps): the observer writes it.
    Checkpoint {
        /// Steps done.
        step: u64,
        /// The learner.
        learner: &'a AlloLearner,
    },
}

/// An ALLO run, validated: the map, its ground truth and the learner (fresh or resumed).
pub struct AlloRun {
    config: AlloRunConfig,
    map: Arc<GridMap>,
    truth: GroundTruth,
    learner: AlloLearner,
}

impl AlloRun {
    /// Loads the map, checks the config against it and builds a fresh learner
    /// (initialisation key `Key::new(seed).fold_in(1)`).
    pub fn new(config: AlloRunConfig) -> Result<Self, AgentError> {
        let (map, cfg, truth) = Self::prepare(&config)?;
        let learner = AlloLearner::new(cfg, map.clone(), Key::new(config.seed).fold_in(1))?;
        Ok(AlloRun { config, map, truth, learner })
    }

    fn prepare(c: &AlloRunConfig) -> Result<(Arc<GridMap>, AlloConfig, GroundTruth), AgentError> {
        c.validate()?;
        let map = Arc::new(GridMap::resolve(&c.map)?);
        if c.learner.num_eigenvectors > map.num_states() {
            return Err(AgentError::invalid(
                "learner.num_eigenvectors",
                c.learner.num_eigenvectors,
                format!("at most the map's {} states", map.num_states()),
            ));
        }
        if map.num_states() > 10_000 {
            return Err(AgentError::invalid(
                "map",
                format!("{} ({} states)", c.map, map.num_states()),
                "at most 10,000 states (the ground truth is a dense eigenproblem)",
            ));
        }
        let truth = ground_truth(&map, c.learner.num_eigenvectors)?;
        Ok((map, c.learner.clone(), truth))
    }

    /// The config.
    pub fn config(&self) -> &AlloRunConfig {
        &self.config
    }

    /// The map.
    pub fn map(&self) -> &Arc<GridMap> {
        &self.map
    }

    /// The ground truth.
    pub fn truth(&self) -> &GroundTruth {
        &self.truth
    }

    /// The learner.
    pub fn learner(&self) -> &AlloLearner {
        &self.learner
    }

    /// Collects the data (seed `seed`, 50-step episodes, 64 envs) and trains up to `steps`
    /// steps in total (step `t` with `Key::new(seed).fold_in(2).fold_in(t)`), evaluating every
    /// `eval_every` steps and at the end. `observe` may stop the run by returning `false`.
    pub fn run(
        &mut self,
        mut observe: impl FnMut(AlloEvent<'_>) -> Result<bool, AgentError>,
    ) -> Result<(), AgentError> {
        let c = &self.config;
        let episodes = c.num_samples.div_ceil(50).max(1);
        let replay: EpisodicReplay<u32> = collect(self.map.clone(), episodes, 50, 64, c.seed)?;
        if !observe(AlloEvent::Ready { num_samples: episodes * 50 })? {
            return Ok(());
        }
        let key = Key::new(c.seed).fold_in(2);
        let mut cosine = f64::NAN;
        while self.learner.steps < c.steps {
            let t = self.learner.steps;
            let m = self.learner.step(&replay, key.fold_in(t))?;
            let done = t + 1;
            let evaluated = done.is_multiple_of(c.eval_every) || done == c.steps;
            if evaluated {
                cosine = self.truth.cosine_similarity(&self.learner.representation()).0;
            }
            let go = observe(AlloEvent::Step {
                step: done,
                metrics: &m,
                duals: &self.learner.duals,
                cosine,
                evaluated,
            })?;
            if c.checkpoint_every > 0 && done.is_multiple_of(c.checkpoint_every) {
                observe(AlloEvent::Checkpoint { step: done, learner: &self.learner })?;
            }
            if !go {
                break;
            }
        }
        Ok(())
    }
}

impl AlloRunConfig {
    /// The run's peak heap bytes as named terms: the map, the learner and the ground truth held
    /// throughout, plus the largest phase (solving for the ground truth; training with the
    /// replay, the step's buffers, evaluations and a checkpoint's heat maps drawn alongside;
    /// the final plots). A map that does not load counts as empty (validation reports it).
    pub fn budget(&self, threads: usize) -> Budget {
        let _ = threads; // the learner trains on one thread
        let (n, rows, cols) = GridMap::resolve(&self.map)
            .map_or((0.0, 0.0, 0.0), |m| (m.num_states() as f64, m.rows as f64, m.cols as f64));
        let (d, batch) = (self.learner.num_eigenvectors as f64, self.learner.batch_size as f64);
        let rc = rows * cols;
        let map = format!("map = {:?} ({n} states)", self.map);
        let md = format!("{map}, learner.num_eigenvectors = {}", self.learner.num_eigenvectors);
        // The encoder: 2 → hidden… → d.
        let mut sizes = vec![2.0];
        sizes.extend(self.learner.hidden.iter().map(|&h| h as f64));
        sizes.push(d);
        let p: f64 = sizes.windows(2).map(|w| (w[0] + 1.0) * w[1]).sum();
        // Activations and their gradients per row (2050 for the paper's 256-wide layers).
        let act = 2.0 + 8.0 * self.learner.hidden.iter().fold(0.0f64, |a, &h| a.max(h as f64));
        let mut b = Budget::new();
        let mut add = |what: &'static str, fields: String, bytes: f64| {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        };
        add("kernel buffers, run folder", "fixed".into(), runs::MATRIX_FIXED);
        add("map (envs/grid.rs)", map.clone(), rc * 5.0 + 8.0 * runs::np2(n) + 16.0 * n);
        add(
            "encoder, Adam state, duals (allo.rs)",
            format!("learner.num_eigenvectors = {}", self.learner.num_eigenvectors),
            16.0 * p + 24.0 * d * d + 4.0 * n,
        );
        // The truth is held by the run, by the training loop and by a drawing thread.
        add(
            "ground-truth eigenvectors, three copies (laplacian.rs)",
            md.clone(),
            3.0 * (8.0 * d * n + 8.0 * d + 16.0 * runs::np2(d)),
        );
        let solve =
            8.0 * n * n + 16.0 * runs::ceil8(n) * n + 8.0 * runs::ceil8(n) + 25.5 * n * n + 8192.0;
        let episodes = (self.num_samples as f64 / 50.0).ceil().max(1.0);
        let m = (4.0 * batch).min(n);
        let step = 16.0 * batch
            + 32.0 * batch * d
            + (4.0 * (act + d) + 8.0 + 4.0 * d) * 2.0 * m
            + 4.0 * runs::np2(m)
            + 8.0 * (d + 6.0 * d * d);
        let eval = 8.0 * n + 4.0 * (act + d) * n + 8.0 * d * n;
        // Heat maps of every component, true and learned (run/allo.rs, plot).
        let panel = (900.0 / d.max(1.0)).floor().clamp(60.0, 160.0);
        let digits = (rows.max(cols) - 1.0).max(1.0).log10().floor() + 1.0;
        let (w, h) = (d * (panel + 35.0 + 8.0 * digits) + 99.0, 2.0 * panel + 166.0);
        let png = 6.0 * w * h + 524_288.0;
        let svg = 1.5 * runs::np2(96.0 * (2.0 * d * rc + 2.0 * panel + 200.0));
        let heat = 8.0 * d * n + 16.0 * d * rc + png.max(svg);
        let mut training: runs::Phase = vec![
            (
                "replay of transitions (replay/lib.rs)",
                format!("num_samples = {}", self.num_samples),
                204.0 * episodes + 14.0 * runs::np2(episodes),
            ),
            (
                "step buffers (allo.rs)",
                format!(
                    "learner.batch_size = {}, learner.num_eigenvectors = {}",
                    self.learner.batch_size, self.learner.num_eigenvectors
                ),
                step,
            ),
            ("evaluation over every state (allo.rs)", md.clone(), eval),
            // Written at every checkpoint; read back (the file and its tensors) on resume.
            (
                "checkpoint written or read back (allo.rs)",
                format!("learner.num_eigenvectors = {}", self.learner.num_eigenvectors),
                24.0 * p + 4096.0,
            ),
        ];
        if self.checkpoint_every > 0 && self.checkpoint_every <= self.steps {
            training.push((
                "a checkpoint's heat maps, drawn alongside",
                md.clone(),
                16.0 * d * n + heat,
            ));
        }
        let phases = vec![
            vec![(
                "ground truth: the SR matrix and its eigen-decomposition (laplacian.rs)",
                map,
                solve,
            )],
            training,
            vec![("final heat maps", md, 8.0 * d * n + eval.max(heat))],
        ];
        runs::largest(&mut b, phases);
        b
    }
}

impl Resumable for AlloRun {
    type Kind = AlloTrain;
    const UNIT: &'static str = "steps";
    fn fresh(c: &AlloRunConfig) -> Result<Self, RunError> {
        Ok(AlloRun::new(c.clone())?)
    }
    /// The learner from a set written by [`AlloEvent::Checkpoint`]'s observer with
    /// `AlloLearner::save_checkpoint`.
    fn load(c: &AlloRunConfig, set: &Path) -> Result<Self, RunError> {
        let (map, cfg, truth) = Self::prepare(c)?;
        let learner = AlloLearner::load_checkpoint(cfg, map.clone(), set)?;
        Ok(AlloRun { config: c.clone(), map, truth, learner })
    }
    fn done(&self) -> u64 {
        self.learner.steps
    }
}

/// The `allo` run kind.
pub struct AlloTrain;

impl Run for AlloTrain {
    const NAME: &'static str = "allo";
    const COMMAND: &'static str = "allo train";
    const ABOUT: &'static str = "Train a Laplacian representation on a map.";
    const RESUMABLE: bool = true;
    const BUDGET: &'static str = "steps";
    const METRICS: &'static [&'static str] = &["cosine_similarity"];
    const CURVE: &'static str = "cosine_similarity";
    type Config = AlloRunConfig;

    /// The paper's defaults, the learner's those of the method the first pass read (GGDO:
    /// barrier 2.0, fixed).
    fn defaults(first: Option<&AlloRunConfig>) -> AlloRunConfig {
        let learner = match first.map(|c| c.learner.method) {
            Some(MethodKind::Ggdo) => AlloConfig::ggdo(),
            _ => AlloConfig::paper(),
        };
        AlloRunConfig { learner, ..AlloRunConfig::default() }
    }

    const RENAMED: crate::config::Renamed = RENAMED;

    fn without_budget(c: &AlloRunConfig) -> AlloRunConfig {
        AlloRunConfig { steps: 0, ..c.clone() }
    }

    /// See [`AlloRunConfig::budget`].
    fn budget(c: &AlloRunConfig, threads: usize) -> kestrel_core::Budget {
        c.budget(threads)
    }

    /// Each dual's diagonal is logged.
    fn outputs(c: &AlloRunConfig) -> Outputs {
        Outputs::new(
            &["barrier", "cosine_similarity", "ms_per_step", "steps"],
            &["barrier", "cosine_similarity", "encoder_rows", "graph", "loss"],
        )
        .columns((0..c.learner.num_eigenvectors).map(|i| format!("dual_{i}")))
    }

    fn validate(c: &AlloRunConfig) -> Result<(), RunError> {
        c.validate()?;
        GridMap::resolve(&c.map).map_err(AgentError::from)?;
        Ok(())
    }

    fn run(
        c: AlloRunConfig,
        resume: Option<&Path>,
        launch: Launch<'_>,
    ) -> Result<Outcome, RunError> {
        run(c, resume, launch)
    }
}

/// Validates `c` and trains into a new folder, or (with `resume`) continues the run in that
/// folder from its checkpoint: its saved `config.toml` is the truth, only `steps` may change.
/// Writes `config.toml`, `record.json`, `metrics.jsonl` (one line per evaluation),
/// `checkpoint/`, `eigenvectors[-STEP].png/svg`, `cosine.png/svg`, `summary.md/json`.
pub fn run(
    c: AlloRunConfig,
    resume: Option<&Path>,
    mut launch: Launch<'_>,
) -> Result<Outcome, RunError> {
    let map = c.map.trim_start_matches("builtin:");
    let map = map.rsplit('/').next().unwrap_or(map).trim_end_matches(".txt");
    let name = format!("{:?}-{map}", c.learner.method);
    let (mut run, dir, mut metrics, stamp) =
        open::<AlloRun>(&mut launch, &c, resume, &name, c.seed)?;
    // The curves are drawn from every logged line, the earlier launches' and this one's.
    let mut history = match resume {
        Some(_) => crate::metrics::read_metrics(&dir.join("metrics.jsonl"))?,
        None => Vec::new(),
    };
    let r = (|| -> Result<String, RunError> {
        let c = run.config().clone();
        let (map, truth) = (run.map().clone(), run.truth().clone());
        let start = run.learner().steps;
        let mut progress = launch.progress(c.steps, "steps");
        let mut drawer = Drawer::new();
        let mut ckpts = Checkpoints::new(dir.path(), stamp, start);
        let sr = truth.sr_eigenvalues(c.learner.discount);
        let t0 = std::time::Instant::now();
        {
            run.run(|e| {
                match e {
                    AlloEvent::Ready { num_samples } => {
                        if !progress.tick(start, &format!("{num_samples} transitions collected")) {
                            return Ok(false);
                        }
                    }
                    AlloEvent::Step { step, metrics: m, duals, cosine, evaluated } => {
                        if evaluated || step.is_multiple_of(c.log_every) {
                            let mut f = json!({"loss": m.loss, "graph": m.graph,
                                "barrier": m.barrier, "encoder_rows": m.encoder_rows});
                            if evaluated {
                                f["cosine_similarity"] = json!(cosine);
                            }
                            let d = c.learner.num_eigenvectors;
                            for i in 0..d {
                                f[format!("dual_{i}")] = json!(duals[i * d + i]);
                            }
                            let mut h = f.clone();
                            h["global_step"] = json!(step);
                            history.push(h);
                            metrics.log(step, f).map_err(|e| {
                                AgentError::invalid("metrics", e, "a writable run folder")
                            })?;
                        }
                        let cos = if cosine.is_nan() { "-".into() } else { format!("{cosine:.4}") };
                        if !progress.tick(step, &format!("cos {cos} b {:.3}", m.barrier)) {
                            return Ok(false);
                        }
                    }
                    AlloEvent::Checkpoint { step, learner } => {
                        ckpts.save(step, |d, s| learner.save_checkpoint(d, s))?;
                        // Heat maps and curves of this checkpoint, drawn off the training thread.
                        let (rep, map, truth, hist, sr) = (
                            learner.representation(),
                            map.clone(),
                            truth.clone(),
                            history.clone(),
                            sr.clone(),
                        );
                        let (stem, folder) =
                            (dir.join(&format!("eigenvectors-{step}")), dir.path().to_path_buf());
                        let gamma = c.learner.discount;
                        drawer.spawn(move || {
                            heatmaps(&map, &truth, &rep).save(&stem)?;
                            paper_curves(&folder, &hist, &sr, gamma)
                        })?;
                    }
                }
                Ok(true)
            })?;
        }
        let secs = t0.elapsed().as_secs_f64();
        drawer.wait()?;
        let learner = run.learner();
        ckpts.save(learner.steps, |d, s| learner.save_checkpoint(d, s))?;
        metrics.finish()?;
        // Stopped (Ctrl-C from Python): the state of this step is saved, so a resume goes on
        // from here.
        progress.stopped()?;
        let rep = learner.representation();
        let (avg, sims) = truth.cosine_similarity(&rep);
        heatmaps(&map, &truth, &rep).save(&dir.join("eigenvectors"))?;
        paper_curves(dir.path(), &history, &sr, c.learner.discount)?;
        let est = learner.eigenvalue_estimates();
        let per_step = 1e3 * secs / (learner.steps - start).max(1) as f64;
        let rows: Vec<Vec<String>> = (0..c.learner.num_eigenvectors)
            .map(|i| {
                vec![
                    format!("{}", i + 1),
                    format!("{:.4}", sims[i]),
                    format!("{:.4}", sr[i]),
                    format!("{:.4}", est[i]),
                ]
            })
            .collect();
        Summary::new(format!("allo train: {:?} on {}", c.learner.method, c.map))
            .item(
                "steps",
                "steps",
                learner.steps,
                format!(
                    "{} ({} this launch, {secs:.1} s, {per_step:.2} ms/step)",
                    learner.steps,
                    learner.steps - start
                ),
            )
            .value("cosine_similarity", "average cosine similarity", avg)
            .value("ms_per_step", "ms per step (this launch)", per_step)
            .value("barrier", "barrier", learner.barrier)
            .value("commit", "commit", COMMIT)
            .table(
                "components",
                &["component", "cosine", "true SR eigenvalue", "estimate from duals"],
                rows,
            )
            .file("config.toml", "the resolved config")
            .file("metrics.jsonl", "one line per evaluation")
            .file(
                "eigenvectors.png",
                "true (top) and learned (bottom, sign-aligned) eigenvectors (also .svg)",
            )
            .file("learning_curves.png", "the loss, its graph term and the barrier (also .svg)")
            .file(
                "dual_evolution.png",
                "eigenvalue estimates from the duals against the true SR eigenvalues (also .svg)",
            )
            .file("cosine.png", "average cosine similarity per evaluation (also .svg)")
            .file("checkpoint/", "resume with `--resume <this folder>`")
            .write(dir.path())?;
        Ok(format!(
            "average cosine similarity {avg:.4} after {} steps ({per_step:.2} ms/step); run folder {}",
            learner.steps,
            dir.path().display()
        ))
    })();
    finish(dir, r)
}

/// The run's curves from its logged lines: the estimate from a dual is
/// `−γ β_ii / 4` (`AlloLearner::eigenvalue_estimates`), against the true SR eigenvalues.
fn paper_curves(folder: &Path, history: &[Value], sr: &[f64], gamma: f64) -> Result<(), RunError> {
    curve_plots(
        folder,
        history,
        &["loss", "graph", "barrier"],
        |b| -gamma * b / 4.0,
        sr,
        "average cosine similarity",
    )
}

fn heatmaps(map: &GridMap, truth: &GroundTruth, rep: &[f64]) -> Heatmaps {
    let (n, d) = (truth.num_states, truth.d);
    eigen_heatmaps(
        (map.cols, map.rows),
        n,
        d,
        |s| (map.cells[s].1 as usize, map.cells[s].0 as usize),
        |i, s| truth.vector(i)[s],
        rep,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kestrel_replay::EpisodicRuleKind;

    /// A learner of the paper's defaults with these changes.
    fn learner(f: impl FnOnce(&mut AlloConfig)) -> AlloConfig {
        let mut l = AlloConfig::paper();
        f(&mut l);
        l
    }

    #[test]
    fn bad_run_configs_are_errors_before_any_work() {
        for bad in [
            AlloRunConfig { eval_every: 0, ..AlloRunConfig::default() },
            AlloRunConfig { steps: 0, ..AlloRunConfig::default() },
            AlloRunConfig { num_samples: usize::MAX, ..AlloRunConfig::default() },
            AlloRunConfig {
                learner: learner(|l| l.num_eigenvectors = 0),
                ..AlloRunConfig::default()
            },
            AlloRunConfig { map: "builtin:maze-499-0".into(), ..AlloRunConfig::default() },
            AlloRunConfig {
                learner: learner(|l| l.num_eigenvectors = 60),
                map: "builtin:open-3".into(),
                ..AlloRunConfig::default()
            },
        ] {
            assert!(AlloRun::new(bad).is_err());
        }
    }

    /// The learner's keys are `learner.*` (the method's defaults under them), its 0.1
    /// top-level spellings read as them with a warning; its learning rate, discount, encoder
    /// widths and sampling convention reach the learner; a bad one is refused by its path.
    #[test]
    fn the_learners_keys_nest_under_learner_and_reach_it() {
        use crate::run::{Layers, load, load_noted};
        let t = |s: &str| -> toml::Table { s.parse().unwrap() };
        let new =
            t("[learner]\nlr = 5e-4\ndiscount = 0.5\nhidden = [32, 16]\nconvention = \"asymexp\"");
        let old = t("lr = 5e-4\ndiscount = 0.5\nhidden = [32, 16]\nconvention = \"asymexp\"");
        let c = load::<AlloTrain>(Layers::table(&new), None).unwrap();
        let (o, notes) = load_noted::<AlloTrain>(Layers::table(&old), None).unwrap();
        assert_eq!(c, o);
        assert_eq!(notes.len(), 4, "{notes:?}");
        let l = &c.learner;
        assert_eq!(
            (l.lr, l.discount, l.hidden.clone(), l.convention),
            (5e-4, 0.5, vec![32, 16], EpisodicRuleKind::Asymexp)
        );
        // GGDO's defaults follow its method, from either spelling; `barrier` is `barrier_init`.
        let g = load::<AlloTrain>(Layers::table(&t("[learner]\nmethod = \"ggdo\"")), None).unwrap();
        assert_eq!(g.learner, AlloConfig::ggdo());
        let (g2, _) =
            load_noted::<AlloTrain>(Layers::table(&t("method = \"ggdo\"\nbarrier = 3.0")), None)
                .unwrap();
        assert_eq!(g2.learner, AlloConfig { barrier_init: 3.0, ..AlloConfig::ggdo() });
        let run = AlloRun::new(AlloRunConfig {
            map: "builtin:open-3".into(),
            learner: AlloConfig { num_eigenvectors: 3, ..c.learner.clone() },
            num_samples: 500,
            ..c
        })
        .unwrap();
        assert_eq!(run.learner().net().num_params(), (2 + 1) * 32 + (32 + 1) * 16 + (16 + 1) * 3);
        let e =
            AlloRunConfig { learner: learner(|l| l.discount = 1.5), ..AlloRunConfig::default() }
                .validate()
                .unwrap_err();
        assert!(e.to_string().contains("learner.discount"), "{e}");
    }

    /// Both methods' run folders hold the heat maps, learning curves, dual evolution and
    /// cosine plots, and the duals every log step.
    #[test]
    fn paper_run_folders_hold_their_plots() {
        let out = std::env::temp_dir().join(format!("kestrel-allo-plots-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        for method in [MethodKind::Allo, MethodKind::Ggdo] {
            let base =
                if method == MethodKind::Ggdo { AlloConfig::ggdo() } else { AlloConfig::paper() };
            let c = AlloRunConfig {
                learner: AlloConfig { batch_size: 32, num_eigenvectors: 4, ..base },
                num_samples: 2000,
                steps: 20,
                eval_every: 10,
                log_every: 5,
                checkpoint_every: 10,
                ..AlloRunConfig::default()
            };
            let mut p = crate::launch::quiet;
            let l = Launch { out_dir: out.clone(), argv: vec!["t".into()], progress: &mut p };
            let o = run(c, None, l).unwrap();
            for f in [
                "eigenvectors.png",
                "eigenvectors-10.png",
                "learning_curves.png",
                "dual_evolution.png",
                "cosine.png",
            ] {
                assert!(o.dir.join(f).is_file(), "{method:?}: {f} missing");
            }
            let lines = crate::metrics::read_metrics(&o.dir.join("metrics.jsonl")).unwrap();
            let steps: Vec<u64> =
                lines.iter().map(|l| l["global_step"].as_u64().unwrap()).collect();
            assert_eq!(steps, [5, 10, 15, 20]);
            assert!(lines[0]["dual_3"].is_number() && lines[1]["cosine_similarity"].is_number());
        }
        let _ = std::fs::remove_dir_all(&out);
    }

    #[test]
    fn a_short_allo_run_reports_steps_evaluations_and_checkpoints() {
        let cfg = AlloRunConfig {
            num_samples: 2000,
            steps: 20,
            learner: learner(|l| (l.batch_size, l.num_eigenvectors) = (32, 4)),
            eval_every: 10,
            checkpoint_every: 10,
            ..AlloRunConfig::default()
        };
        let mut run = AlloRun::new(cfg).unwrap();
        let (mut steps, mut evals, mut ckpts) = (0, 0, 0);
        run.run(|e| {
            match e {
                AlloEvent::Step { evaluated, cosine, .. } => {
                    steps += 1;
                    if evaluated {
                        evals += 1;
                        assert!(cosine.is_finite());
                    }
                }
                AlloEvent::Checkpoint { .. } => ckpts += 1,
                AlloEvent::Ready { .. } => {}
            }
            Ok(true)
        })
        .unwrap();
        assert_eq!((steps, evals, ckpts), (20, 2, 2));
        assert_eq!(run.learner().steps, 20);
        assert_eq!(run.learner().config().method, kestrel_agents::allo::MethodKind::Allo);
    }

    #[test]
    fn the_default_budget_fits_and_absurd_sizes_are_refused_naming_them() {
        let b = AlloRunConfig::default().budget(2);
        assert!(b.total() < 128 << 20, "{}", b.describe(4));
        let c = AlloRunConfig { map: "builtin:open-100".into(), ..AlloRunConfig::default() };
        assert!(c.budget(2).total() > 1 << 30, "ten thousand states: a 10,000² eigenproblem");
        let c = AlloRunConfig { num_samples: 4_000_000_000, ..AlloRunConfig::default() };
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("num_samples = 4000000000"), "{e}");
    }
}
