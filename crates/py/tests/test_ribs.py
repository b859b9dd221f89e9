"""QD in pyribs' shape: pyribs' own README loop runs with only its imports changed, against
the pinned `ribs` in the test venv, and reaches a comparable archive; `data()`, `as_pandas()`,
stats, pickling and the heat map read the same elites."""

import pickle
import textwrap

import numpy as np
import pytest

import kestrel
from kestrel.ribs.archives import CVTArchive, GridArchive
from kestrel.ribs.emitters import EvolutionStrategyEmitter, GaussianEmitter, IsoLineEmitter
from kestrel.ribs.schedulers import Scheduler
from kestrel.ribs.visualize import grid_archive_heatmap

# pyribs' README example (CMA-ME on the 10-D negative sphere, measures = the first two
# coordinates), with fewer iterations; `{pkg}` is `ribs` or `kestrel.ribs`.
LOOP = textwrap.dedent("""
    import numpy as np
    from {pkg}.archives import GridArchive
    from {pkg}.emitters import EvolutionStrategyEmitter
    from {pkg}.schedulers import Scheduler

    archive = GridArchive(solution_dim=10, dims=[20, 20], ranges=[(-1, 1), (-1, 1)])
    emitters = [EvolutionStrategyEmitter(archive, x0=[0.0] * 10, sigma0=0.1, seed=i) for i in range(3)]
    scheduler = Scheduler(archive, emitters)

    for itr in range(300):
        solutions = scheduler.ask()
        # Optimize the 10D negative Sphere function.
        objective_batch = -np.sum(np.square(solutions), axis=1)
        # Measures: first 2 coordinates of each 10D solution.
        measures_batch = solutions[:, :2]
        scheduler.tell(objective_batch, measures_batch)
""")


def _run(pkg):
    scope = {}
    exec(LOOP.format(pkg=pkg), scope)
    return scope["archive"]


def test_pyribs_readme_loop_runs_with_only_the_imports_changed():
    pytest.importorskip("ribs")
    ours, theirs = _run("kestrel.ribs"), _run("ribs")
    a, b = ours.stats, theirs.stats
    # Different random streams, the same algorithm: archives of the same quality.
    assert a.num_elites > 0.8 * b.num_elites, (a, b)
    assert a.coverage > 0.8 * b.coverage and a.obj_max > -0.05 and b.obj_max > -0.05, (a, b)
    assert abs(a.qd_score - b.qd_score) < 0.2 * abs(b.qd_score) + 1.0, (a, b)
    # The same reading of the elites.
    d, e = ours.data(), theirs.data()
    assert set(d) <= set(e) and d["solution"].shape[1] == e["solution"].shape[1] == 10
    assert d["objective"].dtype == e["objective"].dtype
    np.testing.assert_allclose(d["measures"], d["solution"][:, :2], atol=1e-6)
    np.testing.assert_allclose(d["objective"], -np.square(d["solution"]).sum(1), rtol=1e-5, atol=1e-6)


def _filled(seed=0):
    archive = GridArchive(solution_dim=4, dims=[10, 10], ranges=[(-1, 1), (-1, 1)], qd_score_offset=-2.0)
    sched = Scheduler(archive, [GaussianEmitter(archive, sigma=0.2, x0=np.zeros(4), batch_size=16, seed=seed),
                                IsoLineEmitter(archive, x0=np.zeros(4), batch_size=16, seed=seed + 1)])
    for _ in range(30):
        x = sched.ask()
        sched.tell(-np.square(x).sum(1), x[:, :2])
    return archive


