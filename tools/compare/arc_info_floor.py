#!/usr/bin/env python3
"""Per-step time of Mini-ARC from Python with ARC's info on and off and with the bbox action
form, each arm 200 steps x 15 rounds alternated in one process: the floor (min) and median
of each, for BENCHMARKS.md "ARC's info and action forms from Python".

Run with the venv py_vec.py builds (the release wheel):
    RAYON_NUM_THREADS=2 tools/venv-pyvec/bin/python tools/compare/arc_info_floor.py [1024 4096]
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import arc as arcbench  # noqa: E402  (the Mini-ARC task file py_vec.py uses)

import kestrel  # noqa: E402


def main():
    mini = arcbench.mini_task()
    for n in [int(a) for a in sys.argv[1:]] or [1024, 4096]:
        r, idx = np.random.default_rng(1), np.arange(5)

        def bbox_batch():
            rr, cc = np.sort(r.integers(0, 5, (n, 2)), 1), np.sort(r.integers(0, 5, (n, 2)), 1)
            rows = (idx[None] >= rr[:, :1]) & (idx[None] <= rr[:, 1:])
            cols = (idx[None] >= cc[:, :1]) & (idx[None] <= cc[:, 1:])
            return {"operation": r.integers(0, 35, n), "selection": rows[:, :, None] & cols[:, None, :]}

        def corners(b):
            rows, cols = b["selection"].any(2), b["selection"].any(1)
            return {"operation": b["operation"], "r1": rows.argmax(1), "c1": cols.argmax(1),
                    "r2": 4 - rows[:, ::-1].argmax(1), "c2": 4 - cols[:, ::-1].argmax(1)}

        masks = [bbox_batch() for _ in range(8)]
        boxes = [corners(b) for b in masks]
        arms = {}
        for name, kw, acts in (("info on", dict(arc_info=True), masks), ("info off", dict(arc_info=False), masks),
                               ("bbox form", dict(arc_info=True, selection="bbox"), boxes)):
            v = kestrel.make_vec("ARC-jaxarc-v0", n, data=mini, canvas=5, bugs="all", copy=False,
                                 autoreset_mode="next_step", **kw)
            v.reset(seed=0)
            arms[name] = (v, acts, [])
        for _ in range(15):
            for v, acts, times in arms.values():
                t0 = time.perf_counter()
                for i in range(200):
                    v.step(acts[i % 8])
                times.append((time.perf_counter() - t0) / 200 * 1e6)
        for name, (_, _, t) in arms.items():
            print(f"{n} envs, {name}: floor {min(t):.1f} us/step, median {np.median(t):.1f}")


if __name__ == "__main__":
    main()
