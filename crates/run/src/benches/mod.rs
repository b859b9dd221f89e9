//! The benches: each system's hot paths timed (`kestrel <system> bench`, the
//! `tools/compare/*.py` side-by-side scripts, `BENCHMARKS.md`). Each is one [`Bench`]: a config
//! (serde, a doc comment per field, so every key is a flag of its command as a run's are) and a
//! function that times and reports, built from the algorithm crates' `bench` modules. A bench
//! writes no folder: it prints lines for a person or JSON for a script.
//!
//! Adding a bench: one file here with its `impl Bench`, one line in the CLI's commands.

use crate::base::RunError;
use kestrel_core::Documented;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub mod actdyn;
pub mod allo;
pub mod arc;
pub mod evo;
pub mod hunt;
pub mod mppi;
pub mod nn;

/// One bench: its config and what it times.
pub trait Bench {
    /// The command that runs it (`evo bench`).
    const COMMAND: &'static str;
    /// The config; its `Default` is the workload `BENCHMARKS.md` reports.
    type Config: Serialize + DeserializeOwned + Default + Documented;
    /// Times the workload `c` names (a bad value is refused before any timing).
    fn run(c: &Self::Config) -> Result<Report, RunError>;
}

/// What a bench measured: lines for a person, and JSON objects for a script (`--json` prints
/// them one per line).
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The human-readable table.
    pub text: Vec<String>,
    /// The same numbers as JSON objects.
    pub json: Vec<Value>,
}

impl Report {
    /// A report of one line and one object.
    pub fn one(text: String, json: Value) -> Report {
        Report { text: vec![text], json: vec![json] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `B` on a tiny workload, from a TOML table as the CLI's flags give it: its JSON objects.
    fn tiny<B: Bench>(toml: &str) -> Vec<Value> {
        let layer: toml::Table = toml::from_str(toml).unwrap();
        let c: B::Config =
            crate::config::load_config(&B::Config::default(), None, layer, &[]).unwrap();
        let r = B::run(&c).unwrap_or_else(|e| panic!("{}: {e}", B::COMMAND));
        assert!(!r.text.is_empty(), "{}: no table", B::COMMAND);
        r.json
    }

    /// The numbers `tools/compare/*.py` and `before_after.py` read, under the names they read,
    /// finite, from every bench (a rename or a lost field would break those scripts).
    #[test]
    fn every_bench_reports_the_fields_the_scripts_read() {
        let has = |v: &Value, fields: &[&str], what: &str| {
            for f in fields {
                let x = v[f].as_f64().unwrap_or_else(|| panic!("{what}: no number {f:?} in {v}"));
                assert!(x.is_finite() && x >= 0.0, "{what}: {f} = {x}");
            }
        };
        let evo = tiny::<evo::EvoBench>("num_dims = [3, 5]\ngenerations = 2\npop_size = 8");
        assert_eq!(evo.len(), 2, "one object per size");
        has(&evo[1], &["gen_us", "ask_us", "eval_us", "tell_us", "best", "num_dims"], "evo");
        let neuro = tiny::<evo::EvoBench>("neuro = true\npop_size = 4\ngenerations = 1");
        has(&neuro[0], &["neuro_ms_1_thread", "neuro_ms_2_threads", "speedup"], "neuro");
        let m = tiny::<mppi::MppiBench>("num_samples = 20\nhorizon = 3\ncommands = 2");
        has(&m[0], &["us_per_command"], "mppi");
        let t = tiny::<mppi::MppiBench>("tune_pop = 4\ntune_generations = 1");
        has(&t[0], &["us_per_candidate_episode", "best_cost", "seconds"], "mppi tune");
        let a = tiny::<allo::AlloBench>("steps = 2\nbatch_size = 32");
        has(&a[0], &["step_dedup_us", "step_plain_us", "sample_us"], "allo");
        let x = tiny::<allo::AlloBench>(
            "profile = \"asymexp\"\nsteps = 2\nbatch_size = 16\nnum_envs = 4\nnum_steps = 50",
        );
        has(&x[0], &["update_ms", "sample_ms", "step_ms", "collect_s"], "allo asymexp");
        let h = tiny::<hunt::HuntBench>("reps = 1");
        has(&h[0], &["iqn_update_us", "gemm_only_us", "act_us", "turn_us"], "hunt");
        let n = tiny::<nn::NnBench>(
            "sizes = [4, 8, 2]\nbatch_size = 4\nnum_models = 2\nseconds = 0.01",
        );
        has(&n[0], &["train_us", "train_many_us", "forward_b1_us"], "nn");
        let d = tiny::<actdyn::ActdynBench>("reps = 1\nthreads = 1");
        has(&d[0], &["train_mlp_ms", "train_rbf_ms", "planner_ms", "env_belief_us"], "actdyn");
        let r = tiny::<arc::ArcBench>(
            "num_envs = [2]\nseconds = 0.01\nno_ops = true\n[env]\ntasks_per_family = 1",
        );
        has(&r[0]["batches"][0], &["steps_per_s", "num_envs"], "arc");
        assert_eq!(r[0]["ops_ns"].as_array().map(Vec::len), Some(0), "no_ops");
    }

    /// Every bench's defaults print as TOML and read back as the defaults (a `--config` file
    /// of them is the default workload), and an unknown key is refused with the closest one.
    #[test]
    fn defaults_round_trip_and_unknown_keys_are_named() {
        fn round_trip<B: Bench>()
        where
            B::Config: PartialEq + std::fmt::Debug,
        {
            let d = B::Config::default();
            let table = crate::config::to_table(&d).unwrap();
            let back: B::Config =
                crate::config::load_config(&B::Config::default(), None, table, &[]).unwrap();
            assert_eq!(back, d, "{}", B::COMMAND);
        }
        round_trip::<arc::ArcBench>();
        round_trip::<evo::EvoBench>();
        round_trip::<mppi::MppiBench>();
        round_trip::<allo::AlloBench>();
        round_trip::<hunt::HuntBench>();
        round_trip::<actdyn::ActdynBench>();
        round_trip::<nn::NnBench>();
        let e = crate::config::load_config(
            &evo::EvoBenchConfig::default(),
            None,
            toml::from_str("num_dim = [3]").unwrap(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("num_dims"), "{e}");
    }
}
