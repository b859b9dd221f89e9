//! Row-major matrix products, single-threaded (parallelism belongs across models, not inside
//! one small product): f32 and f64 through this module's own kernels, one for AVX-512 and one
//! for AVX2 with FMA (the best the CPU runs, detected at run time), which allocate nothing once
//! warm and sum in the same order; the rest (a single row or column, operands over 1 MiB, CPUs
//! with neither) through the `gemm` crate, which allocates its packing buffers on each call
//! except for a single row or column. The only unsafe code in the crate: every call checks the
//! slice lengths against the shapes first, which is all the kernels need to stay in bounds.
#![allow(unsafe_code)]

use gemm::Parallelism;
use kestrel_core::simd::Real;

/// How an operand is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// As stored (row-major `rows × cols`).
    N,
    /// Transposed.
    T,
}

/// Which implementation computes a product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Kestrel's kernel with AVX-512 (x86-64, run-time detected).
    Avx512,
    /// Kestrel's kernel with AVX2 and FMA (x86-64, run-time detected).
    Avx2,
    /// The `gemm` crate (every CPU; allocates its packing buffers per call).
    Gemm,
}

impl Kernel {
    /// The fastest kernel this CPU runs: AVX-512, else AVX2 with FMA, else `gemm`.
    pub fn best() -> Kernel {
        [Kernel::Avx512, Kernel::Avx2].into_iter().find(|k| k.available()).unwrap_or(Kernel::Gemm)
    }

    /// Whether this CPU runs it.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => simd::avx512::available(),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => simd::avx2::available(),
            Kernel::Gemm => true,
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// `c = a·b` (`accumulate: false`) or `c += a·b`, where `op(a)` is `m × k`, `op(b)` is `k × n`
/// and `c` is `m × n`, all row-major; `a` is stored `m × k` for `Op::N` and `k × m` for `Op::T`
/// (likewise `b`). On [`Kernel::best`].
///
/// # Panics
/// If a slice is shorter than its shape.
#[allow(clippy::too_many_arguments)]
pub fn matmul<T: Real>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    op_a: Op,
    b: &[T],
    op_b: Op,
    c: &mut [T],
    accumulate: bool,
) {
    matmul_on(best(), m, k, n, a, op_a, b, op_b, c, accumulate);
}

/// [`Kernel::best`], detected once.
fn best() -> Kernel {
    static BEST: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
    *BEST.get_or_init(Kernel::best)
}

/// [`matmul`] on `kernel` where it applies: Kestrel's kernels take f32 and f64 products of at
/// least 2 rows and 2 columns whose operands hold at most 1 MiB, on CPUs that run them; `gemm`
/// takes the rest (its vector-matrix and matrix-vector paths are faster for a single row or
/// column and allocate nothing; larger operands stream from memory, where its packed copies
/// win ~10%). Both of Kestrel's kernels sum in the same order, so they give the same bits.
///
/// # Panics
/// If a slice is shorter than its shape.
#[allow(clippy::too_many_arguments)]
pub fn matmul_with<T: Real>(
    kernel: Kernel,
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    op_a: Op,
    b: &[T],
    op_b: Op,
    c: &mut [T],
    accumulate: bool,
) {
    let kernel = if kernel.available() { kernel } else { Kernel::Gemm };
    matmul_on(kernel, m, k, n, a, op_a, b, op_b, c, accumulate);
}

/// [`matmul_with`] on a kernel this CPU runs.
#[allow(clippy::too_many_arguments)]
fn matmul_on<T: Real>(
    kernel: Kernel,
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    op_a: Op,
    b: &[T],
    op_b: Op,
    c: &mut [T],
    accumulate: bool,
) {
    if !checked(m, k, n, a, b, c, accumulate) {
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel; // only `gemm` off x86-64
    #[cfg(target_arch = "x86_64")]
    if kernel != Kernel::Gemm
        && simd::MIN_ROWS <= m
        && n > 1
        && (m * k + k * n) * T::BYTES <= simd::MAX_BYTES
    {
        use std::any::TypeId;
        let avx512 = kernel == Kernel::Avx512;
        // SAFETY: `T` is the type cast to (checked by its `TypeId`), so the casts reinterpret
        // the same memory as the same type; the lengths were checked above and the kernel's
        // instructions are present.
        unsafe {
            if TypeId::of::<T>() == TypeId::of::<f32>() {
                let (a, b, c) =
                    (a.as_ptr().cast::<f32>(), b.as_ptr().cast(), c.as_mut_ptr().cast());
                return match avx512 {
                    true => simd::avx512::matmul::<simd::avx512::F32x16>(
                        m, k, n, a, op_a, b, op_b, c, accumulate,
                    ),
                    false => simd::avx2::matmul::<simd::avx2::F32x8>(
                        m, k, n, a, op_a, b, op_b, c, accumulate,
                    ),
                };
            }
            if TypeId::of::<T>() == TypeId::of::<f64>() {
                let (a, b, c) =
                    (a.as_ptr().cast::<f64>(), b.as_ptr().cast(), c.as_mut_ptr().cast());
                return match avx512 {
                    true => simd::avx512::matmul::<simd::avx512::F64x8>(
                        m, k, n, a, op_a, b, op_b, c, accumulate,
                    ),
                    false => simd::avx2::matmul::<simd::avx2::F64x4>(
                        m, k, n, a, op_a, b, op_b, c, accumulate,
                    ),
                };
            }
        }
    }
    gemm_checked(m, k, n, a, op_a, b, op_b, c, accumulate);
}

/// Checks the lengths (panics if short) and settles the empty products; false when nothing is
/// left to compute.
fn checked<T: Real>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    b: &[T],
    c: &mut [T],
    acc: bool,
) -> bool {
    assert!(a.len() >= m * k, "matmul: lhs has {} values, needs {}", a.len(), m * k);
    assert!(b.len() >= k * n, "matmul: rhs has {} values, needs {}", b.len(), k * n);
    assert!(c.len() >= m * n, "matmul: dst has {} values, needs {}", c.len(), m * n);
    if k == 0 && !acc {
        c[..m * n].iter_mut().for_each(|v| *v = T::ZERO);
    }
    m > 0 && n > 0 && k > 0
}

