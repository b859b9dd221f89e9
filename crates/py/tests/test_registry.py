"""The run registry from Python: every kind's config as a dict and as the commented TOML the
CLI prints, `kestrel.run(kind, config=..., **overrides)` with a dict or a TOML path, unknown
keys answered with the closest valid key; strategy hyper-parameters and pycma-style stop
conditions on the ask/tell objects."""

import json
import pickle
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import kestrel
from conftest import require

KINDS = ["evo", "qd", "mppi-run", "mppi-tune", "mppi-qd", "allo", "allo-asymexp", "hunt", "hunt-play", "actdyn", "actdyn-compare",
         "actdyn-retrain", "arc-rollout", "arc-replay"]


def test_every_kind_is_listed_with_its_command_and_its_defaults_round_trip(tmp_path):
    kinds = kestrel.run_kinds()
    assert list(kinds) == KINDS
    assert kinds["mppi-tune"] == "mppi tune" and kinds["allo"] == "allo train"
    for kind in KINDS:
        d = kestrel.config(kind)
        assert isinstance(d, dict) and d, kind
        text = kestrel.config_toml(kind)
        assert text.startswith(f"# {kind}: the config of `kestrel {kinds[kind]}`"), text[:80]
        path = tmp_path / f"{kind}.toml"
        path.write_text(text)
        # The printed defaults read back (as a TOML path) give the defaults.
        assert kestrel.config(kind, str(path)) == d, kind


def test_config_layers_and_closest_key_errors():
    d = kestrel.config("mppi-tune", {"run": {"system": "pendulum"}}, pop_size=6)
    assert d["pop_size"] == 6 and d["run"]["system"] == "pendulum"
    # The second pass: the pendulum's one control, not the default system's two.
    assert len(d["run"]["mppi"]["noise_sigma"]) == 1
    with pytest.raises(ValueError, match=r"unknown key `run.mppi.lamda`.*`run.mppi.lambda`"):
        kestrel.config("mppi-tune", {"run": {"mppi": {"lamda": 0.5}}})
    with pytest.raises(ValueError, match=r"unknown key `lambda`.*`run.mppi.lambda`"):
        kestrel.config("mppi-tune", **{"lambda": 0.5})
    with pytest.raises(ValueError, match=r"did you mean `mppi-tune`"):
        kestrel.config("mppi-tuen")
    with pytest.raises(ValueError, match="num_dims"):
        kestrel.config("evo", num_dims=0)
    with pytest.raises(TypeError, match="config: a dict or the path"):
        kestrel.config("evo", 3)
    e2 = kestrel.config("actdyn", preset="e2")
    assert e2["policy"]["kind"] == "icem" and kestrel.config("actdyn")["policy"]["kind"] == "random"
    with pytest.raises(ValueError, match="unknown preset"):
        kestrel.config("actdyn", preset="e3")


