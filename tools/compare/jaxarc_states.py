"""JaxARC 1.0.3 start states built from ARC task files, for the comparisons that step JaxARC's
`functional.step` from states of their own choosing: `arc.py`'s throughput benchmark (and
`tools/arc_paper`, which runs it) and `arc_ppo.py`'s `JaxArcVec`. One place knows the fields of
JaxARC's `State`. Needs jax and jaxarc: import it in their venv.
"""
from __future__ import annotations

import json

import numpy as np


def read_task(path: str) -> dict:
    """An ARC task file; Mini-ARC's colours are strings and some cells null, read as 0 (as ARCLE
    and Kestrel read them)."""
    with open(path) as f:
        return json.loads(f.read().replace("null", '"0"'))


def pad(grid, side: int) -> tuple[np.ndarray, np.ndarray]:
    """A grid on the `side × side` canvas: int32 values with -1 outside, and its mask."""
    g = np.array(grid, dtype=np.int32)
    out, mask = np.full((side, side), -1, np.int32), np.zeros((side, side), bool)
    out[:g.shape[0], :g.shape[1]], mask[:g.shape[0], :g.shape[1]] = g, True
    return out, mask


def states(working, working_mask, target, target_mask, inputs, input_mask):
    """A batch of start states (one per row of the stacked `(n, S, S)` arrays: the working grid,
    the target, the pair's input), built as whole arrays under `vmap` (a State per env, stacked,
    took minutes at 10,000 envs); state `i` holds key `PRNGKey(i)`."""
    import jax
    import jax.numpy as jnp
    from jaxarc.state import State
    from jaxarc.utils.grid_utils import compute_grid_similarity

    side = working.shape[-1]

    def one(wg, wm, tg, tm, ig, im, i):
        return State(working_grid=wg, working_grid_mask=wm, input_grid=ig, input_grid_mask=im, target_grid=tg,
                     target_grid_mask=tm, selected=jnp.zeros((side, side), bool),
                     clipboard=jnp.zeros((side, side), jnp.int32), step_count=jnp.array(0, jnp.int32),
                     task_idx=jnp.array(0, jnp.int32), pair_idx=jnp.array(0, jnp.int32),
                     allowed_operations_mask=jnp.ones(35, bool),
                     similarity_score=compute_grid_similarity(wg, wm, tg, tm).astype(jnp.float32),
                     key=jax.random.PRNGKey(i))

    arrays = (working, working_mask, target, target_mask, inputs, input_mask)
    return jax.vmap(one)(*(jnp.asarray(a) for a in arrays), jnp.arange(len(working)))
