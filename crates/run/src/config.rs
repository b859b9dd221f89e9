//! Typed configs from layers: the run's defaults, a TOML file, the flags given on the command
//! line, then `--set key=value` overrides (dotted keys reach nested fields: `--set
//! mppi.lambda=0.5`). Each layer is checked as it is added, so an unknown or ill-typed key is
//! reported with the layer it came from, the field and the value. The config types use
//! `#[serde(deny_unknown_fields)]`; the resolved config (every default written out) is what a
//! run folder's `config.toml` holds, and `--config` accepts that file again.

use crate::base::RunError;
use kestrel_core::{Documented, FieldDoc, closest};
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
    /// The keys a front end set: the command line's flags, a Python call's keyword arguments
    /// or dict, a sweep cell's table.
    Flags,
    /// One `--set key=value`.
    Set(&'a str),
}

impl ConfigSource<'_> {
    fn name(&self) -> String {
        match self {
            ConfigSource::Defaults => "defaults".into(),
            ConfigSource::File(p) => p.display().to_string(),
            ConfigSource::Flags => "arguments".into(),
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

/// Deep merge: tables merge key by key, anything else replaces. A table that names another
/// `type` than the one below it (a tagged enum switching variant, as actdyn's
/// `model.dynamics`) replaces it whole: the old variant's fields do not belong to the new one.
fn merge(into: &mut toml::Table, from: toml::Table) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(toml::Value::Table(a)), toml::Value::Table(b))
                if b.get("type").is_none_or(|t| a.get("type") == Some(t)) =>
            {
                merge(a, b)
            }
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

/// Calls `visit` with every dotted key path under `fields` and its field, a nested table's
/// keys before the table's own.
fn each_path(fields: &'static [FieldDoc], prefix: &str, visit: &mut impl FnMut(String, &FieldDoc)) {
    for f in fields {
        let p = if prefix.is_empty() { f.name.to_string() } else { format!("{prefix}.{}", f.name) };
        if let Some(sub) = f.nested {
            each_path(sub(), &p, visit);
        }
        visit(p, f);
    }
}

/// Checks that every key of one layer is a field of the config (nested tables recursively),
/// so a misspelt key is answered with the closest valid one rather than serde's list.
fn check_keys(
    layer: &toml::Table,
    fields: &'static [FieldDoc],
    prefix: &str,
    root: &'static [FieldDoc],
    source: &ConfigSource<'_>,
) -> Result<(), RunError> {
    for (k, v) in layer {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match fields.iter().find(|f| f.name == k) {
            Some(f) => {
                if let (Some(sub), toml::Value::Table(t)) = (f.nested, v) {
                    check_keys(t, sub(), &path, root, source)?;
                }
            }
            None => {
                let mut paths = Vec::new();
                each_path(root, "", &mut |p, _| paths.push(p));
                // The key given at the wrong depth, spelt right (`num_agents` for
                // `env.num_agents`): those paths, the shallowest first, before any near
                // spelling here.
                let mut exact: Vec<&String> = paths
                    .iter()
                    .filter(|p| p.contains('.') && p.rsplit('.').next() == Some(k.as_str()))
                    .collect();
                exact.sort_by_key(|p| (p.matches('.').count(), p.as_str()));
                let siblings = closest(k, fields.iter().map(|f| f.name)).map(|c| {
                    if prefix.is_empty() { c.to_string() } else { format!("{prefix}.{c}") }
                });
                // A key given at the wrong depth, misspelt (`lamda` for `run.mppi.lambda`).
                let elsewhere = || {
                    let lasts: Vec<&str> =
                        paths.iter().map(|p| p.rsplit('.').next().unwrap_or(p)).collect();
                    let c = closest(k, lasts.iter().copied())?;
                    paths.iter().find(|p| p.rsplit('.').next() == Some(c)).cloned()
                };
                let hint = match (exact.split_first(), siblings.or_else(elsewhere)) {
                    (Some((first, [])), _) => format!("; the closest valid key is `{first}`"),
                    (Some((first, rest)), _) => {
                        let rest: Vec<String> = rest.iter().map(|p| format!("`{p}`")).collect();
                        format!("; the closest valid key is `{first}` (also {})", rest.join(", "))
                    }
                    (None, Some(c)) => format!("; the closest valid key is `{c}`"),
                    (None, None) => {
                        let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
                        format!("; valid keys here: {}", names.join(", "))
                    }
                };
                return Err(config_error(
                    source,
                    format!("unknown key `{path}`{hint} (`kestrel config <kind>` lists every key)"),
                ));
            }
        }
    }
    Ok(())
}

/// The config as commented TOML: `header` as comment lines, then every field in declaration
/// order with its doc comment above it, nested tables as `[section]`s. Keys without a value
/// (an unset option) are written commented out. `--config` reads the text back as `value`.
pub fn commented_toml<T: Serialize + Documented>(
    value: &T,
    header: &str,
) -> Result<String, RunError> {
    let table = to_table(value)?;
    let mut out = String::new();
    for l in header.lines() {
        out.push_str(&format!("# {l}\n"));
    }
    write_table(&mut out, &table, T::fields(), "")?;
    Ok(out)
}

fn comment(out: &mut String, doc: &str) {
    // Wrap at ~96 columns.
    let mut line = String::from("#");
    for w in doc.split_whitespace() {
        if line.len() + w.len() + 1 > 96 && line.len() > 1 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(w);
    }
    out.push_str(&line);
    out.push('\n');
}

fn key_text(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}

fn write_table(
    out: &mut String,
    table: &toml::Table,
    fields: &'static [FieldDoc],
    prefix: &str,
) -> Result<(), RunError> {
    let mut sections = Vec::new();
    let mut seen = Vec::new();
    for f in fields {
        seen.push(f.name);
        match (table.get(f.name), f.nested) {
            (Some(toml::Value::Table(t)), Some(sub)) => sections.push((f, t, sub)),
            (Some(v), _) => {
                comment(out, f.doc);
                out.push_str(&format!("{} = {v}\n\n", key_text(f.name)));
            }
            (None, _) => {
                comment(out, f.doc);
                out.push_str(&format!("# {} = (unset)\n\n", key_text(f.name)));
            }
        }
    }
    // Keys the serialised value has that no field documents (none today): written plainly.
    for (k, v) in table.iter().filter(|(k, _)| !seen.contains(&k.as_str())) {
        out.push_str(&format!("{} = {v}\n\n", key_text(k)));
    }
    for (f, t, sub) in sections {
        let path =
            if prefix.is_empty() { f.name.to_string() } else { format!("{prefix}.{}", f.name) };
        comment(out, f.doc);
        out.push_str(&format!("[{path}]\n"));
        write_table(out, t, sub(), &path)?;
    }
    Ok(())
}

fn check<T: DeserializeOwned>(
    table: &toml::Table,
    source: &ConfigSource<'_>,
) -> Result<T, RunError> {
    let text = toml::to_string(table).map_err(|e| config_error(source, e.to_string()))?;
    toml::from_str::<T>(&text).map_err(|e| {
        // Inside a flattened table serde loses the field's position, so toml points at some
        // other line: an unknown enum variant is named by the key that holds it instead.
        let msg = e.message().trim();
        let holder = msg
            .strip_prefix("unknown variant `")
            .and_then(|rest| rest.split_once('`'))
            .and_then(|(variant, _)| key_holding(table, "", variant));
        match holder {
            Some(key) => config_error(source, format!("`{key}`: {msg}")),
            None => config_error(source, plain_ranges(&one_line(&e))),
        }
    })
}

/// serde's Rust type names in a message as the range they hold (`expected u64` → `expected
/// an integer in 0..=18446744073709551615`), so a negative count names what is allowed.
fn plain_ranges(msg: &str) -> String {
    const TYPES: [(&str, &str); 8] = [
        ("u8", "0..=255"),
        ("u16", "0..=65535"),
        ("u32", "0..=4294967295"),
        ("u64", "0..=18446744073709551615"),
        ("usize", "0..=18446744073709551615"),
        ("i32", "-2147483648..=2147483647"),
        ("i64", "-9223372036854775808..=9223372036854775807"),
        ("isize", "-9223372036854775808..=9223372036854775807"),
    ];
    let mut out = msg.to_string();
    for (ty, range) in TYPES {
        out = out.replace(&format!("expected {ty}"), &format!("expected an integer in {range}"));
    }
    out
}

/// The dotted key whose value is the string `value` (the first, in key order).
fn key_holding(table: &toml::Table, prefix: &str, value: &str) -> Option<String> {
    table.iter().find_map(|(k, v)| {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            toml::Value::String(s) if s == value => Some(format!("{key} = {s:?}")),
            toml::Value::Table(t) => key_holding(t, &key, value),
            _ => None,
        }
    })
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
        let mut table = toml::Table::new();
        insert(&mut table, &parts, value_of(raw));
        out.push((s.clone(), table));
    }
    Ok(out)
}

