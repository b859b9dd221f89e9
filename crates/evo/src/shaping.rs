//! Fitness shaping as plain functions. All treat NaN and ±inf as the worst values.

/// A shaping choice for strategies that take one ([`crate::open_es::OpenEs`], [`crate::pgpe::Pgpe`]).
/// Rank-weighted strategies (CMA-ES family, SNES, xNES) shape by their recombination
/// weights instead.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShapingKind {
    /// Centred ranks in `[-0.5, 0.5]` (evosax's default for both).
    #[default]
    CenteredRank,
    /// Z-scores of the finite values.
    ZScore,
    /// The fitness itself (non-finite values replaced by the worst finite one, or 0).
    Raw,
}

impl ShapingKind {
    /// Writes the shaped fitness (lower is better) into `out`; `order` is scratch.
    pub fn apply(self, fitness: &[f32], order: &mut [usize], out: &mut [f64]) {
        match self {
            ShapingKind::CenteredRank => centered_ranks(fitness, order, out),
            ShapingKind::ZScore => z_score(fitness, out),
            ShapingKind::Raw => {
                let worst = fitness
                    .iter()
                    .copied()
                    .filter(|f| f.is_finite())
                    .fold(f32::NEG_INFINITY, f32::max);
                let worst = if worst.is_finite() { worst as f64 } else { 0.0 };
                for (o, &f) in out.iter_mut().zip(fitness) {
                    *o = if f.is_finite() { f as f64 } else { worst };
                }
            }
        }
    }
}

/// Zero-based ranks of `fitness` (ascending; ties get the average rank, as
/// `scipy.stats.rankdata`), non-finite values ranked last. `order` is scratch of the same
/// length.
pub fn ranks(fitness: &[f32], order: &mut [usize], out: &mut [f64]) {
    assert!(out.len() == fitness.len(), "ranks: buffers must match fitness");
    tie_groups(fitness, order, |k, lo, hi| out[k] = (lo + hi) as f64 / 2.0);
}

/// Sorts `fitness` (non-finite values last, ties in index order) and calls `emit(k, lo, hi)`
/// for every row `k`, where `lo..=hi` are the sorted positions of `k`'s tie group.
#[inline]
fn tie_groups(fitness: &[f32], order: &mut [usize], mut emit: impl FnMut(usize, usize, usize)) {
    let n = fitness.len();
    let key = |f: f32| if f.is_finite() { f } else { f32::INFINITY };
    stable_order(fitness, order);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && key(fitness[order[j + 1]]) == key(fitness[order[i]]) {
            j += 1;
        }
        for &k in &order[i..=j] {
            emit(k, i, j);
        }
        i = j + 1;
    }
}

/// Ordinal ranks `0..n` by fitness, ties in index order and non-finite values last (a stable
/// `argsort`'s positions, as evosax's learned strategies rank: `learned_evolution/
/// fitness_shaping.py`'s `rank`).
pub fn ordinal_ranks(fitness: &[f32], order: &mut [usize], out: &mut [f64]) {
    assert!(out.len() == fitness.len(), "ordinal_ranks: buffers must match fitness");
    stable_order(fitness, order);
    for (p, &k) in order.iter().enumerate() {
        out[k] = p as f64;
    }
}

/// The rows sorted by fitness into `order`: non-finite values last, ties in index order.
#[inline]
fn stable_order(fitness: &[f32], order: &mut [usize]) {
    let n = fitness.len();
    assert!(order.len() == n, "ranks: buffers must match fitness");
    let key = |f: f32| if f.is_finite() { f } else { f32::INFINITY };
    if usize::BITS == 64 && n <= u32::MAX as usize {
        // The stable order as one integer sort: each entry is the key's total-order bits
        // (`f32::total_cmp`'s) above its index.
        for (i, o) in order.iter_mut().enumerate() {
            let b = key(fitness[i]).to_bits();
            let k = if b >> 31 != 0 { !b } else { b | 1 << 31 };
            *o = ((k as u64) << 32 | i as u64) as usize;
        }
        order.sort_unstable();
        for o in order.iter_mut() {
            *o = (*o as u64 & 0xffff_ffff) as usize;
        }
    } else {
        // Unstable sort with the index as tiebreak: the stable order, without the merge
        // sort's buffer.
        for (i, o) in order.iter_mut().enumerate() {
            *o = i;
        }
        order
            .sort_unstable_by(|&a, &b| key(fitness[a]).total_cmp(&key(fitness[b])).then(a.cmp(&b)));
    }
}

