//! Smoke runs of every `kestrel` entry point with a tiny budget, and its error messages.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kestrel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kestrel")).args(args).output().expect("run kestrel")
}

fn ok(args: &[&str]) -> String {
    let o = kestrel(args);
    assert!(o.status.success(), "kestrel {args:?} failed:\n{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let o = kestrel(args);
    assert!(!o.status.success(), "kestrel {args:?} should fail");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

#[test]
fn the_demo_runs_every_system_and_reports_each_folder() {
    let od = tmp("demo-runs");
    // `--threads` reaches every part (issue 29 item 8: it once failed inside `evo qd`).
    let out = ok(&[
        "demo",
        "--quick",
        "--seconds",
        "0.2",
        "--threads",
        "1",
        "--out-dir",
        od.to_str().unwrap(),
    ]);
    assert!(out.contains("M steps/s"), "{out}");
    for system in ["ARC", "ES", "MPPI", "ALLO", "Hunt", "QD", "ActDyn"] {
        assert!(out.lines().any(|l| l.starts_with(system)), "{system} missing:\n{out}");
    }
    // The first screen reads as what each system does (issue 57 item 7): no bare zero return,
    // no lone "-" for a folder.
    let screen = out.rsplit("== Kestrel demo").next().unwrap();
    assert!(!screen.contains("mean return 0.0000"), "{screen}");
    assert!(!screen.lines().any(|l| l.trim() == "-"), "{screen}");
    assert!(
        screen.contains("Laplacian eigenvectors of a symmetric four-room grid after 20 steps"),
        "{screen}"
    );
    let demo = std::fs::read_dir(&od).unwrap().next().unwrap().unwrap().path();
    assert_eq!(
        std::fs::read_dir(&demo).unwrap().filter(|e| e.as_ref().unwrap().path().is_dir()).count(),
        7
    );
    // ARC's run folder holds the episodes `arc replay` reads.
    let arc = std::fs::read_dir(demo.join("arc")).unwrap().next().unwrap().unwrap().path();
    let episodes = std::fs::read_to_string(arc.join("episodes.jsonl")).unwrap();
    assert_eq!(episodes.lines().count(), 4, "{episodes}");
}

#[test]
fn bench_tables_and_json() {
    let out =
        ok(&["arc", "bench", "--num-envs", "1,8", "--seconds", "0.02", "--tasks-per-family", "2"]);
    assert!(out.contains("steps/s") && out.contains("Submit"), "{out}");
    let out = ok(&[
        "arc",
        "bench",
        "--num-envs",
        "4",
        "--seconds",
        "0.02",
        "--canvas",
        "5",
        "--max-side",
        "5",
        "--task",
        "symmetry-0",
        "--mode",
        "jaxarc",
        "--bugs",
        "all",
        "--sel",
        "bbox",
        "--json",
        "--no-ops",
        "--layout",
        "full",
    ]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    // The report is of the workload asked for (a rate alone cannot be wrong).
    assert_eq!(v["batches"][0]["num_envs"], 4, "{v}");
    assert_eq!((v["canvas"].as_u64(), v["tasks"].as_u64()), (Some(5), Some(1)), "{v}");
    assert_eq!(
        (&v["layout"], &v["sel"], &v["mode"], &v["bugs"]),
        (&"Full".into(), &"BBox".into(), &"jaxarc".into(), &"all".into())
    );
    assert!(v["ops_ns"].as_array().unwrap().is_empty(), "--no-ops: {v}");
    assert!(v["batches"][0]["steps_per_s"].as_f64().unwrap().is_finite());
}

#[test]
fn show_writes_a_png() {
    let png = tmp("show.png");
    let out = ok(&["arc", "show", "tile-2", "--png", png.to_str().unwrap()]);
    assert!(out.contains("train[0]"), "{out}");
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
}

#[test]
fn rollout_random_and_scripted() {
    let od = tmp("arc-rollouts");
    let o = od.to_str().unwrap();
    let args = ["--episodes", "3", "--max-episode-steps", "20", "--tasks-per-family", "2"];
    let out = ok(&[&["arc", "rollout", "--out-dir", o][..], &args].concat());
    assert!(out.contains("3 episodes"), "{out}");
    let episodes = |out: &str| {
        let dir = out.rsplit("run folder ").next().unwrap().trim();
        let text = std::fs::read_to_string(Path::new(dir).join("episodes.jsonl")).unwrap();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<serde_json::Value>>()
    };
    let lines = episodes(&out);
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l["steps"].as_u64().unwrap() <= 20));
    // Scripted: copy the input, then submit; on a border task this is wrong, on any task it
    // ends with Submit after the script.
    let script = tmp("script.json");
    std::fs::write(&script, r#"[{"op": 31}, {"op": 0, "point": [0, 0]}]"#).unwrap();
    let out = ok(&[
        "arc",
        "rollout",
        "--episodes",
        "1",
        "--script",
        script.to_str().unwrap(),
        "--task",
        "border-1",
        "--out-dir",
        o,
    ]);
    let v = &episodes(&out)[0];
    assert_eq!(v["actions"].as_array().unwrap().len(), 3);
}

#[test]
fn replay_solves_a_generated_task_and_reports_bad_input() {
    // recolor tasks of difficulty 0 map a few colours; the identity trace: copy input, submit.
    let trace = tmp("trace.jsonl");
    std::fs::write(
        &trace,
        concat!(
            r#"{"task": "symmetry-0", "pair": 0, "test": false, "actions": [{"op": 31}, {"op": 34}]}"#,
            "\n",
            r#"{"task": "gen:border-0", "pair": 1, "actions": [{"op": 2, "bbox": [0, 0, 1, 1]}, {"op": 12, "point": [0, 0]}, {"op": 0, "mask": [[1, 0], [0, 1]]}]}"#,
            "\n"
        ),
    )
    .unwrap();
    let od = tmp("arc-replays");
    let t = trace.to_str().unwrap();
    // `-1`, the help's "unlimited", is a value without `=` (issue 57); below it is refused.
    let out = ok(&[
        "arc",
        "replay",
        "--traces",
        t,
        "--max-trials",
        "-1",
        "--out-dir",
        od.to_str().unwrap(),
    ]);
    let dir = out.rsplit("run folder ").next().unwrap().trim();
    let text = std::fs::read_to_string(Path::new(dir).join("replays.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> =
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["rewards"].as_array().unwrap().len(), 2);
    assert_eq!(lines[1]["grid"][0][0], 0);
    assert_eq!(lines[1]["grid"][1][1], 0);

    std::fs::write(&trace, "{\"task\": \"symmetry-0\", \"actions\": [{\"op\": \"x\"}]}\n").unwrap();
    let err = fails(&["arc", "replay", "--traces", t]);
    assert!(err.contains("line 1") && err.contains("\"op\"") && err.contains("\"x\""), "{err}");
    std::fs::write(&trace, "{not json\n").unwrap();
    assert!(fails(&["arc", "replay", "--traces", t]).contains("line 1: not JSON"));
    std::fs::write(&trace, r#"{"task": "nope", "actions": []}"#).unwrap();
    assert!(fails(&["arc", "replay", "--traces", t]).contains("\"nope\""));
    std::fs::write(&trace, r#"{"task": "symmetry-0", "pair": 9, "actions": []}"#).unwrap();
    assert!(fails(&["arc", "replay", "--traces", t]).contains("pair 9 out of range"));
    let err = fails(&["arc", "replay", "--traces", t, "--max-trials=-5"]);
    assert!(err.contains("max_trials = -5") && err.contains("-1 (unlimited)"), "{err}");
    // A ragged mask is refused, naming the file, line, action and row (it was filled with
    // zeros and replayed, exit 0); no run folder is made.
    std::fs::write(
        &trace,
        r#"{"task": "symmetry-0", "pair": 0, "actions": [{"op": 2, "mask": [[1, 1], [1]]}]}"#,
    )
    .unwrap();
    let ragged = tmp("arc-replays-ragged");
    let err = fails(&["arc", "replay", "--traces", t, "--out-dir", ragged.to_str().unwrap()]);
    assert!(
        err.contains(t)
            && err.contains("line 1, action 0: mask row 1 has 1 cells where row 0 has 2"),
        "{err}"
    );
    assert!(!ragged.exists() || std::fs::read_dir(&ragged).unwrap().next().is_none());
}

#[test]
fn bad_arguments_are_clear_errors() {
    assert!(fails(&["arc", "bench", "--canvas", "7"]).contains("canvas = 7: 5, 10 or 30"));
    assert!(fails(&["arc", "bench", "--families", "nope"]).contains("symmetry"));
    let bad = tmp("bad.json");
    std::fs::write(&bad, r#"{"train": [{"input": [[1, 12]], "output": [[1]]}], "test": [{"input": [[1]], "output": [[1]]}]}"#)
        .unwrap();
    let err = fails(&["arc", "show", "bad", "--data", bad.to_str().unwrap()]);
    assert!(
        err.contains("bad.json") && err.contains("train[0].input") && err.contains("colour 12"),
        "{err}"
    );
}

#[test]
fn evo_run_qd_and_bench_write_run_folders() {
    let out_dir = tmp("runs");
    let od = out_dir.to_str().unwrap();
    let out = ok(&[
        "evo",
        "run",
        "--strategy",
        "cma-es",
        "--problem",
        "sphere",
        "--num-dims",
        "5",
        "--generations",
        "300",
        "--out-dir",
        od,
    ]);
    assert!(out.contains("best") && out.contains("run folder"), "{out}");
    let cfg = tmp("qd.toml");
    std::fs::write(&cfg, "archive = \"cvt\"\nemitter = \"iso-line\"\ncells = 30\nnum_dims = 6\ngenerations = 20\nbatch_size = 8\n").unwrap();
    let out = ok(&[
        "evo",
        "qd",
        "--config",
        cfg.to_str().unwrap(),
        "--set",
        "num_emitters=2",
        "--out-dir",
        od,
    ]);
    assert!(out.contains("coverage"), "{out}");
    let dirs: Vec<_> = std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(dirs.len(), 2);
    for d in &dirs {
        for f in ["config.toml", "record.json", "metrics.jsonl", "summary.md", "summary.json"] {
            assert!(d.join(f).is_file(), "{} lacks {f}", d.display());
        }
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("record.json")).unwrap()).unwrap();
        assert_eq!(record["launches"][0]["status"], "ok");
        assert!(record["launches"][0]["argv"].as_array().unwrap().len() > 2);
        let pngs = std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "png"))
            .count();
        assert!(pngs >= 1);
        let lines = std::fs::read_to_string(d.join("metrics.jsonl")).unwrap();
        for l in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert!(v["global_step"].is_u64() && v["wall_time"].is_f64(), "{l}");
        }
    }
    let out = ok(&[
        "evo",
        "run",
        "--strategy",
        "snes",
        "--problem",
        "cartpole",
        "--generations",
        "3",
        "--out-dir",
        od,
    ]);
    assert!(out.contains("after 48 evaluations") || out.contains("best -5.000000e2"), "{out}");
    let out = ok(&["evo", "bench", "--neuro", "--pop-size", "8", "--generations", "1"]);
    assert!(out.contains("fitness identical"), "{out}");
    let out = ok(&["evo", "bench", "--num-dims", "4", "--generations", "5", "--pop-size", "8"]);
    assert!(out.contains("tell"), "{out}");
}

#[test]
fn evo_config_errors_name_the_key() {
    let cfg = tmp("bad.toml");
    std::fs::write(&cfg, "generatoins = 5\n").unwrap();
    let err = fails(&["evo", "run", "--config", cfg.to_str().unwrap()]);
    assert!(err.contains("bad.toml") && err.contains("generatoins"), "{err}");
    let err = fails(&[
        "evo",
        "run",
        "--set",
        "strategy=\"nope\"",
        "--generations",
        "1",
        "--out-dir",
        tmp("r2").to_str().unwrap(),
    ]);
    assert!(err.contains("nope") && err.contains("cma-es"), "{err}");
    let err = fails(&["evo", "run", "--problem", "spherez"]);
    assert!(err.contains("spherez"), "{err}");
}

#[test]
fn mppi_run_tune_and_bench() {
    let od = tmp("mppi-runs");
    let od = od.to_str().unwrap();
    let out = ok(&["mppi", "run", "--system", "pendulum", "--steps", "30", "--out-dir", od]);
    assert!(out.contains("total running cost"), "{out}");
    // A negative value is a value, not a flag (issue 57): `--u-min -1.5` without `=`.
    let neg = tmp("mppi-negative");
    ok(&["mppi", "run", "--u-min", "-1.5", "--steps", "3", "--out-dir", neg.to_str().unwrap()]);
    let ndir = std::fs::read_dir(&neg).unwrap().next().unwrap().unwrap().path();
    let cfg = std::fs::read_to_string(ndir.join("config.toml")).unwrap();
    assert!(cfg.contains("u_min = [-1.5]"), "{cfg}");
    let dir = std::fs::read_dir(od).unwrap().next().unwrap().unwrap().path();
    for f in
        ["trajectory.jsonl", "cost.png", "state.png", "frames.png", "summary.md", "config.toml"]
    {
        assert!(dir.join(f).is_file(), "{} lacks {f}", dir.display());
    }
    let out = ok(&[
        "mppi",
        "tune",
        "--system",
        "basic",
        "--knobs",
        "lambda,sigma,mu",
        "--generations",
        "3",
        "--pop-size",
        "6",
        "--out-dir",
        od,
    ]);
    assert!(out.contains("->"), "{out}");
    // The tuned knobs come back as a config `mppi run` replays; every controller runs.
    let tune_dir = std::fs::read_dir(od)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("mppi-tune"))
        .unwrap();
    let best = tune_dir.join("best.toml");
    let out =
        ok(&["mppi", "run", "--config", best.to_str().unwrap(), "--steps", "5", "--out-dir", od]);
    assert!(out.contains("total running cost"), "{out}");
    for c in ["smppi", "kmppi"] {
        let out = ok(&[
            "mppi",
            "run",
            "--system",
            "nav2d",
            "--controller",
            c,
            "--steps",
            "5",
            "--set",
            "mppi.num_samples=32",
            "--out-dir",
            od,
        ]);
        assert!(out.contains("total running cost"), "{c}: {out}");
    }
    let out = ok(&[
        "mppi",
        "tune",
        "--controller",
        "smppi",
        "--generations",
        "2",
        "--pop-size",
        "4",
        "--steps",
        "5",
        "--out-dir",
        od,
    ]);
    assert!(out.contains("->"), "{out}");
    let e = fails(&["mppi", "run", "--set", "mppi.lambda=-1", "--out-dir", od]);
    assert!(e.contains("lambda") && e.contains("-1"), "{e}");
    let e = fails(&["mppi", "run", "--set", "mppi.lamda=1", "--out-dir", od]);
    assert!(e.contains("lamda"), "{e}");
    let out = ok(&["mppi", "bench", "--num-samples", "50", "--horizon", "5", "--commands", "5"]);
    assert!(out.contains("µs"), "{out}");
    // Every config key is a flag; a misspelt one is answered with the closest.
    let e = fails(&["mppi", "tune", "--lamda", "0.5"]);
    assert!(e.contains("--lamda") && e.contains("`--lambda`"), "{e}");
    let e = fails(&["mppi", "tune", "--knobs", "gamma"]);
    assert!(e.contains("gamma") && e.contains("lambda"), "{e}");
    assert!(
        fails(&["mppi", "tune", "--strategy", "nope", "--generations", "1", "--out-dir", od])
            .contains("cma-es")
    );
}

