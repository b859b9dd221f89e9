//! Ground truth for Laplacian representations on grid maps, as the ALLO paper code evaluates
//! them (reference §1.8): eigenvectors of the uniform-random-policy transition matrix `P`
//! (symmetric: each move has probability ¼, blocked moves stay), sorted by decreasing
//! eigenvalue, L2-normalised, sign fixed so the first non-zero entry is positive; eigenvalues
//! grouped into multiplicity blocks; the average cosine similarity over the `d` components
//! (constant vector included), with each degenerate block's learned vectors rotated toward the
//! true ones first. Also the SR-Laplacian eigenvalues of the paper's Table 3,
//! `1 − (1 − λ)/(1 − λ μ)` for the eigenvalues `μ` of `P` (λ = 0.9).

use crate::error::AgentError;
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
        let norm = kestrel_core::linalg::norm(&v);
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
                let wn = kestrel_core::linalg::norm(&w).max(1e-12);
                w.iter_mut().for_each(|x| *x /= wn);
                let mut approx = vec![0.0; n];
                for (j, wj) in w.iter().enumerate() {
                    approx.iter_mut().zip(e(j)).for_each(|(a, v)| *a += wj * v);
                }
                let an = kestrel_core::linalg::norm(&approx).max(1e-12);
                let c: f64 = approx.iter().zip(u).map(|(a, b)| a * b).sum::<f64>() / an;
                sims[start + k] = c.abs();
                chosen.push(w);
            }
        }
        (sims.iter().sum::<f64>() / d as f64, sims)
    }
}

/// Ground truth of the `asymexp` profile (reference §1.8 "asymexp"), built from the
/// empirical transition counts of the collected data, as `exp_alcl/allo.py` builds it.
///
/// - Thresholded version: `P` = counts summed over actions, every entry clipped to ≥ 1 (a
///   pseudo-count per missing pair), rows normalised; `M = (P + Pᵀ)/2`; eigenvectors of `M`
///   sorted by decreasing `|λ|`.
/// - Final version: `P` with entries clipped to ≥ 1e-8, `SR = (I − γP)⁻¹`, `D` = the visit
///   frequency of source states, and three Laplacians — simple `I − (1−γ)(SR + SRᵀ)/2`,
///   weighted `D − (1−γ)(D SR + SRᵀ D)/2`, inverse-weighted `I − (1−γ)(SR + D⁻¹SRᵀD)/2` (the
///   main target) — each decomposed by a symmetric solver that, like JAX's `eigh`, reads the
///   symmetric part `(A + Aᵀ)/2`, sorted by increasing `|λ|`.
///
/// [`empirical::TruthRuleKind::Reference`] keeps all of that. [`empirical::TruthRuleKind::Fixed`]
/// mends the reference's oddities (its README §5.2–5.3): the thresholded `P` clips at 1e-8
/// (the later fix) and sorts by decreasing `λ`; the final version sorts by increasing `λ`,
/// and decomposes the inverse-weighted Laplacian itself — it is similar to the symmetric
/// `I − (1−γ)(D^½ SR D^−½ + (·)ᵀ)/2`, whose eigenvectors `u` give its own as `D^−½ u` (states
/// never visited get 0) — where the reference decomposes its symmetric part.
pub mod empirical {
    use crate::error::AgentError;
    use faer::linalg::solvers::DenseSolveCore;
    use faer::{Mat, Side};
    use kestrel_core::FromInvalid;

