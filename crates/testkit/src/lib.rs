//! Test helpers shared by Kestrel's crates: the environment conformance check of
//! DESIGN.md §6, golden-fixture loading, central differences for gradient tests, and a
//! counting global allocator for no-allocation tests.

mod alloc;
pub use alloc::{CountingAlloc, allocations_in, peak_bytes_in};

use kestrel_core::{BatchEnv, Env, Key, VecEnv};
use std::path::{Path, PathBuf};

/// Options for [`check_env`].
#[derive(Clone, Debug)]
pub struct Conformance {
    /// Steps per rollout (long enough to see several episode ends).
    pub steps: usize,
    /// Seed of the reference rollout.
    pub seed: u64,
}

impl Default for Conformance {
    fn default() -> Self {
        Conformance { steps: 300, seed: 17 }
    }
}

/// What one row did over a rollout: every obs element, reward and flag, as f64 bits.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RowTrace(Vec<u64>);

fn rollout<E, P>(
    env: &E,
    params: &E::Params,
    num_envs: usize,
    rows: usize,
    seed: u64,
    steps: usize,
    policy: &P,
) -> (Vec<RowTrace>, Vec<String>)
where
    E: Env + Clone,
    E::Obs: Into<f64>,
    P: Fn(Key, &[E::Obs], &mut [E::Action]) + Sync,
{
    let mut v = VecEnv::new(env.clone(), params.clone(), num_envs, seed).expect("VecEnv::new");
    let spec = v.spec().clone();
    let a = spec.num_agents;
    let per = a * v.obs_len();
    let mut traces = vec![RowTrace(Vec::new()); rows];
    let mut problems = Vec::new();
    let mut ep_len = vec![0u32; num_envs];
    let obs_len = v.obs_len().max(1);
    let check_obs = |obs: &[E::Obs], what: &str, t: usize, problems: &mut Vec<String>| {
        for agent in obs.chunks(obs_len) {
            let flat: Vec<f64> = agent.iter().map(|&x| x.into()).collect();
            if !spec.obs_space.contains(&flat) {
                problems.push(format!("{what} at step {t} outside the observation space"));
            }
        }
    };
    for i in 0..num_envs {
        check_obs(&v.obs()[i * per..(i + 1) * per], "reset obs", 0, &mut problems);
    }
    for t in 1..=steps {
        v.step_with(|_, key, obs, act| policy(key, obs, act));
        for i in 0..num_envs {
            ep_len[i] += 1;
            let (te, tr) = (v.terminated()[i], v.truncated()[i]);
            if let Some(m) = spec.max_episode_steps
                && tr != (ep_len[i] >= m)
            {
                problems.push(format!(
                    "row {i} step {t}: truncated={tr} at episode step {}",
                    ep_len[i]
                ));
            }
            for r in &v.rewards()[i * a..(i + 1) * a] {
                if !r.is_finite() {
                    problems.push(format!("row {i} step {t}: reward {r} not finite"));
                }
            }
            check_obs(&v.obs()[i * per..(i + 1) * per], "obs", t, &mut problems);
            if te || tr {
                check_obs(&v.final_obs()[i * per..(i + 1) * per], "final_obs", t, &mut problems);
                ep_len[i] = 0;
            }
            if i < rows {
                let tr_ = &mut traces[i].0;
                tr_.extend(
                    v.obs()[i * per..(i + 1) * per].iter().map(|&x| Into::<f64>::into(x).to_bits()),
                );
                tr_.extend(v.rewards()[i * a..(i + 1) * a].iter().map(|r| (*r as f64).to_bits()));
                tr_.push(te as u64 | (tr as u64) << 1);
            }
        }
        problems.truncate(20);
    }
    (traces, problems)
}

