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
//! call raises. [`RowRuleKind::Reference`] keeps that (the horizon-0 case is an error naming the
//! row and slot); [`RowRuleKind::WithinEpisode`] draws first states only among those with a
//! successor in their own episode and measures the horizon to that episode's end. In the
//! script's default regime (one episode per row, no goal) the two give the same pairs from the
//! same draws.

use crate::error::ReplayError;
use kestrel_core::{FromInvalid, Key};

/// How pairs treat episode boundaries inside a row (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowRuleKind {
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
    /// The last slot of each episode of every row (the second slot of each terminal pair, and
    /// the row's last slot), flat, with `end_start` offsets (for [`RowRuleKind::WithinEpisode`]).
    ends: Vec<u32>,
    end_start: Vec<u32>,
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

    /// An empty buffer with room for `states` states in all (allocated now).
    pub fn with_capacity(states: usize) -> Self {
        RowReplay { obs: Vec::with_capacity(states), ..RowReplay::default() }
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
        self.end_start.push(self.ends.len() as u32);
        let (n, mut i) = (states.len(), 0);
        while i + 1 < n {
            if terminals[i] && terminals[i + 1] {
                self.ends.push(i as u32 + 1);
                i += 2;
            } else {
                i += 1;
            }
        }
        if self.ends.len() == *self.end_start.last().unwrap() as usize
            || *self.ends.last().unwrap() as usize != n - 1
        {
            self.ends.push(n as u32 - 1);
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

    /// The rows in which [`RowRuleKind::Reference`] can draw a first state with horizon 0 (a
    /// terminal slot below the row's last with no later terminal), where the reference raises.
    pub fn rows_with_dead_ends(&self) -> Vec<usize> {
        (0..self.num_rows())
            .filter(|&r| {
                let t = self.terminal_positions(r);
                let len = self.len[r] as usize;
                // Slots 0..len−1 are drawn; a slot whose only terminal at or after it is itself.
                t.last().is_some_and(|&last| (last as usize) < len - 1)
            })
            .collect()
    }

    /// The pair of row `row` from the draws `u_obs`, `u_offset` in `[0, 1)` under `rule`.
    pub fn pair(
        &self,
        row: usize,
        u_obs: f64,
        u_offset: f64,
        discount: f64,
        rule: RowRuleKind,
    ) -> Result<RowPair, ReplayError> {
        self.pair_with(
            row,
            u_obs,
            u_offset,
            &crate::episodic::TruncatedGeometric::new(discount),
            rule,
        )
    }

    /// [`RowReplay::pair`] with the offset's sampler made once for a batch.
    fn pair_with(
        &self,
        row: usize,
        u_obs: f64,
        u_offset: f64,
        geometric: &crate::episodic::TruncatedGeometric,
        rule: RowRuleKind,
    ) -> Result<RowPair, ReplayError> {
        if row >= self.num_rows() || !(0.0..1.0).contains(&u_obs) || !(0.0..1.0).contains(&u_offset)
        {
            return Err(ReplayError::invalid(
                "replay pair",
                format!("row {row} of {}, draws {u_obs} and {u_offset}", self.num_rows()),
                "a stored row and draws in [0, 1)",
            ));
        }
        let len = self.len[row] as usize;
        let (obs_idx, horizon) = match rule {
            RowRuleKind::Reference => {
                let i = (u_obs * (len - 1) as f64).floor() as usize;
                let mut near = self.terminal_positions(row).iter().filter(|&&t| t as usize >= i);
                let h = match (near.next(), near.next()) {
                    (Some(_), Some(&t2)) => t2 as usize - i,
                    (Some(&t1), None) => t1 as usize - i,
                    _ => len - 1 - i,
                };
                (i, h)
            }
            RowRuleKind::WithinEpisode => {
                // The row's first states with a successor in their episode: episode k spans
                // start_k..=end_k and offers start_k..end_k.
                let ends = {
                    let s = self.end_start[row] as usize;
                    let e = self.end_start.get(row + 1).map_or(self.ends.len(), |&e| e as usize);
                    &self.ends[s..e]
                };
                let count: usize = episodes(ends).map(|(s, e)| e - s).sum();
                if count == 0 {
                    return Err(ReplayError::invalid(
                        "row",
                        row,
                        "a row with at least one state that has a successor in its episode",
                    ));
                }
                let mut j = ((u_obs * count as f64) as usize).min(count - 1);
                let mut pick = (0, 0);
                for (s, e) in episodes(ends) {
                    if j < e - s {
                        pick = (s + j, e - s - j);
                        break;
                    }
                    j -= e - s;
                }
                pick
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
            offset: (geometric.draw(horizon, u_offset) + 1) as u32,
        })
    }

    /// Fills `obs` and `next` with pairs drawn from `key` (slot `j` from `key.fold_in(j)`: a
    /// row, then the two uniforms, as the reference's three numpy calls).
    pub fn sample(
        &self,
        key: Key,
        discount: f64,
        rule: RowRuleKind,
        obs: &mut [u32],
        next: &mut [u32],
    ) -> Result<(), ReplayError> {
        self.sample_with(key, &crate::episodic::TruncatedGeometric::new(discount), rule, obs, next)
    }

    /// [`RowReplay::sample`] with the offsets' sampler given: a run makes one
    /// ([`crate::episodic::TruncatedGeometric::tabulated`]) and draws every batch with it.
    pub fn sample_with(
        &self,
        key: Key,
        geometric: &crate::episodic::TruncatedGeometric,
        rule: RowRuleKind,
        obs: &mut [u32],
        next: &mut [u32],
    ) -> Result<(), ReplayError> {
        let discount = geometric.gamma();
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
            let p = self.pair_with(row, u1, u2, geometric, rule)?;
            let at = self.start[row] as usize + p.obs_idx as usize;
            *o = self.obs[at];
            *n = self.obs[at + p.offset as usize];
        }
        Ok(())
    }
}

