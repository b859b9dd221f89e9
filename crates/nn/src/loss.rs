//! Losses with their gradients with respect to the prediction (means over every element).

use crate::Float;

/// A regression loss.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Loss {
    /// `mean (y − t)²`.
    Mse,
    /// `mean h(y − t)`, `h(e) = e²/2` for `|e| ≤ δ`, else `δ(|e| − δ/2)`.
    Huber(f64),
}

impl Loss {
    /// The loss (in f64) and `grad = ∂L/∂y`.
    ///
    /// # Panics
    /// If the three slices differ in length.
    pub fn value_and_grad<T: Float>(self, y: &[T], target: &[T], grad: &mut [T]) -> f64 {
        assert!(y.len() == target.len() && y.len() == grad.len(), "Loss: lengths differ");
        let n = y.len().max(1) as f64;
        let inv = T::from_f64(1.0 / n);
        let mut total = 0.0f64;
        match self {
            Loss::Mse => {
                let two = T::from_f64(2.0 / n);
                for ((g, &p), &t) in grad.iter_mut().zip(y).zip(target) {
                    let e = p - t;
                    total += (e * e).to_f64();
                    *g = two * e;
                }
            }
            Loss::Huber(delta) => {
                let d = T::from_f64(delta);
                for ((g, &p), &t) in grad.iter_mut().zip(y).zip(target) {
                    let e = p - t;
                    let a = e.abs();
                    if a <= d {
                        total += 0.5 * (e * e).to_f64();
                        *g = e * inv;
                    } else {
                        total += delta * (a.to_f64() - 0.5 * delta);
                        *g = if e > T::ZERO { d * inv } else { -d * inv };
                    }
                }
            }
        }
        total / n
    }
}
