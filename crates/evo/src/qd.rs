//! Quality diversity: archives stored as structures of arrays (solutions, fitness, measures),
//! MAP-Elites emitters (Gaussian and iso-line variation) and CMA-ME.
//!
//! Papers: J.-B. Mouret and J. Clune, "Illuminating search spaces by mapping elites",
//! arXiv:1504.04909 (MAP-Elites); V. Vassiliades and J.-B. Mouret, "Discovering the Elite
//! Hypervolume by Leveraging Interspecies Correlation", GECCO 2018 (iso-line variation);
//! V. Vassiliades et al., "Using Centroidal Voronoi Tessellations to Scale Up MAP-Elites",
//! IEEE TEVC 2018 (CVT archive); M. Fontaine et al., "Covariance Matrix Adaptation for the
//! Rapid Illumination of Behavior Space", GECCO 2020 (CMA-ME). Reference implementation:
//! pyribs 0.12 (`GridArchive`, `CVTArchive`, `GaussianEmitter`, `IsoLineEmitter`,
//! `EvolutionStrategyEmitter` with the two-stage improvement ranker).
//!
//! Sign convention: Kestrel **minimises** fitness (pyribs maximises its objective). The QD
//! score is `Σ (offset − fitness)` over filled cells, so with `offset` at least the worst
//! fitness of interest it grows as the archive fills and improves.

use crate::driver::Optimizer;
use crate::error::EvoError;
use crate::hyper::StrategyParams;
use crate::kind::StrategyKind;
use kestrel_core::FromInvalid;
use kestrel_core::{Key, Rng};

/// How measures map to cells.
#[derive(Clone, Debug, PartialEq)]
pub enum Tessellation {
    /// A regular grid: `cells[i]` bins over `[lower[i], upper[i]]` per measure; measures
    /// outside the range fall into the edge cells (pyribs' rule).
    Grid {
        /// Bins per measure.
        cells: Vec<usize>,
        /// Lower measure bounds.
        lower: Vec<f32>,
        /// Upper measure bounds.
        upper: Vec<f32>,
    },
    /// Nearest of `k` centroids (row-major `k × num_measures`).
    Cvt {
        /// Centroids.
        centroids: Vec<f32>,
    },
}

/// What adding one solution did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AddStatus {
    /// The cell kept its better (or equal) elite.
    NotAdded = 0,
    /// The solution replaced a worse elite.
    Improved = 1,
    /// The solution filled an empty cell.
    New = 2,
}

/// Archive statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArchiveStats {
    /// Filled cells.
    pub num_elites: usize,
    /// Filled fraction.
    pub coverage: f64,
    /// `Σ (offset − fitness)` over filled cells.
    pub qd_score: f64,
    /// Best (lowest) fitness in the archive.
    pub best: f32,
}

/// An archive of elites, one per cell, stored as structure of arrays.
#[derive(Clone, Debug)]
pub struct Archive {
    tess: Tessellation,
    num_dims: usize,
    num_measures: usize,
    num_cells: usize,
    qd_offset: f64,
    /// Whether each cell holds an elite.
    pub occupied: Vec<bool>,
    /// Fitness per cell.
    pub fitness: Vec<f32>,
    /// Solutions per cell, row-major `num_cells × num_dims`.
    pub solutions: Vec<f32>,
    /// Measures per cell, row-major `num_cells × num_measures`.
    pub measures: Vec<f32>,
    filled: Vec<u32>,
}

impl Archive {
    /// A grid archive (`cells` bins per measure over `[lower, upper]`).
    pub fn grid(
        num_dims: usize,
        cells: Vec<usize>,
        lower: Vec<f32>,
        upper: Vec<f32>,
        qd_offset: f64,
    ) -> Result<Self, EvoError> {
        let m = cells.len();
        if m == 0 || lower.len() != m || upper.len() != m || cells.contains(&0) {
            return Err(EvoError::invalid(
                "grid",
                format!("{m} measures"),
                "one bin count >= 1 and one range per measure",
            ));
        }
        if (0..m).any(|i| !valid_range(lower[i], upper[i])) {
            return Err(EvoError::invalid(
                "grid ranges",
                format!("{lower:?}..{upper:?}"),
                "lower < upper per measure",
            ));
        }
        let n_cells = cells.iter().product();
        Self::with(Tessellation::Grid { cells, lower, upper }, num_dims, m, n_cells, qd_offset)
    }

