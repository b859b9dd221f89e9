"""`kestrel actdyn run` from Python: active learning of latent dynamics."""

from __future__ import annotations

import os

from . import _kestrel
from ._runs import RunResult, launch


def run(config: dict | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
          progress=None, **kw) -> RunResult:
    """Runs into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    actdyn run --config` (`steps`, `seed`, `env={...}`, `model={...}`, ...)."""
    return launch(_kestrel.actdyn_run, {**(config or {}), **kw}, out_dir, progress,
                  resume=None if resume is None else os.fspath(resume), threads=threads)