/// Runs the conformance check on an environment and panics with every problem found.
///
/// Checks: random valid actions (from `policy`) to several episode ends; observations
/// inside the declared space (hence finite) after reset, step and in `final_obs`; rewards
/// finite; same seed gives the same rollout and a different seed a different one; row `i`
/// identical at 3 and 257 envs and on 1 and 2 threads; truncation exactly at the limit.
pub fn check_env<E, P>(env: &E, params: &E::Params, opts: &Conformance, policy: P)
where
    E: Env + Clone,
    E::Obs: Into<f64>,
    P: Fn(Key, &[E::Obs], &mut [E::Action]) + Sync,
{
    let run = |n: usize, seed: u64, threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| rollout(env, params, n, 3, seed, opts.steps, &policy))
    };
    let (base, mut problems) = run(3, opts.seed, 1);
    let (again, _) = run(3, opts.seed, 1);
    if base != again {
        problems.push("same seed gave a different rollout".into());
    }
    let (other, _) = run(3, opts.seed + 1, 1);
    if base == other {
        problems.push("a different seed gave the same rollout".into());
    }
    let (wide, p) = run(257, opts.seed, 2);
    problems.extend(p);
    for i in 0..3 {
        if base[i] != wide[i] {
            problems.push(format!(
                "row {i} differs between 3 envs on 1 thread and 257 envs on 2 threads"
            ));
        }
    }
    let (two, _) = run(3, opts.seed, 2);
    if base != two {
        problems.push("rollout differs between 1 and 2 threads".into());
    }
    assert!(problems.is_empty(), "conformance failed:\n{}", problems.join("\n"));
}

/// The environment variable that turns a missing reference into a failure: `.ci/run` sets
/// `KESTREL_REQUIRE_DATA=1`, so CI can never go green without the data its golden and dataset
/// tests check against. Unset (a checkout without `../shared`), those tests print a SKIP
/// line and pass.
pub const REQUIRE_DATA: &str = "KESTREL_REQUIRE_DATA";

/// Whether [`REQUIRE_DATA`] is set to `1`.
pub fn data_required() -> bool {
    std::env::var(REQUIRE_DATA).is_ok_and(|v| v == "1")
}

/// Reports reference data that is absent: a panic naming it under [`REQUIRE_DATA`]`=1`,
/// otherwise a SKIP line on standard error (written directly, so the test harness's output
/// capture does not hide it).
pub fn data_absent(what: &str, path: &Path) {
    if data_required() {
        panic!("{REQUIRE_DATA}=1 and {what} is absent: {}", path.display());
    }
    use std::io::Write;
    let _ =
        writeln!(std::io::stderr(), "SKIP: {what} is absent ({}); test not run", path.display());
}

/// The environment variable naming CPU features whose tests must run here: with
/// `KESTREL_REQUIRE_CPU=avx512,avx2` (or `all`), a test gated on one of them fails on a CPU
/// without it instead of passing untested. Unset, such a test only says that it did not run.
pub const REQUIRE_CPU: &str = "KESTREL_REQUIRE_CPU";

/// Reports a test gated on a CPU feature: a `CPU-GATED:` line on standard error (written
/// directly, so the harness's capture does not hide it and `.ci/run` can list every one)
/// saying whether `test` ran `feature` here; a panic when it cannot and [`REQUIRE_CPU`]
/// names the feature. Returns `available`.
pub fn cpu_gated(test: &str, feature: &str, available: bool) -> bool {
    use std::io::Write;
    let (line, failure) =
        cpu_gate(test, feature, available, std::env::var(REQUIRE_CPU).ok().as_deref());
    let _ = writeln!(std::io::stderr(), "{line}");
    if let Some(msg) = failure {
        panic!("{msg}");
    }
    available
}

