//! Behaviour of `ArcEnv`: conformance in every mode and layout, the documented handling of
//! invalid actions, each JaxARC bug fixed by default and restored by its switch, and the
//! `full` observation layout.

use kestrel_arc::generator::{Family, GenConfig, generate_bank};
use kestrel_arc::{
    ArcAction, ArcEnv, ArcParams, ArcState, FullObsView, GridData, JaxBugs, LayoutKind, ModeKind,
    Pair, SelKind, Selection, SplitKind, Task, TaskBank, sample_action,
};
use kestrel_core::{BatchEnv, Env, Key, VecEnv};
use kestrel_testkit::{Conformance, check_env};
use std::sync::Arc;

fn generated<const S: usize>() -> ArcEnv<S> {
    let cfg = GenConfig { max_side: S.min(30), min_side: 3.min(S), ..GenConfig::default() };
    let mut bank = generate_bank(&Family::ALL, 4, 11, &cfg).unwrap();
    bank.retain_fitting(S);
    ArcEnv::new(Arc::new(bank)).unwrap()
}

fn one_task<const S: usize>(input: &[&str], output: &[&str]) -> ArcEnv<S> {
    let g = |rows: &[&str]| {
        GridData::from_rows(
            &rows.iter().map(|r| r.bytes().map(|b| b - b'0').collect()).collect::<Vec<_>>(),
        )
    };
    let p = Pair { input: g(input), output: g(output) };
    let t = Task { id: "t".into(), group: String::new(), train: vec![p.clone()], test: vec![p] };
    ArcEnv::new(Arc::new(TaskBank::from_tasks(vec![t]))).unwrap()
}

fn policy<const S: usize>(kind: SelKind) -> impl Fn(Key, &[i8], &mut [ArcAction<S>]) + Sync {
    move |key, _obs, a| a[0] = sample_action::<S>(&mut key.rng(), kind)
}

#[test]
fn conformance_all_modes_and_layouts() {
    let env = generated::<30>();
    for mode in [ModeKind::O2arc, ModeKind::Jaxarc] {
        for layout in [LayoutKind::Compact, LayoutKind::Full] {
            for kind in [SelKind::Mask, SelKind::BBox, SelKind::Point] {
                let p =
                    ArcParams { mode, layout, max_episode_steps: Some(40), ..ArcParams::default() };
                check_env(&env, &p, &Conformance { steps: 90, seed: 3 }, policy::<30>(kind));
            }
        }
    }
    let small = generated::<5>();
    let p = ArcParams { mode: ModeKind::Jaxarc, bugs: JaxBugs::all(), ..ArcParams::default() };
    check_env(&small, &p, &Conformance::default(), policy::<5>(SelKind::BBox));
}

fn state<const S: usize>(env: &ArcEnv<S>, p: &ArcParams) -> ArcState<S> {
    env.init_state(p, 0, 0, p.split == SplitKind::Test, Key::new(0))
}

fn act<const S: usize>(op: i32, sel: Selection<S>) -> ArcAction<S> {
    ArcAction { op, sel }
}

fn rows<const S: usize>(s: &ArcState<S>) -> Vec<String> {
    (0..s.dims[0] as usize)
        .map(|r| {
            (0..s.dims[1] as usize).map(|c| (b'0' as i8 + s.grid[r][c]) as u8 as char).collect()
        })
        .collect()
}

#[test]
fn o2arc_out_of_range_op_is_a_noop() {
    let env = one_task::<5>(&["12", "34"], &["12", "34"]);
    let p = ArcParams::default();
    for op in [-1, 35, 1000, i32::MIN] {
        let mut s = state(&env, &p);
        let before = s.clone();
        let (r, term) =
            env.apply(&p, &mut s, &act(op, Selection::BBox { r1: 0, c1: 0, r2: 1, c2: 1 }));
        assert_eq!((r, term), (0.0, false));
        assert_eq!(s.grid, before.grid);
        assert_eq!(s.steps, 1);
    }
}

#[test]
fn jaxarc_clips_op_ids_like_jaxarc() {
    let env = one_task::<5>(&["12", "34"], &["12", "34"]);
    let p = ArcParams::jaxarc();
    let mut s = state(&env, &p);
    let (r, term) = env.apply(&p, &mut s, &act(99, Selection::Point { row: 0, col: 0 }));
    assert!(term && r > 9.0, "op 99 runs Submit (solved: input equals output)");
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(-3, Selection::Point { row: 0, col: 1 }));
    assert_eq!(rows(&s), ["10", "34"], "op -3 runs Fill 0");
}

