//! Registry envs as XLA targets: `reset`, `step` and `rollout` of a batch that lives in a
//! table here, its state threaded through JAX as a handle value.
//!
//! A handle is `uint32[2]` = (slot, version). Each call checks the version against the env's,
//! steps the env, and returns the handle with the next version: JAX orders the calls by that
//! data dependence (as EnvPool's XLA interface does), and a handle that was already used (an
//! old one reused, a vmap that broadcast one handle to several rows) is an error instead of a
//! silent step of whatever state the env is in now. Under `vmap` (`vmap_method =
//! "broadcast_all"`) every operand gains leading axes: the handler steps each handle's env with
//! its part of the operands, one after another.
//!
//! The calls are [`DynBatch`]'s, the ones `kestrel.vector.VectorEnv` makes, so the two give
//! the same bits on the same seeds.

use crate::abi::{Attrs, Buffer, CallFrame, XlaError, call};
use crate::table::{Table, lock};
use kestrel_core::Space;
use kestrel_run::envs::{Actions, DynBatch, Obs, ObsMut, Rollout, copy_column, spread_flags};
use std::sync::{Arc, Mutex};

/// One env batch of the table, with its version and the scratch the action operands are
/// converted into (kept from call to call: no allocation in a loop of steps).
struct Slot {
    batch: Box<dyn DynBatch>,
    version: u32,
    scratch: Scratch,
    /// A rollout's per-env flags (spread to agent rows after) and float64 observations (for
    /// float32 results).
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    obs64: Vec<f64>,
}

/// The action operands, converted to the types [`Actions`] holds.
#[derive(Default)]
struct Scratch {
    ints: Vec<i64>,
    floats: Vec<f64>,
    sel: Vec<u8>,
    /// ARC's point (`row, col`) or bbox (`r1, c1, r2, c2`) coordinate columns.
    coords: [Vec<i64>; 4],
}

/// The envs, by slot.
static TABLE: Mutex<Table<Arc<Mutex<Slot>>>> = Mutex::new(Table::new());

/// Puts `batch` in the table; returns its slot (the handle's first word; version 0).
pub fn insert(batch: Box<dyn DynBatch>) -> u32 {
    let s = Slot {
        batch,
        version: 0,
        scratch: Scratch::default(),
        terminated: Vec::new(),
        truncated: Vec::new(),
        obs64: Vec::new(),
    };
    lock(&TABLE).insert(Arc::new(Mutex::new(s)))
}

/// Drops the env of `slot`; false if there was none.
pub fn close(slot: u32) -> bool {
    lock(&TABLE).remove(slot)
}

/// The version the env of `slot` is at (what a handle to it must carry), or `None` if closed.
pub fn version(slot: u32) -> Option<u32> {
    let s = lock(&TABLE).get(slot)?;
    let v = s.lock().map(|g| g.version).unwrap_or_else(|e| e.into_inner().version);
    Some(v)
}

fn get(slot: u32) -> Result<Arc<Mutex<Slot>>, String> {
    lock(&TABLE).get(slot).ok_or_else(|| format!("env {slot} is closed (or never was)"))
}

/// Runs `f` on the env of handle `h` (slot, version), locked, its version checked; returns
/// the env's next version (what the handle `f`'s call returns must carry).
fn with_slot(h: &[u32], f: impl FnOnce(&mut Slot) -> Result<(), String>) -> Result<u32, String> {
    let (slot, v) = (h[0], h[1]);
    let s = get(slot)?;
    let mut g = s.lock().map_err(|_| format!("env {slot}: an earlier call failed inside it"))?;
    if g.version != v {
        return Err(format!(
            "handle (env {slot}, version {v}) is stale: the env is at version {} (each handle \
             is used once: pass the one the last reset or step returned; under vmap, one \
             handle per env)",
            g.version
        ));
    }
    f(&mut g)?;
    g.version = g.version.wrapping_add(1);
    Ok(g.version)
}

