//! Sweeps: a grid of configs × seeds of any run type, each cell an ordinary run folder, run
//! here one after another (`kestrel sweep --engine local`) or as Ray tasks by the Python
//! package (`kestrel.dist.sweep`, `kestrel sweep --engine ray`); both call [`Sweep::run_cell`],
//! so skipping, resuming and aggregating are this module's alone.
//!
//! A spec (TOML):
//!
//! ```toml
//! kind = "allo"                 # a run kind: `kestrel config` lists them
//! name = "table1"               # the sweep folder's name (default: the spec file's stem)
//! seeds = 3                     # seeds 0, 1, 2; or a list: seeds = [0, 7, 9]
//! metrics = ["cosine_similarity"]  # summary.json numbers tabulated (default: the kind's)
//! curve = "cosine_similarity"   # metrics.jsonl column plotted (default: the kind's)
//! # preset = "..."              # a preset of the kind the cells start from (optional)
//! [base]                        # the run config every cell shares
//! steps = 2000
//! [grid]                        # key (dotted for nested) -> values; the product is the configs
//! map = ["builtin:rooms-2-5", "builtin:open-7"]
//! ```
//!
//! Folder: `<out>/<name>/sweep.toml` (the spec; a restart must pass the same one), one cell
//! folder `c<config>-s<seed>/` per run holding that run's ordinary run folder, and after
//! [`Sweep::aggregate`] `table.md`, `table.json`, `table.csv`, `curves.png/svg`.
//!
//! A cell whose run finished (`record.json` says ok, `summary.json` exists, its `config.toml`
//! holds the cell's keys: an edited or foreign folder is refused) is skipped; a
//! resumable run (ALLO, hunt, actdyn) whose process died continues from its checkpoint; any
//! other unfinished run is removed and started again (evo, QD and MPPI tuning runs are
//! deterministic, so the result is the same). Every cell's config is checked before the sweep
//! folder is created.

use crate::base::{RunError, write_atomic};
use crate::launch::{Launch, Outcome};
use crate::record::RunRecord;
use crate::registry::RunKind;
use crate::run::{Layers, Outputs};
pub use crate::stats::Stats;
use kestrel_plot::{LinePlot, Series};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A finished cell's folder that is not this cell's run.
fn tampered(path: &Path, cell: &str, why: &str) -> RunError {
    RunError::Failed(format!(
        "{}: not the config of cell {cell} ({why}): the folder was edited or comes from \
         another sweep; remove the cell's folder to run it again",
        path.display()
    ))
}

/// The dotted key of the first value of `cell` (a cell's keys) that `saved` (a run folder's
/// whole config) lacks or holds differently, if any; an integer equals the same float.
fn first_difference(cell: &toml::Table, saved: &toml::Table, at: &str) -> Option<String> {
    use toml::Value as V;
    fn same(a: &V, b: &V) -> bool {
        match (a, b) {
            (V::Integer(x), V::Float(y)) | (V::Float(y), V::Integer(x)) => *x as f64 == *y,
            (V::Array(x), V::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
            }
            _ => a == b,
        }
    }
    cell.iter().find_map(|(k, v)| {
        let key = if at.is_empty() { k.clone() } else { format!("{at}.{k}") };
        match (v, saved.get(k)) {
            (V::Table(x), Some(V::Table(y))) => first_difference(x, y, &key),
            (v, Some(w)) if same(v, w) => None,
            _ => Some(key),
        }
    })
}

/// `seeds = N` (0..N) or `seeds = [..]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "seeds: a count (seeds = 5) or a list of whole numbers (seeds = [0, 7])"
)]
pub enum Seeds {
    /// Seeds `0..n`.
    Count(u64),
    /// These seeds.
    List(Vec<u64>),
}

/// A sweep spec (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The run type.
    pub kind: RunKind,
    /// The sweep folder's name.
    #[serde(default)]
    pub name: Option<String>,
    /// A preset of the kind every cell starts from instead of its defaults (`hunt`:
    /// `treasurehunt_mp`; `actdyn`: `e1`, `e2`).
    #[serde(default)]
    pub preset: Option<String>,
    /// The seeds every config runs with.
    pub seeds: Seeds,
    /// `summary.json` numbers tabulated.
    #[serde(default)]
    pub metrics: Option<Vec<String>>,
    /// The `metrics.jsonl` column plotted.
    #[serde(default)]
    pub curve: Option<String>,
    /// The config every cell shares.
    #[serde(default)]
    pub base: toml::Table,
    /// Key -> values; the cross product of the values gives the configs.
    #[serde(default)]
    pub grid: toml::Table,
}

/// One run of a sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// `c<config>-s<seed>`: the cell folder's name.
    pub id: String,
    /// Index of the config (the grid point).
    pub config: usize,
    /// The seed.
    pub seed: u64,
    /// The grid point: (key, value) for each grid key.
    pub point: Vec<(String, toml::Value)>,
    /// The full config table (base, grid point, seed).
    pub table: toml::Table,
}

/// Where a cell stands.
#[derive(Clone, Debug, PartialEq)]
pub enum CellStatus {
    /// Not started (or nothing usable left).
    New,
    /// A run folder whose run did not finish.
    Partial(PathBuf),
    /// The finished run's folder.
    Done(PathBuf),
}

/// What [`Sweep::run_cell`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum CellOutcome {
    /// Already finished: skipped.
    Skipped(PathBuf),
    /// Run from the start.
    Ran(Outcome),
    /// Continued from its checkpoint.
    Resumed(Outcome),
}

impl CellOutcome {
    /// The run folder.
    pub fn dir(&self) -> &Path {
        match self {
            CellOutcome::Skipped(d) => d,
            CellOutcome::Ran(o) | CellOutcome::Resumed(o) => &o.dir,
        }
    }
}

