//! Standard normals in bulk (MPPI's sampling noise, the nn crate's parameter noise): the one
//! counter-based vectorised sampler, written so the compiler vectorises the whole
//! loop: no table, no branch, no state carried between iterations.
//!
//! Value `i` of the first half and value `i` of the second half are the Box–Muller pair of
//! the 64-bit draw `key.fold_in(i)` (counter-based, so every iteration is independent):
//! u₁ = (top 24 bits + 1)·2⁻²⁴ ∈ (0, 1], u₂ = (low 24 bits)·2⁻²⁴ ∈ [0, 1),
//! r = √(−2 ln u₁), (r cos 2πu₂, r sin 2πu₂). The logarithm, sine and cosine are polynomial
//! approximations in f32 (errors below 1e-6 of the result's scale, tested against f64). The 24-bit
//! u₁ bounds |z| by √(48 ln 2) ≈ 5.77: the tail beyond it (probability 8·10⁻⁹) is not drawn.
//! An odd last value takes the cosine of one more draw.

use crate::key::Key;
use crate::simd::FromF32;

const TWO_POW_M24: f32 = 1.0 / (1u32 << 24) as f32;

/// Fills `out` with standard normals from `key` (see the module notes for the definition),
/// computed in f32 and stored as `T`. Runs in the best vector extension the CPU has; the
/// values do not depend on which.
pub fn fill_normal_f32<T: FromF32>(key: Key, out: &mut [T]) {
    let half = out.len() / 2;
    let (a, rest) = out.split_at_mut(half);
    let (b, last) = rest.split_at_mut(half);
    crate::simd::dispatch(Pairs { key, a, b });
    if let Some(v) = last.first_mut() {
        *v = T::from_f32(pair(key.fold_in(half as u64).raw()).0);
    }
}

/// The loop over the pairs as a [`crate::simd::WithSimd`] operation: monomorphised inside the
/// dispatcher's target-feature function with everything it calls inlined, so it vectorises
/// (a closure this size is not inlined there and would stay scalar).
struct Pairs<'a, T> {
    key: Key,
    a: &'a mut [T],
    b: &'a mut [T],
}

impl<T: FromF32> crate::simd::WithSimd for Pairs<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: crate::simd::Simd>(self, _simd: S) {
        for (i, (x, y)) in self.a.iter_mut().zip(self.b.iter_mut()).enumerate() {
            let (c, s) = pair(self.key.fold_in(i as u64).raw());
            *x = T::from_f32(c);
            *y = T::from_f32(s);
        }
    }
}

/// The Box–Muller pair of one 64-bit draw. Integer bit operations and selects only (no
/// float-to-integer conversion, no branch), so the loop around it vectorises.
#[inline(always)]
fn pair(u: u64) -> (f32, f32) {
    let u1 = ((u >> 40) as u32 + 1) as f32 * TWO_POW_M24;
    let r = (-2.0 * ln_unit(u1)).sqrt();
    let (s, c) = sincos_turns(u as u32 & 0x00ff_ffff);
    (r * c, r * s)
}

/// ln x for x in (0, 1] (normal f32 values): x = m·2ᵉ with m in [√½, √2), then
/// ln m = 2 atanh(t), t = (m − 1)/(m + 1), |t| ≤ 0.172, by its odd series to t⁹
/// (truncation below 3·10⁻¹⁰).
#[inline(always)]
fn ln_unit(x: f32) -> f32 {
    let bits = x.to_bits();
    // Mantissa in [1, 2) and exponent; move m above √2 down by one octave.
    let m0 = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    let e0 = ((bits >> 23) & 0xff) as i32 - 127;
    let big = m0 > std::f32::consts::SQRT_2;
    let m = if big { m0 * 0.5 } else { m0 };
    let e = if big { e0 + 1 } else { e0 };
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let p = 1.0 + t2 * (1.0 / 3.0 + t2 * (1.0 / 5.0 + t2 * (1.0 / 7.0 + t2 * (1.0 / 9.0))));
    2.0 * t * p + e as f32 * std::f32::consts::LN_2
}

