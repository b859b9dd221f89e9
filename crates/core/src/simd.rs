//! Lane-wise arithmetic for batched kernels: the run-time vector-extension dispatcher, the
//! [`Real`] scalar (f64 or f32) that batched physics is written over once, and branch-free
//! polynomial `sin`/`cos`/`exp`/`floor` in f32 that the compiler vectorises.
//!
//! # Dispatch
//!
//! [`dispatch`] runs a [`WithSimd`] operation compiled for the best extension the CPU has
//! (AVX-512, AVX2 + FMA, or the baseline: SSE2 on x86-64, NEON on AArch64), chosen at run time,
//! so one binary runs on any x86-64 and on ARM. The loops inside are plain Rust over lanes that
//! the compiler vectorises for that extension. Rust never contracts `a * b + c` into an FMA on
//! its own, and element-wise IEEE operations round the same at any vector width, so the
//! extension chosen never changes a value: the scalar fallback gives the same bits.
//!
//! # f32 functions and their errors
//!
//! | function | inputs | max error (tested against f64 `std`) |
//! |---|---|---|
//! | [`sin_cos_f32`] | \|x\| ≤ 10⁴ | 2.5·10⁻⁷ absolute + \|x\|·2⁻²⁴ (the rounding of x itself) |
//! | [`exp_f32`] | −87 ≤ x ≤ 88 | 3·10⁻⁷ relative (below −87: e⁻⁸⁷; above 88: e⁸⁸) |
//! | [`floor_f32`] | all | exact |
//!
//! Outside |x| ≤ 10⁴ [`sin_cos_f32`] still returns values in [−1, 1] (for |x| < 2²² π/2) but
//! loses accuracy with the argument's own f32 resolution; non-finite inputs give NaN.

pub use pulp::{Simd, WithSimd};
use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// Runs `op` compiled for the best vector extension this CPU has (see the module notes). An
/// operation's `with_simd` is `#[inline(always)]` into the dispatcher's target-feature function,
/// so loops of any size inside it, and the `#[inline(always)]` functions they call, vectorise.
#[inline(always)]
pub fn dispatch<Op: WithSimd>(op: Op) -> Op::Output {
    pulp::Arch::new().dispatch(op)
}

/// A value stored from an f32 result (f32 itself, or f64 exactly).
pub trait FromF32: Copy {
    /// `v`, exactly.
    fn from_f32(v: f32) -> Self;
}

impl FromF32 for f32 {
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
}

impl FromF32 for f64 {
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v as f64
    }
}

/// The one scalar trait: `f64` or `f32`, which batched physics, the lane kernels and every
/// network of `kestrel-nn` are written over once.
///
/// Two families of functions, for two kinds of caller:
/// - the lane functions `sin`, `cos`, `exp_lanes`, `floor` and `clamp`: in f64 `std`'s (and
///   [`crate::math::floor`]), bit-exact with the scalar path; in f32 this module's branch-free
///   polynomials, which the compiler vectorises (batched physics, MPPI's lanes);
/// - `exp`, `ln`, `tanh`, `sqrt`, `abs`: `std`'s in both precisions (networks, losses,
///   optimisers: the values PyTorch and JAX compute).
pub trait Real:
    Copy
    + Debug
    + Default
    + PartialOrd
    + Send
    + Sync
    + 'static
    + FromF32
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Name in safetensors headers (`F32`, `F64`).
    const DTYPE: &'static str;
    /// Bytes per value.
    const BYTES: usize;
    /// The smallest positive normal value (`f32::MIN_POSITIVE`, `f64::MIN_POSITIVE`); below
    /// it values are subnormal, which Intel cores compute slowly.
    const MIN_POSITIVE: Self;
    /// `v` rounded to this precision (constants and f64 inputs).
    fn from_f64(v: f64) -> Self;
    /// As f64 (exact).
    fn to_f64(self) -> f64;
    /// Sine (a lane function).
    fn sin(self) -> Self;
    /// Cosine (a lane function).
    fn cos(self) -> Self;
    /// eˣ as a lane function (f32: [`exp_f32`]).
    fn exp_lanes(self) -> Self;
    /// ⌊x⌋ (a lane function).
    fn floor(self) -> Self;
    /// `self` limited to `[lo, hi]` (`std`'s `clamp`: NaN stays NaN; a lane function).
    fn clamp(self, lo: Self, hi: Self) -> Self;
    /// eˣ (`std`'s).
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Whether finite.
    fn is_finite(self) -> bool;
    /// Little-endian bytes appended to `out`.
    fn write_le(self, out: &mut Vec<u8>);
    /// From little-endian bytes (`BYTES` of them).
    fn read_le(b: &[u8]) -> Self;
}

