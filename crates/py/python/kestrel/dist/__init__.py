"""Kestrel on Ray: distributed population evaluation, whole ES and MPPI-tuning runs whose
generations are spread over a cluster, seed sweeps of any run type, and a Ray Tune trainable.

Kestrel does the work inside each Ray task; Ray only places tasks and moves arrays. `ask` and
`tell` stay on the driver; workers evaluate fixed row ranges whose keys come from
`(seed, generation, global row)`, results are put back in row order and every statistic is
reduced on the driver, so 1 or N workers (or machines) give bit-identical numbers, equal to
the in-process run and to `kestrel evo run` with the same seed.

    import ray, kestrel.dist as kd
    ray.init()                                      # or ray.init(address="auto") on a cluster
    res = kd.run("evo", {"strategy": "snes", "problem": "cartpole", "generations": 50, "seed": 3},
                 num_shards=8)                      # == kestrel.evo.run(...) bit for bit
    kd.sweep("allo_maps.toml", out_dir="runs/sweeps")   # every cell a run folder, then a table

Ray is imported lazily: `pip install "kestrel[ray]"` (from this repository:
`pip install "./crates/py[ray]"`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import _kestrel
from .._kestrel import Key
from .._runs import RunResult, drop_none, launch
from .._runs import run as _run
from .._spaces import params_json

__all__ = ["ProblemSpec", "population_kinds", "run", "evaluate", "run_es", "mppi_autotune", "sweep", "SweepResult", "tune_trainable",
           "EnvShard", "rollout_returns", "shard_bounds"]


def _ray():
    try:
        import ray
    except ImportError as e:  # pragma: no cover - exercised only without ray
        raise ImportError('kestrel.dist needs Ray: pip install "kestrel[ray]" (from the repository: '
                          'pip install "./crates/py[ray]")') from e
    return ray


def _ensure_ray(address=None):
    ray = _ray()
    if not ray.is_initialized():
        ray.init(address=address)
    return ray


# -- problems -----------------------------------------------------------------------------------
def population_kinds() -> list[str]:
    """The run kinds whose generations' populations can be evaluated on Ray (`run`,
    `evaluate`): the registry's, `["evo", "mppi-tune"]` today."""
    return list(_kestrel.population_kinds())


@dataclass(frozen=True)
class ProblemSpec:
    """A picklable description of the population problem of a run of `kind` (one of
    `population_kinds()`) under a config; each worker builds it once and caches it.

    `ProblemSpec.evo(...)`: `kestrel evo run`'s problem (a benchmark function, shifted and
    rotated by the config's seed, or CartPole neuroevolution); generation `g` is evaluated with
    `Key(seed).fold_in(g + 1).fold_in(1)`. `ProblemSpec.mppi_tune(...)`: `kestrel mppi tune`'s
    candidate cost (mean closed-loop cost of the knobs); every generation uses
    `Key(run.seed).fold_in(0)` (common random numbers). The registry builds both, and says
    which key each generation sees (`key`)."""

    kind: str
    config_json: str

    @classmethod
    def of(cls, kind: str, config: dict | None = None, **kw) -> "ProblemSpec":
        return cls(kind, params_json(drop_none({**(config or {}), **kw})))

    @classmethod
    def evo(cls, config: dict | None = None, **kw) -> "ProblemSpec":
        return cls.of("evo", config, **kw)

    @classmethod
    def mppi_tune(cls, config: dict | None = None, **kw) -> "ProblemSpec":
        return cls.of("mppi-tune", config, **kw)

    def __post_init__(self):
        kinds = population_kinds()
        if self.kind not in kinds:
            raise ValueError(f"kind = {self.kind!r}: one of {', '.join(map(repr, kinds))} (the run kinds with a "
                             "population to evaluate elsewhere)")

    @property
    def config(self) -> dict:
        return json.loads(self.config_json)

    def key(self, generation: int) -> Key:
        """The key the run evaluates generation `generation` (0-based) with."""
        return self.build().generation_key(int(generation))

    def build(self):
        """The Rust problem (cached per process)."""
        p = _problems.get(self)
        if p is None:
            p = _problems[self] = _kestrel.EvoProblem.from_run(self.kind, self.config_json)
        return p

    @property
    def num_dims(self) -> int:
        return self.build().num_dims


_problems: dict = {}


