//! The targets called as XLA calls them (call frames built in Rust, [`crate::abi::fake`]),
//! against the same [`DynBatch`] / [`Problem`] calls made directly.

use crate::abi::fake::{ALLOCATIONS, Array, LOCK, query, run};
use crate::{env, eval};
use kestrel_run::Layers;
use kestrel_run::envs::{Actions, DynBatch, EnvId, Obs};
use std::sync::Arc;

fn batch(id: &str, n: usize) -> Box<dyn DynBatch> {
    EnvId::parse(id).unwrap().build(Layers::none(), n, 0, 0).unwrap()
}

fn handle(slot: u32) -> Array {
    Array::new::<u32>(&[2], &[slot, env::version(slot).unwrap()])
}

fn f32s(o: Obs<'_>) -> Vec<f32> {
    match o {
        Obs::F32(v) => v.to_vec(),
        _ => panic!("not f32"),
    }
}

/// Results of a step of `rows` rows of `obs_len` float32s.
fn step_rets(lead: &[i64], rows: i64, obs_len: i64) -> Vec<Array> {
    let with = |tail: &[i64]| [lead, tail].concat();
    vec![
        Array::zeros::<u32>(&with(&[2])),
        Array::zeros::<f32>(&with(&[rows, obs_len])),
        Array::zeros::<f32>(&with(&[rows])),
        Array::pred(&with(&[rows])),
        Array::pred(&with(&[rows])),
    ]
}

#[test]
fn metadata_query_states_the_header_version() {
    for (_, h) in crate::TARGETS {
        assert_eq!(query(h), (0, 3, 0));
    }
}

#[test]
fn reset_then_steps_equal_the_batch_stepped_directly() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let n = 5;
    let slot = env::insert(batch("CartPole-v1", n));
    let mut direct = batch("CartPole-v1", n);
    let mut rets = vec![Array::zeros::<u32>(&[2]), Array::zeros::<f32>(&[n as i64, 4])];
    let e = run(
        env::kestrel_env_reset,
        &mut [handle(slot), Array::new::<u32>(&[], &[7])],
        &mut rets,
        &[],
    );
    assert_eq!(e, None);
    direct.reset(7);
    assert_eq!(rets[1].values::<f32>(), f32s(direct.obs()));
    assert_eq!(rets[0].values::<u32>(), vec![slot, 1]);
    for t in 0..40 {
        let a: Vec<i32> = (0..n as i32).map(|i| (i + t) % 2).collect();
        let mut rets = step_rets(&[], n as i64, 4);
        let mut args = [handle(slot), Array::new::<i32>(&[n as i64], &a)];
        assert_eq!(run(env::kestrel_env_step, &mut args, &mut rets, &[]), None);
        let wide: Vec<i64> = a.iter().map(|&v| v as i64).collect();
        direct.step_actions(&Actions::Int(&wide)).unwrap();
        assert_eq!(rets[1].values::<f32>(), f32s(direct.obs()), "step {t}");
        assert_eq!(rets[2].values::<f32>(), direct.rewards());
        let flags = |v: &[bool]| v.iter().map(|&b| u8::from(b)).collect::<Vec<u8>>();
        assert_eq!(rets[3].values::<u8>(), flags(direct.terminated()));
        assert_eq!(rets[4].values::<u8>(), flags(direct.truncated()));
    }
    assert!(env::close(slot));
}

#[test]
fn a_stale_or_closed_handle_and_bad_operands_are_errors_that_change_nothing() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let slot = env::insert(batch("CartPole-v1", 2));
    let step = |h: Array, a: Array| {
        let mut rets = step_rets(&[], 2, 4);
        run(env::kestrel_env_step, &mut [h, a], &mut rets, &[])
    };
    let ok = || Array::new::<i32>(&[2], &[0, 1]);
    assert_eq!(step(handle(slot), ok()), None);
    let old = Array::new::<u32>(&[2], &[slot, 0]);
    assert!(step(old, ok()).unwrap().contains("stale"));
    assert!(step(handle(slot), Array::new::<f32>(&[2], &[0.0, 1.0])).unwrap().contains("float32"));
    assert!(step(handle(slot), Array::new::<i32>(&[3], &[0, 1, 0])).unwrap().contains("3 values"));
    assert!(step(handle(slot), Array::new::<i32>(&[2], &[0, 5])).is_some());
    assert_eq!(env::version(slot), Some(1), "no failed call moved the env");
    assert!(env::close(slot));
    assert!(step(Array::new::<u32>(&[2], &[slot, 1]), ok()).unwrap().contains("closed"));
    assert!(step(Array::new::<u32>(&[3], &[slot, 1, 0]), ok()).unwrap().contains("(..., 2)"));
}