    /// A CVT archive with `num_cells` centroids from `samples` uniform points of the measure
    /// box, refined by `iters` Lloyd iterations (k-means), all from `key`.
    #[allow(clippy::too_many_arguments)]
    pub fn cvt(
        num_dims: usize,
        num_cells: usize,
        lower: Vec<f32>,
        upper: Vec<f32>,
        samples: usize,
        iters: usize,
        qd_offset: f64,
        key: Key,
    ) -> Result<Self, EvoError> {
        let m = lower.len();
        if m == 0 || upper.len() != m || (0..m).any(|i| !valid_range(lower[i], upper[i])) {
            return Err(EvoError::invalid(
                "cvt ranges",
                format!("{lower:?}..{upper:?}"),
                "lower < upper per measure",
            ));
        }
        if num_cells == 0 || samples < num_cells {
            return Err(EvoError::invalid(
                "cvt cells",
                format!("{num_cells} cells from {samples} samples"),
                "1 <= cells <= samples",
            ));
        }
        let mut rng = key.rng();
        let pts: Vec<f32> = (0..samples * m)
            .map(|i| lower[i % m] + (upper[i % m] - lower[i % m]) * rng.uniform_f32())
            .collect();
        let mut cent: Vec<f32> = pts[..num_cells * m].to_vec();
        let mut assign = vec![0usize; samples];
        for _ in 0..iters {
            for (s, a) in assign.iter_mut().enumerate() {
                *a = nearest(&cent, m, &pts[s * m..(s + 1) * m]);
            }
            let mut sum = vec![0f64; num_cells * m];
            let mut cnt = vec![0usize; num_cells];
            for (s, &a) in assign.iter().enumerate() {
                cnt[a] += 1;
                for j in 0..m {
                    sum[a * m + j] += pts[s * m + j] as f64;
                }
            }
            for c in 0..num_cells {
                if cnt[c] > 0 {
                    for j in 0..m {
                        cent[c * m + j] = (sum[c * m + j] / cnt[c] as f64) as f32;
                    }
                }
            }
        }
        Self::with(Tessellation::Cvt { centroids: cent }, num_dims, m, num_cells, qd_offset)
    }

    fn with(
        tess: Tessellation,
        num_dims: usize,
        m: usize,
        n_cells: usize,
        qd_offset: f64,
    ) -> Result<Self, EvoError> {
        if num_dims == 0 {
            return Err(EvoError::invalid("num_dims", 0, "at least 1"));
        }
        Ok(Archive {
            tess,
            num_dims,
            num_measures: m,
            num_cells: n_cells,
            qd_offset,
            occupied: vec![false; n_cells],
            fitness: vec![f32::INFINITY; n_cells],
            solutions: vec![0.0; n_cells * num_dims],
            measures: vec![0.0; n_cells * m],
            filled: Vec::with_capacity(n_cells),
        })
    }

    /// Cells in the archive.
    pub fn num_cells(&self) -> usize {
        self.num_cells
    }
    /// Measures per solution.
    pub fn num_measures(&self) -> usize {
        self.num_measures
    }
    /// Solution length.
    pub fn num_dims(&self) -> usize {
        self.num_dims
    }
    /// The tessellation.
    pub fn tessellation(&self) -> &Tessellation {
        &self.tess
    }

    /// The cell of a measure vector.
    pub fn index_of(&self, measures: &[f32]) -> usize {
        match &self.tess {
            Tessellation::Grid { cells, lower, upper } => {
                let mut idx = 0;
                for (i, &v) in measures.iter().enumerate() {
                    let t = ((v - lower[i]) / (upper[i] - lower[i]) * cells[i] as f32).floor();
                    let b = if t.is_finite() { (t.max(0.0) as usize).min(cells[i] - 1) } else { 0 };
                    idx = idx * cells[i] + b;
                }
                idx
            }
            Tessellation::Cvt { centroids } => nearest(centroids, self.num_measures, measures),
        }
    }