/// Every call's loop: `f(i, n, slot)` for each of the `n` handles in `handles` (one per vmap
/// entry) on its env, then that entry of the handle result set to the env's next version.
fn each_env(
    handle: &Buffer<'_>,
    out: &mut Buffer<'_>,
    mut f: impl FnMut(usize, usize, &mut Slot) -> Result<(), String>,
) -> Result<(), String> {
    let hs = handles(handle)?;
    let n = hs.len() / 2;
    for i in 0..n {
        let h = &hs[2 * i..2 * i + 2];
        let next = with_slot(h, |s| f(i, n, s))?;
        part_mut::<u32>(out, i, n, 2, "handle result")?.copy_from_slice(&[h[0], next]);
    }
    Ok(())
}

/// The handle operand's words, checked: shape `(..., 2)`; `B` handles.
fn handles<'a>(b: &Buffer<'a>) -> Result<&'a [u32], String> {
    if b.dims.last() != Some(&2) {
        return Err(format!("handle: shape {:?}, expected (..., 2)", b.dims));
    }
    b.slice::<u32>()
}

/// `b`'s part `i` of `n` equal parts, each `each` elements, writable.
fn part_mut<'b, T: crate::abi::Elem>(
    b: &'b mut Buffer<'_>,
    i: usize,
    n: usize,
    each: usize,
    what: &str,
) -> Result<&'b mut [T], String> {
    if b.len() != n * each {
        return Err(format!("{what}: {} values, expected {}", b.len(), n * each));
    }
    Ok(&mut b.slice_mut::<T>()?[i * each..(i + 1) * each])
}

/// The action operands' forms an env takes: `Int` (Discrete), `Float` (`nu` per row), ARC's
/// operation and `S × S` selection, or ARC's operation and 2 (point) or 4 (bbox) coordinate
/// columns.
enum Form {
    Int,
    Float(usize),
    Arc(usize),
    ArcCoords(usize),
}

fn form(batch: &dyn DynBatch) -> Result<Form, String> {
    match &batch.spec().action_space {
        Space::Discrete { .. } => Ok(Form::Int),
        Space::Box { shape, .. } => Ok(Form::Float(shape.iter().product())),
        Space::Dict(parts) => match parts.iter().find(|(n, _)| *n == "selection") {
            Some((_, s)) => Ok(Form::Arc(s.flat_len())),
            None => Err("this env's action space has no XLA form".into()),
        },
    }
}

/// Integers of any integer dtype, widened.
fn ints_into(
    src: &Buffer<'_>,
    range: std::ops::Range<usize>,
    out: &mut Vec<i64>,
) -> Result<(), String> {
    out.clear();
    match src.dtype {
        crate::abi::Dtype::I32 => out.extend(src.slice::<i32>()?[range].iter().map(|&v| v as i64)),
        crate::abi::Dtype::I64 => out.extend_from_slice(&src.slice::<i64>()?[range]),
        crate::abi::Dtype::U32 => out.extend(src.slice::<u32>()?[range].iter().map(|&v| v as i64)),
        crate::abi::Dtype::U64 => {
            for &v in &src.slice::<u64>()?[range] {
                out.push(i64::try_from(v).map_err(|_| format!("{}: value {v}", src.what()))?);
            }
        }
        crate::abi::Dtype::U8 | crate::abi::Dtype::Pred => {
            out.extend(src.slice::<u8>()?[range].iter().map(|&v| v as i64))
        }
        d => return Err(format!("{}: dtype {}, expected integers", src.what(), d.name())),
    }
    Ok(())
}

