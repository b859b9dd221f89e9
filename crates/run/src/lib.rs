//! Kestrel's whole runs and their one writer. Every run (an ES run, a QD run, an MPPI episode,
//! a tuning run, an ALLO, IQN or actdyn training) is one [`Run`] in one file under [`runs`]:
//! its typed config and its loop, writing its run folder through a [`Launch`] (where to write,
//! the recorded command line, a progress callback). The [`registry`] ([`RunKind`]) is how the
//! CLI, the Python package, sweeps and Ray reach them; none of those owns a loop or a writer.
//! The [`envs`] registry ([`EnvId`]) is the same for env ids: each id's config and the batch
//! it builds. The parts:
//!
//! - [`config`]: the typed config from defaults, a TOML file, flags and `--set key=value`
//!   overrides (dotted keys for nested fields), unknown keys rejected with the source, the
//!   field and the value; the resolved config is written back as `config.toml`, which
//!   `--config` accepts again.
//! - [`RunDir`]: `runs/<area>-<name>-<seed>-<YYYYMMDD-HHMMSS>/` with `record.json` (the
//!   binary's own commit and version embedded at build time, argv, start and end times, exit
//!   status), written when the run starts and again when it ends.
//! - [`MetricsSink`]: `metrics.jsonl` written by a background thread, one schema for every
//!   run type (`global_step`, `wall_time`, `steps_per_second`, then the run's own fields),
//!   flushed whenever its queue empties; an I/O error names the path.
//! - [`Summary`]: `summary.md` and `summary.json` from the same key/value list.
//! - [`write_atomic`]: temp file, fsync, rename.

mod base;
pub mod benches;
pub mod config;
pub mod envs;
mod figures;
pub mod info;
mod launch;
mod metrics;
mod record;
pub mod registry;
pub mod render;
mod resume;
pub mod run;
pub mod runs;
pub mod stats;
mod summary;
pub mod sweep;

pub use config::{
    ConfigSource, commented_toml, key_layer, leaf_keys, load_config, parse_overrides, to_table,
    to_toml,
};
pub use envs::{DynBatch, EnvId};
pub use launch::{Flow, Launch, Outcome, Reporter, Tick, finish, quiet, start};
pub use metrics::{MetricsSink, for_each_metric, read_metrics};
pub use record::{RunDir, RunRecord, folder_name, utc_timestamp};
pub use registry::RunKind;
pub use resume::reopen;
pub use run::{Layers, Outputs, Population, Run};
pub use summary::Summary;

pub use base::{COMMIT, RunError, VERSION, pool, read_text, write_atomic};
