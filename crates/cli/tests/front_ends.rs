//! Every run kind gives the same run from every front end: the CLI (its config written by
//! `kestrel config KIND` and fed back with `--config`), a sweep cell over the same keys, and
//! the registry call the Python package makes (`RunKind::launch`). Compared: every
//! `metrics.jsonl` value and every `summary.json` number, except wall-clock figures.

use kestrel_run::sweep::Sweep;
use kestrel_run::{Launch, Layers, RunKind};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tiny config per kind (a few seconds in all on 2 cores); a kind that reads another run's
/// folder gets one made under `root`.
fn tiny(kind: RunKind, root: &Path) -> String {
    let text = match kind.name() {
        "evo" => "problem = \"sphere\"\nnum_dims = 3\ngenerations = 6",
        "qd" => "num_dims = 4\ngenerations = 3\nbatch_size = 8\ncells = 5\nnum_emitters = 2",
        "mppi-run" => "steps = 6\n[mppi]\nnum_samples = 32",
        "mppi-tune" => "generations = 2\npop_size = 4\n[run]\nsteps = 5",
        "mppi-qd" => "generations = 2\nbatch_size = 4\n[run]\nsteps = 4",
        "allo" => {
            "map = \"builtin:rooms-2-5\"\nnum_samples = 500\nlearner.batch_size = 16\nlearner.num_eigenvectors = 3\nsteps = 6\neval_every = 2"
        }
        "allo-asymexp" => {
            "map = \"builtin:rooms-2-3\"\nnum_samples = 800\nnum_envs = 20\nmax_episode_length = 40\nsteps = 6\neval_every = 2\n[learner]\nbatch_size = 16\nhidden = [16]\nnum_eigenvectors = 3"
        }
        "hunt" => {
            "epochs = 2\nenv.height = 9\nenv.width = 9\nenv.max_turns = 12\nagent.layer = 16\nagent.batch_size = 8\nagent.capacity = 64\nenv.num_agents = 2\nrecord_every = 0"
        }
        "actdyn" => "steps = 40\n[eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5",
        "actdyn-compare" => {
            "num_seeds = 2\n[base]\nsteps = 30\n[base.policy]\nnum_samples = 8\nnum_elites = 4\niterations = 2\n[base.eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5"
        }
        "arc-rollout" => {
            "episodes = 3\n[env]\ncanvas = 10\ntasks_per_family = 1\nmax_episode_steps = 20"
        }
        "arc-replay" => {
            let src = source_run(
                RunKind::of::<kestrel_run::runs::arc_rollout::ArcRollout>(),
                &tiny(RunKind::of::<kestrel_run::runs::arc_rollout::ArcRollout>(), root),
                root,
            );
            let traces = src.join("episodes.jsonl");
            return format!("traces = \"{}\"\n[env]\ncanvas = 10", traces.display());
        }
        "hunt-play" => {
            let src = source_run(
                RunKind::of::<kestrel_run::runs::hunt::Hunt>(),
                &tiny(RunKind::of::<kestrel_run::runs::hunt::Hunt>(), root),
                root,
            );
            return format!("run = \"{}\"\nepochs = 2", src.display());
        }
        "actdyn-retrain" => {
            let actdyn = format!(
                "save_every = 20\n{}",
                tiny(RunKind::of::<kestrel_run::runs::actdyn::Actdyn>(), root)
            );
            let src = source_run(RunKind::of::<kestrel_run::runs::actdyn::Actdyn>(), &actdyn, root);
            return format!(
                "run = \"{}\"\n[offline]\nepochs = 2\nchunk = 20\nbatch_size = 2",
                src.display()
            );
        }
        other => panic!("no tiny config for `{other}`: add one"),
    };
    text.to_string()
}

/// A finished run of `kind` under `config` in its own folder under `root`, for the kinds that
/// read one.
fn source_run(kind: RunKind, config: &str, root: &Path) -> PathBuf {
    let out = root.join(format!("source-{kind}"));
    let mut p = kestrel_run::quiet;
    let l = Launch { out_dir: out.clone(), argv: vec!["test".into()], progress: &mut p };
    let table: toml::Table = config.parse().unwrap();
    kind.launch(Layers::table(&table), None, l).unwrap().dir
}

/// Wall-clock figures differ between any two runs; everything else must not.
fn timeless(key: &str) -> bool {
    !["wall", "per_second", "ms_per", "seconds", "commit"].iter().any(|w| key.contains(w))
}

