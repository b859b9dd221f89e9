//! Box bounds for any strategy: applied to a population after `ask` (clip, reflect) or as a
//! fitness penalty after evaluation.

use crate::error::EvoError;
use kestrel_core::FromInvalid;

/// How out-of-bounds samples are handled (configs spell it `clip`, `reflect`, `penalty`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundKind {
    /// Clamp each coordinate to its interval.
    Clip,
    /// Mirror at the bounds (repeatedly, so any value lands inside).
    Reflect,
    /// Leave samples alone; [`Bounds::penalize`] adds `weight × squared distance` to fitness
    /// ([`PENALTY_WEIGHT`] unless [`Bounds::with_penalty_weight`] says otherwise).
    Penalty,
}

/// The penalty mode's default weight.
pub const PENALTY_WEIGHT: f32 = 1e3;

/// Per-dimension intervals `[lower, upper]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounds {
    lower: Vec<f32>,
    upper: Vec<f32>,
    mode: BoundKind,
    penalty_weight: f32,
}

impl Bounds {
    /// Validates `lower < upper` (finite) in every dimension.
    pub fn new(lower: Vec<f32>, upper: Vec<f32>, mode: BoundKind) -> Result<Self, EvoError> {
        if lower.len() != upper.len() || lower.is_empty() {
            return Err(EvoError::invalid(
                "bounds",
                format!("{} lower, {} upper", lower.len(), upper.len()),
                "equal, non-zero lengths",
            ));
        }
        if let Some(i) = (0..lower.len())
            .find(|&i| !(lower[i].is_finite() && upper[i].is_finite() && lower[i] < upper[i]))
        {
            return Err(EvoError::invalid(
                "bounds",
                format!("dimension {i}: [{}, {}]", lower[i], upper[i]),
                "finite lower < upper",
            ));
        }
        Ok(Bounds { lower, upper, mode, penalty_weight: PENALTY_WEIGHT })
    }

    /// The penalty mode's weight (finite, at least 0).
    pub fn with_penalty_weight(self, weight: f32) -> Result<Self, EvoError> {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(EvoError::invalid("penalty weight", weight, "finite and >= 0"));
        }
        Ok(Bounds { penalty_weight: weight, ..self })
    }

    /// The same interval in every dimension.
    pub fn uniform(
        num_dims: usize,
        lower: f32,
        upper: f32,
        mode: BoundKind,
    ) -> Result<Self, EvoError> {
        Self::new(vec![lower; num_dims], vec![upper; num_dims], mode)
    }

    /// Search dimensions.
    pub fn num_dims(&self) -> usize {
        self.lower.len()
    }

    /// Repairs a row-major population in place (no-op in penalty mode).
    pub fn repair(&self, population: &mut [f32]) {
        let n = self.lower.len();
        for row in population.chunks_exact_mut(n) {
            for ((x, &lo), &hi) in row.iter_mut().zip(&self.lower).zip(&self.upper) {
                *x = match self.mode {
                    BoundKind::Clip => x.clamp(lo, hi),
                    BoundKind::Reflect => reflect(*x, lo, hi),
                    BoundKind::Penalty => *x,
                };
            }
        }
    }

    /// Adds the penalty to each fitness (penalty mode only).
    pub fn penalize(&self, population: &[f32], fitness: &mut [f32]) {
        if self.mode != BoundKind::Penalty {
            return;
        }
        let weight = self.penalty_weight;
        let n = self.lower.len();
        for (row, f) in population.chunks_exact(n).zip(fitness.iter_mut()) {
            let d2: f32 = row
                .iter()
                .zip(&self.lower)
                .zip(&self.upper)
                .map(|((&x, &lo), &hi)| {
                    let d = if x < lo {
                        lo - x
                    } else if x > hi {
                        x - hi
                    } else {
                        0.0
                    };
                    d * d
                })
                .sum();
            *f += weight * d2;
        }
    }
}

fn reflect(x: f32, lo: f32, hi: f32) -> f32 {
    if (lo..=hi).contains(&x) {
        return x;
    }
    if !x.is_finite() {
        return lo;
    }
    let w = (hi - lo) as f64;
    let t = ((x - lo) as f64).rem_euclid(2.0 * w);
    (lo as f64 + if t <= w { t } else { 2.0 * w - t }) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn repaired_rows_lie_inside(xs in proptest::collection::vec(-100f32..100.0, 6), reflect_mode: bool) {
            let mode = if reflect_mode { BoundKind::Reflect } else { BoundKind::Clip };
            let b = Bounds::uniform(3, -1.5, 2.0, mode).unwrap();
            let mut p = xs.clone();
            b.repair(&mut p);
            prop_assert!(p.iter().all(|&x| (-1.5..=2.0).contains(&x)));
            for (a, r) in xs.iter().zip(&p) {
                if (-1.5..=2.0).contains(a) { prop_assert_eq!(a, r); }
            }
        }
    }

    #[test]
    fn reflect_mirrors_and_penalty_adds() {
        assert_eq!(reflect(2.5, 0.0, 2.0), 1.5);
        assert_eq!(reflect(-0.5, 0.0, 2.0), 0.5);
        let b = Bounds::uniform(2, 0.0, 1.0, BoundKind::Penalty)
            .and_then(|b| b.with_penalty_weight(10.0))
            .unwrap();
        let mut f = [1.0, 1.0];
        b.penalize(&[0.5, 0.5, 2.0, -1.0], &mut f);
        assert_eq!(f, [1.0, 21.0]);
        assert!(
            Bounds::uniform(2, 1.0, 1.0, BoundKind::Clip)
                .unwrap_err()
                .to_string()
                .contains("lower < upper")
        );
    }
}
