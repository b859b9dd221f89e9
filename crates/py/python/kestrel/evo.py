"""Evolution strategies for Python: ask/tell objects with the CLI's keys, an evosax-shaped
functional layer with explicit keys, the Rust problems, and whole `kestrel evo` runs.

    es = kestrel.evo.CMAES(num_dims=10, sigma=0.5, seed=0)
    for g in range(100):
        x = es.ask()                       # (pop_size, num_dims) float32
        es.tell(x, f(x))                   # minimises
    es.best_solution, es.best_fitness

`kestrel evo run --seed S` and this loop with `kestrel.evo.Problem` give the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kestrel
from ._kestrel import __version__
from ._runs import RunResult, run as _run
from ._spaces import params_json

Key = _kestrel.Key


@dataclass(frozen=True)
class TellMetrics:
    generation: int
    best_in_generation: float
    best_so_far: float
    nonfinite: int
    sigma: float


def _as_population(x, pop, dims):
    a = np.asarray(x)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"population: expected a float array, got dtype {a.dtype}")
    if a.shape != (pop, dims):
        raise ValueError(f"population: expected shape ({pop}, {dims}), got {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


def _as_fitness(f, pop):
    a = np.asarray(f)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"fitness: expected floats, got dtype {a.dtype}")
    if a.shape != (pop,):
        raise ValueError(f"fitness: expected shape ({pop},), got {a.shape}")
    return np.ascontiguousarray(a, dtype=np.float32)


@dataclass
class Result:
    """What pycma's `es.result` holds: the best solution and fitness, the evaluations when it
    was found and in all, generations, the current mean (`xfavorite`) and the stop
    conditions met (`stop`, as `Strategy.stop()`)."""

    xbest: np.ndarray
    fbest: float
    evals_best: int
    evaluations: int
    iterations: int
    xfavorite: np.ndarray
    stop: dict


def _bounds(bounds, n: int):
    """pycma's `bounds=[lower, upper]` (each a number or `n` numbers; None: unbounded) as two
    lists of `n` floats."""
    if bounds is None:
        return None
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise ValueError(f"bounds: [lower, upper] (each a number or {n} numbers), got {bounds!r}")
    lo, hi = (np.broadcast_to(np.asarray(b, np.float32), (n,)) if np.ndim(b) == 0
              else np.asarray(b, np.float32) for b in bounds)
    if lo.shape != (n,) or hi.shape != (n,):
        raise ValueError(f"bounds: lower and upper must be numbers or {n} values each")
    return (lo.tolist(), hi.tolist())


# pycma's stop options (its names), each off when None.
STOP_OPTIONS = ("ftarget", "tolfun", "tolx", "maxfevals", "maxiter")


# What `Strategy.__getstate__` writes; a pickle of another format or version is refused.
_PICKLE_FORMAT = 1


class Strategy:
    """One evolution strategy (minimising), stateful, with the CLI's key tree: generation `g`
    asks with `Key(seed).fold_in(g + 1).fold_in(0)` and tells with `.fold_in(2)`.

    Hyper-parameters: `params={"lr": 0.01}` or keyword arguments (`OpenES(10, lr=0.01)`),
    the keys of a run config's `[params]` table (`kestrel config evo` lists them with their
    defaults); a knob this strategy does not have, or a misspelt one, is a ValueError naming
    it. `bounds=[lower, upper]` (numbers or one per dimension, as pycma's option) with
    `bound_mode` "clip" or "reflect" (`ask` returns repaired rows) or "penalty" (`tell` adds
    1e3 × the squared distance to the box), as `kestrel evo run` applies them. Stop conditions
    as pycma's options: `ftarget` (best fitness at or below), `tolfun`
    (best fitness of the last `10 + ceil(30 n / pop_size)` generations and this generation's
    fitness within `tolfun`), `tolx` (step size below), `maxfevals` (evaluations),
    `maxiter` (generations); `stop()` returns those met, `result` pycma's summary, and
    `optimize` stops at the first."""

    kind = "cma-es"

    def __init__(self, num_dims: int | None = None, *, pop_size: int | None = None, mean=0.0,
                 sigma: float = 0.5, seed: int = 0, init_key: Key | None = None,
                 params: dict | None = None, ftarget: float | None = None,
                 tolfun: float | None = None, tolx: float | None = None,
                 maxfevals: int | None = None, maxiter: int | None = None, bounds=None,
                 bound_mode: str = "clip", **kw):
        if num_dims is not None and (isinstance(num_dims, bool) or not isinstance(num_dims, (int, np.integer))):
            raise TypeError(f"num_dims: expected an int, got {type(num_dims).__name__}")
        if num_dims is not None and num_dims < 1:
            raise ValueError(f"num_dims = {num_dims}: at least 1")
        m = np.asarray(mean, dtype=np.float32)
        if m.ndim == 0:
            if num_dims is None:
                raise ValueError("num_dims: give num_dims or a mean vector")
            m = np.full(int(num_dims), float(m), np.float32)
        elif num_dims is not None and m.shape != (num_dims,):
            raise ValueError(f"mean: expected shape ({num_dims},), got {m.shape}")
        if m.ndim != 1:
            raise ValueError(f"mean: expected a vector, got shape {m.shape}")
        if not np.all(np.isfinite(m)):
            i = int(np.flatnonzero(~np.isfinite(m))[0])
            raise ValueError(f"mean[{i}] = {m[i]}: not finite")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params: a dict of hyper-parameters, got {type(params).__name__}")
        hyper = {**(params or {}), **kw}
        stops = dict(ftarget=ftarget, tolfun=tolfun, tolx=tolx, maxfevals=maxfevals, maxiter=maxiter)
        for k, v in stops.items():
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v != v):
                raise ValueError(f"{k} = {v!r}: a number (or None: off)")
        box = _bounds(bounds, len(m))
        self._args = dict(pop_size=pop_size, sigma=float(sigma), seed=int(seed), params=hyper, stops=stops,
                          bounds=box, bound_mode=bound_mode)
        self._mean0 = m.copy()
        self._s = _kestrel.Strategy(self.kind, m.tolist(), pop_size, float(sigma), int(seed), init_key,
                                    params_json(hyper), box, bound_mode)
        self._reset_bookkeeping()

    def _reset_bookkeeping(self):
        self._history: list[float] = []  # best fitness per generation (tolfun)
        self._last: TellMetrics | None = None
        self._range = np.inf  # this generation's fitness range
        self._evals = 0
        self._evals_best = 0

    @property
    def params(self) -> dict:
        """The hyper-parameters given (the rest are the strategy's reference defaults)."""
        return dict(self._args["params"])

    # shapes and progress
    pop_size = property(lambda self: self._s.pop_size)
    num_dims = property(lambda self: self._s.num_dims)
    generation = property(lambda self: self._s.generation)
    mean = property(lambda self: self._s.mean)
    best_solution = property(lambda self: self._s.best_solution)
    best_fitness = property(lambda self: self._s.best_fitness)

    def ask(self) -> np.ndarray:
        """A fresh population `(pop_size, num_dims)` float32."""
        return self._s.ask()

    def tell(self, population, fitness) -> TellMetrics:
        """Updates from `population` and its `fitness` (minimised; NaN refused, ±inf ranked)."""
        x = _as_population(population, self.pop_size, self.num_dims)
        f = _as_fitness(fitness, self.pop_size)
        before = self.best_fitness
        m = TellMetrics(**self._s.tell(x, f))
        self._note(m, f)
        if m.best_so_far < before:
            self._evals_best = self._evals
        return m

    def _note(self, m: TellMetrics, f: np.ndarray) -> None:
        self._evals += len(f)
        self._history.append(m.best_in_generation)
        finite = f[np.isfinite(f)]
        self._range = float(finite.max() - finite.min()) if len(finite) else np.inf
        self._last = m

    def stop(self) -> dict:
        """The stop conditions met, `{name: its setting}` as pycma's `es.stop()` (empty: go on)."""
        s, out = self._args["stops"], {}
        m = self._last
        if m is None:
            return out
        if s["ftarget"] is not None and self.best_fitness <= s["ftarget"]:
            out["ftarget"] = s["ftarget"]
        if s["maxfevals"] is not None and self._evals >= s["maxfevals"]:
            out["maxfevals"] = s["maxfevals"]
        if s["maxiter"] is not None and self.generation >= s["maxiter"]:
            out["maxiter"] = s["maxiter"]
        if s["tolx"] is not None and m.sigma < s["tolx"]:
            out["tolx"] = s["tolx"]
        if s["tolfun"] is not None:
            window = 10 + int(np.ceil(30 * self.num_dims / self.pop_size))
            recent = np.asarray(self._history[-window:], np.float64)
            if len(self._history) >= window and np.all(np.isfinite(recent)) \
                    and recent.max() - recent.min() < s["tolfun"] and self._range < s["tolfun"]:
                out["tolfun"] = s["tolfun"]
        return out

    @property
    def result(self) -> Result:
        """pycma's `es.result`: best solution and fitness, evaluations, generations, mean, stops."""
        return Result(xbest=self.best_solution, fbest=float(self.best_fitness), evals_best=self._evals_best,
                      evaluations=self._evals, iterations=self.generation, xfavorite=self.mean, stop=self.stop())

    def optimize(self, f, generations: int | None = None, target: float | None = None, *,
                 logger=None, log_dir="runs") -> TellMetrics:
        """Ask/evaluate/tell with `f(population) -> fitness` until `generations` more have run
        (None: no limit, then some stop condition must be set) or `stop()` holds; `target` is
        a one-off `ftarget`. `logger` ("tensorboard" into
        `log_dir/<kind>-<n>d-<time>/tensorboard`, one folder per call; "wandb"; or a writer;
        `kestrel.loggers`) gets each generation under `kestrel evo run`'s metric names
        (`best`, `best_in_generation`, `sigma`, `nonfinite`, `evals`)."""
        import time
        from pathlib import Path

        from .loggers import make_logger

        if generations is None and not any(v is not None for v in self._args["stops"].values()) \
                and target is None:
            raise ValueError("generations = None: give generations or a stop condition "
                             f"({', '.join(STOP_OPTIONS)}), or the loop never ends")
        name = f"{self.kind}-{self.num_dims}d"
        log = make_logger(logger, name, Path(log_dir) / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")
        m, g = self._last, 0
        try:
            while generations is None or g < int(generations):
                x = self.ask()
                m = self.tell(x, f(x))
                g += 1
                if log is not None:
                    log.log(m.generation, {"best": m.best_so_far, "best_in_generation": m.best_in_generation,
                                           "sigma": m.sigma, "nonfinite": float(m.nonfinite),
                                           "evals": float(self._evals)})
                if self.stop() or (target is not None and m.best_so_far <= target):
                    break
        finally:
            if log is not None:
                log.close()
        return m

    # functional, evosax-shaped layer: explicit keys, states are independent copies
    def init(self, key: Key, mean=None) -> "Strategy":
        """A new state initialised with `key` at `mean` (default: this one's start)."""
        m = self._mean0 if mean is None else np.asarray(mean, np.float32)
        return type(self)(pop_size=self._args["pop_size"], mean=m, sigma=self._args["sigma"],
                          seed=self._args["seed"], init_key=key, params=self._args["params"],
                          bounds=self._args["bounds"], bound_mode=self._args["bound_mode"],
                          **self._args["stops"])

    def ask_with(self, key: Key, state: "Strategy | None" = None):
        """`(population, new_state)`; `state` (default self) is left unchanged."""
        new = (state or self).copy()
        return new._s.ask_with(key), new

    def tell_with(self, key: Key, population, fitness, state: "Strategy | None" = None):
        """`(new_state, metrics)`; `state` (default self) is left unchanged."""
        new = (state or self).copy()
        x = _as_population(population, new.pop_size, new.num_dims)
        f = _as_fitness(fitness, new.pop_size)
        m = TellMetrics(**new._s.tell_with(key, x, f))
        new._note(m, f)
        return new, m

    def copy(self) -> "Strategy":
        new = object.__new__(type(self))
        new._args, new._mean0, new._s = dict(self._args), self._mean0.copy(), self._s.copy()
        new._history, new._last, new._range = list(self._history), self._last, self._range
        new._evals, new._evals_best = self._evals, self._evals_best
        return new

    # checkpoints and pickling
    def state_dict(self) -> dict:
        """The whole state: `{"generation": g, "tensors": {name: float64 array}}`."""
        return {"generation": self.generation, "tensors": self._s.state_dict()}

    def load_state_dict(self, d: dict) -> None:
        self._s.load_state_dict({k: np.ascontiguousarray(v, np.float64) for k, v in d["tensors"].items()})
        self._s.generation = int(d["generation"])

    def __getstate__(self):
        book = {"history": self._history, "last": self._last, "range": self._range,
                "evals": self._evals, "evals_best": self._evals_best}
        return {"format": _PICKLE_FORMAT, "kestrel": __version__, "args": self._args, "mean0": self._mean0,
                "state": self.state_dict(), "book": book}

    def __setstate__(self, st):
        # A strategy's state means what this version's kernels make of it: one pickled by
        # another version is refused rather than continued with silently different numbers.
        made_by = st.get("kestrel") if isinstance(st, dict) else None
        if made_by != __version__ or st.get("format") != _PICKLE_FORMAT:
            raise ValueError(
                f"pickled {type(self).__name__}: made by kestrel {made_by or 'before 0.1.0'} "
                f"(format {st.get('format') if isinstance(st, dict) else '?'}), this is kestrel {__version__} "
                f"(format {_PICKLE_FORMAT}); re-create the strategy (its version and format must match)")
        self._args, self._mean0 = st["args"], st["mean0"]
        self._args.setdefault("params", {})
        self._args.setdefault("stops", dict.fromkeys(STOP_OPTIONS))
        self._args.setdefault("bounds", None)
        self._args.setdefault("bound_mode", "clip")
        self._s = _kestrel.Strategy(self.kind, self._mean0.tolist(), self._args["pop_size"],
                                    self._args["sigma"], self._args["seed"], None,
                                    params_json(self._args["params"]), self._args["bounds"],
                                    self._args["bound_mode"])
        self.load_state_dict(st["state"])
        self._reset_bookkeeping()
        b = st.get("book")
        if b:
            self._history, self._last, self._range = list(b["history"]), b["last"], b["range"]
            self._evals, self._evals_best = b["evals"], b["evals_best"]

    def __repr__(self):
        return f"{type(self).__name__}(num_dims={self.num_dims}, pop_size={self.pop_size}, generation={self.generation})"


class CMAES(Strategy):
    kind = "cma-es"


class SepCMAES(Strategy):
    kind = "sep-cma-es"


class SNES(Strategy):
    kind = "snes"


class XNES(Strategy):
    kind = "xnes"


class OpenES(Strategy):
    kind = "open-es"


class PGPE(Strategy):
    kind = "pgpe"


class DE(Strategy):
    kind = "de"


STRATEGIES = {c.kind: c for c in (CMAES, SepCMAES, SNES, XNES, OpenES, PGPE, DE)}


def make(kind: str, num_dims: int | None = None, **kw) -> Strategy:
    """The strategy named `kind` (`cma-es`, `sep-cma-es`, `snes`, `xnes`, `open-es`, `pgpe`, `de`)."""
    if kind not in STRATEGIES:
        raise ValueError(f"strategy {kind!r}: one of {', '.join(STRATEGIES)}")
    return STRATEGIES[kind](num_dims, **kw)


class Problem:
    """A Rust fitness function: a benchmark (`sphere`, `rosenbrock`, ...; `shift`, `rotate`
    keyed by `seed` as `kestrel evo run`) or `cartpole` neuroevolution. Called on a population
    it returns float32 fitness; rows are keyed by global row (`first_row`)."""

    def __init__(self, name: str, num_dims: int = 10, *, shift: float = 0.0, rotate: bool = False, seed: int = 0):
        self.name = name
        self._p = _kestrel.EvoProblem(name, int(num_dims), float(shift), bool(rotate), int(seed))

    num_dims = property(lambda self: self._p.num_dims)

    def __call__(self, population, key: Key | None = None, first_row: int = 0) -> np.ndarray:
        x = np.asarray(population)
        if x.ndim != 2 or x.shape[1] != self.num_dims:
            raise ValueError(f"population: expected shape (n, {self.num_dims}), got {x.shape}")
        return self._p.evaluate(_as_population(x, x.shape[0], self.num_dims), key, int(first_row))


def run(config: dict | str | None = None, *, out_dir="runs", threads: int | None = None, progress=True, **kw) -> RunResult:
    """`kestrel evo run`: the config's keys as a dict or keywords (`strategy`, `problem`,
    `num_dims`, `generations`, `seed`, ...); writes the same run folder."""
    return _run("evo", config, out_dir=out_dir, threads=threads, progress=progress, **kw)


def qd(config: dict | str | None = None, *, out_dir="runs", threads: int | None = None, progress=True, **kw) -> RunResult:
    """`kestrel evo qd` (MAP-Elites / CMA-ME)."""
    return _run("qd", config, out_dir=out_dir, threads=threads, progress=progress, **kw)


# -- quality diversity ------------------------------------------------------------------------
class Archive:
    """A quality-diversity archive with numpy access (`occupied`, `fitness`, `solutions`,
    `measures`, one row per cell). Kestrel minimises fitness (pyribs maximises objectives:
    pass `-objective`)."""

    def __init__(self, core):
        self._a = core

    @classmethod
    def grid(cls, num_dims: int, cells, ranges, qd_offset: float = 0.0) -> "Archive":
        """`cells[i]` bins over `ranges[i] = (lower, upper)` for each measure (pyribs GridArchive)."""
        lo, hi = zip(*ranges)
        return cls(_kestrel.QdArchive.grid(int(num_dims), [int(c) for c in cells], list(map(float, lo)),
                                           list(map(float, hi)), float(qd_offset)))

    @classmethod
    def cvt(cls, num_dims: int, num_cells: int, ranges, *, seed: int = 0, samples: int | None = None,
            iters: int = 20, qd_offset: float = 0.0) -> "Archive":
        """`num_cells` centroidal Voronoi cells over the measure box (pyribs CVTArchive)."""
        lo, hi = zip(*ranges)
        return cls(_kestrel.QdArchive.cvt(int(num_dims), int(num_cells), list(map(float, lo)), list(map(float, hi)),
                                          Key(int(seed)), samples, int(iters), float(qd_offset)))

    num_cells = property(lambda self: self._a.num_cells)
    num_dims = property(lambda self: self._a.num_dims)
    occupied = property(lambda self: self._a.occupied)
    fitness = property(lambda self: self._a.fitness)
    solutions = property(lambda self: self._a.solutions)
    measures = property(lambda self: self._a.measures)

    def stats(self) -> dict:
        return self._a.stats()

    def index_of(self, measures) -> np.ndarray:
        return self._a.index_of(np.ascontiguousarray(np.atleast_2d(measures), np.float32))

    def add(self, solutions, fitness, measures):
        """Adds a batch; returns `(status, value)` (0 not added, 1 improved, 2 new)."""
        x = np.ascontiguousarray(np.atleast_2d(solutions), np.float32)
        return self._a.add(x, np.ascontiguousarray(fitness, np.float32).reshape(-1),
                           np.ascontiguousarray(np.atleast_2d(measures), np.float32))

    def elites(self) -> dict:
        """The occupied cells only: `{"index", "solution", "fitness", "measures"}` arrays."""
        occ = self.occupied
        return {"index": np.flatnonzero(occ), "solution": self.solutions[occ], "fitness": self.fitness[occ],
                "measures": self.measures[occ]}


class Emitter:
    """A QD emitter: `MapElites` (Gaussian or iso-line variation) or `CMA-ME`."""

    def __init__(self, core):
        self._e = core

    @classmethod
    def map_elites(cls, x0, batch_size: int, sigma: float = 0.1, iso_line=None) -> "Emitter":
        return cls(_kestrel.QdEmitter.map_elites(int(batch_size), np.asarray(x0, np.float32).tolist(), float(sigma),
                                                 None if iso_line is None else tuple(map(float, iso_line))))

    @classmethod
    def cma_me(cls, x0, batch_size: int, sigma0: float = 0.5, key: Key | None = None) -> "Emitter":
        return cls(_kestrel.QdEmitter.cma_me(int(batch_size), np.asarray(x0, np.float32).tolist(), float(sigma0),
                                             key if key is not None else Key(0)))

    batch_size = property(lambda self: self._e.batch_size)
    restarts = property(lambda self: self._e.restarts)


class Scheduler:
    """Asks and tells each emitter in turn with `kestrel evo qd`'s key tree (generation `g`,
    emitter `e`: `Key(seed).fold_in(g + 1).fold_in(e)`, ask `.fold_in(0)`, tell `.fold_in(2)`),
    so the loop below reproduces `kestrel.evo.qd` with the same archive and emitters:

        for g in range(G):
            for e in range(len(sched.emitters)):
                x = sched.ask(e)
                f, m = problem(x)
                sched.tell(e, x, f, m)
    """

    def __init__(self, archive: Archive, emitters, seed: int = 0):
        self.archive, self.emitters, self.seed = archive, list(emitters), int(seed)
        self.generation = 0

    def _key(self, e):
        return Key(self.seed).fold_in(self.generation + 1).fold_in(e)

    def ask(self, emitter: int) -> np.ndarray:
        return self.emitters[emitter]._e.ask(self.archive._a, self._key(emitter).fold_in(0))

    def tell(self, emitter: int, population, fitness, measures) -> None:
        x = _as_population(population, self.emitters[emitter].batch_size, self.archive.num_dims)
        self.emitters[emitter]._e.tell(self.archive._a, self._key(emitter).fold_in(2), x,
                                       np.ascontiguousarray(fitness, np.float32),
                                       np.ascontiguousarray(measures, np.float32))
        if emitter == len(self.emitters) - 1:
            self.generation += 1

    @classmethod
    def from_config(cls, **config) -> "tuple[Scheduler, QdBenchmark]":
        """The archive, emitters and problem `kestrel evo qd` builds for `config` (its keys:
        `archive`, `emitter`, `num_emitters`, `batch_size`, `num_dims`, `cells`, `seed`,
        `function`, `sigma`)."""
        seed, arch, ems, problem = _kestrel.qd_setup(params_json(config))
        return cls(Archive(arch), [Emitter(e) for e in ems], seed), QdBenchmark.of(problem)


class QdBenchmark:
    """`kestrel evo qd`'s linear-projection benchmark: `(fitness, measures)` of a population."""

    def __init__(self, num_dims: int, function: str = "sphere"):
        self._p = _kestrel.QdBenchmark(int(num_dims), function)

    @classmethod
    def of(cls, core) -> "QdBenchmark":
        """Wraps a `_kestrel.QdBenchmark`."""
        b = object.__new__(cls)
        b._p = core
        return b

    measure_bound = property(lambda self: self._p.measure_bound)

    def __call__(self, population):
        return self._p.evaluate(np.ascontiguousarray(np.atleast_2d(population), np.float32))
