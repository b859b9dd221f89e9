"""What every whole run from Python shares: the config dict, the run folder, progress, and
the metrics read back as numpy arrays."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import _kestrel
from ._spaces import params_json
from .loggers import LiveMetrics, check_logger, flatten


@dataclass(repr=False)
class RunResult:
    """A finished run: its folder (the CLI's layout), its headline, the summary and every
    metric column of `metrics.jsonl` as a numpy array (`metrics["best"]`, ...).
    `to_pandas()` gives the metrics as a DataFrame; in a notebook it shows as a table."""

    dir: Path
    headline: str
    summary: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)

    def _rows(self) -> int:
        return max((len(v) for v in self.metrics.values()), default=0)

    def __repr__(self) -> str:
        cols = ", ".join(list(self.metrics)[:8]) + (", ..." if len(self.metrics) > 8 else "")
        return (f"RunResult({str(self.dir)!r},\n  headline={self.headline!r},\n"
                f"  summary: {len(self.summary)} keys, metrics: {self._rows()} rows of [{cols}])")

    def _repr_html_(self) -> str:
        import html

        def cell(v):
            if isinstance(v, float):
                return f"{v:.6g}"
            text = v if isinstance(v, str) else json.dumps(v)
            return html.escape(text if len(text) <= 80 else text[:77] + "...")

        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{cell(v)}</td></tr>"
                       for k, v in self.summary.items() if not isinstance(v, (list, dict)))
        last = "".join(f"<tr><td>{html.escape(k)}</td><td>{cell(v[-1].item() if v.dtype != object else v[-1])}</td></tr>"
                       for k, v in self.metrics.items() if len(v))
        return (f"<div><b>{html.escape(self.headline)}</b><br><code>{html.escape(str(self.dir))}</code>"
                f"<table><tr><th>summary</th><th></th></tr>{rows}</table>"
                f"<table><tr><th>metric ({self._rows()} rows)</th><th>last</th></tr>{last}</table></div>")

    def to_pandas(self):
        """The metrics as a `pandas.DataFrame`, one row per line of `metrics.jsonl` (needs
        pandas: `pip install pandas`)."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("RunResult.to_pandas needs pandas: pip install pandas") from e
        return pd.DataFrame({k: list(v) if v.dtype == object else v for k, v in self.metrics.items()})


class Progress:
    """`progress=True`: a tqdm bar on a terminal or in a notebook (when tqdm is installed),
    else a plain line on stderr every 5 seconds and at the end; notes on their own line."""

    def __init__(self, name: str):
        import sys
        import time

        self.name, self.bar, self.last, self.time = name, None, 0.0, time.monotonic
        self.state, self.printed = None, None
        self.tqdm = None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            tqdm = None
        interactive = sys.stderr.isatty() or "ipykernel" in sys.modules
        if tqdm is not None and interactive:
            self.tqdm = tqdm

    def __call__(self, done, total, unit, status):
        import sys

        if total == 0:  # a note
            (self.tqdm.write if self.tqdm else lambda m: print(m, file=sys.stderr))(f"note: {status}")
            return
        self.state = (done, total, unit, status)
        if self.tqdm is not None:
            if self.bar is None:
                self.bar = self.tqdm(total=total, unit=f" {unit}", desc=self.name, leave=True)
            self.bar.set_postfix_str(status, refresh=False)
            # tqdm redraws at most every `mininterval` (0.1 s) through update.
            self.bar.update(min(done, total) - self.bar.n)
            return
        now = self.time()
        if done >= total or now - self.last >= 5.0:
            self.last = now
            self._line()

    def _line(self):
        import sys

        done, total, unit, status = self.state
        pct = 100.0 * done / max(total, 1)
        print(f"{self.name}: {done}/{total} {unit} ({pct:.0f}%) {status}", file=sys.stderr, flush=True)
        self.printed = done

    def close(self):
        """Ends the bar, or prints the last line when the run stopped before its total."""
        if self.bar is not None:
            self.bar.close()
        elif self.state is not None and self.printed != self.state[0]:
            self._line()


def progress_callback(progress, name: str):
    """The callback a Rust run calls: `progress` when callable, a `Progress` for True, none
    for None/False."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return Progress(name)
    if callable(progress):
        return progress
    raise TypeError(f"progress: True, False/None, or a callable (done, total, unit, status); got {progress!r}")


def read_metrics(path: Path) -> dict:
    """`metrics.jsonl` as {column: array}; lines missing a column get NaN there."""
    rows = []
    if path.exists():
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    cols: dict[str, list] = {}
    for i, r in enumerate(rows):
        for k, v in flatten(r).items():
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


def drop_none(d):
    return {k: (drop_none(v) if isinstance(v, dict) else v) for k, v in d.items() if v is not None}


def _merge(base: dict, over: dict) -> dict:
    """`over`'s keys over `base`'s; nested dicts merge key by key."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def split_config(config, overrides: dict) -> tuple[dict, str | None]:
    """`config=` (a dict, or the path of a TOML file such as a run folder's `config.toml` or
    what `kestrel config KIND` prints) and keyword overrides: `(dict of keys, TOML path)`.
    The layers apply as on the command line: defaults, the file, then the keys."""
    if config is None:
        base, path = {}, None
    elif isinstance(config, dict):
        base, path = dict(config), None
    elif isinstance(config, (str, os.PathLike)):
        base, path = {}, os.fspath(config)
    else:
        raise TypeError(f"config: a dict or the path of a TOML file, got {type(config).__name__}")
    return drop_none(_merge(base, overrides)), path


def config(kind: str, config=None, *, preset: str | None = None, **overrides) -> dict:
    """A run kind's config as a dict: its defaults (every key, resolved), or what `config`
    (a dict or TOML path), `preset` and keyword overrides resolve to, validated as the run
    would. `kestrel.config("mppi-tune")["run"]["mppi"]["lambda"]`. Kinds:
    `kestrel.run_kinds()`; the same keys with their docs: `kestrel config KIND` on the
    command line, or `config_toml(kind)`. An env id gives the env's params the same way
    (`kestrel.config("CartPole-v1")["gravity"]`; ids: `kestrel.list_envs()`)."""
    keys, path = split_config(config, overrides)
    return json.loads(_kestrel.run_config(kind, params_json(keys), config_file=path, preset=preset))


def config_toml(kind: str, config=None, *, preset: str | None = None, **overrides) -> str:
    """`config(kind, ...)` as commented TOML (each key's doc above it), as `kestrel config
    KIND` prints it; a run's `config=` accepts the file."""
    keys, path = split_config(config, overrides)
    return _kestrel.run_config(kind, params_json(keys), config_file=path, preset=preset, toml=True)


def run_kinds() -> dict[str, str]:
    """`{run kind: the CLI command that runs it}`."""
    return dict(_kestrel.run_kinds())


def run(kind: str, config=None, *, out_dir="runs", preset: str | None = None, resume=None,
        threads: int | None = None, progress=True, logger=None, **overrides) -> RunResult:
    """Any run kind (`kestrel.run_kinds()`) through Kestrel's run registry, exactly as the
    CLI runs it: the config from the defaults (or `preset`), then `config` (a dict or a TOML
    path), then keyword overrides (nested dicts merge: `run={"system": "pendulum"}`). An
    unknown key is a ValueError naming it and the closest valid key. `resume`: a run folder
    to continue (resumable kinds: allo, hunt, actdyn).

    `progress`: True (default) shows a tqdm bar on a terminal or in a notebook (a plain line
    elsewhere), a callable `(done, total, unit, status)` is called on each tick, None shows
    nothing. Ctrl-C (KeyboardInterrupt) or an exception in the callback stops the run at its
    next tick and is raised: the folder's `record.json` says `interrupted`, and the resumable
    kinds save that step's state first, so `resume=` that folder goes on from there.

    `logger`: "tensorboard", "wandb" or a writer (`kestrel.loggers`): the metrics of
    `metrics.jsonl`, under the same names, written live."""
    keys, path = split_config(config, overrides)
    with _Watch(progress, kind, logger, out_dir, resume) as w:
        folder, headline = _kestrel.run(
            kind, params_json(keys), os.fspath(out_dir), config_file=path, preset=preset,
            resume=None if resume is None else os.fspath(resume), threads=threads,
            progress=w.callback, tag=w.tag)
        w.folder = folder
    return result(folder, headline)


class _Watch:
    """A run's progress display and live logger, as one callback for the Rust run."""

    def __init__(self, progress, kind, logger, out_dir, resume=None):
        check_logger(logger)  # before the run: an unusable logger is refused, no folder made
        self.show = progress_callback(progress, kind)
        self.live = None if logger is None else LiveMetrics(logger, kind, out_dir, resume)
        self.tag = None if self.live is None else self.live.tag
        self.folder = None
        if self.live is None:
            self.callback = self.show
        else:
            def tick(done, total, unit, status):
                self.live.poll()
                if self.show is not None:
                    self.show(done, total, unit, status)
            self.callback = tick

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.live is not None:
                try:
                    self.live.finish(self.folder)
                except Exception:
                    if exc_type is None:
                        raise
                    # The run's own exception (Ctrl-C, the logger's first failure) is the one
                    # to see; a second failure while flushing would hide it.
        finally:
            if isinstance(self.show, Progress):
                self.show.close()
        return False


def launch(fn, config: dict | None, out_dir, progress=None, logger=None, **kw) -> RunResult:
    """Calls the Rust run `fn(config_json, out_dir, ..., progress=...)` and reads its folder
    (the runs whose evaluation a Python callable does: `kestrel.dist`); `progress` as in
    `run`."""
    cfg = drop_none(dict(config or {}))
    with _Watch(progress, "run", logger, out_dir) as w:
        folder, headline = fn(params_json(cfg), os.fspath(out_dir), progress=w.callback, tag=w.tag, **kw)
        w.folder = folder
    return result(folder, headline)


def result(folder: str, headline: str) -> RunResult:
    """A finished run's folder read back."""
    d = Path(folder)
    summary = {}
    if (d / "summary.json").exists():
        summary = json.loads((d / "summary.json").read_text())
    return RunResult(dir=d, headline=headline, summary=summary, metrics=read_metrics(d / "metrics.jsonl"))
