"""`kestrel actdyn run` from Python: active learning of latent dynamics."""

from __future__ import annotations

import os

from ._runs import RunResult, run as _run


def run(config: dict | str | None = None, *, out_dir="runs", preset: str | None = None, resume=None, threads: int | None = None,
          progress=True, **kw) -> RunResult:
    """Runs into a new run folder (or continues `resume`, a run folder); keys as `kestrel
    actdyn run --config` (`steps`, `seed`, `env={...}`, `model={...}`, ...); `preset`: "e1" (the
    defaults) or "e2" (RBF dynamics, iCEM, A-optimality)."""
    return _run("actdyn", config, out_dir=out_dir, preset=preset, resume=resume, threads=threads,
                progress=progress, **kw)


def compare(config: dict | str | None = None, *, out_dir="runs", preset: str | None = None, threads: int | None = None,
            progress=True, **kw) -> RunResult:
    """Random against active collection on the same seeds (`kestrel actdyn compare`): keys
    `base` (the experiment, as `run`'s config), `seed`, `num_seeds`, `arms`; `preset` ("e1",
    "e2", the default) is the base. One experiment per thread; the summary has each arm's mean
    per metric (`obs_r2_k5_random`, ...) and the paired difference."""
    return _run("actdyn-compare", config, out_dir=out_dir, preset=preset, threads=threads, progress=progress,
                **kw)


def retrain(run: str | os.PathLike[str], config: dict | str | None = None, *, out_dir="runs", threads: int | None = None, progress=True,
            **kw) -> RunResult:
    """Offline retraining of the run folder `run` on the transitions it saved, into a new run
    folder (`kestrel actdyn retrain`); keys under `offline` (`{"offline": {"epochs": 500}}`)."""
    return _run("actdyn-retrain", config, out_dir=out_dir, threads=threads, progress=progress, run=os.fspath(run),
                **kw)
