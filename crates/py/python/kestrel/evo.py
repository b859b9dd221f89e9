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

    def __repr__(self) -> str:
        # Vectors by their size and first values (a 10,000-D `xbest` is not printed whole).
        def short(v):
            v = np.asarray(v)
            head = np.array2string(v[:3], precision=4, separator=", ")
            return head if v.size <= 3 else f"{head[:-1]}, ...] ({v.size} values)"
        return (f"Result(fbest={self.fbest!r}, xbest={short(self.xbest)}, evals_best={self.evals_best}, "
                f"evaluations={self.evaluations}, iterations={self.iterations}, xfavorite={short(self.xfavorite)}, "
                f"stop={self.stop!r})")


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


# pycma's stop options (its names, `cma.CMAOptions()`), each off when None; CMA-ES and
# Sep-CMA-ES start from pycma's defaults, the other strategies (whose peer evosax has none)
# from none. `kestrel_evo::termination` decides them.
STOP_OPTIONS = ("ftarget", "maxfevals", "maxiter", "tolfacupx", "tolx", "tolfun", "tolfunhist",
                "tolstagnation", "tolupsigma", "noeffectcoord", "noeffectaxis", "tolconditioncov",
                "tolflatfitness")

# pycma's option names for what this class has under its own names.
_PYCMA_NAMES = {"popsize": "pop_size", "x0": "mean", "sigma0": "sigma"}

# What `Strategy.__getstate__` writes; a pickle of another format or version is refused.
_PICKLE_FORMAT = 2

_UNSET = object()


