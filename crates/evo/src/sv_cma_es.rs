//! SV-CMA-ES, Stein variational CMA-ES: `k` CMA-ES searches ("particles", each with its own
//! mean, step size, paths and covariance, sampling its own block of rows) whose mean updates
//! carry the repulsion of an RBF kernel between the particles' means, so the searches spread
//! over several modes of a multimodal objective instead of collapsing onto one.
//!
//! Paper: C. V. Braun, R. T. Lange and H. Rittel, "Stein Variational Evolution Strategies",
//! arXiv:2410.10390 (2024), eq. 41. Reference implementation (golden): evosax 0.3.2
//! `algorithms/distribution_based/sv/sv_cma_es.py` (`SV_CMA_ES`, over `sv/base.py`'s `SV_ES`
//! and `cma_es.py`'s `CMA_ES`), with its defaults: each particle is a CMA-ES of `λ = pop_size
//! / k` rows with CMA-ES's default params for `λ`, `kernel_rbf` with `kernel_std = 1`,
//! `alpha = 1`.
//!
//! The one change to each particle's CMA-ES `tell` (`CmaEs`, `cma_es.rs`): its weighted step
//! `y_w = Σ max(w_i, 0) y_i` gets the kernel term
//! `α/σ_p · 1/k Σ_j ∇_{m_j} κ(m_j, m_p) = α/σ_p · 1/k Σ_j κ(m_j, m_p) (m_p − m_j) / h²`,
//! `κ(a, b) = exp(−‖a − b‖² / 2h²)`, from the means before any particle moves; the mean,
//! both paths and the step size use the shifted `y_w`, the rank-μ update the unshifted `y_i`,
//! as evosax's `_tell` does.
//!
//! **Rows**: a population is `k` blocks of `λ` rows, block `p` sampled by particle `p`, as
//! evosax's `ask` reshapes them. **Start**: evosax's `init` takes the `k` means;
//! [`SvCmaEs::init_means`] does too, and [`Strategy::init`]'s one mean places the particles
//! at `mean + σ z_p` (`z_p` standard normal from the init key), since identical particles
//! would feel no repulsion. [`Strategy::mean`] is the mean of the particle whose samples
//! found the best value so far, and the stop criteria read that particle's distribution.
//! Each particle keeps CMA-ES's guards (`cma_es.rs`, "Left running").

use crate::cma_es::{CmaEs, CmaParams, CmaState};
use crate::error::EvoError;
use crate::strategy::Scales;
use crate::strategy::{Progress, StateDict, StateTensors, Strategy, TellMetrics, check_lens};
use crate::sv_open_es::{particle_means, particle_rows, record_particles};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};

/// SV-CMA-ES: `num_populations` CMA-ES particles of `pop_size / num_populations` rows each.
#[derive(Clone, Debug)]
pub struct SvCmaEs {
    pop_size: usize,
    num_dims: usize,
    particles: usize,
    inner: CmaEs,
}

/// SV-CMA-ES hyper-parameters: each particle's CMA-ES params and the kernel's.
#[derive(Clone, Debug, PartialEq)]
pub struct SvCmaParams {
    /// CMA-ES params of every particle (evosax's defaults for `λ = pop_size / k` rows).
    pub cma: CmaParams,
    /// The RBF kernel's length scale `h` (`kernel_std`, default 1).
    pub kernel_std: f64,
    /// The repulsion's weight (`alpha`, default 1).
    pub alpha: f64,
}

/// SV-CMA-ES state.
#[derive(Clone, Debug)]
pub struct SvCmaState {
    /// Each particle's CMA-ES state.
    pub particles: Vec<CmaState>,
    /// The particle whose samples found the best value so far.
    pub best_particle: u64,
    /// Best-so-far bookkeeping (over every particle's rows).
    pub progress: Progress,
    /// The last `ask`'s standard normals, `k × λ × n`.
    z: Vec<f64>,
}

impl SvCmaEs {
    /// The strategy: `pop_size` rows in `num_populations` particles of at least 4 rows each.
    pub fn new(pop_size: usize, num_dims: usize, num_populations: usize) -> Result<Self, EvoError> {
        let each = particle_rows(pop_size, num_populations)?;
        if each < 4 {
            return Err(EvoError::invalid(
                "pop_size",
                pop_size,
                format!(
                    "at least 4 rows per particle ({each} with {num_populations} particles; each is a CMA-ES)"
                ),
            ));
        }
        let inner = CmaEs::new(each, num_dims)?;
        Ok(SvCmaEs { pop_size, num_dims, particles: num_populations, inner })
    }

    /// The number of particles `k`.
    pub fn num_populations(&self) -> usize {
        self.particles
    }

    /// Rows per particle `λ`.
    pub fn particle_pop_size(&self) -> usize {
        self.pop_size / self.particles
    }

    /// The CMA-ES each particle runs.
    pub fn particle_strategy(&self) -> &CmaEs {
        &self.inner
    }