/// Centred ranks in `[-0.5, 0.5]` (evosax `centered_rank_fitness_shaping_fn`).
pub fn centered_ranks(fitness: &[f32], order: &mut [usize], out: &mut [f64]) {
    ranks(fitness, order, out);
    let d = (fitness.len().max(2) - 1) as f64;
    out.iter_mut().for_each(|r| *r = *r / d - 0.5);
}

/// Z-scores over the finite values (non-finite get the largest finite z-score + 1).
pub fn z_score(fitness: &[f32], out: &mut [f64]) {
    let fin = fitness.iter().filter(|f| f.is_finite());
    let n = fin.clone().count().max(1) as f64;
    let mean = fin.clone().map(|&f| f as f64).sum::<f64>() / n;
    let var = fin.map(|&f| (f as f64 - mean).powi(2)).sum::<f64>() / n;
    let sd = (var + 1e-8).sqrt();
    let mut worst = f64::NEG_INFINITY;
    for (o, &f) in out.iter_mut().zip(fitness) {
        *o = (f as f64 - mean) / sd;
        if f.is_finite() {
            worst = worst.max(*o);
        }
    }
    for (o, &f) in out.iter_mut().zip(fitness) {
        if !f.is_finite() {
            *o = if worst.is_finite() { worst + 1.0 } else { 0.0 };
        }
    }
}

/// Rank-based weights: row `i` gets `weights[floor(rank_i)]` (evosax
/// `weights_fitness_shaping_fn`); all zeros when every value is non-finite.
pub fn rank_weights(fitness: &[f32], weights: &[f64], order: &mut [usize], out: &mut [f64]) {
    assert!(out.len() == fitness.len(), "rank_weights: buffers must match fitness");
    if fitness.iter().all(|f| !f.is_finite()) {
        out.fill(0.0);
        return;
    }
    // floor of the average rank (lo + hi) / 2.
    tie_groups(fitness, order, |k, lo, hi| out[k] = weights[(lo + hi) / 2]);
}