#[test]
fn coordinates_are_clipped_to_the_canvas() {
    let sel = Selection::<5>::BBox { r1: -4, c1: 9, r2: 1, c2: 3 }.to_mask();
    assert_eq!(sel, [0b11000, 0b11000, 0, 0, 0]);
    let pt = Selection::<5>::Point { row: -2, col: 77 }.to_mask();
    assert_eq!(pt, [0b10000, 0, 0, 0, 0]);
    let m = Selection::<5>::Mask([u32::MAX, 0, 0, 0, 0]).to_mask();
    assert_eq!(m[0], 0b11111, "mask bits beyond the canvas are dropped");
}

#[test]
fn o2arc_submit_reward_trials_and_reset_on_submit() {
    let env = one_task::<5>(&["12", "34"], &["12", "34"]);
    let submit = act::<5>(34, Selection::Mask([0; 5]));
    let p = ArcParams { max_trials: 2, ..ArcParams::default() };
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(0, Selection::Point { row: 0, col: 0 }));
    assert_eq!(env.apply(&p, &mut s, &submit), (0.0, false));
    assert_eq!(s.trials, 1);
    assert_eq!(env.apply(&p, &mut s, &submit), (0.0, true), "trials exhausted terminates");
    let mut s = state(&env, &p);
    assert_eq!(env.apply(&p, &mut s, &submit), (1.0, true), "correct submit");
    // ARCLE quirk: reset_on_submit re-initialises before the reward is computed.
    let p = ArcParams { reset_on_submit: true, ..ArcParams::default() };
    let mut s = state(&env, &p);
    let r = env.apply(&p, &mut s, &submit);
    assert_eq!(r, (1.0, false), "fresh state after a correct submit: not terminated");
}

#[test]
fn jaxarc_fixed_moves_follow_their_names() {
    let env = one_task::<5>(&["100", "000", "000"], &["000", "000", "000"]);
    let whole = Selection::Mask([0; 5]);
    for (bugs, op, expect) in [
        (JaxBugs::default(), 20, ["000", "000", "100"]), // up, wrapping within the bbox
        (JaxBugs::default(), 21, ["000", "100", "000"]),
        (JaxBugs::default(), 23, ["010", "000", "000"]), // right
        (JaxBugs { inverted_moves: true, ..Default::default() }, 20, ["000", "100", "000"]),
    ] {
        let p = ArcParams { bugs, ..ArcParams::jaxarc() };
        let mut s = state(&env, &p);
        env.apply(&p, &mut s, &act(op, whole));
        assert_eq!(rows(&s), expect, "op {op} {bugs:?}");
    }
}

#[test]
fn jaxarc_fixed_rotation_turns_about_the_bbox() {
    let env = one_task::<5>(&["120", "340", "000"], &["000", "000", "000"]);
    let block = Selection::BBox { r1: 0, c1: 0, r2: 1, c2: 1 };
    let p = ArcParams::jaxarc();
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(24, block));
    assert_eq!(rows(&s), ["310", "420", "000"], "clockwise in place");
    let p = ArcParams {
        bugs: JaxBugs { canvas_rotation: true, ..Default::default() },
        ..ArcParams::jaxarc()
    };
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(24, block));
    assert_eq!(rows(&s), ["000", "000", "000"], "bug: the block leaves the working area");
    assert_eq!(&s.grid[0][3..5], &[3, 1], "bug: rotated about the canvas centre");
}

#[test]
fn jaxarc_fixed_resize_can_enlarge() {
    let env = one_task::<5>(&["12", "34"], &["12", "34"]);
    let far = Selection::Point { row: 3, col: 2 };
    let p = ArcParams::jaxarc();
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(33, far));
    assert_eq!(rows(&s), ["120", "340", "000", "000"]);
    assert_eq!(s.grid[4][0], -1, "outside the new area stays padding");
    let p = ArcParams {
        bugs: JaxBugs { shrink_only_resize: true, ..Default::default() },
        ..ArcParams::jaxarc()
    };
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(33, far));
    assert_eq!(s.dims, [2, 2], "bug: the selection outside the mask is dropped");
}

