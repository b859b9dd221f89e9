"""`kestrel.vector.VectorEnv`: a Gymnasium 1.x vector env over Kestrel's batched Rust core.

Rows step in parallel in Rust with the GIL released. Results are identical for any thread
count and shard: row `i` draws its keys from `(seed, step, row_offset + i)`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import gymnasium as gym
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from . import _kestrel
from ._runs import split_config
from ._spaces import (
    ARC_INFO, STEP_OUT, aligned_copy, aligned_empty, SpecFromCore, action_kwargs, arc_info_arrays, block_views, check_seed, env_spaces,
    front_end, obs_layout, params_json, read_only, split, take_form,
)

_MODES = {
    AutoresetMode.NEXT_STEP: "next-step",
    AutoresetMode.SAME_STEP: "same-step",
    AutoresetMode.DISABLED: "disabled",
}


def autoreset_mode(mode: AutoresetMode | str) -> AutoresetMode:
    """An `AutoresetMode` from the enum or its name (`"next_step"`, `"NextStep"`, ...)."""
    if isinstance(mode, AutoresetMode):
        return mode
    if isinstance(mode, str):
        key = mode.replace("-", "_").replace(" ", "_").lower()
        key = {"nextstep": "next_step", "samestep": "same_step"}.get(key, key)
        for m in AutoresetMode:
            if m.value == key or m.name.lower() == key:
                return m
    raise ValueError(f"autoreset_mode = {mode!r}: expected one of next_step, same_step, disabled")


class VectorEnv(SpecFromCore, gym.vector.VectorEnv):
    """`num_envs` copies of a Kestrel env (agent rows for multi-agent envs, PufferLib style).

    Args:
        env_id: a Kestrel env id (see `kestrel.list_envs()`), with or without `kestrel/`.
        num_envs: environments; multi-agent envs have `num_envs * num_agents` rows.
        seed: the seed of the first `reset()` when it gets none (default: from `np_random`).
        autoreset_mode: `AutoresetMode` (default NEXT_STEP, Gymnasium's default).
        copy: True (default): every call returns fresh arrays. False: the same arrays every
            call, overwritten in place by the next step (no allocation; do not keep them); the
            `infos` arrays are then read-only views of buffers the core writes.
        num_threads: threads of this env's own pool (default: `RAYON_NUM_THREADS` or the
            core count, in a pool the first thread that makes an env works in: its steps run
            on that thread and the pool's other workers, without a hand-off to the process's
            rayon pool; other threads' envs use that pool); results do not depend on it.
        row_offset: global index of row 0 (a shard of a larger batch reproduces its rows).
        episode_stats: True (default): when episodes end, `infos["episode"] = {"r", "l", "t"}`
            (return, length, wall seconds; 0 for rows that did not end) and
            `infos["_episode"]` (the rows that did), counted in Rust exactly as Gymnasium's
            `gymnasium.wrappers.vector.RecordEpisodeStatistics` counts them in every autoreset
            mode. Pass False to wrap the env in that wrapper instead (it refuses an `episode`
            key that is already there); `gymnasium.make_vec("kestrel/...")` passes False
            unless told otherwise, as Gymnasium's own vector envs report nothing.
        selection, flatten: ARC only, the action form (`kestrel._spaces.ArcActions`): `selection`
            "mask" (default: `{"operation", "selection"}`), "point" (`{"operation", "row",
            "col"}`) or "bbox" (`{"operation", "r1", "c1", "r2", "c2"}`), JaxARC's wrappers'
            keys; `flatten` None (a Dict), "discrete" (one Discrete, mixed radix with the
            operation most significant, as JaxARC's `FlattenActionWrapper`) or
            "multi_discrete" (`MultiDiscrete([35, S, S(, S, S)])`).
        arc_info: ARC only, True (default): `infos["similarity"]` (to the target, in [0, 1]),
            `infos["improvement"]` (its change over the step; 0 when an episode starts),
            `infos["operation"]` (the op applied; -1 at an episode's start) and `infos["step"]`
            (steps into the episode), each with its `_key` mask, after every reset and step.
            In SAME_STEP mode a row that ended reports its new episode's values, and the
            ended step's values are in `infos["final_info"]` (rows marked by
            `infos["_final_info"]`), as Gymnasium's vector envs report them. False leaves
            them out.
        config: the env's params as a dict or the path of a TOML file (what `kestrel config
            ID` prints; `kestrel.config(env_id)` returns the defaults as a dict).
        **params: the env's params, over `config` (an unknown name raises ValueError naming
            the closest valid one).
    """

    def __init__(
        self,
        env_id: str,
        num_envs: int,
        *,
        seed: int | None = None,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        copy: bool = True,
        num_threads: int | None = None,
        row_offset: int = 0,
        render_mode: str | None = None,
        episode_stats: bool = True,
        arc_info: bool = True,
        config: dict[str, Any] | str | None = None,
        **params: Any,
    ) -> None:
        env_id = env_id.removeprefix("kestrel/")
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)):
            raise TypeError(f"num_envs: expected an int, got {type(num_envs).__name__}")
        if num_envs < 1:
            raise ValueError(f"num_envs = {num_envs}: at least 1")
        self._seed = None if seed is None else check_seed(seed)
        if isinstance(row_offset, bool) or not isinstance(row_offset, (int, np.integer)) or not 0 <= row_offset < 2**64:
            raise ValueError(f"row_offset = {row_offset!r}: an int >= 0 (the global index of row 0)")
        if num_threads is not None and (isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)) or num_threads < 1):
            raise ValueError(f"num_threads = {num_threads!r}: an int >= 1, or None for the process's pool")
        form = take_form(params)
        keys, path = split_config(config, params)
        self._core = _kestrel.VecCore(env_id, int(num_envs), 0, params_json(keys), check_seed(row_offset),
                                      None if num_threads is None else int(num_threads), path)
        spec = self._core.spec()
        self._spec = spec
        self.env_id = env_id
        self.num_agents = int(spec["num_agents"])
        self.num_envs = int(num_envs) * self.num_agents
        self._n_world = int(num_envs)
        self.metadata, self.render_mode, self._arcact, kw = front_end(spec, keys, render_mode, form)
        self.single_observation_space, self.single_action_space = env_spaces(spec, self._arcact)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self.autoreset_mode = _mode(autoreset_mode)
        self.metadata["autoreset_mode"] = self.autoreset_mode
        self.copy = bool(copy)
        self._core.set_autoreset(_MODES[self.autoreset_mode])
        self._init_spec(env_id, spec, kw, path)
        self._dtype = np.dtype(spec["obs_dtype"])
        self._dict = spec["obs"][0] == "dict"
        self._parts, self._obs_len = obs_layout(spec, self.single_observation_space)
        self._obs_shape = (self.num_envs, self._obs_len) if self._dict else (self.num_envs, *self.single_observation_space.shape)
        self._bufs = self._alloc()
        self._bufview = None
        self._done = np.zeros(self.num_envs, bool)
        self._roll = None  # rollout buffers kept with copy=False
        self._pending = False
        self._reset_called = False
        # The fast path passes int64 actions straight through (not ARC's flattened ones).
        self._discrete = isinstance(self.single_action_space, gym.spaces.Discrete) and self._arcact is None
        self._same_step = self.autoreset_mode == AutoresetMode.SAME_STEP
        self._stats = bool(episode_stats)
        self._arc = bool(arc_info) and spec["arc_info"]
        self._arcbufs = self._arcitems = None
        self._arcmask = np.ones(self.num_envs, np.bool_)
        self._arcmask.flags.writeable = False
        if self._arc and not self.copy:
            # Written by the core after every reset and step (copy=True reads fresh arrays);
            # the entries are the same views every step.
            buf, self._arcbufs = block_views(self._n_world, [dt for _, dt in ARC_INFO])
            read_only(*self._arcbufs)
            self._core.set_arc_out(buf)
            self._arcitems = self._arc_entries(self._arcbufs)

    # -- buffers -------------------------------------------------------------------------
    def _alloc(self):
        """Step outputs: the observations, and the byte buffer the core writes the rewards,
        flags and episode statistics into (registered with it here), with its views (rewards,
        terminated, truncated, and the read-only `info["episode"]` arrays and mask). Made
        once: copy=True copies the views it returns (cheaper than making seven views a step)."""
        out, (r, length, t, rew, term, trunc, ended) = block_views(self.num_envs, STEP_OUT)
        self._core.set_step_out(out)
        episode = read_only(r, length, t, ended)
        return aligned_empty(self._obs_shape, self._dtype), out, rew, term, trunc, episode


    def _arc_info(self, infos):
        """Adds ARC's columns to `infos` (Gymnasium's vector form: each key with its mask)."""
        if not self._arc:
            return infos
        if self._arcitems is not None and not self.copy:
            infos.update(self._arcitems)  # the core wrote the views' buffer
            return infos
        cols = arc_info_arrays(self._n_world)
        self._core.read_arc_info(*cols)
        infos.update(self._arc_entries(cols))
        return infos

    def _arc_entries(self, cols):
        """ARC's `info` entries over the columns `cols`, each with its mask (every env has
        them: one read-only all-true mask, shared)."""
        mask = self._arcmask
        entries = {}
        for (name, _), col in zip(ARC_INFO, cols):
            entries[name], entries["_" + name] = col, mask
        return entries

    def _arc_final(self, done):
        """The info of the steps that ended episodes (same-step reset replaced their states):
        ARC's columns with the rows that ended marked, as Gymnasium's vector envs give
        `final_info`; `{}` for the other envs, whose info is empty."""
        if not self._arc:
            return {}
        cols = arc_info_arrays(self._n_world)
        self._core.read_arc_info(*cols, final_step=True)
        final = {}
        for (name, _), col in zip(ARC_INFO, cols):
            final[name], final["_" + name] = col, done.copy()
        return final

    def _view(self, flat):
        if not self._dict:
            return flat
        if flat is self._bufs[0]:
            # The persistent buffer's views are made once (copy=False returns them every step).
            if self._bufview is None:
                self._bufview = split(flat, self._parts)
            return self._bufview
        return split(flat, self._parts)

    def _outputs(self):
        if self.copy:
            return (aligned_empty(self._obs_shape, self._dtype), *self._bufs[1:])
        return self._bufs

    # -- Gymnasium API -------------------------------------------------------------------
    def _one_seed(self, seeds):
        """The int seed a per-row seed list stands for (see `reset`)."""
        if len(seeds) != self.num_envs:
            raise ValueError(f"seed: a list of {len(seeds)} seeds for {self.num_envs} rows; one per row")
        if all(s is None for s in seeds):
            return None
        first = seeds[0]
        if first is not None and all(s is not None and int(s) == int(first) + i for i, s in enumerate(seeds)):
            return check_seed(int(first))
        raise ValueError(
            f"seed = {list(seeds)[:4]}...: Kestrel's rows derive their keys from one seed and their row, "
            "so a list must be [s, s + 1, ..., s + num_envs - 1] (what Gymnasium makes of seed=s), "
            "or pass one int")

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets every env (or, with `options={"reset_mask": mask}`, those where the mask is
        true). `seed` is an int: rows derive their keys from `(seed, row)`. A list (one entry per
        row, as Gymnasium's vector envs take) is accepted in the form Gymnasium makes from an
        int `s`, `[s, s + 1, ..., s + num_envs - 1]` (the same as `seed=s`), or all `None`."""
        self._check_open()
        if isinstance(seed, (list, tuple, np.ndarray)):
            seed = self._one_seed(list(seed))
        if seed is not None:
            seed = check_seed(seed)
        super().reset(seed=seed)
        mask = None if options is None else options.get("reset_mask")
        if options is not None and set(options) - {"reset_mask"}:
            raise ValueError(f"options: unknown keys {sorted(set(options) - {'reset_mask'})}; accepted: reset_mask")
        if mask is not None:
            if not isinstance(mask, np.ndarray):
                raise TypeError(f"reset_mask: expected a numpy bool array, got {type(mask).__name__}")
            if mask.dtype != np.bool_:
                raise ValueError(f"reset_mask: expected dtype bool, got {mask.dtype}")
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset_mask: expected shape ({self.num_envs},), got {mask.shape}")
            if not mask.any():
                raise ValueError("reset_mask: at least one env must be reset")
            if seed is not None:
                self._core.reset(seed)
            world = mask.reshape(self._n_world, self.num_agents).any(axis=1)
            self._core.reset_rows(np.ascontiguousarray(world))
            self._done[np.repeat(world, self.num_agents)] = False
        elif seed is not None or not self._reset_called:
            if seed is None:
                seed = self._seed if self._seed is not None else int(self.np_random.integers(0, 2**63))
            self._core.reset(seed)
            self._done[:] = False
        else:
            self._core.reset_rows(np.ones(self._n_world, np.bool_))
            self._done[:] = False
        self._reset_called = True
        obs = self._outputs()[0]
        self._core.read_obs(obs)
        return self._view(obs), self._arc_info({})

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps every row; returns `(obs, rewards, terminations, truncations, infos)`."""
        self._check_ready()
        kw = self._fast(actions)
        if kw is None:
            kw = action_kwargs(self.single_action_space, actions, self.num_envs, self._arcact)
        bufs = self._outputs()
        ended = self._core.step(**kw, obs=bufs[0])
        return self._finish(bufs, ended)

    def _fast(self, actions):
        # The common case without conversions: an int64 vector for a Discrete space.
        if (self._discrete and type(actions) is np.ndarray and actions.dtype == np.int64
                and actions.shape == (self.num_envs,) and actions.flags.c_contiguous):
            return {"ints": actions}
        return None

    def step_async(self, actions: Any) -> None:
        """Starts a step on a background thread (Python may run a policy meanwhile)."""
        if self._pending:
            raise RuntimeError("step_async called twice: call step_wait for the pending step first")
        self._submit(actions, asynchronous=True)
        self._pending = True

    def step_wait(self, **kwargs: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Waits for the step started by `step_async` and returns its results."""
        if not self._pending:
            raise RuntimeError("step_wait called without a pending step_async")
        ended = self._core.step_wait()
        self._pending = False
        return self._collect(ended)

    send = step_async
    recv = step_wait

    def _check_rollout_size(self, actions):
        """A rollout whose arrays would pass the engine's memory limit (`_kestrel.MAX_BYTES`,
        8 GiB) is refused from the actions' shapes alone, before numpy
        copies them (a broadcast view of 10**9 steps is no memory until it is merged)."""
        arrays = actions.values() if isinstance(actions, dict) else [actions]
        shapes = [np.shape(a) for a in arrays]
        steps = max((sh[0] for sh in shapes if len(sh) >= 1), default=0)
        obs_row = int(np.prod(self._obs_shape, dtype=np.int64)) * np.dtype(self._dtype).itemsize
        act_row = sum(int(np.prod(sh[1:], dtype=np.int64)) * 8 for sh in shapes if len(sh) >= 1)
        per_step = obs_row * (2 if self._same_step else 1) + act_row + self.num_envs * 40
        need = steps * per_step
        limit = _kestrel.MAX_BYTES
        if need > limit:
            raise ValueError(f"actions: {steps} steps x {self.num_envs} envs: the rollout's arrays need about "
                             f"{need / (1 << 30):.1f} GiB, the limit is {limit >> 30} GiB (roll out in "
                             f"chunks of at most {max(1, limit // per_step)} steps)")

    def _rollout_buffers(self, steps):
        """A rollout's output arrays: fresh ones (copy=True), or (copy=False) the same ones
        for every rollout of `steps` steps (fresh arrays of a large rollout cost more in page
        faults than the steps); the core clears the episode entries the last one wrote."""
        n, worlds = self.num_envs, self._n_world

        def fresh():
            episode = None
            if self._stats:
                episode = (np.zeros((steps, n)), np.zeros((steps, n), np.int64), np.zeros((steps, n)),
                           np.zeros((steps, n), np.bool_))
            return (np.empty((steps, *self._obs_shape), self._dtype), np.empty((steps, n), np.float32),
                    np.empty((steps, worlds), np.bool_), np.empty((steps, worlds), np.bool_),
                    np.empty((steps, *self._obs_shape), self._dtype) if self._same_step else None, episode)

        if self.copy:
            return fresh()
        if self._roll is None or self._roll[0].shape[0] != steps:
            self._roll = fresh()
        return self._roll

    def rollout(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Steps once per entry of the actions' leading axis, in one call into Rust (the GIL
        released throughout), as that many `step` calls would: `actions` is what `step` takes
        with a leading steps axis (an array `(steps, num_envs, ...)`, or a dict of them).

        Returns `(obs, rewards, terminations, truncations, infos)`, each with a leading steps
        axis: `obs[t]` is what `step` number `t` returned (CleanRL's rollout-buffer layout). The
        lane kernel (ARC canvases up to 10) runs each block of 64 envs through every step on
        one thread, so a rollout pays one hand-off to the threads where steps pay one each.
        `infos` holds the episodes that ended (`infos["episode"]` = `{"r", "l", "t"}` and
        `infos["_episode"]`, each `(steps, num_envs)`; `t` is the wall time at the rollout's
        end) and, under SAME_STEP, `infos["final_obs"]` (`(steps, num_envs, ...)`, valid where
        `infos["_final_obs"]`). ARC's per-step info is not returned; the next `step` reports
        it again (its improvement measured from the rollout's last step). With `copy=False`
        every rollout of the same length returns the same arrays, overwritten in place (fresh
        arrays of a large rollout cost more in page faults than its steps). Needs NEXT_STEP or
        SAME_STEP auto-reset: under DISABLED ended envs must be reset between steps.
        """
        self._check_ready()
        if self.autoreset_mode == AutoresetMode.DISABLED:
            raise RuntimeError("rollout: autoreset DISABLED needs a reset between steps; use step, "
                               "or make the env with NEXT_STEP or SAME_STEP")
        self._check_rollout_size(actions)
        steps, flat = _merge_steps(actions, self.num_envs)
        kw = action_kwargs(self.single_action_space, flat, steps * self.num_envs, self._arcact)
        obs, rew, term, trunc, final, episode = self._rollout_buffers(steps)
        ended = self._core.rollout(
            steps, obs, rew.reshape(-1), term.reshape(-1), trunc.reshape(-1), final_obs=final,
            episode=None if episode is None else tuple(a.reshape(-1) for a in episode), **kw)
        if self.num_agents > 1:
            term, trunc = np.repeat(term, self.num_agents, axis=1), np.repeat(trunc, self.num_agents, axis=1)
        infos: dict[str, Any] = {}
        if self._same_step:
            self._done[:] = False
            done = np.logical_or(term, trunc)
            if final is not None and done.any():
                infos["final_obs"], infos["_final_obs"] = self._view(final), done
        else:
            np.logical_or(term[-1], trunc[-1], out=self._done)
        if episode is not None and ended:
            r, length, t, mask = episode
            infos["episode"], infos["_episode"] = {"r": r, "l": length, "t": t}, mask
        return self._view(obs), rew, term, trunc, infos

    def _submit(self, actions, asynchronous):
        self._check_ready()
        kw = action_kwargs(self.single_action_space, actions, self.num_envs, self._arcact)
        if asynchronous:
            self._core.step_async(**kw)
        else:
            self._core.step(**kw)

    def _check_ready(self):
        """Raises for misuse: closed, a step in flight, no reset yet, ended rows in DISABLED."""
        self._check_open()
        if self._pending:
            raise RuntimeError("a step is in flight: call step_wait first")
        if not self._reset_called:
            raise RuntimeError("step called before reset")
        if self.autoreset_mode == AutoresetMode.DISABLED and self._done.any():
            rows = np.flatnonzero(self._done)[:8].tolist()
            raise RuntimeError(
                f"step: envs {rows} ended; with autoreset DISABLED reset them first "
                "(reset(options={'reset_mask': mask}))"
            )

    def _collect(self, ended):
        bufs = self._outputs()
        self._core.read_out(bufs[0])
        return self._finish(bufs, ended)

    def _finish(self, bufs, ended):
        obs, _, rew, term, trunc, episode = bufs
        done = np.logical_or(term, trunc, out=self._done)
        infos = {}
        if self._same_step and ended:
            final = np.empty(self._obs_shape, self._dtype)
            self._core.read_final_obs(final, np.ascontiguousarray(done))
            final_obs = np.full(self.num_envs, None, dtype=object)
            view = self._view(final)
            for i in np.flatnonzero(done):
                final_obs[i] = {k: v[i] for k, v in view.items()} if self._dict else view[i]
            infos = {
                "final_obs": final_obs,
                "_final_obs": done.copy(),
                "final_info": self._arc_final(done),
                "_final_info": done.copy(),
            }
        if ended and self._stats:
            # copy=False: the same arrays every step, as the observations.
            r, length, t, mask = [a.copy() for a in episode] if self.copy else episode
            infos["episode"] = {"r": r, "l": length, "t": t}
            infos["_episode"] = mask
        if self._same_step:
            self._done.fill(False)
        if self.copy:
            rew, term, trunc = aligned_copy(rew), aligned_copy(term), aligned_copy(trunc)
        return self._view(obs), rew, term, trunc, self._arc_info(infos)

    def _check_open(self):
        if self._core.closed:
            raise RuntimeError("the env is closed")

    def close_extras(self, **kwargs: Any) -> None:
        self._core.close()

    def render(self) -> tuple[Any, ...] | None:
        """One frame per env row, as Gymnasium's vector envs return them (its render wrappers
        expect `num_envs`): a tuple of `(H, W, 3)` uint8 arrays (`rgb_array`) or of strings
        (`ansi`); in a multi-agent env the rows of one world share its frame (drawn once). None,
        with Gymnasium's warning, without a render mode."""
        if self.render_mode is None:
            gym.logger.warn("You are calling render method without specifying any render mode.")
            return None
        self._check_open()
        if not self._reset_called:
            raise RuntimeError("render called before reset")
        draw = self._core.render if self.render_mode == "rgb_array" else self._core.render_text
        worlds = [draw(i) for i in range(self._n_world)]
        return tuple(w for w in worlds for _ in range(self.num_agents))

    # -- extras --------------------------------------------------------------------------
    def set_state(self, row: int, state: Any) -> None:
        """Starts env `row` from `state` (CartPole, Pendulum and the control systems)."""
        self._core.set_state(int(row), [float(x) for x in np.asarray(state, dtype=np.float64).ravel()])

    def get_state(self, row: int) -> np.ndarray:
        return np.asarray(self._core.state(int(row)))

    def __repr__(self) -> str:
        return f"kestrel.VectorEnv({self.env_id!r}, num_envs={self.num_envs}, autoreset_mode={self.autoreset_mode.name})"


def _merge_steps(actions, n):
    """`(steps, actions)` with the leading steps and env axes of every array merged: what `step`
    takes for `steps * n` rows."""
    def one(a, what):
        a = np.asarray(a)
        if a.ndim < 2 or a.shape[1] != n:
            raise ValueError(f"{what}: expected shape (steps, {n}, ...), got {a.shape}")
        return a.shape[0], a.reshape(a.shape[0] * n, *a.shape[2:])
    if isinstance(actions, dict):
        merged = {k: one(v, f"actions[{k!r}]") for k, v in actions.items()}
        lengths = {k: t for k, (t, _) in merged.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"actions: every key needs the same number of steps, got {lengths}")
        steps = next(iter(lengths.values()), 0)
        flat = {k: v for k, (_, v) in merged.items()}
    else:
        steps, flat = one(actions, "actions")
    if steps < 1:
        raise ValueError("actions: at least one step")
    return steps, flat


def _mode(m):
    return autoreset_mode(m)