/// A value as `--set` reads it: TOML (`0.5`, `true`, `[1, 2]`, `"a"`), else the text itself
/// as a string (`--set system=nav2d`).
fn value_of(raw: &str) -> toml::Value {
    let raw = raw.trim();
    format!("x = {raw}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("x"))
        .unwrap_or_else(|| toml::Value::String(raw.to_string()))
}

/// Puts `value` at the dotted `path` of `table`, making the tables above it.
fn insert(table: &mut toml::Table, path: &[&str], value: toml::Value) {
    let Some((last, above)) = path.split_last() else { return };
    let mut at = table;
    for p in above {
        let e = at.entry(*p).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !e.is_table() {
            *e = toml::Value::Table(toml::Table::new());
        }
        at = e.as_table_mut().expect("made a table above");
    }
    at.insert(last.to_string(), value);
}

/// The value at the dotted `path` of `table`.
fn value_at<'a>(table: &'a toml::Table, path: &[&str]) -> Option<&'a toml::Value> {
    let (first, rest) = path.split_first()?;
    let v = table.get(*first)?;
    if rest.is_empty() { Some(v) } else { value_at(v.as_table()?, rest) }
}

/// Every key a config can set by itself, dotted (`run.mppi.lambda`), with its doc comment, in
/// declaration order: the fields that are not nested tables. The CLI makes each a flag.
pub fn leaf_keys(fields: &'static [FieldDoc]) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    each_path(fields, "", &mut |p, f| {
        if f.nested.is_none() {
            out.push((p, f.doc));
        }
    });
    out
}

