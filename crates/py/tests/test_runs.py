"""Whole runs and MPPI from Python: the library's run folders, progress callbacks, metrics
as numpy arrays, the controller loop equal to `kestrel mppi run`."""

import numpy as np
import pytest

import kestrel


def test_mppi_controller_loop_equals_the_run(tmp_path):
    res = kestrel.mppi.run(system="pendulum", steps=30, seed=2, out_dir=tmp_path, threads=1)
    ctl = kestrel.mppi.Controller(system="pendulum", steps=30, seed=2)
    x = ctl.start_state()
    costs = []
    for _ in range(30):
        u = ctl.command(x)
        x, c = ctl.plant_step(x, u)
        costs.append(c)
    assert "cost" in res.metrics, list(res.metrics)
    np.testing.assert_array_equal(np.asarray(costs), res.metrics["cost"])
    with pytest.raises(ValueError, match=r"state: expected shape \(2,\)"):
        ctl.command(np.zeros(3))
    with pytest.raises(ValueError, match="system"):
        kestrel.mppi.Controller(system="pendulm")


def test_every_run_writes_its_folder_reports_progress_and_returns_metrics(tmp_path):
    ticks = []
    cb = lambda done, total, unit, status: ticks.append((done, total, unit))
    runs = [
        kestrel.evo.run(strategy="snes", problem="sphere", num_dims=4, generations=5, out_dir=tmp_path, progress=cb),
        kestrel.evo.qd(generations=3, out_dir=tmp_path, progress=cb),
        kestrel.mppi.tune({"generations": 2, "pop_size": 4, "run": {"steps": 10}}, out_dir=tmp_path, progress=cb),
        kestrel.allo.train(steps=20, eval_every=10, out_dir=tmp_path, threads=1, progress=cb),
        kestrel.hunt.train(epochs=2, out_dir=tmp_path, threads=1, progress=cb),
        kestrel.actdyn.run(steps=20, out_dir=tmp_path, progress=cb),
    ]
    for r in runs:
        assert (r.dir / "record.json").exists() and (r.dir / "config.toml").exists(), r.dir
        assert r.headline and r.metrics, r.dir
        assert all(isinstance(v, np.ndarray) for v in r.metrics.values())
    units = {u for _, _, u in ticks}
    assert len(ticks) >= 6 and {"generations"} <= units, units


def test_run_errors_name_the_field_and_make_no_folder(tmp_path):
    with pytest.raises(ValueError, match="generations"):
        kestrel.evo.run(generations="many", out_dir=tmp_path)
    with pytest.raises(ValueError, match="steps"):
        kestrel.allo.train(steps=-3, out_dir=tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_failing_progress_callback_raises_after_the_run(tmp_path):
    def cb(*a):
        raise KeyError("stop")

    with pytest.raises(KeyError):
        kestrel.evo.run(strategy="snes", problem="sphere", num_dims=2, generations=3, out_dir=tmp_path, progress=cb)
