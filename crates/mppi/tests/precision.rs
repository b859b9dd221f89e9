//! MPPI's f32 lanes (`PrecisionKind::F32`) against the bit-exact f64 mode: the same command from
//! the same normals within f32 error on every built-in system and convention, the same values
//! on 1 and 2 threads, padding lanes that never weigh (non-finite costs: the unit test in
//! `mppi.rs` runs both precisions) and the diagnostics filled as in f64 (the swing-up in
//! `pendulum.rs` runs both precisions too).

use kestrel_core::Key;
use kestrel_dynamics::Dynamics;
use kestrel_mppi::systems::{BasicLinear, ContinuousCartPole, DiffDrive, DoubleIntegrator, Nav2d};
use kestrel_mppi::{
    Controller, ConventionKind, Mppi, MppiParams, MppiState, PendulumDynamics, PrecisionKind,
};

fn with(p: &MppiParams, precision: PrecisionKind) -> MppiParams {
    MppiParams { precision, ..p.clone() }
}

/// Runs `commands` commands from `x0` with given normals in both precisions (the same plan
/// fed to both each time, so errors do not compound) and returns the worst differences of the
/// output, the weights and the costs (relative to max(1, |cost|)).
fn compare<D: Dynamics>(d: D, p: &MppiParams, x0: &[f64], commands: u64) -> (f64, f64, f64) {
    let m = Mppi::new(d);
    let (p64, p32) = (with(p, PrecisionKind::F64), with(p, PrecisionKind::F32));
    m.validate(&p64).unwrap();
    m.validate(&p32).unwrap();
    let nu = m.dynamics().nu();
    let per = p.horizon * nu;
    let (mut s64, mut s32) = (m.init(&p64), m.init(&p32));
    let (mut o64, mut o32) = (vec![0.0; p.u_per_command * nu], vec![0.0; p.u_per_command * nu]);
    let mut z = vec![0.0; p.num_samples * per];
    let (mut du, mut dw, mut dc) = (0.0f64, 0.0f64, 0.0f64);
    for c in 0..commands {
        kestrel_core::fill_normal_f32(Key::new(c), &mut z);
        s32.u.clone_from(&s64.u);
        m.command_with_normals(&p64, &mut s64, x0, &z, &mut o64, true);
        m.command_with_normals(&p32, &mut s32, x0, &z, &mut o32, true);
        for (a, b) in o64.iter().zip(&o32) {
            du = du.max((a - b).abs());
        }
        assert_eq!(s32.weights.len(), p.num_samples);
        assert_eq!(s32.costs.len(), p.num_samples);
        assert_eq!(s32.noise.len(), p.num_samples * per);
        for (a, b) in s64.weights.iter().zip(&s32.weights) {
            dw = dw.max((a - b).abs());
        }
        for (a, b) in s64.costs.iter().zip(&s32.costs) {
            if a.is_finite() || b.is_finite() {
                dc = dc.max((a - b).abs() / a.abs().max(1.0));
            }
        }
        // The effective noise: f32 rounding of the same ε.
        for (a, b) in s64.noise.iter().zip(&s32.noise) {
            assert!((a - b).abs() < 1e-5 * a.abs().max(1.0), "noise {a} vs {b}");
        }
        let wsum: f64 = s32.weights.iter().sum();
        assert!((wsum - 1.0).abs() < 1e-6, "weights sum to {wsum}");
    }
    (du, dw, dc)
}

