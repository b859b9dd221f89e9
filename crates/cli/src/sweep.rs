//! `kestrel sweep`: a grid of configs × seeds of any run type (see `kestrel_run::sweep`), run
//! here one after another or on a Ray cluster through the Python package.

use crate::common::ProgressLine;
use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use kestrel_run::sweep::{CellOutcome, Sweep};
use kestrel_run::{Launch, Tick};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// Here, one run after another, each on all threads.
    Local,
    /// As Ray tasks (`python -m kestrel.dist sweep`; needs `pip install "./crates/py[ray]"`).
    Ray,
}

#[derive(Args)]
pub struct SweepArgs {
    /// The sweep spec (TOML: kind, seeds, `[base]`, `[grid]`; see the README).
    spec: PathBuf,
    /// Parent folder of the sweep folder (`<out-dir>/<name>`).
    #[arg(long, default_value = "runs/sweeps")]
    out_dir: PathBuf,
    /// Where the runs execute.
    #[arg(long, value_enum, default_value_t = Engine::Local)]
    engine: Engine,
    /// Threads per run (local: absent = all cores; ray: the CPUs each task asks for, default 1).
    #[arg(long)]
    threads: Option<usize>,
    /// Ray: the cluster address (`ray start --head` prints it; absent: a local Ray instance).
    #[arg(long)]
    address: Option<String>,
    /// Ray: the Python with the `kestrel` package and Ray (default: $KESTREL_PYTHON or python3).
    #[arg(long)]
    python: Option<String>,
    /// Only rebuild the table and plot from the finished runs.
    #[arg(long)]
    aggregate_only: bool,
}

pub fn sweep(a: SweepArgs) -> Result<()> {
    // Every cell's config is checked before anything is written or launched.
    let s = Sweep::from_file(&a.spec, &a.out_dir)?;
    if a.engine == Engine::Ray && !a.aggregate_only {
        return ray(&a);
    }
    s.create()?;
    if !a.aggregate_only {
        let pool = kestrel_run::pool(a.threads)?;
        let argv: Vec<String> = crate::argv();
        let n = s.cells.len();
        let mut failed = Vec::new();
        for (i, cell) in s.cells.iter().enumerate() {
            let mut progress = ProgressLine::new(0, "");
            let r = pool.install(|| {
                let progress = &mut |t: Tick<'_>| progress.report(t);
                let l = Launch { out_dir: PathBuf::new(), argv: argv.clone(), progress };
                s.run_cell(cell, l)
            });
            match r {
                Ok(CellOutcome::Skipped(d)) => {
                    outln!(
                        "[{}/{n}] {}: finished before, skipped ({})",
                        i + 1,
                        cell.id,
                        d.display()
                    )
                }
                Ok(CellOutcome::Ran(o)) => outln!("[{}/{n}] {}: {}", i + 1, cell.id, o.headline),
                Ok(CellOutcome::Resumed(o)) => {
                    outln!("[{}/{n}] {}: resumed; {}", i + 1, cell.id, o.headline)
                }
                Err(e) => {
                    eprintln!("[{}/{n}] {}: error: {e}", i + 1, cell.id);
                    failed.push(format!("{}: {e}", cell.id));
                }
            }
        }
        if !failed.is_empty() {
            s.aggregate()?;
            bail!("{} of {n} runs failed:\n  {}", failed.len(), failed.join("\n  "));
        }
    }
    let t = s.aggregate()?;
    out!("{}", t.markdown());
    outln!("sweep folder {} (table.md, table.csv, table.json, curves.png)", s.dir.display());
    Ok(())
}

/// Hands the sweep to the Python package's Ray engine, which runs the same cells.
fn ray(a: &SweepArgs) -> Result<()> {
    let python = a
        .python
        .clone()
        .or_else(|| std::env::var("KESTREL_PYTHON").ok())
        .unwrap_or_else(|| "python3".into());
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "kestrel.dist", "sweep"]).arg(&a.spec).arg("--out-dir").arg(&a.out_dir);
    if let Some(addr) = &a.address {
        cmd.args(["--address", addr]);
    }
    if let Some(t) = a.threads {
        cmd.args(["--threads", &t.to_string()]);
    }
    let status = cmd.status().map_err(|e| {
        anyhow::anyhow!(
            "cannot start {python} for the Ray engine: {e}; give --python (or $KESTREL_PYTHON) a \
             Python with `pip install \"./crates/py[ray]\"`"
        )
    })?;
    if !status.success() {
        bail!("the Ray engine ({python} -m kestrel.dist sweep) failed: {status}");
    }
    Ok(())
}
