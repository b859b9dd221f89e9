//! One file per run kind, each a [`crate::Run`]: the config it reads, what it checks, and its
//! loop from start to summary, built from the algorithm crates' parts. The registry
//! ([`crate::RunKind`]) is how every front end reaches them.
//!
//! | kind | command | file |
//! |---|---|---|
//! | `evo` | `kestrel evo run` | [`es`] |
//! | `qd` | `kestrel evo qd` | [`qd`] |
//! | `mppi-run` | `kestrel mppi run` | [`mppi`] |
//! | `mppi-tune` | `kestrel mppi tune` | [`mppi_tune`] |
//! | `mppi-qd` | `kestrel mppi qd` | [`mppi_qd`] |
//! | `allo` | `kestrel allo train` | [`allo`] |
//! | `hunt` | `kestrel hunt train` (and `hunt play`) | [`hunt`] |
//! | `actdyn` | `kestrel actdyn run` (and `compare`, `retrain`) | [`actdyn`] |

pub mod actdyn;
pub mod allo;
pub mod es;
pub mod hunt;
pub mod mppi;
pub mod mppi_qd;
pub mod mppi_tune;
pub mod qd;
