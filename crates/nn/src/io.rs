//! Checkpoints in the safetensors format (an 8-byte little-endian header length, a JSON header
//! `{"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {..}}`, then the raw
//! little-endian values), readable by the Python `safetensors` package. Files are written
//! atomically (a temporary file in the same folder, then a rename).

use crate::adam::AdamState;
use crate::error::NnError;
use crate::model::{Sequential, Trainee};
use kestrel_core::simd::Real;
use std::collections::BTreeMap;
use std::path::Path;

/// Tensors and string metadata read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorFile<T> {
    /// `(name, shape, values)` in file order.
    pub tensors: Vec<(String, Vec<usize>, Vec<T>)>,
    /// The `__metadata__` entries.
    pub metadata: BTreeMap<String, String>,
}

impl<T: Real> TensorFile<T> {
    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Option<(&[usize], &[T])> {
        self.tensors.iter().find(|t| t.0 == name).map(|t| (&t.1[..], &t.2[..]))
    }
}

fn io_err(path: &Path, source: std::io::Error) -> NnError {
    NnError::Io { path: path.display().to_string(), source }
}

fn format_err(path: &Path, what: String) -> NnError {
    NnError::Format { path: path.display().to_string(), what }
}

/// Writes `tensors` (`name, shape, values`) and `metadata` to `path` atomically.
pub fn save_safetensors<T: Real>(
    path: &Path,
    tensors: &[(String, Vec<usize>, &[T])],
    metadata: &[(&str, String)],
) -> Result<(), NnError> {
    let mut header = serde_json::Map::new();
    let mut off = 0usize;
    for (name, shape, values) in tensors {
        let n: usize = shape.iter().product();
        if n != values.len() {
            return Err(format_err(
                path,
                format!("tensor {name}: shape {shape:?} holds {n} values, given {}", values.len()),
            ));
        }
        let end = off + n * T::BYTES;
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": T::DTYPE, "shape": shape, "data_offsets": [off, end]}),
        );
        off = end;
    }
    if !metadata.is_empty() {
        let m: serde_json::Map<String, serde_json::Value> =
            metadata.iter().map(|(k, v)| (k.to_string(), v.clone().into())).collect();
        header.insert("__metadata__".into(), m.into());
    }
    let mut h = serde_json::Value::Object(header).to_string().into_bytes();
    while !h.len().is_multiple_of(8) {
        h.push(b' ');
    }
    let mut bytes = Vec::with_capacity(8 + h.len() + off);
    bytes.extend_from_slice(&(h.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&h);
    for (_, _, values) in tensors {
        for &v in values.iter() {
            v.write_le(&mut bytes);
        }
    }
    // A reader (a resume) never sees half a checkpoint.
    kestrel_core::write_atomic(path, &bytes).map_err(|e| NnError::Io {
        path: format!("{} ({})", e.path.display(), e.doing),
        source: e.source,
    })
}

/// Reads a safetensors file whose tensors are all of type `T`.
pub fn load_safetensors<T: Real>(path: &Path) -> Result<TensorFile<T>, NnError> {
    let bytes = std::fs::read(path).map_err(|e| io_err(path, e))?;
    if bytes.len() < 8 {
        return Err(format_err(path, format!("{} bytes: too short for a header", bytes.len())));
    }
    let hlen = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let data_start = 8usize.checked_add(hlen).filter(|&e| e <= bytes.len()).ok_or_else(|| {
        format_err(path, format!("header length {hlen} exceeds the file ({} bytes)", bytes.len()))
    })?;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..data_start])
        .map_err(|e| format_err(path, format!("header is not JSON: {e}")))?;
    let obj =
        header.as_object().ok_or_else(|| format_err(path, "header is not an object".into()))?;
    let data = &bytes[data_start..];
    let mut out = TensorFile { tensors: Vec::new(), metadata: BTreeMap::new() };
    let mut entries: Vec<(usize, String, Vec<usize>, usize)> = Vec::new();
    for (name, v) in obj {
        if name == "__metadata__" {
            for (k, val) in v.as_object().into_iter().flatten() {
                let s = val.as_str().ok_or_else(|| {
                    format_err(path, format!("metadata {k} = {val} is not a string"))
                })?;
                out.metadata.insert(k.clone(), s.to_string());
            }
            continue;
        }
        let dtype = v["dtype"].as_str().unwrap_or("?");
        if dtype != T::DTYPE {
            return Err(format_err(
                path,
                format!("tensor {name}: dtype {dtype}, expected {}", T::DTYPE),
            ));
        }
        let shape: Vec<usize> = v["shape"]
            .as_array()
            .and_then(|a| a.iter().map(|x| x.as_u64().map(|n| n as usize)).collect())
            .ok_or_else(|| format_err(path, format!("tensor {name}: bad shape {}", v["shape"])))?;
        let offs: Vec<usize> = v["data_offsets"]
            .as_array()
            .and_then(|a| a.iter().map(|x| x.as_u64().map(|n| n as usize)).collect())
            .filter(|o: &Vec<usize>| o.len() == 2)
            .ok_or_else(|| {
                format_err(path, format!("tensor {name}: bad data_offsets {}", v["data_offsets"]))
            })?;
        let n: usize = shape.iter().product();
        if offs[1] < offs[0] || offs[1] > data.len() || offs[1] - offs[0] != n * T::BYTES {
            return Err(format_err(
                path,
                format!(
                    "tensor {name}: data_offsets {:?} do not hold shape {shape:?} of {} within {} data bytes",
                    offs,
                    T::DTYPE,
                    data.len()
                ),
            ));
        }
        entries.push((offs[0], name.clone(), shape, n));
    }
    entries.sort();
    for (start, name, shape, n) in entries {
        let values: Vec<T> = (0..n)
            .map(|i| T::read_le(&data[start + i * T::BYTES..start + (i + 1) * T::BYTES]))
            .collect();
        if let Some(i) = values.iter().position(|v| !v.to_f64().is_finite()) {
            return Err(format_err(
                path,
                format!(
                    "tensor {name}: element {i} is {}; a checkpoint holds finite values",
                    values[i].to_f64()
                ),
            ));
        }
        out.tensors.push((name, shape, values));
    }
    Ok(out)
}

