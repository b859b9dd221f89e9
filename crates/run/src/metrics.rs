//! `metrics.jsonl`, written off the run's thread.

use crate::base::{RunError, write_atomic};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

/// Metric lines written by a background thread, one schema for every run type: each line is
/// `{"global_step": N, "wall_time": s, "steps_per_second": r, ...the run's fields}`, where
/// `wall_time` counts from this launch's start and the rate from the first step logged in it.
/// The file is flushed whenever the queue empties, so a killed run keeps what it logged; the
/// first I/O error stops the sink and is returned by the next [`MetricsSink::log`] (naming the
/// path), so the run stops at once.
pub struct MetricsSink {
    path: PathBuf,
    tx: Option<mpsc::Sender<String>>,
    handle: Option<std::thread::JoinHandle<()>>,
    error: Arc<Mutex<Option<String>>>,
    start: Instant,
    first_step: Option<u64>,
}

impl MetricsSink {
    /// A new (truncated) `metrics.jsonl` at `path`.
    pub fn create(path: &Path) -> Result<Self, RunError> {
        let f = std::fs::File::create(path).map_err(|e| RunError::io(path, "cannot create", e))?;
        Ok(Self::on(path, f))
    }

    /// Reopens a resumed run's file, first dropping the lines its checkpoint does not cover
    /// (`global_step >= next_step`, written after the checkpoint by a run that was then
    /// killed) and an unfinished last line; the kept lines are rewritten atomically, so the
    /// file holds each step once and in order after the resumed run.
    pub fn resume(path: &Path, next_step: u64) -> Result<Self, RunError> {
        if path.exists() {
            let text = crate::base::read_text(path)?;
            let mut kept = String::with_capacity(text.len());
            for (i, line) in text.split_inclusive('\n').enumerate() {
                let Some(body) = line.strip_suffix('\n') else { break };
                let bad = |what: String| RunError::Config {
                    source_name: path.display().to_string(),
                    message: format!("line {}: {what}", i + 1),
                };
                let v: Value =
                    serde_json::from_str(body).map_err(|_| bad(format!("not JSON: {body:?}")))?;
                let at = v["global_step"]
                    .as_u64()
                    .ok_or_else(|| bad("field global_step missing or not a count".into()))?;
                if at < next_step {
                    kept.push_str(line);
                }
            }
            write_atomic(path, kept.as_bytes())?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| RunError::io(path, "cannot open for appending", e))?;
        Ok(Self::on(path, f))
    }

    fn on(path: &Path, f: std::fs::File) -> Self {
        let (tx, rx) = mpsc::channel::<String>();
        let error = Arc::new(Mutex::new(None));
        let err = error.clone();
        let shown = path.display().to_string();
        let handle = std::thread::spawn(move || {
            let mut w = std::io::BufWriter::new(f);
            let write = |line: &str, w: &mut std::io::BufWriter<std::fs::File>| {
                w.write_all(line.as_bytes()).and_then(|_| w.write_all(b"\n"))
            };
            while let Ok(first) = rx.recv() {
                let mut result = Ok(());
                for line in std::iter::once(first).chain(rx.try_iter()) {
                    result = result.and_then(|_| write(&line, &mut w));
                }
                if let Err(e) = result.and_then(|_| w.flush()) {
                    *err.lock().unwrap_or_else(|p| p.into_inner()) =
                        Some(format!("{shown}: cannot write: {e}"));
                    return;
                }
            }
        });
        MetricsSink {
            path: path.to_path_buf(),
            tx: Some(tx),
            handle: Some(handle),
            error,
            start: Instant::now(),
            first_step: None,
        }
    }

    fn failed(&self) -> Option<RunError> {
        let e = self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        Some(RunError::io(&self.path, "cannot write", std::io::Error::other(e)))
    }