class Strategy:
    """One evolution strategy (minimising), stateful, with the CLI's key tree: generation `g`
    asks with `Key(seed).fold_in(g + 1).fold_in(0)` and tells with `.fold_in(2)`.

    pycma's way of building works too: `CMAES(x0, sigma0, inopts)` (`x0` a vector, `inopts` a
    dict of pycma options), and pycma's names are accepted beside Kestrel's: `x0` (`mean`),
    `sigma0` (`sigma`), `popsize` (`pop_size`), `seed`, `bounds`, `maxfevals`, `CMA_diagonal`
    (True: Sep-CMA-ES) and every stop option below.

    Hyper-parameters: `params={"lr": 0.01}` or keyword arguments (`OpenES(10, lr=0.01)`),
    the keys of a run config's `[params]` table (`kestrel.config("evo")` lists them with their
    defaults); a knob this strategy does not have, or a misspelt one, is a ValueError naming
    the closest of this strategy's keys. `bounds=[lower, upper]` (numbers or one per
    dimension, as pycma's option) with `bound_mode` "clip" or "reflect" (`ask` returns repaired
    rows) or "penalty" (`tell` adds 1e3 × the squared distance to the box), as `kestrel evo run`
    applies them.

    Stop conditions are pycma's (`STOP_OPTIONS`, its names and meanings: `ftarget`,
    `maxfevals`, `maxiter`, `tolx`, `tolfun`, `tolfunhist`, `tolstagnation`, `tolupsigma`,
    `tolconditioncov`, `noeffectaxis`, `noeffectcoord`, `tolfacupx`, `tolflatfitness`). CMA-ES
    and Sep-CMA-ES start with pycma's defaults on (`maxiter` = 100 + 150 (n+3)² / √λ, `tolx`
    1e-11, `tolfun` 1e-11, ...), so a run left going stops itself as pycma's does; the other
    strategies start with none, as evosax. Pass a value to set one, None to turn it off;
    `stop_options` shows those in force. `stop()` returns the ones met, `result` pycma's
    summary, and `optimize` stops at the first. `tell` takes the population of the last `ask`
    (a tell before any ask is refused); `tell_with` takes any population."""

    kind = "cma-es"

    def __init__(self, num_dims=None, sigma0=None, inopts: dict | None = None, *,
                 pop_size: int | None = None, mean=None, sigma: float | None = None, seed: int | None = None,
                 init_key: Key | None = None, params: dict | None = None, ftarget=_UNSET, tolfun=_UNSET,
                 tolx=_UNSET, maxfevals=_UNSET, maxiter=_UNSET, bounds=None, bound_mode: str = "clip",
                 options: dict | None = None, **kw):
        if inopts is not None and not isinstance(inopts, dict):
            raise TypeError(f"inopts: a dict of pycma options, got {type(inopts).__name__}")
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"options: a dict of stop options, got {type(options).__name__}")
        if params is not None and not isinstance(params, dict):
            raise TypeError(f"params: a dict of hyper-parameters, got {type(params).__name__}")
        # pycma's spellings, from inopts, options or keywords, onto Kestrel's.
        opts = {**(inopts or {}), **(options or {})}
        given = {"pop_size": pop_size, "mean": mean, "sigma": sigma, "seed": seed, "bounds": bounds}
        if num_dims is not None and not isinstance(num_dims, (int, np.integer)) or isinstance(num_dims, bool):
            if isinstance(num_dims, bool) or np.ndim(num_dims) != 1:
                raise TypeError(f"num_dims: expected an int (or x0, a vector), got {type(num_dims).__name__}")
            given["mean"], num_dims = num_dims, None  # CMAES(x0, sigma0): pycma's first argument
        if sigma0 is not None:
            given["sigma"] = sigma0
        for src in (opts, kw):
            for k in [k for k in src if k in _PYCMA_NAMES or k in ("seed", "bounds", "CMA_diagonal")]:
                ours = _PYCMA_NAMES.get(k, k)
                if ours != "CMA_diagonal" and given.get(ours) is not None:
                    raise ValueError(f"{k}: given twice (as {k} and {ours})")
                given[ours] = src.pop(k)
        diagonal = given.pop("CMA_diagonal", None)
        kind = type(self).kind
        if diagonal not in (None, False):
            if diagonal is not True:
                raise ValueError(f"CMA_diagonal = {diagonal!r}: True or False (a number of diagonal "
                                 "generations is not supported)")
            if kind != "cma-es":
                raise ValueError(f"CMA_diagonal: a CMA-ES option, not {kind}'s")
            kind = "sep-cma-es"
        self.kind = kind
        stops = {k: v for k, v in dict(ftarget=ftarget, tolfun=tolfun, tolx=tolx, maxfevals=maxfevals,
                                       maxiter=maxiter).items() if v is not _UNSET}
        for src in (opts, kw):
            for k in [k for k in src if k in STOP_OPTIONS]:
                stops[k] = src.pop(k)
        if opts:
            raise ValueError(f"inopts: {', '.join(sorted(opts))}: not an option here (pycma's: x0, sigma0, "
                             f"popsize, seed, bounds, CMA_diagonal, {', '.join(STOP_OPTIONS)})")
        for k, v in stops.items():
            if v is not None and (not isinstance(v, (int, float, np.integer, np.floating)) or v != v):
                raise ValueError(f"{k} = {v!r}: a number (or None: off)")
            # pycma's "never": ftarget = -inf, maxfevals or maxiter = inf; off here.
            if v is not None and not isinstance(v, bool) and np.isinf(v) and (
                    (k == "ftarget" and v < 0) or (k in ("maxfevals", "maxiter") and v > 0)):
                stops[k] = None
        stops = {k: (None if v is None else (bool(v) if isinstance(v, bool) else float(v)))
                 for k, v in stops.items()}
        pop_size, sigma, seed = given["pop_size"], given["sigma"], given["seed"]
        sigma = 0.5 if sigma is None else sigma
        seed = 0 if seed is None else seed
        mean = 0.0 if given["mean"] is None else given["mean"]
        if num_dims is not None and num_dims < 1:
            raise ValueError(f"num_dims = {num_dims}: at least 1")
        if num_dims is not None:
            # The state's size, before the mean vector is built.
            _kestrel.check_strategy_size(kind, int(num_dims), pop_size)
        m = np.asarray(mean, dtype=np.float32)
        if m.ndim == 0:
            if num_dims is None:
                raise ValueError("num_dims: give num_dims or a mean vector (x0)")
            m = np.full(int(num_dims), float(m), np.float32)
        elif num_dims is not None and m.shape != (num_dims,):
            raise ValueError(f"mean: expected shape ({num_dims},), got {m.shape}")
        if m.ndim != 1:
            raise ValueError(f"mean: expected a vector, got shape {m.shape}")
        if not np.all(np.isfinite(m)):
            i = int(np.flatnonzero(~np.isfinite(m))[0])
            raise ValueError(f"mean[{i}] = {m[i]}: not finite")
        hyper = {**(params or {}), **kw}
        box = _bounds(given["bounds"], len(m))
        self._args = dict(kind=kind, pop_size=pop_size, sigma=float(sigma), seed=int(seed), params=hyper,
                          stops=stops, bounds=box, bound_mode=bound_mode)
        self._mean0 = m.copy()
        self._s = self._core(init_key)
        self._last: TellMetrics | None = None

    def _core(self, init_key):
        a = self._args
        return _kestrel.Strategy(a["kind"], self._mean0, a["pop_size"], a["sigma"], a["seed"], init_key,
                                 params_json(a["params"]), a["bounds"], a["bound_mode"], params_json(a["stops"]))

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
        """Updates from the last `ask`'s `population` and its `fitness` (minimised; NaN
        refused, ±inf ranked); a tell without an ask before it is refused."""
        x = _as_population(population, self.pop_size, self.num_dims)
        f = _as_fitness(fitness, self.pop_size)
        self._last = m = TellMetrics(**self._s.tell(x, f))
        return m

    def stop(self) -> dict:
        """The stop conditions met, `{name: its setting}` as pycma's `es.stop()` (empty: go on)."""
        return self._s.stop()

    @property
    def stop_options(self) -> dict:
        """Every stop option and its setting (None: off)."""
        return self._s.stop_options()

    @property
    def result(self) -> Result:
        """pycma's `es.result`: best solution and fitness, evaluations, generations, mean, stops."""
        return Result(xbest=self.best_solution, fbest=float(self.best_fitness), evals_best=self._s.evals_best,
                      evaluations=self._s.evals, iterations=self.generation, xfavorite=self.mean, stop=self.stop())

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

        if generations is None and not any(v not in (None, False) for v in self.stop_options.values()) \
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
                                           "evals": float(self._s.evals)})
                if self.stop() or (target is not None and m.best_so_far <= target):
                    break
        finally:
            if log is not None:
                log.close()
        return m

    # functional, evosax-shaped layer: explicit keys, states are independent copies
    def init(self, key: Key, mean=None) -> "Strategy":
        """A new state initialised with `key` at `mean` (default: this one's start)."""
        new = self.copy()
        if mean is not None:
            new._mean0 = np.asarray(mean, np.float32).copy()
        new._s, new._last = new._core(key), None
        return new

    def ask_with(self, key: Key, state: "Strategy | None" = None):
        """`(population, new_state)`; `state` (default self) is left unchanged."""
        new = (state or self).copy()
        return new._s.ask_with(key), new

    def tell_with(self, key: Key, population, fitness, state: "Strategy | None" = None):
        """`(new_state, metrics)`; `state` (default self) is left unchanged."""
        new = (state or self).copy()
        x = _as_population(population, new.pop_size, new.num_dims)
        f = _as_fitness(fitness, new.pop_size)
        new._last = m = TellMetrics(**new._s.tell_with(key, x, f))
        return new, m

    def copy(self) -> "Strategy":
        new = object.__new__(type(self))
        new.kind, new._args, new._mean0 = self.kind, dict(self._args), self._mean0.copy()
        new._s, new._last = self._s.copy(), self._last
        return new

    # checkpoints and pickling
    def state_dict(self) -> dict:
        """The whole state: `{"generation": g, "tensors": {name: float64 array}}`."""
        return {"generation": self.generation, "tensors": self._s.state_dict()}

    def load_state_dict(self, d: dict) -> None:
        self._s.load_state_dict({k: np.ascontiguousarray(v, np.float64) for k, v in d["tensors"].items()})
        self._s.generation = int(d["generation"])

    def __getstate__(self):
        return {"format": _PICKLE_FORMAT, "kestrel": __version__, "args": self._args, "mean0": self._mean0,
                "state": self.state_dict(), "termination": self._s.termination_state(), "last": self._last,
                "asked": self._s.asked}

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
        self.kind = self._args["kind"]
        self._s = self._core(None)
        self.load_state_dict(st["state"])
        self._s.load_termination_state({k: np.ascontiguousarray(v, np.float64)
                                        for k, v in st["termination"].items()})
        self._last = st["last"]
        if st["asked"]:
            # The population of a pending ask is the same draw again (its key is the generation's).
            self._s.ask()

    def __repr__(self):
        return (f"{type(self).__name__}(kind={self.kind!r}, num_dims={self.num_dims}, pop_size={self.pop_size}, "
                f"generation={self.generation}, best_fitness={self.best_fitness:.6g})")


