//! Small dense linear algebra, the one home for it (symmetric eigendecompositions stay on
//! faer, in `kestrel-evo`'s `eigen`): Euclidean norms (the evolution strategies' step-size
//! paths), Cholesky factors and SPD inverses of MPPI's noise covariances (at most
//! `MAX_NU × MAX_NU`), and small linear solves (actdyn's affine latent fit). Row-major
//! slices, no allocation, a fixed order of operations (the golden tests pin their bits).

/// The Euclidean norm of `v` (the sum of squares in order, then its root).
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Writes the lower Cholesky factor of the row-major `n × n` matrix `a` into `l` (row-major,
/// upper part zeroed). False when `a` is not symmetric (to 1e-12 relative) or not positive
/// definite; `l` is then unspecified.
pub fn cholesky(a: &[f64], n: usize, l: &mut [f64]) -> bool {
    if a.len() < n * n || l.len() < n * n {
        return false;
    }
    l[..n * n].fill(0.0);
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            if i == j {
                let d = a[i * n + i] - s;
                if !(d > 0.0 && d.is_finite()) {
                    return false;
                }
                l[i * n + i] = d.sqrt();
            } else {
                // The factor reads the lower triangle; an upper one that differs is an error,
                // never silently ignored.
                if (a[i * n + j] - a[j * n + i]).abs() > 1e-12 * a[i * n + j].abs().max(1.0) {
                    return false;
                }
                l[i * n + j] = (a[i * n + j] - s) / l[j * n + j];
            }
        }
    }
    true
}

/// Writes `A⁻¹` (row-major `n × n`) from the Cholesky factor `l` of `A` into `inv`, solving
/// `L Lᵀ X = I` column by column.
pub fn inverse_spd(l: &[f64], n: usize, inv: &mut [f64]) {
    inv[..n * n].fill(0.0);
    let mut y = [0.0; 64];
    let mut y_heap = Vec::new();
    let y: &mut [f64] = if n <= 64 {
        &mut y[..n]
    } else {
        y_heap.resize(n, 0.0);
        &mut y_heap
    };
    for c in 0..n {
        for i in 0..n {
            let s: f64 = (0..i).map(|k| l[i * n + k] * y[k]).sum();
            y[i] = (if i == c { 1.0 } else { 0.0 } - s) / l[i * n + i];
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|k| l[k * n + i] * inv[k * n + c]).sum();
            inv[i * n + c] = (y[i] - s) / l[i * n + i];
        }
    }
}

/// Solves `a x = b` for `m` right-hand sides by Gaussian elimination with partial pivoting:
/// `a` is row-major `n × n` (overwritten), `b` row-major `n × m` (overwritten with `x`).
/// False when a pivot is below 1e-300 in magnitude (singular).
pub fn solve(a: &mut [f64], n: usize, b: &mut [f64], m: usize) -> bool {
    for c in 0..n {
        let Some(p) = (c..n).max_by(|&i, &j| a[i * n + c].abs().total_cmp(&a[j * n + c].abs()))
        else {
            return false;
        };
        if a[p * n + c].abs() < 1e-300 {
            return false;
        }
        if p != c {
            for k in 0..n {
                a.swap(c * n + k, p * n + k);
            }
            for k in 0..m {
                b.swap(c * m + k, p * m + k);
            }
        }
        for r in c + 1..n {
            let f = a[r * n + c] / a[c * n + c];
            for k in c..n {
                a[r * n + k] -= f * a[c * n + k];
            }
            for k in 0..m {
                b[r * m + k] -= f * b[c * m + k];
            }
        }
    }
    for c in (0..n).rev() {
        for k in 0..m {
            let s: f64 = (c + 1..n).map(|j| a[c * n + j] * b[j * m + k]).sum();
            b[c * m + k] = (b[c * m + k] - s) / a[c * n + c];
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_and_inverse_of_an_spd_matrix() {
        let a = [4.0, 2.0, 2.0, 3.0];
        let mut l = [9.0; 4];
        assert!(cholesky(&a, 2, &mut l));
        assert_eq!(l[1], 0.0);
        let mut inv = [0.0; 4];
        inverse_spd(&l, 2, &mut inv);
        let id = [
            a[0] * inv[0] + a[1] * inv[2],
            a[0] * inv[1] + a[1] * inv[3],
            a[2] * inv[0] + a[3] * inv[2],
            a[2] * inv[1] + a[3] * inv[3],
        ];
        for (x, y) in id.iter().zip([1.0, 0.0, 0.0, 1.0]) {
            assert!((x - y).abs() < 1e-12);
        }
        assert!(!cholesky(&[1.0, 2.0, 2.0, 1.0], 2, &mut l), "indefinite");
        assert!(!cholesky(&[1.0, 0.5, 0.4, 1.0], 2, &mut l), "not symmetric");
        assert!(!cholesky(&[1.0, 0.0, 0.0, f64::NAN], 2, &mut l), "NaN");
        assert!(!cholesky(&[1.0], 2, &mut l), "too short");
    }

    #[test]
    fn solves_with_pivoting_and_refuses_singular_systems() {
        // The first pivot is 0: only row exchanges solve it.
        let mut a = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 2.0, 0.0, 3.0];
        let x = [[1.0, -2.0], [0.5, 4.0], [-1.0, 0.25]];
        let a0 = a;
        let mut b = [0.0; 6];
        for r in 0..3 {
            for k in 0..2 {
                b[r * 2 + k] = (0..3).map(|j| a0[r * 3 + j] * x[j][k]).sum();
            }
        }
        assert!(solve(&mut a, 3, &mut b, 2));
        for r in 0..3 {
            for k in 0..2 {
                assert!((b[r * 2 + k] - x[r][k]).abs() < 1e-12, "{b:?}");
            }
        }
        let mut s = [1.0, 2.0, 2.0, 4.0];
        assert!(!solve(&mut s, 2, &mut [1.0, 1.0], 1));
    }
}
