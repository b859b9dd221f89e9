//! The scalar types networks run in: f32 for speed, f64 for finite-difference gradient checks.

use std::fmt::Debug;
use std::ops::{Add, AddAssign, Div, Mul, MulAssign, Neg, Sub, SubAssign};

/// f32 or f64. Everything in `kestrel-nn` is generic over it.
pub trait Float:
    Copy
    + Debug
    + Default
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + kestrel_core::simd::FromF32
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Name in safetensors headers (`F32`, `F64`).
    const DTYPE: &'static str;
    /// Bytes per value.
    const BYTES: usize;
    /// From f64 (rounded for f32).
    fn from_f64(v: f64) -> Self;
    /// To f64 (exact).
    fn to_f64(self) -> f64;
    /// Square root.
    fn sqrt(self) -> Self;
    /// eˣ.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Whether finite.
    fn is_finite(self) -> bool;
    /// Little-endian bytes appended to `out`.
    fn write_le(self, out: &mut Vec<u8>);
    /// From little-endian bytes (`BYTES` of them).
    fn read_le(b: &[u8]) -> Self;
}

macro_rules! float_impl {
    ($t:ty, $name:literal) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const DTYPE: &'static str = $name;
            const BYTES: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
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
        }
    };
}

float_impl!(f32, "F32");
float_impl!(f64, "F64");
