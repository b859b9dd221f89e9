//! Properties of episodic sampling: pairs stay inside one episode and look forward, offsets
//! follow the truncated geometric, independent states cover the episode as each convention
//! says, and batches are split-independent.

use kestrel_core::Key;
use kestrel_replay::{
    EpisodicReplay, EpisodicRuleKind, ReplayError, TruncatedGeometric, discounted_sampling,
};
use proptest::prelude::*;

/// Episodes whose items encode (episode, step) as `1000 e + t`.
fn buffer(lens: &[usize]) -> EpisodicReplay<u32> {
    let mut b = EpisodicReplay::new(lens.iter().sum::<usize>().max(1)).unwrap();
    for (e, &h) in lens.iter().enumerate() {
        let ep: Vec<u32> = (0..h as u32).map(|t| 1000 * e as u32 + t).collect();
        b.add_episode(&ep).unwrap();
    }
    b
}

proptest! {
    #[test]
    fn pairs_stay_in_their_episode_and_look_forward(
        lens in prop::collection::vec(1usize..40, 1..12),
        seed in 0u64..1000,
        discount in 0.0f64..=1.0,
    ) {
        prop_assume!(lens.iter().any(|&h| h >= 2));
        let b = buffer(&lens);
        let (mut s, mut f) = (vec![0u32; 256], vec![0u32; 256]);
        b.sample_pairs(Key::new(seed), discount, &mut s, &mut f).unwrap();
        for (&a, &c) in s.iter().zip(&f) {
            let (ea, ta, ec, tc) = (a / 1000, a % 1000, c / 1000, c % 1000);
            prop_assert_eq!(ea, ec);
            prop_assert!(tc > ta);
            prop_assert!((tc as usize) < lens[ea as usize]);
            prop_assert!(lens[ea as usize] >= 2);
        }
        for conv in [EpisodicRuleKind::PaperCode, EpisodicRuleKind::Asymexp] {
            let mut u = vec![0u32; 256];
            b.sample_states(Key::new(seed), conv, &mut u).unwrap();
            for &x in &u {
                let (e, t) = ((x / 1000) as usize, (x % 1000) as usize);
                let span = if conv == EpisodicRuleKind::PaperCode { lens[e] } else { (lens[e] - 1).max(1) };
                prop_assert!(t < span);
            }
        }
    }

    #[test]
    fn discounted_sampling_stays_in_range(n in 0usize..200, g in 0.0f64..=1.0, seed in 0u64..100) {
        let mut r = Key::new(seed).rng();
        for _ in 0..50 {
            let j = discounted_sampling(&mut r, n, g);
            prop_assert!(j < n.max(1));
        }
    }
}

/// The batch sampler skips `pow` where `1 − γⁿ` is 1, and the tabulated one reads `γⁿ` from its
/// table: every draw is still the formula's, bit for bit, on both sides of the skip, past the
/// table's end (γ = 0.999999) and at the uniform's edges.
#[test]
fn the_batch_geometric_is_the_formula() {
    let formula = |n: usize, g: f64, u: f64| -> usize {
        if n <= 1 || g <= 0.0 {
            return 0;
        }
        let j = if g >= 1.0 {
            (n as f64 * u).floor()
        } else {
            ((1.0 - (1.0 - g.powf(n as f64)) * u).ln() / g.ln()).floor()
        };
        (j as usize).min(n - 1)
    };
    let mut r = Key::new(3).rng();
    let mut skipped = 0;
    for g in [0.0, 1e-300, 1e-5, 0.2, 0.5, 0.9, 0.99, 0.999_999, 1.0] {
        let (t, tab) = (TruncatedGeometric::new(g), TruncatedGeometric::tabulated(g));
        // Horizons around the skip's edge (64 / −log₂ γ) and far beyond it.
        let edge = if g > 0.0 && g < 1.0 { (-64.0 / g.log2()) as usize } else { 0 };
        let near = edge.saturating_sub(3)..edge + 4;
        for n in (0..60).chain(near).chain([400, 463, 1_000, 100_000, 10_000_000]) {
            skipped += usize::from(g > 0.0 && g < 1.0 && (n as f64) * g.log2() < -64.0);
            let mut us = vec![0.0, 0.5, 1.0 - f64::EPSILON, 1.0 - 1e-10, 1e-300];
            us.extend((0..200).map(|_| r.uniform_f64()));
            for u in us {
                let want = formula(n, g, u);
                assert_eq!(t.draw(n, u), want, "n {n}, γ {g}, u {u:e}");
                assert_eq!(tab.draw(n, u), want, "tabulated: n {n}, γ {g}, u {u:e}");
            }
        }
    }
    assert!(skipped > 20, "few horizons reached the skip ({skipped})");
}

