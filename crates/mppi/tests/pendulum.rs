//! MPPI on the Gymnasium-exact pendulum: swing-up and balance, and thread independence.

use kestrel_core::{Env, Key};
use kestrel_envs::{Pendulum, PendulumParams, PendulumState};
use kestrel_mppi::{Controller, Mppi, MppiParams, PendulumDynamics};

fn params() -> MppiParams {
    MppiParams {
        num_samples: 100,
        horizon: 15,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        ..MppiParams::new(1, 10.0)
    }
}

/// Runs 200 steps from hanging down; returns the angle trace.
fn swing(seed: u64) -> Vec<f64> {
    swing_with(&params(), seed)
}

/// [`swing`] with given params.
fn swing_with(p: &MppiParams, seed: u64) -> Vec<f64> {
    let m = Mppi::new(PendulumDynamics);
    let p = p.clone();
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let env_p = PendulumParams::default();
    let mut st = PendulumState([std::f64::consts::PI, 0.0]);
    let (mut obs, mut r, mut u) = ([0f32; 3], [0f32], [0.0]);
    let mut trace = Vec::new();
    for t in 0..200 {
        m.command(Key::new(seed).fold_in(t), &p, &mut s, &st.0, &mut u);
        Pendulum.step(&env_p, &mut st, &[u[0] as f32], Key::new(0), &mut obs, &mut r);
        trace.push(kestrel_envs::pendulum::angle_normalize(st.0[0]));
    }
    trace
}

#[test]
fn swings_up_and_balances() {
    // In both precisions (f32: MPPI's SIMD lanes).
    let f32 = MppiParams { precision: kestrel_mppi::PrecisionKind::F32, ..params() };
    for (seed, p) in (0..3).flat_map(|s| [(s, params()), (s, f32.clone())]) {
        let trace = swing_with(&p, seed);
        let tail = &trace[150..];
        assert!(
            tail.iter().all(|th| th.abs() < 0.3),
            "seed {seed}, {:?}: last angles {:?}",
            p.precision,
            &trace[190..]
        );
    }
}

#[test]
fn same_commands_on_one_and_two_threads() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| swing(9))
    };
    assert_eq!(run(1), run(2));
}

#[test]
fn bad_params_are_errors_naming_the_field() {
    let m = Mppi::new(PendulumDynamics);
    let bad = |p: MppiParams| m.validate(&p).unwrap_err().to_string();
    assert!(bad(MppiParams { lambda: 0.0, ..params() }).contains("lambda"));
    assert!(bad(MppiParams { u_min: vec![3.0], ..params() }).contains("u_min <= u_max"));
    assert!(bad(MppiParams { noise_sigma: vec![-1.0], ..params() }).contains("positive definite"));
    assert!(bad(MppiParams { u_per_command: 99, ..params() }).contains("u_per_command"));
    assert!(bad(MppiParams { noise_mu: vec![0.0, 0.0], ..params() }).contains("noise_mu"));
    assert!(bad(MppiParams { rollout_samples: 0, ..params() }).contains("rollout_samples = 0"));
    assert!(bad(MppiParams { rollout_samples: 17, ..params() }).contains("rollout_samples = 17"));
    let nan = bad(MppiParams { rollout_var_cost: f64::NAN, ..params() });
    assert!(nan.contains("rollout_var_cost = NaN"), "{nan}");
    let jax = MppiParams {
        rollout_samples: 2,
        convention: kestrel_mppi::ConventionKind::JaxMppi,
        ..params()
    };
    assert!(bad(jax).contains("jax-mppi convention"));
}

