//! Counter-based keys on the SplitMix64 mixer.

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The SplitMix64 finaliser (Steele, Lea and Flood, 2014): a bijective 64-bit mixer.
#[inline(always)]
const fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A counter-based random key: a value, not a generator.
///
/// Children are derived with [`Key::fold_in`] (an index, step or tag) or [`Key::split`];
/// sequential draws inside one kernel come from [`Key::rng`]. Two keys that differ in any
/// derivation step give statistically independent streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Key(u64);

impl Key {
    /// The root key of a run.
    pub const fn new(seed: u64) -> Key {
        Key(mix(seed.wrapping_add(GOLDEN)))
    }

    /// The child key identified by `data` (an index, a step, a tag).
    #[inline(always)]
    pub const fn fold_in(self, data: u64) -> Key {
        // One SplitMix step from the parent's (already mixed) state, offset by the data.
        Key(mix(self.0.wrapping_add((data ^ 0x632b_e59b_d9b4_e019).wrapping_mul(GOLDEN))))
    }

    /// `N` independent children, `[self.fold_in(u64::MAX - 0), self.fold_in(u64::MAX - 1), ...]`.
    #[inline]
    pub fn split<const N: usize>(self) -> [Key; N] {
        std::array::from_fn(|i| self.fold_in(u64::MAX - i as u64))
    }

    /// The raw 64-bit value (for checkpoints and debugging).
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Rebuilds a key from [`Key::raw`].
    pub const fn from_raw(raw: u64) -> Key {
        Key(raw)
    }

    /// A sequential generator seeded by this key.
    #[inline(always)]
    pub const fn rng(self) -> Rng {
        Rng { state: self.0 }
    }
}

/// Sequential draws inside one row (SplitMix64). Owned samplers, so values never change
/// under a dependency update.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The next 64 random bits.
    #[inline(always)]
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix(self.state)
    }

    /// Uniform in `[0, n)` by Lemire's multiply-shift (bias below 2^-32 for n < 2^32).
    /// Returns 0 when `n == 0`.
    #[inline(always)]
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }

    /// Uniform in `[0, 1)` with 24 bits of resolution.
    #[inline(always)]
    pub fn uniform_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }

    /// Uniform in `[0, 1)` with 53 bits of resolution.
    #[inline(always)]
    pub fn uniform_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p`.
    #[inline(always)]
    pub fn bernoulli(&mut self, p: f32) -> bool {
        self.uniform_f32() < p
    }

    /// A standard normal draw (Box–Muller, one value per two uniforms).
    #[inline]
    pub fn normal_f64(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform_f64(); // (0, 1]
        let u2 = self.uniform_f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Uniform index into a slice of weights (categorical). Weights must be finite and
    /// non-negative with a positive sum; otherwise returns 0.
    pub fn categorical(&mut self, weights: &[f32]) -> usize {
        let total: f32 = weights.iter().sum();
        if !(total > 0.0 && total.is_finite()) {
            return 0;
        }
        let mut u = self.uniform_f32() * total;
        for (i, &w) in weights.iter().enumerate() {
            if u < w {
                return i;
            }
            u -= w;
        }
        weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keys_are_values() {
        let k = Key::new(7);
        assert_eq!(k.fold_in(3), k.fold_in(3));
        assert_ne!(k.fold_in(3), k.fold_in(4));
        let [a, b] = k.split();
        assert_ne!(a, b);
        assert_ne!(Key::new(1), Key::new(2));
    }

    #[test]
    fn uniform_moments() {
        let mut r = Key::new(1).rng();
        let n = 100_000;
        let mean: f64 = (0..n).map(|_| r.uniform_f64()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let m: f64 = (0..n).map(|_| r.normal_f64()).sum::<f64>() / n as f64;
        assert!(m.abs() < 0.02, "{m}");
    }

    proptest! {
        #[test]
        fn below_in_range(seed: u64, n in 1u32..10_000) {
            let mut r = Key::new(seed).rng();
            for _ in 0..32 { prop_assert!(r.below(n) < n); }
        }

        #[test]
        fn categorical_picks_positive_weight(seed: u64, w in proptest::collection::vec(0.0f32..3.0, 1..8)) {
            prop_assume!(w.iter().sum::<f32>() > 0.0);
            let i = Key::new(seed).rng().categorical(&w);
            prop_assert!(w[i] > 0.0);
        }
    }
}
