"""Whole runs and MPPI from Python: the library's run folders, progress callbacks, metrics
as numpy arrays, the controller loop equal to `kestrel mppi run`."""

import json
import pathlib
import tomllib

import numpy as np
import pytest

import kestrel
from conftest import require


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


def _basic(x, u, t):
    return x + 0.1 * u  # jax-mppi's basic system, u broadcast over both states


def _basic_cost(x, u, t):
    return x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1] + 0.01 * u[:, 0] * u[:, 0]


def _basic_terminal(x):
    return 10.0 * (x[:, 0] * x[:, 0] + x[:, 1] * x[:, 1])


def test_callback_dynamics_equal_the_built_in_system():
    calls = []

    def dyn(x, u, t):
        calls.append((x.shape, u.shape, t))
        return _basic(x, u, t)

    ours = kestrel.mppi.Controller.from_callbacks(dyn, _basic_cost, terminal_cost=_basic_terminal, nx=2, nu=1,
                                                  seed=4, num_samples=50, horizon=15, **{"lambda": 5.0})
    ref = kestrel.mppi.Controller(system="basic", seed=4)
    x = ref.start_state()
    for _ in range(20):
        u1, u2 = ours.command(x), ref.command(x)
        np.testing.assert_array_equal(u1, u2)
        x, _ = ref.plant_step(x, u2)
    # once per horizon step per command, with all 50 samples
    assert len(calls) == 20 * 15 and calls[0] == ((50, 2), (50, 1), 0) and calls[14][2] == 14


def test_callback_errors_propagate_and_leave_the_plan_alone():
    bad_shape = kestrel.mppi.Controller.from_callbacks(lambda x, u, t: x[:, :1], _basic_cost, nx=2, nu=1)
    with pytest.raises(ValueError, match=r"dynamics: expected shape \(100, 2\)"):
        bad_shape.command(np.zeros(2))
    state = {"n": 0}

    def flaky(x, u, t):
        state["n"] += 1
        if state["n"] == 3:
            raise ZeroDivisionError("boom")
        return _basic(x, u, t)

    c = kestrel.mppi.Controller.from_callbacks(flaky, _basic_cost, nx=2, nu=1, horizon=4)
    before = c.plan.copy()
    with pytest.raises(ZeroDivisionError):
        c.command(np.zeros(2))
    np.testing.assert_array_equal(c.plan, before)
    c.command(np.zeros(2))
    with pytest.raises(ValueError, match="rollout_samples"):
        kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, nx=2, nu=1, rollout_samples=2)
    with pytest.raises(TypeError, match="callable"):
        kestrel.mppi.Controller.from_callbacks(3, _basic_cost, nx=2, nu=1)


def test_non_finite_callback_results_are_errors_not_a_quiet_zero_action():
    """Issue 57: NaN dynamics or costs made `command()` return [0.] silently."""
    def nan_dyn(x, u, t):
        out = _basic(x, u, t)
        if t == 2:
            out[3, 1] = np.nan
        return out

    c = kestrel.mppi.Controller.from_callbacks(nan_dyn, _basic_cost, nx=2, nu=1, horizon=4)
    before = c.plan.copy()
    with pytest.raises(ValueError, match=r"dynamics returned NaN at step t = 2, row \[3, 1\]: expected finite"):
        c.command(np.zeros(2))
    np.testing.assert_array_equal(c.plan, before)
    nan_cost = kestrel.mppi.Controller.from_callbacks(_basic, lambda x, u, t: np.full(len(x), np.nan), nx=2, nu=1)
    with pytest.raises(ValueError, match=r"running_cost returned NaN at step t = 0, row \[0\]"):
        nan_cost.command(np.zeros(2))
    neg = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, terminal_cost=lambda x: -np.inf * np.ones(len(x)),
                                                 nx=2, nu=1)
    with pytest.raises(ValueError, match=r"terminal_cost returned -inf at the horizon's end"):
        neg.command(np.zeros(2))

    # +inf is a sample given no weight (an infeasible rollout), as in MPPI's papers.
    def walls(x, u, t):
        cost = _basic_cost(x, u, t)
        cost[::2] = np.inf
        return cost

    ok = kestrel.mppi.Controller.from_callbacks(_basic, walls, nx=2, nu=1, seed=1)
    assert np.isfinite(ok.command(np.ones(2))).all()


def test_resume_continues_the_run_folder(tmp_path):
    first = kestrel.allo.train(steps=20, eval_every=10, checkpoint_every=10, out_dir=tmp_path, threads=1)
    again = kestrel.allo.train(steps=40, eval_every=10, checkpoint_every=10, out_dir=tmp_path, threads=1,
                               resume=first.dir)
    assert again.dir == first.dir
    assert first.metrics["global_step"][-1] == 20 and again.metrics["global_step"][-1] == 40
    with pytest.raises(RuntimeError, match="only steps may change on resume"):
        kestrel.allo.train(steps=60, seed=9, out_dir=tmp_path, resume=first.dir)


