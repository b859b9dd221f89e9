//! Heap bytes of the crate's parts as functions of their sizes, for the run budgets of
//! `kestrel-run` (see `kestrel_core::Budget`). Each formula lists the buffers its part allocates
//! (the file and the buffer named in a comment) and was checked against a counting allocator's
//! peak; `crates/run/tests/budget.rs` keeps checking it.

use crate::kind::StrategyKind;

/// `n` rounded up to a multiple of 8: faer pads every f64 column to 64 bytes.
fn p8(n: u128) -> u128 {
    n.div_ceil(8).saturating_mul(8)
}

/// faer's workspace for the eigen-decomposition of an `n × n` symmetric matrix (measured:
/// 3,200 B at n = 10, 100,160 B at n = 100, 416,768 B at n = 128 and 24.5 MB at n = 1000;
/// the bounds hold on both sides of faer's blocked path at 128).
pub fn eigen_bytes(n: usize) -> u128 {
    let n = n as u128;
    if n < 128 { 8 * n * n + 240 * n + 512 } else { n.saturating_mul(n).saturating_mul(26) }
}

/// The packing buffer a large matrix product allocates once per thread (faer's gemm backend:
/// 4 MiB on the machines measured; its size follows the CPU's cache, so twice that is
/// counted).
pub const PACKING_BYTES: u128 = 8 << 20;

/// A QD archive of `cells` cells over `num_dims` dimensions: the f32 solutions, objectives,
/// measures and occupancy (qd.rs).
pub fn archive_bytes(cells: usize, num_dims: usize) -> u128 {
    (cells as u128).saturating_mul(17u128.saturating_add((num_dims as u128).saturating_mul(4)))
}

impl StrategyKind {
    /// Whether this strategy's matrix products at `n` dimensions and population `pop` are
    /// large enough for the packing buffer ([`PACKING_BYTES`], once per thread).
    pub fn packs(self, n: usize, pop: usize) -> bool {
        let (n, l) = (n as u128, pop as u128);
        match self {
            StrategyKind::CmaEs | StrategyKind::SvCmaEs => {
                n.saturating_mul(n).saturating_mul(l) > 4096
            }
            StrategyKind::Xnes => n.saturating_mul(n).saturating_mul(l.max(n)) > 4096,
            _ => false,
        }
    }

