//! The task bank and environment on the real datasets in `../shared/data` (CI has them).
//! Each test prints a clear SKIP line and passes when the data directory is absent, and fails
//! when `KESTREL_REQUIRE_DATA=1` (as `.ci/run` sets it).

use kestrel_arc::{
    ArcAction, ArcEnv, ArcParams, LoadOptions, ModeKind, SelKind, TaskBank, sample_action,
};
use kestrel_core::{BatchEnv, Key, VecEnv};
use std::path::PathBuf;
use std::sync::Arc;

/// `../shared/data/<sub>`; absent, a SKIP line (a failure under `KESTREL_REQUIRE_DATA=1`).
fn data(sub: &str) -> Option<PathBuf> {
    kestrel_testkit::shared_subdir(sub)
}

fn load_strict(sub: &str) -> Option<TaskBank> {
    let dir = data(sub)?;
    let (bank, skipped) = TaskBank::load(&dir, LoadOptions { strict: true }).expect("strict load");
    assert!(skipped.is_empty());
    Some(bank)
}

#[test]
fn arc_agi_1_loads_completely() {
    let Some(bank) = load_strict("arc-agi-1") else { return };
    assert_eq!(bank.len(), 800);
    let i = bank.find("007bbfb7").expect("a known training task");
    assert_eq!(bank.tasks()[i].group, "training");
    assert_eq!(bank.find("training/007bbfb7"), Some(i));
    let t = &bank.tasks()[i];
    assert_eq!((t.train[0].input.h, t.train[0].output.h), (3, 9));
}

#[test]
fn arc_agi_2_loads_completely() {
    let Some(bank) = load_strict("arc-agi-2") else { return };
    assert_eq!(bank.len(), 1120);
    assert!(bank.tasks().iter().all(|t| t.max_side() <= 30));
}

#[test]
fn concept_arc_loads_with_concept_groups() {
    let Some(bank) = load_strict("concept-arc/corpus") else { return };
    assert!(bank.len() >= 160, "{}", bank.len());
    assert!(bank.tasks().iter().any(|t| t.group == "AboveBelow"));
    assert!(bank.find("AboveBelow/AboveBelow1").is_some());
}

#[test]
fn envs_run_on_real_tasks_in_both_modes() {
    let Some(dir) = data("arc-agi-1/training") else { return };
    let (bank, _) = TaskBank::load(&dir, LoadOptions::default()).unwrap();
    let env = ArcEnv::<30>::new(Arc::new(bank)).unwrap();
    for mode in [ModeKind::O2arc, ModeKind::Jaxarc] {
        let p = ArcParams { mode, ..ArcParams::default() };
        let mut v = VecEnv::new(env.clone(), p, 256, 5).unwrap();
        let (mut truncs, mut terms) = (0, 0);
        for _ in 0..400 {
            v.step_with(|_, key, _, a: &mut [ArcAction<30>]| {
                a[0] = sample_action::<30>(&mut key.rng(), SelKind::Mask)
            });
            truncs += v.truncated().iter().filter(|&&t| t).count();
            terms += v.terminated().iter().filter(|&&t| t).count();
        }
        match mode {
            // Unlimited trials: random play almost never solves, so episodes run to the limit.
            ModeKind::O2arc => assert!(
                truncs >= 2 * 256 - 16 && terms < 16,
                "{truncs} truncated, {terms} terminated"
            ),
            // Every Submit terminates (1 op in 35).
            ModeKind::Jaxarc => {
                assert!(terms > 256 * 400 / 35 / 2, "{truncs} truncated, {terms} terminated")
            }
        }
    }
    // Reset samples all tasks over time.
    let p = ArcParams::default();
    let seen: std::collections::HashSet<u32> =
        (0..4000).map(|i| env.sample_instance(&p, Key::new(i)).0).collect();
    assert!(seen.len() > 390, "{}", seen.len());
}