#[test]
fn offsets_follow_the_truncated_geometric() {
    // One long episode, i fixed by construction: compare the offset histogram from
    // discounted_sampling with P(j) ∝ γ^j on 0..n.
    let (n, g) = (12usize, 0.8f64);
    let mut r = Key::new(1).rng();
    let mut counts = vec![0usize; n];
    let draws = 200_000;
    for _ in 0..draws {
        counts[discounted_sampling(&mut r, n, g)] += 1;
    }
    let z: f64 = (0..n).map(|j| g.powi(j as i32)).sum();
    for (j, &c) in counts.iter().enumerate() {
        let p = g.powi(j as i32) / z;
        let got = c as f64 / draws as f64;
        assert!((got - p).abs() < 0.005, "P({j}) = {got}, expected {p}");
    }
    // γ = 1 is uniform, γ = 0 always 0.
    assert!((0..1000).all(|_| discounted_sampling(&mut r, 7, 0.0) == 0));
    let mut u = [0usize; 7];
    (0..70_000).for_each(|_| u[discounted_sampling(&mut r, 7, 1.0)] += 1);
    assert!(u.iter().all(|&c| (c as f64 - 10_000.0).abs() < 500.0), "{u:?}");
}

#[test]
fn the_paper_codes_mean_offset() {
    // 51-state episodes (50 steps + the final state), discount 0.9: the mean offset of a pair
    // is the geometric's truncated mean averaged over i, just under 10 (reference §1.4).
    let b = buffer(&vec![51; 40]);
    let (mut s, mut f) = (vec![0u32; 20_000], vec![0u32; 20_000]);
    b.sample_pairs(Key::new(2), 0.9, &mut s, &mut f).unwrap();
    let mean = s.iter().zip(&f).map(|(a, c)| (c - a) as f64).sum::<f64>() / s.len() as f64;
    let exact: f64 = (0..50)
        .map(|i: i32| {
            let n = 50 - i;
            let z: f64 = (0..n).map(|j| 0.9f64.powi(j)).sum();
            (0..n).map(|j| (j + 1) as f64 * 0.9f64.powi(j) / z).sum::<f64>()
        })
        .sum::<f64>()
        / 50.0;
    assert!((mean - exact).abs() < 0.1, "mean offset {mean}, exact {exact}");
}

#[test]
fn batches_are_split_independent_and_errors_are_clear() {
    let b = buffer(&[5, 9, 1, 30]);
    let (mut s, mut f) = (vec![0u32; 64], vec![0u32; 64]);
    b.sample_pairs(Key::new(3), 0.9, &mut s, &mut f).unwrap();
    let (mut s2, mut f2) = (vec![0u32; 16], vec![0u32; 16]);
    b.sample_pairs(Key::new(3), 0.9, &mut s2, &mut f2).unwrap();
    assert_eq!((&s[..16], &f[..16]), (&s2[..], &f2[..]));
    let mut full = EpisodicReplay::<u32>::new(10).unwrap();
    full.add_episode(&[1; 8]).unwrap();
    assert_eq!(
        full.add_episode(&[2; 3]).unwrap_err(),
        ReplayError::Full { len: 8, capacity: 10, episode: 3 }
    );
    assert_eq!(full.len(), 8);
    let single = buffer(&[1, 1]);
    let e = single.sample_pairs(Key::new(0), 0.9, &mut s2, &mut f2).unwrap_err();
    assert!(e.to_string().contains("two or more states"), "{e}");
    assert!(EpisodicReplay::<u32>::new(0).is_err());
    assert!(buffer(&[3]).sample_pairs(Key::new(0), 1.5, &mut s2, &mut f2).is_err());
}
