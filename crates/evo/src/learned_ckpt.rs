//! evosax's meta-learned checkpoints (`evosax/algorithms/ckpt/*/*.pkl`), read without Python.
//!
//! The learned strategies (LES, LGA, ...) take their networks' weights from the files evosax
//! 0.3.2 ships; Kestrel ships none and reads the user's copy (the installed evosax package's
//! own files, or evosax's wheel unpacked: `tools/evosax-ckpt`). The files are Python pickles of
//! nested dicts (flax `FrozenDict`s) whose leaves are `les_tools._restore_array(bytes, dtype,
//! shape)` calls. A pickle can name any Python callable; this reader is a small pickle machine
//! that knows only those two (and plain containers, numbers and strings) and refuses any other
//! global, naming it, so a tampered file is an error, never code run or a panic. EvoTF's
//! checkpoint also holds its configs as `dotmap.DotMap`s (built from `collections.OrderedDict`
//! state); the reader rebuilds those as plain dicts and keeps their values ([`Checkpoint::config`]).

use crate::error::EvoError;
use kestrel_core::FromInvalid;
use std::collections::BTreeMap;
use std::path::Path;

/// The largest checkpoint read (evosax's largest is 88 KB).
const MAX_BYTES: u64 = 64 << 20;

/// One array of a checkpoint: its shape and its values (f32, as evosax stores them).
#[derive(Clone, Debug, PartialEq)]
pub struct CkptArray {
    /// Row-major shape.
    pub shape: Vec<usize>,
    /// Values, row-major.
    pub data: Vec<f32>,
}

/// A config value beside a checkpoint's arrays (EvoTF's `model_config/embed_dim`, ...).
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigValue {
    /// `None`.
    None,
    /// A bool.
    Bool(bool),
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// A list or tuple of numbers.
    Numbers(Vec<f64>),
}

/// A checkpoint: its arrays by path (`recomb_weights/params/Dense_0/kernel`).
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    /// Where it was read from, for errors.
    pub source: String,
    /// The arrays, by their dict keys joined with `/`.
    pub arrays: BTreeMap<String, CkptArray>,
    /// The other values (numbers, bools, strings, lists of numbers), by the same paths.
    pub config: BTreeMap<String, ConfigValue>,
}

