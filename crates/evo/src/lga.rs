//! LGA, the learned genetic algorithm: a population of elites whose parents are sampled by a
//! self-attention layer over fitness and age features, whose children's mutation strengths
//! are rescaled by another, and whose elites are replaced by children through a
//! cross-attention selection, all three meta-learned.
//!
//! Paper: R. T. Lange, T. Schaul, Y. Chen, C. Lu, T. Zahavy, V. Dalibard and S. Flennerhag,
//! "Discovering Attention-Based Genetic Algorithms via Meta-Black-Box Optimization", GECCO 2023
//! (arXiv:2304.03995). Reference implementation (golden): evosax 0.3.2
//! `algorithms/population_based/learned_ga.py` (`LearnedGA`, registry name `LGA`) with
//! `learned_evolution/lga_tools.py` (`SamplingAttention`, `MutationAttention`,
//! `SelectionAttention`, `MultiHeadSelfAttention`, `MultiHeadCrossAttention`, `tanh_age`).
//!
//! **Weights**: evosax's meta-learned checkpoints, `ckpt/lga/2023_04_lga_v4.pkl` (evosax's
//! default up to 50 dimensions) or `2023_04_lga_v7.pkl` (above), read from the path given
//! ([`LgaNet::read`]); Kestrel ships none. Their mutation features are evosax's
//! `LEGACY_2023` encoding (the normalised strength plus 2), which evosax uses for its default
//! checkpoints.
//!
//! The elites are as many as the population (evosax's `elite_ratio = 1`). Generation 0 is the
//! evaluated first population `mean + σ z` (evosax's `init(population, fitness)`), every elite
//! with mutation strength σ and age 0. Then each generation: parent probabilities
//! `softmax(Dense(MHSA([f < f*, centred rank, z-score, tanh(age / g − 1)])))` over the elites,
//! `λ` parents drawn from them, each child's strength `σ_C · exp(½ Dense(MHSA([parent
//! features, z(σ_C), norm(σ_C) + 2])))` and its row `x_parent + σ_C ε`; after evaluation, each
//! elite takes the child drawn from `softmax([Q(MHCA(children, elites)) K(children)ᵀ / 4, 1])`
//! or keeps itself (the last column), its age reset or incremented.
//!
//! Differences, by design: a NaN or infinite child fitness is read as the generation's worst
//! finite one (evosax's features turn NaN), and the mutation strengths stay within
//! `[SIGMA_FLOOR, f32::MAX]`.

use crate::cma_es::SIGMA_FLOOR;
use crate::error::EvoError;
use crate::error::check_sizes;
use crate::learned_ckpt::Checkpoint;
use crate::les::{Dense, ExpRows, HeadAttention, fitness_features, softmax};
use crate::strategy::{Progress, Strategy, TellMetrics, check_lens, finite_or_worst, to_row};
use crate::swarm::{best_or_start, first_population};
use kestrel_core::{FromInvalid, Key, fill_normal_f32};
use std::path::Path;
use std::sync::Arc;

/// Attention heads and the model width (evosax's `SelectionAttention(2, 16)`, ...).
const HEADS: usize = 2;
const WIDTH: usize = 16;
const HEAD_DIM: usize = WIDTH / HEADS;

/// flax's multi-head attention as evosax builds it: `DenseGeneral` query, key and value
/// projections to `HEADS × HEAD_DIM` and an output mixing of the heads.
#[derive(Clone, Debug, PartialEq)]
struct MultiHead {
    query: Dense,
    key: Dense,
    value: Dense,
    out: Dense,
}

