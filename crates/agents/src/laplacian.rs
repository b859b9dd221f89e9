//! Ground truth for Laplacian representations on grid maps, as the ALLO paper code evaluates
//! them (reference §1.8): eigenvectors of the uniform-random-policy transition matrix `P`
//! (symmetric: each move has probability ¼, blocked moves stay), sorted by decreasing
//! eigenvalue, L2-normalised, sign fixed so the first non-zero entry is positive; eigenvalues
//! grouped into multiplicity blocks; the average cosine similarity over the `d` components
//! (constant vector included), with each degenerate block's learned vectors rotated toward the
//! true ones first. Also the SR-Laplacian eigenvalues of the paper's Table 3,
//! `1 − (1 − λ)/(1 − λ μ)` for the eigenvalues `μ` of `P` (λ = 0.9).

use crate::AgentError;
use faer::{Mat, Side};
use kestrel_core::FromInvalid;
use kestrel_envs::GridMap;

/// Eigenvalues of `P` closer than this are one multiplicity block (the paper code rounds
/// 256-bit eigenvalues to 16 digits; f64 solvers agree to ~1e-14 here).
pub const MULTIPLICITY_TOL: f64 = 1e-9;

/// The first `d` eigenvectors of a map's `P` and what the metric needs.
#[derive(Clone, Debug)]
pub struct GroundTruth {
    /// States.
    pub num_states: usize,
    /// Components.
    pub d: usize,
    /// Eigenvalues of `P`, decreasing (`d` of them).
    pub eigenvalues: Vec<f64>,
    /// Eigenvectors, component-major: `vectors[i * num_states + s]`.
    pub vectors: Vec<f64>,
    /// Multiplicity blocks `(first component, size)` covering `0..d`.
    pub blocks: Vec<(usize, usize)>,
}

/// `P` of the uniform random policy, row-major `S × S`.
pub fn transition_matrix(map: &GridMap) -> Vec<f64> {
    let n = map.num_states();
    let mut p = vec![0.0; n * n];
    for s in 0..n {
        for a in 0..4 {
            p[s * n + map.next[s * 4 + a] as usize] += 0.25;
        }
    }
    p
}

/// Eigen-decomposes `P` and keeps the first `d` components.
pub fn ground_truth(map: &GridMap, d: usize) -> Result<GroundTruth, AgentError> {
    let n = map.num_states();
    if d == 0 || d > n {
        return Err(AgentError::invalid("d", d.to_string(), "1 to the number of free cells"));
    }
    let p = transition_matrix(map);
    let m = Mat::<f64>::from_fn(n, n, |i, j| p[i * n + j]);
    let evd = m.as_ref().self_adjoint_eigen(Side::Lower).map_err(|e| {
        AgentError::invalid(
            "transition matrix",
            format!("{e:?}"),
            "a matrix the symmetric eigensolver converges on",
        )
    })?;
    let (s, u) = (evd.S(), evd.U());
    // faer sorts increasingly; take from the top.
    let mut eigenvalues = Vec::with_capacity(d);
    let mut vectors = Vec::with_capacity(d * n);
    for i in 0..d {
        let col = n - 1 - i;
        eigenvalues.push(s[col]);
        let mut v: Vec<f64> = (0..n).map(|r| u[(r, col)]).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        let first = v.iter().find(|x| x.abs() > 1e-12).copied().unwrap_or(1.0);
        let sign = if first < 0.0 { -1.0 } else { 1.0 };
        v.iter_mut().for_each(|x| *x *= sign / norm);
        vectors.extend(v);
    }
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < d {
        let mut m = 1;
        while i + m < d && (eigenvalues[i + m] - eigenvalues[i]).abs() < MULTIPLICITY_TOL {
            m += 1;
        }
        blocks.push((i, m));
        i += m;
    }
    Ok(GroundTruth { num_states: n, d, eigenvalues, vectors, blocks })
}

impl GroundTruth {
    /// Component `i` (over states).
    pub fn vector(&self, i: usize) -> &[f64] {
        &self.vectors[i * self.num_states..(i + 1) * self.num_states]
    }

    /// SR-Laplacian eigenvalues `1 − (1 − λ)/(1 − λ μ)` (Table 3 uses λ = 0.9).
    pub fn sr_eigenvalues(&self, lambda: f64) -> Vec<f64> {
        self.eigenvalues.iter().map(|&mu| 1.0 - (1.0 - lambda) / (1.0 - lambda * mu)).collect()
    }

    /// Average cosine similarity of a learned representation (`num_states × d`, row-major)
    /// and the per-component similarities. Each learned column is L2-normalised over states;
    /// a simple component scores `|⟨e_i, û_i⟩|`; in a block of multiplicity `m` the learned
    /// columns are first rotated toward the true vectors greedily (the `k`-th rotated vector
    /// is the learned span's best match to `e_k` among directions orthogonal, in coefficient
    /// space, to the ones already chosen).
    pub fn cosine_similarity(&self, learned: &[f64]) -> (f64, Vec<f64>) {
        let (n, d) = (self.num_states, self.d);
        assert_eq!(learned.len(), n * d, "cosine_similarity: learned must be states × d");
        // Normalised learned columns, component-major.
        let mut cols = vec![0.0; n * d];
        for i in 0..d {
            let norm = (0..n).map(|s| learned[s * d + i].powi(2)).sum::<f64>().sqrt().max(1e-12);
            for s in 0..n {
                cols[i * n + s] = learned[s * d + i] / norm;
            }
        }
        let mut sims = vec![0.0; d];
        for &(start, m) in &self.blocks {
            if m == 1 {
                let c: f64 =
                    (0..n).map(|s| self.vectors[start * n + s] * cols[start * n + s]).sum();
                sims[start] = c.abs();
                continue;
            }
            let e = |j: usize| &cols[(start + j) * n..(start + j + 1) * n];
            let mut chosen: Vec<Vec<f64>> = Vec::new();
            for k in 0..m {
                let u = self.vector(start + k);
                let mut w: Vec<f64> =
                    (0..m).map(|j| e(j).iter().zip(u).map(|(a, b)| a * b).sum()).collect();
                for prev in &chosen {
                    let dot: f64 = prev.iter().zip(&w).map(|(a, b)| a * b).sum();
                    w.iter_mut().zip(prev).for_each(|(x, p)| *x -= dot * p);
                }
                let wn = w.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
                w.iter_mut().for_each(|x| *x /= wn);
                let mut approx = vec![0.0; n];
                for (j, wj) in w.iter().enumerate() {
                    approx.iter_mut().zip(e(j)).for_each(|(a, v)| *a += wj * v);
                }
                let an = approx.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
                let c: f64 = approx.iter().zip(u).map(|(a, b)| a * b).sum::<f64>() / an;
                sims[start + k] = c.abs();
                chosen.push(w);
            }
        }
        (sims.iter().sum::<f64>() / d as f64, sims)
    }
}
