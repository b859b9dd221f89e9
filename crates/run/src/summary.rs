//! `summary.md` and `summary.json` from one list.

use crate::base::{RunError, write_atomic};
use serde_json::{Map, Value};
use std::path::Path;

/// A run's headline results: a title, key/value lines (each also a JSON field), optional
/// tables and a list of the folder's files.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    title: String,
    items: Vec<(String, Value, String)>,
    tables: Vec<(String, Vec<String>, Vec<Vec<String>>)>,
    files: Vec<(String, String)>,
}

impl Summary {
    /// A summary titled `title`.
    pub fn new(title: impl Into<String>) -> Self {
        Summary { title: title.into(), ..Summary::default() }
    }

    /// A line: JSON key `key` with `value`, shown in Markdown as `label: shown`.
    pub fn item(
        mut self,
        key: &str,
        label: &str,
        value: impl Into<Value>,
        shown: impl Into<String>,
    ) -> Self {
        let value = value.into();
        self.items.push((key.into(), value, format!("{label}: {}", shown.into())));
        self
    }

    /// A line whose Markdown shows the JSON value itself.
    pub fn value(self, key: &str, label: &str, value: impl Into<Value>) -> Self {
        let value = value.into();
        let shown = match &value {
            Value::String(s) => s.clone(),
            Value::Number(n) => match n.as_f64() {
                Some(f) if n.is_f64() => format!("{f:.6}"),
                _ => n.to_string(),
            },
            v => v.to_string(),
        };
        self.item(key, label, value, shown)
    }

    /// A table (JSON: a list of row objects under `key`).
    pub fn table(mut self, key: &str, header: &[&str], rows: Vec<Vec<String>>) -> Self {
        self.tables.push((key.into(), header.iter().map(|s| s.to_string()).collect(), rows));
        self
    }

    /// A file of the run folder and what it holds.
    pub fn file(mut self, name: &str, what: &str) -> Self {
        self.files.push((name.into(), what.into()));
        self
    }

    /// The Markdown text.
    pub fn markdown(&self) -> String {
        let mut md = format!("# {}\n\n", self.title);
        for (_, _, line) in &self.items {
            md.push_str(&format!("- {line}\n"));
        }
        for (_, header, rows) in &self.tables {
            md.push_str(&format!("\n| {} |\n|", header.join(" | ")));
            md.push_str(&"---|".repeat(header.len()));
            md.push('\n');
            for r in rows {
                md.push_str(&format!("| {} |\n", r.join(" | ")));
            }
        }
        if !self.files.is_empty() {
            md.push_str("\nFiles:\n\n");
            for (f, what) in &self.files {
                md.push_str(&format!("- `{f}`: {what}\n"));
            }
        }
        md
    }

    /// The JSON object.
    pub fn json(&self) -> Value {
        let mut m = Map::new();
        m.insert("title".into(), self.title.clone().into());
        for (k, v, _) in &self.items {
            m.insert(k.clone(), v.clone());
        }
        for (k, header, rows) in &self.tables {
            let rows: Vec<Value> = rows
                .iter()
                .map(|r| {
                    Value::Object(
                        header.iter().cloned().zip(r.iter().map(|c| c.clone().into())).collect(),
                    )
                })
                .collect();
            m.insert(k.clone(), Value::Array(rows));
        }
        Value::Object(m)
    }

    /// Writes `summary.md` and `summary.json` into `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), RunError> {
        write_atomic(&dir.join("summary.md"), self.markdown().as_bytes())?;
        let json = serde_json::to_string_pretty(&self.json()).expect("a summary serialises");
        write_atomic(&dir.join("summary.json"), json.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_json_hold_the_same_values() {
        let s = Summary::new("evo run")
            .value("best", "best fitness", 1.5e-9)
            .item("evals", "evaluations", 640, "640 (10 generations)")
            .table("components", &["i", "cosine"], vec![vec!["1".into(), "0.99".into()]])
            .file("metrics.jsonl", "one line per generation");
        let md = s.markdown();
        assert!(md.contains("# evo run") && md.contains("- evaluations: 640 (10 generations)"));
        assert!(md.contains("| i | cosine |") && md.contains("`metrics.jsonl`"));
        let j = s.json();
        assert_eq!(j["evals"], 640);
        assert_eq!(j["best"], 1.5e-9);
        assert_eq!(j["components"][0]["cosine"], "0.99");
    }
}
