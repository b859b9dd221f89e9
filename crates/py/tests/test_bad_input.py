"""What a Python user gets wrong, each refused with a ValueError or TypeError that names the
argument (a RuntimeError for calls in the wrong state: before reset, after close; a
FileNotFoundError naming the path for a file that is not there, as `open` raises), never a
crash, a hang or a silently wrong result (issue 30 item 8). One row per mistake: what is
called, the exception, and a pattern its message must match (the argument's name at
least)."""

import math
import pickle

import numpy as np
import pytest

import kestrel

NAN, INF = float("nan"), float("inf")
ARC = dict(canvas=5, tasks_per_family=2)


def _env(env_id="CartPole-v1", reset=True, **kw):
    e = kestrel.make(env_id, **kw)
    if reset:
        e.reset(seed=0)
    return e


def _venv(env_id="CartPole-v1", n=4, reset=True, **kw):
    v = kestrel.make_vec(env_id, n, **kw)
    if reset:
        v.reset(seed=0)
    return v


def _closed(env_id="CartPole-v1", vec=False):
    e = _venv(env_id) if vec else _env(env_id)
    e.close()
    return e


def _arc_step(**change):
    a = {"operation": np.zeros(4, np.int64), "selection": np.zeros((4, 5, 5), np.uint8)}
    a.update(change)
    return lambda: _venv("ARC-v0", **ARC).step(a)


def _es(**kw):
    return kestrel.evo.CMAES(4, seed=0, **kw)


def _tell(pop=None, fit=None):
    def go():
        es = _es()
        x = es.ask()
        es.tell(x if pop is None else pop(x), (x ** 2).sum(1) if fit is None else fit(x))
    return go


def _pickled_from_another_version():
    es = _es()
    blob = pickle.dumps(es)
    other = blob.replace(kestrel.__version__.encode(), b"9.9.9")
    return pickle.loads(other)


def _ctl(**kw):
    return kestrel.mppi.Controller(system="pendulum", steps=5, **kw)


