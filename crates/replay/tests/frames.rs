//! Frame-stacked replay against a naive model of everything ever written.

use kestrel_core::Key;
use kestrel_replay::{FrameBatch, FrameReplay, FrameReplayConfig, Prioritized, ReplayError};
use proptest::prelude::*;

/// One write as the naive model records it.
#[derive(Clone, Debug)]
struct Rec {
    episode: u64,
    action: Option<u32>,
    reward: f32,
    term: bool,
    trunc: bool,
}

/// Frames are `[global index + 1, episode]`, so a zero frame is recognisable.
fn frame(g: usize, ep: u64) -> [f32; 2] {
    [g as f32 + 1.0, ep as f32]
}

struct Model {
    recs: Vec<Rec>,
    capacity: usize,
    num_frames: usize,
    n_step: usize,
    gamma: f64,
}

impl Model {
    fn retained(&self, g: usize) -> bool {
        g < self.recs.len() && g + self.capacity >= self.recs.len()
    }

    /// Whether the transition starting at global index `g` can be sampled.
    fn valid(&self, g: usize) -> bool {
        let r = &self.recs[g];
        if !self.retained(g) || r.action.is_none() {
            return false;
        }
        if !(self.retained(g + 1) && self.recs[g + 1].episode == r.episode) {
            return false;
        }
        // Its whole window is retained where it belongs to the same episode.
        (1..self.num_frames)
            .all(|k| g < k || self.recs[g - k].episode != r.episode || self.retained(g - k))
    }

    fn stack(&self, g: usize, n: usize) -> Vec<f32> {
        let mut out = Vec::new();
        for k in (0..n).rev() {
            let ok =
                g >= k && self.recs[g - k].episode == self.recs[g].episode && self.retained(g - k);
            out.extend_from_slice(&if ok { frame(g - k, self.recs[g].episode) } else { [0.0; 2] });
        }
        out
    }

    /// `(return, discount, terminated, truncated, bootstrap index)` of the target at `g`.
    fn target(&self, g: usize) -> (f64, f64, bool, bool, usize) {
        let (mut ret, mut disc, mut term, mut trunc, mut cur) = (0.0, 1.0, false, false, g);
        for _ in 0..self.n_step {
            let r = &self.recs[cur];
            ret += disc * r.reward as f64;
            disc *= self.gamma;
            term |= r.term;
            trunc |= r.trunc;
            cur += 1;
            let has_next = self.recs[cur].action.is_some()
                && self.retained(cur + 1)
                && self.recs[cur + 1].episode == self.recs[cur].episode;
            if term || trunc || !has_next {
                break;
            }
        }
        (ret, if term { 0.0 } else { disc }, term, trunc, cur)
    }
}

/// Episode plan: (length in steps, how it ends: 0 open, 1 terminated, 2 truncated).
fn fill(buf: &mut FrameReplay, model: &mut Model, episodes: &[(usize, u8)], salt: u64) {
    for &(len, end) in episodes {
        buf.begin_episode();
        let ep = model.recs.last().map(|r| r.episode + 1).unwrap_or(1);
        for t in 0..len {
            let g = model.recs.len();
            let last = t + 1 == len;
            let (term, trunc) = (last && end == 1, last && end == 2);
            let action = ((g as u64 * 7 + salt) % 5) as u32;
            let reward = ((g as u64 * 13 + salt) % 11) as f32 - 5.0;
            buf.push(&frame(g, ep), action, reward, term, trunc).unwrap();
            model.recs.push(Rec { episode: ep, action: Some(action), reward, term, trunc });
        }
        if end != 0 {
            let g = model.recs.len();
            buf.push_final(&frame(g, ep)).unwrap();
            model.recs.push(Rec {
                episode: ep,
                action: None,
                reward: 0.0,
                term: false,
                trunc: false,
            });
        }
    }
}

fn config(capacity: usize, num_frames: usize, n_step: usize) -> FrameReplayConfig {
    FrameReplayConfig { capacity, frame_dim: 2, num_frames, n_step, gamma: 0.9, prioritized: None }
}