class CMAES(Strategy):
    """CMA-ES (Hansen's tutorial; evosax's `CMA_ES`, pycma's algorithm): full covariance,
    rank-one, rank-μ and active updates. pycma's stop conditions are on by default."""
    kind = "cma-es"


class SepCMAES(Strategy):
    """Sep-CMA-ES (Ros & Hansen 2008; evosax's `Sep_CMA_ES`; pycma's `CMA_diagonal=True`):
    a diagonal covariance. pycma's stop conditions are on by default."""
    kind = "sep-cma-es"


class SNES(Strategy):
    """Separable natural evolution strategy (Schaul et al. 2011; evosax's `SNES`)."""
    kind = "snes"


class XNES(Strategy):
    """Exponential natural evolution strategy (Glasmachers et al. 2010; evosax's `xNES`)."""
    kind = "xnes"


class OpenES(Strategy):
    """OpenAI-ES (Salimans et al. 2017; evosax's `Open_ES`): antithetic noise, Adam on the mean."""
    kind = "open-es"


class PGPE(Strategy):
    """PGPE with ClipUp (Sehnke et al. 2010; evosax's `PGPE`): antithetic, per-dimension steps."""
    kind = "pgpe"


class DE(Strategy):
    """Differential evolution (Storn & Price 1997; evosax's `DifferentialEvolution`)."""
    kind = "de"


