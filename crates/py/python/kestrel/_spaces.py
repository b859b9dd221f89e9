"""Kestrel's space descriptions (from the Rust spec) as Gymnasium spaces, and the one place
Python input is turned into the arrays the Rust core takes (with the shape in every error)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from gymnasium import spaces

# Gymnasium's own bounds for the two bit-exact classic-control envs (gymnasium 1.4's
# CartPoleEnv: 2 x_threshold, inf, 2 theta_threshold, inf).
_EXACT = {
    "CartPole-v1": (
        spaces.Box(
            -np.array([4.8, np.inf, 0.41887903, np.inf], np.float32),
            np.array([4.8, np.inf, 0.41887903, np.inf], np.float32),
            dtype=np.float32,
        ),
        spaces.Discrete(2),
    ),
    "Pendulum-v1": (
        spaces.Box(-np.array([1.0, 1.0, 8.0], np.float32), np.array([1.0, 1.0, 8.0], np.float32), dtype=np.float32),
        spaces.Box(-2.0, 2.0, (1,), np.float32),
    ),
}


def to_space(desc, dtype):
    """A Gymnasium space from the Rust description `("box", lo, hi, shape)`, `("discrete",
    n)` or `("dict", [(name, desc), ...])`."""
    kind = desc[0]
    if kind == "discrete":
        return spaces.Discrete(int(desc[1]))
    if kind == "box":
        lo, hi, shape = desc[1], desc[2], tuple(desc[3])
        dt = np.dtype(dtype)
        if dt.kind == "f":
            info = np.finfo(dt)
            lo = max(lo, float(info.min)) if np.isfinite(lo) else -np.inf
            hi = min(hi, float(info.max)) if np.isfinite(hi) else np.inf
        return spaces.Box(np.full(shape, lo, dt), np.full(shape, hi, dt), dtype=dt)
    if kind == "dict":
        # An OrderedDict keeps the buffer's order (a plain dict would be sorted by name).
        return spaces.Dict(OrderedDict((name, to_space(sub, dtype)) for name, sub in desc[1]))
    raise ValueError(f"unknown space kind {kind!r}")


# ARC's action forms: JaxARC's `PointActionWrapper` and `BboxActionWrapper` keys, in their
# order (jaxarc/wrappers/action_wrappers.py); the coordinates are canvas cells.
ARC_SELECTIONS = {"mask": None, "point": ("row", "col"), "bbox": ("r1", "c1", "r2", "c2")}
ARC_FLATTEN = (None, "discrete", "multi_discrete")


class ArcActions:
    """How an ARC env's actions look from Python: the selection form (`mask`, ARCLE's and
    JaxARC's default; `point`; `bbox`) and an optional flattening for RL libraries.

    - `flatten=None`: a `Dict` space, `{"operation", "selection"}` (mask: a 0/1 canvas),
      `{"operation", "row", "col"}` (point) or `{"operation", "r1", "c1", "r2", "c2"}` (bbox:
      an inclusive rectangle between two corners in any order).
    - `flatten="discrete"` (point or bbox): one `Discrete` action, mixed radix in that key
      order with the operation most significant, as JaxARC's `FlattenActionWrapper`:
      point `a = (op * S + row) * S + col` (35 S² actions), bbox `a = (((op * S + r1) * S +
      c1) * S + r2) * S + c2` (35 S⁴).
    - `flatten="multi_discrete"` (point or bbox): `MultiDiscrete([35, S, S])` or `[35, S, S,
      S, S]`, the same keys as columns (what SB3's and CleanRL's MultiDiscrete policies take).
    """

    def __init__(self, selection, flatten, side, num_ops):
        if selection not in ARC_SELECTIONS:
            raise ValueError(f"selection = {selection!r}: one of {', '.join(map(repr, ARC_SELECTIONS))}")
        if flatten not in ARC_FLATTEN:
            raise ValueError(f"flatten = {flatten!r}: None, 'discrete' or 'multi_discrete'")
        if flatten is not None and selection == "mask":
            raise ValueError(
                f"flatten = {flatten!r} with selection = 'mask': a mask has 2^(S*S) values; "
                "flatten point or bbox selections (selection='point' or 'bbox')")
        self.selection, self.flatten, self.side, self.num_ops = selection, flatten, side, num_ops
        self.keys = ARC_SELECTIONS[selection]
        self.radix = [num_ops] + [side] * (len(self.keys) if self.keys else 0)

    def space(self):
        S = self.side
        if self.flatten == "discrete":
            return spaces.Discrete(int(np.prod(self.radix, dtype=np.int64)))
        if self.flatten == "multi_discrete":
            return spaces.MultiDiscrete(np.array(self.radix, dtype=np.int64))
        parts = OrderedDict(operation=spaces.Discrete(self.num_ops))
        if self.keys is None:
            parts["selection"] = spaces.MultiBinary([S, S])
        else:
            for k in self.keys:
                parts[k] = spaces.Discrete(S)
        return spaces.Dict(parts)

    def columns(self, actions, rows):
        """`(operations, [column, ...])`: a contiguous int64 `(rows,)` array of operations and
        one int64 `(rows,)` array per coordinate key (any strides: Rust reads a contiguous one
        in place and copies a strided one into its own buffer, so no array is made here per
        step), of point or bbox actions in any of their three forms."""
        k = len(self.keys)
        if self.flatten == "discrete":
            a = _ints(actions, (rows,), "actions")
            n = int(np.prod(self.radix, dtype=np.int64))
            if a.size and (a.min() < 0 or a.max() >= n):
                i = int(np.flatnonzero((a < 0) | (a >= n))[0])
                raise ValueError(f"actions[{i}] = {int(a[i])}: outside Discrete({n})")
            cols = np.empty((rows, k + 1), np.int64)
            rest = a.copy()
            for j in range(k, -1, -1):  # least significant (the last key) first
                rest, cols[:, j] = np.divmod(rest, self.radix[j])
            return np.ascontiguousarray(cols[:, 0]), [cols[:, j] for j in range(1, k + 1)]
        if self.flatten == "multi_discrete":
            cols = _ints(actions, (rows, k + 1), "actions")
            return np.ascontiguousarray(cols[:, 0]), [cols[:, j] for j in range(1, k + 1)]
        want = ("operation", *self.keys)
        if not isinstance(actions, dict) or set(actions) != set(want):
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise TypeError(f"actions: expected a dict with keys {', '.join(want)}; got {got}")
        ops = np.ascontiguousarray(_ints(actions["operation"], (rows,), "actions['operation']"))
        return ops, [_ints(actions[key], (rows,), f"actions[{key!r}]") for key in self.keys]


def _ints(a, shape, what):
    """`a` as int64 of `shape`, a view where it already is int64 (any strides)."""
    a = np.asarray(a)
    if a.dtype.kind not in "iu" and not (a.dtype.kind == "b" and a.ndim == 0):
        raise TypeError(f"{what}: expected integers, got dtype {a.dtype}")
    if a.shape != shape:
        raise ValueError(f"{what}: expected shape {shape}, got {a.shape}")
    return a if a.dtype == np.int64 else a.astype(np.int64)


def env_spaces(spec, arc=None):
    """(observation space, action space) of one agent row; `arc` (an `ArcActions`) gives an
    ARC env's action form."""
    exact = _EXACT.get(spec["id"])
    if exact is not None:
        return exact
    obs = to_space(spec["obs"], spec["obs_dtype"])
    act = spec["action"]
    if act[0] == "dict":  # ARC: its action form, ARCLE's {operation, selection} by default
        action = (arc or arc_actions(spec)).space()
    else:
        action = to_space(act, "float32")
    return obs, action


