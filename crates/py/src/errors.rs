//! Rust errors as Python exceptions (the CLI's messages), and keyword params from Python.

use pyo3::PyErr;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use serde_json::{Map, Value};

/// A `ValueError` with the error's message (bad input: shape, range, unknown key).
pub(crate) fn value_error(e: impl ToString) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A run's error as the matching Python exception: bad config or input → `ValueError`, a file
/// that cannot be read or written → `OSError`, anything else → `RuntimeError`.
pub(crate) fn run_error(e: kestrel_run::RunError) -> PyErr {
    use kestrel_run::RunError as R;
    match e {
        R::Io { .. } => PyOSError::new_err(e.to_string()),
        R::Failed(_) | R::Plot(_) => PyRuntimeError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// Keyword params of one env or object, from the JSON the Python layer sends; every key
/// taken is recorded so leftovers are reported with the accepted names.
pub(crate) struct Kw {
    what: String,
    map: Map<String, Value>,
    taken: Vec<&'static str>,
}

impl Kw {
    /// Parses `json` (an object) for `what` (an env id).
    pub(crate) fn parse(what: &str, json: &str) -> Result<Self, PyErr> {
        let v: Value = serde_json::from_str(json)
            .map_err(|e| value_error(format!("{what}: params are not valid JSON: {e}")))?;
        let Value::Object(map) = v else {
            return Err(value_error(format!("{what}: params must be a dict")));
        };
        Ok(Kw { what: what.into(), map, taken: Vec::new() })
    }

    /// An error for `key = value` naming what is accepted.
    pub(crate) fn bad(&self, key: &str, value: impl ToString, accepted: &str) -> PyErr {
        value_error(format!("{}: {key} = {}: expected {accepted}", self.what, value.to_string()))
    }

    fn take(&mut self, key: &'static str) -> Option<Value> {
        self.taken.push(key);
        self.map.remove(key).filter(|v| !v.is_null())
    }

    /// A finite float.
    pub(crate) fn f64(&mut self, key: &'static str, into: &mut f64) -> Result<(), PyErr> {
        if let Some(v) = self.take(key) {
            match v.as_f64() {
                Some(x) if x.is_finite() => *into = x,
                _ => return Err(self.bad(key, v, "a finite number")),
            }
        }
        Ok(())
    }

    /// A finite float stored as f32.
    pub(crate) fn f32(&mut self, key: &'static str, into: &mut f32) -> Result<(), PyErr> {
        let mut x = *into as f64;
        self.f64(key, &mut x)?;
        *into = x as f32;
        Ok(())
    }

    /// A list of finite floats.
    pub(crate) fn f64_list(&mut self, key: &'static str, into: &mut Vec<f64>) -> Result<(), PyErr> {
        if let Some(v) = self.take(key) {
            let list = v.as_array().and_then(|a| {
                a.iter().map(|x| x.as_f64().filter(|f| f.is_finite())).collect::<Option<Vec<_>>>()
            });
            match list {
                Some(l) => *into = l,
                None => return Err(self.bad(key, v, "a list of finite numbers")),
            }
        }
        Ok(())
    }

    fn int<T: TryFrom<i64> + TryFrom<u64>>(
        &mut self,
        key: &'static str,
        into: &mut T,
        range: &str,
    ) -> Result<(), PyErr> {
        if let Some(v) = self.take(key) {
            let x = v
                .as_u64()
                .and_then(|u| T::try_from(u).ok())
                .or_else(|| v.as_i64().and_then(|i| T::try_from(i).ok()));
            match x {
                Some(x) => *into = x,
                None => return Err(self.bad(key, v, range)),
            }
        }
        Ok(())
    }

    /// An integer 0 to 2^32 − 1.
    pub(crate) fn u32(&mut self, key: &'static str, into: &mut u32) -> Result<(), PyErr> {
        self.int(key, into, "an integer 0 to 4294967295")
    }
    /// An integer 0 to 2^64 − 1.
    pub(crate) fn u64(&mut self, key: &'static str, into: &mut u64) -> Result<(), PyErr> {
        self.int(key, into, "an integer >= 0")
    }
    /// A size.
    pub(crate) fn usize(&mut self, key: &'static str, into: &mut usize) -> Result<(), PyErr> {
        self.int(key, into, "an integer >= 0")
    }
    /// An integer 0 to 255.
    pub(crate) fn u8(&mut self, key: &'static str, into: &mut u8) -> Result<(), PyErr> {
        self.int(key, into, "an integer 0 to 255")
    }
    /// An integer −128 to 127.
    pub(crate) fn i8(&mut self, key: &'static str, into: &mut i8) -> Result<(), PyErr> {
        self.int(key, into, "an integer -128 to 127")
    }

    /// A boolean.
    pub(crate) fn bool(&mut self, key: &'static str, into: &mut bool) -> Result<(), PyErr> {
        if let Some(v) = self.take(key) {
            match v.as_bool() {
                Some(b) => *into = b,
                None => return Err(self.bad(key, v, "True or False")),
            }
        }
        Ok(())
    }

    /// A string.
    pub(crate) fn string(&mut self, key: &'static str, into: &mut String) -> Result<(), PyErr> {
        if let Some(v) = self.take(key) {
            match v.as_str() {
                Some(s) => *into = s.to_string(),
                None => return Err(self.bad(key, v, "a string")),
            }
        }
        Ok(())
    }

    /// The keys not taken yet, deserialised into a serde type (its own unknown-key errors).
    pub(crate) fn rest_as<T: serde::de::DeserializeOwned>(
        &mut self,
        what: &str,
    ) -> Result<T, PyErr> {
        let rest = std::mem::take(&mut self.map);
        serde_json::from_value(Value::Object(rest)).map_err(|e| value_error(format!("{what}: {e}")))
    }

    /// Fails on any key not taken, listing the accepted ones.
    pub(crate) fn finish(&mut self) -> Result<(), PyErr> {
        if let Some(k) = self.map.keys().next() {
            let mut acc = self.taken.clone();
            acc.sort_unstable();
            acc.dedup();
            return Err(value_error(format!(
                "{}: unknown parameter {k:?}; accepted: {}",
                self.what,
                acc.join(", ")
            )));
        }
        Ok(())
    }
}