fn check_all(buf: &FrameReplay, model: &Model) {
    let valid: Vec<usize> = (0..model.recs.len()).filter(|&g| model.valid(g)).collect();
    assert_eq!(buf.num_transitions(), valid.len(), "valid transition count");
    if valid.is_empty() {
        return;
    }
    // Uniform sampling without replacement of every transition returns each exactly once.
    let mut out = FrameBatch::new(valid.len(), buf.state_dim());
    buf.sample(Key::new(3), &mut out).unwrap();
    let sd = buf.state_dim();
    let mut seen = Vec::new();
    for r in 0..out.batch {
        let s = &out.states[r * sd..(r + 1) * sd];
        // The newest frame names the transition's global index.
        let g = (s[sd - 2] - 1.0) as usize;
        seen.push(g);
        assert!(model.valid(g), "sampled invalid transition {g}");
        assert_eq!(s, &model.stack(g, model.num_frames)[..], "state of {g}");
        let (ret, disc, term, trunc, next) = model.target(g);
        assert_eq!(out.actions[r], model.recs[g].action.unwrap());
        assert!((out.returns[r] as f64 - ret).abs() < 1e-5, "return of {g}");
        assert!((out.discounts[r] as f64 - disc).abs() < 1e-6, "discount of {g}");
        assert_eq!((out.terminated[r], out.truncated[r]), (term, trunc), "flags of {g}");
        let ns = &out.next_states[r * sd..(r + 1) * sd];
        assert_eq!(ns, &model.stack(next, model.num_frames)[..], "next state of {g}");
        // Never a frame of another episode.
        for f in s.chunks(2).chain(ns.chunks(2)) {
            assert!(f[0] == 0.0 || f[1] == model.recs[g].episode as f32);
        }
        assert_eq!(out.weights[r], 1.0);
    }
    seen.sort_unstable();
    assert_eq!(seen, valid, "every valid transition exactly once");
}

#[test]
fn windows_stop_at_episode_starts_and_targets_bootstrap_unless_terminated() {
    let mut buf = FrameReplay::new(config(64, 3, 1)).unwrap();
    let mut model = Model { recs: Vec::new(), capacity: 64, num_frames: 3, n_step: 1, gamma: 0.9 };
    fill(&mut buf, &mut model, &[(4, 2), (5, 1), (3, 0)], 0);
    check_all(&buf, &model);
    // The truncated episode's last transition bootstraps from its final observation.
    assert!(model.recs[3].trunc && model.valid(3));
    assert_eq!(model.target(3), (model.recs[3].reward as f64, 0.9, false, true, 4));
    // The open episode's newest step has no next frame yet.
    assert!(!model.valid(model.recs.len() - 1));
}

#[test]
fn acting_stack_matches_training_stack() {
    let mut buf = FrameReplay::new(config(32, 4, 1)).unwrap();
    let mut out = vec![9.0; 8];
    buf.begin_episode();
    buf.stack_current(&[1.0, 1.0], &mut out).unwrap();
    assert_eq!(out, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0], "fresh episode: zeros then frame");
    buf.push(&[1.0, 1.0], 0, 0.0, false, false).unwrap();
    buf.push(&[2.0, 1.0], 0, 0.0, false, false).unwrap();
    buf.stack_current(&[3.0, 1.0], &mut out).unwrap();
    assert_eq!(out, [0.0, 0.0, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0]);
    buf.push(&[3.0, 1.0], 0, 0.0, false, true).unwrap();
    buf.push_final(&[4.0, 1.0]).unwrap();
    // The next episode does not see the previous one's frames.
    buf.begin_episode();
    buf.stack_current(&[5.0, 2.0], &mut out).unwrap();
    assert_eq!(out, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 2.0]);
    // Training's state for the step taken from [3, 1] is what acting saw.
    let mut b = FrameBatch::new(3, 8);
    buf.sample(Key::new(0), &mut b).unwrap();
    let r = (0..3).find(|&r| b.states[r * 8 + 6] == 3.0).unwrap();
    assert_eq!(&b.states[r * 8..r * 8 + 8], &[0.0, 0.0, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0]);
    assert_eq!(&b.next_states[r * 8..r * 8 + 8], &[1.0, 1.0, 2.0, 1.0, 3.0, 1.0, 4.0, 1.0]);
    assert!(b.truncated[r] && !b.terminated[r] && (b.discounts[r] - 0.9).abs() < 1e-7);
}

