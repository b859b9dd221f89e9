//! Actions as JSON, the format of `kestrel arc replay` traces and `arc rollout` output:
//! `{"op": K, "mask": [[0/1 ...] ...]}`, `{"op": K, "bbox": [r1, c1, r2, c2]}`,
//! `{"op": K, "point": [row, col]}`; no selection means an empty mask.

use crate::action::{ArcAction, Selection};
use crate::error::ArcError;
use serde_json::{Value, json};

fn bad(at: &str, message: String) -> ArcError {
    ArcError::Trace { at: at.to_string(), message }
}

/// The action a JSON object describes; `at` names it in errors (e.g. `trace.jsonl line 3,
/// action 7`). Integers outside `i32` are errors, never wrapped.
pub fn action_from_json<const S: usize>(v: &Value, at: &str) -> Result<ArcAction<S>, ArcError> {
    let int = |x: &Value, f: &str| -> Result<i32, ArcError> {
        x.as_i64()
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| bad(at, format!("field {f:?} must hold 32-bit integers, got {x}")))
    };
    let op = int(v.get("op").unwrap_or(&Value::Null), "op")?;
    if !(0..crate::ops::NUM_OPS).contains(&op) {
        return Err(bad(
            at,
            format!(
                "op {op} is not an operation: 0 to {} (a trace names ops exactly; only raw JaxARC-mode actions clamp, as JaxARC does)",
                crate::ops::NUM_OPS - 1
            ),
        ));
    }
    let given: Vec<&str> =
        ["mask", "bbox", "point"].into_iter().filter(|k| v.get(*k).is_some()).collect();
    if given.len() > 1 {
        return Err(bad(
            at,
            format!(
                "fields {} together: an action has one selection (mask, bbox or point)",
                given.join(" and ")
            ),
        ));
    }
    let sel = if let Some(m) = v.get("mask") {
        let rows = m.as_array().ok_or_else(|| {
            bad(at, format!("field \"mask\" must be a list of 0/1 rows, got {m}"))
        })?;
        if rows.len() > S {
            return Err(bad(
                at,
                format!("field \"mask\" has {} rows; the canvas has {S}", rows.len()),
            ));
        }
        let mut mask = [0u32; S];
        for (r, row) in rows.iter().enumerate() {
            let cells = row
                .as_array()
                .ok_or_else(|| bad(at, format!("mask row {r} must be a list, got {row}")))?;
            if cells.len() > S {
                return Err(bad(
                    at,
                    format!("mask row {r} has {} cells; the canvas has {S}", cells.len()),
                ));
            }
            // A mask smaller than the canvas covers its top-left corner; a ragged one (rows of
            // different lengths) is a mistake, not a shape to fill with zeros.
            let width = rows[0].as_array().map_or(0, Vec::len);
            if cells.len() != width {
                return Err(bad(
                    at,
                    format!(
                        "mask row {r} has {} cells where row 0 has {width}: a mask's rows are one length",
                        cells.len()
                    ),
                ));
            }
            for (c, x) in cells.iter().enumerate() {
                match int(x, "mask")? {
                    0 => {}
                    1 => mask[r] |= 1 << c,
                    other => {
                        return Err(bad(
                            at,
                            format!("mask row {r}, column {c} is {other}; 0 or 1 accepted"),
                        ));
                    }
                }
            }
        }
        Selection::Mask(mask)
    } else if let Some(b) = v.get("bbox") {
        let b = b
            .as_array()
            .filter(|b| b.len() == 4)
            .ok_or_else(|| bad(at, format!("field \"bbox\" must be [r1, c1, r2, c2], got {b}")))?;
        Selection::BBox {
            r1: int(&b[0], "bbox")?,
            c1: int(&b[1], "bbox")?,
            r2: int(&b[2], "bbox")?,
            c2: int(&b[3], "bbox")?,
        }
    } else if let Some(p) = v.get("point") {
        let p = p
            .as_array()
            .filter(|p| p.len() == 2)
            .ok_or_else(|| bad(at, format!("field \"point\" must be [row, col], got {p}")))?;
        Selection::Point { row: int(&p[0], "point")?, col: int(&p[1], "point")? }
    } else {
        Selection::Mask([0; S])
    };
    Ok(ArcAction { op, sel })
}