impl<T: Real> Sequential<T> {
    /// Saves `params` (named as [`Sequential::named_params`]) with `metadata`.
    pub fn save(
        &self,
        path: &Path,
        params: &[T],
        metadata: &[(&str, String)],
    ) -> Result<(), NnError> {
        let named: Vec<(String, Vec<usize>, &[T])> = self.named_params(params);
        save_safetensors(path, &named, metadata)
    }

    /// Reads parameters saved by [`Sequential::save`] for this architecture; every tensor must
    /// be present with its shape (errors name the tensor and both shapes).
    pub fn load(&self, path: &Path) -> Result<Vec<T>, NnError> {
        let f = load_safetensors::<T>(path)?;
        self.params_from(path, &f, "")
    }

    fn params_from(&self, path: &Path, f: &TensorFile<T>, prefix: &str) -> Result<Vec<T>, NnError> {
        let zeros = vec![T::ZERO; self.num_params()];
        let mut out = Vec::with_capacity(self.num_params());
        for (name, shape, _) in self.named_params(&zeros) {
            let key = format!("{prefix}{name}");
            match f.get(&key) {
                Some((s, v)) if s == shape.as_slice() => out.extend_from_slice(v),
                Some((s, _)) => {
                    return Err(format_err(
                        path,
                        format!("tensor {key}: shape {s:?}, the model needs {shape:?}"),
                    ));
                }
                None => {
                    return Err(format_err(path, format!("tensor {key} missing")));
                }
            }
        }
        Ok(out)
    }

    /// Saves a trainee's parameters and Adam state (`params.*`, `adam_m.*`, `adam_v.*`, the
    /// step count in the metadata as `adam_t`), so training resumes exactly.
    pub fn save_trainee(
        &self,
        path: &Path,
        t: &Trainee<T>,
        metadata: &[(&str, String)],
    ) -> Result<(), NnError> {
        let mut named = Vec::new();
        for (prefix, v) in [("params.", &t.params), ("adam_m.", &t.opt.m), ("adam_v.", &t.opt.v)] {
            for (name, shape, vals) in self.named_params(v) {
                named.push((format!("{prefix}{name}"), shape, vals));
            }
        }
        let mut meta: Vec<(&str, String)> = metadata.to_vec();
        meta.push(("adam_t", t.opt.t.to_string()));
        save_safetensors(path, &named, &meta)
    }

    /// Reads what [`Sequential::save_trainee`] wrote; also returns the file's metadata.
    pub fn load_trainee(
        &self,
        path: &Path,
    ) -> Result<(Trainee<T>, BTreeMap<String, String>), NnError> {
        let f = load_safetensors::<T>(path)?;
        let params = self.params_from(path, &f, "params.")?;
        let m = self.params_from(path, &f, "adam_m.")?;
        let v = self.params_from(path, &f, "adam_v.")?;
        let t =
            f.metadata.get("adam_t").and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| {
                format_err(path, "metadata adam_t missing or not an integer".into())
            })?;
        let mut tr = Trainee::from_params(self, params);
        tr.opt = AdamState { m, v, t };
        Ok((tr, f.metadata))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("kestrel-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn non_finite_values_are_refused_at_load() {
        let root = folder("nan");
        let p = root.join("x.safetensors");
        save_safetensors(&p, &[("layer.w".to_string(), vec![2], &[1.0f32, f32::NAN][..])], &[])
            .unwrap();
        let e = load_safetensors::<f32>(&p).unwrap_err().to_string();
        assert!(e.contains("layer.w") && e.contains("NaN") && e.contains("x.safetensors"), "{e}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