def test_a_resume_verifies_the_checkpoint_as_the_cli_does(tmp_path):
    import pathlib
    import shutil

    first = kestrel.allo.train(steps=20, eval_every=10, checkpoint_every=10, out_dir=tmp_path, threads=1)
    edited = pathlib.Path(tmp_path) / "edited"
    shutil.copytree(first.dir, edited)
    cfg = edited / "config.toml"
    cfg.write_text(cfg.read_text().replace("seed = 0", "seed = 3"))
    with pytest.raises(ValueError, match=r"not the one this checkpoint was written under: seed = 3 \(the checkpoint's: 0\)"):
        kestrel.allo.train(steps=40, resume=edited)
    # The newest set corrupted: the previous one verifies, and the record says why.
    damaged = pathlib.Path(tmp_path) / "damaged"
    shutil.copytree(first.dir, damaged)
    enc = damaged / "checkpoint" / "encoder.safetensors"
    data = bytearray(enc.read_bytes())
    data[-1] ^= 1
    enc.write_bytes(bytes(data))
    again = kestrel.allo.train(steps=40, resume=damaged)
    assert again.metrics["global_step"][-1] == 40
    import json
    notes = json.loads((damaged / "record.json").read_text())["launches"][-1]["notes"]
    assert "encoder.safetensors" in notes[0] and "checkpoint.prev (step 10)" in notes[0]


def test_local_sweep_from_python_skips_finished_runs_and_tabulates(tmp_path):
    import kestrel.dist as kd  # Ray is not needed for the local engine

    spec = {"kind": "evo", "name": "s", "seeds": [1, 2],
            "base": {"problem": "sphere", "num_dims": 4, "generations": 15}, "grid": {"strategy": ["snes", "cma-es"]}}
    seen = []
    a = kd.sweep(spec, out_dir=tmp_path, engine="local", progress=lambda d, t, c, o: seen.append((d, t, c, o)))
    assert [s[3] for s in seen] == ["ran"] * 4 and seen[-1][:2] == (4, 4)
    row = a.table["rows"][1]
    assert row["label"] == "strategy=cma-es" and row["stats"]["best_fitness"]["n"] == 2
    want = [kestrel.evo.run(problem="sphere", num_dims=4, generations=15, strategy="cma-es", seed=s,
                            out_dir=tmp_path / "plain").summary["best_fitness"] for s in (1, 2)]
    assert row["stats"]["best_fitness"]["mean"] == sum(want) / 2
    assert row["stats"]["best_fitness"]["min"] == min(want)
    b = kd.sweep(spec, out_dir=tmp_path, engine="local")
    assert all(o[0] == "skipped" for o in b.cells.values()) and b.table == a.table
    with pytest.raises(ValueError, match="num_dims"):
        kd.sweep({**spec, "name": "t", "base": {"num_dims": 0}}, out_dir=tmp_path, engine="local")
    assert not (tmp_path / "t").exists()


def test_the_allo_table1_tool_runs_the_twelve_maps_through_kestrel_sweep(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    maps = root.parent / "shared" / "data" / "laplacian-grids"
    cli = root / "target" / "debug" / "kestrel"
    require(maps.is_dir(), f"the ALLO grid maps are absent: {maps}")
    require(cli.exists(), f"{cli} is not built (tools/test-all builds it)")
    args = [sys.executable, str(root / "tools" / "sweeps" / "allo_table1"), "--seeds", "1", "--steps", "4",
            "--samples", "500", "--kestrel", str(cli), "--out-dir", str(tmp_path), "--threads", "1"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    table = (tmp_path / "allo-table1-4" / "table1.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| Grid")]
    assert len(rows) == 12 and "| GridRoom-64 |" in table and "0.9917 (0.0059)" in table, table
    again = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert again.stdout.count("finished before, skipped") == 12


def test_an_external_evaluator_gives_the_run_and_its_errors_stop_it(tmp_path):
    import json

    from kestrel import _kestrel

    cfg = json.dumps({"problem": "rastrigin", "num_dims": 6, "generations": 8, "seed": 2, "rotate": True})
    p = _kestrel.EvoProblem.from_run("evo", cfg)
    calls = []

    def ev(x, key, first_row):
        calls.append((x.shape, first_row))
        return p.evaluate(x, key, first_row)

    a = kestrel._runs.run("evo", json.loads(cfg), out_dir=tmp_path / "a")
    b = kestrel._runs.launch(lambda c, o, **kw: _kestrel.run_evaluated("evo", c, o, **kw), json.loads(cfg),
                             tmp_path / "b", evaluate=ev)
    np.testing.assert_array_equal(a.metrics["best"], b.metrics["best"])
    assert len(calls) == 8 and calls[0][1] == 0
    for bad, err, msg in ((lambda x, k, r: 1 / 0, ZeroDivisionError, "division"),
                          (lambda x, k, r: np.zeros(3, np.float32), ValueError, r"evaluate: expected shape \(\d+,\)"),
                          (lambda x, k, r: [0.0] * len(x), ValueError, "float32 array")):
        with pytest.raises(err, match=msg):
            _kestrel.run_evaluated("evo", cfg, str(tmp_path / "c"), bad)
    records = [json.loads(r.read_text()) for r in (tmp_path / "c").glob("*/record.json")]
    assert len(records) == 3 and all(r["launches"][-1]["status"] == "failed" for r in records)
    assert "the evaluator failed" in records[0]["launches"][-1]["error"]
    # The generations' keys are the registry's (the run's), and kinds without a population
    # are refused naming the kinds with one.
    assert p.generation_key(3).raw == kestrel.Key(2).fold_in(4).fold_in(1).raw
    with pytest.raises(ValueError, match=r"`qd` has no population.*evo, mppi-tune"):
        _kestrel.EvoProblem.from_run("qd", "{}")
    with pytest.raises(ValueError, match=r"`allo` has no population"):
        _kestrel.run_evaluated("allo", "{}", str(tmp_path / "d"), lambda x, k, r: x[:, 0])
    with pytest.raises(ValueError, match="unknown run kind"):
        _kestrel.EvoProblem.from_run("ev", "{}")
    assert not (tmp_path / "d").exists()


def test_mppi_f32_lanes_from_python(tmp_path):
    # The f32 precision mode through the controller equals `kestrel mppi run` with the same key,
    # and callbacks (f64 only) refuse it with the library's message.
    res = kestrel.mppi.run(system="pendulum", steps=20, seed=3, out_dir=tmp_path, threads=2,
                           mppi={"precision": "f32"})
    ctl = kestrel.mppi.Controller(system="pendulum", steps=20, seed=3, mppi={"precision": "f32"})
    assert 'precision = "f32"' in ctl.config_toml
    x, costs = ctl.start_state(), []
    for _ in range(20):
        x, c = ctl.plant_step(x, ctl.command(x))
        costs.append(c)
    np.testing.assert_array_equal(np.asarray(costs), res.metrics["cost"])
    with pytest.raises(ValueError, match="precision"):
        kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, nx=2, nu=1, precision="f32")
    with pytest.raises(ValueError, match="precision"):
        kestrel.mppi.Controller(system="pendulum", mppi={"precision": "f16"})