def test_a_run_from_a_toml_path_equals_the_cli_and_the_dict(tmp_path):
    cfg = tmp_path / "evo.toml"
    cfg.write_text(kestrel.config_toml("evo", strategy="snes", problem="sphere", num_dims=4, generations=6))
    a = kestrel.run("evo", str(cfg), out_dir=tmp_path / "a")
    b = kestrel.evo.run({"strategy": "snes", "problem": "sphere", "num_dims": 4}, generations=6,
                        out_dir=tmp_path / "b")
    np.testing.assert_array_equal(a.metrics["best"], b.metrics["best"])
    # The CLI on the same file (the binary `cargo test` builds; tools/test-all builds it first).
    root = Path(__file__).resolve().parents[3]
    cli = next((str(p) for p in (root / "target/debug/kestrel", root / "target/release/kestrel") if p.exists()),
               shutil.which("kestrel"))
    if cli is not None:
        out = subprocess.run([cli, "evo", "run", "--config", str(cfg), "--out-dir", str(tmp_path / "c")],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        (c,) = (tmp_path / "c").iterdir()
        assert json.loads((c / "summary.json").read_text())["best_fitness"] == a.summary["best_fitness"]
    # The saved config of a run replays it.
    again = kestrel.run("evo", str(a.dir / "config.toml"), out_dir=tmp_path / "d")
    np.testing.assert_array_equal(a.metrics["best"], again.metrics["best"])
    with pytest.raises(ValueError, match=r"`kestrel evo run` runs cannot be resumed"):
        kestrel.run("evo", resume=a.dir, out_dir=tmp_path)
    with pytest.raises(ValueError, match=r"unknown key `genrations`.*`generations`"):
        kestrel.evo.run(genrations=3, out_dir=tmp_path)
    assert not (tmp_path / "e").exists()


def test_strategy_params_reach_the_strategy_and_are_checked_by_name():
    f = lambda x: (x ** 2).sum(axis=1)
    slow = kestrel.evo.OpenES(6, mean=1.0, seed=1, lr=1e-6)
    fast = kestrel.evo.OpenES(6, mean=1.0, seed=1, params={"lr": 0.05})
    assert slow.params == {"lr": 1e-6}
    a, b = slow.optimize(f, 30), fast.optimize(f, 30)
    assert b.best_so_far < a.best_so_far
    de = kestrel.evo.DE(4, seed=0, crossover_rate=0.5, differential_weight=0.3, elitism=False)
    assert de.optimize(f, 5).generation == 5
    with pytest.raises(ValueError, match=r"params.lr: not a hyper-parameter of cma-es \(a knob of open-es, "
                                         r"pgpe, .* only\)"):
        kestrel.evo.CMAES(4, lr=0.1)
    with pytest.raises(ValueError, match=r"params.lrr: not a hyper-parameter of open-es \(did you mean `lr`\?\)"):
        kestrel.evo.OpenES(4, lrr=0.1)
    # The suggestion comes from the strategy in use: sigma_min is CMA-ES's, not OpenAI-ES's.
    with pytest.raises(ValueError, match=r"params.sigma_mn") as e:
        kestrel.evo.OpenES(4, sigma_mn=0.1)
    assert "sigma_min" not in str(e.value)
    with pytest.raises(ValueError, match=r"did you mean `c_sigma`"):
        kestrel.evo.CMAES(4, c_sigmaa=0.1)
    with pytest.raises(ValueError, match=r"params.beta1"):
        kestrel.evo.OpenES(4, beta1=1.0)
    with pytest.raises(ValueError, match=r"pop_size.*even"):
        kestrel.evo.PGPE(4, pop_size=3)
    with pytest.raises(TypeError, match="params: a dict"):
        kestrel.evo.CMAES(4, params=[1])
    # Hyper-parameters survive pickling and the functional layer.
    c = pickle.loads(pickle.dumps(slow))
    assert c.params == {"lr": 1e-6}
    x = c.ask()
    np.testing.assert_array_equal(x, slow.copy().ask())


def test_pycma_style_stops_and_result():
    f = lambda x: (x ** 2).sum(axis=1)
    es = kestrel.evo.CMAES(5, mean=1.0, sigma=0.5, seed=3, ftarget=1e-6)
    assert es.stop() == {}
    m = es.optimize(f)
    assert es.stop() == {"ftarget": 1e-6} and m.best_so_far <= 1e-6
    r = es.result
    assert r.fbest == es.best_fitness and r.iterations == es.generation
    assert r.evaluations == es.generation * es.pop_size and 0 < r.evals_best <= r.evaluations
    np.testing.assert_array_equal(r.xbest, es.best_solution)
    es = kestrel.evo.CMAES(5, mean=1.0, seed=3, maxfevals=40)
    es.optimize(f)
    assert es.stop() == {"maxfevals": 40} and es.result.evaluations == 40
    es = kestrel.evo.CMAES(3, mean=1.0, seed=3, tolfun=1e-9, maxiter=2000)
    es.optimize(f)
    assert "tolfun" in es.stop() and es.generation < 2000
    es = kestrel.evo.SNES(3, mean=1.0, seed=3, tolx=1e-4, maxiter=5000)
    es.optimize(f)
    assert "tolx" in es.stop()
    # SNES has no default stop conditions (nor has its peer, evosax): a loop with no end is
    # refused. CMA-ES has pycma's, so it ends by itself.
    with pytest.raises(ValueError, match="generations = None"):
        kestrel.evo.SNES(3).optimize(f)
    es = kestrel.evo.CMAES(3, mean=1.0, seed=3)
    es.optimize(f)
    assert es.stop() and es.generation < es.stop_options["maxiter"]
    with pytest.raises(ValueError, match="ftarget"):
        kestrel.evo.CMAES(3, ftarget="low")
    # The bookkeeping is pickled with the state.
    es = kestrel.evo.CMAES(3, mean=1.0, seed=3, maxfevals=1000)
    es.optimize(f, 4)
    back = pickle.loads(pickle.dumps(es))
    assert back.result.evaluations == es.result.evaluations and back.stop() == es.stop()


TINY = {
    "evo": {"problem": "sphere", "num_dims": 3, "generations": 6},
    "qd": {"num_dims": 4, "generations": 3, "batch_size": 8, "cells": 5, "num_emitters": 2},
    "mppi-run": {"steps": 6, "mppi": {"num_samples": 32}},
    "mppi-tune": {"generations": 2, "pop_size": 4, "run": {"steps": 5}},
    "mppi-qd": {"generations": 2, "batch_size": 4, "run": {"steps": 4}},
    "allo": {"map": "builtin:rooms-2-5", "num_samples": 500, "learner": {"batch_size": 16, "num_eigenvectors": 3},
             "steps": 6, "eval_every": 2},
    "allo-asymexp": {"map": "builtin:rooms-2-3", "num_samples": 800, "num_envs": 20, "max_episode_length": 40,
                     "steps": 6, "eval_every": 2, "learner": {"batch_size": 16, "hidden": [16], "num_eigenvectors": 3}},
    "hunt": {"epochs": 2, "env": {"height": 9, "width": 9, "max_turns": 12, "num_agents": 2},
             "agent": {"layer": 16, "batch_size": 8, "capacity": 64}, "record_every": 0},
    "actdyn": {"steps": 40, "eval": {"episodes": 2, "num_starts": 10, "num_samples": 5}},
    "actdyn-compare": {"num_seeds": 2, "arms": ["random"], "base": {"steps": 30, "eval": {"episodes": 2, "num_starts": 10,
                                                                                        "num_samples": 5}}},
    # These read a finished run's folder (`run`), made first from the kind named here.
    "arc-rollout": {"episodes": 3, "env": {"canvas": 10, "tasks_per_family": 1, "max_episode_steps": 20}},
    "hunt-play": {"epochs": 2},
    "arc-replay": {"env": {"canvas": 10}},
    "actdyn-retrain": {"offline": {"epochs": 2, "chunk": 20, "batch_size": 2}},
}
SOURCE = {"hunt-play": ("hunt", {}), "actdyn-retrain": ("actdyn", {"save_every": 20})}
# arc-replay plays back the episodes a rollout wrote.


def _timeless(d: dict) -> dict:
    drop = ("wall", "per_second", "ms_per", "seconds", "commit")
    return {k: v for k, v in d.items() if not any(w in k for w in drop)}


def _sets(d: dict, prefix=""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _sets(v, f"{prefix}{k}.")
        else:
            yield "--set"
            yield f"{prefix}{k}={json.dumps(v)}"


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_runs_the_same_from_python_and_the_cli(kind, tmp_path):
    """A Python dict and the same keys as `--set` on the command line give the same run."""
    assert set(TINY) == set(KINDS)
    config = dict(TINY[kind])
    if kind in SOURCE:
        src, extra = SOURCE[kind]
        config["run"] = str(kestrel.run(src, {**TINY[src], **extra}, out_dir=tmp_path / "source").dir)
    if kind == "arc-replay":
        rollout = kestrel.run("arc-rollout", TINY["arc-rollout"], out_dir=tmp_path / "source")
        config["traces"] = str(rollout.dir / "episodes.jsonl")
    a = kestrel.run(kind, config, out_dir=tmp_path / "py")
    root = Path(__file__).resolve().parents[3]
    cli = next((str(p) for p in (root / "target/debug/kestrel", root / "target/release/kestrel") if p.exists()),
               shutil.which("kestrel"))
    require(cli is not None, "no kestrel binary is built (tools/test-all builds it before the Python tests)")
    cmd = [cli, *kestrel.run_kinds()[kind].split(), *_sets(config), "--out-dir", str(tmp_path / "cli")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    (b,) = [p for p in (tmp_path / "cli").iterdir() if (p / "record.json").exists()]
    sb = json.loads((b / "summary.json").read_text())
    assert _timeless(a.summary) == _timeless(sb)
    cols = [c for c in a.metrics if _timeless({c: 0})]
    assert cols
    mb = kestrel._runs.read_metrics(b / "metrics.jsonl")
    for c in cols:
        x, y = a.metrics[c], mb[c]
        if x.dtype == object:  # lists per line (NaN where a line lacks the column)
            assert [json.dumps(v, default=list) for v in x] == [json.dumps(v, default=list) for v in y], c
        else:
            np.testing.assert_array_equal(x, y, err_msg=c)


def test_bounds_on_the_ask_tell_objects_as_pycma_and_evo_run_apply_them():
    f = lambda x: ((x - 3.0) ** 2).sum(axis=1)  # the optimum (3, 3, 3) lies outside the box
    for mode in ("clip", "reflect"):
        es = kestrel.evo.CMAES(3, mean=0.0, sigma=2.0, seed=1, bounds=[-1, [1.0, 2.0, 0.5]], bound_mode=mode)
        for _ in range(40):
            x = es.ask()
            assert (x >= -1).all() and (x <= [1.0, 2.0, 0.5]).all(), mode
            es.tell(x, f(x))
        if mode == "clip":  # clipped samples reach the box's nearest corner exactly
            np.testing.assert_allclose(es.best_solution, [1.0, 2.0, 0.5], atol=1e-2)
        else:  # reflected ones approach it (the corner costs 11.25, the start 27)
            assert es.best_fitness < 20.0, es.best_fitness
    # Penalty: rows are left alone, the told fitness grows with the distance to the box.
    es = kestrel.evo.CMAES(3, mean=0.0, sigma=2.0, seed=1, bounds=[-1, 1], bound_mode="penalty")
    es.optimize(f, 60)
    assert np.abs(es.best_solution).max() < 1.05 and es.best_fitness > f(np.ones((1, 3)))[0] - 1e-3
    # The box survives pickling and the functional layer.
    es = kestrel.evo.SNES(2, seed=0, bounds=[-0.1, 0.1])
    back = pickle.loads(pickle.dumps(es))
    assert (np.abs(back.ask()) <= 0.1).all()
    assert (np.abs(es.init(kestrel.Key(3)).ask()) <= 0.1).all()
    for bad, msg in (([1, 0], "bounds"), ([-1, [1, 2]], "bounds"), (5, "bounds"), ([-1, np.nan], "bounds")):
        with pytest.raises(ValueError, match=msg):
            kestrel.evo.CMAES(3, bounds=bad)
    with pytest.raises(ValueError, match="bound_mode"):
        kestrel.evo.CMAES(3, bounds=[-1, 1], bound_mode="wrap")


def test_the_module_helpers_of_the_kinds_that_read_a_run(tmp_path):
    """`kestrel.hunt.play`, `kestrel.actdyn.retrain` and `kestrel.actdyn.compare` are the
    registry's `hunt-play`, `actdyn-retrain` and `actdyn-compare`, the run folder passed as `run`."""
    hunt = kestrel.hunt.train(TINY["hunt"], out_dir=tmp_path / "src", progress=None)
    play = kestrel.hunt.play(hunt.dir, epochs=2, out_dir=tmp_path, progress=None)
    assert play.summary["epochs"] == 2 and (play.dir / "play.png").exists()
    assert set(play.metrics) >= {"mean_reward", "reward_agent_0", "reward_agent_1"}
    run = kestrel.actdyn.run(TINY["actdyn"], save_every=20, out_dir=tmp_path / "src", progress=None)
    again = kestrel.actdyn.retrain(run.dir, TINY["actdyn-retrain"], out_dir=tmp_path, progress=None)
    assert again.summary["transitions"] == 40
    assert kestrel.config("actdyn-retrain", str(again.dir / "config.toml"))["run"] == str(run.dir)
    comp = kestrel.actdyn.compare(TINY["actdyn-compare"], out_dir=tmp_path, progress=None)
    assert comp.summary["num_seeds"] == 2 and "obs_r2_k5_random" in comp.summary
    with pytest.raises(ValueError, match="set `run`"):
        kestrel.run("hunt-play", out_dir=tmp_path / "none", progress=None)
    assert not (tmp_path / "none").exists()


def test_cma_es_left_running_stays_finite_and_stops_as_pycma():
    """Issue 56's cases: 5-D sphere for 20,000 generations drove σ to 1e8 and a generation's best
    to ~1e18; 50-D (seed 0, σ 0.5) asked NaN from generation 8,581 and tell then refused
    Kestrel's own population, while stop() reported nothing."""
    f = lambda x: (x.astype(np.float64) ** 2).sum(axis=1)
    for n, gens in [(5, 20_000), (50, 9_000)]:
        es = kestrel.evo.CMAES(n, sigma=0.5, seed=0)
        first = None
        for g in range(gens):
            x = es.ask()
            assert np.isfinite(x).all(), (n, g)
            m = es.tell(x, f(x))
            if first is None and es.stop():
                first = (g, es.stop())
        assert first is not None and "tolfun" in first[1], (n, first)
        # pycma 4.5.0 stops the same sphere on tolfun near generation 125 (5-D) and 575 (50-D).
        assert first[0] < 1000, (n, first)
        assert m.sigma < 1e-3 and m.best_in_generation < 1e-6, (n, m)


def test_pycma_spellings_and_options():
    f = lambda x: (x ** 2).sum(axis=1)
    # pycma's positional form: x0, sigma0, inopts.
    es = kestrel.evo.CMAES([1.0] * 4, 0.3, {"popsize": 12, "seed": 5, "tolfun": 1e-6, "maxfevals": 600})
    assert (es.pop_size, es.num_dims) == (12, 4)
    assert es.stop_options["tolfun"] == 1e-6 and es.stop_options["maxfevals"] == 600
    es.optimize(f)
    assert es.stop() and es.result.evaluations <= 600
    same = kestrel.evo.CMAES(x0=[1.0] * 4, sigma0=0.3, popsize=12, seed=5, tolfun=1e-6, maxfevals=600)
    same.optimize(f)
    assert same.generation == es.generation and same.best_fitness == es.best_fitness
    # CMA_diagonal=True is Sep-CMA-ES, as in pycma.
    d = kestrel.evo.CMAES(4, CMA_diagonal=True)
    assert d.kind == "sep-cma-es" and "noeffectcoord" in d.stop_options
    with pytest.raises(ValueError, match="CMA_diagonal"):
        kestrel.evo.CMAES(4, CMA_diagonal=10)
    with pytest.raises(ValueError, match="popsize: given twice"):
        kestrel.evo.CMAES(4, pop_size=8, popsize=8)
    # A stop option turned off by None; a misspelt one named.
    off = kestrel.evo.CMAES(4, tolfun=None, maxiter=None)
    assert off.stop_options["tolfun"] is None and off.stop_options["maxiter"] is None
    # pycma's own "never" values mean off.
    never = kestrel.evo.CMAES(4, ftarget=-np.inf, maxfevals=np.inf, maxiter=float("inf"))
    assert [never.stop_options[k] for k in ("ftarget", "maxfevals", "maxiter")] == [None, None, None]
    with pytest.raises(ValueError, match="tolfnu"):
        kestrel.evo.CMAES(4, options={"tolfnu": 1e-3})
    with pytest.raises(ValueError, match="options.tolx"):
        kestrel.evo.CMAES(4, tolx=-1.0)


def test_tell_before_ask_is_refused():
    es = kestrel.evo.CMAES(3, seed=0)
    x = np.zeros((es.pop_size, 3), np.float32)
    with pytest.raises(ValueError, match="tell before ask"):
        es.tell(x, np.zeros(es.pop_size))
    x = es.ask()
    es.tell(x, (x ** 2).sum(1))
    with pytest.raises(ValueError, match="tell before ask: generation 1"):
        es.tell(x, (x ** 2).sum(1))
    # The functional layer takes any population (injection, evosax's way).
    new, m = es.tell_with(kestrel.Key(3), x, (x ** 2).sum(1))
    assert m.generation == 2


def test_pickles_and_copies_keep_the_stop_bookkeeping_and_a_pending_ask():
    f = lambda x: (x ** 2).sum(axis=1)
    whole = kestrel.evo.CMAES(4, mean=1.0, seed=2)
    part = kestrel.evo.CMAES(4, mean=1.0, seed=2)
    for _ in range(30):
        x = whole.ask()
        whole.tell(x, f(x))
    for _ in range(12):
        x = part.ask()
        part.tell(x, f(x))
    x = part.ask()  # pickled between ask and tell
    back = pickle.loads(pickle.dumps(part))
    back.tell(x, f(x))
    for _ in range(17):
        x = back.ask()
        back.tell(x, f(x))
    np.testing.assert_array_equal(back.mean, whole.mean)
    assert back.stop() == whole.stop() and back.result.evaluations == whole.result.evaluations
    assert back.result.evals_best == whole.result.evals_best


def test_evosax_names_reach_every_strategy(learned_kw):
    """jax_mppi's EvoSaxOptimizer does `getattr(evosax.algorithms, strategy)`: every name Kestrel
    has answers both as an attribute of kestrel.evo and through make(): all 37."""
    names = kestrel.evo.evosax_names()
    assert len(names) == 37 and len(set(names.values())) == 37
    classes = {"DES": "DiscoveredES", "LES": "LearnedES", "LGA": "LearnedGA"}
    for evosax, kind in names.items():
        es = kestrel.evo.make(evosax, 6, seed=1, **learned_kw(kind))
        assert es.kind == kind
        cls = getattr(kestrel.evo, classes.get(evosax, evosax))
        assert cls(6, **learned_kw(kind)).kind == kind
        x = es.ask()
        es.tell(x, (x ** 2).sum(1))
    assert kestrel.evo.make("lm_ma_es", 6).kind == "lm-ma-es"
    listing = kestrel.evo.strategies()
    assert {r["kind"] for r in listing} == set(kestrel.evo.STRATEGIES)
    assert "temperature" in next(r for r in listing if r["kind"] == "des")["params"]


@pytest.mark.parametrize("strategy", ["LM_MA_ES", "Sep_CMA_ES", "PSO", "DiscoveredES", "open_es"])
def test_jax_mppi_strategy_strings_reach_the_tuner_and_the_es_run(strategy, tmp_path):
    """jax_mppi's users name evosax's algorithms (`EvoSaxOptimizer(strategy="LM_MA_ES")`): the
    same strings work for `kestrel.mppi.tune` and `kestrel.evo.run`, and the run records
    Kestrel's spelling."""
    t = kestrel.mppi.tune(strategy=strategy, generations=2, pop_size=8, run={"steps": 5}, out_dir=tmp_path / "t",
                          progress=None)
    kind = kestrel.evo.make(strategy, 3).kind
    assert kestrel.config("mppi-tune", str(t.dir / "config.toml"))["strategy"] == kind
    e = kestrel.evo.run(strategy=strategy, problem="sphere", num_dims=4, generations=5, pop_size=8,
                        out_dir=tmp_path / "e", progress=None)
    assert kestrel.config("evo", str(e.dir / "config.toml"))["strategy"] == kind
    with pytest.raises(ValueError, match=r"strategy.*did you mean \"EvoTF_ES\""):
        kestrel.evo.run(strategy="EvoTF_ESS", problem="sphere", num_dims=4, generations=5, out_dir=tmp_path / "x",
                        progress=None)
    assert not (tmp_path / "x").exists()


def test_fmin2_restarts_a_python_objective_as_pycma():
    """pycma's `fmin2(f, x0, sigma0, restarts=..., bipop=...)`: IPOP doubles the population at
    each restart, BIPOP interleaves small runs; both through Kestrel's one restart search."""
    def rastrigin(X):
        X = np.asarray(X, np.float64)
        return 10 * X.shape[1] + (X ** 2 - 10 * np.cos(2 * np.pi * X)).sum(axis=1)
    x, res = kestrel.evo.fmin2(None, [3.0] * 4, 2.0, {"maxfevals": 30_000, "seed": 1}, restarts=4,
                               parallel_objective=rastrigin)
    assert len(res.runs) >= 2 and res.evaluations <= 30_000
    pops = [r["pop_size"] for r in res.runs]
    assert all(b == 2 * a for a, b in zip(pops, pops[1:])), pops
    assert res.fbest == min(r["best"] for r in res.runs) and float(rastrigin(x[None])[0]) == pytest.approx(res.fbest, rel=1e-5)
    single = kestrel.evo.fmin2(lambda v: float((np.asarray(v) ** 2).sum()), [1.0] * 3, 0.5, {"ftarget": 1e-8})[1]
    assert single.stop == "target" and single.fbest <= 1e-8
    _, b = kestrel.evo.fmin2(None, [3.0] * 4, 2.0, {"maxfevals": 20_000}, restarts=3, bipop=True,
                             parallel_objective=rastrigin)
    assert len(b.runs) >= 2
    def broken(X):
        raise KeyError("objective failed")
    with pytest.raises(KeyError, match="objective failed"):
        kestrel.evo.fmin2(None, [1.0] * 3, 0.5, parallel_objective=broken)
    with pytest.raises(ValueError, match="options: popsize"):
        kestrel.evo.fmin2(None, [1.0] * 3, 0.5, {"popsize": 8}, parallel_objective=rastrigin)


def test_the_gradient_strategies_keep_their_interfaces():
    """PersistentES and NoiseReuseES count the inner problem's steps (evosax's T and K accepted);
    GuidedES samples along the surrogate gradient given before ask; the others refuse one."""
    es = kestrel.evo.PersistentES(3, 0.1, T=20, K=10, seed=0)
    seen = []
    for _ in range(4):
        seen.append(es.inner_step)
        x = es.ask()
        es.tell(x, (x ** 2).sum(1))
    assert seen == [0, 10, 0, 10]
    nres = kestrel.evo.make("NoiseReuseES", 3, sigma=0.1, T=30, K=10)
    first = nres.ask()
    nres.tell(first, (first ** 2).sum(1))
    again = nres.ask()  # the same perturbations around the moved mean
    np.testing.assert_allclose(again - nres.mean, first - first.mean(0), atol=1e-5)
    g = kestrel.evo.GuidedES(6, 0.5, params={"alpha": 0.0}, pop_size=8, seed=0)
    direction = np.array([1, 0, 0, 0, 0, 0], np.float32)
    g.set_gradient(direction)
    x = g.ask() - g.mean
    # alpha = 0: every perturbation lies on the gradient's line.
    np.testing.assert_allclose(x[:, 1:], 0, atol=1e-6)
    assert np.abs(x[:, 0]).max() > 0
    with pytest.raises(ValueError, match="num_dims = 6"):
        g.set_gradient(np.ones(3))
    with pytest.raises(ValueError, match="only for guided-es"):
        kestrel.evo.ASEBO(6, pop_size=8)._s.set_gradient(np.ones(6, np.float32))
    a = kestrel.evo.make("ASEBO", 6, pop_size=8, params={"subspace_dims": 2})
    for _ in range(5):
        x = a.ask()
        a.tell(x, (x ** 2).sum(1))
    assert np.isfinite(a.mean).all()
    with pytest.raises(ValueError, match="subspace_dims"):
        kestrel.evo.make("GuidedES", 3, params={"subspace_dims": 4})


def test_the_model_strategies_keep_their_interfaces():
    """Rm-ES takes evosax's `m=` (paths kept); SV_Open_ES and SV_CMA_ES their particles
    (`num_populations`, `means=` as evosax's init) with one block of rows each; iAMaLGaM and CR-FM-NES by evosax's
    names; `bugs="all"` is each one's evosax profile."""
    rm = kestrel.evo.Rm_ES(5, 0.3, m=3, seed=1)
    assert rm.params == {"num_paths": 3}
    assert rm.state_dict()["tensors"]["paths"].shape == (15,)
    with pytest.raises(ValueError, match="num_paths"):
        kestrel.evo.RmES(5, m=0)
    means = np.array([[2.0, 2.0], [-2.0, -2.0], [2.0, -2.0]], np.float32)
    sv = kestrel.evo.SV_Open_ES(sigma0=0.1, means=means, pop_size=12, params={"lr": 0.05}, seed=0)
    np.testing.assert_allclose(sv.means, means)
    x = sv.ask()
    # Block p of 4 rows samples around particle p.
    np.testing.assert_allclose(x.reshape(3, 4, 2).mean(1), means, atol=1e-5)
    for _ in range(30):
        x = sv.ask()
        sv.tell(x, (x ** 2).sum(1))
    assert np.linalg.norm(sv.means, axis=1).max() < np.linalg.norm(means, axis=1).min()
    with pytest.raises(ValueError, match="num_populations"):
        kestrel.evo.SVOpenES(2, pop_size=12, num_populations=5)
    with pytest.raises(ValueError, match="means: expected shape"):
        kestrel.evo.SVOpenES(sigma0=0.1, means=means, pop_size=8, num_populations=2)
    # SV-CMA-ES: CMA-ES particles, 4 rows each here, on two modes: the particle alone near
    # (2, 2) settles there; the two that both descend to (-2, -2) are kept apart by the kernel.
    cma = kestrel.evo.SV_CMA_ES(sigma0=0.3, means=means, pop_size=12, seed=0)
    np.testing.assert_allclose(cma.means, means)
    assert cma.state_dict()["tensors"]["p2.sigma"].shape == (1,)
    two = lambda x: np.minimum(((x - 2) ** 2).sum(1), ((x + 2) ** 2).sum(1))
    for _ in range(60):
        x = cma.ask()
        cma.tell(x, two(x))
    got = cma.means
    assert np.abs(got[0] - 2).max() < 0.05, got
    assert (got[1:] < 0).all() and np.linalg.norm(got[1] - got[2]) > 0.5, got
    assert kestrel.evo.make("sv-cma-es", 5).pop_size == 4 * (4 + int(3 * np.log(5)))
    with pytest.raises(ValueError, match="at least 4 rows per particle"):
        kestrel.evo.SVCMAES(2, pop_size=12, num_populations=4)
    for name in ("iAMaLGaM_Full", "iAMaLGaM_Univariate", "CR_FM_NES", "Rm_ES"):
        for bugs in ("none", "all"):
            es = kestrel.evo.make(name, 6, pop_size=10, sigma=0.5, params={"bugs": bugs})
            first = es.mean.copy()
            for _ in range(20):
                x = es.ask()
                es.tell(x, (x ** 2).sum(1))
            assert np.isfinite(es.mean).all() and not np.array_equal(es.mean, first), (name, bugs)


def test_diffusion_evolution_denoises_over_its_schedule():
    """evosax's schedule names and length; the population stays once the schedule ends."""
    es = kestrel.evo.make("DiffusionEvolution", 4, pop_size=16, sigma=1.0, seed=3,
                          params={"num_generations": 12, "alpha_schedule": "ddpm"})
    for _ in range(20):
        x = es.ask()
        es.tell(x, (x ** 2).sum(1))
    again = es.ask()
    np.testing.assert_allclose(again, x, atol=1e-6)
    with pytest.raises(ValueError, match="alpha_schedule"):
        kestrel.evo.DiffusionEvolution(4, params={"alpha_schedule": "linear"})


def test_a_learned_strategy_reads_evosax_weights_or_says_what_is_missing(learned_kw, tmp_path):
    """LES takes evosax's `params_path` (its meta-learned weights, which Kestrel does not ship);
    without one, and without evosax installed, the error names the file evosax uses; a file
    that is not such a checkpoint is refused naming it."""
    kw = learned_kw("les")
    es = kestrel.evo.LearnedES(8, 0.5, pop_size=16, seed=3, **kw)
    first = None
    for _ in range(40):
        x = es.ask()
        f = (x ** 2).sum(1)
        first = f.min() if first is None else first
        es.tell(x, f)
    assert es.result.fbest < first / 10
    lga = kestrel.evo.LGA(8, 0.5, pop_size=16, seed=3, **learned_kw("lga"))
    for _ in range(30):
        x = lga.ask()
        lga.tell(x, (x ** 2).sum(1))
    assert lga.result.fbest < 1.0
    if kestrel.evo.installed_evosax_weights("les") is None:
        with pytest.raises(ValueError, match=r"params_path.*les/2023_10_les_v2\.pkl"):
            kestrel.evo.LES(4)
    bad = tmp_path / "les.pkl"
    bad.write_bytes(b"\x80\x04\x95junk")
    with pytest.raises(ValueError, match=str(bad)):
        kestrel.evo.LES(4, params_path=str(bad))
    with pytest.raises(ValueError, match="params_path"):
        kestrel.evo.CMAES(4, params_path=kw["params_path"])