class SimpleES(Strategy):
    """Simple ES (Rechenberg 1973; evosax's `SimpleES`): the best half weighted equally, a
    diagonal Gaussian whose steps follow the elite spread."""
    kind = "simple-es"


class DES(Strategy):
    """The Discovered ES (Lange et al., ICLR 2023; evosax's `DES` / `DiscoveredES`): meta-learned
    rank weights (`temperature`) on a diagonal Gaussian."""
    kind = "des"


class MAES(Strategy):
    """MA-ES (Beyer & Sendhoff 2017; evosax's `MA_ES`): CMA-ES's adaptation on a transformation
    matrix, no eigendecomposition. `bugs="all"` reproduces evosax's candidate-order weights."""
    kind = "ma-es"


class LMMAES(Strategy):
    """LM-MA-ES (Loshchilov, Glasmachers & Beyer 2019; evosax's `LM_MA_ES`): `4 + 3 ln n`
    directions in place of the matrix, linear time and memory. `bugs="all"` as MAES."""
    kind = "lm-ma-es"


class ARS(Strategy):
    """Augmented Random Search (Mania, Guy & Recht 2018; evosax's `ARS`): mirrored pairs, the
    best quarter's differences, Adam (lr 1e-3). Even population."""
    kind = "ars"


class ESMC(Strategy):
    """ESMC (Merchant et al. 2021; evosax's `ESMC`): mirrored pairs against the mean's fitness,
    Adam with a decaying learning rate. Even population, at least 4."""
    kind = "esmc"


class HillClimbing(Strategy):
    """Gaussian hill climbing (evosax's `HillClimbing`): samples around the best so far."""
    kind = "hill-climbing"


class RandomSearch(Strategy):
    """Random search (evosax's `RandomSearch` with N(x0, σ²) as its sampling function)."""
    kind = "random-search"


class SimulatedAnnealing(Strategy):
    """Simulated annealing (Rere et al. 2015; evosax's `SimulatedAnnealing`): Metropolis
    acceptance of each generation's best. `bugs="all"` reproduces evosax's NaN handling."""
    kind = "simulated-annealing"


class GradientlessDescent(Strategy):
    """Gradientless descent (Golovin et al., ICLR 2020; evosax's `GradientlessDescent`): radii
    halving along the population from `radius_max` to `radius_min` (σ is not used)."""
    kind = "gradientless-descent"


class PSO(Strategy):
    """Particle swarm optimisation (Kennedy & Eberhart 1995; evosax's `PSO`). Generation 0 asks
    the first swarm around x0 (evosax's `init(population, fitness)`)."""
    kind = "pso"


class SimpleGA(Strategy):
    """The simple genetic algorithm (evosax's `SimpleGA`): parents from the best half, uniform
    crossover (`crossover_rate`), Gaussian mutation σ. Generation 0 asks the first population."""
    kind = "simple-ga"


class MR15GA(Strategy):
    """The 1/5-success-rule GA (Rechenberg; evosax's `MR15_GA`): elitist, one mutation rate."""
    kind = "mr15-ga"


class SAMRGA(Strategy):
    """The self-adaptive mutation rate GA (Clune et al. 2008; evosax's `SAMR_GA`)."""
    kind = "samr-ga"


