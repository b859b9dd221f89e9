//! `kestrel arc ...`: bench, replay, show, rollout (the bench and the runs in `kestrel_run`).

use crate::common::{BenchArgs, KeyArgs};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_arc::{ArcConfig, TaskBank, render};
use kestrel_run::benches::arc::ArcBench;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum ArcCmd {
    /// Steps per second per batch size, plus a per-operation cost table.
    Bench(BenchArgs<ArcBench>),
    /// Shows a task: coloured terminal grids and a PNG of all pairs.
    Show(ShowArgs),
}

// ------------------------------------------------------------------------------------
// show

#[derive(Args)]
pub struct ShowArgs {
    /// Task id (from --data, or a generator id such as symmetry-3).
    #[arg(value_name = "TASK")]
    id: String,
    /// PNG output path (default: `<task>.png`).
    #[arg(long)]
    png: Option<PathBuf>,
    /// Pixels per cell in the PNG (1 to 64).
    #[arg(long, default_value_t = 16)]
    cell: usize,
    /// Where the task comes from, as `ARC-v0` reads it: `--data`, or the generator's
    /// `--gen-seed`, `--max-side`, `--difficulty`.
    #[command(flatten)]
    env: KeyArgs<ArcConfig>,
}

fn show(a: ShowArgs) -> Result<()> {
    let env = a.env.load()?;
    let bank = if env.data.is_empty() { TaskBank::default() } else { env.bank()? };
    let t = env.task(&bank, &a.id)?;
    outln!(
        "task {} ({}): {} train, {} test pairs",
        t.id,
        if t.group.is_empty() { "-" } else { &t.group },
        t.train.len(),
        t.test.len()
    );
    // Colours only on a terminal; digits otherwise (a file or a pipe gets no escape codes).
    if std::io::stdout().is_terminal() {
        out!("{}", render::ansi_task(&t));
    } else {
        out!("{}", render::text_task(&t));
    }
    let path = a.png.unwrap_or_else(|| PathBuf::from(format!("{}.png", t.id.replace('/', "_"))));
    if !(1..=64).contains(&a.cell) {
        bail!("invalid --cell = {}: 1 to 64 pixels per cell", a.cell);
    }
    let (w, h, img) = render::task_image(&t, a.cell);
    kestrel_plot::save_rgb_png(&path, w as u32, h as u32, &img)?;
    outln!("wrote {} ({w}x{h})", path.display());
    Ok(())
}

pub fn run(c: ArcCmd) -> Result<()> {
    match c {
        ArcCmd::Bench(a) => a.run(),
        ArcCmd::Show(a) => show(a),
    }
}
