//! Frame-stacked replay: a ring buffer of single observation frames from which stacked
//! states of `num_frames` frames are assembled at sampling time.
//!
//! Every slot records the frame, the action taken from it (or none: the final observation of
//! an episode), the reward, `terminated` and `truncated` separately, its episode number and
//! its global write stamp. A stacked state ending at slot `t` takes the frames `t−n+1..=t`
//! that belong to the same episode and were written immediately before `t`; frames from an
//! earlier episode, overwritten slots and slots never written are zeros. So a window never
//! straddles an episode boundary or the write position (sorrel 1.6.0's `Buffer.sample` reads
//! raw array indices and does both), and acting ([`FrameReplay::stack_current`]) sees
//! exactly the stacking that training sees.
//!
//! A transition starts at a slot with an action whose next frame, of the same episode, has
//! been written. Its target uses up to `n_step` rewards, stopping at the episode's end or at
//! the newest written frame: `return = Σ_{k<m} γᵏ r_{t+k}`, bootstrap state ending at `t+m`,
//! discount `γᵐ` (0 when the episode terminated inside the `m` steps; a truncated episode
//! still bootstraps from its final observation). `n_step = 1` is the plain 1-step target.
//!
//! Sampling is uniform without replacement over valid transitions by default; proportional
//! prioritised replay (Schaul et al., 2016: `P(i) ∝ pᵢ^α`, importance weights
//! `(N·P(i))^−β / max`, new transitions at the maximum priority) is an option. Both draw
//! through one sum tree whose leaves are zero for slots that start no transition.

use crate::error::ReplayError;
use kestrel_core::FromInvalid;
use kestrel_core::Key;

/// Proportional prioritised replay settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Prioritized {
    /// Priority exponent α (0: uniform).
    pub alpha: f64,
    /// Importance-sampling exponent β (1: full correction).
    pub beta: f64,
    /// Added to |TD error| so no transition gets priority 0.
    pub eps: f64,
}

impl Default for Prioritized {
    fn default() -> Self {
        Prioritized { alpha: 0.6, beta: 0.4, eps: 1e-6 }
    }
}

/// Sizes and target settings of a [`FrameReplay`].
#[derive(Clone, Debug, PartialEq)]
pub struct FrameReplayConfig {
    /// Slots (frames) in the ring.
    pub capacity: usize,
    /// Floats per frame.
    pub frame_dim: usize,
    /// Frames per stacked state.
    pub num_frames: usize,
    /// Rewards summed into a target (1: one-step).
    pub n_step: usize,
    /// Discount for the n-step sum and the bootstrap.
    pub gamma: f64,
    /// Prioritised sampling (`None`: uniform without replacement).
    pub prioritized: Option<Prioritized>,
}

impl FrameReplayConfig {
    /// Checks every setting; errors name the field and value.
    pub fn validate(&self) -> Result<(), ReplayError> {
        let bad = |field: &'static str, value: String, accepted: &'static str| {
            Err(ReplayError::invalid(field, value, accepted))
        };
        if self.frame_dim == 0 {
            return bad("frame_dim", "0".into(), "at least 1");
        }
        if self.num_frames == 0 {
            return bad("num_frames", "0".into(), "at least 1");
        }
        if self.n_step == 0 {
            return bad("n_step", "0".into(), "at least 1");
        }
        if self.capacity < self.num_frames + self.n_step + 1 {
            return bad(
                "capacity",
                self.capacity.to_string(),
                "at least num_frames + n_step + 1 slots",
            );
        }
        if !(self.gamma.is_finite() && (0.0..=1.0).contains(&self.gamma)) {
            return bad("gamma", self.gamma.to_string(), "in [0, 1]");
        }
        if let Some(p) = &self.prioritized {
            let ok = |v: f64| v.is_finite() && v >= 0.0;
            if !ok(p.alpha) {
                return bad("prioritized.alpha", p.alpha.to_string(), "finite and >= 0");
            }
            if !ok(p.beta) {
                return bad("prioritized.beta", p.beta.to_string(), "finite and >= 0");
            }
            if !(p.eps.is_finite() && p.eps > 0.0) {
                return bad("prioritized.eps", p.eps.to_string(), "finite and > 0");
            }
        }
        Ok(())
    }
}

