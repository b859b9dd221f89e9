//! The structure-of-arrays kernel (`ArcLanes`) against the per-env kernel
//! (`VecEnv<ArcEnv>`): same actions, same states, observations, rewards and flags, bit for
//! bit, for every op (ids clipped from outside 0–34 too), every JaxARC bug switch, every
//! selection form (plus empty, single-cell and full selections), both splits, both layouts,
//! all three auto-reset modes, canvases 3, 5, 7 and 10, 1 or 2 threads, shards of a batch and
//! row resets.

use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{
    ArcAction, ArcEnv, ArcLanes, ArcParams, GridInit, JaxBugs, LANES, LaneActions, LayoutKind,
    MAX_START_STATES, ModeKind, Pattern, Permutation, SelKind, Selection, SplitKind, sample_action,
};
use kestrel_core::{AutoReset, BatchEnv, Env, Key, VecEnv};
use proptest::prelude::*;
use std::sync::Arc;

fn generated<const S: usize>() -> ArcEnv<S> {
    let cfg = GenConfig { max_side: S.max(3), min_side: 3, ..GenConfig::default() };
    let mut bank = generate_bank(&Family::ALL, 3, 5, &cfg).unwrap();
    bank.retain_fitting(S);
    assert!(!bank.is_empty());
    ArcEnv::new(Arc::new(bank)).unwrap()
}

/// Bug switches from 12 bits.
fn bugs(bits: u16) -> JaxBugs {
    let b = |i: u32| bits >> i & 1 != 0;
    JaxBugs {
        inverted_moves: b(0),
        canvas_rotation: b(1),
        shrink_only_resize: b(2),
        flood_fill_cap: b(3),
        wrong_pair_init: b(4),
        eval_no_success: b(5),
        top_left_similarity: b(6),
        clear_overwrites_padding: b(7),
        copy_input_keeps_mask: b(8),
        init_canvas_transform: b(9),
        init_zero_padding: b(10),
        permutation_pick_all: b(11),
    }
}

/// Random actions of every form: ops from -2 to 36 (clipped), mask, bbox, point, empty,
/// full and single-cell selections, corners outside the canvas.
fn mixed<const S: usize>(_row: usize, key: Key, _obs: &[i8], a: &mut [ArcAction<S>]) {
    let mut rng = key.rng();
    let form = rng.below(8);
    let mut act = sample_action::<S>(
        &mut rng,
        [SelKind::Mask, SelKind::BBox, SelKind::Point][form as usize % 3],
    );
    act.op = rng.below(39) as i32 - 2;
    let s = S as i32;
    act.sel = match form {
        3 => Selection::Mask([0; S]),
        4 => Selection::Mask([u32::MAX; S]),
        5 => Selection::BBox {
            r1: rng.below(s as u32 + 4) as i32 - 2,
            c1: rng.below(s as u32 + 4) as i32 - 2,
            r2: rng.below(s as u32 + 4) as i32 - 2,
            c2: rng.below(s as u32 + 4) as i32 - 2,
        },
        6 => {
            // A selection inside the top-left 3x3, where generated tasks' small grids are.
            Selection::BBox {
                r1: rng.below(3) as i32,
                c1: rng.below(3) as i32,
                r2: rng.below(3) as i32,
                c2: rng.below(3) as i32,
            }
        }
        _ => act.sel,
    };
    a[0] = act;
}

/// Steps both drivers `steps` times with `policy` (or lane-drawn random actions of `random`)
/// and asserts every column and every state equal after each step.
fn same<const S: usize>(
    env: &ArcEnv<S>,
    p: &ArcParams,
    n: usize,
    seed: u64,
    steps: usize,
    mode: AutoReset,
    random: Option<SelKind>,
) {
    let mut rows = VecEnv::new(env.clone(), p.clone(), n, seed).unwrap();
    let mut lanes = ArcLanes::new(env.clone(), p.clone(), n, seed).unwrap();
    rows.set_autoreset(mode);
    lanes.set_autoreset(mode);
    check(&rows, &lanes, "reset");
    for t in 0..steps {
        match random {
            Some(kind) => {
                rows.step_with(move |_, key, _, a| a[0] = sample_action::<S>(&mut key.rng(), kind));
                lanes.step_random(kind);
            }
            None => {
                rows.step_with(mixed::<S>);
                lanes.step_with(mixed::<S>);
            }
        }
        check(&rows, &lanes, &format!("step {t}"));
    }
}

