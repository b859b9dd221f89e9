#!/usr/bin/env python3
"""Every peer comparison in one launch, and the table that opens BENCHMARKS.md.

Runs the comparison scripts of tools/compare/ (and tools/arc_paper, and the `kestrel` benches
whose peer cannot run here) one after another, each with its full arguments (or, with
`--quick`, a short form: few rounds, seeds and steps), gathers what each writes (its `--json`
file, its run folder's results, or the bench's JSON on stdout) into one results folder, and
rewrites the rows of the table between `<!-- table:begin -->` and `<!-- table:end -->` in
BENCHMARKS.md with this launch's figures, the commit (`git rev-parse --short HEAD`), the CPU
model (common.cpu_model) and the date. Rows whose comparison did not run (or failed) keep the
launch recorded in the table before.

    python3 tools/compare/all.py                  # every comparison, full arguments (hours)
    python3 tools/compare/all.py --quick          # short forms; writes DIR/table.md only
    python3 tools/compare/all.py --only nn,allo   # some comparisons
    python3 tools/compare/all.py --list           # the comparisons, their commands and rows
    python3 tools/compare/all.py --dry-run --quick
    python3 tools/compare/all.py --from-json runs/compare/all-20261204-101500   # re-render only

A `--quick` launch does not touch BENCHMARKS.md unless `--write` is given (its figures are not
the launches the sections describe); a full launch writes unless `--no-write` is given. The
peer venvs are made by the scripts on first use (minutes each); the scripts build Kestrel
themselves (a release binary, or the wheel `KESTREL_WHEEL` names). Standard library only.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from common import cpu_model  # noqa: E402  (stdlib only)

BENCHMARKS = os.path.join(ROOT, "BENCHMARKS.md")
BEGIN, END = "<!-- table:begin -->", "<!-- table:end -->"
KESTREL = "target/release/kestrel"
BUILD = ["cargo", "build", "--release", "-q", "-p", "kestrel"]
HEADER = ["workload", "peer (version)", "Kestrel", "peer", "Kestrel's speed-up", "CPU", "commit", "full launch"]


def S(*argv, stdout=None):
    """One step: an argv (tokens may hold `{out}`, this comparison's results folder, and
    `{newest:PATH:FILE}`, the folder of the newest FILE under PATH) and, optionally, a file its
    stdout goes to. `python3` runs as this interpreter."""
    return {"argv": list(argv), "stdout": stdout}


def ensure_kestrel(venv, requirements):
    """A step installing this checkout's Kestrel into a venv (made from `requirements` if
    missing), for the scripts that import kestrel at the top and so cannot install it themselves."""
    return S("python3", "tools/compare/all.py", "--install-kestrel", venv, requirements)


class Comparison:
    def __init__(self, name, title, full, quick, rows, note=""):
        self.name, self.title, self.full, self.quick, self.rows, self.note = name, title, full, quick, rows, note

    def steps(self, quick):
        return self.quick if quick else self.full


# ------------------------------------------------------------------------------ the comparisons
# Each row a comparison produces is (id, workload, peer, link label, anchor); the workload cell is
# the row's key in the table (unique). `rows` of a comparison name the row ids its renderer fills.

ARC_DATA = "../shared/data/arc-agi-1/training"

COMPARISONS = [
    Comparison("jax_ffi", "Kestrel inside JAX: the XLA FFI step against numpy and jax.pure_callback",
               [ensure_kestrel("venv-sb3", "crates/py/requirements-sb3.txt"),
                S("tools/venv-sb3/bin/python", "tools/compare/jax_ffi.py", "--rounds", "5", "--json", "{out}/jax_ffi.json")],
               [ensure_kestrel("venv-sb3", "crates/py/requirements-sb3.txt"),
                S("tools/venv-sb3/bin/python", "tools/compare/jax_ffi.py", "--rounds", "2", "--steps-budget", "40000",
                  "--sizes", "1,4096", "--json", "{out}/jax_ffi.json")],
               ["jax-callback", "jax-numpy"]),
    Comparison("arc_ppo_jax", "PureJaxRL's PPO on Mini-ARC in one jit, over Kestrel and over JaxARC",
               [S("python3", "tools/compare/arc_ppo_jax.py", "--seeds", "5", "--timesteps", "500000", "--tasks", "4",
                  "--envs", "64", "--steps", "64", "--out", "{out}", "--figures", "docs/benchmarks/arc")],
               [S("python3", "tools/compare/arc_ppo_jax.py", "--seeds", "1", "--timesteps", "40960", "--tasks", "4",
                  "--envs", "64", "--steps", "64", "--out", "{out}")],
               ["ppo-jax", "jaxarc-in-jit"]),
    Comparison("mppi_evosax", "evosax's CMA_ES tuning MPPI inside jit, against jax-mppi's evosax tuner",
               [S("python3", "tools/compare/mppi_evosax.py", "--pop", "16", "--generations", "30", "--seeds", "5",
                  "--shipped-generations", "1", "--json", "{out}/mppi_evosax.json")],
               [S("python3", "tools/compare/mppi_evosax.py", "--pop", "16", "--generations", "5", "--seeds", "1",
                  "--shipped-generations", "0", "--json", "{out}/mppi_evosax.json")],
               ["mppi-evosax-vmap", "mppi-evosax-tuner"]),
    Comparison("evo_all", "Every evolution strategy against evosax 0.3.2",
               [S("python3", "tools/compare/evo_all.py", "--rounds", "2", "--json", "{out}/evo_all.json")],
               [S("python3", "tools/compare/evo_all.py", "--quick", "--only", "CMA_ES", "Sep_CMA_ES", "SimpleGA", "PSO",
                  "--json", "{out}/evo_all.json")],
               ["evosax-all", "evosax-cmaes"],
               "--quick times four strategies, so its summary row covers those four"),
    Comparison("evo", "CMA-ES and CMA-ME against pycma, cmaes and pyribs; evaluations to 1e-8 against pycma",
               [S("python3", "tools/compare/evo.py", "--json", "{out}/evo.json")],
               [S("python3", "tools/compare/evo.py", "--quick", "--json", "{out}/evo.json")],
               ["pycma", "cmaes", "pyribs", "pycma-evals"]),
    Comparison("mppi", "MPPI command against pytorch-mppi and jax-mppi; jax-mppi's tuner as shipped",
               [S("python3", "tools/compare/mppi.py", "--rounds", "3", "--json", "{out}/mppi.json")],
               [S("python3", "tools/compare/mppi.py", "--rounds", "1", "--json", "{out}/mppi.json")],
               ["mppi-torch", "mppi-jax", "mppi-tune"]),
    Comparison("mppi_tune_python", "Tuning MPPI on a system written in Python, against pytorch-mppi and jax-mppi",
               [ensure_kestrel("venv-py", "crates/py/requirements-test.txt"),
                S("python3", "tools/compare/mppi_tune_python.py", "--json", "{out}/mppi_tune_python.json")],
               [ensure_kestrel("venv-py", "crates/py/requirements-test.txt"),
                S("python3", "tools/compare/mppi_tune_python.py", "--json", "{out}/mppi_tune_python.json")],
               ["tune-py-torch", "tune-py-jax"],
               "needs tools/venv-torch (with cma) and tools/venv-jaxmppi, which mppi.py makes"),
    Comparison("arc", "ARC env step against JaxARC and ARCLE, from Rust",
               [S("python3", "tools/compare/arc.py", "--data", ARC_DATA, "--json", "{out}/arc.json")],
               [S("python3", "tools/compare/arc.py", "--data", ARC_DATA, "--quick", "--json", "{out}/arc.json")],
               ["arc-mini-jaxarc", "arc-mini-arcle", "arc-agi-arcle", "arc-agi-jaxarc"]),
    Comparison("arc_paper", "The ARC systems paper's suite: throughput and memory against batch size",
               [S("python3", "tools/arc_paper", "--out", "{out}", "--figures", "docs/benchmarks/arc")],
               [S("python3", "tools/arc_paper", "--quick", "--out", "{out}")],
               ["arc-paper-python"]),
    Comparison("arc_ppo", "CleanRL's PPO (torch) on Mini-ARC, over Kestrel and over JaxARC",
               [S("python3", "tools/compare/arc_ppo.py", "--seeds", "5", "--out", "{out}", "--figures", "docs/benchmarks/arc")],
               [S("python3", "tools/compare/arc_ppo.py", "--seeds", "1", "--timesteps", "4096", "--out", "{out}")],
               ["arc-ppo-torch"]),
    Comparison("py_vec", "Kestrel from Python against Gymnasium, EnvPool, ARCLE, JaxARC, pycma and evosax",
               [S("python3", "tools/compare/py_vec.py", "--json", "{out}/py_vec.json")],
               [S("python3", "tools/compare/py_vec.py", "--quick", "--json", "{out}/py_vec.json")],
               ["py-cma-pycma", "py-cma-evosax", "py-cartpole-envpool", "py-cartpole-gym", "py-arc-arcle"]),
    Comparison("allo", "ALLO against the paper's code restated (Python replay, jitted JAX update)",
               [S("python3", "tools/compare/allo.py", "--json", "{out}/allo.json")],
               [S("python3", "tools/compare/allo.py", "--json", "{out}/allo.json")],
               ["allo-step", "allo-sampling"]),
    Comparison("allo_asymexp", "ALLO against asymexp's exp_alcl/allo.py, one core each",
               [S("taskset", "-c", "0", "python3", "tools/compare/allo_asymexp.py", "--steps", "2000", "--json",
                  "{out}/allo_asymexp.json"),
                S("taskset", "-c", "0", KESTREL, "allo", "train", "--profile", "asymexp", "--threads", "1",
                  "--out-dir", "{out}/train")],
               [S("taskset", "-c", "0", "python3", "tools/compare/allo_asymexp.py", "--steps", "100", "--num-envs",
                  "100", "--num-steps", "100", "--json", "{out}/allo_asymexp.json")],
               ["asymexp-step", "asymexp-collect", "asymexp-run"],
               "the whole default run is timed only in the full form (its second step)"),
    Comparison("allo_asymexp_e2e", "asymexp's fixture run end to end, over seeds, against Kestrel's",
               [S("taskset", "-c", "0", "python3", "tools/compare/allo_asymexp_seeds.py", "--seeds-e2e", "10", "--out",
                  "{out}/asymexp_seeds.json"),
                S("python3", "tools/compare/allo_asymexp_e2e.py", "--reference", "{out}/asymexp_seeds.json", "--json",
                  "{out}/asymexp_e2e.json")],
               [S("taskset", "-c", "0", "python3", "tools/compare/allo_asymexp_seeds.py", "--seeds-e2e", "2",
                  "--no-golden-check", "--out", "{out}/asymexp_seeds.json"),
                S("python3", "tools/compare/allo_asymexp_e2e.py", "--reference", "{out}/asymexp_seeds.json", "--json",
                  "{out}/asymexp_e2e.json")],
               ["asymexp-e2e"]),
    Comparison("hunt", "Treasure hunt with per-agent IQN learners against sorrel",
               [S("python3", "tools/compare/hunt.py", "--seeds", "10", "--json", "{out}/hunt.json")],
               [S("python3", "tools/compare/hunt.py", "--seeds", "2", "--epochs", "101", "--png", "{out}/hunt-curves.png",
                  "--json", "{out}/hunt.json")],
               ["hunt-turn", "hunt-update", "hunt-run"]),
    Comparison("actdyn", "Active learning of latent dynamics against the reference's recorded figures",
               [S(*BUILD), S(KESTREL, "actdyn", "bench", "--json", "--reps", "100", stdout="{out}/actdyn.json"),
                S(KESTREL, "actdyn", "run", "--preset", "e2", "--out-dir", "{out}/e2-run")],
               [S(*BUILD), S(KESTREL, "actdyn", "bench", "--json", "--reps", "20", stdout="{out}/actdyn.json")],
               ["actdyn-planner", "actdyn-train", "actdyn-run"],
               "active-dynamics is on no registry: its figures are the ones recorded in "
               "shared/reference/actdyn.md §5; the whole E2 run is timed only in the full form"),
    Comparison("actdyn_e1", "E1 fidelity of the faithful profile against the reference's four anchor runs",
               [S(*BUILD), S(KESTREL, "actdyn", "compare", "--preset", "e1", "--arms", "random", "--num-seeds", "30",
                             "--base.steps", "5000", "--out-dir", "{out}/runs"),
                S("python3", "tools/compare/actdyn_e1_fidelity.py", "{newest:{out}/runs:comparison.json}", "--json",
                  "{out}/actdyn_e1.json")],
               [S(*BUILD), S(KESTREL, "actdyn", "compare", "--preset", "e1", "--arms", "random", "--num-seeds", "5",
                             "--base.steps", "5000", "--out-dir", "{out}/runs"),
                S("python3", "tools/compare/actdyn_e1_fidelity.py", "{newest:{out}/runs:comparison.json}", "--json",
                  "{out}/actdyn_e1.json")],
               ["actdyn-e1"]),
    Comparison("nn", "kestrel-nn against jitted JAX + optax",
               [S("python3", "tools/compare/nn.py", "--json", "{out}/nn.json")],
               [S("python3", "tools/compare/nn.py", "--json", "{out}/nn.json")],
               ["nn-train", "nn-many"]),
    Comparison("dist", "Kestrel on Ray: the overhead of a generation and a sweep's throughput",
               [S("python3", "tools/compare/dist.py", "--json", "{out}/dist.json")],
               [S("python3", "tools/compare/dist.py", "--quick", "--json", "{out}/dist.json")],
               ["ray-gen", "ray-sweep"]),
]

# Scripts of tools/compare/ that all.py does not run, and why (`--list` prints them).
NOT_RUN = {
    "before_after.py": "Kestrel against an older Kestrel binary (the per-change logs), not a peer",
    "info_floor.py": "the cost of Kestrel's own info and statistics, no peer",
    "py_arc_step.py": "two builds of Kestrel's binding against each other, no peer",
    "allo_repro.py": "Kestrel against the ALLO paper's published Table 1, no peer run (36 runs of 20,000 steps)",
    "mppi_thresholds.py": "pytorch-mppi's closed-loop statistics only; Kestrel's side is a cargo test's printout",
    "jaxarc_states.py": "a helper of arc_ppo.py and arc_ppo_jax.py",
    "common.py": "the scripts' shared helpers",
    "all.py": "this script",
    "test_all.py": "this script's test",
}

# The table's rows in order: id -> (workload, peer, link label, anchor). The workload cell is the
# row's key; an id no comparison fills is kept as the table has it (KEPT).
ROWS = [
    ("jax-callback", "Env step called from JAX (CartPole-v1, 1 / 4,096 envs, one core), µs a step of the batch",
     "`jax.pure_callback` over the numpy step (jax 0.10.2)", "Kestrel inside JAX",
     "kestrel-inside-jax-one-env-step-as-an-xla-ffi-call-issue-59"),
    ("jax-numpy", "Env step inside JAX against a numpy loop (CartPole-v1, 1 / 4,096 envs, one core), µs",
     "Kestrel's own numpy `VectorEnv.step`, a Python loop", "Kestrel inside JAX",
     "kestrel-inside-jax-one-env-step-as-an-xla-ffi-call-issue-59"),
    ("ppo-jax", "PureJaxRL PPO on Mini-ARC in one `jit` (64 envs × 64 steps, one core), steps/s with the learning",
     "JaxARC 1.0.3 (jax 0.10.2, flax 0.12.8, optax 0.2.8)", "PureJaxRL's PPO",
     "purejaxrls-ppo-on-mini-arc-inside-one-jit-over-kestrel-and-over-jaxarc-issue-59"),
    ("jaxarc-in-jit", "Mini-ARC env alone in a jitted scan (64 envs, one core), steps/s",
     "JaxARC 1.0.3", "PureJaxRL's PPO",
     "purejaxrls-ppo-on-mini-arc-inside-one-jit-over-kestrel-and-over-jaxarc-issue-59"),
    ("mppi-evosax-vmap", "MPPI tuning in one jitted scan of evosax `CMA_ES` (jax-mppi's basic system, pop 16), ms a generation",
     "evosax 0.3.2 over `jit(vmap)` of jax-mppi 0.3.0's episode", "evosax tuning MPPI in `jit`",
     "evosaxs-cma_es-tuning-mppi-inside-jit-over-kestreljaxevaluate-against-jax-mppis-evosax-tuner-issue-59"),
    ("mppi-evosax-tuner", "MPPI tuning with evosax `CMA_ES` against jax-mppi's own tuner (pop 16), ms a generation",
     "jax-mppi 0.3.0 `Autotune` + `EvoSaxOptimizer`: jitted evaluate / as shipped", "evosax tuning MPPI in `jit`",
     "evosaxs-cma_es-tuning-mppi-inside-jit-over-kestreljaxevaluate-against-jax-mppis-evosax-tuner-issue-59"),
    ("evosax-all", "Every strategy under an evosax name (pop 64, sphere, d = 10 and 100, one core), time a generation",
     "evosax 0.3.2: fused `jit(lax.scan)` / Python loop of jitted `ask` and `tell`", "All 37 in one launch",
     "all-37-in-one-launch-launch-9"),
    ("evosax-cmaes", "CMA-ES generation against evosax (pop 64, sphere, d = 10 / 100, one core), µs",
     "evosax 0.3.2 `CMA_ES`, fused `jit(lax.scan)`", "All 37 in one launch", "all-37-in-one-launch-launch-9"),
    ("pycma", "CMA-ES generation against pycma (pop 64, sphere, d = 10 / 100, one thread), µs",
     "pycma 4.5.0 `CMAEvolutionStrategy`", "ES side by side, pinned",
     "side-by-side-peers-pinned-to-one-core-issue-19-commit-a742249"),
    ("cmaes", "CMA-ES generation against cmaes (pop 64, sphere, d = 10 / 100, one thread), µs",
     "cmaes 0.13.1 `CMA` (64 asks + tell)", "ES side by side, pinned",
     "side-by-side-peers-pinned-to-one-core-issue-19-commit-a742249"),
    ("pyribs", "CMA-ME generation (20×20 grid, batch 64, d = 10 / 100, one thread), µs",
     "pyribs 0.12.0 `EvolutionStrategyEmitter`", "ES side by side, pinned",
     "side-by-side-peers-pinned-to-one-core-issue-19-commit-a742249"),
    ("pycma-evals", "CMA-ES evaluations to reach 1e-8 (median over seeds; sphere, ellipsoid, Rosenbrock; d = 10, 40)",
     "pycma 4.5.0", "Behaviour against pycma", "behaviour-against-pycma-evaluations-to-reach-1e-8"),
    ("py-cma-pycma", "CMA-ES ask + tell called from Python (d = 10 pop 10 / d = 100 pop 17), µs a generation",
     "pycma 4.5.0", "Kestrel from Python", "kestrel-from-python-issue-17"),
    ("py-cma-evosax", "CMA-ES ask + tell called from Python against jitted evosax (d = 10 / 100), µs a generation",
     "evosax 0.3.2 (jitted `ask` and `tell`)", "Kestrel from Python", "kestrel-from-python-issue-17"),
    ("mppi-torch", "MPPI `command`, gym pendulum K=1000 T=20, one thread, µs",
     "pytorch-mppi 0.9.1 (torch f32 / f64)", "MPPI command", "mppi-command-side-by-side"),
    ("mppi-jax", "MPPI `command` against jax-mppi (gym pendulum K=1000 T=20, one core), µs",
     "jax-mppi 0.3.0 (`jax.jit`, float32)", "MPPI command", "mppi-command-side-by-side"),
    ("mppi-tune", "MPPI tuning, jax-mppi's basic example (CMA-ES pop 4 × 3 generations), µs a candidate episode",
     "jax-mppi 0.3.0 `Autotune` + pycma `CMAESOpt`, as shipped", "MPPI tuning",
     "mppi-tuning-side-by-side-with-jax-mppis-tuner"),
    ("tune-py-torch", "Tuning MPPI on a system written in Python (pop 16 × 5), ms an episode",
     "pytorch-mppi 0.9.1 `Autotune` + `CMAESOpt`", "Tuning a Python system",
     "tuning-a-system-written-in-python-side-by-side-issue-32-item-3"),
    ("tune-py-jax", "Tuning MPPI on a system written in Python against jax-mppi (pop 4 × 3), ms an episode",
     "jax-mppi 0.3.0 `Autotune`, as shipped", "Tuning a Python system",
     "tuning-a-system-written-in-python-side-by-side-issue-32-item-3"),
    ("arc-mini-jaxarc", "ARC env step, Mini-ARC 5×5 bbox (JaxARC's paper setup), 4,096 envs, 2 threads, steps/s",
     "JaxARC 1.0.3 `jit(vmap(scan))` on the CPU", "ARC lane kernel, side by side",
     "the-structure-of-arrays-kernel-for-small-canvases-issue-19"),
    ("arc-mini-arcle", "ARC env step, Mini-ARC 5×5 bbox, o2arc, 1 env, 1 thread, steps/s",
     "ARCLE 0.2.6 `O2ARCv2Env`", "ARC lane kernel, side by side",
     "the-structure-of-arrays-kernel-for-small-canvases-issue-19"),
    ("arc-agi-arcle", "ARC env step, ARC-AGI-1 30×30 masks, o2arc, 1,024 envs on 2 threads against one env, steps/s",
     "ARCLE 0.2.6 `O2ARCv2Env` (1 env)", "ARC side by side", "side-by-side"),
    ("arc-agi-jaxarc", "ARC env step, ARC-AGI-1 30×30 masks, jaxarc, 1,024 envs, 2 threads, steps/s",
     "JaxARC 1.0.3 `jit(vmap(scan))` on the CPU", "ARC side by side", "side-by-side"),
    ("arc-paper-python", "Mini-ARC from Python (`VectorEnv.rollout`, jaxarc), 1,000 envs and up, 2 threads, steps/s",
     "JaxARC 1.0.3 `jit(vmap(scan))` on the CPU", "ARC paper suite, latest run",
     "the-arc-systems-papers-suite-the-latest-run-c9711d0"),
    ("py-arc-arcle", "ARC 30×30 from Python (`make_vec`, o2arc, ARC-AGI-1, 1,024 envs, 2 threads), steps/s",
     "ARCLE 0.2.6 `O2ARCv2Env` (1 env)", "Kestrel from Python", "kestrel-from-python-issue-17"),
    ("arc-ppo-torch", "CleanRL PPO (torch) on Mini-ARC, 16 envs × 64 steps, one core, steps/s with the learning",
     "JaxARC 1.0.3 behind the same loop", "PPO on Mini-ARC", "ppo-on-mini-arc-kestrel-and-jaxarc-side-by-side-issue-32-item-2"),
    ("ppo-cartpole-gym", "CleanRL PPO (torch) on CartPole-v1, 64 envs × 128 steps, whole loop, steps/s",
     "Gymnasium `SyncVectorEnv`", "PPO in PyTorch and SB3", "ppo-in-pytorch-cleanrls-way-and-sb3-issue-30-item-3"),
    ("py-cartpole-envpool", "CartPole-v1 from Python, 1,024 envs, `copy=False`, 2 threads, steps/s",
     "EnvPool 1.2.5 (the better of sync and async)", "Episode statistics in `info`",
     "episode-statistics-in-info-issue-30-their-cost"),
    ("py-cartpole-gym", "CartPole-v1 from Python against Gymnasium, 1,024 envs, steps/s",
     "gymnasium 1.4 `SyncVectorEnv`", "Episode statistics in `info`", "episode-statistics-in-info-issue-30-their-cost"),
    ("allo-step", "ALLO training step, GridRoom-4, batch 4×1024 (sampling + update), one core, µs",
     "the ALLO paper's code restated (Python replay, jitted JAX update)", "ALLO per step",
     "per-step-and-replay-sampling-side-by-side"),
    ("allo-sampling", "ALLO replay sampling, one 4×1024 batch, µs",
     "the ALLO paper's replay restated (Python lists, `np.stack`)", "ALLO per step",
     "per-step-and-replay-sampling-side-by-side"),
    ("asymexp-step", "ALLO as asymexp's `exp_alcl/allo.py` (room4, batch 256), whole step, one core, ms",
     "tarod13/asymexp `4deb141` (JAX + Flax)", "asymexp's ALLO",
     "asymexps-exp_alclallopy-issue-31-fidelity-the-seeds-run-in-distribution-speed"),
    ("asymexp-collect", "asymexp's collection, buffer fill and ground truth (once a run), s",
     "tarod13/asymexp `4deb141` (JAX + Flax)", "asymexp's ALLO",
     "asymexps-exp_alclallopy-issue-31-fidelity-the-seeds-run-in-distribution-speed"),
    ("asymexp-run", "asymexp's whole default run (20,000 steps), one core, s",
     "tarod13/asymexp `4deb141` (JAX + Flax)", "asymexp's ALLO",
     "asymexps-exp_alclallopy-issue-31-fidelity-the-seeds-run-in-distribution-speed"),
    ("asymexp-e2e", "asymexp's fixture run end to end over seeds (`small` map, 500 steps), wall time",
     "tarod13/asymexp `4deb141` (JAX + Flax)", "asymexp's ALLO",
     "asymexps-exp_alclallopy-issue-31-fidelity-the-seeds-run-in-distribution-speed"),
    ("hunt-turn", "Treasure hunt environment turn, 2 agents (spawn sweep + moves), µs",
     "sorrel 1.6.0", "Treasure hunt", "treasure-hunt-with-per-agent-iqn-learners-issue-6"),
    ("hunt-update", "IQN update, batch 64, 12×12 quantiles, layer 250, one thread, µs",
     "sorrel 1.6.0 (torch 2.15.0, one thread)", "Treasure hunt", "treasure-hunt-with-per-agent-iqn-learners-issue-6"),
    ("hunt-run", "Treasure hunt default run (sorrel's `main.py` setup), s, and the last 100 epochs' reward",
     "sorrel 1.6.0 (CPU time)", "Treasure hunt", "treasure-hunt-with-per-agent-iqn-learners-issue-6"),
    ("actdyn-planner", "Active learning of latent dynamics: planner call, E2 defaults, 2 threads, ms",
     "active-dynamics `ceeba42` (torch 2.15.0; recorded figures)", "Active learning of latent dynamics",
     "active-learning-of-latent-dynamics-issue-16"),
    ("actdyn-train", "actdyn training call, E1 (MLP dynamics), 2 threads",
     "active-dynamics `ceeba42` (torch 2.15.0; recorded figures)", "Active learning of latent dynamics",
     "active-learning-of-latent-dynamics-issue-16"),
    ("actdyn-run", "actdyn whole E2 run, 10,000 steps (`kestrel actdyn run --preset e2`)",
     "active-dynamics `ceeba42` (torch 2.15.0; recorded figures)", "Active learning of latent dynamics",
     "active-learning-of-latent-dynamics-issue-16"),
    ("actdyn-e1", "actdyn E1 fidelity, `faithful` profile (random policy, 5,000 steps): Kestrel's seeds against the anchors",
     "active-dynamics' four anchor runs (f64 and f32, seeds 42 and 7)", "E1 fidelity",
     "fidelity-of-the-faithful-profile-e1-random-policy-5000-steps"),
    ("nn-train", "MLP train step 64-256-256-16, batch 256, MSE + Adam, one thread, µs",
     "JAX 0.10.2 + optax, jitted, one core", "kestrel-nn", "issue-19-a-matrix-kernel-of-kestrels-own-commit-6835dcc"),
    ("nn-many", "8 MLPs, batch 64 each, one step each, µs (Kestrel on 1 / 2 threads)",
     "JAX 0.10.2 + optax, `jit(vmap)`, one core", "kestrel-nn", "issue-19-a-matrix-kernel-of-kestrels-own-commit-6835dcc"),
    ("ray-gen", "Neuro-CartPole generation, 1,024 candidates, in-process against through Ray, ms",
     "Ray 2.60.0, local instance, 2 CPUs (1 / 2 shards)", "Kestrel on Ray", "kestrel-on-ray-issue-18"),
    ("ray-sweep", "ALLO sweep of 8 runs on 2 cores, Ray engine against the local engine, s",
     "Ray 2.60.0, local instance (the Kestrel column is the Ray engine)", "Kestrel on Ray", "kestrel-on-ray-issue-18"),
]
ROW_IDS = [r[0] for r in ROWS]
KEPT = [i for i in ROW_IDS if not any(i in c.rows for c in COMPARISONS)]

# active-dynamics' figures, recorded on this machine kind in shared/reference/actdyn.md §5 (the
# reference is on no package registry, so it cannot run here): ranges (low, high).
ACTDYN_PLANNER_MS = (410.0, 480.0)
ACTDYN_TRAIN_E1_MS = (12.3, 12.3)
ACTDYN_E2_RUN_S = (1.3 * 3600, 2.7 * 3600)


# ------------------------------------------------------------------------------ formatting
def fx(r):
    """A speed-up: 2 decimals below 2x, 1 below 100x, none (with separators) from 100x."""
    if r is None or r != r:
        return "—"
    if r >= 100:
        return f"{r:,.0f}x"
    if r >= 2:
        return f"{r:.1f}x"
    return f"{r:.2f}x"


def num(v):
    """A figure: separators and no decimals from 1,000, one decimal from 10, two below."""
    if v is None or v != v:
        return "—"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def rate(v):
    """Steps per second: M or k."""
    if v is None or v != v:
        return "—"
    if v >= 1e6:
        return f"{v / 1e6:.2f} M"
    if v >= 1e3:
        return f"{v / 1e3:.1f} k"
    return f"{v:.0f}"


def span(xs, f=num, sep="–"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "—"
    lo, hi = min(xs), max(xs)
    return f(lo) if f(lo) == f(hi) else f"{f(lo)}{sep}{f(hi)}"


def both(a, b, f=num):
    return f"{f(a)} / {f(b)}"


def median(xs):
    return statistics.median(xs) if xs else None


# ------------------------------------------------------------------------------ renderers
def load(path):
    with open(path) as f:
        return json.load(f)


def load_last(path):
    """The last line of a file that is a JSON object (a bench's `--json` output on stdout)."""
    for line in reversed(open(path).read().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise ValueError(f"{path}: no JSON line")


def newest(folder, name):
    """The file `name` in the newest subfolder of `folder` that has one (the run folders of
    arc_ppo.py, arc_ppo_jax.py and tools/arc_paper)."""
    best = None
    for dirpath, _, files in os.walk(folder):
        if name in files:
            p = os.path.join(dirpath, name)
            if best is None or os.path.getmtime(p) > os.path.getmtime(best):
                best = p
    if best is None:
        raise FileNotFoundError(f"no {name} under {folder}")
    return best


def by_envs(rows, n, key="envs"):
    """The row at `n` envs, else the largest one there is."""
    hit = [r for r in rows if r[key] == n]
    return hit[0] if hit else max(rows, key=lambda r: r[key])


def r_jax_ffi(out, info):
    d = load(os.path.join(out, "jax_ffi.json"))
    lo, hi = by_envs(d["rows"], 1), by_envs(d["rows"], 4096)
    k = both(lo["ffi_scan_us"], hi["ffi_scan_us"])
    return {
        "jax-callback": (f"{k} (`kestrel.jax` FFI in a jitted scan)", both(lo["pure_callback_us"], hi["pure_callback_us"]),
                         f"{fx(lo['pure_callback_us'] / lo['ffi_scan_us'])} / {fx(hi['pure_callback_us'] / hi['ffi_scan_us'])}",
                         f"`jax.pure_callback` over the numpy step (jax {d['jax']})"),
        "jax-numpy": (f"{k} (FFI in a jitted scan)", both(lo["numpy_us"], hi["numpy_us"]),
                      f"{fx(lo['numpy_us'] / lo['ffi_scan_us'])} / {fx(hi['numpy_us'] / hi['ffi_scan_us'])}"),
    }


def r_arc_ppo_jax(out, info):
    d = load(newest(out, "results.json"))
    med = {e: (median([r["steps_per_s"] for r in d["runs"] if r["engine"] == e]),
               median([r["env_steps_per_s"] for r in d["runs"] if r["engine"] == e])) for e in ("kestrel", "jaxarc")}
    (k, ke), (j, je) = med["kestrel"], med["jaxarc"]
    seeds = d["args"]["seeds"]
    return {"ppo-jax": (f"{num(k)} (median of {seeds})", f"{num(j)}", fx(k / j)),
            "jaxarc-in-jit": (num(ke), num(je), fx(ke / je))}


def r_mppi_evosax(out, info):
    d = load(os.path.join(out, "mppi_evosax.json"))
    res = {n: (v["runs"] if isinstance(v, dict) else v) for n, v in d["results"].items()}
    per = {n: median([r["clock"][-1] / len(r["clock"]) for r in rs]) * 1e3 for n, rs in res.items() if rs}
    k = per["kestrel-scan"]
    shipped = per.get("shipped")
    return {"mppi-evosax-vmap": (num(k), num(per["jax-scan"]), fx(per["jax-scan"] / k)),
            "mppi-evosax-tuner": (num(k), f"{num(per['tuner'])} / {num(shipped) if shipped else '— (not run)'}",
                                  f"{fx(per['tuner'] / k)} / {fx(shipped / k) if shipped else '—'}")}


def r_evo_all(out, info):
    d = load(os.path.join(out, "evo_all.json"))
    rows = d["rows"]
    scan = sorted(r["scan_us"] / r["kestrel_us"] for r in rows)
    loop = sorted(r["loop_us"] / r["kestrel_us"] for r in rows)
    slower = [f"{r['strategy']} d={r['d']} ({fx(r['scan_us'] / r['kestrel_us'])})" for r in rows
              if r["scan_us"] < r["kestrel_us"]]
    n = len({r["strategy"] for r in rows})
    cells = {"evosax-all": (f"faster than the fused form on {len(rows) - len(slower)} of {len(rows)} "
                            f"(strategy, d) pairs ({n} strategies)",
                            "faster on " + (", ".join(slower) if slower else "none"),
                            f"median {fx(median(scan))} ({fx(scan[0])}–{fx(scan[-1])}) / "
                            f"median {fx(median(loop))} ({fx(loop[0])}–{fx(loop[-1])})")}
    cma = {r["d"]: r for r in rows if r["strategy"] == "CMA_ES"}
    if 10 in cma and 100 in cma:
        a, b = cma[10], cma[100]
        cells["evosax-cmaes"] = (both(a["kestrel_us"], b["kestrel_us"]), both(a["scan_us"], b["scan_us"]),
                                 f"{fx(a['scan_us'] / a['kestrel_us'])} / {fx(b['scan_us'] / b['kestrel_us'])}")
    return cells


def r_evo(out, info):
    d = load(os.path.join(out, "evo.json"))
    cells = {}
    for rid, peer_prefix, work in (("pycma", "pycma", "cma-es generation"), ("cmaes", "cmaes", "cma-es generation"),
                                   ("pyribs", "pyribs", "CMA-ME generation")):
        rs = {int(r["workload"].rsplit("d=", 1)[1]): r for r in d["rows"]
              if r["peer"].startswith(peer_prefix) and r["workload"].startswith(work)}
        if 10 in rs and 100 in rs:
            a, b = rs[10], rs[100]
            cells[rid] = (both(a["kestrel_us"], b["kestrel_us"]), both(a["peer_us"], b["peer_us"]),
                          f"{fx(a['peer_us'] / a['kestrel_us'])} / {fx(b['peer_us'] / b['kestrel_us'])}")
    ev = [e for e in d["evals"] if e["pycma"] and e["kestrel"] and e["pycma"] == e["pycma"] and e["kestrel"] == e["kestrel"]]
    if ev:
        ratios = [e["kestrel"] / e["pycma"] for e in ev]
        first, last = ev[0], ev[-1]
        cells["pycma-evals"] = (f"{first['function']} d={first['d']}: {first['kestrel']:g} … {last['function']} "
                                f"d={last['d']}: {last['kestrel']:g}",
                                f"{first['pycma']:g} … {last['pycma']:g}",
                                f"{min(ratios):.2f}–{max(ratios):.2f} (Kestrel / pycma evaluations; {d['seeds']} seeds)")
    return cells


def r_mppi(out, info):
    d = load(os.path.join(out, "mppi.json"))
    peers, k = d["command_us"]["peers"], d["command_us"]["kestrel"]
    f32, f64 = k["f32 1"], k["f64 1"]
    cells = {}
    t32 = peers.get("pytorch-mppi MPPI.command, torch f32, 1 thread")
    t64 = peers.get("pytorch-mppi MPPI.command, torch f64, 1 thread")
    kcell = f"{num(f32)} (f32) / {num(f64)} (f64)"
    if t32 and t64:
        cells["mppi-torch"] = (kcell, both(t32, t64), f"{fx(t32 / f32)} / {fx(t64 / f64)}")
    jx = peers.get("jax-mppi mppi.command, jax.jit, float32, 1 thread")
    if jx:
        cells["mppi-jax"] = (kcell, num(jx), f"{fx(jx / f32)} / {fx(jx / f64)}")
    t = d.get("tuning")
    if t:
        pu = t["peer"]["us_per_candidate_episode"]
        a, b = t["kestrel"]["f64 1"]["us_per_candidate_episode"], t["kestrel"]["f32 2"]["us_per_candidate_episode"]
        cells["mppi-tune"] = (f"{num(a)} (f64, 1 thread) / {num(b)} (f32, 2 threads)", num(pu), f"{fx(pu / a)} / {fx(pu / b)}")
    return cells


def r_mppi_tune_python(out, info):
    d = load(os.path.join(out, "mppi_tune_python.json"))
    per = {(r["tuner"], r["pop_size"]): 1e3 * r["seconds"] / r["episodes"] for r in d["rows"]}
    cells = {}
    for rid, peer, pop in (("tune-py-torch", "pytorch-mppi", 16), ("tune-py-jax", "jax-mppi", 4)):
        if (peer, pop) in per and ("kestrel", pop) in per:
            k, p = per["kestrel", pop], per[peer, pop]
            cells[rid] = (num(k), num(p), fx(p / k))
    return cells


def r_arc(out, info):
    d = load(os.path.join(out, "arc.json"))

    def pick(prefix, suffix=""):
        rs = [r for r in d["rows"] if r["workload"].startswith(prefix) and r["workload"].endswith(suffix)]
        return rs

    cells = {}

    def envs(r):
        return int(re.search(r"(\d+) envs?", r["workload"]).group(1))

    lanes = pick("Mini-ARC 5x5 bbox, jaxarc,", ", lanes")
    if lanes:
        r = max(lanes, key=envs)
        note = "" if envs(r) == 4096 else f" (at {envs(r):,} envs)"
        cells["arc-mini-jaxarc"] = (f"{num(r['kestrel_steps_per_s'])} (lanes){note}", num(r["peer_steps_per_s"]),
                                    fx(r["kestrel_steps_per_s"] / r["peer_steps_per_s"]))
    for rid, prefix in (("arc-mini-arcle", "Mini-ARC 5x5 bbox, o2arc, 1 env 1 thread"),
                        ("arc-agi-arcle", "AGI-1 30x30 mask, o2arc, 1024 envs 2 thr")):
        rs = pick(prefix)
        if rs:
            r = rs[0]
            cells[rid] = (num(r["kestrel_steps_per_s"]), num(r["peer_steps_per_s"]),
                          fx(r["kestrel_steps_per_s"] / r["peer_steps_per_s"]))
    rs = pick("AGI-1 30x30 mask, jaxarc, 1024 envs")
    if rs:
        r = rs[0]
        cells["arc-agi-jaxarc"] = (num(r["kestrel_steps_per_s"]), num(r["peer_steps_per_s"]),
                                   fx(r["kestrel_steps_per_s"] / r["peer_steps_per_s"]))
    return cells


def r_arc_paper(out, info):
    path = newest(out, "results.jsonl")
    rows = [json.loads(line) for line in open(path) if line.strip()]
    sel = lambda impl: {r["num_envs"]: r["steps_per_s"] for r in rows  # noqa: E731
                        if r["dataset"] == "Mini-ARC" and r["semantics"] == "jaxarc-bugs" and r["impl"] == impl
                        and r["num_envs"] >= 1000 and r.get("steps_per_s")}
    k, j = sel("kestrel-python-rollout"), sel("jaxarc")
    both_n = sorted(set(k) & set(j))
    if not both_n:
        return {}
    ratios = [k[n] / j[n] for n in both_n]
    sizes = f" ({both_n[0]:,}–{both_n[-1]:,} envs)" if len(both_n) > 1 else f" ({both_n[0]:,} envs)"
    return {"arc-paper-python": (span([k[n] for n in both_n], rate).replace(" M–", "–") + sizes,
                                 span([j[n] for n in both_n], rate).replace(" M–", "–"),
                                 span(ratios, fx))}


def r_arc_ppo(out, info):
    d = load(newest(out, "results.json"))
    s = {r["engine"]: r for r in d["summary"]}
    k, j = s["kestrel"], s["jaxarc"]
    return {"arc-ppo-torch": (f"{k['steps_per_s_mean']:,.0f} ± {k['steps_per_s_sd']:,.0f}",
                              f"{j['steps_per_s_mean']:,.0f} ± {j['steps_per_s_sd']:,.0f}",
                              fx(k["steps_per_s_mean"] / j["steps_per_s_mean"]))}


def r_py_vec(out, info):
    d = load(os.path.join(out, "py_vec.json"))
    res, cells = d["python"], {}
    if "es_kestrel_10" in res and "es_kestrel_100" in res:
        us = lambda key: 1e6 / res[key]  # noqa: E731  (the script stores generations per second)
        k = both(us("es_kestrel_10"), us("es_kestrel_100"))
        for rid, peer in (("py-cma-pycma", "pycma"), ("py-cma-evosax", "evosax")):
            cells[rid] = (k, both(us(f"es_{peer}_10"), us(f"es_{peer}_100")),
                          f"{fx(res['es_kestrel_10'] / res[f'es_{peer}_10'])} / "
                          f"{fx(res['es_kestrel_100'] / res[f'es_{peer}_100'])}")
    cp = res.get("cartpole_1024")
    if cp:
        kf = cp["kestrel_copy_False"]
        pool = max(cp["envpool_sync"], cp["envpool_async"])
        cells["py-cartpole-envpool"] = (rate(kf), rate(pool), fx(kf / pool))
        cells["py-cartpole-gym"] = (rate(kf), rate(cp["gym_sync"]), fx(kf / cp["gym_sync"]))
    if d.get("arcle") and "arc_python_1024" in res:
        kp, ar = res["arc_python_1024"], d["arcle"]
        cells["py-arc-arcle"] = (rate(kp), rate(ar), fx(kp / ar))
    return cells


def r_allo(out, info):
    d = load(os.path.join(out, "allo.json"))
    p, k = d["reference"], d["kestrel"]
    whole = p["sample_us"] + p["step_us"]
    return {"allo-step": (num(k["step_dedup_us"]), num(whole), fx(whole / k["step_dedup_us"])),
            "allo-sampling": (num(k["sample_us"]), num(p["sample_us"]), fx(p["sample_us"] / k["sample_us"]))}


def r_allo_asymexp(out, info):
    d = load(os.path.join(out, "allo_asymexp.json"))
    by = {line["workload"]: line for line in d["peer"] if "workload" in line}
    k = d["kestrel"] or {}
    cells = {}
    if "step" in by and k.get("step_ms"):
        cells["asymexp-step"] = (f"{k['step_ms']:.3f}", f"{by['step']['median']:.3f}", fx(by["step"]["median"] / k["step_ms"]))
    if "collect" in by and k.get("collect_s"):
        cells["asymexp-collect"] = (f"{k['collect_s']:.3f}", f"{by['collect']['median']:.1f}",
                                    fx(by["collect"]["median"] / k["collect_s"]))
    train = info.get("seconds", [])
    if len(train) > 1 and "collect" in by and "loop_iteration" in by:
        ref = by["collect"]["median"] + 20000 * by["loop_iteration"]["mean"] / 1e3
        cells["asymexp-run"] = (f"{train[1]:.1f}", f"{ref:.1f}", fx(ref / train[1]))
    return cells


def r_allo_asymexp_e2e(out, info):
    ref = load(os.path.join(out, "asymexp_seeds.json"))
    d = load(os.path.join(out, "asymexp_e2e.json"))
    secs = info.get("seconds", [])
    ref_s = sum(s["wall_s"] for s in ref["seeds"])
    worst = max((r for r in d["rows"] if r["diff_se"] == r["diff_se"]), key=lambda r: abs(r["diff_se"]))
    k = secs[1] if len(secs) > 1 else None
    return {"asymexp-e2e": (f"{num(k)} s for {d['kestrel_seeds']} seeds; largest difference {worst['diff_se']:+.2f} SE "
                            f"of {len(d['rows'])}",
                            f"{num(ref_s)} s for {d['reference_seeds']} seeds", fx(ref_s / k) if k else "—")}


def r_hunt(out, info):
    d = load(os.path.join(out, "hunt.json"))
    s, k = d["sorrel"], d["kestrel"]
    cells = {"hunt-turn": (num(k["turn_us"]), num(s["turn_ms"] * 1e3), fx(s["turn_ms"] * 1e3 / k["turn_us"])),
             "hunt-update": (num(k["iqn_update_us"]), num(s["update_ms"] * 1e3),
                             fx(s["update_ms"] * 1e3 / k["iqn_update_us"]))}
    r = d.get("runs")
    if r:
        sc, k1, k2 = r["sorrel_cpu_s"][0], r["kestrel_wall_s_1_thread"][0], r["kestrel_wall_s_2_threads"][0]
        sr, kr = r["sorrel_last100_reward"], r["kestrel_last100_reward"]
        cells["hunt-run"] = (f"{k1:.2f} (1 core) / {k2:.2f} (2 threads); reward {kr[0]:.1f} ± {kr[1]:.1f} "
                             f"({r['seeds']} seeds, {r['epochs']:,} epochs)",
                             f"{sc:.1f}; reward {sr[0]:.1f} ± {sr[1]:.1f}", f"{fx(sc / k1)} / {fx(sc / k2)}")
    return cells


def r_actdyn(out, info):
    d = load_last(os.path.join(out, "actdyn.json"))
    pl, tr = d["planner_ms"], d["train_mlp_ms"]
    lo, hi = ACTDYN_PLANNER_MS
    cells = {"actdyn-planner": (num(pl), f"{lo:.0f}–{hi:.0f}", f"{fx(lo / pl)[:-1]}–{fx(hi / pl)}"),
             "actdyn-train": (f"{num(tr * 1e3)} µs", f"{ACTDYN_TRAIN_E1_MS[0]} ms", fx(ACTDYN_TRAIN_E1_MS[0] / tr))}
    secs = info.get("seconds", [])
    if len(secs) > 2:
        lo, hi = ACTDYN_E2_RUN_S
        cells["actdyn-run"] = (f"{secs[2]:.1f} s", "1.3–2.7 h", f"{fx(lo / secs[2])[:-1]}–{fx(hi / secs[2])}")
    return cells


def r_actdyn_e1(out, info):
    d = load(os.path.join(out, "actdyn_e1.json"))
    inside = sum(r["inside"] for r in d["rows"])
    total = sum(len(r["reference"]) for r in d["rows"])
    return {"actdyn-e1": (f"{inside} of {total} anchor values inside Kestrel's {d['seeds']}-seed range",
                          "4 runs", f"smallest Mann–Whitney p {min(r['p'] for r in d['rows']):.2f} "
                                    f"({len(d['rows'])} columns)")}


def r_nn(out, info):
    d = load(os.path.join(out, "nn.json"))
    j, k1, k2 = d["jax"], d["kestrel_1_thread"], d["kestrel_2_threads"]
    return {"nn-train": (num(k1["train_us"]), num(j["train_us"]), fx(j["train_us"] / k1["train_us"])),
            "nn-many": (f"{num(k1['train_many_us'])} / {num(k2['train_many_us'])}", num(j["train_many_us"]),
                        f"{fx(j['train_many_us'] / k1['train_many_us'])} / {fx(j['train_many_us'] / k2['train_many_us'])}")}


def r_dist(out, info):
    d = load(os.path.join(out, "dist.json"))
    m = d["measured"]
    g = m["gen_1024"]
    ms = lambda s: f"{s * 1e3:.2f}"  # noqa: E731
    return {"ray-gen": (f"{ms(g['local_1'])} (1 thread) / {ms(g['local_2'])} (2 threads)",
                        f"{ms(g['ray_1'])} / {ms(g['ray_2'])}", f"Ray adds {ms(g['ray_1'] - g['local_1'])} ms (1 shard)",
                        f"Ray {d['ray']}, local instance, 2 CPUs (1 / 2 shards)"),
            "ray-sweep": (f"{m['sweep_ray']:.2f} (Ray engine)", f"{m['sweep_local']:.2f} (local engine)",
                          fx(m["sweep_local"] / m["sweep_ray"]))}


RENDER = {"jax_ffi": r_jax_ffi, "arc_ppo_jax": r_arc_ppo_jax, "mppi_evosax": r_mppi_evosax, "evo_all": r_evo_all,
          "evo": r_evo, "mppi": r_mppi, "mppi_tune_python": r_mppi_tune_python, "arc": r_arc, "arc_paper": r_arc_paper,
          "arc_ppo": r_arc_ppo, "py_vec": r_py_vec, "allo": r_allo, "allo_asymexp": r_allo_asymexp,
          "allo_asymexp_e2e": r_allo_asymexp_e2e, "hunt": r_hunt, "actdyn": r_actdyn, "actdyn_e1": r_actdyn_e1,
          "nn": r_nn, "dist": r_dist}


# ------------------------------------------------------------------------------ the table
def cells_of(line):
    """The cells of a Markdown table row (no cell of this table holds a `|`)."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def row_line(workload, peer, k, p, ratio, cpu, commit, label, anchor):
    return f"| {workload} | {peer} | {k} | {p} | {ratio} | {cpu} | `{commit}` | [{label}](#{anchor}) |"


def render(results_dir):
    """{row id: table line} for every row the saved launch in `results_dir` fills."""
    launch = load(os.path.join(results_dir, "launch.json"))
    lines = {}
    spec = {r[0]: r for r in ROWS}
    for name, info in launch["comparisons"].items():
        if not info.get("ok") or name not in RENDER:
            continue
        try:
            got = RENDER[name](os.path.join(results_dir, name), info)
        except (OSError, KeyError, ValueError, TypeError, ZeroDivisionError, IndexError) as e:
            print(f"all.py: {name}: its results do not render ({type(e).__name__}: {e}); its rows keep the table's",
                  file=sys.stderr)
            continue
        for rid, cell in got.items():
            _, workload, peer, label, anchor = spec[rid]
            k, p, ratio = cell[:3]
            if len(cell) > 3:
                peer = cell[3]
            lines[rid] = row_line(workload, peer, k, p, ratio, launch["cpu"], launch["commit"], label, anchor)
    return lines, launch


def merge(text, fresh, launch):
    """`text` (BENCHMARKS.md) with the table between the markers rebuilt: a fresh line for each
    row id in `fresh`, the existing line (same workload cell) for the others, in ROWS order."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise SystemExit(f"BENCHMARKS.md needs exactly one {BEGIN} before one {END}")
    head, rest = text.split(BEGIN)
    body, tail = rest.split(END)
    old = {}
    for line in body.splitlines():
        if line.startswith("| ") and not line.startswith("| workload |"):
            old[cells_of(line)[0]] = line
    out = []
    for rid, workload, peer, label, anchor in ROWS:
        if rid in fresh:
            out.append(fresh[rid])
        elif workload in old:
            out.append(old[workload])
        else:
            out.append(row_line(workload, peer, "—", "—", "not measured yet", "—", "—", label, anchor))
    stamp = next((line for line in body.splitlines() if line.startswith("Rows ")), None)
    if fresh:
        stamp = (f"Rows at `{launch['commit']}` were re-run by `{launch['command']}` on {launch['date']} "
                 f"({launch['cpu']}); the others keep the launch recorded in their section.")
    table = ["", stamp or "", "", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)] + out
    return head + BEGIN + "\n" + "\n".join(table) + "\n" + END + tail


# ------------------------------------------------------------------------------ running
def subst(token, out):
    token = token.replace("{out}", out)
    m = re.fullmatch(r"\{newest:(.+):([^:/]+)\}", token)
    if m:
        return os.path.dirname(newest(m.group(1), m.group(2)))
    return token


def shown(step, out="{out}"):
    argv = [t.replace("{out}", out) for t in step["argv"]]
    s = " ".join(a if re.fullmatch(r"[\w@%+=:,./{}-]+", a) else "'" + a.replace("'", "'\\''") + "'" for a in argv)
    if step.get("stdout"):
        s += " > " + step["stdout"].replace("{out}", out)
    return s


def run_step(step, out):
    argv = [subst(t, out) for t in step["argv"]]
    argv = [sys.executable if a == "python3" else a for a in argv]
    t0 = time.perf_counter()
    if step.get("stdout"):
        path = subst(step["stdout"], out)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            rc = subprocess.run(argv, cwd=ROOT, stdout=f).returncode
    else:
        rc = subprocess.run(argv, cwd=ROOT).returncode
    return rc, time.perf_counter() - t0


def install_kestrel(venv, requirements):
    from common import install_kestrel as install, venv_python
    install(venv_python(venv, requirements))


def commit():
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def selected(only):
    if not only:
        return COMPARISONS
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in {c.name for c in COMPARISONS}]
    if unknown:
        raise SystemExit(f"unknown comparison(s) {', '.join(unknown)}; --list names them")
    return [c for c in COMPARISONS if c.name in names]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--quick", action="store_true", help="each comparison's short form (a few minutes each at most)")
    ap.add_argument("--only", metavar="NAME[,NAME]", help="only these comparisons (--list names them)")
    ap.add_argument("--list", action="store_true", help="print the comparisons, their commands and their rows")
    ap.add_argument("--dry-run", action="store_true", help="print the commands a launch would run, run nothing")
    ap.add_argument("--from-json", metavar="DIR", help="re-render the table from a launch saved in DIR, run nothing")
    ap.add_argument("--out", metavar="DIR", help="the results folder (default runs/compare/all-<UTC time>)")
    ap.add_argument("--write", action="store_true", help="rewrite BENCHMARKS.md's table (the default without --quick)")
    ap.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone; the table goes to DIR/table.md")
    ap.add_argument("--benchmarks", default=BENCHMARKS, help=argparse.SUPPRESS)
    ap.add_argument("--install-kestrel", nargs=2, metavar=("VENV", "REQUIREMENTS"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.install_kestrel:
        return install_kestrel(*a.install_kestrel)
    chosen = selected(a.only)

    if a.list:
        for c in chosen:
            print(f"{c.name}: {c.title}")
            print(f"  rows: {', '.join(c.rows)}")
            if c.note:
                print(f"  note: {c.note}")
            for form, steps in (("full", c.full), ("quick", c.quick)):
                for s in steps or []:
                    print(f"  {form:>5}: {shown(s)}")
        if not a.only:
            print(f"\nrows no comparison re-runs (kept as recorded): {', '.join(KEPT) or 'none'}")
            print("scripts of tools/compare not run here:")
            for name, why in NOT_RUN.items():
                print(f"  {name}: {why}")
        return 0

    out_root = a.from_json or a.out or os.path.join(ROOT, "runs", "compare",
                                                    time.strftime("all-%Y%m%d-%H%M%S", time.gmtime()))
    out_root = os.path.abspath(out_root)
    if a.dry_run:
        for c in chosen:
            print(f"# {c.name}: {c.title}")
            for s in c.steps(a.quick) or []:
                print(shown(s, os.path.relpath(os.path.join(out_root, c.name), ROOT)))
        print(f"# then: the table from {os.path.relpath(out_root, ROOT)}/ into "
              f"{'BENCHMARKS.md' if (a.write or not a.quick) and not a.no_write else os.path.relpath(out_root, ROOT) + '/table.md'}")
        return 0

    if not a.from_json:
        os.makedirs(out_root, exist_ok=True)
        launch = {"commit": commit(), "cpu": cpu_model(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
                  "quick": a.quick, "command": " ".join(["python3 tools/compare/all.py", *(argv if argv is not None else sys.argv[1:])]),
                  "comparisons": {}}
        failed = []
        for c in chosen:
            out = os.path.join(out_root, c.name)
            os.makedirs(out, exist_ok=True)
            info = {"ok": True, "commands": [], "seconds": [], "rc": []}
            print(f"== {c.name}: {c.title}", flush=True)
            for s in c.steps(a.quick) or []:
                info["commands"].append(shown(s, out))
                try:
                    rc, secs = run_step(s, out)
                except OSError as e:
                    print(f"all.py: {c.name}: {e}", file=sys.stderr)
                    rc, secs = 127, 0.0
                info["rc"].append(rc)
                info["seconds"].append(secs)
                print(f"   rc {rc} after {secs:.1f} s: {shown(s, out)}", flush=True)
                if rc != 0:
                    info["ok"] = False
                    failed.append(c.name)
                    break
            launch["comparisons"][c.name] = info
            with open(os.path.join(out_root, "launch.json"), "w") as f:
                json.dump(launch, f, indent=1)
    fresh, launch = render(out_root)
    with open(a.benchmarks) as f:
        text = f.read()
    new = merge(text, fresh, launch)
    table = new.split(BEGIN)[1].split(END)[0].strip() + "\n"
    with open(os.path.join(out_root, "table.md"), "w") as f:
        f.write(table)
    write = (a.write or not launch.get("quick")) and not a.no_write
    if write and new != text:
        with open(a.benchmarks, "w") as f:
            f.write(new)
    print(table)
    print(f"{len(fresh)} row(s) from {os.path.relpath(out_root, ROOT)}; "
          + (f"written into {os.path.relpath(a.benchmarks, ROOT)}" if write else f"table in {os.path.relpath(out_root, ROOT)}/table.md"))
    bad = [n for n, i in launch["comparisons"].items() if not i.get("ok")]
    if bad:
        print(f"failed: {', '.join(bad)} (their rows keep the table's launch)", file=sys.stderr)
    return 1 if bad and not a.from_json else 0


if __name__ == "__main__":
    sys.exit(main())
