//! Summary statistics over runs (seeds): one implementation for sweep tables and
//! `kestrel actdyn compare`.

/// Runs, mean, standard deviation (n − 1), the 95% interval of the mean, smallest and largest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Runs with a value.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (NaN for one run).
    pub sd: f64,
    /// Half-width of the 95% interval of the mean, Student's t (NaN for one run).
    pub ci95: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Stats {
    /// The statistics of `v` (in its order).
    pub fn of(v: &[f64]) -> Stats {
        let n = v.len();
        let nan = f64::NAN;
        if n == 0 {
            return Stats { n, mean: nan, sd: nan, ci95: nan, min: nan, max: nan };
        }
        let mean = v.iter().sum::<f64>() / n as f64;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if n == 1 {
            return Stats { n, mean, sd: nan, ci95: nan, min, max };
        }
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        let sd = var.sqrt();
        Stats { n, mean, sd, ci95: t975(n - 1) * sd / (n as f64).sqrt(), min, max }
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (table to 30, then the
/// Cornish-Fisher expansion; error below 1e-3).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    if df == 0 {
        return f64::NAN;
    }
    if df <= 30 {
        return T[df - 1];
    }
    let (z, n) = (1.959_964_f64, df as f64);
    z + (z.powi(3) + z) / (4.0 * n)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_interval() {
        let s = Stats::of(&[1.0, 2.0, 3.0]);
        assert_eq!((s.n, s.mean, s.sd), (3, 2.0, 1.0));
        assert!((s.ci95 - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert!(Stats::of(&[5.0]).sd.is_nan());
        assert!((t975(1000) - 1.9623).abs() < 1e-3 && (t975(31) - 2.0395).abs() < 1e-3);
    }
}