    /// Adds one solution; non-finite fitness or measures are never added.
    pub fn add_one(
        &mut self,
        solution: &[f32],
        fitness: f32,
        measures: &[f32],
    ) -> (AddStatus, f64) {
        if !fitness.is_finite() || measures.iter().any(|m| !m.is_finite()) {
            return (AddStatus::NotAdded, f64::NEG_INFINITY);
        }
        let c = self.index_of(measures);
        let (n, m) = (self.num_dims, self.num_measures);
        let status = if !self.occupied[c] {
            self.filled.push(c as u32);
            AddStatus::New
        } else if fitness < self.fitness[c] {
            AddStatus::Improved
        } else {
            return (AddStatus::NotAdded, self.fitness[c] as f64 - fitness as f64);
        };
        let value = if status == AddStatus::New {
            self.qd_offset - fitness as f64
        } else {
            self.fitness[c] as f64 - fitness as f64
        };
        self.occupied[c] = true;
        self.fitness[c] = fitness;
        self.solutions[c * n..(c + 1) * n].copy_from_slice(solution);
        self.measures[c * m..(c + 1) * m].copy_from_slice(measures);
        (status, value)
    }

    /// Adds a batch (row-major solutions and measures), writing each row's status and value
    /// (improvement; for a new cell `offset − fitness`).
    pub fn add(
        &mut self,
        solutions: &[f32],
        fitness: &[f32],
        measures: &[f32],
        status: &mut [AddStatus],
        value: &mut [f64],
    ) {
        let (n, m) = (self.num_dims, self.num_measures);
        for i in 0..fitness.len() {
            (status[i], value[i]) = self.add_one(
                &solutions[i * n..(i + 1) * n],
                fitness[i],
                &measures[i * m..(i + 1) * m],
            );
        }
    }

    /// Statistics.
    pub fn stats(&self) -> ArchiveStats {
        let (mut score, mut best) = (0.0, f32::INFINITY);
        for &c in &self.filled {
            let f = self.fitness[c as usize];
            score += self.qd_offset - f as f64;
            best = best.min(f);
        }
        ArchiveStats {
            num_elites: self.filled.len(),
            coverage: self.filled.len() as f64 / self.num_cells as f64,
            qd_score: score,
            best,
        }
    }

    /// A uniformly random elite's cell (None when empty).
    pub fn sample_cell(&self, rng: &mut Rng) -> Option<usize> {
        (!self.filled.is_empty())
            .then(|| self.filled[rng.below(self.filled.len() as u32) as usize] as usize)
    }

    /// The solution stored in a cell.
    pub fn solution(&self, cell: usize) -> &[f32] {
        &self.solutions[cell * self.num_dims..(cell + 1) * self.num_dims]
    }
}

/// A usable measure range: finite bounds with `lower < upper`.
fn valid_range(lower: f32, upper: f32) -> bool {
    lower.is_finite() && upper.is_finite() && lower < upper
}

fn nearest(cent: &[f32], m: usize, p: &[f32]) -> usize {
    let mut best = (f32::INFINITY, 0);
    for (c, row) in cent.chunks_exact(m).enumerate() {
        let d: f32 = row.iter().zip(p).map(|(a, b)| (a - b) * (a - b)).sum();
        if d < best.0 {
            best = (d, c);
        }
    }
    best.1
}

/// A QD problem: fitness (minimised) and measures for each row, in one batched call.
pub trait QdProblem: Send + Sync {
    /// Solution length.
    fn num_dims(&self) -> usize;
    /// Measures per solution.
    fn num_measures(&self) -> usize;
    /// Writes fitness (one per row) and measures (row-major).
    fn evaluate(&self, key: Key, population: &[f32], fitness: &mut [f32], measures: &mut [f32]);
}

