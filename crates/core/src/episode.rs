//! Episode statistics of a batch, kept as Gymnasium 1.x's vector `RecordEpisodeStatistics`
//! keeps them (`gymnasium/wrappers/vector/common.py`), so a front end can report them in
//! `info["episode"] = {"r", "l", "t"}` without the wrapper: the return (f64 sum of the f32
//! rewards) and length of every episode that ended in the last step, and its wall seconds.
//!
//! The rules per autoreset mode are the wrapper's: with [`AutoReset::SameStep`] every step
//! counts and a finished row starts its next episode at once; with [`AutoReset::NextStep`]
//! (and [`AutoReset::Disabled`], whose rows the caller resets) the step after an episode's end
//! only resets the row and does not count. One pass over the rows after each step: a few
//! additions per row. Time is the caller's (`now`, seconds on any clock): a library reads no
//! clock of its own.

use crate::batch::AutoReset;
use rayon::prelude::*;

/// The episode count's rule for one step over a chunk of rows ([`EpisodeStats::record`] and
/// [`EpisodeStats::record_steps`]), compiled for the CPU's vector extension (f64 additions
/// round the same at any width).
struct Count<'a> {
    ret: &'a mut [f64],
    len: &'a mut [u64],
    start: &'a mut [f64],
    prev: &'a mut [bool],
    rw: &'a [f32],
    /// The step's terminated and truncated flags from the chunk's first env.
    flags: (&'a [bool], &'a [bool]),
    a: usize,
    reset_step: bool,
    now: f64,
}

impl crate::simd::WithSimd for Count<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: crate::simd::Simd>(self, _simd: S) {
        let Count { ret, len, start, prev, rw, flags: (te, tr), a, reset_step, now } = self;
        let n = ret.len();
        let (len, start, prev, rw) = (&mut len[..n], &mut start[..n], &mut prev[..n], &rw[..n]);
        for j in 0..n {
            let ended = if a == 1 { te[j] | tr[j] } else { te[j / a] | tr[j / a] };
            // All ones where the step counts, else zero. Selecting by bit masks gives plain
            // vector loads and stores: `if counts { .. } else { 0.0 }` compiled to masked
            // stores followed by masked loads of the same addresses, which store forwarding
            // cannot serve. Every load comes before any store: the columns are separate
            // allocations that may share page offsets, and a load after a store at the same
            // offset waits for it (4K aliasing). With `set_flags`: `record_steps` in about half
            // the time (`cargo bench -p kestrel-core --bench episode`, BENCHMARKS).
            let keep = u64::from(!(reset_step & prev[j])).wrapping_neg();
            let (r, l, s) = (ret[j], len[j], start[j]);
            ret[j] = f64::from_bits((r + f64::from(rw[j])).to_bits() & keep);
            len[j] = (l + 1) & keep;
            start[j] = f64::from_bits((s.to_bits() & keep) | (now.to_bits() & !keep));
            prev[j] = ended;
        }
    }
}

/// An episode's wall seconds from its start to `now`, rounded to microseconds (as the wrapper
/// rounds them).
fn seconds(now: f64, start: f64) -> f64 {
    ((now - start).max(0.0) * 1e6).round() / 1e6
}

/// One chunk of rows of every column of [`EpisodeStats`], and its first row.
struct Rows<'a> {
    first: usize,
    ret: &'a mut [f64],
    len: &'a mut [u64],
    start: &'a mut [f64],
    prev: &'a mut [bool],
    done: &'a mut [bool],
    f_ret: &'a mut [f64],
    f_len: &'a mut [u64],
    f_secs: &'a mut [f64],
}

/// A rollout's episode columns for [`EpisodeStats::record_steps`], each one value per step
/// and agent row (`steps × rows`, step after step, as a rollout's rewards): where an episode
/// ended (`ended`), its return, length and wall seconds; 0 and false elsewhere. A front end
/// reuses them from rollout to rollout: the entries the last one marked are cleared.
#[derive(Debug)]
pub struct EpisodeColumns<'a> {
    /// Returns.
    pub returns: &'a mut [f64],
    /// Lengths in steps.
    pub lengths: &'a mut [i64],
    /// Wall seconds, rounded to microseconds.
    pub seconds: &'a mut [f64],
    /// Where an episode ended.
    pub ended: &'a mut [bool],
}