/// (sin 2πu, cos 2πu) for u = `v`·2⁻²⁴, `v` < 2²⁴: the quadrant q is `v`'s top two bits,
/// the angle θ ∈ [−π/4, π/4) is measured from the quadrant's middle, sine and cosine of θ
/// come from Taylor polynomials (to θ⁹ and θ¹⁰; truncation below 2·10⁻⁹), then they are
/// rotated by π/4 and q quarter turns.
#[inline(always)]
fn sincos_turns(v: u32) -> (f32, f32) {
    let q = v >> 22;
    let frac = (v & 0x003f_ffff) as f32 * (1.0 / (1u32 << 22) as f32);
    let th = (frac - 0.5) * std::f32::consts::FRAC_PI_2;
    let t2 = th * th;
    let s = th
        * (1.0
            + t2 * (-1.0 / 6.0
                + t2 * (1.0 / 120.0 + t2 * (-1.0 / 5040.0 + t2 * (1.0 / 362_880.0)))));
    let c = 1.0
        + t2 * (-0.5
            + t2 * (1.0 / 24.0
                + t2 * (-1.0 / 720.0 + t2 * (1.0 / 40_320.0 + t2 * (-1.0 / 3_628_800.0)))));
    // Angle = qπ/2 + π/4 + θ: sin and cos of π/4 + θ first.
    let h = std::f32::consts::FRAC_1_SQRT_2;
    let (s1, c1) = (h * (s + c), h * (c - s));
    // Rotate by q quarter turns: (s, c) → (c, −s) → (−s, −c) → (−c, s).
    let odd = q & 1 == 1;
    let (sa, ca) = if odd { (c1, s1) } else { (s1, c1) };
    let sin = if q & 2 == 2 { -sa } else { sa };
    let cos = if (q ^ (q >> 1)) & 1 == 1 { -ca } else { ca };
    (sin, cos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_and_sincos_match_f64() {
        let mut worst_ln = 0.0f64;
        let mut worst_sc = 0.0f64;
        for k in 0..(1u32 << 16) {
            // Every 256th 24-bit grid point, plus the ends.
            let u = ((k << 8) + 1) as f32 * TWO_POW_M24;
            let got = ln_unit(u) as f64;
            let want = (u as f64).ln();
            worst_ln = worst_ln.max((got - want).abs() / want.abs().max(1.0));
            let v = (k << 8) | (k & 0xff);
            let (s, c) = sincos_turns(v);
            let a = std::f64::consts::TAU * v as f64 / (1u64 << 24) as f64;
            worst_sc = worst_sc.max((s as f64 - a.sin()).abs()).max((c as f64 - a.cos()).abs());
        }
        assert!(worst_ln < 1e-6, "ln relative error {worst_ln}");
        assert!(worst_sc < 1e-6, "sin/cos error {worst_sc}");
        assert_eq!(ln_unit(1.0), 0.0);
        let top = TWO_POW_M24;
        assert!(((ln_unit(top) as f64) - (top as f64).ln()).abs() < 1e-5);
    }

    #[test]
    fn values_follow_the_definition() {
        let key = Key::new(5);
        for n in [0usize, 1, 2, 7, 1000] {
            let mut v = vec![f32::NAN; n];
            fill_normal_f32(key, &mut v);
            let mut v64 = vec![f64::NAN; n];
            fill_normal_f32(key, &mut v64);
            assert!(
                v.iter().zip(&v64).all(|(&a, &b)| a as f64 == b),
                "n {n}: f64 output is the f32 values"
            );
            let half = n / 2;
            for i in 0..half {
                let u = key.fold_in(i as u64).raw();
                let u1 = ((u >> 40) + 1) as f64 / (1u64 << 24) as f64;
                let u2 = (u & 0x00ff_ffff) as f64 / (1u64 << 24) as f64;
                let r = (-2.0 * u1.ln()).sqrt();
                let a = std::f64::consts::TAU * u2;
                assert!((v[i] as f64 - r * a.cos()).abs() < 1e-5, "n {n}, i {i}");
                assert!((v[half + i] as f64 - r * a.sin()).abs() < 1e-5, "n {n}, i {i}");
            }
            assert!(v.iter().all(|x| x.is_finite()), "n {n}");
        }
    }

    #[test]
    fn moments_tails_and_independence() {
        let mut v = vec![0.0f32; 400_001];
        fill_normal_f32(Key::new(9), &mut v);
        let n = v.len() as f64;
        let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
        let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        let kurt = v.iter().map(|&x| (x as f64 - mean).powi(4)).sum::<f64>() / n / (var * var);
        assert!(mean.abs() < 0.006, "mean {mean}");
        assert!((var - 1.0).abs() < 0.01, "variance {var}");
        assert!((kurt - 3.0).abs() < 0.05, "kurtosis {kurt}");
        let tail = v.iter().filter(|x| x.abs() > 3.0).count() as f64 / n;
        assert!((tail - 0.0027).abs() < 0.0004, "tail {tail}");
        // The two values of one draw are uncorrelated, and so are neighbours.
        let h = v.len() / 2;
        let c = (0..h).map(|i| v[i] as f64 * v[h + i] as f64).sum::<f64>() / h as f64;
        assert!(c.abs() < 0.01, "pair correlation {c}");
        let c = (1..h).map(|i| v[i] as f64 * v[i - 1] as f64).sum::<f64>() / h as f64;
        assert!(c.abs() < 0.01, "lag-1 correlation {c}");
        // Another key gives another sequence.
        let mut w = vec![0.0f32; 16];
        fill_normal_f32(Key::new(10), &mut w);
        assert_ne!(&w[..], &v[..16]);
    }
}
