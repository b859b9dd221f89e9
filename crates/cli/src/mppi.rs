//! `kestrel mppi bench`.

use anyhow::Result;
use clap::{Args, Subcommand};
use kestrel_core::Key;
use kestrel_mppi::{Mppi, MppiParams, PendulumDynamics};
use serde_json::json;
use std::time::Instant;

#[derive(Subcommand)]
pub enum MppiCmd {
    /// Time `command` on the gym pendulum (pytorch-mppi's benchmark problem).
    Bench(BenchArgs),
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
}

pub fn bench(a: BenchArgs) -> Result<()> {
    let m = Mppi::new(PendulumDynamics);
    let p = MppiParams {
        num_samples: a.num_samples,
        horizon: a.horizon,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        ..MppiParams::new(1, 1.0)
    };
    m.validate(&p)?;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build()?;
    let mut s = m.init(&p);
    let mut u = [0.0];
    let us = pool.install(|| {
        for k in 0..10 {
            m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
        }
        let t = Instant::now();
        for k in 0..a.commands {
            m.command(Key::new(k), &p, &mut s, &[3.0, 0.0], &mut u);
        }
        t.elapsed().as_secs_f64() * 1e6 / a.commands as f64
    });
    if a.json {
        println!(
            "{}",
            json!({"num_samples": a.num_samples, "horizon": a.horizon, "threads": a.threads, "us_per_command": us})
        );
    } else {
        println!(
            "MPPI command, pendulum, K={} T={}, {} thread(s): {us:.1} µs",
            a.num_samples, a.horizon, a.threads
        );
    }
    Ok(())
}
