"""MPPI, SMPPI and KMPPI controllers on Kestrel's built-in systems, and whole `kestrel mppi`
runs and autotuning.

    ctl = kestrel.mppi.Controller(system="pendulum", controller="mppi", seed=0)
    x = ctl.start_state()
    for t in range(200):
        u = ctl.command(x)
        x, cost = ctl.plant_step(x, u)

MPPI runs in bit-exact float64 by default; `mppi={"precision": "f32"}` runs its sampling,
rollouts and weights in float32 SIMD lanes (jax-mppi's arithmetic, several times faster;
built-in systems only, plain MPPI only).
"""

from __future__ import annotations

import os

import numpy as np

from . import _kestrel
from ._runs import RunResult, _merge as merge, _Watch as Watch, drop_none, result, run as _run, split_config
from ._spaces import params_json

SYSTEMS = tuple(_kestrel.systems())


class Controller:
    """A controller configured with `kestrel mppi run`'s keys (`system`, `controller`, `seed`,
    `steps`, `mppi={...}`, `smppi={...}`, `kmppi={...}`). Command `t` uses `Key(seed).fold_in(t)`,
    so a Python loop reproduces `kestrel mppi run`."""

    def __init__(self, config: dict | None = None, **kw):
        self._c = _kestrel.MppiController(params_json(drop_none({**(config or {}), **kw})))

    @classmethod
    def from_callbacks(cls, dynamics, running_cost, *, nx: int, nu: int, terminal_cost=None,
                       seed: int = 0, specific_action_sampler=None, **mppi) -> "CallbackController":
        """MPPI over your own batched dynamics (numpy, torch via `.numpy()`, anything):
        `dynamics(x (K, nx), u (K, nu), t) -> (K, nx)` and `running_cost(x, u, t) -> (K,)`
        are called once per horizon step for all K samples (pytorch-mppi's convention: the
        cost sees the state reached), `terminal_cost(x) -> (K,)` once. `mppi` holds MPPI
        knobs (`num_samples`, `horizon`, `lambda`, `noise_sigma`, `u_min`, `u_max`,
        `specific_actions`, ...). `specific_action_sampler(state (nx,)) -> (n, horizon, nu)`
        is pytorch-mppi's `SpecificActionSampler.sample_trajectories`: called before every
        command, its sequences take samples 0.. (after the null action), clamped like any."""
        return CallbackController(dynamics, running_cost, nx=nx, nu=nu, terminal_cost=terminal_cost, seed=seed,
                                  specific_action_sampler=specific_action_sampler, **mppi)

    nx = property(lambda self: self._c.nx)
    nu = property(lambda self: self._c.nu)
    config_toml = property(lambda self: self._c.config_toml)

    def start_state(self) -> np.ndarray:
        return self._c.start_state()

    def command(self, state) -> np.ndarray:
        """The control to apply from `state` (float64, `nx`)."""
        x = np.ascontiguousarray(np.asarray(state, dtype=np.float64))
        if x.shape != (self.nx,):
            raise ValueError(f"state: expected shape ({self.nx},), got {x.shape}")
        return self._c.command(x)

    def plant_step(self, state, control):
        """`(next_state, running_cost)` of the system itself."""
        return self._c.plant_step(np.ascontiguousarray(state, np.float64).ravel(),
                                  np.ascontiguousarray(control, np.float64).ravel())

    def reset(self) -> None:
        self._c.reset()


def _f64(f, what):
    def call(*a):
        return np.asarray(f(*a), dtype=np.float64)

    call.__name__ = what
    return call


class CallbackController:
    """See `Controller.from_callbacks`."""

    def __init__(self, dynamics, running_cost, *, nx, nu, terminal_cost=None, seed=0, specific_action_sampler=None,
                 **mppi):
        for name, f in (("dynamics", dynamics), ("running_cost", running_cost)):
            if not callable(f):
                raise TypeError(f"{name}: expected a callable, got {type(f).__name__}")
        for name, f in (("terminal_cost", terminal_cost), ("specific_action_sampler", specific_action_sampler)):
            if f is not None and not callable(f):
                raise TypeError(f"{name}: expected a callable, got {type(f).__name__}")
        term = None if terminal_cost is None else _f64(terminal_cost, "terminal_cost")
        sampler = None if specific_action_sampler is None else _f64(specific_action_sampler, "specific_action_sampler")
        self._c = _kestrel.ExternalMppi(int(nx), int(nu), params_json(drop_none(mppi)), _f64(dynamics, "dynamics"),
                                        _f64(running_cost, "running_cost"), term, int(seed), sampler)

    nx = property(lambda self: self._c.nx)
    nu = property(lambda self: self._c.nu)
    plan = property(lambda self: self._c.plan)

    def command(self, state) -> np.ndarray:
        x = np.ascontiguousarray(np.asarray(state, dtype=np.float64))
        if x.shape != (self.nx,):
            raise ValueError(f"state: expected shape ({self.nx},), got {x.shape}")
        return self._c.command(x)

    def reset(self) -> None:
        self._c.reset()