/// A planned sweep: the spec, its folder and every cell, each config checked.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The spec.
    pub spec: SweepSpec,
    /// The spec's text as written into the folder.
    pub spec_text: String,
    /// The sweep folder.
    pub dir: PathBuf,
    /// The cells, config-major then seed.
    pub cells: Vec<Cell>,
}

fn cfg_err(source: &str, message: String) -> RunError {
    RunError::Config { source_name: source.to_string(), message }
}

/// Sets a dotted key in a table, making the intermediate tables.
fn set_dotted(
    t: &mut toml::Table,
    key: &[&str],
    v: toml::Value,
    source: &str,
) -> Result<(), RunError> {
    let (last, parents) = key.split_last().ok_or_else(|| cfg_err(source, "an empty key".into()))?;
    let mut at = t;
    for p in parents {
        let e = at.entry(p.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        at = e
            .as_table_mut()
            .ok_or_else(|| cfg_err(source, format!("{}: {p} is not a table", key.join("."))))?;
    }
    at.insert(last.to_string(), v);
    Ok(())
}

/// A grid value as written in labels: a map path's file stem, a string as it is, any other
/// value in TOML.
fn value_label(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => {
            let s = s.trim_start_matches("builtin:");
            let s = s.rsplit('/').next().unwrap_or(s);
            s.trim_end_matches(".txt").to_string()
        }
        other => other.to_string(),
    }
}

/// The run folder inside a cell folder (hidden folders, a run being created, are ignored).
fn run_folder(cell_dir: &Path) -> Result<Option<PathBuf>, RunError> {
    let rd = match std::fs::read_dir(cell_dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RunError::io(cell_dir, "cannot read", e)),
    };
    let mut found = Vec::new();
    for e in rd {
        let e = e.map_err(|e| RunError::io(cell_dir, "cannot read", e))?;
        let p = e.path();
        let hidden = e.file_name().to_string_lossy().starts_with('.');
        if !hidden && p.join("record.json").is_file() {
            found.push(p);
        }
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop()),
        n => Err(RunError::Failed(format!(
            "{}: {n} run folders in one sweep cell; keep the one to use and remove the others",
            cell_dir.display()
        ))),
    }
}

/// Whether a live process (other than this one) holds a run folder's lock.
fn locked_by_other(folder: &Path) -> Option<String> {
    let holder = std::fs::read_to_string(folder.join("run.lock")).ok()?;
    let pid: u32 = holder.trim().parse().ok()?;
    (pid != std::process::id() && crate::record::process_alive(pid)).then(|| pid.to_string())
}

fn remove_dir(p: &Path) -> Result<(), RunError> {
    std::fs::remove_dir_all(p).map_err(|e| RunError::io(p, "cannot remove an unfinished run", e))
}

impl Sweep {
    /// Parses `text` (the spec, named `source` in errors) and plans the sweep under `out_dir`
    /// (`<out_dir>/<name>`); every cell's config is checked as its run would check it.
    /// Nothing is written.
    pub fn plan(text: &str, source: &str, out_dir: &Path) -> Result<Sweep, RunError> {
        Self::build(text, source, out_dir, true)
    }

    /// [`Sweep::plan`] without checking each cell's config: for a sweep already planned (the
    /// workers of the Ray engine, which run one cell each; a cell's run checks its own config).
    pub fn open(text: &str, source: &str, out_dir: &Path) -> Result<Sweep, RunError> {
        Self::build(text, source, out_dir, false)
    }

