//! [`EpisodicReplay`]: whole episodes in one flat array (the crate page has the sampling
//! conventions), and the truncated geometric draws it samples offsets with.

use crate::error::ReplayError;
use kestrel_core::FromInvalid;
use kestrel_core::{Key, Rng};

/// Which reference's sampling rules to follow (see the crate docs; config spelling
/// `paper-code`, `asymexp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EpisodicRuleKind {
    /// ALLO's paper code (`laplacian_dual_dynamics`).
    #[default]
    PaperCode,
    /// The later `asymexp` re-implementation.
    Asymexp,
}

impl EpisodicRuleKind {
    /// The convention's default sampling discount.
    pub fn default_discount(self) -> f64 {
        match self {
            EpisodicRuleKind::PaperCode => 0.9,
            EpisodicRuleKind::Asymexp => 0.2,
        }
    }
}

/// Truncated geometric sample on `0..n` with `P(j) ∝ γʲ` by inverse CDF (γ in [0, 1]): one
/// uniform drawn from `rng`, none when the answer is certain (`n ≤ 1` or γ = 0).
#[inline]
pub fn discounted_sampling(rng: &mut Rng, n: usize, gamma: f64) -> usize {
    if n <= 1 || gamma <= 0.0 {
        return 0;
    }
    truncated_geometric(n, gamma, rng.uniform_f64())
}

/// The truncated geometric on `0..n` from a uniform `u` in `[0, 1)`, in both references'
/// arithmetic (numpy's `np.power` and `np.log`: libm's `pow` and `log`):
/// `⌊log(1 − (1 − γⁿ) u) / log γ⌋`; γ = 1 is `⌊n u⌋`, γ = 0 is 0. Clamped to `n − 1` (only
/// rounding at `u → 1` could reach `n`); `n = 0` gives 0.
#[inline]
pub fn truncated_geometric(n: usize, gamma: f64, u: f64) -> usize {
    TruncatedGeometric::new(gamma).draw(n, u)
}

/// [`truncated_geometric`] for one γ and many draws: `log γ` once, and no `pow` where γⁿ
/// cannot change the result.
///
/// Why: a batch of offsets from long episodes (asymexp: 1,000 steps at γ = 0.2) spent most of
/// its time in libm's `pow`, much of it underflowing to 0 by its slow path, and in the same
/// `log γ` again. Where `n log₂ γ < −64`, γⁿ is below 2⁻⁶⁴ and `1 − γⁿ` rounds to exactly 1
/// (anything under 2⁻⁵⁴ does), so γⁿ is taken as 0 with the same bits; the ten binades of
/// margin cover the rounding of `pow` and of `n log₂ γ`.
///
/// [`TruncatedGeometric::tabulated`] also keeps `γⁿ` for every horizon below the skip (up to
/// 4,096), computed by the same `pow`: a sampler kept for a whole run draws with no `pow` at all.
#[derive(Clone, Debug)]
pub struct TruncatedGeometric {
    gamma: f64,
    ln_gamma: f64,
    /// Horizons above which `1 − γⁿ` is 1 (`f64::INFINITY`: none).
    one_above: f64,
    /// `γⁿ` at `n = 0, 1, …` (`pow`'s values; empty unless tabulated).
    powers: Vec<f64>,
}

/// The most powers [`TruncatedGeometric::tabulated`] keeps (32 KiB).
const MAX_POWERS: usize = 4_096;

impl TruncatedGeometric {
    /// The sampler for discount `gamma`.
    pub fn new(gamma: f64) -> Self {
        let ln_gamma = gamma.ln();
        // n log₂ γ < −64 as n < −64 ln 2 / ln γ: one logarithm, as the free function had.
        let one_above = if gamma > 0.0 && gamma < 1.0 {
            -64.0 * std::f64::consts::LN_2 / ln_gamma
        } else {
            f64::INFINITY
        };
        TruncatedGeometric { gamma, ln_gamma, one_above, powers: Vec::new() }
    }