def test_mppi_tune_reads_its_config_over_the_run_systems_defaults(tmp_path):
    # A pendulum tuning run gets the pendulum's one-control noise (the defaults of the run's
    # system, as `kestrel mppi tune` loads it), here and in the tuner's problem.
    r = kestrel.mppi.tune({"generations": 2, "pop_size": 4, "run": {"system": "pendulum", "steps": 10}},
                          out_dir=tmp_path)
    assert 'system = "pendulum"' in (r.dir / "config.toml").read_text()
    p = kestrel._kestrel.EvoProblem.from_run("mppi-tune", '{"run": {"system": "pendulum", "steps": 10, "seed": 4}}')
    assert p.num_dims == 2  # lambda and the one sigma
    assert p.generation_key(0).raw == p.generation_key(7).raw == kestrel.Key(4).fold_in(0).raw


def test_a_run_past_the_memory_budget_is_refused_before_its_folder(tmp_path):
    # The size that aborted the process (8 TiB for iCEM's pink-noise matrix) is a ValueError
    # naming the field and the estimate, and nothing is written.
    with pytest.raises(ValueError, match=r"policy\.horizon.*GiB"):
        kestrel.actdyn.run(preset="e2", out_dir=tmp_path, policy={"horizon": 1048576})
    with pytest.raises(ValueError, match="agent.capacity"):
        kestrel.hunt.train(out_dir=tmp_path, agent={"capacity": 30_000_000})
    assert list(pathlib.Path(tmp_path).iterdir()) == []


def test_actdyn_composite_and_goal_objectives_from_python(tmp_path):
    # The reference's CompositeMetric (D-optimality 0.1 + action cost 5) and GoalDistanceMetric,
    # reached with the config's own keys.
    terms = [{"metric": "d-optimality", "weight": 0.1}, {"metric": "action-cost", "weight": 5.0}]
    r = kestrel.actdyn.run(preset="e2", steps=25, out_dir=tmp_path, progress=False,
                           policy={"metric": "composite", "terms": terms, "num_samples": 12, "num_elites": 4, "iterations": 2})
    assert 'metric = "composite"' in (r.dir / "config.toml").read_text()
    r = kestrel.actdyn.run(preset="e2", steps=25, out_dir=tmp_path, progress=False,
                           policy={"metric": "goal-distance", "goal": [1.0, -0.5], "num_samples": 12, "num_elites": 4, "iterations": 2})
    assert "goal = [1.0, -0.5]" in (r.dir / "config.toml").read_text()
    with pytest.raises(ValueError, match=r"policy\.terms\[0\]\.metric"):
        kestrel.actdyn.run(preset="e2", out_dir=tmp_path, policy={"metric": "composite", "terms": [{"metric": "composite", "weight": 1.0}]})


def _record(folder):
    import json

    return json.loads((pathlib.Path(folder) / "record.json").read_text())


def _only_folder(out):
    (d,) = [p for p in pathlib.Path(out).iterdir() if p.is_dir()]
    return d


