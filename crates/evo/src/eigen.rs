//! Symmetric eigendecomposition with a reusable workspace (faer), for CMA-ES and xNES, and
//! blocked Cholesky factors (faer), for iAMaLGaM's full covariance: the dense linear algebra
//! that is not small (`kestrel_core::linalg` has the rest).

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::evd::{ComputeEigenvectors, self_adjoint_evd, self_adjoint_evd_scratch};
use faer::{Mat, MatMut, Par};

/// Workspace for repeated Cholesky factors of `n × n` symmetric positive definite matrices.
pub(crate) struct CholWork {
    n: usize,
    buf: MemBuffer,
}

impl Clone for CholWork {
    fn clone(&self) -> Self {
        CholWork::new(self.n)
    }
}

impl std::fmt::Debug for CholWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CholWork({})", self.n)
    }
}

impl CholWork {
    pub(crate) fn new(n: usize) -> Self {
        let req = cholesky_in_place_scratch::<f64>(n, Par::Seq, Default::default());
        CholWork { n, buf: MemBuffer::new(req) }
    }

    /// Replaces the symmetric `n × n` matrix in `a` (column-major) by its lower Cholesky
    /// factor `L` (`A = L Lᵀ`), the strict upper triangle zeroed. False when `A` is not
    /// positive definite or not finite (`a` is then unspecified).
    pub(crate) fn factor(&mut self, a: &mut [f64]) -> bool {
        let n = self.n;
        if !a[..n * n].iter().all(|v| v.is_finite()) {
            return false;
        }
        let m = MatMut::from_column_major_slice_mut(&mut a[..n * n], n, n);
        let ok = cholesky_in_place(
            m,
            Default::default(),
            Par::Seq,
            MemStack::new(&mut self.buf),
            Default::default(),
        )
        .is_ok();
        for j in 1..n {
            a[j * n..j * n + j].fill(0.0);
        }
        ok
    }
}

/// The largest condition number (largest over smallest eigenvalue) [`EigenWork::decompose`]
/// leaves a covariance with (pycma stops at 1e14 by default, `tolconditioncov`).
pub(crate) const CONDITION_LIMIT: f64 = 1e15;

/// Workspace for repeated eigendecompositions of `n × n` symmetric matrices.
pub(crate) struct EigenWork {
    n: usize,
    buf: MemBuffer,
    s: faer::diag::Diag<f64>,
}

impl Clone for EigenWork {
    fn clone(&self) -> Self {
        EigenWork::new(self.n)
    }
}

impl std::fmt::Debug for EigenWork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EigenWork({})", self.n)
    }
}

impl EigenWork {
    pub(crate) fn new(n: usize) -> Self {
        let req = self_adjoint_evd_scratch::<f64>(
            n,
            ComputeEigenvectors::Yes,
            Par::Seq,
            Default::default(),
        );
        EigenWork { n, buf: MemBuffer::new(req), s: faer::diag::Diag::zeros(n) }
    }

    /// Plain symmetric eigendecomposition: eigenvectors of `a` into the columns of `v`,
    /// eigenvalues (ascending) into `lambdas`. Returns false if the solver failed.
    pub(crate) fn eigh(&mut self, a: &Mat<f64>, v: &mut Mat<f64>, lambdas: &mut [f64]) -> bool {
        let ok = self_adjoint_evd(
            a.as_ref(),
            self.s.as_mut(),
            Some(v.as_mut()),
            Par::Seq,
            MemStack::new(&mut self.buf),
            Default::default(),
        )
        .is_ok();
        if ok {
            for (i, l) in lambdas.iter_mut().enumerate() {
                *l = self.s[i];
            }
        }
        ok
    }

    /// Regularises `c` in place as evosax does (symmetrise, clip the diagonal at 0 and every
    /// entry at 1e8, add 1e-8 to the diagonal), then writes its eigenvectors to the columns of
    /// `b` and the square roots of its eigenvalues, floored at 1e-8, to `d`. Returns false,
    /// leaving `b` and `d` untouched, if the solver failed.
    ///
    /// Two guards go past evosax, and only bite where its covariance would degenerate: entries
    /// are clipped at −1e8 as well as 1e8 (evosax clips above only, so a covariance left to
    /// random-walk under flat fitness grew eigenvalues of 1e50), and the condition number is
    /// held at [`CONDITION_LIMIT`] (ten times pycma's `tolconditioncov`, so that criterion
    /// still fires first) by adding the same amount to every eigenvalue and to the diagonal,
    /// as pycma's `GaussFullSampler.limit_condition` does: a caller who goes on past the stop
    /// samples from a sane distribution.
    pub(crate) fn decompose(&mut self, c: &mut Mat<f64>, b: &mut Mat<f64>, d: &mut [f64]) -> bool {
        let n = self.n;
        for i in 0..n {
            for j in 0..i {
                let v = 0.5 * (c[(i, j)] + c[(j, i)]);
                c[(i, j)] = v;
                c[(j, i)] = v;
            }
            c[(i, i)] = c[(i, i)].max(0.0);
        }
        for j in 0..n {
            for i in 0..n {
                c[(i, j)] = c[(i, j)].clamp(-1e8, 1e8);
            }
        }
        for i in 0..n {
            c[(i, i)] += 1e-8;
        }
        let ok = self.eigh(c, b, d);
        if ok {
            let (lo, hi) = crate::strategy::min_max(d);
            if hi > CONDITION_LIMIT * lo.max(0.0) {
                let eps = (hi - CONDITION_LIMIT * lo.max(0.0)) / (CONDITION_LIMIT - 1.0);
                d.iter_mut().for_each(|di| *di = di.max(0.0) + eps);
                for i in 0..n {
                    c[(i, i)] += eps;
                }
            }
            d.iter_mut().for_each(|di| *di = di.max(1e-8).sqrt());
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconstructs_a_symmetric_matrix() {
        let n = 6;
        let a = Mat::<f64>::from_fn(n, n, |i, j| {
            1.0 / (1.0 + i as f64 + j as f64) + if i == j { 1.0 } else { 0.0 }
        });
        let (mut c, mut b, mut d) = (a.clone(), Mat::zeros(n, n), vec![0.0; n]);
        assert!(EigenWork::new(n).decompose(&mut c, &mut b, &mut d));
        for i in 0..n {
            for j in 0..n {
                let r: f64 = (0..n).map(|k| b[(i, k)] * d[k] * d[k] * b[(j, k)]).sum();
                assert!((r - a[(i, j)] - if i == j { 1e-8 } else { 0.0 }).abs() < 1e-12, "{i},{j}");
            }
        }
    }
}
