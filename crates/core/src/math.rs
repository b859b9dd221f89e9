//! Inlinable elementary functions for hot loops.
//!
//! Without SSE4.1 in the target, `f64::floor` is an out-of-line libm call; in an MPPI
//! rollout that calls it per transition (angle wrapping) the call showed up at ~9% of a
//! command. [`floor`] inlines. (An inlined polynomial `sin` was tried and measured no faster
//! than glibc's `sin` here, so there is none.)

/// `⌊x⌋` without a libm call (falls back to `std` for |x| ≥ 2⁵² and non-finite x, where
/// `x` is already integral or not a number).
#[inline(always)]
pub fn floor(x: f64) -> f64 {
    if x.is_nan() || x.abs() >= 4_503_599_627_370_496.0 {
        return x.floor();
    }
    let t = x as i64 as f64;
    // copysign keeps floor(−0.0) = −0.0 (the result has x's sign in every other case too).
    (if t > x { t - 1.0 } else { t }).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_matches_std() {
        for x in [-2.5, -2.0, -0.5, -0.0, 0.0, 0.5, 2.0, 2.5, 1e15 + 0.5, -1e15 - 0.5, 1e300] {
            assert_eq!(floor(x).to_bits(), x.floor().to_bits(), "{x}");
        }
        let mut r = crate::key::Key::new(5).rng();
        for _ in 0..100_000 {
            let x = 1e6 * (2.0 * r.uniform_f64() - 1.0);
            assert_eq!(floor(x), x.floor(), "{x}");
        }
        assert!(floor(f64::NAN).is_nan());
        assert_eq!(floor(f64::NEG_INFINITY), f64::NEG_INFINITY);
    }
}
