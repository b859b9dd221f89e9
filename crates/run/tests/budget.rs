//! Each run kind's memory estimate against what it really holds: every kind runs configs whose
//! config-sized buffers are tens to hundreds of MB, under a counting allocator that tracks the
//! process's live heap bytes, and its estimate (`RunKind::budget`) must cover the measured peak
//! without overstating it by more than half. At the boundary, a config just past the 8 GiB
//! budget is refused before anything is allocated, naming the field that grew, and one just
//! under is accepted.
//!
//! Every run kind is measured (`every_kind_is_measured`); the kinds that read another run's
//! folder (`hunt play`, `actdyn retrain`) or a file (`arc replay`) get one made first.
//!
//! One test function: the peak is process-wide, so the measurements run one after another.

use kestrel_core::{MAX_BYTES, human};
use kestrel_run::runs;
use kestrel_run::{Launch, Layers, RunKind};
use kestrel_testkit::{CountingAlloc, peak_bytes_in};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The estimate and the measured peak of `kind` under `config` on a fresh one-thread pool (a
/// pool's first large matrix product allocates its packing buffer, which is counted); with
/// `resume` (a `--set` raising the budget), the larger of that peak and the resumed launch's
/// (which reads the checkpoint back).
fn measure(kind: RunKind, config: &str, resume: Option<&str>) -> (u128, usize) {
    let t = table(config);
    let out = std::env::temp_dir().join(format!("kestrel-budget-{}-{}", std::process::id(), kind));
    let pool = || rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let est = pool().install(|| kind.budget(Layers::table(&t), 1)).unwrap();
    let mut dir = None;
    let p = pool();
    let mut peak = peak_bytes_in(|| {
        p.install(|| {
            let mut p = kestrel_run::quiet;
            let l = Launch { out_dir: out.clone(), argv: vec![], progress: &mut p };
            let o = kind.launch(Layers::table(&t), None, l);
            dir = Some(o.unwrap_or_else(|e| panic!("{kind} {config}: {e}")).dir);
        })
    });
    if let (Some(set), Some(dir)) = (resume, dir) {
        let sets = [set.to_string()];
        let layers = Layers { preset: None, file: None, table: &toml::Table::new(), sets: &sets };
        let p = pool();
        peak = peak.max(peak_bytes_in(|| {
            p.install(|| {
                let mut p = kestrel_run::quiet;
                let l = Launch { out_dir: out.clone(), argv: vec![], progress: &mut p };
                kind.launch(layers, Some(&dir), l).unwrap_or_else(|e| panic!("{kind} resume: {e}"));
            })
        }));
    }
    let _ = std::fs::remove_dir_all(&out);
    (est.total(), peak)
}

const MB: u128 = 1 << 20;

/// (kind, a config whose config-sized buffers dominate, a resume's budget for resumable kinds).
const MEASURED: &[(RunKind, &str, Option<&str>)] = &[
    (
        RunKind::of::<runs::es::Es>(),
        "problem = \"sphere\"\nnum_dims = 1000\ngenerations = 20",
        None,
    ),
    (
        RunKind::of::<runs::es::Es>(),
        "strategy = \"open-es\"\nproblem = \"sphere\"\nnum_dims = 10000\npop_size = 2000\ngenerations = 3",
        None,
    ),
    (RunKind::of::<runs::qd::Qd>(), "cells = 1000\nnum_dims = 20\ngenerations = 20", None),
    (
        RunKind::of::<runs::qd::Qd>(),
        "cells = 10\nnum_dims = 100\nnum_emitters = 256\ngenerations = 5",
        None,
    ),
    (
        RunKind::of::<runs::mppi::MppiRun>(),
        "steps = 3\n[mppi]\nnum_samples = 100000\nhorizon = 50",
        None,
    ),
    (
        RunKind::of::<runs::mppi::MppiRun>(),
        "system = \"nav2d\"\nsteps = 3\n[mppi]\nnum_samples = 100000\nhorizon = 50\nprecision = \"f32\"",
        None,
    ),
    (
        RunKind::of::<runs::mppi_tune::MppiTune>(),
        "pop_size = 4\ngenerations = 2\n[run]\nsteps = 2\n[run.mppi]\nnum_samples = 20000\nhorizon = 50",
        None,
    ),
    (
        RunKind::of::<runs::mppi_qd::MppiQd>(),
        "generations = 2\ncells = 1024\n[run]\nsteps = 2\n[run.mppi]\nnum_samples = 10\nhorizon = 5",
        None,
    ),
    (
        RunKind::of::<runs::mppi_qd::MppiQd>(),
        "generations = 1\nnum_emitters = 1\nbatch_size = 4\n[run]\nsteps = 2\n[run.mppi]\nnum_samples = 20000\nhorizon = 50",
        None,
    ),
    (
        RunKind::of::<runs::allo::AlloTrain>(),
        "map = \"builtin:maze-25-0\"\nlearner.num_eigenvectors = 8\nlearner.batch_size = 64\nnum_samples = 100000\nsteps = 20\neval_every = 10\ncheckpoint_every = 0",
        Some("steps=21"),
    ),
    (
        RunKind::of::<runs::allo::AlloTrain>(),
        "map = \"builtin:maze-20-0\"\nlearner.num_eigenvectors = 64\nlearner.batch_size = 256\nnum_samples = 20000000\nsteps = 10\neval_every = 10\ncheckpoint_every = 0",
        Some("steps=11"),
    ),
    (
        RunKind::of::<runs::allo_asymexp::AlloAsymexp>(),
        "num_samples = 20000000\nsteps = 20\neval_every = 10\ncheckpoint_every = 0",
        Some("steps=21"),
    ),
    (
        RunKind::of::<runs::allo_asymexp::AlloAsymexp>(),
        "map = \"builtin:open-40\"\nnum_samples = 200000\nsteps = 10\neval_every = 10\ncheckpoint_every = 0\nnum_envs = 100\n[learner]\nversion = \"final\"\nhidden = [1024, 1024]\nbatch_size = 1024",
        Some("steps=11"),
    ),
    (
        RunKind::of::<runs::hunt::Hunt>(),
        "env.num_agents = 1\nenv.obs = \"one-hot\"\nagent.capacity = 50000\nepochs = 2\nrecord_every = 0",
        Some("epochs=3"),
    ),
    (
        RunKind::of::<runs::hunt::Hunt>(),
        "agent.layer = 512\nagent.batch_size = 256\nnum_worlds = 4\nepochs = 1\nrecord_every = 0",
        Some("epochs=2"),
    ),
    (
        RunKind::of::<runs::actdyn::Actdyn>(),
        "steps = 21\n[env]\nobs_dim = 1000\n[model]\nobs_dim = 1000\nrnn_hidden = 1024\n[eval]\nepisodes = 1\nsteps = 100\nnum_samples = 10\nnum_starts = 10",
        Some("steps=22"),
    ),
    (
        RunKind::of::<runs::actdyn::Actdyn>(),
        "steps = 5\n[model.dynamics]\ntype = \"mlp\"\nhidden = [1024, 1024]\n[train]\nensemble = 16\nnum_samples = 1\nwindow = 4\nk_steps = 1\n[eval]\nepisodes = 1\nsteps = 100\nnum_samples = 10\nnum_starts = 10",
        Some("steps=6"),
    ),
    (
        RunKind::of::<runs::arc_rollout::ArcRollout>(),
        "episodes = 4\nsel = \"mask\"\n[env]\ntasks_per_family = 400\nmax_episode_steps = 2000",
        None,
    ),
    (
        RunKind::of::<runs::arc_rollout::ArcRollout>(),
        "episodes = 2\n[env]\ntasks_per_family = 40",
        None,
    ),
    (
        RunKind::of::<runs::actdyn_compare::ActdynCompare>(),
        "num_seeds = 2\n[base]\nsteps = 21\n[base.env]\nobs_dim = 1000\n[base.model]\nobs_dim = 1000\nrnn_hidden = 1024\n[base.policy]\nnum_samples = 8\nnum_elites = 4\niterations = 2\n[base.eval]\nepisodes = 1\nsteps = 100\nnum_samples = 10\nnum_starts = 10",
        None,
    ),
];

#[test]
fn every_kind_estimates_its_peak_and_refuses_past_the_budget() {
    let mut report = Vec::new();
    let mut failures = Vec::new();
    // `KESTREL_BUDGET_ONLY=<text>` measures only the configs containing it (while tuning one
    // kind's estimate); unset, as in CI, every config is measured.
    let only = std::env::var("KESTREL_BUDGET_ONLY").ok();
    // `arc replay` reads a traces file: one of 40 episodes of 500 full-canvas mask actions
    // (about 86 MB of JSON), written here.
    let traces =
        std::env::temp_dir().join(format!("kestrel-budget-{}-traces.jsonl", std::process::id()));
    {
        let row = format!("[{}]", vec!["1"; 30].join(","));
        let mask = format!("[{}]", vec![row; 30].join(","));
        let action = format!("{{\"op\": 2, \"mask\": {mask}}}");
        let line = format!(
            "{{\"task\": \"symmetry-0\", \"pair\": 0, \"actions\": [{}]}}\n",
            vec![action; 500].join(",")
        );
        std::fs::write(&traces, line.repeat(40)).unwrap();
    }
    // ...and one of 200 episodes of 20,000 point actions (about 80 MB).
    let points = traces.with_extension("points.jsonl");
    {
        let action = "{\"op\": 12, \"point\": [3, 4]}";
        let line = format!(
            "{{\"task\": \"symmetry-0\", \"pair\": 0, \"actions\": [{}]}}\n",
            vec![action; 20_000].join(",")
        );
        std::fs::write(&points, line.repeat(200)).unwrap();
    }
    let replay = |p: &std::path::Path, steps: u32| {
        format!("traces = {:?}\n[env]\nmax_episode_steps = {steps}", p.display().to_string())
    };
    let (masks, pts) = (replay(&traces, 1000), replay(&points, 100));
    let replays = [
        (RunKind::of::<runs::arc_replay::ArcReplay>(), masks.as_str(), None),
        (RunKind::of::<runs::arc_replay::ArcReplay>(), pts.as_str(), None),
    ];
    // `arc rollout` over the largest bundled dataset, its bank read from `env.data`.
    let data = kestrel_testkit::shared_subdir("arc-agi-2").map(|d| {
        format!("episodes = 2\n[env]\ndata = {:?}", d.join("training").display().to_string())
    });
    // `hunt play` and `actdyn retrain` read a finished run's folder: one each, made here (not
    // measured) with config-sized buffers (a 50,000-frame replay; 1,000-wide observations).
    let sources =
        std::env::temp_dir().join(format!("kestrel-budget-{}-sources", std::process::id()));
    let source = |kind: RunKind, text: &str| {
        let t = table(text);
        let mut p = kestrel_run::quiet;
        let l = Launch { out_dir: sources.clone(), argv: vec![], progress: &mut p };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let o = pool.install(|| kind.launch(Layers::table(&t), None, l));
        o.unwrap_or_else(|e| panic!("{kind} source: {e}")).dir.display().to_string()
    };
    let hunt = source(
        RunKind::of::<runs::hunt::Hunt>(),
        "env.num_agents = 1\nenv.obs = \"one-hot\"\nagent.capacity = 50000\nepochs = 2\nrecord_every = 0",
    );
    let actdyn = source(
        RunKind::of::<runs::actdyn::Actdyn>(),
        "steps = 40\nsave_every = 20\n[env]\nobs_dim = 1000\n[model]\nobs_dim = 1000\nrnn_hidden = 1024\n[eval]\nepisodes = 1\nsteps = 100\nnum_samples = 10\nnum_starts = 10",
    );
    let play = format!("run = {hunt:?}\nepochs = 2");
    let retrain = format!("run = {actdyn:?}\n[offline]\nepochs = 1\nchunk = 20\nbatch_size = 2");
    let played = [
        (RunKind::of::<runs::hunt_play::HuntPlay>(), play.as_str(), None),
        (RunKind::of::<runs::actdyn_retrain::ActdynRetrain>(), retrain.as_str(), None),
    ];
    let mut measured: Vec<(RunKind, &str, Option<&str>)> =
        MEASURED.iter().copied().chain(replays).chain(played).collect();
    measured
        .extend(data.as_deref().map(|c| (RunKind::of::<runs::arc_rollout::ArcRollout>(), c, None)));
    for &(kind, config, resume) in &measured {
        if only.as_deref().is_some_and(|o| !config.contains(o)) {
            continue;
        }
        let (est, peak) = measure(kind, config, resume);
        let peak = peak as u128;
        let line = format!(
            "{kind}: estimate {} measured {} ({})",
            human(est),
            human(peak),
            config.replace('\n', "; ")
        );
        // Covers what is held; overstates by at most half (plus the fixed terms' slack).
        if peak > est || est > peak + peak / 2 + 16 * MB {
            failures.push(line.clone());
        }
        report.push(line);
    }
    let _ = std::fs::remove_file(&traces);
    let _ = std::fs::remove_file(&points);
    let _ = std::fs::remove_dir_all(&sources);
    // Every kind of the registry is measured.
    if only.is_none() {
        for &kind in RunKind::ALL {
            let n = measured.iter().filter(|m| m.0 == kind).count();
            if n == 0 {
                failures.push(format!("{kind}: not measured"));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(failures.is_empty(), "estimates off:\n{}", failures.join("\n"));
    // At the boundary: (kind, just under, just over, the field named).
    for (kind, under, over, field) in BOUNDARY {
        let b = |c: &str| kind.budget(Layers::table(&table(c)), 2).unwrap();
        let (u, o) = (b(under), b(over));
        assert!(u.total() <= MAX_BYTES, "{kind} {under}: {}", u.describe(3));
        assert!(o.total() > MAX_BYTES, "{kind} {over}: {}", o.describe(3));
        let e = kind.check(Layers::table(&table(over)), "test").unwrap_err().to_string();
        assert!(e.contains(field) && e.contains("8 GiB"), "{kind}: {e}");
    }
    // The kinds that read another run's folder estimate from that folder's config: a folder
    // whose `config.toml` holds a config just under, or just over, the budget (never run).
    // (The one over is the one under with its line changed: `config_toml` checks what it prints.)
    let folder = |kind: RunKind, name: &str, text: &str, line: (&str, &str)| {
        let d = std::env::temp_dir().join(format!("kestrel-budget-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let c = kind.config_toml(Layers::table(&table(text))).unwrap();
        assert!(c.contains(line.0), "{name}: {c}");
        std::fs::write(d.join("config.toml"), c.replace(line.0, line.1)).unwrap();
        d
    };
    let hunt = RunKind::of::<runs::hunt::Hunt>();
    let actdyn = RunKind::of::<runs::actdyn::Actdyn>();
    let icem = "[policy]\nkind = \"icem\"\nmetric = \"action-cost\"\nhorizon = 20000";
    let sides = [
        (
            RunKind::of::<runs::hunt_play::HuntPlay>(),
            hunt,
            "agent.capacity = 2000000",
            ("capacity = 2000000", "capacity = 3000000"),
            "capacity",
        ),
        (
            RunKind::of::<runs::actdyn_retrain::ActdynRetrain>(),
            actdyn,
            icem,
            ("horizon = 20000", "horizon = 25000"),
            "policy.horizon",
        ),
    ];
    // `arc replay` estimates from its traces file: one task per trace line.
    let lines = |n: usize, name: &str| {
        let p = std::env::temp_dir()
            .join(format!("kestrel-budget-{}-{name}.jsonl", std::process::id()));
        std::fs::write(&p, "{\"task\": \"symmetry-0\", \"pair\": 0, \"actions\": []}\n".repeat(n))
            .unwrap();
        p
    };
    let (few, many) = (lines(300_000, "few"), lines(450_000, "many"));
    let replay = RunKind::of::<runs::arc_replay::ArcReplay>();
    let traces = |p: &std::path::Path| table(&format!("traces = {:?}", p.display().to_string()));
    let (u, o) = (
        replay.budget(Layers::table(&traces(&few)), 2),
        replay.budget(Layers::table(&traces(&many)), 2),
    );
    let (u, o) = (u.unwrap(), o.unwrap());
    assert!(u.total() <= MAX_BYTES, "arc-replay 300,000 traces: {}", u.describe(3));
    assert!(o.total() > MAX_BYTES, "arc-replay 450,000 traces: {}", o.describe(3));
    let e = replay.check(Layers::table(&traces(&many)), "test").unwrap_err().to_string();
    assert!(e.contains("the traces in the file") && e.contains("8 GiB"), "arc-replay: {e}");
    let _ = (std::fs::remove_file(&few), std::fs::remove_file(&many));
    for (kind, source, under, over, field) in sides {
        let u = folder(source, "under", under, (over.0, over.0));
        let o = folder(source, "over", under, over);
        let run = |d: &std::path::Path| format!("run = {:?}", d.display().to_string());
        let b = |d: &std::path::Path| kind.budget(Layers::table(&table(&run(d))), 2).unwrap();
        assert!(b(&u).total() <= MAX_BYTES, "{kind} {under}: {}", b(&u).describe(3));
        assert!(b(&o).total() > MAX_BYTES, "{kind} {}: {}", over.1, b(&o).describe(3));
        let e = kind.check(Layers::table(&table(&run(&o))), "test").unwrap_err().to_string();
        assert!(e.contains(field) && e.contains("8 GiB"), "{kind}: {e}");
        let _ = (std::fs::remove_dir_all(&u), std::fs::remove_dir_all(&o));
    }
}

/// Configs on either side of the 8 GiB budget (found from each kind's terms: the dominant
/// field doubled or less between them).
const BOUNDARY: &[(RunKind, &str, &str, &str)] = &[
    (
        RunKind::of::<runs::es::Es>(),
        "num_dims = 14000\ngenerations = 1",
        "num_dims = 17000\ngenerations = 1",
        "num_dims",
    ),
    (
        RunKind::of::<runs::es::Es>(),
        "strategy = \"snes\"\nnum_dims = 100000\npop_size = 6000\ngenerations = 1",
        "strategy = \"snes\"\nnum_dims = 100000\npop_size = 8000\ngenerations = 1",
        "pop_size",
    ),
    (
        RunKind::of::<runs::qd::Qd>(),
        "cells = 2048\nnum_dims = 400\ngenerations = 1",
        "cells = 2048\nnum_dims = 600\ngenerations = 1",
        "cells",
    ),
    (
        RunKind::of::<runs::mppi::MppiRun>(),
        "[mppi]\nnum_samples = 1000000\nhorizon = 300",
        "[mppi]\nnum_samples = 1000000\nhorizon = 400",
        "mppi.num_samples",
    ),
    (
        RunKind::of::<runs::mppi_tune::MppiTune>(),
        "pop_size = 2\n[run.mppi]\nnum_samples = 1000000\nhorizon = 50",
        "pop_size = 2\n[run.mppi]\nnum_samples = 1000000\nhorizon = 100",
        "run.mppi.num_samples",
    ),
    (
        RunKind::of::<runs::mppi_qd::MppiQd>(),
        "cells = 1024",
        "cells = 1024\n[run.mppi]\nnum_samples = 10000000\nhorizon = 100",
        "run.mppi.num_samples",
    ),
    (
        RunKind::of::<runs::allo::AlloTrain>(),
        "num_samples = 1500000000",
        "num_samples = 2000000000",
        "num_samples",
    ),
    (
        RunKind::of::<runs::allo_asymexp::AlloAsymexp>(),
        "[learner]\nhidden = [8192, 8192, 8192]",
        "[learner]\nhidden = [8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192]",
        "learner.hidden",
    ),
    (
        RunKind::of::<runs::hunt::Hunt>(),
        "agent.capacity = 2000000",
        "agent.capacity = 3000000",
        "agent.capacity",
    ),
    (
        RunKind::of::<runs::actdyn::Actdyn>(),
        "[policy]\nkind = \"icem\"\nmetric = \"action-cost\"\nhorizon = 30000",
        "[policy]\nkind = \"icem\"\nmetric = \"action-cost\"\nhorizon = 40000",
        "policy.horizon",
    ),
    (
        RunKind::of::<runs::arc_rollout::ArcRollout>(),
        "[env]\ntasks_per_family = 30000",
        "[env]\ntasks_per_family = 45000",
        "env.tasks_per_family",
    ),
    // A comparison runs one experiment per worker (two here), and the field is named as its
    // config spells it (`base.`).
    (
        RunKind::of::<runs::actdyn_compare::ActdynCompare>(),
        "[base.policy]\nkind = \"icem\"\nmetric = \"action-cost\"\nhorizon = 20000",
        "[base.policy]\nkind = \"icem\"\nmetric = \"action-cost\"\nhorizon = 25000",
        "base.policy.horizon",
    ),
];
