//! An ARC env as a config names it ([`ArcConfig`]): the params one tunes and where the tasks
//! come from (a folder of ARC JSON, or the generator). The env registry (`kestrel-run`)
//! reads it from TOML, `--set` or a Python dict; [`ArcConfig::params`] and
//! [`ArcConfig::bank`] turn it into the parts an [`ArcEnv`](crate::ArcEnv) is built from.

use crate::generator::{Family, GenConfig, find_or_generate, generate_bank};
use crate::{
    ArcError, ArcParams, GridInit, JaxBugs, JaxRewards, Layout, LoadOptions, Mode, Split, Task,
    TaskBank,
};
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
#[serde(rename_all = "lowercase")]
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
    /// Generated tasks per family, when `data` is empty.
    pub tasks_per_family: usize,
    /// Seed of the generated tasks, when `data` is empty.
    pub gen_seed: u64,
    /// Observation layout: `compact` (grid and dims) or `full` (ARCLE's whole dict).
    pub layout: Layout,
    /// Pairs an episode draws from: `train` (demonstrations) or `test`.
    pub split: Split,
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
            tasks_per_family: 8,
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
    /// [`ArcEnv::validate`](crate::ArcEnv::validate)'s).
    pub fn params(&self, mode: Mode) -> Result<ArcParams, ArcError> {
        if !CANVASES.contains(&self.canvas) {
            return Err(ArcError::invalid("canvas", self.canvas, "5, 10 or 30"));
        }
        if mode == Mode::O2arc && self.bugs != JaxBugsKind::None {
            return Err(ArcError::invalid("bugs", "all", "none in o2arc mode (JaxARC's bugs)"));
        }
        self.init.validate(mode == Mode::Jaxarc)?;
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

    /// The tasks: loaded from `data` (files that are not ARC tasks skipped), or generated up
    /// to the canvas side.
    pub fn bank(&self) -> Result<TaskBank, ArcError> {
        if self.data.is_empty() {
            if self.tasks_per_family == 0 {
                return Err(ArcError::invalid("tasks_per_family", 0, "at least 1"));
            }
            return generate_bank(
                &Family::ALL,
                self.tasks_per_family,
                self.gen_seed,
                &self.generator(),
            );
        }
        let (bank, _) =
            TaskBank::load(std::path::Path::new(&self.data), LoadOptions { strict: false })?;
        Ok(bank)
    }
}

impl ArcConfig {
    /// The generator's settings: tasks up to the canvas side.
    fn generator(&self) -> GenConfig {
        GenConfig { max_side: self.canvas.min(GenConfig::default().max_side), ..Default::default() }
    }

    /// The task `id` of `bank`, or generated from a generator id (`symmetry-3`) exactly as
    /// [`ArcConfig::bank`] generates it; an error names the id otherwise.
    pub fn task(&self, bank: &TaskBank, id: &str) -> Result<Task, ArcError> {
        find_or_generate(bank, id, self.gen_seed, &self.generator())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_params_defaults_and_bad_values_are_named() {
        let c = ArcConfig::default();
        assert_eq!(c.params(Mode::O2arc).unwrap(), ArcParams::default());
        assert_eq!(c.params(Mode::Jaxarc).unwrap(), ArcParams::jaxarc());
        let all = ArcConfig { bugs: JaxBugsKind::All, ..c.clone() };
        assert_eq!(all.params(Mode::Jaxarc).unwrap().bugs, JaxBugs::all());
        let e = all.params(Mode::O2arc).unwrap_err().to_string();
        assert!(e.contains("bugs"), "{e}");
        let e = ArcConfig { canvas: 7, ..c.clone() }.params(Mode::Jaxarc).unwrap_err().to_string();
        assert!(e.contains("canvas = 7"), "{e}");
        let mut nan = c.clone();
        nan.rewards.success_bonus = f32::NAN;
        let e = nan.params(Mode::Jaxarc).unwrap_err().to_string();
        assert!(e.contains("rewards.success_bonus = NaN"), "{e}");
        let none = ArcConfig { max_episode_steps: 0, ..c };
        assert_eq!(none.params(Mode::O2arc).unwrap().max_episode_steps, None);
    }

    #[test]
    fn generated_banks_fit_the_canvas() {
        let c = ArcConfig { canvas: 5, tasks_per_family: 1, ..Default::default() };
        let bank = c.bank().unwrap();
        assert!(!bank.is_empty());
        let e = ArcConfig { tasks_per_family: 0, ..c }.bank().unwrap_err().to_string();
        assert!(e.contains("tasks_per_family"), "{e}");
    }
}