/// The action operands' part for batch `i` of `n` as `steps` steps of `rows` rows, converted
/// into the slot's scratch (no allocation once it has grown); its form ([`act`] reads a step).
fn convert(
    batch: &dyn DynBatch,
    s: &mut Scratch,
    args: &[Buffer<'_>],
    i: usize,
    n: usize,
    steps: usize,
) -> Result<Form, String> {
    let rows = batch.num_envs() * batch.spec().num_agents;
    let per = steps * rows;
    let check = |b: &Buffer<'_>, each: usize, what: &str| {
        if b.len() == n * per * each {
            return Ok(i * per * each..(i + 1) * per * each);
        }
        let mut parts = vec![format!("{rows} rows")];
        if steps > 1 {
            parts.insert(0, format!("{steps} steps"));
        }
        if n > 1 {
            parts.insert(0, format!("{n} envs' batches"));
        }
        if each > 1 {
            parts.push(each.to_string());
        }
        Err(format!(
            "{what}: {} values (shape {:?}), expected {} ({})",
            b.len(),
            b.dims,
            n * per * each,
            parts.join(" × ")
        ))
    };
    match (form(batch)?, args) {
        (Form::Int, [a]) => {
            ints_into(a, check(a, 1, "action")?, &mut s.ints)?;
            Ok(Form::Int)
        }
        (Form::Float(nu), [a]) => {
            let r = check(a, nu, "action")?;
            s.floats.clear();
            match a.dtype {
                crate::abi::Dtype::F32 => {
                    s.floats.extend(a.slice::<f32>()?[r].iter().map(|&v| v as f64))
                }
                crate::abi::Dtype::F64 => s.floats.extend_from_slice(&a.slice::<f64>()?[r]),
                d => return Err(format!("action: dtype {}, expected floats", d.name())),
            }
            Ok(Form::Float(nu))
        }
        (Form::Arc(cells), [ops, sel]) => {
            ints_into(ops, check(ops, 1, "operation")?, &mut s.ints)?;
            let r = check(sel, cells, "selection")?;
            s.sel.clear();
            match sel.dtype {
                crate::abi::Dtype::U8 | crate::abi::Dtype::Pred => {
                    s.sel.extend_from_slice(&sel.slice::<u8>()?[r])
                }
                crate::abi::Dtype::I32 => {
                    for &v in &sel.slice::<i32>()?[r] {
                        s.sel.push(u8::try_from(v).map_err(|_| format!("selection: value {v}"))?);
                    }
                }
                d => return Err(format!("selection: dtype {}, expected bool or uint8", d.name())),
            }
            Ok(Form::Arc(cells))
        }
        // Point or bbox selections: the coordinates' ranges are checked by the env's action
        // decoding (`Actions::ArcCoords`), as the numpy entry's are.
        (Form::Arc(_), [ops, coords @ ..]) if coords.len() == 2 || coords.len() == 4 => {
            ints_into(ops, check(ops, 1, "operation")?, &mut s.ints)?;
            let names: &[&str] =
                if coords.len() == 2 { &["row", "col"] } else { &["r1", "c1", "r2", "c2"] };
            for ((c, out), name) in coords.iter().zip(s.coords.iter_mut()).zip(names) {
                ints_into(c, check(c, 1, name)?, out)?;
            }
            Ok(Form::ArcCoords(coords.len()))
        }
        (Form::Arc(_), _) => Err(format!(
            "ARC takes 2 action operands (operation, selection), 3 (operation, row, col) or 5 \
             (operation, r1, c1, r2, c2), got {}",
            args.len()
        )),
        (_, _) => Err(format!("this env takes one action operand, got {}", args.len())),
    }
}

/// Step `t`'s coordinate columns in the scratch (empty where unused): what [`act`] points
/// ARC's point and bbox actions at.
fn columns(s: &Scratch, t: usize, rows: usize) -> [&[i64]; 4] {
    std::array::from_fn(|j| s.coords[j].get(t * rows..(t + 1) * rows).unwrap_or(&[]))
}