/// What every QD emitter does (one verb set, so a QD loop holds any mix of emitters):
/// `ask` a batch given the archive, `tell` it back with fitness and measures (which adds it
/// to the archive and updates the emitter).
pub trait Emitter: Send + Sync {
    /// Solutions per batch.
    fn batch_size(&self) -> usize;
    /// Fills `population` (`batch_size × num_dims`).
    fn ask(&mut self, key: Key, archive: &Archive, population: &mut [f32]);
    /// Adds the evaluated batch to the archive and updates the emitter.
    fn tell(
        &mut self,
        key: Key,
        archive: &mut Archive,
        population: &[f32],
        fitness: &[f32],
        measures: &[f32],
    );
    /// Restarts so far (0 for emitters that never restart).
    fn restarts(&self) -> u64 {
        0
    }
}

/// Variation used by [`MapElites`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Variation {
    /// Parent plus `N(0, σ²)` (pyribs `GaussianEmitter`).
    Gaussian {
        /// Mutation scale.
        sigma: f32,
    },
    /// `p1 + σ_iso N(0, I) + σ_line N(0, 1) (p2 − p1)` (pyribs `IsoLineEmitter`).
    IsoLine {
        /// Isotropic scale.
        iso_sigma: f32,
        /// Line scale.
        line_sigma: f32,
    },
}

/// MAP-Elites: parents drawn uniformly from the archive (from `x0` while it is empty).
#[derive(Clone, Debug)]
pub struct MapElites {
    /// Solutions per batch.
    pub batch_size: usize,
    /// Variation operator.
    pub variation: Variation,
    /// Start point while the archive is empty.
    pub x0: Vec<f32>,
}

impl Emitter for MapElites {
    fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn ask(&mut self, key: Key, archive: &Archive, population: &mut [f32]) {
        let n = archive.num_dims();
        let mut rng = key.rng();
        for row in population.chunks_exact_mut(n) {
            let p1 = archive
                .sample_cell(&mut rng)
                .map(|c| archive.solution(c).to_vec())
                .unwrap_or_else(|| self.x0.clone());
            match self.variation {
                Variation::Gaussian { sigma } => {
                    for (x, p) in row.iter_mut().zip(&p1) {
                        *x = p + sigma * rng.normal_f64() as f32;
                    }
                }
                Variation::IsoLine { iso_sigma, line_sigma } => {
                    let p2 = archive
                        .sample_cell(&mut rng)
                        .map(|c| archive.solution(c).to_vec())
                        .unwrap_or_else(|| self.x0.clone());
                    let line = line_sigma * rng.normal_f64() as f32;
                    for ((x, a), b) in row.iter_mut().zip(&p1).zip(&p2) {
                        *x = a + iso_sigma * rng.normal_f64() as f32 + line * (b - a);
                    }
                }
            }
        }
    }

    fn tell(
        &mut self,
        _key: Key,
        archive: &mut Archive,
        population: &[f32],
        fitness: &[f32],
        measures: &[f32],
    ) {
        let (n, m) = (archive.num_dims(), archive.num_measures());
        for (i, &f) in fitness.iter().enumerate() {
            archive.add_one(&population[i * n..(i + 1) * n], f, &measures[i * m..(i + 1) * m]);
        }
    }
}

/// CMA-ME: an evolution-strategy emitter ranked by two-stage improvement (new cells first,
/// then improved elites, then the rest; by improvement value within each), restarted from a
/// random elite when a generation adds nothing (pyribs `restart_rule="no_improvement"`) or its
/// step size stalls. Parents are selected by the strategy's own rank weights on that ranking
/// (pyribs `selection_rule="mu"` for CMA-ES). The strategy is CMA-ES by default and any of the
/// registry's by name ([`CmaMe::with_strategy`]; pyribs' `es=`: `sep_cma_es`, `lm_ma_es`,
/// `openai_es`, or any evosax name).
pub struct CmaMe {
    kind: StrategyKind,
    params: StrategyParams,
    opt: Box<dyn Optimizer>,
    /// Step size at every (re)start.
    pub sigma0: f64,
    /// Restarts so far.
    pub restarts: u64,
    order: Vec<usize>,
    ranks: Vec<f32>,
    status: Vec<AddStatus>,
    value: Vec<f64>,
}