    /// Reference behaviour or its mended form (config spelling `reference`, `fixed`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum TruthRuleKind {
        /// As the reference computes it, oddities included.
        #[default]
        Reference,
        /// The oddities mended (see the module docs).
        Fixed,
    }

    /// One decomposed matrix: the matrix, all eigenvalues in the rule's order, the first `k`
    /// eigenvectors (`S × k`, row-major, unit norm).
    #[derive(Clone, Debug, PartialEq)]
    pub struct Decomposed {
        /// The matrix, `S × S` row-major.
        pub matrix: Vec<f64>,
        /// Every eigenvalue, sorted.
        pub eigenvalues: Vec<f64>,
        /// The first `k` eigenvectors, `S × k`.
        pub vectors: Vec<f64>,
        /// `k`.
        pub k: usize,
    }

    impl Decomposed {
        /// States.
        pub fn num_states(&self) -> usize {
            self.vectors.len() / self.k.max(1)
        }
    }

    /// `Σ_a counts[4 s + a]` into `P[s, next(s, a)]`: the `S × S` count matrix.
    pub fn count_matrix(counts: &[u64], next: &[u32], n: usize) -> Vec<f64> {
        let mut c = vec![0.0; n * n];
        for s in 0..n {
            for a in 0..4 {
                c[s * n + next[s * 4 + a] as usize] += counts[s * 4 + a] as f64;
            }
        }
        c
    }

    /// Row-normalised counts with every entry clipped to at least `floor`.
    pub fn transition_matrix(counts: &[f64], n: usize, floor: f64) -> Vec<f64> {
        let mut p: Vec<f64> = counts.iter().map(|&c| c.max(floor)).collect();
        for row in p.chunks_mut(n) {
            let sum: f64 = row.iter().sum();
            row.iter_mut().for_each(|v| *v /= sum);
        }
        p
    }

    fn flat(m: &Mat<f64>) -> Vec<f64> {
        let n = m.nrows();
        (0..n * n).map(|i| m[(i / n, i % n)]).collect()
    }

    /// Eigen-decomposition of `(A + Aᵀ)/2`, sorted by `key` (stable), first `k` vectors.
    fn decompose(
        a: Vec<f64>,
        n: usize,
        k: usize,
        key: impl Fn(f64) -> f64,
    ) -> Result<Decomposed, AgentError> {
        if let Some(i) = a.iter().position(|v| !v.is_finite()) {
            return Err(AgentError::invalid(
                "ground truth",
                format!("entry ({}, {}) is {}", i / n, i % n, a[i]),
                "a finite matrix",
            ));
        }
        let m = Mat::<f64>::from_fn(n, n, |i, j| 0.5 * (a[i * n + j] + a[j * n + i]));
        let evd = m.as_ref().self_adjoint_eigen(Side::Lower).map_err(|e| {
            AgentError::invalid(
                "ground truth",
                format!("{e:?}"),
                "a matrix the solver converges on",
            )
        })?;
        let (s, u) = (evd.S(), evd.U());
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&i, &j| key(s[i]).total_cmp(&key(s[j])));
        let eigenvalues = order.iter().map(|&i| s[i]).collect();
        let mut vectors = vec![0.0; n * k];
        for (c, &i) in order.iter().take(k).enumerate() {
            for r in 0..n {
                vectors[r * k + c] = u[(r, i)];
            }
        }
        Ok(Decomposed { matrix: a, eigenvalues, vectors, k })
    }

    fn check(n: usize, k: usize, counts: &[u64], next: &[u32]) -> Result<(), AgentError> {
        if n == 0 || counts.len() != 4 * n || next.len() != 4 * n {
            return Err(AgentError::invalid(
                "counts",
                format!("{} counts, {} moves for {n} states", counts.len(), next.len()),
                "four per state",
            ));
        }
        if k == 0 || k > n {
            return Err(AgentError::invalid("num_eigenvectors", k, format!("1 to the {n} states")));
        }
        Ok(())
    }

    /// The thresholded version's truth: the symmetrised transition matrix.
    pub fn thresholded(
        counts: &[u64],
        next: &[u32],
        n: usize,
        k: usize,
        rule: TruthRuleKind,
    ) -> Result<Decomposed, AgentError> {
        check(n, k, counts, next)?;
        let floor = if rule == TruthRuleKind::Reference { 1.0 } else { 1e-8 };
        let p = transition_matrix(&count_matrix(counts, next, n), n, floor);
        let m: Vec<f64> = (0..n * n).map(|i| (p[i] + p[(i % n) * n + i / n]) / 2.0).collect();
        match rule {
            TruthRuleKind::Reference => decompose(m, n, k, |l| -l.abs()),
            TruthRuleKind::Fixed => decompose(m, n, k, |l| -l),
        }
    }

    /// The final version's truths.
    #[derive(Clone, Debug)]
    pub struct FinalTruth {
        /// `P` (clipped at 1e-8, row-normalised).
        pub transition: Vec<f64>,
        /// Visit frequency of each source state.
        pub sampling_probs: Vec<f64>,
        /// `(I − γP)⁻¹`.
        pub successor: Vec<f64>,
        /// `I − (1−γ)(SR + SRᵀ)/2`.
        pub simple: Decomposed,
        /// `D − (1−γ)(D SR + SRᵀ D)/2`.
        pub weighted: Decomposed,
        /// `I − (1−γ)(SR + D⁻¹SRᵀD)/2`, the main target.
        pub invweighted: Decomposed,
    }

    /// The final version's truth with discount `gamma`. Under [`TruthRuleKind::Reference`], a
    /// state never left (a goal) makes `D` singular and the inverse-weighted truth NaN in the
    /// reference: that is an error here, naming the state and the switch that mends it.
    pub fn final_truth(
        counts: &[u64],
        next: &[u32],
        n: usize,
        k: usize,
        gamma: f64,
        rule: TruthRuleKind,
    ) -> Result<FinalTruth, AgentError> {
        check(n, k, counts, next)?;
        if !(0.0..1.0).contains(&gamma) {
            return Err(AgentError::invalid(
                "discount",
                gamma,
                "in [0, 1) for the ground truth's SR",
            ));
        }
        let c = count_matrix(counts, next, n);
        let p = transition_matrix(&c, n, 1e-8);
        let visits: Vec<f64> =
            (0..n).map(|s| counts[4 * s..4 * s + 4].iter().sum::<u64>() as f64).collect();
        let total: f64 = visits.iter().sum();
        if total == 0.0 {
            return Err(AgentError::invalid("counts", "no transition", "collected data"));
        }
        let d: Vec<f64> = visits.iter().map(|v| v / total).collect();
        let a =
            Mat::<f64>::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 } - gamma * p[i * n + j]);
        let sr_m = a.partial_piv_lu().inverse();
        let sr = flat(&sr_m);
        let srt = |i: usize, j: usize| sr[j * n + i];
        let g = 1.0 - gamma;
        let eye = |i: usize, j: usize| if i == j { 1.0 } else { 0.0 };
        let simple: Vec<f64> = (0..n * n)
            .map(|x| {
                let (i, j) = (x / n, x % n);
                eye(i, j) - g * (sr[x] + srt(i, j)) / 2.0
            })
            .collect();
        let weighted: Vec<f64> = (0..n * n)
            .map(|x| {
                let (i, j) = (x / n, x % n);
                eye(i, j) * d[i] - g * (d[i] * sr[x] + srt(i, j) * d[j]) / 2.0
            })
            .collect();
        let key: fn(f64) -> f64 = match rule {
            TruthRuleKind::Reference => f64::abs,
            TruthRuleKind::Fixed => |l| l,
        };
        let invweighted = match rule {
            TruthRuleKind::Reference => {
                if let Some(s) = d.iter().position(|&v| v == 0.0) {
                    return Err(AgentError::invalid(
                        "ground truth",
                        format!(
                            "state {s} is never left (a goal?): D is singular and the reference's inverse-weighted truth is NaN"
                        ),
                        "truth = \"fixed\" (D's pseudo-inverse, the Laplacian decomposed through its symmetric similar form)",
                    ));
                }
                let m: Vec<f64> = (0..n * n)
                    .map(|x| {
                        let (i, j) = (x / n, x % n);
                        eye(i, j) - g * (sr[x] + srt(i, j) * d[j] / d[i]) / 2.0
                    })
                    .collect();
                decompose(m, n, k, key)?
            }
            TruthRuleKind::Fixed => {
                // L = D^−½ S D^½ with S = I − (1−γ)(M + Mᵀ)/2, M = D^½ SR D^−½ (on visited
                // states; unvisited ones are dropped from M and get 0 in the vectors).
                let h: Vec<f64> = d.iter().map(|v| v.sqrt()).collect();
                let ih: Vec<f64> = h.iter().map(|&v| if v > 0.0 { 1.0 / v } else { 0.0 }).collect();
                let mm = |i: usize, j: usize| h[i] * sr[i * n + j] * ih[j];
                let s: Vec<f64> = (0..n * n)
                    .map(|x| {
                        let (i, j) = (x / n, x % n);
                        eye(i, j) - g * (mm(i, j) + mm(j, i)) / 2.0
                    })
                    .collect();
                let mut dec = decompose(s, n, k, key)?;
                for c in 0..k {
                    let mut norm = 0.0;
                    for r in 0..n {
                        dec.vectors[r * k + c] *= ih[r];
                        norm += dec.vectors[r * k + c].powi(2);
                    }
                    let norm = norm.sqrt().max(1e-300);
                    (0..n).for_each(|r| dec.vectors[r * k + c] /= norm);
                }
                dec.matrix = (0..n * n)
                    .map(|x| {
                        let (i, j) = (x / n, x % n);
                        eye(i, j) - g * (sr[x] + ih[i] * ih[i] * srt(i, j) * d[j]) / 2.0
                    })
                    .collect();
                dec
            }
        };
        Ok(FinalTruth {
            transition: p,
            sampling_probs: d,
            simple: decompose(simple, n, k, key)?,
            weighted: decompose(weighted, n, k, key)?,
            invweighted,
            successor: sr,
        })
    }

    /// The reference's metric: per component `|⟨f_i, g_i⟩| / (‖f_i‖ ‖g_i‖ + 1e-10)` of the
    /// learned features (`S × d`) and the truth's vectors (`S × k`), over the first
    /// `min(d, k)` components, and their mean (no degeneracy handling, as the reference).
    pub fn cosine(learned: &[f64], d: usize, truth: &Decomposed) -> (f64, Vec<f64>) {
        let (n, k) = (truth.num_states(), truth.k);
        let m = d.min(k);
        let sims: Vec<f64> = (0..m)
            .map(|i| {
                let (mut dot, mut a, mut b) = (0.0, 0.0, 0.0);
                for s in 0..n {
                    let (f, g) = (learned[s * d + i], truth.vectors[s * k + i]);
                    dot += f * g;
                    a += f * f;
                    b += g * g;
                }
                (dot / (a.sqrt() * b.sqrt() + 1e-10)).abs()
            })
            .collect();
        (sims.iter().sum::<f64>() / m.max(1) as f64, sims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A corridor of `n` free cells: its `P` is `I − L/4` for the path graph's Laplacian `L`
    /// (moves into the walls stay), so the eigenvalues are `(1 + cos(πk/n))/2` with
    /// eigenvectors `cos(πk(j + ½)/n)` (the discrete cosine basis).
    fn corridor(n: usize) -> GridMap {
        GridMap::from_cells("corridor", 1, n, vec![true; n]).unwrap()
    }

    #[test]
    fn corridor_spectrum_is_the_cosine_basis() {
        let n = 7;
        let map = corridor(n);
        assert_eq!(map.num_states(), n);
        let p = transition_matrix(&map);
        for s in 0..n {
            assert_eq!(p[s * n..(s + 1) * n].iter().sum::<f64>(), 1.0, "row {s} is a distribution");
        }
        let gt = ground_truth(&map, n).unwrap();
        let pi = std::f64::consts::PI;
        for k in 0..n {
            let want = (1.0 + (pi * k as f64 / n as f64).cos()) / 2.0;
            assert!((gt.eigenvalues[k] - want).abs() < 1e-12, "eigenvalue {k}");
            let basis: Vec<f64> =
                (0..n).map(|j| (pi * k as f64 * (j as f64 + 0.5) / n as f64).cos()).collect();
            let norm = kestrel_core::linalg::norm(&basis);
            let dot: f64 = gt.vector(k).iter().zip(&basis).map(|(a, b)| a * b / norm).sum();
            assert!((dot.abs() - 1.0).abs() < 1e-10, "vector {k}: {dot}");
            let first = gt.vector(k).iter().find(|x| x.abs() > 1e-12).unwrap();
            assert!(*first > 0.0, "sign fixed: first non-zero entry positive");
        }
        assert_eq!(
            gt.blocks,
            (0..n).map(|i| (i, 1)).collect::<Vec<_>>(),
            "a path has no repeated eigenvalue"
        );
        // SR-Laplacian eigenvalues: 0 for the constant vector, increasing after.
        let sr = gt.sr_eigenvalues(0.9);
        assert!(sr[0].abs() < 1e-12 && sr.windows(2).all(|w| w[0] < w[1]));
        assert!(ground_truth(&map, 0).unwrap_err().to_string().contains("d = 0"));
        assert!(ground_truth(&map, n + 1).is_err());
    }

    /// The cosine similarity is 1 for the truth itself (any sign and scale per column), below 1
    /// for a permuted one, and inside a degenerate block (the open room's symmetric pairs) it
    /// does not depend on how the learned columns span the block.
    #[test]
    fn cosine_similarity_scores_the_truth_one_and_rotations_alike() {
        let map = GridMap::from_cells("room", 4, 4, vec![true; 16]).unwrap();
        let (n, d) = (map.num_states(), 4);
        let gt = ground_truth(&map, d).unwrap();
        assert!(gt.blocks.iter().any(|&(_, m)| m == 2), "{:?}", gt.blocks);
        let as_learned = |cols: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
            (0..n * d).map(|x| cols(x / d, x % d)).collect()
        };
        let truth = as_learned(&|s, i| gt.vector(i)[s] * if i % 2 == 0 { -3.0 } else { 0.5 });
        let (avg, sims) = gt.cosine_similarity(&truth);
        assert!((avg - 1.0).abs() < 1e-12 && sims.iter().all(|s| (s - 1.0).abs() < 1e-12));
        let (b, _) = *gt.blocks.iter().find(|&&(_, m)| m == 2).unwrap();
        let (c, s) = (0.6, 0.8);
        let rotated = as_learned(&|st, i| match i {
            i if i == b => c * gt.vector(b)[st] + s * gt.vector(b + 1)[st],
            i if i == b + 1 => -s * gt.vector(b)[st] + c * gt.vector(b + 1)[st],
            i => gt.vector(i)[st],
        });
        assert!(
            (gt.cosine_similarity(&rotated).0 - 1.0).abs() < 1e-12,
            "a rotation within the block"
        );
        let swapped = as_learned(&|st, i| {
            gt.vector(if i == 0 {
                d - 1
            } else if i == d - 1 {
                0
            } else {
                i
            })[st]
        });
        assert!(gt.cosine_similarity(&swapped).0 < 0.75);
    }
}