def test_ctrl_c_stops_a_run_within_a_second_and_it_resumes(tmp_path):
    import os
    import signal
    import threading
    import time

    # A real SIGINT to this process half a second in, as Ctrl-C in a terminal or a notebook's
    # interrupt button sends: the run stops at its next tick, KeyboardInterrupt is raised here.
    # Python's own handler is installed for the test: a process started in the background by
    # a non-interactive shell (CI) inherits SIGINT ignored, and Python then never raises it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    t0 = time.monotonic()
    timer.start()
    try:
        # Long enough (tens of seconds) that finishing would fail the timing below, short
        # enough that a broken interrupt cannot hang the suite.
        with pytest.raises(KeyboardInterrupt):
            kestrel.allo.train(steps=40_000, num_samples=20_000, eval_every=10**6, checkpoint_every=10**6,
                               out_dir=tmp_path, threads=1, progress=None)
    finally:
        elapsed = time.monotonic() - t0
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert elapsed < 1.5, elapsed
    folder = _only_folder(tmp_path)
    launch = _record(folder)["launches"][-1]
    assert launch["status"] == "interrupted" and "KeyboardInterrupt" in launch["error"], launch
    # The stopped step's state was saved: a resume goes on from it to the (smaller) new end.
    step = json.loads((folder / "checkpoint" / "manifest.json").read_text())["step"]
    assert 0 < step < 40_000
    res = kestrel.allo.train(resume=folder, steps=step + 5, eval_every=10**6, checkpoint_every=10**6,
                             threads=1, progress=None)
    assert res.summary["steps"] == step + 5
    assert [l["status"] for l in _record(folder)["launches"]] == ["interrupted", "ok"]


def test_an_exception_in_the_callback_stops_the_run_at_once_and_is_raised(tmp_path):
    import time

    seen = []

    def cb(done, total, unit, status):
        seen.append(done)
        if len(seen) == 3:
            raise KeyError("stop here")

    t0 = time.monotonic()
    with pytest.raises(KeyError, match="stop here"):
        kestrel.evo.run(strategy="snes", problem="sphere", num_dims=2, generations=10**7, out_dir=tmp_path, progress=cb)
    assert time.monotonic() - t0 < 5 and len(seen) == 3
    launch = _record(_only_folder(tmp_path))["launches"][-1]
    assert launch["status"] == "interrupted" and "KeyError" in launch["error"], launch


def test_progress_true_prints_a_plain_line_off_a_terminal(tmp_path, capsys):
    kestrel.evo.run(strategy="snes", problem="sphere", num_dims=2, generations=5, out_dir=tmp_path, progress=True)
    err = capsys.readouterr().err
    assert "evo: 5/5 generations (100%)" in err, err
    with pytest.raises(TypeError, match="progress"):
        kestrel.evo.run(generations=2, out_dir=tmp_path, progress="yes")


def test_a_run_result_prints_in_a_few_lines_and_converts_to_pandas(tmp_path):
    res = kestrel.evo.run(strategy="snes", problem="sphere", num_dims=2, generations=300, out_dir=tmp_path, progress=None)
    text = repr(res)
    rows = len(res.metrics["best"])
    assert text.count("\n") <= 3 and len(text) < 600 and f"{rows} rows" in text, text
    html = res._repr_html_()
    assert "<table>" in html and "best" in html
    df = res.to_pandas()
    assert list(df.columns) == list(res.metrics) and len(df) == rows > 10
    np.testing.assert_array_equal(df["best"].to_numpy(), res.metrics["best"])


