//! Spaces and the environment spec.

/// A space of observations or actions (Gymnasium's names).
#[derive(Clone, Debug, PartialEq)]
pub enum Space {
    /// Integers `0..n`.
    Discrete {
        /// Number of values.
        n: u64,
    },
    /// A box of per-element bounds over a shape (row-major, elements inclusive).
    Box {
        /// Lower bound of every element.
        low: f64,
        /// Upper bound of every element.
        high: f64,
        /// Shape of one sample.
        shape: Vec<usize>,
    },
    /// Named parts laid out one after another in a flat buffer, in this order.
    Dict(Vec<(&'static str, Space)>),
}

impl Space {
    /// Number of scalar elements one sample occupies in a flat buffer.
    pub fn flat_len(&self) -> usize {
        match self {
            Space::Discrete { .. } => 1,
            Space::Box { shape, .. } => shape.iter().product(),
            Space::Dict(parts) => parts.iter().map(|(_, s)| s.flat_len()).sum(),
        }
    }

    /// Whether a flat sample (as f64) lies inside the space.
    pub fn contains(&self, sample: &[f64]) -> bool {
        if sample.len() != self.flat_len() {
            return false;
        }
        match self {
            Space::Discrete { n } => {
                let v = sample[0];
                v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < *n as f64
            }
            Space::Box { low, high, .. } => {
                sample.iter().all(|&v| v.is_finite() && v >= *low && v <= *high)
            }
            Space::Dict(parts) => {
                let mut off = 0;
                parts.iter().all(|(_, s)| {
                    let n = s.flat_len();
                    let ok = s.contains(&sample[off..off + n]);
                    off += n;
                    ok
                })
            }
        }
    }
}

/// What an environment exposes about its shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    /// Space of one agent's observation; `obs_space.flat_len()` elements per agent.
    pub obs_space: Space,
    /// Space of one agent's action (descriptive; the action type is `Env::Action`).
    pub action_space: Space,
    /// Agents per environment (each is a row of the per-agent columns).
    pub num_agents: usize,
    /// Episode step limit applied by [`crate::vec_env::VecEnv`] as `truncated`; `None` for none.
    pub max_episode_steps: Option<u32>,
}

impl Spec {
    /// Elements of one agent's observation.
    pub fn obs_len(&self) -> usize {
        self.obs_space.flat_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dict_contains_checks_each_part() {
        let s = Space::Dict(vec![
            ("grid", Space::Box { low: -1.0, high: 9.0, shape: vec![2, 2] }),
            ("op", Space::Discrete { n: 3 }),
        ]);
        assert_eq!(s.flat_len(), 5);
        assert!(s.contains(&[0.0, 9.0, -1.0, 3.0, 2.0]));
        assert!(!s.contains(&[0.0, 10.0, -1.0, 3.0, 2.0]));
        assert!(!s.contains(&[0.0, 9.0, -1.0, 3.0, 3.0]));
        assert!(!s.contains(&[0.0, f64::NAN, -1.0, 3.0, 0.0]));
    }
}