#[test]
fn smppi_swings_up_and_its_clamped_mode_bounds_action_changes() {
    use kestrel_mppi::{Smppi, SmppiParams};
    let m = Smppi::new(PendulumDynamics);
    for clamp in [false, true] {
        let p = SmppiParams {
            mppi: MppiParams {
                num_samples: 200,
                horizon: 15,
                u_min: vec![-1.0],
                u_max: vec![1.0],
                ..MppiParams::new(1, 3.0)
            },
            w_action_seq_cost: 0.1,
            delta_t: 0.5,
            action_min: vec![-2.0],
            action_max: vec![2.0],
            clamp_lifted_control: clamp,
        };
        m.validate(&p).unwrap();
        let mut s = m.init(&p);
        let mut st = PendulumState([std::f64::consts::PI, 0.0]);
        let (mut obs, mut r, mut u) = ([0f32; 3], [0f32], [0.0]);
        let mut last_angles = Vec::new();
        for t in 0..250 {
            m.command(Key::new(4).fold_in(t), &p, &mut s, &st.0, &mut u);
            Pendulum.step(
                &PendulumParams::default(),
                &mut st,
                &[u[0] as f32],
                Key::new(0),
                &mut obs,
                &mut r,
            );
            if t >= 200 {
                last_angles.push(kestrel_envs::pendulum::angle_normalize(st.0[0]).abs());
            }
            if clamp {
                // |U| ≤ 1 and Δt = 0.5: the planned action sequence changes by at most 0.5 per
                // step relative to its shifted predecessor.
                assert!(
                    s.u.iter().all(|v| v.abs() <= 1.0 + 1e-9),
                    "lifted control out of bounds: {:?}",
                    s.u
                );
            }
        }
        assert!(last_angles.iter().all(|a| *a < 0.4), "clamp {clamp}: {last_angles:?}");
    }
}

/// Also peer defect 7: jax-mppi's KMPPI returned U[1] of the optimised plan; Kestrel returns U[0].
#[test]
fn kmppi_swings_up_and_returns_the_first_planned_action() {
    use kestrel_mppi::{Kmppi, KmppiParams};
    let m = Kmppi::new(PendulumDynamics);
    let p = KmppiParams {
        mppi: MppiParams {
            num_samples: 200,
            horizon: 20,
            u_min: vec![-2.0],
            u_max: vec![2.0],
            ..MppiParams::new(1, 3.0)
        },
        num_support_pts: 10,
        kernel_sigma: 1.0,
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut st = PendulumState([std::f64::consts::PI, 0.0]);
    let (mut obs, mut r, mut u) = ([0f32; 3], [0f32], [0.0]);
    let mut tail = Vec::new();
    for t in 0..250 {
        m.command(Key::new(8).fold_in(t), &p, &mut s, &st.0, &mut u);
        assert_eq!(u[0], s.u[0], "returned action is the plan's first step");
        Pendulum.step(
            &PendulumParams::default(),
            &mut st,
            &[u[0] as f32],
            Key::new(0),
            &mut obs,
            &mut r,
        );
        if t >= 200 {
            tail.push(kestrel_envs::pendulum::angle_normalize(st.0[0]).abs());
        }
    }
    assert!(tail.iter().all(|a| *a < 0.4), "{tail:?}");
    assert!(m.validate(&KmppiParams { num_support_pts: 99, ..p }).is_err());
}

#[test]
fn batched_commands_equal_single_commands_with_the_shared_noise() {
    let m = Mppi::new(PendulumDynamics);
    let p = params();
    let x0s = [3.0, 0.0, 1.0, -1.0, -2.0, 0.5];
    let mut batch: Vec<_> = (0..3).map(|_| m.init(&p)).collect();
    let mut out = [0.0; 3];
    m.command_batch(Key::new(4), &p, &mut batch, &x0s, &mut out);
    // The same normals through single commands: the rows of samples 8c..8c+8 are one
    // vectorised draw from key.fold_in(c).
    let mut z = vec![0.0; p.num_samples * p.horizon];
    for (c, rows) in z.chunks_mut(8 * p.horizon).enumerate() {
        kestrel_core::fill_normal_f32(Key::new(4).fold_in(c as u64), rows);
    }
    for i in 0..3 {
        let mut s = m.init(&p);
        let mut u = [0.0];
        m.command_with_normals(&p, &mut s, &x0s[2 * i..2 * i + 2], &z, &mut u, true);
        assert_eq!(u[0], out[i]);
        assert_eq!(s.u, batch[i].u);
    }
}
