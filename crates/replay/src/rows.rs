//! The episodic buffer of `asymexp` (`exp_alcl/episodic_replay_buffer.py`; reference §1.4,
//! `../shared/data/allo-asymexp-golden/README.md` §3 (b)): one row per collecting
//! environment, its states in order with several episodes back to back, terminal flags, and
//! the terminal positions precomputed when a row is added (the seed's §1: no per-sample search).
//!
//! A pair is drawn as the reference draws it: a row uniformly, `obs_idx = ⌊u·(len − 1)⌋`, a
//! horizon `h` — among the row's terminal positions `≥ obs_idx`, the second smallest distance
//! if there are two or more, else the only one, else `len − 1 − obs_idx` — and the offset
//! `⌊log(1 − (1 − γʰ) u′) / log γ⌋ + 1` on `1..=h` (γ = 1: `⌊u′ h⌋ + 1`; γ = 0: 1). The
//! independent state of a step is the first state of a second pair.
//!
//! Its oddity (README §5.4): a first state on the second slot of a terminal pair (an
//! episode's last state) measures its horizon to the *next* pair, so it is paired with states
//! of the next episode, and with no later terminal its horizon is 0 and the reference's whole
//! call raises. [`RowRule::Reference`] keeps that (the horizon-0 case is an error naming the
//! row and slot); [`RowRule::WithinEpisode`] draws first states only among those with a
//! successor in their own episode and measures the horizon to that episode's end. In the
//! script's default regime (one episode per row, no goal) the two give the same pairs from the
//! same draws.

use crate::ReplayError;
use kestrel_core::{FromInvalid, Key};

/// How pairs treat episode boundaries inside a row (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowRule {
    /// The reference's rule, its cross-episode pairs and its horizon-0 failure included.
    #[default]
    Reference,
    /// First states with a successor in their episode; offsets up to the episode's end.
    WithinEpisode,
}

/// Rows of states with terminal flags.
#[derive(Clone, Debug, Default)]
pub struct RowReplay {
    obs: Vec<u32>,
    start: Vec<u32>,
    len: Vec<u32>,
    /// Terminal positions of every row, flat, with `term_start` offsets.
    terms: Vec<u32>,
    term_start: Vec<u32>,
    /// For [`RowRule::WithinEpisode`]: each row's slots that have a successor in their
    /// episode, and for each the last slot of its episode.
    pairable: Vec<(u32, u32)>,
    pair_start: Vec<u32>,
}

/// One drawn pair and how it was drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowPair {
    /// The first state's slot.
    pub obs_idx: u32,
    /// The horizon the offset was drawn on.
    pub horizon: u32,
    /// The offset (`1..=horizon`).
    pub offset: u32,
}

impl RowReplay {
    /// An empty buffer.
    pub fn new() -> Self {
        RowReplay::default()
    }

    /// Appends a row: its states and their terminal flags (equal lengths, at least two
    /// states, the reference's sampler assumes a successor).
    pub fn add_row(&mut self, states: &[u32], terminals: &[bool]) -> Result<(), ReplayError> {
        if states.len() < 2 || states.len() != terminals.len() {
            return Err(ReplayError::invalid(
                "row",
                format!("{} states and {} terminal flags", states.len(), terminals.len()),
                "at least two states and one flag per state",
            ));
        }
        if self.obs.len() + states.len() > u32::MAX as usize {
            return Err(ReplayError::Full {
                len: self.obs.len(),
                capacity: u32::MAX as usize,
                episode: states.len(),
            });
        }
        self.start.push(self.obs.len() as u32);
        self.len.push(states.len() as u32);
        self.obs.extend_from_slice(states);
        self.term_start.push(self.terms.len() as u32);
        self.terms.extend((0..states.len() as u32).filter(|&i| terminals[i as usize]));
        // Episodes end at the second slot of a terminal pair (the reached state) or at the
        // row's end; the slot after a pair starts the next episode.
        self.pair_start.push(self.pairable.len() as u32);
        let n = states.len();
        let mut ep_start = 0;
        let mut i = 0;
        while i < n {
            let end = if i + 1 < n && terminals[i] && terminals[i + 1] {
                i + 1
            } else if i + 1 == n {
                i
            } else {
                i += 1;
                continue;
            };
            for s in ep_start..end {
                self.pairable.push((s as u32, end as u32));
            }
            ep_start = end + 1;
            i = end + 1;
        }
        Ok(())
    }

    /// Rows stored.
    pub fn num_rows(&self) -> usize {
        self.start.len()
    }

