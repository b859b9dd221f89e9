//! What an env adds to Gymnasium's `info` beyond the episode statistics: ARC's similarity
//! to the target, its change over the step, the operation and the step count, as JaxARC's
//! `ExtendedMetrics` and ARCLE's `info["steps"]` report them. [`ArcInfo`] keeps the columns
//! of a batch, updated after each reset and step from the kernels' own values (JaxARC keeps
//! the similarity in its state; o2arc's is computed, see [`kestrel_arc::ArcEnv::similarity`];
//! each batch type's [`crate::render::Show::similarity`]).

use crate::envs::DynBatch;

/// ARC's per-env info columns: `similarity` to the target (in `[0, 1]`), `improvement` (its
/// change over the step; 0 on a step that starts an episode: next-step autoreset's reset
/// step, or a same-step reset, whose info describes the new episode), `operation` (the
/// step's op id, -1 where no op ran in this episode) and `step` (steps into the episode).
#[derive(Clone, Debug, Default)]
pub struct ArcColumns {
    /// Similarity to the target.
    pub similarity: Vec<f32>,
    /// Change of the similarity over the step.
    pub improvement: Vec<f32>,
    /// The step's operation ids.
    pub operation: Vec<i64>,
    /// Steps into the episode.
    pub step: Vec<i64>,
}

impl ArcColumns {
    /// `n` rows of an episode's start: similarity 0, no operation.
    fn new(n: usize) -> Self {
        ArcColumns {
            similarity: vec![0.0; n],
            improvement: vec![0.0; n],
            operation: vec![-1; n],
            step: vec![0; n],
        }
    }

    /// Row `i` as an episode's start (similarity `sim`).
    fn start(&mut self, i: usize, sim: f32) {
        self.similarity[i] = sim;
        (self.improvement[i], self.operation[i], self.step[i]) = (0.0, -1, 0);
    }
}

/// ARC's info of a batch: the columns after the last reset or step, and under same-step
/// auto-reset the columns of the steps that ended episodes (Gymnasium's `final_info`: the
/// reset replaced those states, so the similarity is the final observation's).
#[derive(Clone, Debug, Default)]
pub struct ArcInfo {
    /// After the last reset or step.
    pub current: ArcColumns,
    /// Of the steps that ended episodes in the last step, on the rows `ended` marks
    /// (episode starts elsewhere).
    pub finals: ArcColumns,
    /// Where an episode ended in the last step under same-step auto-reset.
    pub ended: Vec<bool>,
    /// The kernels' similarities, read before they replace the previous ones.
    now: Vec<f32>,
    /// Each env's episode (task, pair, test split), for the final similarity.
    instance: Vec<(u32, u16, bool)>,
}

impl ArcInfo {
    /// The columns of `b` after a reset, or None when its env measures no similarity.
    pub fn new(b: &dyn DynBatch) -> Option<ArcInfo> {
        let n = b.num_envs();
        let mut info = ArcInfo {
            current: ArcColumns::new(n),
            finals: ArcColumns::new(n),
            ended: vec![false; n],
            now: vec![0.0; n],
            instance: (0..n).map(|i| b.instance(i).unwrap_or_default()).collect(),
        };
        b.similarity(&mut info.current.similarity).then_some(info)
    }

    /// After a reset of every env, or of the envs where `mask` (one per env) is true.
    pub fn after_reset(&mut self, b: &dyn DynBatch, mask: Option<&[bool]>) {
        b.similarity(&mut self.now);
        for i in 0..self.now.len() {
            if mask.is_none_or(|m| m[i]) {
                self.current.start(i, self.now[i]);
                self.finals.start(i, 0.0);
                self.instance[i] = b.instance(i).unwrap_or_default();
            }
        }
        self.ended.fill(false);
    }

