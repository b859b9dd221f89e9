"""pyribs' `GridArchive` and `CVTArchive` over Kestrel's archive (`kestrel.ribs`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _kestrel
from .._kestrel import Key, __version__

__all__ = ["ArchiveStats", "GridArchive", "CVTArchive"]

_FIELDS = ("solution", "objective", "measures", "index")


@dataclass(frozen=True)
class ArchiveStats:
    """pyribs' `ArchiveStats`: elites, coverage, QD score (objectives minus the archive's
    `qd_score_offset`, summed), that over the number of cells, and the best and mean
    objective (None while empty)."""

    num_elites: int
    coverage: float
    qd_score: float
    norm_qd_score: float
    obj_max: float | None
    obj_mean: float | None


def _refuse(**options):
    for name, (value, default, why) in options.items():
        if not (value is default or value == default):
            raise ValueError(f"{name} = {value!r}: {why}")


def _refuse_common(learning_rate, threshold_min, extra_fields, *dtypes):
    """What both archives refuse: CMA-MAE thresholds (a learning rate of 1 is pyribs' plain
    elitist archive and accepted), extra fields, dtypes other than float64."""
    if learning_rate is not None and learning_rate != 1.0:
        raise ValueError(f"learning_rate = {learning_rate!r}: CMA-MAE thresholds are not in Kestrel's archive "
                         "(elitist only: None or 1.0)")
    _refuse(threshold_min=(threshold_min, -np.inf, "CMA-MAE thresholds are not in Kestrel's archive"),
            extra_fields=(extra_fields, None, "Kestrel's archive stores solution, objective and measures only"))
    for d in dtypes:
        if d is not None and np.dtype(d) != np.float64:
            raise ValueError(f"dtype = {d!r}: data() returns float64 (stored as float32)")


class _Archive:
    """What `GridArchive` and `CVTArchive` share: the Rust archive (fitness = -objective)."""

    def __init__(self, core, solution_dim, measure_dim, qd_score_offset, rebuild):
        self._a, self._rebuild = core, rebuild
        self.solution_dim, self.measure_dim = int(solution_dim), int(measure_dim)
        self.qd_score_offset = float(qd_score_offset)

    # -- pyribs' reading -----------------------------------------------------------------
    @property
    def cells(self) -> int:
        return int(self._a.num_cells)

    @property
    def empty(self) -> bool:
        return not bool(self._a.occupied.any())

    def __len__(self) -> int:
        return int(self._a.occupied.sum())

    def __iter__(self):
        d = self.data()
        for i in range(len(d["index"])):
            yield {k: v[i] for k, v in d.items()}

    @property
    def stats(self) -> ArchiveStats:
        occ = self._a.occupied
        obj = -self._a.fitness[occ].astype(np.float64)
        n = int(occ.sum())
        qd = float((obj - self.qd_score_offset).sum())
        return ArchiveStats(num_elites=n, coverage=n / self.cells, qd_score=qd, norm_qd_score=qd / self.cells,
                            obj_max=float(obj.max()) if n else None, obj_mean=float(obj.mean()) if n else None)

    def data(self, fields=None, return_type=None):
        """The elites, as pyribs 0.12 returns them: `fields` a name (one array, or with
        `return_type` a one-field dict/tuple/DataFrame) or a collection (default: solution,
        objective, measures, index); `return_type` "dict" (default), "tuple" or "pandas"."""
        occ = self._a.occupied
        every = {
            "solution": lambda: self._a.solutions[occ].astype(np.float64),
            "objective": lambda: -self._a.fitness[occ].astype(np.float64),
            "measures": lambda: self._a.measures[occ].astype(np.float64),
            "index": lambda: np.flatnonzero(occ).astype(np.int32),
        }
        single = isinstance(fields, str)
        names = [fields] if single else (list(_FIELDS) if fields is None else list(dict.fromkeys(fields)))
        for f in names:
            if f not in every:
                raise ValueError(f"fields: {f!r} is not a field of this archive ({', '.join(_FIELDS)})")
        if single and return_type is None:
            return every[fields]()
        return_type = return_type or "dict"
        out = {f: every[f]() for f in names}
        if return_type == "dict":
            return out
        if return_type == "tuple":
            return tuple(out.values())
        if return_type == "pandas":
            return self._frame(out)
        raise ValueError(f"return_type = {return_type!r}: 'dict', 'tuple' or 'pandas'")

    @staticmethod
    def _frame(out):
        import pandas as pd

        cols = {}
        for name, v in out.items():
            if v.ndim == 1:
                cols[name] = v
            else:
                for j in range(v.shape[1]):
                    cols[f"{name}_{j}"] = v[:, j]
        return pd.DataFrame(cols)

    def as_pandas(self, include_solutions: bool = True):
        """The elites as a DataFrame (pyribs' older `as_pandas`): `index`, `objective`,
        `measures_*` and, with `include_solutions`, `solution_*` columns."""
        fields = ["index", "objective", "measures"] + (["solution"] if include_solutions else [])
        return self.data(fields, return_type="pandas")

    def index_of(self, measures) -> np.ndarray:
        m = np.ascontiguousarray(np.atleast_2d(np.asarray(measures, np.float32)))
        if m.shape[1] != self.measure_dim:
            raise ValueError(f"measures: expected shape (n, {self.measure_dim}), got {m.shape}")
        return np.asarray(self._a.index_of(m), np.int32)

    def index_of_single(self, measures) -> int:
        return int(self.index_of(np.asarray(measures)[None])[0])

    def add(self, solution, objective, measures) -> dict:
        """Adds a batch (pyribs' `add`): `{"status": 0 not added / 1 improved / 2 new,
        "value": the improvement}` per row."""
        x = np.ascontiguousarray(np.atleast_2d(np.asarray(solution, np.float32)))
        if x.shape[1] != self.solution_dim:
            raise ValueError(f"solution: expected shape (n, {self.solution_dim}), got {x.shape}")
        obj = np.asarray(objective, np.float64).reshape(-1)
        m = np.ascontiguousarray(np.atleast_2d(np.asarray(measures, np.float32)))
        if len(obj) != len(x) or m.shape != (len(x), self.measure_dim):
            raise ValueError(f"objective and measures: expected ({len(x)},) and ({len(x)}, {self.measure_dim}), "
                             f"got {obj.shape} and {m.shape}")
        # As pyribs: a non-finite objective or measure is an error, not a row left out.
        for name, v in (("objective", obj), ("measures", m)):
            bad = ~np.isfinite(v)
            if bad.any():
                i = int(np.flatnonzero(bad.reshape(len(x), -1).any(axis=1))[0])
                raise ValueError(f"{name}[{i}] = {v[i]}: not finite")
        status, value = self._a.add(x, np.ascontiguousarray(-obj, np.float32), m)
        return {"status": np.asarray(status, np.int32), "value": np.asarray(value, np.float64)}

    def add_single(self, solution, objective, measures) -> dict:
        info = self.add(np.asarray(solution)[None], [objective], np.asarray(measures)[None])
        return {"status": int(info["status"][0]), "value": float(info["value"][0])}

    def clear(self) -> None:
        self._a = self._rebuild()

    # -- pickling: the settings, then the elites re-added (each cell gets its elite back). The
    # cells are rebuilt from the settings (a CVT archive's centroids by its k-means), so a
    # pickle of another version, whose cells could differ, is refused. --
    def __getstate__(self):
        d = self.data()
        return {"format": 1, "kestrel": __version__, "args": self._args, "solution": d["solution"],
                "objective": d["objective"], "measures": d["measures"]}

    def __setstate__(self, st):
        ok = isinstance(st, dict) and st.get("format") == 1 and st.get("kestrel") == __version__
        if not ok:
            made = st.get("kestrel", "an earlier build") if isinstance(st, dict) else "?"
            raise ValueError(f"pickled {type(self).__name__}: made by kestrel {made}, this is kestrel {__version__}; "
                             "its cells could differ here: rebuild the archive and add its data()")
        type(self).__init__(self, **st["args"])
        if len(st["objective"]):
            self.add(st["solution"], st["objective"], st["measures"])


class GridArchive(_Archive):
    """pyribs' `GridArchive(solution_dim=, dims=, ranges=, qd_score_offset=, seed=)`."""

    def __init__(self, *, solution_dim, dims, ranges, learning_rate=None, threshold_min=-np.inf, epsilon=1e-6,
                 qd_score_offset=0.0, seed=None, solution_dtype=None, objective_dtype=None, measures_dtype=None,
                 dtype=None, extra_fields=None):
        _refuse_common(learning_rate, threshold_min, extra_fields, solution_dtype, objective_dtype, measures_dtype,
                       dtype)
        dims = [int(d) for d in dims]
        ranges = [tuple(map(float, r)) for r in ranges]
        if len(ranges) != len(dims):
            raise ValueError(f"ranges: one (lower, upper) per entry of dims ({len(dims)}), got {len(ranges)}")
        self._args = dict(solution_dim=solution_dim, dims=dims, ranges=ranges, qd_score_offset=qd_score_offset,
                          seed=seed)
        self.dims = np.asarray(dims, np.int32)
        self.lower_bounds = np.array([r[0] for r in ranges])
        self.upper_bounds = np.array([r[1] for r in ranges])
        self.boundaries = [np.linspace(lo, hi, d + 1) for lo, hi, d in zip(self.lower_bounds, self.upper_bounds, dims)]

        def build():
            lo, hi = zip(*ranges)
            return _kestrel.QdArchive.grid(int(solution_dim), dims, list(lo), list(hi), 0.0)

        super().__init__(build(), solution_dim, len(dims), qd_score_offset, build)


class CVTArchive(_Archive):
    """pyribs 0.12's `CVTArchive(solution_dim=, centroids=, ranges=, seed=, samples=)` with
    `centroids` a number of cells: centroids by k-means (Lloyd iterations) over `samples`
    uniform points, keyed by `seed`. Given centroids (an array or a file), other nearest-neighbour
    methods, k-d tree and k-means options are refused by name; `chunk_size` is accepted and
    has no effect (Kestrel's lookup is not chunked)."""

    def __init__(self, *, solution_dim, centroids, ranges, learning_rate=None, threshold_min=-np.inf,
                 qd_score_offset=0.0, seed=None, solution_dtype=None, objective_dtype=None, measures_dtype=None,
                 dtype=None, extra_fields=None, samples=100_000, k_means_kwargs=None,
                 nearest_neighbors="scipy_kd_tree", kdtree_kwargs=None, kdtree_query_kwargs=None, chunk_size=None):
        _refuse_common(learning_rate, threshold_min, extra_fields, solution_dtype, objective_dtype, measures_dtype,
                       dtype)
        _refuse(k_means_kwargs=(k_means_kwargs, None, "Kestrel runs its own k-means (20 Lloyd iterations)"),
                nearest_neighbors=(nearest_neighbors, "scipy_kd_tree", "Kestrel finds the nearest centroid its own way"),
                kdtree_kwargs=(kdtree_kwargs, None, "Kestrel builds no k-d tree"),
                kdtree_query_kwargs=(kdtree_query_kwargs, None, "Kestrel builds no k-d tree"))
        if isinstance(centroids, bool) or not isinstance(centroids, (int, np.integer)):
            raise ValueError(f"centroids = {type(centroids).__name__}: a number of cells (given centroids are not "
                             "supported: Kestrel computes them from seed and samples)")
        if not isinstance(samples, (int, np.integer)) or isinstance(samples, bool):
            raise ValueError("samples: a number of points (given sample points are not supported)")
        ranges = [tuple(map(float, r)) for r in ranges]
        self._args = dict(solution_dim=solution_dim, centroids=int(centroids), ranges=ranges,
                          qd_score_offset=qd_score_offset, seed=seed, samples=int(samples))
        self.lower_bounds = np.array([r[0] for r in ranges])
        self.upper_bounds = np.array([r[1] for r in ranges])

        def build():
            lo, hi = zip(*ranges)
            return _kestrel.QdArchive.cvt(int(solution_dim), int(centroids), list(lo), list(hi), Key(int(seed or 0)),
                                          int(samples), 20, 0.0)

        super().__init__(build(), solution_dim, len(ranges), qd_score_offset, build)