/// [`rank_weights`] for two weight vectors from one sort (CR-FM-NES ranks into its rank
/// weights and its distance weights' base): `out_a[i] = a[floor(rank_i)]`, `out_b` likewise.
pub fn rank_weights_pair(
    fitness: &[f32],
    (a, b): (&[f64], &[f64]),
    order: &mut [usize],
    (out_a, out_b): (&mut [f64], &mut [f64]),
) {
    assert!(out_a.len() == fitness.len() && out_b.len() == fitness.len(), "rank_weights_pair");
    if fitness.iter().all(|f| !f.is_finite()) {
        out_a.fill(0.0);
        out_b.fill(0.0);
        return;
    }
    tie_groups(fitness, order, |k, lo, hi| {
        out_a[k] = a[(lo + hi) / 2];
        out_b[k] = b[(lo + hi) / 2];
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_pair_is_two_rank_weights_from_one_sort() {
        let f = [3.0, f32::NAN, 1.0, 1.0, -2.0];
        let (a, b) = ([5.0, 4.0, 3.0, 2.0, 1.0], [0.5, 0.4, 0.3, 0.2, 0.1]);
        let (mut o, mut wa, mut wb, mut ra, mut rb) =
            ([0; 5], [0.0; 5], [0.0; 5], [0.0; 5], [0.0; 5]);
        rank_weights_pair(&f, (&a, &b), &mut o, (&mut wa, &mut wb));
        rank_weights(&f, &a, &mut o, &mut ra);
        rank_weights(&f, &b, &mut o, &mut rb);
        assert_eq!((wa, wb), (ra, rb));
    }

    #[test]
    fn average_ties_and_nan_last() {
        let f = [3.0, 1.0, f32::NAN, 1.0, f32::INFINITY];
        let mut o = [0; 5];
        let mut r = [0.0; 5];
        ranks(&f, &mut o, &mut r);
        assert_eq!(r, [2.0, 0.5, 3.5, 0.5, 3.5]);
    }

    proptest! {
        #[test]
        fn ranks_are_counts_of_smaller_and_equal_values(
            f in proptest::collection::vec(
                prop_oneof![
                    Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(-0.0f32),
                    Just(0.0f32), (-4i8..4).prop_map(|v| v as f32), -1e3f32..1e3,
                ],
                1..80,
            )
        ) {
            let n = f.len();
            let (mut o, mut r) = (vec![0; n], vec![0.0; n]);
            ranks(&f, &mut o, &mut r);
            let key = |v: f32| if v.is_finite() { v } else { f32::INFINITY };
            for i in 0..n {
                let less = f.iter().filter(|&&v| key(v) < key(f[i])).count();
                let same = f.iter().filter(|&&v| key(v) == key(f[i])).count();
                prop_assert_eq!(r[i], less as f64 + (same - 1) as f64 / 2.0);
            }
            let weights: Vec<f64> = (0..n).map(|i| (i as f64 + 1.0).ln()).collect();
            let mut w = vec![0.0; n];
            rank_weights(&f, &weights, &mut o, &mut w);
            let all_failed = f.iter().all(|v| !v.is_finite());
            for i in 0..n {
                prop_assert_eq!(w[i], if all_failed { 0.0 } else { weights[r[i].floor() as usize] });
            }
        }

        #[test]
        fn rank_shaping_is_invariant_to_monotone_transforms(f in proptest::collection::vec(-1e3f32..1e3, 2..40)) {
            let n = f.len();
            let g: Vec<f32> = f.iter().map(|&x| (x / 100.0).exp() * 3.0 - 7.0).collect();
            let (mut o, mut a, mut b) = (vec![0; n], vec![0.0; n], vec![0.0; n]);
            centered_ranks(&f, &mut o, &mut a);
            centered_ranks(&g, &mut o, &mut b);
            // exp can merge close values into ties; where it does not, the order is strict.
            for i in 0..n { for j in 0..n {
                if f[i] < f[j] {
                    prop_assert!(a[i] < a[j]);
                    let strict = g[i] < g[j];
                    prop_assert!(if strict { b[i] < b[j] } else { b[i] <= b[j] }, "{} {}", b[i], b[j]);
                }
            }}
            prop_assert!(a.iter().all(|v| (-0.5..=0.5).contains(v)));
            // Centred: the ranks sum to zero, the best and worst at the ends when all differ.
            prop_assert!(a.iter().sum::<f64>().abs() < 1e-9);
            let mut s = f.clone();
            s.sort_by(f32::total_cmp);
            if s.windows(2).all(|w| w[0] < w[1]) {
                let (lo, hi) = a.iter().fold((1.0f64, -1.0f64), |(l, h), &v| (l.min(v), h.max(v)));
                prop_assert_eq!((lo, hi), (-0.5, 0.5));
            }
        }

        #[test]
        fn z_scores_are_finite(f in proptest::collection::vec(prop_oneof![Just(f32::NAN), -1e6f32..1e6], 1..30)) {
            let mut out = vec![0.0; f.len()];
            z_score(&f, &mut out);
            prop_assert!(out.iter().all(|v| v.is_finite()));
            // Over the finite values: mean 0 and, where they spread, unit deviation; a failed
            // (non-finite) value is worse than every finite one.
            let fin: Vec<f64> = f.iter().zip(&out).filter(|(v, _)| v.is_finite()).map(|(_, &z)| z).collect();
            if !fin.is_empty() {
                let m = fin.iter().sum::<f64>() / fin.len() as f64;
                prop_assert!(m.abs() < 1e-6, "mean {}", m);
                let var = fin.iter().map(|z| (z - m).powi(2)).sum::<f64>() / fin.len() as f64;
                let spread = f.iter().filter(|v| v.is_finite()).any(|&v| (v - f.iter().copied().find(|x| x.is_finite()).unwrap()).abs() > 1.0);
                if spread {
                    prop_assert!((var - 1.0).abs() < 1e-6, "var {}", var);
                }
                let worst = fin.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                for (v, z) in f.iter().zip(&out) {
                    if !v.is_finite() { prop_assert!(*z > worst); }
                }
            }
        }
    }
}