#[test]
fn f32_commands_match_f64_within_f32_error() {
    let pend = MppiParams {
        num_samples: 100,
        horizon: 15,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        ..MppiParams::new(1, 1.0)
    };
    let nav = MppiParams {
        num_samples: 77,
        horizon: 12,
        u_min: vec![-1.0; 2],
        u_max: vec![1.0; 2],
        noise_sigma: vec![1.0, 0.3, 0.3, 0.5],
        noise_mu: vec![0.1, -0.2],
        ..MppiParams::new(2, 1.0)
    };
    let basic = MppiParams { num_samples: 50, horizon: 15, lambda: 5.0, ..MppiParams::new(1, 1.0) };
    let cart = MppiParams { num_samples: 64, horizon: 20, ..MppiParams::new(1, 5.0) };
    let dd = MppiParams { num_samples: 40, horizon: 10, ..MppiParams::new(2, 0.5) };
    let di = MppiParams { num_samples: 33, horizon: 8, ..MppiParams::new(3, 1.0) };
    for conv in [ConventionKind::PytorchMppi, ConventionKind::JaxMppi] {
        for (extra, name) in
            [(false, "plain"), (true, "null action, |ε| cost, u_scale, 2 per command")]
        {
            let c = |p: &MppiParams| {
                let p = MppiParams { convention: conv, ..p.clone() };
                if !extra {
                    return p;
                }
                MppiParams {
                    sample_null_action: true,
                    noise_abs_cost: true,
                    u_scale: 0.7,
                    u_per_command: 2,
                    ..p
                }
            };
            let cases = [
                ("pendulum", compare(PendulumDynamics, &c(&pend), &[3.0, 0.5], 4)),
                ("nav2d", compare(Nav2d, &c(&nav), &Nav2d::START, 4)),
                ("basic", compare(BasicLinear, &c(&basic), &[1.0, -0.5], 4)),
                ("cartpole", compare(ContinuousCartPole, &c(&cart), &[0.1, 0.0, 0.2, -0.1], 4)),
                ("diff-drive", compare(DiffDrive, &c(&dd), &[0.0, 0.0, 0.3], 4)),
                ("double integrator", compare(DoubleIntegrator { dims: 3 }, &c(&di), &[0.0; 6], 4)),
            ];
            // Measured: outputs within 9e-6, weights 1.4e-5, costs 1e-6 relative.
            for (sys, (du, dw, dc)) in cases {
                assert!(
                    du < 5e-5 && dw < 5e-5 && dc < 5e-6,
                    "{sys}, {conv:?}, {name}: output {du:e}, weights {dw:e}, costs {dc:e}"
                );
            }
        }
    }
}

/// 30 keyed pendulum commands in f32; the plan and diagnostics.
fn keyed_run(k: usize) -> (Vec<f64>, MppiState) {
    let m = Mppi::new(PendulumDynamics);
    let p = MppiParams {
        num_samples: k,
        horizon: 20,
        u_min: vec![-2.0],
        u_max: vec![2.0],
        sample_null_action: true,
        precision: PrecisionKind::F32,
        ..MppiParams::new(1, 1.0)
    };
    m.validate(&p).unwrap();
    let mut s = m.init(&p);
    let mut out = [0.0];
    let mut us = Vec::new();
    for c in 0..30 {
        m.command(Key::new(5).fold_in(c), &p, &mut s, &[3.0, 0.0], &mut out);
        us.push(out[0]);
    }
    (us, s)
}

#[test]
fn f32_commands_are_the_same_on_one_and_two_threads() {
    for k in [50, 1000] {
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| keyed_run(k))
        };
        let ((u1, s1), (u2, s2)) = (run(1), run(2));
        assert_eq!(u1, u2, "K {k}");
        assert_eq!(s1.u, s2.u);
        assert_eq!(s1.costs, s2.costs);
        assert_eq!(s1.weights, s2.weights);
        assert_eq!(s1.noise, s2.noise);
    }
}

#[test]
fn padding_lanes_never_weigh_and_the_null_sample_is_zero() {
    // K = 50: two blocks of 32 lanes, 14 of them padding.
    let (_, s) = keyed_run(50);
    assert_eq!(s.costs.len(), 50);
    assert!(s.costs.iter().all(|c| c.is_finite()));
    let wsum: f64 = s.weights.iter().sum();
    assert!((wsum - 1.0).abs() < 1e-6, "{wsum}");
    // pytorch-mppi's null action: sample 0's control is 0, so its effective noise is minus the
    // (shifted) plan.
    let m = Mppi::new(PendulumDynamics);
    let p = MppiParams {
        num_samples: 50,
        horizon: 20,
        sample_null_action: true,
        precision: PrecisionKind::F32,
        ..MppiParams::new(1, 1.0)
    };
    let mut s = m.init(&p);
    s.u = (0..20).map(|t| 0.1 * t as f64).collect();
    let mut z = vec![0.0; 50 * 20];
    kestrel_core::fill_normal_f32(Key::new(2), &mut z);
    m.command_with_normals(&p, &mut s, &[3.0, 0.0], &z, &mut [0.0], true);
    for t in 0..20 {
        let shifted = if t < 19 { 0.1 * (t + 1) as f64 } else { 0.0 };
        assert!((s.noise[t] + shifted).abs() < 1e-6, "t {t}: {}", s.noise[t]);
    }
}