    /// After a step: the new similarity, its change, the operation, the step count; under
    /// same-step auto-reset (`same_step`) also the finals of the episodes that ended.
    pub fn after_step(&mut self, b: &dyn DynBatch, same_step: bool) {
        b.similarity(&mut self.now);
        b.operations(&mut self.current.operation);
        if same_step {
            self.record_finals(b);
        }
        let c = &mut self.current;
        let steps = b.episode_steps();
        // Column by column, then the few rows that started an episode: simple passes that
        // compile to vector code (one pass over all the columns with the starts inline cost
        // about 3 ns a row, and a parallel split a fork-join per step).
        for ((imp, sim), &now) in c.improvement.iter_mut().zip(&mut c.similarity).zip(&self.now) {
            *imp = now - *sim;
            *sim = now;
        }
        for (step, &t) in c.step.iter_mut().zip(steps) {
            *step = i64::from(t);
        }
        for (i, _) in steps.iter().enumerate().filter(|(_, t)| **t == 0) {
            (c.improvement[i], c.operation[i]) = (0.0, -1);
            self.instance[i] = b.instance(i).unwrap_or_default();
        }
    }

    /// After a rollout ([`DynBatch::rollout`]), which reports none of its steps' info: the
    /// columns as its last step left them, with no improvement (the next step's is measured
    /// from this similarity), and every env's episode read again (some started inside it).
    pub fn after_rollout(&mut self, b: &dyn DynBatch) {
        b.similarity(&mut self.now);
        b.operations(&mut self.current.operation);
        let c = &mut self.current;
        for (i, &t) in b.episode_steps().iter().enumerate() {
            (c.similarity[i], c.improvement[i], c.step[i]) = (self.now[i], 0.0, i64::from(t));
            if t == 0 {
                c.operation[i] = -1;
            }
            self.instance[i] = b.instance(i).unwrap_or_default();
            self.finals.start(i, 0.0);
        }
        self.ended.fill(false);
    }