impl Clone for CmaMe {
    fn clone(&self) -> Self {
        CmaMe {
            kind: self.kind,
            params: self.params.clone(),
            opt: self.opt.boxed_clone(),
            sigma0: self.sigma0,
            restarts: self.restarts,
            order: self.order.clone(),
            ranks: self.ranks.clone(),
            status: self.status.clone(),
            value: self.value.clone(),
        }
    }
}

impl std::fmt::Debug for CmaMe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmaMe")
            .field("strategy", &self.kind)
            .field("batch_size", &self.order.len())
            .field("sigma0", &self.sigma0)
            .field("restarts", &self.restarts)
            .finish()
    }
}

impl CmaMe {
    /// A CMA-ME emitter with `batch_size` solutions per generation starting at `x0`.
    pub fn new(batch_size: usize, x0: &[f32], sigma0: f64, key: Key) -> Result<Self, EvoError> {
        Self::with_strategy(
            StrategyKind::CmaEs,
            &StrategyParams::default(),
            batch_size,
            x0,
            sigma0,
            key,
        )
    }

    /// The emitter over strategy `kind` with its hyper-parameters `params` (pyribs'
    /// `es_kwargs`), every (re)start built as [`StrategyKind::build_with`] builds it.
    pub fn with_strategy(
        kind: StrategyKind,
        params: &StrategyParams,
        batch_size: usize,
        x0: &[f32],
        sigma0: f64,
        key: Key,
    ) -> Result<Self, EvoError> {
        let opt = kind.build_with(Some(batch_size), sigma0, params, x0, key)?;
        Ok(CmaMe {
            kind,
            params: params.clone(),
            opt,
            sigma0,
            restarts: 0,
            order: vec![0; batch_size],
            ranks: vec![0.0; batch_size],
            status: vec![AddStatus::NotAdded; batch_size],
            value: vec![0.0; batch_size],
        })
    }

    /// The strategy the emitter runs.
    pub fn strategy(&self) -> StrategyKind {
        self.kind
    }
}

impl Emitter for CmaMe {
    fn batch_size(&self) -> usize {
        self.order.len()
    }

    fn restarts(&self) -> u64 {
        self.restarts
    }

    /// Samples a batch from the emitter's strategy.
    fn ask(&mut self, key: Key, _archive: &Archive, population: &mut [f32]) {
        self.opt.ask(key, population);
    }