/// The JSON object of an action (what [`action_from_json`] reads back).
pub fn action_to_json<const S: usize>(a: &ArcAction<S>) -> Value {
    match a.sel {
        Selection::Mask(m) => {
            let rows: Vec<Vec<u32>> =
                m.iter().map(|&r| (0..S).map(|c| r >> c & 1).collect()).collect();
            json!({"op": a.op, "mask": rows})
        }
        Selection::BBox { r1, c1, r2, c2 } => json!({"op": a.op, "bbox": [r1, c1, r2, c2]}),
        Selection::Point { row, col } => json!({"op": a.op, "point": [row, col]}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_round_trip_and_bad_values_are_named() {
        for a in [
            ArcAction::<5> { op: 3, sel: Selection::BBox { r1: 0, c1: 1, r2: 2, c2: 3 } },
            ArcAction::<5> { op: 34, sel: Selection::Point { row: 4, col: 0 } },
            ArcAction::<5> { op: 7, sel: Selection::Mask([1, 0, 3, 0, 16]) },
        ] {
            assert_eq!(action_from_json::<5>(&action_to_json(&a), "a").unwrap(), a);
        }
        let e =
            action_from_json::<5>(&json!({"op": 1, "bbox": [0, 0, 4294967296i64, 1]}), "line 2")
                .unwrap_err()
                .to_string();
        assert!(e.contains("line 2") && e.contains("bbox") && e.contains("4294967296"), "{e}");
        let e = action_from_json::<5>(&json!({"op": "x"}), "t").unwrap_err().to_string();
        assert!(e.contains("\"op\""), "{e}");
        assert!(action_from_json::<5>(&json!({"op": 1, "mask": [[2]]}), "t").is_err());
        // A ragged mask is refused, naming the row; a smaller rectangle is the top-left corner.
        let e = action_from_json::<5>(&json!({"op": 1, "mask": [[1, 1], [1]]}), "line 3")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 3") && e.contains("mask row 1 has 1 cells where row 0 has 2"),
            "{e}"
        );
        let small =
            action_from_json::<5>(&json!({"op": 1, "mask": [[1, 0], [0, 1]]}), "t").unwrap();
        assert_eq!(small.sel, Selection::Mask([1, 2, 0, 0, 0]));
        let e = action_from_json::<5>(&json!({"op": 99}), "t").unwrap_err().to_string();
        assert!(e.contains("op 99"), "{e}");
        // One selection per action: two are refused, not one silently preferred.
        let e =
            action_from_json::<5>(&json!({"op": 1, "bbox": [0, 0, 1, 1], "point": [0, 0]}), "t")
                .unwrap_err()
                .to_string();
        assert!(e.contains("bbox and point together"), "{e}");
    }
}

/// One line of a replay trace: `{"task": ID, "pair": I, "test": BOOL, "actions": [...]}`
/// (`pair` defaults to 0, `test` to false).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceLine {
    /// Task id.
    pub task: String,
    /// Pair index.
    pub pair: u16,
    /// Test pair (else train).
    pub test: bool,
    /// The actions, as JSON objects.
    pub actions: Vec<Value>,
}

/// Parses one trace line; `at` names it in errors.
pub fn parse_trace_line(line: &str, at: &str) -> Result<TraceLine, ArcError> {
    let v: Value = serde_json::from_str(line).map_err(|e| bad(at, format!("not JSON: {e}")))?;
    let task = v.get("task").and_then(Value::as_str);
    let task = task.ok_or_else(|| bad(at, "field \"task\" must be a task id string".into()))?;
    let pair = match v.get("pair") {
        None => 0,
        Some(p) => p.as_u64().and_then(|p| u16::try_from(p).ok()).ok_or_else(|| {
            bad(at, format!("field \"pair\" must be an integer from 0 to 65535, got {p}"))
        })?,
    };
    let test = match v.get("test") {
        None => false,
        Some(t) => t
            .as_bool()
            .ok_or_else(|| bad(at, format!("field \"test\" must be true or false, got {t}")))?,
    };
    let actions = v.get("actions").and_then(Value::as_array);
    let actions =
        actions.ok_or_else(|| bad(at, "field \"actions\" must be a list".into()))?.clone();
    Ok(TraceLine { task: task.to_string(), pair, test, actions })
}

/// What a played episode did.
#[derive(Clone, Debug, PartialEq)]
pub struct Played<const S: usize> {
    /// Reward of each step.
    pub rewards: Vec<f32>,
    /// Ended by the environment.
    pub terminated: bool,
    /// Ended by the step limit.
    pub truncated: bool,
    /// The actions taken.
    pub actions: Vec<ArcAction<S>>,
    /// The final state.
    pub state: crate::state::ArcState<S>,
}

/// Plays `next(t)` from `state` until it returns `None`, the environment terminates, or
/// `max_steps` steps have been counted (truncation).
pub fn play<const S: usize>(
    env: &crate::env::ArcEnv<S>,
    p: &crate::env::ArcParams,
    mut state: crate::state::ArcState<S>,
    max_steps: Option<u32>,
    mut next: impl FnMut(usize) -> Option<ArcAction<S>>,
) -> Played<S> {
    let (mut rewards, mut actions, mut terminated, mut truncated) =
        (Vec::new(), Vec::new(), false, false);
    let mut t = 0;
    while !truncated && let Some(a) = next(t) {
        let (r, term) = env.apply(p, &mut state, &a);
        rewards.push(r);
        actions.push(a);
        terminated = term;
        truncated = max_steps.is_some_and(|m| state.steps >= m);
        if terminated || truncated {
            break;
        }
        t += 1;
    }
    Played { rewards, terminated, truncated, actions, state }
}
