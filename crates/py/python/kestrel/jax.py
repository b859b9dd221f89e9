"""Kestrel inside JAX: registry envs and population evaluation as XLA FFI primitives (CPU).

The Rust calls behind `kestrel.vector.VectorEnv` and `kestrel.evo.Problem` are registered
as XLA FFI targets (`jax.ffi.register_ffi_target`, typed FFI) and called with
`jax.ffi.ffi_call`, so they run inside `jax.jit`, `lax.scan` and `vmap`, with no Python and
no host callback between steps::

    import jax, jax.numpy as jnp, kestrel.jax as kj

    env = kj.make_vec("CartPole-v1", num_envs=64)
    handle, obs = env.reset(env.handle, seed=0)

    @jax.jit
    def run(handle, obs):
        def body(carry, _):
            handle, obs = carry
            action = (obs[:, 2] > 0).astype(jnp.int32)        # a policy in JAX
            handle, obs, reward, terminated, truncated = env.step(handle, action)
            return (handle, obs), reward
        (handle, obs), rewards = jax.lax.scan(body, (handle, obs), None, length=500)
        return handle, rewards

    handle, rewards = run(handle, obs)

An env's state lives in Rust; what JAX threads is a *handle*, `uint32[2]` = (env slot,
version), as EnvPool's XLA interface threads its own. Every call returns the next handle, so
data dependence keeps the calls in order under `jit` and `scan`; a handle is used once (a
stale one raises, instead of stepping whatever state the env is in). `vmap` over handles of
several envs steps each env with its part of the actions in one call.

The results are bit-equal to `kestrel.vector.VectorEnv` on the same seeds in the same
autoreset mode (`"same_step"` by default here: a finished row returns its next episode's first
observation, as gymnax's and PureJaxRL's auto-reset do). With `jax_enable_x64` off (JAX's
default) a float64 env's observations come as float32.

`jax` is an optional extra (`pip install "kestrel[jax]"`): `import kestrel` never imports it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

try:
    import jax
    import jax.numpy as jnp
except ModuleNotFoundError as e:  # pragma: no cover - the extra is missing
    raise ModuleNotFoundError("kestrel.jax needs jax: pip install \"kestrel[jax]\"", name=e.name) from e

from . import _kestrel
from ._spaces import split

__all__ = ["VectorEnv", "make_vec", "evaluate", "key_array"]

_registered = False
_lock = threading.Lock()


def _register() -> None:
    """Registers Kestrel's FFI targets with XLA's CPU platform (once per process)."""
    global _registered
    with _lock:
        if _registered:
            return
        for name, address in _kestrel.xla_targets():
            jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(address), platform="cpu")
        _registered = True


def _call(name: str, results, *operands, **attrs):
    # broadcast_all: under vmap every operand gets the batch axis; the handlers take any
    # number of leading axes (one handle, key or population per batch entry).
    return jax.ffi.ffi_call(name, results, vmap_method="broadcast_all")(*operands, **attrs)


def _lead(handle) -> tuple[int, ...]:
    shape = jnp.shape(handle)
    if len(shape) < 1 or shape[-1] != 2:
        raise ValueError(f"handle: shape {shape}, expected (2,) (or (..., 2) for several envs)")
    return tuple(shape[:-1])


class VectorEnv:
    """`num_envs` copies of a Kestrel env, stepped by XLA FFI calls inside JAX programs.

    Args:
        env_id: a Kestrel env id (`kestrel.list_envs()`), with or without `kestrel/`.
        num_envs: environments (multi-agent envs have `num_envs * num_agents` rows).
        autoreset_mode: "same_step" (default), "next_step" or "disabled", as
            `kestrel.vector.VectorEnv`'s.
        config, **params: the env's params, as `kestrel.vector.VectorEnv` takes them.

    `handle` is the handle to the env's current state; `reset`, `step` and `rollout` take a
    handle and return the next one first. ARC takes its actions in the form `selection` and
    `flatten` choose, as `kestrel.vector.VectorEnv` does (`{"operation", "selection"}` masks by
    default; `{"operation", "row", "col"}` points; `{"operation", "r1", "c1", "r2", "c2"}`
    boxes; one `Discrete` or `MultiDiscrete` integer action), and returns its observation dict.
    """

    def __init__(self, env_id: str, num_envs: int, *, autoreset_mode: str = "same_step",
                 config: dict[str, Any] | str | None = None, **params: Any) -> None:
        from .vector import VectorEnv as _NumpyVectorEnv

        _register()
        v = _NumpyVectorEnv(env_id, num_envs, autoreset_mode=autoreset_mode, episode_stats=False,
                            arc_info=False, config=config, **params)
        self.env_id = v.env_id
        self.spec = v.spec
        self.num_envs = v.num_envs
        self.num_agents = v.num_agents
        self.autoreset_mode = v.autoreset_mode
        self.single_observation_space, self.single_action_space = v.single_observation_space, v.single_action_space
        self.observation_space, self.action_space = v.observation_space, v.action_space
        self._parts = v._parts
        self._obs_shape = tuple(v._obs_shape)
        self._obs_len = int(v._obs_len)
        self._obs_dtype = np.dtype(v._dtype)
        self._arc = v._arcact  # ARC's action form (kestrel._spaces.ArcActions), else None
        self._slot = v._core.move_to_xla()
        self._finalizer = weakref.finalize(self, _kestrel.xla_env_close, self._slot)

    @property
    def handle(self) -> jax.Array:
        """The handle to the env's current state (`uint32[2]`)."""
        version = _kestrel.xla_env_version(self._slot)
        if version is None:
            raise RuntimeError(f"{self.env_id}: the env is closed")
        return jnp.array([self._slot, version], dtype=jnp.uint32)

    @property
    def closed(self) -> bool:
        return _kestrel.xla_env_version(self._slot) is None

    def close(self) -> None:
        """Frees the envs; a later call with any of its handles raises."""
        self._finalizer()

    def _obs_struct(self, lead: tuple[int, ...], steps: tuple[int, ...] = ()):
        dtype = jax.dtypes.canonicalize_dtype(self._obs_dtype)
        shape = (self.num_envs, self._obs_len) if self._parts else self._obs_shape
        return jax.ShapeDtypeStruct((*lead, *steps, *shape), dtype)

    def _rows(self, lead, steps=()):
        rows = (*lead, *steps, self.num_envs)
        return [jax.ShapeDtypeStruct(rows, jnp.float32), jax.ShapeDtypeStruct(rows, jnp.bool_),
                jax.ShapeDtypeStruct(rows, jnp.bool_)]

    def _obs(self, flat):
        return split(flat, self._parts) if self._parts else flat

    def _actions(self, action) -> list:
        if self._arc is not None:
            return self._arc_actions(action)
        a = jnp.asarray(action)
        discrete = self.single_action_space.shape == ()
        if discrete and not jnp.issubdtype(a.dtype, jnp.integer):
            raise TypeError(f"action: expected integers for {self.single_action_space}, got dtype {a.dtype}")
        if not discrete and not jnp.issubdtype(a.dtype, jnp.floating):
            a = a.astype(jnp.float32)
        return [a]

    def _arc_actions(self, action) -> list:
        """ARC's actions as the FFI operands: `[operation, selection]` (mask form) or
        `[operation, *coordinates]` (point: row, col; bbox: r1, c1, r2, c2), from any of the
        forms `kestrel.vector.VectorEnv` takes; the env checks every value's range as the
        numpy entry does (a flattened action out of range decodes to an operation out of
        range, which it refuses)."""
        form = self._arc
        if form.flatten is not None:
            a = jnp.asarray(action)
            if not jnp.issubdtype(a.dtype, jnp.integer):
                raise TypeError(f"action: expected integers for {self.single_action_space}, got dtype {a.dtype}")
            if form.flatten == "multi_discrete":
                if a.shape[-1:] != (len(form.radix),):
                    raise ValueError(f"action: shape {a.shape}, expected (..., {len(form.radix)}) for "
                                     f"{self.single_action_space}")
                return [a[..., j] for j in range(len(form.radix))]
            cols = []
            for radix in reversed(form.radix[1:]):  # the last key least significant
                cols.append(a % radix)
                a = a // radix
            return [a, *reversed(cols)]
        want = ("operation", *(form.keys or ("selection",)))
        if not isinstance(action, dict) or set(action) != set(want):
            got = sorted(action) if isinstance(action, dict) else type(action).__name__
            raise TypeError(f"action: expected a dict with keys {', '.join(want)}; got {got}")
        out = []
        for key in want:
            x = jnp.asarray(action[key])
            if key == "selection":
                out.append(x if x.dtype == jnp.bool_ else x.astype(jnp.uint8))
            elif not jnp.issubdtype(x.dtype, jnp.integer):
                raise TypeError(f"action[{key!r}]: expected integers, got dtype {x.dtype}")
            else:
                out.append(x)
        return out

    def reset(self, handle, seed=0):
        """Resets every env from `seed` (an integer, traced or not), as
        `kestrel.vector.VectorEnv.reset(seed=seed)`. Returns `(handle, obs)`."""
        lead = _lead(handle)
        seed = jnp.broadcast_to(jnp.asarray(seed, dtype=jnp.uint32), lead)
        h, flat = _call("kestrel_env_reset", [jax.ShapeDtypeStruct((*lead, 2), jnp.uint32), self._obs_struct(lead)],
                        jnp.asarray(handle, jnp.uint32), seed)
        return h, self._obs(flat)

    def step(self, handle, action):
        """One step of every env. Returns `(handle, obs, reward, terminated, truncated)`,
        one reward and flag per row."""
        lead = _lead(handle)
        outs = [jax.ShapeDtypeStruct((*lead, 2), jnp.uint32), self._obs_struct(lead), *self._rows(lead)]
        h, flat, r, te, tr = _call("kestrel_env_step", outs, jnp.asarray(handle, jnp.uint32), *self._actions(action))
        return h, self._obs(flat), r, te, tr

    def rollout(self, handle, actions):
        """`T` steps in one call, the actions with a leading steps axis `T` (ARC: both arrays).
        Returns `(handle, obs, reward, terminated, truncated)`, each with the leading `T`; the
        same as `T` calls of `step`."""
        lead = _lead(handle)
        acts = self._actions(actions)
        steps = jnp.shape(acts[0])[len(lead)] if jnp.ndim(acts[0]) > len(lead) else None
        if steps is None:
            raise ValueError(f"actions: shape {jnp.shape(acts[0])}, expected a leading steps axis")
        outs = [jax.ShapeDtypeStruct((*lead, 2), jnp.uint32), self._obs_struct(lead, (steps,)),
                *self._rows(lead, (steps,))]
        h, flat, r, te, tr = _call("kestrel_env_rollout", outs, jnp.asarray(handle, jnp.uint32), *acts)
        return h, self._obs(flat), r, te, tr

    def __repr__(self) -> str:
        return f"kestrel.jax.VectorEnv({self.env_id!r}, num_envs={self.num_envs // self.num_agents})"