fn check<const S: usize>(rows: &VecEnv<ArcEnv<S>>, lanes: &ArcLanes<S>, at: &str) {
    let n = rows.num_envs();
    assert_eq!(rows.obs(), lanes.obs(), "obs at {at}");
    let bits = |r: &[f32]| r.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(rows.rewards()), bits(lanes.rewards()), "rewards at {at}");
    assert_eq!(rows.terminated(), lanes.terminated(), "terminated at {at}");
    assert_eq!(rows.truncated(), lanes.truncated(), "truncated at {at}");
    assert_eq!(rows.episode_steps(), lanes.episode_steps(), "episode steps at {at}");
    assert_eq!(rows.needs_reset(), lanes.needs_reset(), "needs_reset at {at}");
    let per = rows.obs_len();
    for i in 0..n {
        if rows.terminated()[i] || rows.truncated()[i] {
            assert_eq!(
                &rows.final_obs()[i * per..(i + 1) * per],
                &lanes.final_obs()[i * per..(i + 1) * per],
                "final obs of row {i} at {at}"
            );
        }
        let (a, b) = (&rows.states()[i], &lanes.state(i).expect("a row below num_envs"));
        assert_eq!(a, b, "state of row {i} at {at}");
        assert_eq!(a.similarity.to_bits(), b.similarity.to_bits(), "similarity of row {i} at {at}");
    }
}

fn params(bits: u16, split: SplitKind, limit: u32) -> ArcParams {
    ArcParams {
        mode: ModeKind::Jaxarc,
        split,
        bugs: bugs(bits),
        max_episode_steps: Some(limit),
        ..ArcParams::default()
    }
}

#[test]
fn every_bug_switch_alone_all_and_none() {
    let env = generated::<5>();
    let mut sets: Vec<u16> = (0..12).map(|i| 1 << i).collect();
    sets.extend([0, 0xfff]);
    for (i, &b) in sets.iter().enumerate() {
        for split in [SplitKind::Train, SplitKind::Test] {
            same(&env, &params(b, split, 40), 70, i as u64, 60, AutoReset::SameStep, None);
        }
    }
}

/// JaxARC's four start modes (its class-default weights, both patterns, one permutation
/// kind) reset through the env, with and without the bugs: the lanes give VecEnv's results.
#[test]
fn every_start_mode_with_and_without_bugs() {
    let env = generated::<5>();
    let mixed = GridInit::jaxarc_mixture();
    let dense = GridInit {
        random_pattern_type: Pattern::Dense,
        permutation_types: vec![Permutation::Reflect],
        ..mixed.clone()
    };
    for (i, init) in [mixed, dense].into_iter().enumerate() {
        for b in [0, 0xfff] {
            let p = ArcParams { init: init.clone(), ..params(b, SplitKind::Train, 6) };
            same(&env, &p, 70, 11 + i as u64, 40, AutoReset::SameStep, None);
        }
    }
}

#[test]
fn banks_past_the_start_state_cache_reset_through_the_env() {
    // More start states than the lanes keep (pairs x training pairs under wrong_pair_init),
    // and a small bank with the same switch: both paths give VecEnv's results.
    let cfg = GenConfig { max_side: 5, min_side: 3, ..GenConfig::default() };
    let mut bank = generate_bank(&Family::ALL, 150, 9, &cfg).unwrap();
    bank.retain_fitting(5);
    let starts: usize = bank.tasks().iter().map(|t| t.train.len() * t.train.len()).sum();
    assert!(starts > MAX_START_STATES, "{starts} start states");
    let big = ArcEnv::<5>::new(Arc::new(bank)).unwrap();
    let wrong_pair_init = 1 << 4;
    assert!(bugs(wrong_pair_init).wrong_pair_init);
    for env in [&big, &generated::<5>()] {
        same(
            env,
            &params(wrong_pair_init, SplitKind::Train, 9),
            130,
            4,
            30,
            AutoReset::SameStep,
            None,
        );
    }
}

#[test]
fn canvases_3_7_and_10() {
    fn canvas<const S: usize>(bits: u16, n: usize, seed: u64) {
        let p = params(bits, SplitKind::Train, 30);
        same(&generated::<S>(), &p, n, seed, 50, AutoReset::SameStep, None);
    }
    for b in [0, 0x1ff] {
        canvas::<3>(b, 65, 1);
        canvas::<7>(b, 65, 2);
        canvas::<10>(b, 130, 3);
    }
}

