"""`kestrel.envs.Env`: one Kestrel env as a `gymnasium.Env` (a one-row Rust core), and the
registration of every env under `kestrel/<id>`."""

from __future__ import annotations

from typing import Any

import numpy as np
import gymnasium as gym

from . import _kestrel
from ._runs import split_config
from ._spaces import (
    ARC_INFO, SpecFromCore, action_kwargs, arc_info_arrays, check_seed, env_spaces, front_end, obs_layout,
    params_json, split, take_form,
)


class Env(SpecFromCore, gym.Env):
    """A single Kestrel env. Always returns fresh arrays. The episode ends with `terminated`
    (the env's rule) or `truncated` (its step limit); call `reset()` then.

    The env's params: its defaults (`kestrel.config(env_id)`), then `config` (a dict or
    the path of a TOML file, as `kestrel config ID` prints), then keyword arguments; an
    unknown key is a ValueError naming the closest valid one.

    `reset(options={"state": [...]})` starts from a given state (CartPole-v1, Pendulum-v1 and
    the control systems), e.g. to compare with Gymnasium's own implementation.

    ARC's `info` holds `similarity` (to the target, in [0, 1]), `improvement` (its change over
    the step), `operation` (the op applied; -1 after a reset) and `step` (steps into the
    episode); `arc_info=False` leaves them out.

    `render_mode="rgb_array"`: `render()` returns an `(H, W, 3)` uint8 frame, drawn in Rust
    (CartPole and Pendulum as Gymnasium draws them; ARC with the selection and clipboard in
    the ARC palette). `"ansi"` (ARC, GridWorld, TreasureHunt): a string. Through
    `gymnasium.make`, `"human"` and `"rgb_array_list"` work by Gymnasium's wrappers.
    """

    metadata = {"render_modes": ["rgb_array", "ansi"], "render_fps": 10}

    def __init__(self, env_id: str, render_mode: str | None = None, config: dict[str, Any] | str | None = None,
                 arc_info: bool = True, **params: Any) -> None:
        env_id = env_id.removeprefix("kestrel/")
        form = take_form(params)
        keys, path = split_config(config, params)
        self._core = _kestrel.VecCore(env_id, 1, 0, params_json(keys), 0, None, path)
        self._core.set_autoreset("disabled")
        spec = self._core.spec()
        if spec["num_agents"] != 1:
            raise ValueError(
                f"{env_id}: num_agents = {spec['num_agents']}; a gymnasium.Env has one agent "
                "(pass num_agents=1, or use kestrel.make_vec for one row per agent)"
            )
        self.env_id = env_id
        self.metadata, self.render_mode, self._arcact, kw = front_end(spec, keys, render_mode, form)
        self._init_spec(env_id, spec, kw, path)
        self.observation_space, self.action_space = env_spaces(spec, self._arcact)
        self._dtype = np.dtype(spec["obs_dtype"])
        self._dict = spec["obs"][0] == "dict"
        self._parts, self._obs_len = obs_layout(spec, self.observation_space)
        self._seeded = False
        self._arc = bool(arc_info) and spec["arc_info"]

    def _info(self):
        if not self._arc:
            return {}
        cols = arc_info_arrays(1)
        self._core.read_arc_info(*cols)
        return {name: col[0].item() for (name, _), col in zip(ARC_INFO, cols)}

    def _buffer(self):
        # A fresh buffer per call: returned observations never share memory across calls.
        return np.empty((1, self._obs_len) if self._dict else (1, *self.observation_space.shape), self._dtype)

    def _view(self, flat):
        return split(flat[0], self._parts) if self._dict else flat[0]

    def _obs(self):
        flat = self._buffer()
        self._core.read_obs(flat)
        return self._view(flat)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None:
            seed = check_seed(seed)  # before Gymnasium's own check, which raises its own Error
        super().reset(seed=seed)
        if seed is not None:
            self._core.reset(seed)
            self._seeded = True
        elif not self._seeded:
            self._core.reset(int(self.np_random.integers(0, 2**63)))
            self._seeded = True
        else:
            self._core.reset_rows(np.ones(1, np.bool_))
        if options:
            unknown = set(options) - {"state"}
            if unknown:
                raise ValueError(f"options: unknown keys {sorted(unknown)}; accepted: state")
            state = np.asarray(options["state"], dtype=np.float64).ravel()
            if not np.all(np.isfinite(state)):
                raise ValueError(f"options['state'] = {state}: not finite")
            self._core.set_state(0, [float(x) for x in state])
        return self._obs(), self._info()

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if not self._seeded:
            raise RuntimeError("step called before reset")
        if isinstance(self.action_space, gym.spaces.Dict):
            if not isinstance(action, dict):
                keys = ", ".join(self.action_space.spaces)
                raise TypeError(f"action: expected a dict with keys {keys}; got {type(action).__name__}")
            batch = {k: np.asarray(v)[None] for k, v in action.items()}
        else:
            a = np.asarray(action)
            if isinstance(self.action_space, gym.spaces.Discrete) and a.shape != ():
                raise ValueError(f"action: expected a scalar for {self.action_space}, got shape {a.shape}")
            batch = a[None]
        self._core.step(**action_kwargs(self.action_space, batch, 1, self._arcact))
        obs = self._buffer()
        rew = np.empty(1, np.float32)
        term = np.empty(1, np.bool_)
        trunc = np.empty(1, np.bool_)
        self._core.read(obs, rew, term, trunc)
        return self._view(obs), float(rew[0]), bool(term[0]), bool(trunc[0]), self._info()

    def render(self) -> Any:
        """The current frame (`rgb_array`: `(H, W, 3)` uint8) or text (`ansi`); None, with
        Gymnasium's warning, when the env was made without a render mode."""
        if self.render_mode is None:
            gym.logger.warn(
                f"You are calling render method without specifying any render mode: make it with "
                f'gymnasium.make("kestrel/{self.env_id}", render_mode="rgb_array")'
            )
            return None
        if not self._seeded:
            raise RuntimeError("render called before reset")
        if self.render_mode == "rgb_array":
            return self._core.render(0)
        return self._core.render_text(0)

    @property
    def state(self) -> np.ndarray:
        """The env's state as floats (CartPole, Pendulum, control systems, vector fields)."""
        return np.asarray(self._core.state(0))

    def close(self) -> None:
        self._core.close()