#[test]
fn allo_train_runs_resumes_and_reports_bad_maps() {
    let out_dir = tmp("allo-runs");
    let o = out_dir.to_str().unwrap();
    let common = [
        "--map",
        "builtin:rooms-2-3",
        "--num-eigenvectors",
        "3",
        "--batch-size",
        "32",
        "--num-samples",
        "2000",
        "--eval-every",
        "10",
        "--out-dir",
        o,
    ];
    let mut args = vec!["allo", "train", "--steps", "20", "--checkpoint-every", "10"];
    args.extend(common);
    let out = ok(&args);
    assert!(out.contains("average cosine similarity"), "{out}");
    let run = std::fs::read_dir(&out_dir).unwrap().next().unwrap().unwrap().path();
    for f in
        ["config.toml", "metrics.jsonl", "summary.md", "eigenvectors.png", "eigenvectors-10.svg"]
    {
        assert!(run.join(f).exists(), "{f} missing");
    }
    assert!(run.join("checkpoint/encoder.safetensors").exists());
    // As if the run had gone on past its checkpoint at step 20 and been killed mid-line: the
    // resumed run drops those lines and writes its own.
    let metrics = run.join("metrics.jsonl");
    let stale = "{\"global_step\":30,\"stale\":true}\n{\"global_step\":4";
    let text = std::fs::read_to_string(&metrics).unwrap();
    std::fs::write(&metrics, format!("{text}not json\n")).unwrap();
    let mut args = vec!["allo", "train", "--steps", "40", "--resume", run.to_str().unwrap()];
    args.extend(common);
    let e = fails(&args);
    assert!(e.contains("metrics.jsonl: line 3: not JSON"), "{e}");
    std::fs::write(&metrics, format!("{text}{stale}")).unwrap();
    // Resume to 40 steps in the same folder: the metrics file gains the later evaluations.
    let out = ok(&args);
    assert!(!std::fs::read_to_string(&metrics).unwrap().contains("stale"));
    assert!(out.contains("after 40 steps"), "{out}");
    let steps: Vec<u64> = std::fs::read_to_string(&metrics)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["global_step"].as_u64().unwrap()
        })
        .collect();
    assert_eq!(steps, [10, 20, 30, 40]);
    // On resume the saved config is the truth: another map is an error.
    let e = fails(&[
        "allo",
        "train",
        "--steps",
        "50",
        "--map",
        "builtin:open-4",
        "--resume",
        run.to_str().unwrap(),
    ]);
    assert!(e.contains("config.toml") && e.contains("only steps"), "{e}");
    let e = fails(&["allo", "train", "--map", "builtin:spiral-3", "--out-dir", o]);
    assert!(e.contains("builtin:spiral-3"), "{e}");
    let e = fails(&["allo", "train", "--map", "/nonexistent/map.txt", "--out-dir", o]);
    assert!(e.contains("/nonexistent/map.txt"), "{e}");
    let e = fails(&["allo", "train", "--method", "gdo", "--out-dir", o]);
    assert!(e.contains("gdo") && e.contains("method"), "{e}");
}