# ARC's info columns in `VecCore.read_arc_info`'s order, with their dtypes.
ARC_INFO = (("similarity", np.float32), ("improvement", np.float32), ("operation", np.int64), ("step", np.int64))


def arc_info_arrays(n):
    """Fresh arrays for `n` envs' ARC info columns (`ARC_INFO`)."""
    return tuple(np.empty(n, dt) for _, dt in ARC_INFO)


# The blocks of the step output buffer, in the core's order (`VecCore.set_step_out`): the episode
# statistics as Gymnasium's RecordEpisodeStatistics names them ("r", "l", "t"), the rewards,
# terminated, truncated, and the ended mask ("_episode").
STEP_OUT = (np.float64, np.int64, np.float64, np.float32, np.bool_, np.bool_, np.bool_)


def block_views(n, dtypes):
    """A zeroed byte buffer and a numpy view of each of its blocks (`n` values of each dtype
    in turn): the core writes a step's columns into the buffer with one borrow, and Python
    reads the views without a call or a copy."""
    buf = np.zeros(n * sum(np.dtype(d).itemsize for d in dtypes), np.uint8)
    views, at = [], 0
    for d in dtypes:
        size = n * np.dtype(d).itemsize
        views.append(buf[at:at + size].view(d))
        at += size
    return buf, tuple(views)


