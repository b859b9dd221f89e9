//! The shared verb set.

use kestrel_core::Key;

/// What a strategy reports of its search distribution for the stop criteria (`crate::termination`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scales {
    /// The overall step size σ.
    pub sigma: f64,
    /// The search mean.
    pub mean: Vec<f64>,
    /// Each coordinate's standard deviation without σ (`√C_ii`).
    pub coord: Vec<f64>,
    /// The covariance evolution path `p_c` (empty where the strategy has none).
    pub path: Vec<f64>,
    /// One principal axis `√λ_i b_i` without σ (empty where the strategy has no rotation):
    /// the axis asked for, `generation mod n`.
    pub axis: Vec<f64>,
    /// Smallest and largest `√λ` of the covariance (1 and 1 where it is isotropic).
    pub root_eig: (f64, f64),
}

/// Which of evosax 0.3.2's bugs a strategy reproduces (config spelling `none`, `all`), as the
/// ARC environment's `bugs` does for JaxARC's: `none` is the fixed algorithm (the default),
/// `all` evosax's behaviour, bug for bug, to reproduce a run made with it. Each strategy's
/// module documents the bugs it knows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BugsKind {
    /// Fixed.
    #[default]
    None,
    /// evosax 0.3.2's.
    All,
}

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

/// A sample coordinate as the f32 a population holds, held at ±`f32::MAX` (a step from a
/// mean near the bound would otherwise round to infinity).
#[inline(always)]
pub(crate) fn to_row(v: f64) -> f32 {
    (v as f32).clamp(-f32::MAX, f32::MAX)
}

/// Whether `row` is exactly what `ask` wrote for it, `to_row(mean + offset)` coordinate by
/// coordinate, with `offset` the step computed as `ask` computed it: then `tell` may take the
/// step itself, exact in f64, instead of reading it back through the f32 rounding (see
/// [`crate::cma_es::CmaEs`]'s notes on runs left going).
#[inline(always)]
pub(crate) fn is_rounding(
    row: &[f32],
    mean: &[f64],
    offsets: impl IntoIterator<Item = f64>,
) -> bool {
    row.iter().zip(mean).zip(offsets).all(|((&x, &m), o)| x == to_row(m + o))
}

/// `fitness` as f64 into `out`, each non-finite value read as the generation's worst finite
/// one (0 when none is finite): the gradient estimators' reading of a failed evaluation.
pub(crate) fn finite_or_worst(fitness: &[f32], out: &mut [f64]) {
    let worst = fitness.iter().copied().filter(|f| f.is_finite()).fold(f32::NEG_INFINITY, f32::max);
    let worst = if worst.is_finite() { worst as f64 } else { 0.0 };
    for (o, &f) in out.iter_mut().zip(fitness) {
        *o = if f.is_finite() { f as f64 } else { worst };
    }
}

/// The smallest and largest of non-negative values (`(inf, 0)` for none).
pub(crate) fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)))
}