/// Step `t`'s actions of what [`convert`] put in the scratch, `rows` rows a step (`cols`: that
/// step's [`columns`]).
fn act<'s>(
    form: &Form,
    s: &'s Scratch,
    cols: &'s [&'s [i64]; 4],
    t: usize,
    rows: usize,
) -> Actions<'s> {
    match *form {
        Form::Int => Actions::Int(&s.ints[t * rows..(t + 1) * rows]),
        Form::Float(nu) => Actions::Float(&s.floats[t * rows * nu..(t + 1) * rows * nu]),
        Form::Arc(cells) => Actions::Arc {
            ops: &s.ints[t * rows..(t + 1) * rows],
            sel: &s.sel[t * rows * cells..(t + 1) * rows * cells],
        },
        Form::ArcCoords(k) => {
            Actions::ArcCoords { ops: &s.ints[t * rows..(t + 1) * rows], coords: &cols[..k] }
        }
    }
}

/// `b`'s part `i` of `n` as an observation buffer of the env's dtype `dtype`, `len` values.
fn obs_out<'b>(
    b: &'b mut Buffer<'_>,
    dtype: &str,
    i: usize,
    n: usize,
    len: usize,
) -> Result<ObsMut<'b>, String> {
    Ok(match dtype {
        "float32" => ObsMut::F32(part_mut::<f32>(b, i, n, len, "obs")?),
        "float64" => ObsMut::F64(part_mut::<f64>(b, i, n, len, "obs")?),
        _ => ObsMut::I8(part_mut::<i8>(b, i, n, len, "obs")?),
    })
}

/// Whether a float64 env's observations go to a float32 result (JAX without x64).
fn narrowed(batch: &dyn DynBatch, obs: &Buffer<'_>) -> bool {
    batch.obs_dtype() == "float64" && obs.dtype == crate::abi::Dtype::F32
}

/// `src` rounded to float32 into `b`'s part `i` of `n`.
fn narrow(src: &[f64], b: &mut Buffer<'_>, i: usize, n: usize) -> Result<(), String> {
    let out = part_mut::<f32>(b, i, n, src.len(), "obs")?;
    out.iter_mut().zip(src).for_each(|(o, x)| *o = *x as f32);
    Ok(())
}

/// The env's current observations into `b`'s part `i` of `n`.
fn write_obs(batch: &dyn DynBatch, b: &mut Buffer<'_>, i: usize, n: usize) -> Result<(), String> {
    let len = batch.num_envs() * batch.spec().num_agents * batch.spec().obs_len();
    match batch.obs() {
        Obs::F64(v) if narrowed(batch, b) => narrow(v, b, i, n),
        src => copy_column(src, obs_out(b, batch.obs_dtype(), i, n, len)?),
    }
}

/// Per-env flags as 0/1 bytes over `b`'s part `i` of `n`, one per agent row.
fn write_flags(
    src: &[bool],
    agents: usize,
    b: &mut Buffer<'_>,
    i: usize,
    n: usize,
    what: &str,
) -> Result<(), String> {
    spread_flags(src, agents, part_mut::<u8>(b, i, n, src.len() * agents, what)?, u8::from);
    Ok(())
}

/// `reset(handle, seed) -> (handle, obs)`: every env of the batch reset from `seed` (one
/// integer per handle), as `VectorEnv.reset(seed=seed)`.
fn reset(args: &[Buffer<'_>], rets: &mut [Buffer<'_>], _: &Attrs<'_>) -> Result<(), String> {
    let [h, seed] = args else {
        return Err(format!("reset takes (handle, seed), got {} operands", args.len()));
    };
    if seed.len() != h.len() / 2 {
        return Err(format!("seed: {} values for {} handles", seed.len(), h.len() / 2));
    }
    let [hr, obs] = rets else { return Err("reset: 2 results".into()) };
    each_env(h, hr, |i, n, s| {
        ints_into(seed, i..i + 1, &mut s.scratch.ints)?;
        let v = s.scratch.ints[0];
        s.batch.reset(u64::try_from(v).map_err(|_| format!("seed = {v}: at least 0"))?);
        write_obs(s.batch.as_ref(), obs, i, n)
    })
}

