//! The bad-input corpus: every case runs the `kestrel` binary on one bad input and must end
//! with exit code 1 and a message naming the field or file, never a panic, an abort or a hang,
//! and never leave a run folder behind. Files live in `tests/bad/`; large inputs are made
//! here at run time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp() -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-bad-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn bad(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad").join(name).display().to_string()
}

/// Runs `args` with a 60 s limit; returns (exit code, stderr) or an error naming a hang.
fn run(args: &[String], out_dir: &Path) -> Result<(i32, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kestrel"))
        .args(args)
        .current_dir(out_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            let mut err = String::new();
            child.stderr.take().unwrap().read_to_string(&mut err).map_err(|e| e.to_string())?;
            return Ok((status.code().unwrap_or(-1), err));
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            return Err("hung (killed after 60 s)".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// (command line, a word the message must contain).
fn corpus(dir: &Path) -> Vec<(String, String)> {
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let big_map = write("huge-map.txt", &"#".repeat(3_000_000));
    let trace_wrap = write(
        "wrap.jsonl",
        "{\"task\": \"symmetry-0\", \"actions\": [{\"op\": 1, \"bbox\": [0, 0, 4294967296, 1]}]}\n",
    );
    let trace_op =
        write("op.jsonl", "{\"task\": \"symmetry-0\", \"actions\": [{\"op\": \"x\"}]}\n");
    let trace_pair =
        write("pair.jsonl", "{\"task\": \"symmetry-0\", \"pair\": 99, \"actions\": []}\n");
    let trace_mask = write(
        "mask.jsonl",
        "{\"task\": \"symmetry-0\", \"actions\": [{\"op\": 1, \"mask\": [[0, 2]]}]}\n",
    );
    let trace_op99 =
        write("op99.jsonl", "{\"task\": \"symmetry-0\", \"actions\": [{\"op\": 99}]}\n");
    let trace_task = write("task.jsonl", "{\"pair\": 0, \"actions\": []}\n");
    let trace_json = write("json.jsonl", "{not json\n");
    let script_bad = write("script.json", "[{\"op\": 1, \"point\": [1]}]");
    let script_notlist = write("script2.json", "{\"op\": 1}");
    let cfg_typo = write("typo.toml", "generatoins = 5\n");
    let cfg_syntax = write("syntax.toml", "generations = = 5\n");
    let cfg_type = write("type.toml", "generations = \"many\"\n");
    let cfg_nested = write("nested.toml", "[mppi]\nlamda = 1.0\n");
    let mut cases: Vec<(String, &str)> = vec![
        // evo run
        ("evo run --num-dims 0".into(), "num_dims"),
        ("evo run --num-dims 200000".into(), "num_dims"),
        ("evo run --pop-size 100000000".into(), "pop_size"),
        ("evo run --pop-size 1".into(), "pop_size"),
        ("evo run --sigma nan".into(), "sigma"),
        ("evo run --sigma=-1".into(), "sigma"),
        ("evo run --sigma inf".into(), "sigma"),
        ("evo run --sigma 0".into(), "sigma"),
        ("evo run --set x0=nan".into(), "x0"),
        ("evo run --set x0=inf".into(), "x0"),
        ("evo run --set shift=inf".into(), "shift"),
        ("evo run --set shift=-1".into(), "shift"),
        ("evo run --set target=nan".into(), "target"),
        ("evo run --set strategy=\"nope\"".into(), "nope"),
        ("evo run --strategy cmaes".into(), "cmaes"),
        ("evo run --problem spherez".into(), "spherez"),
        ("evo run --set bounds=[1.0,0.0]".into(), "bounds"),
        ("evo run --set bounds=[nan,1.0]".into(), "bounds"),
        ("evo run --set bound_mode=\"wrap\"".into(), "wrap"),
        ("evo run --set unknown_key=1".into(), "unknown_key"),
        ("evo run --set generations=-5".into(), "generations"),
        ("evo run --set seed=-1".into(), "seed"),
        ("evo run --set num_dims=1.5".into(), "num_dims"),
        ("evo run --set generations".into(), "KEY=VALUE"),
        ("evo run --set =3".into(), "empty"),
        (format!("evo run --config {cfg_typo}"), "generatoins"),
        (format!("evo run --config {cfg_syntax}"), "syntax.toml"),
        (format!("evo run --config {cfg_type}"), "generations"),
        ("evo run --config /nonexistent/config.toml".into(), "/nonexistent/config.toml"),
        ("evo run --generations x".into(), "generations"),
        ("evo run --threads 100000".into(), "threads"),
        ("evo run --threads 0".into(), "threads = 0"),
        ("arc bench --threads 0 --no-ops".into(), "threads = 0"),
        // evo qd
        ("evo qd --set sigma=nan".into(), "sigma"),
        ("evo qd --set sigma=0".into(), "sigma"),
        ("evo qd --set cells=0".into(), "cells"),
        ("evo qd --set cells=100000".into(), "cells"),
        ("evo qd --num-dims 1".into(), "num_dims"),
        ("evo qd --set batch_size=0".into(), "batch_size"),
        ("evo qd --set num_emitters=0".into(), "num_emitters"),
        ("evo qd --archive hex".into(), "hex"),
        ("evo qd --emitter foo".into(), "foo"),
        ("evo qd --set function=\"x\"".into(), "function"),
        ("evo qd --set cellz=3".into(), "cellz"),
        // evo bench
        ("evo bench --generations 0".into(), "generations"),
        ("evo bench --num-dims 0".into(), "num_dims"),
        ("evo bench --pop-size 0".into(), "pop_size"),
        ("evo bench --strategy xnes --eager-eigen".into(), "eager_eigen"),
        ("evo bench --strategy EvoTF_ES".into(), "params.params_path"),
        ("evo run --strategy cmaess".into(), "did you mean"),
        (
            "evo run --strategy gesmr-ga --pop-size 10 --set params.num_groups=2".into(),
            "params.num_groups",
        ),
        ("evo bench --num-dims 300000".into(), "num_dims"),
        // mppi run
        ("mppi run --system moon".into(), "moon"),
        ("mppi run --controller lqr".into(), "lqr"),
        ("mppi run --set mppi.lambda=nan".into(), "lambda"),
        ("mppi run --set mppi.lambda=-1".into(), "lambda"),
        ("mppi run --set mppi.num_samples=0".into(), "num_samples"),
        ("mppi run --set mppi.num_samples=100000000".into(), "num_samples"),
        ("mppi run --set mppi.horizon=0".into(), "horizon"),
        ("mppi run --set mppi.noise_sigma=[-1.0]".into(), "noise_sigma"),
        ("mppi run --set mppi.noise_sigma=[1.0,0.0]".into(), "noise_sigma"),
        ("mppi run --set mppi.u_min=[3.0]".into(), "u_min"),
        ("mppi run --set mppi.u_per_command=0".into(), "u_per_command"),
        ("mppi run --set mppi.rollout_samples=0".into(), "rollout_samples"),
        ("mppi run --set mppi.convention=\"numpy\"".into(), "numpy"),
        ("mppi run --set mppi.lamda=1".into(), "lamda"),
        ("mppi run --steps 0".into(), "steps"),
        ("mppi run --controller kmppi --set kmppi.num_support_pts=0".into(), "num_support_pts"),
        ("mppi run --controller kmppi --set kmppi.kernel_sigma=nan".into(), "kernel_sigma"),
        ("mppi run --controller smppi --set smppi.delta_t=nan".into(), "delta_t"),
        ("mppi run --controller smppi --set smppi.action_min=[5.0]".into(), "action_min"),
        (format!("mppi run --config {cfg_nested}"), "lamda"),
        ("mppi run --threads 100000".into(), "threads"),
        // mppi tune
        ("mppi tune --knobs gamma".into(), "gamma"),
        ("mppi tune --strategy nope".into(), "nope"),
        ("mppi tune --pop-size 0".into(), "pop_size"),
        ("mppi tune --pop-size 1".into(), "pop_size"),
        ("mppi tune --set sigma=nan".into(), "sigma"),
        ("mppi tune --steps 0".into(), "steps"),
        ("mppi tune --set knobs=[]".into(), "knobs"),
        ("mppi tune --system moon".into(), "moon"),
        ("mppi tune --set run.mppi.lambda=0".into(), "lambda"),
        // mppi bench
        ("mppi bench --num-samples 0".into(), "num_samples"),
        ("mppi bench --horizon 0".into(), "horizon"),
        ("mppi bench --commands 0".into(), "commands"),
        ("mppi bench --num-samples 100000000".into(), "num_samples"),
        ("mppi bench --threads 100000".into(), "threads"),
        ("mppi bench --tune-pop 2 --tune-generations 0".into(), "tune_generations"),
        // allo train
        ("allo train --eval-every 0".into(), "eval_every"),
        ("allo train --steps 0".into(), "steps"),
        ("allo train --map builtin:maze-499-0".into(), "map"),
        ("allo train --map builtin:spiral-3".into(), "builtin:spiral-3"),
        ("allo train --map /nonexistent/map.txt".into(), "/nonexistent/map.txt"),
        (format!("allo train --map {big_map}"), "huge-map.txt"),
        (format!("allo train --map {}", bad("map-walls.txt")), "map-walls.txt"),
        (format!("allo train --map {}", bad("map-empty.txt")), "map-empty.txt"),
        ("allo train --num-eigenvectors 0".into(), "num_eigenvectors"),
        ("allo train --num-eigenvectors 100".into(), "num_eigenvectors"),
        ("allo train --batch-size 0".into(), "batch_size"),
        ("allo train --num-samples 0".into(), "num_samples"),
        ("allo train --num-samples 100000000000".into(), "num_samples"),
        ("allo train --method gdo".into(), "gdo"),
        ("allo train --set barrier=nan".into(), "barrier"),
        ("allo train --set lr_barrier=-1".into(), "lr_barrier"),
        ("allo train --resume /nonexistent/run".into(), "/nonexistent/run"),
        ("allo train --threads 100000".into(), "threads"),
        // actdyn
        ("actdyn run --steps 0".into(), "steps"),
        ("actdyn run --profile sloppy".into(), "sloppy"),
        ("actdyn run --policy.kind greedy".into(), "greedy"),
        ("actdyn run --preset e9".into(), "e9"),
        ("actdyn run --policy.kind icem".into(), "policy.metric"),
        ("actdyn run --set train.lr=nan".into(), "lr"),
        ("actdyn run --set train.k_steps=40".into(), "k_steps"),
        ("actdyn run --set train.window=0".into(), "window"),
        ("actdyn run --set train.p_mask=1.5".into(), "p_mask"),
        ("actdyn run --set env.dt=-1".into(), "env.dt"),
        ("actdyn run --set env.obs_dim=7".into(), "obs_dim"),
        ("actdyn run --set env.noise_scale=inf".into(), "noise_scale"),
        ("actdyn run --set env.field=\"spiral\"".into(), "spiral"),
        ("actdyn run --set model.rnn_hidden=0".into(), "rnn_hidden"),
        ("actdyn run --set model.obs_dim=100000000 --set env.obs_dim=100000000".into(), "obs_dim"),
        ("actdyn run --set eval.num_samples=100000000".into(), "eval.num_samples"),
        ("actdyn run --set bugs.fisher_off_by_two=true".into(), "fisher_off_by_two"),
        ("actdyn run --preset e2 --set policy.num_elites=100".into(), "elites"),
        ("actdyn run --preset e2 --set policy.horizon=0".into(), "horizon"),
        ("actdyn run --preset e2 --set model.dynamics.grid=1".into(), "grid"),
        ("actdyn run --resume /nonexistent/run".into(), "/nonexistent/run"),
        ("actdyn compare --num-seeds 0".into(), "num_seeds"),
        ("actdyn compare --seed a".into(), "seed"),
        ("actdyn compare --arms random,greedy".into(), "greedy"),
        ("actdyn compare --arms active,active".into(), "each once"),
        ("actdyn compare --set base.policy.horizon=0".into(), "base.policy.horizon"),
        ("actdyn bench --threads 100000".into(), "threads"),
        ("actdyn retrain --run /nonexistent/run".into(), "/nonexistent/run"),
        ("actdyn retrain --run /tmp --epochs 0".into(), "epochs"),
        ("actdyn retrain --run /tmp --lr nan".into(), "offline.lr"),
        // allo bench
        ("allo bench --steps 0".into(), "steps"),
        ("allo bench --batch-size 0".into(), "batch"),
        ("allo bench --map builtin:nope".into(), "builtin:nope"),
        // hunt
        ("hunt train --obs hsv".into(), "hsv"),
        ("hunt train --num-agents 0".into(), "num_agents"),
        ("hunt train --set env.height=2".into(), "height"),
        ("hunt train --set env.vision_radius=9223372036854775807".into(), "vision_radius"),
        ("env bench TreasureHunt-v0 --set vision_radius=200".into(), "vision_radius = 200"),
        ("hunt train --set spawn_prob=nan".into(), "spawn_prob"),
        ("hunt train --set spawn_prob=2".into(), "spawn_prob"),
        ("hunt train --set turns=0".into(), "turns"),
        ("hunt train --num-worlds 0".into(), "worlds"),
        ("hunt train --set agent.layer=0".into(), "agent.layer"),
        ("hunt train --set agent.batch_size=0".into(), "agent.batch_size"),
        ("hunt train --set agent.capacity=0".into(), "agent.capacity"),
        ("hunt train --set n_step=0".into(), "n_step"),
        ("hunt train --updates-per-turn nan".into(), "updates_per_turn"),
        ("hunt train --updates-per-turn=-1".into(), "updates_per_turn"),
        ("hunt train --set order=\"random\"".into(), "random"),
        ("hunt train --resume /nonexistent/run".into(), "/nonexistent/run"),
        ("hunt play --run /nonexistent/run".into(), "/nonexistent/run"),
        ("hunt play --epochs 0".into(), "epochs"),
        ("hunt play".into(), "set `run`"),
        ("hunt bench --reps 0".into(), "reps"),
        ("hunt bench --obs hsv".into(), "hsv"),
        // arc
        ("arc bench --num-envs 0 --no-ops".into(), "num_envs"),
        ("arc bench --num-envs 100000000 --no-ops".into(), "num_envs"),
        ("arc bench --seconds nan --no-ops".into(), "seconds"),
        ("arc bench --seconds=-1 --no-ops".into(), "seconds"),
        ("arc bench --canvas 7".into(), "canvas"),
        ("arc bench --threads 100000".into(), "threads"),
        ("arc bench --data /nonexistent/arc".into(), "/nonexistent/arc"),
        ("arc bench --sel lasso".into(), "lasso"),
        ("arc bench --layout wide".into(), "wide"),
        ("arc bench --mode arcle".into(), "arcle"),
        ("arc bench --families nope".into(), "nope"),
        ("arc bench --max-side 40 --no-ops".into(), "max_side = 40"),
        ("arc bench --difficulty 2 --no-ops".into(), "difficulty = 2"),
        ("arc bench --no-ops maybe".into(), "no_ops"),
        ("arc bench --nums-envs 4".into(), "--num-envs"),
        ("arc show tile-2 --max-side 2".into(), "max_side = 2"),
        ("arc rollout --families tile --max-side 1".into(), "max_side = 1"),
        ("arc show nosuchtask-x".into(), "nosuchtask-x"),
        (format!("arc show bad --data {}", bad("task-colour.json")), "task-colour.json"),
        (format!("arc show bad --data {}", bad("task-notrain.json")), "train"),
        (format!("arc show bad --data {}", bad("task-ragged.json")), "task-ragged.json"),
        (format!("arc show bad --data {}", bad("task-notjson.json")), "task-notjson.json"),
        ("arc replay --traces /nonexistent/trace.jsonl".into(), "/nonexistent/trace.jsonl"),
        ("arc replay".into(), "set `traces`"),
        (format!("arc replay --traces {trace_wrap}"), "bbox"),
        (format!("arc replay --traces {trace_op}"), "op"),
        (format!("arc replay --traces {trace_pair}"), "pair"),
        (format!("arc replay --traces {trace_mask}"), "mask"),
        (format!("arc replay --traces {trace_task}"), "task"),
        (format!("arc replay --traces {trace_op99}"), "op 99"),
        (format!("arc replay --traces {trace_json}"), "not JSON"),
        (format!("arc replay --traces {trace_wrap} --canvas 8"), "canvas"),
        (format!("arc rollout --script {script_bad}"), "point"),
        (format!("arc rollout --script {script_notlist}"), "script2.json"),
        ("arc rollout --script /nonexistent/s.json".into(), "/nonexistent/s.json"),
        ("arc rollout --canvas 7".into(), "canvas"),
        ("arc rollout --max-episode-steps 0".into(), "max_episode_steps"),
        ("arc rollout --sel lasso".into(), "lasso"),
        ("arc rollout --mode o2arc --bugs all".into(), "bugs"),
        ("arc rollout --task nosuchtask-x".into(), "nosuchtask-x"),
        // nn
        ("nn bench --sizes 0,4".into(), "sizes"),
        ("nn bench --batch-size 0".into(), "batch"),
        ("nn bench --num-models 0".into(), "models"),
        ("nn bench --seconds nan".into(), "seconds"),
        ("nn bench --threads 100000".into(), "threads"),
        // demo and the binary itself
        ("demo --seconds nan".into(), "seconds"),
        ("demo --seconds 0".into(), "seconds"),
        ("frobnicate".into(), "frobnicate"),
        ("evo run --no-such-flag".into(), "--no-such-flag"),
    ];
    cases.push(("evo run --set pop_size=-1".into(), "pop_size"));
    // Silent acceptances found by issue 33's probe, and issue 29's.
    cases.push(("actdyn bench --reps 0".into(), "reps = 0"));
    cases.push(("arc show symmetry-0 --cell 0".into(), "--cell"));
    cases.push(("arc show symmetry-0 --cell 100000".into(), "--cell"));
    cases.push(("mppi tune --knobs lambda,lambda".into(), "twice"));
    cases.push(("evo bench --neuro --pop-size 0".into(), "pop_size"));
    cases.push(("evo run --strategy open-es --pop-size 7".into(), "even"));
    cases.push(("evo run --strategy pgpe --pop-size 3".into(), "even"));
    cases.push(("evo run --strategy cma-es --set params.lr=0.1".into(), "params.lr"));
    cases.push(("evo run --set restarts=ipop --strategy snes".into(), "cma-es only"));
    cases.push(("mppi run --set mppi.lamda=0.5".into(), "mppi.lambda"));
    cases.push(("config nosuch".into(), "nosuch"));
    // Issue 33: no folder before validation; messages that say each thing once.
    cases.push(("mppi tune --generations 0".into(), "generations"));
    let binary = dir.join("binary.toml");
    std::fs::write(&binary, [b'a', b' ', b'=', 0xc0, 0xff, 0x00, 0x01]).unwrap();
    cases.push((format!("evo run --config {}", binary.display()), "byte 3 is 0xc0"));
    cases.push(("evo run --config /nonexistent/c.toml".into(), "/nonexistent/c.toml"));
    cases.push(("arc bench --num-envs 0".into(), "num_envs"));
    // A misspelt sweep metric or curve, refused before any cell runs.
    let evo =
        "kind = \"evo\"\nseeds = 2\n[base]\nproblem = \"sphere\"\nnum_dims = 3\ngenerations = 4\n";
    let metric =
        write("metric.toml", &evo.replace("seeds = 2", "seeds = 2\nmetrics = [\"best_fitnes\"]"));
    cases.push((format!("sweep {metric}"), "did you mean `best_fitness`"));
    let curve = write("curve.toml", &evo.replace("seeds = 2", "seeds = 2\ncurve = \"nosuch\""));
    cases.push((format!("sweep {curve}"), "curve: `nosuch`"));
    // Sizes that aborted past the 8 GiB budget (issue 33), now refused from the estimate.
    cases.push(("actdyn run --preset e2 --set policy.horizon=1048576".into(), "policy.horizon"));
    cases.push((
        "actdyn run --set train.ensemble=64 --set model.dynamics.type=\"mlp\" --set model.dynamics.hidden=[4096,4096,4096,4096,4096,4096,4096,4096]".into(),
        "train.ensemble",
    ));
    cases.push((
        "actdyn run --set env.obs_dim=100000 --set model.obs_dim=100000 --set model.rnn_hidden=4096".into(),
        "model.rnn_hidden",
    ));
    cases.push(("hunt train --set capacity=30000000".into(), "capacity"));
    cases.push((
        "mppi run --set mppi.num_samples=10000000 --set mppi.horizon=1000".into(),
        "mppi.num_samples",
    ));
    cases.into_iter().map(|(c, w)| (c, w.to_string())).collect()
}

/// A part of `msg` said twice in a row (`invalid x = 0: invalid x = 0`), or an OS error said
/// twice.
fn repeated(msg: &str) -> Option<String> {
    if msg.matches("(os error").count() > 1 {
        return Some("(os error".into());
    }
    let parts: Vec<&str> = msg.split(": ").collect();
    parts.windows(2).find(|w| w[0] == w[1] && w[0].len() > 3).map(|w| w[0].to_string())
}

#[test]
fn every_bad_input_is_a_clear_error_and_leaves_no_run_folder() {
    let dir = tmp();
    let cases = corpus(&dir);
    assert!(cases.len() >= 150, "the corpus holds {} cases", cases.len());
    let mut failures = Vec::new();
    for (line, word) in &cases {
        let mut args: Vec<String> = Vec::new();
        // Split on spaces; file paths here have none.
        args.extend(line.split(' ').filter(|s| !s.is_empty()).map(str::to_string));
        let out = dir.join(format!("out-{}", failures.len()));
        match run(&args, &dir) {
            Err(e) => failures.push(format!("kestrel {line}: {e}")),
            Ok((code, err)) => {
                if code != 1 {
                    failures.push(format!("kestrel {line}: exit {code}, expected 1\n{err}"));
                } else if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
                    failures.push(format!("kestrel {line}: panicked\n{err}"));
                } else if !err.contains(word.as_str()) {
                    failures.push(format!("kestrel {line}: message lacks {word:?}\n{err}"));
                } else if let Some(r) = repeated(&err) {
                    failures.push(format!("kestrel {line}: the message repeats {r:?}\n{err}"));
                } else if err.contains('\u{fffd}') {
                    failures.push(format!("kestrel {line}: the message echoes raw bytes\n{err}"));
                }
            }
        }
        let _ = out;
        // No run folder is left behind: `runs/` under the working folder stays absent or empty.
        let runs = dir.join("runs");
        if runs.exists() && std::fs::read_dir(&runs).unwrap().next().is_some() {
            failures.push(format!("kestrel {line}: left a run folder in {}", runs.display()));
            std::fs::remove_dir_all(&runs).unwrap();
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
