#!/usr/bin/env python3
"""Microseconds per `VectorEnv.step` of Mini-ARC 5x5 (jaxarc, JaxARC's bugs, copy=False,
next-step autoreset) from Python, for masks and the bbox form, at 1,024 and 4,096 envs: eight
pre-drawn batches cycled (`arc.mini_batches`). Also `VecCore.step` alone (the binding's call,
without the Gymnasium layer) and the Gymnasium layer alone (the binding's call replaced by a
stub), and `VectorEnv.rollout` over pre-stacked actions of 64 steps (the pool cycled), per
step. Run it with a venv's python where `kestrel` is installed (tools/venv-pyvec after
`tools/compare/py_vec.py`); to compare two builds, install each in turn and alternate.

Usage: OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=2 tools/venv-pyvec/bin/python tools/compare/py_arc_step.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kestrel  # noqa: E402
from arc import mini_batches, mini_task  # noqa: E402
from kestrel._spaces import action_kwargs  # noqa: E402


def timed(f, budget=1.0):
    for _ in range(20):
        f()
    n, t0 = 0, time.perf_counter()
    while True:
        for _ in range(50):
            f()
        n += 50
        t = time.perf_counter() - t0
        if t > budget:
            return t / n * 1e6


class Stub:
    """The binding with a `step` that does nothing: what the Gymnasium layer costs alone."""

    def __init__(self, core):
        self.core = core

    def step(self, **kw):
        return 0

    def __getattr__(self, k):
        return getattr(self.core, k)


def main():
    mini = mini_task()
    for n in (1024, 4096):
        masks, boxes = mini_batches(n)
        for form in ("mask", "bbox"):
            v = kestrel.make_vec("ARC-jaxarc-v0", n, data=mini, canvas=5, bugs="all", copy=False,
                                 autoreset_mode="next_step", selection=form)
            v.reset(seed=0)
            pool = boxes if form == "bbox" else masks
            kws = [action_kwargs(v.single_action_space, a, v.num_envs, v._arcact) for a in pool]
            buf = v._outputs()[0]
            it = {"i": 0}

            def step():
                it["i"] = (it["i"] + 1) % len(pool)
                v.step(pool[it["i"]])

            def core():
                it["i"] = (it["i"] + 1) % len(pool)
                v._core.step(**kws[it["i"]], obs=buf)

            full, binding = timed(step), timed(core)
            real, v._core = v._core, Stub(v._core)
            layer = timed(step)
            v._core = real
            steps = 64
            stacked = {k: np.stack([pool[t % len(pool)][k] for t in range(steps)]) for k in pool[0]}
            roll = timed(lambda: v.rollout(stacked)) / steps
            print(f"{n} envs, {form}: VectorEnv.step {full:.1f} us, VecCore.step {binding:.1f} us, "
                  f"Gymnasium layer {layer:.1f} us, VectorEnv.rollout {roll:.1f} us a step", flush=True)


if __name__ == "__main__":
    main()
