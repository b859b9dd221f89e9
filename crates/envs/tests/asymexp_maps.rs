//! The `asymexp` grid worlds against fixtures made from the reference's own parser and env
//! (`../shared/data/allo-asymexp-golden/{thr,final}_env.json`, README §3 (a)): size, walls,
//! start, goal, doors, canonical numbering, valid starts, the one-step table from every state
//! and the goal's terminal flag.

use kestrel_envs::asymexp::{AsymexpMap, VersionKind};
use kestrel_testkit::{asymexp_fixture, flat};
use serde_json::Value;

fn ints(v: &Value) -> Vec<i64> {
    flat(v).iter().map(|&x| x as i64).collect()
}

fn check(file: &str, version: VersionKind) {
    let Some(fx) = asymexp_fixture(file) else { return };
    let mut seen = 0;
    for (name, m) in fx["maps"].as_object().unwrap() {
        let at = format!("{file} {name}");
        let mut map = AsymexpMap::parse(m["text"].as_str().unwrap(), name, version).unwrap();
        if let Some(doors) = m.get("doors_canonical_s_a_sprime_arev") {
            // `--use_doors`: doors drawn by numpy from `door_seed`; the fixture records them as
            // (s, a, s', a_rev) over canonical states, and the reverse move out of s' is blocked.
            let d = ints(doors);
            let pairs: Vec<(u32, u8)> =
                d.chunks(4).map(|c| (map.canonical[c[2] as usize], c[3] as u8)).collect();
            map.block(&pairs).unwrap();
        }
        assert_eq!(map.width, m["width"].as_u64().unwrap() as usize, "{at} width");
        assert_eq!(map.height, m["height"].as_u64().unwrap() as usize, "{at} height");
        let walls: Vec<i64> = (0..map.wall.len())
            .filter(|&f| map.wall[f])
            .flat_map(|f| [(f % map.width) as i64, (f / map.width) as i64])
            .collect();
        let mut want_walls: Vec<(i64, i64)> =
            ints(&m["obstacles_xy"]).chunks(2).map(|c| (c[0], c[1])).collect();
        want_walls.sort_by_key(|&(x, y)| (y, x));
        let walls: Vec<(i64, i64)> = walls.chunks(2).map(|c| (c[0], c[1])).collect();
        assert_eq!(walls, want_walls, "{at} walls");
        let cell = |key: &str, flag: &str| -> Option<u32> {
            m[flag].as_bool().unwrap().then(|| {
                let xy = ints(&m[key]);
                (xy[1] as usize * map.width + xy[0] as usize) as u32
            })
        };
        assert_eq!(map.start, cell("start_xy", "fixed_start"), "{at} start");
        assert_eq!(map.goal, cell("goal_xy", "has_goal"), "{at} goal");
        let canon: Vec<i64> = map.canonical.iter().map(|&f| f as i64).collect();
        assert_eq!(canon, ints(&m["canonical_states_full_index"]), "{at} canonical");
        let starts: Vec<i64> = map
            .valid_starts
            .iter()
            .flat_map(|&s| {
                let (x, y) = map.xy(s);
                [x as i64, y as i64]
            })
            .collect();
        assert_eq!(starts, ints(&m["valid_start_positions_xy"]), "{at} valid starts");
        let next: Vec<i64> = map.next.iter().map(|&s| s as i64).collect();
        let want_next = match m.get("next_state_canonical") {
            Some(v) => ints(v),
            None => ints(&m["next_state_full"])
                .iter()
                .map(|&f| map.canonical_of(f as u32).unwrap() as i64)
                .collect(),
        };
        assert_eq!(next, want_next, "{at} one-step table");
        if let Some(done) = m.get("done_after_step_from_fresh_state") {
            let got: Vec<i64> = map.next.iter().map(|&t| map.is_goal(t) as i64).collect();
            assert_eq!(got, ints(done), "{at} done after one step");
        }
        let blocked: Vec<i64> =
            map.blocked.iter().flat_map(|&(f, a)| [f as i64, a as i64]).collect();
        let want = m.get("blocked_transitions_full_state_action").map(ints).unwrap_or_default();
        assert_eq!(blocked, want, "{at} blocked moves");
        seen += 1;
    }
    assert!(seen >= 5, "{file}: {seen} maps");
}

#[test]
fn thresholded_maps_parse_as_the_reference() {
    check("thr_env.json", VersionKind::Thresholded);
}

#[test]
fn final_maps_parse_as_the_reference() {
    check("final_env.json", VersionKind::Final);
}

/// Bad maps are refused by name: empty, all walls, a start on a wall is impossible by
/// construction (`S` is not a wall), a malformed portal number.
#[test]
fn bad_maps_are_refused_by_name() {
    for (text, want) in [("", "empty map"), ("XX\nXX", "no free cell")] {
        let e = AsymexpMap::parse(text, "m.txt", VersionKind::Final).unwrap_err().to_string();
        assert!(e.contains("m.txt") && e.contains(want), "{e}");
    }
    let e = AsymexpMap::parse("X,P99999999999>99999999999U,.", "p.txt", VersionKind::Final)
        .unwrap_err()
        .to_string();
    assert!(e.contains("p.txt") && e.contains("portal"), "{e}");
    let mut m = AsymexpMap::parse("...", "ok", VersionKind::Thresholded).unwrap();
    assert!(m.block(&[(0, 7)]).unwrap_err().to_string().contains("blocked move (0, 7)"));
}

/// `builtin:four-rooms` is the paper's GridRoom-4 (and asymexp's `room4`) cell for cell.
#[test]
fn four_rooms_is_gridroom_4() {
    let Some(dir) = kestrel_testkit::shared_subdir("laplacian-grids") else { return };
    let file = kestrel_envs::GridMap::load(&dir.join("GridRoom-4.txt")).unwrap();
    let built = kestrel_envs::GridMap::builtin("four-rooms").unwrap();
    assert_eq!((built.rows, built.cols, built.num_states()), (13, 13, 104));
    assert_eq!(built.free, file.free);
}