    /// [`TruncatedGeometric::new`] with `γⁿ` kept for each horizon up to the skip (at most
    /// 4,096 of them), for a sampler made once and used for many batches.
    pub fn tabulated(gamma: f64) -> Self {
        let mut t = Self::new(gamma);
        if gamma > 0.0 && gamma < 1.0 {
            let n = (t.one_above.min(MAX_POWERS as f64) as usize + 1).min(MAX_POWERS);
            t.powers = (0..n).map(|k| gamma.powf(k as f64)).collect();
        }
        t
    }

    /// The discount.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// The offset on `0..n` from the uniform `u` in `[0, 1)`.
    #[inline]
    pub fn draw(&self, n: usize, u: f64) -> usize {
        let gamma = self.gamma;
        if n <= 1 || gamma <= 0.0 {
            return 0;
        }
        let j = if gamma >= 1.0 {
            (n as f64 * u).floor()
        } else {
            let nf = n as f64;
            let gn = if nf > self.one_above {
                0.0
            } else {
                self.powers.get(n).copied().unwrap_or_else(|| gamma.powf(nf))
            };
            ((1.0 - (1.0 - gn) * u).ln() / self.ln_gamma).floor()
        };
        (j as usize).min(n - 1)
    }
}

/// Episodes of items `T` (e.g. state indices) in one flat array.
#[derive(Clone, Debug)]
pub struct EpisodicReplay<T> {
    items: Vec<T>,
    capacity: usize,
    start: Vec<u32>,
    len: Vec<u32>,
    /// Episodes with at least two states (the ones pairs come from).
    pairable: Vec<u32>,
}

impl<T: Copy> EpisodicReplay<T> {
    /// An empty buffer for up to `capacity` steps (allocated now).
    pub fn new(capacity: usize) -> Result<Self, ReplayError> {
        if capacity == 0 || capacity > u32::MAX as usize {
            return Err(ReplayError::invalid(
                "capacity",
                capacity.to_string(),
                "1 to 2^32 - 1 steps",
            ));
        }
        Ok(EpisodicReplay {
            items: Vec::with_capacity(capacity),
            capacity,
            start: Vec::new(),
            len: Vec::new(),
            pairable: Vec::new(),
        })
    }

    /// Appends one episode (its states in order); a full buffer is an error and keeps what
    /// it had.
    pub fn add_episode(&mut self, states: &[T]) -> Result<(), ReplayError> {
        if states.is_empty() {
            return Err(ReplayError::invalid("episode", "0 states", "at least one state"));
        }
        if self.items.len() + states.len() > self.capacity {
            return Err(ReplayError::Full {
                len: self.items.len(),
                capacity: self.capacity,
                episode: states.len(),
            });
        }
        let id = self.start.len() as u32;
        self.start.push(self.items.len() as u32);
        self.len.push(states.len() as u32);
        if states.len() >= 2 {
            self.pairable.push(id);
        }
        self.items.extend_from_slice(states);
        Ok(())
    }

    /// Steps stored.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Episodes stored.
    pub fn num_episodes(&self) -> usize {
        self.start.len()
    }

    /// Episode `e`'s states.
    pub fn episode(&self, e: usize) -> &[T] {
        let s = self.start[e] as usize;
        &self.items[s..s + self.len[e] as usize]
    }

    /// Fills `states` and `future` with pairs `(s_i, s_{i+k})` (the same rule in both
    /// conventions, see the crate docs; the discount differs by default), one per
    /// output slot, from `key` (slot `j` draws from `key.fold_in(j)`, so any batch split gives
    /// the same pairs).
    pub fn sample_pairs(
        &self,
        key: Key,
        discount: f64,
        states: &mut [T],
        future: &mut [T],
    ) -> Result<(), ReplayError> {
        if self.pairable.is_empty() {
            return Err(ReplayError::invalid(
                "buffer",
                format!("{} episodes", self.num_episodes()),
                "at least one episode of two or more states to sample pairs",
            ));
        }
        if !(0.0..=1.0).contains(&discount) || states.len() != future.len() {
            return Err(ReplayError::invalid(
                "discount/batch",
                format!("{discount} / {} and {}", states.len(), future.len()),
                "a discount in [0, 1] and equal output lengths",
            ));
        }
        let np = self.pairable.len() as u32;
        for (j, (s, f)) in states.iter_mut().zip(future.iter_mut()).enumerate() {
            let mut r = key.fold_in(j as u64).rng();
            let e = self.pairable[r.below(np) as usize] as usize;
            let (st, h) = (self.start[e] as usize, self.len[e] as usize);
            // i uniform on 0..=H−2, offset 1..=H−1−i (the same in both conventions).
            let i = r.below(h as u32 - 1) as usize;
            let k = discounted_sampling(&mut r, h - 1 - i, discount) + 1;
            *s = self.items[st + i];
            *f = self.items[st + i + k];
        }
        Ok(())
    }

