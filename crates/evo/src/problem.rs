//! Batched problems: one call evaluates a whole population, in parallel over rows (each row
//! independent, so results do not depend on the thread count).

use crate::error::EvoError;
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use rayon::prelude::*;

/// Something to minimise, evaluated one population at a time.
pub trait Problem: Send + Sync {
    /// Columns of a population.
    fn num_dims(&self) -> usize;
    /// Writes one fitness per row of the row-major `population`, whose row `i` is global
    /// row `first_row + i` of the generation: keys derive from the global row, so shards of a
    /// population (evaluated on several workers) give exactly the whole population's fitness.
    fn evaluate_rows(&self, key: Key, first_row: u64, population: &[f32], fitness: &mut [f32]);

    /// [`Problem::evaluate_rows`] of a whole population (first row 0).
    fn evaluate(&self, key: Key, population: &[f32], fitness: &mut [f32]) {
        self.evaluate_rows(key, 0, population, fitness)
    }
}

/// The standard continuous test functions (minimum 0). Serialised by [`Function::name`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Function {
    /// `Σ z²`.
    Sphere,
    /// `Σ 10^(6 i/(n−1)) z_i²` (condition 1e6).
    Ellipsoid,
    /// `Σ 100 (z_{i+1} − z_i²)² + (1 − z_i)²`, minimum at `z = 1`.
    Rosenbrock,
    /// `10 n + Σ (z² − 10 cos 2πz)`.
    Rastrigin,
    /// `−20 exp(−0.2 √(Σz²/n)) − exp(Σ cos 2πz / n) + 20 + e`.
    Ackley,
    /// `1 + Σ z²/4000 − Π cos(z_i / √(i+1))`.
    Griewank,
    /// `418.9829 n − Σ z sin √|z|`, minimum at `z ≈ 420.9687`.
    Schwefel,
    /// `√(Σ |z_i|^(2 + 4 i/(n−1)))`.
    DifferentPowers,
}

impl Function {
    /// Every function.
    pub const ALL: [Function; 8] = [
        Function::Sphere,
        Function::Ellipsoid,
        Function::Rosenbrock,
        Function::Rastrigin,
        Function::Ackley,
        Function::Griewank,
        Function::Schwefel,
        Function::DifferentPowers,
    ];

    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Function::Sphere => "sphere",
            Function::Ellipsoid => "ellipsoid",
            Function::Rosenbrock => "rosenbrock",
            Function::Rastrigin => "rastrigin",
            Function::Ackley => "ackley",
            Function::Griewank => "griewank",
            Function::Schwefel => "schwefel",
            Function::DifferentPowers => "different-powers",
        }
    }

    /// Parses [`Function::name`].
    pub fn parse(s: &str) -> Result<Function, EvoError> {
        Function::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            EvoError::invalid("problem", s, "sphere, ellipsoid, rosenbrock, rastrigin, ackley, griewank, schwefel, different-powers")
        })
    }

    /// The value at `z` (already shifted and rotated).
    pub fn value(self, z: &[f64]) -> f64 {
        let n = z.len() as f64;
        let frac = |i: usize| if z.len() > 1 { i as f64 / (n - 1.0) } else { 0.0 };
        match self {
            Function::Sphere => z.iter().map(|v| v * v).sum(),
            Function::Ellipsoid => {
                z.iter().enumerate().map(|(i, v)| 10f64.powf(6.0 * frac(i)) * v * v).sum()
            }
            Function::Rosenbrock => z
                .windows(2)
                .map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2))
                .sum(),
            Function::Rastrigin => {
                10.0 * n
                    + z.iter()
                        .map(|v| v * v - 10.0 * (std::f64::consts::TAU * v).cos())
                        .sum::<f64>()
            }
            Function::Ackley => {
                let s2 = z.iter().map(|v| v * v).sum::<f64>() / n;
                let sc = z.iter().map(|v| (std::f64::consts::TAU * v).cos()).sum::<f64>() / n;
                -20.0 * (-0.2 * s2.sqrt()).exp() - sc.exp() + 20.0 + std::f64::consts::E
            }
            Function::Griewank => {
                let s = z.iter().map(|v| v * v).sum::<f64>() / 4000.0;
                let p: f64 = z
                    .iter()
                    .enumerate()
                    .map(|(i, v)| (v / ((i + 1) as f64).sqrt()).cos())
                    .product();
                1.0 + s - p
            }
            Function::Schwefel => {
                418.982_887_272_433_9 * n - z.iter().map(|v| v * v.abs().sqrt().sin()).sum::<f64>()
            }
            Function::DifferentPowers => z
                .iter()
                .enumerate()
                .map(|(i, v)| v.abs().powf(2.0 + 4.0 * frac(i)))
                .sum::<f64>()
                .sqrt(),
        }
    }
}

/// A test function with optional shift `x → x − shift` and rotation `z = R (x − shift)`.
#[derive(Clone, Debug)]
pub struct Benchmark {
    function: Function,
    num_dims: usize,
    shift: Vec<f64>,
    rotation: Option<Vec<f64>>,
}

