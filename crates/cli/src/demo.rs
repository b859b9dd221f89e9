//! `kestrel demo`: every system briefly on its embedded default (no dataset needed), each as
//! the ordinary command it is, then one screen with each run's headline figure (read back
//! from its `summary.json`) and its folder.

use crate::{Cli, arc, dispatch};
use anyhow::{Context, Result};
use clap::{Args, Parser};
use std::path::PathBuf;

#[derive(Args)]
pub struct DemoArgs {
    /// Parent folder of the demo's run folders.
    #[arg(long, default_value = "runs")]
    out_dir: PathBuf,
    /// Seconds of batched ARC rollouts.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// A tiny budget for every part (a smoke test of the demo itself).
    #[arg(long)]
    quick: bool,
}

/// Overrides of `--quick`, per part.
const QUICK: [&str; 6] = [
    "--set generations=20",
    "--set steps=5",
    "--set steps=20 --set samples=2000 --set eval_every=10 --set batch=64",
    "--set epochs=2 --set turns=20 --set layer=32 --set record_every=1",
    "--set generations=3",
    "--set steps=40 --set eval.episodes=2 --set eval.starts=10 --set eval.samples=5",
];

/// (system, command line, headline key in summary.json, what it is).
const PARTS: [(&str, &str, &str, &str); 6] = [
    (
        "ES",
        "evo run --strategy cma-es --problem rosenbrock --num-dims 10 --generations 3000 --seed 1",
        "best_fitness",
        "CMA-ES best fitness, 10-D Rosenbrock",
    ),
    (
        "MPPI",
        "mppi run --env pendulum --steps 120",
        "total_cost",
        "pendulum swing-up, total running cost",
    ),
    (
        "ALLO",
        "allo train --map builtin:rooms-2-5 --steps 3000 --samples 200000 --eval-every 500 --checkpoint-every 0",
        "cosine_similarity",
        "Laplacian eigenvectors, cosine similarity",
    ),
    (
        "Hunt",
        "hunt train --epochs 20 --record-every 10 --checkpoint-every 0",
        "mean_total_reward_last_100",
        "treasure hunt, 2 IQN agents, mean reward",
    ),
    ("QD", "evo qd --generations 150", "coverage", "CMA-ME archive coverage"),
    (
        "ActDyn",
        "actdyn run --steps 2000 --checkpoint-every 0 --set eval.episodes=4",
        "latent_r2_0",
        "latent dynamics from 50-D observations (E1), latent R²",
    ),
];

pub fn demo(a: DemoArgs) -> Result<()> {
    let t0 = std::time::Instant::now();
    println!("== ARC: batched random rollouts over generated tasks ==");
    let (rate, episodes, solved) = arc::throughput(&arc::DemoArgs {
        num_envs: 1024,
        seconds: a.seconds,
        threads: a.threads,
        seed: 0,
    })?;
    let mut report = vec![(
        "ARC".to_string(),
        format!(
            "{:.2} M steps/s, 30x30 canvas, 1024 envs ({episodes} episodes, {solved} solved)",
            rate / 1e6
        ),
        "-".to_string(),
    )];
    // Each part writes into a fresh folder of its own, so its run folder is the one entry.
    let root =
        kestrel_run::RunDir::create(&a.out_dir, "demo", "all", 0, std::env::args().collect())?;
    let parts = (|| -> Result<()> {
        for (i, (system, line, key, what)) in PARTS.into_iter().enumerate() {
            println!("\n== {system}: kestrel {line} ==");
            let mut argv: Vec<String> = std::iter::once("kestrel".to_string())
                .chain(line.split(' ').map(str::to_string))
                .collect();
            let out = root.join(&system.to_lowercase());
            argv.extend(["--out-dir".to_string(), out.to_string_lossy().to_string()]);
            if a.quick {
                argv.extend(QUICK[i].split(' ').map(str::to_string));
            }
            if let Some(t) = a.threads.filter(|_| !line.starts_with("allo")) {
                argv.extend(["--threads".to_string(), t.to_string()]);
            }
            dispatch(Cli::try_parse_from(&argv)?).with_context(|| format!("demo part {system}"))?;
            let dir = std::fs::read_dir(&out)?.next().context("the run folder it wrote")??.path();
            let summary: serde_json::Value = serde_json::from_str(
                &std::fs::read_to_string(dir.join("summary.json")).context("its summary.json")?,
            )?;
            let v = &summary[key];
            let shown = match v.as_f64() {
                Some(x) if x.abs() < 1e-3 && x != 0.0 => format!("{x:.3e}"),
                Some(x) => format!("{x:.4}"),
                None => v.to_string(),
            };
            report.push((
                system.to_string(),
                format!("{what}: {shown}"),
                dir.display().to_string(),
            ));
        }
        Ok(())
    })();
    root.finish(parts.as_ref().err().map(|e| format!("{e:#}")).as_deref())?;
    parts?;
    println!(
        "\n== Kestrel demo: every system on its embedded default ({:.0} s) ==",
        t0.elapsed().as_secs_f64()
    );
    for (system, figure, dir) in &report {
        println!("{system:<6} {figure}\n       {dir}");
    }
    Ok(())
}