/// What both precisions share: constants, conversions, `std`'s functions and bytes.
macro_rules! real_common {
    ($t:ty, $name:literal) => {
        const ZERO: Self = 0.0;
        const ONE: Self = 1.0;
        const DTYPE: &'static str = $name;
        const BYTES: usize = std::mem::size_of::<$t>();
        const MIN_POSITIVE: Self = <$t>::MIN_POSITIVE;
        #[inline(always)]
        fn from_f64(v: f64) -> Self {
            v as $t
        }
        #[inline(always)]
        fn to_f64(self) -> f64 {
            self as f64
        }
        #[inline(always)]
        fn exp(self) -> Self {
            <$t>::exp(self)
        }
        #[inline(always)]
        fn ln(self) -> Self {
            <$t>::ln(self)
        }
        #[inline(always)]
        fn tanh(self) -> Self {
            <$t>::tanh(self)
        }
        #[inline(always)]
        fn sqrt(self) -> Self {
            <$t>::sqrt(self)
        }
        #[inline(always)]
        fn abs(self) -> Self {
            <$t>::abs(self)
        }
        #[inline(always)]
        fn is_finite(self) -> bool {
            <$t>::is_finite(self)
        }
        fn write_le(self, out: &mut Vec<u8>) {
            out.extend_from_slice(&self.to_le_bytes());
        }
        fn read_le(b: &[u8]) -> Self {
            let mut a = [0u8; std::mem::size_of::<$t>()];
            a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
            <$t>::from_le_bytes(a)
        }
    };
}

impl Real for f64 {
    real_common!(f64, "F64");
    #[inline(always)]
    fn sin(self) -> Self {
        f64::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        f64::cos(self)
    }
    #[inline(always)]
    fn exp_lanes(self) -> Self {
        f64::exp(self)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        crate::math::floor(self)
    }
    #[inline(always)]
    fn clamp(self, lo: Self, hi: Self) -> Self {
        f64::clamp(self, lo, hi)
    }
}

impl Real for f32 {
    real_common!(f32, "F32");
    #[inline(always)]
    fn sin(self) -> Self {
        sin_cos_f32(self).0
    }
    #[inline(always)]
    fn cos(self) -> Self {
        sin_cos_f32(self).1
    }
    #[inline(always)]
    fn exp_lanes(self) -> Self {
        exp_f32(self)
    }
    #[inline(always)]
    fn floor(self) -> Self {
        floor_f32(self)
    }
    #[inline(always)]
    fn clamp(self, lo: Self, hi: Self) -> Self {
        clamp_f32(self, lo, hi)
    }
}

/// `v` limited to `[lo, hi]` by two selects: `std`'s `clamp` (NaN stays NaN) without its
/// bound assertion, so lane loops over it vectorise.
#[inline(always)]
pub fn clamp_f32(v: f32, lo: f32, hi: f32) -> f32 {
    let v = if v < lo { lo } else { v };
    if v > hi { hi } else { v }
}

/// 1.5·2²³: adding it rounds an f32 of magnitude below 2²² to an integer (to nearest, ties to
/// even), which then sits in the low mantissa bits.
const ROUND: f32 = 12_582_912.0;

/// (sin x, cos x) in f32, branch-free (selects and integer bit operations only). x is reduced
/// to r ∈ [−π/4, π/4] around the nearest multiple q of π/2 (π/2 split in three parts, so
/// q·π/2 is subtracted without rounding error for |q| < 2¹⁵), then Cephes' minimax
/// polynomials for `sinf`/`cosf` on r, rotated by q quarter turns.
// The constants as Cephes publishes them (rounded to f32 by the compiler).
#[allow(clippy::excessive_precision)]
#[inline(always)]
pub fn sin_cos_f32(x: f32) -> (f32, f32) {
    const P1: f32 = 1.570_312_5;
    const P2: f32 = 4.837_512_969_970_703e-4;
    const P3: f32 = 7.549_789_954_891_882e-8;
    let shifted = x * std::f32::consts::FRAC_2_PI + ROUND;
    let q = shifted.to_bits();
    let n = shifted - ROUND;
    let r = ((x - n * P1) - n * P2) - n * P3;
    let r2 = r * r;
    let s =
        r + r * r2 * (-1.666_665_461_1e-1 + r2 * (8.332_160_873_6e-3 + r2 * -1.951_529_589_1e-4));
    let c = 1.0 - 0.5 * r2
        + r2 * r2
            * (4.166_664_568_298_827e-2
                + r2 * (-1.388_731_625_493_765e-3 + r2 * 2.443_315_711_809_948e-5));
    // Quarter turns: q odd swaps sine and cosine; the sine is negated for q ≡ 2, 3 (mod 4),
    // the cosine for q ≡ 1, 2.
    let odd = q & 1 == 1;
    let (sa, ca) = if odd { (c, s) } else { (s, c) };
    let sin = f32::from_bits(sa.to_bits() ^ ((q & 2) << 30));
    let cos = f32::from_bits(ca.to_bits() ^ ((q.wrapping_add(1) & 2) << 30));
    (sin, cos)
}

