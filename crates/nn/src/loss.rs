//! Losses with their gradients with respect to the prediction (means over every element).

use kestrel_core::simd::Real;

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
    pub fn value_and_grad<T: Real>(self, y: &[T], target: &[T], grad: &mut [T]) -> f64 {
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

/// The quantile Huber loss of implicit quantile networks (Dabney et al., 2018) as sorrel's
/// `iRainbowModel.train_step` computes it, for `batch` rows of `n` predicted quantiles at
/// fractions `taus` and `m` target samples:
///
/// `δ_bij = target_bj − pred_bi`,
/// `L = mean_{b,i,j} w_b · |τ_bi − 1{δ_bij < 0}| · H_κ(δ_bij) / κ`,
/// `H_κ(δ) = δ²/2` for `|δ| ≤ κ`, else `κ(|δ| − κ/2)`.
///
/// Writes `∂L/∂pred` to `grad` (`batch × n`) and each row's summed element loss
/// (`Σ_ij`, unweighted, for replay priorities) to `row_loss` when given; returns `L` in f64.
/// The targets carry no gradient.
///
/// # Panics
/// If the slice lengths do not match `batch`, `n` and `m`.
#[allow(clippy::too_many_arguments)]
pub fn quantile_huber<T: Real>(
    pred: &[T],
    taus: &[T],
    target: &[T],
    weights: &[T],
    kappa: f64,
    batch: usize,
    grad: &mut [T],
    mut row_loss: Option<&mut [f64]>,
) -> f64 {
    assert!(
        pred.len() == taus.len() && pred.len() == grad.len() && weights.len() == batch,
        "quantile_huber: lengths differ"
    );
    let n = pred.len() / batch.max(1);
    let m = target.len() / batch.max(1);
    assert!(n * batch == pred.len() && m * batch == target.len(), "quantile_huber: rows");
    let scale = 1.0 / (batch * n * m).max(1) as f64;
    let k = T::from_f64(kappa);
    let inv_k = T::from_f64(1.0 / kappa);
    let half = T::from_f64(0.5);
    let mut total = 0.0f64;
    for b in 0..batch {
        let w = weights[b];
        let tg = &target[b * m..(b + 1) * m];
        let mut row = 0.0f64;
        for i in 0..n {
            let (p, tau) = (pred[b * n + i], taus[b * n + i]);
            let mut g = T::ZERO;
            let mut l = T::ZERO;
            for &t in tg {
                let d = t - p;
                let a = d.abs();
                let ind = if d < T::ZERO { T::ONE } else { T::ZERO };
                let coef = (tau - ind).abs() * inv_k;
                let (h, dh) = if a <= k {
                    (half * d * d, d)
                } else {
                    (k * (a - half * k), if d > T::ZERO { k } else { -k })
                };
                l += coef * h;
                // ∂/∂pred of H(target − pred) = −H'(δ).
                g -= coef * dh;
            }
            row += l.to_f64();
            total += (w * l).to_f64();
            grad[b * n + i] = g * w * T::from_f64(scale);
        }
        if let Some(r) = row_loss.as_deref_mut() {
            r[b] = row;
        }
    }
    total * scale
}
