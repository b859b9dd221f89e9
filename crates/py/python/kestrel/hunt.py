"""`kestrel hunt train` from Python: the multi-agent treasure hunt with per-agent IQN learners."""

from __future__ import annotations

import os

from ._runs import RunResult, run as _run


def train(config: dict | str | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
          progress=True, **kw) -> RunResult:
    """Trains into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    hunt train --config` (`epochs`, `seed`, `num_worlds`, `env={"num_agents": 3, "gem_value":
    5.0, ...}` (the world: `kestrel.config("TreasureHunt-v0")`), ...); `kestrel.config("hunt")`
    lists them all."""
    return _run("hunt", config, out_dir=out_dir, resume=resume, threads=threads, progress=progress, **kw)


def play(run: str | os.PathLike[str], config: dict | str | None = None, *, out_dir="runs", threads: int | None = None, progress=True,
         **kw) -> RunResult:
    """Greedy play (ε = 0, no learning) of the trained run folder `run` into a new run folder:
    every agent's reward per epoch and the first epoch's turns in `play.png`; keys as `kestrel
    hunt play --config` (`epochs`, `seed`)."""
    return _run("hunt-play", config, out_dir=out_dir, threads=threads, progress=progress, run=os.fspath(run), **kw)
