//! Kestrel's batched calls as XLA FFI targets on the CPU, so JAX programs call them inside
//! `jax.jit`, `lax.scan` and `vmap` (`kestrel.jax` registers them with
//! `jax.ffi.register_ffi_target` and calls them with `jax.ffi.ffi_call`).
//!
//! - [`env`](mod@env): a registry env's `reset`, `step` and `rollout`, the env's state threaded through
//!   JAX as a handle value (EnvPool's XLA interface does the same for its envs);
//! - [`eval`](mod@eval): a population's fitness under a Kestrel problem.
//!
//! Each target is a plain `extern "C"` function of XLA's typed FFI (`XLA_FFI_Handler`), its
//! call frame decoded against the C API header jaxlib ships ([`abi`]); bad operands and stale
//! handles come back as XLA errors (Python exceptions in JAX), never a panic or an abort. The
//! handlers touch no Python state and so never take the GIL.
//!
//! The calls are the same [`kestrel_run::envs::DynBatch`] and [`kestrel_evo::Problem`] calls
//! the numpy entry makes: the two are bit-equal (tested here and in `test_jax.py`).

pub mod abi;
pub mod env;
pub mod eval;

/// The objects the targets name by number (envs by slot, problems by id), behind one lock
/// that is never held across a call. Numbers are never reused, so a removed object's number
/// stays an error instead of naming a newer one.
pub(crate) struct Table<T> {
    next: u32,
    items: std::collections::BTreeMap<u32, T>,
}

impl<T: Clone> Table<T> {
    pub(crate) const fn new() -> Self {
        Table { next: 1, items: std::collections::BTreeMap::new() }
    }

    /// Puts `item` in the table; returns its number.
    pub(crate) fn insert(&mut self, item: T) -> u32 {
        let id = self.next;
        self.next += 1;
        self.items.insert(id, item);
        id
    }

    /// Drops the object of `id`; false if there was none.
    pub(crate) fn remove(&mut self, id: u32) -> bool {
        self.items.remove(&id).is_some()
    }

    /// The object of `id` (a shared handle to it), if any.
    pub(crate) fn get(&self, id: u32) -> Option<T> {
        self.items.get(&id).cloned()
    }
}

/// `table` locked; a poisoned lock holds valid data (no call panics while holding it).
pub(crate) fn lock<T>(table: &std::sync::Mutex<Table<T>>) -> std::sync::MutexGuard<'_, Table<T>> {
    table.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every target: its name (what `ffi_call` names) and its handler.
pub const TARGETS: [(&str, abi::Handler); 4] = [
    ("kestrel_env_reset", env::kestrel_env_reset),
    ("kestrel_env_step", env::kestrel_env_step),
    ("kestrel_env_rollout", env::kestrel_env_rollout),
    ("kestrel_evaluate", eval::kestrel_evaluate),
];

/// The targets' names and handler addresses (for a `PyCapsule` each: `jax.ffi.pycapsule`).
pub fn targets() -> Vec<(&'static str, usize)> {
    TARGETS.iter().map(|(n, h)| (*n, *h as usize)).collect()
}

#[cfg(test)]
mod tests;

// The tests count the handlers' allocations (a warm step makes none).
#[cfg(test)]
#[global_allocator]
static GLOBAL: kestrel_testkit::CountingAlloc = kestrel_testkit::CountingAlloc;