impl<'a> EpisodeColumns<'a> {
    /// The columns cut by step (`rows` values each) and then into chunks of `chunk` rows:
    /// entry `[c][t]` is chunk `c`'s part of step `t`.
    fn by_chunk(self, rows: usize, chunk: usize) -> Vec<Vec<EpisodeColumns<'a>>> {
        let mut out: Vec<Vec<EpisodeColumns<'a>>> =
            (0..rows.div_ceil(chunk)).map(|_| Vec::new()).collect();
        let EpisodeColumns { returns, lengths, seconds, ended } = self;
        let steps = returns
            .chunks_mut(rows)
            .zip(lengths.chunks_mut(rows))
            .zip(seconds.chunks_mut(rows))
            .zip(ended.chunks_mut(rows));
        for (((r, l), s), e) in steps {
            let parts = r
                .chunks_mut(chunk)
                .zip(l.chunks_mut(chunk))
                .zip(s.chunks_mut(chunk))
                .zip(e.chunks_mut(chunk));
            for (c, (((returns, lengths), seconds), ended)) in parts.enumerate() {
                out[c].push(EpisodeColumns { returns, lengths, seconds, ended });
            }
        }
        out
    }

    /// Zeroes the entries `ended` marks (a reused buffer's last rollout): the few set flags
    /// found 64 at a time ([`set_flags`]).
    fn clear_marked(&mut self) {
        let EpisodeColumns { returns, lengths, seconds, ended } = self;
        set_flags(ended, |j| (returns[j], lengths[j], seconds[j]) = (0.0, 0, 0.0));
        ended.fill(false);
    }
}