    /// A state with the `k` particle means given (`k × n` row-major), as evosax's `init`.
    pub fn init_means(&self, params: &SvCmaParams, means: &[f32]) -> SvCmaState {
        let (k, n) = (self.particles, self.num_dims);
        assert_eq!(means.len(), k * n, "SvCmaEs::init_means: k × num_dims values");
        let particles = (0..k)
            .map(|q| {
                let mut s = self.inner.init(Key::new(0), &params.cma, &means[q * n..(q + 1) * n]);
                s.y_shift = vec![0.0; n];
                s
            })
            .collect();
        SvCmaState {
            particles,
            best_particle: 0,
            progress: Progress::new(n),
            z: vec![0.0; self.pop_size * n],
        }
    }

    /// The population from given standard normals (`k × λ × n`): particle `p`'s block is its
    /// CMA-ES sample `m_p + σ_p B_p (D_p ∘ z)`.
    pub fn ask_from_normals(&self, s: &mut SvCmaState, z: &[f64], population: &mut [f32]) {
        check_lens("SvCmaEs::ask", self.pop_size, self.num_dims, population, None);
        let block = self.particle_pop_size() * self.num_dims;
        for (q, st) in s.particles.iter_mut().enumerate() {
            let r = q * block..(q + 1) * block;
            self.inner.ask_from_normals(st, &z[r.clone()], &mut population[r]);
        }
    }
}

impl Strategy for SvCmaEs {
    type Params = SvCmaParams;
    type State = SvCmaState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> SvCmaParams {
        SvCmaParams { cma: self.inner.default_params(), kernel_std: 1.0, alpha: 1.0 }
    }

    fn init(&self, key: Key, params: &SvCmaParams, mean: &[f32]) -> SvCmaState {
        assert_eq!(mean.len(), self.num_dims, "SvCmaEs::init: mean must have num_dims values");
        let means = particle_means(key, mean, params.cma.sigma_init, self.particles);
        self.init_means(params, &means)
    }

    fn ask(&self, key: Key, s: &mut SvCmaState, _p: &SvCmaParams, population: &mut [f32]) {
        let mut z = std::mem::take(&mut s.z);
        fill_normal_f32(key, &mut z);
        self.ask_from_normals(s, &z, population);
        s.z = z;
    }

    fn tell(
        &self,
        key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut SvCmaState,
        p: &SvCmaParams,
    ) -> TellMetrics {
        let (k, n, lam) = (self.particles, self.num_dims, self.particle_pop_size());
        check_lens("SvCmaEs::tell", self.pop_size, n, population, Some(fitness));
        let (best, bad) =
            record_particles(&mut s.progress, &mut s.best_particle, population, fitness, lam);
        // Every particle's kernel term from the means before any of them moves.
        let h2 = p.kernel_std * p.kernel_std;
        for q in 0..k {
            let (head, rest) = s.particles.split_at_mut(q);
            let (me, tail) = rest.split_first_mut().expect("q < k");
            me.y_shift.iter_mut().for_each(|v| *v = 0.0);
            for other in head.iter().chain(tail.iter()) {
                let d2: f64 =
                    other.mean.iter().zip(&me.mean).map(|(a, b)| (a - b) * (a - b)).sum::<f64>()
                        / h2;
                let kern = (-0.5 * d2).exp();
                for ((y, mq), mj) in me.y_shift.iter_mut().zip(&me.mean).zip(&other.mean) {
                    *y += kern * (mq - mj) / h2;
                }
            }
            let scale = p.alpha / (k as f64 * me.sigma);
            me.y_shift.iter_mut().for_each(|v| *v *= scale);
        }
        let block = lam * n;
        for (q, st) in s.particles.iter_mut().enumerate() {
            self.inner.tell(
                key,
                &population[q * block..(q + 1) * block],
                &fitness[q * lam..(q + 1) * lam],
                st,
                &p.cma,
            );
        }
        let sigma = s.particles[s.best_particle as usize].sigma;
        s.progress.metrics(best, bad, sigma)
    }

    fn mean(&self, state: &SvCmaState) -> Vec<f32> {
        self.inner.mean(&state.particles[state.best_particle as usize])
    }
    fn progress<'a>(&self, state: &'a SvCmaState) -> &'a Progress {
        &state.progress
    }
    fn scales(&self, s: &SvCmaState, axis: usize, out: &mut Scales) -> bool {
        self.inner.scales(&s.particles[s.best_particle as usize], axis, out)
    }
}

/// Particle `q`'s arrays are CMA-ES's names prefixed `p{q}.` (`p0.mean`, `p0.sigma`, ...).
impl StateTensors for SvCmaState {
    fn state_dict(&self) -> StateDict {
        let mut out: StateDict = vec![("best_particle".into(), vec![self.best_particle as f64])];
        for (q, st) in self.particles.iter().enumerate() {
            out.extend(st.state_dict().into_iter().map(|(name, v)| (format!("p{q}.{name}"), v)));
        }
        self.progress.export(&mut out);
        out
    }