impl MultiHead {
    fn read(c: &Checkpoint, at: &str, inputs: usize) -> Result<Self, EvoError> {
        // DenseGeneral's kernels are `in × heads × head_dim` (and `heads × head_dim × out`):
        // row-major, they are a dense layer's `in × (heads·head_dim)`.
        let proj = |name: &str| -> Result<Dense, EvoError> {
            let kernel = c.get_f64(&format!("{at}/{name}/kernel"), &[inputs, HEADS, HEAD_DIM])?;
            let bias = c.get_f64(&format!("{at}/{name}/bias"), &[HEADS, HEAD_DIM])?;
            Dense::from_parts(kernel, &bias, inputs, WIDTH)
        };
        let out_kernel = c.get_f64(&format!("{at}/out/kernel"), &[HEADS, HEAD_DIM, WIDTH])?;
        let out_bias = c.get_f64(&format!("{at}/out/bias"), &[WIDTH])?;
        Ok(MultiHead {
            query: proj("query")?,
            key: proj("key")?,
            value: proj("value")?,
            out: Dense::from_parts(out_kernel, &out_bias, WIDTH, WIDTH)?,
        })
    }
}

/// Scratch of one attention: projections (keys transposed per head), one row of logits and
/// the heads' outputs.
#[derive(Clone, Debug)]
struct AttnWork {
    q: Vec<f64>,
    kt: Vec<f64>,
    v: Vec<f64>,
    row: Vec<f64>,
    heads: Vec<f64>,
}

impl AttnWork {
    fn new(rows: usize) -> Self {
        AttnWork {
            q: vec![0.0; rows * WIDTH],
            kt: vec![0.0; rows * WIDTH],
            v: vec![0.0; rows * WIDTH],
            row: vec![0.0; rows],
            heads: vec![0.0; rows * WIDTH],
        }
    }

    /// `out` (`queries × WIDTH`) = multi-head attention of the `queries` rows (`f` features
    /// each) over the `keys` rows: per head, `softmax(q kᵀ / √HEAD_DIM) v`, then the mixing.
    fn attend(&mut self, mh: &MultiHead, queries: &[f64], keys: &[f64], f: usize, out: &mut [f64]) {
        let (nq, nk) = (queries.len() / f, keys.len() / f);
        mh.query.apply_rows(queries, &mut self.q[..nq * WIDTH]);
        mh.value.apply_rows(keys, &mut self.v[..nk * WIDTH]);
        // Keys transposed, `WIDTH × nk`: head h's are rows h·HEAD_DIM.. of it (the
        // projection into `heads` as scratch first).
        mh.key.apply_rows(keys, &mut self.heads[..nk * WIDTH]);
        for j in 0..nk {
            for c in 0..WIDTH {
                self.kt[c * nk + j] = self.heads[j * WIDTH + c];
            }
        }
        for h in 0..HEADS {
            kestrel_core::simd::dispatch(HeadAttention {
                q: &self.q,
                q_stride: WIDTH,
                q_off: h * HEAD_DIM,
                kt: &self.kt[h * HEAD_DIM * nk..(h + 1) * HEAD_DIM * nk],
                dk: HEAD_DIM,
                v: &self.v,
                v_stride: WIDTH,
                v_off: h * HEAD_DIM,
                dv: HEAD_DIM,
                scale: 1.0 / (HEAD_DIM as f64).sqrt(),
                row: &mut self.row,
                out: &mut self.heads,
                out_stride: WIDTH,
                out_off: h * HEAD_DIM,
                nq,
            });
        }
        mh.out.apply_rows(&self.heads[..nq * WIDTH], &mut out[..nq * WIDTH]);
    }
}

/// LGA's three networks, as evosax's checkpoint holds them.
#[derive(Clone, Debug, PartialEq)]
pub struct LgaNet {
    sampling: MultiHead,
    sampling_logit: Dense,
    mutation: MultiHead,
    mutation_log_var: Dense,
    selection: MultiHead,
    selection_query: Dense,
    selection_key: Dense,
    /// Where the weights were read from.
    pub source: String,
}

impl LgaNet {
    /// Reads evosax's LGA checkpoint (`sampling`, `mutation` and `selection`); a file of
    /// another layout is an error naming the array.
    pub fn read(path: &Path) -> Result<Self, EvoError> {
        Self::from_checkpoint(&Checkpoint::read(path)?)
    }

