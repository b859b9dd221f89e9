"""Ask/tell: every strategy, the same numbers as `kestrel evo run`, state_dict and pickle
resume, the functional layer, bad input."""

import pickle

import numpy as np
import pytest

import kestrel
from kestrel import evo

KINDS = list(evo.STRATEGIES)


@pytest.mark.parametrize("kind", KINDS)
def test_python_loop_equals_the_run_library(kind, tmp_path, learned_kw):
    gens = 25
    kw = learned_kw(kind)  # a learned strategy's weights (its params_path)
    res = evo.run(strategy=kind, problem="rosenbrock", num_dims=6, generations=gens, seed=3, sigma=0.3,
                  out_dir=tmp_path, threads=1, params=kw)
    es = evo.make(kind, 6, sigma=0.3, seed=3, **kw)
    f = evo.Problem("rosenbrock", 6)
    best = []
    for g in range(len(res.metrics["best"])):
        x = es.ask()
        best.append(es.tell(x, f(x)).best_so_far)
    np.testing.assert_array_equal(np.asarray(best, np.float32), res.metrics["best"].astype(np.float32))
    assert np.float32(res.summary["best_fitness"]) == es.best_fitness
    np.testing.assert_array_equal(np.asarray(res.summary["best_solution"], np.float32), es.best_solution)
    assert (res.dir / "config.toml").exists() and (res.dir / "convergence.png").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_and_pickle_resume_give_the_same_next_generations(kind, learned_kw):
    f = evo.Problem("sphere", 5)
    kw = learned_kw(kind, 5)
    a = evo.make(kind, 5, seed=1, **kw)
    for _ in range(4):
        x = a.ask()
        a.tell(x, f(x))
    b = pickle.loads(pickle.dumps(a))
    c = evo.make(kind, 5, seed=1, **kw)
    c.load_state_dict(a.state_dict())
    for _ in range(3):
        xa, xb, xc = a.ask(), b.ask(), c.ask()
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(xa, xc)
        fa = f(xa)
        ma, mb, mc = a.tell(xa, fa), b.tell(xb, fa), c.tell(xc, fa)
        assert ma == mb == mc


def test_functional_layer_is_pure_and_keyed():
    es = evo.SNES(4, seed=0)
    k = kestrel.Key(7)
    s0 = es.init(k.fold_in(0))
    x1, s1 = es.ask_with(k.fold_in(1), s0)
    x2, _ = es.ask_with(k.fold_in(1), s0)
    np.testing.assert_array_equal(x1, x2)  # s0 untouched: same key, same draw
    s2, m = es.tell_with(k.fold_in(2), x1, (x1**2).sum(1), s1)
    assert m.generation == 1 and s1.generation == 0
    assert not np.array_equal(s2.mean, s1.mean)
    assert pickle.loads(pickle.dumps(k)) == k and k.fold_in(3) != k


def test_read_only_arrays_and_lists_are_accepted():
    # Read-only arrays and plain lists tell the same as writable arrays.
    a, b, c = evo.CMAES(3, seed=0), evo.CMAES(3, seed=0), evo.CMAES(3, seed=0)
    for _ in range(3):
        x = a.ask()
        np.testing.assert_array_equal(x, b.ask())
        np.testing.assert_array_equal(x, c.ask())
        f = (x**2).sum(1)
        a.tell(x, f)
        ro_x, ro_f = x.copy(), f.copy()
        ro_x.flags.writeable = False
        ro_f.flags.writeable = False
        b.tell(ro_x, ro_f)
        c.tell(x.tolist(), f.tolist())
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.mean, c.mean)
    assert not np.array_equal(a.mean, np.zeros(3))