/// eˣ in f32, branch-free: x limited to [−87, 88], n = round(x / ln 2), r = x − n ln 2 (ln 2
/// in two parts), Cephes' `expf` polynomial for eʳ, scaled by 2ⁿ through the exponent bits.
// The constants as Cephes publishes them (rounded to f32 by the compiler).
#[allow(clippy::excessive_precision)]
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = clamp_f32(x, -87.0, 88.0);
    let shifted = x * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let ni = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let p = 1.987_569_15e-4;
    let p = p * r + 1.398_199_950_7e-3;
    let p = p * r + 8.333_451_907_3e-3;
    let p = p * r + 4.166_579_589_4e-2;
    let p = p * r + 1.666_666_545_9e-1;
    let p = p * r + 5.000_000_120_1e-1;
    let e = 1.0 + r + r * r * p;
    e * f32::from_bits((ni.wrapping_add(127) as u32) << 23)
}

/// ⌊x⌋ in f32, exact and branch-free (|x| ≥ 2²³ is already an integer and returned as is).
#[inline(always)]
pub fn floor_f32(x: f32) -> f32 {
    const TWO_23: f32 = 8_388_608.0;
    // |x| rounded to an integer by the addition (|x| < 2²³), x's sign put back.
    let r = ((x.abs() + TWO_23) - TWO_23).copysign(x);
    let r = if r > x { r - 1.0 } else { r };
    if x.abs() < TWO_23 { r } else { x }
}

/// Whether any value read as unsigned (a negative one is huge) is at least `bound`: one max
/// over the values with no early exit, compiled for the CPU's vector extension (the baseline
/// has no 64-bit compare), for checking index columns from a front end.
pub fn any_at_least(values: &[i64], bound: u64) -> bool {
    struct Max<'a>(&'a [i64]);
    impl WithSimd for Max<'_> {
        type Output = u64;
        #[inline(always)]
        fn with_simd<S: Simd>(self, _simd: S) -> u64 {
            self.0.iter().fold(0, |m, &v| m.max(v as u64))
        }
    }
    !values.is_empty() && dispatch(Max(values)) >= bound
}

/// Up to eight 0/1 bytes as the low bits of one byte (bit `i` = byte `i`): one multiply.
#[inline(always)]
pub fn gather8(bytes: &[u8]) -> u8 {
    let mut b = [0u8; 8];
    b[..bytes.len()].copy_from_slice(bytes);
    gather8_word(b) as u8
}

/// Eight 0/1 bytes as the low eight bits of a word (bit `i` = byte `i`): [`gather8`] of a
/// whole word. A `u64`, for callers that shift it into a wider mask (an `as u8` round trip
/// there made `EpisodeStats::record_steps` 1.6x slower).
#[inline(always)]
pub fn gather8_word(b: [u8; 8]) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const GATHER: u64 = 0x0102_0408_1020_4080;
    ((u64::from_le_bytes(b) & LOW).wrapping_mul(GATHER)) >> 56
}