/// A sampled batch; allocated once ([`FrameBatch::new`]) and refilled by
/// [`FrameReplay::sample`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameBatch {
    /// Rows.
    pub batch: usize,
    /// Stacked states, `batch × num_frames × frame_dim`, oldest frame first.
    pub states: Vec<f32>,
    /// Stacked bootstrap states, same layout.
    pub next_states: Vec<f32>,
    /// Actions.
    pub actions: Vec<u32>,
    /// n-step discounted reward sums.
    pub returns: Vec<f32>,
    /// Bootstrap discount `γᵐ`, 0 where the episode terminated.
    pub discounts: Vec<f32>,
    /// Whether the episode terminated inside the target's steps.
    pub terminated: Vec<bool>,
    /// Whether it was truncated inside them (it still bootstraps).
    pub truncated: Vec<bool>,
    /// Importance weights (all 1 under uniform sampling).
    pub weights: Vec<f32>,
    /// Slot of each row, for [`FrameReplay::update_priorities`].
    pub slots: Vec<usize>,
}

impl FrameBatch {
    /// Buffers for `batch` rows of states of `state_dim = num_frames × frame_dim` floats.
    pub fn new(batch: usize, state_dim: usize) -> Self {
        FrameBatch {
            batch,
            states: vec![0.0; batch * state_dim],
            next_states: vec![0.0; batch * state_dim],
            actions: vec![0; batch],
            returns: vec![0.0; batch],
            discounts: vec![0.0; batch],
            terminated: vec![false; batch],
            truncated: vec![false; batch],
            weights: vec![1.0; batch],
            slots: vec![0; batch],
        }
    }
}

const NO_ACTION: u32 = u32::MAX;

/// The frame-stacked ring buffer (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameReplay {
    cfg: FrameReplayConfig,
    frames: Vec<f32>,
    actions: Vec<u32>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    episode: Vec<u64>,
    /// Global write index + 1 of the slot's frame (0: never written).
    stamp: Vec<u64>,
    /// Slots written so far (the next write goes to `written % capacity`).
    written: u64,
    /// Current episode number (0 before the first `begin_episode`).
    current_episode: u64,
    /// Whether the current episode has ended (a final frame was pushed).
    episode_open: bool,
    /// Sum tree over slot priorities (leaves at `leaves..2·leaves`).
    tree: Vec<f64>,
    leaves: usize,
    max_priority: f64,
    valid: usize,
}

