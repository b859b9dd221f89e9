//! What every whole run shares: where it writes, who hears its progress, starting its folder
//! and recording how it ended.

use crate::{MetricsSink, Run, RunDir, RunError};
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
        crate::write_atomic(&p.join("config.toml"), text.as_bytes())
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
fn failed(dir: RunDir, e: RunError) -> RunError {
    let status = if matches!(e, RunError::Stopped(_)) { "interrupted" } else { "failed" };
    let _ = dir.finish(status, Some(&e.to_string()));
    e
}

/// Reopens a run folder for `--resume`: `config` may differ from the folder's `config.toml`
/// only in `R`'s budget ([`Run::BUDGET`]); the launch is appended to the record and the config
/// rewritten. `config.toml` itself is not trusted: the run then verifies its checkpoint against
/// the config's stamp ([`crate::registry::stamp`]).
pub fn reopen<R: Run>(
    folder: &Path,
    config: &R::Config,
    argv: Vec<String>,
) -> Result<RunDir, RunError> {
    let path = folder.join("config.toml");
    let saved: R::Config = crate::load_config(config, Some(&path), toml::Table::new(), &[])?;
    if R::without_budget(config) != R::without_budget(&saved) {
        return Err(RunError::Failed(format!(
            "{}: the saved config is the run's; only {} may change on resume",
            path.display(),
            R::BUDGET
        )));
    }
    let dir = RunDir::reopen(folder, argv)?;
    dir.write_config(config)?;
    Ok(dir)
}

/// A run's loop object that goes on from its folder's checkpoint (`--resume`): ALLO's two
/// loops and the treasure hunt's. [`open`] makes or loads it with its folder.
pub trait Resumable: Sized {
    /// The run kind: its config, its name (the folder's area) and its budget.
    type Kind: Run;
    /// What its progress counts, plural (`steps`, `epochs`); a checkpoint set is named by the
    /// singular.
    const UNIT: &'static str;
    /// A new loop object.
    fn fresh(config: &<Self::Kind as Run>::Config) -> Result<Self, RunError>;
    /// The loop object from the files of a checkpoint set that verified (`set`).
    fn load(config: &<Self::Kind as Run>::Config, set: &Path) -> Result<Self, RunError>;
    /// The units done: the metrics go on from the next.
    fn done(&self) -> u64;

    /// The loop object from the newest checkpoint set under `checkpoint` that verifies against
    /// `stamp` (its units done checked against the set's name), with a note when that was not
    /// the newest set; `None` when no set was ever completed.
    fn latest(
        config: &<Self::Kind as Run>::Config,
        checkpoint: &Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<Option<(Self, Option<String>)>, RunError> {
        let Some(set) = kestrel_nn::checkpoint_set(checkpoint, stamp)? else {
            return Ok(None);
        };
        let run = Self::load(config, &set.path)?;
        set.expect_step(run.done(), Self::UNIT.trim_end_matches('s'))?;
        Ok(Some((run, set.note)))
    }

    /// [`Resumable::latest`], or a new object (the note says so) when there is no set yet.
    fn resumed(
        config: &<Self::Kind as Run>::Config,
        checkpoint: &Path,
        stamp: &kestrel_nn::Stamp,
    ) -> Result<(Self, Option<String>), RunError> {
        if let Some(r) = Self::latest(config, checkpoint, stamp)? {
            return Ok(r);
        }
        let note = format!(
            "{}: no complete checkpoint yet; the run starts over in its folder",
            checkpoint.display()
        );
        Ok((Self::fresh(config)?, Some(note)))
    }
}

/// A resumable run's loop object and folder. With `resume`: the folder reopened (its saved
/// config checked against `config`), the object loaded from its `checkpoint/` (the note said
/// to the watcher and the record; a checkpoint that does not load fails the folder) and its
/// metrics appended. Without: a new object and a new folder `<kind>/<name>`. Also returns the
/// config's checkpoint stamp ([`crate::registry::stamp`]), which the run's [`Checkpoints`] write.
pub fn open<T: Resumable>(
    launch: &mut Launch<'_>,
    config: &<T::Kind as Run>::Config,
    resume: Option<&Path>,
    name: &str,
    seed: u64,
) -> Result<(T, RunDir, MetricsSink, kestrel_nn::Stamp), RunError> {
    let stamp = crate::registry::stamp::<T::Kind>(config);
    let Some(folder) = resume else {
        let run = T::fresh(config)?;
        let (dir, metrics) = start(launch, T::Kind::NAME, name, seed, config)?;
        return Ok((run, dir, metrics, stamp));
    };
    let mut dir = reopen::<T::Kind>(folder, config, launch.argv.clone())?;
    let run = match T::resumed(config, &folder.join("checkpoint"), &stamp) {
        Ok((run, note)) => {
            if let Some(note) = note {
                launch.note(&mut dir, T::UNIT, &note)?;
            }
            run
        }
        Err(e) => return Err(failed(dir, e)),
    };
    let metrics = MetricsSink::resume(&dir.join("metrics.jsonl"), run.done() + 1)?;
    Ok((run, dir, metrics, stamp))
}