    fn build(text: &str, source: &str, out_dir: &Path, check: bool) -> Result<Sweep, RunError> {
        let spec: SweepSpec =
            toml::from_str(text).map_err(|e| cfg_err(source, crate::config::one_line(&e)))?;
        let seeds: Vec<u64> = match &spec.seeds {
            Seeds::Count(n) if *n > 100_000 => {
                return Err(cfg_err(source, format!("seeds = {n}: 1 to 100000 seeds")));
            }
            Seeds::Count(n) => (0..*n).collect(),
            Seeds::List(l) => l.clone(),
        };
        if seeds.is_empty() || seeds.len() > 100_000 {
            return Err(cfg_err(source, format!("seeds: {} seeds; 1 to 100000", seeds.len())));
        }
        let mut uniq = seeds.clone();
        uniq.sort_unstable();
        uniq.dedup();
        if uniq.len() != seeds.len() {
            return Err(cfg_err(source, format!("seeds = {seeds:?}: a seed is repeated")));
        }
        let name = match &spec.name {
            Some(n) => n.clone(),
            None => Path::new(source)
                .file_stem()
                .map_or("sweep".into(), |s| s.to_string_lossy().into_owned()),
        };
        if name.is_empty()
            || name.starts_with('.')
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(cfg_err(
                source,
                format!(
                    "name = {name:?}: letters, digits, '-', '_' and '.', not starting with '.'"
                ),
            ));
        }
        // The grid points, first key slowest.
        let mut points: Vec<Vec<(String, toml::Value)>> = vec![Vec::new()];
        for (k, vals) in &spec.grid {
            let vals = vals
                .as_array()
                .ok_or_else(|| cfg_err(source, format!("grid.{k} = {vals}: a list of values")))?;
            if vals.is_empty() {
                return Err(cfg_err(source, format!("grid.{k}: an empty list")));
            }
            if points.len().saturating_mul(vals.len()).saturating_mul(seeds.len()) > 1_000_000 {
                return Err(cfg_err(source, "grid: more than 1,000,000 runs".into()));
            }
            points = points
                .into_iter()
                .flat_map(|p| {
                    vals.iter().map(move |v| {
                        let mut q = p.clone();
                        q.push((k.clone(), v.clone()));
                        q
                    })
                })
                .collect();
        }
        let seed_key = spec.kind.seed_key();
        let mut cells = Vec::with_capacity(points.len() * seeds.len());
        for (ci, point) in points.iter().enumerate() {
            let mut table = spec.base.clone();
            for (k, v) in point {
                let key: Vec<&str> = k.split('.').collect();
                if key == seed_key {
                    return Err(cfg_err(source, format!("grid.{k}: seeds come from `seeds`")));
                }
                set_dotted(&mut table, &key, v.clone(), source)?;
            }
            for &seed in &seeds {
                let mut t = table.clone();
                let s = i64::try_from(seed)
                    .map_err(|_| cfg_err(source, format!("seeds: {seed} above 2^63")))?;
                set_dotted(&mut t, seed_key, toml::Value::Integer(s), source)?;
                let at = if point.is_empty() {
                    format!("{source} (seed {seed})")
                } else {
                    let p: Vec<String> = point.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    format!("{source} ({}, seed {seed})", p.join(", "))
                };
                if check {
                    let layers = Layers { preset: spec.preset.as_deref(), ..Layers::table(&t) };
                    spec.kind.check(layers, &at).map_err(|e| match e {
                        e @ RunError::Config { .. } => e,
                        e => cfg_err(&at, e.to_string()),
                    })?;
                    if seed == seeds[0] {
                        // The names depend on the config, not on its seed.
                        check_names(&spec, &spec.kind.outputs(layers)?, &at)?;
                    }
                }
                let slug: Vec<String> =
                    point.iter().map(|(_, v)| crate::record::slug(&value_label(v))).collect();
                let id = if slug.is_empty() {
                    format!("c{ci:03}-s{seed}")
                } else {
                    format!("c{ci:03}-{}-s{seed}", slug.join("-"))
                };
                cells.push(Cell { id, config: ci, seed, point: point.clone(), table: t });
            }
        }
        Ok(Sweep { spec, spec_text: text.to_string(), dir: out_dir.join(name), cells })
    }

    /// [`Sweep::plan`] from a spec file.
    pub fn from_file(path: &Path, out_dir: &Path) -> Result<Sweep, RunError> {
        let text = crate::base::read_text(path)?;
        Self::plan(&text, &path.display().to_string(), out_dir)
    }

    /// Creates the sweep folder with `sweep.toml`, or checks that an existing one holds the
    /// same spec (a restart).
    pub fn create(&self) -> Result<(), RunError> {
        let p = self.dir.join("sweep.toml");
        if p.exists() {
            let old = crate::base::read_text(&p)?;
            let same = toml::from_str::<SweepSpec>(&old).is_ok_and(|s| s == self.spec);
            if !same {
                return Err(RunError::Failed(format!(
                    "{}: this sweep folder holds a different spec; give the sweep another name or out dir",
                    p.display()
                )));
            }
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| RunError::io(&self.dir, "cannot create", e))?;
        write_atomic(&p, self.spec_text.as_bytes())
    }

    /// The cell named `id`.
    pub fn cell(&self, id: &str) -> Result<&Cell, RunError> {
        self.cells.iter().find(|c| c.id == id).ok_or_else(|| {
            RunError::Failed(format!("{}: no cell {id:?} in this sweep", self.dir.display()))
        })
    }

    /// Where cell `cell` stands.
    pub fn status(&self, cell: &Cell) -> Result<CellStatus, RunError> {
        let Some(folder) = run_folder(&self.dir.join(&cell.id))? else {
            return Ok(CellStatus::New);
        };
        let rec = folder.join("record.json");
        let text = crate::base::read_text(&rec)?;
        let done = serde_json::from_str::<RunRecord>(&text)
            .ok()
            .and_then(|r| r.launches.last().map(|l| l.status == "ok"))
            .unwrap_or(false);
        if !(done && folder.join("summary.json").is_file()) {
            return Ok(CellStatus::Partial(folder));
        }
        // A finished cell is skipped only if its folder ran this cell: every key the sweep
        // sets (base, grid point, seed) has the cell's value in the folder's `config.toml`
        // (the run writes its whole config there, derived values filled in). An edited file,
        // or another sweep's folder, is refused, never tabulated.
        let path = folder.join("config.toml");
        let saved: toml::Table = toml::from_str(&crate::base::read_text(&path)?)
            .map_err(|e| tampered(&path, &cell.id, &format!("not TOML: {}", e.message())))?;
        let keys = crate::config::with_new_keys(&cell.table, self.spec.kind.renamed());
        if let Some(key) = first_difference(&keys, &saved, "") {
            return Err(tampered(&path, &cell.id, &format!("its `{key}` differs from the cell's")));
        }
        Ok(CellStatus::Done(folder))
    }

    /// Runs cell `cell` (on the ambient rayon pool): skips a finished one, continues a
    /// resumable one from its checkpoint, otherwise starts it afresh. The run folder goes
    /// into the cell folder; `launch.out_dir` is ignored.
    pub fn run_cell(&self, cell: &Cell, mut launch: Launch<'_>) -> Result<CellOutcome, RunError> {
        let cell_dir = self.dir.join(&cell.id);
        let status = self.status(cell)?;
        let resume = match status {
            CellStatus::Done(d) => return Ok(CellOutcome::Skipped(d)),
            CellStatus::Partial(d) => {
                if let Some(pid) = locked_by_other(&d) {
                    return Err(RunError::Failed(format!(
                        "{}: process {pid} is running this cell",
                        d.display()
                    )));
                }
                if self.spec.kind.resumable() {
                    Some(d)
                } else {
                    remove_dir(&d)?;
                    None
                }
            }
            CellStatus::New => None,
        };
        // Folders a killed process left half-created.
        if let Ok(rd) = std::fs::read_dir(&cell_dir) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                let pid = n.rsplit_once(".partial-").and_then(|(_, p)| p.parse::<u32>().ok());
                if let Some(pid) = pid
                    && pid != std::process::id()
                    && !crate::record::process_alive(pid)
                {
                    remove_dir(&e.path())?;
                }
            }
        }
        launch.out_dir = cell_dir;
        let source = format!("{} cell {}", self.dir.join("sweep.toml").display(), cell.id);
        let resumed = resume.is_some();
        // A resumed cell keeps its folder's config, which the preset already made.
        let preset = if resumed { None } else { self.spec.preset.as_deref() };
        let layers = Layers { preset, ..Layers::table(&cell.table) };
        let out =
            self.spec.kind.launch(layers, resume.as_deref(), launch).map_err(|e| match e {
                RunError::Config { message, .. } => cfg_err(&source, message),
                e => e,
            })?;
        Ok(if resumed { CellOutcome::Resumed(out) } else { CellOutcome::Ran(out) })
    }

    /// The metrics tabulated.
    pub fn metric_names(&self) -> Vec<String> {
        self.spec.metric_names()
    }

    /// Reads every finished cell's summary and writes `table.md`, `table.json`, `table.csv`
    /// (per config and metric: runs, mean, sd, 95% interval from Student's t) and
    /// `curves.png/svg` (per config, the mean ± sd over seeds of the curve column against the
    /// global step). Returns the table.
    pub fn aggregate(&self) -> Result<SweepTable, RunError> {
        let names = self.metric_names();
        let curve_col = self.spec.curve.clone().unwrap_or(self.spec.kind.default_curve().into());
        let n_configs = self.cells.iter().map(|c| c.config + 1).max().unwrap_or(0);
        let mut rows = Vec::new();
        let mut curves: Vec<Vec<Vec<(u64, f64)>>> = vec![Vec::new(); n_configs];
        let mut missing = Vec::new();
        for ci in 0..n_configs {
            let cells: Vec<&Cell> = self.cells.iter().filter(|c| c.config == ci).collect();
            let mut values: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
            for c in &cells {
                let CellStatus::Done(d) = self.status(c)? else {
                    missing.push(c.id.clone());
                    continue;
                };
                let p = d.join("summary.json");
                let s: Value = std::fs::read_to_string(&p)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .ok_or_else(|| RunError::Failed(format!("{}: not a summary", p.display())))?;
                for (k, name) in names.iter().enumerate() {
                    if let Some(v) = s.get(name).and_then(Value::as_f64) {
                        values[k].push(v);
                    }
                }
                // One line at a time: only the curve's column is kept.
                let mut curve = Vec::new();
                crate::metrics::for_each_metric(&d.join("metrics.jsonl"), |l| {
                    let point =
                        (|| Some((l.get("global_step")?.as_u64()?, l.get(&curve_col)?.as_f64()?)))(
                        );
                    curve.extend(point);
                })?;
                curves[ci].push(curve);
            }
            let point = cells.first().map(|c| c.point.clone()).unwrap_or_default();
            let stats = names.iter().zip(&values).map(|(n, v)| (n.clone(), Stats::of(v))).collect();
            rows.push(TableRow { config: ci, point, stats });
        }
        let table = SweepTable { kind: self.spec.kind, metrics: names, rows, missing };
        write_atomic(&self.dir.join("table.md"), table.markdown().as_bytes())?;
        write_atomic(&self.dir.join("table.csv"), table.csv().as_bytes())?;
        let j = serde_json::to_string_pretty(&table.json()).unwrap_or_default();
        write_atomic(&self.dir.join("table.json"), j.as_bytes())?;
        let mut plot = LinePlot::new(format!(
            "sweep {}: {curve_col}, mean ± sd over seeds",
            self.spec.kind.name()
        ))
        .x_label("global step")
        .y_label(curve_col.clone());
        let mut any = false;
        for (ci, runs) in curves.iter().enumerate() {
            let rows = mean_curve(runs);
            if !rows.is_empty() {
                any = true;
                plot = plot.series(Series::mean_sd(table.rows[ci].label(), &rows));
            }
        }
        if any {
            plot.save(&self.dir.join("curves"))?;
        }
        Ok(table)
    }
}

