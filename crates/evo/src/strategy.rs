//! The shared verb set.

use kestrel_core::Key;

/// What one `tell` reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TellMetrics {
    /// Generations completed, this one included.
    pub generation: u64,
    /// Best (lowest) finite fitness in this generation (`+inf` if none).
    pub best_in_generation: f32,
    /// Best finite fitness so far.
    pub best_so_far: f32,
    /// NaN or infinite fitness values in this generation (ranked worst).
    pub nonfinite: u32,
    /// Step size (mean of per-dimension sizes for diagonal strategies).
    pub sigma: f64,
}

/// Best-so-far bookkeeping shared by every strategy's state.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Best solution so far (NaN before the first finite fitness).
    pub best_solution: Vec<f32>,
    /// Its fitness (`+inf` before the first finite fitness).
    pub best_fitness: f32,
    /// Generations told.
    pub generation: u64,
}

impl Progress {
    pub(crate) fn new(num_dims: usize) -> Self {
        Progress {
            best_solution: vec![f32::NAN; num_dims],
            best_fitness: f32::INFINITY,
            generation: 0,
        }
    }

    /// Records a generation; returns (best in generation, non-finite count).
    pub(crate) fn record(&mut self, population: &[f32], fitness: &[f32]) -> (f32, u32) {
        let n = self.best_solution.len();
        let (mut best, mut at, mut bad) = (f32::INFINITY, usize::MAX, 0u32);
        for (i, &f) in fitness.iter().enumerate() {
            if !f.is_finite() {
                bad += 1;
            } else if f < best {
                best = f;
                at = i;
            }
        }
        if at != usize::MAX && best < self.best_fitness {
            self.best_fitness = best;
            self.best_solution.copy_from_slice(&population[at * n..(at + 1) * n]);
        }
        self.generation += 1;
        (best, bad)
    }

    /// The metrics of the generation just recorded.
    pub(crate) fn metrics(
        &self,
        best_in_generation: f32,
        nonfinite: u32,
        sigma: f64,
    ) -> TellMetrics {
        TellMetrics {
            generation: self.generation,
            best_in_generation,
            best_so_far: self.best_fitness,
            nonfinite,
            sigma,
        }
    }
}

/// An `f64` mean as the `f32` vector the trait returns.
pub(crate) fn to_f32(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// An optimiser over flat `f32` vectors with explicit key, state and params.
///
/// `ask` fills a row-major `pop_size × num_dims` population; `tell` takes it back with one
/// fitness per row (minimised) and updates the state. Both assert the slice lengths once.
pub trait Strategy: Send + Sync {
    /// Hyper-parameters; `default_params` gives the reference's defaults.
    type Params: Clone + std::fmt::Debug + Send + Sync;
    /// Everything that changes between generations (buffers included, so ask/tell do not
    /// allocate).
    type State: Clone + std::fmt::Debug + Send + Sync;

    /// Rows of a population.
    fn pop_size(&self) -> usize;
    /// Columns of a population.
    fn num_dims(&self) -> usize;
    /// The reference implementation's default hyper-parameters.
    fn default_params(&self) -> Self::Params;
    /// A fresh state centred on `mean` (`num_dims` values).
    fn init(&self, key: Key, params: &Self::Params, mean: &[f32]) -> Self::State;
    /// Samples a population. Takes the state mutably only for its reusable buffers (as
    /// evosax's `ask` returns a new state); the distribution is not changed.
    fn ask(&self, key: Key, state: &mut Self::State, params: &Self::Params, population: &mut [f32]);
    /// Updates the state from a population and its fitness.
    fn tell(
        &self,
        key: Key,
        population: &[f32],
        fitness: &[f32],
        state: &mut Self::State,
        params: &Self::Params,
    ) -> TellMetrics;
    /// The current search mean.
    fn mean(&self, state: &Self::State) -> Vec<f32>;
    /// Best-so-far bookkeeping.
    fn progress<'a>(&self, state: &'a Self::State) -> &'a Progress;
}

pub(crate) fn check_lens(
    what: &str,
    pop: usize,
    dims: usize,
    population: &[f32],
    fitness: Option<&[f32]>,
) {
    assert_eq!(population.len(), pop * dims, "{what}: population must be pop_size x num_dims");
    if let Some(f) = fitness {
        assert_eq!(f.len(), pop, "{what}: one fitness per population row");
    }
}