#[test]
fn bad_input_is_an_error() {
    assert!(matches!(
        FrameReplay::new(config(4, 3, 1)),
        Err(ReplayError::Invalid(e)) if e.field == "capacity"
    ));
    let mut cfg = config(16, 2, 1);
    cfg.gamma = f64::NAN;
    assert!(FrameReplay::new(cfg).is_err());
    let mut buf = FrameReplay::new(config(16, 2, 1)).unwrap();
    let e = buf.push(&[0.0, 0.0], 0, 0.0, false, false).unwrap_err();
    assert!(e.to_string().contains("begin_episode"), "{e}");
    buf.begin_episode();
    assert!(buf.push(&[0.0], 0, 0.0, false, false).is_err(), "wrong frame length");
    assert!(buf.push(&[0.0, 0.0], 0, f32::NAN, false, false).is_err(), "NaN reward");
    buf.push(&[0.0, 0.0], 0, 1.0, false, false).unwrap();
    buf.push(&[0.0, 0.0], 0, 1.0, false, false).unwrap();
    let mut b = FrameBatch::new(2, 4);
    let e = buf.sample(Key::new(0), &mut b).unwrap_err();
    assert!(e.to_string().contains("batch = 2"), "{e}");
    let mut wrong = FrameBatch::new(1, 3);
    assert!(buf.sample(Key::new(0), &mut wrong).is_err());
}

#[test]
fn prioritised_sampling_follows_priorities_and_weights_correct_for_them() {
    let mut cfg = config(64, 1, 1);
    cfg.prioritized = Some(Prioritized { alpha: 1.0, beta: 1.0, eps: 1e-6 });
    let mut buf = FrameReplay::new(cfg).unwrap();
    let mut model = Model { recs: Vec::new(), capacity: 64, num_frames: 1, n_step: 1, gamma: 0.9 };
    fill(&mut buf, &mut model, &[(10, 2)], 0);
    assert_eq!(buf.num_transitions(), 10);
    // Slot 3 gets priority 9, the others ~0.1 each.
    let slots: Vec<usize> = (0..10).collect();
    let td: Vec<f64> = (0..10).map(|s| if s == 3 { 9.0 } else { 0.1 }).collect();
    buf.update_priorities(&slots, &td).unwrap();
    let mut b = FrameBatch::new(1000, 2);
    buf.sample(Key::new(5), &mut b).unwrap();
    let hits = b.slots.iter().filter(|&&s| s == 3).count();
    // P(slot 3) = 9 / 9.9 ≈ 0.909.
    assert!((850..960).contains(&hits), "slot 3 drawn {hits} of 1000");
    for r in 0..b.batch {
        let w = b.weights[r];
        let expect = if b.slots[r] == 3 { (0.1f64 / 9.0) as f32 } else { 1.0 };
        assert!((w - expect).abs() < 1e-4, "weight {w} for slot {}", b.slots[r]);
    }
    assert!(buf.update_priorities(&[0], &[f64::NAN]).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sampled_transitions_match_the_naive_model(
        episodes in prop::collection::vec((1usize..12, 0u8..3), 1..10),
        capacity in 8usize..40,
        num_frames in 1usize..5,
        n_step in 1usize..4,
        salt in 0u64..100,
    ) {
        prop_assume!(capacity > num_frames + n_step);
        let mut buf = FrameReplay::new(config(capacity, num_frames, n_step)).unwrap();
        let mut model = Model { recs: Vec::new(), capacity, num_frames, n_step, gamma: 0.9 };
        // An episode left open is closed by the next begin_episode (its last step then has
        // no next frame and is never sampled).
        fill(&mut buf, &mut model, &episodes, salt);
        check_all(&buf, &model);
    }
}

#[test]
fn snapshot_restores_an_identical_buffer() {
    let mut cfg = config(16, 3, 2);
    cfg.prioritized = Some(Prioritized::default());
    let mut buf = FrameReplay::new(cfg.clone()).unwrap();
    let mut model = Model { recs: Vec::new(), capacity: 16, num_frames: 3, n_step: 2, gamma: 0.9 };
    fill(&mut buf, &mut model, &[(7, 2), (9, 1), (4, 0)], 3);
    buf.update_priorities(&[2, 5], &[3.0, 0.5]).unwrap();
    let snap = buf.snapshot();
    let array = |n: &str| snap.arrays.iter().find(|a| a.0 == n).map(|a| a.1.clone());
    let scalar = |n: &str| snap.scalars.iter().find(|a| a.0 == n).map(|a| a.1);
    let back = FrameReplay::restore(cfg.clone(), array, scalar).unwrap();
    assert_eq!(back, buf);
    let e = FrameReplay::restore(cfg, |n| if n == "stamp" { None } else { array(n) }, scalar)
        .unwrap_err();
    assert!(e.to_string().contains("stamp"), "{e}");
}
