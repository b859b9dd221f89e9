//! An ARC env as a config names it ([`ArcConfig`]): the params one tunes and where the tasks
//! come from (a folder of ARC JSON, or the generator). The env registry (`kestrel-run`)
//! reads it from TOML, `--set` or a Python dict; [`ArcConfig::params`] and
//! [`ArcConfig::bank`] turn it into the parts an [`ArcEnv`](crate::env::ArcEnv) is built from.

use crate::env::{ArcEnv, ArcParams, ModeKind, SplitKind};
use crate::error::ArcError;
use crate::generator::{Family, GenConfig, find_or_generate, generate_bank};
use crate::init::GridInit;
use crate::jaxarc::{JaxBugs, JaxRewards};
use crate::obs::LayoutKind;
use crate::task::{LoadOptions, Task, TaskBank};
use kestrel_core::FromInvalid;

/// The canvas sides compiled in (ARC-AGI's 30, and 5 and 10 where `jaxarc` mode runs on the
/// lane kernel).
pub const CANVASES: [usize; 3] = [5, 10, 30];

/// Runs `$body` with `const $S: usize` bound to the canvas side `$canvas`, one of
/// [`CANVASES`] (each a separate build of the generic env); `$other` for any other side.
#[macro_export]
macro_rules! with_canvas {
    ($canvas:expr, $S:ident => $body:expr, else $other:expr) => {
        match $canvas {
            5 => {
                const $S: usize = 5;
                $body
            }
            10 => {
                const $S: usize = 10;
                $body
            }
            30 => {
                const $S: usize = 30;
                $body
            }
            _ => $other,
        }
    };
}

/// Which of JaxARC 1.0.3's bugs are on ([`JaxBugs`]; `reference/arc.md` §1.12).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JaxBugsKind {
    /// Every bug fixed.
    #[default]
    None,
    /// Every bug on: bit-compatible with the package and its published results.
    All,
}

impl From<JaxBugsKind> for JaxBugs {
    fn from(k: JaxBugsKind) -> JaxBugs {
        match k {
            JaxBugsKind::None => JaxBugs::default(),
            JaxBugsKind::All => JaxBugs::all(),
        }
    }
}

/// One ARC env's settings (`ARC-v0` in ARCLE semantics, `ARC-jaxarc-v0` in JaxARC's).
#[derive(
    Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented,
)]
#[serde(default, deny_unknown_fields)]
pub struct ArcConfig {
    /// Canvas side: 30 (ARC-AGI), or 10 or 5 (the lane kernel in jaxarc mode); tasks that do
    /// not fit are dropped.
    pub canvas: usize,
    /// A folder (or file) of ARC JSON tasks; empty to generate tasks instead.
    pub data: String,
    /// Fail on the first file of `data` that is not an ARC task, instead of skipping it.
    pub strict: bool,
    /// Generated tasks per family, when `data` is empty.
    pub tasks_per_family: usize,
    /// The generator's families, when `data` is empty (`symmetry`, `recolor`, `gravity`,
    /// `fill-enclosed`, `connect-lines`, `crop-object`, `scale-up`, `tile`, `denoise`,
    /// `count-bar`, `border`); empty: all of them.
    pub families: Vec<Family>,
    /// The largest generated grid side (3 to 30; the canvas side where that is smaller).
    pub max_side: usize,
    /// Generator difficulty, 0 (easy) to 1 (hard).
    pub difficulty: f32,
    /// Seed of the generated tasks, when `data` is empty.
    pub gen_seed: u64,
    /// Observation layout: `compact` (grid and dims) or `full` (ARCLE's whole dict).
    pub layout: LayoutKind,
    /// Pairs an episode draws from: `train` (demonstrations) or `test`.
    pub split: SplitKind,
    /// Steps before truncation; 0 for none.
    pub max_episode_steps: u32,
    /// Submits allowed, -1 for unlimited (ARCLE's `max_trial`; o2arc only).
    pub max_trials: i8,
    /// ARCLE's `reset_on_submit` (o2arc only).
    pub reset_on_submit: bool,
    /// Demonstration pairs written into the `full` layout (0 to 10).
    pub demo_pairs: u8,
    /// JaxARC's bugs (jaxarc only): `none` (fixed) or `all` (JaxARC 1.0.3's, bit-compatible).
    pub bugs: JaxBugsKind,
    /// JaxARC's reward weights (jaxarc only).
    #[documented(nested)]
    pub rewards: JaxRewards,
    /// How a reset fills the working grid, JaxARC's `grid_initialization` (jaxarc only).
    #[documented(nested)]
    pub init: GridInit,
}