#[test]
fn nn_bench_reports_json() {
    let out = ok(&[
        "nn",
        "bench",
        "--sizes",
        "4,8,2",
        "--batch-size",
        "8",
        "--num-models",
        "2",
        "--model-batch-size",
        "4",
        "--seconds",
        "0.01",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let sizes = (&v["batch_size"], &v["num_models"], &v["model_batch_size"]);
    assert_eq!(sizes, (&8.into(), &2.into(), &4.into()));
    assert_eq!(v["sizes"], serde_json::json!([4, 8, 2]));
    for k in ["train_us", "train_many_us", "forward_b1_us"] {
        assert!(v[k].as_f64().is_some_and(f64::is_finite), "{k}: {v}");
    }
}

#[test]
fn hunt_train_resume_play_and_bench() {
    let out_dir = tmp("hunt-runs");
    let o = out_dir.to_str().unwrap();
    let small = [
        "--set",
        "env.height=9",
        "--set",
        "env.width=9",
        "--set",
        "env.max_turns=12",
        "--set",
        "agent.layer=16",
        "--set",
        "agent.batch_size=8",
        "--set",
        "agent.capacity=64",
        "--obs",
        "one-hot",
        "--num-agents",
        "3",
        "--updates-per-turn",
        "0.5",
    ];
    let mut args = vec!["hunt", "train", "--epochs", "4", "--record-every", "2"];
    args.extend(["--checkpoint-every", "2", "--threads", "2", "--out-dir", o]);
    args.extend(small);
    let out = ok(&args);
    assert!(out.contains("after 4 epochs"), "{out}");
    let run = std::fs::read_dir(&out_dir).unwrap().next().unwrap().unwrap().path();
    for f in [
        "config.toml",
        "metrics.jsonl",
        "summary.md",
        "learning_curve.png",
        "episodes/epoch-00000.png",
        "episodes/epoch-00002.png",
        "checkpoint/agent2.safetensors",
        "checkpoint/agent2.replay.safetensors",
    ] {
        assert!(run.join(f).exists(), "{f} missing");
    }
    // A line written after the last checkpoint by a run that was then killed is dropped.
    let metrics = run.join("metrics.jsonl");
    let text = std::fs::read_to_string(&metrics).unwrap();
    std::fs::write(&metrics, format!("{text}{{\"global_step\":5,\"stale\":true}}\n")).unwrap();
    // Resume to 6 epochs (the world settings come from the run's config.toml).
    let r = run.to_str().unwrap();
    let out = ok(&["hunt", "train", "--epochs", "6", "--resume", r, "--out-dir", o]);
    assert!(out.contains("after 6 epochs"), "{out}");
    let epochs: Vec<u64> = std::fs::read_to_string(&metrics)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["epoch"].as_u64().unwrap())
        .collect();
    assert_eq!(epochs, [0, 1, 2, 3, 4, 5]);
    assert!(!std::fs::read_to_string(&metrics).unwrap().contains("stale"));
    let played = tmp("hunt-play");
    let p = played.to_str().unwrap();
    let out = ok(&["hunt", "play", "--run", r, "--epochs", "2", "--out-dir", p]);
    assert!(out.contains("rewards per agent"), "{out}");
    let folder = std::fs::read_dir(&played).unwrap().next().unwrap().unwrap().path();
    assert!(folder.join("play.png").is_file() && folder.join("play.svg").is_file());
    assert_eq!(std::fs::read_to_string(folder.join("metrics.jsonl")).unwrap().lines().count(), 2);
    let out = ok(&["hunt", "bench", "--reps", "3", "--json"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    // The derived figures are the timings' own: GFLOP/s = 1000 MFLOP / µs, the ratio to the
    // gemm calls alone = the two times' quotient.
    let f = |k: &str| v[k].as_f64().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
    assert!(close(f("iqn_update_gflops"), 1e3 * f("iqn_update_mflop") / f("iqn_update_us")), "{v}");
    assert!(close(f("update_over_gemm"), f("iqn_update_us") / f("gemm_only_us")), "{v}");
    assert!(f("turn_us").is_finite() && f("act_us").is_finite(), "{v}");
    let e = fails(&["hunt", "train", "--obs", "hsv", "--out-dir", o]);
    assert!(e.contains("hsv") && e.contains("obs"), "{e}");
    let e = fails(&["hunt", "play", "--run", "/nonexistent/run"]);
    assert!(e.contains("/nonexistent/run"), "{e}");
}

/// Tiny evaluation settings so debug-build runs stay quick.
const SMALL_EVAL: [&str; 6] =
    ["--set", "eval.episodes=2", "--set", "eval.num_starts=10", "--set", "eval.num_samples=5"];

#[test]
fn actdyn_run_writes_its_folder_and_resumes_exactly() {
    let od = tmp("actdyn-runs");
    let o = od.to_str().unwrap();
    let mut args =
        vec!["actdyn", "run", "--steps", "40", "--checkpoint-every", "10", "--out-dir", o];
    args.extend(SMALL_EVAL);
    let out = ok(&args);
    assert!(out.contains("ELBO/T") && out.contains("run folder"), "{out}");
    let dir = std::fs::read_dir(&od).unwrap().next().unwrap().unwrap().path();
    for f in [
        "config.toml",
        "record.json",
        "metrics.jsonl",
        "evaluation.json",
        "training.png",
        "field.svg",
        "summary.md",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing");
    }
    // Resume to 60 steps, and compare with an uninterrupted 60-step run.
    ok(&["actdyn", "run", "--resume", dir.to_str().unwrap(), "--steps", "60"]);
    let od2 = tmp("actdyn-whole");
    let mut args = vec![
        "actdyn",
        "run",
        "--steps",
        "60",
        "--checkpoint-every",
        "10",
        "--out-dir",
        od2.to_str().unwrap(),
    ];
    args.extend(SMALL_EVAL);
    ok(&args);
    let whole = std::fs::read_dir(&od2).unwrap().next().unwrap().unwrap().path();
    let last = |d: &std::path::Path| {
        let text = std::fs::read_to_string(d.join("metrics.jsonl")).unwrap();
        let rows: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let step60 = rows
            .iter()
            .rev()
            .find(|r| r["global_step"] == 60 && r["elbo_per_t"].is_number())
            .unwrap()
            .clone();
        (step60["elbo_per_t"].clone(), step60["z"].clone(), step60["belief"].clone())
    };
    assert_eq!(last(&dir), last(&whole));
}

#[test]
fn actdyn_active_fixed_and_compare_run() {
    let od = tmp("actdyn-active");
    let o = od.to_str().unwrap();
    let small_plan = [
        "--set",
        "policy.num_samples=8",
        "--set",
        "policy.num_elites=3",
        "--set",
        "policy.iterations=2",
        "--set",
        "train.window=6",
        "--set",
        "train.k_steps=2",
    ];
    let mut args = vec![
        "actdyn",
        "run",
        "--preset",
        "e2",
        "--profile",
        "fixed",
        "--steps",
        "15",
        "--out-dir",
        o,
    ];
    args.extend(SMALL_EVAL);
    args.extend(small_plan);
    let out = ok(&args);
    assert!(out.contains("run folder"), "{out}");
    let dir = std::fs::read_dir(&od).unwrap().next().unwrap().unwrap().path();
    assert!(dir.join("coverage.png").is_file());
    // The comparison's experiment is its `base` table.
    let od = tmp("actdyn-compare");
    let mut args: Vec<String> =
        ["actdyn", "compare", "--base.steps", "12", "--num-seeds", "2", "--out-dir"]
            .map(String::from)
            .into();
    args.push(od.display().to_string());
    for a in SMALL_EVAL.iter().chain(&small_plan) {
        args.push(if *a == "--set" { a.to_string() } else { format!("base.{a}") });
    }
    let out = ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.contains("4 runs"), "{out}");
    let dir = std::fs::read_dir(&od).unwrap().next().unwrap().unwrap().path();
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(summary.contains("active − random"), "{summary}");
}

#[test]
fn actdyn_retrain_reads_the_saved_transitions() {
    let od = tmp("actdyn-retrain-src");
    let mut args = vec![
        "actdyn",
        "run",
        "--steps",
        "60",
        "--set",
        "save_every=20",
        "--checkpoint-every",
        "20",
        "--out-dir",
        od.to_str().unwrap(),
    ];
    args.extend(SMALL_EVAL);
    ok(&args);
    let dir = std::fs::read_dir(&od).unwrap().next().unwrap().unwrap().path();
    assert_eq!(std::fs::read_dir(dir.join("transitions")).unwrap().count(), 3);
    let out_dir = tmp("actdyn-retrain");
    let out = ok(&[
        "actdyn",
        "retrain",
        "--run",
        dir.to_str().unwrap(),
        "--epochs",
        "2",
        "--chunk",
        "20",
        "--set",
        "offline.batch_size=2",
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.contains("on 60 transitions"), "{out}");
    // A damaged newest checkpoint: the model comes from `checkpoint.prev/`, and the retraining
    // says so on stderr and in its folder's record, as every resume does (it said nothing).
    let ck = dir.join("checkpoint");
    let victim = std::fs::read_dir(&ck)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "safetensors" || x == "bin"))
        .expect("a checkpoint file");
    let mut bytes = std::fs::read(&victim).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&victim, bytes).unwrap();
    let prev_dir = tmp("actdyn-retrain-prev");
    let o = kestrel(&[
        "actdyn",
        "retrain",
        "--run",
        dir.to_str().unwrap(),
        "--epochs",
        "1",
        "--chunk",
        "20",
        "--set",
        "offline.batch_size=2",
        "--out-dir",
        prev_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("using") && err.contains("checkpoint.prev (step 40)"), "{err}");
    assert!(err.contains(victim.file_name().unwrap().to_str().unwrap()), "{err}");
    let rdir = std::fs::read_dir(&prev_dir).unwrap().next().unwrap().unwrap().path();
    let record = std::fs::read_to_string(rdir.join("record.json")).unwrap();
    assert!(record.contains("checkpoint.prev (step 40)"), "{record}");
    let refused = tmp("actdyn-retrain-refused");
    let r = refused.to_str().unwrap();
    let e = fails(&[
        "actdyn",
        "retrain",
        "--run",
        dir.to_str().unwrap(),
        "--chunk",
        "100",
        "--out-dir",
        r,
    ]);
    assert!(e.contains("offline.chunk"), "{e}");
    assert!(!refused.exists(), "a refused retraining leaves no run folder");
}

#[test]
fn sweep_runs_every_cell_skips_finished_ones_and_tabulates() {
    let dir = tmp("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let spec = dir.join("maps.toml");
    std::fs::write(
        &spec,
        "kind = \"allo\"\nseeds = 2\n[base]\nnum_samples = 2000\nlearner.batch_size = 64\nlearner.num_eigenvectors = 4\nsteps = 20\neval_every = 10\n\
         [grid]\nmap = [\"builtin:rooms-2-5\", \"builtin:open-6\"]\n",
    )
    .unwrap();
    let out = dir.join("out");
    let (s, o) = (spec.to_str().unwrap(), out.to_str().unwrap());
    let first = ok(&["sweep", s, "--out-dir", o, "--threads", "1"]);
    assert!(first.contains("[4/4] c001-open-6-s1: average cosine"), "{first}");
    assert!(
        first.contains("| map=rooms-2-5 | 2 |") && first.contains("| map=open-6 | 2 |"),
        "{first}"
    );
    for f in ["sweep.toml", "table.md", "table.csv", "table.json", "curves.png"] {
        assert!(out.join("maps").join(f).is_file(), "{f}");
    }
    let again = ok(&["sweep", s, "--out-dir", o]);
    assert_eq!(again.matches("skipped").count(), 4, "{again}");
    let table = |t: &str| {
        t.lines().filter(|l| l.starts_with("| map=")).map(String::from).collect::<Vec<_>>()
    };
    assert_eq!(table(&first), table(&again));
    // A bad grid value is named before any folder exists.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "kind = \"allo\"\nseeds = 1\n[grid]\nnum_eigenvectors = [4, 0]\n")
        .unwrap();
    let e = fails(&["sweep", bad.to_str().unwrap(), "--out-dir", o]);
    assert!(e.contains("bad.toml") && e.contains("num_eigenvectors = 0"), "{e}");
    assert!(!out.join("bad").exists());
    // The Ray engine needs a Python: a missing one is a clear error.
    let e =
        fails(&["sweep", s, "--out-dir", o, "--engine", "ray", "--python", "/nonexistent/python"]);
    assert!(e.contains("cannot start /nonexistent/python") && e.contains("crates/py[ray]"), "{e}");
}

/// Every env id's params print as TOML that `--config` reads back to the same params, and
/// `kestrel env bench` steps the id with them.
#[test]
fn env_ids_print_their_params_and_bench_through_the_registry() {
    let list = ok(&["config"]);
    assert!(list.contains("CartPole-v1") && list.contains("ARC-jaxarc-v0"), "{list}");
    for id in ["CartPole-v1", "Control-double-integrator-v0", "ARC-jaxarc-v0", "VectorField-v0"] {
        let toml = ok(&["config", id, "--set", "max_episode_steps=7"]);
        let path = tmp(&format!("{id}.toml"));
        std::fs::write(&path, &toml).unwrap();
        let back = ok(&["config", id, "--config", path.to_str().unwrap(), "--json"]);
        let direct = ok(&["config", id, "--set", "max_episode_steps=7", "--json"]);
        assert_eq!(back, direct, "{id}");
        assert!(back.contains("\"max_episode_steps\": 7"), "{back}");
    }
    let out = ok(&[
        "env",
        "bench",
        "ARC-jaxarc-v0",
        "--num-envs",
        "70",
        "--seconds",
        "0.05",
        "--set",
        "canvas=10",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["id"], &v["rollout"], &v["batches"][0]["num_envs"]),
        (&"ARC-jaxarc-v0".into(), &0.into(), &70.into())
    );
    let sps = v["batches"][0]["steps_per_s"].as_f64().unwrap();
    assert!(sps.is_finite() && sps > 0.0, "{out}");
    // Rollouts from action arrays: the lane kernel (ARC, canvas 5) and the rows (CartPole).
    for (id, set) in [("ARC-jaxarc-v0", "canvas=5"), ("CartPole-v1", "max_episode_steps=9")] {
        let args = ["env", "bench", id, "--num-envs", "70", "--seconds", "0.05", "--set", set];
        let out = ok(&[&args[..], &["--rollout", "16", "--json"]].concat());
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            (&v["id"], &v["rollout"], &v["batches"][0]["num_envs"]),
            (&id.into(), &16.into(), &70.into())
        );
        let sps = v["batches"][0]["steps_per_s"].as_f64().unwrap();
        assert!(sps.is_finite() && sps > 0.0, "{out}");
    }
    let e = fails(&["env", "bench", "CartPole-v1", "--rollout", "70000"]);
    assert!(e.contains("rollout = 70000"), "{e}");
    let big = ["env", "bench", "CartPole-v1", "--num-envs", "1000000", "--rollout", "60000"];
    let e = fails(&big);
    assert!(e.contains("rollout = 60000") && e.contains("GiB"), "{e}");
    let e = fails(&["env", "bench", "CartPole-v1", "--set", "gravty=3"]);
    assert!(e.contains("gravty") && e.contains("gravity"), "{e}");
    let e = fails(&["config", "Pendulm-v1"]);
    assert!(e.contains("neither a run kind nor an env id") && e.contains("Pendulum-v1"), "{e}");
}

/// Runs `old` (0.1.0's spelling) and `new` (today's), each into its own folder under `name`:
/// the old one warns, naming the new spelling, and both write the same config.
fn same_run(name: &str, old: &[&str], new: &[&str], warns: &str) {
    let mut configs = Vec::new();
    for (i, args) in [old, new].into_iter().enumerate() {
        let od = tmp(&format!("{name}-{i}"));
        let mut a = args.to_vec();
        a.extend(["--out-dir", od.to_str().unwrap()]);
        let o = kestrel(&a);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "kestrel {a:?} failed:\n{err}");
        if i == 0 {
            assert!(err.contains(warns) && err.contains("accepted until 0.3.0"), "{a:?}: {err}");
        } else {
            assert!(!err.contains("accepted until"), "{a:?}: {err}");
        }
        let dir = std::fs::read_dir(&od).unwrap().next().unwrap().unwrap().path();
        configs.push(std::fs::read_to_string(dir.join("config.toml")).unwrap());
    }
    assert_eq!(configs[0], configs[1], "{old:?} and {new:?} ran different configs");
}