impl Checkpoint {
    /// Reads an evosax checkpoint file.
    pub fn read(path: &Path) -> Result<Self, EvoError> {
        let shown = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| {
            EvoError::invalid("params.params_path", &shown, format!("a readable file ({e})"))
        })?;
        if meta.len() > MAX_BYTES {
            return Err(EvoError::invalid(
                "params.params_path",
                &shown,
                format!("an evosax checkpoint of at most {MAX_BYTES} bytes ({} bytes)", meta.len()),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| {
            EvoError::invalid("params.params_path", &shown, format!("a readable file ({e})"))
        })?;
        Self::parse(&bytes, &shown)
    }

    /// Parses checkpoint bytes (`source` names them in errors).
    pub fn parse(bytes: &[u8], source: &str) -> Result<Self, EvoError> {
        let root = Machine { b: bytes, at: 0, source }.run()?;
        let (mut arrays, mut config) = (BTreeMap::new(), BTreeMap::new());
        flatten(&root, String::new(), &mut arrays, &mut config, source, 0)?;
        if arrays.is_empty() {
            return Err(bad(source, 0, "no arrays: not an evosax checkpoint"));
        }
        Ok(Checkpoint { source: source.to_string(), arrays, config })
    }

    fn config_value(&self, key: &str) -> Result<&ConfigValue, EvoError> {
        self.config.get(key).ok_or_else(|| {
            EvoError::invalid(format!("{}: {key}", self.source), "missing", "a config value")
        })
    }

    fn config_error(&self, key: &str, v: &ConfigValue, want: &str) -> EvoError {
        EvoError::invalid(format!("{}: {key}", self.source), format!("{v:?}"), want.to_string())
    }

    /// The config flag at `key` (a bool, or the int 0 or 1 as evosax's DotMaps hold them).
    pub fn config_bool(&self, key: &str) -> Result<bool, EvoError> {
        match self.config_value(key)? {
            ConfigValue::Bool(b) => Ok(*b),
            ConfigValue::Int(i @ (0 | 1)) => Ok(*i == 1),
            v => Err(self.config_error(key, v, "a bool (or 0 or 1)")),
        }
    }

    /// The config size at `key`: an int in `1..=max`.
    pub fn config_usize(&self, key: &str, max: usize) -> Result<usize, EvoError> {
        match self.config_value(key)? {
            ConfigValue::Int(i) if *i >= 1 && *i as u64 <= max as u64 => Ok(*i as usize),
            v => Err(self.config_error(key, v, &format!("an int in 1..={max}"))),
        }
    }

    /// The config number at `key` (an int or a float), finite.
    pub fn config_f64(&self, key: &str) -> Result<f64, EvoError> {
        match self.config_value(key)? {
            ConfigValue::Int(i) => Ok(*i as f64),
            ConfigValue::Float(x) if x.is_finite() => Ok(*x),
            v => Err(self.config_error(key, v, "a finite number")),
        }
    }

    /// The config list of numbers at `key`, finite, `1..=max` of them.
    pub fn config_f64s(&self, key: &str, max: usize) -> Result<Vec<f64>, EvoError> {
        match self.config_value(key)? {
            ConfigValue::Numbers(v)
                if (1..=max).contains(&v.len()) && v.iter().all(|x| x.is_finite()) =>
            {
                Ok(v.clone())
            }
            v => Err(self.config_error(key, v, &format!("a list of 1 to {max} finite numbers"))),
        }
    }

    /// The array at `key` with `shape`, or an error naming the file, the key and what it holds.
    pub fn get(&self, key: &str, shape: &[usize]) -> Result<&[f32], EvoError> {
        match self.arrays.get(key) {
            Some(a) if a.shape == shape => Ok(&a.data),
            Some(a) => Err(EvoError::invalid(
                format!("{}: {key}", self.source),
                format!("shape {:?}", a.shape),
                format!("shape {shape:?}"),
            )),
            None => Err(EvoError::invalid(
                format!("{}: {key}", self.source),
                "missing",
                format!(
                    "present (the file holds {}; is it this strategy's checkpoint?)",
                    self.arrays.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )),
        }
    }

    /// The array at `key` as f64, checked for shape and finiteness.
    pub fn get_f64(&self, key: &str, shape: &[usize]) -> Result<Vec<f64>, EvoError> {
        let v = self.get(key, shape)?;
        if let Some(i) = v.iter().position(|x| !x.is_finite()) {
            return Err(EvoError::invalid(format!("{}: {key}[{i}]", self.source), v[i], "finite"));
        }
        Ok(v.iter().map(|&x| x as f64).collect())
    }
}

fn bad(source: &str, at: usize, what: impl std::fmt::Display) -> EvoError {
    EvoError::invalid(
        format!("params.params_path ({source}, byte {at})"),
        what.to_string(),
        "an evosax 0.3.2 checkpoint (a pickle of dicts of les_tools._restore_array arrays)",
    )
}

#[derive(Clone, Debug)]
enum Val {
    None,
    Bool(bool),
    Float(f64),
    Int(i64),
    Str(String),
    Bytes(Vec<u8>),
    Tuple(Vec<Val>),
    List(Vec<Val>),
    Dict(Vec<(Val, Val)>),
    Global(String, String),
    Array(CkptArray),
    Mark,
}

fn flatten(
    v: &Val,
    prefix: String,
    out: &mut BTreeMap<String, CkptArray>,
    config: &mut BTreeMap<String, ConfigValue>,
    source: &str,
    depth: usize,
) -> Result<(), EvoError> {
    if depth > 16 {
        return Err(bad(source, 0, "dicts nested over 16 deep"));
    }
    // Values beside the arrays are configs.
    let value = match v {
        Val::Dict(items) => {
            for (k, v) in items {
                let Val::Str(k) = k else {
                    return Err(bad(source, 0, format!("a dict key that is not a string ({k:?})")));
                };
                let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}/{k}") };
                flatten(v, key, out, config, source, depth + 1)?;
            }
            return Ok(());
        }
        Val::Array(a) => {
            out.insert(prefix, a.clone());
            return Ok(());
        }
        Val::None => ConfigValue::None,
        Val::Bool(b) => ConfigValue::Bool(*b),
        Val::Int(i) => ConfigValue::Int(*i),
        Val::Float(x) => ConfigValue::Float(*x),
        Val::Str(s) => ConfigValue::Str(s.clone()),
        Val::List(items) | Val::Tuple(items) => {
            let mut nums = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Val::Int(i) => nums.push(*i as f64),
                    Val::Float(x) => nums.push(*x),
                    other => {
                        return Err(bad(
                            source,
                            0,
                            format!("at {prefix:?}: a list of {}", kind(other)),
                        ));
                    }
                }
            }
            ConfigValue::Numbers(nums)
        }
        other => return Err(bad(source, 0, format!("at {prefix:?}: {}", kind(other)))),
    };
    config.insert(prefix, value);
    Ok(())
}

