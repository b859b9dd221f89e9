//! Golden test: Pendulum against Gymnasium 1.4.0 `Pendulum-v1`, bit for bit (observations
//! and rewards as f32 bit patterns), state synced once after reset.

use kestrel_core::{Env, Key};
use kestrel_envs::{Pendulum, PendulumParams, PendulumState};
use kestrel_testkit::{ints, load_fixture};

#[test]
fn pendulum_matches_gymnasium() {
    let fx = load_fixture("gym_pendulum.json");
    let p = PendulumParams::default();
    let mut steps = 0;
    for (e, ep) in fx["episodes"].as_array().unwrap().iter().enumerate() {
        let st: Vec<f64> =
            ep["start"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let mut s = PendulumState([st[0], st[1]]);
        let (mut obs, mut r) = ([0f32; 3], [0f32]);
        for (t, step) in ep["steps"].as_array().unwrap().iter().enumerate() {
            let u = f32::from_bits(step["u"].as_u64().unwrap() as u32);
            Pendulum.step(&p, &mut s, &[u], Key::new(0), &mut obs, &mut r);
            let got: Vec<i64> = obs.iter().map(|o| o.to_bits() as i64).collect();
            assert_eq!(got, ints(&step["obs"]), "episode {e} step {t}: obs {obs:?}");
            assert_eq!(
                r[0].to_bits() as u64,
                step["r"].as_u64().unwrap(),
                "episode {e} step {t}: reward {}",
                r[0]
            );
            steps += 1;
        }
    }
    eprintln!("{steps} Pendulum steps identical to Gymnasium");
    assert_eq!(steps, 12 * 200);
}
