"""`kestrel hunt train` from Python: the multi-agent treasure hunt with per-agent IQN learners."""

from __future__ import annotations

import os

from . import _kestrel
from ._runs import RunResult, launch


def train(config: dict | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
          progress=None, **kw) -> RunResult:
    """Trains into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    hunt train --config` (`epochs`, `seed`, `world={...}`, ...)."""
    return launch(_kestrel.hunt_train, {**(config or {}), **kw}, out_dir, progress,
                  resume=None if resume is None else os.fspath(resume), threads=threads)