/// The `gemm` call, once [`checked`] has passed (lengths hold, `m, n, k > 0`).
#[allow(clippy::too_many_arguments)]
fn gemm_checked<T: Real>(
    m: usize,
    k: usize,
    n: usize,
    a: &[T],
    op_a: Op,
    b: &[T],
    op_b: Op,
    c: &mut [T],
    accumulate: bool,
) {
    // (column stride, row stride) of each operand as read.
    let (a_cs, a_rs) = match op_a {
        Op::N => (1, k as isize),
        Op::T => (m as isize, 1),
    };
    let (b_cs, b_rs) = match op_b {
        Op::N => (1, n as isize),
        Op::T => (k as isize, 1),
    };
    // SAFETY: with these strides the largest offset read from `a` is (m−1)·rs + (k−1)·cs,
    // which is m·k − 1 in both layouts (likewise `b` with k·n − 1 and `c` with m·n − 1), and
    // the lengths were checked above. `c` is a unique borrow, so it aliases neither input.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            accumulate,
            a.as_ptr(),
            a_cs,
            a_rs,
            b.as_ptr(),
            b_cs,
            b_rs,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// Kestrel's kernels, f32 and f64 alike, one per instruction set (AVX-512: 16 or 8 lanes,
/// tiles of up to 12 rows; AVX2 with FMA: 8 or 4 lanes, tiles of up to 6 rows), each a tile of
/// rows × two vectors of the result held in registers over a block of up to 256 depths. The
/// left operand is read in place, one broadcast per element, in either layout; the right one
/// row by row in place when stored as read, else through a panel of its tile's columns × 256
/// depths transposed once (lanes × lanes blocks in registers) and shared by every tile of those
/// columns. Each depth block of a result element is `Σ_p a·b` in increasing `p`, one fused
/// multiply-add per term from zero, then added to `c` (the first block overwrites `c` when not
/// accumulating) — the same order in both kernels, so the same bits. With depths ≤ 256 that is
/// `gemm` 0.19's f32 order too, bit for bit on the MLP step's products; `gemm` blocks deeper
/// sums (and some narrow shapes, and f64) its own way, so there the paths differ in the last
/// bits.
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::Op;
    use std::cell::RefCell;

    /// Single rows go to `gemm` (its vector-matrix path is faster there and allocates
    /// nothing), and so do single columns (its matrix-vector path).
    pub(super) const MIN_ROWS: usize = 2;
    /// Depths per block: a tile sums this many terms in registers, then adds them to `c`.
    const KC: usize = 256;
    /// Rows per chunk (21 tiles of 12, 42 of 6): the chunk's block of the left operand,
    /// `MC × KC` values (252 KiB in f32), stays in L2 while every column panel passes over it.
    const MC: usize = 252;
    /// Products whose two operands hold more bytes than this (1 MiB) go to `gemm`: these
    /// kernels read them in place, which wins while they sit in L2 (a network's weights and a
    /// batch of a few hundred rows) and loses ~10% to `gemm`'s packed copies when they stream
    /// from memory (measured in f32: ALLO's plain 4,096-row encoder step).
    pub(super) const MAX_BYTES: usize = 1 << 20;

    /// One element type's vectors on one instruction set (every method needs its features):
    /// a vector holds `LANES` values of `E`.
    pub(super) trait Lanes: Copy + 'static {
        type E: Copy + Default + 'static;
        type V: Copy;
        const LANES: usize;
        /// Columns per tile: two vectors.
        const NR: usize = 2 * Self::LANES;
        unsafe fn zero() -> Self::V;
        unsafe fn splat(x: Self::E) -> Self::V;
        /// The first `w` (≥ 1) lanes from `p`, the rest zero.
        unsafe fn load(w: usize, p: *const Self::E) -> Self::V;
        /// `a·b + c`, rounded once.
        unsafe fn fma(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
        unsafe fn add(a: Self::V, b: Self::V) -> Self::V;
        /// The first `w` (≥ 1) lanes to `p`.
        unsafe fn store(w: usize, p: *mut Self::E, v: Self::V);
        /// dst[j·ld_dst + i] = src[i·ld_src + j] for i, j < LANES.
        unsafe fn transpose(src: *const Self::E, ld_src: usize, dst: *mut Self::E, ld_dst: usize);
        /// The thread's packing panel.
        fn with_panel<R>(f: impl FnOnce(&mut Vec<Self::E>) -> R) -> R;
    }

    thread_local! {
        static PANEL_F32: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
        static PANEL_F64: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
    }

    fn panel_f32<R>(f: impl FnOnce(&mut Vec<f32>) -> R) -> R {
        PANEL_F32.with_borrow_mut(f)
    }

    fn panel_f64<R>(f: impl FnOnce(&mut Vec<f64>) -> R) -> R {
        PANEL_F64.with_borrow_mut(f)
    }

    /// A tile's place: rows i0..i0+rows (≤ R) of op(a) (`m × k`) and c (`m × n`), columns
    /// j0..j0+w (≤ LANES·NV) of c, `kc` depths; `add`: add to c rather than overwrite it.
    #[derive(Clone, Copy)]
    struct Tile {
        m: usize,
        k: usize,
        n: usize,
        i0: usize,
        rows: usize,
        kc: usize,
        j0: usize,
        w: usize,
        add: bool,
    }

    /// The [`Lanes`] methods that are one intrinsic each: `zero`, `splat`, `fma` and `add`,
    /// compiled for the features `$feat`.
    macro_rules! vector_ops {
        ($feat:literal, $e:ty, $v:ty, $zero:ident, $splat:ident, $fma:ident, $add:ident) => {
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn zero() -> $v {
                $zero()
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn splat(x: $e) -> $v {
                $splat(x)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn fma(a: $v, b: $v, c: $v) -> $v {
                $fma(a, b, c)
            }
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn add(a: $v, b: $v) -> $v {
                $add(a, b)
            }
        };
    }

    /// The kernel's functions compiled for the features `$feat`; the module around it gives
    /// `run_tile` (which tile heights the registers hold) and the [`Lanes`] types.
    macro_rules! kernel {
        ($feat:literal) => {
            /// # Safety
            /// The features are present; `a` holds `m·k`, `b` `k·n` and `c` `m·n` values; `c`
            /// aliases neither input; `m, n, k > 0`.
            #[allow(clippy::too_many_arguments)]
            pub(crate) unsafe fn matmul<L: Lanes>(
                m: usize,
                k: usize,
                n: usize,
                a: *const L::E,
                op_a: Op,
                b: *const L::E,
                op_b: Op,
                c: *mut L::E,
                accumulate: bool,
            ) {
                let run = |panel: &mut [L::E]| {
                    // SAFETY: forwarded from the caller; the panel buffer holds ⌈n/NR⌉·KC·NR
                    // values when op_b is T.
                    unsafe {
                        match op_a {
                            Op::N => blocks::<L, false>(m, k, n, a, op_b, b, c, accumulate, panel),
                            Op::T => blocks::<L, true>(m, k, n, a, op_b, b, c, accumulate, panel),
                        }
                    }
                };
                match op_b {
                    Op::N => run(&mut []),
                    Op::T => L::with_panel(|panel| {
                        let len = n.div_ceil(L::NR) * KC * L::NR;
                        if panel.len() < len {
                            panel.resize(len, L::E::default());
                        }
                        run(panel)
                    }),
                }
            }

            #[allow(clippy::too_many_arguments)]
            #[target_feature(enable = $feat)]
            unsafe fn blocks<L: Lanes, const AT: bool>(
                m: usize,
                k: usize,
                n: usize,
                a: *const L::E,
                op_b: Op,
                b: *const L::E,
                c: *mut L::E,
                accumulate: bool,
                panel: &mut [L::E],
            ) {
                let nr = L::NR;
                // op(a)[i, p] at a + i·rs + p·cs.
                let cs = if AT { m } else { 1 };
                let panels = n.div_ceil(nr);
                // Depth blocks outermost (each result tile is added to once per block), then
                // chunks of rows whose block of op(a) stays in L2 while every column panel
                // passes over it.
                let mut p0 = 0;
                while p0 < k {
                    let kc = KC.min(k - p0);
                    if op_b == Op::T {
                        for jp in 0..panels {
                            let j0 = jp * nr;
                            // SAFETY: columns j0..j0+w of op(b), depths p0..p0+kc, are in
                            // bounds; the panel buffer holds `panels` panels of KC·NR values.
                            unsafe {
                                pack_transposed::<L>(
                                    kc,
                                    k,
                                    b.add(p0),
                                    j0,
                                    nr.min(n - j0),
                                    &mut panel[jp * KC * nr..(jp + 1) * KC * nr],
                                )
                            };
                        }
                    }
                    // SAFETY: depth p0 < k of op(a).
                    let ap = unsafe { a.add(p0 * cs) };
                    // Blocks after the first add to what the first wrote.
                    let add = accumulate || p0 > 0;
                    let mut c0 = 0;
                    while c0 < m {
                        let c1 = (c0 + MC).min(m);
                        for jp in 0..panels {
                            let j0 = jp * nr;
                            let w = nr.min(n - j0);
                            // Where row p0 + q of the tile's column slice starts, q < kc: b
                            // itself when stored untransposed (rows read in place), else its
                            // packed panel.
                            let (bp, ldp) = match op_b {
                                // SAFETY: row p0 < k, column j0 < n of b.
                                Op::N => (unsafe { b.add(p0 * n + j0) }, n),
                                Op::T => (panel[jp * KC * nr..].as_ptr(), nr),
                            };
                            let mut i0 = c0;
                            while i0 < c1 {
                                let rows = MR.min(c1 - i0);
                                let t = Tile { m, k, n, i0, rows, kc, j0, w, add };
                                // SAFETY: rows i0..i0+rows of op(a) and c, depths p0..p0+kc,
                                // columns j0..j0+w of c.
                                unsafe { run_tile::<L, AT>(t, ap, bp, ldp, c) };
                                i0 += MR;
                            }
                        }
                        c0 = c1;
                    }
                    p0 += kc;
                }
            }

            /// panel[q·NR + jj] = b[(j0 + jj)·ld + q] for q < depth and jj < w, zero for
            /// jj ≥ w: LANES×LANES blocks transposed in registers, the edges one by one.
            #[target_feature(enable = $feat)]
            unsafe fn pack_transposed<L: Lanes>(
                depth: usize,
                ld: usize,
                b: *const L::E,
                j0: usize,
                w: usize,
                panel: &mut [L::E],
            ) {
                let (nr, l) = (L::NR, L::LANES);
                let panel = &mut panel[..depth * nr];
                if w < nr {
                    panel.fill(L::E::default());
                }
                let (wl, dl) = (w / l * l, depth / l * l);
                for jb in (0..wl).step_by(l) {
                    for qb in (0..dl).step_by(l) {
                        // SAFETY: rows j0+jb.. j0+jb+LANES of the stored b, values
                        // qb..qb+LANES; panel rows qb..qb+LANES, columns jb..jb+LANES.
                        unsafe {
                            L::transpose(
                                b.add((j0 + jb) * ld + qb),
                                ld,
                                panel.as_mut_ptr().add(qb * nr + jb),
                                nr,
                            )
                        };
                    }
                }
                for jj in 0..w {
                    // SAFETY: row j0 + jj of the stored b has depth values from here.
                    let src = unsafe { std::slice::from_raw_parts(b.add((j0 + jj) * ld), depth) };
                    let from = if jj < wl { dl } else { 0 };
                    for (q, v) in src.iter().enumerate().skip(from) {
                        panel[q * nr + jj] = *v;
                    }
                }
            }

            /// One tile over `kc` depths: `a` points at depth p0 of op(a), `bp` at row p0 of
            /// the tile's column slice (rows `ldp` apart). Rows past `rows` repeat the last
            /// row's reads and are not stored.
            #[inline]
            #[target_feature(enable = $feat)]
            unsafe fn tile<L: Lanes, const AT: bool, const R: usize, const NV: usize>(
                t: Tile,
                a: *const L::E,
                bp: *const L::E,
                ldp: usize,
                c: *mut L::E,
            ) {
                let Tile { m, k, n, i0, rows, kc, j0, w, add } = t;
                let l = L::LANES;
                // op(a)[i, p] at a + i·rs + p·cs.
                let (rs, cs) = if AT { (1, m) } else { (k, 1) };
                let mut off = [0usize; R];
                for (r, o) in off.iter_mut().enumerate() {
                    *o = (i0 + r.min(rows - 1)) * rs;
                }
                // SAFETY (every block below): the features are enabled here; slice row q holds
                // w values (the loads are masked to them); op(a)[i, p0 + q] is in bounds for
                // i < m; row i0 + r of c holds columns j0 + LANES·v.. under the store's mask.
                let mut acc = [[unsafe { L::zero() }; NV]; R];
                for q in 0..kc {
                    unsafe {
                        let br = bp.add(q * ldp);
                        let mut bv = [L::zero(); NV];
                        for (v, x) in bv.iter_mut().enumerate() {
                            *x = L::load(w - l * v, br.add(l * v));
                        }
                        let ap = a.add(q * cs);
                        for r in 0..R {
                            let av = L::splat(*ap.add(off[r]));
                            for v in 0..NV {
                                acc[r][v] = L::fma(av, bv[v], acc[r][v]);
                            }
                        }
                    }
                }
                for r in 0..rows {
                    for v in 0..NV {
                        let wv = w - l * v;
                        unsafe {
                            let dst = c.add((i0 + r) * n + j0 + l * v);
                            let mut x = acc[r][v];
                            if add {
                                x = L::add(L::load(wv, dst), x);
                            }
                            L::store(wv, dst, x);
                        }
                    }
                }
            }
        };
    }

    /// AVX-512: 32 vector registers, tiles of up to 12 rows (24 accumulators).
    pub(super) mod avx512 {
        use super::{KC, Lanes, MC, Op, Tile, panel_f32, panel_f64};
        use std::arch::x86_64::*;

        /// Rows per tile (with 8-, 4- and 2-row tiles for the last rows).
        const MR: usize = 12;

        pub(crate) fn available() -> bool {
            std::arch::is_x86_feature_detected!("avx512f")
        }

        kernel!("avx512f");

        /// The tile of `rows` (≤ MR) rows and `w` columns (two vectors or one).
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn run_tile<L: Lanes, const AT: bool>(
            t: Tile,
            ap: *const L::E,
            bp: *const L::E,
            ldp: usize,
            c: *mut L::E,
        ) {
            // SAFETY: forwarded from `blocks`.
            unsafe {
                match (t.w > L::LANES, t.rows) {
                    (true, 9..) => tile::<L, AT, MR, 2>(t, ap, bp, ldp, c),
                    (true, 5..) => tile::<L, AT, 8, 2>(t, ap, bp, ldp, c),
                    (true, 3..) => tile::<L, AT, 4, 2>(t, ap, bp, ldp, c),
                    (true, _) => tile::<L, AT, 2, 2>(t, ap, bp, ldp, c),
                    (false, 9..) => tile::<L, AT, MR, 1>(t, ap, bp, ldp, c),
                    (false, 5..) => tile::<L, AT, 8, 1>(t, ap, bp, ldp, c),
                    (false, 3..) => tile::<L, AT, 4, 1>(t, ap, bp, ldp, c),
                    (false, _) => tile::<L, AT, 2, 1>(t, ap, bp, ldp, c),
                }
            }
        }

        #[inline(always)]
        fn mask(w: usize) -> u16 {
            if w >= 16 { 0xffff } else { ((1u32 << w) - 1) as u16 }
        }

        /// f32, 16 lanes.
        #[derive(Clone, Copy)]
        pub(crate) struct F32x16;
        /// f64, 8 lanes.
        #[derive(Clone, Copy)]
        pub(crate) struct F64x8;

        impl Lanes for F32x16 {
            type E = f32;
            type V = __m512;
            const LANES: usize = 16;
            vector_ops!(
                "avx512f",
                f32,
                __m512,
                _mm512_setzero_ps,
                _mm512_set1_ps,
                _mm512_fmadd_ps,
                _mm512_add_ps
            );
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn load(w: usize, p: *const f32) -> __m512 {
                // SAFETY: the caller's: the first w values from p are readable.
                unsafe { _mm512_maskz_loadu_ps(mask(w), p) }
            }
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn store(w: usize, p: *mut f32, v: __m512) {
                // SAFETY: the caller's: the first w values from p are writable.
                unsafe { _mm512_mask_storeu_ps(p, mask(w), v) }
            }
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn transpose(src: *const f32, ld_src: usize, dst: *mut f32, ld_dst: usize) {
                let mut r = [_mm512_setzero_ps(); 16];
                for (i, x) in r.iter_mut().enumerate() {
                    // SAFETY: row i of the source block.
                    *x = unsafe { _mm512_loadu_ps(src.add(i * ld_src)) };
                }
                // Pairs of rows interleaved, then pairs of pairs: u[4g + c] holds, in 128-bit
                // lane L, column 4L + c of rows 4g..4g+4.
                let mut t = [_mm512_setzero_ps(); 16];
                for g in 0..8 {
                    t[2 * g] = _mm512_unpacklo_ps(r[2 * g], r[2 * g + 1]);
                    t[2 * g + 1] = _mm512_unpackhi_ps(r[2 * g], r[2 * g + 1]);
                }
                let mut u = [_mm512_setzero_ps(); 16];
                for g in 0..4 {
                    let pd = |x: __m512| _mm512_castps_pd(x);
                    let (t0, t1, t2, t3) =
                        (pd(t[4 * g]), pd(t[4 * g + 1]), pd(t[4 * g + 2]), pd(t[4 * g + 3]));
                    u[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
                    u[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
                    u[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
                    u[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
                }
                // A 4×4 transpose of 128-bit lanes across u[c], u[4 + c], u[8 + c], u[12 + c].
                for c in 0..4 {
                    let v0 = _mm512_shuffle_f32x4::<0x44>(u[c], u[4 + c]);
                    let v1 = _mm512_shuffle_f32x4::<0xEE>(u[c], u[4 + c]);
                    let v2 = _mm512_shuffle_f32x4::<0x44>(u[8 + c], u[12 + c]);
                    let v3 = _mm512_shuffle_f32x4::<0xEE>(u[8 + c], u[12 + c]);
                    // SAFETY: rows c, 4 + c, 8 + c, 12 + c of the destination block.
                    unsafe {
                        let row = |i: usize| dst.add(i * ld_dst);
                        _mm512_storeu_ps(row(c), _mm512_shuffle_f32x4::<0x88>(v0, v2));
                        _mm512_storeu_ps(row(4 + c), _mm512_shuffle_f32x4::<0xDD>(v0, v2));
                        _mm512_storeu_ps(row(8 + c), _mm512_shuffle_f32x4::<0x88>(v1, v3));
                        _mm512_storeu_ps(row(12 + c), _mm512_shuffle_f32x4::<0xDD>(v1, v3));
                    }
                }
            }
            fn with_panel<R>(f: impl FnOnce(&mut Vec<f32>) -> R) -> R {
                panel_f32(f)
            }
        }

        impl Lanes for F64x8 {
            type E = f64;
            type V = __m512d;
            const LANES: usize = 8;
            vector_ops!(
                "avx512f",
                f64,
                __m512d,
                _mm512_setzero_pd,
                _mm512_set1_pd,
                _mm512_fmadd_pd,
                _mm512_add_pd
            );
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn load(w: usize, p: *const f64) -> __m512d {
                // SAFETY: the caller's: the first w values from p are readable.
                unsafe { _mm512_maskz_loadu_pd(mask(w) as u8, p) }
            }
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn store(w: usize, p: *mut f64, v: __m512d) {
                // SAFETY: the caller's: the first w values from p are writable.
                unsafe { _mm512_mask_storeu_pd(p, mask(w) as u8, v) }
            }
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn transpose(src: *const f64, ld_src: usize, dst: *mut f64, ld_dst: usize) {
                let mut r = [_mm512_setzero_pd(); 8];
                for (i, x) in r.iter_mut().enumerate() {
                    // SAFETY: row i of the source block.
                    *x = unsafe { _mm512_loadu_pd(src.add(i * ld_src)) };
                }
                // Pairs of rows interleaved: t[2g + h] holds, in 128-bit lane L, column 2L + h
                // of rows 2g and 2g + 1.
                let mut t = [_mm512_setzero_pd(); 8];
                for g in 0..4 {
                    t[2 * g] = _mm512_unpacklo_pd(r[2 * g], r[2 * g + 1]);
                    t[2 * g + 1] = _mm512_unpackhi_pd(r[2 * g], r[2 * g + 1]);
                }
                // Then a 4×4 transpose of 128-bit lanes across t[h], t[2 + h], t[4 + h],
                // t[6 + h]: lane L of the result for column 2L' + h takes lane L' of row pair L.
                for h in 0..2 {
                    let v0 = _mm512_shuffle_f64x2::<0x44>(t[h], t[2 + h]);
                    let v1 = _mm512_shuffle_f64x2::<0xEE>(t[h], t[2 + h]);
                    let v2 = _mm512_shuffle_f64x2::<0x44>(t[4 + h], t[6 + h]);
                    let v3 = _mm512_shuffle_f64x2::<0xEE>(t[4 + h], t[6 + h]);
                    // SAFETY: rows h, 2 + h, 4 + h, 6 + h of the destination block.
                    unsafe {
                        let row = |i: usize| dst.add(i * ld_dst);
                        _mm512_storeu_pd(row(h), _mm512_shuffle_f64x2::<0x88>(v0, v2));
                        _mm512_storeu_pd(row(2 + h), _mm512_shuffle_f64x2::<0xDD>(v0, v2));
                        _mm512_storeu_pd(row(4 + h), _mm512_shuffle_f64x2::<0x88>(v1, v3));
                        _mm512_storeu_pd(row(6 + h), _mm512_shuffle_f64x2::<0xDD>(v1, v3));
                    }
                }
            }
            fn with_panel<R>(f: impl FnOnce(&mut Vec<f64>) -> R) -> R {
                panel_f64(f)
            }
        }
    }

    /// AVX2 with FMA: 16 vector registers, tiles of up to 6 rows (12 accumulators, two
    /// vectors of the right operand and a broadcast).
    pub(super) mod avx2 {
        use super::{KC, Lanes, MC, Op, Tile, panel_f32, panel_f64};
        use std::arch::x86_64::*;

        /// Rows per tile (with 4- and 2-row tiles for the last rows).
        const MR: usize = 6;

        pub(crate) fn available() -> bool {
            std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
        }

        kernel!("avx2,fma");

        /// The tile of `rows` (≤ MR) rows and `w` columns (two vectors or one).
        #[inline]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn run_tile<L: Lanes, const AT: bool>(
            t: Tile,
            ap: *const L::E,
            bp: *const L::E,
            ldp: usize,
            c: *mut L::E,
        ) {
            // SAFETY: forwarded from `blocks`.
            unsafe {
                match (t.w > L::LANES, t.rows) {
                    (true, 5..) => tile::<L, AT, MR, 2>(t, ap, bp, ldp, c),
                    (true, 3..) => tile::<L, AT, 4, 2>(t, ap, bp, ldp, c),
                    (true, _) => tile::<L, AT, 2, 2>(t, ap, bp, ldp, c),
                    (false, 5..) => tile::<L, AT, MR, 1>(t, ap, bp, ldp, c),
                    (false, 3..) => tile::<L, AT, 4, 1>(t, ap, bp, ldp, c),
                    (false, _) => tile::<L, AT, 2, 1>(t, ap, bp, ldp, c),
                }
            }
        }

        /// 32-bit lane masks: from index `8 − w`, the first `w` of 8 lanes set.
        static MASK32: [i32; 16] = [-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0];
        /// 64-bit lane masks: from index `4 − w`, the first `w` of 4 lanes set.
        static MASK64: [i64; 8] = [-1, -1, -1, -1, 0, 0, 0, 0];

        /// `load` and `store` of [`Lanes`]: whole vectors plainly, partial ones through a lane
        /// mask (masked-off lanes are neither read nor written).
        macro_rules! masked_io {
            ($e:ty, $v:ty, $lanes:literal, $loadu:ident, $maskload:ident, $storeu:ident,
             $maskstore:ident, $mask:ident) => {
                #[inline]
                #[target_feature(enable = "avx2,fma")]
                unsafe fn load(w: usize, p: *const $e) -> $v {
                    // SAFETY: the caller's: the first w values from p are readable.
                    unsafe { if w >= $lanes { $loadu(p) } else { $maskload(p, $mask(w)) } }
                }
                #[inline]
                #[target_feature(enable = "avx2,fma")]
                unsafe fn store(w: usize, p: *mut $e, v: $v) {
                    // SAFETY: the caller's: the first w values from p are writable.
                    unsafe { if w >= $lanes { $storeu(p, v) } else { $maskstore(p, $mask(w), v) } }
                }
            };
        }

        /// f32, 8 lanes.
        #[derive(Clone, Copy)]
        pub(crate) struct F32x8;
        /// f64, 4 lanes.
        #[derive(Clone, Copy)]
        pub(crate) struct F64x4;

        #[inline]
        #[target_feature(enable = "avx2,fma")]
        fn mask32(w: usize) -> __m256i {
            let i = 8 - w.min(8);
            // SAFETY: 8 values from index i ≤ 8 of a 16-value table.
            unsafe { _mm256_loadu_si256(MASK32.as_ptr().add(i).cast()) }
        }

        #[inline]
        #[target_feature(enable = "avx2,fma")]
        fn mask64(w: usize) -> __m256i {
            let i = 4 - w.min(4);
            // SAFETY: 4 values from index i ≤ 4 of an 8-value table.
            unsafe { _mm256_loadu_si256(MASK64.as_ptr().add(i).cast()) }
        }

        impl Lanes for F32x8 {
            type E = f32;
            type V = __m256;
            const LANES: usize = 8;
            vector_ops!(
                "avx2,fma",
                f32,
                __m256,
                _mm256_setzero_ps,
                _mm256_set1_ps,
                _mm256_fmadd_ps,
                _mm256_add_ps
            );
            masked_io!(
                f32,
                __m256,
                8,
                _mm256_loadu_ps,
                _mm256_maskload_ps,
                _mm256_storeu_ps,
                _mm256_maskstore_ps,
                mask32
            );
            #[inline]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn transpose(src: *const f32, ld_src: usize, dst: *mut f32, ld_dst: usize) {
                let mut r = [_mm256_setzero_ps(); 8];
                for (i, x) in r.iter_mut().enumerate() {
                    // SAFETY: row i of the source block.
                    *x = unsafe { _mm256_loadu_ps(src.add(i * ld_src)) };
                }
                // t[2g + h], 128-bit lane L: columns 4L + 2h, 4L + 2h + 1 of rows 2g, 2g + 1
                // interleaved; u[4q + c], lane L: column 4L + c of rows 4q..4q+4; then the
                // halves of u[c] and u[4 + c] are columns c and 4 + c.
                let mut t = [_mm256_setzero_ps(); 8];
                for g in 0..4 {
                    t[2 * g] = _mm256_unpacklo_ps(r[2 * g], r[2 * g + 1]);
                    t[2 * g + 1] = _mm256_unpackhi_ps(r[2 * g], r[2 * g + 1]);
                }
                let mut u = [_mm256_setzero_ps(); 8];
                for q in 0..2 {
                    let (t0, t1, t2, t3) = (t[4 * q], t[4 * q + 1], t[4 * q + 2], t[4 * q + 3]);
                    u[4 * q] = _mm256_shuffle_ps::<0x44>(t0, t2);
                    u[4 * q + 1] = _mm256_shuffle_ps::<0xEE>(t0, t2);
                    u[4 * q + 2] = _mm256_shuffle_ps::<0x44>(t1, t3);
                    u[4 * q + 3] = _mm256_shuffle_ps::<0xEE>(t1, t3);
                }
                for c in 0..4 {
                    // SAFETY: rows c and 4 + c of the destination block.
                    unsafe {
                        let row = |i: usize| dst.add(i * ld_dst);
                        _mm256_storeu_ps(row(c), _mm256_permute2f128_ps::<0x20>(u[c], u[4 + c]));
                        _mm256_storeu_ps(
                            row(4 + c),
                            _mm256_permute2f128_ps::<0x31>(u[c], u[4 + c]),
                        );
                    }
                }
            }
            fn with_panel<R>(f: impl FnOnce(&mut Vec<f32>) -> R) -> R {
                panel_f32(f)
            }
        }

        impl Lanes for F64x4 {
            type E = f64;
            type V = __m256d;
            const LANES: usize = 4;
            vector_ops!(
                "avx2,fma",
                f64,
                __m256d,
                _mm256_setzero_pd,
                _mm256_set1_pd,
                _mm256_fmadd_pd,
                _mm256_add_pd
            );
            masked_io!(
                f64,
                __m256d,
                4,
                _mm256_loadu_pd,
                _mm256_maskload_pd,
                _mm256_storeu_pd,
                _mm256_maskstore_pd,
                mask64
            );
            #[inline]
            #[target_feature(enable = "avx2,fma")]
            unsafe fn transpose(src: *const f64, ld_src: usize, dst: *mut f64, ld_dst: usize) {
                let mut r = [_mm256_setzero_pd(); 4];
                for (i, x) in r.iter_mut().enumerate() {
                    // SAFETY: row i of the source block.
                    *x = unsafe { _mm256_loadu_pd(src.add(i * ld_src)) };
                }
                // t[2g + h], 128-bit lane L: column 2L + h of rows 2g and 2g + 1; the halves
                // of t[h] and t[2 + h] are then columns h and 2 + h.
                let t = [
                    _mm256_unpacklo_pd(r[0], r[1]),
                    _mm256_unpackhi_pd(r[0], r[1]),
                    _mm256_unpacklo_pd(r[2], r[3]),
                    _mm256_unpackhi_pd(r[2], r[3]),
                ];
                for h in 0..2 {
                    // SAFETY: rows h and 2 + h of the destination block.
                    unsafe {
                        let row = |i: usize| dst.add(i * ld_dst);
                        _mm256_storeu_pd(row(h), _mm256_permute2f128_pd::<0x20>(t[h], t[2 + h]));
                        _mm256_storeu_pd(
                            row(2 + h),
                            _mm256_permute2f128_pd::<0x31>(t[h], t[2 + h]),
                        );
                    }
                }
            }
            fn with_panel<R>(f: impl FnOnce(&mut Vec<f64>) -> R) -> R {
                panel_f64(f)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(m: usize, k: usize, n: usize, a: &[f64], ta: bool, b: &[f64], tb: bool) -> Vec<f64> {
        let at = |i: usize, p: usize| if ta { a[p * m + i] } else { a[i * k + p] };
        let bt = |p: usize, j: usize| if tb { b[j * k + p] } else { b[p * n + j] };
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| at(i, p) * bt(p, j)).sum();
            }
        }
        c
    }

    /// Every layout, both write modes, and shapes with partial tiles (rows past multiples of
    /// 6 and 12, columns past 4, 8, 16 and 32, depths past 4, 8 and 16) on every kernel this
    /// CPU runs, in f32 and f64: within rounding of the definition.
    #[test]
    fn products_match_the_definition_on_every_edge() {
        let kernels = [Kernel::Avx512, Kernel::Avx2, Kernel::Gemm];
        for kernel in kernels.into_iter().filter(|k| k.available()) {
            definition_on_every_edge(kernel);
        }
    }

    fn definition_on_every_edge(kernel: Kernel) {
        for m in [1, 5, 6, 7, 11, 12, 13, 25, 37] {
            for n in [1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 70] {
                for k in [1, 3, 4, 5, 8, 9, 16, 17, 40] {
                    let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
                    let b: Vec<f64> = (0..k * n).map(|i| (i as f64 * 0.11).cos()).collect();
                    let c0: Vec<f64> = (0..m * n).map(|i| (i as f64 * 0.05).sin()).collect();
                    let f = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
                    for (ta, oa) in [(false, Op::N), (true, Op::T)] {
                        for (tb, ob) in [(false, Op::N), (true, Op::T)] {
                            let want = naive(m, k, n, &a, ta, &b, tb);
                            for acc in [false, true] {
                                let want = |idx: usize| want[idx] + if acc { c0[idx] } else { 0.0 };
                                let mut c = f(&c0);
                                matmul_with(kernel, m, k, n, &f(&a), oa, &f(&b), ob, &mut c, acc);
                                for (idx, x) in c.iter().enumerate() {
                                    assert!(
                                        (*x as f64 - want(idx)).abs() < 1e-5 * (k as f64 + 1.0),
                                        "{kernel:?} f32 {m}x{k}x{n} {oa:?}{ob:?} acc {acc} at {idx}: {x}"
                                    );
                                }
                                let mut c = c0.clone();
                                matmul_with(kernel, m, k, n, &a, oa, &b, ob, &mut c, acc);
                                for (idx, x) in c.iter().enumerate() {
                                    assert!(
                                        (x - want(idx)).abs() < 1e-14 * (k as f64 + 1.0),
                                        "{kernel:?} f64 {m}x{k}x{n} {oa:?}{ob:?} acc {acc} at {idx}: {x}"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// On Kestrel's kernels, each element is, per block of 256 depths, the fused multiply-adds
    /// in increasing `p` from zero, added to `c` (the first block written over `c` when not
    /// accumulating): exactly, in f32 and f64, at every edge of the tiles, the transposes of
    /// the packing, the depth blocks and the row chunks — so both kernels give the same bits.
    #[cfg(target_arch = "x86_64")]
    macro_rules! summation_order_test {
        ($name:ident, $kernel:expr, $t:ty) => {
            #[test]
            fn $name() {
                let kernel = $kernel;
                let feature = format!("{kernel:?}").to_lowercase();
                if !kestrel_testkit::cpu_gated(stringify!($name), &feature, kernel.available()) {
                    return;
                }
                for (m, k, n) in [
                    (2, 40, 70),
                    (3, 17, 33),
                    (12, 1, 2),
                    (13, 16, 17),
                    (13, 9, 9),
                    (7, 5, 5),
                    (6, 4, 3),
                    (25, 33, 48),
                    (37, 40, 70),
                    (24, 256, 33),
                    (13, 600, 40),
                    (300, 270, 40),
                ] {
                    let a: Vec<$t> = (0..m * k).map(|i| (i as $t * 0.37).sin()).collect();
                    let b: Vec<$t> = (0..k * n).map(|i| (i as $t * 0.11).cos()).collect();
                    let c0: Vec<$t> = (0..m * n).map(|i| (i as $t * 0.05).sin()).collect();
                    for (ta, oa) in [(false, Op::N), (true, Op::T)] {
                        for (tb, ob) in [(false, Op::N), (true, Op::T)] {
                            let at =
                                |i: usize, p: usize| if ta { a[p * m + i] } else { a[i * k + p] };
                            let bt =
                                |p: usize, j: usize| if tb { b[j * k + p] } else { b[p * n + j] };
                            for acc in [false, true] {
                                let mut c = c0.clone();
                                matmul_with(kernel, m, k, n, &a, oa, &b, ob, &mut c, acc);
                                for i in 0..m {
                                    for j in 0..n {
                                        let block = |p0: usize| {
                                            (p0..k.min(p0 + 256))
                                                .fold(0.0, |s: $t, p| at(i, p).mul_add(bt(p, j), s))
                                        };
                                        let first = block(0);
                                        let mut want =
                                            if acc { c0[i * n + j] + first } else { first };
                                        for p0 in (256..k).step_by(256) {
                                            want += block(p0);
                                        }
                                        assert_eq!(
                                            c[i * n + j].to_bits(),
                                            want.to_bits(),
                                            "{kernel:?} {m}x{k}x{n} {oa:?}{ob:?} acc {acc} ({i}, {j})"
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            }
        };
    }
    #[cfg(target_arch = "x86_64")]
    summation_order_test!(avx512_f32_products_sum_in_the_documented_order, Kernel::Avx512, f32);
    #[cfg(target_arch = "x86_64")]
    summation_order_test!(avx512_f64_products_sum_in_the_documented_order, Kernel::Avx512, f64);
    #[cfg(target_arch = "x86_64")]
    summation_order_test!(avx2_f32_products_sum_in_the_documented_order, Kernel::Avx2, f32);
    #[cfg(target_arch = "x86_64")]
    summation_order_test!(avx2_f64_products_sum_in_the_documented_order, Kernel::Avx2, f64);

    #[test]
    fn all_transpose_combinations_match_the_definition() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f64> = (0..m * k).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..k * n).map(|i| (i as f64 * 0.11).cos()).collect();
        for (ta, oa) in [(false, Op::N), (true, Op::T)] {
            for (tb, ob) in [(false, Op::N), (true, Op::T)] {
                let want = naive(m, k, n, &a, ta, &b, tb);
                let mut c = vec![1.0; m * n];
                matmul(m, k, n, &a, oa, &b, ob, &mut c, false);
                for (x, y) in c.iter().zip(&want) {
                    assert!((x - y).abs() < 1e-12);
                }
                matmul(m, k, n, &a, oa, &b, ob, &mut c, true);
                for (x, y) in c.iter().zip(&want) {
                    assert!((x - 2.0 * y).abs() < 1e-12);
                }
            }
        }
    }
}