/// The layer that `(key, text)` pairs set (the CLI's key flags: `--num-dims 10`), each text
/// read as `--set` reads its value, and a comma list where the default at that key is a list
/// (`--knobs lambda,sigma`).
pub fn key_layer(pairs: &[(String, String)], defaults: &toml::Table) -> toml::Table {
    let mut table = toml::Table::new();
    for (key, raw) in pairs {
        let path: Vec<&str> = key.split('.').collect();
        let is_list = matches!(value_at(defaults, &path), Some(toml::Value::Array(_)));
        let value = match value_of(raw) {
            toml::Value::String(s) if is_list => toml::Value::Array(
                s.split(',').filter(|x| !x.trim().is_empty()).map(value_of).collect(),
            ),
            // One number or boolean where a list goes: a list of one (`--num-dims 10`).
            v @ (toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_))
                if is_list =>
            {
                toml::Value::Array(vec![v])
            }
            v => v,
        };
        insert(&mut table, &path, value);
    }
    table
}

/// Reads a TOML file into a table (errors name the file and line).
pub fn read_table(path: &Path) -> Result<toml::Table, RunError> {
    let text = crate::base::read_text(path)?;
    text.parse::<toml::Table>().map_err(|e| config_error(&ConfigSource::File(path), one_line(&e)))
}

/// The config: `defaults`, then the file, then `flags`, then each `--set`, each layer checked
/// against `T` as it is added.
pub fn load_config<T: Serialize + DeserializeOwned + Documented>(
    defaults: &T,
    file: Option<&Path>,
    flags: toml::Table,
    sets: &[String],
) -> Result<T, RunError> {
    Ok(load_config_renamed(defaults, file, flags, sets, &[])?.0)
}