#[test]
fn jaxarc_fixed_flood_fill_has_no_cap() {
    // A 30x30 serpentine corridor of colour 1 (walls 5): far longer than 64 steps.
    let mut grid = vec![vec![1u8; 30]; 30];
    for r in (1..30).step_by(2) {
        for c in 0..30 {
            grid[r][c] = 5;
        }
        let gap = if r % 4 == 1 { 29 } else { 0 };
        grid[r][gap] = 1;
    }
    let g = GridData::from_rows(&grid);
    let corridor = g.cells.iter().filter(|&&v| v == 1).count();
    let p0 = Pair { input: g.clone(), output: g };
    let t = Task { id: "s".into(), group: String::new(), train: vec![p0.clone()], test: vec![p0] };
    let env = ArcEnv::<30>::new(Arc::new(TaskBank::from_tasks(vec![t]))).unwrap();
    let filled = |bugs: JaxBugs| {
        let p = ArcParams { bugs, ..ArcParams::jaxarc() };
        let mut s = state(&env, &p);
        env.apply(&p, &mut s, &act(12, Selection::Point { row: 0, col: 0 }));
        s.grid.iter().flatten().filter(|&&v| v == 2).count()
    };
    assert_eq!(filled(JaxBugs::default()), corridor);
    assert_eq!(
        filled(JaxBugs { flood_fill_cap: true, ..Default::default() }),
        65,
        "bug: 64 dilation steps"
    );
    // o2arc flood fill (ARCLE's DFS) has no cap either.
    let p = ArcParams::default();
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(12, Selection::Point { row: 0, col: 0 }));
    assert_eq!(s.grid.iter().flatten().filter(|&&v| v == 2).count(), corridor);
}

#[test]
fn jaxarc_fixed_similarity_eval_success_clear_and_copy_input() {
    let env = one_task::<5>(&["12", "34"], &["12", "34"]);
    let submit = act::<5>(34, Selection::Mask([0; 5]));
    // Eval split: the fix makes the true test output the target, so a correct submit succeeds.
    let p = ArcParams { split: SplitKind::Test, ..ArcParams::jaxarc() };
    let mut s = state(&env, &p);
    let (r, term) = env.apply(&p, &mut s, &submit);
    assert!(term && r == -0.005 + 10.0, "reward {r}");
    let p = ArcParams {
        split: SplitKind::Test,
        bugs: JaxBugs { eval_no_success: true, ..Default::default() },
        ..ArcParams::jaxarc()
    };
    let mut s = state(&env, &p);
    assert_eq!(env.apply(&p, &mut s, &submit).0, -0.005 + -1.0, "bug: no success possible in eval");
    // A working grid larger than the target only scores 1 under the top-left bug.
    let big = Selection::Point { row: 2, col: 2 };
    let p = ArcParams::jaxarc();
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(33, big));
    s.grid[0][..2].copy_from_slice(&[1, 2]);
    s.grid[1][..2].copy_from_slice(&[3, 4]);
    assert!(env.apply(&p, &mut s, &submit).0 < 0.0, "fixed: wrong dims are not a success");
    let pb = ArcParams {
        bugs: JaxBugs { top_left_similarity: true, ..Default::default() },
        ..ArcParams::jaxarc()
    };
    let mut s = state(&env, &pb);
    env.apply(&pb, &mut s, &act(33, big));
    s.grid[0][..2].copy_from_slice(&[1, 2]);
    s.grid[1][..2].copy_from_slice(&[3, 4]);
    s.similarity = 0.0;
    assert!(env.apply(&pb, &mut s, &submit).0 > 9.0, "bug: larger grid scores 1");
    // Clear with an empty selection keeps padding; the bug zeroes it.
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(31, Selection::Mask([0; 5])));
    assert_eq!((s.grid[0][0], s.grid[4][4]), (0, -1));
    let pc = ArcParams {
        bugs: JaxBugs { clear_overwrites_padding: true, ..Default::default() },
        ..ArcParams::jaxarc()
    };
    let mut s = state(&env, &pc);
    env.apply(&pc, &mut s, &act(31, Selection::Mask([0; 5])));
    assert_eq!(s.grid[4][4], 0);
    // Copy-input restores the input's dims (fixed) or keeps the mask (bug).
    let mut s = state(&env, &p);
    env.apply(&p, &mut s, &act(33, Selection::Point { row: 3, col: 3 }));
    env.apply(&p, &mut s, &act(32, Selection::Mask([0; 5])));
    assert_eq!(s.dims, [2, 2]);
    let pk = ArcParams {
        bugs: JaxBugs { copy_input_keeps_mask: true, ..Default::default() },
        ..ArcParams::jaxarc()
    };
    let mut s = state(&env, &pk);
    env.apply(&pk, &mut s, &act(33, Selection::Point { row: 3, col: 3 }));
    env.apply(&pk, &mut s, &act(32, Selection::Mask([0; 5])));
    assert_eq!((s.dims, s.grid[3][3]), ([4, 4], -1), "bug: padding inside the working area");
}