impl Benchmark {
    /// The plain function in `num_dims` dimensions.
    pub fn new(function: Function, num_dims: usize) -> Result<Self, EvoError> {
        if num_dims == 0 {
            return Err(EvoError::invalid("num_dims", 0, "at least 1"));
        }
        if function == Function::Rosenbrock && num_dims < 2 {
            return Err(EvoError::invalid("num_dims", num_dims, "at least 2 for rosenbrock"));
        }
        Ok(Benchmark { function, num_dims, shift: vec![0.0; num_dims], rotation: None })
    }

    /// Shifts the optimum by a uniform vector in `[-scale, scale]^n` drawn from `key`.
    pub fn shifted(mut self, key: Key, scale: f64) -> Self {
        let mut r = key.rng();
        self.shift.iter_mut().for_each(|s| *s = scale * (2.0 * r.uniform_f64() - 1.0));
        self
    }

    /// Applies a random orthogonal rotation drawn from `key` (Gram–Schmidt of a Gaussian matrix).
    pub fn rotated(mut self, key: Key) -> Self {
        let n = self.num_dims;
        let mut q = vec![0.0; n * n];
        kestrel_core::fill_normal_f32(key, &mut q);
        for i in 0..n {
            for k in 0..i {
                let dot: f64 = (0..n).map(|j| q[i * n + j] * q[k * n + j]).sum();
                for j in 0..n {
                    q[i * n + j] -= dot * q[k * n + j];
                }
            }
            let norm = (0..n).map(|j| q[i * n + j].powi(2)).sum::<f64>().sqrt();
            (0..n).for_each(|j| q[i * n + j] /= norm);
        }
        self.rotation = Some(q);
        self
    }

    /// The function.
    pub fn function(&self) -> Function {
        self.function
    }

    /// Fitness of one point.
    pub fn value(&self, x: &[f32]) -> f64 {
        self.value_with(x, &mut Vec::new(), &mut Vec::new())
    }

    /// [`Benchmark::value`] with its shifted and rotated point in reused buffers (no
    /// allocation once they have grown to `num_dims`).
    pub fn value_with(&self, x: &[f32], d: &mut Vec<f64>, z: &mut Vec<f64>) -> f64 {
        d.resize(self.num_dims, 0.0);
        z.resize(self.num_dims, 0.0);
        self.value_in(x, d, z)
    }

    /// The value at `x` with `d` and `z` (`num_dims` each) as scratch.
    fn value_in(&self, x: &[f32], d: &mut [f64], z: &mut [f64]) -> f64 {
        let n = self.num_dims;
        let d = &mut d[..x.len().min(n)];
        for ((d, &v), s) in d.iter_mut().zip(x).zip(&self.shift) {
            *d = v as f64 - s;
        }
        match &self.rotation {
            None => self.function.value(d),
            Some(r) => {
                for (i, z) in z.iter_mut().enumerate() {
                    *z = (0..n).map(|j| r[i * n + j] * d[j]).sum::<f64>();
                }
                self.function.value(z)
            }
        }
    }
}

/// Dimensions up to which a single-task evaluation keeps its scratch on the stack.
const SMALL: usize = 256;

impl Problem for Benchmark {
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn evaluate_rows(&self, _key: Key, _first_row: u64, population: &[f32], fitness: &mut [f32]) {
        let n = self.num_dims;
        assert_eq!(
            population.len(),
            fitness.len() * n,
            "Benchmark::evaluate: population must be rows x num_dims"
        );
        // At least ~16k coordinates per task: a cheap test function on a small population is
        // faster on one thread than the fork-join it would take to split it.
        let min_rows = (16_384 / n).max(1);
        if fitness.len() <= min_rows && n <= SMALL {
            // One task: no fork-join, scratch on the stack.
            let (mut d, mut z) = ([0.0; SMALL], [0.0; SMALL]);
            for (x, f) in population.chunks_exact(n).zip(fitness.iter_mut()) {
                *f = self.value_in(x, &mut d[..n], &mut z[..n]) as f32;
            }
            return;
        }
        population.par_chunks(n).zip(fitness.par_iter_mut()).with_min_len(min_rows).for_each_init(
            || (Vec::with_capacity(n), Vec::with_capacity(n)),
            |(d, z), (x, f)| *f = self.value_with(x, d, z) as f32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optima_are_zero() {
        for f in Function::ALL {
            let n = 5;
            let z = match f {
                Function::Rosenbrock => vec![1.0; n],
                Function::Schwefel => vec![420.968_746_359_982; n],
                _ => vec![0.0; n],
            };
            assert!(f.value(&z).abs() < 1e-6, "{f:?}: {}", f.value(&z));
            assert!(f.value(&vec![0.3; n]) > 1e-6 || f == Function::Schwefel, "{f:?}");
        }
    }

    #[test]
    fn rotation_and_shift_keep_the_optimum_value() {
        let b = Benchmark::new(Function::Ellipsoid, 6)
            .unwrap()
            .shifted(Key::new(1), 2.0)
            .rotated(Key::new(2));
        let opt: Vec<f32> = b.shift.iter().map(|&s| s as f32).collect();
        // The optimum is passed as f32, so its value is f32 rounding (× weights up to 1e6).
        assert!(b.value(&opt) < 1e-6, "{}", b.value(&opt));
        let r = b.rotation.as_ref().unwrap();
        for i in 0..6 {
            for k in 0..6 {
                let dot: f64 = (0..6).map(|j| r[i * 6 + j] * r[k * 6 + j]).sum();
                assert!((dot - if i == k { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }
}