/// Each `per`-byte row of `bytes` (0/1 values, e.g. numpy's boolean selection masks; at most
/// 128 a row; a short last row is skipped) as one bit string: `f(i, bits)` for row `i`, bit `k`
/// of `bits` being byte `k` of the row.
///
/// With AVX-512 a row is one 64-byte load and one compare per 64 bytes (the bits past the row
/// dropped; within 64 bytes of the slice's end the bytes are copied out first, so nothing past
/// the slice is read); elsewhere eight bytes a multiply ([`gather8`]). The two agree on 0/1
/// bytes, which is what callers pass (checked beforehand): bytes other than 0 and 1 are read
/// as "not zero" by the first and by their lowest bit by the second.
#[inline]
pub fn for_each_bit_row(bytes: &[u8], per: usize, mut f: impl FnMut(usize, u128)) {
    assert!((1..=128).contains(&per), "for_each_bit_row: rows of 1 to 128 bytes, not {per}");
    let rows = bytes.chunks_exact(per);
    #[cfg(target_arch = "x86_64")]
    if let Some(v4) = pulp::x86::V4::try_new() {
        return v4.vectorize(move || {
            let zero = v4.splat_u8x64(0);
            // Bytes `at..at + n` (n ≤ 64) as bits: one 64-byte load and compare, the bits past
            // `n` dropped; near the slice's end the bytes are copied out first.
            let bits64 = |at: usize, n: usize| {
                let v: pulp::u8x64 = match bytes.get(at..at + 64) {
                    Some(b) => pulp::cast(*<&[u8; 64]>::try_from(b).expect("64 bytes")),
                    None => {
                        let mut b = [0u8; 64];
                        b[..n].copy_from_slice(&bytes[at..at + n]);
                        pulp::cast(b)
                    }
                };
                let m = v4.cmp_lt_u8x64(zero, v).0;
                u128::from(if n == 64 { m } else { m & ((1 << n) - 1) })
            };
            for i in 0..bytes.len() / per {
                let (at, lo) = (i * per, per.min(64));
                let hi = if per > 64 { bits64(at + 64, per - 64) << 64 } else { 0 };
                f(i, bits64(at, lo) | hi);
            }
        });
    }
    for (i, row) in rows.enumerate() {
        f(i, bits_by_multiply(row));
    }
}

