//! Evaluation of a learned model exactly as the reference's §4.2 defines it: k-step R² of
//! decoded predictions (`compute_model_r2`), latent R² up to an affine map, and the relative
//! vector-field error, on validation episodes of random actions from fresh resets.

use crate::config::EvalConfig;
use crate::model::SeqVae;
use kestrel_core::Key;
use kestrel_envs::vectorfield::{VectorFieldParams, reset_latent, step_latent};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Validation episodes: `episodes × steps` rows of next observations, actions, post-step
/// latents and the true drift there.
#[derive(Clone, Debug)]
pub struct ValidationData {
    /// Episodes.
    pub episodes: usize,
    /// Steps per episode.
    pub steps: usize,
    /// Observation width.
    pub obs_dim: usize,
    /// y (`E × T × N_y`): the observation after each action.
    pub y: Vec<f64>,
    /// u (`E × T × 2`).
    pub u: Vec<f64>,
    /// z (`E × T × 2`): the latent after each action.
    pub z: Vec<f64>,
    /// F(z) (`E × T × 2`).
    pub f: Vec<f64>,
}

/// How many environment steps make one model step, and the action a model step records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Downsample {
    /// Environment steps per model step (the action held), n ≥ 1.
    pub substeps: u64,
    /// Record n·u (the reference's sum over the block) instead of u.
    pub sum_actions: bool,
}

impl Default for Downsample {
    fn default() -> Self {
        Downsample { substeps: 1, sum_actions: false }
    }
}

impl Downsample {
    /// The action the model sees for the held action `u`.
    pub fn recorded(&self, u: [f64; 2]) -> [f64; 2] {
        if self.sum_actions {
            let n = self.substeps as f64;
            [n * u[0], n * u[1]]
        } else {
            u
        }
    }

    /// `substeps` environment steps from `z` with the action `gu` held, the process noise of
    /// each drawn from `r` in turn (one step: exactly one draw, as before downsampling).
    pub fn advance(
        &self,
        env: &VectorFieldParams,
        mut z: [f64; 2],
        gu: [f64; 2],
        r: &mut kestrel_core::Rng,
    ) -> [f64; 2] {
        for _ in 0..self.substeps {
            let eps = [r.standard_normal(), r.standard_normal()];
            z = step_latent(&env.field, z, gu, eps, env.dt, env.noise_scale, env.noise_convention)
                .0;
        }
        z
    }
}

/// `episodes` episodes of `steps` uniform actions from fresh resets z₀ ~ U[−1, 1]², drawn from
/// `key` (one sub-key per episode); each action held for `ds.substeps` environment steps, the
/// observation after the last of them.
pub fn validation_data(
    env: &VectorFieldParams,
    cfg: &EvalConfig,
    key: Key,
    ds: Downsample,
) -> ValidationData {
    let (e_n, t_n) = (cfg.episodes, cfg.steps);
    let ny = env.obs.obs_dim();
    let mut v = ValidationData {
        episodes: e_n,
        steps: t_n,
        obs_dim: ny,
        y: vec![0.0; e_n * t_n * ny],
        u: vec![0.0; e_n * t_n * 2],
        z: vec![0.0; e_n * t_n * 2],
        f: vec![0.0; e_n * t_n * 2],
    };
    let b = env.action_bound;
    for e in 0..e_n {
        let mut r = key.fold_in(e as u64).rng();
        let mut z = reset_latent([r.uniform_f64(), r.uniform_f64()]);
        for t in 0..t_n {
            let u = [b * (2.0 * r.uniform_f64() - 1.0), b * (2.0 * r.uniform_f64() - 1.0)];
            z = ds.advance(env, z, env.action.apply_row(&u), &mut r);
            let i = e * t_n + t;
            v.u[2 * i..2 * i + 2].copy_from_slice(&ds.recorded(u));
            v.z[2 * i..2 * i + 2].copy_from_slice(&z);
            v.f[2 * i..2 * i + 2].copy_from_slice(&env.field.eval(z));
            let y = &mut v.y[i * ny..(i + 1) * ny];
            env.obs.observe(&z, y);
            env.obs.add_noise(y, &mut r);
        }
    }
    v
}