def test_progress_true_is_a_tqdm_bar_on_a_terminal(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    kestrel.evo.run(strategy="snes", problem="rastrigin", num_dims=2, generations=7, out_dir=tmp_path)
    err = capsys.readouterr().err
    assert "evo: 100%" in err and "7/7" in err and "generations" in err, err


def _scalars(log_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(log_dir), size_guidance={"scalars": 0})
    ea.Reload()
    return {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}


def test_tensorboard_gets_the_metrics_names(tmp_path):
    res = kestrel.evo.run(strategy="snes", problem="rastrigin", num_dims=8, generations=300, out_dir=tmp_path,
                          logger="tensorboard", progress=None)
    got = _scalars(res.dir / "tensorboard")
    numeric = {k for k, v in res.metrics.items() if v.dtype != object and k != "global_step"}
    assert numeric <= set(got), (numeric, set(got))
    steps = res.metrics["global_step"].astype(int).tolist()
    assert [s for s, _ in got["best"]] == steps
    np.testing.assert_allclose([v for _, v in got["best"]], res.metrics["best"], rtol=1e-6)


def test_tensorboard_is_live_during_the_run(tmp_path):
    counts = []

    def cb(done, total, unit, status):
        if done in (100, 250):
            import time
            time.sleep(0.6)
            (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
            if (folder / "tensorboard").exists():
                # The logger writes at the next tick: count on the tick after the pause.
                counts.append(folder)
        if done in (101, 251) and counts:
            counts.append(len(_scalars(counts[0] / "tensorboard").get("best", [])))

    kestrel.evo.run(strategy="snes", problem="rastrigin", num_dims=8, generations=300, out_dir=tmp_path,
                    logger="tensorboard", progress=cb)
    live = [c for c in counts if isinstance(c, int)]
    assert len(live) == 2 and 0 < live[0] < live[1] < 300, counts


def test_optimize_logs_each_generation_and_bad_loggers_are_refused(tmp_path):
    es = kestrel.evo.SNES(4, seed=0)
    es.optimize(lambda x: (x.astype(np.float64) ** 2).sum(1), generations=20, logger="tensorboard", log_dir=tmp_path)
    (run,) = list(tmp_path.glob("snes-4d-*/tensorboard"))
    got = _scalars(run)
    assert {"best", "best_in_generation", "sigma", "nonfinite", "evals"} <= set(got)
    assert [s for s, _ in got["best"]] == list(range(1, 21))
    with pytest.raises(ValueError, match="logger = 'tensorbord'"):
        kestrel.evo.run(generations=2, out_dir=tmp_path, logger="tensorbord")
    with pytest.raises(TypeError, match="logger"):
        es.optimize(lambda x: (x ** 2).sum(1), generations=1, logger=42)
    import logging

    with pytest.raises(TypeError, match="logger"):  # refused before the run: no folder
        kestrel.evo.run(generations=2, out_dir=tmp_path / "none", logger=logging.getLogger("x"))
    assert not (tmp_path / "none").exists()


def test_a_resumed_run_logs_only_the_steps_after_its_checkpoint(tmp_path):
    small = dict(map="builtin:rooms-2-5", num_samples=2000, learner={"batch_size": 32, "num_eigenvectors": 3},
                 eval_every=10, checkpoint_every=20)
    seen = []

    class Rec:
        def add_scalar(self, tag, value, step):
            if tag == "loss":
                seen.append(step)

    first = kestrel.allo.train(steps=40, out_dir=tmp_path, progress=None, threads=1, **small)
    kestrel.allo.train(resume=first.dir, steps=60, progress=None, threads=1, logger=Rec())
    assert seen and min(seen) > 40 and max(seen) == 60, seen


def test_wandb_gets_the_metrics_under_their_names(tmp_path, monkeypatch):
    import wandb

    logged, made = [], []

    class FakeRun:
        def log(self, values, step):
            logged.append((step, values))

        def finish(self):
            made.append("finished")

    def init(**kw):
        made.append(kw)
        return FakeRun()

    # What the adapter hands wandb (names, steps, the run's name and folder)...
    monkeypatch.setattr(wandb, "init", init)
    res = kestrel.evo.run(strategy="snes", problem="rastrigin", num_dims=4, generations=40, out_dir=tmp_path,
                          logger="wandb", progress=None)
    assert made[0]["name"] == res.dir.name and made[0]["dir"] == str(res.dir) and made[-1] == "finished"
    assert [s for s, _ in logged] == res.metrics["global_step"].astype(int).tolist()
    np.testing.assert_allclose([v["best"] for _, v in logged], res.metrics["best"], rtol=1e-6)
    monkeypatch.undo()
    # ...and the real wandb, offline, writes its run file beside the run's, holding every
    # metrics line under its step (read back record by record).
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    res = kestrel.evo.run(strategy="snes", problem="rastrigin", num_dims=4, generations=10, out_dir=tmp_path,
                          logger="wandb", progress=None)
    (run_file,) = list((res.dir / "wandb").glob("offline-run-*/run-*.wandb"))
    rows = {row["_step"]: row for row in _wandb_history(run_file)}
    assert sorted(rows) == res.metrics["global_step"].astype(int).tolist()
    np.testing.assert_allclose([rows[s]["best"] for s in sorted(rows)], res.metrics["best"], rtol=1e-6)
    np.testing.assert_allclose([rows[s]["sigma"] for s in sorted(rows)], res.metrics["sigma"], rtol=1e-6)


def _wandb_history(path):
    """The history rows of an offline `.wandb` file: W&B's log format (a 7-byte file header,
    then 32 KiB blocks of records, each a 7-byte header (CRC, length, type: 1 whole, 2 first,
    3 middle, 4 last) and a fragment of a protobuf `Record`)."""
    import struct

    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    pos, buf, rows = 7, b"", []
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        _crc, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if left < 7 or (kind == 0 and n == 0):
            pos += left  # the block's zero padding
            continue
        buf += data[pos + 7:pos + 7 + n]
        pos += 7 + n
        if kind in (1, 4):
            rec = pb.Record.FromString(buf)
            buf = b""
            if rec.HasField("history"):
                rows.append({i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in rec.history.item})
    return rows


def test_the_treasurehunt_mp_preset_from_python(tmp_path):
    cfg = kestrel.config("hunt", preset="treasurehunt_mp")
    assert cfg["env"]["num_agents"] == 5 and cfg["env"]["items"] == ["gem"] and cfg["agent"]["batch_size"] == 256
    res = kestrel.hunt.train(preset="treasurehunt_mp", epochs=2, agent={"layer": 16, "batch_size": 8},
                             record_every=0, out_dir=tmp_path, progress=None)
    assert len(res.metrics["total_reward"]) == 2
    # The 0.1 spellings of the learner's keys still run, with a FutureWarning naming the new.
    with pytest.warns(FutureWarning, match=r"`layer` is now `agent\.layer`"):
        old = kestrel.hunt.train(preset="treasurehunt_mp", epochs=2, layer=16, agent={"batch_size": 8},
                                 record_every=0, out_dir=tmp_path, progress=None)
    assert old.metrics["total_reward"].tolist() == res.metrics["total_reward"].tolist()
    with pytest.raises(ValueError, match="treasurehunt_mp"):
        kestrel.hunt.train(preset="treasurehunt", epochs=2, out_dir=tmp_path)


def test_allo_and_asymexps_allo_run_from_python_with_their_own_defaults(tmp_path):
    """The paper's ALLO and GGDO (`train`) and asymexp's thresholded and final versions
    (`asymexp`), each with its own defaults; asymexp's learner keys nest under `learner`; what
    does not apply is refused by name before any folder exists, and a 0.1 `profile="asymexp"`
    call says what to write instead."""
    shared = dict(out_dir=tmp_path, threads=1, progress=None)
    paper = kestrel.allo.train(steps=4, num_samples=2000, learner={"batch_size": 32}, eval_every=2, **shared)
    ggdo = kestrel.allo.train(learner={"method": "ggdo", "batch_size": 32}, steps=4, num_samples=2000, eval_every=2,
                              **shared)
    small = dict(num_samples=20 * 40, steps=10, eval_every=5, log_every=5, num_envs=20, max_episode_length=40)
    thr = kestrel.allo.asymexp(**small, learner={"batch_size": 32, "hidden": [16, 16]}, **shared)
    fin = kestrel.allo.asymexp(**small, learner={"version": "final", "batch_size": 32, "hidden": [16, 16]},
                               sampling="within-episode", truth="fixed", **shared)
    cfg = (thr.dir / "config.toml").read_text()
    # The script's defaults where nothing was given: d 10, lr 3e-4, discount 0.2, duals -2.
    for key in ["num_eigenvectors = 10", "lr = 0.0003", "discount = 0.2", "duals_init = -2.0", "[learner]"]:
        assert key in cfg, key
    assert "num_eigenvectors = 11" in (paper.dir / "config.toml").read_text()
    for r in (thr, fin):
        for f in ["eigenvectors.png", "learning_curves.png", "dual_evolution.png", "cosine.png"]:
            assert (r.dir / f).exists(), (r.dir, f)
        assert {"allo", "dual_0", "grad_norm", "cosine_similarity"} <= set(r.metrics), list(r.metrics)
        assert r.metrics["allo"].shape == (2,)
    assert "cosine_sim_avg_simple" in fin.metrics and "cosine_sim_avg_simple" not in thr.metrics
    assert paper.summary["cosine_similarity"] >= 0 and ggdo.summary["cosine_similarity"] >= 0
    before = set(tmp_path.iterdir())
    for run, kw, field in [
        (kestrel.allo.asymexp, dict(method="ggdo"), "method"),
        (kestrel.allo.asymexp, dict(learner={"version": "final", "threshold": 0.1}), "learner.threshold"),
        (kestrel.allo.asymexp, dict(num_envz=3), "num_envz"),
        (kestrel.allo.asymexp, dict(num_samples=1001), "num_samples"),
        (kestrel.allo.train, dict(profile="asymexp"), "allo-asymexp"),
        (kestrel.allo.train, dict(asymexp={"version": "final"}), "kestrel.allo.asymexp"),
    ]:
        with pytest.raises(ValueError, match=field):
            run(**kw, **shared)
    assert set(tmp_path.iterdir()) == before


def test_tuning_averages_each_candidate_over_several_starts(tmp_path):
    """`starts` (issue 32 item 3): listed states and keyed random ones; a candidate's cost is
    their mean, the same starts for every candidate; bad starts named before any folder."""
    base = {"generations": 2, "pop_size": 4, "run": {"steps": 10}}
    one = kestrel.mppi.tune(base, out_dir=tmp_path / "one", progress=False)
    listed = kestrel.mppi.tune(base, starts={"states": [[-3.0, -2.0]]}, out_dir=tmp_path / "listed", progress=False)
    many = kestrel.mppi.tune(base, starts={"states": [[-1.0, -1.5]], "random": 3, "spread": [0.3]},
                             out_dir=tmp_path / "many", progress=False)
    assert one.summary["num_starts"] == 1 and many.summary["num_starts"] == 4
    assert kestrel.config("mppi-tune")["starts"] == {"states": [], "random": 0, "spread": []}
    assert "random = 3" in (many.dir / "config.toml").read_text()
    assert np.isfinite(many.summary["start_cost"]) and many.summary["start_cost"] != one.summary["start_cost"]
    # Nav2d starts at (-3, -2): listing it is the default run.
    assert kestrel.mppi.Controller(system="nav2d").start_state().tolist() == [-3.0, -2.0]
    assert listed.summary["start_cost"] == one.summary["start_cost"]
    bad = tmp_path / "bad"
    with pytest.raises(ValueError, match=r"starts\.spread"):
        kestrel.mppi.tune(base, starts={"random": 2}, out_dir=bad, progress=False)
    with pytest.raises(ValueError, match=r"starts\.states\[0\]"):
        kestrel.mppi.qd(starts={"states": [[0.0, 1.0, 2.0]]}, out_dir=bad, progress=False)
    assert not bad.exists()


def test_tuning_a_python_system_runs_its_episodes_in_lockstep_and_equals_the_built_in(tmp_path):
    """Issue 32 item 3: `kestrel.mppi.tune(dynamics=..., running_cost=...)` over jax-mppi's basic
    system written in numpy gives the built-in system's tuning exactly (the same candidates,
    costs and best knobs), calling the dynamics once per step for every candidate and sample."""
    cfg = {"generations": 3, "pop_size": 6, "knobs": ["lambda", "sigma", "horizon"], "run": {"steps": 8, "seed": 3}}
    builtin = kestrel.mppi.tune(cfg, run={"system": "basic"}, out_dir=tmp_path / "rust", progress=None)
    shapes = []

    def dyn(x, u, t):
        shapes.append(x.shape[0])
        return _basic(x, u, t)

    mppi = {"num_samples": 50, "horizon": 15, "lambda": 5.0}
    ours = kestrel.mppi.tune(cfg, dynamics=dyn, running_cost=_basic_cost, terminal_cost=_basic_terminal, nx=2, nu=1,
                             run={"mppi": mppi}, starts={"states": [[1.0, -0.5]]}, out_dir=tmp_path / "py",
                             progress=None)
    for k in ("best", "best_in_generation", "sigma"):
        np.testing.assert_array_equal(ours.metrics[k], builtin.metrics[k], err_msg=k)
    for k in ("best_cost", "best_lambda", "best_horizon", "best_noise_sigma"):
        assert ours.summary[k] == builtin.summary[k], k
    assert ours.summary["start_cost"] == pytest.approx(builtin.summary["start_cost"], rel=1e-6)
    # The first rollout call of a generation batches every candidate's 50 samples.
    assert max(shapes) == 6 * 50 and "python" in ours.dir.name
    assert "[callbacks]" in (ours.dir / "config.toml").read_text()
    best = tomllib.loads((ours.dir / "best.toml").read_text())
    assert best["lambda"] == ours.summary["best_lambda"]


def test_tuning_a_python_system_refuses_and_raises_as_it_should(tmp_path):
    dyn = lambda x, u, t: x + 0.1 * u
    cost = lambda x, u, t: (x * x).sum(axis=1)
    with pytest.raises(ValueError, match=r"starts\.states"):
        kestrel.mppi.tune(dynamics=dyn, running_cost=cost, nx=2, nu=1, out_dir=tmp_path / "a", progress=None)
    with pytest.raises(TypeError, match="nu"):
        kestrel.mppi.tune(dynamics=dyn, running_cost=cost, nx=2, out_dir=tmp_path / "a", progress=None)
    with pytest.raises(TypeError, match="running_cost"):
        kestrel.mppi.tune(dynamics=dyn, running_cost=3, nx=2, nu=1, out_dir=tmp_path / "a", progress=None)
    with pytest.raises(ValueError, match="run.controller"):
        kestrel.mppi.tune(dynamics=dyn, running_cost=cost, nx=2, nu=1, starts={"states": [[0.0, 1.0]]},
                          run={"controller": "smppi"}, out_dir=tmp_path / "a", progress=None)
    assert not (tmp_path / "a").exists()
    small = {"generations": 2, "pop_size": 4, "run": {"steps": 3, "mppi": {"num_samples": 8, "horizon": 4}},
             "starts": {"states": [[0.0, 1.0]]}}
    with pytest.raises(ValueError, match=r"dynamics: expected shape \(8, 2\), got \[8, 1\]"):
        kestrel.mppi.tune(small, dynamics=lambda x, u, t: x[:, :1], running_cost=cost, nx=2, nu=1,
                          out_dir=tmp_path / "b", progress=None)

    def boom(x, u, t):
        raise ZeroDivisionError("the user's bug")

    with pytest.raises(ZeroDivisionError, match="the user's bug"):
        kestrel.mppi.tune(small, dynamics=boom, running_cost=cost, nx=2, nu=1, out_dir=tmp_path / "c", progress=None)
    record = json.loads(next((tmp_path / "c").glob("*/record.json")).read_text())
    assert record["launches"][-1]["status"] == "failed" and "ZeroDivisionError" in record["launches"][-1]["error"], record


def test_specific_action_samplers_as_pytorch_mppi_has_them():
    """pytorch-mppi's `SpecificActionSampler` (golden in Rust): a callback returning sequences
    before every command, or fixed `specific_actions`; the two agree and differ from plain
    MPPI, the sampler sees the state, and bad shapes are named."""
    kw = dict(nx=2, nu=1, terminal_cost=_basic_terminal, seed=2, num_samples=20, horizon=6, **{"lambda": 0.01})
    fixed = np.full((1, 6, 1), -3.0)
    a = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, specific_action_sampler=lambda x: fixed, **kw)
    b = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, specific_actions=[[-3.0] * 6], **kw)
    plain = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, **kw)
    x = np.array([1.0, -0.5])
    ua, ub, up = a.command(x), b.command(x), plain.command(x)
    assert ua.tolist() == ub.tolist() and ua.tolist() != up.tolist()
    # Seen from the state: the sampler gets it.
    seen = []
    c = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, specific_action_sampler=lambda s: seen.append(s.copy()) or fixed, **kw)
    c.command(x)
    assert np.array_equal(seen[0], x)
    bad = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, specific_action_sampler=lambda s: np.zeros((1, 5, 1)), **kw)
    with pytest.raises(ValueError, match=r"specific_action_sampler: expected a float64 array of shape \(n, 6, 1\)"):
        bad.command(x)
    many = kestrel.mppi.Controller.from_callbacks(_basic, _basic_cost, specific_action_sampler=lambda s: np.zeros((21, 6, 1)), **kw)
    with pytest.raises(ValueError, match="at most num_samples"):
        many.command(x)
    with pytest.raises(ValueError, match=r"specific_actions\[0\]"):
        kestrel.mppi.Controller(system="basic", mppi={"specific_actions": [[0.0] * 3]})


