//! Behaviour on the peers' test systems.

use kestrel_core::Key;
use kestrel_dynamics::Dynamics;
use kestrel_mppi::systems::{BasicLinear, ContinuousCartPole, DiffDrive, DoubleIntegrator, Nav2d};
use kestrel_mppi::{Controller, Mppi, MppiParams};

fn closed_loop<D: Dynamics>(d: D, p: &MppiParams, x0: &[f64], steps: usize) -> Vec<Vec<f64>> {
    closed_loop_seeded(d, p, x0, steps, 7)
}

fn closed_loop_seeded<D: Dynamics>(
    d: D,
    p: &MppiParams,
    x0: &[f64],
    steps: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    let m = Mppi::new(d);
    m.validate(p).unwrap();
    let mut s = m.init(p);
    let nu = m.dynamics().nu();
    let (mut x, mut next, mut u) = (x0.to_vec(), vec![0.0; x0.len()], vec![0.0; nu]);
    let mut path = vec![x.clone()];
    for t in 0..steps {
        m.command(Key::new(seed).fold_in(t as u64), p, &mut s, &x, &mut u);
        m.dynamics().step(&x, &u, t, &mut next);
        std::mem::swap(&mut x, &mut next);
        path.push(x.clone());
    }
    path
}

#[test]
fn navigation_reaches_the_goal_around_the_hill() {
    // jax-mppi's smoothing-comparison setting: K=500, T=20, Σ=I, |u| ≤ 1, λ=1.
    let p = MppiParams {
        num_samples: 500,
        horizon: 20,
        u_min: vec![-1.0; 2],
        u_max: vec![1.0; 2],
        ..MppiParams::new(2, 1.0)
    };
    let path = closed_loop(Nav2d, &p, &Nav2d::START, 40);
    let dist =
        |x: &Vec<f64>| ((x[0] - Nav2d::GOAL[0]).powi(2) + (x[1] - Nav2d::GOAL[1]).powi(2)).sqrt();
    let closest = path.iter().map(dist).fold(f64::INFINITY, f64::min);
    let tail = path[path.len() - 10..].iter().map(dist).sum::<f64>() / 10.0;
    // Steps are up to 0.5 long (|u| ≤ 1, B = 0.5) and plain MPPI keeps jittering around the goal
    // (the peers compare smoothing variants on exactly this task), so: arrive, then stay near.
    assert!(
        closest < 0.25 && tail < 1.0,
        "closest {closest}, last-10 mean {tail}; end {:?}",
        path.last()
    );
    let worst_hill = path.iter().map(|x| Nav2d::hill(x)).fold(0.0, f64::max);
    assert!(worst_hill < 100.0, "went over the hill: peak term {worst_hill}");
}

#[test]
fn basic_linear_and_double_integrator_settle() {
    let p = MppiParams { num_samples: 50, horizon: 15, lambda: 5.0, ..MppiParams::new(1, 1.0) };
    let path = closed_loop(BasicLinear, &p, &[1.0, -0.5], 20);
    let first: f64 = path[0].iter().map(|v| v * v).sum();
    let last: f64 = path.last().unwrap().iter().map(|v| v * v).sum();
    assert!(last < first, "{first} -> {last}");
    // From 1 away, the positions settle at the goal; plain MPPI (Σ = I on the acceleration)
    // keeps jittering around it, so the last 10 positions are averaged, and judged over 30
    // seeds rather than one draw: the original bound (0.1 on each coordinate) holds at the
    // median, and no seed strays past 0.5. pytorch-mppi itself does the same on this loop
    // (`tools/compare/mppi_thresholds.py`: median 0.054, worst 0.34, 5 of 30 seeds over 0.1;
    // Kestrel 0.051, 0.37, 7 of 30; Mann-Whitney p = 0.85; BENCHMARKS.md).
    let p = MppiParams { num_samples: 200, horizon: 20, ..MppiParams::new(2, 1.0) };
    let mut worst: Vec<f64> = (0..30)
        .map(|seed| {
            let path = closed_loop_seeded(DoubleIntegrator { dims: 2 }, &p, &[0.0; 4], 60, seed);
            let mean = |i: usize| path[path.len() - 10..].iter().map(|x| x[i]).sum::<f64>() / 10.0;
            (mean(0) - 1.0).abs().max((mean(1) - 1.0).abs())
        })
        .collect();
    worst.sort_by(f64::total_cmp);
    eprintln!("double integrator, worst coordinate's error over 30 seeds: {worst:?}");
    assert!(worst[15] < 0.1 && worst[29] < 0.5, "{worst:?}");
}

#[test]
fn continuous_cartpole_balances_from_a_tilt() {
    let p = MppiParams {
        num_samples: 500,
        horizon: 50,
        u_min: vec![-10.0],
        u_max: vec![10.0],
        ..MppiParams::new(1, 10.0)
    };
    let path = closed_loop(ContinuousCartPole, &p, &[0.0, 0.0, 0.2, 0.0], 250);
    let worst_late = path[100..].iter().map(|x| x[2].abs()).fold(0.0, f64::max);
    // CartPole-v1 ends an episode at 0.21 rad; after 2 s the pole stays within half of that.
    assert!(worst_late < 0.1, "pole angle after 2 s up to {worst_late}; end {:?}", path.last());
    // A 1 s horizon keeps the cart on CartPole-v1's track (|x| ≤ 2.4); 0.6 s lets it drift.
    let widest = path.iter().map(|x| x[0].abs()).fold(0.0, f64::max);
    assert!(widest < 2.4, "cart left the track: |x| up to {widest}");
    // Without control it falls (the test is not passing on a stable system).
    let (mut x, mut n) = ([0.0, 0.0, 0.2, 0.0], [0.0; 4]);
    for t in 0..100 {
        ContinuousCartPole.step(&x, &[0.0], t, &mut n);
        x = n;
    }
    assert!(x[2].abs() > 1.0, "uncontrolled pole stayed up: {x:?}");
}