class GESMRGA(Strategy):
    """Group elite selection of mutation rates (Kumar et al., GECCO 2022; evosax's `GESMR_GA`):
    `num_groups` rates (pop_size − 1 divisible by it)."""
    kind = "gesmr-ga"


class PersistentES(Strategy):
    """Persistent ES (Vicol et al., ICML 2021; evosax's `PersistentES`) over unrolled inner
    problems of `inner_steps` steps (evosax's `T`, default 100), `unroll_steps` (`K`, 10) per
    generation: each generation evaluates the next K steps of every candidate's unroll, and the
    mirrored perturbations are summed until the inner problem ends. `inner_step` is 0 where a
    new inner problem starts (reset your unrolls then). Adam (lr 1e-3), σ constant; evosax's
    `T=` and `K=` are accepted."""
    kind = "persistent-es"

    def __init__(self, num_dims=None, sigma0=None, inopts=None, *, T=None, K=None, **kw):
        kw.update({k: v for k, v in (("inner_steps", T), ("unroll_steps", K)) if v is not None})
        super().__init__(num_dims, sigma0, inopts, **kw)

    @property
    def inner_step(self) -> int:
        """The inner problem's steps done (0: the next ask starts a new one)."""
        return int(self._s.state_dict()["inner_step"][0])


class NoiseReuseES(PersistentES):
    """Noise-Reuse ES (Li et al., NeurIPS 2023; evosax's `NoiseReuseES`): as `PersistentES`, but
    one draw of mirrored perturbations is reused over every unroll of an inner problem."""
    kind = "noise-reuse-es"


class GuidedES(Strategy):
    """Guided ES (Maheswaranathan et al., ICML 2019; evosax's `GuidedES`): mirrored samples from
    `σ² (α/n I + (1−α)/k Q Qᵀ)`, `Q` an orthonormal basis of the last `subspace_dims` surrogate
    gradients given with `set_gradient(g)` before `ask` (none given: zeros, as evosax); SGD
    (lr 1e-3) on `β` times the antithetic estimate."""
    kind = "guided-es"

    def set_gradient(self, gradient) -> None:
        """The surrogate gradient (`num_dims` finite values) the next `ask` samples along."""
        self._s.set_gradient(np.ascontiguousarray(gradient, np.float32).reshape(-1))


class ASEBO(Strategy):
    """ASEBO (Choromanski et al., NeurIPS 2019; evosax's `ASEBO`): mirrored samples whose
    covariance mixes the full space with the top `subspace_dims` directions of its last
    gradient estimates, the mix `α` from how much of the gradient lies outside; Adam (lr 1e-3)
    on the estimate scaled to norm `num_dims`."""
    kind = "asebo"


class RmES(Strategy):
    """Rm-ES (Li & Zhang, IEEE TEVC 2018; evosax's `Rm_ES`): CMA-ES's mean and evolution path,
    the covariance replaced by the last `num_paths` paths (evosax's `m=`, default 1), the step
    size by the rank-based success rule. `bugs="all"` reproduces evosax's (its success rule ranks
    the shaped weights, so σ always falls to σ_min = 1e-3; one path draw for all candidates)."""
    kind = "rm-es"

    def __init__(self, num_dims=None, sigma0=None, inopts=None, *, m=None, **kw):
        if m is not None:
            kw["num_paths"] = m
        super().__init__(num_dims, sigma0, inopts, **kw)


class iAMaLGaMFull(Strategy):
    """iAMaLGaM with a full covariance (Bosman et al., Evol. Comput. 2013; evosax's
    `iAMaLGaM_Full`): the better half's mean and covariance with memory, anticipated mean shift
    and adaptive variance scaling, sampling `N(m, C + σ² I)` (σ constant, default 1).
    `bugs="all"`: evosax's standard deviation ratio (whitened by the upper Cholesky factor)."""
    kind = "iamalgam-full"


class iAMaLGaMUnivariate(Strategy):
    """iAMaLGaM with one variance per coordinate (evosax's `iAMaLGaM_Univariate`).
    `bugs="all"`: evosax's sampling `m + (σ + √C) z` and its ratio over `C` (Kestrel's default:
    `√(C + σ²)` and `√C`, the full model's diagonal)."""
    kind = "iamalgam-univariate"


class CRFMNES(Strategy):
    """CR-FM-NES (Nomura & Ono, IEEE CEC 2022; evosax's `CR_FM_NES`): natural gradients over
    `N(m, σ² D (I + v vᵀ) D)` in linear time, distance-weighted recombination while moving,
    mirrored samples (even population). `bugs="all"`: evosax's clipping of the rank weights at 0."""
    kind = "cr-fm-nes"


