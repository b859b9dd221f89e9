//! Throughput measurements of the ARC environment (`kestrel arc bench`, the Python
//! benchmarks): batched steps per second, the memory-bandwidth bound of writing observations,
//! and the cost of each operation.

use crate::action::{ArcAction, SelKind, sample_action};
use crate::env::{ArcEnv, ArcParams, ModeKind};
use crate::error::ArcError;
use crate::lanes::{ArcLanes, MAX_LANE_SIDE};
use crate::ops::NUM_OPS;
use kestrel_core::timing::rows_per_second;
use kestrel_core::{BatchEnv, Env, Key, VecEnv};
use std::time::Instant;

/// Which batched driver steps the envs (config spelling `rows`, `lanes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArcKernel {
    /// `VecEnv<ArcEnv<S>>`: one env at a time per row (every mode and canvas).
    Rows,
    /// [`ArcLanes`]: the structure-of-arrays kernel (`jaxarc` mode, canvases up to 10×10).
    Lanes,
}

impl ArcKernel {
    /// The lanes where they apply (`jaxarc`, `S ≤ 10`) and pay (at least 16 envs: a block
    /// steps 64 lanes whatever the batch, which costs more than 11 envs on rows), else rows.
    pub fn auto<const S: usize>(p: &ArcParams, num_envs: usize) -> ArcKernel {
        if S <= MAX_LANE_SIDE && p.mode == ModeKind::Jaxarc && num_envs >= 16 {
            ArcKernel::Lanes
        } else {
            ArcKernel::Rows
        }
    }
}

/// Steps per second of `n` envs under `kernel` for at least `seconds`, with random actions
/// of selection form `kind` sampled inside the loop (by the row policy for
/// [`ArcKernel::Rows`], lane-wise for [`ArcKernel::Lanes`]: the same actions).
pub fn steps_per_second<const S: usize>(
    env: &ArcEnv<S>,
    p: &ArcParams,
    n: usize,
    kind: SelKind,
    seconds: f64,
    kernel: ArcKernel,
) -> Result<f64, ArcError> {
    match kernel {
        ArcKernel::Rows => {
            let mut v = VecEnv::new(env.clone(), p.clone(), n, 1)?;
            let policy = |_: usize, key: Key, _: &[i8], a: &mut [ArcAction<S>]| {
                a[0] = sample_action::<S>(&mut key.rng(), kind)
            };
            Ok(rows_per_second(n, seconds, || v.step_with(policy))?)
        }
        ArcKernel::Lanes => {
            let mut v = ArcLanes::new(env.clone(), p.clone(), n, 1)?;
            Ok(rows_per_second(n, seconds, || v.step_random(kind))?)
        }
    }
}

/// Rows per second at which `len` bytes per row can be copied between two columns of `n`
/// rows on the current pool: the memory-bandwidth bound of writing observations.
pub fn copy_bound(n: usize, len: usize, seconds: f64) -> f64 {
    use rayon::prelude::*;
    let src: Vec<i8> = (0..n * len).map(|i| i as i8).collect();
    let mut dst = vec![0i8; n * len];
    let block = n.div_ceil(rayon::current_num_threads() * 4).max(16);
    let pass = |dst: &mut [i8]| {
        dst.par_chunks_mut(block * len)
            .zip(src.par_chunks(block * len))
            .for_each(|(d, s)| d.copy_from_slice(s));
    };
    pass(&mut dst);
    let (mut rows, t0) = (0u64, Instant::now());
    while t0.elapsed().as_secs_f64() < seconds {
        pass(&mut dst);
        rows += n as u64;
    }
    std::hint::black_box(&dst);
    rows as f64 / t0.elapsed().as_secs_f64()
}

/// Nanoseconds per step of each op on one env (fresh episode every 50 steps, observation
/// written, random selections of form `kind` sampled inside the loop).
pub fn op_costs<const S: usize>(env: &ArcEnv<S>, p: &ArcParams, kind: SelKind) -> Vec<f64> {
    let mut obs = vec![0i8; env.spec(p).obs_len()];
    (0..NUM_OPS)
        .map(|op| {
            let mut rng = Key::new(op as u64).rng();
            let n = 20_000u32;
            let mut s = env.reset(p, Key::new(0), &mut obs);
            let t0 = Instant::now();
            for i in 0..n {
                if i % 50 == 0 {
                    s = env.init_state(p, s.task, s.pair, s.test, Key::new(i as u64));
                }
                let mut a = sample_action::<S>(&mut rng, kind);
                a.op = op;
                env.apply(p, &mut s, &a);
                env.write_obs(p, &s, &mut obs);
            }
            std::hint::black_box(&obs);
            t0.elapsed().as_nanos() as f64 / n as f64
        })
        .collect()
}
