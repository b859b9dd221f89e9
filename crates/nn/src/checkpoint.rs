//! Checkpoint sets that prove what they hold.
//!
//! A set is a folder of files written together ([`write_checkpoint_set`]). Its `manifest.json`
//! is written last (fsynced, inside the set before the set is renamed into place) and records:
//! the format version, the run kind, the run's config with its budget left out and that
//! config's SHA-256 fingerprint, the step the set was taken at, the commit of the build, and
//! every file's length and SHA-256; the manifest carries a checksum of itself.
//!
//! [`checkpoint_set`] verifies a set against the [`Stamp`] of the run that wants to resume
//! before any tensor is read: a config that differs from the one the set was written under
//! (naming the fields), a missing, extra, truncated or swapped file, a corrupted byte anywhere
//! in the set or its manifest, or a set of another run kind is an error naming the file and
//! what differs. It falls back to the previous set only when that one verifies, and says so.
//!
//! What a manifest does not prove: that the files were written by Kestrel and not forged with
//! a recomputed manifest (the checksums find accidents and edits, they are not signatures),
//! and that the data outside the checkpoint (`metrics.jsonl`, saved transitions) is the run's.

use crate::error::NnError;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The manifest's file name inside a set.
pub const MANIFEST: &str = "manifest.json";
/// The manifest format this build writes and reads.
pub const FORMAT: u64 = 1;

/// What a checkpoint set belongs to: the run kind, the run's config with its budget fields
/// (those a resume may change) at neutral values, and the commit of the build writing it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamp {
    kind: String,
    config: Value,
    fingerprint: String,
    commit: String,
}

impl Stamp {
    /// The stamp of a run of `kind` under `config` (its budget left out), built at `commit`.
    pub fn new(kind: &str, config: Value, commit: &str) -> Self {
        let fingerprint = fingerprint(kind, &config);
        Stamp { kind: kind.into(), config, fingerprint, commit: commit.into() }
    }

    /// The SHA-256 (hex) of the kind and the config.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

/// A set that verified against a [`Stamp`].
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    /// The set's folder.
    pub path: PathBuf,
    /// The step (epoch, generation) it was taken at, as its manifest records it.
    pub step: u64,
    /// Why this set and not the newest one, or that another build wrote it; `None` when it is
    /// the newest set, written by this build.
    pub note: Option<String>,
}