    /// The networks from a parsed checkpoint.
    pub fn from_checkpoint(c: &Checkpoint) -> Result<Self, EvoError> {
        let (s, m, x) = ("sampling/params", "mutation/params", "selection/params");
        Ok(LgaNet {
            sampling: MultiHead::read(c, &format!("{s}/MultiHeadSelfAttention_0"), 4)?,
            sampling_logit: Dense::read(c, &format!("{s}/Dense_0"), WIDTH, 1)?,
            mutation: MultiHead::read(c, &format!("{m}/MultiHeadSelfAttention_0"), 5)?,
            mutation_log_var: Dense::read(c, &format!("{m}/Dense_0"), WIDTH, 1)?,
            selection: MultiHead::read(c, &format!("{x}/MultiHeadCrossAttention_0"), 3)?,
            selection_query: Dense::read(c, &format!("{x}/Dense_0"), WIDTH, WIDTH)?,
            selection_key: Dense::read(c, &format!("{x}/Dense_1"), 3, WIDTH)?,
            source: c.source.clone(),
        })
    }
}

/// LGA over `num_dims` with `pop_size` children and as many elites, with its networks (a
/// constant of the strategy, as [`crate::les::Les`]'s are).
#[derive(Clone, Debug)]
pub struct Lga {
    pop_size: usize,
    num_dims: usize,
    net: Arc<LgaNet>,
}

/// LGA hyper-parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct LgaParams {
    /// The first population's spread and the elites' first mutation strength (evosax's
    /// `std_init`, default 1).
    pub sigma: f64,
}

/// LGA state.
#[derive(Clone, Debug)]
pub struct LgaState {
    /// The elites, row-major (`pop_size × num_dims`).
    pub elites: Vec<f32>,
    /// Their fitness (as told; a failed child's is its generation's worst).
    pub fitness: Vec<f32>,
    /// Their mutation strengths.
    pub sigma: Vec<f64>,
    /// Generations since each was replaced.
    pub age: Vec<f64>,
    /// The last ask's children's mutation strengths.
    pub child_sigma: Vec<f64>,
    /// The best elite fitness so far (evosax's `best_fitness_shaped`, a feature).
    pub best_shaped: f64,
    /// The mean generation 0 is drawn around.
    pub start: Vec<f32>,
    /// Best-so-far bookkeeping.
    pub progress: Progress,
    parents: Vec<usize>,
    eps: Vec<f64>,
    choice: Vec<usize>,
    fit: Vec<f32>,
    order: Vec<usize>,
    ranks: Vec<f64>,
    feats: Vec<f64>,
    feats2: Vec<f64>,
    att: Vec<f64>,
    logits: Vec<f64>,
    q_s: Vec<f64>,
    k_s: Vec<f64>,
    work: AttnWork,
}

/// `(v − mean) / (sd + 1e-10)` and `2 (v − min) / (max − min + 1e-10) − 1 + 2` (evosax's
/// `standardize` and its legacy-encoded `normalize`) of the mutation strengths, into columns
/// 3 and 4 of `out` (5 per row).
fn strength_features(sigma: &[f64], out: &mut [f64]) {
    let n = sigma.len() as f64;
    let mean = sigma.iter().sum::<f64>() / n;
    let sd = (sigma.iter().map(|s| (s - mean) * (s - mean)).sum::<f64>() / n).sqrt();
    let clip = |s: f64| s.clamp(-1e10, 1e10);
    let lo = sigma.iter().map(|&s| clip(s)).fold(f64::INFINITY, f64::min);
    let hi = sigma.iter().map(|&s| clip(s)).fold(f64::NEG_INFINITY, f64::max);
    for (i, &s) in sigma.iter().enumerate() {
        out[5 * i + 3] = (s - mean) / (sd + 1e-10);
        out[5 * i + 4] = 2.0 * (clip(s) - lo) / (hi - lo + 1e-10) - 1.0 + 2.0;
    }
}

impl Lga {
    /// LGA with the networks given ([`LgaNet::read`]); `pop_size ≥ 2`.
    pub fn new(pop_size: usize, num_dims: usize, net: Arc<LgaNet>) -> Result<Self, EvoError> {
        check_sizes(pop_size, num_dims, 2)?;
        Ok(Lga { pop_size, num_dims, net })
    }