def read_only(*arrays):
    """Marks views of a core-written buffer read-only (the core writes only what changed)."""
    for a in arrays:
        a.flags.writeable = False
    return arrays


def take_form(params):
    """ARC's action-form keywords (`selection`, `flatten`) taken out of `params` (they are the
    front end's, not the env config's)."""
    return {k: params.pop(k) for k in ("selection", "flatten") if k in params}


def front_end(spec, keys, render_mode, form):
    """What `Env` and `VectorEnv` make alike from the core's spec: Gymnasium's metadata, the
    checked render mode, the ARC action form (`take_form`'s) and the kwargs their `spec`
    records."""
    arcact = arc_actions(spec, form.get("selection"), form.get("flatten"))
    mode = check_render_mode(spec, render_mode)
    kwargs = {**keys, **form, **({} if render_mode is None else {"render_mode": render_mode})}
    return render_metadata(spec), mode, arcact, kwargs


def arc_actions(spec, selection=None, flatten=None):
    """The `ArcActions` of an ARC env, or None for the other envs (which refuse an action
    form)."""
    if spec["action"][0] != "dict":
        if selection is not None or flatten is not None:
            key = "selection" if selection is not None else "flatten"
            raise ValueError(f"{key}: only ARC envs take an action form ({spec['id']} does not)")
        return None
    parts = dict(spec["action"][1])
    return ArcActions(selection or "mask", flatten, int(parts["selection"][3][0]), int(parts["operation"][1]))