    /// Queues one line for `global_step` with the run's `fields` (a JSON object; other values
    /// are stored under `value`).
    pub fn log(&mut self, global_step: u64, fields: Value) -> Result<(), RunError> {
        if let Some(e) = self.failed() {
            return Err(e);
        }
        let wall = self.start.elapsed().as_secs_f64();
        let first = *self.first_step.get_or_insert(global_step.saturating_sub(1));
        let rate = (global_step - first.min(global_step)) as f64 / wall.max(1e-9);
        let mut line = Map::new();
        line.insert("global_step".into(), global_step.into());
        line.insert("wall_time".into(), wall.into());
        line.insert("steps_per_second".into(), rate.into());
        match fields {
            Value::Object(m) => line.extend(m),
            other => {
                line.insert("value".into(), other);
            }
        }
        if let Some(tx) = &self.tx {
            let _ = tx.send(Value::Object(line).to_string());
        }
        Ok(())
    }

    /// Flushes, joins the writer and reports any I/O error.
    pub fn finish(mut self) -> Result<(), RunError> {
        self.close();
        match self.failed() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Every line of a `metrics.jsonl` as JSON (the whole run's curve, a resumed run's earlier
/// launches included); an error names the file and the line.
pub fn read_metrics(path: &Path) -> Result<Vec<Value>, RunError> {
    let mut rows = Vec::new();
    for_each_metric(path, |v| rows.push(v))?;
    Ok(rows)
}

/// [`read_metrics`] one line at a time, holding one line in memory (a long run's file is
/// gigabytes as parsed JSON).
pub fn for_each_metric(path: &Path, mut f: impl FnMut(Value)) -> Result<(), RunError> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| RunError::io(path, "cannot read", e))?;
    let mut line = String::new();
    let mut reader = std::io::BufReader::new(file);
    for i in 1.. {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| RunError::Config {
            source_name: path.display().to_string(),
            message: format!("line {i}: {e}"),
        })?;
        if n == 0 {
            return Ok(());
        }
        f(serde_json::from_str(line.trim_end()).map_err(|e| RunError::Config {
            source_name: path.display().to_string(),
            message: format!("line {i}: not JSON: {e}"),
        })?);
    }
    Ok(())
}

impl MetricsSink {
    /// Ends the queue and waits for the writer (it flushes what was queued).
    fn close(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for MetricsSink {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_reach_the_disk_before_the_run_ends_and_share_one_schema() {
        let dir = std::env::temp_dir().join(format!("kestrel-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("metrics.jsonl");
        let mut m = MetricsSink::create(&path).unwrap();
        m.log(1, serde_json::json!({"loss": 0.5})).unwrap();
        let t0 = Instant::now();
        let mut text = String::new();
        while text.is_empty() && t0.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(10));
            text = std::fs::read_to_string(&path).unwrap();
        }
        let v: Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["global_step"], 1);
        assert_eq!(v["loss"], 0.5);
        assert!(v["wall_time"].is_f64() && v["steps_per_second"].is_f64());
        m.log(2, serde_json::json!({"loss": 0.4})).unwrap();
        m.finish().unwrap();
        // A resume from step 2 drops line 2 and a torn last line.
        std::fs::write(&path, format!("{}{}", text, "{\"global_step\": 2}\n{\"global_")).unwrap();
        let mut m = MetricsSink::resume(&path, 2).unwrap();
        m.log(2, serde_json::json!({"loss": 0.3})).unwrap();
        m.finish().unwrap();
        let lines: Vec<Value> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["loss"], 0.3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_write_error_names_the_path_and_stops_the_run() {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let full = Path::new("/dev/full");
        if !full.exists() {
            eprintln!("SKIP: no /dev/full");
            return;
        }
        let f = std::fs::OpenOptions::new().write(true).open(full).unwrap();
        let mut m = MetricsSink::on(full, f);
        let t0 = Instant::now();
        let mut err = None;
        while err.is_none() && t0.elapsed().as_secs() < 20 {
            err = m.log(1, serde_json::json!({"x": 1})).err();
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let e = err.expect("the sink reports the failed write").to_string();
        assert!(e.contains("/dev/full"), "{e}");
        assert!(m.finish().is_err());
    }
}
