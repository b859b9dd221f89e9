#!/usr/bin/env python3
"""Per-step time from Python with the info on and off, each arm `--steps` steps x `--rounds`
rounds alternated in one process: the floor (min) and median of each arm, for BENCHMARKS.md
"Episode statistics in `info`" and "ARC's info and action forms from Python".

- `cartpole`: CartPole-v1 with random actions, `episode_stats` on and off (8, 64, 1,024 envs);
- `arc`: Mini-ARC 5x5 (the JaxARC kernel, all bugs), `arc_info` on and off, and the bbox action
  form with the info on (1,024 and 4,096 envs).

Run with the venv py_vec.py builds (the release wheel):
    RAYON_NUM_THREADS=2 tools/venv-pyvec/bin/python tools/compare/info_floor.py [cartpole] [arc]
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arc as arcbench  # noqa: E402  (the Mini-ARC task file py_vec.py uses)

import kestrel  # noqa: E402


def timed(arms, steps, rounds):
    """Alternates the arms (name -> (env, actions, times)) round by round; returns each
    arm's per-round times (us/step)."""
    for _ in range(rounds):
        for v, acts, times in arms.values():
            t0 = time.perf_counter()
            for i in range(steps):
                v.step(acts[i % len(acts)])
            times.append((time.perf_counter() - t0) / steps * 1e6)
    return {name: np.array(t) for name, (_, _, t) in arms.items()}


def report(n, res, on, off):
    for name, t in res.items():
        print(f"{n} envs, {name}: floor {t.min():.2f} us/step, median {np.median(t):.2f}")
    # Floors, and the median of the ratios of the rounds run back to back (less sensitive to
    # the machine's slow drifts than either arm's floor alone).
    paired = np.median(res[on] / res[off])
    print(f"{n} envs: {on} / {off} = {res[on].min() / res[off].min():.3f} (floors), {paired:.3f} (paired median)")


def cartpole(rounds, steps):
    for n in (8, 64, 1024):
        rng = np.random.default_rng(0)
        acts = [rng.integers(0, 2, n) for _ in range(16)]
        arms = {}
        for name, stats in (("stats on", True), ("stats off", False)):
            v = kestrel.make_vec("CartPole-v1", n, copy=False, episode_stats=stats)
            v.reset(seed=0)
            arms[name] = (v, acts, [])
        report(n, timed(arms, steps or (2000 if n < 1024 else 400), rounds), "stats on", "stats off")


def arc(rounds, steps):
    mini = arcbench.mini_task()
    for n in (1024, 4096):
        masks, boxes = arcbench.mini_batches(n)
        arms = {}
        steps = steps or 200
        for name, kw, acts in (("info on", dict(arc_info=True), masks), ("info off", dict(arc_info=False), masks),
                               ("bbox form", dict(arc_info=True, selection="bbox"), boxes)):
            v = kestrel.make_vec("ARC-jaxarc-v0", n, data=mini, canvas=5, bugs="all", copy=False,
                                 autoreset_mode="next_step", **kw)
            v.reset(seed=0)
            arms[name] = (v, acts, [])
        report(n, timed(arms, steps, rounds), "info on", "info off")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("workloads", nargs="*", help="cartpole, arc (default: both)")
    p.add_argument("--rounds", type=int, default=25, help="alternations of the arms (default 25)")
    p.add_argument("--steps", type=int, default=0,
                   help="steps per arm and round (default: CartPole 2,000, 400 at 1,024 envs; ARC 200)")
    a = p.parse_args()
    for w in a.workloads or ["cartpole", "arc"]:
        if w not in ("cartpole", "arc"):
            p.error(f"workload {w!r}: cartpole or arc")
        {"cartpole": cartpole, "arc": arc}[w](a.rounds, a.steps)


if __name__ == "__main__":
    main()