/// The metrics of one evaluation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// R² of the decoded k-step prediction, k = 0..k_max (k = 0 is reconstruction), averaged
    /// over episodes and outputs. May be −∞ when learned dynamics overflow (stored as null).
    pub obs_r2_by_k: Vec<f64>,
    /// R² per latent dimension of the least-squares affine map from encoder means to the true
    /// latents.
    pub latent_r2: [f64; 2],
    /// Σ‖drift̂·A − F(z)‖² / Σ‖F(z)‖² over the validation states.
    pub vf_rel_err: f64,
    /// The affine map z ≈ [μ, 1]·W (`W` row-major 3 × 2).
    pub affine: [f64; 6],
}

/// Solves the 3×3 system `a x = b` for two right-hand sides
/// ([`kestrel_core::linalg::solve`]); `None` when singular.
fn solve3(a: [[f64; 3]; 3], b: [[f64; 2]; 3]) -> Option<[[f64; 2]; 3]> {
    let mut a = [a[0][0], a[0][1], a[0][2], a[1][0], a[1][1], a[1][2], a[2][0], a[2][1], a[2][2]];
    let mut x = [b[0][0], b[0][1], b[1][0], b[1][1], b[2][0], b[2][1]];
    kestrel_core::linalg::solve(&mut a, 3, &mut x, 2)
        .then(|| [[x[0], x[1]], [x[2], x[3]], [x[4], x[5]]])
}