impl Verified {
    /// An error unless the state loaded from the set is at the step its manifest records
    /// (`unit`: step, epoch).
    pub fn expect_step(&self, loaded: u64, unit: &str) -> Result<(), NnError> {
        if loaded == self.step {
            return Ok(());
        }
        Err(bad(
            &self.path,
            format!("holds {unit} {loaded}; its manifest.json records {unit} {}", self.step),
        ))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of the kind and the compact JSON of the config (serde_json's maps are sorted, so
/// equal configs print equal).
fn fingerprint(kind: &str, config: &Value) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_bytes());
    h.update(b"\n");
    h.update(config.to_string().as_bytes());
    hex(&h.finalize())
}

fn io_err(path: &Path, source: std::io::Error) -> NnError {
    NnError::Io { path: path.display().to_string(), source }
}

fn bad(path: &Path, what: impl Into<String>) -> NnError {
    NnError::Format { path: path.display().to_string(), what: what.into() }
}

/// The length and SHA-256 of the file at `path`, read in blocks; with `sync`, the file is
/// fsynced too.
fn digest_file(path: &Path, sync: bool) -> Result<(u64, String), NnError> {
    let mut f = std::fs::File::open(path).map_err(|e| io_err(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| io_err(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        len += n as u64;
    }
    if sync {
        f.sync_all().map_err(|e| io_err(path, e))?;
    }
    Ok((len, hex(&h.finalize())))
}

/// The manifest's own checksum: SHA-256 of its compact JSON without the `sha256` field.
fn self_sum(body: &Map<String, Value>) -> String {
    hex(&Sha256::digest(serde_json::to_vec(body).expect("a JSON map prints")))
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// The entries of a set folder, sorted, without the manifest.
fn files_of(dir: &Path) -> Result<Vec<String>, NnError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
        let entry = entry.map_err(|e| io_err(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name != MANIFEST {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Writes a checkpoint as one set taken at `step`: `write` fills a fresh sibling folder
/// `<dir>.tmp`; every file is read back, hashed and fsynced; the manifest is written last and
/// fsynced with the folder; then the previous set becomes `<dir>.prev` (the last two are kept)
/// and the new one `<dir>`. A kill at any point leaves a set that [`checkpoint_set`] verifies.
pub fn write_checkpoint_set<E: From<NnError>>(
    dir: &Path,
    stamp: &Stamp,
    step: u64,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let tmp = dir.with_extension("tmp");
    let prev = dir.with_extension("prev");
    let io = |p: &Path, e: std::io::Error| E::from(io_err(p, e));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| io(&tmp, e))?;
    write(&tmp)?;
    let mut files = Map::new();
    for name in files_of(&tmp)? {
        let p = tmp.join(&name);
        if !p.is_file() {
            return Err(E::from(bad(&p, "a checkpoint set holds files only")));
        }
        let (bytes, sha256) = digest_file(&p, true)?;
        files.insert(name, json!({"bytes": bytes, "sha256": sha256}));
    }
    let mut body = Map::new();
    body.insert("format".into(), FORMAT.into());
    body.insert("kind".into(), stamp.kind.clone().into());
    body.insert("step".into(), step.into());
    body.insert("commit".into(), stamp.commit.clone().into());
    body.insert("fingerprint".into(), stamp.fingerprint.clone().into());
    body.insert("config".into(), stamp.config.clone());
    body.insert("files".into(), files.into());
    let sum = self_sum(&body);
    body.insert("sha256".into(), sum.into());
    let text = serde_json::to_string_pretty(&Value::Object(body)).expect("a manifest prints");
    let marker = tmp.join(MANIFEST);
    std::fs::File::create(&marker)
        .and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        })
        .map_err(|e| io(&marker, e))?;
    sync_dir(&tmp).map_err(|e| io(&tmp, e))?;
    if dir.exists() {
        if prev.exists() {
            std::fs::remove_dir_all(&prev).map_err(|e| io(&prev, e))?;
        }
        std::fs::rename(dir, &prev).map_err(|e| io(dir, e))?;
    }
    std::fs::rename(&tmp, dir).map_err(|e| io(dir, e))?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent).map_err(|e| io(parent, e))?;
    }
    Ok(())
}

/// The top-level fields where `now` and `then` differ, as `key = now (the checkpoint's: then)`,
/// nested tables by dotted keys.
fn config_diff(now: &Value, then: &Value, prefix: &str, out: &mut Vec<String>) {
    match (now, then) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => config_diff(x, y, &key, out),
                    (Some(x), None) => out.push(format!("{key} = {x} (not in the checkpoint's)")),
                    (None, Some(y)) => out.push(format!("{key} absent (the checkpoint's: {y})")),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a != b => out.push(format!("{prefix} = {a} (the checkpoint's: {b})")),
        _ => {}
    }
}

/// Checks the set at `set` against `expect` and returns its step; reads every file once.
pub fn verify_set(set: &Path, expect: &Stamp) -> Result<u64, NnError> {
    verify(set, expect).map(|(step, _)| step)
}

/// [`verify_set`], also returning the commit that wrote the set.
fn verify(set: &Path, expect: &Stamp) -> Result<(u64, String), NnError> {
    let mpath = set.join(MANIFEST);
    let bytes = match std::fs::read(&mpath) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(bad(
                &mpath,
                "missing: the set is incomplete or was not written by this Kestrel (sets carry a \
                 manifest since format 1)",
            ));
        }
        Err(e) => return Err(io_err(&mpath, e)),
    };
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| bad(&mpath, format!("not a manifest (not JSON: {e})")))?;
    let Value::Object(mut body) = value else {
        return Err(bad(&mpath, "not a manifest (not a JSON object)"));
    };
    let format = body.get("format").and_then(Value::as_u64);
    if format != Some(FORMAT) {
        return Err(bad(
            &mpath,
            format!(
                "format {}; this build reads format {FORMAT}",
                body.get("format").map_or("missing".into(), Value::to_string)
            ),
        ));
    }
    let sum = body.remove("sha256");
    if sum.as_ref().and_then(Value::as_str) != Some(self_sum(&body).as_str()) {
        return Err(bad(&mpath, "its checksum does not match its contents (edited or corrupted)"));
    }
    let field = |k: &str| body.get(k).ok_or_else(|| bad(&mpath, format!("no `{k}`")));
    let text = |k: &str| {
        field(k)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| bad(&mpath, format!("`{k}` is not a string")))
    };
    let kind = text("kind")?;
    if kind != expect.kind {
        return Err(bad(
            &mpath,
            format!("a checkpoint of a `{kind}` run; this is a `{}` run", expect.kind),
        ));
    }
    let config = field("config")?;
    let recorded = text("fingerprint")?;
    if recorded != fingerprint(&kind, config) {
        return Err(bad(&mpath, "its config does not match its fingerprint (edited)"));
    }
    if recorded != expect.fingerprint {
        let mut diff = Vec::new();
        config_diff(&expect.config, config, "", &mut diff);
        let shown = diff.iter().take(6).cloned().collect::<Vec<_>>().join("; ");
        let more =
            if diff.len() > 6 { format!("; and {} more", diff.len() - 6) } else { "".into() };
        return Err(bad(
            &mpath,
            format!(
                "the run's config (config.toml and the launch's settings) is not the one this \
                 checkpoint was written under: {shown}{more}"
            ),
        ));
    }
    let step = field("step")?.as_u64().ok_or_else(|| bad(&mpath, "`step` is not an integer"))?;
    let commit = text("commit")?;
    let listed =
        field("files")?.as_object().ok_or_else(|| bad(&mpath, "`files` is not a table"))?;
    let present = files_of(set)?;
    if let Some(extra) = present.iter().find(|n| !listed.contains_key(*n)) {
        return Err(bad(&set.join(extra), "not part of the set (not in manifest.json)"));
    }
    for (name, entry) in listed {
        let p = set.join(name);
        if !present.contains(name) {
            return Err(bad(&p, "missing (listed in manifest.json)"));
        }
        let want_len = entry["bytes"].as_u64();
        let want_sum = entry["sha256"].as_str();
        let (len, sum) = digest_file(&p, false)?;
        if want_len != Some(len) {
            return Err(bad(
                &p,
                format!(
                    "{len} bytes; manifest.json records {} (truncated or replaced)",
                    entry["bytes"]
                ),
            ));
        }
        if want_sum != Some(sum.as_str()) {
            return Err(bad(
                &p,
                "its SHA-256 differs from manifest.json's (corrupted, or a file of another set)",
            ));
        }
    }
    Ok((step, commit))
}