/// The rows `m + σ ∘ z_i` of a diagonal Gaussian (`z` row-major, one row per population
/// row), each as [`to_row`] rounds it.
pub(crate) fn diagonal_rows(mean: &[f64], sigma: &[f64], z: &[f64], population: &mut [f32]) {
    let n = mean.len();
    for (row, zi) in population.chunks_exact_mut(n).zip(z.chunks_exact(n)) {
        for (j, x) in row.iter_mut().enumerate() {
            *x = to_row(mean[j] + sigma[j] * zi[j]);
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
    type State: Clone + std::fmt::Debug + Send + Sync + StateTensors;

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
    /// The search distribution's scales for the stop criteria ([`crate::termination`]), with
    /// principal axis `axis` (`generation mod num_dims`); false where the strategy has no more
    /// than a step size (the criteria then read it as isotropic).
    fn scales(&self, state: &Self::State, axis: usize, out: &mut Scales) -> bool {
        let _ = (state, axis, out);
        false
    }
    /// Guided ES: the surrogate gradient (`num_dims` finite values) its next `ask` samples
    /// along. Every other strategy: an error saying it takes none.
    fn set_gradient(
        &self,
        state: &mut Self::State,
        grad: &[f32],
    ) -> Result<(), crate::error::EvoError> {
        let _ = (state, grad);
        Err(takes_no_gradient())
    }
}

/// The error of [`Strategy::set_gradient`] for a strategy that takes no gradient.
pub(crate) fn takes_no_gradient() -> crate::error::EvoError {
    use kestrel_core::FromInvalid;
    crate::error::EvoError::invalid(
        "gradient",
        "given",
        "only for guided-es (the strategy that samples along a surrogate gradient)",
    )
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

/// A strategy state as named flat f64 arrays (matrices row-major, scalars and counters as one
/// value; counters are exact below 2^53): what a checkpoint, a Python `state_dict` or a pickle
/// stores. Loading checks every name and length against the state it overwrites, so a dict of
/// another shape is an error that changes nothing.
pub type StateDict = Vec<(String, Vec<f64>)>;

/// Export and import of a strategy state ([`StateDict`]).
pub trait StateTensors {
    /// The state's named arrays (scratch buffers excluded).
    fn state_dict(&self) -> StateDict;
    /// Overwrites the state from `dict` (every array this state exports, same lengths).
    fn load_state_dict(
        &mut self,
        dict: &[(String, Vec<f64>)],
    ) -> Result<(), crate::error::EvoError>;
}

/// Reads and writes the fields of a [`StateDict`], checking names and lengths.
pub(crate) struct Fields<'a> {
    dict: &'a [(String, Vec<f64>)],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(dict: &'a [(String, Vec<f64>)]) -> Self {
        Fields { dict }
    }

    fn get(&self, name: &str, len: usize) -> Result<&'a [f64], crate::error::EvoError> {
        use kestrel_core::FromInvalid;
        let v = self.dict.iter().find(|(n, _)| n == name).map(|(_, v)| v).ok_or_else(|| {
            crate::error::EvoError::invalid(format!("state_dict.{name}"), "missing", "present")
        })?;
        if v.len() != len {
            return Err(crate::error::EvoError::invalid(
                format!("state_dict.{name}"),
                format!("{} values", v.len()),
                format!("{len} values"),
            ));
        }
        Ok(v)
    }

    /// Checks that `name` holds `len` values (before anything is written).
    pub(crate) fn check(&self, name: &str, len: usize) -> Result<(), crate::error::EvoError> {
        self.get(name, len).map(|_| ())
    }

    pub(crate) fn vec(&self, name: &str, dst: &mut [f64]) {
        if let Ok(v) = self.get(name, dst.len()) {
            dst.copy_from_slice(v);
        }
    }

    pub(crate) fn vec32(&self, name: &str, dst: &mut [f32]) {
        if let Ok(v) = self.get(name, dst.len()) {
            dst.iter_mut().zip(v).for_each(|(d, s)| *d = *s as f32);
        }
    }

    pub(crate) fn mat(&self, name: &str, dst: &mut faer::Mat<f64>) {
        let (r, c) = (dst.nrows(), dst.ncols());
        if let Ok(v) = self.get(name, r * c) {
            for i in 0..r {
                for j in 0..c {
                    dst[(i, j)] = v[i * c + j];
                }
            }
        }
    }

    pub(crate) fn scalar(&self, name: &str) -> f64 {
        self.get(name, 1).map(|v| v[0]).unwrap_or(f64::NAN)
    }
}

/// Row-major values of a matrix.
pub(crate) fn mat_values(m: &faer::Mat<f64>) -> Vec<f64> {
    let mut v = Vec::with_capacity(m.nrows() * m.ncols());
    for i in 0..m.nrows() {
        for j in 0..m.ncols() {
            v.push(m[(i, j)]);
        }
    }
    v
}