    /// The parent probabilities of the next ask (into the state's scratch, returned).
    pub fn parent_probabilities<'a>(&self, s: &'a mut LgaState) -> &'a [f64] {
        let (e, net) = (self.pop_size, &*self.net);
        // evosax's generation counter is Kestrel's minus the evaluated first population.
        let g = s.progress.generation.saturating_sub(1) as f64;
        fitness_features(&s.fitness, s.best_shaped, &mut s.order, &mut s.ranks, &mut s.feats, 4);
        for i in 0..e {
            s.feats[4 * i + 3] = (s.age[i] / (g + 1e-8) - 1.0).tanh();
        }
        let f = &s.feats[..4 * e];
        s.work.attend(&net.sampling, f, f, 4, &mut s.att[..e * WIDTH]);
        for i in 0..e {
            net.sampling_logit.apply(&s.att[i * WIDTH..(i + 1) * WIDTH], &mut s.logits[i..i + 1]);
        }
        softmax(&mut s.logits[..e]);
        &s.logits[..e]
    }

    /// The population from given draws: generation 0 from standard normals `eps` (`mean + σ
    /// z`); later, children of the elites `parents` (`pop_size` indices) with Gaussian
    /// mutations `eps` (`pop_size × num_dims`) scaled by the learned strengths.
    pub fn ask_from_draws(
        &self,
        s: &mut LgaState,
        p: &LgaParams,
        parents: &[usize],
        eps: &[f64],
        population: &mut [f32],
    ) -> Result<(), EvoError> {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Lga::ask", lam, n, population, None);
        if eps.len() != lam * n {
            return Err(EvoError::invalid("draws.eps", eps.len(), format!("{} values", lam * n)));
        }
        if s.progress.generation == 0 {
            first_population(&s.start, p.sigma, eps, population);
            return Ok(());
        }
        if parents.len() != lam || parents.iter().any(|&i| i >= lam) {
            return Err(EvoError::invalid(
                "draws.parents",
                format!("{parents:?}"),
                format!("{lam} elite indices below {lam}"),
            ));
        }
        s.parents.copy_from_slice(parents);
        s.eps.copy_from_slice(eps);
        self.mutate_and_fill(s, population);
        Ok(())
    }

    fn mutate_and_fill(&self, s: &mut LgaState, population: &mut [f32]) {
        let (lam, n, net) = (self.pop_size, self.num_dims, &*self.net);
        for c in 0..lam {
            let e = s.parents[c];
            s.fit[c] = s.fitness[e];
            s.child_sigma[c] = s.sigma[e];
        }
        fitness_features(
            &s.fit[..lam],
            s.best_shaped,
            &mut s.order,
            &mut s.ranks,
            &mut s.feats2,
            5,
        );
        strength_features(&s.child_sigma, &mut s.feats2);
        let f = &s.feats2[..5 * lam];
        s.work.attend(&net.mutation, f, f, 5, &mut s.att[..lam * WIDTH]);
        for c in 0..lam {
            let mut lv = [0.0];
            net.mutation_log_var.apply(&s.att[c * WIDTH..(c + 1) * WIDTH], &mut lv);
            s.child_sigma[c] =
                (s.child_sigma[c] * (0.5 * lv[0]).exp()).clamp(SIGMA_FLOOR, f32::MAX as f64);
        }
        for c in 0..lam {
            let (e, sg) = (s.parents[c], s.child_sigma[c]);
            for j in 0..n {
                let x = s.elites[e * n + j] as f64 + sg * s.eps[c * n + j];
                population[c * n + j] = to_row(x);
            }
        }
    }

    /// The selection logits (`pop_size × (pop_size + 1)`, row-major: elite `e`'s scores for
    /// each child and, last, for keeping itself) of a told generation, the children's
    /// fitness already in the state's scratch.
    fn selection_logits(&self, s: &mut LgaState) {
        let (lam, net) = (self.pop_size, &*self.net);
        // Features over children then elites, ranked together.
        s.fit[lam..2 * lam].copy_from_slice(&s.fitness);
        fitness_features(&s.fit, s.best_shaped, &mut s.order, &mut s.ranks, &mut s.feats, 3);
        let (fx, fe) = s.feats[..6 * lam].split_at(3 * lam);
        s.work.attend(&net.selection, fe, fx, 3, &mut s.att[..lam * WIDTH]);
        net.selection_query.apply_rows(&s.att[..lam * WIDTH], &mut s.q_s[..lam * WIDTH]);
        net.selection_key.apply_rows(fx, &mut s.k_s[..lam * WIDTH]);
        // S = Q Kᵀ / √WIDTH as one product, into the rows of `logits` (each λ + 1 long: the
        // last column is keeping the elite, logit 1).
        let q = faer::MatRef::from_row_major_slice(&s.q_s[..lam * WIDTH], lam, WIDTH);
        let k = faer::MatRef::from_row_major_slice(&s.k_s[..lam * WIDTH], lam, WIDTH);
        let logits =
            faer::MatMut::from_row_major_slice_mut(&mut s.logits[..lam * (lam + 1)], lam, lam + 1)
                .submatrix_mut(0, 0, lam, lam);
        let scale = 1.0 / (WIDTH as f64).sqrt();
        faer::linalg::matmul::matmul(
            logits,
            faer::Accum::Replace,
            q,
            k.transpose(),
            scale,
            faer::Par::Seq,
        );
        for e in 0..lam {
            s.logits[e * (lam + 1) + lam] = 1.0;
        }
    }

    /// The tell from given selection draws: elite `e` takes child `choice[e]` (`< pop_size`)
    /// or keeps itself (`pop_size`), evosax's categorical draw over the selection logits.
    pub fn tell_with_choices(
        &self,
        population: &[f32],
        fitness: &[f32],
        choice: &[usize],
        s: &mut LgaState,
        p: &LgaParams,
    ) -> Result<TellMetrics, EvoError> {
        let lam = self.pop_size;
        if choice.len() != lam || choice.iter().any(|&c| c > lam) {
            return Err(EvoError::invalid(
                "draws.choice",
                format!("{choice:?}"),
                format!("{lam} indices up to {lam}"),
            ));
        }
        Ok(self.tell_body(population, fitness, Some(choice), None, s, p))
    }

    fn tell_body(
        &self,
        population: &[f32],
        fitness: &[f32],
        choice: Option<&[usize]>,
        key: Option<Key>,
        s: &mut LgaState,
        p: &LgaParams,
    ) -> TellMetrics {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Lga::tell", lam, n, population, Some(fitness));
        let first = s.progress.generation == 0;
        let (best, bad) = s.progress.record(population, fitness);
        // A failed child reads as its generation's worst (evosax's features would be NaN).
        finite_or_worst(fitness, &mut s.logits[..lam]);
        for c in 0..lam {
            s.fit[c] = s.logits[c] as f32;
        }
        if first {
            // evosax's init: the evaluated first population, strengths σ, ages 0, no best yet.
            s.elites.copy_from_slice(population);
            s.fitness.copy_from_slice(&s.fit[..lam]);
            s.sigma.iter_mut().for_each(|v| *v = p.sigma);
            s.age.iter_mut().for_each(|a| *a = 0.0);
            return s.progress.metrics(best, bad, p.sigma);
        }
        self.selection_logits(s);
        match (choice, key) {
            (Some(c), _) => s.choice.copy_from_slice(c),
            (None, key) => {
                // Each elite's categorical draw over its row's softmax (evosax's
                // `jax.random.categorical`, a Gumbel-max draw of the same law): one uniform by
                // the inverse CDF, the exponentials in f32 (evosax's precision).
                let mut rng = key.unwrap_or(Key::new(0)).rng();
                let (data, width) = (&mut s.logits[..lam * (lam + 1)], lam + 1);
                kestrel_core::simd::dispatch(ExpRows { data, width });
                for e in 0..lam {
                    let row = &s.logits[e * (lam + 1)..(e + 1) * (lam + 1)];
                    let total: f64 = row.iter().sum();
                    let u = rng.uniform_f64() * total;
                    let (mut acc, mut pick) = (0.0, lam);
                    for (c, &w) in row.iter().enumerate() {
                        acc += w;
                        if u < acc {
                            pick = c;
                            break;
                        }
                    }
                    s.choice[e] = pick;
                }
            }
        }
        let mut best_elite = f64::INFINITY;
        for e in 0..lam {
            let c = s.choice[e];
            if c < lam {
                s.elites[e * n..(e + 1) * n].copy_from_slice(&population[c * n..(c + 1) * n]);
                s.fitness[e] = s.fit[c];
                s.sigma[e] = s.child_sigma[c];
                s.age[e] = 0.0;
            } else {
                s.age[e] += 1.0;
            }
            best_elite = best_elite.min(s.fitness[e] as f64);
        }
        if best_elite < s.best_shaped {
            s.best_shaped = best_elite;
        }
        let sigma = s.sigma.iter().sum::<f64>() / lam as f64;
        s.progress.metrics(best, bad, sigma)
    }
}