    /// Adds the batch to the archive and updates the strategy from the improvement ranking.
    fn tell(
        &mut self,
        key: Key,
        archive: &mut Archive,
        population: &[f32],
        fitness: &[f32],
        measures: &[f32],
    ) {
        let (status, value) = (&mut self.status, &mut self.value);
        archive.add(population, fitness, measures, status, value);
        let (status, value) = (&self.status, &self.value);
        for (i, o) in self.order.iter_mut().enumerate() {
            *o = i;
        }
        self.order.sort_by(|&a, &b| status[b].cmp(&status[a]).then(value[b].total_cmp(&value[a])));
        for (r, &i) in self.order.iter().enumerate() {
            self.ranks[i] = r as f32;
        }
        let m = self.opt.tell(key, population, &self.ranks);
        let added = status.iter().any(|&s| s != AddStatus::NotAdded);
        let stalled = m.sigma < 1e-12 || !m.sigma.is_finite();
        if !added || stalled {
            let mut rng = key.fold_in(1).rng();
            let x0 = archive
                .sample_cell(&mut rng)
                .map(|c| archive.solution(c).to_vec())
                .unwrap_or_else(|| self.opt.mean());
            // The same strategy and sizes that built it: a rebuild cannot fail.
            let fresh =
                self.kind.build_with(Some(self.order.len()), self.sigma0, &self.params, &x0, key);
            if let Ok(fresh) = fresh {
                self.opt = fresh;
            }
            self.restarts += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_index_clips_to_edges_and_keeps_the_best() {
        let mut a = Archive::grid(2, vec![4, 2], vec![0.0, 0.0], vec![1.0, 1.0], 10.0).unwrap();
        assert_eq!(a.index_of(&[0.0, 0.0]), 0);
        assert_eq!(a.index_of(&[0.99, 0.99]), 7);
        assert_eq!(a.index_of(&[-5.0, 9.0]), 1);
        assert_eq!(a.add_one(&[1.0, 1.0], 3.0, &[0.1, 0.1]), (AddStatus::New, 7.0));
        assert_eq!(a.add_one(&[2.0, 2.0], 4.0, &[0.1, 0.1]).0, AddStatus::NotAdded);
        assert_eq!(a.add_one(&[3.0, 3.0], 1.0, &[0.1, 0.1]), (AddStatus::Improved, 2.0));
        assert_eq!(a.add_one(&[3.0, 3.0], f32::NAN, &[0.5, 0.5]).0, AddStatus::NotAdded);
        let s = a.stats();
        assert_eq!((s.num_elites, s.qd_score, s.best), (1, 9.0, 1.0));
        assert_eq!(a.solution(0), &[3.0, 3.0]);
        assert!((s.coverage - 1.0 / 8.0).abs() < 1e-12);
    }

    #[test]
    fn cvt_centroids_cover_the_box() {
        let a = Archive::cvt(3, 20, vec![-1.0, -1.0], vec![1.0, 1.0], 2000, 10, 0.0, Key::new(1))
            .unwrap();
        let Tessellation::Cvt { centroids } = a.tessellation() else { unreachable!() };
        assert!(centroids.iter().all(|c| (-1.0..=1.0).contains(c)));
        let cells: std::collections::HashSet<usize> = (0..400)
            .map(|i| a.index_of(&[(i % 20) as f32 / 10.0 - 0.95, (i / 20) as f32 / 10.0 - 0.95]))
            .collect();
        assert!(cells.len() >= 18, "{}", cells.len());
        assert!(Archive::cvt(3, 20, vec![1.0], vec![0.0], 100, 1, 0.0, Key::new(1)).is_err());
    }
}

/// The linear-projection QD benchmark of the CMA-ME paper: fitness is a test function of
/// `x − 0.4·5.12` (the shifted optimum), measures are the sums of the clipped first and second
/// halves of `x` (each coordinate clipped to `[-5.12, 5.12]`, beyond which it counts
/// `5.12 / x`).
#[derive(Clone, Debug)]
pub struct LinearProjection {
    /// Solution length (≥ 2).
    pub num_dims: usize,
    /// The test function.
    pub function: crate::problem::Function,
}

impl LinearProjection {
    /// Measure range: each measure lies in `[-5.12 n/2, 5.12 n/2]`.
    pub fn measure_bound(&self) -> f32 {
        5.12 * (self.num_dims / 2) as f32
    }
}

impl QdProblem for LinearProjection {
    fn num_dims(&self) -> usize {
        self.num_dims
    }
    fn num_measures(&self) -> usize {
        2
    }
    fn evaluate(&self, _key: Key, population: &[f32], fitness: &mut [f32], measures: &mut [f32]) {
        use rayon::prelude::*;
        let n = self.num_dims;
        let clip = |v: f32| if v.abs() <= 5.12 { v } else { 5.12 / v };
        population
            .par_chunks(n)
            .zip(fitness.par_iter_mut())
            .zip(measures.par_chunks_mut(2))
            .for_each(|((x, f), m)| {
                let z: Vec<f64> = x.iter().map(|&v| v as f64 - 0.4 * 5.12).collect();
                *f = self.function.value(&z) as f32;
                m[0] = x[..n / 2].iter().map(|&v| clip(v)).sum();
                m[1] = x[n / 2..].iter().map(|&v| clip(v)).sum();
            });
    }
}
