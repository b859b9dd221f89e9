//! Golden test: `o2arc` mode against ARCLE 0.2.6 `O2ARCv2Env`, bit for bit.
//!
//! Fixtures come from `tools/golden/arcle_o2arc.py` (pinned ARCLE, generated grids). The
//! state is synced once after reset (same task, pair and options), then only actions are
//! replayed; after every step grid, dims, selection display, clipboard, the whole object
//! state, trials, terminated and reward must be identical.

use kestrel_arc::{
    ArcAction, ArcEnv, ArcParams, ArcState, GridData, Pair, Selection, Task, TaskBank,
};
use kestrel_core::Key;
use kestrel_testkit::{digits, ints, load_fixture, to_digits};
use serde_json::Value;
use std::sync::Arc;

fn grid_of(v: &Value) -> GridData {
    let cells = digits(v["cells"].as_str().unwrap()).into_iter().map(|c| c as u8).collect();
    GridData { h: v["h"].as_u64().unwrap() as usize, w: v["w"].as_u64().unwrap() as usize, cells }
}

fn enc<const S: usize>(g: &[[i8; S]; S]) -> String {
    to_digits(g.iter().flatten().copied())
}

fn check<const S: usize>(file: &str) {
    let fx = load_fixture(file);
    assert_eq!(fx["canvas"].as_u64().unwrap() as usize, S);
    let mut steps = 0;
    let mut rewarded = 0;
    for (e, ep) in fx["episodes"].as_array().unwrap().iter().enumerate() {
        let train: Vec<Pair> = ep["train"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| Pair { input: grid_of(&p[0]), output: grid_of(&p[1]) })
            .collect();
        let task =
            Task { id: "gen".into(), group: String::new(), test: vec![train[0].clone()], train };
        let env = ArcEnv::<S>::new(Arc::new(TaskBank::from_tasks(vec![task]))).unwrap();
        let params = ArcParams {
            max_trials: ep["max_trials"].as_i64().unwrap() as i8,
            reset_on_submit: ep["reset_on_submit"].as_bool().unwrap(),
            ..ArcParams::default()
        };
        let mut s: ArcState<S> =
            env.init_state(&params, 0, ep["pair"].as_u64().unwrap() as u16, false, Key::new(0));
        for (t, st) in ep["steps"].as_array().unwrap().iter().enumerate() {
            let sel: Vec<i64> = ints(&st["sel"]);
            let mask: [u32; S] = std::array::from_fn(|r| sel[r] as u32);
            let a = ArcAction { op: st["op"].as_i64().unwrap() as i32, sel: Selection::Mask(mask) };
            let (r, term) = env.apply(&params, &mut s, &a);
            let at = format!("{file} episode {e} step {t} (op {})", a.op);
            assert_eq!(enc(&s.grid), st["grid"].as_str().unwrap(), "grid at {at}");
            assert_eq!(s.dims.map(i64::from).to_vec(), ints(&st["dims"]), "dims at {at}");
            assert_eq!(
                s.selected.iter().map(|&b| b as i64).collect::<Vec<_>>(),
                ints(&st["selected"]),
                "selected at {at}"
            );
            assert_eq!(enc(&s.clip), st["clip"].as_str().unwrap(), "clip at {at}");
            assert_eq!(
                s.clip_dim.map(i64::from).to_vec(),
                ints(&st["clip_dim"]),
                "clip_dim at {at}"
            );
            let o = &s.object;
            assert_eq!(o.active as i64, st["active"].as_i64().unwrap(), "active at {at}");
            assert_eq!(enc(&o.object), st["object"].as_str().unwrap(), "object at {at}");
            assert_eq!(
                o.object_sel.iter().map(|&b| b as i64).collect::<Vec<_>>(),
                ints(&st["object_sel"]),
                "object_sel at {at}"
            );
            assert_eq!(
                o.dim.map(i64::from).to_vec(),
                ints(&st["object_dim"]),
                "object_dim at {at}"
            );
            assert_eq!(
                o.pos.map(i64::from).to_vec(),
                ints(&st["object_pos"]),
                "object_pos at {at}"
            );
            assert_eq!(
                enc(&o.background),
                st["background"].as_str().unwrap(),
                "background at {at}"
            );
            assert_eq!(o.parity as i64, st["parity"].as_i64().unwrap(), "parity at {at}");
            assert_eq!(s.trials as i64, st["trials"].as_i64().unwrap(), "trials at {at}");
            assert_eq!(
                s.terminated as i64,
                st["terminated"].as_i64().unwrap(),
                "terminated flag at {at}"
            );
            assert_eq!(term, st["term"].as_bool().unwrap(), "terminated at {at}");
            assert_eq!(r, st["reward"].as_f64().unwrap() as f32, "reward at {at}");
            rewarded += (r > 0.0) as usize;
            steps += 1;
        }
    }
    assert_eq!(steps, fx["total_steps"].as_u64().unwrap() as usize);
    eprintln!("{file}: {steps} steps identical to ARCLE 0.2.6 ({rewarded} rewarded submits)");
}

#[test]
fn o2arc_matches_arcle_canvas_10() {
    check::<10>("arcle_o2arc_s10.json");
}

#[test]
fn o2arc_matches_arcle_canvas_30() {
    check::<30>("arcle_o2arc_s30.json");
}
