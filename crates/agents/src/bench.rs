//! Timings of the agents' parts (`kestrel hunt bench`, `kestrel allo bench`, the comparison
//! scripts): environment turns, observation, IQN update against its matrix products alone,
//! action choice; ALLO replay sampling and training steps.

use crate::allo::{Allo, AlloConfig, collect};
use crate::error::AgentError;
use crate::iqn::{IqnConfig, IqnLearner};
use kestrel_core::FromInvalid;
use kestrel_core::Key;
use kestrel_core::timing::{median_pair_us, median_us};
use kestrel_envs::GridMap;
use kestrel_envs::treasure::{TreasureDraws, TreasureHunt};
use kestrel_envs::treasure::{TreasureObs, TreasureParams};
use kestrel_nn::matmul::matmul;
use kestrel_replay::FrameReplay;
use std::sync::Arc;

/// What [`hunt`] measures (medians, µs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HuntTimes {
    /// One environment turn, 2 agents (spawning and both moves).
    pub turn_us: f64,
    /// Observation of both agents.
    pub observe_us: f64,
    /// One IQN training step (batch 64, 12 × 12 quantiles, layer 250).
    pub update_us: f64,
    /// The same step's matrix products alone, timed in alternation with it.
    pub gemm_us: f64,
    /// Greedy action choice for one state.
    pub act_us: f64,
    /// Floating-point operations of the step's products.
    pub update_flops: f64,
}

