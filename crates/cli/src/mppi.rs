//! `kestrel mppi run | tune | bench`: configs, run folders and pictures here; controllers,
//! presets, episodes and tuning in `kestrel_mppi`.

use crate::common::{BenchArgs, RunArgs};
use clap::Subcommand;
use kestrel_run::benches::mppi::MppiBench;
use kestrel_run::runs::{mppi::MppiRun, mppi_qd::MppiQd, mppi_tune::MppiTune};

#[derive(Subcommand)]
pub enum MppiCmd {
    /// Time `command` on the gym pendulum (pytorch-mppi's benchmark problem).
    Bench(BenchArgs<MppiBench>),
    /// Run a controller closed loop on a system: trajectory, cost and state plots, frames.
    Run(RunArgs<MppiRun>),
    /// Tune a controller's knobs with an evolution strategy; writes the best as a config.
    Tune(RunArgs<MppiTune>),
    /// Quality-diversity tuning: CMA-ME fills an archive of good knob settings spread over the
    /// first two knobs; writes every elite and the best as a config.
    Qd(RunArgs<MppiQd>),
}
