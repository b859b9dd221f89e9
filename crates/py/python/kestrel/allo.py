"""`kestrel allo train` from Python: ALLO Laplacian representation learning on a grid maze."""

from __future__ import annotations

import os

from . import _kestrel
from ._runs import RunResult, launch


def train(config: dict | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
          progress=None, **kw) -> RunResult:
    """Trains into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    allo train --config` (`map`, `steps`, `seed`, `method`, `d`, ...)."""
    return launch(_kestrel.allo_train, {**(config or {}), **kw}, out_dir, progress,
                  resume=None if resume is None else os.fspath(resume), threads=threads)