impl SweepSpec {
    /// The metrics tabulated: the spec's, or the kind's defaults.
    fn metric_names(&self) -> Vec<String> {
        match &self.metrics {
            Some(m) => m.clone(),
            None => self.kind.default_metrics().iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// The spec's `metrics` must be numbers of a cell's `summary.json` and its `curve` a column of
/// its `metrics.jsonl`, as the run kind declares them for the cell's config (`at`): a misspelt
/// name stops the sweep before any cell runs, naming what the kind writes, instead of
/// tabulating nothing after every cell ran.
fn check_names(spec: &SweepSpec, out: &Outputs, at: &str) -> Result<(), RunError> {
    let kind = spec.kind.name();
    let unknown = |key: &str, name: &str, what: &str, names: &[String]| {
        let hint = kestrel_core::did_you_mean(name, names.iter().map(String::as_str));
        let mut all = names.to_vec();
        all.sort();
        let all = all.join(", ");
        cfg_err(
            at,
            format!("{key}: `{name}` is not a {what} a {kind} run writes{hint}; it writes: {all}"),
        )
    };
    for name in spec.metric_names() {
        if !out.summary.contains(&name) {
            return Err(unknown("metrics", &name, "number of summary.json", &out.summary));
        }
    }
    match &spec.curve {
        Some(curve) if !out.columns.contains(curve) => {
            Err(unknown("curve", curve, "column of metrics.jsonl", &out.columns))
        }
        _ => Ok(()),
    }
}

/// `(step, mean, sd)` over runs at each step every run logged (sd 0 for one run).
fn mean_curve(runs: &[Vec<(u64, f64)>]) -> Vec<(f64, f64, f64)> {
    let Some(first) = runs.first() else { return Vec::new() };
    first
        .iter()
        .filter_map(|&(step, _)| {
            let vals: Vec<f64> =
                runs.iter().filter_map(|r| r.iter().find(|p| p.0 == step).map(|p| p.1)).collect();
            let st = Stats::of(&vals);
            (vals.len() == runs.len() && vals.iter().all(|v| v.is_finite())).then_some((
                step as f64,
                st.mean,
                if st.n > 1 { st.sd } else { 0.0 },
            ))
        })
        .collect()
}

/// One config's row of a sweep table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableRow {
    /// Config index.
    pub config: usize,
    /// The grid point.
    pub point: Vec<(String, toml::Value)>,
    /// Per metric.
    pub stats: Vec<(String, Stats)>,
}

impl TableRow {
    /// `key=value, ...` (or `base`).
    pub fn label(&self) -> String {
        if self.point.is_empty() {
            return "base".into();
        }
        let p: Vec<String> =
            self.point.iter().map(|(k, v)| format!("{k}={}", value_label(v))).collect();
        p.join(", ")
    }
}

/// A sweep's table: per config and metric, [`Stats`] over the seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepTable {
    /// The run type.
    pub kind: RunKind,
    /// The metrics (columns).
    pub metrics: Vec<String>,
    /// One row per config.
    pub rows: Vec<TableRow>,
    /// Cells not finished (left out).
    pub missing: Vec<String>,
}

fn num(x: f64) -> String {
    if x.is_nan() {
        "-".into()
    } else if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-3) {
        format!("{x:.4e}")
    } else {
        format!("{x:.4}")
    }
}