#[test]
fn several_handles_in_one_call_step_each_env_as_alone() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = (env::insert(batch("Pendulum-v1", 3)), env::insert(batch("Pendulum-v1", 3)));
    let (mut da, mut db) = (batch("Pendulum-v1", 3), batch("Pendulum-v1", 3));
    let mut rets = vec![Array::zeros::<u32>(&[2, 2]), Array::zeros::<f32>(&[2, 3, 3])];
    let hs = Array::new::<u32>(&[2, 2], &[a, 0, b, 0]);
    let seeds = Array::new::<u32>(&[2], &[1, 2]);
    assert_eq!(run(env::kestrel_env_reset, &mut [hs, seeds], &mut rets, &[]), None);
    da.reset(1);
    db.reset(2);
    let acts: Vec<f32> = vec![0.5, -1.0, 2.0, 1.5, 0.0, -2.0];
    let mut rets = step_rets(&[2], 3, 3);
    let hs = Array::new::<u32>(&[2, 2], &[a, 1, b, 1]);
    let mut args = [hs, Array::new::<f32>(&[2, 3, 1], &acts)];
    assert_eq!(run(env::kestrel_env_step, &mut args, &mut rets, &[]), None);
    let wide: Vec<f64> = acts.iter().map(|&v| v as f64).collect();
    da.step_actions(&Actions::Float(&wide[..3])).unwrap();
    db.step_actions(&Actions::Float(&wide[3..])).unwrap();
    assert_eq!(rets[1].values::<f32>(), [f32s(da.obs()), f32s(db.obs())].concat());
    assert_eq!(rets[2].values::<f32>(), [da.rewards(), db.rewards()].concat());
    assert_eq!(rets[0].values::<u32>(), vec![a, 2, b, 2]);
    // One handle broadcast to two rows (vmap over the actions only): the second is stale.
    let hs = Array::new::<u32>(&[2, 2], &[a, 2, a, 2]);
    let mut rets = step_rets(&[2], 3, 3);
    let mut args = [hs, Array::new::<f32>(&[2, 3, 1], &acts)];
    assert!(run(env::kestrel_env_step, &mut args, &mut rets, &[]).unwrap().contains("stale"));
    env::close(a);
    env::close(b);
}

#[test]
fn rollout_equals_its_steps() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let (n, t) = (4usize, 30usize);
    let slot = env::insert(batch("CartPole-v1", n));
    let mut direct = batch("CartPole-v1", n);
    let mut rets = vec![Array::zeros::<u32>(&[2]), Array::zeros::<f32>(&[n as i64, 4])];
    let mut args = [handle(slot), Array::new::<i64>(&[], &[3])];
    assert_eq!(run(env::kestrel_env_reset, &mut args, &mut rets, &[]), None);
    direct.reset(3);
    let acts: Vec<i32> = (0..(n * t) as i32).map(|i| (i * 7 / 3) % 2).collect();
    let mut rets = step_rets(&[t as i64], n as i64, 4);
    rets[0] = Array::zeros::<u32>(&[2]);
    let mut args = [handle(slot), Array::new::<i32>(&[t as i64, n as i64], &acts)];
    assert_eq!(run(env::kestrel_env_rollout, &mut args, &mut rets, &[]), None);
    let (obs, rew, te) = (rets[1].values::<f32>(), rets[2].values::<f32>(), rets[3].values::<u8>());
    for s in 0..t {
        let a: Vec<i64> = acts[s * n..(s + 1) * n].iter().map(|&v| v as i64).collect();
        direct.step_actions(&Actions::Int(&a)).unwrap();
        assert_eq!(&obs[s * n * 4..(s + 1) * n * 4], &f32s(direct.obs())[..], "step {s}");
        assert_eq!(&rew[s * n..(s + 1) * n], direct.rewards());
        let flags: Vec<u8> = direct.terminated().iter().map(|&b| u8::from(b)).collect();
        assert_eq!(&te[s * n..(s + 1) * n], &flags[..]);
    }
    env::close(slot);
}

#[test]
fn float64_observations_come_as_float32_when_asked() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let slot = env::insert(batch("VectorField-v0", 2));
    let mut direct = batch("VectorField-v0", 2);
    let mut rets = vec![Array::zeros::<u32>(&[2]), Array::zeros::<f32>(&[2, 50])];
    let mut args = [handle(slot), Array::new::<u32>(&[], &[4])];
    assert_eq!(run(env::kestrel_env_reset, &mut args, &mut rets, &[]), None);
    direct.reset(4);
    let Obs::F64(want) = direct.obs() else { panic!() };
    let want: Vec<f32> = want.iter().map(|&v| v as f32).collect();
    assert_eq!(rets[1].values::<f32>(), want);
    let mut rets = vec![Array::zeros::<u32>(&[2]), Array::zeros::<f64>(&[2, 50])];
    let mut args = [handle(slot), Array::new::<u32>(&[], &[4])];
    assert_eq!(run(env::kestrel_env_reset, &mut args, &mut rets, &[]), None);
    let Obs::F64(want) = direct.obs() else { panic!() };
    assert_eq!(rets[1].values::<f64>(), want.to_vec());
    env::close(slot);
}