/// [`load_config`] where some keys were renamed (`(old, new)` dotted paths, [`Renamed`]):
/// an old key in any layer is read as its new one, and a note per rename is returned for the
/// front end to show ("`layer` is now `agent.layer`").
pub fn load_config_renamed<T: Serialize + DeserializeOwned + Documented>(
    defaults: &T,
    file: Option<&Path>,
    mut flags: toml::Table,
    sets: &[String],
    renamed: Renamed,
) -> Result<(T, Vec<String>), RunError> {
    let fields = T::fields();
    let mut notes = Vec::new();
    let mut table = to_table(defaults)?;
    let mut value: T = check(&table, &ConfigSource::Defaults)?;
    if let Some(path) = file {
        let mut layer = read_table(path)?;
        let src = ConfigSource::File(path);
        rename_keys(&mut layer, renamed, &src, &mut notes)?;
        check_keys(&layer, fields, "", fields, &src)?;
        merge(&mut table, layer);
        value = check(&table, &src)?;
    }
    if !flags.is_empty() {
        rename_keys(&mut flags, renamed, &ConfigSource::Flags, &mut notes)?;
        check_keys(&flags, fields, "", fields, &ConfigSource::Flags)?;
        merge(&mut table, flags);
        value = check(&table, &ConfigSource::Flags)?;
    }
    for (s, mut t) in parse_overrides(sets)? {
        let src = ConfigSource::Set(&s);
        rename_keys(&mut t, renamed, &src, &mut notes)?;
        check_keys(&t, fields, "", fields, &src)?;
        merge(&mut table, t);
        value = check(&table, &src)?;
    }
    Ok((value, notes))
}

/// Config keys renamed since the last release, `(old, new)` as dotted paths; the old
/// spelling is read as the new one, with a note, for one minor release (CHANGELOG.md).
pub type Renamed = &'static [(&'static str, &'static str)];

/// `table` with its renamed keys at their new paths (as a run reads it), for comparing a
/// table a front end set with a config a run wrote.
pub fn with_new_keys(table: &toml::Table, renamed: Renamed) -> toml::Table {
    let mut t = table.clone();
    let _ = rename_keys(&mut t, renamed, &ConfigSource::Flags, &mut Vec::new());
    t
}