def shard_bounds(rows: int, num_shards: int) -> list[tuple[int, int]]:
    """`num_shards` contiguous row ranges `[lo, hi)` covering `rows` (sizes differ by at most 1)."""
    s = max(1, min(int(num_shards), rows))
    return [(i * rows // s, (i + 1) * rows // s) for i in range(s)]


def _task(fn, cwd, *args):
    """Runs `fn(*args)` on a worker from the driver's working folder (relative paths in configs
    mean the same there). Returns ("ok", value) or ("error", message): our errors travel as
    values (a deterministic error is not retried), a dead worker is Ray's to retry."""
    try:
        if cwd and os.path.isdir(cwd) and os.getcwd() != cwd:
            os.chdir(cwd)
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - sent back as our message
        return "error", f"{type(e).__name__}: {e}"


def _eval_rows(spec, population, lo, hi, key_raw, first_row, threads):
    """A worker's share: rows `[lo, hi)`, keyed by global row `first_row + lo + i`."""
    x = np.ascontiguousarray(population[lo:hi])
    return spec.build().evaluate(x, Key.from_raw(key_raw), first_row + lo, threads)


_remotes: dict = {}


def _submit(fn, cwd, *args, **options):
    """`_task(fn, cwd, *args)` as a Ray task named after `fn`, with Ray `options`."""
    if "task" not in _remotes:
        _remotes["task"] = _ray().remote(_task)
    return _remotes["task"].options(name=fn.__name__, **options).remote(fn, cwd, *args)


def _placement(i, node_ids):
    if not node_ids:
        return {}
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    return {"scheduling_strategy": NodeAffinitySchedulingStrategy(node_ids[i % len(node_ids)], soft=False)}


def _default_shards(ray, rows, cpus_per_task):
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return max(1, min(rows, cpus // max(1, cpus_per_task)))


def _check_counts(**kw):
    """Counts a caller passes: whole numbers, at least 1 (`max_retries`, `first_row`: at least 0)."""
    for name, v in kw.items():
        if v is None:
            continue
        low = 0 if name in ("max_retries", "first_row", "generation") else 1
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
            raise ValueError(f"{name} = {v!r}: a whole number, at least {low}")


def evaluate(spec: ProblemSpec, population, *, generation: int = 0, key: Key | None = None, first_row: int = 0,
             num_shards: int | None = None, cpus_per_task: int = 1, node_ids=None, max_retries: int = 3) -> np.ndarray:
    """Fitness of every row of `population` (float32, minimised), evaluated on Ray in
    `num_shards` tasks of contiguous rows (default: one per `cpus_per_task` CPUs of the
    cluster). Row `i` is keyed by `key` (default: `spec.key(generation)`) and global row
    `first_row + i`, so the result does not depend on the shards or where they run. Each task
    runs Kestrel on `cpus_per_task` threads. `node_ids` pins shard `i` to node
    `node_ids[i % len]`. A task whose worker dies is retried up to `max_retries` times."""
    _check_counts(num_shards=num_shards, cpus_per_task=cpus_per_task, max_retries=max_retries, first_row=first_row,
                  generation=generation)
    ray = _ensure_ray()
    dims = spec.num_dims
    x = np.asarray(population)
    if x.dtype.kind not in "fiu":
        raise TypeError(f"population: expected a float array, got dtype {x.dtype}")
    if x.ndim != 2 or x.shape[1] != dims:
        raise ValueError(f"population: expected shape (n, {dims}), got {x.shape}")
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = x.shape[0]
    if n == 0:
        return np.zeros(0, np.float32)
    k = spec.key(generation) if key is None else key
    shards = shard_bounds(n, num_shards if num_shards is not None else _default_shards(ray, n, cpus_per_task))
    ref = ray.put(x)
    cwd = os.getcwd()
    futures = [_submit(_eval_rows, cwd, spec, ref, lo, hi, k.raw, int(first_row), cpus_per_task,
                       num_cpus=cpus_per_task, max_retries=max_retries, **_placement(i, node_ids))
               for i, (lo, hi) in enumerate(shards)]
    out = []
    for (lo, hi), (status, value) in zip(shards, ray.get(futures)):  # in row order, never completion order
        if status != "ok":
            raise ValueError(f"kestrel.dist.evaluate: rows [{lo}, {hi}): {value}")
        out.append(value)
    return np.concatenate(out).astype(np.float32, copy=False)


def run(kind: str, config: dict | None = None, *, out_dir="runs", num_shards: int | None = None,
        cpus_per_task: int = 1, node_ids=None, max_retries: int = 3, progress=None, **kw) -> RunResult:
    """A run of `kind` (one of `population_kinds()`; same keys and run folder as its command)
    with every generation's population evaluated on Ray; ask and tell run here. Bit-identical
    to the in-process run with the same config for any `num_shards` and placement."""
    cfg = drop_none({**(config or {}), **kw})
    spec = ProblemSpec.of(kind, cfg)

    def ev(population, key, first_row):
        return evaluate(spec, population, key=key, first_row=first_row, num_shards=num_shards,
                        cpus_per_task=cpus_per_task, node_ids=node_ids, max_retries=max_retries)

    _check_counts(num_shards=num_shards, cpus_per_task=cpus_per_task, max_retries=max_retries)
    _ensure_ray()
    spec.num_dims  # bad configs fail here, on the driver, before any task or folder

    def go(config_json, out_dir, **rest):
        return _kestrel.run_evaluated(kind, config_json, out_dir, **rest)

    return launch(go, cfg, out_dir, progress, evaluate=ev)


def run_es(config: dict | None = None, *, out_dir="runs", num_shards: int | None = None, cpus_per_task: int = 1,
           node_ids=None, max_retries: int = 3, progress=None, **kw) -> RunResult:
    """`run("evo", ...)`: `kestrel evo run` (same keys, same run folder) with every
    generation's population evaluated on Ray. Bit-identical to `kestrel.evo.run` with the same
    config for any `num_shards` and placement."""
    return run("evo", config, out_dir=out_dir, num_shards=num_shards, cpus_per_task=cpus_per_task,
               node_ids=node_ids, max_retries=max_retries, progress=progress, **kw)


def mppi_autotune(config: dict | None = None, *, out_dir="runs", num_shards: int | None = None, cpus_per_task: int = 1,
                  node_ids=None, max_retries: int = 3, progress=None, **kw) -> RunResult:
    """`run("mppi-tune", ...)`: `kestrel mppi tune` (same keys, same run folder) with every
    generation's candidates' closed-loop episodes run on Ray. Bit-identical to
    `kestrel.mppi.tune`."""
    return run("mppi-tune", config, out_dir=out_dir, num_shards=num_shards, cpus_per_task=cpus_per_task,
               node_ids=node_ids, max_retries=max_retries, progress=progress, **kw)


# -- env rollouts -------------------------------------------------------------------------------
def _mix(z):
    """splitmix64's finaliser over a uint64 array."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _uniform(seed, rows, t, leaves):
    """Uniform [0, 1) of shape (rows, leaves), a pure function of (seed, row, step, leaf)."""
    leaves = np.asarray(leaves, dtype=np.uint64).reshape(1, -1)
    with np.errstate(over="ignore"):
        z = _mix(np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + leaves)
        z = _mix(z ^ (np.uint64(t) * np.uint64(0xD1B54A32D192ED03)))
        z = _mix(z ^ (rows.astype(np.uint64).reshape(-1, 1) * np.uint64(0xA0761D6478BD642F)))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def keyed_actions(space, seed: int, rows: np.ndarray, t: int, leaf: int = 0):
    """A uniformly random batch of actions from a batched gymnasium space whose row `i` depends
    only on `(seed, rows[i], t)`: the random policy of `rollout_returns`, the same on any
    shard."""
    from gymnasium import spaces as S

    n = len(rows)
    if isinstance(space, S.Dict):
        return {k: keyed_actions(sub, seed, rows, t, leaf * 131 + j + 1) for j, (k, sub) in enumerate(space.spaces.items())}
    if isinstance(space, S.MultiDiscrete):
        nvec = np.asarray(space.nvec).reshape(n, -1)
        start = np.broadcast_to(np.asarray(space.start), space.shape).reshape(n, -1)
        u = _uniform(seed, rows, t, leaf * 100_003 + np.arange(nvec.shape[1]))
        a = np.minimum((u * nvec).astype(np.int64), nvec - 1) + start
        return a.reshape(space.shape).astype(space.dtype)
    if isinstance(space, S.MultiBinary):
        u = _uniform(seed, rows, t, leaf * 100_003 + np.arange(int(np.prod(space.shape)) // n))
        return (u < 0.5).reshape(space.shape).astype(space.dtype)
    if isinstance(space, S.Box):
        lo, hi = space.low.reshape(n, -1).astype(np.float64), space.high.reshape(n, -1).astype(np.float64)
        u = _uniform(seed, rows, t, leaf * 100_003 + np.arange(lo.shape[1]))
        if np.issubdtype(space.dtype, np.integer):  # every integer of [low, high] equally likely
            return np.minimum(np.floor(lo + u * (hi - lo + 1)), hi).reshape(space.shape).astype(space.dtype)
        return (lo + u * (hi - lo)).reshape(space.shape).astype(space.dtype)
    raise TypeError(f"keyed_actions: unsupported space {space}")


class EnvShard:
    """Rows `[lo, hi)` of a batch of `env_id` envs (a `kestrel.VectorEnv` with
    `row_offset=lo`, built once per actor: the ARC task bank loads once). Use as a Ray actor
    (`ray.remote(EnvShard)`) or in-process."""

    def __init__(self, env_id: str, lo: int, hi: int, seed: int, threads: int = 1, **params):
        from ..vector import VectorEnv

        self.lo, self.hi, self.seed = int(lo), int(hi), int(seed)
        self.env = VectorEnv(env_id, self.hi - self.lo, row_offset=self.lo, num_threads=threads, **params)

    def rollout(self, steps: int, policy_seed: int = 0) -> dict:
        """`steps` steps of the keyed random policy from a reset with `seed`: per row the summed
        reward, the episodes ended (terminated or truncated) and a checksum of the last
        observation (`sum_j (j + 1) * obs[j]` over its flattened leaves, float64)."""
        obs, _ = self.env.reset(seed=self.seed)
        rows = np.arange(self.lo, self.hi, dtype=np.int64)
        ret = np.zeros(len(rows), np.float64)
        ends = np.zeros(len(rows), np.int64)
        for t in range(int(steps)):
            a = keyed_actions(self.env.action_space, policy_seed, rows, t)
            obs, r, term, trunc, _ = self.env.step(a)
            ret += r
            ends += term | trunc
        leaves = [obs[k] for k in sorted(obs)] if isinstance(obs, dict) else [obs]
        flat = np.concatenate([np.asarray(v, np.float64).reshape(len(rows), -1) for v in leaves], axis=1)
        check = flat @ np.arange(1, flat.shape[1] + 1, dtype=np.float64)
        return {"returns": ret, "episodes": ends, "checksum": check}


_envs: dict = {}


def _rollout_rows(env_id, lo, hi, seed, steps, policy_seed, threads, params_json_text):
    k = (env_id, lo, hi, seed, threads, params_json_text)
    shard = _envs.get(k)
    if shard is None:
        shard = _envs[k] = EnvShard(env_id, lo, hi, seed, threads, **json.loads(params_json_text))
    return shard.rollout(steps, policy_seed)


def rollout_returns(env_id: str, num_envs: int, steps: int, *, seed: int = 0, policy_seed: int = 0,
                    num_shards: int | None = None, node_ids=None, threads: int = 1, max_retries: int = 3,
                    **params) -> dict:
    """Per-row returns (and episodes ended) of the keyed random policy over `num_envs` envs of
    `env_id`, reset with `seed`, for `steps` steps, the rows spread over `num_shards` Ray tasks
    (each worker builds its `EnvShard` once and reuses it); the arrays are in row order and
    equal for any shard count or placement."""
    _check_counts(num_envs=num_envs, num_shards=num_shards, threads=threads, max_retries=max_retries)
    ray = _ensure_ray()
    shards = shard_bounds(int(num_envs), num_shards if num_shards is not None else _default_shards(ray, num_envs, threads))
    pj = params_json(params)
    cwd = os.getcwd()
    futures = [_submit(_rollout_rows, cwd, env_id, lo, hi, int(seed), int(steps), int(policy_seed), threads, pj,
                       num_cpus=threads, max_retries=max_retries, **_placement(i, node_ids))
               for i, (lo, hi) in enumerate(shards)]
    parts = []
    for (lo, hi), (status, value) in zip(shards, ray.get(futures)):
        if status != "ok":
            raise ValueError(f"kestrel.dist.rollout_returns: rows [{lo}, {hi}): {value}")
        parts.append(value)
    return {k: np.concatenate([p[k] for p in parts]) for k in ("returns", "episodes", "checksum")}


# -- sweeps -------------------------------------------------------------------------------------
@dataclass
class SweepResult:
    """A finished sweep: its folder, the table (markdown and parsed JSON: per config and
    metric n, mean, sd, ci95) and what happened to each cell (`skipped`, `ran`, `resumed`,
    or the error)."""

    dir: Path
    markdown: str
    table: dict
    cells: dict = field(default_factory=dict)


def _spec_text(spec):
    """(text, source name) of a spec given as a dict, a path, or TOML text (several lines)."""
    if isinstance(spec, dict):
        return json.dumps(spec), "sweep(dict)"
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and "\n" not in spec):
        p = Path(spec)
        try:
            return p.read_text(), str(p)
        except OSError as e:
            raise ValueError(f"{p}: cannot read the sweep spec: {e.strerror or e}") from None
    if not isinstance(spec, str):
        raise TypeError(f"spec: a path, TOML text or a dict, got {type(spec).__name__}")
    return spec, "sweep(text)"


def _sweep_cell(spec, source, out_dir, cell, threads):
    """One cell through the Rust sweep engine: (outcome, run folder, headline)."""
    return tuple(_kestrel.sweep_cell(spec, source, out_dir, cell, threads))


def sweep(spec, *, out_dir="runs/sweeps", engine: str = "ray", threads: int = 1, address: str | None = None,
          max_retries: int = 3, progress=None) -> SweepResult:
    """Runs a sweep (a spec file, its TOML text, or a dict with the same keys: `kind`, `seeds`,
    `base`, `grid`, `name`, `metrics`, `curve`; see `kestrel sweep --help` and the README):
    one run folder per config × seed under `<out_dir>/<name>/`, finished runs skipped on a
    restart, interrupted ones resumed from their checkpoint (a task whose worker died is
    retried by Ray up to `max_retries` times and resumes the same way), then the table
    (`table.md/csv/json`: mean, sd, 95% interval per config) and `curves.png`.

    `engine="ray"` runs each cell as a Ray task asking for `threads` CPUs (connect first with
    `ray.init(address=...)` or pass `address`); `engine="local"` runs them here one after
    another. `progress(done, total, cell_id, outcome)` is called as cells finish. On a
    cluster, `out_dir` and every path in the spec must be on a filesystem all nodes share."""
    if engine not in ("ray", "local"):
        raise ValueError(f"engine = {engine!r}: 'ray' or 'local'")
    _check_counts(threads=threads, max_retries=max_retries)
    text, source = _spec_text(spec)
    out = os.path.abspath(os.fspath(out_dir))
    folder, _kind, ids, _toml = _kestrel.sweep_plan(text, source, out)  # every config checked
    _kestrel.sweep_create(text, source, out)
    status = dict(_kestrel.sweep_status(text, source, out))
    cells: dict = {}
    errors = []
    total = len(ids)

    def done(cid, result):
        status, value = result
        if status == "error":
            errors.append(f"{cid}: {value}")
            value = ("error", value, "")
        cells[cid] = value
        if progress is not None:
            progress(len(cells), total, cid, value[0])

    for cid in ids:
        if status[cid] == "done":
            done(cid, ("ok", ("skipped", "", "")))
    todo = [c for c in ids if c not in cells]
    cwd = os.getcwd()
    if engine == "local":
        for cid in todo:
            done(cid, _task(_sweep_cell, cwd, text, source, out, cid, threads))
    else:
        ray = _ensure_ray(address)
        pending = {_submit(_sweep_cell, cwd, text, source, out, cid, threads, num_cpus=threads,
                           max_retries=max_retries): cid for cid in todo}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                cid = pending.pop(ref)
                try:
                    r = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a task that died more than max_retries times
                    r = ("error", f"{type(e).__name__}: {e}")
                done(cid, r)
    md, js = _kestrel.sweep_aggregate(text, source, out)
    if errors:
        raise RuntimeError(f"{len(errors)} of {total} sweep runs failed (table of the others in {folder}):\n  "
                           + "\n  ".join(errors))
    return SweepResult(dir=Path(folder), markdown=md, table=json.loads(js), cells=cells)


# -- Ray Tune -----------------------------------------------------------------------------------
def tune_trainable(config: dict) -> dict:
    """A Ray Tune function trainable running one whole Kestrel run of any kind, through the
    run registry (`kestrel.run`): `config = {"kind": one of kestrel.run_kinds(), "config":
    {the run's keys}, "threads": 1, "out_dir": optional}`. The run folder goes into `out_dir`
    (default: the trial's folder); the summary's numbers are reported once, at the end, and
    returned.

    Each trial's result depends only on its config (seed included), so grid search with the
    FIFO scheduler is bit-reproducible; ASHA, PBT and other schedulers decide from timing
    (which trial reports first) and are not, and with one report per trial they cannot stop
    a run early."""
    kind = config.get("kind")
    if not isinstance(kind, str):
        raise ValueError(f"kind = {kind!r}: one of {', '.join(k for k, _ in _kestrel.run_kinds())}")
    out = config.get("out_dir")
    if out is None:
        try:
            from ray import tune
            out = tune.get_context().get_trial_dir()
        except Exception:  # noqa: BLE001 - outside a Tune trial
            out = "runs"
    res = _run(kind, dict(config.get("config") or {}), out_dir=out, threads=config.get("threads", 1), progress=None)
    metrics = {k: float(v) for k, v in res.summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    metrics["run_dir"] = str(res.dir)
    try:
        from ray import tune
        tune.report(metrics)
    except Exception:  # noqa: BLE001 - called outside a Tune trial: just return the numbers
        pass
    return metrics