class _SteinVariational(Strategy):
    """The Stein variational strategies' particles: `num_populations` searches, each with its
    own block of `pop_size / num_populations` rows (`ask` returns the blocks one after
    another). `means=` (`num_populations × num_dims`) starts the particles there, as evosax's
    `init(key, means)`; without it they start at `mean + σ z`. `mean` is the particle that
    found the best value."""

    def __init__(self, num_dims=None, sigma0=None, inopts=None, *, means=None, **kw):
        start = None
        if means is not None:
            start = np.ascontiguousarray(means, np.float64)
            if start.ndim != 2 or not np.all(np.isfinite(start)):
                raise ValueError(f"means: a finite (num_populations, num_dims) array, got shape {start.shape}")
            kw.setdefault("num_populations", start.shape[0])
            kw.setdefault("mean", start.mean(axis=0))
        super().__init__(num_dims, sigma0, inopts, **kw)
        if start is not None:
            k = int(self.params.get("num_populations", start.shape[0]))
            if start.shape != (k, self.num_dims):
                raise ValueError(f"means: expected shape ({k}, {self.num_dims}), got {start.shape}")
            d = self._s.state_dict()
            d.update(self._mean_tensors(start))
            self._s.load_state_dict(d)

    def _mean_tensors(self, start):
        raise NotImplementedError

    @property
    def means(self) -> np.ndarray:
        """The particles' means, `(num_populations, num_dims)`."""
        raise NotImplementedError


class SVOpenES(_SteinVariational):
    """SV-OpenAI-ES (Liu et al., UAI 2017; evosax's `SV_Open_ES`): `num_populations` OpenAI-ES
    particles, each a mean with its own block of mirrored rows, moved together by Stein
    variational gradient descent with an RBF kernel (`kernel_std`, `alpha`); SGD (lr 1e-3), σ
    constant. `means=` and `mean` as for every Stein variational strategy (above)."""
    kind = "sv-open-es"

    def _mean_tensors(self, start):
        return {"means": start.reshape(-1)}

    @property
    def means(self) -> np.ndarray:
        """The particles' means, `(num_populations, num_dims)`."""
        return np.asarray(self._s.state_dict()["means"]).reshape(-1, self.num_dims)


class SVCMAES(_SteinVariational):
    """SV-CMA-ES (Braun, Lange & Rittel 2024, arXiv:2410.10390; evosax's `SV_CMA_ES`):
    `num_populations` CMA-ES particles (default: the most, up to 4, with at least 4 rows each;
    the default population is 4 of Hansen's), each with its own step size and covariance, whose
    mean steps carry an RBF kernel's repulsion (`kernel_std`, `alpha`) so they spread over
    several modes. CMA-ES's knobs apply to every particle. `means=` and `mean` as for every
    Stein variational strategy; `state_dict()` names particle q's arrays `p{q}.mean`, ...."""
    kind = "sv-cma-es"

    def _mean_tensors(self, start):
        return {f"p{q}.mean": row for q, row in enumerate(start)}

    @property
    def means(self) -> np.ndarray:
        """The particles' means, `(num_populations, num_dims)`."""
        d = self._s.state_dict()
        k = sum(1 for name in d if name.endswith(".mean") and name.startswith("p"))
        return np.stack([np.asarray(d[f"p{q}.mean"]) for q in range(k)])


class DiffusionEvolution(Strategy):
    """Diffusion Evolution (Zhang et al., ICLR 2025; evosax's `DiffusionEvolution`): each
    generation one DDIM denoising step of the population toward its fitness-weighted
    estimates, over `num_generations` (default 128) of the `alpha_schedule` ("cosine", "ddim",
    "ddpm"); `num_latent_dims` weighs members in a random projection. Generation 0 is the
    population `mean + σ z` (evosax's evaluated init population); past the schedule the
    population stays."""
    kind = "diffusion-evolution"


def installed_evosax_weights(kind: str, num_dims: int = 1) -> str | None:
    """The installed evosax package's own copy of a learned strategy's default weights at
    `num_dims` (`<site-packages>/evosax/algorithms/ckpt/les/2023_10_les_v2.pkl` for LES; LGA's
    `lga/2023_04_lga_v4.pkl`, or `v7` above 50 dimensions), found without importing evosax;
    None when evosax is not installed or the strategy is not a learned one."""
    import importlib.util
    import os

    rel = _kestrel.evosax_weights(kind, num_dims)
    spec = importlib.util.find_spec("evosax") if rel else None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "algorithms", "ckpt", rel)
        if os.path.isfile(path):
            return path
    return None