def aligned_empty(shape, dtype, align: int = 64):
    """`np.empty(shape, dtype)` starting on an `align`-byte boundary: JAX's CPU client takes
    such an array by DLPack without a copy (it copies one on numpy's 16-byte alignment);
    torch takes either."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(n + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off : off + n].view(dtype).reshape(shape)


def aligned_copy(a):
    """A copy of `a` on a 64-byte boundary (see `aligned_empty`)."""
    out = aligned_empty(a.shape, a.dtype)
    out[...] = a
    return out


def obs_layout(spec, observation_space):
    """`(parts, obs_len)` of one agent row's flat observation: `parts` is `[(name, offset,
    size, shape)]` in buffer order for a dict observation, None otherwise."""
    desc = spec["obs"]
    if desc[0] != "dict":
        return None, int(np.prod(observation_space.shape))
    parts, off = [], 0
    for name, sub in desc[1]:
        shape = tuple(sub[3]) if sub[0] == "box" else ()
        size = int(np.prod(shape)) if shape else 1
        parts.append((name, off, size, shape))
        off += size
    return parts, off


def split(flat, parts):
    """A flat observation array `(..., obs_len)` as `{name: view (..., *shape)}`."""
    lead = flat.shape[:-1]
    return {name: flat[..., off : off + size].reshape(*lead, *shape) for name, off, size, shape in parts}


def action_kwargs(action_space, actions, rows, arc=None):
    """The keyword arrays `VecCore.step` takes for `rows` agent rows of `actions` (`arc`: an
    ARC env's `ArcActions`)."""
    if arc is not None and arc.keys is not None:
        ops, cols = arc.columns(actions, rows)
        return {"ints": ops, "cols": cols}
    if isinstance(action_space, spaces.Discrete):
        a = np.asarray(actions)
        if a.dtype.kind not in "iub":
            raise TypeError(f"actions: expected integers for {action_space}, got dtype {a.dtype}")
        if a.shape != (rows,):
            raise ValueError(f"actions: expected shape ({rows},), got {a.shape}")
        return {"ints": np.ascontiguousarray(a, dtype=np.int64)}
    if isinstance(action_space, spaces.Box):
        a = np.asarray(actions)
        if a.dtype.kind not in "fiu":
            raise TypeError(f"actions: expected floats for {action_space}, got dtype {a.dtype}")
        want = (rows, *action_space.shape)
        if a.shape != want:
            raise ValueError(f"actions: expected shape {want}, got {a.shape}")
        return {"floats": np.ascontiguousarray(a, dtype=np.float64).reshape(-1)}
    if isinstance(action_space, spaces.Dict):
        if not isinstance(actions, dict) or set(actions) != {"operation", "selection"}:
            got = sorted(actions) if isinstance(actions, dict) else type(actions).__name__
            raise TypeError(f"actions: expected a dict with keys operation, selection; got {got}")
        op = np.asarray(actions["operation"])
        sel = np.asarray(actions["selection"])
        if op.dtype.kind not in "iub" or sel.dtype.kind not in "iub":
            raise TypeError(
                f"actions: operation and selection must be integers or bools, got {op.dtype} and {sel.dtype}"
            )
        if op.shape != (rows,):
            raise ValueError(f"actions['operation']: expected shape ({rows},), got {op.shape}")
        side = action_space["selection"].shape
        if sel.shape != (rows, *side):
            raise ValueError(
                f"actions['selection']: expected shape {(rows, *side)}, got {sel.shape}"
            )
        if sel.dtype.itemsize == 1:
            # bool / int8 / uint8: viewed as bytes without a copy; Rust checks each is 0 or 1.
            sel = np.ascontiguousarray(sel).view(np.uint8)
        else:
            if sel.min(initial=0) < 0 or sel.max(initial=0) > 1:
                raise ValueError("actions['selection']: values must be 0 or 1")
            sel = np.ascontiguousarray(sel, dtype=np.uint8)
        return {"ints": np.ascontiguousarray(op, dtype=np.int64), "sel": sel.reshape(-1)}
    raise TypeError(f"unsupported action space {action_space}")


def check_render_mode(core_spec, mode):
    """`mode` when the env draws it (`core_spec["render_modes"]`), else a ValueError."""
    modes = core_spec["render_modes"]
    if mode is not None and mode not in modes:
        raise ValueError(
            f"render_mode = {mode!r}: {core_spec['id']} renders {', '.join(map(repr, modes))} or None "
            "('human' and 'rgb_array_list' come from gymnasium.make's wrappers)"
        )
    return mode


def render_metadata(core_spec, **extra):
    """Gymnasium's `metadata` of an env: its render modes and frame rate."""
    return {"render_modes": list(core_spec["render_modes"]), "render_fps": core_spec["render_fps"], **extra}


def check_seed(seed):
    """A seed as a u64: an int >= 0 (numpy integers too); anything else raises."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(
            f"seed: expected one int (rows derive their keys from (seed, row)), got {type(seed).__name__} {seed!r}"
        )
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed = {seed}: expected 0 <= seed < 2**64")
    return seed


def params_json(params):
    """Keyword params as JSON for the Rust core (numpy scalars and arrays allowed)."""
    import json

    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if hasattr(o, "__fspath__"):
            return o.__fspath__()
        raise TypeError(f"parameter value {o!r} of type {type(o).__name__} is not a number, string, bool or list")

    for k, v in params.items():
        if isinstance(v, (float, np.floating)) and not np.isfinite(v):
            raise ValueError(f"{k} = {v}: expected a finite number")
        try:
            json.dumps(v, default=default, allow_nan=False)
        except TypeError as e:
            raise TypeError(f"{k}: {e}") from None
    return json.dumps(params, default=default, allow_nan=False)


class SpecFromCore:
    """`spec` as Gymnasium's `make`/`make_vec` and Kestrel's own constructors set it, with the
    env's own time limit and the reference's reward threshold filled in where the spec leaves
    them out (Kestrel envs truncate themselves, so no `TimeLimit` is registered)."""

    _limit = None
    _threshold = None
    _spec = None

    def _init_spec(self, env_id, core_spec, kwargs, config_path):
        """The spec `gymnasium.make(env.spec)` re-creates this env from (its registration's
        entry points, its params as kwargs)."""
        import gymnasium as gym

        self._limit = core_spec["max_episode_steps"]
        self._threshold = core_spec["reward_threshold"]
        kwargs = dict(kwargs) if config_path is None else {**kwargs, "config": config_path}
        registered = gym.registry.get(f"kestrel/{env_id}")
        if registered is None:
            self.spec = gym.envs.registration.EnvSpec(id=f"kestrel/{env_id}", kwargs=kwargs)
        else:
            import copy

            spec = copy.deepcopy(registered)
            spec.kwargs = kwargs
            self.spec = spec

    @property
    def spec(self):
        return self._spec

    @spec.setter
    def spec(self, s):
        import dataclasses

        if s is not None:
            fill = {}
            if s.max_episode_steps is None and self._limit is not None:
                fill["max_episode_steps"] = self._limit
            if s.reward_threshold is None and self._threshold is not None:
                fill["reward_threshold"] = self._threshold
            if fill:
                s = dataclasses.replace(s, **fill)
        self._spec = s
