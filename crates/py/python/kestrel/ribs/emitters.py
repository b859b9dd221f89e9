"""pyribs' `EvolutionStrategyEmitter` (CMA-ME), `GaussianEmitter` and `IsoLineEmitter` over
Kestrel's emitters (`kestrel.ribs`). An emitter is asked and told by its `Scheduler`."""

from __future__ import annotations

import numpy as np

from .. import _kestrel
from .._kestrel import Key

__all__ = ["EvolutionStrategyEmitter", "GaussianEmitter", "IsoLineEmitter"]


def _seed(seed):
    # pyribs: None draws a random seed.
    return int(np.random.default_rng().integers(2**63)) if seed is None else int(seed)


def _x0(archive, x0):
    x = np.asarray(x0, np.float32).reshape(-1)
    if x.shape != (archive.solution_dim,):
        raise ValueError(f"x0: expected shape ({archive.solution_dim},), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("x0: not finite")
    return x


def _no_bounds(bounds, lower_bounds, upper_bounds):
    if bounds is not None or lower_bounds is not None or upper_bounds is not None:
        raise ValueError("bounds: Kestrel's QD emitters do not bound solutions (bound the measures' ranges, "
                         "or clip in the objective)")


class _Emitter:
    def __init__(self, archive, core, seed):
        self.archive, self._e, self.seed = archive, core, seed
        self._generation = 0

    @property
    def batch_size(self) -> int:
        return int(self._e.batch_size)

    def _key(self, role):
        return Key(self.seed).fold_in(self._generation + 1).fold_in(role)

    def ask(self) -> np.ndarray:
        return np.asarray(self._e.ask(self.archive._a, self._key(0)), np.float64)

    def _tell(self, solution, objective, measures):
        x = np.ascontiguousarray(solution, np.float32)
        f = np.ascontiguousarray(-np.asarray(objective, np.float64), np.float32)
        m = np.ascontiguousarray(measures, np.float32)
        self._e.tell(self.archive._a, self._key(2), x, f, m)
        self._generation += 1


# pyribs' `es=` names (its `ribs.emitters.opt` classes and their short names) as Kestrel's.
_PYRIBS_ES = {"cma_es": "cma-es", "CMAEvolutionStrategy": "cma-es", "sep_cma_es": "sep-cma-es",
              "SeparableCMAEvolutionStrategy": "sep-cma-es", "lm_ma_es": "lm-ma-es",
              "LMMAEvolutionStrategy": "lm-ma-es", "openai_es": "open-es", "OpenAIEvolutionStrategy": "open-es"}


class EvolutionStrategyEmitter(_Emitter):
    """pyribs' `EvolutionStrategyEmitter(archive, x0=, sigma0=, es=, es_kwargs=, batch_size=,
    seed=)`: CMA-ME, an evolution strategy ranked by two-stage improvement ("2imp"), restarted
    when a generation adds nothing ("no_improvement"), parents selected by the strategy's rank
    weights ("mu"). `es` is pyribs' name (`cma_es`, `sep_cma_es`, `lm_ma_es`, `openai_es`) or
    any Kestrel or evosax strategy name; `es_kwargs` its hyper-parameters (Kestrel's keys, as
    a run's `[params]`). `batch_size=None` is the strategy's default (CMA-ES: `4 + floor(3 ln
    n)`)."""

    def __init__(self, archive, *, x0, sigma0, ranker="2imp", es="cma_es", es_kwargs=None, selection_rule="mu",
                 restart_rule="no_improvement", bounds=None, lower_bounds=None, upper_bounds=None, batch_size=None,
                 seed=None):
        if ranker not in ("2imp", "two_stage_improvement"):
            raise ValueError(f"ranker = {ranker!r}: Kestrel's CMA-ME ranks by two-stage improvement ('2imp')")
        # pyribs' names for its evolution strategies; any Kestrel or evosax name works too.
        kind = _kestrel.strategy_kind(_PYRIBS_ES.get(es, es) if isinstance(es, str) else str(es))
        if es_kwargs is not None and not isinstance(es_kwargs, dict):
            raise TypeError(f"es_kwargs: a dict of the strategy's hyper-parameters, got {type(es_kwargs).__name__}")
        if selection_rule != "mu":
            raise ValueError(f"selection_rule = {selection_rule!r}: Kestrel's CMA-ME selects by CMA-ES's mu weights "
                             "('mu'; pyribs' default 'filter' is not implemented)")
        if restart_rule != "no_improvement":
            raise ValueError(f"restart_rule = {restart_rule!r}: Kestrel's CMA-ME restarts on no improvement")
        _no_bounds(bounds, lower_bounds, upper_bounds)
        x = _x0(archive, x0)
        import numbers

        if isinstance(sigma0, bool) or not (isinstance(sigma0, numbers.Real) and np.isfinite(sigma0) and sigma0 > 0):
            raise ValueError(f"sigma0 = {sigma0!r}: a finite number > 0")
        n = _kestrel.default_pop_size(kind, len(x)) if batch_size is None else int(batch_size)
        seed = _seed(seed)
        self.x0, self.sigma0, self.es = x.astype(np.float64), float(sigma0), kind
        import json

        core = _kestrel.QdEmitter.cma_me(n, x.tolist(), float(sigma0), Key(seed), kind, json.dumps(es_kwargs or {}))
        super().__init__(archive, core, seed)

    @property
    def restarts(self) -> int:
        return int(self._e.restarts)


class GaussianEmitter(_Emitter):
    """pyribs' `GaussianEmitter(archive, sigma=, x0=, batch_size=64, seed=)`: MAP-Elites,
    a random elite plus Gaussian noise (`x0` plus noise while the archive is empty)."""

    def __init__(self, archive, *, sigma, x0=None, initial_solutions=None, bounds=None, lower_bounds=None,
                 upper_bounds=None, batch_size=64, seed=None):
        if initial_solutions is not None:
            raise ValueError("initial_solutions: give x0 (the start point while the archive is empty)")
        if x0 is None:
            raise ValueError("x0: required (the start point while the archive is empty)")
        _no_bounds(bounds, lower_bounds, upper_bounds)
        if not np.isscalar(sigma):
            raise ValueError("sigma: one number (per-dimension sigma is not implemented)")
        x = _x0(archive, x0)
        seed = _seed(seed)
        self.x0, self.sigma = x.astype(np.float64), float(sigma)
        super().__init__(archive, _kestrel.QdEmitter.map_elites(int(batch_size), x.tolist(), float(sigma), None), seed)


class IsoLineEmitter(_Emitter):
    """pyribs' `IsoLineEmitter(archive, iso_sigma=0.01, line_sigma=0.2, x0=, batch_size=64,
    seed=)`: MAP-Elites with the Iso+LineDD operator."""

    def __init__(self, archive, *, iso_sigma=0.01, line_sigma=0.2, x0=None, initial_solutions=None, bounds=None,
                 lower_bounds=None, upper_bounds=None, batch_size=64, seed=None):
        if initial_solutions is not None or x0 is None:
            raise ValueError("x0: required (the start point while the archive is empty); initial_solutions is not taken")
        _no_bounds(bounds, lower_bounds, upper_bounds)
        x = _x0(archive, x0)
        seed = _seed(seed)
        self.x0, self.iso_sigma, self.line_sigma = x.astype(np.float64), float(iso_sigma), float(line_sigma)
        core = _kestrel.QdEmitter.map_elites(int(batch_size), x.tolist(), float(iso_sigma),
                                             (float(iso_sigma), float(line_sigma)))
        super().__init__(archive, core, seed)
