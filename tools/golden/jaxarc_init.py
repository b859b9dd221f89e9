"""Golden fixtures for Kestrel's `jaxarc`-mode start grids (`GridInit`, all bug switches on)
from JaxARC 1.0.3's own grid initialisation.

For generated tasks (1-4 training pairs of random shapes, one test pair) and five
`GridInitializationConfig`s (the class defaults, each mode alone, one permutation kind, the
dense pattern), calls JaxARC's `functional._initialize_grids` (what `reset` calls after
drawing task and pair) with a fresh key per case in train and eval mode, and records:
- the draws JaxARC makes from that key, re-derived here along the package's own key path
  (mode, demo pair, permutation kind and its parameter, the noise arrays of a random start);
- JaxARC's start: the working grid (all canvas cells), its mask (a top-left rectangle) and
  the similarity to the target (f32 bits).
Kestrel builds the start from the recorded draws and must give JaxARC's grid, so a draw
re-derived wrongly here fails the test too. No file of ../shared/data is embedded.

Usage:
    tools/venv-jaxarc/bin/python tools/golden/jaxarc_init.py --canvas 5 --cases 300 --seed 7 \
        --out tests/golden/jaxarc_init_s5.json
"""
import argparse
import json
import os
import struct
import sys
import warnings

warnings.filterwarnings("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import bits, enc, gen_grid  # noqa: E402
import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxarc.configs.action_config import ActionConfig  # noqa: E402
from jaxarc.configs.dataset_config import DatasetConfig  # noqa: E402
from jaxarc.configs.grid_initialization_config import GridInitializationConfig  # noqa: E402
from jaxarc.configs.reward_config import RewardConfig  # noqa: E402
from jaxarc.envs import functional  # noqa: E402
from jaxarc.envs.grid_initialization import _select_batch_modes  # noqa: E402
from jaxarc.types import EnvParams, JaxArcTask  # noqa: E402
from jaxarc.utils.grid_utils import compute_grid_similarity  # noqa: E402

MAX_TRAIN = 4
MODES = ["demo", "permutation", "empty", "random"]
CONFIGS = [
    {},  # the class defaults: 0.4 / 0.3 / 0.2 / 0.1, every permutation kind, sparse 0.3
    {"demo_weight": 0.0, "permutation_weight": 1.0, "empty_weight": 0.0, "random_weight": 0.0},
    {"demo_weight": 0.0, "permutation_weight": 1.0, "empty_weight": 0.0, "random_weight": 0.0,
     "permutation_types": ["rotate"]},
    {"demo_weight": 0.0, "permutation_weight": 0.0, "empty_weight": 1.0, "random_weight": 1.0,
     "random_pattern_type": "dense", "random_density": 0.5},
    {"demo_weight": 1.0, "permutation_weight": 0.0, "empty_weight": 0.0, "random_weight": 2.0,
     "random_density": 0.8},
]


def f32bits(x):
    return struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0]


def padded(grids, slots, S):
    g = np.full((slots, S, S), -1, np.int32)
    m = np.zeros((slots, S, S), bool)
    for i, x in enumerate(grids):
        g[i, :x.shape[0], :x.shape[1]] = x
        m[i, :x.shape[0], :x.shape[1]] = True
    return jnp.asarray(g), jnp.asarray(m)


def jax_task(train, test, S):
    ig, im = padded([p[0] for p in train], MAX_TRAIN, S)
    og, om = padded([p[1] for p in train], MAX_TRAIN, S)
    tg, tm = padded([p[0] for p in test], 1, S)
    ug, um = padded([p[1] for p in test], 1, S)
    return JaxArcTask(input_grids_examples=ig, input_masks_examples=im, output_grids_examples=og,
                      output_masks_examples=om, num_train_pairs=len(train), test_input_grids=tg,
                      test_input_masks=tm, true_test_output_grids=ug, true_test_output_masks=um,
                      num_test_pairs=len(test), task_index=jnp.array(0, jnp.int32))