/// [`cpu_gated`]'s line and, when the test must run and cannot, its failure, with
/// [`REQUIRE_CPU`]'s value given (`None`: unset).
fn cpu_gate(
    test: &str,
    feature: &str,
    available: bool,
    require: Option<&str>,
) -> (String, Option<String>) {
    if available {
        return (format!("CPU-GATED: {test}: ran on {feature}"), None);
    }
    let required =
        require.is_some_and(|v| v.split(',').any(|f| f.trim() == feature || f.trim() == "all"));
    let failure = required
        .then(|| format!("{REQUIRE_CPU} names {feature}, which this CPU lacks: {test} cannot run"));
    (format!("CPU-GATED: {test}: not run, this CPU lacks {feature}"), failure)
}

/// The workspace's `../shared/data` directory, if present (CI has it). Tests that need it
/// call this; when it is absent, [`data_absent`] reports it (a failure under
/// [`REQUIRE_DATA`]`=1`) and this returns `None`.
pub fn shared_data() -> Option<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = here.join("../../../shared/data");
    if p.is_dir() {
        Some(p.canonicalize().unwrap_or(p))
    } else {
        data_absent("../shared/data", &p);
        None
    }
}

/// `../shared/data/<sub>`, if that folder is present (see [`shared_data`]).
pub fn shared_subdir(sub: &str) -> Option<PathBuf> {
    let d = shared_data()?.join(sub);
    if d.is_dir() {
        Some(d)
    } else {
        data_absent(&format!("../shared/data/{sub}"), &d);
        None
    }
}

/// evosax 0.3.2's meta-learned checkpoint `rel` (`les/2023_10_les_v2.pkl`, ...), which
/// Kestrel never commits: from `KESTREL_EVOSAX_CKPT` (a folder laid out as evosax's
/// `algorithms/ckpt`) or from `tools/.cache/evosax-0.3.2/ckpt`, where `tools/evosax-ckpt`
/// (run by `tools/test-all`) unpacks evosax's wheel. Absent, [`data_absent`] reports it.
pub fn evosax_ckpt(rel: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("KESTREL_EVOSAX_CKPT").map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/.cache/evosax-0.3.2/ckpt")
    });
    let p = dir.join(rel);
    if p.is_file() {
        Some(p)
    } else {
        data_absent(&format!("evosax 0.3.2's checkpoint {rel} (tools/evosax-ckpt fetches it)"), &p);
        None
    }
}

/// A strategy's weights file for its `params_path`, from its evosax default `rel` (a
/// learned strategy's `StrategyKind::evosax_weights`): `Some(None)` for a strategy that needs
/// none, `Some(Some(path))` when [`evosax_ckpt`] has it, `None` (reported) when it is absent.
pub fn evosax_weights(rel: Option<&str>) -> Option<Option<String>> {
    match rel {
        None => Some(None),
        Some(rel) => evosax_ckpt(rel).map(|p| Some(p.display().to_string())),
    }
}

/// The repository's `tests/golden` fixtures directory.
pub fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/golden")
}

/// Reads and parses a JSON fixture from [`golden_dir`] (panics with the path if missing).
pub fn load_fixture(name: &str) -> serde_json::Value {
    let path = golden_dir().join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Fixture grids are strings with one character per cell, `'0' + value` (so -1 is `/`).
pub fn digits(s: &str) -> Vec<i8> {
    s.bytes().map(|b| b as i8 - b'0' as i8).collect()
}

/// The inverse of [`digits`], for comparing a row-major grid with a fixture string.
pub fn to_digits(cells: impl IntoIterator<Item = i8>) -> String {
    cells.into_iter().map(|v| (b'0' as i8 + v) as u8 as char).collect()
}

/// A JSON array of numbers.
pub fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array().expect("a JSON array").iter().map(|x| x.as_f64().expect("a number")).collect()
}

/// Relative comparison of Kestrel's arrays with a peer's, keeping the largest error seen (the
/// evosax golden tests' one check). An element passes when equal (infinities included) or
/// when `|got − want| / max(|want|, floor) ≤ tol`; with [`Close::scaled`] the floor is
/// `floor × max(1, the array's largest finite |want|)`, for values near 0 that are differences
/// of larger ones (float32's error is then at their scale, not at the value's own).
pub struct Close {
    /// The largest relative error allowed.
    pub tol: f64,
    floor: f64,
    scaled: bool,
    /// The largest error seen, and where.
    pub worst: (f64, String),
}