/// `metrics.jsonl` without its wall-clock columns, and `summary.json`'s other entries.
fn figures(dir: &Path) -> (Vec<Value>, Vec<(String, Value)>) {
    let lines = kestrel_run::read_metrics(&dir.join("metrics.jsonl")).unwrap();
    let lines = lines
        .into_iter()
        .map(|mut l| {
            if let Some(o) = l.as_object_mut() {
                o.retain(|k, _| timeless(k));
            }
            l
        })
        .collect();
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    let summary = s
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| timeless(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    (lines, summary)
}

fn only_folder(dir: &Path) -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("record.json").is_file())
        .collect();
    assert_eq!(found.len(), 1, "{}: {found:?}", dir.display());
    found.pop().unwrap()
}

#[test]
fn every_kind_runs_the_same_from_the_cli_a_sweep_cell_and_the_registry() {
    let root = std::env::temp_dir().join(format!("kestrel-front-ends-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    for &kind in RunKind::ALL {
        let name = kind.name();
        let table: toml::Table = tiny(kind, &root).parse().unwrap();
        // The CLI: the config `kestrel config` prints for these keys, fed back with --config.
        let cfg = root.join(format!("{name}.toml"));
        let mut sets = Vec::new();
        for (k, v) in flatten(&table, "") {
            sets.extend(["--set".to_string(), format!("{k}={v}")]);
        }
        let printed = Command::new(env!("CARGO_BIN_EXE_kestrel"))
            .args(["config", name])
            .args(&sets)
            .output()
            .unwrap();
        assert!(printed.status.success(), "{}", String::from_utf8_lossy(&printed.stderr));
        std::fs::write(&cfg, &printed.stdout).unwrap();
        let cli_out = root.join(format!("cli-{name}"));
        let mut args: Vec<String> = kind.command().split(' ').map(str::to_string).collect();
        args.extend(["--config".into(), cfg.display().to_string()]);
        args.extend(["--out-dir".into(), cli_out.display().to_string()]);
        let o = Command::new(env!("CARGO_BIN_EXE_kestrel")).args(&args).output().unwrap();
        assert!(o.status.success(), "{name}: {}", String::from_utf8_lossy(&o.stderr));
        let cli = figures(&only_folder(&cli_out));
        // The registry call the Python package makes (kestrel.run(kind, dict)).
        let reg_out = root.join(format!("registry-{name}"));
        let mut p = kestrel_run::quiet;
        let l = Launch { out_dir: reg_out.clone(), argv: vec!["test".into()], progress: &mut p };
        let pool = kestrel_run::pool(Some(2)).unwrap();
        pool.install(|| kind.launch(Layers::table(&table), None, l)).unwrap();
        let reg = figures(&only_folder(&reg_out));
        // A sweep cell with the same keys as its base.
        let spec = format!("kind = \"{name}\"\nname = \"s\"\nseeds = [{}]\n[base]\n", seed(kind));
        let spec = spec + &base_table(&table);
        let s = Sweep::plan(&spec, "spec.toml", &root.join(format!("sweep-{name}"))).unwrap();
        s.create().unwrap();
        let mut p = kestrel_run::quiet;
        let l = Launch { out_dir: PathBuf::new(), argv: vec!["test".into()], progress: &mut p };
        let cell = pool.install(|| s.run_cell(&s.cells[0], l)).unwrap();
        let sweep = figures(cell.dir());
        assert!(!cli.0.is_empty() && !cli.1.is_empty(), "{name}: nothing to compare");
        assert_eq!(cli, reg, "{name}: the CLI and the registry differ");
        assert_eq!(cli, sweep, "{name}: the CLI and a sweep cell differ");
    }
    std::fs::remove_dir_all(&root).unwrap();
}

/// The default seed of `kind` (a sweep sets the seed itself).
fn seed(kind: RunKind) -> u64 {
    let mut at = kind.resolve(Layers::none()).unwrap();
    for k in kind.seed_key() {
        at = at[k].clone();
    }
    at.as_u64().unwrap()
}

/// `(dotted key, value)` of every leaf of a table.
fn flatten(t: &toml::Table, prefix: &str) -> Vec<(String, toml::Value)> {
    t.iter()
        .flat_map(|(k, v)| {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                toml::Value::Table(sub) => flatten(sub, &key),
                v => vec![(key, v.clone())],
            }
        })
        .collect()
}

/// A table as the `[base]` section of a sweep spec (nested tables as `[base.x]`).
fn base_table(t: &toml::Table) -> String {
    let mut wrapped = toml::Table::new();
    wrapped.insert("base".into(), toml::Value::Table(t.clone()));
    toml::to_string(&wrapped).unwrap().replacen("[base]\n", "", 1)
}