def test_actdyn_model_step_a_multiple_of_the_environments(tmp_path):
    r = kestrel.actdyn.run(steps=25, model={"dt": 0.2}, env={"dt": 0.1}, eval={"episodes": 2, "steps": 20},
                           out_dir=tmp_path, progress=None)
    assert "dt = 0.2" in (r.dir / "config.toml").read_text()
    with pytest.raises(ValueError, match=r"model\.dt.*whole multiple"):
        kestrel.actdyn.run(steps=5, model={"dt": 0.15}, out_dir=tmp_path / "bad", progress=None)
    assert not (tmp_path / "bad").exists()


def test_actdyn_action_encoders_from_python(tmp_path):
    """The reference's `MlpActionEncoder` (and `LinearActionEncoder`): trained with the model,
    planned through (without the state); a state-dependent one is refused with planning."""
    enc = {"type": "mlp", "hidden": [16]}
    assert kestrel.config("actdyn", model={"action_encoder": enc})["model"]["action_encoder"] == {**enc, "state_dependent": False}
    r = kestrel.actdyn.run(preset="e2", steps=24, model={"action_encoder": enc},
                           policy={"num_samples": 16, "iterations": 2, "horizon": 5},
                           eval={"episodes": 2, "steps": 20}, out_dir=tmp_path, progress=None)
    assert "action_encoder" in (r.dir / "config.toml").read_text() and np.isfinite(r.metrics["loss_per_t"]).any()
    with pytest.raises(ValueError, match=r"model\.action_encoder\.state_dependent"):
        kestrel.actdyn.run(preset="e2", steps=5, model={"action_encoder": {**enc, "state_dependent": True}},
                           out_dir=tmp_path / "bad", progress=None)
    assert not (tmp_path / "bad").exists()


