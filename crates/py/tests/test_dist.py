"""kestrel.dist on a local 3-node Ray cluster (loopback only): the same numbers on 1 or N
workers and nodes as in-process, a worker killed mid-generation, a sweep whose driver is
killed and restarted, errors as our messages. Run by tools/py-test in tools/venv-ray."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import kestrel  # noqa: E402
import kestrel.dist as kd  # noqa: E402
from kestrel import evo  # noqa: E402
from conftest import require  # noqa: E402

pytestmark = pytest.mark.ray
ROOT = Path(__file__).resolve().parents[3]


def digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def cluster():
    """A head and two worker nodes of one CPU each on this machine."""
    from ray.cluster_utils import Cluster

    assert os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == "0", "run through tools/py-test (loopback only)"
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    for _ in range(2):
        c.add_node(num_cpus=1)
    ray.init(address=c.address, log_to_driver=False)
    c.wait_for_nodes()
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    assert len(nodes) == 3
    assert all(n["NodeManagerAddress"] == "127.0.0.1" for n in ray.nodes())
    yield c, nodes
    ray.shutdown()
    c.shutdown()


LAYOUTS = [dict(num_shards=s) for s in (1, 2, 3, 7)]


def layouts(nodes):
    """1, 2, 3 and 7 shards anywhere; 3 shards all on one node; 3 shards on 3 nodes."""
    return LAYOUTS + [dict(num_shards=3, node_ids=nodes[:1]), dict(num_shards=3, node_ids=nodes)]


def test_evaluate_gives_the_in_process_fitness_on_any_shards_and_nodes(cluster):
    _, nodes = cluster
    for spec in (kd.ProblemSpec.evo(problem="cartpole", seed=3),
                 kd.ProblemSpec.evo(problem="rosenbrock", num_dims=12, shift=1.0, rotate=True, seed=5)):
        pop = np.random.default_rng(0).normal(size=(64, spec.num_dims)).astype(np.float32)
        want = spec.build().evaluate(pop, spec.key(2), 0)
        # The in-process problem of `kestrel.evo` is the same one.
        if spec.config["problem"] == "cartpole":
            np.testing.assert_array_equal(evo.Problem("cartpole")(pop, spec.key(2)), want)
        for lay in layouts(nodes):
            got = kd.evaluate(spec, pop, generation=2, **lay)
            assert got.dtype == np.float32 and digest(got) == digest(want), lay
        # A slice evaluated with its global first row is the whole population's slice.
        np.testing.assert_array_equal(kd.evaluate(spec, pop[10:30], generation=2, first_row=10, num_shards=2),
                                      want[10:30])


def test_run_es_equals_the_in_process_run_and_the_cli(cluster, tmp_path):
    _, nodes = cluster
    for strategy in ("snes", "cma-es"):
        cfg = dict(strategy=strategy, problem="cartpole", generations=5, seed=3, pop_size=16)
        want = evo.run(cfg, out_dir=tmp_path / "local")
        for lay in layouts(nodes):
            got = kd.run_es(cfg, out_dir=tmp_path / "dist", **lay)
            for col in ("best", "best_in_generation", "sigma", "evals"):
                np.testing.assert_array_equal(got.metrics[col], want.metrics[col], err_msg=f"{strategy} {lay} {col}")
            assert got.summary["best_solution"] == want.summary["best_solution"]
            assert got.summary["best_fitness"] == want.summary["best_fitness"]
            argv = json.loads((got.dir / "record.json").read_text())["launches"][0]["argv"]
            assert (got.dir / "convergence.png").is_file() and any('kestrel.dist.run("evo"' in a for a in argv), argv
        cli = ROOT / "target" / "debug" / "kestrel"
        require(cli.exists(), f"{cli} is not built (tools/test-all runs cargo test first)")
        out = subprocess.run([str(cli), "evo", "run", "--strategy", strategy, "--problem", "cartpole", "--generations",
                              "5", "--seed", "3", "--set", "pop_size=16", "--out-dir", str(tmp_path / "cli")],
                             capture_output=True, text=True, check=True).stdout
        folder = Path(out.rsplit("run folder ", 1)[1].strip())
        best = [json.loads(line)["best"] for line in (folder / "metrics.jsonl").read_text().splitlines()]
        np.testing.assert_array_equal(np.asarray(best, np.float64), want.metrics["best"])


def test_mppi_autotune_equals_the_in_process_tuner(cluster, tmp_path):
    _, nodes = cluster
    cfg = dict(generations=3, pop_size=8, run={"steps": 20, "seed": 1})
    want = kestrel.mppi.tune(cfg, out_dir=tmp_path)
    for lay in layouts(nodes):
        got = kd.mppi_autotune(cfg, out_dir=tmp_path, **lay)
        np.testing.assert_array_equal(got.metrics["best"], want.metrics["best"], err_msg=str(lay))
        assert got.summary["best_cost"] == want.summary["best_cost"]
        assert (got.dir / "best.toml").read_text() == (want.dir / "best.toml").read_text()


def test_arc_random_policy_rollouts_are_the_same_on_any_shards(cluster):
    _, nodes = cluster
    want = kd.EnvShard("ARC-v0", 0, 256, 1, tasks_per_family=2).rollout(160)
    assert want["episodes"].sum() > 0 and len(set(want["checksum"])) > 100
    for lay in (dict(num_shards=1), dict(num_shards=3, node_ids=nodes), dict(num_shards=7)):
        got = kd.rollout_returns("ARC-v0", 256, 160, seed=1, tasks_per_family=2, **lay)
        for k in want:
            assert digest(got[k]) == digest(want[k]), (lay, k)


def test_a_worker_killed_mid_generation_changes_nothing(cluster):
    """SIGKILL to a worker running a shard: Ray retries the task, the rows are the same."""
    spec = kd.ProblemSpec.mppi_tune(run={"steps": 1500, "seed": 1}, pop_size=6)
    pop = np.random.default_rng(1).normal(size=(6, spec.num_dims)).astype(np.float32)
    want = spec.build().evaluate(pop, spec.key(0), 0)
    box = {}
    th = threading.Thread(target=lambda: box.setdefault("f", kd.evaluate(spec, pop, num_shards=3, max_retries=3)))
    th.start()
    killed = None
    deadline = time.time() + 60
    while killed is None and time.time() < deadline and th.is_alive():
        ps = subprocess.run(["pgrep", "-f", "ray::_eval_rows"], capture_output=True, text=True).stdout.split()
        if ps:
            killed = int(ps[0])
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.02)
    th.join(timeout=120)
    assert killed is not None, "no worker was running a shard to kill"
    assert "f" in box and digest(box["f"]) == digest(want)


def test_errors_arrive_as_our_messages(cluster):
    spec = kd.ProblemSpec.evo(problem="sphere", num_dims=4)
    with pytest.raises(ValueError, match=r"population: expected shape \(n, 4\), got \(8, 3\)"):
        kd.evaluate(spec, np.zeros((8, 3), np.float32))
    with pytest.raises(ValueError, match="num_dims"):
        kd.ProblemSpec.evo(problem="sphere", num_dims=0).num_dims
    # Raised inside a task on a worker: our ValueError with the rows and Kestrel's message.
    with pytest.raises(ValueError, match=r"rows \[0, 8\): ValueError: .*size"):
        kd.rollout_returns("GridWorld-v0", 16, 5, num_shards=2, size=-3)
    with pytest.raises(ValueError, match="generations"):
        kd.run_es(problem="sphere", generations=-1)
    for bad in (dict(num_shards=0), dict(cpus_per_task=0), dict(max_retries=-1), dict(first_row=-1),
                dict(num_shards=2.5), dict(num_shards=True)):
        with pytest.raises(ValueError, match=list(bad)[0]):
            kd.evaluate(spec, np.zeros((8, 4), np.float32), **bad)
    with pytest.raises(ValueError, match="threads = 0"):
        kd.sweep({"kind": "evo", "seeds": 1}, engine="ray", threads=0)


SPEC = """
kind = "allo"
name = "maps"
seeds = 3
curve = "cosine_similarity"
[base]
num_samples = 4000
batch_size = 64
num_eigenvectors = 4
steps = 600
eval_every = 100
checkpoint_every = 100
[grid]
map = ["builtin:rooms-2-5", "builtin:open-6"]
"""


def cell_results(folder: Path):
    """{cell: (cosine, [(step, cosine)...])} of a sweep folder; every cell has one run folder."""
    out = {}
    for cell in sorted(p for p in folder.iterdir() if p.is_dir()):
        runs = [r for r in cell.iterdir() if r.is_dir() and not r.name.startswith(".")]
        assert len(runs) == 1, (cell, runs)
        s = json.loads((runs[0] / "summary.json").read_text())
        curve = [(m["global_step"], m["cosine_similarity"]) for m in
                 map(json.loads, (runs[0] / "metrics.jsonl").read_text().splitlines())]
        out[cell.name] = (s["cosine_similarity"], curve)
    return out


def _finished_cells(sweep_dir: Path) -> int:
    """Cells the sweep will skip, by its own rule (`kestrel_run::sweep`): the run's `record.json`
    ends with an ok launch and its `summary.json` exists. A task killed between writing its
    summary and closing its record is resumed, not skipped, so counting summaries alone raced."""
    n = 0
    for summary in sweep_dir.glob("*/*/summary.json"):
        try:
            launches = json.loads((summary.parent / "record.json").read_text()).get("launches", [])
        except (OSError, ValueError):
            continue
        n += bool(launches) and launches[-1].get("status") == "ok"
    return n


def test_sweep_on_ray_equals_local_and_survives_a_killed_driver(cluster, tmp_path):
    c, _ = cluster
    spec = tmp_path / "maps.toml"
    spec.write_text(SPEC)
    local = kd.sweep(spec, out_dir=tmp_path / "local", engine="local")
    assert len(local.cells) == 6 and all(o[0] == "ran" for o in local.cells.values())
    want = cell_results(local.dir)
    assert [r["stats"]["cosine_similarity"]["n"] for r in local.table["rows"]] == [3, 3]

    # The Ray engine's driver as its own process, killed once some cells are done, restarted.
    out = tmp_path / "ray"
    cmd = [sys.executable, "-m", "kestrel.dist", "sweep", str(spec), "--out-dir", str(out), "--address", c.address]
    drv = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and drv.poll() is None and _finished_cells(out / "maps") < 2:
        time.sleep(0.05)
    assert drv.poll() is None, "the sweep finished before it could be interrupted"
    drv.kill()
    drv.wait()
    # Ray ends the dead driver's tasks; wait until no process holds a run lock.
    deadline = time.time() + 60
    for lock in out.glob("maps/*/*/run.lock"):
        pid = lock.read_text().strip() if lock.exists() else ""
        while pid and Path(f"/proc/{pid}").exists() and time.time() < deadline:
            time.sleep(0.1)
    done_before = _finished_cells(out / "maps")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(": skipped") >= 2 and r.stdout.count(": skipped") == done_before, r.stdout
    got = cell_results(out / "maps")
    assert got == want
    assert (out / "maps" / "table.md").read_text() == (local.dir / "table.md").read_text()
    assert (out / "maps" / "curves.png").is_file()

    # A third start finds everything finished.
    again = kd.sweep(spec, out_dir=out, engine="ray")
    assert all(o[0] == "skipped" for o in again.cells.values()) and again.table == local.table


def test_the_cli_hands_a_sweep_to_ray(cluster, tmp_path):
    c, _ = cluster
    cli = ROOT / "target" / "debug" / "kestrel"
    require(cli.exists(), f"{cli} is not built (tools/test-all runs cargo test first)")
    spec = tmp_path / "es.toml"
    spec.write_text('kind = "evo"\nseeds = [4, 5]\n[base]\nproblem = "sphere"\nnum_dims = 4\ngenerations = 20\n'
                    '[grid]\nstrategy = ["snes", "cma-es"]\n')
    r = subprocess.run([str(cli), "sweep", str(spec), "--engine", "ray", "--python", sys.executable, "--address",
                        c.address, "--out-dir", str(tmp_path / "ray")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    loc = subprocess.run([str(cli), "sweep", str(spec), "--out-dir", str(tmp_path / "local")], capture_output=True,
                         text=True, timeout=300)
    assert loc.returncode == 0, loc.stderr
    assert (tmp_path / "ray/es/table.md").read_text() == (tmp_path / "local/es/table.md").read_text()
    assert "strategy=cma-es | 2 |" in r.stdout


def test_a_failing_sweep_cell_is_reported_with_our_message(cluster, tmp_path):
    spec = {"kind": "evo", "name": "bad", "seeds": 1, "base": {"problem": "sphere", "num_dims": 3, "generations": 3}}
    res = kd.sweep(spec, out_dir=tmp_path, engine="ray")
    assert list(res.cells.values())[0][0] == "ran"
    with pytest.raises(ValueError, match=r"grid.num_dims = 0|num_dims"):
        kd.sweep({**spec, "name": "bad2", "grid": {"num_dims": [3, 0]}}, out_dir=tmp_path, engine="ray")
    assert not (tmp_path / "bad2").exists()
    with pytest.raises(ValueError, match="cannot read the sweep spec"):
        kd.sweep(tmp_path / "missing.toml", out_dir=tmp_path)


def test_a_tampered_sweep_cell_is_refused_on_ray_as_locally(cluster, tmp_path):
    """A finished cell whose config.toml was edited is refused by the Ray engine with the local
    engine's message (it was skipped and tabulated); restored, it is skipped again."""
    spec = {"kind": "evo", "name": "tamper", "seeds": [1, 2],
            "base": {"problem": "sphere", "num_dims": 3, "generations": 5}}
    first = kd.sweep(spec, out_dir=tmp_path, engine="ray")
    assert all(o[0] == "ran" for o in first.cells.values())
    cfg = next((tmp_path / "tamper" / "c000-s1").glob("*/config.toml"))
    saved = cfg.read_text()
    cfg.write_text(saved.replace("generations = 5", "generations = 6"))
    for engine in ("ray", "local"):
        with pytest.raises(RuntimeError, match=r"config.toml: not the config of cell c000-s1 \(its `generations` differs"):
            kd.sweep(spec, out_dir=tmp_path, engine=engine)
    cfg.write_text(saved)
    again = kd.sweep(spec, out_dir=tmp_path, engine="ray")
    assert all(o[0] == "skipped" for o in again.cells.values()) and again.table == first.table


def test_tune_trainable_gives_each_trials_run(cluster, tmp_path):
    from ray import tune

    space = {"kind": "evo", "out_dir": str(tmp_path / "runs"),
             "config": {"problem": "sphere", "num_dims": 5, "generations": 20, "seed": tune.grid_search([0, 1])}}
    rc = tune.RunConfig(storage_path=str(tmp_path / "tune"), name="t", verbose=0)
    grid = tune.Tuner(kd.tune_trainable, param_space=space, run_config=rc).fit()
    assert grid.num_errors == 0 and len(grid) == 2
    got = sorted((r.config["config"]["seed"], r.metrics["best_fitness"]) for r in grid)
    for seed, best in got:
        want = evo.run(problem="sphere", num_dims=5, generations=20, seed=seed, out_dir=tmp_path / "plain")
        assert best == want.summary["best_fitness"]
