"""Golden fixtures for Kestrel's `o2arc` mode from ARCLE 0.2.6 `O2ARCv2Env`.

Drives the pinned peer over random actions (all 35 ops; mask, bbox and point selections;
empty selections that move the persistent object off the grid and back; resizes up and
down; submits with trials and reset_on_submit) on generated grids, and records the full
state after every step. No file of ../shared/data is embedded: every grid is generated here.

Usage:
    python3 -m venv tools/venv-arcle && tools/venv-arcle/bin/pip install -r tools/golden/requirements-arcle.txt
    tools/venv-arcle/bin/python tools/golden/arcle_o2arc.py --canvas 10 --episodes 60 --steps 40 --seed 1 \
        --out tests/golden/arcle_o2arc_s10.json
Grids are written as strings of digits (row-major, canvas-sized); masks as per-row bitmasks.
"""
import argparse
import os
import sys
import json
import warnings

import numpy as np

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import bits, enc, gen_grid  # noqa: E402
import arcle  # noqa: E402
from arcle.envs import O2ARCv2Env  # noqa: E402
from arcle.loaders import Loader  # noqa: E402


class FixedLoader(Loader):
    def __init__(self, data):
        self._data = data
        super().__init__()

    def get_path(self, **kwargs):
        return []

    def parse(self, **kwargs):
        return self._data




def gen_task(rng, S):
    pairs = []
    identity = rng.random() < 0.25
    for _ in range(rng.integers(2, 4)):
        h, w = rng.integers(1, S + 1), rng.integers(1, S + 1)
        inp = gen_grid(rng, h, w)
        if identity:
            out = inp.copy()
        else:
            oh, ow = rng.integers(1, S + 1), rng.integers(1, S + 1)
            out = gen_grid(rng, oh, ow)
        pairs.append((inp, out))
    return pairs






def random_action(rng, S, dims):
    u = rng.random()
    op = int(rng.integers(20, 28)) if u < 0.35 else int(rng.integers(0, 35))
    sel = np.zeros((S, S), dtype=np.int8)
    k = rng.random()
    h, w = int(dims[0]), int(dims[1])
    if k < 0.3:  # bbox, mostly inside the grid, sometimes anywhere on the canvas
        hi_r, hi_c = (h, w) if rng.random() < 0.8 else (S, S)
        r1, r2 = sorted(rng.integers(0, max(hi_r, 1), size=2))
        c1, c2 = sorted(rng.integers(0, max(hi_c, 1), size=2))
        sel[r1:r2 + 1, c1:c2 + 1] = 1
        kind = "bbox"
    elif k < 0.55:
        hi_r, hi_c = (h, w) if rng.random() < 0.8 else (S, S)
        sel[rng.integers(0, max(hi_r, 1)), rng.integers(0, max(hi_c, 1))] = 1
        kind = "point"
    elif k < 0.75:
        sel = (rng.random((S, S)) < rng.choice([0.05, 0.5])).astype(np.int8)
        kind = "mask"
    else:
        kind = "empty"
    return op, sel, kind


def snapshot(st):
    o = st["object_states"]
    return {
        "grid": enc(st["grid"]),
        "dims": [int(x) for x in st["grid_dim"]],
        "selected": bits(st["selected"]),
        "clip": enc(st["clip"]),
        "clip_dim": [int(x) for x in st["clip_dim"]],
        "active": int(o["active"][0]),
        "object": enc(o["object"]),
        "object_sel": bits(o["object_sel"]),
        "object_dim": [int(x) for x in o["object_dim"]],
        "object_pos": [int(x) for x in o["object_pos"]],
        "background": enc(o["background"]),
        "parity": int(o["rotation_parity"][0]),
        "trials": int(st["trials_remain"][0]),
        "terminated": int(st["terminated"][0]),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--canvas", type=int, default=10)
    ap.add_argument("--episodes", type=int, default=60)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    S = a.canvas
    rng = np.random.default_rng(a.seed)
    episodes = []
    total = 0
    skipped = 0
    kinds = {}
    ops = [0] * 35
    while len(episodes) < a.episodes:
        pairs = gen_task(rng, S)
        data = [([p[0] for p in pairs], [p[1] for p in pairs], [pairs[0][0]], [pairs[0][1]], {"id": "gen"})]
        max_trial = int(rng.choice([-1, -1, 1, 3]))
        ros = bool(rng.random() < 0.25)
        env = O2ARCv2Env(data_loader=FixedLoader(data), max_grid_size=(S, S), max_trial=max_trial)
        pair = int(rng.integers(0, len(pairs)))
        st, _ = env.reset(options={"prob_index": 0, "subprob_index": pair, "adaptation": True,
                                   "reset_on_submit": ros})
        steps = []
        try:
            for _ in range(a.steps):
                op, sel, kind = random_action(rng, S, env.current_state["grid_dim"])
                if rng.random() < 0.03:
                    op = 34
                _, reward, term, trunc, _ = env.step({"operation": op, "selection": sel})
                snap = snapshot(env.current_state)
                snap.update({"op": op, "sel": bits(sel), "reward": float(reward), "term": bool(term)})
                steps.append(snap)
                kinds[kind] = kinds.get(kind, 0) + 1
                ops[op] += 1
        except (OverflowError, IndexError, RecursionError):
            skipped += 1  # ARCLE raised: keep the steps before it (none of them is affected)
        if not steps:
            continue
        total += len(steps)
        episodes.append({
            "train": [[enc_pair(p[0], S), enc_pair(p[1], S)] for p in pairs],
            "pair": pair, "max_trials": max_trial, "reset_on_submit": ros, "steps": steps,
        })
    out = {"peer": f"arcle {arcle.__version__ if hasattr(arcle, '__version__') else '0.2.6'}",
           "canvas": S, "seed": a.seed, "total_steps": total, "episodes": episodes}
    with open(a.out, "w") as f:
        json.dump(out, f, separators=(",", ":"))
    print(f"{a.out}: {len(episodes)} episodes, {total} steps, selection kinds {kinds}, "
          f"episodes cut short by ARCLE exceptions: {skipped}, ops never drawn: {[i for i in range(35) if ops[i] == 0]}")


def enc_pair(g, S):
    h, w = g.shape
    return {"h": int(h), "w": int(w), "cells": "".join(chr(48 + int(v)) for v in g.reshape(-1))}


if __name__ == "__main__":
    main()