class _Learned(Strategy):
    """A meta-learned strategy: its networks' weights are evosax 0.3.2's files, which Kestrel
    does not ship. `params_path=` names one (evosax's own argument); without it the installed
    evosax package's default file is used, and with neither the error says what is missing."""

    def __init__(self, num_dims=None, sigma0=None, inopts=None, *, params=None, **kw):
        given = "params_path" in kw or "params_path" in (params or {})
        if not given:
            dims = num_dims if isinstance(num_dims, (int, np.integer)) else None
            if dims is None:
                x0 = num_dims if num_dims is not None else kw.get("mean", kw.get("x0"))
                dims = int(np.size(x0)) if x0 is not None else 1
            found = installed_evosax_weights(type(self).kind, int(dims))
            if found is not None:
                kw["params_path"] = found
        super().__init__(num_dims, sigma0, inopts, params=params, **kw)


class LES(_Learned):
    """LES, the learned evolution strategy (Lange et al., ICLR 2023; evosax's `LES` /
    `LearnedES`): a diagonal Gaussian whose recombination weights come from self-attention
    over fitness features and whose per-coordinate learning rates come from an MLP over
    evolution paths, with evosax's meta-learned weights (`params_path=`, default the installed
    evosax's `ckpt/les/2023_10_les_v2.pkl`)."""
    kind = "les"


class LGA(_Learned):
    """LGA, the learned genetic algorithm (Lange et al., GECCO 2023; evosax's `LGA` /
    `LearnedGA`): elites as many as the population, parents sampled by self-attention over
    fitness and age, children's mutation strengths rescaled by another, elites replaced through
    a cross-attention selection; evosax's meta-learned weights (`params_path=`, default the
    installed evosax's `ckpt/lga/2023_04_lga_v4.pkl`, `v7` above 50 dimensions). Generation 0
    is the evaluated first population `mean + σ z`."""
    kind = "lga"


class CMAAnchoredLES(_Learned):
    """CMA-anchored LES (evosax's `CMAAnchoredLES`): separable CMA-ES whose recombination
    weights, step-size and mean rates and per-axis covariance rates are scaled by meta-learned
    gates in [1/2, 2], with success-budgeted mirrored sampling and a capped re-expansion after
    a stall; evosax's weights (`params_path=`, default the installed evosax's
    `ckpt/cma_anchored_les/2026_10_cma_anchored_les.pkl`). evosax's default step is 0.05."""
    kind = "cma-anchored-les"


class EvoTF_ES(_Learned):
    """EvoTF, the Evolution Transformer (Lange, Tian and Tang, GECCO 2024; evosax's `EvoTF_ES`):
    a diagonal Gaussian whose mean and step updates come from a causal transformer over the
    last `max_context_len` (100) generations' perceiver-encoded populations, fitness and
    search-distribution features; evosax's meta-learned weights and architecture
    (`params_path=`, default the installed evosax's `ckpt/evotf/2024_03_SNES_small.pkl`).
    Knobs: `lr_mean`, `lr_sigma` (evosax's `lr_std`), `max_context_len`."""
    kind = "evotf-es"


_CLASSES = (CMAES, SepCMAES, SNES, XNES, OpenES, PGPE, DE, SimpleES, DES, MAES, LMMAES, ARS, ESMC,
            HillClimbing, RandomSearch, SimulatedAnnealing, GradientlessDescent, PSO, SimpleGA, MR15GA, SAMRGA,
            GESMRGA, PersistentES, NoiseReuseES, GuidedES, ASEBO, RmES, iAMaLGaMFull, iAMaLGaMUnivariate, CRFMNES,
            SVOpenES, SVCMAES, DiffusionEvolution, LES, LGA, CMAAnchoredLES, EvoTF_ES)
STRATEGIES = {c.kind: c for c in _CLASSES}

# evosax's class names, so `getattr(kestrel.evo, "CMA_ES")` works as `getattr(evosax.algorithms,
# "CMA_ES")` does in jax_mppi's EvoSaxOptimizer.
CMA_ES, Sep_CMA_ES, xNES, Open_ES, DifferentialEvolution, MA_ES, LM_MA_ES, DiscoveredES = (
    CMAES, SepCMAES, XNES, OpenES, DE, MAES, LMMAES, DES)