def test_data_stats_pandas_pickle_and_heatmap_agree():
    archive = _filled()
    st, d = archive.stats, archive.data()
    assert st.num_elites == len(archive) == len(d["index"]) > 10
    assert st.coverage == st.num_elites / 100
    np.testing.assert_allclose(st.qd_score, (d["objective"] + 2.0).sum(), rtol=1e-9)
    assert st.obj_max == d["objective"].max() and st.norm_qd_score == st.qd_score / 100
    assert np.array_equal(archive.data("objective"), d["objective"])
    sol, obj = archive.data(["solution", "objective"], return_type="tuple")
    assert np.array_equal(sol, d["solution"])
    df = archive.data(return_type="pandas")
    assert len(df) == st.num_elites and {"objective", "measures_0", "measures_1", "solution_3", "index"} <= set(df.columns)
    assert list(archive.as_pandas(include_solutions=False).columns) == ["index", "objective", "measures_0", "measures_1"]
    np.testing.assert_array_equal(archive.index_of(d["measures"]), d["index"])
    again = pickle.loads(pickle.dumps(archive))
    for k, v in again.data().items():
        np.testing.assert_array_equal(v, d[k])
    assert again.stats == st
    pic = grid_archive_heatmap(archive)
    assert pic.dtype == np.uint8 and pic.ndim == 3 and pic.shape[2] == 3


def test_heatmap_writes_the_png_where_asked(tmp_path):
    pic = grid_archive_heatmap(_filled(), path=tmp_path / "map.png")
    assert (tmp_path / "map.png").read_bytes()[:4] == b"\x89PNG" and pic.shape[0] > 100


def test_cvt_archive_and_cma_me_fill_and_pickle():
    archive = CVTArchive(solution_dim=6, centroids=50, ranges=[(-1, 1), (-1, 1)], seed=3, samples=5000)
    sched = Scheduler(archive, [EvolutionStrategyEmitter(archive, x0=np.zeros(6), sigma0=0.3, seed=s) for s in range(2)])
    for _ in range(40):
        x = sched.ask()
        sched.tell(-np.square(x).sum(1), x[:, :2])
    assert archive.stats.num_elites > 20
    assert pickle.loads(pickle.dumps(archive)).stats == archive.stats


def test_the_emitters_evolution_strategy_is_chosen_by_name():
    """pyribs' `es=` (its names: sep_cma_es, lm_ma_es, openai_es) and any Kestrel or evosax
    strategy name, with `es_kwargs` as the strategy's hyper-parameters; a bad name or knob is
    refused naming it."""
    for es, kind in [("sep_cma_es", "sep-cma-es"), ("lm_ma_es", "lm-ma-es"), ("openai_es", "open-es"),
                     ("LM_MA_ES", "lm-ma-es"), ("xnes", "xnes")]:
        archive = GridArchive(solution_dim=6, dims=[10, 10], ranges=[(-1, 1)] * 2)
        kw = {"es_kwargs": {"lr": 0.05}} if kind == "open-es" else {}
        emitters = [EvolutionStrategyEmitter(archive, x0=np.zeros(6), sigma0=0.3, es=es, batch_size=16, seed=s, **kw)
                    for s in range(2)]
        assert emitters[0].es == kind
        sched = Scheduler(archive, emitters)
        for _ in range(30):
            x = sched.ask()
            sched.tell(-np.square(x).sum(1), x[:, :2])
        assert archive.stats.num_elites > 10, (es, archive.stats)
    a = GridArchive(solution_dim=3, dims=[4, 4], ranges=[(-1, 1)] * 2)
    with pytest.raises(ValueError, match="strategy"):
        EvolutionStrategyEmitter(a, x0=np.zeros(3), sigma0=0.1, es="cma_ess")
    with pytest.raises(ValueError, match="params.lr"):
        EvolutionStrategyEmitter(a, x0=np.zeros(3), sigma0=0.1, es="cma_es", es_kwargs={"lr": 0.1})