#[test]
fn lane_drawn_random_actions_are_sample_action() {
    let env = generated::<5>();
    for kind in [SelKind::Mask, SelKind::BBox, SelKind::Point] {
        same(
            &env,
            &params(0x1ff, SplitKind::Train, 150),
            200,
            9,
            80,
            AutoReset::SameStep,
            Some(kind),
        );
    }
    let env = generated::<10>();
    same(
        &env,
        &params(0, SplitKind::Test, 150),
        64,
        4,
        40,
        AutoReset::SameStep,
        Some(SelKind::Mask),
    );
}

#[test]
fn next_step_and_disabled_autoreset() {
    let env = generated::<5>();
    for mode in [AutoReset::NextStep, AutoReset::Disabled] {
        same(&env, &params(0x1ff, SplitKind::Train, 7), 70, 5, 40, mode, None);
    }
}

#[test]
fn full_layout_and_one_env() {
    let env = generated::<5>();
    let p = ArcParams {
        layout: LayoutKind::Full,
        demo_pairs: 2,
        ..params(0x1ff, SplitKind::Train, 20)
    };
    same(&env, &p, 66, 6, 30, AutoReset::SameStep, None);
    same(&env, &params(0, SplitKind::Train, 20), 1, 7, 60, AutoReset::SameStep, None);
}

#[test]
fn thread_count_does_not_change_results() {
    let env = generated::<5>();
    let p = params(0x1ff, SplitKind::Train, 150);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut v = ArcLanes::new(env.clone(), p.clone(), 5 * LANES + 3, 8).unwrap();
            let mut trace = Vec::new();
            for _ in 0..50 {
                v.step_random(SelKind::BBox);
                trace.extend_from_slice(v.obs());
                trace.extend(v.rewards().iter().map(|r| r.to_bits() as i8));
            }
            trace
        })
    };
    assert_eq!(run(1), run(2));
}

#[test]
fn given_actions_and_set_state() {
    let env = generated::<5>();
    let p = params(0x1ff, SplitKind::Train, 150);
    let n = 70;
    let mut rows = VecEnv::new(env.clone(), p.clone(), n, 3).unwrap();
    let mut lanes = ArcLanes::new(env.clone(), p.clone(), n, 3).unwrap();
    let s = env.init_state(&p, 1, 0, false, Key::new(4));
    rows.set_state(3, s.clone()).unwrap();
    lanes.set_state(3, s.clone()).unwrap();
    check(&rows, &lanes, "set_state");
    for t in 0..30u64 {
        let acts: Vec<ArcAction<5>> = (0..n)
            .map(|i| {
                let mut a = [ArcAction::default()];
                mixed::<5>(i, Key::new(t).fold_in(i as u64), &[], &mut a);
                a[0]
            })
            .collect();
        rows.step(&acts);
        lanes.try_step(&acts).unwrap();
        check(&rows, &lanes, &format!("given step {t}"));
    }
    // Errors name the field and change nothing.
    let before = lanes.obs().to_vec();
    let e = lanes.try_step(&[ArcAction::default(); 3]).unwrap_err().to_string();
    assert!(e.contains("actions") && e.contains("70"), "{e}");
    assert_eq!(lanes.obs(), &before[..]);
    let mut bad = s.clone();
    bad.dims = [6, 2];
    assert!(lanes.set_state(0, bad.clone()).unwrap_err().to_string().contains("state.dims"));
    bad = s.clone();
    bad.task = 10_000;
    assert!(lanes.set_state(0, bad.clone()).unwrap_err().to_string().contains("state.task"));
    assert!(lanes.set_state(n, s.clone()).unwrap_err().to_string().contains("row"));
}

