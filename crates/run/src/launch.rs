//! What every whole run shares: where it writes, who hears its progress, starting its folder
//! and recording how it ended.

use crate::base::RunError;
use crate::metrics::MetricsSink;
use crate::record::RunDir;
use serde::Serialize;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

/// What whoever watches a run answers each tick: go on, or stop the run, saying why (the
/// Python package stops on Ctrl-C and on an exception in the progress callback).
pub type Flow = ControlFlow<String>;

/// One progress report: `done` of `total` `unit`s, with a short status. A tick with `total`
/// 0 is a note ([`Launch::note`]): its status is a message to show once, not progress.
#[derive(Clone, Copy, Debug)]
pub struct Tick<'a> {
    /// Units done.
    pub done: u64,
    /// Units in all.
    pub total: u64,
    /// What a unit is (`generations`, `steps`, `epochs`).
    pub unit: &'static str,
    /// A short status (the best so far, a loss).
    pub status: &'a str,
}

/// Where a run writes and who hears about its progress (the CLI prints a progress line; the
/// Python package calls back into Python, and may stop the run).
pub struct Launch<'a> {
    /// Parent folder of the run folder.
    pub out_dir: PathBuf,
    /// The command line or call recorded in `record.json`.
    pub argv: Vec<String>,
    /// Progress reports; a [`Flow::Break`] stops the run at that tick.
    pub progress: &'a mut (dyn FnMut(Tick<'_>) -> Flow + Send),
}

/// A progress sink that shows nothing and never stops a run.
pub fn quiet(_: Tick<'_>) -> Flow {
    Flow::Continue(())
}

impl Launch<'_> {
    /// A progress reporter over `total` units named `unit`.
    pub fn progress(&mut self, total: u64, unit: &'static str) -> Reporter<'_> {
        Reporter { sink: &mut *self.progress, total, unit, stop: None }
    }

    /// Tells the person watching and the folder's record what the launch found (a resume from
    /// the previous checkpoint set, and why).
    pub fn note(
        &mut self,
        dir: &mut RunDir,
        unit: &'static str,
        note: &str,
    ) -> Result<(), RunError> {
        let mut r = self.progress(0, unit);
        r.tick(0, note);
        r.stopped()?;
        dir.note(note)
    }

    /// Tells the person watching of something the user should change (a renamed key), before
    /// the run's folder exists: a note tick whose unit is [`Tick::WARNING`], which the CLI
    /// prints as a warning and Python raises as a `FutureWarning`.
    pub fn warn(&mut self, warning: &str) -> Result<(), RunError> {
        let mut r = self.progress(0, Tick::WARNING);
        r.tick(0, warning);
        r.stopped()
    }
}

impl Tick<'_> {
    /// The unit of a warning's note tick ([`Launch::warn`]).
    pub const WARNING: &'static str = "warning";

    /// The warning this tick carries, if it is one.
    pub fn warning(&self) -> Option<&str> {
        (self.total == 0 && self.unit == Tick::WARNING).then_some(self.status)
    }
}

/// Reports one run's progress to its launch, and hears whether to stop.
pub struct Reporter<'a> {
    sink: &'a mut (dyn FnMut(Tick<'_>) -> Flow + Send),
    total: u64,
    unit: &'static str,
    /// Why the launch stopped the run, once it has.
    stop: Option<String>,
}

impl Reporter<'_> {
    /// `done` units, with a status. Returns false when the launch asks the run to stop: the
    /// loop then ends at once, and [`Reporter::stopped`] turns that into the run's error (the
    /// folder is recorded as interrupted; the resumable kinds save the state of the step they
    /// stopped at first, so a resume goes on from there).
    pub fn tick(&mut self, done: u64, status: &str) -> bool {
        if self.stop.is_none()
            && let ControlFlow::Break(why) =
                (self.sink)(Tick { done, total: self.total, unit: self.unit, status })
        {
            self.stop = Some(why);
        }
        self.stop.is_none()
    }

    /// [`RunError::Stopped`] when a tick was told to stop.
    pub fn stopped(&self) -> Result<(), RunError> {
        match &self.stop {
            Some(why) => Err(RunError::Stopped(why.clone())),
            None => Ok(()),
        }
    }
}

/// What a finished run reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The run folder.
    pub dir: PathBuf,
    /// One line: the headline figures and the folder.
    pub headline: String,
}

/// A run's checkpoint sets at `<run folder>/checkpoint`, stamped with the run's config: each
/// step is saved at most once, so the final save at the step of the last periodic one is
/// skipped and `checkpoint.prev/` stays the older fallback.
pub(crate) struct Checkpoints {
    dir: PathBuf,
    stamp: kestrel_nn::Stamp,
    last: Option<u64>,
}

impl Checkpoints {
    /// The sets of the run in `folder`; `resumed_at` is the step a resumed run continues from
    /// (its set is the newest there), 0 for a run that starts afresh.
    pub(crate) fn new(folder: &Path, stamp: kestrel_nn::Stamp, resumed_at: u64) -> Self {
        let last = (resumed_at > 0).then_some(resumed_at);
        Checkpoints { dir: folder.join("checkpoint"), stamp, last }
    }

    /// Saves the state at `step` with `write(dir, stamp)` (a learner's `save_checkpoint`),
    /// unless that step is already the newest set.
    pub(crate) fn save<E>(
        &mut self,
        step: u64,
        write: impl FnOnce(&Path, &kestrel_nn::Stamp) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.last != Some(step) {
            write(&self.dir, &self.stamp)?;
            self.last = Some(step);
        }
        Ok(())
    }
}

/// A new run folder with `config.toml` written and a metrics sink open.
pub fn start(
    launch: &Launch<'_>,
    area: &str,
    name: &str,
    seed: u64,
    config: &impl Serialize,
) -> Result<(RunDir, MetricsSink), RunError> {
    let text = crate::config::to_toml(config)?;
    let dir = RunDir::create_with(&launch.out_dir, area, name, seed, launch.argv.clone(), |p| {
        crate::base::write_atomic(&p.join("config.toml"), text.as_bytes())
    })?;
    let metrics = MetricsSink::create(&dir.join("metrics.jsonl"))?;
    Ok((dir, metrics))
}

/// Records the launch's end in `record.json` (failed with the error, or ok) and passes the
/// result on as the run's outcome.
pub fn finish(dir: RunDir, r: Result<String, RunError>) -> Result<Outcome, RunError> {
    let path = dir.path().to_path_buf();
    match r {
        Ok(headline) => {
            dir.finish("ok", None)?;
            Ok(Outcome { dir: path, headline })
        }
        Err(e) => Err(failed(dir, e)),
    }
}

/// Records in `record.json` that the launch ended with `e` (interrupted or failed) and
/// passes `e` on: an error in writing the record gives way to the run's own.
pub(crate) fn failed(dir: RunDir, e: RunError) -> RunError {
    let status = if matches!(e, RunError::Stopped(_)) { "interrupted" } else { "failed" };
    let _ = dir.finish(status, Some(&e.to_string()));
    e
}