#[test]
fn the_0_1_0_spellings_still_run_with_a_warning_naming_the_new_one() {
    same_run(
        "renamed-mppi-run",
        &["mppi", "run", "--env", "basic", "--steps", "3"],
        &["mppi", "run", "--system", "basic", "--steps", "3"],
        "is spelt `--system`",
    );
    let tune = ["--steps", "3", "--pop-size", "4", "--generations", "1"];
    same_run(
        "renamed-mppi-tune",
        &[&["mppi", "tune", "--env", "basic", "--tune", "lambda"][..], &tune].concat(),
        &[&["mppi", "tune", "--system", "basic", "--knobs", "lambda"][..], &tune].concat(),
        "is spelt `--knobs`",
    );
    let hunt = [
        "--epochs",
        "1",
        "--set",
        "env.height=9",
        "--set",
        "env.width=9",
        "--set",
        "env.max_turns=6",
        "--set",
        "agent.layer=16",
        "--set",
        "agent.batch_size=8",
        "--set",
        "agent.capacity=64",
        "--obs",
        "one-hot",
    ];
    same_run(
        "renamed-hunt",
        &[&["hunt", "train", "--agents", "2", "--worlds", "1"][..], &hunt].concat(),
        &[&["hunt", "train", "--num-agents", "2", "--num-worlds", "1"][..], &hunt].concat(),
        "is spelt `--num-worlds`",
    );
    // A config key renamed since 0.1.0 (the learner's keys nest under `agent` now).
    let base =
        ["hunt", "train", "--epochs", "1", "--record-every", "0", "--set", "env.max_turns=5"];
    same_run(
        "renamed-hunt-keys",
        &[&base[..], &["--set", "layer=16", "--set", "capacity=64"]].concat(),
        &[&base[..], &["--set", "agent.layer=16", "--set", "agent.capacity=64"]].concat(),
        "warning: --set layer=16: `layer` is now `agent.layer`",
    );
    let allo = ["--map", "builtin:rooms-2-3", "--num-eigenvectors", "3", "--batch-size", "32"];
    same_run(
        "renamed-allo",
        &[&["allo", "train", "--steps", "2", "--samples", "2000"][..], &allo].concat(),
        &[&["allo", "train", "--steps", "2", "--num-samples", "2000"][..], &allo].concat(),
        "is spelt `--num-samples`",
    );
    same_run(
        "renamed-actdyn-run",
        &[&["actdyn", "run", "--steps", "12", "--policy", "random"][..], &SMALL_EVAL].concat(),
        &[&["actdyn", "run", "--steps", "12", "--kind", "random"][..], &SMALL_EVAL].concat(),
        "is spelt `--kind`",
    );
    let base: Vec<String> = SMALL_EVAL
        .iter()
        .map(|a| if *a == "--set" { a.to_string() } else { format!("base.{a}") })
        .collect();
    let base: Vec<&str> = base.iter().map(String::as_str).collect();
    same_run(
        "renamed-actdyn-compare",
        &[&["actdyn", "compare", "--base.steps", "12", "--seeds", "3..5"][..], &base].concat(),
        &[
            &["actdyn", "compare", "--base.steps", "12", "--seed", "3", "--num-seeds", "2"][..],
            &base,
        ]
        .concat(),
        "is spelt `--seed 3 --num-seeds 2`",
    );
    let trace = tmp("renamed-trace.jsonl");
    std::fs::write(
        &trace,
        "{\"task\": \"symmetry-0\", \"pair\": 0, \"actions\": [{\"op\": 31}, {\"op\": 34}]}\n",
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    same_run(
        "renamed-arc-replay",
        &["arc", "replay", t],
        &["arc", "replay", "--traces", t],
        "is spelt `kestrel arc replay --traces FILE`",
    );
    // A 0.1.0 value with no 0.2.0 form is an error saying what to write instead.
    let err = fails(&["actdyn", "compare", "--seeds", "1,5,9"]);
    assert!(err.contains("--seed A --num-seeds B-A"), "{err}");
}
