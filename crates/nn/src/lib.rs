//! Small neural networks for Kestrel's learners, written for the sizes RL uses (widths in the
//! hundreds, batches up to a few thousand) on the CPU.
//!
//! - Layers with explicit forward and backward ([`Layer`]: [`Dense`], [`Act`]) over flat
//!   parameter slices, stacked in a [`Sequential`] (an MLP from an [`MlpConfig`]).
//! - One row at a time on the stack ([`row`]: `dense_row`, `mlp_row`), for the networks no
//!   batch shares: neuroevolution's policies and the maps inside an env's step.
//! - Matrix products ([`matmul`]) through register-tiled kernels of the crate's own, AVX-512
//!   or AVX2 with FMA as the CPU has them (chosen at run time), else the `gemm` crate; always
//!   single-threaded: several models train in parallel, one per thread ([`train_many`]).
//! - [`Workspace`]s reused between steps: a training step allocates nothing once warm where
//!   the matrix kernels run (see [`matmul`] for the paths through `gemm`, which do).
//! - Fused [`Adam`] with global gradient-norm clipping; non-finite losses or gradients are
//!   errors that leave the model untouched.
//! - Generic over [`Real`](kestrel_core::simd::Real) (the one scalar trait): f32 to train, f64 for the finite-difference gradient tests that
//!   cover every layer and loss (`tests/gradients.rs`).
//! - Checkpoints as safetensors files ([`save_safetensors`], [`Sequential::save_trainee`]),
//!   written as sets with a manifest that a resume verifies ([`write_checkpoint_set`],
//!   [`checkpoint_set`]).
//!
//! Why hand-written rather than a framework: `shared/reference/nn-backends.md` measured this
//! design faster than candle, burn and jitted JAX for these model sizes, with a 26 s build.

mod adam;
pub mod bench;
mod checkpoint;
mod error;
pub mod gru;
mod io;
pub mod layer;
mod loss;
pub mod matmul;
mod model;
mod noisy;
pub mod row;

pub use adam::{Adam, AdamState};

pub use checkpoint::{MANIFEST, Stamp, Verified, checkpoint_set, verify_set, write_checkpoint_set};
pub use error::NnError;
pub use gru::{Gru, GruCache};
pub use io::{TensorFile, load_safetensors, save_safetensors};
pub use kestrel_core::fill_normal_f32;
/// The run-time dispatcher of `kestrel-core`: every element-wise pass of the crate is a
/// [`WithSimd`] operation run through it (its `with_simd` is inlined into the target-feature
/// function, so the loops inside vectorise for the CPU's widest extension; a closure handed to
/// a dispatcher may stay out of line, compiled for the baseline).
pub use kestrel_core::simd::dispatch;
pub use kestrel_core::simd::{Simd, WithSimd};
pub use layer::{Act, Activation, Dense, Init, Layer};
pub use loss::{Loss, quantile_huber};
pub use model::{MlpConfig, Sequential, Trainee, Workspace, train_many};
pub use noisy::NoisyDense;