def make_vec(env_id: str, num_envs: int, **kwargs: Any) -> VectorEnv:
    """`kestrel.jax.VectorEnv(env_id, num_envs, **kwargs)`."""
    return VectorEnv(env_id, num_envs, **kwargs)


def key_array(key=None) -> jax.Array:
    """A key as the FFI calls take it (`uint32[2]`): None (zeros), a `kestrel.evo.Key` (its
    raw 64 bits, high word first), a JAX PRNG key (its key data: a threefry key's two words)
    or such an array already."""
    from .evo import Key

    if key is None:
        return jnp.zeros(2, jnp.uint32)
    if isinstance(key, Key):
        raw = int(key.raw)
        return jnp.array([raw >> 32, raw & 0xFFFFFFFF], dtype=jnp.uint32)
    k = jnp.asarray(jax.random.key_data(key)) if jax.dtypes.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key) else jnp.asarray(key)
    if k.shape[-1:] != (2,) or not jnp.issubdtype(k.dtype, jnp.unsignedinteger):
        raise ValueError(f"key: a uint32 array of shape (..., 2), got {k.dtype}{list(k.shape)}")
    return k.astype(jnp.uint32)


def _problem(problem):
    from .evo import Problem

    if isinstance(problem, Problem):
        return problem._p
    if isinstance(problem, _kestrel.EvoProblem):
        return problem
    build = getattr(problem, "build", None)  # kestrel.dist.ProblemSpec
    if callable(build):
        return build()
    raise TypeError(f"problem: a kestrel.evo.Problem or kestrel.dist.ProblemSpec, got {type(problem).__name__}")


def evaluate(problem, population, key=None) -> jax.Array:
    """Fitness (float32, minimised) of each row of `population` (`(..., pop, num_dims)`) under a
    Kestrel problem: a `kestrel.evo.Problem` (a benchmark function; `"cartpole"`
    neuroevolution) or a `kestrel.dist.ProblemSpec` (a run's population problem:
    `ProblemSpec.mppi_tune(...)` is `kestrel mppi tune`'s candidate cost). Keyed by `key`
    (see `key_array`; rows by their index) as `problem(population, key)` is; pure, so it
    runs under `jit`, `scan` and `vmap` (each population with its key)."""
    p = _problem(problem)
    _register()
    x = jnp.asarray(population)
    if x.ndim < 2 or x.shape[-1] != p.num_dims:
        raise ValueError(f"population: shape {x.shape}, expected (..., pop, {p.num_dims})")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.float32)
    k = key_array(key)
    return _call("kestrel_evaluate", jax.ShapeDtypeStruct(x.shape[:-1], jnp.float32), x, k,
                 problem=np.int64(p.xla_id()))