impl FrameReplay {
    /// An empty buffer.
    pub fn new(cfg: FrameReplayConfig) -> Result<Self, ReplayError> {
        cfg.validate()?;
        let c = cfg.capacity;
        let leaves = c.next_power_of_two();
        Ok(FrameReplay {
            frames: vec![0.0; c * cfg.frame_dim],
            actions: vec![NO_ACTION; c],
            rewards: vec![0.0; c],
            terminated: vec![false; c],
            truncated: vec![false; c],
            episode: vec![0; c],
            stamp: vec![0; c],
            written: 0,
            current_episode: 0,
            episode_open: false,
            tree: vec![0.0; 2 * leaves],
            leaves,
            max_priority: 1.0,
            valid: 0,
            cfg,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FrameReplayConfig {
        &self.cfg
    }

    /// Floats per stacked state.
    pub fn state_dim(&self) -> usize {
        self.cfg.num_frames * self.cfg.frame_dim
    }

    /// Frames stored (at most the capacity).
    pub fn len(&self) -> usize {
        (self.written as usize).min(self.cfg.capacity)
    }

    /// Whether nothing was stored.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Transitions that can be sampled now.
    pub fn num_transitions(&self) -> usize {
        self.valid
    }

    /// Starts a new episode: frames pushed from now on are not stacked with earlier ones.
    pub fn begin_episode(&mut self) {
        self.current_episode += 1;
        self.episode_open = true;
    }

    fn check_frame(&self, frame: &[f32]) -> Result<(), ReplayError> {
        if frame.len() != self.cfg.frame_dim {
            return Err(ReplayError::invalid(
                "frame length",
                frame.len().to_string(),
                "frame_dim floats",
            ));
        }
        if !self.episode_open {
            return Err(ReplayError::invalid(
                "episode",
                "not open",
                "begin_episode() before pushing frames",
            ));
        }
        Ok(())
    }

    /// Stores one step: the frame the agent acted from, its action, the reward, and whether
    /// the episode terminated or was truncated by that step. After a step that ends the
    /// episode, push its final observation with [`FrameReplay::push_final`].
    pub fn push(
        &mut self,
        frame: &[f32],
        action: u32,
        reward: f32,
        terminated: bool,
        truncated: bool,
    ) -> Result<(), ReplayError> {
        self.check_frame(frame)?;
        if action == NO_ACTION {
            return Err(ReplayError::invalid("action", action.to_string(), "below u32::MAX"));
        }
        if !reward.is_finite() {
            return Err(ReplayError::invalid("reward", reward.to_string(), "a finite number"));
        }
        self.write(frame, action, reward, terminated, truncated);
        Ok(())
    }

    /// Stores the final observation of the episode (no action) and closes it.
    pub fn push_final(&mut self, frame: &[f32]) -> Result<(), ReplayError> {
        self.check_frame(frame)?;
        self.write(frame, NO_ACTION, 0.0, false, false);
        self.episode_open = false;
        Ok(())
    }

    fn slot_of(&self, global: u64) -> usize {
        (global % self.cfg.capacity as u64) as usize
    }

    fn write(&mut self, frame: &[f32], action: u32, reward: f32, term: bool, trunc: bool) {
        let s = self.slot_of(self.written);
        let (d, c) = (self.cfg.frame_dim, self.cfg.capacity);
        // Overwriting the oldest frame breaks the windows of the next n − 1 oldest slots of
        // its run: they start no transition any more.
        if self.stamp[s] > 0 {
            let (old_ep, old_stamp) = (self.episode[s], self.stamp[s]);
            for k in 1..self.cfg.num_frames {
                let q = (s + k) % c;
                if self.stamp[q] == old_stamp + k as u64 && self.episode[q] == old_ep {
                    self.set_priority(q, 0.0);
                }
            }
        }
        self.frames[s * d..(s + 1) * d].copy_from_slice(frame);
        self.actions[s] = action;
        self.rewards[s] = reward;
        self.terminated[s] = term;
        self.truncated[s] = trunc;
        self.episode[s] = self.current_episode;
        self.written += 1;
        self.stamp[s] = self.written;
        // The overwritten slot started a transition no longer; this one starts none yet.
        self.set_priority(s, 0.0);
        // The previous slot's transition becomes sampleable when its next frame arrives.
        if self.written >= 2 {
            let p = self.slot_of(self.written - 2);
            if self.stamp[p] == self.written - 1
                && self.episode[p] == self.current_episode
                && self.actions[p] != NO_ACTION
            {
                let pr = match &self.cfg.prioritized {
                    Some(_) => self.max_priority,
                    None => 1.0,
                };
                self.set_priority(p, pr);
            }
        }
    }

    fn set_priority(&mut self, slot: usize, p: f64) {
        let mut i = slot + self.leaves;
        let old = self.tree[i];
        if (old > 0.0) != (p > 0.0) {
            if p > 0.0 {
                self.valid += 1;
            } else {
                self.valid -= 1;
            }
        }
        self.tree[i] = p;
        while i > 1 {
            i /= 2;
            self.tree[i] = self.tree[2 * i] + self.tree[2 * i + 1];
        }
    }

    /// The slot whose cumulative priority range holds `u · total`.
    fn find(&self, u: f64) -> usize {
        let mut x = u * self.tree[1];
        let mut i = 1;
        while i < self.leaves {
            let l = 2 * i;
            if x < self.tree[l] || self.tree[l + 1] <= 0.0 {
                i = l;
            } else {
                x -= self.tree[l];
                i = l + 1;
            }
        }
        // Rounding can land on an empty leaf at the edge; step to a filled neighbour.
        let mut s = i - self.leaves;
        if self.tree[i] <= 0.0 {
            s = (0..self.cfg.capacity)
                .map(|k| (s + self.cfg.capacity - k) % self.cfg.capacity)
                .find(|&k| self.tree[k + self.leaves] > 0.0)
                .unwrap_or(s);
        }
        s
    }

    /// Whether the slot at global index `g − k` holds the frame written `k` writes before the
    /// one at global index `g`, in the same episode.
    fn same_run(&self, slot: usize, back: usize) -> Option<usize> {
        let c = self.cfg.capacity;
        if back >= c {
            return None;
        }
        let st = self.stamp[slot];
        if st <= back as u64 {
            return None;
        }
        let q = (slot + c - back) % c;
        (self.stamp[q] == st - back as u64 && self.episode[q] == self.episode[slot]).then_some(q)
    }

    /// Writes the `count` frames ending at `slot` into `out` (`count × frame_dim`, oldest
    /// first), zeros where a frame is not of the same run.
    fn stack_at(&self, slot: usize, count: usize, out: &mut [f32]) {
        let d = self.cfg.frame_dim;
        for k in 0..count {
            let dst = &mut out[(count - 1 - k) * d..(count - k) * d];
            match self.same_run(slot, k) {
                Some(q) => dst.copy_from_slice(&self.frames[q * d..(q + 1) * d]),
                None => dst.fill(0.0),
            }
        }
    }

    /// The state to act from: the current episode's last `num_frames − 1` stored frames (zeros
    /// where the episode has fewer) followed by `frame`, written to `out`
    /// (`num_frames × frame_dim`).
    pub fn stack_current(&self, frame: &[f32], out: &mut [f32]) -> Result<(), ReplayError> {
        self.check_frame(frame)?;
        let (n, d) = (self.cfg.num_frames, self.cfg.frame_dim);
        if out.len() != n * d {
            return Err(ReplayError::invalid(
                "stacked state length",
                out.len().to_string(),
                "num_frames × frame_dim floats",
            ));
        }
        out[(n - 1) * d..].copy_from_slice(frame);
        if n == 1 {
            return Ok(());
        }
        let last = self.written.checked_sub(1).map(|g| self.slot_of(g));
        match last {
            Some(s) if self.episode_open && self.episode[s] == self.current_episode => {
                self.stack_at(s, n - 1, &mut out[..(n - 1) * d]);
            }
            _ => out[..(n - 1) * d].fill(0.0),
        }
        Ok(())
    }

    /// Fills `out` with `out.batch` transitions drawn with `key`. Uniform sampling draws without
    /// replacement and errors when fewer transitions than rows are stored; prioritised
    /// sampling draws with replacement.
    pub fn sample(&self, key: Key, out: &mut FrameBatch) -> Result<(), ReplayError> {
        let b = out.batch;
        self.sample_rows(key, out, 0, b)
    }

    /// Fills rows `start..start + count` of `out` (the rest untouched), as
    /// [`FrameReplay::sample`] does for all rows: one batch can draw from several buffers
    /// (e.g. one per world). Importance weights are normalised over these rows.
    pub fn sample_rows(
        &self,
        key: Key,
        out: &mut FrameBatch,
        start: usize,
        count: usize,
    ) -> Result<(), ReplayError> {
        let b = out.batch;
        let sd = self.state_dim();
        if out.states.len() != b * sd || out.next_states.len() != b * sd {
            return Err(ReplayError::invalid(
                "batch buffers",
                format!("{} floats for {b} rows", out.states.len()),
                "FrameBatch::new(batch, num_frames × frame_dim)",
            ));
        }
        if start + count > b {
            return Err(ReplayError::invalid(
                "rows",
                format!("{start}..{}", start + count),
                "inside the batch",
            ));
        }
        let needed = if self.cfg.prioritized.is_some() { 1 } else { count.max(1) };
        if self.valid < needed {
            return Err(ReplayError::invalid(
                "batch",
                count.to_string(),
                "at most the number of stored transitions (uniform sampling draws \
                           without replacement; prioritised sampling needs at least one)",
            ));
        }
        let mut rng = key.rng();
        let total = self.tree[1];
        let n_valid = self.valid as f64;
        let mut max_w = 0.0f64;
        for r in start..start + count {
            let slot = loop {
                let s = self.find(rng.uniform_f64());
                if self.cfg.prioritized.is_some() || !out.slots[start..r].contains(&s) {
                    break s;
                }
            };
            out.slots[r] = slot;
            if let Some(p) = &self.cfg.prioritized {
                let prob = self.tree[slot + self.leaves] / total;
                let w = (n_valid * prob).powf(-p.beta);
                out.weights[r] = w as f32;
                max_w = max_w.max(w);
            } else {
                out.weights[r] = 1.0;
            }
            self.fill_row(slot, r, out);
        }
        if self.cfg.prioritized.is_some() && max_w > 0.0 {
            for w in &mut out.weights[start..start + count] {
                *w = (*w as f64 / max_w) as f32;
            }
        }
        Ok(())
    }

    fn fill_row(&self, slot: usize, r: usize, out: &mut FrameBatch) {
        let sd = self.state_dim();
        let c = self.cfg.capacity;
        self.stack_at(slot, self.cfg.num_frames, &mut out.states[r * sd..(r + 1) * sd]);
        let mut ret = 0.0f64;
        let mut disc = 1.0f64;
        let mut cur = slot;
        let mut term = false;
        let mut trunc = false;
        for _ in 0..self.cfg.n_step {
            let next = (cur + 1) % c;
            ret += disc * self.rewards[cur] as f64;
            disc *= self.cfg.gamma;
            term |= self.terminated[cur];
            trunc |= self.truncated[cur];
            cur = next;
            // Stop at the episode's end or where the next frame or transition is missing.
            let has_next =
                self.actions[cur] != NO_ACTION && self.same_run((cur + 1) % c, 1) == Some(cur);
            if term || trunc || !has_next {
                break;
            }
        }
        self.stack_at(cur, self.cfg.num_frames, &mut out.next_states[r * sd..(r + 1) * sd]);
        out.actions[r] = self.actions[slot];
        out.returns[r] = ret as f32;
        out.discounts[r] = if term { 0.0 } else { disc as f32 };
        out.terminated[r] = term;
        out.truncated[r] = trunc;
    }

    /// Sets the priorities of sampled slots from their TD errors (prioritised mode; a no-op
    /// under uniform sampling). Slots that no longer start a transition are skipped.
    pub fn update_priorities(&mut self, slots: &[usize], td: &[f64]) -> Result<(), ReplayError> {
        let Some(p) = self.cfg.prioritized.clone() else { return Ok(()) };
        if slots.len() != td.len() {
            return Err(ReplayError::invalid("td errors", td.len().to_string(), "one per slot"));
        }
        for (&s, &e) in slots.iter().zip(td) {
            if !e.is_finite() {
                return Err(ReplayError::invalid("td error", e.to_string(), "a finite number"));
            }
            if s >= self.cfg.capacity || self.tree[s + self.leaves] <= 0.0 {
                continue;
            }
            let pr = (e.abs() + p.eps).powf(p.alpha);
            self.max_priority = self.max_priority.max(pr);
            self.set_priority(s, pr);
        }
        Ok(())
    }
}

/// Everything a [`FrameReplay`] holds, as named f64 arrays and scalars, for checkpoints
/// (every value is exact in f64: frames are f32, counters stay below 2⁵³).
#[derive(Clone, Debug, PartialEq)]
pub struct FrameReplaySnapshot {
    /// `(name, values)` of the slot arrays.
    pub arrays: Vec<(&'static str, Vec<f64>)>,
    /// `(name, value)` of the counters.
    pub scalars: Vec<(&'static str, f64)>,
}

impl FrameReplay {
    /// The buffer's contents for a checkpoint.
    pub fn snapshot(&self) -> FrameReplaySnapshot {
        let f = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let b = |v: &[bool]| v.iter().map(|&x| f64::from(u8::from(x))).collect::<Vec<f64>>();
        let u = |v: &[u64]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let c = self.cfg.capacity;
        let arrays = vec![
            ("frames", f(&self.frames)),
            ("actions", self.actions.iter().map(|&a| a as f64).collect()),
            ("rewards", f(&self.rewards)),
            ("terminated", b(&self.terminated)),
            ("truncated", b(&self.truncated)),
            ("episode", u(&self.episode)),
            ("stamp", u(&self.stamp)),
            ("priority", self.tree[self.leaves..self.leaves + c].to_vec()),
        ];
        let scalars = vec![
            ("written", self.written as f64),
            ("current_episode", self.current_episode as f64),
            ("episode_open", f64::from(u8::from(self.episode_open))),
            ("max_priority", self.max_priority),
            ("valid", self.valid as f64),
        ];
        FrameReplaySnapshot { arrays, scalars }
    }

    /// Rebuilds a buffer from [`FrameReplay::snapshot`]'s arrays (`array(name)`) and scalars
    /// (`scalar(name)`); errors name what is missing or the wrong size.
    pub fn restore(
        cfg: FrameReplayConfig,
        array: impl Fn(&str) -> Option<Vec<f64>>,
        scalar: impl Fn(&str) -> Option<f64>,
    ) -> Result<Self, ReplayError> {
        let mut r = FrameReplay::new(cfg)?;
        let c = r.cfg.capacity;
        let get = |name: &'static str, len: usize| -> Result<Vec<f64>, ReplayError> {
            match array(name) {
                Some(v) if v.len() == len => Ok(v),
                Some(v) => Err(ReplayError::invalid(
                    name,
                    format!("{} values", v.len()),
                    "one per slot (frame_dim per slot for frames) of this capacity",
                )),
                None => Err(ReplayError::invalid(name, "missing", "present in the snapshot")),
            }
        };
        let sc = |name: &'static str| -> Result<f64, ReplayError> {
            scalar(name).filter(|v| v.is_finite() && *v >= 0.0).ok_or(ReplayError::invalid(
                name,
                "missing or negative",
                "a non-negative number in the snapshot",
            ))
        };
        r.frames = get("frames", c * r.cfg.frame_dim)?.iter().map(|&x| x as f32).collect();
        r.actions = get("actions", c)?.iter().map(|&x| x as u32).collect();
        r.rewards = get("rewards", c)?.iter().map(|&x| x as f32).collect();
        r.terminated = get("terminated", c)?.iter().map(|&x| x != 0.0).collect();
        r.truncated = get("truncated", c)?.iter().map(|&x| x != 0.0).collect();
        r.episode = get("episode", c)?.iter().map(|&x| x as u64).collect();
        r.stamp = get("stamp", c)?.iter().map(|&x| x as u64).collect();
        let pr = get("priority", c)?;
        r.written = sc("written")? as u64;
        r.current_episode = sc("current_episode")? as u64;
        r.episode_open = sc("episode_open")? != 0.0;
        r.max_priority = sc("max_priority")?;
        for (s, &p) in pr.iter().enumerate() {
            if !(p.is_finite() && p >= 0.0) {
                return Err(ReplayError::invalid("priority", p.to_string(), "finite and >= 0"));
            }
            r.set_priority(s, p);
        }
        if r.valid as f64 != sc("valid")? {
            return Err(ReplayError::invalid(
                "valid",
                sc("valid")?.to_string(),
                "the number of slots with a positive priority",
            ));
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer() -> FrameReplay {
        FrameReplay::new(FrameReplayConfig {
            capacity: 8,
            frame_dim: 1,
            num_frames: 2,
            n_step: 2,
            gamma: 0.5,
            prioritized: None,
        })
        .unwrap()
    }

    /// One terminated episode, worked by hand: frames 1, 2, 3 with actions 0, 1, 2, rewards
    /// 1, 2, 4, the last step terminating, then the final frame 4. Two-frame states never
    /// reach before the episode's start; two-step targets stop at its end.
    #[test]
    fn stacked_n_step_transitions_of_one_episode_by_hand() {
        let mut r = buffer();
        r.begin_episode();
        r.push(&[1.0], 0, 1.0, false, false).unwrap();
        r.push(&[2.0], 1, 2.0, false, false).unwrap();
        let mut now = [0.0; 2];
        r.stack_current(&[9.0], &mut now).unwrap();
        assert_eq!(now, [2.0, 9.0], "acting sees the last stored frame, then the new one");
        r.push(&[3.0], 2, 4.0, true, false).unwrap();
        r.push_final(&[4.0]).unwrap();
        assert_eq!(r.num_transitions(), 3);
        let mut b = FrameBatch::new(3, 2);
        r.sample(Key::new(0), &mut b).unwrap();
        // (action, state, next state, return, discount, terminated) per row.
        type Row = (u32, Vec<f32>, Vec<f32>, f32, f32, bool);
        let mut rows: Vec<Row> = (0..3)
            .map(|i| {
                let s = b.states[2 * i..2 * i + 2].to_vec();
                let n = b.next_states[2 * i..2 * i + 2].to_vec();
                (b.actions[i], s, n, b.returns[i], b.discounts[i], b.terminated[i])
            })
            .collect();
        rows.sort_by_key(|r| r.0);
        assert_eq!(rows[0], (0, vec![0.0, 1.0], vec![2.0, 3.0], 1.0 + 0.5 * 2.0, 0.25, false));
        assert_eq!(rows[1], (1, vec![1.0, 2.0], vec![3.0, 4.0], 2.0 + 0.5 * 4.0, 0.0, true));
        assert_eq!(rows[2], (2, vec![2.0, 3.0], vec![3.0, 4.0], 4.0, 0.0, true));
        assert!(b.weights.iter().all(|&w| w == 1.0) && !b.truncated.iter().any(|&t| t));
        // Uniform sampling is without replacement: a fourth row has nothing to draw.
        assert!(r.sample(Key::new(0), &mut FrameBatch::new(4, 2)).is_err());
    }

    #[test]
    fn bad_frames_rewards_and_orders_are_errors_that_store_nothing() {
        let mut r = buffer();
        let e = r.push(&[1.0], 0, 0.0, false, false).unwrap_err().to_string();
        assert!(e.contains("begin_episode"), "{e}");
        r.begin_episode();
        assert!(r.push(&[1.0, 2.0], 0, 0.0, false, false).is_err());
        assert!(r.push(&[1.0], 0, f32::NAN, false, false).is_err());
        assert!(r.push(&[1.0], u32::MAX, 0.0, false, false).is_err());
        assert!(r.stack_current(&[1.0], &mut [0.0; 3]).is_err());
        assert_eq!((r.len(), r.num_transitions()), (0, 0));
        let bad = FrameReplayConfig { capacity: 3, ..r.config().clone() };
        assert!(FrameReplay::new(bad).unwrap_err().to_string().contains("capacity"));
    }
}
