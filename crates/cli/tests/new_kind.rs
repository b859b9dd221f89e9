//! A new run kind is its file and its line in the registry: the CLI's subcommand (its help,
//! its flags from the config's keys, `--config`, `--set`, the errors before any folder) comes
//! from the kind itself. Proved with `test-count`, a kind that exists only in this file and
//! reaches the CLI by being added to the registry's list (`main_with_kinds`), as its line in
//! `RunKind::ALL` would add it.

use kestrel_core::{Budget, Invalid};
use kestrel_run::{
    Launch, Layers, Outcome, Outputs, Run, RunError, RunKind, Summary, finish, read_metrics, start,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// `kestrel test count`'s config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
struct CountConfig {
    /// How many steps to count (1 to 1000).
    steps: u64,
    /// What each step adds.
    step_size: f64,
    /// Seed (the folder's name).
    seed: u64,
}

/// The `test-count` run kind: counts, logging each step.
struct Count;

impl Run for Count {
    const NAME: &'static str = "test-count";
    const COMMAND: &'static str = "test count";
    const ABOUT: &'static str = "Counts to `steps` (a kind that exists only in a test).";
    const METRICS: &'static [&'static str] = &["total"];
    const CURVE: &'static str = "value";
    type Config = CountConfig;

    fn defaults(_: Option<&CountConfig>) -> CountConfig {
        CountConfig { steps: 3, step_size: 1.0, seed: 0 }
    }

    fn validate(c: &CountConfig) -> Result<(), RunError> {
        if !(1..=1000).contains(&c.steps) {
            return Err(Invalid::new("steps", c.steps, "1 to 1000").into());
        }
        Ok(())
    }

    fn outputs(_: &CountConfig) -> Outputs {
        Outputs::new(&["total"], &["value"])
    }

    fn budget(_: &CountConfig, _: usize) -> Budget {
        Budget::new()
    }

    fn run(c: CountConfig, _: Option<&Path>, launch: Launch<'_>) -> Result<Outcome, RunError> {
        let (dir, mut metrics) = start(&launch, "test", "count", c.seed, &c)?;
        let r = (|| {
            let mut total = 0.0;
            for step in 1..=c.steps {
                total += c.step_size;
                metrics.log(step, serde_json::json!({ "value": total }))?;
            }
            metrics.finish()?;
            Summary::new("count").value("total", "total", total).write(dir.path())?;
            Ok(format!("counted to {total}"))
        })();
        finish(dir, r)
    }
}

fn kinds() -> Vec<RunKind> {
    RunKind::ALL.iter().copied().chain([RunKind::of::<Count>()]).collect()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-new-kind-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn argv(args: &[&str]) -> Vec<String> {
    std::iter::once("kestrel").chain(args.iter().copied()).map(str::to_string).collect()
}

#[test]
fn a_kind_added_to_the_list_is_a_command_with_its_keys_as_flags() {
    let kinds = kinds();
    let root = kestrel_cli::command(&kinds);
    let test = root.find_subcommand("test").expect("the kind's area");
    let count = test.find_subcommand("count").expect("the kind's verb");
    assert_eq!(count.get_about().unwrap().to_string(), Count::ABOUT.trim_end_matches('.'));
    let longs: Vec<&str> = count.get_arguments().filter_map(|a| a.get_long()).collect();
    for flag in ["steps", "step-size", "seed", "config", "set", "out-dir", "threads"] {
        assert!(longs.contains(&flag), "no --{flag} in {longs:?}");
    }
    assert!(!longs.contains(&"resume"), "not resumable, so no --resume");

    // Run from the command line: flags, a --set, into its folder.
    let out = tmp("run");
    let o = out.to_string_lossy();
    let args = ["test", "count", "--steps", "4", "--step-size", "0.5", "--out-dir", &o];
    assert_eq!(kestrel_cli::main_with_kinds(argv(&args), &kinds), 0);
    let folders: Vec<PathBuf> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    let dir = &folders[0];
    assert!(dir.file_name().unwrap().to_string_lossy().starts_with("test-count-s0-"));
    let values: Vec<f64> = read_metrics(&dir.join("metrics.jsonl"))
        .unwrap()
        .iter()
        .map(|l| l["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values, [0.5, 1.0, 1.5, 2.0]);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["total"], 2.0);
    // Its config.toml, fed back with --config and a --set, runs again.
    let config = dir.join("config.toml");
    let c = config.to_string_lossy();
    let args = ["test", "count", "--config", &c, "--set", "steps=2", "--out-dir", &o];
    assert_eq!(kestrel_cli::main_with_kinds(argv(&args), &kinds), 0);
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 2);

    // A bad value and a misspelt key are refused before any folder exists.
    let bad = tmp("bad");
    let b = bad.to_string_lossy();
    for args in [
        ["test", "count", "--steps", "0", "--out-dir", &b],
        ["test", "count", "--set", "step=2", "--out-dir", &b],
    ] {
        assert_eq!(kestrel_cli::main_with_kinds(argv(&args), &kinds), 1, "{args:?}");
        assert!(!bad.exists(), "{args:?} made {}", bad.display());
    }
    // Without its line in the list, there is no such command.
    let args = ["test", "count", "--out-dir", &b];
    assert_eq!(kestrel_cli::main_with(argv(&args)), 1);
    assert!(!bad.exists());
    std::fs::remove_dir_all(&out).unwrap();
}

/// The registry's other front-end calls (what `kestrel config` prints, the sweep's defaults,
/// the checks) reach the kind through its handle too.
#[test]
fn the_kinds_handle_serves_the_registry_calls() {
    let kind = RunKind::of::<Count>();
    assert_eq!((kind.name(), kind.command()), ("test-count", "test count"));
    let text = kind.config_toml(Layers::none()).unwrap();
    assert!(text.contains("# How many steps to count (1 to 1000).\nsteps = 3"), "{text}");
    assert_eq!((kind.default_metrics(), kind.default_curve()), (&["total"][..], "value"));
    let t: toml::Table = "steps = 5000".parse().unwrap();
    let e = kind.check(Layers::table(&t), "cell 3").unwrap_err().to_string();
    assert!(e.contains("steps") && e.contains("5000") && e.contains("1 to 1000"), "{e}");
    let found = RunKind::find(&kinds(), "test-cuont").unwrap_err().to_string();
    assert!(found.contains("did you mean `test-count`"), "{found}");
    assert!(RunKind::from_name("test-count").is_err(), "not in the registry's own list");
}
