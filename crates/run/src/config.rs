//! Typed configs from layers: the run's defaults, a TOML file, the flags given on the command
//! line, then `--set key=value` overrides (dotted keys reach nested fields: `--set
//! mppi.lambda=0.5`). Each layer is checked as it is added, so an unknown or ill-typed key is
//! reported with the layer it came from, the field and the value. The config types use
//! `#[serde(deny_unknown_fields)]`; the resolved config (every default written out) is what a
//! run folder's `config.toml` holds, and `--config` accepts that file again.

use crate::RunError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;

/// Where one layer of a config came from.
#[derive(Clone, Copy, Debug)]
pub enum ConfigSource<'a> {
    /// The run type's own defaults.
    Defaults,
    /// A TOML file.
    File(&'a Path),
    /// The command line's named flags.
    Flags,
    /// One `--set key=value`.
    Set(&'a str),
}

impl ConfigSource<'_> {
    fn name(&self) -> String {
        match self {
            ConfigSource::Defaults => "defaults".into(),
            ConfigSource::File(p) => p.display().to_string(),
            ConfigSource::Flags => "command line".into(),
            ConfigSource::Set(s) => format!("--set {s}"),
        }
    }
}

fn config_error(source: &ConfigSource<'_>, message: impl Into<String>) -> RunError {
    RunError::Config { source_name: source.name(), message: message.into() }
}

/// The TOML table of a serialisable value (a config's defaults).
pub fn to_table<T: Serialize>(value: &T) -> Result<toml::Table, RunError> {
    toml::Table::try_from(value).map_err(|e| RunError::Config {
        source_name: "defaults".into(),
        message: format!("cannot be written as TOML: {e}"),
    })
}

/// The resolved config as TOML text (for `config.toml`).
pub fn to_toml<T: Serialize>(value: &T) -> Result<String, RunError> {
    toml::to_string(value).map_err(|e| RunError::Config {
        source_name: "config".into(),
        message: format!("cannot be written as TOML: {e}"),
    })
}

/// Deep merge: tables merge key by key, anything else replaces.
fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// One line from toml's multi-line error: the offending `key = value` and the message.
pub(crate) fn one_line(e: &toml::de::Error) -> String {
    let msg = e.message().trim().to_string();
    let text = e.to_string();
    let offending = text
        .lines()
        .filter_map(|l| l.split_once(" | ").map(|(_, r)| r.trim()))
        .find(|l| !l.is_empty() && !l.chars().all(|c| c == '^' || c == ' '));
    match offending {
        Some(line) => format!("`{line}`: {msg}"),
        None => msg,
    }
}

fn check<T: DeserializeOwned>(
    table: &toml::Table,
    source: &ConfigSource<'_>,
) -> Result<T, RunError> {
    let text = toml::to_string(table).map_err(|e| config_error(source, e.to_string()))?;
    toml::from_str::<T>(&text).map_err(|e| config_error(source, one_line(&e)))
}

/// Parses `--set` overrides (`key=value`, dotted keys for nested tables; the value is read as
/// TOML, and as a plain string when it is not valid TOML).
pub fn parse_overrides(sets: &[String]) -> Result<Vec<(String, toml::Table)>, RunError> {
    let mut out = Vec::with_capacity(sets.len());
    for s in sets {
        let src = ConfigSource::Set(s);
        let (key, raw) =
            s.split_once('=').ok_or_else(|| config_error(&src, "expected KEY=VALUE"))?;
        let parts: Vec<&str> = key.trim().split('.').map(str::trim).collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(config_error(&src, format!("key {key:?} is empty or has an empty part")));
        }
        let raw = raw.trim();
        let value = format!("x = {raw}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("x"))
            .unwrap_or_else(|| toml::Value::String(raw.to_string()));
        let mut table = toml::Table::new();
        table.insert(parts[parts.len() - 1].to_string(), value);
        for p in parts[..parts.len() - 1].iter().rev() {
            let mut outer = toml::Table::new();
            outer.insert(p.to_string(), toml::Value::Table(table));
            table = outer;
        }
        out.push((s.clone(), table));
    }
    Ok(out)
}

/// Reads a TOML file into a table (errors name the file and line).
pub fn read_table(path: &Path) -> Result<toml::Table, RunError> {
    let text = std::fs::read_to_string(path).map_err(|e| RunError::io(path, "cannot read", e))?;
    text.parse::<toml::Table>().map_err(|e| config_error(&ConfigSource::File(path), one_line(&e)))
}

/// The config: `defaults`, then the file, then `flags`, then each `--set`, each layer checked
/// against `T` as it is added.
pub fn load_config<T: Serialize + DeserializeOwned>(
    defaults: &T,
    file: Option<&Path>,
    flags: toml::Table,
    sets: &[String],
) -> Result<T, RunError> {
    let mut table = to_table(defaults)?;
    let mut value: T = check(&table, &ConfigSource::Defaults)?;
    if let Some(path) = file {
        merge(&mut table, read_table(path)?);
        value = check(&table, &ConfigSource::File(path))?;
    }
    if !flags.is_empty() {
        merge(&mut table, flags);
        value = check(&table, &ConfigSource::Flags)?;
    }
    for (s, t) in parse_overrides(sets)? {
        merge(&mut table, t);
        value = check(&table, &ConfigSource::Set(&s))?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        lambda: f64,
        bounds: Vec<f64>,
    }

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        name: String,
        steps: u64,
        inner: Inner,
    }

    fn defaults() -> Cfg {
        Cfg {
            name: "a".into(),
            steps: 10,
            inner: Inner { lambda: 1.0, bounds: vec![f64::NEG_INFINITY, 2.0] },
        }
    }

    #[test]
    fn layers_apply_in_order_and_the_resolved_config_round_trips() {
        let dir = std::env::temp_dir().join(format!("kestrel-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(&file, "steps = 20\n[inner]\nlambda = 3.0\n").unwrap();
        let mut flags = toml::Table::new();
        flags.insert("name".into(), toml::Value::String("b".into()));
        let sets = vec!["inner.lambda=0.5".to_string(), "steps = 30".to_string()];
        let c: Cfg = load_config(&defaults(), Some(&file), flags, &sets).unwrap();
        assert_eq!(c.name, "b");
        assert_eq!(c.steps, 30);
        assert_eq!(c.inner.lambda, 0.5);
        assert_eq!(c.inner.bounds[0], f64::NEG_INFINITY);
        let text = to_toml(&c).unwrap();
        std::fs::write(&file, text).unwrap();
        let again: Cfg = load_config(&defaults(), Some(&file), toml::Table::new(), &[]).unwrap();
        assert_eq!(again, c);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unknown_and_ill_typed_keys_name_their_source_field_and_value() {
        let e = load_config(&defaults(), None, toml::Table::new(), &["inner.lamda=2".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set inner.lamda=2") && e.contains("lamda"), "{e}");
        let e = load_config(&defaults(), None, toml::Table::new(), &["steps=-3".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("steps") && e.contains("-3"), "{e}");
        let e = load_config(&defaults(), None, toml::Table::new(), &["novalue".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("KEY=VALUE"), "{e}");
        let e = load_config(
            &defaults(),
            Some(Path::new("/nonexistent/c.toml")),
            toml::Table::new(),
            &[],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("/nonexistent/c.toml"), "{e}");
    }
}
