"""Kestrel vector envs that speak torch: tensors in, tensors out, without copies on the CPU.

`kestrel.torch.make_vec(...)` is `kestrel.make_vec(...)` whose `reset` and `step` return
`torch.Tensor`s (observations, or a dict of them; rewards float32; terminations and
truncations bool; the `infos` arrays too) and whose `step` takes a tensor of actions, as
EnvPool's and TorchRL's torch front ends do::

    import torch, kestrel.torch

    envs = kestrel.torch.make_vec("CartPole-v1", 64, autoreset_mode="same_step")
    obs, _ = envs.reset(seed=0)                        # torch.float32 (64, 4)
    obs, reward, terminated, truncated, infos = envs.step(torch.zeros(64, dtype=torch.int64))

Each tensor is a view of the numpy array the env returns (DLPack / the buffer protocol: the
same memory, no copy), so with `copy=False` every step writes into the same tensors. On
another `device` the tensors are moved there (one copy each, `non_blocking`).

torch is an optional extra: `import kestrel` never imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

try:
    import torch
except ModuleNotFoundError as e:  # pragma: no cover - the extra is missing
    raise ModuleNotFoundError("kestrel.torch needs torch: pip install \"kestrel[torch]\"", name=e.name) from e

from .vector import VectorEnv as _VectorEnv

__all__ = ["VectorEnv", "make_vec", "as_tensor"]


def as_tensor(x: Any, device: torch.device | None = None) -> Any:
    """numpy arrays (nested in dicts) as tensors sharing their memory; a read-only array (the
    `infos` views of `copy=False`) is copied, as torch has no read-only tensors."""
    if isinstance(x, dict):
        return {k: as_tensor(v, device) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            return x
        t = torch.from_numpy(x) if x.flags.writeable else torch.from_numpy(x.copy())
        return t if device is None or device.type == "cpu" else t.to(device, non_blocking=True)
    return x


def _actions(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()  # no copy for a CPU tensor
    if isinstance(a, dict):
        return {k: _actions(v) for k, v in a.items()}
    return a


class VectorEnv:
    """`kestrel.vector.VectorEnv` with torch tensors in and out (see the module's doc).

    Args:
        env_id, num_envs, **kwargs: as `kestrel.vector.VectorEnv` (`autoreset_mode`, `copy`,
            `seed`, the env's params...).
        device: where the returned tensors live (default the CPU: no copy).
    """

    def __init__(self, env_id: str, num_envs: int, *, device: str | torch.device = "cpu", **kwargs: Any) -> None:
        self.env = _VectorEnv(env_id, num_envs, **kwargs)
        self.device = torch.device(device)

    def __getattr__(self, name: str) -> Any:
        # Spaces, spec, num_envs, render, ... are the numpy env's.
        if name == "env":
            raise AttributeError(name)
        return getattr(self.env, name)

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, Any]:
        obs, infos = self.env.reset(seed=seed, options=options)
        return as_tensor(obs, self.device), as_tensor(infos, self.device)

    def step(self, actions: Any) -> tuple[Any, torch.Tensor, torch.Tensor, torch.Tensor, Any]:
        obs, reward, terminated, truncated, infos = self.env.step(_actions(actions))
        d = self.device
        return (as_tensor(obs, d), as_tensor(reward, d), as_tensor(terminated, d), as_tensor(truncated, d),
                as_tensor(infos, d))

    def close(self) -> None:
        self.env.close()

    def __repr__(self) -> str:
        return f"kestrel.torch.VectorEnv({self.env!r}, device={str(self.device)!r})"


def make_vec(env_id: str, num_envs: int, **kwargs: Any) -> VectorEnv:
    """`kestrel.torch.VectorEnv(env_id, num_envs, **kwargs)`."""
    return VectorEnv(env_id, num_envs, **kwargs)