#[test]
fn diff_drive_turns_and_reaches_an_off_axis_goal() {
    let p = MppiParams {
        num_samples: 300,
        horizon: 20,
        u_min: vec![-1.0, -2.0],
        u_max: vec![1.0, 2.0],
        ..MppiParams::new(2, 1.0)
    };
    let path = closed_loop(DiffDrive, &p, &[0.0, 0.0, 0.0], 60);
    let end = path.last().unwrap();
    let dist =
        ((end[0] - DiffDrive::GOAL[0]).powi(2) + (end[1] - DiffDrive::GOAL[1]).powi(2)).sqrt();
    assert!(dist < 0.15, "ended {dist} from the goal at {end:?}");
    let max_heading = path.iter().map(|x| x[2].abs()).fold(0.0, f64::max);
    assert!(max_heading > 0.2, "never turned: {max_heading}");
}

#[test]
fn continuous_cartpole_at_full_force_is_gymnasium_cartpole() {
    // kestrel-envs' CartPole is bit-exact against Gymnasium (golden test); the continuous
    // dynamics at ±force_mag must equal it bit for bit.
    use kestrel_envs::cartpole::{CartPole, CartPoleParams, CartPoleState};
    let gp = CartPoleParams::default();
    let (mut x, mut n) = ([0.01, -0.02, 0.03, 0.04], [0.0; 4]);
    let mut s = CartPoleState(x);
    for t in 0..50 {
        let a = (t * 7 % 3 == 0) as u32;
        let u = if a == 1 { 10.0 } else { -10.0 };
        ContinuousCartPole.step(&x, &[u], t, &mut n);
        x = n;
        CartPole::advance(&gp, &mut s, a);
        assert_eq!(x, s.0, "step {t}");
    }
}

#[test]
fn batched_mppi_drives_a_vec_env_of_control_envs() {
    use kestrel_core::{BatchEnv, VecEnv};
    use kestrel_envs::control::ENV_MAX_NU;
    use kestrel_envs::{ControlEnv, ControlParams};
    // Four navigation envs with perturbed starts, one `command_batch` per step on the envs'
    // exact f64 states; the env applies the commands and pays the running cost.
    let env = ControlEnv::new(Nav2d).unwrap();
    let ep = ControlParams { reset_noise: 0.5, max_episode_steps: 60, ..Default::default() };
    env.validate(&ep).unwrap();
    let m = Mppi::new(Nav2d);
    let p = MppiParams {
        num_samples: 300,
        horizon: 20,
        u_min: vec![-1.0; 2],
        u_max: vec![1.0; 2],
        ..MppiParams::new(2, 1.0)
    };
    m.validate(&p).unwrap();
    let dist =
        |x: &[f64]| ((x[0] - Nav2d::GOAL[0]).powi(2) + (x[1] - Nav2d::GOAL[1]).powi(2)).sqrt();
    let (mut all_closest, mut all_tail) = (Vec::new(), Vec::new());
    for seed in 0..8u64 {
        let mut venv = VecEnv::new(env, ep.clone(), 4, 11 + seed).unwrap();
        let mut ms: Vec<_> = (0..4).map(|_| m.init(&p)).collect();
        let (mut x0s, mut out) = (vec![0.0; 8], vec![0.0; 8]);
        let mut actions = vec![[0.0f32; ENV_MAX_NU]; 4];
        let starts: Vec<[f64; 2]> = venv.states().iter().map(|s| [s.x[0], s.x[1]]).collect();
        assert!(starts.windows(2).all(|w| w[0] != w[1]), "perturbed starts differ");
        let (mut closest, mut tail) = ([f64::INFINITY; 4], [0.0; 4]);
        for t in 0..40 {
            for (i, s) in venv.states().iter().enumerate() {
                x0s[2 * i..2 * i + 2].copy_from_slice(&s.x[..2]);
            }
            m.command_batch(Key::new(3 + seed).fold_in(t), &p, &mut ms, &x0s, &mut out);
            for (a, u) in actions.iter_mut().zip(out.chunks(2)) {
                a[0] = u[0] as f32;
                a[1] = u[1] as f32;
            }
            venv.step(&actions);
            assert!(venv.terminated().iter().all(|&d| !d));
            for (i, s) in venv.states().iter().enumerate() {
                closest[i] = closest[i].min(dist(&s.x));
                if t >= 30 {
                    tail[i] += dist(&s.x) / 10.0;
                }
            }
        }
        all_closest.extend(closest);
        all_tail.extend(tail);
    }
    // As the single-env test: arrive, then stay near (plain MPPI jitters around the goal with
    // steps up to 0.5 long; the starts are ~5.7 away). Judged over 32 episodes (8 seeds of 4
    // envs) rather than one draw: the original bounds (closest approach 0.25, mean distance
    // over the last 10 steps 1.0) hold at the median, and every episode arrives within 0.5.
    // pytorch-mppi on the same loop (`tools/compare/mppi_thresholds.py`, 32 perturbed starts):
    // closest median 0.18, worst 0.38, 7 of 32 over 0.25; last-10 median 0.66, worst 0.91.
    for v in [&mut all_closest, &mut all_tail] {
        v.sort_by(f64::total_cmp);
    }
    eprintln!(
        "closest approach over 32 episodes: {all_closest:?}\nlast-10 mean distance: {all_tail:?}"
    );
    assert!(all_closest[16] < 0.25 && all_tail[16] < 1.0, "{all_closest:?} {all_tail:?}");
    assert!(all_closest[31] < 0.5, "{all_closest:?}");
}