/// Moves each old key of `layer` to its new path, noting it; both given is an error naming
/// the two.
fn rename_keys(
    layer: &mut toml::Table,
    renamed: Renamed,
    src: &ConfigSource<'_>,
    notes: &mut Vec<String>,
) -> Result<(), RunError> {
    fn take(t: &mut toml::Table, path: &[&str]) -> Option<toml::Value> {
        match path {
            [] => None,
            [last] => t.remove(*last),
            [first, rest @ ..] => {
                let toml::Value::Table(sub) = t.get_mut(*first)? else { return None };
                let v = take(sub, rest);
                if sub.is_empty() {
                    t.remove(*first);
                }
                v
            }
        }
    }
    for (old, new) in renamed {
        let (o, n): (Vec<&str>, Vec<&str>) = (old.split('.').collect(), new.split('.').collect());
        if value_at(layer, &o).is_none() {
            continue;
        }
        if value_at(layer, &n).is_some() {
            return Err(config_error(
                src,
                format!(
                    "`{old}` and `{new}` both given: `{old}` is the old spelling of `{new}`; keep one"
                ),
            ));
        }
        if let Some(v) = take(layer, &o) {
            insert(layer, &n, v);
            notes.push(format!(
                "{}: `{old}` is now `{new}` (the old spelling is accepted until 0.3.0)",
                src.name()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_integer_types_read_as_their_ranges() {
        assert_eq!(
            plain_ranges("invalid value: integer `-1`, expected u64"),
            "invalid value: integer `-1`, expected an integer in 0..=18446744073709551615"
        );
        assert_eq!(
            plain_ranges("expected usize, found x"),
            "expected an integer in 0..=18446744073709551615, found x"
        );
        assert_eq!(plain_ranges("expected a string"), "expected a string");
    }

    /// A key flag's text is read against the default's type: commas where a list goes, one
    /// number where a list goes a list of one, anything else as `--set` reads it.
    #[test]
    fn key_flags_read_lists_from_commas_or_one_value() {
        let defaults: toml::Table =
            toml::from_str("dims = [10, 100]\nname = \"a\"\nn = 3").unwrap();
        let pairs: Vec<(String, String)> = [("dims", "4"), ("name", "b,c"), ("n", "5")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let t = key_layer(&pairs, &defaults);
        assert_eq!(t["dims"], toml::Value::Array(vec![4.into()]));
        assert_eq!(t["name"], "b,c".into());
        assert_eq!(t["n"], 5.into());
        let t = key_layer(&[("dims".into(), "1,8".into())], &defaults);
        assert_eq!(t["dims"], toml::Value::Array(vec![1.into(), 8.into()]));
    }

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, Documented)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        /// Temperature.
        lambda: f64,
        /// Bounds.
        bounds: Vec<f64>,
    }

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, Documented)]
    #[serde(deny_unknown_fields)]
    struct Cfg {
        /// A name.
        name: String,
        /// Steps to run, a doc long enough to wrap: words words words words words words words
        /// words words words words words words words words.
        steps: u64,
        /// Unset by default.
        cap: Option<u64>,
        /// The inner table.
        #[documented(nested)]
        inner: Inner,
    }

    fn defaults() -> Cfg {
        Cfg {
            name: "a".into(),
            steps: 10,
            cap: None,
            inner: Inner { lambda: 1.0, bounds: vec![f64::NEG_INFINITY, 2.0] },
        }
    }

    #[test]
    fn a_table_naming_another_type_replaces_the_one_below() {
        let t = |s: &str| s.parse::<toml::Table>().unwrap();
        let mut base = t("[d]\ntype = \"mlp\"\nhidden = [16]\n[e]\ntype = \"a\"\nx = 1");
        merge(&mut base, t("[d]\ntype = \"rbf\"\ngrid = 5\n[e]\ntype = \"a\"\ny = 2"));
        assert_eq!(base, t("[d]\ntype = \"rbf\"\ngrid = 5\n[e]\ntype = \"a\"\nx = 1\ny = 2"));
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
    fn commented_defaults_document_every_key_and_read_back_as_the_defaults() {
        let mut d = defaults();
        d.inner.bounds = vec![-1.5, 2.0];
        let text = commented_toml(&d, "header line").unwrap();
        assert!(text.starts_with("# header line\n# A name.\nname = \"a\"\n"), "{text}");
        assert!(text.contains("# Unset by default.\n# cap = (unset)\n"), "{text}");
        assert!(
            text.contains("# The inner table.\n[inner]\n# Temperature.\nlambda = 1.0\n"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.len() <= 100), "{text}");
        let dir = std::env::temp_dir().join(format!("kestrel-cfg-doc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("c.toml");
        std::fs::write(&file, &text).unwrap();
        let other = Cfg { name: "z".into(), steps: 99, cap: Some(3), ..defaults() };
        let back: Cfg = load_config(&other, Some(&file), toml::Table::new(), &[]).unwrap();
        assert_eq!(back, Cfg { cap: Some(3), ..d });
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unknown_and_ill_typed_keys_name_their_source_field_and_value() {
        let e = load_config(&defaults(), None, toml::Table::new(), &["inner.lamda=2".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--set inner.lamda=2") && e.contains("`inner.lambda`"), "{e}");
        // A key at the wrong depth is pointed to where it lives.
        let e = load_config(&defaults(), None, toml::Table::new(), &["lambda=2".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown key `lambda`") && e.contains("`inner.lambda`"), "{e}");
        let e = load_config(&defaults(), None, toml::Table::new(), &["qqqqqqqq=2".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("valid keys here: name, steps, cap, inner"), "{e}");
        let e = load_config(&defaults(), None, toml::Table::new(), &["steps=-3".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("steps") && e.contains("-3"), "{e}");
        assert!(e.contains("expected an integer in 0..=18446744073709551615"), "{e}");
        // A key spelt right at the wrong depth is named over a near spelling here (`bounds`
        // is one letter from no top-level key, `inner.bounds` exactly).
        let e = load_config(&defaults(), None, toml::Table::new(), &["bounds=[1]".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("the closest valid key is `inner.bounds`"), "{e}");
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
