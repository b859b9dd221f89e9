//! `kestrel evo bench`: one generation of any strategy split into ask, evaluate and tell
//! (`kestrel_evo::bench::strategy_phases`; CMA-ES's with its eigendecomposition choice,
//! `cma_phases`), or one neuroevolution generation on 1 and 2 threads.

use super::{Bench, Report};
use crate::base::RunError;
use kestrel_evo::StrategyKind;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// `kestrel evo bench`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(default, deny_unknown_fields)]
pub struct EvoBenchConfig {
    /// Dimensions to time, one line (one JSON object) each.
    pub num_dims: Vec<usize>,
    /// Population size.
    pub pop_size: usize,
    /// Generations per size.
    pub generations: u64,
    /// Any strategy (Kestrel's name or evosax's), on the sphere from x = 1, σ 0.3, one thread.
    pub strategy: StrategyKind,
    /// Decompose C every generation (evosax's behaviour) instead of lazily.
    pub eager_eigen: bool,
    /// The learned strategies' weights: evosax's checkpoint file (a run's
    /// `params.params_path`; evosax's defaults are in its `algorithms/ckpt`).
    pub params_path: Option<String>,
    /// Instead: time one neuroevolution generation (CartPole MLP, population `pop_size`) on 1
    /// and 2 threads and check the fitness is identical.
    pub neuro: bool,
}

impl Default for EvoBenchConfig {
    fn default() -> Self {
        EvoBenchConfig {
            num_dims: vec![10, 100],
            pop_size: 64,
            generations: 300,
            strategy: StrategyKind::CmaEs,
            eager_eigen: false,
            params_path: None,
            neuro: false,
        }
    }
}

/// The `evo bench` bench.
pub struct EvoBench;

impl Bench for EvoBench {
    const COMMAND: &'static str = "evo bench";
    type Config = EvoBenchConfig;

    fn run(c: &EvoBenchConfig) -> Result<Report, RunError> {
        if c.neuro {
            return neuro(c);
        }
        let sep = match c.strategy {
            StrategyKind::CmaEs => Some(false),
            StrategyKind::SepCmaEs => Some(true),
            _ if c.eager_eigen => {
                let e = kestrel_core::Invalid::new(
                    "eager_eigen",
                    true,
                    "false for strategies other than cma-es and sep-cma-es",
                );
                return Err(e.into());
            }
            _ => None,
        };
        let name = c.strategy.name();
        let eigen = match (sep, c.eager_eigen) {
            (Some(false), true) => ", eager eigendecomposition",
            (Some(false), false) => ", lazy eigendecomposition",
            _ => "",
        };
        let mut r = Report::default();
        r.text.push(format!(
            "{name} on sphere, pop {}, one thread, {} generations{eigen}",
            c.pop_size, c.generations
        ));
        r.text.push(format!(
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "dims", "ask µs", "eval µs", "tell µs", "gen µs", "best"
        ));
        let pool = crate::base::pool(Some(1))?;
        for &n in &c.num_dims {
            let t = pool.install(|| match sep {
                Some(sep) => {
                    kestrel_evo::bench::cma_phases(sep, c.pop_size, n, c.generations, c.eager_eigen)
                }
                None => {
                    let params = kestrel_evo::StrategyParams {
                        params_path: c.params_path.clone(),
                        ..Default::default()
                    };
                    kestrel_evo::bench::strategy_phases(
                        c.strategy,
                        &params,
                        c.pop_size,
                        n,
                        c.generations,
                    )
                }
            })?;
            let gen_us = t.ask_us + t.eval_us + t.tell_us;
            r.text.push(format!(
                "{n:>6} {:>12.1} {:>12.1} {:>12.1} {gen_us:>12.1} {:>12.3e}",
                t.ask_us, t.eval_us, t.tell_us, t.best
            ));
            r.json.push(json!({"strategy": name, "num_dims": n, "pop_size": c.pop_size,
                "ask_us": t.ask_us, "eval_us": t.eval_us, "tell_us": t.tell_us, "gen_us": gen_us,
                "best": t.best}));
        }
        Ok(r)
    }
}

/// One neuroevolution generation on 1 and 2 threads; an error if the fitness differs.
fn neuro(c: &EvoBenchConfig) -> Result<Report, RunError> {
    let t = kestrel_evo::bench::neuro(
        &[crate::base::pool(Some(1))?, crate::base::pool(Some(2))?],
        c.pop_size,
        c.generations,
    )?;
    if !t.identical {
        return Err(RunError::Failed("fitness differs between 1 and 2 threads".into()));
    }
    let speedup = t.ms[0] / t.ms[1];
    let text = format!(
        "neuroevolution generation, CartPole-v1, MLP 4-8-2 ({} weights), pop {}, 2 episodes each, {} generations timed{}:\n  1 thread {:.2} ms, 2 threads {:.2} ms: {speedup:.2}x, fitness identical",
        t.num_dims,
        c.pop_size,
        t.generations,
        if t.generations < c.generations { " (the most it times)" } else { "" },
        t.ms[0],
        t.ms[1],
    );
    let json = json!({"neuro_ms_1_thread": t.ms[0], "neuro_ms_2_threads": t.ms[1],
        "speedup": speedup, "identical": t.identical, "generations_timed": t.generations});
    Ok(Report::one(text, json))
}