    /// States stored.
    pub fn len(&self) -> usize {
        self.obs.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.obs.is_empty()
    }

    /// Row `r`'s states.
    pub fn row(&self, r: usize) -> &[u32] {
        let s = self.start[r] as usize;
        &self.obs[s..s + self.len[r] as usize]
    }

    /// Row `r`'s terminal positions, increasing.
    pub fn terminal_positions(&self, r: usize) -> &[u32] {
        let s = self.term_start[r] as usize;
        let e = self.term_start.get(r + 1).map_or(self.terms.len(), |&e| e as usize);
        &self.terms[s..e]
    }

    /// The pair of row `row` from the draws `u_obs`, `u_offset` in `[0, 1)` under `rule`.
    pub fn pair(
        &self,
        row: usize,
        u_obs: f64,
        u_offset: f64,
        discount: f64,
        rule: RowRule,
    ) -> Result<RowPair, ReplayError> {
        let len = self.len[row] as usize;
        let (obs_idx, horizon) = match rule {
            RowRule::Reference => {
                let i = (u_obs * (len - 1) as f64).floor() as usize;
                let mut near = self.terminal_positions(row).iter().filter(|&&t| t as usize >= i);
                let h = match (near.next(), near.next()) {
                    (Some(_), Some(&t2)) => t2 as usize - i,
                    (Some(&t1), None) => t1 as usize - i,
                    _ => len - 1 - i,
                };
                (i, h)
            }
            RowRule::WithinEpisode => {
                let (s, e) = (
                    self.pair_start[row] as usize,
                    self.pair_start.get(row + 1).map_or(self.pairable.len(), |&e| e as usize),
                );
                if s == e {
                    return Err(ReplayError::invalid(
                        "row",
                        row,
                        "a row with at least one state that has a successor in its episode",
                    ));
                }
                let (i, end) =
                    self.pairable[s + ((u_obs * (e - s) as f64) as usize).min(e - s - 1)];
                (i as usize, (end - i) as usize)
            }
        };
        if horizon == 0 {
            return Err(ReplayError::invalid(
                "replay sample",
                format!("row {row}, slot {obs_idx}: horizon 0"),
                "a first state with a later state in reach (the reference's sampler raises \
                 AssertionError here: an episode's last state with no later terminal; \
                 sampling = \"within-episode\" keeps pairs inside episodes)",
            ));
        }
        Ok(RowPair {
            obs_idx: obs_idx as u32,
            horizon: horizon as u32,
            offset: offset(horizon, discount, u_offset) as u32,
        })
    }

    /// Fills `obs` and `next` with pairs drawn from `key` (slot `j` from `key.fold_in(j)`: a
    /// row, then the two uniforms, as the reference's three numpy calls).
    pub fn sample(
        &self,
        key: Key,
        discount: f64,
        rule: RowRule,
        obs: &mut [u32],
        next: &mut [u32],
    ) -> Result<(), ReplayError> {
        if self.num_rows() == 0 || obs.len() != next.len() || !(0.0..=1.0).contains(&discount) {
            return Err(ReplayError::invalid(
                "replay sample",
                format!(
                    "{} rows, discount {discount}, outputs {} and {}",
                    self.num_rows(),
                    obs.len(),
                    next.len()
                ),
                "a filled buffer, a discount in [0, 1] and equal output lengths",
            ));
        }
        let rows = self.num_rows() as u32;
        for (j, (o, n)) in obs.iter_mut().zip(next.iter_mut()).enumerate() {
            let mut r = key.fold_in(j as u64).rng();
            let row = r.below(rows) as usize;
            let (u1, u2) = (r.uniform_f64(), r.uniform_f64());
            let p = self.pair(row, u1, u2, discount, rule)?;
            let at = self.start[row] as usize + p.obs_idx as usize;
            *o = self.obs[at];
            *n = self.obs[at + p.offset as usize];
        }
        Ok(())
    }
}

/// The truncated geometric offset on `1..=h` from `u` in `[0, 1)`, in the reference's
/// arithmetic (`np.power`, `np.log`: libm's `pow` and `log`).
pub fn offset(h: usize, gamma: f64, u: f64) -> usize {
    let j = if gamma == 0.0 {
        0.0
    } else if gamma == 1.0 {
        (u * h as f64).floor()
    } else {
        ((1.0 - (1.0 - gamma.powf(h as f64)) * u).ln() / gamma.ln()).floor()
    };
    // Within 1..=h for u < 1 (the clamp only guards rounding at u → 1).
    (j as usize).min(h - 1) + 1
}