/// `step(handle, *action) -> (handle, obs, reward, terminated, truncated)`: one step of every
/// env, as `VectorEnv.step`; rewards and flags one per agent row.
fn step(args: &[Buffer<'_>], rets: &mut [Buffer<'_>], _: &Attrs<'_>) -> Result<(), String> {
    let Some((h, acts)) = args.split_first() else {
        return Err("step takes (handle, action...)".into());
    };
    let [hr, obs, rew, te, tr] = rets else { return Err("step: 5 results".into()) };
    each_env(h, hr, |i, n, s| {
        let form = convert(s.batch.as_ref(), &mut s.scratch, acts, i, n, 1)?;
        let rows = s.batch.rewards().len();
        let cols = columns(&s.scratch, 0, rows);
        s.batch.step_actions(&act(&form, &s.scratch, &cols, 0, rows))?;
        let b = s.batch.as_ref();
        let agents = b.spec().num_agents;
        write_obs(b, obs, i, n)?;
        part_mut::<f32>(rew, i, n, rows, "reward")?.copy_from_slice(b.rewards());
        write_flags(b.terminated(), agents, te, i, n, "terminated")?;
        write_flags(b.truncated(), agents, tr, i, n, "truncated")
    })
}

/// `rollout(handle, *actions) -> (handle, obs, reward, terminated, truncated)`: the actions
/// carry a leading steps axis `T`; the results hold every step's columns, step-major, as `T`
/// calls of [`step`] would (`DynBatch::rollout`: each block of envs runs through every step on
/// one thread; every step's actions checked before anything moves).
fn rollout(args: &[Buffer<'_>], rets: &mut [Buffer<'_>], _: &Attrs<'_>) -> Result<(), String> {
    let Some((h, acts)) = args.split_first() else {
        return Err("rollout takes (handle, actions...)".into());
    };
    let [hr, obs, rew, te, tr] = rets else { return Err("rollout: 5 results".into()) };
    each_env(h, hr, |i, n, s| {
        let Slot { batch, scratch, terminated, truncated, obs64, .. } = s;
        let (envs, agents) = (batch.num_envs(), batch.spec().num_agents);
        let rows = envs * agents;
        if rew.len() % (n * rows).max(1) != 0 {
            return Err(format!("reward result: {} values for {n} × {rows} rows", rew.len()));
        }
        let steps = rew.len() / (n * rows).max(1);
        let form = convert(batch.as_ref(), scratch, acts, i, n, steps)?;
        let cols: Vec<[&[i64]; 4]> = (0..steps).map(|t| columns(scratch, t, rows)).collect();
        let a: Vec<Actions<'_>> =
            (0..steps).map(|t| act(&form, scratch, &cols[t], t, rows)).collect();
        terminated.resize(steps * envs, false);
        truncated.resize(steps * envs, false);
        let len = steps * rows * batch.spec().obs_len();
        let wide = narrowed(batch.as_ref(), obs);
        let out = if wide {
            obs64.resize(len, 0.0);
            ObsMut::F64(obs64)
        } else {
            obs_out(obs, batch.obs_dtype(), i, n, len)?
        };
        let rewards = part_mut::<f32>(rew, i, n, steps * rows, "reward")?;
        batch.rollout(&a, Rollout { obs: out, final_obs: None, rewards, terminated, truncated })?;
        if wide {
            narrow(obs64, obs, i, n)?;
        }
        write_flags(terminated, agents, te, i, n, "terminated")?;
        write_flags(truncated, agents, tr, i, n, "truncated")
    })
}

/// The reset target (`kestrel_env_reset`).
pub extern "C" fn kestrel_env_reset(frame: *mut CallFrame) -> *mut XlaError {
    call(frame, reset)
}

/// The step target (`kestrel_env_step`).
pub extern "C" fn kestrel_env_step(frame: *mut CallFrame) -> *mut XlaError {
    call(frame, step)
}

/// The rollout target (`kestrel_env_rollout`).
pub extern "C" fn kestrel_env_rollout(frame: *mut CallFrame) -> *mut XlaError {
    call(frame, rollout)
}