/// `f(i)` for each `i` where `flags[i]`, in order: each 64 flags gathered into the bits of a
/// word (eight a multiply), the set bits then visited. A rollout's ends are a few percent of
/// its rows; a filter over the flags mispredicted a branch a few times in 64 rows.
#[inline(always)]
fn set_flags(flags: &[bool], mut f: impl FnMut(usize)) {
    for (k, word) in flags.chunks(64).enumerate() {
        let mut bits = 0u64;
        for (g, part) in word.chunks(8).enumerate() {
            // Eight flags as one word (one load where `part` is whole).
            let b: [u8; 8] = match <&[bool; 8]>::try_from(part) {
                Ok(whole) => whole.map(u8::from),
                Err(_) => std::array::from_fn(|i| part.get(i).map_or(0, |&x| u8::from(x))),
            };
            bits |= crate::simd::gather8_word(b) << (8 * g);
        }
        while bits != 0 {
            f(k * 64 + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
}

/// Returns, lengths and start times of the running episodes, one per agent row, and the
/// statistics of the episodes that ended in the last step.
#[derive(Clone, Debug)]
pub struct EpisodeStats {
    agents: usize,
    returns: Vec<f64>,
    lengths: Vec<u64>,
    starts: Vec<f64>,
    prev_done: Vec<bool>,
    done: Vec<bool>,
    final_returns: Vec<f64>,
    final_lengths: Vec<u64>,
    final_seconds: Vec<f64>,
}

impl EpisodeStats {
    /// `envs` envs of `agents` agent rows each, all at the start of an episode at `now`.
    pub fn new(envs: usize, agents: usize, now: f64) -> Self {
        let rows = envs * agents.max(1);
        EpisodeStats {
            agents: agents.max(1),
            returns: vec![0.0; rows],
            lengths: vec![0; rows],
            starts: vec![now; rows],
            prev_done: vec![false; rows],
            done: vec![false; rows],
            final_returns: vec![0.0; rows],
            final_lengths: vec![0; rows],
            final_seconds: vec![0.0; rows],
        }
    }

    /// Every row starts a new episode at `now` (a full reset).
    pub fn reset(&mut self, now: f64) {
        self.returns.fill(0.0);
        self.lengths.fill(0);
        self.starts.fill(now);
        self.prev_done.fill(false);
        self.done.fill(false);
    }

    /// The envs where `mask` (one per env) is true start a new episode at `now`.
    pub fn reset_envs(&mut self, mask: &[bool], now: f64) {
        for (e, _) in mask.iter().enumerate().filter(|(_, m)| **m) {
            for r in e * self.agents..(e + 1) * self.agents {
                (self.returns[r], self.lengths[r], self.starts[r]) = (0.0, 0, now);
                (self.prev_done[r], self.done[r]) = (false, false);
            }
        }
    }

    /// Rows `..n` of every column in chunks of `chunk` rows, in parallel: the one split of
    /// [`EpisodeStats::record`] and [`EpisodeStats::record_steps`].
    fn par_rows(
        &mut self,
        n: usize,
        chunk: usize,
    ) -> impl IndexedParallelIterator<Item = Rows<'_>> {
        self.returns[..n]
            .par_chunks_mut(chunk)
            .zip(self.lengths[..n].par_chunks_mut(chunk))
            .zip(self.starts[..n].par_chunks_mut(chunk))
            .zip(self.prev_done[..n].par_chunks_mut(chunk))
            .zip(self.done[..n].par_chunks_mut(chunk))
            .zip(self.final_returns[..n].par_chunks_mut(chunk))
            .zip(self.final_lengths[..n].par_chunks_mut(chunk))
            .zip(self.final_seconds[..n].par_chunks_mut(chunk))
            .enumerate()
            .map(move |(c, (((((((ret, len), start), prev), done), f_ret), f_len), f_secs))| Rows {
                first: c * chunk,
                ret,
                len,
                start,
                prev,
                done,
                f_ret,
                f_len,
                f_secs,
            })
    }

    /// Counts the step whose `rewards` (one per agent row) and flags (one per env) the batch
    /// just returned at `now`, under `mode`.
    pub fn record(
        &mut self,
        mode: AutoReset,
        rewards: &[f32],
        terminated: &[bool],
        truncated: &[bool],
        now: f64,
    ) {
        let a = self.agents;
        // Row by row, in parallel over chunks of whole envs from a few thousand rows (10,000
        // rows: about 40 µs serial). Every row is its own, so the result is the same for any
        // split.
        let chunk = a * 2048usize.div_ceil(a);
        let n = self.returns.len().min(rewards.len());
        self.par_rows(n, chunk).for_each(
            |Rows { first, ret, len, start, prev, done, f_ret, f_len, f_secs }| {
                // The step's rule (`Count`, shared with `record_steps`), then the rows that
                // ended: their finals (zeros on the others, as the wrapper's
                // `np.where(dones, …, 0)`), and under SameStep their restart.
                let rw = &rewards[first..first + ret.len()];
                let flags = (&terminated[first / a..], &truncated[first / a..]);
                let reset_step = mode != AutoReset::SameStep;
                let (ret, len, start, prev) = (&mut *ret, &mut *len, &mut *start, &mut *prev);
                crate::simd::dispatch(Count {
                    ret,
                    len,
                    start,
                    prev,
                    rw,
                    flags,
                    a,
                    reset_step,
                    now,
                });
                done.copy_from_slice(prev);
                for j in 0..ret.len() {
                    (f_ret[j], f_len[j], f_secs[j]) = if prev[j] {
                        (ret[j], len[j], seconds(now, start[j]))
                    } else {
                        (0.0, 0, 0.0)
                    };
                    if prev[j] && !reset_step {
                        (ret[j], len[j], start[j]) = (0.0, 0, now);
                    }
                }
            },
        );
    }

    /// Counts `steps` steps at once, as that many [`EpisodeStats::record`] calls at `now`
    /// would: `rewards` and the flags hold each step's one after another (a rollout's
    /// buffers). Writes the episodes that ended into `out` (their entries from its last
    /// rollout cleared first) and returns how many ended; afterwards [`EpisodeStats::done`]
    /// and the finals are the last step's.
    ///
    /// One parallel pass over chunks of rows, each row's running sums kept in registers
    /// through every step, each chunk writing its own part of `out`: `steps` calls of `record`
    /// join the threads once a step and write the finals of every row every step.
    #[allow(clippy::too_many_arguments)]
    pub fn record_steps(
        &mut self,
        mode: AutoReset,
        steps: usize,
        rewards: &[f32],
        terminated: &[bool],
        truncated: &[bool],
        now: f64,
        out: Option<EpisodeColumns<'_>>,
    ) -> Result<usize, crate::error::CoreError> {
        let a = self.agents;
        let rows = self.returns.len();
        let envs = rows / a;
        let n = steps * rows;
        let out_lengths = out
            .as_ref()
            .map_or([n; 4], |o| [o.returns.len(), o.lengths.len(), o.seconds.len(), o.ended.len()]);
        for (what, expected, got) in [
            ("rewards", n, rewards.len()),
            ("terminated", steps * envs, terminated.len()),
            ("truncated", steps * envs, truncated.len()),
            ("episode returns", n, out_lengths[0]),
            ("episode lengths", n, out_lengths[1]),
            ("episode seconds", n, out_lengths[2]),
            ("episode flags", n, out_lengths[3]),
        ] {
            if expected != got {
                return Err(crate::error::CoreError::Length { what, expected, got });
            }
        }
        if steps == 0 || rows == 0 {
            return Ok(0);
        }
        // Chunks of whole envs, a few per thread; each chunk step by step (sequential reads
        // of each step's rows: a row through all steps first strides a page a step).
        let threads = rayon::current_num_threads();
        let chunk = a * envs.div_ceil(4 * threads).max(64);
        let parts: Vec<Option<Vec<EpisodeColumns<'_>>>> = match out {
            Some(o) => o.by_chunk(rows, chunk).into_iter().map(Some).collect(),
            None => (0..rows.div_ceil(chunk)).map(|_| None).collect(),
        };
        let secs = |start: f64| seconds(now, start);
        let ended = self
            .par_rows(rows, chunk)
            .zip(parts)
            .map(|(Rows { first, ret, len, start, prev, done, f_ret, f_len, f_secs }, mut out)| {
                let mut ended = 0;
                let reset_step = mode != AutoReset::SameStep;
                // The finals are the last step's (zeros where nothing ended).
                f_ret.fill(0.0);
                f_len.fill(0);
                f_secs.fill(0.0);
                for t in 0..steps {
                    let rw = &rewards[t * rows + first..][..ret.len()];
                    let (te, tr) =
                        (&terminated[t * envs..][..envs], &truncated[t * envs..][..envs]);
                    // Every row, without a branch (vector code): the step counts, or (after an
                    // end, next-step and disabled modes) only restarts the row.
                    let (ret, len, start, prev) = (&mut *ret, &mut *len, &mut *start, &mut *prev);
                    let flags = (&te[first / a..], &tr[first / a..]);
                    crate::simd::dispatch(Count {
                        ret,
                        len,
                        start,
                        prev,
                        rw,
                        flags,
                        a,
                        reset_step,
                        now,
                    });
                    let mut cols = out.as_mut().map(|o| &mut o[t]);
                    if let Some(c) = cols.as_mut() {
                        c.clear_marked();
                    }
                    // Then the few rows that ended.
                    set_flags(prev, |j| {
                        ended += 1;
                        let (r, l, s) = (ret[j], len[j], secs(start[j]));
                        if let Some(c) = cols.as_mut() {
                            (c.returns[j], c.lengths[j], c.seconds[j]) = (r, l as i64, s);
                            c.ended[j] = true;
                        }
                        if t + 1 == steps {
                            (f_ret[j], f_len[j], f_secs[j]) = (r, l, s);
                        }
                        if !reset_step {
                            (ret[j], len[j], start[j]) = (0.0, 0, now);
                        }
                    });
                }
                done.copy_from_slice(prev);
                ended
            })
            .sum();
        Ok(ended)
    }

    /// Which agent rows ended an episode in the last step.
    pub fn done(&self) -> &[bool] {
        &self.done
    }

    /// The returns of the episodes that ended in the last step (rows where [`Self::done`];
    /// 0 on the others, as are the lengths and seconds).
    pub fn final_returns(&self) -> &[f64] {
        &self.final_returns
    }

    /// Their lengths in steps.
    pub fn final_lengths(&self) -> &[u64] {
        &self.final_lengths
    }

    /// Their wall seconds, rounded to microseconds (as the wrapper rounds them).
    pub fn final_seconds(&self) -> &[f64] {
        &self.final_seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_modes_count_as_gymnasiums_wrapper_does() {
        // One env, one agent: episodes of 2 steps with rewards 1, 2 then 3, 4; step k at k/2 s.
        let rewards = [1.0f32, 2.0, 0.0, 3.0, 4.0];
        let ends = [false, true, false, false, true];
        // Next-step: the third step only resets.
        let mut s = EpisodeStats::new(1, 1, 0.0);
        let mut seen = Vec::new();
        for (k, (r, e)) in rewards.iter().zip(ends).enumerate() {
            s.record(AutoReset::NextStep, &[*r], &[e], &[false], 0.5 * (k + 1) as f64);
            if s.done()[0] {
                seen.push((s.final_returns()[0], s.final_lengths()[0], s.final_seconds()[0]));
            }
        }
        // The second episode starts at the reset step (1.5 s) and ends at 2.5 s.
        assert_eq!(seen, [(3.0, 2, 1.0), (7.0, 2, 1.0)]);
        // Same-step: every step counts; a finished row starts over at once.
        let mut s = EpisodeStats::new(1, 1, 0.0);
        let mut seen = Vec::new();
        for (k, (r, e)) in
            [1.0f32, 2.0, 3.0, 4.0].iter().zip([false, true, false, true]).enumerate()
        {
            s.record(AutoReset::SameStep, &[*r], &[false], &[e], 0.5 * (k + 1) as f64);
            if s.done()[0] {
                seen.push((s.final_returns()[0], s.final_lengths()[0], s.final_seconds()[0]));
            }
        }
        assert_eq!(seen, [(3.0, 2, 1.0), (7.0, 2, 1.0)]);
        // The ended episode's clock stays readable after the row starts over.
        assert_eq!(
            (s.final_returns()[0], s.final_lengths()[0], s.final_seconds()[0]),
            (7.0, 2, 1.0)
        );
    }

    #[test]
    fn agent_rows_share_their_envs_flags_and_resets_clear_rows() {
        let mut s = EpisodeStats::new(2, 2, 0.0);
        s.record(AutoReset::NextStep, &[1.0, 2.0, 3.0, 4.0], &[false, true], &[false, false], 1.0);
        assert_eq!(s.done(), [false, false, true, true]);
        assert_eq!(&s.final_returns()[2..], [3.0, 4.0]);
        s.reset_envs(&[false, true], 2.0);
        assert_eq!(s.done(), [false, false, false, false]);
        // After the mask reset env 1 counts again from zero (no reset step is skipped).
        s.record(AutoReset::Disabled, &[1.0, 1.0, 5.0, 5.0], &[false, true], &[false, false], 3.5);
        assert_eq!(
            (&s.final_returns()[2..], &s.final_lengths()[2..]),
            (&[5.0, 5.0][..], &[1, 1][..])
        );
        assert_eq!(&s.final_seconds()[2..], [1.5, 1.5]);
        s.reset(4.0);
        assert!(s.done().iter().all(|d| !d));
    }

    /// The set flags' positions, in order, whatever the length (a short last word and a
    /// short last byte of it) and however dense.
    #[test]
    fn set_flags_visits_the_set_positions_in_order() {
        let mut r = crate::key::Key::new(5).rng();
        for len in [0, 1, 7, 8, 9, 63, 64, 65, 130, 1000] {
            for density in [0, 3, 50, 100] {
                let flags: Vec<bool> = (0..len).map(|_| r.below(100) < density).collect();
                let mut seen = Vec::new();
                set_flags(&flags, |i| seen.push(i));
                let want: Vec<usize> = (0..len).filter(|&i| flags[i]).collect();
                assert_eq!(seen, want, "{len} flags, {density}% set");
            }
        }
    }

    /// `record_steps` over a rollout's buffers is `record` once a step: the same episodes,
    /// then the same state (the next step counts the same), in every mode, with agents and
    /// several chunks of rows.
    #[test]
    fn record_steps_is_record_once_a_step() {
        let (envs, agents, steps) = (700, 3, 9);
        let rows = envs * agents;
        let mut r = crate::key::Key::new(5).rng();
        let rewards: Vec<f32> = (0..steps * rows).map(|_| r.uniform_f64() as f32).collect();
        let te: Vec<bool> = (0..steps * envs).map(|_| r.below(7) == 0).collect();
        let tr: Vec<bool> = (0..steps * envs).map(|_| r.below(11) == 0).collect();
        for mode in [AutoReset::NextStep, AutoReset::SameStep, AutoReset::Disabled] {
            let (mut one, mut many) =
                (EpisodeStats::new(envs, agents, 0.0), EpisodeStats::new(envs, agents, 0.0));
            // A first step apart, so rows start the rollout mid-episode and some just ended.
            for s in [&mut one, &mut many] {
                s.record(mode, &rewards[..rows], &te[..envs], &tr[..envs], 0.5);
            }
            // The episodes as `record` reports them, a step at a time.
            let n = steps * rows;
            let (mut r_want, mut l_want, mut s_want, mut e_want) =
                (vec![0.0; n], vec![0i64; n], vec![0.0; n], vec![false; n]);
            for t in 0..steps {
                let (rw, e) = (&rewards[t * rows..][..rows], t * envs..(t + 1) * envs);
                one.record(mode, rw, &te[e.clone()], &tr[e], 2.0);
                for i in (0..rows).filter(|&i| one.done()[i]) {
                    let j = t * rows + i;
                    r_want[j] = one.final_returns()[i];
                    l_want[j] = one.final_lengths()[i] as i64;
                    s_want[j] = one.final_seconds()[i];
                    e_want[j] = true;
                }
            }
            // Columns holding an earlier rollout's marks, which must be cleared.
            let (mut r_got, mut l_got, mut s_got) = (vec![0.0; n], vec![0i64; n], vec![0.0; n]);
            let mut e_got: Vec<bool> = (0..n).map(|j| j % 5 == 0).collect();
            for j in (0..n).filter(|&j| e_got[j]) {
                (r_got[j], l_got[j], s_got[j]) = (-1.0, -1, -1.0);
            }
            let mut again = many.clone();
            let out = EpisodeColumns {
                returns: &mut r_got,
                lengths: &mut l_got,
                seconds: &mut s_got,
                ended: &mut e_got,
            };
            let ended = many.record_steps(mode, steps, &rewards, &te, &tr, 2.0, Some(out)).unwrap();
            assert!(ended > rows, "{mode:?}: episodes end");
            assert_eq!(ended, e_want.iter().filter(|&&e| e).count(), "{mode:?}");
            assert_eq!((r_got, l_got, s_got, e_got), (r_want, l_want, s_want, e_want), "{mode:?}");
            // Without columns: the same count and the same state.
            let count = again.record_steps(mode, steps, &rewards, &te, &tr, 2.0, None).unwrap();
            assert_eq!(count, ended);
            assert_eq!(again.final_returns(), many.final_returns());
            assert_eq!(many.done(), one.done());
            assert_eq!(many.final_returns(), one.final_returns());
            assert_eq!(many.final_lengths(), one.final_lengths());
            assert_eq!(many.final_seconds(), one.final_seconds());
            for s in [&mut one, &mut many] {
                s.record(mode, &rewards[..rows], &te[envs..2 * envs], &tr[..envs], 3.0);
            }
            assert_eq!(many.final_returns(), one.final_returns(), "{mode:?}: the next step");
            assert_eq!(many.final_seconds(), one.final_seconds(), "{mode:?}: the next step");
            let e = many.record_steps(mode, 2, &rewards[..rows], &te, &tr, 3.0, None).unwrap_err();
            assert!(e.to_string().contains("rewards"), "{e}");
        }
    }

    /// Batches of several parallel chunks count every row as the row-by-row definition does
    /// (Gymnasium's wrapper, written out here), in every mode and with several agents per env.
    #[test]
    fn large_batches_count_row_by_row() {
        let (envs, agents) = (1500, 3);
        let rows = envs * agents;
        for mode in [AutoReset::NextStep, AutoReset::SameStep, AutoReset::Disabled] {
            let mut s = EpisodeStats::new(envs, agents, 0.0);
            let (mut ret, mut len, mut start) =
                (vec![0.0f64; rows], vec![0u64; rows], vec![0.0; rows]);
            let mut prev = vec![false; rows];
            let mut r = crate::key::Key::new(4).rng();
            for k in 0..40 {
                let now = k as f64 * 0.25;
                let rewards: Vec<f32> = (0..rows).map(|_| r.uniform_f64() as f32).collect();
                let te: Vec<bool> = (0..envs).map(|_| r.below(9) == 0).collect();
                let tr: Vec<bool> = (0..envs).map(|_| r.below(13) == 0).collect();
                s.record(mode, &rewards, &te, &tr, now);
                for i in 0..rows {
                    if mode != AutoReset::SameStep && prev[i] {
                        (ret[i], len[i], start[i]) = (0.0, 0, now);
                    } else {
                        ret[i] += f64::from(rewards[i]);
                        len[i] += 1;
                    }
                    let done = te[i / agents] || tr[i / agents];
                    assert_eq!(s.done()[i], done);
                    if done {
                        assert_eq!(s.final_returns()[i], ret[i]);
                        assert_eq!(s.final_lengths()[i], len[i]);
                        assert_eq!(s.final_seconds()[i], ((now - start[i]) * 1e6).round() / 1e6);
                        if mode == AutoReset::SameStep {
                            (ret[i], len[i], start[i]) = (0.0, 0, now);
                        }
                    } else {
                        let f = (s.final_returns()[i], s.final_lengths()[i], s.final_seconds()[i]);
                        assert_eq!(f, (0.0, 0, 0.0), "row {i} did not end: zeros");
                    }
                    prev[i] = done;
                }
            }
        }
    }
}