#[test]
fn f32_is_refused_where_it_does_not_run() {
    let m = Mppi::new(PendulumDynamics);
    let p =
        MppiParams { rollout_samples: 4, precision: PrecisionKind::F32, ..MppiParams::new(1, 1.0) };
    let e = m.validate(&p).unwrap_err().to_string();
    assert!(e.contains("rollout_samples") && e.contains("f32"), "{e}");
    // Values f32 cannot carry are refused, not turned into NaN weights.
    for (p, field) in [
        (
            MppiParams { lambda: 1e-40, precision: PrecisionKind::F32, ..MppiParams::new(1, 1.0) },
            "lambda",
        ),
        (
            MppiParams {
                noise_sigma: vec![1e40],
                precision: PrecisionKind::F32,
                ..MppiParams::new(1, 1.0)
            },
            "noise_sigma",
        ),
    ] {
        let e = m.validate(&p).unwrap_err().to_string();
        assert!(e.contains(field) && e.contains("f32"), "{e}");
        assert!(m.validate(&MppiParams { precision: PrecisionKind::F64, ..p }).is_ok());
    }
    let sm = kestrel_mppi::Smppi::new(PendulumDynamics);
    let sp = kestrel_mppi::SmppiParams {
        mppi: MppiParams { precision: PrecisionKind::F32, ..MppiParams::new(1, 1.0) },
        w_action_seq_cost: 1.0,
        delta_t: 1.0,
        action_min: vec![-1.0],
        action_max: vec![1.0],
        clamp_lifted_control: false,
    };
    let e = sm.validate(&sp).unwrap_err().to_string();
    assert!(e.contains("precision"), "{e}");
}

/// The `SystemKind` enum (the presets' dynamics) forwards the batched methods: f32 commands over it
/// equal those over the concrete system.
#[test]
fn the_system_enum_gives_the_concrete_systems_values() {
    use kestrel_mppi::SystemKind;
    for (sys, nu) in [(SystemKind::Pendulum, 1), (SystemKind::Nav2d, 2), (SystemKind::Cartpole, 1)]
    {
        let p = MppiParams {
            num_samples: 40,
            horizon: 10,
            precision: PrecisionKind::F32,
            ..MppiParams::new(nu, 1.0)
        };
        let run = |d: &dyn Fn(&mut Vec<f64>, &mut MppiState)| {
            let mut s = MppiState::default();
            let mut out = vec![0.0; nu];
            d(&mut out, &mut s);
            (out, s.costs)
        };
        let x0 = sys.start();
        let by_enum = run(&|out, s| {
            let m = Mppi::new(sys);
            *s = m.init(&p);
            m.command(Key::new(1), &p, s, &x0, out);
        });
        let concrete = match sys {
            SystemKind::Pendulum => run(&|out, s| {
                let m = Mppi::new(PendulumDynamics);
                *s = m.init(&p);
                m.command(Key::new(1), &p, s, &x0, out);
            }),
            SystemKind::Nav2d => run(&|out, s| {
                let m = Mppi::new(Nav2d);
                *s = m.init(&p);
                m.command(Key::new(1), &p, s, &x0, out);
            }),
            _ => run(&|out, s| {
                let m = Mppi::new(ContinuousCartPole);
                *s = m.init(&p);
                m.command(Key::new(1), &p, s, &x0, out);
            }),
        };
        assert_eq!(by_enum, concrete, "{sys:?}");
    }
}
