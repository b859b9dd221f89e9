//! The batched methods against the scalar ones on every built-in system: f64 bit-identical,
//! f32 within its polynomial and rounding errors; the defaults (a system without batch code)
//! equal to the scalar loop.

use kestrel_core::Key;
use kestrel_dynamics::{
    BasicLinear, ContinuousCartPole, DiffDrive, DoubleIntegrator, Dynamics, Nav2d, PendulumDynamics,
};

/// A system with only the scalar methods (the defaults run).
struct Plain<D>(D);

impl<D: Dynamics> Dynamics for Plain<D> {
    fn nx(&self) -> usize {
        self.0.nx()
    }
    fn nu(&self) -> usize {
        self.0.nu()
    }
    fn step(&self, x: &[f64], u: &[f64], t: usize, next: &mut [f64]) {
        self.0.step(x, u, t, next)
    }
    fn running_cost(&self, x: &[f64], u: &[f64], t: usize) -> f64 {
        self.0.running_cost(x, u, t)
    }
    fn terminal_cost(&self, x: &[f64]) -> f64 {
        self.0.terminal_cost(x)
    }
}

/// Steps `n` random samples for `steps` steps both ways; returns the worst f32 error relative
/// to the f64 batch (states and costs, scaled by max(1, |value|)).
fn check<D: Dynamics>(name: &str, d: &D, scale: f64, n: usize, steps: usize) -> f64 {
    let (nx, nu) = (d.nx(), d.nu());
    let mut r = Key::new(11).rng();
    let mut xs: Vec<Vec<f64>> =
        (0..n).map(|_| (0..nx).map(|_| scale * (2.0 * r.uniform_f64() - 1.0)).collect()).collect();
    // Structure of arrays.
    let mut x = vec![0.0; nx * n];
    for (j, s) in xs.iter().enumerate() {
        (0..nx).for_each(|i| x[i * n + j] = s[i]);
    }
    let mut x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let (mut next, mut next32) = (vec![0.0; nx * n], vec![0.0f32; nx * n]);
    let (mut cost, mut cost32, mut scalar_cost) = (vec![0.0; n], vec![0.0f32; n], vec![0.0; n]);
    let mut worst = 0.0f64;
    let mut u = vec![0.0; nu * n];
    for t in 0..steps {
        u.iter_mut().for_each(|v| *v = 3.0 * (2.0 * r.uniform_f64() - 1.0));
        let u32: Vec<f32> = u.iter().map(|&v| v as f32).collect();
        d.step_batch(&x, &u, t, &mut next, n);
        d.running_cost_batch(&next, &u, t, &mut cost, n);
        d.step_batch_f32(&x32, &u32, t, &mut next32, n);
        d.running_cost_batch_f32(&next32, &u32, t, &mut cost32, n);
        for (j, s) in xs.iter_mut().enumerate() {
            let uj: Vec<f64> = (0..nu).map(|i| u[i * n + j]).collect();
            let mut ns = vec![0.0; nx];
            d.step(s, &uj, t, &mut ns);
            scalar_cost[j] += d.running_cost(&ns, &uj, t);
            *s = ns;
            for i in 0..nx {
                assert_eq!(next[i * n + j].to_bits(), s[i].to_bits(), "{name}: t {t} sample {j}");
                let e = (next32[i * n + j] as f64 - s[i]).abs() / s[i].abs().max(1.0);
                worst = worst.max(e);
            }
            assert_eq!(cost[j].to_bits(), scalar_cost[j].to_bits(), "{name}: cost t {t}");
        }
        std::mem::swap(&mut x, &mut next);
        x32.copy_from_slice(&next32);
    }
    d.terminal_cost_batch(&x, &mut cost, n);
    d.terminal_cost_batch_f32(&x32, &mut cost32, n);
    for (j, s) in xs.iter().enumerate() {
        let want = scalar_cost[j] + d.terminal_cost(s);
        assert_eq!(cost[j].to_bits(), want.to_bits(), "{name}: terminal cost");
        worst = worst.max((cost32[j] as f64 - want).abs() / want.abs().max(1.0));
    }
    worst
}

#[test]
fn batched_f64_is_the_scalar_step_and_f32_is_close() {
    // Short horizons (f32 error grows along a chaotic rollout) over the ranges the systems
    // visit: angles to ±3π, speeds to ±8.
    type Case = Box<dyn Fn(usize) -> f64>;
    let cases: Vec<(&str, Case)> = vec![
        ("pendulum", Box::new(|n| check("pendulum", &PendulumDynamics, 9.0, n, 5))),
        ("cartpole", Box::new(|n| check("cartpole", &ContinuousCartPole, 1.0, n, 5))),
        ("nav2d", Box::new(|n| check("nav2d", &Nav2d, 4.0, n, 5))),
        ("basic", Box::new(|n| check("basic", &BasicLinear, 2.0, n, 5))),
        ("diffdrive", Box::new(|n| check("diffdrive", &DiffDrive, 9.0, n, 5))),
        (
            "double-integrator-3",
            Box::new(|n| check("di", &DoubleIntegrator { dims: 3 }, 2.0, n, 5)),
        ),
        ("plain pendulum", Box::new(|n| check("plain", &Plain(PendulumDynamics), 9.0, n, 5))),
        ("plain nav2d", Box::new(|n| check("plain nav2d", &Plain(Nav2d), 4.0, n, 5))),
    ];
    for (name, f) in cases {
        for n in [1, 7, 32, 200] {
            let worst = f(n);
            assert!(worst < 2e-5, "{name}, n {n}: f32 relative error {worst:e}");
        }
    }
}