impl Strategy for Lga {
    type Params = LgaParams;
    type State = LgaState;

    fn pop_size(&self) -> usize {
        self.pop_size
    }
    fn num_dims(&self) -> usize {
        self.num_dims
    }

    fn default_params(&self) -> LgaParams {
        LgaParams { sigma: 1.0 }
    }

    fn init(&self, _key: Key, params: &LgaParams, mean: &[f32]) -> LgaState {
        let (lam, n) = (self.pop_size, self.num_dims);
        assert_eq!(mean.len(), n, "Lga::init: mean must have num_dims values");
        LgaState {
            elites: mean.iter().cycle().take(lam * n).copied().collect(),
            fitness: vec![f32::INFINITY; lam],
            sigma: vec![params.sigma; lam],
            age: vec![0.0; lam],
            child_sigma: vec![0.0; lam],
            best_shaped: f64::INFINITY,
            start: mean.to_vec(),
            progress: Progress::new(n),
            parents: vec![0; lam],
            eps: vec![0.0; lam * n],
            choice: vec![lam; lam],
            fit: vec![0.0; 2 * lam],
            order: vec![0; 2 * lam],
            ranks: vec![0.0; 2 * lam],
            feats: vec![0.0; 4 * 2 * lam],
            feats2: vec![0.0; 5 * lam],
            att: vec![0.0; lam * WIDTH],
            logits: vec![0.0; lam * (lam + 1)],
            q_s: vec![0.0; lam * WIDTH],
            k_s: vec![0.0; lam * WIDTH],
            work: AttnWork::new(lam),
        }
    }

