//! Run folders, background metric writing, progress lines and small PNG plots.

use anyhow::{Context, Result};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Instant;

/// `runs/<area>-<name>-<seed>-<unix time>/`, created now.
#[allow(clippy::disallowed_methods)] // the binary may read the clock; libraries may not
pub fn run_dir(area: &str, name: &str, seed: u64, root: Option<&Path>) -> Result<PathBuf> {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let base = root.unwrap_or(Path::new("runs"));
    std::fs::create_dir_all(base).with_context(|| format!("{}: cannot create", base.display()))?;
    // create_dir (not _all) fails if the folder exists, so two runs never share one.
    for k in 0.. {
        let suffix = if k == 0 { String::new() } else { format!("-{k}") };
        let dir = base.join(format!("{area}-{name}-{seed}-{t}{suffix}"));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("{}: cannot create the run folder", dir.display()));
            }
        }
    }
    unreachable!("the loop returns")
}

/// Writes a file atomically (temp file + rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
}

/// The git commit of the working directory, if any.
pub fn git_commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// JSON lines written to `metrics.jsonl` by a background thread, so the optimisation loop
/// never blocks on I/O.
pub struct MetricsWriter {
    tx: Option<mpsc::Sender<String>>,
    handle: Option<std::thread::JoinHandle<Result<()>>>,
}

impl MetricsWriter {
    /// Starts the writer thread on a new (truncated) file.
    pub fn new(path: &Path) -> Result<Self> {
        let f = std::fs::File::create(path)
            .with_context(|| format!("{}: cannot create", path.display()))?;
        Self::on(f)
    }

    /// Starts the writer thread appending to `path`.
    fn append(path: &Path) -> Result<Self> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("{}: cannot open for appending", path.display()))?;
        Self::on(f)
    }

    /// Reopens a resumed run's file, first dropping the lines its checkpoint does not cover:
    /// those whose `field` is `next` or more (written after the checkpoint by a run that was
    /// then killed) and an unfinished last line. The kept lines are rewritten atomically, so
    /// the file holds each step once and in order after the resumed run.
    pub fn resume(path: &Path, field: &str, next: u64) -> Result<Self> {
        if path.exists() {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("{}: cannot read", path.display()))?;
            let mut kept = String::with_capacity(text.len());
            for (i, line) in text.split_inclusive('\n').enumerate() {
                let Some(body) = line.strip_suffix('\n') else { break };
                let v: serde_json::Value = serde_json::from_str(body).with_context(|| {
                    format!("{}: line {} is not JSON: {body:?}", path.display(), i + 1)
                })?;
                let at = v[field].as_u64().with_context(|| {
                    format!(
                        "{}: line {}: field {field} missing or not a count",
                        path.display(),
                        i + 1
                    )
                })?;
                if at < next {
                    kept.push_str(line);
                }
            }
            write_atomic(path, kept.as_bytes())?;
        }
        Self::append(path)
    }

    fn on(f: std::fs::File) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<String>();
        let handle = std::thread::spawn(move || -> Result<()> {
            let mut w = std::io::BufWriter::new(f);
            // Flushed whenever the queue is empty, so a killed run keeps every line it produced
            // (the writer is off the training thread; the cost is not on it).
            while let Ok(first) = rx.recv() {
                for line in std::iter::once(first).chain(rx.try_iter()) {
                    w.write_all(line.as_bytes())?;
                    w.write_all(b"\n")?;
                }
                w.flush()?;
            }
            Ok(())
        });
        Ok(MetricsWriter { tx: Some(tx), handle: Some(handle) })
    }

    /// Queues one line.
    pub fn send(&self, v: serde_json::Value) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(v.to_string());
        }
    }

    /// Flushes and joins the writer.
    pub fn finish(mut self) -> Result<()> {
        drop(self.tx.take());
        match self.handle.take() {
            Some(h) => h.join().map_err(|_| anyhow::anyhow!("metrics writer panicked"))?,
            None => Ok(()),
        }
    }
}

/// A progress line with rate and ETA: redrawn in place on a terminal, a plain line every
/// `every` seconds otherwise.
pub struct Progress {
    total: u64,
    start: Instant,
    last: Instant,
    tty: bool,
    what: &'static str,
}

impl Progress {
    /// Progress over `total` units named `what`.
    pub fn new(total: u64, what: &'static str) -> Self {
        let now = Instant::now();
        Progress { total, start: now, last: now, tty: std::io::stderr().is_terminal(), what }
    }

    /// Reports `done` units, with a short status.
    pub fn tick(&mut self, done: u64, status: &str) {
        let every = if self.tty { 0.1 } else { 5.0 };
        if self.last.elapsed().as_secs_f64() < every && done < self.total {
            return;
        }
        self.last = Instant::now();
        let el = self.start.elapsed().as_secs_f64();
        let rate = done as f64 / el.max(1e-9);
        let eta = (self.total.saturating_sub(done)) as f64 / rate.max(1e-9);
        let pct = 100.0 * done as f64 / self.total.max(1) as f64;
        let line = format!(
            "{done}/{} {} ({pct:.0}%) {rate:.0}/s ETA {eta:.0}s {status}",
            self.total, self.what
        );
        if self.tty {
            eprint!("\r\x1b[2K{line}");
            if done >= self.total {
                eprintln!();
            }
        } else {
            eprintln!("{line}");
        }
    }
}