impl Progress {
    pub(crate) fn export(&self, out: &mut StateDict) {
        out.push(("best_solution".into(), self.best_solution.iter().map(|&v| v as f64).collect()));
        out.push(("best_fitness".into(), vec![self.best_fitness as f64]));
        out.push(("generation".into(), vec![self.generation as f64]));
    }

    pub(crate) fn check(&self, f: &Fields<'_>) -> Result<(), crate::error::EvoError> {
        f.check("best_solution", self.best_solution.len())?;
        f.check("best_fitness", 1)?;
        f.check("generation", 1)
    }

    pub(crate) fn load(&mut self, f: &Fields<'_>) {
        f.vec32("best_solution", &mut self.best_solution);
        self.best_fitness = f.scalar("best_fitness") as f32;
        self.generation = f.scalar("generation") as u64;
    }
}

/// Implements [`StateTensors`] for a state from its field list: `vec` (Vec<f64>), `vec32`
/// (Vec<f32>), `mat` (faer Mat<f64>), `scalar` (f64), `count` (u64); `progress` always.
macro_rules! state_tensors {
    ($ty:ty { $($kind:ident $field:ident),* $(,)? }) => {
        impl $crate::strategy::StateTensors for $ty {
            #[allow(clippy::vec_init_then_push)]
            fn state_dict(&self) -> $crate::strategy::StateDict {
                let mut out: $crate::strategy::StateDict = Vec::new();
                $( $crate::strategy::state_tensors!(@put $kind self.$field, stringify!($field), out); )*
                self.progress.export(&mut out);
                out
            }
            fn load_state_dict(&mut self, dict: &[(String, Vec<f64>)]) -> Result<(), $crate::error::EvoError> {
                let f = $crate::strategy::Fields::new(dict);
                $( $crate::strategy::state_tensors!(@check $kind self.$field, stringify!($field), f); )*
                self.progress.check(&f)?;
                $( $crate::strategy::state_tensors!(@load $kind self.$field, stringify!($field), f); )*
                self.progress.load(&f);
                Ok(())
            }
        }
    };
    (@put vec $e:expr, $n:expr, $out:ident) => { $out.push(($n.into(), $e.clone())) };
    (@put vec32 $e:expr, $n:expr, $out:ident) => { $out.push(($n.into(), $e.iter().map(|&v| v as f64).collect())) };
    (@put mat $e:expr, $n:expr, $out:ident) => { $out.push(($n.into(), $crate::strategy::mat_values(&$e))) };
    (@put scalar $e:expr, $n:expr, $out:ident) => { $out.push(($n.into(), vec![$e])) };
    (@put count $e:expr, $n:expr, $out:ident) => { $out.push(($n.into(), vec![$e as f64])) };
    (@check vec $e:expr, $n:expr, $f:ident) => { $f.check($n, $e.len())? };
    (@check vec32 $e:expr, $n:expr, $f:ident) => { $f.check($n, $e.len())? };
    (@check mat $e:expr, $n:expr, $f:ident) => { $f.check($n, $e.nrows() * $e.ncols())? };
    (@check scalar $e:expr, $n:expr, $f:ident) => { $f.check($n, 1)? };
    (@check count $e:expr, $n:expr, $f:ident) => { $f.check($n, 1)? };
    (@load vec $e:expr, $n:expr, $f:ident) => { $f.vec($n, &mut $e) };
    (@load vec32 $e:expr, $n:expr, $f:ident) => { $f.vec32($n, &mut $e) };
    (@load mat $e:expr, $n:expr, $f:ident) => { $f.mat($n, &mut $e) };
    (@load scalar $e:expr, $n:expr, $f:ident) => { $e = $f.scalar($n) };
    (@load count $e:expr, $n:expr, $f:ident) => { $e = $f.scalar($n) as u64 };
}
pub(crate) use state_tensors;
