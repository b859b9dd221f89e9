//! Property tests of every parser a user's input reaches: arbitrary bytes and arbitrary
//! structured values give a value or an error, never a panic. ARC task files, replay traces
//! and actions, TOML configs with `--set` overrides, grid-map files, checkpoint files.

use kestrel_arc::trace::{action_from_json, parse_trace_line};
use kestrel_arc::{LoadOptions, TaskBank};
use kestrel_envs::GridMap;
use proptest::prelude::*;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kestrel-parsers-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Arbitrary JSON values, nested a few levels, with the keys the parsers look for.
fn json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(serde_json::Value::from),
        "[a-z0-9_-]{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 6, |inner| {
        let key = prop_oneof![
            Just("train".to_string()),
            Just("test".to_string()),
            Just("input".to_string()),
            Just("output".to_string()),
            Just("op".to_string()),
            Just("mask".to_string()),
            Just("bbox".to_string()),
            Just("point".to_string()),
            Just("task".to_string()),
            Just("actions".to_string()),
            "[a-z]{1,5}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(key, inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Steps.
    steps: u64,
    /// Rate.
    rate: f64,
    /// Names.
    names: Vec<String>,
    /// A nested table.
    #[documented(nested)]
    inner: Inner,
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, kestrel_core::Documented)]
#[serde(deny_unknown_fields)]
struct Inner {
    /// Temperature.
    lambda: f64,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arc_task_files_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400), v in json()) {
        let p = scratch("task.json");
        std::fs::write(&p, &bytes).unwrap();
        let _ = TaskBank::load(&p, LoadOptions { strict: true });
        std::fs::write(&p, v.to_string()).unwrap();
        let _ = TaskBank::load(&p, LoadOptions { strict: false });
    }

    #[test]
    fn replay_traces_and_actions_never_panic(text in ".{0,200}", v in json()) {
        let _ = parse_trace_line(&text, "t");
        let _ = parse_trace_line(&v.to_string(), "t");
        let _ = action_from_json::<5>(&v, "a");
        let _ = action_from_json::<30>(&v, "a");
    }

    #[test]
    fn configs_and_overrides_never_panic(text in "[a-z_.=\\[\\]\"0-9 \\n-]{0,120}", set in "[a-z_.=\\[\\]\"0-9 -]{0,40}") {
        let p = scratch("config.toml");
        std::fs::write(&p, &text).unwrap();
        let defaults = Config { steps: 1, rate: 0.5, names: vec![], inner: Inner { lambda: 1.0 } };
        let _ = kestrel_run::load_config(&defaults, Some(&p), toml::Table::new(), std::slice::from_ref(&set));
        let _ = kestrel_run::load_config(&defaults, None, toml::Table::new(), &[set]);
    }

    #[test]
    fn map_files_never_panic(text in "[Xx.# \\n\\r-]{0,300}") {
        let _ = GridMap::parse(&text, "fuzz");
    }

    #[test]
    fn checkpoint_files_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300), header in json()) {
        let p = scratch("ckpt.safetensors");
        std::fs::write(&p, &bytes).unwrap();
        let _ = kestrel_nn::load_safetensors::<f32>(&p);
        // A well-formed length prefix with an arbitrary header and data.
        let h = header.to_string().into_bytes();
        let mut file = (h.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(&h);
        file.extend_from_slice(&bytes);
        std::fs::write(&p, &file).unwrap();
        let _ = kestrel_nn::load_safetensors::<f64>(&p);
    }
}