/// Median of `n` per-call times of `f(i)` in µs, after up to 10 warm-up calls.
pub fn median_us(n: u64, mut f: impl FnMut(u64)) -> f64 {
    for i in 0..n.min(10) {
        f(i);
    }
    let mut v: Vec<f64> = (0..n)
        .map(|i| {
            let t = std::time::Instant::now();
            f(i);
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Medians (µs) of `n` calls each of `f(i)` and `g(i)`, taken in alternation (`f(0)`, `g(0)`,
/// `f(1)`, …) after up to 10 warm-up pairs, so a ratio of the two is not skewed by the
/// machine's speed drifting between two separate timing runs.
pub fn median_pair_us(n: u64, mut f: impl FnMut(u64), mut g: impl FnMut(u64)) -> (f64, f64) {
    for i in 0..n.min(10) {
        f(i);
        g(i);
    }
    let (mut a, mut b) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
    for i in 0..n {
        let t = std::time::Instant::now();
        f(i);
        a.push(t.elapsed().as_secs_f64() * 1e6);
        let t = std::time::Instant::now();
        g(i);
        b.push(t.elapsed().as_secs_f64() * 1e6);
    }
    for v in [&mut a, &mut b] {
        v.sort_by(f64::total_cmp);
    }
    (a[a.len() / 2], b[b.len() / 2])
}

/// An RGB canvas for plots.
pub struct Canvas {
    /// Width.
    pub w: usize,
    /// Height.
    pub h: usize,
    /// Pixels, row-major RGB.
    pub px: Vec<u8>,
}

impl Canvas {
    /// A white canvas.
    pub fn new(w: usize, h: usize) -> Self {
        Canvas { w, h, px: vec![255; w * h * 3] }
    }
    fn set(&mut self, x: i64, y: i64, c: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            let i = (y as usize * self.w + x as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&c);
        }
    }
    /// A filled rectangle.
    pub fn rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: [u8; 3]) {
        for y in y0..y1 {
            for x in x0..x1 {
                self.set(x, y, c);
            }
        }
    }
    /// A line (Bresenham), two pixels thick.
    pub fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), c: [u8; 3]) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.set(x, y, c);
            self.set(x, y + 1, c);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }
    /// Text in a 3×5 pixel font scaled by `s` (digits, `.-+e`, and upper-case letters).
    pub fn text(&mut self, x: i64, y: i64, s: i64, t: &str, c: [u8; 3]) {
        for (k, ch) in t.chars().enumerate() {
            let g = glyph(ch.to_ascii_uppercase());
            for (row, bits) in g.iter().enumerate() {
                for col in 0..3 {
                    if bits >> (2 - col) & 1 != 0 {
                        self.rect(
                            x + (k as i64 * 4 + col) * s,
                            y + row as i64 * s,
                            x + (k as i64 * 4 + col + 1) * s,
                            y + (row as i64 + 1) * s,
                            c,
                        );
                    }
                }
            }
        }
    }
    /// Writes the canvas as PNG.
    pub fn save(&self, path: &Path) -> Result<()> {
        crate::arc::write_png(path, self.w, self.h, &self.px)
    }
}

fn glyph(c: char) -> [u8; 5] {
    match c {
        '0' => [7, 5, 5, 5, 7],
        '1' => [2, 6, 2, 2, 7],
        '2' => [7, 1, 7, 4, 7],
        '3' => [7, 1, 7, 1, 7],
        '4' => [5, 5, 7, 1, 1],
        '5' => [7, 4, 7, 1, 7],
        '6' => [7, 4, 7, 5, 7],
        '7' => [7, 1, 1, 1, 1],
        '8' => [7, 5, 7, 5, 7],
        '9' => [7, 5, 7, 1, 7],
        '.' => [0, 0, 0, 0, 2],
        '-' => [0, 0, 7, 0, 0],
        '+' => [0, 2, 7, 2, 0],
        ':' => [0, 2, 0, 2, 0],
        '/' => [1, 1, 2, 4, 4],
        '=' => [0, 7, 0, 7, 0],
        'A' => [2, 5, 7, 5, 5],
        'B' => [6, 5, 6, 5, 6],
        'C' => [7, 4, 4, 4, 7],
        'D' => [6, 5, 5, 5, 6],
        'E' => [7, 4, 6, 4, 7],
        'F' => [7, 4, 6, 4, 4],
        'G' => [7, 4, 5, 5, 7],
        'H' => [5, 5, 7, 5, 5],
        'I' => [7, 2, 2, 2, 7],
        'J' => [1, 1, 1, 5, 7],
        'K' => [5, 5, 6, 5, 5],
        'L' => [4, 4, 4, 4, 7],
        'M' => [5, 7, 7, 5, 5],
        'N' => [6, 5, 5, 5, 5],
        'O' => [7, 5, 5, 5, 7],
        'P' => [7, 5, 7, 4, 4],
        'Q' => [7, 5, 5, 7, 1],
        'R' => [7, 5, 6, 5, 5],
        'S' => [7, 4, 7, 1, 7],
        'T' => [7, 2, 2, 2, 2],
        'U' => [5, 5, 5, 5, 7],
        'V' => [5, 5, 5, 5, 2],
        'W' => [5, 5, 7, 7, 5],
        'X' => [5, 5, 2, 5, 5],
        'Y' => [5, 5, 2, 2, 2],
        'Z' => [7, 1, 2, 4, 7],
        _ => [0; 5],
    }
}

