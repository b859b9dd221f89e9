//! Row-major matrix products over the `gemm` crate, single-threaded (parallelism belongs across
//! models, not inside one small product). The only unsafe code in the crate: every call checks
//! the slice lengths against the shapes first, which is all `gemm` needs to stay in bounds.
#![allow(unsafe_code)]

use crate::Float;
use gemm::Parallelism;

/// How an operand is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// As stored (row-major `rows × cols`).
    N,
    /// Transposed.
    T,
}

/// `c = a·b` (`accumulate: false`) or `c += a·b`, where `op(a)` is `m × k`, `op(b)` is `k × n`
/// and `c` is `m × n`, all row-major; `a` is stored `m × k` for `Op::N` and `k × m` for `Op::T`
/// (likewise `b`).
///
/// # Panics
/// If a slice is shorter than its shape.
#[allow(clippy::too_many_arguments)]
pub fn matmul<T: Float>(
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
    assert!(a.len() >= m * k, "matmul: lhs has {} values, needs {}", a.len(), m * k);
    assert!(b.len() >= k * n, "matmul: rhs has {} values, needs {}", b.len(), k * n);
    assert!(c.len() >= m * n, "matmul: dst has {} values, needs {}", c.len(), m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            c[..m * n].iter_mut().for_each(|v| *v = T::ZERO);
        }
        return;
    }
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