    fn ask(&self, key: Key, s: &mut LgaState, p: &LgaParams, population: &mut [f32]) {
        let (lam, n) = (self.pop_size, self.num_dims);
        check_lens("Lga::ask", lam, n, population, None);
        fill_normal_f32(key.fold_in(1), &mut s.eps);
        if s.progress.generation == 0 {
            first_population(&s.start, p.sigma, &s.eps, population);
            return;
        }
        self.parent_probabilities(s);
        // Parents by inverse CDF of the probabilities, one uniform each.
        let mut rng = key.fold_in(0).rng();
        for c in 0..lam {
            let u = rng.uniform_f64();
            let mut acc = 0.0;
            let mut pick = lam - 1;
            for (e, &pe) in s.logits[..lam].iter().enumerate() {
                acc += pe;
                if u < acc {
                    pick = e;
                    break;
                }
            }
            s.parents[c] = pick;
        }
        self.mutate_and_fill(s, population);
    }

    fn tell(
        &self,
        key: Key,
        population: &[f32],
        fitness: &[f32],
        s: &mut LgaState,
        p: &LgaParams,
    ) -> TellMetrics {
        self.tell_body(population, fitness, None, Some(key), s, p)
    }

    fn mean(&self, state: &LgaState) -> Vec<f32> {
        best_or_start(&state.progress, &state.start)
    }
    fn progress<'a>(&self, state: &'a LgaState) -> &'a Progress {
        &state.progress
    }
}

crate::strategy::state_tensors!(LgaState { vec32 elites, vec32 fitness, vec sigma, vec age, vec child_sigma, scalar best_shaped });
