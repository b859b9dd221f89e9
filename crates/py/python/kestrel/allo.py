"""`kestrel allo train` from Python: ALLO Laplacian representation learning on a grid maze."""

from __future__ import annotations

from ._runs import RunResult, run as _run


def train(config: dict | str | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
          progress=True, **kw) -> RunResult:
    """Trains into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    allo train --config` (`map`, `steps`, `seed`, `method`, `d`, ...)."""
    return _run("allo", config, out_dir=out_dir, resume=resume, threads=threads, progress=progress, **kw)