/// A shard (rows 70..140 of a batch of 200) keys its rows by their place in the batch, as the
/// per-env kernel's shard does: the same results as the per-env shard and as those rows of the
/// whole batch, through steps (policy-chosen and lane-drawn actions), auto-resets of every mode
/// and `reset_rows`.
#[test]
fn shards_and_row_resets() {
    let env = generated::<5>();
    let p = params(0, SplitKind::Train, 12);
    let per = env.spec(&p).obs_len();
    for mode in [AutoReset::SameStep, AutoReset::NextStep, AutoReset::Disabled] {
        let mut rows = VecEnv::shard(env.clone(), p.clone(), 70, 9, 70).unwrap();
        let mut lanes = ArcLanes::shard(env.clone(), p.clone(), 70, 9, 70).unwrap();
        let mut whole = ArcLanes::new(env.clone(), p.clone(), 200, 9).unwrap();
        rows.set_autoreset(mode);
        lanes.set_autoreset(mode);
        whole.set_autoreset(mode);
        check(&rows, &lanes, "reset");
        for t in 0..40 {
            if t % 2 == 0 {
                rows.step_with(mixed::<5>);
                lanes.step_with(mixed::<5>);
                whole.step_with(mixed::<5>);
            } else {
                rows.step_with(|_, key, _, a| {
                    a[0] = sample_action::<5>(&mut key.rng(), SelKind::BBox)
                });
                lanes.step_random(SelKind::BBox);
                whole.step_random(SelKind::BBox);
            }
            if t % 7 == 3 {
                let mask: Vec<bool> = (0..70).map(|i| i % 3 == t % 3).collect();
                let mut big = vec![false; 200];
                big[70..140].copy_from_slice(&mask);
                rows.reset_rows(&mask).unwrap();
                lanes.reset_rows(&mask).unwrap();
                whole.reset_rows(&big).unwrap();
            }
            let at = format!("{mode:?} step {t}");
            check(&rows, &lanes, &at);
            assert_eq!(&whole.obs()[70 * per..140 * per], lanes.obs(), "whole batch at {at}");
            assert_eq!(&whole.episode_steps()[70..140], lanes.episode_steps(), "{at}");
            for i in 0..70 {
                assert_eq!(whole.state(70 + i), lanes.state(i), "row {i} at {at}");
            }
        }
    }
    let err = lanes_err(ArcLanes::new(env.clone(), p.clone(), 4, 0).unwrap().reset_rows(&[true]));
    assert!(err.contains("reset mask") && err.contains("got 1"), "{err}");
    let err = lanes_err(ArcLanes::shard(env, p, 4, 0, u64::MAX - 1).map(|_| ()));
    assert!(err.contains("row_offset"), "{err}");
}

fn lanes_err(r: Result<(), kestrel_arc::ArcError>) -> String {
    r.expect_err("an error").to_string()
}