def run(config: dict | str | None = None, *, out_dir="runs", threads: int | None = None, progress=True, **kw) -> RunResult:
    """`kestrel mppi run`: one closed-loop episode into a run folder."""
    return _run("mppi-run", config, out_dir=out_dir, threads=threads, progress=progress, **kw)


def tune(config: dict | str | None = None, *, dynamics=None, running_cost=None, terminal_cost=None,
         nx: int | None = None, nu: int | None = None, evaluate=None, out_dir="runs", threads: int | None = None,
         progress=True, **kw) -> RunResult:
    """`kestrel mppi tune`: the population-parallel autotuner (`run={...}`, `knobs`,
    `strategy`, `pop_size`, `generations`, `starts={...}`) over a built-in `run.system`, or
    over your own system: `dynamics(x (n, nx), u (n, nu), t) -> (n, nx)` and
    `running_cost(x, u, t) -> (n,)` (and `terminal_cost(x) -> (n,)`), as
    `Controller.from_callbacks` takes them, with `nx`, `nu` and `starts={"states": [...]}`.
    Then every generation's episodes (candidates x starts x samples) run in lockstep: one
    call per horizon step for all of them, one per plant step; plain MPPI in float64 over
    `MppiParams(nu)`'s defaults. A callback's exception stops the run and is raised.

    Or a batched evaluation function over the candidates (`evaluate=`, with `nu`): each
    generation calls `evaluate(params) -> (n,) costs` once, `params` holding every candidate's
    MPPI params as arrays (`"lambda"` (n,), `"noise_sigma"` (n, nu, nu), `"noise_mu"` (n, nu),
    `"horizon"` (n,)); it runs its own episodes (pytorch-mppi's `autotune` with a batched
    evaluate), Kestrel the strategy, the population and the folder."""
    own = (dynamics, running_cost, terminal_cost, nx, nu)
    if evaluate is not None:
        if any(v is not None for v in own[:4]):
            raise TypeError("evaluate: give either an evaluation function or dynamics and costs, not both")
        if not callable(evaluate):
            raise TypeError(f"evaluate: expected a callable, got {type(evaluate).__name__}")
        if isinstance(nu, bool) or not isinstance(nu, (int, np.integer)):
            raise TypeError(f"nu: expected an int (your controls' size), got {nu!r}")

        def costs(params):
            return np.asarray(evaluate(params), dtype=np.float64)

        return _python_run(config, kw, out_dir, threads, progress,
                           lambda keys: (_kestrel.mppi_tune_evaluate, (keys, int(nu), costs)))
    if all(v is None for v in own):
        return _run("mppi-tune", config, out_dir=out_dir, threads=threads, progress=progress, **kw)
    for name, f in (("dynamics", dynamics), ("running_cost", running_cost)):
        if not callable(f):
            raise TypeError(f"{name}: expected a callable, got {type(f).__name__}")
    if terminal_cost is not None and not callable(terminal_cost):
        raise TypeError(f"terminal_cost: expected a callable, got {type(terminal_cost).__name__}")
    for name, v in (("nx", nx), ("nu", nu)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name}: expected an int (your system's size), got {v!r}")
    term = None if terminal_cost is None else _f64(terminal_cost, "terminal_cost")
    return _python_run(config, kw, out_dir, threads, progress, lambda keys: (
        _kestrel.mppi_tune_callbacks,
        (keys, int(nx), int(nu), _f64(dynamics, "dynamics"), _f64(running_cost, "running_cost"), term)))


def _python_run(config, kw, out_dir, threads, progress, call) -> RunResult:
    """A tuning run of a Python system: the config's keys (a TOML path read here), then
    `call(keys_json) -> (rust function, its leading arguments)` under the run's progress and
    logger, as every run."""
    logger = kw.pop("logger", None)
    keys, path = split_config(config, kw)
    if path is not None:
        import tomllib

        with open(path, "rb") as f:
            keys = drop_none(merge(tomllib.load(f), keys))
    fn, (keys_json, *args) = call(params_json(keys))
    with Watch(progress, "mppi-tune", logger, out_dir) as w:
        folder, headline = fn(keys_json, os.fspath(out_dir), *args, threads=threads, progress=w.callback, tag=w.tag)
        w.folder = folder
    return result(folder, headline)


def qd(config: dict | str | None = None, *, out_dir="runs", threads: int | None = None, progress=True, **kw) -> RunResult:
    """`kestrel mppi qd`: CMA-ME fills an archive of good knob settings over the first two
    knobs (`run={...}`, `knobs`, `num_emitters`, `batch_size`, `cells`, `generations`,
    `sigma`); the folder has every elite (`elites.csv`) and the best as `best.toml`."""
    return _run("mppi-qd", config, out_dir=out_dir, threads=threads, progress=progress, **kw)
