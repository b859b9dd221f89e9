"""Kestrel's quality diversity in pyribs' shape: a pyribs loop runs with only its imports
changed (`from kestrel.ribs.archives import GridArchive`, `...emitters import
EvolutionStrategyEmitter`, `...schedulers import Scheduler`).

As in pyribs, objectives are maximised (Kestrel's archive keeps `-objective` as the fitness it
minimises), `Scheduler.ask()` returns every emitter's batch and `tell(objective, measures)`
takes them back, `archive.stats` and `archive.data()` read the elites, archives pickle, and
`visualize.grid_archive_heatmap` draws the archive (in Rust: no matplotlib).

What Kestrel does not implement is refused with a ValueError naming it: CMA-MAE thresholds
(`learning_rate` other than None or 1, `threshold_min`), `extra_fields`, rankers other than
"2imp", ES other than "cma_es", `restart_rule` other than "no_improvement",
`selection_rule="filter"`, emitter bounds, given CVT centroids. One default differs:
`EvolutionStrategyEmitter`'s `selection_rule` is "mu" here (pyribs: "filter"), since
Kestrel's CMA-ME selects by CMA-ES's μ weights, so pyribs' loop with its defaults runs with
"mu". Solutions, objectives and measures are stored as float32 (returned as float64, pyribs'
default dtype); non-finite objectives or measures are errors, as in pyribs.
"""

from . import archives, emitters, schedulers, visualize

__all__ = ["archives", "emitters", "schedulers", "visualize"]
