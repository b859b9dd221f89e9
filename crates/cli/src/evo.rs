//! `kestrel evo run | qd | bench`: flags into the registry's configs; the runs are
//! `kestrel_run::runs::{es, qd}`.

use crate::common::{RunArgs, pool};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use kestrel_run::runs::{es::Es, qd::Qd};
use serde_json::json;

#[derive(Subcommand)]
pub enum EvoCmd {
    /// Minimise a benchmark function (or evolve a CartPole policy) with an evolution strategy.
    Run(RunArgs<Es>),
    /// Quality diversity on the linear-projection benchmark.
    Qd(RunArgs<Qd>),
    /// Time one generation per phase (ask, evaluate, tell) of CMA-ES.
    Bench(BenchArgs),
}

#[derive(Args)]
pub struct BenchArgs {
    /// Dimensions to time.
    #[arg(long, value_delimiter = ',', default_value = "10,100")]
    num_dims: Vec<usize>,
    /// Population size.
    #[arg(long, default_value_t = 64)]
    pop_size: usize,
    /// Generations per size.
    #[arg(long, default_value_t = 300)]
    generations: u64,
    /// cma-es or sep-cma-es.
    #[arg(long, default_value = "cma-es")]
    strategy: String,
    /// Decompose C every generation (evosax's behaviour) instead of lazily.
    #[arg(long)]
    eager_eigen: bool,
    /// Print one JSON object per size.
    #[arg(long)]
    json: bool,
    /// Instead: time one neuroevolution generation (CartPole MLP, population `pop_size`) on 1
    /// and 2 threads and check the fitness is identical.
    #[arg(long)]
    neuro: bool,
}

fn neuro_bench(a: &BenchArgs) -> Result<()> {
    let t =
        kestrel_evo::bench::neuro(&[pool(Some(1))?, pool(Some(2))?], a.pop_size, a.generations)?;
    let speedup = t.ms[0] / t.ms[1];
    if a.json {
        println!(
            "{}",
            json!({"neuro_ms_1_thread": t.ms[0], "neuro_ms_2_threads": t.ms[1], "speedup": speedup, "identical": t.identical, "generations_timed": t.generations})
        );
    } else {
        println!(
            "neuroevolution generation, CartPole-v1, MLP 4-8-2 ({} weights), pop {}, 2 episodes each, {} generations timed{}:\n  1 thread {:.2} ms, 2 threads {:.2} ms: {speedup:.2}x, fitness identical: {}",
            t.num_dims,
            a.pop_size,
            t.generations,
            if t.generations < a.generations { " (the most it times)" } else { "" },
            t.ms[0],
            t.ms[1],
            t.identical
        );
    }
    if !t.identical {
        bail!("fitness differs between 1 and 2 threads");
    }
    Ok(())
}

pub fn bench(a: BenchArgs) -> Result<()> {
    if a.neuro {
        return neuro_bench(&a);
    }
    let sep = match a.strategy.as_str() {
        "cma-es" => false,
        "sep-cma-es" => true,
        other => bail!("--strategy {other:?}: accepted are cma-es, sep-cma-es"),
    };
    if !a.json {
        let eigen = match (sep, a.eager_eigen) {
            (false, true) => ", eager eigendecomposition",
            (false, false) => ", lazy eigendecomposition",
            _ => "",
        };
        println!(
            "{} on sphere, pop {}, one thread, {} generations{eigen}",
            a.strategy, a.pop_size, a.generations
        );
        println!(
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "dims", "ask µs", "eval µs", "tell µs", "gen µs", "best"
        );
    }
    let pool = pool(Some(1))?;
    for &n in &a.num_dims {
        let t = pool.install(|| {
            kestrel_evo::bench::cma_phases(sep, a.pop_size, n, a.generations, a.eager_eigen)
        })?;
        let gen_us = t.ask_us + t.eval_us + t.tell_us;
        if a.json {
            println!(
                "{}",
                json!({"strategy": a.strategy, "num_dims": n, "pop_size": a.pop_size, "ask_us": t.ask_us,
                       "eval_us": t.eval_us, "tell_us": t.tell_us, "gen_us": gen_us, "best": t.best})
            );
        } else {
            println!(
                "{n:>6} {:>12.1} {:>12.1} {:>12.1} {gen_us:>12.1} {:>12.3e}",
                t.ask_us, t.eval_us, t.tell_us, t.best
            );
        }
    }
    Ok(())
}
