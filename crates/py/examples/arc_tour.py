# %% [markdown]
# # A tour of Kestrel's ARC environment from Python
#
# `ARC-v0` is ARC in ARCLE `O2ARCv2Env` semantics on a 30 x 30 canvas, implemented in Rust.
# The tasks here come from Kestrel's procedural generator (11 families: symmetry, recolor,
# gravity, ..., border), `tasks_per_family` of each; `data="path/to/ARC"` loads real tasks.
#
# Run top to bottom (`python crates/py/examples/arc_tour.py`) or cell by cell in an
# editor that understands `# %%` cells.

# %%
import time
from typing import Any

import numpy as np
import numpy.typing as npt
import gymnasium as gym

import kestrel

# ARCLE O2ARCv2's operation ids (Kestrel's o2arc op table, crates/arc/src/o2arc.rs).
OPS = (
    [f"Color{c}" for c in range(10)]
    + [f"FloodFill{c}" for c in range(10)]
    + ["MoveU", "MoveD", "MoveR", "MoveL", "Rotate90", "Rotate270", "FlipH", "FlipV",
       "CopyI", "CopyO", "Paste", "CopyFromInput", "ResetGrid", "ResizeGrid", "Submit"]
)
SUBMIT = OPS.index("Submit")
assert len(OPS) == 35 and SUBMIT == 34


Grid = npt.NDArray[Any]


def show(grid: Grid, dim: Grid, title: str = "") -> None:
    """Prints the live `dim` = (rows, cols) part of a 30 x 30 grid, `.` for colour 0."""
    h, w = (int(x) for x in dim)
    if title:
        print(f"{title} ({h}x{w})")
    for row in np.asarray(grid)[:h, :w]:
        print("  " + " ".join("." if c == 0 else str(int(c)) for c in row))


def rect(r0: int, c0: int, r1: int, c1: int) -> npt.NDArray[np.uint8]:
    """A 30 x 30 selection mask with the inclusive rectangle [r0..r1] x [c0..c1] set."""
    m = np.zeros((30, 30), np.uint8)
    m[r0 : r1 + 1, c0 : c1 + 1] = 1
    return m


# %% [markdown]
# ## One env
# `kestrel.make` returns a `gymnasium.Env`. The default (`layout="compact"`) observation is
# the working grid and its size; `layout="full"` adds everything ARCLE's observation dict has
# (input, selection, clipboard, object state, trials) plus `demo_pairs` demonstration pairs.

# %%
env = kestrel.make("ARC-v0", tasks_per_family=4)
print("observation space:", env.observation_space)
print("action space:     ", env.action_space)
obs, info = env.reset(seed=0)
for k, v in obs.items():
    print(f"  obs[{k!r}]: {v.dtype} {v.shape}")
show(obs["grid"], obs["grid_dim"], "working grid at reset")

# %% [markdown]
# ## A few hand-written actions
# An action is `{"operation": int, "selection": 0/1 array (30, 30)}`. Select a 2 x 3
# rectangle in the top-left corner and paint it colour 3, then submit. The reward is 1 only
# for a Submit whose grid equals the answer, so this one scores 0 (and, with ARCLE's default
# unlimited trials, does not end the episode).

# %%
obs, r, term, trunc, info = env.step({"operation": OPS.index("Color3"), "selection": rect(0, 0, 1, 2)})
show(obs["grid"], obs["grid_dim"], f"after Color3 on rows 0-1, cols 0-2: reward {r}")
obs, r, term, trunc, info = env.step({"operation": OPS.index("FlipH"), "selection": rect(0, 3, 2, 8)})
show(obs["grid"], obs["grid_dim"], f"after FlipH of rows 0-2, cols 3-8: reward {r}")
obs, r, term, trunc, info = env.step({"operation": SUBMIT, "selection": np.zeros((30, 30), np.uint8)})
print(f"Submit: reward {r}, terminated {term}, truncated {trunc}")
env.close()

# %% [markdown]
# ## Solving a task by hand
# With `layout="full"` the observation carries demonstration pairs: `demos[k]` is the flat
# `input (900), input dims (2), output (900), output dims (2)` of pair k. We look through a
# few episodes for a "border" task (output = input with its outer ring painted one colour),
# read the colour off the demonstrations, paint the ring and submit: reward 1.

# %%
N = 30 * 30


def demo_pairs(obs: dict[str, Grid]) -> list[tuple[Grid, Grid, Grid, Grid]]:
    out = []
    for d in obs["demos"]:
        out.append((d[:N].reshape(30, 30), d[N : N + 2], d[N + 2 : 2 * N + 2].reshape(30, 30), d[2 * N + 2 :]))
    return out


def ring(h: int, w: int) -> npt.NDArray[np.uint8]:
    m = np.zeros((30, 30), np.uint8)
    m[0, :w] = m[h - 1, :w] = 1
    m[:h, 0] = m[:h, w - 1] = 1
    return m