impl Close {
    /// An absolute floor.
    pub fn new(tol: f64, floor: f64) -> Self {
        Close { tol, floor, scaled: false, worst: (0.0, String::new()) }
    }

    /// A floor scaled by each compared array's largest value.
    pub fn scaled(tol: f64, floor: f64) -> Self {
        Close { scaled: true, ..Close::new(tol, floor) }
    }

    /// Asserts `got` matches `want` element by element (`what` names them in the message).
    pub fn close(&mut self, what: &str, got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        let floor = if self.scaled {
            self.floor * want.iter().filter(|x| x.is_finite()).fold(1.0f64, |m, x| m.max(x.abs()))
        } else {
            self.floor
        };
        for (i, (g, e)) in got.iter().zip(want).enumerate() {
            if g == e {
                continue;
            }
            let err = (g - e).abs() / e.abs().max(floor);
            if err > self.worst.0 {
                self.worst = (err, format!("{what}[{i}]: {g} vs {e}"));
            }
            assert!(err <= self.tol, "{what}[{i}]: kestrel {g}, peer {e} ({err:.2e})");
        }
    }

    /// [`Close::close`] for one value.
    pub fn scalar(&mut self, what: &str, got: f64, want: f64) {
        self.close(what, &[got], &[want]);
    }
}

/// A JSON array of integers.
pub fn ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array().expect("a JSON array").iter().map(|x| x.as_i64().expect("an integer")).collect()
}

/// Central differences of `f` at `v`: entry `i` is `(f(v + h eᵢ) − f(v − h eᵢ)) / 2h`, the
/// numeric gradient the f64 finite-difference tests compare analytic gradients against.
pub fn central_differences(v: &[f64], h: f64, mut f: impl FnMut(&[f64]) -> f64) -> Vec<f64> {
    let mut w = v.to_vec();
    (0..v.len())
        .map(|i| {
            w[i] = v[i] + h;
            let up = f(&w);
            w[i] = v[i] - h;
            let down = f(&w);
            w[i] = v[i];
            (up - down) / (2.0 * h)
        })
        .collect()
}

