//! A resume proves what it continues: every resumable run kind refuses a folder whose config
//! was edited after the run started, a checkpoint set whose files were swapped, truncated,
//! corrupted or rewritten, and falls back to the previous set only when that one verifies,
//! saying so in the record (issue 33).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kestrel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kestrel")).args(args).output().expect("run kestrel")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-manifest-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The one run folder under `root`.
fn only_dir(root: &Path) -> PathBuf {
    std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()).find(|p| p.is_dir()).unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let q = to.join(p.file_name().unwrap());
        if p.is_dir() { copy_dir(&p, &q) } else { std::fs::copy(&p, &q).map(|_| ()).unwrap() }
    }
}

/// A copy of the finished run `run` at `root/name`, changed by `tamper`.
fn tampered(run: &Path, root: &Path, name: &str, tamper: impl FnOnce(&Path)) -> PathBuf {
    let d = root.join(name);
    copy_dir(run, &d);
    tamper(&d);
    d
}

/// The resume of `folder` (the launch `args` with `--resume folder`) fails with exit code 1 and
/// a message holding every word of `words`; nothing panics.
fn refused(args: &[&str], folder: &Path, words: &[&str]) {
    let mut a = args.to_vec();
    a.extend(["--resume", folder.to_str().unwrap()]);
    let o = kestrel(&a);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{a:?} should be refused:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
    for w in words {
        assert!(err.contains(w), "{a:?}: the message lacks {w:?}:\n{err}");
    }
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

fn manifest_step(set: &Path) -> u64 {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(set.join("manifest.json")).unwrap()).unwrap();
    m["step"].as_u64().unwrap()
}

const ALLO: [&str; 14] = [
    "allo",
    "train",
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
    "--checkpoint-every",
    "10",
];