    /// Fills `out` with independent states: a uniform episode, then a uniform step of it
    /// (`PaperCode`: all `H` states; `Asymexp`: the first `H − 1`, or the only one).
    pub fn sample_states(
        &self,
        key: Key,
        conv: EpisodicRuleKind,
        out: &mut [T],
    ) -> Result<(), ReplayError> {
        if self.is_empty() {
            return Err(ReplayError::invalid("buffer", "empty", "at least one episode"));
        }
        let ne = self.num_episodes() as u32;
        for (j, o) in out.iter_mut().enumerate() {
            let mut r = key.fold_in(j as u64).rng();
            let e = r.below(ne) as usize;
            let (st, h) = (self.start[e] as usize, self.len[e] as usize);
            let span = match conv {
                EpisodicRuleKind::PaperCode => h,
                EpisodicRuleKind::Asymexp => (h - 1).max(1),
            };
            *o = self.items[st + r.below(span as u32) as usize];
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distribution's edges: one choice gives 0, γ = 1 is uniform, γ = 0 always 0, the
    /// draw stays below `n` as `u → 1`, and a small γ puts nearly all mass on offset 0.
    #[test]
    fn the_truncated_geometric_at_its_edges() {
        for gamma in [0.0, 0.2, 0.9, 1.0] {
            assert_eq!(truncated_geometric(0, gamma, 0.7), 0);
            assert_eq!(truncated_geometric(1, gamma, 0.7), 0);
            assert!(truncated_geometric(50, gamma, 1.0 - f64::EPSILON) < 50, "{gamma}");
        }
        assert_eq!(truncated_geometric(10, 0.0, 0.99), 0);
        assert_eq!(truncated_geometric(10, 1.0, 0.55), 5);
        // P(0) = (1 − γ) / (1 − γ¹⁰) at γ = 0.2: about 0.8.
        assert_eq!(truncated_geometric(10, 0.2, 0.79), 0);
        assert_eq!(truncated_geometric(10, 0.2, 0.81), 1);
        assert_eq!(EpisodicRuleKind::PaperCode.default_discount(), 0.9);
        assert_eq!(EpisodicRuleKind::Asymexp.default_discount(), 0.2);
    }

    /// Bad sizes and an overfull buffer are refused by name, and a refused episode leaves the
    /// buffer as it was.
    #[test]
    fn episodes_are_checked_and_a_full_buffer_keeps_its_contents() {
        assert!(EpisodicReplay::<u32>::new(0).unwrap_err().to_string().contains("capacity"));
        let mut r = EpisodicReplay::<u32>::new(5).unwrap();
        assert!(r.add_episode(&[]).unwrap_err().to_string().contains("episode"));
        r.add_episode(&[1, 2, 3]).unwrap();
        let e = r.add_episode(&[4, 5, 6]).unwrap_err();
        assert_eq!(e, ReplayError::Full { len: 3, capacity: 5, episode: 3 });
        assert_eq!((r.len(), r.num_episodes(), r.episode(0)), (3, 1, &[1, 2, 3][..]));
        let (mut s, mut f) = ([0u32; 4], [0u32; 3]);
        let e = r.sample_pairs(Key::new(0), 0.9, &mut s, &mut f).unwrap_err();
        assert!(e.to_string().contains("discount/batch"), "{e}");
        let mut one = EpisodicReplay::<u32>::new(2).unwrap();
        one.add_episode(&[7]).unwrap();
        let e = one.sample_pairs(Key::new(0), 0.9, &mut [0], &mut [0]).unwrap_err();
        assert!(e.to_string().contains("two or more states"), "{e}");
    }
}