def test_tuning_with_a_batched_evaluation_function(tmp_path):
    """`kestrel.mppi.tune(evaluate=..., nu=...)`: one call per generation with every candidate's
    MPPI params as arrays; Kestrel runs CMA-ES and the folder. A cost with its minimum at
    lambda = 2 is found; bad returns and exceptions are named and raised."""
    calls = []

    def evaluate(p):
        calls.append({k: v.shape for k, v in p.items()})
        return (np.log(p["lambda"]) - np.log(2.0)) ** 2 + 0.01 * (p["noise_sigma"][:, 0, 0] - 1.0) ** 2

    r = kestrel.mppi.tune({"generations": 30, "pop_size": 8, "knobs": ["lambda"]}, evaluate=evaluate, nu=1,
                          out_dir=tmp_path, progress=None)
    assert calls[1] == {"lambda": (8,), "noise_sigma": (8, 1, 1), "noise_mu": (8, 1), "horizon": (8,)}
    assert len(calls) == 31  # the base params, then one call per generation
    assert abs(r.summary["best_lambda"] - 2.0) < 0.05 and r.summary["num_starts"] == 0
    assert 'type = "evaluate"' in (r.dir / "config.toml").read_text()
    with pytest.raises(ValueError, match=r"evaluate: expected 1 costs .* got shape \[3\]"):
        kestrel.mppi.tune({"generations": 2, "pop_size": 8}, evaluate=lambda p: np.zeros(3), nu=2,
                          out_dir=tmp_path / "b", progress=None)

    def boom(p):
        raise KeyError("the user's bug")

    with pytest.raises(KeyError, match="the user's bug"):
        kestrel.mppi.tune({"generations": 2, "pop_size": 4}, evaluate=boom, nu=2, out_dir=tmp_path / "c", progress=None)
    with pytest.raises(ValueError, match="starts"):
        kestrel.mppi.tune(evaluate=evaluate, nu=1, starts={"states": [[0.0]]}, out_dir=tmp_path / "d", progress=None)
    with pytest.raises(TypeError, match="not both"):
        kestrel.mppi.tune(evaluate=evaluate, dynamics=evaluate, nu=1, out_dir=tmp_path / "d", progress=None)
    assert not (tmp_path / "d").exists()