impl SweepTable {
    /// Markdown: config, runs, then `mean (sd) ± 95%` per metric.
    pub fn markdown(&self) -> String {
        let mut s = format!("| config | runs | {} |\n|---|---:|", self.metrics.join(" | "));
        s.push_str(&"---:|".repeat(self.metrics.len()));
        s.push('\n');
        for r in &self.rows {
            let n = r.stats.iter().map(|(_, st)| st.n).max().unwrap_or(0);
            let cols: Vec<String> = r
                .stats
                .iter()
                .map(|(_, st)| format!("{} ({}) ± {}", num(st.mean), num(st.sd), num(st.ci95)))
                .collect();
            s.push_str(&format!("| {} | {n} | {} |\n", r.label(), cols.join(" | ")));
        }
        s.push_str("\nmean (sd) ± half-width of the 95% interval of the mean (Student's t).\n");
        if !self.missing.is_empty() {
            s.push_str(&format!("\nNot finished, left out: {}.\n", self.missing.join(", ")));
        }
        s
    }

    /// CSV: one line per config and metric.
    pub fn csv(&self) -> String {
        let mut s = String::from("config,label,metric,n,mean,sd,ci95,min,max\n");
        for r in &self.rows {
            for (m, st) in &r.stats {
                s.push_str(&format!(
                    "{},\"{}\",{m},{},{},{},{},{},{}\n",
                    r.config,
                    r.label().replace('"', "'"),
                    st.n,
                    st.mean,
                    st.sd,
                    st.ci95,
                    st.min,
                    st.max
                ));
            }
        }
        s
    }