#[test]
fn refusals() {
    let env = generated::<5>();
    let o2 = ArcParams { mode: ModeKind::O2arc, ..ArcParams::default() };
    assert!(ArcLanes::new(env.clone(), o2, 4, 0).err().unwrap().to_string().contains("mode"));
    let p = params(0, SplitKind::Train, 10);
    assert!(
        ArcLanes::new(env.clone(), p.clone(), 0, 0).err().unwrap().to_string().contains("num_envs")
    );
    assert!(
        ArcLanes::new(generated::<12>(), p.clone(), 4, 0)
            .err()
            .unwrap()
            .to_string()
            .contains("canvas")
    );
    let huge = ArcLanes::new(env, p, usize::MAX / 2, 0).err().unwrap().to_string();
    assert!(huge.contains("num_envs"), "{huge}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any bug set, split, seed and step limit: the two kernels agree.
    #[test]
    fn any_bug_set_agrees(bits in 0u16..512, test in any::<bool>(), seed in 0u64..1_000, limit in 1u32..60) {
        let env = generated::<5>();
        let split = if test { SplitKind::Test } else { SplitKind::Train };
        same(&env, &params(bits, split, limit), 67, seed, 25, AutoReset::SameStep, None);
    }
}

/// Every op id is exercised by the mixed policy in these tests and changes some state
/// (Submit excepted: it never edits the grid).
#[test]
fn the_mixed_policy_changes_state_with_every_op() {
    let env = generated::<5>();
    let p = params(0, SplitKind::Train, 150);
    let mut changed = [false; 35];
    let mut v = VecEnv::new(env.clone(), p.clone(), 256, 0).unwrap();
    for _ in 0..40 {
        v.step_with(mixed::<5>);
        for (i, s) in v.states().iter().enumerate() {
            let mut s2 = s.clone();
            let mut a = [ArcAction::default()];
            mixed::<5>(i, Key::new(i as u64), &[], &mut a);
            let op = a[0].op.clamp(0, 34) as usize;
            let mut obs = vec![0; v.obs_len()];
            env.step(&p, &mut s2, &a, Key::new(0), &mut obs, &mut [0.0]);
            s2.steps = s.steps;
            s2.selected = s.selected;
            if s2 != *s {
                changed[op] = true;
            }
        }
    }
    let missing: Vec<usize> = (0..34).filter(|&o| !changed[o]).collect();
    assert!(missing.is_empty(), "ops that never changed a state: {missing:?}");
}

/// A rollout (each block through every step on one thread, the lane kernel's
/// `rollout_with`) writes what stepping one step at a time leaves in the columns after each
/// step, on the lane kernel and on `VecEnv` (the trait's loop), in every auto-reset mode, over
/// two calls in a row (the step counter and keys carry on); a buffer of the wrong length
/// changes nothing.
#[test]
fn rollout_is_one_step_at_a_time() {
    use kestrel_core::Trajectory;
    let env = generated::<5>();
    let p = params(0x1ff, SplitKind::Train, 7);
    let n = 2 * LANES + 5;
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let per = env.spec(&p).obs_len();
    let policy = |t: usize, row, key: Key, obs: &[i8], a: &mut [ArcAction<5>]| {
        mixed::<5>(row, key.fold_in(t as u64 % 3), obs, a)
    };
    /// One rollout's buffers.
    #[derive(Clone, Debug, PartialEq)]
    struct Buf {
        obs: Vec<i8>,
        fo: Vec<i8>,
        rw: Vec<u32>,
        te: Vec<bool>,
        tr: Vec<bool>,
    }
    let run = |steps: usize, b: &mut dyn FnMut(Trajectory<'_, i8>)| {
        let (mut obs, mut fo) = (vec![0i8; steps * n * per], vec![0i8; steps * n * per]);
        let mut rw = vec![0f32; steps * n];
        let (mut te, mut tr) = (vec![false; steps * n], vec![false; steps * n]);
        b(Trajectory {
            obs: &mut obs,
            final_obs: Some(&mut fo),
            rewards: &mut rw,
            terminated: &mut te,
            truncated: &mut tr,
        });
        Buf { obs, fo, rw: rw.iter().map(|r| r.to_bits()).collect(), te, tr }
    };
    pool.install(|| {
        for mode in [AutoReset::SameStep, AutoReset::NextStep, AutoReset::Disabled] {
            let mut lanes = ArcLanes::new(env.clone(), p.clone(), n, 3).unwrap();
            let mut rows = VecEnv::new(env.clone(), p.clone(), n, 3).unwrap();
            let mut one = ArcLanes::new(env.clone(), p.clone(), n, 3).unwrap();
            lanes.set_autoreset(mode);
            rows.set_autoreset(mode);
            one.set_autoreset(mode);
            for (call, steps) in [(0, 15), (1, 10)] {
                let a = run(steps, &mut |tr| lanes.rollout_with(tr, policy).unwrap());
                let b = run(steps, &mut |tr| rows.rollout_with(tr, policy).unwrap());
                assert_eq!(a, b, "lanes against VecEnv, {mode:?}, call {call}");
                let mut c = run(steps, &mut |_| {});
                for t in 0..steps {
                    let cut = |i: usize| t * n * i..(t + 1) * n * i;
                    one.step_with(|row, key, obs, out| policy(t, row, key, obs, out));
                    c.obs[cut(per)].copy_from_slice(one.obs());
                    let r: Vec<u32> = one.rewards().iter().map(|r| r.to_bits()).collect();
                    c.rw[cut(1)].copy_from_slice(&r);
                    c.te[cut(1)].copy_from_slice(one.terminated());
                    c.tr[cut(1)].copy_from_slice(one.truncated());
                    for i in 0..n {
                        if one.terminated()[i] || one.truncated()[i] {
                            let at = t * n * per + i * per;
                            c.fo[at..at + per].copy_from_slice(&one.final_obs()[i * per..][..per]);
                        }
                    }
                }
                assert!(c.te.iter().chain(&c.tr).any(|&d| d), "episodes end within the rollout");
                assert_eq!(a, c, "rollout against steps, {mode:?}, call {call}");
                assert_eq!(lanes.t(), one.t());
                assert_eq!(lanes.episode_steps(), one.episode_steps());
                assert_eq!(lanes.needs_reset(), one.needs_reset());
                check(&rows, &lanes, &format!("after call {call}, {mode:?}"));
            }
            let (mut o, mut r) = (vec![0i8; 2 * n * per], vec![0f32; 2 * n]);
            let (mut te, mut tr) = (vec![false; 2 * n], vec![false; n]);
            let t0 = lanes.t();
            let bad = Trajectory {
                obs: &mut o,
                final_obs: None,
                rewards: &mut r,
                terminated: &mut te,
                truncated: &mut tr,
            };
            let e = lanes.rollout_with(bad, policy).unwrap_err().to_string();
            assert!(e.contains("trajectory truncated"), "{e}");
            assert_eq!(lanes.t(), t0, "a refused rollout steps nothing");
        }
    });
}

/// A front end's block setters (`set_masks` from bytes, `set_coords` from point and box
/// columns) write the actions that `set` of the same `Selection` writes, lane for lane: ops
/// and coordinates out of range (clipped) and box corners in either order included, on a
/// canvas whose masks fit a word (5) and one whose do not (10), a full and a partial block.
#[test]
fn block_setters_are_the_selections() {
    fn one<const S: usize>() {
        let env = generated::<S>();
        let p = params(0x1ff, SplitKind::Train, 7);
        let (n, steps, cells) = (LANES + 5, 6, S * S);
        let per = env.spec(&p).obs_len();
        let mut r = Key::new(S as u64).rng();
        let mut draw = |k: usize, lo: i64, hi: i64| -> Vec<i64> {
            (0..k).map(|_| lo + r.below((hi - lo + 1) as u32) as i64).collect()
        };
        let ops: Vec<Vec<i64>> = (0..steps).map(|_| draw(n, -3, 40)).collect();
        let sel: Vec<Vec<u8>> =
            (0..steps).map(|_| draw(n * cells, 0, 1).iter().map(|&b| b as u8).collect()).collect();
        let coords: Vec<Vec<Vec<i64>>> =
            (0..steps).map(|_| (0..4).map(|_| draw(n, -3, S as i64 + 2)).collect()).collect();
        let out =
            |lanes: &mut ArcLanes<S>,
             fill: &(dyn Fn(usize, usize, usize, &mut LaneActions<'_, S>) + Sync)| {
                let (mut obs, mut rw) = (vec![0i8; steps * n * per], vec![0f32; steps * n]);
                let (mut te, mut tr) = (vec![false; steps * n], vec![false; steps * n]);
                let tr_ = kestrel_core::Trajectory {
                    obs: &mut obs,
                    final_obs: None,
                    rewards: &mut rw,
                    terminated: &mut te,
                    truncated: &mut tr,
                };
                lanes.rollout_lanes(tr_, fill).unwrap();
                (
                    obs,
                    rw.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    te,
                    tr,
                    lanes.state(n - 1),
                )
            };
        let block = |t: usize, first: usize, valid: usize, la: &mut LaneActions<'_, S>| {
            let at = first..first + valid;
            let c = &coords[t];
            match t % 3 {
                0 => la.set_masks(
                    &ops[t][at.clone()],
                    &sel[t][first * cells..(first + valid) * cells],
                ),
                1 => la.set_coords(&ops[t][at.clone()], &[&c[0][at.clone()], &c[1][at]]),
                _ => la.set_coords(
                    &ops[t][at.clone()],
                    &[&c[0][at.clone()], &c[1][at.clone()], &c[2][at.clone()], &c[3][at]],
                ),
            }
        };
        let lane = |t: usize, first: usize, valid: usize, la: &mut LaneActions<'_, S>| {
            for l in 0..valid {
                let (i, c) = (first + l, &coords[t]);
                let at = |j: usize| c[j][i] as i32;
                let sel = match t % 3 {
                    0 => {
                        let b = &sel[t][i * cells..(i + 1) * cells];
                        Selection::Mask(std::array::from_fn(|row| {
                            (0..S).map(|col| u32::from(b[row * S + col]) << col).sum()
                        }))
                    }
                    1 => Selection::Point { row: at(0), col: at(1) },
                    _ => Selection::BBox { r1: at(0), c1: at(1), r2: at(2), c2: at(3) },
                };
                la.set(l, &ArcAction { op: ops[t][i] as i32, sel });
            }
        };
        let mut a = ArcLanes::new(env.clone(), p.clone(), n, 3).unwrap();
        let mut b = ArcLanes::new(env, p, n, 3).unwrap();
        assert_eq!(out(&mut a, &block), out(&mut b, &lane), "{S}x{S}");
    }
    one::<5>();
    one::<10>();
}
