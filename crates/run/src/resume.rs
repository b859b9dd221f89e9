//! Resuming a run from its folder: the folder reopened against its saved config, and the
//! loop object of a resumable run ([`Resumable`]) from its newest checkpoint set that verifies.

use crate::base::RunError;
use crate::launch::{Launch, failed, start};
use crate::metrics::MetricsSink;
use crate::record::RunDir;
use crate::run::{Run, stamp};
use std::path::Path;

/// Reopens a run folder for `--resume`: `config` may differ from the folder's `config.toml`
/// only in `R`'s budget ([`Run::BUDGET`]); the launch is appended to the record and the config
/// rewritten. `config.toml` itself is not trusted: the run then verifies its checkpoint against
/// the config's stamp ([`crate::run::stamp`]).
pub fn reopen<R: Run>(
    folder: &Path,
    config: &R::Config,
    argv: Vec<String>,
) -> Result<RunDir, RunError> {
    let path = folder.join("config.toml");
    let saved: R::Config =
        crate::config::load_config(config, Some(&path), toml::Table::new(), &[])?;
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
/// config's checkpoint stamp ([`crate::run::stamp`]), which the run's [`Checkpoints`] write.
pub fn open<T: Resumable>(
    launch: &mut Launch<'_>,
    config: &<T::Kind as Run>::Config,
    resume: Option<&Path>,
    name: &str,
    seed: u64,
) -> Result<(T, RunDir, MetricsSink, kestrel_nn::Stamp), RunError> {
    let stamp = stamp::<T::Kind>(config);
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