#[test]
fn jaxarc_fixed_start_grid_is_the_episode_pair() {
    let g = |v: u8| GridData { h: 1, w: 1, cells: vec![v] };
    let pairs: Vec<Pair> = (0..5).map(|i| Pair { input: g(i), output: g(i) }).collect();
    let t = Task { id: "p".into(), group: String::new(), train: pairs.clone(), test: pairs };
    let env = ArcEnv::<5>::new(Arc::new(TaskBank::from_tasks(vec![t]))).unwrap();
    let mut wrong = 0;
    for seed in 0..50 {
        let p = ArcParams::jaxarc();
        let mut obs = vec![0i8; 27];
        let s = env.reset(&p, Key::new(seed), &mut obs);
        assert_eq!(s.grid[0][0], s.pair as i8);
        let pb = ArcParams {
            bugs: JaxBugs { wrong_pair_init: true, ..Default::default() },
            ..ArcParams::jaxarc()
        };
        let s = env.reset(&pb, Key::new(seed), &mut obs);
        wrong += (s.grid[0][0] != s.pair as i8) as u32;
    }
    assert!(wrong > 20, "bug: the start grid mostly comes from another pair ({wrong}/50)");
}

#[test]
fn full_layout_exposes_the_state() {
    let env = generated::<30>();
    let p = ArcParams { layout: LayoutKind::Full, demo_pairs: 2, ..ArcParams::default() };
    let mut v = VecEnv::new(env.clone(), p.clone(), 4, 9).unwrap();
    assert_eq!(v.obs_len(), 30 * 30 * 7 + 5 * 2 + 4 + 2 * (2 * 900 + 4));
    for _ in 0..30 {
        v.step_with(|_, key, _, a| a[0] = sample_action::<30>(&mut key.rng(), SelKind::BBox));
    }
    let len = v.obs_len();
    for (i, s) in v.states().iter().enumerate() {
        let view = FullObsView::<30>::new(&v.obs()[i * len..(i + 1) * len]);
        let flat: Vec<i8> = s.grid.iter().flatten().copied().collect();
        assert_eq!(view.grid_cells(), &flat[..]);
        assert_eq!(view.grid_dim(), s.dims.map(|d| d as i8));
        assert_eq!(view.clip_dim(), s.clip_dim.map(|d| d as i8));
        assert_eq!(view.object_pos(), s.object.pos);
        assert_eq!(view.trials_remain(), s.trials);
        let task = &env.bank().tasks()[s.task as usize];
        let (inp, dims, _, odims) = view.demo(1);
        assert_eq!(dims, [task.train[1].input.h as i8, task.train[1].input.w as i8]);
        assert_eq!(odims, [task.train[1].output.h as i8, task.train[1].output.w as i8]);
        assert_eq!(inp[0], task.train[1].input.cells[0] as i8);
    }
}

#[test]
fn validate_rejects_bad_params() {
    let env = generated::<30>();
    let p = ArcParams { tasks: Some(Arc::from(vec![1_000_000u32])), ..ArcParams::default() };
    assert!(env.validate(&p).unwrap_err().to_string().contains("tasks"));
    assert!(env.validate(&ArcParams { demo_pairs: 11, ..ArcParams::default() }).is_err());
    assert!(env.validate(&ArcParams::default()).is_ok());
    let t = kestrel_arc::generator::generate_task(
        Family::ScaleUp,
        0,
        0,
        &GenConfig { max_side: 30, ..GenConfig::default() },
    );
    let too_big = ArcEnv::<5>::new(Arc::new(TaskBank::from_tasks(vec![t])));
    assert!(too_big.unwrap_err().to_string().contains("larger than the 5x5 canvas"));
}