/// The newest checkpoint set at `dir` (written by [`write_checkpoint_set`]) that verifies
/// against `expect`: `dir` itself, or `<dir>.tmp` when a kill came after its manifest was
/// written but before the swap, or `<dir>.prev`. `Ok(None)` when no set was ever completed
/// (`<dir>.tmp` without a manifest is an interrupted write). When a newer set does not verify
/// and the previous one does, the previous one is taken and the note says why; when none
/// verifies, the error is the newest set's (and the previous one's).
pub fn checkpoint_set(dir: &Path, expect: &Stamp) -> Result<Option<Verified>, NnError> {
    let tmp = dir.with_extension("tmp");
    let prev = dir.with_extension("prev");
    let mut failed: Vec<NnError> = Vec::new();
    for (set, always) in [(dir, true), (tmp.as_path(), false), (prev.as_path(), true)] {
        if !set.exists() {
            continue;
        }
        if !always && !set.join(MANIFEST).is_file() {
            continue; // an interrupted write
        }
        match verify(set, expect) {
            Ok((step, commit)) => {
                let why = if let Some(e) = failed.first() {
                    Some(format!("{e}; using {} (step {step}), which verifies", set.display()))
                } else if set == tmp {
                    Some(format!(
                        "{}: the newest set was complete but not yet swapped in when the run \
                         stopped; using it",
                        set.display()
                    ))
                } else if set == prev {
                    Some(format!(
                        "{}: the newest set was incomplete; using the one before it (step {step})",
                        set.display()
                    ))
                } else {
                    None
                };
                let other_build = (commit != expect.commit).then(|| {
                    format!(
                        "{}: step {step} was written by commit {commit}; this build is {}",
                        set.display(),
                        expect.commit
                    )
                });
                let note = match (why, other_build) {
                    (Some(a), Some(b)) => Some(format!("{a}; {b}")),
                    (a, b) => a.or(b),
                };
                return Ok(Some(Verified { path: set.to_path_buf(), step, note }));
            }
            Err(e) => failed.push(e),
        }
    }
    match failed.len() {
        0 => Ok(None),
        1 => Err(failed.remove(0)),
        _ => {
            let first = failed.remove(0);
            let NnError::Format { path, what } = first else { return Err(first) };
            // The same reason for every set (an edited config) is said once.
            let rest: Vec<String> = failed
                .iter()
                .map(|e| match e {
                    NnError::Format { what: w, .. } if *w == what => "the same".to_string(),
                    e => e.to_string(),
                })
                .collect();
            let what =
                format!("{what}; the previous set does not verify either: {}", rest.join("; "));
            Err(NnError::Format { path, what })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn stamp(lr: f64) -> Stamp {
        Stamp::new("allo", json!({"lr": lr, "map": "GridRoom-4", "nested": {"d": 3}}), "abc")
    }

    fn save(dir: &Path, step: u64, body: &str) {
        write_checkpoint_set(dir, &stamp(0.1), step, |tmp| -> Result<(), NnError> {
            std::fs::write(tmp.join("a.bin"), format!("{body}-a")).unwrap();
            std::fs::write(tmp.join("b.bin"), format!("{body}-b")).unwrap();
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_written_set_verifies_and_names_its_step() {
        let root = scratch("ok");
        let ck = root.join("checkpoint");
        assert_eq!(checkpoint_set(&ck, &stamp(0.1)).unwrap(), None);
        save(&ck, 10, "one");
        save(&ck, 20, "two");
        let v = checkpoint_set(&ck, &stamp(0.1)).unwrap().unwrap();
        assert_eq!((v.path, v.step, v.note), (ck.clone(), 20, None));
        assert_eq!(verify_set(&ck.with_extension("prev"), &stamp(0.1)).unwrap(), 10);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn another_config_is_refused_naming_the_fields() {
        let root = scratch("config");
        let ck = root.join("checkpoint");
        save(&ck, 10, "one");
        let e = checkpoint_set(&ck, &stamp(0.2)).unwrap_err().to_string();
        assert!(
            e.contains("lr = 0.2 (the checkpoint's: 0.1)") && e.contains("manifest.json"),
            "{e}"
        );
        let other = Stamp::new("hunt", json!({}), "abc");
        let e = checkpoint_set(&ck, &other).unwrap_err().to_string();
        assert!(e.contains("a checkpoint of a `allo` run"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_damaged_newest_set_falls_back_to_the_previous_one_and_says_so() {
        let root = scratch("fallback");
        let ck = root.join("checkpoint");
        save(&ck, 10, "one");
        save(&ck, 20, "two");
        std::fs::write(ck.join("a.bin"), "TWO-a").unwrap();
        let v = checkpoint_set(&ck, &stamp(0.1)).unwrap().unwrap();
        assert_eq!(v.step, 10);
        let note = v.note.unwrap();
        assert!(
            note.contains("a.bin") && note.contains("SHA-256") && note.contains("step 10"),
            "{note}"
        );
        // Both damaged: the error names the newest set's file and the previous set's.
        std::fs::write(ck.with_extension("prev").join("b.bin"), "x").unwrap();
        let e = checkpoint_set(&ck, &stamp(0.1)).unwrap_err().to_string();
        assert!(e.contains("a.bin") && e.contains("b.bin") && e.contains("bytes"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn swapped_missing_extra_and_edited_files_are_each_named() {
        let root = scratch("files");
        let ck = root.join("checkpoint");
        let check = |what: &str, f: &dyn Fn(&Path)| {
            let _ = std::fs::remove_dir_all(&root);
            save(&ck, 10, "one");
            save(&ck, 20, "two");
            f(&ck);
            std::fs::remove_dir_all(ck.with_extension("prev")).unwrap();
            let e = checkpoint_set(&ck, &stamp(0.1)).unwrap_err().to_string();
            assert!(e.contains(what), "{what}: {e}");
        };
        check("a.bin: missing", &|d| std::fs::remove_file(d.join("a.bin")).unwrap());
        check("c.bin: not part of the set", &|d| std::fs::write(d.join("c.bin"), "").unwrap());
        check("a.bin: its SHA-256", &|d| {
            let prev = d.with_extension("prev").join("a.bin");
            std::fs::write(d.join("a.bin"), std::fs::read(prev).unwrap()).unwrap()
        });
        check("edited or corrupted", &|d| {
            let m = d.join(MANIFEST);
            let t = std::fs::read_to_string(&m).unwrap().replace("\"step\": 20", "\"step\": 999");
            std::fs::write(m, t).unwrap()
        });
        check("manifest.json: missing", &|d| std::fs::remove_file(d.join(MANIFEST)).unwrap());
        check("format 2", &|d| {
            let m = d.join(MANIFEST);
            let t = std::fs::read_to_string(&m).unwrap().replace("\"format\": 1", "\"format\": 2");
            std::fs::write(m, t).unwrap()
        });
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_kill_between_the_renames_or_while_writing_leaves_a_set_that_verifies() {
        let root = scratch("swap");
        let ck = root.join("checkpoint");
        save(&ck, 10, "one");
        save(&ck, 20, "two");
        // Between the two renames: the new set whole in `.tmp`, `dir` gone.
        std::fs::rename(&ck, ck.with_extension("tmp")).unwrap();
        let v = checkpoint_set(&ck, &stamp(0.1)).unwrap().unwrap();
        assert_eq!((v.path, v.step), (ck.with_extension("tmp"), 20));
        assert!(v.note.unwrap().contains("not yet swapped"));
        // While writing: `.tmp` without its manifest is passed over for `.prev`.
        std::fs::remove_file(ck.with_extension("tmp").join(MANIFEST)).unwrap();
        let v = checkpoint_set(&ck, &stamp(0.1)).unwrap().unwrap();
        assert_eq!((v.path, v.step), (ck.with_extension("prev"), 10));
        assert!(v.note.unwrap().contains("incomplete"));
        // The next save starts over from a clean `.tmp`.
        save(&ck, 30, "three");
        assert_eq!(checkpoint_set(&ck, &stamp(0.1)).unwrap().unwrap().step, 30);
        assert_eq!(std::fs::read_to_string(ck.join("a.bin")).unwrap(), "three-a");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_interrupted_write_is_passed_over_and_another_build_is_reported() {
        let root = scratch("tmp");
        let ck = root.join("checkpoint");
        std::fs::create_dir_all(ck.with_extension("tmp")).unwrap();
        assert_eq!(checkpoint_set(&ck, &stamp(0.1)).unwrap(), None);
        save(&ck, 10, "one");
        let newer = Stamp { commit: "def".into(), ..stamp(0.1) };
        let v = checkpoint_set(&ck, &newer).unwrap().unwrap();
        assert!(v.note.unwrap().contains("written by commit abc; this build is def"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