MR15_GA, SAMR_GA, GESMR_GA = MR15GA, SAMRGA, GESMRGA
Rm_ES, iAMaLGaM_Full, iAMaLGaM_Univariate, CR_FM_NES, SV_Open_ES, SV_CMA_ES = (
    RmES, iAMaLGaMFull, iAMaLGaMUnivariate, CRFMNES, SVOpenES, SVCMAES)
LearnedES, LearnedGA = LES, LGA


def make(kind: str, num_dims: int | None = None, **kw) -> Strategy:
    """The strategy named `kind`: Kestrel's name (`cma-es`, `sep-cma-es`, `lm-ma-es`, ...) or
    evosax's (`CMA_ES`, `Sep_CMA_ES`, `Open_ES`, `LM_MA_ES`, `DiscoveredES`, ...), in any case;
    the keywords are the class's."""
    return STRATEGIES[_kestrel.strategy_kind(kind)](num_dims, **kw)


def strategies() -> list[dict]:
    """Every strategy: `{"kind", "evosax", "class", "params": {key: doc}}` (the docs give the
    defaults), with evosax's name of each."""
    evosax = dict((k, n) for n, k in _kestrel.evosax_names())
    return [{"kind": k, "evosax": evosax.get(k), "class": STRATEGIES[k].__name__, "params": dict(p)}
            for k, p in _kestrel.strategy_params()]


def evosax_names() -> dict:
    """evosax 0.3.2's 37 algorithm names, each with the Kestrel kind it names."""
    return dict(_kestrel.evosax_names())


@dataclass(frozen=True)
class RestartResult:
    """What `fmin2` returns beside the best solution: its fitness, the evaluations spent, why the
    search ended, and each run (`pop_size`, `sigma0`, `evals`, `best`, `stop`, `generations`)."""

    xbest: np.ndarray
    fbest: float
    evaluations: int
    stop: str
    runs: list


def fmin2(objective_function=None, x0=None, sigma0: float = 0.5, options: dict | None = None, restarts: int = 0,
          bipop: bool = False, *, parallel_objective=None, params: dict | None = None):
    """pycma's `cma.fmin2`: CMA-ES from `x0` with IPOP restarts (the population doubling each
    restart; `bipop=True`: large and small runs interleaved) on a Python objective, each run
    stopped by pycma's default rules. `objective_function(x)` is called per solution, or
    `parallel_objective(X)` on the whole `(n, d)` float32 population (faster). `options` takes
    pycma's `maxfevals`, `ftarget` and `seed`; `params` CMA-ES's hyper-parameters. Returns
    `(xbest, RestartResult)`. The search is `kestrel evo run --restarts`' own (one Rust
    implementation); the objective's exception is raised as it was."""
    if (objective_function is None) == (parallel_objective is None):
        raise ValueError("fmin2: give objective_function or parallel_objective (one of them)")
    if x0 is None:
        raise ValueError("fmin2: x0 (the start point) is required")
    opts = dict(options or {})
    maxfevals, ftarget, seed = opts.pop("maxfevals", None), opts.pop("ftarget", None), opts.pop("seed", 0)
    if opts:
        raise ValueError(f"options: {', '.join(sorted(opts))}: not an option of fmin2 here (maxfevals, ftarget, seed)")
    if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
        raise ValueError(f"restarts = {restarts!r}: a whole number >= 0")
    if maxfevals is not None and np.isinf(maxfevals):
        maxfevals = None
    if ftarget is not None and np.isinf(ftarget) and ftarget < 0:
        ftarget = None
    x = np.asarray(x0, np.float32).reshape(-1)

    def evaluate(pop, key, first_row):
        v = parallel_objective(pop) if parallel_objective is not None else [objective_function(r) for r in pop]
        return np.ascontiguousarray(np.asarray(v, np.float64).reshape(-1), np.float32)

    r = _kestrel.cma_restarts(evaluate, x.tolist(), float(sigma0), "bipop" if bipop else "ipop", int(restarts),
                              None if maxfevals is None else int(maxfevals),
                              None if ftarget is None else float(ftarget), params_json(params or {}), int(seed))
    res = RestartResult(xbest=r["best_solution"], fbest=float(r["best_fitness"]), evaluations=int(r["evals"]),
                        stop=r["ended"], runs=list(r["runs"]))
    return res.xbest, res


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
