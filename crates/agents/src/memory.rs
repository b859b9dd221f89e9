//! The peak heap memory of ALLO and treasure-hunt runs from their configs, before anything is
//! allocated (the runs' `kestrel_core::Budget`s). Each term names the buffers of one part and
//! the file that allocates them; `crates/run/tests/budget.rs` compares the totals with a
//! counting allocator's peak. Arithmetic is in f64 (an estimate) and cast with saturation.

use crate::runs::{AlloRunConfig, HuntRunConfig};
use kestrel_core::Budget;
use kestrel_envs::GridMap;
use kestrel_envs::treasure::TreasureObs;

/// Next power of two at or above `x` (a `Vec` grown by pushing).
fn np2(x: f64) -> f64 {
    if x <= 1.0 { 1.0 } else { 2f64.powi(x.log2().ceil() as i32) }
}

fn ceil8(x: f64) -> f64 {
    (x / 8.0).ceil() * 8.0
}

/// What one phase of a run holds: (what, fields, bytes).
type Phase = Vec<(&'static str, String, f64)>;

/// Adds the terms of the phase with the largest total.
fn largest(b: &mut Budget, phases: Vec<Phase>) {
    let total = |p: &Phase| p.iter().map(|t| t.2).sum::<f64>();
    if let Some(p) = phases.into_iter().max_by(|a, b| total(a).total_cmp(&total(b))) {
        for (what, fields, bytes) in p {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        }
    }
}

/// The thread-local buffers of the matrix kernels (faer's packing, Kestrel's panels, gemm's
/// L2 slab: a few MiB, sized by the CPU's caches) and the run folder's writer.
const FIXED: f64 = 12.0 * 1048576.0;

impl AlloRunConfig {
    /// The run's peak heap bytes as named terms: the map, the learner and the ground truth held
    /// throughout, plus the largest phase (solving for the ground truth; training with the
    /// replay, the step's buffers, evaluations and a checkpoint's heat maps drawn alongside;
    /// the final plots). A map that does not load counts as empty (validation reports it).
    pub fn budget(&self, threads: usize) -> Budget {
        let _ = threads; // the learner trains on one thread
        let (n, rows, cols) = GridMap::resolve(&self.map)
            .map_or((0.0, 0.0, 0.0), |m| (m.num_states() as f64, m.rows as f64, m.cols as f64));
        let (d, batch) = (self.d as f64, self.batch as f64);
        let rc = rows * cols;
        let map = format!("map = {:?} ({n} states)", self.map);
        let md = format!("{map}, d = {}", self.d);
        // The encoder: 2 → 256 → 256 → 256 → d (AlloConfig::paper).
        let p = 132_352.0 + 257.0 * d;
        let mut b = Budget::new();
        let mut add = |what: &'static str, fields: String, bytes: f64| {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        };
        add("kernel buffers, run folder", "fixed".into(), FIXED);
        add("map (envs/grid.rs)", map.clone(), rc * 5.0 + 8.0 * np2(n) + 16.0 * n);
        add(
            "encoder, Adam state, duals (allo.rs)",
            format!("d = {}", self.d),
            16.0 * p + 24.0 * d * d + 4.0 * n,
        );
        // The truth is held by the run, by the training loop and by a drawing thread.
        add(
            "ground-truth eigenvectors, three copies (laplacian.rs)",
            md.clone(),
            3.0 * (8.0 * d * n + 8.0 * d + 16.0 * np2(d)),
        );
        let solve = 8.0 * n * n + 16.0 * ceil8(n) * n + 8.0 * ceil8(n) + 25.5 * n * n + 8192.0;
        let episodes = (self.samples as f64 / 50.0).ceil().max(1.0);
        let m = (4.0 * batch).min(n);
        let step = 16.0 * batch
            + 32.0 * batch * d
            + (4.0 * (2050.0 + d) + 8.0 + 4.0 * d) * 2.0 * m
            + 4.0 * np2(m)
            + 8.0 * (d + 6.0 * d * d);
        let eval = 8.0 * n + 4.0 * (2050.0 + d) * n + 8.0 * d * n;
        // Heat maps of every component, true and learned (run/allo.rs, plot).
        let panel = (900.0 / d.max(1.0)).floor().clamp(60.0, 160.0);
        let digits = (rows.max(cols) - 1.0).max(1.0).log10().floor() + 1.0;
        let (w, h) = (d * (panel + 35.0 + 8.0 * digits) + 99.0, 2.0 * panel + 166.0);
        let png = 6.0 * w * h + 524_288.0;
        let svg = 1.5 * np2(96.0 * (2.0 * d * rc + 2.0 * panel + 200.0));
        let heat = 8.0 * d * n + 16.0 * d * rc + png.max(svg);
        let mut training: Phase = vec![
            (
                "replay of transitions (replay/lib.rs)",
                format!("samples = {}", self.samples),
                204.0 * episodes + 14.0 * np2(episodes),
            ),
            ("step buffers (allo.rs)", format!("batch = {}, d = {}", self.batch, self.d), step),
            ("evaluation over every state (allo.rs)", md.clone(), eval),
            // Written at every checkpoint; read back (the file and its tensors) on resume.
            (
                "checkpoint written or read back (allo.rs)",
                format!("d = {}", self.d),
                24.0 * p + 4096.0,
            ),
        ];
        if self.checkpoint_every > 0 && self.checkpoint_every <= self.steps {
            training.push((
                "a checkpoint's heat maps, drawn alongside",
                md.clone(),
                16.0 * d * n + heat,
            ));
        }
        let phases = vec![
            vec![(
                "ground truth: the SR matrix and its eigen-decomposition (laplacian.rs)",
                map,
                solve,
            )],
            training,
            vec![("final heat maps", md, 8.0 * d * n + eval.max(heat))],
        ];
        largest(&mut b, phases);
        b
    }
}

impl HuntRunConfig {
    /// The run's peak heap bytes as named terms: per agent its learner, replay buffers, agent
    /// buffers and workspaces; the worlds; the thread-local kernel buffers; and the larger of
    /// a recorded epoch's drawing with a checkpoint, or the end-of-run curves.
    pub fn budget(&self, threads: usize) -> Budget {
        let fd = match self.obs {
            TreasureObs::Rgb => 75.0,
            TreasureObs::OneHot => 150.0,
        };
        let sd = 5.0 * fd;
        let (l, bt, c) = (self.layer as f64, self.batch as f64, self.capacity as f64);
        let (agents, worlds, size, turns) =
            (self.agents as f64, self.worlds as f64, self.size as f64, self.turns as f64);
        let rq = 12.0 * bt;
        let p = 2.0 * l * l + l * (sd + 78.0) + 10.0;
        let k = l * l + 6.0 * l + 5.0;
        let learner = 20.0 * p + bt * (8.0 * sd + 26.0);
        let replay = worlds * (c * (4.0 * fd + 26.0) + 16.0 * np2(c));
        let bufs = 4.0 * worlds * (sd + fd + 1.0);
        let ws = 4.0
            * (2.0 * (rq * (3.0 * l + 74.0) + bt * (sd + l) + 2.0 * k)
                + rq * (6.0 * l + 79.0)
                + bt * (sd + 2.0 * l)
                + 2.0 * k
                + l * l
                + l
                + 12.0 * worlds * (3.0 * l + 74.0)
                + worlds * (sd + l)
                + 7.0 * rq
                + 4.0 * bt.max(worlds));
        let per = format!("agents = {}", self.agents);
        let mut b = Budget::new();
        let mut add = |what: &'static str, fields: String, bytes: f64| {
            b.add(what, fields, bytes.max(0.0) as u128, 1);
        };
        add("run folder", "fixed".into(), 4.0 * 1048576.0);
        add(
            "IQN learners: parameters, targets, Adam, batch frames (iqn.rs)",
            format!("{per}, layer = {}, batch = {}, obs = {:?}", self.layer, self.batch, self.obs),
            agents * learner,
        );
        add(
            "replay buffers (replay/frames.rs)",
            format!(
                "{per}, capacity = {}, worlds = {}, obs = {:?}",
                self.capacity, self.worlds, self.obs
            ),
            agents * replay,
        );
        add(
            "IQN workspaces and agent buffers (iqn.rs, hunt.rs)",
            format!(
                "{per}, layer = {}, batch = {}, worlds = {}",
                self.layer, self.batch, self.worlds
            ),
            agents * (ws + bufs),
        );
        add(
            "worlds (hunt.rs)",
            format!("worlds = {}, size = {}", self.worlds, self.size),
            2.0 * worlds * size * size,
        );
        let kernels = (threads.min(self.agents) as f64 + 1.0)
            * (1048576.0 + 1024.0 * (l + 31.0) + 2048.0 * l);
        add(
            "thread-local kernel buffers",
            format!("threads = {threads}, layer = {}", self.layer),
            kernels,
        );
        let record = if self.record_every > 0 {
            let cell = 6.0 * size + 6.0;
            let (wd, hd) = (
                (10.0 * cell).min(16384.0),
                (cell * (turns / 10.0).ceil().max(1.0) + 30.0).min(16384.0),
            );
            let frames = turns * size * size;
            frames
                + 24.0 * np2(turns)
                + 56.0 * np2(frames + 1.0)
                + (6.0 * wd * hd + 524_288.0).max(1.5 * np2(96.0 * frames))
        } else {
            0.0
        };
        // Agents are saved one at a time (the replay as f64, then the file); read back on resume.
        let ckpt = 2.0 * (16.0 * p).max(16.0 * worlds * c * (fd + 7.0)) + 8192.0;
        let epochs = self.epochs as f64;
        let curves = epochs * (12.0 * agents + 200.0);
        largest(
            &mut b,
            vec![
                vec![
                    (
                        "a recorded epoch's frames and drawing (run/hunt.rs)",
                        format!(
                            "size = {}, turns = {}, record_every = {}",
                            self.size, self.turns, self.record_every
                        ),
                        record,
                    ),
                    (
                        "checkpoint of one agent, written or read back (hunt.rs)",
                        format!(
                            "capacity = {}, worlds = {}, layer = {}",
                            self.capacity, self.worlds, self.layer
                        ),
                        ckpt,
                    ),
                ],
                vec![(
                    "reward curves and their plot",
                    format!("epochs = {}, {per}", self.epochs),
                    curves,
                )],
            ],
        );
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fit_and_absurd_sizes_are_refused_naming_them() {
        for b in [AlloRunConfig::default().budget(2), HuntRunConfig::default().budget(2)] {
            assert!(b.total() < 128 << 20, "{}", b.describe(4));
        }
        let c = AlloRunConfig { map: "builtin:open-100".into(), ..AlloRunConfig::default() };
        assert!(c.budget(2).total() > 1 << 30, "ten thousand states: a 10,000² eigenproblem");
        let c = AlloRunConfig { samples: 4_000_000_000, ..AlloRunConfig::default() };
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("samples = 4000000000"), "{e}");
        let c = HuntRunConfig { capacity: 100_000_000, ..HuntRunConfig::default() };
        let e = c.budget(2).check().unwrap_err().to_string();
        assert!(e.contains("capacity = 100000000"), "{e}");
    }
}
