"""`kestrel actdyn run` from Python: active learning of latent dynamics."""

from __future__ import annotations

from ._runs import RunResult, run as _run


def run(config: dict | str | None = None, *, out_dir="runs", preset: str | None = None, resume=None, threads: int | None = None,
          progress=True, **kw) -> RunResult:
    """Runs into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    actdyn run --config` (`steps`, `seed`, `env={...}`, `model={...}`, ...); `preset`: "e1" (the
    defaults) or "e2" (RBF dynamics, iCEM, A-optimality)."""
    return _run("actdyn", config, out_dir=out_dir, preset=preset, resume=resume, threads=threads,
                progress=progress, **kw)