def _entry(env_id, modes, fps):
    def make(**kwargs):
        return Env(env_id, **kwargs)

    # gymnasium.make reads the creator's metadata: with it, render_mode="human" gets the
    # HumanRendering wrapper and "rgb_array_list" the RenderCollection one.
    make.metadata = {"render_modes": list(modes), "render_fps": fps}
    return make


def _vec_entry(env_id):
    def make_vec(num_envs: int = 1, vectorization_mode=None, vector_kwargs=None, **kwargs):
        from .vector import VectorEnv

        kw = dict(vector_kwargs or {})
        kw.update(kwargs)
        # Through gymnasium.make_vec the env behaves as Gymnasium's own vector envs: no episode
        # statistics of its own, so Gymnasium's RecordEpisodeStatistics wraps it unchanged
        # (it refuses an `episode` key that is already there). episode_stats=True turns them on.
        kw.setdefault("episode_stats", False)
        return VectorEnv(env_id, num_envs, **kw)

    return make_vec


def register_envs() -> None:
    """Registers every env as `kestrel/<id>` for `gymnasium.make` and
    `gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`."""
    for env_id, _, threshold, modes, fps in _kestrel.list_envs():
        name = f"kestrel/{env_id}"
        if name in gym.registry:
            continue
        # No registered `max_episode_steps`: each env truncates itself at its own limit (a
        # `TimeLimit` on top would be a second, silently different limit when a keyword
        # changes it); `spec.max_episode_steps` reports that limit all the same.
        gym.register(
            id=name,
            reward_threshold=threshold,
            entry_point=_entry(env_id, modes, fps),
            vector_entry_point=_vec_entry(env_id),
            disable_env_checker=False,
            order_enforce=True,
        )
