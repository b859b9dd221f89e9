"""Metrics where researchers look: TensorBoard and Weights & Biases, written live.

Every whole run takes `logger=`: `"tensorboard"` writes event files into `<run
folder>/tensorboard/` (so `tensorboard --logdir runs` shows every run), `"wandb"` logs to a
Weights & Biases run named after the run folder (`WANDB_MODE=offline` works as usual), or any
object with `add_scalar(tag, value, step)` (a `SummaryWriter`) or `log(dict, step=...)`.
The names are those of `RunResult.metrics` (the run's `metrics.jsonl` columns, nested keys
joined with `.`), the step its `global_step`. While the run works, its `metrics.jsonl` is followed: what the run has written
reaches the logger at the next progress tick (at most every half second), the rest when the
run ends.

The ask/tell objects' `optimize(..., logger=...)` logs each generation the same way, under
the names `kestrel evo run` writes (`best`, `best_in_generation`, `sigma`, `nonfinite`,
`evals`).
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from pathlib import Path

__all__ = ["Logger", "make_logger"]


class Logger:
    """What Kestrel writes to: `log(step, values)` with numeric values, `flush()` after each
    batch of lines, then `close()`."""

    def log(self, step: int, values: dict) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


class _TensorBoard(Logger):
    def __init__(self, log_dir):
        try:
            from tensorboardX import SummaryWriter
        except ImportError as e:
            raise ImportError('logger="tensorboard" needs tensorboardX: pip install tensorboardX') from e
        self.writer = SummaryWriter(logdir=os.fspath(log_dir))

    def log(self, step, values):
        for k, v in values.items():
            self.writer.add_scalar(k, v, step)

    def flush(self):
        self.writer.flush()

    def close(self):
        self.writer.flush()
        self.writer.close()


class _Wandb(Logger):
    def __init__(self, name, log_dir):
        try:
            import wandb
        except ImportError as e:
            raise ImportError('logger="wandb" needs wandb: pip install wandb') from e
        # A run of its own beside any the user has open (theirs is not finished).
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "kestrel"), name=name,
                              dir=os.fspath(log_dir), reinit="create_new")

    def log(self, step, values):
        self.run.log(values, step=step)

    def close(self):
        self.run.finish()


class _Wrapped(Logger):
    """A user's writer: `add_scalar(tag, value, step)` or `log(dict, step=...)`."""

    def __init__(self, obj):
        self.obj = obj

    def log(self, step, values):
        if hasattr(self.obj, "add_scalar"):
            for k, v in values.items():
                self.obj.add_scalar(k, v, step)
        else:
            self.obj.log(values, step=step)

    def flush(self):
        if hasattr(self.obj, "flush"):
            self.obj.flush()


def check_logger(logger) -> None:
    """Refuses a `logger=` that cannot work, before anything runs: an unknown name, a
    missing package, an object that is not a writer (a `logging.Logger` is not one)."""
    import importlib.util
    import logging

    if logger is None or isinstance(logger, Logger):
        return
    if isinstance(logger, str):
        need = {"tensorboard": "tensorboardX", "wandb": "wandb"}.get(logger)
        if need is None:
            raise ValueError(f'logger = {logger!r}: "tensorboard", "wandb", None, or a writer with add_scalar or log')
        if importlib.util.find_spec(need) is None:
            raise ImportError(f'logger = "{logger}" needs {need}: pip install {need}')
        return
    if isinstance(logger, logging.Logger) or not (hasattr(logger, "add_scalar") or hasattr(logger, "log")):
        raise TypeError('logger: "tensorboard", "wandb", None, or a metrics writer with add_scalar(tag, value, '
                        f"step) or log(dict, step=...) (a SummaryWriter, a wandb run); got {type(logger).__name__}")


def make_logger(logger, name: str, log_dir) -> Logger | None:
    """The `Logger` that `logger=` names (see the module docs), or None for None."""
    check_logger(logger)
    if logger is None:
        return None
    if isinstance(logger, Logger):
        return logger
    if logger == "tensorboard":
        return _TensorBoard(Path(log_dir) / "tensorboard")
    if logger == "wandb":
        return _Wandb(name, log_dir)
    return _Wrapped(logger)


def flatten(d, prefix=""):
    """A metrics line's columns: nested keys joined with `.` (`eval.obs_r2`); the one
    spelling of column names (`RunResult.metrics`, the loggers)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def scalars(row: dict) -> dict:
    """The numeric, finite columns of a metrics line under `RunResult.metrics`' names (one
    flattening: `flatten`), without `global_step`; short numeric lists as
    `name.0`, `name.1`, ..."""
    out = {}
    for name, v in flatten(row).items():
        if name == "global_step":
            continue
        if isinstance(v, bool):
            out[name] = float(v)
        elif isinstance(v, (int, float)):
            if math.isfinite(v):
                out[name] = float(v)
        elif isinstance(v, list) and len(v) <= 64 and all(isinstance(x, (int, float)) for x in v):
            out.update({f"{name}.{i}": float(x) for i, x in enumerate(v) if math.isfinite(x)})
    return out


class LiveMetrics:
    """Follows a running run's `metrics.jsonl` into a logger. The run's folder is found by
    the tag recorded with its call (`record.json`), or is `resume` for a resumed run."""

    def __init__(self, logger, kind: str, out_dir, resume=None):
        self.spec, self.kind = logger, kind
        self.tag = f"kestrel-launch-{uuid.uuid4().hex}"
        self.out_dir, self.folder = Path(out_dir), (Path(resume) if resume is not None else None)
        self.logger: Logger | None = None
        self.offset, self.partial, self.last = 0, b"", 0.0
        # The run's folder is one that is not there yet: only new names are read.
        self.known = set(os.listdir(self.out_dir)) if self.folder is None and self.out_dir.is_dir() else set()
        # A resumed run rewrites its metrics.jsonl up to its checkpoint's step, whose lines its
        # earlier launches logged: this launch logs the steps after it.
        self.after = -1
        if self.folder is not None:
            try:
                self.after = int(json.loads((self.folder / "checkpoint" / "manifest.json").read_text())["step"])
            except (OSError, ValueError, KeyError, TypeError):
                self.after = -1

    def _find(self):
        if self.folder is not None or not self.out_dir.is_dir():
            return
        for name in set(os.listdir(self.out_dir)) - self.known:
            d = self.out_dir / name
            rec = d / "record.json"
            try:
                if rec.is_file() and self.tag in rec.read_text():
                    self.folder = d
                    return
            except OSError:
                continue

    def poll(self, force: bool = False):
        """Writes what the run has added to its metrics since the last poll (every half
        second at most unless `force`)."""
        now = time.monotonic()
        if not force and now - self.last < 0.5:
            return
        self.last = now
        self._find()
        if self.folder is None:
            return
        path = self.folder / "metrics.jsonl"
        if not path.exists():
            return
        if self.logger is None:
            self.logger = make_logger(self.spec, self.folder.name, self.folder)
        if path.stat().st_size < self.offset:  # the file was rewritten (a resume): read it again
            self.offset, self.partial = 0, b""
        with open(path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self.offset += len(data)
        data = self.partial + data
        *lines, self.partial = data.split(b"\n")
        for line in lines:
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:  # not a whole line of this file (it was rewritten under us)
                continue
            step = int(row.get("global_step", 0))
            values = scalars(row)
            if values and step > self.after:
                self.logger.log(step, values)
        if lines:
            self.logger.flush()

    def finish(self, folder=None):
        if folder is not None and self.folder is None:
            self.folder = Path(folder)
        try:
            self.poll(force=True)
        finally:
            if self.logger is not None:
                self.logger.close()
