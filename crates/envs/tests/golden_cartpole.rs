//! Golden test: CartPole against Gymnasium 1.4.0 `CartPole-v1`, bit for bit (f64 dynamics,
//! f32 observations compared as bit patterns), state synced once after reset.

use kestrel_core::{Env, Key};
use kestrel_envs::{CartPole, CartPoleParams, CartPoleState};
use kestrel_testkit::{ints, load_fixture};

#[test]
fn cartpole_matches_gymnasium() {
    let fx = load_fixture("gym_cartpole.json");
    let p = CartPoleParams::default();
    let mut steps = 0;
    for (e, ep) in fx["episodes"].as_array().unwrap().iter().enumerate() {
        let start: Vec<f64> =
            ep["start"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        let mut s = CartPoleState([start[0], start[1], start[2], start[3]]);
        let (mut obs, mut r) = ([0f32; 4], [0f32]);
        for (t, st) in ep["steps"].as_array().unwrap().iter().enumerate() {
            let a = st["a"].as_u64().unwrap() as u32;
            let term = CartPole.step(&p, &mut s, &[a], Key::new(0), &mut obs, &mut r);
            let want: Vec<i64> = ints(&st["obs"]);
            let got: Vec<i64> = obs.iter().map(|o| o.to_bits() as i64).collect();
            assert_eq!(got, want, "episode {e} step {t}: obs {obs:?}");
            assert_eq!(r[0] as f64, st["r"].as_f64().unwrap(), "episode {e} step {t}: reward");
            assert_eq!(term, st["term"].as_bool().unwrap(), "episode {e} step {t}: terminated");
            steps += 1;
        }
    }
    eprintln!("{steps} CartPole steps identical to Gymnasium");
    assert_eq!(
        steps,
        fx["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["steps"].as_array().unwrap().len())
            .sum::<usize>()
    );
    assert!(steps > 1500, "{steps}");
}