    /// JSON: `{"kind", "metrics", "rows": [{config, label, point, stats: {metric: {n, mean, sd,
    /// ci95, min, max}}}], "missing"}` (NaN as null).
    pub fn json(&self) -> Value {
        let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
        let rows: Vec<Value> = self
            .rows
            .iter()
            .map(|r| {
                let point: serde_json::Map<String, Value> = r
                    .point
                    .iter()
                    .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
                    .collect();
                let stats: serde_json::Map<String, Value> = r
                    .stats
                    .iter()
                    .map(|(m, st)| {
                        (m.clone(), json!({"n": st.n, "mean": f(st.mean), "sd": f(st.sd), "ci95": f(st.ci95),
                            "min": f(st.min), "max": f(st.max)}))
                    })
                    .collect();
                json!({"config": r.config, "label": r.label(), "point": point, "stats": stats})
            })
            .collect();
        json!({"kind": self.kind.name(), "metrics": self.metrics, "rows": rows, "missing": self.missing})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-sweep-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    const EVO: &str = r#"
kind = "evo"
name = "t"
seeds = 2
[base]
problem = "sphere"
num_dims = 3
generations = 5
[grid]
strategy = ["cma-es", "snes"]
"#;

    #[test]
    fn plans_the_product_of_grid_and_seeds_and_checks_every_config() {
        let s = Sweep::plan(EVO, "spec.toml", Path::new("/nonexistent")).unwrap();
        let ids: Vec<&str> = s.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c000-cma-es-s0", "c000-cma-es-s1", "c001-snes-s0", "c001-snes-s1"]);
        assert_eq!(s.cells[3].table["seed"].as_integer(), Some(1));
        assert!(!Path::new("/nonexistent").exists());
        for (bad, want) in [
            (EVO.replace("num_dims = 3", "num_dims = 0"), "num_dims"),
            (EVO.replace("\"snes\"", "\"nope\""), "nope"),
            (EVO.replace("seeds = 2", "seeds = []"), "seeds"),
            (EVO.replace("seeds = 2", "seeds = [1, 1]"), "repeated"),
            (EVO.replace("kind = \"evo\"", "kind = \"chess\""), "chess"),
            (EVO.replace("[grid]", "[grid]\nseed = [1]"), "seeds come from"),
            (EVO.replace("[grid]", "[grid]\nsigma = 2.0"), "a list"),
            (EVO.replace("name = \"t\"", "name = \"../x\""), "name"),
            (EVO.replace("[base]", "[base]\nwrong_key = 1"), "wrong_key"),
            (EVO.replace("seeds = 2", "seeds = \"x\""), "seeds"),
            (EVO.replace("seeds = 2", "seeds = 9223372036854775807"), "100000"),
            (EVO.replace("seeds = 2", "seeds = 0"), "seeds"),
            (
                format!("{EVO}sigma = [{l}]\nx0 = [{l}]\n", l = vec!["0.5"; 1001].join(", ")),
                "1,000,000 runs",
            ),
            (EVO.replace("seeds = 2", "seeds = -1"), "seeds"),
            (EVO.replace("seeds = 2", "seeds = [9223372036854775807, 1]\nmetrics = 3"), "metrics"),
            (EVO.replace("seeds = 2", "seeds = 2\nbogus = 1"), "bogus"),
            (EVO.replace("[grid]", "[grid]\nsigma = []"), "empty"),
            (EVO.replace("[grid]", "[grid]\nsigma = [\"wide\"]"), "sigma"),
            (EVO.replace("kind = \"evo\"", "kind = "), "spec.toml"),
            ("seeds = 1".into(), "kind"),
        ] {
            let e = Sweep::plan(&bad, "spec.toml", Path::new("/nonexistent")).unwrap_err();
            let e = e.to_string();
            assert!(e.contains(want) && e.contains("spec.toml"), "{want}: {e}");
        }
    }

    #[test]
    fn a_misspelt_metric_or_curve_stops_the_sweep_before_any_cell() {
        for (extra, want) in [
            (
                "metrics = [\"best_fitnes\"]",
                "metrics: `best_fitnes` is not a number of summary.json",
            ),
            ("curve = \"nosuch\"", "curve: `nosuch` is not a column of metrics.jsonl"),
        ] {
            let out = tmp(&format!("names-{}", &extra[..5]));
            let spec = EVO.replace("seeds = 2", &format!("seeds = 2\n{extra}"));
            let e = Sweep::plan(&spec, "spec.toml", &out).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("spec.toml") && e.contains("evo run"), "{e}");
            if want.starts_with("metrics") {
                assert!(e.contains("did you mean `best_fitness`"), "{e}");
            }
        }
        // A name one grid point's config writes and another's does not: the final version of
        // asymexp's ALLO has the other Laplacians' cosines, the thresholded one not.
        let spec = "kind = \"allo-asymexp\"\nseeds = 1\nmetrics = [\"cosine_similarity_simple\"]\n[grid]\n\"learner.version\" = [\"final\", \"thresholded\"]\n";
        let e = Sweep::plan(spec, "spec.toml", &tmp("names-grid")).unwrap_err().to_string();
        assert!(e.contains("cosine_similarity_simple") && e.contains("thresholded"), "{e}");
    }