/// Evaluates `params` on `data`; the posterior and prior draws come from `key` (one sub-key
/// per episode, so the result does not depend on the thread count).
pub fn evaluate(
    model: &SeqVae,
    params: &[f64],
    data: &ValidationData,
    cfg: &EvalConfig,
    key: Key,
) -> Evaluation {
    let (t_n, ny) = (data.steps, data.obs_dim);
    let k_max = cfg.k_max.min(t_n.saturating_sub(2));
    let dt = model.config().dt;
    let sd: Vec<f64> = model.process_variance(params).iter().map(|v| (v * dt).sqrt()).collect();
    // Per episode: encoder means, and the (k, output) sums of squared errors and deviations.
    let per: Vec<(Vec<f64>, Vec<f64>)> = (0..data.episodes)
        .into_par_iter()
        .map(|e| {
            let y = &data.y[e * t_n * ny..(e + 1) * t_n * ny];
            let u = &data.u[e * t_n * 2..(e + 1) * t_n * 2];
            let mut ews = model.encoder_workspace();
            let (mut mu, mut var) = (vec![0.0; t_n * 2], vec![0.0; t_n * 2]);
            model.encode(params, y, Some(u), &mut ews, &mut mu, &mut var);
            let s_n = cfg.num_samples;
            let mut r = key.fold_in(e as u64).rng();
            let mut eps = vec![0.0; s_n * t_n * 2];
            r.fill_standard_normal(&mut eps);
            let mut ybar = vec![0.0; ny];
            for t in 0..t_n {
                for i in 0..ny {
                    ybar[i] += y[t * ny + i] / t_n as f64;
                }
            }
            let hi = t_n - k_max - 1;
            let mut dyn_cache = model.dyn_cache();
            let mut dec = kestrel_nn::Workspace::default();
            let (mut z, mut zn, mut ub) =
                (vec![0.0; s_n * 2], vec![0.0; s_n * 2], vec![0.0; s_n * 2]);
            let mut yh = vec![0.0; s_n * ny];
            let mut sse = vec![0.0; (k_max + 1) * ny];
            let mut sst = vec![0.0; (k_max + 1) * ny];
            let mut xi = vec![0.0; s_n * 2];
            for _ in 0..cfg.num_starts {
                let t0 = r.below(hi as u32) as usize;
                for s in 0..s_n {
                    for d in 0..2 {
                        let i = t0 * 2 + d;
                        z[s * 2 + d] = mu[i] + var[i].sqrt() * eps[(s * t_n + t0) * 2 + d];
                    }
                }
                for k in 0..=k_max {
                    if k > 0 {
                        for s in 0..s_n {
                            ub[s * 2..s * 2 + 2]
                                .copy_from_slice(&u[(t0 + k) * 2..(t0 + k) * 2 + 2]);
                        }
                        model.transition_mean(params, &z, &ub, &mut dyn_cache, &mut zn);
                        r.fill_standard_normal(&mut xi);
                        for i in 0..s_n * 2 {
                            z[i] = zn[i] + sd[i % 2] * xi[i];
                        }
                    }
                    model.decode(params, &z, &mut dec, &mut yh);
                    for i in 0..ny {
                        let pred = (0..s_n).map(|s| yh[s * ny + i]).sum::<f64>() / s_n as f64;
                        let target = y[(t0 + k) * ny + i];
                        sse[k * ny + i] += (target - pred).powi(2);
                        sst[k * ny + i] += (target - ybar[i]).powi(2);
                    }
                }
            }
            let r2: Vec<f64> = (0..=k_max)
                .map(|k| {
                    (0..ny).map(|i| 1.0 - sse[k * ny + i] / (sst[k * ny + i] + 1e-6)).sum::<f64>()
                        / ny as f64
                })
                .collect();
            (mu, r2)
        })
        .collect();
    let mut obs_r2_by_k = vec![0.0; k_max + 1];
    for (_, r2) in &per {
        for (a, b) in obs_r2_by_k.iter_mut().zip(r2) {
            *a += b / data.episodes as f64;
        }
    }
    // Affine map from encoder means to true latents.
    let mut xtx = [[0.0; 3]; 3];
    let mut xtz = [[0.0; 2]; 3];
    let mus: Vec<f64> = per.iter().flat_map(|(m, _)| m.iter().copied()).collect();
    let n = data.episodes * t_n;
    for i in 0..n {
        let x = [mus[2 * i], mus[2 * i + 1], 1.0];
        for a in 0..3 {
            for b in 0..3 {
                xtx[a][b] += x[a] * x[b];
            }
            for d in 0..2 {
                xtz[a][d] += x[a] * data.z[2 * i + d];
            }
        }
    }
    let w = solve3(xtx, xtz).unwrap_or([[f64::NAN; 2]; 3]);
    let mut latent_r2 = [0.0; 2];
    for d in 0..2 {
        let mean = (0..n).map(|i| data.z[2 * i + d]).sum::<f64>() / n as f64;
        let (mut res, mut tot) = (0.0, 0.0);
        for i in 0..n {
            let pred = mus[2 * i] * w[0][d] + mus[2 * i + 1] * w[1][d] + w[2][d];
            res += (data.z[2 * i + d] - pred).powi(2);
            tot += (data.z[2 * i + d] - mean).powi(2);
        }
        latent_r2[d] = 1.0 - res / tot;
    }
    // Vector-field error: drift̂(μ) = (μ′(μ, 0) − μ)/dt mapped by A = W[0..2].
    let mut cache = model.dyn_cache();
    let zeros = vec![0.0; n * 2];
    let mut next = vec![0.0; n * 2];
    model.transition_mean(params, &mus, &zeros, &mut cache, &mut next);
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..n {
        let g = [(next[2 * i] - mus[2 * i]) / dt, (next[2 * i + 1] - mus[2 * i + 1]) / dt];
        for d in 0..2 {
            let pred = g[0] * w[0][d] + g[1] * w[1][d];
            num += (pred - data.f[2 * i + d]).powi(2);
            den += data.f[2 * i + d].powi(2);
        }
    }
    Evaluation {
        obs_r2_by_k,
        latent_r2,
        vf_rel_err: num / den,
        affine: [w[0][0], w[0][1], w[1][0], w[1][1], w[2][0], w[2][1]],
    }
}