def border_colour(obs: dict[str, Grid]) -> int | None:
    """The border colour if every demonstration is 'paint the outer ring colour b', else None."""
    colours: set[int] = set()
    for gi, di, go, do in demo_pairs(obs):
        h, w = (int(x) for x in di)
        if tuple(di) != tuple(do) or h < 3 or w < 3:
            return None
        on = ring(h, w)[:h, :w].astype(bool)
        a, b = gi[:h, :w], go[:h, :w]
        if not (np.array_equal(a[~on], b[~on]) and len(np.unique(b[on])) == 1):
            return None
        colours.add(int(b[on][0]))
    return colours.pop() if len(colours) == 1 else None


env = kestrel.make("ARC-v0", tasks_per_family=4, layout="full", demo_pairs=2)
for seed in range(200):
    obs, _ = env.reset(seed=seed)
    colour = border_colour(obs)
    if colour is not None:
        break
print(f"seed {seed}: a border task, colour {colour}")
gi, di, go, do = demo_pairs(obs)[0]
show(gi, di, "demonstration input")
show(go, do, "demonstration output")
show(obs["input"], obs["input_dim"], "this episode's input")

h, w = (int(x) for x in obs["grid_dim"])
obs, r, term, trunc, _ = env.step({"operation": colour, "selection": ring(h, w)})  # Color<b> is op b
# ARCLE semantics: a Color op clears the `selected` display (object ops such as FlipH set it).
print(f"painted a ring of {int(ring(h, w).sum())} cells; obs['selected'] now has {int(obs['selected'].sum())} set")
obs, r, term, trunc, _ = env.step({"operation": SUBMIT, "selection": np.zeros((30, 30), np.uint8)})
show(obs["grid"], obs["grid_dim"], "submitted grid")
# trials_remain starts at max_trials (-1 = unlimited) and, as in ARCLE, counts down past it.
print(f"Submit: reward {r}, terminated {term}, trials_remain {int(obs['trials_remain'][0])}")
env.close()

# %% [markdown]
# ## 1024 envs at once
# `kestrel.make_vec` (or `gym.make_vec("kestrel/ARC-v0", vectorization_mode="vector_entry_point")`)
# steps every row in Rust with the GIL released. Actions are batched dicts. The random
# actions are drawn once up front so that the timing below is the env's, not numpy's RNG.
# `copy=False` returns the same buffers every step (overwritten in place), with no allocation.

# %%
n = 1024
venv = kestrel.make_vec("ARC-v0", n, tasks_per_family=4, seed=0, copy=False)
print(venv, "\n  single action space:", venv.single_action_space)
rng = np.random.default_rng(0)
pool = [
    {
        # Random ops, Submit excluded so that rows are not all ending on wrong submits.
        "operation": rng.integers(0, SUBMIT, n),
        "selection": rng.random((n, 30, 30)) < 0.1,
    }
    for _ in range(8)
]
obs, _ = venv.reset(seed=0)
for a in pool[:2]:
    venv.step(a)  # warm-up

steps = 200
t0 = time.perf_counter()
truncs = 0
for i in range(steps):
    obs, rew, terms, truncs_now, info = venv.step(pool[i % len(pool)])
    truncs += int(truncs_now.sum())
dt = time.perf_counter() - t0
print(f"{steps} steps x {n} envs in {dt:.3f}s: {steps * n / dt:,.0f} env-steps/s "
      f"({steps / dt:,.0f} batched calls/s); {truncs} truncations (150-step limit)")
venv.close()

# %% [markdown]
# ## Final observations in SAME_STEP mode
# With `autoreset_mode="same_step"` a row that ends is reset within the same `step`: the
# returned observation is already the new episode's first one, and the last observation of
# the finished episode is in `info["final_obs"][i]` (where `info["_final_obs"][i]` is true).
# That final observation is what a value function must bootstrap from on a truncation.
# A short `max_episode_steps` makes every row end after 5 steps.

# %%
venv = kestrel.make_vec("ARC-v0", 8, tasks_per_family=4, autoreset_mode="same_step", max_episode_steps=5)
print(venv, venv.metadata)
obs, _ = venv.reset(seed=1)
for t in range(1, 6):
    a = {"operation": rng.integers(0, 10, 8), "selection": rng.random((8, 30, 30)) < 0.3}  # random paints
    obs, rew, terms, truncs_now, info = venv.step(a)
    print(f"step {t}: terminated {terms.astype(int)}, truncated {truncs_now.astype(int)}, info keys {sorted(info)}")

done = np.flatnonzero(info["_final_obs"])
i = int(done[0])
final = info["final_obs"][i]
print(f"rows ended this step: {done.tolist()}; row {i}'s final_obs keys: {sorted(final)}")
show(final["grid"], final["grid_dim"], f"row {i}: final grid of the finished episode (after 5 random paints)")
show(obs["grid"][i], obs["grid_dim"][i], f"row {i}: first grid of its next episode (returned by the same step)")
assert not np.array_equal(final["grid"], obs["grid"][i])
venv.close()

# The same through Gymnasium's registry:
gvenv = gym.make_vec("kestrel/ARC-v0", num_envs=4, vectorization_mode="vector_entry_point", tasks_per_family=2)
assert isinstance(gvenv.observation_space, gym.spaces.Dict)
print(gvenv, gvenv.observation_space["grid"].shape)
gvenv.close()