/// One plotted series: legend name, colour, `(x, y)` points.
pub type Series<'a> = (&'a str, [u8; 3], Vec<(f64, f64)>);

/// A line plot of `(x, y)` series on a log10 y-axis (non-positive values floored at 1e-300):
/// title, axis ticks with labels.
pub fn log_plot(series: &[Series<'_>], title: &str, xlabel: &str) -> Canvas {
    line_plot(series, title, xlabel, true)
}

/// A line plot of `(x, y)` series, on a log10 y-axis when `log` (non-positive values floored
/// at 1e-300), linear otherwise: title, axis ticks with labels.
pub fn line_plot(series: &[Series<'_>], title: &str, xlabel: &str, log: bool) -> Canvas {
    let (w, h, ml, mr, mt, mb) = (900usize, 560usize, 90i64, 30i64, 50i64, 60i64);
    let mut c = Canvas::new(w, h);
    let ty = |y: f64| if log { y.max(1e-300).log10() } else { y };
    let pts = series.iter().flat_map(|s| s.2.iter());
    let (mut x0, mut x1, mut y0, mut y1) =
        (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
    for &(x, y) in pts {
        let ly = ty(y);
        if ly.is_finite() {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(ly), y1.max(ly));
        }
    }
    if !x0.is_finite() {
        return c;
    }
    let (y0, y1) = if log {
        (y0.floor(), y1.ceil().max(y0.floor() + 1.0))
    } else if y1 > y0 {
        (y0, y1)
    } else {
        (y0 - 1.0, y0 + 1.0)
    };
    let x1 = if x1 > x0 { x1 } else { x0 + 1.0 };
    let (pw, ph) = (w as i64 - ml - mr, h as i64 - mt - mb);
    let px = |x: f64| ml + ((x - x0) / (x1 - x0) * pw as f64) as i64;
    let py = |ly: f64| mt + ph - ((ly - y0) / (y1 - y0) * ph as f64) as i64;
    let grey = [200, 200, 200];
    if log {
        let step = ((y1 - y0) / 8.0).ceil().max(1.0);
        let mut e = y0;
        while e <= y1 {
            c.line((ml, py(e)), (ml + pw, py(e)), grey);
            c.text(8, py(e) - 5, 2, &format!("1E{}", e as i64), [0, 0, 0]);
            e += step;
        }
    } else {
        for k in 0..=6 {
            let v = y0 + (y1 - y0) * k as f64 / 6.0;
            c.line((ml, py(v)), (ml + pw, py(v)), grey);
            c.text(8, py(v) - 5, 2, &format!("{v:.1}"), [0, 0, 0]);
        }
    }
    for k in 0..=5 {
        let x = x0 + (x1 - x0) * k as f64 / 5.0;
        c.line((px(x), mt), (px(x), mt + ph), grey);
        let label = format!("{}", x.round() as i64);
        let half = (label.len() as i64 * 8) / 2;
        c.text(
            (px(x) - half).min(w as i64 - 8 * label.len() as i64 - 2),
            mt + ph + 10,
            2,
            &label,
            [0, 0, 0],
        );
    }
    c.line((ml, mt + ph), (ml + pw, mt + ph), [0, 0, 0]);
    c.line((ml, mt), (ml, mt + ph), [0, 0, 0]);
    c.text(ml, 12, 3, title, [0, 0, 0]);
    c.text(ml + pw / 2 - 40, h as i64 - 22, 2, xlabel, [0, 0, 0]);
    for (k, (name, col, s)) in series.iter().enumerate() {
        c.text(ml + pw - 200, mt + 10 + k as i64 * 16, 2, name, *col);
        let mut prev: Option<(i64, i64)> = None;
        for &(x, y) in s {
            let ly = ty(y);
            if !ly.is_finite() {
                continue;
            }
            let p = (px(x), py(ly));
            if let Some(q) = prev {
                c.line(q, p, *col);
            }
            prev = Some(p);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_metric_line_reaches_the_disk_before_the_run_ends() {
        // A killed run keeps the lines it produced: one short line (far below any buffer size)
        // is on disk while the writer is still open.
        let dir = std::env::temp_dir().join(format!("kestrel-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("metrics.jsonl");
        let w = MetricsWriter::new(&path).unwrap();
        w.send(serde_json::json!({"step": 1}));
        let t0 = Instant::now();
        let mut text = String::new();
        while text.is_empty() && t0.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(10));
            text = std::fs::read_to_string(&path).unwrap();
        }
        assert_eq!(text, "{\"step\":1}\n");
        w.finish().unwrap();
    }
}