/// Up to 128 0/1 bytes as bits (bit `k` = byte `k`), eight bytes a multiply ([`gather8`]): one
/// row of [`for_each_bit_row`]'s fallback, for a caller with a single row.
#[inline(always)]
pub fn bits_by_multiply(row: &[u8]) -> u128 {
    row.chunks(8).enumerate().fold(0, |bits, (k, c)| bits | u128::from(gather8(c)) << (8 * k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sin_cos_f32_error_is_as_documented() {
        // A dense grid over |x| ≤ 10⁴ (every f32 near the quadrant edges included by density),
        // plus random points.
        let mut worst = 0.0f64;
        let mut check = |x: f32| {
            let (s, c) = sin_cos_f32(x);
            let xd = x as f64;
            let bound = 2.5e-7 + xd.abs() * (1.0 / (1u64 << 24) as f64);
            let e = (s as f64 - xd.sin()).abs().max((c as f64 - xd.cos()).abs());
            assert!(e <= bound, "x {x}: sin {s} cos {c} (error {e:e}, bound {bound:e})");
            worst = worst.max(e - xd.abs() * (1.0 / (1u64 << 24) as f64));
        };
        for k in -2_000_000i32..=2_000_000 {
            check(k as f32 * 5e-3);
        }
        let mut r = crate::key::Key::new(4).rng();
        for _ in 0..1_000_000 {
            check((2.0 * r.uniform_f64() - 1.0) as f32 * 10.0);
        }
        for &x in &[0.0f32, -0.0, 1e-30, std::f32::consts::FRAC_PI_4, std::f32::consts::PI, 1e4] {
            check(x);
        }
        assert!(worst < 2.5e-7, "{worst:e}");
        assert!(sin_cos_f32(f32::NAN).0.is_nan() && sin_cos_f32(f32::INFINITY).1.is_nan());
    }

    #[test]
    fn exp_f32_error_is_as_documented() {
        for k in -870_000i32..=880_000 {
            let x = k as f32 * 1e-4;
            let (got, want) = (exp_f32(x) as f64, (x as f64).exp());
            assert!(((got - want) / want).abs() < 3e-7, "x {x}: {got} vs {want}");
        }
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-1e30), exp_f32(-87.0));
        assert!(exp_f32(-200.0) > 0.0 && exp_f32(200.0).is_finite());
    }

    #[test]
    fn floor_f32_is_exact() {
        let mut r = crate::key::Key::new(6).rng();
        for _ in 0..200_000 {
            let x = ((2.0 * r.uniform_f64() - 1.0) * 1e7) as f32;
            assert_eq!(floor_f32(x), x.floor(), "{x}");
            let y = x * 1e-6;
            assert_eq!(floor_f32(y), y.floor(), "{y}");
        }
        for x in [
            -0.5f32,
            0.5,
            -1.0,
            1.0,
            4_194_303.5,
            -4_239_736.5,
            8_388_607.5,
            -8_388_607.5,
            1e20,
            -1e20,
            0.0,
        ] {
            assert_eq!(floor_f32(x), x.floor(), "{x}");
        }
    }

    #[test]
    fn real_f64_is_std() {
        for x in [-7.3f64, -0.1, 0.0, 0.4, 3.2, 123.456] {
            assert_eq!(Real::sin(x).to_bits(), x.sin().to_bits());
            assert_eq!(Real::cos(x).to_bits(), x.cos().to_bits());
            assert_eq!(Real::exp_lanes(x).to_bits(), x.exp().to_bits());
            assert_eq!(Real::floor(x).to_bits(), x.floor().to_bits());
        }
        assert!(Real::clamp(f64::NAN, -1.0, 1.0).is_nan());
        assert!(Real::clamp(f32::NAN, -1.0, 1.0).is_nan());
        assert_eq!(Real::clamp(3.0f32, -1.0, 1.0), 1.0);
    }

    /// In f32 the lane functions are this module's polynomials; the networks' functions are
    /// `std`'s, and the bytes round-trip.
    #[test]
    fn real_f32_lanes_are_the_polynomials_and_the_rest_std() {
        for x in [-7.3f32, -0.1, 0.0, 0.4, 3.2, 60.5] {
            assert_eq!(Real::sin(x).to_bits(), sin_cos_f32(x).0.to_bits());
            assert_eq!(Real::cos(x).to_bits(), sin_cos_f32(x).1.to_bits());
            assert_eq!(Real::exp_lanes(x).to_bits(), exp_f32(x).to_bits());
            assert_eq!(Real::exp(x).to_bits(), x.exp().to_bits());
            assert_eq!(Real::tanh(x).to_bits(), x.tanh().to_bits());
            let mut b = Vec::new();
            Real::write_le(x, &mut b);
            assert_eq!((b.len(), <f32 as Real>::read_le(&b)), (<f32 as Real>::BYTES, x));
        }
        assert_eq!((<f32 as Real>::DTYPE, <f64 as Real>::DTYPE), ("F32", "F64"));
        assert_eq!(<f32 as Real>::from_f64(0.1), 0.1f32);
    }

    #[test]
    fn any_at_least_reads_values_as_unsigned() {
        assert!(!any_at_least(&[], 0));
        assert!(!any_at_least(&[0, 4, 2], 5));
        assert!(any_at_least(&[0, 5, 2], 5));
        assert!(any_at_least(&[0, -1, 2], 5));
        let long: Vec<i64> = (0..1000).map(|i| i % 7).collect();
        assert!(!any_at_least(&long, 7) && any_at_least(&long, 6));
    }

    /// Both paths of `for_each_bit_row` (the one this CPU takes, and the multiply) give each
    /// row's bytes as bits, at every row length up to 128, the last row ending the slice.
    #[test]
    fn for_each_bit_row_is_the_bytes_as_bits() {
        let mut r = crate::key::Key::new(9).rng();
        for per in [1, 5, 8, 25, 63, 64, 65, 100, 128] {
            let bytes: Vec<u8> = (0..3 * per + per / 2).map(|_| (r.next_u64() & 1) as u8).collect();
            let want: Vec<u128> = bytes
                .chunks_exact(per)
                .map(|row| row.iter().rev().fold(0u128, |b, &x| b << 1 | u128::from(x)))
                .collect();
            let mut got = Vec::new();
            for_each_bit_row(&bytes, per, |i, b| got.push((i, b)));
            assert_eq!(got, want.iter().copied().enumerate().collect::<Vec<_>>(), "per {per}");
            let multiply: Vec<u128> = bytes.chunks_exact(per).map(bits_by_multiply).collect();
            assert_eq!(multiply, want, "per {per}, eight bytes a multiply");
        }
    }

    /// The dispatched and the plain build of the same lane loop give the same bits.
    #[test]
    fn dispatch_does_not_change_values() {
        struct Op<'a>(&'a [f32], &'a mut [f32]);
        impl WithSimd for Op<'_> {
            type Output = ();
            #[inline(always)]
            fn with_simd<S: Simd>(self, _: S) {
                for (o, &x) in self.1.iter_mut().zip(self.0) {
                    let (s, c) = sin_cos_f32(x);
                    *o = s * c + exp_f32(-x * x) + floor_f32(x * 3.0);
                }
            }
        }
        let xs: Vec<f32> = (0..10_000).map(|i| (i as f32 - 5000.0) * 1.37e-2).collect();
        let mut a = vec![0.0f32; xs.len()];
        dispatch(Op(&xs, &mut a));
        for (x, got) in xs.iter().zip(&a) {
            let (s, c) = sin_cos_f32(*x);
            let want = s * c + exp_f32(-x * x) + floor_f32(x * 3.0);
            assert_eq!(got.to_bits(), want.to_bits(), "{x}");
        }
    }
}
