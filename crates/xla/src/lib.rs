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
mod table;

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
