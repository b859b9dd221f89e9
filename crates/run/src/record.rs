//! Run folders and their record.

use crate::base::{COMMIT, RunError, VERSION, write_atomic};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Seconds since the Unix epoch, now. The run writer records wall time; nothing is computed
/// from it.
#[allow(clippy::disallowed_methods)]
fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `YYYY-MM-DDTHH:MM:SSZ` for Unix seconds `t` (proleptic Gregorian, UTC).
pub fn utc_timestamp(t: f64) -> String {
    let secs = t.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Whether process `pid` runs (on this machine).
pub(crate) fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// A folder name part: lower-case letters, digits and `_` kept, every other run of
/// characters one `-`, at most 48 characters.
pub(crate) fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    out.chars().take(48).collect::<String>().trim_end_matches('-').to_string()
}

/// `<area>-<name>-s<seed>-<YYYYMMDD-HHMMSS>` (name slugged; a repeated area prefix dropped).
pub fn folder_name(area: &str, name: &str, seed: u64, unix_seconds: f64) -> String {
    let (area, name) = (slug(area), slug(name));
    let name = name.strip_prefix(&format!("{area}-")).unwrap_or(&name).to_string();
    let ts = utc_timestamp(unix_seconds).replace(['-', ':'], "").replace('T', "-");
    let ts = ts.trim_end_matches('Z');
    if name.is_empty() || name == area {
        format!("{area}-s{seed}-{ts}")
    } else {
        format!("{area}-{name}-s{seed}-{ts}")
    }
}

/// One launch of a run (a resumed run has several).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// The command line (or the Python call) that started it.
    pub argv: Vec<String>,
    /// Kestrel version of the build.
    pub version: String,
    /// Commit of the build.
    pub commit: String,
    /// Start, UTC.
    pub started: String,
    /// End, UTC (`None` while running or if the process died).
    pub ended: Option<String>,
    /// Wall seconds.
    pub wall_seconds: Option<f64>,
    /// `running`, `ok` or `failed`.
    pub status: String,
    /// The error of a failed launch.
    pub error: Option<String>,
    /// What the launch found and accepted that a reader should know (a resume from the
    /// previous checkpoint set because the newest did not verify, and why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `record.json`: what the run is and every launch of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Area (`evo`, `mppi`, `allo`, ...).
    pub area: String,
    /// Name within the area.
    pub name: String,
    /// Seed.
    pub seed: u64,
    /// Every launch, the first one first.
    pub launches: Vec<LaunchRecord>,
}

/// A run folder: created (or reopened on resume), its record kept up to date. While it is
/// held, `run.lock` (holding the process id) stops a second process from writing the same
/// run; a lock left by a process that no longer runs is taken over.
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    record: RunRecord,
    started: Instant,
}

/// Takes `dir/run.lock` for this process.
fn lock(dir: &Path) -> Result<(), RunError> {
    let path = dir.join("run.lock");
    let me = std::process::id();
    for _ in 0..2 {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut f) => {
                use std::io::Write;
                f.write_all(me.to_string().as_bytes())
                    .map_err(|e| RunError::io(&path, "cannot write", e))?;
                return Ok(());
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = std::fs::read_to_string(&path).unwrap_or_default();
                let pid: Option<u32> = holder.trim().parse().ok();
                let alive = pid.is_some_and(|p| p != me && process_alive(p));
                if alive {
                    return Err(RunError::Failed(format!(
                        "{}: process {} is writing this run; two processes must not write one run folder",
                        path.display(),
                        holder.trim()
                    )));
                }
                // Left by a process that died: take it over.
                std::fs::remove_file(&path)
                    .map_err(|e| RunError::io(&path, "cannot remove a stale lock", e))?;
            }
            Err(e) => return Err(RunError::io(&path, "cannot create", e)),
        }
    }
    Err(RunError::Failed(format!("{}: cannot take the lock", path.display())))
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(self.path.join("run.lock"));
    }
}

impl RunDir {
    /// Creates `root/<folder_name>/` (a `-2`, `-3`, ... suffix if it exists) and writes its
    /// record with this launch `running`.
    pub fn create(
        root: &Path,
        area: &str,
        name: &str,
        seed: u64,
        argv: Vec<String>,
    ) -> Result<Self, RunError> {
        Self::create_with(root, area, name, seed, argv, |_| Ok(()))
    }

