"""pyribs' `Scheduler`: one `ask()` over every emitter, one `tell(objective, measures)`."""

from __future__ import annotations

import numpy as np

__all__ = ["Scheduler"]


class Scheduler:
    """`Scheduler(archive, emitters)`: `ask()` concatenates each emitter's batch; `tell(objective,
    measures)` hands each emitter its rows back (objectives are maximised, as in pyribs), which
    it adds to the archive and learns from."""

    def __init__(self, archive, emitters, result_archive=None, *, add_mode="batch"):
        emitters = list(emitters)
        if not emitters:
            raise ValueError("emitters: pass in at least one emitter to the scheduler")
        if len({id(e) for e in emitters}) != len(emitters):
            raise ValueError("emitters: an emitter appears twice (each needs its own instance)")
        if any(e.archive is not archive for e in emitters):
            raise ValueError("emitters: every emitter must be built on the scheduler's archive")
        if result_archive is not None:
            raise ValueError("result_archive: not supported (Kestrel's archive is elitist; it is the result)")
        if add_mode != "batch":
            raise ValueError(f"add_mode = {add_mode!r}: only 'batch'")
        self.archive, self.emitters, self.result_archive = archive, emitters, archive
        self._asked = None

    def ask(self) -> np.ndarray:
        """Every emitter's batch, in emitter order, as one `(n, solution_dim)` array."""
        parts = [e.ask() for e in self.emitters]
        self._asked = np.concatenate(parts)
        self._sizes = [len(p) for p in parts]
        return self._asked.copy()

    def tell(self, objective, measures, **fields) -> None:
        """The objective (maximised) and measures of the solutions `ask` returned."""
        if fields:
            raise ValueError(f"{sorted(fields)[0]}: extra fields are not stored by Kestrel's archive")
        if self._asked is None:
            raise RuntimeError("tell called before ask")
        n = len(self._asked)
        obj = np.asarray(objective, np.float64).reshape(-1) if np.ndim(objective) else None
        m = np.asarray(measures, np.float64)
        if obj is None or obj.shape != (n,):
            raise ValueError(f"objective: expected shape ({n},), got {np.shape(objective)}")
        if m.shape != (n, self.archive.measure_dim):
            raise ValueError(f"measures: expected shape ({n}, {self.archive.measure_dim}), got {m.shape}")
        for name, v in (("objective", obj), ("measures", m)):  # as pyribs: an error
            bad = ~np.isfinite(v)
            if bad.any():
                i = int(np.flatnonzero(bad.reshape(n, -1).any(axis=1))[0])
                raise ValueError(f"{name}[{i}] = {v[i]}: not finite")
        start = 0
        for e, k in zip(self.emitters, self._sizes):
            sl = slice(start, start + k)
            e._tell(self._asked[sl], obj[sl], m[sl])
            start += k
        self._asked = None