fn kind(v: &Val) -> &'static str {
    match v {
        Val::None => "None",
        Val::Bool(_) => "a bool",
        Val::Float(_) => "a float",
        Val::Int(_) => "an int",
        Val::Str(_) => "a string",
        Val::Bytes(_) => "bytes",
        Val::Tuple(_) => "a tuple",
        Val::List(_) => "a list",
        Val::Dict(_) => "a dict",
        Val::Global(..) => "a global",
        Val::Array(_) => "an array",
        Val::Mark => "a mark",
    }
}

/// The pickle machine: the opcodes protocols 2 to 5 use for containers, numbers, strings and
/// bytes, and `REDUCE` of the two callables evosax's checkpoints name.
struct Machine<'a> {
    b: &'a [u8],
    at: usize,
    source: &'a str,
}

impl Machine<'_> {
    fn err(&self, what: impl std::fmt::Display) -> EvoError {
        bad(self.source, self.at, what)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], EvoError> {
        if self.b.len() - self.at < n {
            return Err(self.err(format!("truncated ({n} bytes wanted)")));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn uint(&mut self, n: usize) -> Result<u64, EvoError> {
        let s = self.take(n)?;
        Ok(s.iter().rev().fold(0u64, |a, &b| (a << 8) | b as u64))
    }

    fn len(&mut self, n: usize) -> Result<usize, EvoError> {
        let l = self.uint(n)?;
        if l > (self.b.len() - self.at) as u64 {
            return Err(self.err(format!("a length of {l} past the end of the file")));
        }
        Ok(l as usize)
    }

    fn string(&mut self, n: usize) -> Result<Val, EvoError> {
        let l = self.len(n)?;
        let at = self.at;
        let s = self.take(l)?.to_vec();
        String::from_utf8(s)
            .map(Val::Str)
            .map_err(|_| bad(self.source, at, "a string that is not UTF-8"))
    }

    fn line(&mut self) -> Result<String, EvoError> {
        let rest = &self.b[self.at..];
        let end = rest.iter().position(|&c| c == b'\n').ok_or_else(|| self.err("truncated"))?;
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.at += end + 1;
        Ok(s)
    }

    fn run(mut self) -> Result<Val, EvoError> {
        let mut stack: Vec<Val> = Vec::new();
        let mut memo: Vec<Val> = Vec::new();
        macro_rules! pop {
            () => {
                stack.pop().ok_or_else(|| self.err("an empty stack"))?
            };
        }
        loop {
            let op = self.take(1)?[0];
            match op {
                0x80 => {
                    self.take(1)?;
                }
                0x95 => {
                    self.uint(8)?;
                }
                b'}' => stack.push(Val::Dict(Vec::new())),
                b']' => stack.push(Val::List(Vec::new())),
                b')' => stack.push(Val::Tuple(Vec::new())),
                b'N' => stack.push(Val::None),
                0x88 | 0x89 => stack.push(Val::Bool(op == 0x88)),
                b'(' => stack.push(Val::Mark),
                0x94 => {
                    let top = stack.last().ok_or_else(|| self.err("MEMOIZE on an empty stack"))?;
                    memo.push(top.clone());
                }
                b'q' | b'r' => {
                    let i = self.uint(if op == b'q' { 1 } else { 4 })? as usize;
                    let top = stack.last().ok_or_else(|| self.err("PUT on an empty stack"))?;
                    if i > memo.len() {
                        return Err(self.err(format!("memo slot {i} out of order")));
                    }
                    if i == memo.len() {
                        memo.push(top.clone());
                    } else {
                        memo[i] = top.clone();
                    }
                }
                b'h' | b'j' => {
                    let i = self.uint(if op == b'h' { 1 } else { 4 })? as usize;
                    let v = memo.get(i).ok_or_else(|| self.err(format!("memo slot {i} unset")))?;
                    stack.push(v.clone());
                }
                0x8c => {
                    let v = self.string(1)?;
                    stack.push(v);
                }
                b'X' => {
                    let v = self.string(4)?;
                    stack.push(v);
                }
                0x8d => {
                    let v = self.string(8)?;
                    stack.push(v);
                }
                b'C' | b'B' | 0x8e => {
                    let l = self.len(match op {
                        b'C' => 1,
                        b'B' => 4,
                        _ => 8,
                    })?;
                    let v = self.take(l)?.to_vec();
                    stack.push(Val::Bytes(v));
                }
                b'K' => {
                    let v = self.uint(1)? as i64;
                    stack.push(Val::Int(v));
                }
                b'M' => {
                    let v = self.uint(2)? as i64;
                    stack.push(Val::Int(v));
                }
                b'J' => {
                    let v = self.uint(4)? as u32 as i32 as i64;
                    stack.push(Val::Int(v));
                }
                b'G' => {
                    let b: [u8; 8] = self.take(8)?.try_into().expect("8 bytes");
                    stack.push(Val::Float(f64::from_be_bytes(b)));
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    if stack.len() < n {
                        return Err(self.err("a tuple of missing items"));
                    }
                    let items = stack.split_off(stack.len() - n);
                    stack.push(Val::Tuple(items));
                }
                b't' => {
                    let items = self.to_mark(&mut stack)?;
                    stack.push(Val::Tuple(items));
                }
                b'c' => {
                    let (m, n) = (self.line()?, self.line()?);
                    stack.push(Val::Global(m, n));
                }
                0x93 => {
                    let (n, m) = (pop!(), pop!());
                    match (m, n) {
                        (Val::Str(m), Val::Str(n)) => stack.push(Val::Global(m, n)),
                        _ => return Err(self.err("STACK_GLOBAL of non-strings")),
                    }
                }
                b'R' => {
                    let (args, f) = (pop!(), pop!());
                    let v = self.reduce(f, args)?;
                    stack.push(v);
                }
                b'b' => {
                    // BUILD: a DotMap's state (`_map`, an OrderedDict of its items, which
                    // SETITEMS gave it already, and two flags); nothing else is built.
                    let state = pop!();
                    match (stack.last_mut(), state) {
                        (Some(Val::Dict(d)), Val::Dict(st)) => {
                            let map = st
                                .into_iter()
                                .find(|(k, _)| matches!(k, Val::Str(k) if k == "_map"));
                            if let (true, Some((_, Val::Dict(map)))) = (d.is_empty(), map) {
                                *d = map;
                            }
                        }
                        _ => return Err(self.err("BUILD of other than a DotMap's state")),
                    }
                }
                b's' => {
                    let (v, k) = (pop!(), pop!());
                    match stack.last_mut() {
                        Some(Val::Dict(d)) => d.push((k, v)),
                        _ => return Err(self.err("SETITEM on a non-dict")),
                    }
                }
                b'u' => {
                    let items = self.to_mark(&mut stack)?;
                    if items.len() % 2 == 1 {
                        return Err(self.err("SETITEMS of an odd number of items"));
                    }
                    let Some(Val::Dict(d)) = stack.last_mut() else {
                        return Err(self.err("SETITEMS on a non-dict"));
                    };
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        d.push((k, v));
                    }
                }
                b'a' => {
                    let v = pop!();
                    match stack.last_mut() {
                        Some(Val::List(l)) => l.push(v),
                        _ => return Err(self.err("APPEND on a non-list")),
                    }
                }
                b'e' => {
                    let items = self.to_mark(&mut stack)?;
                    match stack.last_mut() {
                        Some(Val::List(l)) => l.extend(items),
                        _ => return Err(self.err("APPENDS on a non-list")),
                    }
                }
                b'.' => return stack.pop().ok_or_else(|| self.err("STOP on an empty stack")),
                other => {
                    self.at -= 1;
                    return Err(self.err(format!(
                        "pickle opcode 0x{other:02x}, which evosax's checkpoints do not use"
                    )));
                }
            }
        }
    }

    fn to_mark(&self, stack: &mut Vec<Val>) -> Result<Vec<Val>, EvoError> {
        let m = stack
            .iter()
            .rposition(|v| matches!(v, Val::Mark))
            .ok_or_else(|| self.err("no MARK"))?;
        let items = stack.split_off(m + 1);
        stack.pop();
        Ok(items)
    }

    fn reduce(&self, f: Val, args: Val) -> Result<Val, EvoError> {
        let Val::Global(m, n) = f else {
            return Err(self.err(format!("REDUCE of {}, not a global", kind(&f))));
        };
        let Val::Tuple(mut args) = args else {
            return Err(self.err("REDUCE without an argument tuple"));
        };
        match (m.as_str(), n.as_str()) {
            ("flax.core.frozen_dict", "FrozenDict") if args.len() == 1 => Ok(args.remove(0)),
            // An empty mapping, filled by SETITEMS and BUILD.
            ("dotmap", "DotMap") | ("collections", "OrderedDict") if args.is_empty() => {
                Ok(Val::Dict(Vec::new()))
            }
            ("evosax.learned_evolution.les_tools", "_restore_array") if args.len() == 3 => {
                let (shape, dtype, data) = (args.pop(), args.pop(), args.pop());
                let (Some(Val::Bytes(data)), Some(Val::Str(dtype)), Some(Val::Tuple(shape))) =
                    (data, dtype, shape)
                else {
                    return Err(self.err("_restore_array(bytes, dtype, shape) of other arguments"));
                };
                let mut dims = Vec::with_capacity(shape.len());
                for d in shape {
                    match d {
                        Val::Int(d) if (0..1 << 24).contains(&d) => dims.push(d as usize),
                        _ => return Err(self.err("an array shape that is not small integers")),
                    }
                }
                let count: usize = dims.iter().product();
                let data: Vec<f32> = match dtype.as_str() {
                    "<f4" if data.len() == 4 * count => data
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                        .collect(),
                    "<f8" if data.len() == 8 * count => data
                        .chunks_exact(8)
                        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
                        .collect(),
                    "<f4" | "<f8" => {
                        return Err(self
                            .err(format!("an array of shape {dims:?} with {} bytes", data.len())));
                    }
                    other => {
                        return Err(self.err(format!("an array of dtype {other:?} (not <f4, <f8)")));
                    }
                };
                Ok(Val::Array(CkptArray { shape: dims, data }))
            }
            _ => Err(self.err(format!(
                "the global {m}.{n} with {} arguments (only flax's FrozenDict, dotmap's DotMap, \
                 collections' OrderedDict and evosax's les_tools._restore_array are read; \
                 nothing in the file is run)",
                args.len()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pickle (protocol 4, as Python writes it) of
    /// `{"net": FrozenDict({"w": _restore_array(b"..", "<f4", (2,))}), "n": 3}`.
    fn sample() -> Vec<u8> {
        let mut b = vec![0x80, 4, b'}', 0x94, b'('];
        let s = |b: &mut Vec<u8>, t: &str| {
            b.push(0x8c);
            b.push(t.len() as u8);
            b.extend(t.as_bytes());
        };
        s(&mut b, "net");
        s(&mut b, "flax.core.frozen_dict");
        s(&mut b, "FrozenDict");
        b.push(0x93);
        b.extend([b'}', b'(']);
        s(&mut b, "w");
        s(&mut b, "evosax.learned_evolution.les_tools");
        s(&mut b, "_restore_array");
        b.push(0x93);
        b.extend([b'C', 8]);
        b.extend(1.5f32.to_le_bytes());
        b.extend((-2.0f32).to_le_bytes());
        s(&mut b, "<f4");
        b.extend([b'K', 2, 0x85, 0x87, b'R', b'u', 0x85, b'R']);
        s(&mut b, "n");
        b.extend([b'K', 3, b'u', b'.']);
        b
    }

    #[test]
    fn reads_nested_frozen_dicts_of_arrays() {
        let c = Checkpoint::parse(&sample(), "x.pkl").unwrap();
        assert_eq!(c.arrays.len(), 1);
        assert_eq!(c.get("net/w", &[2]).unwrap(), &[1.5, -2.0]);
        let e = c.get("net/w", &[3]).unwrap_err().to_string();
        assert!(e.contains("x.pkl: net/w") && e.contains("[2]"), "{e}");
        let e = c.get("net/v", &[2]).unwrap_err().to_string();
        assert!(e.contains("missing") && e.contains("net/w"), "{e}");
    }

    /// `sample()` with a DotMap config beside the net, as EvoTF's checkpoint pickles it:
    /// `DotMap()` filled by SETITEMS, then BUILD with its `_map` state.
    fn sample_with_dotmap() -> Vec<u8> {
        let mut b = sample();
        b.truncate(b.len() - 2); // before the last SETITEMS and STOP
        let s = |b: &mut Vec<u8>, t: &str| {
            b.push(0x8c);
            b.push(t.len() as u8);
            b.extend(t.as_bytes());
        };
        s(&mut b, "cfg");
        s(&mut b, "dotmap");
        s(&mut b, "DotMap");
        b.extend([0x93, b')', b'R', b'(']);
        s(&mut b, "embed_dim");
        b.extend([b'K', 16]);
        s(&mut b, "on");
        b.push(0x88);
        s(&mut b, "rates");
        b.extend([b']', b'(', b'G']);
        b.extend(0.9f64.to_be_bytes());
        b.extend([b'K', 1, b'e', b'u', b'}', b'(']);
        s(&mut b, "_map");
        s(&mut b, "collections");
        s(&mut b, "OrderedDict");
        b.extend([0x93, b')', b'R']);
        s(&mut b, "_dynamic");
        b.extend([0x89, b'u', b'b', b'u', b'.']);
        b
    }

    #[test]
    fn keeps_dotmap_configs() {
        let c = Checkpoint::parse(&sample_with_dotmap(), "x.pkl").unwrap();
        assert_eq!(c.get("net/w", &[2]).unwrap(), &[1.5, -2.0]);
        assert_eq!(c.config_usize("cfg/embed_dim", 64).unwrap(), 16);
        assert!(c.config_bool("cfg/on").unwrap());
        assert_eq!(c.config_f64s("cfg/rates", 8).unwrap(), [0.9, 1.0]);
        assert_eq!(c.config_usize("n", 8).unwrap(), 3);
        let e = c.config_usize("cfg/embed_dim", 8).unwrap_err().to_string();
        assert!(e.contains("x.pkl: cfg/embed_dim") && e.contains("1..=8"), "{e}");
        let e = c.config_bool("cfg/missing").unwrap_err().to_string();
        assert!(e.contains("cfg/missing") && e.contains("missing"), "{e}");
        let full = sample_with_dotmap();
        for cut in 0..full.len() - 1 {
            assert!(Checkpoint::parse(&full[..cut], "x.pkl").is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn refuses_other_globals_truncation_and_garbage() {
        let mut evil = sample();
        let at = evil.windows(10).position(|w| w == b"FrozenDict").unwrap();
        evil[at..at + 10].copy_from_slice(b"os_system_");
        let e = Checkpoint::parse(&evil, "x.pkl").unwrap_err().to_string();
        assert!(e.contains("flax.core.frozen_dict.os_system_") && e.contains("nothing"), "{e}");
        let full = sample();
        for cut in 0..full.len() - 1 {
            assert!(Checkpoint::parse(&full[..cut], "x.pkl").is_err(), "cut at {cut}");
        }
        // Every single-byte change is read or refused, never a panic.
        for i in 0..full.len() {
            for v in [0u8, 0x7f, 0xff, b'R', b'u', 0x93] {
                let mut b = full.clone();
                b[i] = v;
                let _ = Checkpoint::parse(&b, "x.pkl");
            }
        }
        let e = Checkpoint::read(Path::new("/nonexistent/les.pkl")).unwrap_err().to_string();
        assert!(e.contains("params.params_path") && e.contains("/nonexistent/les.pkl"), "{e}");
    }
}
