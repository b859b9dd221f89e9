//! What both ALLO learners share ([`crate::allo`], the paper's; [`crate::asymexp`]): the
//! encoder run once over a step's distinct states, and their checkpoints' state file.

use crate::error::AgentError;
use kestrel_core::FromInvalid;
use kestrel_core::simd::Real;

/// The states of a step's rows, each encoded once: `uniq` lists the distinct states in order
/// of first appearance and `pos[r]` is row `r`'s place in it (or `r` itself without dedup).
#[derive(Clone, Debug, Default)]
pub struct DistinctRows {
    slot: Vec<u32>,
    /// The distinct states.
    pub uniq: Vec<u32>,
    /// Each row's index into `uniq`.
    pub pos: Vec<u32>,
}

impl DistinctRows {
    /// For states `0..num_states`.
    pub fn new(num_states: usize) -> Self {
        DistinctRows { slot: vec![u32::MAX; num_states], uniq: Vec::new(), pos: Vec::new() }
    }

    /// Indexes `idx` (every state `< num_states`): distinct states or, without `dedup`, every row.
    pub fn index(&mut self, idx: &[u32], dedup: bool) {
        self.uniq.clear();
        self.pos.clear();
        if !dedup {
            self.uniq.extend_from_slice(idx);
            self.pos.extend(0..idx.len() as u32);
            return;
        }
        for &s in idx {
            let slot = &mut self.slot[s as usize];
            if *slot == u32::MAX {
                *slot = self.uniq.len() as u32;
                self.uniq.push(s);
            }
            self.pos.push(*slot);
        }
        for &s in &self.uniq {
            self.slot[s as usize] = u32::MAX;
        }
    }

    /// Copies each row's `width` outputs from `out` (one row per distinct state) into `rows`.
    pub fn gather<T: Copy>(&self, out: &[T], width: usize, rows: &mut [T]) {
        for (r, &j) in self.pos.iter().enumerate() {
            let j = j as usize;
            rows[r * width..(r + 1) * width].copy_from_slice(&out[j * width..(j + 1) * width]);
        }
    }

    /// Sums each row's `width` gradients onto its distinct state in `acc` (zeroed first).
    pub fn scatter<T: Real>(&self, rows: &[T], width: usize, acc: &mut Vec<T>) {
        acc.clear();
        acc.resize(self.uniq.len() * width, T::ZERO);
        for (r, &j) in self.pos.iter().enumerate() {
            let j = j as usize;
            for (a, v) in acc[j * width..(j + 1) * width].iter_mut().zip(&rows[r * width..]) {
                *a += *v;
            }
        }
    }
}

/// Writes a learner's state file (`*_state.safetensors`): the `d × d` tensors, the barrier
/// and the step count in its metadata (what [`read_state`] reads back).
pub(crate) fn write_state<T: Real, const N: usize>(
    path: &std::path::Path,
    d: usize,
    tensors: [(&str, &[T]); N],
    barrier: f64,
    steps: u64,
) -> Result<(), AgentError> {
    let named: Vec<(String, Vec<usize>, &[T])> =
        tensors.iter().map(|&(name, v)| (name.to_string(), vec![d, d], v)).collect();
    kestrel_nn::save_safetensors(
        path,
        &named,
        &[("barrier", barrier.to_string()), ("steps", steps.to_string())],
    )?;
    Ok(())
}

/// Reads a learner's state file (`*_state.safetensors`): the `d × d` tensors named in
/// `tensors` into their buffers, and the barrier and step count from its metadata; a missing
/// or misshapen entry is an error naming the file.
pub(crate) fn read_state<T: Real, const N: usize>(
    path: &std::path::Path,
    d: usize,
    tensors: [(&str, &mut Vec<T>); N],
) -> Result<(f64, u64), AgentError> {
    let f = kestrel_nn::load_safetensors::<T>(path)?;
    let bad = |what: String| {
        AgentError::invalid(
            "checkpoint",
            format!("{}: {what}", path.display()),
            "a checkpoint of this configuration",
        )
    };
    for (name, dst) in tensors {
        match f.get(name) {
            Some((shape, v)) if shape == [d, d] => dst.copy_from_slice(v),
            Some((shape, _)) => return Err(bad(format!("{name} has shape {shape:?}, d = {d}"))),
            None => return Err(bad(format!("{name} missing"))),
        }
    }
    let meta =
        |k: &str| f.metadata.get(k).cloned().ok_or_else(|| bad(format!("metadata {k} missing")));
    let barrier = meta("barrier")?.parse().map_err(|_| bad("barrier is not a number".into()))?;
    let steps = meta("steps")?.parse().map_err(|_| bad("steps is not an integer".into()))?;
    Ok((barrier, steps))
}