#[test]
fn arc_steps_with_operation_and_selection_operands() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let n = 3usize;
    let slot = env::insert(batch("ARC-v0", n));
    let mut direct = batch("ARC-v0", n);
    let len = direct.spec().obs_len() as i64;
    let mut rets = vec![Array::zeros::<u32>(&[2]), Array::zeros::<i8>(&[n as i64, len])];
    let mut args = [handle(slot), Array::new::<u32>(&[], &[0])];
    assert_eq!(run(env::kestrel_env_reset, &mut args, &mut rets, &[]), None);
    direct.reset(0);
    let ops = [3i32, 21, 1];
    let mut sel = vec![0u8; n * 900];
    sel[5] = 1;
    sel[900 + 31] = 1;
    sel[1800..1810].fill(1);
    let mut sa = Array::new::<u8>(&[n as i64, 30, 30], &sel);
    sa.dtype = crate::abi::Dtype::Pred;
    let mut rets = step_rets(&[], n as i64, len);
    rets[1] = Array::zeros::<i8>(&[n as i64, len]);
    let mut args = [handle(slot), Array::new::<i32>(&[n as i64], &ops), sa];
    assert_eq!(run(env::kestrel_env_step, &mut args, &mut rets, &[]), None);
    let wide: Vec<i64> = ops.iter().map(|&v| v as i64).collect();
    direct.step_actions(&Actions::Arc { ops: &wide, sel: &sel }).unwrap();
    let Obs::I8(want) = direct.obs() else { panic!() };
    assert_eq!(rets[1].values::<i8>(), want.to_vec());
    assert_eq!(rets[2].values::<f32>(), direct.rewards());
    env::close(slot);
}

#[test]
fn evaluate_equals_the_problem_and_names_bad_operands() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let key = kestrel_core::Key::new(0);
    let p: Arc<dyn kestrel_evo::Problem> =
        Arc::new(kestrel_evo::driver::benchmark("rosenbrock", 3, 0.5, true, key).unwrap());
    let id = eval::insert(p.clone());
    let x: Vec<f32> = (0..12).map(|i| i as f32 * 0.1 - 0.4).collect();
    let raw = kestrel_core::Key::new(9).raw();
    let k = Array::new::<u32>(&[2], &[(raw >> 32) as u32, raw as u32]);
    let mut rets = vec![Array::zeros::<f32>(&[4])];
    let mut args = [Array::new::<f32>(&[4, 3], &x), k];
    assert_eq!(run(eval::kestrel_evaluate, &mut args, &mut rets, &[("problem", id)]), None);
    let mut want = vec![0f32; 4];
    p.evaluate_rows(kestrel_core::Key::from_raw(raw), 0, &x, &mut want);
    assert_eq!(rets[0].values::<f32>(), want);
    let mut args = [Array::new::<f32>(&[3, 4], &x), Array::zeros::<u32>(&[2])];
    let e = run(eval::kestrel_evaluate, &mut args, &mut rets, &[("problem", id)]);
    assert!(e.unwrap().contains("(..., pop, 3)"));
    assert!(eval::remove(id));
    let mut args = [Array::new::<f32>(&[4, 3], &x), Array::zeros::<u32>(&[2])];
    let e = run(eval::kestrel_evaluate, &mut args, &mut rets, &[("problem", id)]);
    assert!(e.unwrap().contains("gone"));
}

#[test]
fn a_warm_step_allocates_nothing() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    // On the one thread of a one-thread pool, where the env's parallel loops run inline (the
    // counter is per thread).
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    pool.install(|| {
        for (id, n, discrete) in [("CartPole-v1", 64usize, true), ("Pendulum-v1", 64, false)] {
            let slot = env::insert(batch(id, n));
            let len = if discrete { 4 } else { 3 };
            for t in 0..4 {
                let mut rets = step_rets(&[], n as i64, len);
                let a = if discrete {
                    Array::new::<i32>(&[n as i64], &vec![t % 2; n])
                } else {
                    Array::new::<f32>(&[n as i64, 1], &vec![0.5; n])
                };
                assert_eq!(
                    run(env::kestrel_env_step, &mut [handle(slot), a], &mut rets, &[]),
                    None
                );
                if t > 0 {
                    assert_eq!(ALLOCATIONS.with(|a| a.get()), 0, "{id} step {t}");
                }
            }
            env::close(slot);
        }
    });
}