def test_what_kestrel_does_not_implement_is_refused_by_name():
    a = GridArchive(solution_dim=3, dims=[4, 4], ranges=[(-1, 1)] * 2)
    with pytest.raises(ValueError, match="learning_rate"):
        GridArchive(solution_dim=3, dims=[4, 4], ranges=[(-1, 1)] * 2, learning_rate=0.01)
    with pytest.raises(ValueError, match="ranges"):
        GridArchive(solution_dim=3, dims=[4, 4], ranges=[(-1, 1)])
    with pytest.raises(ValueError, match="selection_rule = 'filter'"):
        EvolutionStrategyEmitter(a, x0=np.zeros(3), sigma0=0.1, selection_rule="filter")
    with pytest.raises(ValueError, match="ranker = 'imp'"):
        EvolutionStrategyEmitter(a, x0=np.zeros(3), sigma0=0.1, ranker="imp")
    with pytest.raises(ValueError, match="x0"):
        EvolutionStrategyEmitter(a, x0=np.zeros(4), sigma0=0.1)
    with pytest.raises(ValueError, match="bounds"):
        GaussianEmitter(a, sigma=0.1, x0=np.zeros(3), bounds=[(-1, 1)] * 3)
    e = GaussianEmitter(a, sigma=0.1, x0=np.zeros(3), batch_size=4, seed=0)
    s = Scheduler(a, [e])
    with pytest.raises(RuntimeError, match="before ask"):
        s.tell(np.zeros(4), np.zeros((4, 2)))
    s.ask()
    with pytest.raises(ValueError, match=r"objective: expected shape \(4,\)"):
        s.tell(np.zeros(5), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="twice"):
        Scheduler(a, [e, e])
    with pytest.raises(ValueError, match="fields"):
        a.data(["solution", "threshold"])
    with pytest.raises(ValueError, match="centroids"):
        CVTArchive(solution_dim=3, centroids=np.zeros((10, 2)), ranges=[(-1, 1)] * 2)
    with pytest.raises(ValueError, match="k_means_kwargs"):
        CVTArchive(solution_dim=3, centroids=10, ranges=[(-1, 1)] * 2, k_means_kwargs={"n_init": 2})


def test_non_square_grids_draw_every_cell_and_pyribs_keywords_are_handled(tmp_path):
    archive = GridArchive(solution_dim=2, dims=[5, 40], ranges=[(0, 1), (0, 1)])
    # One elite in the last row of the long axis: drawn (its colour is not the empty grey).
    archive.add(np.array([[0.1, 0.99]]), [1.0], np.array([[0.1, 0.99]]))
    empty = grid_archive_heatmap(GridArchive(solution_dim=2, dims=[5, 40], ranges=[(0, 1), (0, 1)]))
    assert not np.array_equal(grid_archive_heatmap(archive), empty)

    class Ax:
        def imshow(self, img):
            self.img = img

        def set_axis_off(self):
            self.off = True

    ax = Ax()
    pic = grid_archive_heatmap(archive, ax)
    assert ax.img is pic and ax.off
    with pytest.raises(ValueError, match="cmap"):
        grid_archive_heatmap(archive, cmap="viridis")


def test_non_finite_data_and_foreign_pickles_are_refused():
    archive = GridArchive(solution_dim=2, dims=[4, 4], ranges=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match=r"objective\[1\] = nan: not finite"):
        archive.add(np.zeros((2, 2)), [1.0, float("nan")], np.zeros((2, 2)))
    sched = Scheduler(archive, [GaussianEmitter(archive, sigma=0.1, x0=np.zeros(2), batch_size=3, seed=0)])
    x = sched.ask()
    with pytest.raises(ValueError, match=r"measures\[0\]"):
        sched.tell(np.zeros(3), np.full((3, 2), np.inf))
    blob = pickle.dumps(archive).replace(kestrel.__version__.encode(), b"9.9.9")
    with pytest.raises(ValueError, match="made by kestrel 9.9.9"):
        pickle.loads(blob)
    with pytest.raises(ValueError, match="nearest_neighbors"):
        CVTArchive(solution_dim=2, centroids=10, ranges=[(0, 1)] * 2, nearest_neighbors="brute_force")
    GridArchive(solution_dim=2, dims=[4, 4], ranges=[(0, 1)] * 2, learning_rate=1.0)  # pyribs' elitist archive