/// Times sorrel's treasure-hunt defaults with `obs` observations, `reps` repetitions (×100 for
/// turns, ×10 for observation and action choice).
pub fn hunt(obs: TreasureObs, reps: u64) -> Result<HuntTimes, AgentError> {
    if reps == 0 {
        return Err(AgentError::invalid("reps", 0, "at least 1"));
    }
    // sorrel's world and agents (the trainer's `HuntConfig::sorrel`).
    let p = TreasureParams { obs, ..TreasureParams::default() };
    p.validate()?;
    let iqn = IqnConfig::sorrel(p.obs_len(), 4);
    iqn.validate()?;
    // Environment turn, 2 agents: spawning and both moves (observation and action choice
    // excluded, as the target).
    let mut s = TreasureHunt::new_world(&p, &mut Key::new(1).rng());
    let mut rewards = [0.0f32; 2];
    let mut rng = Key::new(2).rng();
    let turn_us = median_us(reps * 100, |t| {
        if t % 100 == 0 {
            s = TreasureHunt::new_world(&p, &mut Key::new(t).rng());
        }
        let acts = [rng.below(4) as u8, rng.below(4) as u8];
        TreasureHunt::turn(
            &p,
            &mut s,
            &acts,
            &mut TreasureDraws(Key::new(3).fold_in(t).rng()),
            &mut rewards,
        );
    });
    // Observation of both agents.
    let mut obs = vec![0.0f32; p.obs_len()];
    let observe_us = median_us(reps * 10, |_| {
        for ag in 0..2 {
            TreasureHunt::observe(&p, &s, ag, &mut obs);
        }
    });
    // IQN update: a buffer of random play, then timed gradient steps.
    let mut learner = IqnLearner::new(iqn.clone(), Key::new(4))?;
    let mut buf = vec![FrameReplay::new(iqn.replay())?];
    let mut r = Key::new(5).rng();
    let mut frame = vec![0.0f32; p.obs_len()];
    let mut st = TreasureHunt::new_world(&p, &mut Key::new(6).rng());
    for e in 0..10 {
        buf[0].begin_episode();
        for t in 0..100u32 {
            TreasureHunt::observe(&p, &st, 0, &mut frame);
            let act = r.below(4);
            let acts = [act as u8, r.below(4) as u8];
            TreasureHunt::turn(
                &p,
                &mut st,
                &acts,
                &mut TreasureDraws(Key::new(7).fold_in(e * 100 + t as u64).rng()),
                &mut rewards,
            );
            buf[0].push(&frame, act, rewards[0], false, t == 99)?;
        }
        TreasureHunt::observe(&p, &st, 0, &mut frame);
        buf[0].push_final(&frame)?;
    }
    // The same update's matrix products alone, on the same shapes, through the same GEMM
    // (the floor a fused implementation could reach on this machine), timed in alternation
    // with the update so their ratio is taken under the same machine conditions.
    let shapes = iqn.update_gemm_shapes();
    let big =
        shapes.iter().map(|&(m, k, n, _, _)| (m * k).max(k * n).max(m * n)).max().unwrap_or(1);
    let (ga, gb, mut gc) = (vec![0.01f32; big], vec![0.02f32; big], vec![0.0f32; big]);
    let mut failed = None;
    let (update_us, gemm_us) = median_pair_us(
        reps,
        |i| {
            if let Err(e) = learner.train_step(&mut buf, Key::new(8).fold_in(i)) {
                failed = Some(e);
            }
        },
        |_| {
            for &(m, k, n, oa, ob) in &shapes {
                matmul(m, k, n, &ga, oa, &gb, ob, &mut gc, false);
            }
        },
    );
    if let Some(e) = failed.take() {
        return Err(e);
    }
    // Greedy action selection for one state (batch 1, 12 τ samples, no noise).
    learner.epsilon = 0.0;
    let state = vec![0.1f32; iqn.state_dim()];
    let mut act = [0u32; 1];
    let act_us = median_us(reps * 10, |i| {
        if let Err(e) = learner.act(&state, Key::new(9).fold_in(i), &mut act) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(HuntTimes {
        turn_us,
        observe_us,
        update_us,
        gemm_us,
        act_us,
        update_flops: iqn.update_flops(),
    })
}

/// What [`allo`] measures (medians, µs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlloTimes {
    /// States of the map.
    pub states: usize,
    /// One draw of the step's 4 × batch states (pairs and two uniform batches).
    pub sample_us: f64,
    /// One training step, encoder run over the distinct states.
    pub step_dedup_us: f64,
    /// One training step, plain batched path.
    pub step_plain_us: f64,
}

/// Times ALLO's replay sampling and training step on `map` (a file or `builtin:NAME`) with
/// sub-batches of `batch` rows over `steps` steps (at most 50 for the plain path).
pub fn allo(map: &str, batch: usize, steps: u64) -> Result<AlloTimes, AgentError> {
    if steps == 0 || batch == 0 {
        return Err(AgentError::invalid(
            "steps/batch",
            format!("{steps}/{batch}"),
            "at least 1 each",
        ));
    }
    let map = Arc::new(GridMap::resolve(map)?);
    let replay = collect(map.clone(), 4000, 50, 64, 0)?;
    let (mut s, mut f, mut u1, mut u2) =
        (vec![0u32; batch], vec![0u32; batch], vec![0u32; batch], vec![0u32; batch]);
    let conv = kestrel_replay::EpisodicRuleKind::PaperCode;
    let mut failed: Option<AgentError> = None;
    let sample_us = median_us(steps * 5, |i| {
        let k = Key::new(i);
        let r = replay
            .sample_pairs(k.fold_in(0), 0.9, &mut s, &mut f)
            .and_then(|_| replay.sample_states(k.fold_in(1), conv, &mut u1))
            .and_then(|_| replay.sample_states(k.fold_in(2), conv, &mut u2));
        if let Err(e) = r {
            failed = Some(e.into());
        }
    });
    let cfg = AlloConfig { batch_size: batch, ..AlloConfig::paper() };
    let mut dedup = Allo::new(cfg.clone(), map.clone(), Key::new(1))?;
    let step_dedup_us = median_us(steps, |i| {
        if let Err(e) = dedup.step(&replay, Key::new(2).fold_in(i)) {
            failed = Some(e);
        }
    });
    let mut plain = Allo::new(AlloConfig { dedup: false, ..cfg }, map.clone(), Key::new(1))?;
    let step_plain_us = median_us(steps.min(50), |i| {
        if let Err(e) = plain.step(&replay, Key::new(2).fold_in(i)) {
            failed = Some(e);
        }
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(AlloTimes { states: map.num_states(), sample_us, step_dedup_us, step_plain_us }),
    }
}

/// What [`asymexp`] measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AsymexpTimes {
    /// States of the map.
    pub states: usize,
    /// Collection of `num_envs × num_steps` transitions into rows, with the counts (ms).
    pub collect_ms: f64,
    /// The empirical ground truth from the counts (ms).
    pub truth_ms: f64,
    /// One step's two batches of pairs (µs, median).
    pub sample_us: f64,
    /// One update, the encoder run over the distinct states (µs, median).
    pub update_us: f64,
    /// One update, the encoder run over all `3 B` rows (µs, median).
    pub update_plain_us: f64,
}

/// Times the `asymexp` profile's parts on `map`: collection, ground truth, sampling two
/// batches of `batch` pairs and the update (deduplicated and plain) over `steps` steps, with
/// the script's other defaults.
pub fn asymexp(
    map: &crate::asymexp::AsymexpMap,
    num_envs: usize,
    num_steps: usize,
    batch: usize,
    steps: u64,
) -> Result<AsymexpTimes, AgentError> {
    use crate::asymexp::{Asymexp, AsymexpConfig, KeyDraws, VersionKind};
    if steps == 0 || batch == 0 {
        return Err(AgentError::invalid(
            "steps/batch",
            format!("{steps}/{batch}"),
            "at least 1 each",
        ));
    }
    let t = std::time::Instant::now();
    let data = crate::asymexp::collect(
        map,
        num_envs,
        num_steps,
        num_steps,
        kestrel_replay::RowRuleKind::Reference,
        &mut KeyDraws::new(map, Key::new(0)),
    )?;
    let collect_ms = t.elapsed().as_secs_f64() * 1e3;
    let n = map.num_states();
    let t = std::time::Instant::now();
    crate::laplacian::empirical::thresholded(
        &data.counts,
        &map.next,
        n,
        10.min(n),
        Default::default(),
    )?;
    let truth_ms = t.elapsed().as_secs_f64() * 1e3;
    let rule = kestrel_replay::RowRuleKind::Reference;
    let (mut o, mut x, mut o2, mut un) =
        (vec![0u32; batch], vec![0u32; batch], vec![0u32; batch], vec![0u32; batch]);
    let mut failed: Option<AgentError> = None;
    // The offsets' sampler made once, as the run makes it.
    let offsets = kestrel_replay::TruncatedGeometric::tabulated(0.2);
    let sample_us = median_us(steps * 5, |i| {
        let k = Key::new(i);
        let r = data
            .replay
            .sample_with(k.fold_in(0), &offsets, rule, &mut o, &mut x)
            .and_then(|_| data.replay.sample_with(k.fold_in(1), &offsets, rule, &mut o2, &mut un));
        if let Err(e) = r {
            failed = Some(e.into());
        }
    });
    let cfg = AsymexpConfig {
        batch_size: batch,
        num_eigenvectors: 10.min(n),
        ..AsymexpConfig::reference(VersionKind::Thresholded)
    };
    // The updates are timed on 64 batches drawn beforehand, in turn.
    let mut batches = Vec::with_capacity(64);
    for i in 0..64u64 {
        let k = Key::new(2).fold_in(i);
        data.replay.sample(k.fold_in(0), 0.2, rule, &mut o, &mut x)?;
        data.replay.sample(k.fold_in(1), 0.2, rule, &mut o2, &mut un)?;
        batches.push((o.clone(), x.clone(), o2.clone()));
    }
    let mut times = [0.0; 2];
    for (slot, dedup) in [(0, true), (1, false)] {
        let mut a =
            Asymexp::<f32>::new(AsymexpConfig { dedup, ..cfg.clone() }, map.coords(), Key::new(1))?;
        times[slot] = median_us(if dedup { steps } else { steps.min(200) }, |i| {
            let (o, x, o2) = &batches[i as usize % batches.len()];
            if let Err(e) = a.step_on(o, x, o2) {
                failed = Some(e);
            }
        });
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(AsymexpTimes {
            states: n,
            collect_ms,
            truth_ms,
            sample_us,
            update_us: times[0],
            update_plain_us: times[1],
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ALLO bench runs on a small map and reports its states; zero sizes and an unknown
    /// map are refused by name before any work (the hunt bench's zero repetitions too).
    #[test]
    fn benches_run_small_and_refuse_zero_sizes() {
        let t = allo("builtin:open-3", 8, 2).unwrap();
        assert_eq!(t.states, 9);
        assert!(
            [t.sample_us, t.step_dedup_us, t.step_plain_us]
                .iter()
                .all(|v| v.is_finite() && *v > 0.0)
        );
        assert!(allo("builtin:open-3", 0, 2).unwrap_err().to_string().contains("steps/batch"));
        assert!(allo("builtin:open-3", 8, 0).unwrap_err().to_string().contains("steps/batch"));
        assert!(hunt(TreasureObs::Rgb, 0).unwrap_err().to_string().contains("reps"));
        assert!(allo("builtin:no-such-map", 8, 2).is_err());
    }
}
