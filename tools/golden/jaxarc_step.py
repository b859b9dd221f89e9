"""Golden fixtures for Kestrel's `jaxarc` mode (all bug switches on) from JaxARC 1.0.3.

Builds JaxARC `State`s directly from generated grids (sync once after reset), then drives
the package's own jitted `jaxarc.envs.functional.step` with random actions: all 35 ops,
out-of-range op ids (clipped by JaxARC), masks, and bbox/point selections converted by
JaxARC's own wrapper functions (including out-of-canvas coordinates), in train and eval
mode. Records grid, working mask dims, selection, clipboard, similarity and reward (f32 bit
patterns) after every step. No file of ../shared/data is embedded.

Usage:
    python3 -m venv tools/venv-jaxarc && tools/venv-jaxarc/bin/pip install -r tools/golden/requirements-jaxarc.txt
    tools/venv-jaxarc/bin/python tools/golden/jaxarc_step.py --canvas 10 --episodes 50 --steps 40 --seed 3 \
        --out tests/golden/jaxarc_s10.json
"""
import argparse
import os
import sys
import json
import struct
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import bits, enc, gen_grid  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxarc  # noqa: E402
from jaxarc.configs.action_config import ActionConfig  # noqa: E402
from jaxarc.configs.dataset_config import DatasetConfig  # noqa: E402
from jaxarc.configs.grid_initialization_config import GridInitializationConfig  # noqa: E402
from jaxarc.configs.reward_config import RewardConfig  # noqa: E402
from jaxarc.envs import functional  # noqa: E402
from jaxarc.envs.actions import create_action  # noqa: E402
from jaxarc.state import State  # noqa: E402
from jaxarc.types import EnvParams  # noqa: E402
from jaxarc.utils.grid_utils import compute_grid_similarity, get_actual_grid_shape_from_mask  # noqa: E402
from jaxarc.wrappers.action_wrappers import _bbox_to_mask, _point_to_mask  # noqa: E402




def pad(g, S):
    out = np.full((S, S), -1, dtype=np.int32)
    out[:g.shape[0], :g.shape[1]] = g
    m = np.zeros((S, S), dtype=bool)
    m[:g.shape[0], :g.shape[1]] = True
    return jnp.asarray(out), jnp.asarray(m)






def f32bits(x):
    return struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--canvas", type=int, default=10)
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    S = a.canvas
    rng = np.random.default_rng(a.seed)
    reward = RewardConfig(step_penalty=-0.005, success_bonus=10.0, similarity_weight=1.0,
                          unsolved_submission_penalty=-1.0)
    params = {mode: EnvParams(dataset=DatasetConfig(max_grid_height=S, max_grid_width=S), action=ActionConfig(),
                              reward=reward, grid_initialization=GridInitializationConfig(), max_episode_steps=150,
                              buffer=jnp.zeros(1), episode_mode=mode) for mode in (0, 1)}
    episodes, total, ops = [], 0, [0] * 35
    for e in range(a.episodes):
        mode = 1 if e % 5 == 4 else 0
        h, w = int(rng.integers(1, S + 1)), int(rng.integers(1, S + 1))
        inp = gen_grid(rng, h, w)
        if rng.random() < 0.3:
            out = inp.copy()
        else:
            out = gen_grid(rng, int(rng.integers(1, S + 1)), int(rng.integers(1, S + 1)))
        wg, wm = pad(inp, S)
        if mode == 0:
            tg, tm = pad(out, S)
        else:
            tg, tm = jnp.full((S, S), -1, dtype=jnp.int32), jnp.zeros((S, S), dtype=bool)
        sim = compute_grid_similarity(wg, wm, tg, tm)
        key = jax.random.PRNGKey(e)
        st = State(working_grid=wg, working_grid_mask=wm, input_grid=wg, input_grid_mask=wm, target_grid=tg,
                   target_grid_mask=tm, selected=jnp.zeros((S, S), dtype=bool),
                   clipboard=jnp.zeros((S, S), dtype=jnp.int32), step_count=jnp.array(0, dtype=jnp.int32),
                   task_idx=jnp.array(0, dtype=jnp.int32), pair_idx=jnp.array(0, dtype=jnp.int32),
                   allowed_operations_mask=jnp.ones(35, dtype=bool),
                   similarity_score=jnp.asarray(sim, dtype=jnp.float32), key=key)
        steps = []
        for t in range(a.steps):
            u = rng.random()
            op = int(rng.integers(0, 35))
            if u < 0.02:
                op = int(rng.choice([-3, 35, 99]))
            elif u < 0.05:
                op = 34
            k = rng.random()
            ch, cw = np.asarray(get_actual_grid_shape_from_mask(st.working_grid_mask))
            if k < 0.35:
                lo, hi = (-2, S + 2) if rng.random() < 0.15 else (0, max(int(ch), 1))
                r1, r2 = int(rng.integers(lo, hi)), int(rng.integers(lo, hi))
                lo2, hi2 = (lo, hi) if lo < 0 else (0, max(int(cw), 1))
                c1, c2 = int(rng.integers(lo2, hi2)), int(rng.integers(lo2, hi2))
                act = _bbox_to_mask({"operation": op, "r1": r1, "c1": c1, "r2": r2, "c2": c2}, (S, S))
                sel = {"bbox": [r1, c1, r2, c2]}
            elif k < 0.6:
                lo, hi = (-2, S + 2) if rng.random() < 0.15 else (0, max(int(ch), 1))
                r = int(rng.integers(lo, hi))
                c = int(rng.integers(lo if lo < 0 else 0, hi if lo < 0 else max(int(cw), 1)))
                act = _point_to_mask({"operation": op, "row": r, "col": c}, (S, S))
                sel = {"point": [r, c]}
            elif k < 0.8:
                m = rng.random((S, S)) < rng.choice([0.05, 0.5])
                act = create_action(op, jnp.asarray(m))
                sel = {"mask": bits(m)}
            else:
                act = create_action(op, jnp.zeros((S, S), dtype=bool))
                sel = {"mask": [0] * S}
            st, ts = functional.step(params[mode], st, act)
            gh, gw = np.asarray(get_actual_grid_shape_from_mask(st.working_grid_mask))
            mask_np = np.asarray(st.working_grid_mask)
            assert mask_np.sum() == gh * gw, "working mask is not a top-left rectangle"
            steps.append({
                "op": op, **sel,
                "grid": enc(st.working_grid), "dims": [int(gh), int(gw)], "selected": bits(st.selected),
                "clip": enc(st.clipboard), "sim": f32bits(st.similarity_score), "reward": f32bits(ts.reward),
                "step_type": int(ts.step_type),
            })
            ops[min(max(op, 0), 34)] += 1
        total += len(steps)
        episodes.append({"mode": mode, "input": {"h": h, "w": w, "cells": enc(inp)},
                         "output": {"h": int(out.shape[0]), "w": int(out.shape[1]), "cells": enc(out)},
                         "steps": steps})
    with open(a.out, "w") as f:
        json.dump({"peer": f"jaxarc {jaxarc.__version__}", "canvas": S, "seed": a.seed, "total_steps": total,
                   "episodes": episodes}, f, separators=(",", ":"))
    print(f"{a.out}: {len(episodes)} episodes, {total} steps; ops never drawn: {[i for i in range(35) if not ops[i]]}")


if __name__ == "__main__":
    main()
