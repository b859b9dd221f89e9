//! Golden test: the treasure hunt against sorrel 1.6.0's own world, entities and agents
//! (`tools/golden/sorrel_treasure.py`), with sorrel's spawning draws injected and the same
//! actions: every agent's observation just before it acts, every reward and the positions after
//! every turn are equal (observations exactly: both sides produce the same small integers / 255).

use kestrel_envs::treasure::{SpawnDraws, TreasureHunt, TreasureObs, TreasureParams, cell};
use kestrel_testkit::{floats, load_fixture};
use serde_json::Value;

/// sorrel's recorded draws: a uniform per eligible cell, then (if it spawned) the item index
/// recorded as `−1 − i` over `[Gem, Food, Bone]`.
struct Recorded<'a> {
    draws: &'a [f64],
    next: usize,
}

impl SpawnDraws for Recorded<'_> {
    fn spawn(&mut self, p: f64, _items: &[u8]) -> Option<u8> {
        let u = self.draws[self.next];
        self.next += 1;
        assert!(u >= 0.0, "expected a uniform at draw {}", self.next - 1);
        if u < p {
            let i = -1.0 - self.draws[self.next];
            self.next += 1;
            Some([cell::GEM, cell::FOOD, cell::BONE][i as usize])
        } else {
            None
        }
    }
}

fn pos(v: &Value) -> (u8, u8) {
    let a = v.as_array().unwrap();
    (a[0].as_u64().unwrap() as u8, a[1].as_u64().unwrap() as u8)
}

#[test]
fn treasure_hunt_matches_sorrel() {
    let fx = load_fixture("sorrel_treasure.json");
    let mut turns = 0;
    for case in fx["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let agents: Vec<(u8, u8)> = case["agents"].as_array().unwrap().iter().map(pos).collect();
        let p = TreasureParams {
            height: case["height"].as_u64().unwrap() as usize,
            width: case["width"].as_u64().unwrap() as usize,
            num_agents: agents.len(),
            spawn_prob: case["spawn_prob"].as_f64().unwrap(),
            obs: if case["obs"] == "rgb" { TreasureObs::Rgb } else { TreasureObs::OneHot },
            ..Default::default()
        };
        p.validate().unwrap();
        let mut s = TreasureHunt::world_with_agents(&p, &agents);
        let mut obs = vec![0.0f32; p.obs_len()];
        for (k, t) in case["turns"].as_array().unwrap().iter().enumerate() {
            let draws = floats(&t["draws"]);
            let mut d = Recorded { draws: &draws, next: 0 };
            TreasureHunt::spawn(&p, &mut s, &mut d);
            assert_eq!(d.next, draws.len(), "{name} turn {k}: draws consumed");
            for (a, act) in t["actions"].as_array().unwrap().iter().enumerate() {
                TreasureHunt::observe(&p, &s, a, &mut obs);
                let want = floats(&t["obs"][a]);
                for (i, (g, w)) in obs.iter().zip(&want).enumerate() {
                    assert_eq!(*g as f64, (*w as f32) as f64, "{name} turn {k} agent {a} obs[{i}]");
                }
                let r = TreasureHunt::act(&p, &mut s, a, act.as_u64().unwrap() as u8);
                assert_eq!(
                    r as f64,
                    t["rewards"][a].as_f64().unwrap(),
                    "{name} turn {k} agent {a} reward"
                );
            }
            let want: Vec<(u8, u8)> = t["positions"].as_array().unwrap().iter().map(pos).collect();
            assert_eq!(s.agents, want, "{name} turn {k} positions");
            turns += 1;
        }
    }
    assert_eq!(turns, 240);
}