    fn load_state_dict(&mut self, dict: &[(String, Vec<f64>)]) -> Result<(), EvoError> {
        let f = crate::strategy::Fields::new(dict);
        f.check("best_particle", 1)?;
        self.progress.check(&f)?;
        let best = f.scalar("best_particle");
        if !(best >= 0.0 && best < self.particles.len() as f64 && best.fract() == 0.0) {
            return Err(EvoError::invalid(
                "state_dict.best_particle",
                best,
                format!("a particle index below {}", self.particles.len()),
            ));
        }
        // Load into a copy so that a mismatch in any particle changes nothing.
        let mut particles = self.particles.clone();
        for (q, st) in particles.iter_mut().enumerate() {
            let prefix = format!("p{q}.");
            let mine: Vec<(String, Vec<f64>)> = dict
                .iter()
                .filter_map(|(n, v)| n.strip_prefix(&prefix).map(|n| (n.to_string(), v.clone())))
                .collect();
            st.load_state_dict(&mine).map_err(|EvoError::Invalid(mut v)| {
                v.field =
                    v.field.replacen("state_dict.", &format!("state_dict.{prefix}"), 1).into();
                EvoError::Invalid(v)
            })?;
        }
        self.particles = particles;
        self.best_particle = best as u64;
        self.progress.load(&f);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sphere(pop: &[f32], n: usize) -> Vec<f32> {
        pop.chunks(n).map(|r| r.iter().map(|x| x * x).sum()).collect()
    }

    #[test]
    fn far_apart_particles_are_plain_cma_es() {
        // With the particles far apart the kernel vanishes and each particle is a CMA-ES.
        let (lam, n, k) = (6, 3, 2);
        let sv = SvCmaEs::new(lam * k, n, k).unwrap();
        let p = sv.default_params();
        let means = [0.5, -0.2, 0.1, 1e3, 1e3, 1e3];
        let mut s = sv.init_means(&p, &means);
        let cma = sv.particle_strategy().clone();
        let mut c = cma.init(Key::new(0), &p.cma, &means[..n]);
        let mut pop = vec![0.0f32; lam * k * n];
        let mut one = vec![0.0f32; lam * n];
        for g in 0..10u64 {
            let mut z = vec![0.0f64; lam * k * n];
            fill_normal_f32(Key::new(g), &mut z);
            sv.ask_from_normals(&mut s, &z, &mut pop);
            cma.ask_from_normals(&mut c, &z[..lam * n], &mut one);
            assert_eq!(&pop[..lam * n], &one[..]);
            let fit = sphere(&pop, n);
            sv.tell(Key::new(g), &pop, &fit, &mut s, &p);
            cma.tell(Key::new(g), &one, &fit[..lam], &mut c, &p.cma);
            assert_eq!(s.particles[0].mean, c.mean);
            assert_eq!(s.particles[0].sigma, c.sigma);
        }
    }

    #[test]
    fn the_kernel_pushes_close_particles_apart() {
        // Fitness that is flat (all equal) leaves y_w to the kernel alone: the means separate.
        let (lam, n, k) = (4, 2, 2);
        let sv = SvCmaEs::new(lam * k, n, k).unwrap();
        let p = SvCmaParams { kernel_std: 1.0, alpha: 1.0, ..sv.default_params() };
        let mut s = sv.init_means(&p, &[0.0, 0.0, 0.1, 0.0]);
        let mut pop = vec![0.0f32; lam * k * n];
        sv.ask(Key::new(1), &mut s, &p, &mut pop);
        let gap0 = s.particles[1].mean[0] - s.particles[0].mean[0];
        // Rows equal to the means: every y_i is 0, so only the kernel term moves them.
        for q in 0..k {
            for i in 0..lam {
                for j in 0..n {
                    pop[(q * lam + i) * n + j] = s.particles[q].mean[j] as f32;
                }
            }
        }
        sv.tell(Key::new(1), &pop, &vec![1.0; lam * k], &mut s, &p);
        let gap1 = s.particles[1].mean[0] - s.particles[0].mean[0];
        assert!(gap1 > gap0, "{gap0} -> {gap1}");
    }

    #[test]
    fn a_state_dict_round_trips_and_refuses_a_short_particle() {
        let sv = SvCmaEs::new(12, 3, 3).unwrap();
        let p = sv.default_params();
        let mut s = sv.init(Key::new(3), &p, &[0.2, 0.1, -0.3]);
        let mut pop = vec![0.0f32; 36];
        for g in 0..4 {
            sv.ask(Key::new(g), &mut s, &p, &mut pop);
            sv.tell(Key::new(g), &pop, &sphere(&pop, 3), &mut s, &p);
        }
        let d = s.state_dict();
        let mut t = sv.init(Key::new(9), &p, &[0.0; 3]);
        t.load_state_dict(&d).unwrap();
        assert_eq!(t.state_dict(), d);
        let mut bad = d.clone();
        let at = bad.iter().position(|(n, _)| n == "p2.mean").unwrap();
        bad[at].1.pop();
        let before = t.state_dict();
        let e = t.load_state_dict(&bad).unwrap_err().to_string();
        assert!(e.contains("p2.mean"), "{e}");
        assert_eq!(t.state_dict(), before);
    }
}
