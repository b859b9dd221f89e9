"""Stable-Baselines3 over one Kestrel batch: `kestrel.sb3.VecEnv`.

SB3 takes its own `VecEnv` class, not Gymnasium's vector envs, so `PPO("MlpPolicy",
kestrel.make_vec(...))` cannot work and `gym.make` + `DummyVecEnv` steps the envs one at a time
in Python. This adapter is an SB3 `VecEnv` whose `step_wait` is one batched Kestrel step:

    from stable_baselines3 import PPO
    import kestrel.sb3

    venv = kestrel.sb3.VecEnv("CartPole-v1", num_envs=8, seed=0)
    PPO("MlpPolicy", venv).learn(100_000)

SB3's conventions, as its `DummyVecEnv` keeps them: an env that ends is reset in the same step,
its last observation in `infos[i]["terminal_observation"]`, `infos[i]["TimeLimit.truncated"]`
set when it was truncated and not terminated, and `infos[i]["episode"] = {"r", "l", "t"}` at
the end of every episode (the keys SB3's `Monitor` writes, counted in Rust, so the adapter
answers `env_is_wrapped(Monitor)` with True and SB3 does not wrap it again; `"t"` is the
episode's own wall seconds, as Gymnasium's `RecordEpisodeStatistics` has it, where `Monitor`
has the seconds since it was made). `seed(s)` seeds the next `reset()` as SB3 does, rows
`s, s + 1, ...` (Kestrel derives every row's key from `s` and the row); `set_options` takes
one options dict for every row (Kestrel's `reset` options). Observations, rewards and dones are
fresh arrays each step (SB3 keeps the previous observation while it receives the next).

With `info=True` the envs' own `info` keys (ARC's `similarity`, `improvement`, `operation`,
`step`) go into each row's dict, as `DummyVecEnv` passes an env's info on, and into
`reset_infos` after a reset (an auto-reset row's new episode's info too, as `DummyVecEnv`
keeps it). A row that ended gets the keys of its final step from
`final_info` (ARC's columns of the step that ended the episode); the keys of the episode
that replaced it are not mixed in. It costs a Python loop over the rows every step, so it is
off by default.

Needs `stable-baselines3` (which brings torch): `pip install stable-baselines3`.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv as _SB3VecEnv
except ImportError as e:  # pragma: no cover - exercised only without SB3
    raise ImportError("kestrel.sb3 needs stable-baselines3: pip install stable-baselines3") from e

from .vector import VectorEnv

__all__ = ["VecEnv"]


def _same_options(a: dict[str, Any], b: dict[str, Any]) -> bool:
    # Values may be arrays (a reset mask), whose == is elementwise.
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


_BATCH_KEYS = ("final_obs", "final_info", "episode")


def _rows(info: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Gymnasium's batched info (arrays, with `_key` masks) as one dict per row; the batch's own
    keys (final observation and info, episode statistics) left out."""
    out: list[dict[str, Any]] = [{} for _ in range(n)]
    for k, v in info.items():
        if k.startswith("_") or k in _BATCH_KEYS or isinstance(v, dict):
            continue
        mask = info.get("_" + k)
        for i in (np.flatnonzero(mask) if mask is not None else range(n)):
            out[i][k] = v[i]
    return out


class VecEnv(_SB3VecEnv):
    """An SB3 `VecEnv` over one Kestrel batch of `num_envs` envs of `env_id` (any id
    `kestrel.make_vec` takes, with its keyword parameters). The treasure hunt's agents are rows
    of their own, as in `kestrel.make_vec`."""

    def __init__(self, env_id: str, num_envs: int = 1, *, seed: int | None = None,
                 render_mode: str | None = None, num_threads: int | None = None, info: bool = False,
                 **params: Any) -> None:
        self._env_info = bool(info)
        self.venv = VectorEnv(env_id, num_envs, seed=seed, autoreset_mode="same_step", copy=True,
                              render_mode=render_mode, num_threads=num_threads, arc_info=self._env_info, **params)
        self.env_id = self.venv.env_id
        self.render_mode = render_mode
        self._actions: np.ndarray | None = None
        super().__init__(self.venv.num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        if seed is not None:
            self.seed(seed)

    def reset(self) -> Any:
        seeds = self._seeds
        seed = None if all(s is None for s in seeds) else list(seeds)
        options = self._options
        if not all(_same_options(o, options[0]) for o in options):
            raise ValueError("set_options: a Kestrel batch resets its rows with one options dict; "
                             "pass a dict, or the same one for every row")
        obs, info = self.venv.reset(seed=seed, options=options[0] or None)
        self.reset_infos = _rows(info, self.num_envs) if self._env_info else [{} for _ in range(self.num_envs)]
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[Any, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        if self._actions is None:
            raise RuntimeError("step_wait called without step_async")
        actions, self._actions = self._actions, None
        if isinstance(actions, np.ndarray) and actions.dtype != np.int64 and self.venv._discrete:
            actions = actions.astype(np.int64)
        obs, rew, term, trunc, info = self.venv.step(actions)
        dones = term | trunc
        infos: list[dict[str, Any]] = [{"TimeLimit.truncated": False} for _ in range(self.num_envs)]
        ended = np.flatnonzero(dones)
        if self._env_info:
            live, last = _rows(info, self.num_envs), _rows(info.get("final_info", {}), self.num_envs)
            for i in range(self.num_envs):
                infos[i].update(last[i] if dones[i] else live[i])
                if dones[i]:
                    # The new episode's first info, where DummyVecEnv keeps an auto-reset's.
                    self.reset_infos[i] = live[i]
        if ended.size:
            final = info["final_obs"]
            ep = info.get("episode")
            for i in ended:
                d = infos[i]
                d["TimeLimit.truncated"] = bool(trunc[i] and not term[i])
                d["terminal_observation"] = final[i]
                if ep is not None:
                    d["episode"] = {"r": float(ep["r"][i]), "l": int(ep["l"][i]), "t": float(ep["t"][i])}
        return obs, rew, dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_images(self) -> Sequence[np.ndarray | None]:
        if self.render_mode != "rgb_array":
            return [None] * self.num_envs
        return list(self.venv.render())

    # The batch is one object: attributes and methods are the batch's, answered per row.
    def get_attr(self, attr_name: str, indices: Any = None) -> list[Any]:
        if attr_name == "render_mode":
            value = self.render_mode
        else:
            value = getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: Any = None) -> None:
        raise AttributeError(f"set_attr({attr_name!r}): a Kestrel batch's rows share their parameters; "
                             "make a new kestrel.sb3.VecEnv instead")

    def env_method(self, method_name: str, *method_args: Any, indices: Any = None, **method_kwargs: Any) -> list[Any]:
        result = getattr(self.venv, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type, indices: Any = None) -> list[bool]:
        # The episode statistics SB3's Monitor would add are built in (see the module docs).
        return [wrapper_class is Monitor for _ in self._get_indices(indices)]

    def __repr__(self) -> str:
        return f"kestrel.sb3.VecEnv({self.env_id!r}, num_envs={self.num_envs})"
