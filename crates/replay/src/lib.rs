//! Replay buffers.
//!
//! [`FrameReplay`] is a ring of single frames sampled as frame-stacked transitions (see its
//! module docs); the rest of this page is about [`EpisodicReplay`].
//!
//! [`EpisodicReplay`] keeps whole episodes in one flat array with their start offsets and
//! lengths recorded when an episode is added, so sampling a batch is arithmetic on indices:
//! no per-sample search for the episode end (the Python reference walks its list of episodes
//! per sample). Two sampling conventions are offered ([`EpisodicRuleKind`]):
//!
//! | | `PaperCode` (`laplacian_dual_dynamics`) | `Asymexp` (`asymexp/exp_alcl`) |
//! |---|---|---|
//! | episode | uniform over episodes | uniform over episodes (its rows) |
//! | pair `(s_i, s_{i+k})` | `i` uniform on `0..=H−2`, `k = D(H−1−i, γ) + 1` | the same (`obs_idx` uniform on `[0, H−1)`, offset up to the episode's end) |
//! | independent state | a uniform step of the episode, `0..H` (last state included) | the first state of a pair, `0..H−1` (last state excluded) |
//! | default discount | 0.9 | 0.2 |
//!
//! `D(n, γ) = ⌊log(1 − (1 − γⁿ) U) / log γ⌋` is the truncated geometric on `0..n`,
//! `P(j) ∝ γʲ` ([`discounted_sampling`]); γ = 1 is uniform and γ = 0 always 0. Episodes of a
//! single state have no pair and are skipped by pair sampling. (asymexp stores fixed-length
//! rows with terminal flags and measures the distance to the row's next boundary; on storage
//! that keeps episodes apart that is the distance to the episode's end, as above.)

mod episodic;
mod error;
mod frames;
pub mod rows;
pub use episodic::{
    EpisodicReplay, EpisodicRuleKind, TruncatedGeometric, discounted_sampling, truncated_geometric,
};
pub use error::ReplayError;
pub use frames::{FrameBatch, FrameReplay, FrameReplayConfig, FrameReplaySnapshot, Prioritized};
pub use rows::{RowPair, RowReplay, RowRuleKind};
