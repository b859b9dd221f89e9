//! RBF features on a square grid of centres (temporary; replaced by the planner branch's).

use crate::ActdynError;
use kestrel_core::FromInvalid;

/// Centres on an n×n grid over [−z_max, z_max]²; Φ_c(z) = α·exp(−γ‖z − c_c‖²).
#[derive(Clone, Debug, PartialEq)]
pub struct RbfGrid {
    n: usize,
    alpha: f64,
    gamma: f64,
    axis: Vec<f64>,
}

impl RbfGrid {
    /// The grid; errors name the field.
    pub fn new(n: usize, z_max: f64, alpha: f64, gamma: f64) -> Result<Self, ActdynError> {
        if !(2..=200).contains(&n) {
            return Err(ActdynError::invalid("model.dynamics.grid", n, "an integer in [2, 200]"));
        }
        let axis = (0..n).map(|i| -z_max + 2.0 * z_max * i as f64 / (n - 1) as f64).collect();
        Ok(RbfGrid { n, alpha, gamma, axis })
    }
    /// Number of centres n².
    pub fn num_centres(&self) -> usize {
        self.n * self.n
    }
    /// γ.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }
    /// Centre c = n·i + j at (g_i, g_j).
    pub fn centre(&self, c: usize) -> [f64; 2] {
        [self.axis[c / self.n], self.axis[c % self.n]]
    }
    /// Φ(z) into `out` (n²).
    pub fn features(&self, z: [f64; 2], out: &mut [f64]) {
        for c in 0..self.num_centres() {
            let [cx, cy] = self.centre(c);
            let r2 = (z[0] - cx).powi(2) + (z[1] - cy).powi(2);
            out[c] = self.alpha * (-self.gamma * r2).exp();
        }
    }
}
