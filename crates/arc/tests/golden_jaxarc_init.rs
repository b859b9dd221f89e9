//! Golden test: `jaxarc`-mode start grids ([`GridInit`]) with every bug switch on
//! ([`JaxBugs::all`]) against JaxARC 1.0.3's own grid initialisation, bit for bit: every
//! canvas cell of the working grid (padding included), the working area and the start
//! similarity (f32 bits).
//!
//! Fixtures come from `tools/golden/jaxarc_init.py`: generated tasks, five
//! `GridInitializationConfig`s (read here as Kestrel's `init` table, so the keys are JaxARC's
//! too), train and eval mode. Kestrel does not reproduce JAX's generator, so each case
//! carries the draws JaxARC made from its key (mode, demo pair, transform, noise) and Kestrel
//! builds the start from them ([`ArcEnv::init_state_with`]).

use kestrel_arc::{
    ArcEnv, ArcParams, GridData, GridInit, JaxBugs, Noise, Pair, SplitKind, Start, Task, TaskBank,
    Transform,
};
use kestrel_testkit::{digits, ints, load_fixture, to_digits};
use serde_json::Value;
use std::sync::Arc;

fn grid_of(v: &Value) -> GridData {
    let cells = digits(v["cells"].as_str().unwrap()).into_iter().map(|c| c as u8).collect();
    GridData { h: v["h"].as_u64().unwrap() as usize, w: v["w"].as_u64().unwrap() as usize, cells }
}

fn pairs(v: &Value) -> Vec<Pair> {
    let pair = |p: &Value| Pair { input: grid_of(&p["input"]), output: grid_of(&p["output"]) };
    v.as_array().unwrap().iter().map(pair).collect()
}

fn canvas<const S: usize>(v: &Value) -> [[i8; S]; S] {
    let d = digits(v.as_str().unwrap());
    std::array::from_fn(|r| std::array::from_fn(|c| d[r * S + c]))
}

fn mask<const S: usize>(v: &Value) -> [u32; S] {
    let m = ints(v);
    std::array::from_fn(|r| m[r] as u32)
}

/// The start a fixture case records.
fn start<const S: usize>(d: &Value) -> Start<S> {
    let source = d["source"].as_u64().unwrap() as usize;
    match d["mode"].as_str().unwrap() {
        "demo" => Start::Demo { source },
        "permutation" => {
            let t = d["transform"].as_array().unwrap();
            let transform = match t[0].as_str().unwrap() {
                "identity" => Transform::Identity,
                "rotate" => Transform::Rotate(t[1].as_u64().unwrap() as u8),
                "flip_lr" => Transform::FlipLr,
                "flip_ud" => Transform::FlipUd,
                "remap" => {
                    let m = ints(&t[1]);
                    Transform::Remap(std::array::from_fn(|c| m[c] as i8))
                }
                other => panic!("transform {other}"),
            };
            Start::Permutation { source, transform }
        }
        "empty" => Start::Empty,
        "random" => {
            let dense = d.get("cluster").is_some();
            Start::Random(Noise {
                base: mask(&d["base"]),
                colors: canvas(&d["colors"]),
                cluster: if dense { mask(&d["cluster"]) } else { [0; S] },
                cluster_colors: if dense { canvas(&d["cluster_colors"]) } else { [[0; S]; S] },
            })
        }
        other => panic!("mode {other}"),
    }
}

fn check<const S: usize>(file: &str) {
    let fx = load_fixture(file);
    assert_eq!(fx["canvas"].as_u64().unwrap() as usize, S);
    let tasks = fx["tasks"].as_array().unwrap().iter().enumerate().map(|(i, t)| Task {
        id: format!("gen{i}"),
        group: String::new(),
        train: pairs(&t["train"]),
        test: pairs(&t["test"]),
    });
    let env = ArcEnv::<S>::new(Arc::new(TaskBank::from_tasks(tasks.collect()))).unwrap();
    let configs: Vec<GridInit> = fx["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::from_value(c.clone()).expect("JaxARC's keys are Kestrel's"))
        .collect();
    let mut modes = std::collections::BTreeMap::<String, usize>::new();
    for (i, c) in fx["cases"].as_array().unwrap().iter().enumerate() {
        let test = c["test"].as_bool().unwrap();
        let p = ArcParams {
            bugs: JaxBugs::all(),
            split: if test { SplitKind::Test } else { SplitKind::Train },
            init: configs[c["config"].as_u64().unwrap() as usize].clone(),
            ..ArcParams::jaxarc()
        };
        env.validate(&p).unwrap();
        let st = start::<S>(&c["start"]);
        let task = c["task"].as_u64().unwrap() as u32;
        let pair = c["pair"].as_u64().unwrap() as u16;
        let s = env.init_state_with(&p, task, pair, test, &st);
        let at = format!("{file} case {i} ({})", c["start"]);
        assert_eq!(
            to_digits(s.grid.iter().flatten().copied()),
            c["grid"].as_str().unwrap(),
            "{at}"
        );
        assert_eq!(s.dims.map(i64::from).to_vec(), ints(&c["dims"]), "dims at {at}");
        assert_eq!(s.similarity.to_bits() as u64, c["sim"].as_u64().unwrap(), "similarity at {at}");
        *modes.entry(c["start"]["mode"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(modes.len(), 4, "every mode met in {file}: {modes:?}");
}

#[test]
fn canvas_5() {
    check::<5>("jaxarc_init_s5.json");
}

#[test]
fn canvas_10() {
    check::<10>("jaxarc_init_s10.json");
}

#[test]
fn canvas_30() {
    check::<30>("jaxarc_init_s30.json");
}