    #[test]
    fn runs_skips_finished_cells_redoes_unfinished_ones_and_aggregates() {
        let out = tmp("evo");
        let s = Sweep::plan(EVO, "spec.toml", &out).unwrap();
        s.create().unwrap();
        let go = |c: &Cell| {
            let mut p = crate::launch::quiet;
            s.run_cell(
                c,
                Launch { out_dir: PathBuf::new(), argv: vec!["t".into()], progress: &mut p },
            )
        };
        let first: Vec<CellOutcome> = s.cells.iter().map(|c| go(c).unwrap()).collect();
        assert!(first.iter().all(|o| matches!(o, CellOutcome::Ran(_))));
        let best = |d: &Path| -> f64 {
            let t = std::fs::read_to_string(d.join("summary.json")).unwrap();
            serde_json::from_str::<Value>(&t).unwrap()["best_fitness"].as_f64().unwrap()
        };
        let (b0, b1) = (best(first[0].dir()), best(first[1].dir()));
        // Finished cells are skipped; an unfinished one (record says running) is redone.
        let again = go(&s.cells[0]).unwrap();
        assert_eq!(again, CellOutcome::Skipped(first[0].dir().to_path_buf()));
        let rec = first[1].dir().join("record.json");
        let text = std::fs::read_to_string(&rec).unwrap().replace("\"ok\"", "\"running\"");
        std::fs::write(&rec, text).unwrap();
        assert!(matches!(s.status(&s.cells[1]).unwrap(), CellStatus::Partial(_)));
        let redo = go(&s.cells[1]).unwrap();
        assert!(matches!(redo, CellOutcome::Ran(_)));
        assert_eq!(best(redo.dir()), b1);
        assert_eq!(std::fs::read_dir(out.join("t").join(&s.cells[1].id)).unwrap().count(), 1);
        // A restart with another spec under the same name is refused.
        let other = Sweep::plan(&EVO.replace("seeds = 2", "seeds = 3"), "spec.toml", &out).unwrap();
        assert!(other.create().unwrap_err().to_string().contains("different spec"));
        let t = s.aggregate().unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].stats[0].1, Stats::of(&[b0, b1]));
        assert!(out.join("t/table.md").is_file() && out.join("t/curves.png").is_file());
        assert!(
            std::fs::read_to_string(out.join("t/table.md")).unwrap().contains("strategy=cma-es")
        );
        // A finished cell whose config was edited, or whose folder is another cell's, is
        // refused (it was skipped and tabulated), naming the file and the key.
        let cfg = first[0].dir().join("config.toml");
        let saved = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(&cfg, saved.replace("generations = ", "generations = 1")).unwrap();
        let e = go(&s.cells[0]).unwrap_err().to_string();
        assert!(e.contains("config.toml") && e.contains("not the config of cell c000"), "{e}");
        assert!(e.contains("`generations` differs"), "{e}");
        assert!(s.aggregate().is_err());
        std::fs::write(&cfg, saved.replace("seed = ", "seed = 9")).unwrap();
        assert!(go(&s.cells[0]).unwrap_err().to_string().contains("`seed` differs"));
        std::fs::write(&cfg, "not toml [").unwrap();
        assert!(go(&s.cells[0]).unwrap_err().to_string().contains("not the config of cell"));
        std::fs::write(&cfg, saved).unwrap();
        assert!(matches!(go(&s.cells[0]).unwrap(), CellOutcome::Skipped(_)));
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_interrupted_resumable_run_continues_from_its_checkpoint() {
        let spec = r#"
kind = "allo"
name = "a"
seeds = [3]
[base]
map = "builtin:rooms-2-5"
num_samples = 2000
learner.batch_size = 64
learner.num_eigenvectors = 4
steps = 40
eval_every = 10
checkpoint_every = 20
"#;
        let (whole, cut) = (tmp("allo-whole"), tmp("allo-cut"));
        let quiet = |out: &Path, s: &Sweep| {
            let mut p = crate::launch::quiet;
            let l = Launch { out_dir: out.to_path_buf(), argv: vec!["t".into()], progress: &mut p };
            s.run_cell(&s.cells[0], l).unwrap()
        };
        let a = Sweep::plan(spec, "spec.toml", &whole).unwrap();
        a.create().unwrap();
        let done = quiet(&whole, &a);
        // The same cell stopped at step 20 (its checkpoint), as a killed process leaves it.
        let b = Sweep::plan(spec, "spec.toml", &cut).unwrap();
        b.create().unwrap();
        let mut half: crate::runs::allo::AlloRunConfig = crate::config::load_config(
            &crate::runs::allo::AlloRunConfig::default(),
            None,
            b.cells[0].table.clone(),
            &[],
        )
        .unwrap();
        half.steps = 20;
        let mut p = crate::launch::quiet;
        let l = Launch {
            out_dir: b.dir.join(&b.cells[0].id),
            argv: vec!["t".into()],
            progress: &mut p,
        };
        let o = crate::runs::allo::run(half, None, l).unwrap();
        let rec = o.dir.join("record.json");
        let text = std::fs::read_to_string(&rec).unwrap().replace("\"ok\"", "\"running\"");
        std::fs::write(&rec, text).unwrap();
        std::fs::remove_file(o.dir.join("summary.json")).unwrap();
        // The config says 40 steps; the cut folder's config says 20 (only `steps` may differ).
        let resumed = quiet(&cut, &b);
        assert!(matches!(resumed, CellOutcome::Resumed(_)), "{resumed:?}");
        assert_eq!(resumed.dir(), o.dir);
        let col = |d: &Path| -> Vec<(u64, f64)> {
            crate::metrics::read_metrics(&d.join("metrics.jsonl"))
                .unwrap()
                .iter()
                .map(|l| {
                    (l["global_step"].as_u64().unwrap(), l["cosine_similarity"].as_f64().unwrap())
                })
                .collect()
        };
        assert_eq!(col(resumed.dir()), col(done.dir()));
        assert_eq!(col(done.dir()).len(), 4);
        let t = (a.aggregate().unwrap(), b.aggregate().unwrap());
        assert_eq!(t.0.rows[0].stats[0].1.mean, t.1.rows[0].stats[0].1.mean);
        std::fs::remove_dir_all(&whole).unwrap();
        std::fs::remove_dir_all(&cut).unwrap();
    }

    #[test]
    fn every_kind_declares_what_it_writes() {
        let base = |kind: &str, base: &str| {
            format!("kind = \"{kind}\"\nname = \"{kind}\"\nseeds = 1\n[base]\n{base}\n")
        };
        let specs = [
            base("evo", "problem = \"sphere\"\nnum_dims = 3\ngenerations = 4"),
            base("evo", "problem = \"sphere\"\nnum_dims = 3\ngenerations = 6\nrestarts = \"ipop\""),
            base(
                "qd",
                "num_dims = 4\ngenerations = 3\nbatch_size = 8\ncells = 5\nnum_emitters = 1",
            ),
            base("mppi-tune", "generations = 2\npop_size = 4\n[base.run]\nsteps = 5"),
            base("mppi-run", "steps = 5\n[base.mppi]\nnum_samples = 32"),
            base("mppi-qd", "generations = 2\nbatch_size = 4\n[base.run]\nsteps = 4"),
            base(
                "allo",
                "map = \"builtin:rooms-2-5\"\nnum_samples = 500\nlearner.batch_size = 16\nlearner.num_eigenvectors = 3\nsteps = 4\neval_every = 2",
            ),
            base(
                "hunt",
                "epochs = 2\nenv.height = 9\nenv.width = 9\nenv.max_turns = 12\nagent.layer = 16\nagent.batch_size = 8\nagent.capacity = 64\nenv.num_agents = 2\nrecord_every = 0",
            ),
            base(
                "actdyn",
                "steps = 60\n[base.eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5",
            ),
            base(
                "actdyn",
                "steps = 30\n[base.policy]\nkind = \"icem\"\nmetric = \"action-cost\"\nnum_samples = 8\nnum_elites = 4\niterations = 2\n[base.eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5",
            ),
            base(
                "actdyn",
                "steps = 60\n[base.eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5\n[base.model.dynamics]\ntype = \"rbf\"\ngrid = 5",
            ),
            base(
                "allo-asymexp",
                "steps = 4\neval_every = 2\nnum_samples = 2000\n[base.learner]\nversion = \"final\"",
            ),
            base("allo-asymexp", "steps = 4\neval_every = 2\nnum_samples = 2000"),
            base(
                "actdyn-compare",
                "num_seeds = 2\n[base.base]\nsteps = 30\n[base.base.policy]\nnum_samples = 8\nnum_elites = 4\niterations = 2\n[base.base.eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5",
            ),
        ];
        let out = tmp("kinds");
        // Retraining, replay and play read a finished run's folder: one of each, made first.
        let source = |kind: RunKind, text: &str| {
            let mut p = crate::launch::quiet;
            let l =
                Launch { out_dir: out.join("source"), argv: vec!["t".into()], progress: &mut p };
            let t: toml::Table = text.parse().unwrap();
            kind.launch(Layers::table(&t), None, l).unwrap().dir
        };
        let src = source(
            RunKind::of::<crate::runs::actdyn::Actdyn>(),
            "steps = 40\nsave_every = 20\n[eval]\nepisodes = 2\nnum_starts = 10\nnum_samples = 5",
        );
        let retrain = format!(
            "run = \"{}\"\n[base.offline]\nepochs = 2\nchunk = 20\nbatch_size = 2",
            src.display()
        );
        let src = source(
            RunKind::of::<crate::runs::arc_rollout::ArcRollout>(),
            "episodes = 3\n[env]\ncanvas = 10\ntasks_per_family = 1",
        );
        let replay = format!(
            "traces = \"{}\"\n[base.env]\ncanvas = 10",
            src.join("episodes.jsonl").display()
        );
        let src = source(
            RunKind::of::<crate::runs::hunt::Hunt>(),
            "epochs = 2\nenv.height = 9\nenv.width = 9\nenv.max_turns = 12\nagent.layer = 16\nagent.batch_size = 8\nagent.capacity = 64\nenv.num_agents = 2\nrecord_every = 0",
        );
        let play = format!("run = \"{}\"\nepochs = 2", src.display());
        let specs: Vec<String> = specs
            .into_iter()
            .chain([base("actdyn-retrain", &retrain), base("hunt-play", &play)])
            .chain([base(
                "arc-rollout",
                "episodes = 3\n[base.env]\ncanvas = 10\ntasks_per_family = 1",
            )])
            .chain([base("arc-replay", &replay)])
            .collect();
        for (i, text) in specs.iter().enumerate() {
            let out = out.join(i.to_string());
            let s = Sweep::plan(text, "spec.toml", &out).unwrap_or_else(|e| panic!("{text}: {e}"));
            s.create().unwrap();
            let mut p = crate::launch::quiet;
            let l = Launch { out_dir: PathBuf::new(), argv: vec!["t".into()], progress: &mut p };
            let o = s.run_cell(&s.cells[0], l).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(matches!(o, CellOutcome::Ran(_)), "{text}");
            let t = s.aggregate().unwrap();
            for (m, st) in &t.rows[0].stats {
                assert_eq!(st.n, 1, "{}: summary.json has no number {m}", s.spec.kind.name());
            }
            assert!(s.dir.join("curves.png").is_file(), "{}: no curve", s.spec.kind.name());
            // What the run wrote is what its kind declares (the names a sweep checks before
            // its first cell), and the kind's default metrics and curve are among them.
            let CellOutcome::Ran(o) = o else { unreachable!() };
            let summary = std::fs::read_to_string(o.dir.join("summary.json")).unwrap();
            let summary: Value = serde_json::from_str(&summary).unwrap();
            let numbers = summary.as_object().unwrap().iter().filter(|(_, v)| v.is_number());
            let numbers: BTreeSet<String> = numbers.map(|(k, _)| k.clone()).collect();
            let mut columns = BTreeSet::new();
            crate::metrics::for_each_metric(&o.dir.join("metrics.jsonl"), |line| {
                if let Value::Object(o) = line {
                    columns.extend(o.into_iter().filter(|(_, v)| v.is_number()).map(|(k, _)| k));
                }
            })
            .unwrap();
            let kind = s.spec.kind;
            let declared = kind.outputs(Layers::table(&s.cells[0].table)).unwrap();
            let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<String>>();
            assert_eq!(set(&declared.summary), numbers, "{text}: summary.json");
            assert_eq!(set(&declared.columns), columns, "{text}: metrics.jsonl");
            assert!(kind.default_metrics().iter().all(|m| numbers.contains(*m)), "{text}");
            assert!(columns.contains(kind.default_curve()), "{text}");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A spec's `preset` is the base its cells start from (the cell's config is the preset's
    /// with `[base]` over it), and an unknown preset is refused before the folder exists.
    #[test]
    fn cells_start_from_the_specs_preset() {
        let out = tmp("preset");
        let text = "kind = \"hunt\"\nseeds = 1\npreset = \"treasurehunt_mp\"\n[base]\nepochs = 2\nrecord_every = 0\n[base.agent]\nlayer = 16\nbatch_size = 8";
        let s = Sweep::plan(text, "spec.toml", &out).unwrap();
        s.create().unwrap();
        let mut p = crate::launch::quiet;
        let l = Launch { out_dir: PathBuf::new(), argv: vec!["t".into()], progress: &mut p };
        let o = s.run_cell(&s.cells[0], l).unwrap();
        let CellOutcome::Ran(o) = o else { panic!("not ran") };
        let cfg: toml::Table =
            toml::from_str(&std::fs::read_to_string(o.dir.join("config.toml")).unwrap()).unwrap();
        assert_eq!(cfg["env"]["num_agents"].as_integer(), Some(5), "the preset's world");
        assert_eq!(cfg["env"]["items"].as_array().map(|a| a.len()), Some(1), "gems only");
        assert_eq!(cfg["epochs"].as_integer(), Some(2), "[base] over the preset");
        let bad = text.replace("treasurehunt_mp", "treasurehunt_sp");
        let e = Sweep::plan(&bad, "spec.toml", &tmp("preset-bad")).unwrap_err().to_string();
        assert!(e.contains("treasurehunt_sp") && e.contains("treasurehunt_mp"), "{e}");
        std::fs::remove_dir_all(&out).unwrap();
    }
}