/// Every number of a nested JSON array, in row-major order (`[[1, 2], [3, 4]]` gives
/// `[1, 2, 3, 4]`), as the actdyn fixtures store tensors.
pub fn flat(v: &serde_json::Value) -> Vec<f64> {
    fn walk(v: &serde_json::Value, out: &mut Vec<f64>) {
        match v {
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            x => out.push(x.as_f64().unwrap_or_else(|| panic!("not a number: {x}"))),
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

/// The actdyn golden fixture `name` from `shared/data/actdyn-golden`, or `None` (after printing
/// a SKIP line naming the test) when the shared data is absent.
pub fn actdyn_fixture(name: &str) -> Option<serde_json::Value> {
    let path = shared_subdir("actdyn-golden")?.join(name);
    if !path.is_file() {
        data_absent(&format!("the actdyn fixture {name}"), &path);
        return None;
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// The ALLO `asymexp` golden fixture `name` from `shared/data/allo-asymexp-golden`, or `None`
/// (after a SKIP line) when the shared data is absent.
pub fn asymexp_fixture(name: &str) -> Option<serde_json::Value> {
    let path = shared_subdir("allo-asymexp-golden")?.join(name);
    if !path.is_file() {
        data_absent(&format!("the ALLO asymexp fixture {name}"), &path);
        return None;
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// A fixture *tensor object* `{"dtype", "shape", "data" | "b64"}` (the asymexp fixtures'
/// encoding: `data` row-major, or `b64` the little-endian raw bytes) as its shape and its
/// values in f64 (exact for every dtype the fixtures use).
pub fn tensor(v: &serde_json::Value) -> (Vec<usize>, Vec<f64>) {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap_or_else(|| panic!("not a tensor object: {v}"))
        .iter()
        .map(|x| x.as_u64().expect("a dimension") as usize)
        .collect();
    let dtype = v["dtype"].as_str().expect("a dtype");
    let data = if let Some(b) = v.get("b64").and_then(|b| b.as_str()) {
        let raw = base64(b);
        let width = match dtype {
            "float64" | "int64" => 8,
            "float32" | "int32" => 4,
            "int16" => 2,
            "uint8" | "int8" | "bool" => 1,
            other => panic!("tensor dtype {other} not handled"),
        };
        raw.chunks_exact(width)
            .map(|c| match dtype {
                "float64" => f64::from_le_bytes(c.try_into().unwrap()),
                "int64" => i64::from_le_bytes(c.try_into().unwrap()) as f64,
                "float32" => f32::from_le_bytes(c.try_into().unwrap()) as f64,
                "int32" => i32::from_le_bytes(c.try_into().unwrap()) as f64,
                "int16" => i16::from_le_bytes(c.try_into().unwrap()) as f64,
                "int8" => c[0] as i8 as f64,
                _ => c[0] as f64,
            })
            .collect()
    } else {
        flat(&v["data"])
    };
    let n: usize = shape.iter().product();
    assert_eq!(data.len(), n, "tensor of shape {shape:?} has {} values", data.len());
    (shape, data)
}

/// Standard base64 (with `=` padding) to bytes.
pub fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => (c - b'A') as u32,
            b'a'..=b'z' => (c - b'a') as u32 + 26,
            b'0'..=b'9' => (c - b'0') as u32 + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {:?}", c as char),
        }
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c) << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    out
}

#[cfg(test)]
mod data_tests {
    use super::*;

    #[test]
    fn a_cpu_gated_test_says_whether_it_ran_and_fails_only_when_required() {
        let ran = cpu_gate("t", "avx512", true, Some("avx512"));
        assert_eq!(ran, ("CPU-GATED: t: ran on avx512".into(), None));
        for require in [None, Some("avx2")] {
            let (line, failure) = cpu_gate("t", "avx512", false, require);
            assert_eq!(line, "CPU-GATED: t: not run, this CPU lacks avx512");
            assert_eq!(failure, None);
        }
        for require in ["avx512", "avx2, avx512", "all"] {
            let (_, failure) = cpu_gate("t", "avx512", false, Some(require));
            let msg = failure.expect("required");
            assert!(msg.contains("KESTREL_REQUIRE_CPU names avx512"), "{msg}");
            assert!(msg.contains("t cannot run"), "{msg}");
        }
    }

    /// Base64 as Python's `base64.b64encode` writes it, padding included.
    #[test]
    fn base64_reads_padded_text() {
        assert_eq!(base64("TWFu"), b"Man");
        assert_eq!(base64("TWE="), b"Ma");
        assert_eq!(base64("TQ=="), b"M");
        let t = serde_json::json!({"dtype": "float32", "shape": [2], "b64": "AACAPwAAAMA="});
        assert_eq!(tensor(&t), (vec![2], vec![1.0, -2.0]));
    }

    /// Absent reference data fails exactly when `KESTREL_REQUIRE_DATA=1` (CI) and is a SKIP
    /// otherwise; the panic names the variable and the path.
    #[test]
    fn absent_data_fails_exactly_when_required() {
        let r = std::panic::catch_unwind(|| data_absent("the thing", Path::new("/nonexistent/x")));
        assert_eq!(r.is_err(), data_required());
        if let Err(e) = r {
            let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(msg.contains(REQUIRE_DATA) && msg.contains("/nonexistent/x"), "{msg}");
        }
        if !data_required() {
            assert!(shared_subdir("no-such-folder-kestrel").is_none());
        }
    }
}