/// The learned drift at true-latent points `z` (`n × 2`), through the affine map of an
/// [`Evaluation`]: μ = (z − b)·A⁻¹, drift = drift̂(μ)·A. `None` when A is singular.
pub fn learned_field(
    model: &SeqVae,
    params: &[f64],
    affine: &[f64; 6],
    z: &[f64],
) -> Option<Vec<f64>> {
    let [a00, a01, a10, a11, b0, b1] = *affine;
    let det = a00 * a11 - a01 * a10;
    if det.abs() <= 1e-300 || !det.is_finite() {
        return None;
    }
    let n = z.len() / 2;
    let mut mu = vec![0.0; n * 2];
    for i in 0..n {
        let (x, y) = (z[2 * i] - b0, z[2 * i + 1] - b1);
        // Row vector times A⁻¹.
        mu[2 * i] = (x * a11 - y * a10) / det;
        mu[2 * i + 1] = (-x * a01 + y * a00) / det;
    }
    let dt = model.config().dt;
    let mut next = vec![0.0; n * 2];
    model.transition_mean(params, &mu, &vec![0.0; n * 2], &mut model.dyn_cache(), &mut next);
    Some(
        (0..n)
            .flat_map(|i| {
                let g = [(next[2 * i] - mu[2 * i]) / dt, (next[2 * i + 1] - mu[2 * i + 1]) / dt];
                [g[0] * a00 + g[1] * a10, g[0] * a01 + g[1] * a11]
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Holding an action for n environment steps is n single steps drawing the noise in turn;
    /// the recorded action is u, or n·u when summed.
    #[test]
    fn downsampling_holds_the_action_and_records_it() {
        let env = VectorFieldParams::default();
        let (z0, gu) = ([0.3, -0.2], [0.5, 0.1]);
        let ds = Downsample { substeps: 3, sum_actions: true };
        let held = ds.advance(&env, z0, gu, &mut Key::new(5).rng());
        let mut r = Key::new(5).rng();
        let mut z = z0;
        for _ in 0..3 {
            z = Downsample::default().advance(&env, z, gu, &mut r);
        }
        assert_eq!(held, z);
        assert_eq!(ds.recorded([0.5, -1.0]), [1.5, -3.0]);
        assert_eq!(Downsample::default().recorded([0.5, -1.0]), [0.5, -1.0]);
        assert_ne!(held, Downsample::default().advance(&env, z0, gu, &mut Key::new(5).rng()));
    }

    /// Validation data: every row's shape, actions within the bound, the drift at the latent,
    /// and each episode its own sub-key (a longer set starts with the shorter one's episodes).
    #[test]
    fn validation_episodes_are_keyed_per_episode() {
        let env = VectorFieldParams::default();
        let cfg = EvalConfig { episodes: 3, steps: 20, ..EvalConfig::default() };
        let v = validation_data(&env, &cfg, Key::new(2), Downsample::default());
        let ny = env.obs.obs_dim();
        assert_eq!((v.y.len(), v.u.len(), v.z.len(), v.f.len()), (60 * ny, 120, 120, 120));
        assert!(v.u.iter().all(|u| u.abs() <= env.action_bound));
        for i in 0..60 {
            assert_eq!(&v.f[2 * i..2 * i + 2], &env.field.eval([v.z[2 * i], v.z[2 * i + 1]]));
        }
        let more = EvalConfig { episodes: 5, ..cfg.clone() };
        let w = validation_data(&env, &more, Key::new(2), Downsample::default());
        assert_eq!(&w.z[..120], &v.z[..], "episodes do not depend on how many there are");
        assert_eq!(&w.y[..60 * ny], &v.y[..]);
        assert_ne!(validation_data(&env, &cfg, Key::new(3), Downsample::default()).z, v.z);
    }

    /// The 3 × 3 solve of the affine fit, and its refusal of a singular system.
    #[test]
    fn solve3_solves_and_refuses_singular_systems() {
        let a = [[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]];
        let x = [[1.0, -2.0], [0.5, 0.0], [-1.0, 3.0]];
        let b: [[f64; 2]; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|d| (0..3).map(|k| a[i][k] * x[k][d]).sum())
        });
        let got = solve3(a, b).unwrap();
        for i in 0..3 {
            for d in 0..2 {
                assert!((got[i][d] - x[i][d]).abs() < 1e-12, "{got:?}");
            }
        }
        assert!(solve3([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 0.0, 1.0]], b).is_none());
    }
}