CASES = [
    # -- making envs: ids, keyword params, configs, sizes ---------------------------------
    ("unknown env id", lambda: kestrel.make("CartPole-v2"), ValueError, r"CartPole-v2.*CartPole-v1"),
    ("misspelt param", lambda: kestrel.make("CartPole-v1", gravty=9.8), ValueError, r"gravty.*gravity"),
    ("param of the wrong type", lambda: kestrel.make("CartPole-v1", gravity="strong"), ValueError, r"gravity"),
    ("NaN param", lambda: kestrel.make("CartPole-v1", gravity=NAN), ValueError, r"gravity"),
    ("infinite param", lambda: kestrel.make("CartPole-v1", force_mag=INF), ValueError, r"force_mag"),
    ("negative limit", lambda: kestrel.make("CartPole-v1", max_episode_steps=-1), ValueError, r"max_episode_steps"),
    ("absurd limit", lambda: kestrel.make("CartPole-v1", max_episode_steps=2**40), ValueError, r"max_episode_steps"),
    ("zero tau", lambda: kestrel.make("CartPole-v1", tau=0.0), ValueError, r"tau"),
    ("missing config file", lambda: kestrel.make("CartPole-v1", config="/nonexistent/cfg.toml"), FileNotFoundError, r"/nonexistent/cfg.toml"),
    ("config of the wrong type", lambda: kestrel.make("CartPole-v1", config=42), TypeError, r"config"),
    ("misspelt key in a config dict", lambda: kestrel.make("CartPole-v1", config={"gravty": 1.0}), ValueError, r"gravty"),
    ("param that is a dict", lambda: kestrel.make("CartPole-v1", gravity={"x": 1}), ValueError, r"gravity"),
    ("param that is an object", lambda: kestrel.make("CartPole-v1", gravity=object()), TypeError, r"gravity: .*object"),
    ("zero envs", lambda: kestrel.make_vec("CartPole-v1", 0), ValueError, r"num_envs = 0"),
    ("negative envs", lambda: kestrel.make_vec("CartPole-v1", -5), ValueError, r"num_envs = -5"),
    ("float envs", lambda: kestrel.make_vec("CartPole-v1", 2.5), TypeError, r"num_envs"),
    ("bool envs", lambda: kestrel.make_vec("CartPole-v1", True), TypeError, r"num_envs"),
    ("string envs", lambda: kestrel.make_vec("CartPole-v1", "8"), TypeError, r"num_envs"),
    ("absurd number of envs", lambda: kestrel.make_vec("CartPole-v1", 10**12), ValueError, r"num_envs"),
    ("zero threads", lambda: kestrel.make_vec("CartPole-v1", 2, num_threads=0), ValueError, r"num_threads"),
    ("absurd threads", lambda: kestrel.make_vec("CartPole-v1", 2, num_threads=10**6), ValueError, r"num_threads"),
    ("unknown autoreset mode", lambda: kestrel.make_vec("CartPole-v1", 2, autoreset_mode="sometimes"), ValueError, r"autoreset_mode"),
    ("negative seed at make", lambda: kestrel.make_vec("CartPole-v1", 2, seed=-1), ValueError, r"seed = -1"),
    ("float seed at make", lambda: kestrel.make_vec("CartPole-v1", 2, seed=1.5), TypeError, r"seed"),
    ("negative row offset", lambda: kestrel.make_vec("CartPole-v1", 2, row_offset=-1), ValueError, r"row_offset = -1"),
    ("render mode the env lacks", lambda: kestrel.make("CartPole-v1", render_mode="ansi"), ValueError, r"render_mode"),
    ("unknown render mode", lambda: kestrel.make_vec("Pendulum-v1", 2, render_mode="video"), ValueError, r"render_mode"),
    ("ARC canvas", lambda: kestrel.make("ARC-v0", canvas=7), ValueError, r"canvas"),
    ("ARC data folder missing", lambda: kestrel.make("ARC-v0", data="/nonexistent/arc"), FileNotFoundError, r"/nonexistent/arc"),
    ("ARC layout", lambda: kestrel.make("ARC-v0", layout="wide"), ValueError, r"layout"),
    ("ARC demo pairs", lambda: kestrel.make("ARC-v0", demo_pairs=99, **ARC), ValueError, r"demo_pairs"),
    ("ARC generator side", lambda: kestrel.make("ARC-v0", max_side=2, **ARC), ValueError, r"max_side = 2"),
    ("ARC generator family", lambda: kestrel.make("ARC-v0", families=["lasso"], **ARC), ValueError, r"lasso"),
    ("ARC selection form", lambda: kestrel.make("ARC-v0", selection="lasso", **ARC), ValueError, r"selection"),
    ("ARC flattened masks", lambda: kestrel.make("ARC-v0", flatten="discrete", **ARC), ValueError, r"flatten"),
    ("action form on a non-ARC env", lambda: kestrel.make("Pendulum-v1", flatten="discrete"), ValueError, r"flatten"),
    ("grid map", lambda: kestrel.make("GridWorld-v0", map="builtin:nosuch"), ValueError, r"nosuch"),
    ("grid map file", lambda: kestrel.make("GridWorld-v0", map="/nonexistent/map.txt"), FileNotFoundError, r"/nonexistent/map.txt"),
    ("treasure agents", lambda: kestrel.make_vec("TreasureHunt-v0", 2, num_agents=0), ValueError, r"num_agents"),
    ("treasure vision", lambda: kestrel.make("TreasureHunt-v0", num_agents=1, vision_radius=1000), ValueError, r"vision_radius"),
    ("treasure spawn probability", lambda: kestrel.make("TreasureHunt-v0", num_agents=1, spawn_prob=1.5), ValueError, r"spawn_prob"),
    ("multi-agent as a single env", lambda: kestrel.make("TreasureHunt-v0"), ValueError, r"num_agents"),
    ("vector field", lambda: kestrel.make("VectorField-v0", field="nosuch"), ValueError, r"field.*nosuch|nosuch.*field"),
    ("double integrator dims", lambda: kestrel.make("Control-double-integrator-v0", dims=9), ValueError, r"dims"),
    # -- reset ----------------------------------------------------------------------------
    ("negative seed", lambda: _env(reset=False).reset(seed=-3), ValueError, r"seed = -3"),
    ("string seed", lambda: _env(reset=False).reset(seed="a"), TypeError, r"seed"),
    ("seed past 2**64", lambda: _env(reset=False).reset(seed=2**64), ValueError, r"seed"),
    ("NaN seed", lambda: _env(reset=False).reset(seed=NAN), TypeError, r"seed"),
    ("unknown reset option", lambda: _env().reset(options={"bogus": 1}), ValueError, r"options.*bogus"),
    ("NaN start state", lambda: _env().reset(options={"state": [NAN, 0, 0, 0]}), ValueError, r"state"),
    ("start state of the wrong length", lambda: _env().reset(options={"state": [0.0, 1.0]}), ValueError, r"state: expected 4 values"),
    ("seed list not of Gymnasium's form", lambda: _venv(reset=False).reset(seed=[1, 5, 9, 2]), ValueError, r"seed"),
    ("seed list of the wrong length", lambda: _venv(reset=False).reset(seed=[0, 1]), ValueError, r"seed"),
    ("reset mask as a list", lambda: _venv().reset(options={"reset_mask": [True] * 4}), TypeError, r"reset_mask"),
    ("reset mask dtype", lambda: _venv().reset(options={"reset_mask": np.ones(4, np.int64)}), ValueError, r"reset_mask"),
    ("reset mask shape", lambda: _venv().reset(options={"reset_mask": np.ones(3, bool)}), ValueError, r"reset_mask"),
    ("empty reset mask", lambda: _venv().reset(options={"reset_mask": np.zeros(4, bool)}), ValueError, r"reset_mask"),
    # -- step -----------------------------------------------------------------------------
    ("step before reset", lambda: _env(reset=False).step(0), RuntimeError, r"before reset"),
    ("vector step before reset", lambda: _venv(reset=False).step(np.zeros(4, np.int64)), RuntimeError, r"before reset"),
    ("action past Discrete(2)", lambda: _env().step(2), ValueError, r"actions\[0\] = 2: outside Discrete\(2\)"),
    ("negative discrete action", lambda: _env().step(-1), ValueError, r"actions\[0\] = -1: outside Discrete\(2\)"),
    ("float discrete action", lambda: _env().step(0.5), TypeError, r"actions: expected integers"),
    ("array for a scalar action", lambda: _env().step(np.array([0, 1])), ValueError, r"action"),
    ("vector actions of the wrong shape", lambda: _venv().step(np.zeros(5, np.int64)), ValueError, r"shape \(4,\)"),
    ("vector actions of floats", lambda: _venv().step(np.zeros(4)), TypeError, r"actions"),
    ("vector actions of strings", lambda: _venv().step(np.array(["a"] * 4)), TypeError, r"actions"),
    ("NaN torque", lambda: _env("Pendulum-v1").step(np.array([NAN], np.float32)), ValueError, r"not finite"),
    ("infinite torque", lambda: _env("Pendulum-v1").step(np.array([INF], np.float32)), ValueError, r"not finite"),
    ("torque of the wrong shape", lambda: _env("Pendulum-v1").step(np.zeros(2, np.float32)), ValueError, r"shape"),
    ("torque as a string", lambda: _env("Pendulum-v1").step("a"), TypeError, r"actions"),
    ("vector torques with NaN", lambda: _venv("Pendulum-v1").step(np.full((4, 1), NAN)), ValueError, r"not finite"),
    ("ARC selection byte 2", _arc_step(selection=np.full((4, 5, 5), 2, np.uint8)), ValueError, r"selection.*2"),
    ("ARC operation 35", _arc_step(operation=np.full(4, 35)), ValueError, r"operation.*35"),
    ("ARC negative operation", _arc_step(operation=np.full(4, -1)), ValueError, r"operation.*-1"),
    ("ARC selection shape", _arc_step(selection=np.zeros((4, 6, 6), np.uint8)), ValueError, r"selection"),
    ("ARC float selection", _arc_step(selection=np.zeros((4, 5, 5))), TypeError, r"selection"),
    ("ARC missing key", lambda: _venv("ARC-v0", **ARC).step({"operation": np.zeros(4, np.int64)}), TypeError, r"operation, selection"),
    ("ARC action not a dict", lambda: _venv("ARC-v0", **ARC).step(np.zeros(4, np.int64)), TypeError, r"dict"),
    ("ARC point off the canvas", lambda: _venv("ARC-v0", selection="point", **ARC).step(
        {"operation": np.zeros(4, np.int64), "row": np.full(4, 5), "col": np.zeros(4, np.int64)}), ValueError, r"row.*5"),
    ("ARC flattened action past its range", lambda: _venv("ARC-v0", selection="point", flatten="discrete", **ARC).step(
        np.full(4, 35 * 25)), ValueError, r"Discrete\(875\)"),
    ("step after close", lambda: _closed().step(0), RuntimeError, r"closed"),
    ("reset after close", lambda: _closed().reset(seed=0), RuntimeError, r"closed"),
    ("vector step after close", lambda: _closed(vec=True).step(np.zeros(4, np.int64)), RuntimeError, r"closed"),
    ("vector reset after close", lambda: _closed(vec=True).reset(seed=0), RuntimeError, r"closed"),
    ("step_wait without step_async", lambda: _venv().step_wait(), RuntimeError, r"step_async"),
    ("step_async twice", lambda: [v := _venv(), v.step_async(np.zeros(4, np.int64)), v.step_async(np.zeros(4, np.int64))],
     RuntimeError, r"step_async"),
    ("state for ARC", lambda: _venv("ARC-v0", **ARC).set_state(0, [1.0]), ValueError, r"state"),
    ("state row out of range", lambda: _venv().set_state(9, [0.0, 0.0, 0.0, 0.0]), ValueError, r"row = 9"),
    ("state with NaN", lambda: _venv().set_state(0, [NAN, 0.0, 0.0, 0.0]), ValueError, r"state\[0\] = NaN: not finite"),
    # -- ask/tell -------------------------------------------------------------------------
    ("zero dimensions", lambda: kestrel.evo.CMAES(0), ValueError, r"num_dims"),
    ("negative dimensions", lambda: kestrel.evo.CMAES(-1), ValueError, r"num_dims"),
    ("population of one", lambda: kestrel.evo.CMAES(4, pop_size=1), ValueError, r"pop_size"),
    ("negative sigma", lambda: _es(sigma=-1.0), ValueError, r"sigma"),
    ("NaN sigma", lambda: _es(sigma=NAN), ValueError, r"sigma"),
    ("mean of the wrong length", lambda: _es(mean=[1.0, 2.0, 3.0]), ValueError, r"mean"),
    ("NaN mean", lambda: _es(mean=[NAN, 0.0, 0.0, 0.0]), ValueError, r"mean"),
    ("fitness of the wrong shape", _tell(fit=lambda x: np.zeros(len(x) + 1)), ValueError, r"fitness"),
    ("fitness as strings", _tell(fit=lambda x: np.array(["a"] * len(x))), (TypeError, ValueError), r"fitness"),
    ("population of the wrong shape", _tell(pop=lambda x: x[:, :2]), ValueError, r"population"),
    ("unknown strategy", lambda: kestrel.evo.make("cmaes2", 4), ValueError, r"cmaes2"),
    ("unknown strategy param", lambda: kestrel.evo.OpenES(4, params={"lrate_nosuch": 0.1}), ValueError, r"lrate_nosuch"),
    ("OpenES with an odd population", lambda: kestrel.evo.OpenES(4, pop_size=7), ValueError, r"pop_size"),
    ("PGPE with 3", lambda: kestrel.evo.PGPE(4, pop_size=3), ValueError, r"pop_size"),
    ("pickle from another version", _pickled_from_another_version, ValueError, r"version"),
    ("unknown benchmark problem", lambda: kestrel.evo.Problem("nosuch", 4), ValueError, r"nosuch"),
    # -- whole runs -----------------------------------------------------------------------
    ("unknown run kind", lambda: kestrel.run("nosuch"), ValueError, r"nosuch"),
    ("unknown config kind", lambda: kestrel.config("evoo"), ValueError, r"evoo.*evo"),
    ("negative generations", lambda: kestrel.evo.run(generations=-1, out_dir="runs"), ValueError, r"generations"),
    ("misspelt run key", lambda: kestrel.evo.run(generatons=5, out_dir="runs"), ValueError, r"generatons.*generations"),
    ("run config file missing", lambda: kestrel.evo.run(config="/nonexistent/run.toml"), FileNotFoundError, r"/nonexistent/run.toml"),
    ("run config as bytes", lambda: kestrel.evo.run(config=b"generations = 5"), TypeError, r"config"),
    ("ALLO map", lambda: kestrel.allo.train(map="builtin:nosuch", out_dir="runs"), ValueError, r"nosuch"),
    ("resume from nowhere", lambda: kestrel.allo.train(resume="/nonexistent/run", out_dir="runs"), FileNotFoundError, r"/nonexistent/run"),
    ("zero run threads", lambda: kestrel.evo.run(generations=2, threads=0, out_dir="runs"), ValueError, r"threads"),
    ("progress of the wrong type", lambda: kestrel.evo.run(generations=2, progress="yes", out_dir="runs"), TypeError, r"progress"),
    ("MPPI system", lambda: kestrel.mppi.Controller(system="pendulm"), ValueError, r"pendulm"),
    ("MPPI state shape", lambda: _ctl().command(np.zeros(3)), ValueError, r"state.*\(2,\)"),
    ("MPPI NaN state", lambda: _ctl().command(np.array([NAN, 0.0])), ValueError, r"state"),
    ("negative Key seed", lambda: kestrel.Key(-1), ValueError, r"seed = -1: an integer in 0 \.\.= 2\*\*64 - 1"),
    ("Key seed past 2**64", lambda: kestrel.Key(2**64), ValueError, r"seed = 18446744073709551616"),
    ("Key seed not an int", lambda: kestrel.Key(1.5), TypeError, r"seed = 1\.5: an integer"),
    ("negative fold_in", lambda: kestrel.Key(0).fold_in(-3), ValueError, r"data = -3"),
    # Issue 57: each size error names the field that makes it big, before anything is built.
    ("broadcast rollout of 1e9 steps",
     lambda: _venv(n=4).rollout(np.broadcast_to(np.zeros((1, 4), np.int64), (10**9, 4))), ValueError,
     r"actions: 1000000000 steps x 4 envs: the rollout's arrays need about .* GiB, the limit is 8 GiB"),
    ("CMA-ES of 1e8 dimensions", lambda: kestrel.evo.CMAES(10**8), ValueError,
     r"num_dims = 100000000: a size whose memory fits: cma-es .* needs about"),
    ("CMA-ES of 1e9 dimensions", lambda: kestrel.evo.CMAES(10**9), ValueError, r"num_dims = 1000000000"),
    ("SNES of a 1e9 population", lambda: kestrel.evo.SNES(10, pop_size=10**9), ValueError, r"pop_size = 1000000000"),
    ("ES run of a 1e9 population",
     lambda: kestrel.evo.run(strategy="cma-es", problem="sphere", num_dims=4, pop_size=10**9, generations=2,
                             progress=None), ValueError, r"invalid pop_size = a run needing"),
    ("negative generations",
     lambda: kestrel.evo.run(strategy="cma-es", problem="sphere", num_dims=4, generations=-1, progress=None),
     ValueError, r"generations = -1.*expected an integer in 0\.\.=18446744073709551615"),
    ("hunt key at the wrong depth", lambda: kestrel.hunt.train(num_agents=3, progress=None), ValueError,
     r"unknown key `num_agents`; the closest valid key is `env\.num_agents`"),
    ("actdyn compare key at the wrong depth", lambda: kestrel.actdyn.compare(steps=500, progress=None), ValueError,
     r"unknown key `steps`; the closest valid key is `base\.steps`"),
]


def test_the_corpus_is_large():
    assert len(CASES) >= 80, len(CASES)


@pytest.mark.parametrize("name,call,exc,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error(name, call, exc, pattern, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # run folders would go to ./runs: none may be made
    with pytest.raises(exc, match=pattern) as info:
        call()
    text = str(info.value)
    assert "panicked" not in text and "\ufffd" not in text and len(text) < 2000, text
    assert not (tmp_path / "runs").exists(), "a run folder was made before the error"


def test_arrays_that_are_not_contiguous_are_taken_as_their_values():
    a, b = _venv(n=4), _venv(n=4)
    base = np.array([0, 9, 1, 9, 1, 9, 0, 9], np.int64)
    strided = base[::2]
    assert not strided.flags.c_contiguous
    for _ in range(20):
        r1, r2 = a.step(strided), b.step(np.ascontiguousarray(strided))
        np.testing.assert_array_equal(r1[0], r2[0])
    col = np.asfortranarray(np.zeros((4, 1)))[:, :1]
    p1, p2 = _venv("Pendulum-v1"), _venv("Pendulum-v1")
    np.testing.assert_array_equal(p1.step(col)[0], p2.step(np.zeros((4, 1)))[0])
