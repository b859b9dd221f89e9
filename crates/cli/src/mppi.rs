//! `kestrel mppi run | tune | bench`: configs, run folders and pictures here; controllers,
//! presets, episodes and tuning in `kestrel_mppi`.

use crate::common::{RunArgs, pool};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_mppi::{ControllerKind, Precision, System};
use kestrel_run::runs::mppi::MppiRunConfig;
use kestrel_run::runs::mppi_tune::{TuneConfig, run_tune_with};
use kestrel_run::runs::{mppi::MppiRun, mppi_qd::MppiQd, mppi_tune::MppiTune};
use serde_json::json;
use std::time::Instant;

#[derive(Subcommand)]
pub enum MppiCmd {
    /// Time `command` on the gym pendulum (pytorch-mppi's benchmark problem).
    Bench(BenchArgs),
    /// Run a controller closed loop on a system: trajectory, cost and state plots, frames.
    Run(RunArgs<MppiRun>),
    /// Tune a controller's knobs with an evolution strategy; writes the best as a config.
    Tune(RunArgs<MppiTune>),
    /// Quality-diversity tuning: CMA-ME fills an archive of good knob settings spread over the
    /// first two knobs; writes every elite and the best as a config.
    Qd(RunArgs<MppiQd>),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Samples K.
    #[arg(long, default_value_t = 1000)]
    num_samples: usize,
    /// Horizon T.
    #[arg(long, default_value_t = 20)]
    horizon: usize,
    /// Commands to time.
    #[arg(long, default_value_t = 300)]
    commands: u64,
    /// Worker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// One JSON object.
    #[arg(long)]
    json: bool,
    /// Arithmetic: f64 (bit-exact, the default) or f32 (SIMD lanes, jax-mppi's float32).
    #[arg(long, default_value = "f64", value_parser = ["f64", "f32"])]
    precision: String,
    /// Time tuning instead: CMA-ES with this many candidates tunes λ and Σ on jax-mppi's basic
    /// example (K=50, T=15, 20 closed-loop steps from (1, −0.5), λ₀=5, Σ₀=1).
    #[arg(long)]
    tune_pop: Option<usize>,
    /// Generations for `--tune-pop`.
    #[arg(long, default_value_t = 100)]
    tune_generations: u64,
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let pool = pool(Some(a.threads))?;
    if a.commands == 0 || a.tune_generations == 0 {
        bail!("invalid commands/tune_generations = 0: at least 1 each");
    }
    let precision = if a.precision == "f32" { Precision::F32 } else { Precision::F64 };
    if let Some(pop) = a.tune_pop {
        let mut c = TuneConfig {
            run: MppiRunConfig::defaults_for(ControllerKind::Mppi, System::Basic, 20, 0),
            pop_size: pop.max(4),
            generations: a.tune_generations,
            sigma: 0.3,
            ..TuneConfig::default()
        };
        c.run.mppi.num_samples = 50;
        c.run.mppi.precision = precision;
        let t = Instant::now();
        let r = pool.install(|| run_tune_with(&c, None, |_| true))?;
        let secs = t.elapsed().as_secs_f64();
        let us = secs * 1e6 / (c.pop_size as u64 * a.tune_generations) as f64;
        if a.json {
            println!(
                "{}",
                json!({"pop_size": c.pop_size, "generations": a.tune_generations, "threads": a.threads, "precision": a.precision, "seconds": secs, "us_per_candidate_episode": us, "best_cost": r.best_cost})
            );
        } else {
            println!(
                "MPPI tuning (basic, λ and Σ, CMA-ES pop {}, {} generations), {} thread(s), {}: {secs:.3} s, {us:.1} µs per candidate episode, best cost {:.4}",
                c.pop_size, a.tune_generations, a.threads, a.precision, r.best_cost
            );
        }
        return Ok(());
    }
    let us = pool.install(|| {
        kestrel_mppi::bench::pendulum_command_us(a.num_samples, a.horizon, a.commands, precision)
    })?;
    if a.json {
        println!(
            "{}",
            json!({"num_samples": a.num_samples, "horizon": a.horizon, "threads": a.threads, "precision": a.precision, "us_per_command": us})
        );
    } else {
        println!(
            "MPPI command, pendulum, K={} T={}, {} thread(s), {}: {us:.1} µs",
            a.num_samples, a.horizon, a.threads, a.precision
        );
    }
    Ok(())
}