    /// The info of each ending step before [`ArcInfo::after_step`] moves on to the new
    /// episodes (their states are gone: the similarity is the final observation's, in the
    /// episode's instance, which `after_step` then replaces). Serial: few rows end, and the
    /// scan is one read of the flags.
    fn record_finals(&mut self, b: &dyn DynBatch) {
        let (c, f) = (&self.current, &mut self.finals);
        for (i, (&te, &tr)) in b.terminated().iter().zip(b.truncated()).enumerate() {
            self.ended[i] = te || tr;
            if !self.ended[i] {
                f.start(i, 0.0);
                continue;
            }
            let last = b.final_similarity(i, self.instance[i]).unwrap_or(0.0);
            f.similarity[i] = last;
            f.improvement[i] = last - c.similarity[i];
            f.operation[i] = c.operation[i];
            f.step[i] = c.step[i] + 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envs::{Actions, EnvId};
    use crate::run::Layers;

    /// Over random steps in both ARC semantics and every autoreset mode: the similarity is
    /// the kernel's (recomputed from the state for o2arc), the improvement its change (0 when
    /// an episode starts), the operation the one sent, the step the episode's count; under
    /// same-step reset the rows that ended have their final step's info (the final
    /// similarity itself is checked against the replaced state in `render.rs`); envs without a
    /// similarity have no columns.
    #[test]
    fn arc_info_follows_the_kernel() {
        use kestrel_core::AutoReset;
        let small = toml::toml! { canvas = 5
        max_episode_steps = 7 };
        // 2,500 envs: a batch of several lane blocks and many episode starts a step.
        let cases = [(70, 60), (2500, 8)];
        for id in
            [EnvId::Arc(kestrel_arc::ModeKind::O2arc), EnvId::Arc(kestrel_arc::ModeKind::Jaxarc)]
        {
            for (mode, (n, steps)) in [AutoReset::NextStep, AutoReset::SameStep]
                .into_iter()
                .zip(cases)
                .chain([(AutoReset::NextStep, cases[1]), (AutoReset::SameStep, cases[0])])
            {
                let mut b = id.build(Layers::table(&small), n, 2, 0).unwrap();
                b.set_autoreset(mode);
                b.reset(2);
                let mut info = ArcInfo::new(b.as_ref()).unwrap();
                info.after_reset(b.as_ref(), None);
                let mut r = kestrel_core::Key::new(9).rng();
                let (mut starts, mut moves) = (0, 0);
                let mut kernel = vec![0.0; n];
                let (mut finals, same) = (0, mode == AutoReset::SameStep);
                for _ in 0..steps {
                    let before = info.current.similarity.clone();
                    let before_step = info.current.step.clone();
                    let ops: Vec<i64> = (0..n).map(|_| r.below(35) as i64).collect();
                    let sel: Vec<u8> = (0..n * 25).map(|_| (r.next_u64() & 1) as u8).collect();
                    b.load_actions(&Actions::Arc { ops: &ops, sel: &sel }).unwrap();
                    b.step();
                    info.after_step(b.as_ref(), mode == AutoReset::SameStep);
                    b.similarity(&mut kernel);
                    let steps = b.episode_steps().to_vec();
                    for i in 0..n {
                        let f = &info.finals;
                        let ended = b.terminated()[i] || b.truncated()[i];
                        assert_eq!(info.ended[i], same && ended);
                        if info.ended[i] {
                            finals += 1;
                            assert!((0.0..=1.0).contains(&f.similarity[i]));
                            assert_eq!(f.step[i], before_step[i] + 1);
                            assert_eq!(f.operation[i], ops[i]);
                            assert_eq!(f.improvement[i], f.similarity[i] - before[i]);
                        } else {
                            assert_eq!((f.similarity[i], f.step[i]), (0.0, 0));
                            assert_eq!(f.operation[i], -1);
                        }
                        let s = &info.current.similarity[i];
                        assert!((0.0..=1.0).contains(s), "{s}");
                        assert_eq!(*s, kernel[i]);
                        assert_eq!(info.current.step[i], steps[i] as i64);
                        if steps[i] == 0 {
                            starts += 1;
                            assert_eq!(
                                (info.current.improvement[i], info.current.operation[i]),
                                (0.0, -1)
                            );
                        } else {
                            assert_eq!(info.current.operation[i], ops[i]);
                            assert_eq!(
                                info.current.improvement[i],
                                info.current.similarity[i] - before[i]
                            );
                            moves += (info.current.improvement[i] != 0.0) as usize;
                        }
                    }
                }
                assert!(starts > 0 && moves > 0, "{} {mode:?}: {starts} {moves}", id.name());
                assert_eq!(finals > 0, same, "{} {mode:?}: {finals} final infos", id.name());
            }
        }
        let b = EnvId::CartPole.build(Layers::none(), 2, 0, 0).unwrap();
        assert!(ArcInfo::new(b.as_ref()).is_none());
    }

    /// The final similarity is taken in the episode each row had before the step, also after
    /// next-step resets changed a row's episode and the mode is then switched to same-step,
    /// and after a masked reset.
    #[test]
    fn finals_use_the_episode_each_row_had() {
        use kestrel_core::AutoReset;
        let small = toml::toml! { canvas = 5
        max_episode_steps = 3 };
        for id in
            [EnvId::Arc(kestrel_arc::ModeKind::O2arc), EnvId::Arc(kestrel_arc::ModeKind::Jaxarc)]
        {
            let n = 30;
            let mut b = id.build(Layers::table(&small), n, 5, 0).unwrap();
            b.set_autoreset(AutoReset::NextStep);
            b.reset(1);
            let mut info = ArcInfo::new(b.as_ref()).unwrap();
            info.after_reset(b.as_ref(), None);
            let mut r = kestrel_core::Key::new(4).rng();
            let mut checked = 0;
            for t in 0..24 {
                if t == 8 {
                    b.set_autoreset(AutoReset::SameStep);
                }
                if t == 16 {
                    let mask: Vec<bool> = (0..n).map(|i| i % 3 == 0).collect();
                    b.reset_rows(&mask).unwrap();
                    info.after_reset(b.as_ref(), Some(&mask));
                }
                let before: Vec<_> = (0..n).map(|i| b.instance(i).unwrap()).collect();
                let ops: Vec<i64> = (0..n).map(|_| r.below(34) as i64).collect();
                let sel: Vec<u8> = (0..n * 25).map(|_| (r.next_u64() & 1) as u8).collect();
                b.load_actions(&Actions::Arc { ops: &ops, sel: &sel }).unwrap();
                b.step();
                info.after_step(b.as_ref(), t >= 8);
                for i in 0..n {
                    if info.ended[i] {
                        checked += 1;
                        let want = b.final_similarity(i, before[i]).unwrap();
                        assert_eq!(
                            info.finals.similarity[i],
                            want,
                            "{} row {i} step {t}",
                            id.name()
                        );
                    }
                }
            }
            assert!(checked > 50, "{checked}");
        }
    }
}
