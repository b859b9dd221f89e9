"""`kestrel allo train` and `kestrel allo asymexp` from Python: ALLO Laplacian representation
learning on a grid maze, as the paper's code trains it (`train`) and as asymexp's
`exp_alcl/allo.py` does (`asymexp`)."""

from __future__ import annotations

from ._runs import RunResult, run as _run


def train(config: dict | str | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
          progress=True, **kw) -> RunResult:
    """Trains into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    allo train --config` (`map`, `steps`, `seed`, the learner's `learner={"method": "ggdo", ...}`)."""
    return _run("allo", config, out_dir=out_dir, resume=resume, threads=threads, progress=progress, **kw)


def asymexp(config: dict | str | None = None, *, out_dir="runs", resume=None, threads: int | None = None,
            progress=True, **kw) -> RunResult:
    """Trains ALLO as `exp_alcl/allo.py` of `tarod13/asymexp` does (`kestrel allo asymexp`):
    the script's defaults; the learner's keys nest under `learner` (`learner={"version":
    "final", "lr": 3e-4}`), collection's are top-level (`num_envs`, `max_episode_length`,
    `sampling`, `truth`, `num_doors`)."""
    return _run("allo-asymexp", config, out_dir=out_dir, resume=resume, threads=threads, progress=progress, **kw)
