//! Population evaluation as an XLA target: `evaluate(population, key) -> fitness` of a Kestrel
//! [`Problem`] (a benchmark function, CartPole neuroevolution, the MPPI tuning cost), the
//! problem named by an integer attribute (its id in the table here). Pure: the same population
//! and key give the same fitness, so XLA may reorder, cache or drop the call.
//!
//! Under `vmap` every operand gains leading axes; each population is evaluated with its own
//! key.

use crate::abi::{Attrs, Buffer, CallFrame, Dtype, XlaError, call};
use crate::table::{Table, lock};
use kestrel_core::Key;
use kestrel_evo::Problem;
use std::sync::{Arc, Mutex};

/// The problems, by id.
static TABLE: Mutex<Table<Arc<dyn Problem>>> = Mutex::new(Table::new());

/// Puts `p` in the table; returns its id (the `problem` attribute).
pub fn insert(p: Arc<dyn Problem>) -> i64 {
    i64::from(lock(&TABLE).insert(p))
}

/// Drops problem `id` from the table; false if there was none.
pub fn remove(id: i64) -> bool {
    u32::try_from(id).is_ok_and(|id| lock(&TABLE).remove(id))
}

/// The key of a `uint32[2]` key operand: its 64 bits as Kestrel's raw key state (what
/// `kestrel.evo.Key.raw` holds: high word first).
pub fn key_of(words: &[u32]) -> Key {
    Key::from_raw(((words[0] as u64) << 32) | words[1] as u64)
}

/// `evaluate(population (..., pop, dims) float32/float64, key (..., 2) uint32; problem=id) ->
/// fitness (..., pop) float32`, minimised, as `kestrel.evo.Problem.__call__(population, key)`.
fn evaluate(args: &[Buffer<'_>], rets: &mut [Buffer<'_>], attrs: &Attrs<'_>) -> Result<(), String> {
    let id = attrs.attr_i64("problem")?;
    let p = u32::try_from(id)
        .ok()
        .and_then(|i| lock(&TABLE).get(i))
        .ok_or_else(|| format!("problem {id} is gone"))?;
    let [x, key] = args else {
        return Err(format!("evaluate takes (population, key), got {} operands", args.len()));
    };
    if key.dims.last() != Some(&2) {
        return Err(format!("key: shape {:?}, expected (..., 2)", key.dims));
    }
    let keys = key.slice::<u32>()?;
    let n = keys.len() / 2;
    let d = p.num_dims();
    if x.dims.last().map(|&v| v as usize) != Some(d) {
        return Err(format!("population: shape {:?}, expected (..., pop, {d})", x.dims));
    }
    let [fit] = rets else { return Err("evaluate: 1 result".into()) };
    let rows = fit.len() / n.max(1);
    if fit.len() != n * rows || x.len() != n * rows * d {
        return Err(format!(
            "population: shape {:?} for {n} keys and fitness of shape {:?}",
            x.dims, fit.dims
        ));
    }
    let out = fit.slice_mut::<f32>()?;
    let wide;
    let pop: &[f32] = match x.dtype {
        Dtype::F32 => x.slice::<f32>()?,
        Dtype::F64 => {
            wide = x.slice::<f64>()?.iter().map(|&v| v as f32).collect::<Vec<f32>>();
            &wide
        }
        other => return Err(format!("population: dtype {}, expected floats", other.name())),
    };
    for i in 0..n {
        let k = key_of(&keys[2 * i..2 * i + 2]);
        p.evaluate_rows(k, 0, &pop[i * rows * d..(i + 1) * rows * d], &mut out[i * rows..][..rows]);
    }
    Ok(())
}

/// The evaluate target (`kestrel_evaluate`).
pub extern "C" fn kestrel_evaluate(frame: *mut CallFrame) -> *mut XlaError {
    call(frame, evaluate)
}