def test_bad_input_raises():
    es = evo.CMAES(3, seed=0)
    x = es.ask()
    with pytest.raises(ValueError, match=r"population: expected shape \(7, 3\), got \(7, 2\)"):
        es.tell(x[:, :2], np.zeros(7))
    with pytest.raises(ValueError, match=r"fitness: expected shape \(7,\), got \(7, 1\)"):
        es.tell(x, np.zeros((7, 1)))
    with pytest.raises(ValueError, match="NaN"):
        es.tell(x, np.full(7, np.nan))
    with pytest.raises(ValueError, match="finite"):
        es.tell(np.full_like(x, np.inf), np.zeros(7))
    with pytest.raises(ValueError, match="strategy"):
        evo.make("cmaes", 3)
    with pytest.raises(ValueError, match="pop_size"):
        evo.CMAES(3, pop_size=2)
    with pytest.raises(ValueError, match="sigma"):
        evo.CMAES(3, sigma=float("nan"))
    with pytest.raises(ValueError, match="unknown field|unknown"):
        evo.run(strategy="cma-es", generationz=3)


def test_neuroevolution_problem_is_keyed_by_global_row():
    p = evo.Problem("cartpole")
    pop = np.random.default_rng(0).normal(size=(8, p.num_dims)).astype(np.float32)
    k = kestrel.Key(3)
    whole = p(pop, k)
    halves = np.concatenate([p(pop[:3], k, 0), p(pop[3:], k, 3)])
    np.testing.assert_array_equal(whole, halves)


@pytest.mark.parametrize("emitter", ["cma-me", "map-elites", "iso-line"])
def test_qd_scheduler_loop_equals_the_qd_run(emitter, tmp_path):
    cfg = dict(emitter=emitter, num_emitters=2, batch_size=8, num_dims=6, cells=10, generations=12, seed=5)
    res = evo.qd(out_dir=tmp_path, **cfg)
    sched, problem = evo.Scheduler.from_config(**{k: v for k, v in cfg.items() if k != "generations"})
    for g in range(12):
        for e in range(2):
            x = sched.ask(e)
            f, m = problem(x)
            sched.tell(e, x, f, m)
    s = sched.archive.stats()
    assert s["num_elites"] == res.summary["num_elites"] == res.metrics["num_elites"][-1]
    assert s["qd_score"] == res.summary["qd_score"] and s["coverage"] == res.summary["coverage"]
    el = sched.archive.elites()
    assert el["solution"].shape == (s["num_elites"], 6) and el["measures"].shape == (s["num_elites"], 2)
    np.testing.assert_array_equal(sched.archive.index_of(el["measures"]), el["index"])


def test_qd_archive_add_and_errors():
    a = evo.Archive.grid(3, [4, 4], [(-1, 1), (-1, 1)])
    st, val = a.add(np.zeros((2, 3)), [1.0, 0.5], [[0.1, 0.1], [0.1, 0.12]])
    assert st.tolist() == [2, 1] and a.stats()["num_elites"] == 1
    assert a.fitness[a.occupied].tolist() == [0.5]
    with pytest.raises(ValueError, match=r"solutions: expected shape \(n, 3\)"):
        a.add(np.zeros((2, 2)), [1.0, 1.0], [[0, 0], [0, 0]])
    with pytest.raises(ValueError, match="lower < upper"):
        evo.Archive.grid(3, [4, 4], [(1, -1), (-1, 1)])
    with pytest.raises(ValueError, match="cells"):
        evo.Archive.grid(3, [100000, 100000], [(-1, 1), (-1, 1)])
    c = evo.Archive.cvt(3, 16, [(-1, 1), (-1, 1)], seed=2)
    assert c.num_cells == 16


def test_result_repr_is_short_for_large_vectors():
    """Issue 57: `es.result` printed every value of `xbest` and `xfavorite`."""
    es = kestrel.evo.SNES(10_000, seed=0)
    x = es.ask()
    es.tell(x, (x.astype(np.float64) ** 2).sum(1))
    r = repr(es.result)
    assert len(r) < 400 and "(10000 values)" in r and r.startswith("Result(fbest="), r
    small = kestrel.evo.CMAES(2)
    x = small.ask()
    small.tell(x, (x ** 2).sum(1))
    assert "values)" not in repr(small.result)