    /// Heap bytes of this strategy's state for `n` dimensions and population `pop`, with its
    /// weights and scratch, and the ask/tell driver's population and fitness buffers (the
    /// packing buffer is per thread: [`StrategyKind::packs`]).
    pub fn state_bytes(self, n: usize, pop: usize) -> u128 {
        let (n, l) = (n as u128, pop as u128);
        let nl = n.saturating_mul(l);
        // Driver: the f32 population and fitness (driver.rs).
        let driver = nl.saturating_mul(4).saturating_add(4 * l);
        let state = match self {
            // C and B (n × n), y and tmp (n × λ, padded), the f64 population, the eigen
            // workspace, weights and vectors (cma_es.rs).
            StrategyKind::CmaEs => p8(n)
                .saturating_mul(n)
                .saturating_mul(16)
                .saturating_add(nl.saturating_mul(8))
                .saturating_add(p8(n).saturating_mul(l).saturating_mul(16))
                .saturating_add(eigen_bytes(n as usize))
                .saturating_add(8 * p8(n) + 24 * l + 60 * n),
            // Diagonal: z and y (λ × n, f64) and vectors (sep_cma_es.rs).
            StrategyKind::SepCmaEs => nl.saturating_mul(16).saturating_add(24 * l + 60 * n),
            // z (λ × n, f64) and vectors (snes.rs).
            StrategyKind::Snes => nl.saturating_mul(8).saturating_add(24 * l + 36 * n),
            // A, its exponential and gradients (six n × n), z and x (λ × n, padded), the eigen
            // workspace (xnes.rs).
            StrategyKind::Xnes => p8(n)
                .saturating_mul(n)
                .saturating_mul(48)
                .saturating_add(p8(l).saturating_mul(n).saturating_mul(16))
                .saturating_add(eigen_bytes(n as usize))
                .saturating_add(8 * p8(n) + 24 * l + 28 * n),
            // The f64 noise (λ × n) and OpenEsAdam's vectors (open_es.rs).
            StrategyKind::OpenEs => nl.saturating_mul(8).saturating_add(16 * l + 36 * n),
            // The f32 noise and the ClipUp vectors (pgpe.rs).
            StrategyKind::Pgpe => nl.saturating_mul(4).saturating_add(16 * l + 36 * n),
            // The f32 trial population (de.rs).
            StrategyKind::De => nl.saturating_mul(4).saturating_add(4 * l + 4 * n),
            // z (λ × n, f64), weights, order and four vectors (weighted_es.rs).
            StrategyKind::SimpleEs | StrategyKind::Des => {
                nl.saturating_mul(8).saturating_add(24 * l + 36 * n)
            }
            // z and d (λ × n, f64), M with its two n × n scratch matrices, vectors (ma_es.rs).
            StrategyKind::MaEs => nl
                .saturating_mul(16)
                .saturating_add(n.saturating_mul(n).saturating_mul(24))
                .saturating_add(24 * l + 60 * n),
            // The pairs' normals (λ/2 × n, f64), the fitness copy, the order, OpenEsAdam's vectors
            // (antithetic.rs).
            StrategyKind::Ars | StrategyKind::Esmc => {
                nl.saturating_mul(4).saturating_add(16 * l + 40 * n)
            }
            // z (λ × n, f64), the centre and the start (local_search.rs).
            StrategyKind::HillClimbing
            | StrategyKind::RandomSearch
            | StrategyKind::SimulatedAnnealing
            | StrategyKind::GradientlessDescent => nl.saturating_mul(8).saturating_add(24 * n),
            // Members and personal bests (f32), velocities and z (f64), λ × n each; the
            // uniforms, fitness and order (swarm.rs).
            StrategyKind::Pso => nl.saturating_mul(24).saturating_add(40 * l + 4 * n),
            // Members (f32), z and the crossover uniforms (f64), λ × n each; the parents,
            // fitness and order (swarm.rs).
            StrategyKind::SimpleGa => nl.saturating_mul(20).saturating_add(24 * l + 4 * n),
            // Members (f32) and z (f64), λ × n each; MR15's pool of both generations (f32,
            // 2 λ × n) and its order; the rates, picks, order, fitness and group vectors (at
            // most one group a member) (ga.rs).
            StrategyKind::Mr15Ga => nl.saturating_mul(20).saturating_add(96 * l + 4 * n),
            StrategyKind::SamrGa | StrategyKind::GesmrGa => {
                nl.saturating_mul(12).saturating_add(96 * l + 4 * n)
            }
            // The perturbations (λ × n, f64) and the pairs' normals (λ/2 × n), the fitness
            // copy, OpenEsAdam's vectors; Guided ES's archive, factor and Q (n × k each, k = 1 by
            // default); ASEBO's projector, covariance and factor (n × n each) (gradient_es.rs).
            StrategyKind::PersistentEs | StrategyKind::NoiseReuseEs => {
                nl.saturating_mul(12).saturating_add(8 * l + 40 * n)
            }
            StrategyKind::GuidedEs => nl.saturating_mul(12).saturating_add(8 * l + 80 * n),
            StrategyKind::Asebo => nl
                .saturating_mul(12)
                .saturating_add(n.saturating_mul(n).saturating_mul(24))
                .saturating_add(8 * l + 80 * n),
            // z and d (λ × n, f64), one path (n; `num_paths` adds n each), r (λ), the
            // rank buffers and vectors (rm_es.rs).
            StrategyKind::RmEs => nl.saturating_mul(16).saturating_add(48 * l + 48 * n + 64),
            // z (λ × n, f64); the covariance with its factor and next estimate (n × n each),
            // the order and AMS rows, vectors (amalgam.rs).
            StrategyKind::IamalgamFull => nl
                .saturating_mul(8)
                .saturating_add(n.saturating_mul(n).saturating_mul(24))
                .saturating_add(16 * l + 40 * n),
            StrategyKind::IamalgamUnivariate => {
                nl.saturating_mul(8).saturating_add(16 * l + 64 * n)
            }
            // z and y (λ × n, f64), the rank buffers, fifteen vectors (cr_fm_nes.rs).
            StrategyKind::CrFmNes => nl.saturating_mul(16).saturating_add(40 * l + 160 * n),
            // z (λ × n, f64); the features, keys, queries (3 + 8 + 8 per row), values, ranks,
            // attention row and weights; mean, σ and the two n × 3 paths; the networks' ~300
            // weights (les.rs).
            StrategyKind::Les => nl.saturating_mul(8).saturating_add(200 * l + 64 * n + 4096),
            // The elites (f32) and the normals (λ × n, f64); the selection logits (λ × (λ + 1));
            // features, attention projections and outputs (~160 values per row); the networks'
            // ~3,000 weights (lga.rs).
            // z (λ × n, f64); per row fitness, ranks, weights, features (6) and hidden units
            // (8); per coordinate the paths, axes and scratch (cma_anchored_les.rs).
            StrategyKind::CmaAnchoredLes => {
                nl.saturating_mul(8).saturating_add(140 * (l + n)).saturating_add(120 * n + 8192)
            }
            // z (λ × n, f64); per coordinate the context of 100 tokens of 16 (f64), this
            // generation's token (208) and features, traces and encodings (~60); per row the
            // features and ranks (~16); the pass's scratch, 11 × 16 per row of its longest
            // sequence (the rows, the coordinates or the context); the networks' ~16,000
            // weights held twice (evotf.rs; evosax's default checkpoint and context).
            StrategyKind::EvoTfEs => nl
                .saturating_mul(8)
                .saturating_add(n.saturating_mul(15_000))
                .saturating_add(l.max(n).max(100).saturating_mul(1416))
                .saturating_add(128 * l + (1 << 19)),
            StrategyKind::Lga => nl
                .saturating_mul(12)
                .saturating_add(l.saturating_mul(l).saturating_mul(8))
                .saturating_add(1400 * l + 4 * n + 32768),
            // z (λ/2 × n, f64), the means with their gradients and next values (k × n each,
            // k ≤ λ/2), the shaped fitness and order (sv_open_es.rs).
            StrategyKind::SvOpenEs => nl.saturating_mul(4).saturating_add(24 * l + 8 * n),
            // k CMA-ES states of λ/k rows each (the CMA-ES formula above, at k = pop / 4, the
            // most particles the sizes allow: an upper bound for any `num_populations`), and
            // the normals (λ × n, f64) (sv_cma_es.rs).
            StrategyKind::SvCmaEs => {
                let k = (l / 4).max(1);
                let one = StrategyKind::CmaEs.state_bytes(n as usize, (l / k).max(1) as usize);
                k.saturating_mul(one).saturating_add(nl.saturating_mul(8))
            }
            // The population, z, its scaled copy, the latent rows and x̂₀ (λ × n, f64, each),
            // the kernel (λ × λ), the fitness, weights and norms (diffusion.rs).
            StrategyKind::DiffusionEvolution => nl
                .saturating_mul(40)
                .saturating_add(l.saturating_mul(l).saturating_mul(8))
                .saturating_add(32 * l + 4 * n),
            // z and d (λ × n, f64), the m × n directions (m = 4 + ⌊3 ln n⌋), vectors.
            StrategyKind::LmMaEs => nl
                .saturating_mul(16)
                .saturating_add(n.saturating_mul(8 * (4 + 3 * (n.max(1) as f64).ln() as u128)))
                .saturating_add(24 * l + 60 * n + 64),
        };
        driver.saturating_add(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formulas_grow_as_their_buffers_do() {
        // CMA-ES at n = 1000, λ = 24: measured 41,149,080 B for the state with the driver.
        let b = StrategyKind::CmaEs.state_bytes(1000, 24);
        assert!(StrategyKind::CmaEs.packs(1000, 24) && !StrategyKind::Snes.packs(1000, 24));
        assert!((41_149_080..43_000_000).contains(&b), "{b}");
        // Quadratic in n for the full-covariance strategies, linear for the others.
        for s in [StrategyKind::CmaEs, StrategyKind::Xnes] {
            assert!(s.state_bytes(2000, 10) > 3 * s.state_bytes(1000, 10));
        }
        for s in [StrategyKind::Snes, StrategyKind::OpenEs, StrategyKind::Pgpe, StrategyKind::De] {
            assert!(s.state_bytes(2000, 10) < 3 * s.state_bytes(1000, 10));
        }
        assert_eq!(StrategyKind::Snes.state_bytes(usize::MAX, usize::MAX), u128::MAX);
        use crate::problem::Problem;
        assert_eq!(
            crate::neuro::cartpole_problem().unwrap().num_dims(),
            crate::neuro::CARTPOLE_DIMS
        );
    }
}
