"""What every whole run from Python shares: the config dict, the run folder, progress, and
the metrics read back as numpy arrays."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._spaces import params_json


@dataclass
class RunResult:
    """A finished run: its folder (the CLI's layout), its headline, the summary and every
    metric column of `metrics.jsonl` as a numpy array (`metrics["best"]`, ...)."""

    dir: Path
    headline: str
    summary: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)


def read_metrics(path: Path) -> dict:
    """`metrics.jsonl` as {column: array}; lines missing a column get NaN there."""
    rows = []
    if path.exists():
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    cols: dict[str, list] = {}
    for i, r in enumerate(rows):
        for k, v in _flatten(r).items():
            cols.setdefault(k, [np.nan] * i).append(v)
        for k in cols:
            if len(cols[k]) < i + 1:
                cols[k].append(np.nan)
    out = {}
    for k, v in cols.items():
        try:
            out[k] = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            out[k] = np.asarray(v, dtype=object)
    return out


def _flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def drop_none(d):
    return {k: (drop_none(v) if isinstance(v, dict) else v) for k, v in d.items() if v is not None}


def launch(fn, config: dict | None, out_dir, progress=None, **kw) -> RunResult:
    """Calls the Rust run `fn(config_json, out_dir, ..., progress=...)` and reads its folder."""
    cfg = drop_none(dict(config or {}))
    folder, headline = fn(params_json(cfg), os.fspath(out_dir), progress=progress, **kw)
    d = Path(folder)
    summary = {}
    if (d / "summary.json").exists():
        summary = json.loads((d / "summary.json").read_text())
    return RunResult(dir=d, headline=headline, summary=summary, metrics=read_metrics(d / "metrics.jsonl"))