/// The episodes `(first slot, last slot)` of a row from its episodes' last slots.
fn episodes(ends: &[u32]) -> impl Iterator<Item = (usize, usize)> + '_ {
    ends.iter().scan(0usize, |start, &e| {
        let ep = (*start, e as usize);
        *start = e as usize + 1;
        Some(ep)
    })
}

/// The offset on `1..=h` from `u` in `[0, 1)`: [`crate::episodic::truncated_geometric`] on `0..h`, plus
/// one (the reference's `discounted_sampling(h) + 1`).
pub fn offset(h: usize, gamma: f64, u: f64) -> usize {
    crate::episodic::truncated_geometric(h, gamma, u) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row of three episodes (two ended by terminal pairs, one by the row's end): the
    /// reference rule pairs an episode's last state with the next episode and fails at the
    /// row's last pair; the within-episode rule reaches every state with a successor, once
    /// each over a grid of draws, and never crosses a boundary.
    #[test]
    fn within_episode_pairs_stay_in_their_episode() {
        let mut r = RowReplay::new();
        // slots: 0 1 2 [3 4] 5 6 [7 8] 9 10
        let states: Vec<u32> = (0..11).collect();
        let term: Vec<bool> = (0..11).map(|i| [3, 4, 7, 8].contains(&i)).collect();
        r.add_row(&states, &term).unwrap();
        assert_eq!(r.terminal_positions(0), [3, 4, 7, 8]);
        // Reference: slot 4 (an episode's last state) measures to the next pair's first slot.
        let p = r.pair(0, 4.0 / 10.0 + 1e-9, 0.0, 0.5, RowRuleKind::Reference).unwrap();
        assert_eq!((p.obs_idx, p.horizon), (4, 3));
        let e = r.pair(0, 8.0 / 10.0 + 1e-9, 0.0, 0.5, RowRuleKind::Reference).unwrap_err();
        assert!(e.to_string().contains("horizon 0"), "{e}");
        // Within episodes: first states 0..4 (ends 4), 5..8 (ends 8), 9 (ends 10): 8 of them.
        let mut seen = Vec::new();
        for j in 0..8 {
            let u = (j as f64 + 0.5) / 8.0;
            let p = r.pair(0, u, 0.999, 0.5, RowRuleKind::WithinEpisode).unwrap();
            let end = [4u32, 8, 10].into_iter().find(|&e| e > p.obs_idx).unwrap();
            assert_eq!(p.horizon, end - p.obs_idx, "slot {}", p.obs_idx);
            assert!(p.obs_idx + p.offset <= end);
            seen.push(p.obs_idx);
        }
        assert_eq!(seen, [0, 1, 2, 3, 5, 6, 7, 9]);
    }

    /// The offset is the truncated geometric on 1..=h: γ = 0 always 1, γ = 1 uniform, and
    /// the inverse CDF's edges.
    #[test]
    fn offsets_follow_the_truncated_geometric() {
        assert_eq!(offset(5, 0.0, 0.9), 1);
        assert_eq!(offset(5, 1.0, 0.0), 1);
        assert_eq!(offset(5, 1.0, 0.999), 5);
        assert_eq!(offset(5, 0.5, 0.0), 1);
        assert_eq!(offset(5, 0.5, 0.999_999), 5);
        assert_eq!(offset(1, 0.2, 0.7), 1);
        // P(1) = (1 − γ)/(1 − γ^h): u just below it gives 1, just above 2.
        let p1 = 0.8 / (1.0 - 0.2f64.powi(4));
        assert_eq!(offset(4, 0.2, p1 - 1e-9), 1);
        assert_eq!(offset(4, 0.2, p1 + 1e-9), 2);
    }
}