def draws(cfg, n_train, key, S):
    """The choices `initialize_working_grids(task, cfg, key, batch_size=1)` makes, along its
    key path: split(key, 2) gives the mode key and the one grid's key."""
    keys = jax.random.split(key, 2)
    mode = int(_select_batch_modes(keys[0], cfg, 1)[0])
    k = keys[1]
    out = {"mode": MODES[mode], "source": 0}
    if mode == 0:
        out["source"] = int(jax.random.randint(k, (), 0, n_train))
    elif mode == 1:
        demo_key, perm_key = jax.random.split(k)
        out["source"] = int(jax.random.randint(demo_key, (), 0, n_train))
        kind = int(jax.random.randint(perm_key, (), 0, 3))
        types = cfg.permutation_types
        if kind == 0 and "rotate" in types:
            out["transform"] = ["rotate", int(jax.random.randint(perm_key, (), 0, 4))]
        elif kind == 1 and "reflect" in types:
            out["transform"] = [["flip_lr"], ["flip_ud"]][int(jax.random.randint(perm_key, (), 0, 2))]
        elif kind == 2 and "color_remap" in types:
            out["transform"] = ["remap", [int(v) for v in jax.random.permutation(perm_key, jnp.arange(10))]]
        else:
            out["transform"] = ["identity"]
    elif mode == 3:
        density = jnp.clip(cfg.random_density, 0.0, 1.0)
        if cfg.random_pattern_type == "dense":
            sparse_key, cluster_key = jax.random.split(k)
            mask_key, color_key = jax.random.split(sparse_key)
            base = jax.random.bernoulli(mask_key, density * 0.7, (S, S))
            out["cluster"] = bits(jax.random.bernoulli(cluster_key, 0.3, (S, S)))
            out["cluster_colors"] = enc(jax.random.randint(jax.random.split(cluster_key)[0], (S, S), 1, 10))
        else:
            mask_key, color_key = jax.random.split(k)
            base = jax.random.bernoulli(mask_key, density, (S, S))
        out["base"] = bits(base)
        out["colors"] = enc(jax.random.randint(color_key, (S, S), 1, 10))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--canvas", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    S = a.canvas
    rng = np.random.default_rng(a.seed)

    def shape():
        return int(rng.integers(1, S + 1)), int(rng.integers(1, S + 1))

    tasks, jtasks = [], []
    for _ in range(a.tasks):
        pairs = [(gen_grid(rng, *shape()), gen_grid(rng, *shape())) for _ in range(int(rng.integers(1, MAX_TRAIN + 1)) + 1)]
        train, test = pairs[:-1], pairs[-1:]
        tasks.append({s: [{k: {"h": int(g.shape[0]), "w": int(g.shape[1]), "cells": enc(g)} for k, g in zip(("input", "output"), p)}
                          for p in ps] for s, ps in (("train", train), ("test", test))})
        jtasks.append((jax_task(train, test, S), len(train)))
    cfgs = [GridInitializationConfig(**c) for c in CONFIGS]
    params = [EnvParams(dataset=DatasetConfig(max_grid_height=S, max_grid_width=S), action=ActionConfig(),
                        reward=RewardConfig(), grid_initialization=c, max_episode_steps=150, buffer=jnp.zeros(1))
              for c in cfgs]
    init = eqx.filter_jit(functional._initialize_grids)  # one compile per config and pair count
    cases, seen = [], {m: 0 for m in MODES}
    for i in range(a.cases):
        c, t = i % len(CONFIGS), int(rng.integers(0, a.tasks))
        task, n_train = jtasks[t]
        test = bool(rng.random() < 0.25)
        pair = 0 if test else int(rng.integers(0, n_train))
        key = jax.random.PRNGKey(a.seed * 100_000 + i)
        grid, target, mask, target_mask, _, _ = init(
            task, jnp.asarray(pair), jnp.asarray(int(test)), params[c], key)
        h, w = int(mask.any(axis=1).sum()), int(mask.any(axis=0).sum())
        assert int(mask.sum()) == h * w and bool(mask[:h, :w].all()), "start mask is not a top-left rectangle"
        d = draws(cfgs[c], n_train, key, S)
        seen[d["mode"]] += 1
        cases.append({"config": c, "task": t, "pair": pair, "test": test, "start": d, "grid": enc(grid),
                      "dims": [h, w], "sim": f32bits(compute_grid_similarity(grid, mask, target, target_mask))})
    fx = {"canvas": S, "peer": "jaxarc 1.0.3 functional._initialize_grids", "configs": CONFIGS, "tasks": tasks,
          "cases": cases}
    with open(a.out, "w") as f:
        json.dump(fx, f, separators=(",", ":"))
    print(f"{len(cases)} starts, modes {seen}", file=sys.stderr)


if __name__ == "__main__":
    main()