impl Default for ArcConfig {
    fn default() -> Self {
        let p = ArcParams::default();
        ArcConfig {
            canvas: 30,
            data: String::new(),
            strict: false,
            tasks_per_family: 8,
            families: Vec::new(),
            max_side: GenConfig::default().max_side,
            difficulty: GenConfig::default().difficulty,
            gen_seed: 0,
            layout: p.layout,
            split: p.split,
            max_episode_steps: p.max_episode_steps.unwrap_or(0),
            max_trials: p.max_trials,
            reset_on_submit: p.reset_on_submit,
            demo_pairs: p.demo_pairs,
            bugs: JaxBugsKind::None,
            rewards: p.rewards,
            init: p.init,
        }
    }
}

impl ArcConfig {
    /// The params in `mode`; an error for a canvas not compiled in, JaxARC's bugs or grid
    /// initialisation in o2arc mode, or a bad `init` (the rest is
    /// [`ArcEnv::validate`](crate::env::ArcEnv::validate)'s).
    pub fn params(&self, mode: ModeKind) -> Result<ArcParams, ArcError> {
        if !CANVASES.contains(&self.canvas) {
            return Err(ArcError::invalid("canvas", self.canvas, "5, 10 or 30"));
        }
        if mode == ModeKind::O2arc && self.bugs != JaxBugsKind::None {
            return Err(ArcError::invalid("bugs", "all", "none in o2arc mode (JaxARC's bugs)"));
        }
        self.init.validate(mode == ModeKind::Jaxarc)?;
        if self.max_trials < -1 {
            return Err(ArcError::invalid(
                "max_trials",
                self.max_trials,
                "-1 (unlimited) or a number of submits in 0..=127",
            ));
        }
        for (field, v) in [
            ("rewards.step_penalty", self.rewards.step_penalty),
            ("rewards.success_bonus", self.rewards.success_bonus),
            ("rewards.unsolved_submission_penalty", self.rewards.unsolved_submission_penalty),
            ("rewards.similarity_weight", self.rewards.similarity_weight),
        ] {
            if !v.is_finite() {
                return Err(ArcError::invalid(field, v, "a finite number"));
            }
        }
        Ok(ArcParams {
            mode,
            layout: self.layout,
            split: self.split,
            max_trials: self.max_trials,
            reset_on_submit: self.reset_on_submit,
            max_episode_steps: (self.max_episode_steps > 0).then_some(self.max_episode_steps),
            rewards: self.rewards,
            bugs: self.bugs.into(),
            demo_pairs: self.demo_pairs,
            init: self.init.clone(),
            ..ArcParams::default()
        })
    }

    /// The tasks: loaded from `data` (files that are not ARC tasks skipped unless `strict`),
    /// or generated up to the canvas side.
    pub fn bank(&self) -> Result<TaskBank, ArcError> {
        Ok(self.load()?.0)
    }

    /// [`ArcConfig::bank`] and the files of `data` it skipped, each with its reason.
    pub fn load(&self) -> Result<(TaskBank, Vec<String>), ArcError> {
        if self.data.is_empty() {
            if self.tasks_per_family == 0 {
                return Err(ArcError::invalid("tasks_per_family", 0, "at least 1"));
            }
            let families = if self.families.is_empty() { &Family::ALL[..] } else { &self.families };
            let bank =
                generate_bank(families, self.tasks_per_family, self.gen_seed, &self.generator()?)?;
            return Ok((bank, Vec::new()));
        }
        let opts = LoadOptions { strict: self.strict };
        let (bank, skipped) = TaskBank::load(std::path::Path::new(&self.data), opts)?;
        Ok((bank, skipped.into_iter().map(|s| s.error.to_string()).collect()))
    }

    /// The environment on an `S × S` canvas over `bank` (this config's [`ArcConfig::bank`]),
    /// or only the task `task` (an id of `data` or a generator id) where it is not empty, with
    /// the tasks that do not fit dropped (their ids returned); an error when none is left.
    pub fn env<const S: usize>(
        &self,
        mut bank: TaskBank,
        task: &str,
    ) -> Result<(ArcEnv<S>, Vec<String>), ArcError> {
        if !task.is_empty() {
            bank = TaskBank::from_tasks(vec![self.task(&bank, task)?]);
        }
        let dropped = bank.retain_fitting(S);
        Ok((ArcEnv::new(std::sync::Arc::new(bank))?, dropped))
    }