#[test]
fn allo_resumes_refuse_edited_configs_and_tampered_sets() {
    let root = tmp("allo");
    let out = root.join("runs");
    let o = kestrel(&[&ALLO[..], &["--steps", "20", "--out-dir", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = only_dir(&out);
    // The final save at a multiple of checkpoint_every is the periodic one: `.prev` is older.
    assert_eq!(manifest_step(&run.join("checkpoint")), 20);
    assert_eq!(manifest_step(&run.join("checkpoint.prev")), 10);
    let resume = ["allo", "train", "--steps", "30"];

    // An edited config: each field named, with both values.
    for (name, from, to, field) in [
        ("map", "builtin:rooms-2-3", "builtin:rooms-2-4", "map"),
        ("seed", "seed = 0", "seed = 5", "seed"),
        ("batch", "batch_size = 32", "batch_size = 64", "batch_size"),
        ("method", "method = \"allo\"", "method = \"ggdo\"", "method"),
    ] {
        let d = tampered(&run, &root, name, |d| edit(&d.join("config.toml"), from, to));
        refused(
            &resume,
            &d,
            &["manifest.json", "not the one this checkpoint was written under", field],
        );
    }
    // An empty config.toml is all defaults, not this run's config.
    let d = tampered(&run, &root, "empty", |d| std::fs::write(d.join("config.toml"), "").unwrap());
    refused(&resume, &d, &["not the one this checkpoint was written under", "num_samples"]);

    // The encoder of step 10 beside the learner state of step 20, in both sets: neither verifies.
    let d = tampered(&run, &root, "swapped", |d| {
        let (a, b) = (
            d.join("checkpoint/encoder.safetensors"),
            d.join("checkpoint.prev/encoder.safetensors"),
        );
        let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
        std::fs::write(&a, y).unwrap();
        std::fs::write(&b, x).unwrap();
    });
    refused(
        &resume,
        &d,
        &["encoder.safetensors", "SHA-256", "the previous set does not verify either"],
    );
    // Step metadata rewritten ("after 999 steps") in both sets.
    let d = tampered(&run, &root, "steps", |d| {
        for set in ["checkpoint", "checkpoint.prev"] {
            let p = d.join(set).join("allo_state.safetensors");
            let mut bytes = std::fs::read(&p).unwrap();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let at = text.find("\"steps\":\"").unwrap() + 9;
            bytes[at] = b'9';
            std::fs::write(&p, bytes).unwrap();
        }
    });
    refused(&resume, &d, &["allo_state.safetensors", "SHA-256"]);
    // A truncated file and a manifest edited to match the wrong step.
    let d = tampered(&run, &root, "truncated", |d| {
        let p = d.join("checkpoint/encoder.safetensors");
        let n = std::fs::metadata(&p).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&p).unwrap().set_len(n / 2).unwrap();
        edit(&d.join("checkpoint.prev/manifest.json"), "\"step\": 10", "\"step\": 20");
    });
    refused(&resume, &d, &["encoder.safetensors", "truncated", "edited or corrupted"]);

    // Only the newest set damaged: the previous one verifies, the run goes on from step 10, says
    // so in its record, and ends bit-identical to the untouched run.
    let d = tampered(&run, &root, "fallback", |d| {
        let p = d.join("checkpoint/allo_state.safetensors");
        let mut bytes = std::fs::read(&p).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&p, bytes).unwrap();
    });
    let whole = tampered(&run, &root, "whole", |_| {});
    for f in [&d, &whole] {
        let o = kestrel(&["allo", "train", "--steps", "30", "--resume", f.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("record.json")).unwrap()).unwrap();
    let note = record["launches"][1]["notes"][0].as_str().unwrap_or_default().to_string();
    assert!(
        note.contains("allo_state.safetensors") && note.contains("checkpoint.prev (step 10)"),
        "{record}"
    );
    for f in ["encoder.safetensors", "allo_state.safetensors", "manifest.json"] {
        let a = std::fs::read(d.join("checkpoint").join(f)).unwrap();
        let b = std::fs::read(whole.join("checkpoint").join(f)).unwrap();
        assert!(a == b, "{f} differs after the fallback");
    }
    // A flag other than the budget on resume is refused, as is a preset.
    refused(&["allo", "train", "--steps", "30", "--batch-size", "64"], &run, &["only steps"]);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn hunt_and_actdyn_resumes_refuse_edited_configs() {
    let root = tmp("others");
    let out = root.join("hunt");
    let o = out.to_str().unwrap();
    let args = [
        "hunt",
        "train",
        "--epochs",
        "2",
        "--checkpoint-every",
        "1",
        "--set",
        "env.height=9",
        "--set",
        "env.width=9",
        "--set",
        "env.max_turns=8",
        "--set",
        "agent.layer=16",
        "--set",
        "agent.batch_size=8",
        "--set",
        "agent.capacity=32",
        "--num-agents",
        "2",
        "--out-dir",
        o,
    ];
    let r = kestrel(&args);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let run = only_dir(&out);
    let d = tampered(&run, &root, "hunt-size", |d| {
        edit(&d.join("config.toml"), "height = 9", "height = 10")
    });
    refused(&["hunt", "train", "--epochs", "3"], &d, &["env.height = 10 (the checkpoint's: 9)"]);
    // `hunt play` verifies the set it plays too.
    let o = kestrel(&[
        "hunt",
        "play",
        "--run",
        d.to_str().unwrap(),
        "--out-dir",
        root.join("p").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("env.height = 10"));

    let out = root.join("actdyn");
    let args = [
        "actdyn",
        "run",
        "--steps",
        "20",
        "--checkpoint-every",
        "10",
        "--set",
        "eval.episodes=2",
        "--set",
        "eval.num_starts=10",
        "--set",
        "eval.num_samples=5",
        "--out-dir",
        out.to_str().unwrap(),
    ];
    let r = kestrel(&args);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let run = only_dir(&out);
    let field = std::fs::read_to_string(run.join("config.toml")).unwrap();
    let line = field.lines().find(|l| l.starts_with("field = ")).unwrap().to_string();
    let d = tampered(&run, &root, "actdyn-field", |d| {
        edit(&d.join("config.toml"), &line, "field = \"duffing\"")
    });
    refused(&["actdyn", "run", "--steps", "30"], &d, &["env.field = \"duffing\""]);
    refused(&["actdyn", "run", "--preset", "e2"], &run, &["preset", "resume"]);
    std::fs::remove_dir_all(&root).unwrap();
}
