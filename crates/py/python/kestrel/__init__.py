"""Kestrel: a batch-first RL and control research engine in Rust, from Python.

    import kestrel, gymnasium as gym
    envs = kestrel.make_vec("CartPole-v1", 1024, seed=0)       # a gymnasium VectorEnv
    env = gym.make("kestrel/CartPole-v1")                      # a gymnasium Env
    es = kestrel.evo.CMAES(num_dims=10)                        # ask/tell

Every whole run (`kestrel.run_kinds()`) runs through one registry, as on the command line:
`kestrel.config("mppi-tune")` gives its keys and defaults as a dict, `kestrel.run("evo",
config=..., sigma=0.3)` (or `kestrel.evo.run(...)`) runs it into a run folder.

Modules: `vector`, `envs`, `evo`, `mppi`, `allo`, `hunt`, `actdyn`, `loggers` (TensorBoard and
Weights & Biases: `logger=` on every run), and `dist` (Ray; imported on use: `import
kestrel.dist`).
"""

from __future__ import annotations

from typing import Any

from . import _kestrel
from ._kestrel import Key, __commit__, __version__
from .envs import Env, register_envs
from .vector import VectorEnv
from ._runs import RunResult, config, config_toml, run, run_kinds
from . import evo, mppi, allo, hunt, actdyn, loggers  # noqa: E402

__all__ = ["Key", "Env", "VectorEnv", "RunResult", "config", "config_toml", "run", "run_kinds", "make", "make_vec", "list_envs", "arc_operations", "evo", "mppi", "allo", "hunt", "actdyn", "loggers", "__version__", "__commit__"]


def list_envs() -> list[str]:
    """Every env id (`gymnasium.make("kestrel/<id>")` works for each)."""
    return [i for i, *_ in _kestrel.list_envs()]


def arc_operations(mode: str = "o2arc") -> list[str]:
    """ARC's operation names in id order (`ARC-v0`: "o2arc", ARCLE's; `ARC-jaxarc-v0`: "jaxarc").

    ARC observations: `layout="compact"` (default) is the working grid and its size only;
    `layout="full"` adds ARCLE's keys (input, selection, clipboard, object state, trials) and
    `demo_pairs` demonstration pairs, which an agent needs to infer the task. `canvas` (30,
    10 or 5) is the canvas side; `ARC-jaxarc-v0` at 10 or 5 runs on the lane kernel.
    `bugs="all"` (jaxarc) switches on JaxARC 1.0.3's bugs; the default "none" fixes them."""
    return list(_kestrel.arc_operations(mode))


def make(env_id: str, **params: Any) -> Env:
    """One env as a `gymnasium.Env`."""
    return Env(env_id, **params)


def make_vec(env_id: str, num_envs: int, **kw: Any) -> VectorEnv:
    """`num_envs` envs as a `gymnasium.vector.VectorEnv` (see `kestrel.VectorEnv`)."""
    return VectorEnv(env_id, num_envs, **kw)


register_envs()
