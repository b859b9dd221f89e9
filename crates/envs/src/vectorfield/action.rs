//! Action models `g(u)`: how an action enters the latent dynamics.

use super::common::LATENT_DIM;
use super::observation::Linear;
use crate::error::EnvError;
use kestrel_core::FromInvalid;

/// How an action enters the dynamics: `g(u)`, a batched map of `n × A` rows to `n × 2`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ActionModel {
    /// `g(u) = u` (`A = 2`, actdyn's default).
    #[default]
    Identity,
    /// `g(u) = B·u + c` (`B` is `[2][A]`).
    Linear(Linear),
}

impl ActionModel {
    /// Action size `A`.
    pub fn action_dim(&self) -> usize {
        match self {
            ActionModel::Identity => LATENT_DIM,
            ActionModel::Linear(l) => l.in_dim(),
        }
    }

    /// Checks sizes (output 2, values finite).
    pub fn validate(&self) -> Result<(), EnvError> {
        if let ActionModel::Linear(l) = self {
            Linear::new(l.in_dim(), l.out_dim(), l.weight().to_vec(), l.bias().to_vec())?;
            if l.out_dim() != LATENT_DIM {
                return Err(EnvError::invalid(
                    "action out_dim",
                    l.out_dim(),
                    "2 (the latent dimension)",
                ));
            }
        }
        Ok(())
    }

    /// `g` of one action row (`A` values).
    #[inline]
    pub fn apply_row(&self, u: &[f64]) -> [f64; 2] {
        match self {
            ActionModel::Identity => [u[0], u[1]],
            ActionModel::Linear(l) => {
                let mut out = [0.0; 2];
                l.apply_row(u, &mut out);
                out
            }
        }
    }

    /// `g` over rows: `u` is `n × A`, `out` is `n × 2`.
    ///
    /// # Panics
    /// If the lengths do not describe the same number of rows.
    pub fn apply(&self, u: &[f64], out: &mut [f64]) {
        let a = self.action_dim();
        assert!(
            u.len().is_multiple_of(a) && out.len() == u.len() / a * LATENT_DIM,
            "apply: u must be n × A and out n × 2"
        );
        for (ui, oi) in u.chunks_exact(a).zip(out.chunks_exact_mut(LATENT_DIM)) {
            oi.copy_from_slice(&self.apply_row(ui));
        }
    }
}