    /// [`RunDir::create`] with the folder's first files written by `fill` (the resolved
    /// config) before it appears: the folder is built as a hidden `.NAME.partial-PID` beside
    /// it and renamed into place whole, so a run folder always holds its record and config.
    pub fn create_with(
        root: &Path,
        area: &str,
        name: &str,
        seed: u64,
        argv: Vec<String>,
        fill: impl FnOnce(&Path) -> Result<(), RunError>,
    ) -> Result<Self, RunError> {
        std::fs::create_dir_all(root).map_err(|e| RunError::io(root, "cannot create", e))?;
        let now = unix_now();
        let base = folder_name(area, name, seed, now);
        let partial = root.join(format!(".{base}.partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        std::fs::create_dir(&partial)
            .map_err(|e| RunError::io(&partial, "cannot create the run folder", e))?;
        lock(&partial)?;
        let record = RunRecord {
            area: area.into(),
            name: name.into(),
            seed,
            launches: vec![Self::launch(argv, now)],
        };
        let mut dir = RunDir { path: partial.clone(), record, started: Instant::now() };
        dir.write_record()?;
        fill(&partial)?;
        let mut k = 1;
        dir.path = loop {
            let p = root.join(if k == 1 { base.clone() } else { format!("{base}-{k}") });
            if !p.exists() {
                match std::fs::rename(&partial, &p) {
                    Ok(()) => break p,
                    Err(e) if k >= 10_000 => {
                        return Err(RunError::io(&p, "cannot create the run folder", e));
                    }
                    Err(_) => {}
                }
            }
            k += 1;
        };
        Ok(dir)
    }

    /// Reopens an existing run folder for a resumed launch (appended to its record).
    pub fn reopen(path: &Path, argv: Vec<String>) -> Result<Self, RunError> {
        let rec_path = path.join("record.json");
        if !rec_path.is_file() {
            return Err(RunError::Failed(format!(
                "{}: not a run folder (no record.json)",
                path.display()
            )));
        }
        lock(path)?;
        let text = std::fs::read_to_string(&rec_path)
            .map_err(|e| RunError::io(&rec_path, "cannot read (is this a run folder?)", e))?;
        let mut record: RunRecord = serde_json::from_str(&text).map_err(|e| RunError::Config {
            source_name: rec_path.display().to_string(),
            message: format!("not a run record: {e}"),
        })?;
        record.launches.push(Self::launch(argv, unix_now()));
        let dir = RunDir { path: path.to_path_buf(), record, started: Instant::now() };
        dir.write_record()?;
        Ok(dir)
    }

    fn launch(argv: Vec<String>, now: f64) -> LaunchRecord {
        LaunchRecord {
            argv,
            version: VERSION.into(),
            commit: COMMIT.into(),
            started: utc_timestamp(now),
            ended: None,
            wall_seconds: None,
            status: "running".into(),
            error: None,
            notes: Vec::new(),
        }
    }

    fn write_record(&self) -> Result<(), RunError> {
        let text = serde_json::to_string_pretty(&self.record).expect("a record serialises");
        write_atomic(&self.path.join("record.json"), text.as_bytes())
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A file in the folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The record so far.
    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    /// Writes the resolved config as `config.toml` (which `--config` accepts again).
    pub fn write_config<T: Serialize>(&self, config: &T) -> Result<(), RunError> {
        let text = crate::config::to_toml(config)?;
        write_atomic(&self.join("config.toml"), text.as_bytes())
    }

    /// Adds `note` to this launch's record (written at once).
    pub fn note(&mut self, note: &str) -> Result<(), RunError> {
        if let Some(l) = self.record.launches.last_mut() {
            l.notes.push(note.to_string());
        }
        self.write_record()
    }

    /// Seconds since this launch started.
    pub fn elapsed(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Records the end of this launch (`status`: `ok`, `failed` or `interrupted`, with the
    /// error) and releases the lock.
    pub fn finish(mut self, status: &str, error: Option<&str>) -> Result<(), RunError> {
        let wall = self.elapsed();
        if let Some(l) = self.record.launches.last_mut() {
            l.ended = Some(utc_timestamp(unix_now()));
            l.wall_seconds = Some(wall);
            l.status = status.into();
            l.error = error.map(str::to_string);
        }
        self.write_record()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_folder_names_are_readable() {
        assert_eq!(utc_timestamp(0.0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400.0), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_795_000_000.0), "2026-11-18T11:06:40Z");
        assert_eq!(
            folder_name("allo", "allo-../shared/data/GridMaze-19.txt", 3, 0.0),
            "allo-shared-data-gridmaze-19-txt-s3-19700101-000000"
        );
        assert_eq!(
            folder_name("evo", "cma-es rosenbrock", 0, 0.0),
            "evo-cma-es-rosenbrock-s0-19700101-000000"
        );
    }

    #[test]
    fn a_run_folder_records_each_launch() {
        let root = std::env::temp_dir().join(format!("kestrel-rundir-{}", std::process::id()));
        let d = RunDir::create(&root, "evo", "x", 1, vec!["kestrel".into(), "evo".into()]).unwrap();
        let d2 = RunDir::create(&root, "evo", "x", 1, vec![]).unwrap();
        assert_ne!(d.path(), d2.path());
        let path = d.path().to_path_buf();
        d.finish("ok", None).unwrap();
        let r = RunDir::reopen(&path, vec!["resume".into()]).unwrap();
        r.finish("failed", Some("disk full")).unwrap();
        let rec: RunRecord =
            serde_json::from_str(&std::fs::read_to_string(path.join("record.json")).unwrap())
                .unwrap();
        assert_eq!(rec.launches.len(), 2);
        assert_eq!(rec.launches[0].status, "ok");
        assert_eq!(rec.launches[1].status, "failed");
        assert_eq!(rec.launches[1].error.as_deref(), Some("disk full"));
        assert_eq!(rec.launches[0].commit, COMMIT);
        assert!(!path.join("run.lock").exists());
        // A held folder cannot be reopened by another writer; a stale lock is taken over.
        let held = RunDir::reopen(&path, vec![]).unwrap();
        std::fs::write(path.join("run.lock"), "1").unwrap(); // pid 1 is always alive
        let e = RunDir::reopen(&path, vec![]).unwrap_err().to_string();
        assert!(e.contains("run.lock") && e.contains("process 1"), "{e}");
        std::fs::write(path.join("run.lock"), "4294967295").unwrap();
        RunDir::reopen(&path, vec![]).unwrap().finish("ok", None).unwrap();
        drop(held);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
