//! Kestrel's Python bindings (`kestrel._kestrel`): the Rust side of the `kestrel` package.
//!
//! Every batch runs with the GIL released on Rust-owned memory; results are copied into
//! numpy arrays the Python layer owns (fresh ones, or persistent ones with `copy=False`).
//! Bad input raises `ValueError`/`TypeError`/`RuntimeError` with the CLI's messages; no
//! Python input reaches a panic. The Python classes (Gymnasium envs, vector envs, ask/tell
//! optimisers) are in `python/kestrel/`.

mod config;
mod envs;
mod errors;
mod evo;
mod mppi;
mod runs;

use pyo3::prelude::*;

/// The compiled core of the `kestrel` package.
#[pymodule]
fn _kestrel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The commit the extension was built from (`-dirty` with uncommitted changes).
    m.add("__commit__", kestrel_run::COMMIT)?;
    // The engine's one memory limit (`kestrel_core::MAX_BYTES`), for checks made in Python.
    m.add("MAX_BYTES", kestrel_core::MAX_BYTES as u64)?;
    m.add_class::<envs::VecCore>()?;
    m.add_function(wrap_pyfunction!(envs::list_envs, m)?)?;
    m.add_function(wrap_pyfunction!(runs::cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(envs::arc_operations, m)?)?;
    m.add_function(wrap_pyfunction!(envs::xla_targets, m)?)?;
    m.add_function(wrap_pyfunction!(envs::xla_env_close, m)?)?;
    m.add_function(wrap_pyfunction!(envs::xla_env_version, m)?)?;
    m.add_class::<evo::Key>()?;
    m.add_class::<evo::Strategy>()?;
    m.add_class::<evo::EvoProblem>()?;
    m.add_class::<evo::QdArchive>()?;
    m.add_class::<evo::QdEmitter>()?;
    m.add_class::<evo::QdBenchmark>()?;
    m.add_function(wrap_pyfunction!(evo::strategies, m)?)?;
    m.add_function(wrap_pyfunction!(evo::check_strategy_size, m)?)?;
    m.add_function(wrap_pyfunction!(evo::qd_setup, m)?)?;
    m.add_function(wrap_pyfunction!(evo::default_pop_size, m)?)?;
    m.add_function(wrap_pyfunction!(evo::strategy_kind, m)?)?;
    m.add_function(wrap_pyfunction!(evo::evosax_names, m)?)?;
    m.add_function(wrap_pyfunction!(evo::evosax_weights, m)?)?;
    m.add_function(wrap_pyfunction!(evo::strategy_params, m)?)?;
    m.add_class::<mppi::MppiController>()?;
    m.add_class::<mppi::ExternalMppi>()?;
    m.add_function(wrap_pyfunction!(mppi::systems, m)?)?;
    m.add_function(wrap_pyfunction!(runs::run, m)?)?;
    m.add_function(wrap_pyfunction!(runs::run_config, m)?)?;
    m.add_function(wrap_pyfunction!(runs::run_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(runs::population_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(runs::run_evaluated, m)?)?;
    m.add_function(wrap_pyfunction!(runs::cma_restarts, m)?)?;
    m.add_function(wrap_pyfunction!(runs::mppi_tune_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(runs::mppi_tune_evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(runs::sweep_plan, m)?)?;
    m.add_function(wrap_pyfunction!(runs::sweep_create, m)?)?;
    m.add_function(wrap_pyfunction!(runs::sweep_status, m)?)?;
    m.add_function(wrap_pyfunction!(runs::sweep_cell, m)?)?;
    m.add_function(wrap_pyfunction!(runs::sweep_aggregate, m)?)?;
    Ok(())
}
