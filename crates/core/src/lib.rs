//! Kestrel core: counter-based random keys, spaces, the single-env kernel trait [`Env`]
//! the batched-env contract [`BatchEnv`]
//! (its bookkeeping written once) and the batched driver of any env, [`VecEnv`].
//!
//! # Key derivation tree
//!
//! Every random draw in Kestrel derives from a [`Key`], a value and not a generator. The
//! tree is fixed, so a result never depends on the thread count or on how a batch is split:
//!
//! ```text
//! run       = Key::new(seed)
//! reset_0   = run.fold_in(0).fold_in(row)          // initial reset of row `row`
//! step_t    = run.fold_in(t)                       // t = 1, 2, ... (VecEnv step counter)
//! row_t     = step_t.fold_in(row)
//! key_step  = row_t.fold_in(0), key_reset = row_t.fold_in(1), key_policy = row_t.fold_in(2)
//! ```
//!
//! `row` is the global row (a [`BatchEnv::shard`] adds its offset); [`StepKeys`] derives
//! these keys for every batch. `key_step` goes to
//! [`Env::step`], `key_reset` to [`Env::reset`] when the row finishes in that step (with
//! [`AutoReset::NextStep`], in the following step but still with the finishing step's key), and `key_policy` to the policy closure of [`BatchEnv::step_with`]. Inside one
//! kernel call, sequential draws come from [`Key::rng`].
//!
//! # Columns
//!
//! Every [`BatchEnv`] keeps Gymnasium's column names ([`Columns`]): `obs`, `final_obs`, `rewards`, `terminated`,
//! `truncated`, each a contiguous row-major buffer. `terminated` and `truncated` stay
//! separate everywhere: a time-out bootstraps, a termination does not.

mod batch;
mod budget;
mod documented;
mod env;
mod episode;
mod error;
mod file;
mod key;
pub mod linalg;
pub mod math;
mod normal;
pub mod simd;
mod space;
pub mod timing;
mod vec_env;

pub use batch::{
    AutoReset, BatchEnv, Columns, KEY_POLICY, KEY_RESET, KEY_STEP, RowKey, StepKeys, Trajectory,
    count_step, end_episode,
};
pub use budget::{Budget, BudgetTerm, human};
pub use documented::{Documented, FieldDoc, closest, did_you_mean, field_at};
pub use env::Env;
pub use episode::{EpisodeColumns, EpisodeStats};
pub use error::{CoreError, FromInvalid, Invalid, MAX_BYTES, check_bytes, check_finite};
pub use file::{WriteError, write_atomic};
/// `#[derive(Documented)]`: see [`Documented`].
pub use kestrel_derive::Documented;
pub use key::{Key, Rng};
pub use normal::fill_normal_f32;
pub use space::{Space, Spec};
pub use vec_env::VecEnv;