    /// The generator's settings: tasks up to `max_side`, or the canvas side where smaller.
    fn generator(&self) -> Result<GenConfig, ArcError> {
        if !(3..=crate::task::MAX_SIDE).contains(&self.max_side) {
            return Err(ArcError::invalid("max_side", self.max_side, "3 to 30"));
        }
        if !(0.0..=1.0).contains(&self.difficulty) {
            return Err(ArcError::invalid("difficulty", self.difficulty, "0 to 1"));
        }
        let max_side = self.max_side.min(self.canvas);
        Ok(GenConfig { max_side, difficulty: self.difficulty, ..Default::default() })
    }

    /// The task `id` of `bank`, or generated from a generator id (`symmetry-3`) exactly as
    /// [`ArcConfig::bank`] generates it; an error names the id otherwise.
    pub fn task(&self, bank: &TaskBank, id: &str) -> Result<Task, ArcError> {
        find_or_generate(bank, id, self.gen_seed, &self.generator()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_params_defaults_and_bad_values_are_named() {
        let c = ArcConfig::default();
        assert_eq!(c.params(ModeKind::O2arc).unwrap(), ArcParams::default());
        assert_eq!(c.params(ModeKind::Jaxarc).unwrap(), ArcParams::jaxarc());
        let all = ArcConfig { bugs: JaxBugsKind::All, ..c.clone() };
        assert_eq!(all.params(ModeKind::Jaxarc).unwrap().bugs, JaxBugs::all());
        let e = all.params(ModeKind::O2arc).unwrap_err().to_string();
        assert!(e.contains("bugs"), "{e}");
        let e =
            ArcConfig { canvas: 7, ..c.clone() }.params(ModeKind::Jaxarc).unwrap_err().to_string();
        assert!(e.contains("canvas = 7"), "{e}");
        let mut nan = c.clone();
        nan.rewards.success_bonus = f32::NAN;
        let e = nan.params(ModeKind::Jaxarc).unwrap_err().to_string();
        assert!(e.contains("rewards.success_bonus = NaN"), "{e}");
        let none = ArcConfig { max_episode_steps: 0, ..c };
        assert_eq!(none.params(ModeKind::O2arc).unwrap().max_episode_steps, None);
    }

    #[test]
    fn generated_banks_fit_the_canvas() {
        let c = ArcConfig { canvas: 5, tasks_per_family: 1, ..Default::default() };
        let bank = c.bank().unwrap();
        assert!(!bank.is_empty());
        let e = ArcConfig { tasks_per_family: 0, ..c }.bank().unwrap_err().to_string();
        assert!(e.contains("tasks_per_family"), "{e}");
    }

    /// The generator's knobs shape the bank: only the families asked for, grids no larger
    /// than `max_side`; out-of-range knobs are refused by name.
    #[test]
    fn generator_knobs_shape_the_bank_and_bad_ones_are_named() {
        let c = ArcConfig {
            families: vec![Family::Tile, Family::Border],
            max_side: 6,
            tasks_per_family: 3,
            ..Default::default()
        };
        let bank = c.bank().unwrap();
        assert_eq!(bank.len(), 6);
        assert!(
            bank.tasks().iter().all(|t| t.id.starts_with("tile-") || t.id.starts_with("border-"))
        );
        let inputs = bank.tasks().iter().flat_map(|t| t.train.iter().map(|p| &p.input));
        assert!(inputs.into_iter().all(|g| g.h <= 6 && g.w <= 6), "max_side bounds the inputs");
        for (bad, field) in [
            (ArcConfig { max_side: 2, ..c.clone() }, "max_side = 2"),
            (ArcConfig { max_side: 31, ..c.clone() }, "max_side = 31"),
            (ArcConfig { difficulty: f32::NAN, ..c.clone() }, "difficulty = NaN"),
        ] {
            let e = bad.bank().unwrap_err().to_string();
            assert!(e.contains(field), "{e}");
        }
        // A generator id is generated as the bank generates it.
        assert_eq!(c.task(&TaskBank::default(), "tile-2").unwrap(), bank.tasks()[2]);
    }

    /// An env keeps the tasks that fit its canvas and names the rest; a chosen task replaces
    /// the bank.
    #[test]
    fn envs_keep_the_fitting_tasks_and_name_the_rest() {
        let c = ArcConfig { tasks_per_family: 2, max_side: 12, ..Default::default() };
        let (env, dropped) = c.env::<30>(c.bank().unwrap(), "").unwrap();
        assert_eq!((env.bank().len(), dropped.len()), (22, 0));
        let (env, _) = c.env::<30>(c.bank().unwrap(), "symmetry-1").unwrap();
        assert_eq!(env.bank().len(), 1);
        let (env, dropped) = c.env::<10>(c.bank().unwrap(), "").unwrap();
        assert_eq!(env.bank().len() + dropped.len(), 22);
        assert!(!dropped.is_empty(), "12-sided tasks do not fit 10x10");
    }
}
