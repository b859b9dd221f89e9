"""kestrel.jax: registry envs and population evaluation as XLA FFI calls inside jit, scan and
vmap, bit-equal to the numpy entry; kestrel.torch and DLPack. Run by tools/py-test in
tools/venv-sb3 (jax, evosax and torch from PyPI); there a missing jax or torch fails the tests,
elsewhere they are skipped."""

import os
import threading
import time

import numpy as np
import pytest

if os.environ.get("KESTREL_REQUIRE_SB3") == "1":
    import jax  # noqa: F401
    import torch  # noqa: F401
else:
    pytest.importorskip("jax")
    pytest.importorskip("torch")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

import kestrel  # noqa: E402
import kestrel.dist  # noqa: E402
import kestrel.jax as kj  # noqa: E402
import kestrel.torch as kt  # noqa: E402
from conftest import SINGLE, ids  # noqa: E402

pytestmark = pytest.mark.jax

ENVS = [(i, p) for i, p in SINGLE if not (i.startswith("ARC") and p.get("canvas") in (10,))]
ENVS += [("TreasureHunt-v0", {})]


def random_actions(env, steps, seed):
    """`steps` batches of valid actions for `env` (ARC: sparse masks over a few ops)."""
    rng = np.random.default_rng(seed)
    n = env.num_envs
    space = env.single_action_space
    if isinstance(space, kestrel._spaces.spaces.Dict):
        side = space["selection"].shape[0]
        return [{"operation": rng.integers(0, 35, n).astype(np.int32),
                 "selection": rng.random((n, side, side)) < 0.2} for _ in range(steps)]
    if space.shape == ():
        return [rng.integers(0, space.n, n).astype(np.int32) for _ in range(steps)]
    lo, hi = np.maximum(space.low, -2), np.minimum(space.high, 2)
    return [rng.uniform(lo, hi, (n, *space.shape)).astype(np.float32) for _ in range(steps)]


def numpy_actions(a):
    if isinstance(a, dict):
        return {"operation": a["operation"].astype(np.int64), "selection": a["selection"].astype(np.int8)}
    return a.astype(np.int64) if a.dtype.kind == "i" else a.astype(np.float64)


def assert_obs_equal(got, want):
    if isinstance(want, dict):
        assert set(got) == set(want)
        for k in want:
            np.testing.assert_array_equal(np.asarray(got[k]), want[k], err_msg=k)
    else:
        np.testing.assert_array_equal(np.asarray(got), want.astype(np.asarray(got).dtype))


@pytest.mark.parametrize("env_id,params", ENVS, ids=ids(ENVS))
def test_every_env_steps_bit_equal_to_the_numpy_vector_env(env_id, params):
    n, steps = 3, 25
    env = kj.make_vec(env_id, n, **params)
    ref = kestrel.make_vec(env_id, n, autoreset_mode="same_step", episode_stats=False, arc_info=False, **params)
    acts = random_actions(ref, steps, 1)
    h, obs = jax.jit(env.reset)(env.handle, 11)
    want, _ = ref.reset(seed=11)
    assert_obs_equal(obs, want)
    step = jax.jit(env.step)
    for t, a in enumerate(acts):
        h, obs, r, te, tr = step(h, a)
        want, wr, wte, wtr, _ = ref.step(numpy_actions(a))
        assert_obs_equal(obs, want)
        np.testing.assert_array_equal(np.asarray(r), wr, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(te), wte)
        np.testing.assert_array_equal(np.asarray(tr), wtr)
    env.close()


def cartpole_scan(env, length):
    @jax.jit
    def run(h, obs):
        def body(c, _):
            h, obs = c
            a = (obs[:, 2] > 0).astype(jnp.int32)
            h, obs, r, te, tr = env.step(h, a)
            return (h, obs), (a, r, te, tr)

        return jax.lax.scan(body, (h, obs), None, length=length)

    return run


@pytest.mark.parametrize("mode", ["same_step", "next_step"])
def test_a_jitted_scan_of_steps_is_the_numpy_loop(mode):
    n, T = 16, 400
    env = kj.make_vec("CartPole-v1", n, autoreset_mode=mode)
    h, obs = env.reset(env.handle, 5)
    (h, last), (a, r, te, tr) = cartpole_scan(env, T)(h, obs)
    assert te.sum() > 0 and h.tolist() == [int(env.handle[0]), T + 1]
    ref = kestrel.make_vec("CartPole-v1", n, autoreset_mode=mode, episode_stats=False)
    o, _ = ref.reset(seed=5)
    for t in range(T):
        o, wr, wte, wtr, _ = ref.step(np.asarray(a[t]).astype(np.int64))
        np.testing.assert_array_equal(np.asarray(r[t]), wr)
        np.testing.assert_array_equal(np.asarray(te[t]), wte)
        np.testing.assert_array_equal(np.asarray(tr[t]), wtr)
    np.testing.assert_array_equal(np.asarray(last), o)


def test_rollout_is_its_steps_and_arc_takes_masks():
    for env_id, params in [("Pendulum-v1", {}), ("ARC-jaxarc-v0", {"canvas": 5, "tasks_per_family": 2})]:
        n, T = 4, 12
        a, b = kj.make_vec(env_id, n, **params), kj.make_vec(env_id, n, **params)
        acts = random_actions(kestrel.make_vec(env_id, n, **params), T, 2)
        stacked = jax.tree.map(lambda *x: jnp.stack(x), *acts)
        ha, oa = a.reset(a.handle, 3)
        hb, _ = b.reset(b.handle, 3)
        ha, obs, r, te, tr = jax.jit(a.rollout)(ha, stacked)
        for t in range(T):
            hb, o, rb, teb, trb = b.step(hb, acts[t])
            jax.tree.map(lambda x, y: np.testing.assert_array_equal(np.asarray(x[t]), np.asarray(y)), obs, o)
            np.testing.assert_array_equal(np.asarray(r[t]), np.asarray(rb))
            np.testing.assert_array_equal(np.asarray(te[t]), np.asarray(teb))


ARC_FORMS = [("point", None), ("bbox", None), ("point", "discrete"), ("bbox", "discrete"),
             ("point", "multi_discrete"), ("bbox", "multi_discrete")]


@pytest.mark.parametrize("selection,flatten", ARC_FORMS, ids=[f"{s}-{f}" for s, f in ARC_FORMS])
def test_arc_takes_every_action_form_bit_equal_to_the_numpy_vector_env(selection, flatten):
    n, T, S = 4, 30, 5
    params = {"canvas": S, "tasks_per_family": 2, "selection": selection, "flatten": flatten}
    env = kj.make_vec("ARC-jaxarc-v0", n, **params)
    ref = kestrel.make_vec("ARC-jaxarc-v0", n, autoreset_mode="same_step", episode_stats=False, arc_info=False,
                           **params)
    assert env.single_action_space == ref.single_action_space
    rng = np.random.default_rng(7)
    keys = ("row", "col") if selection == "point" else ("r1", "c1", "r2", "c2")
    radix = [35] + [S] * len(keys)

    def draw():
        cols = np.stack([rng.integers(0, r, n) for r in radix], axis=1)
        if flatten == "multi_discrete":
            return cols
        if flatten == "discrete":
            flat = np.zeros(n, np.int64)
            for j, r in enumerate(radix):
                flat = flat * r + cols[:, j]
            return flat
        return {"operation": cols[:, 0], **{k: cols[:, j + 1] for j, k in enumerate(keys)}}

    acts = [draw() for _ in range(T)]
    h, obs = env.reset(env.handle, 4)
    want, _ = ref.reset(seed=4)
    assert_obs_equal(obs, want)
    step = jax.jit(env.step)
    for t, a in enumerate(acts):
        ja = jax.tree.map(lambda x: jnp.asarray(x, jnp.int32), a)
        h, obs, r, te, tr = step(h, ja)
        want, wr, wte, wtr, _ = ref.step(a)
        assert_obs_equal(obs, want)
        np.testing.assert_array_equal(np.asarray(r), wr, err_msg=f"step {t}")
        np.testing.assert_array_equal(np.asarray(te), wte)
        np.testing.assert_array_equal(np.asarray(tr), wtr)
    # A rollout takes the same form with a leading steps axis.
    stacked = jax.tree.map(lambda *x: jnp.stack([jnp.asarray(v, jnp.int32) for v in x]), *acts[:6])
    h, obs6, r6, _, _ = jax.jit(env.rollout)(h, stacked)
    for t in range(6):
        want, wr, *_ = ref.step(acts[t])
        np.testing.assert_array_equal(np.asarray(r6[t]), wr)
        np.testing.assert_array_equal(np.asarray(obs6["grid"][t]), want["grid"])
    # Out of range is refused by the env, as the numpy entry refuses it, and moves nothing.
    bad = acts[0]
    if flatten == "discrete":
        bad = np.full(n, 35 * S ** len(keys))
        match = "operation|outside"
    elif flatten == "multi_discrete":
        bad = bad.copy()
        bad[1, 1] = S
        match = "outside the 5x5 canvas"
    else:
        bad = {**bad, keys[0]: np.where(np.arange(n) == 1, S, bad[keys[0]])}
        match = "outside the 5x5 canvas"
    with pytest.raises(Exception, match=match):
        jax.block_until_ready(env.step(h, jax.tree.map(lambda x: jnp.asarray(x, jnp.int32), bad)))
    h, *_ = env.step(h, jax.tree.map(lambda x: jnp.asarray(x, jnp.int32), acts[1]))
    with pytest.raises(TypeError, match="integers"):
        env.step(h, jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), acts[1]))
    env.close()


def test_vmap_steps_several_envs_in_one_call_and_refuses_one_handle_twice():
    envs = [kj.make_vec("Pendulum-v1", 4) for _ in range(3)]
    solo = [kj.make_vec("Pendulum-v1", 4) for _ in range(3)]
    hs = jnp.stack([e.handle for e in envs])
    hs, obs = jax.vmap(envs[0].reset)(hs, jnp.arange(3))
    acts = jnp.linspace(-2, 2, 12, dtype=jnp.float32).reshape(3, 4, 1)
    hs, obs, r, _, _ = jax.jit(jax.vmap(envs[0].step))(hs, acts)
    for i, e in enumerate(solo):
        h, _ = e.reset(e.handle, i)
        h, o, ri, _, _ = e.step(h, acts[i])
        np.testing.assert_array_equal(np.asarray(obs[i]), np.asarray(o))
        np.testing.assert_array_equal(np.asarray(r[i]), np.asarray(ri))
    # vmap over the actions only broadcasts the one handle: the second use is stale.
    h = envs[0].handle
    with pytest.raises(Exception, match="stale"):
        jax.block_until_ready(jax.vmap(envs[0].step, in_axes=(None, 0))(h, acts))


def test_nested_jit_donation_and_disable_jit_agree():
    outs = []
    for how in ("nested", "donated", "eager"):
        env = kj.make_vec("CartPole-v1", 8)
        h, obs = env.reset(env.handle, 2)
        if how == "nested":
            inner = jax.jit(env.step)
            f = jax.jit(lambda h, a: inner(h, a))
        elif how == "donated":
            f = jax.jit(env.step, donate_argnums=(0,))
        else:
            f = env.step
        rs = []
        with jax.disable_jit(how == "eager"):
            for t in range(50):
                h, obs, r, _, _ = f(h, (obs[:, 2] > 0).astype(jnp.int32))
                rs.append(np.asarray(obs))
        outs.append(np.stack(rs))
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])


def test_errors_are_python_exceptions_never_an_abort():
    env = kj.make_vec("CartPole-v1", 4)
    h, obs = env.reset(env.handle, 0)
    with pytest.raises(Exception, match="5 values"):
        jax.block_until_ready(env.step(h, jnp.zeros(5, jnp.int32)))
    with pytest.raises(TypeError, match="integers"):
        env.step(h, jnp.zeros(4, jnp.float32))
    with pytest.raises(ValueError, match=r"\(2,\)"):
        env.step(h[:1], jnp.zeros(4, jnp.int32))
    with pytest.raises(Exception, match="outside|action"):
        jax.block_until_ready(env.step(h, jnp.full(4, 7, jnp.int32)))
    h2, *_ = env.step(h, jnp.zeros(4, jnp.int32))  # the failed calls moved nothing
    with pytest.raises(Exception, match="stale"):
        jax.block_until_ready(env.step(h, jnp.zeros(4, jnp.int32)))
    env.close()
    assert env.closed
    with pytest.raises(Exception, match="closed"):
        jax.block_until_ready(env.step(h2, jnp.zeros(4, jnp.int32)))
    with pytest.raises(RuntimeError, match="closed"):
        env.handle


def test_no_deadlock_with_the_gil_busy_elsewhere():
    # The handlers never take the GIL: a Python thread spinning on it does not stall a
    # jitted scan, and a scan run from another thread finishes too.
    env = kj.make_vec("CartPole-v1", 64)
    h, obs = env.reset(env.handle, 0)
    run = cartpole_scan(env, 200)
    stop = threading.Event()

    def spin():
        x = 0
        while not stop.is_set():
            x += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        start = time.time()
        (h, obs), _ = jax.block_until_ready(run(h, obs))
        out = {}
        worker = threading.Thread(target=lambda: out.setdefault("r", jax.block_until_ready(run(h, obs))))
        worker.start()
        worker.join(60)
        assert "r" in out and time.time() - start < 60
    finally:
        stop.set()
        t.join()


def test_evaluate_is_the_problem_under_jit_and_vmap():
    p = kestrel.evo.Problem("rastrigin", 6, shift=0.5, rotate=True, seed=1)
    x = jax.random.normal(jax.random.key(0), (32, 6))
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda x: kj.evaluate(p, x))(x)), p(np.asarray(x)))
    two = jax.vmap(lambda x: kj.evaluate(p, x))(jnp.stack([x, 2 * x]))
    np.testing.assert_array_equal(np.asarray(two[1]), p(np.asarray(2 * x)))
    cp = kestrel.evo.Problem("cartpole")
    xs = 0.5 * jax.random.normal(jax.random.key(1), (8, cp.num_dims))
    k = kestrel.evo.Key(4)
    np.testing.assert_array_equal(np.asarray(kj.evaluate(cp, xs, k)), cp(np.asarray(xs), k))
    spec = kestrel.dist.ProblemSpec.mppi_tune()
    xm = jnp.zeros((3, spec.num_dims))
    g0 = spec.key(0)
    np.testing.assert_array_equal(np.asarray(kj.evaluate(spec, xm, g0)),
                                  spec.build().evaluate(np.zeros((3, spec.num_dims), np.float32), g0))
    with pytest.raises(ValueError, match=r"\(\.\.\., pop, 6\)"):
        kj.evaluate(p, jnp.zeros((4, 5)))
    # A JAX PRNG key works as a key (its two words).
    kj.evaluate(cp, xs, jax.random.key(3)).block_until_ready()


def test_an_evosax_loop_runs_inside_one_jitted_scan_over_kestrel_fitness():
    from evosax.algorithms import CMA_ES

    p = kestrel.evo.Problem("sphere", 8)
    es = CMA_ES(population_size=16, solution=jnp.zeros(8))
    params = es.default_params

    @jax.jit
    def run(key):
        state = es.init(key, jnp.full(8, 2.0), params)

        def gen(state, k):
            ka, kt_ = jax.random.split(k)
            pop, state = es.ask(ka, state, params)
            fit = kj.evaluate(p, pop)  # the only change to an evosax loop
            state, _ = es.tell(kt_, pop, fit, state, params)
            return state, fit.min()

        return jax.lax.scan(gen, state, jax.random.split(key, 60))

    state, best = run(jax.random.key(0))
    assert float(best[-1]) < 1e-2 * float(best[0])


def test_torch_flavour_returns_tensors_without_copies():
    env = kt.make_vec("CartPole-v1", 8, autoreset_mode="same_step", copy=False)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.dtype == torch.float32 and obs.shape == (8, 4)
    ptr = obs.data_ptr()
    ref = kestrel.make_vec("CartPole-v1", 8, autoreset_mode="same_step")
    ref.reset(seed=0)
    for _ in range(30):
        a = torch.randint(0, 2, (8,))
        obs, r, te, tr, info = env.step(a)
        o, wr, wte, wtr, _ = ref.step(a.numpy())
        assert obs.data_ptr() == ptr  # the env's own buffer, written in place
        np.testing.assert_array_equal(obs.numpy(), o)
        assert r.dtype == torch.float32 and te.dtype == torch.bool
        np.testing.assert_array_equal(r.numpy(), wr)
        np.testing.assert_array_equal(te.numpy(), wte)


def test_dlpack_exports_the_observations_without_a_copy():
    env = kestrel.make_vec("CartPole-v1", 8, copy=False)
    obs, _ = env.reset(seed=0)
    for o in (obs, env.step(np.zeros(8, np.int64))[0]):
        assert torch.from_dlpack(o).data_ptr() == o.ctypes.data
        assert jnp.from_dlpack(o).unsafe_buffer_pointer() == o.ctypes.data  # 64-byte aligned
    fresh = kestrel.make_vec("CartPole-v1", 8)
    fresh.reset(seed=0)
    o, r, te, tr, _ = fresh.step(np.zeros(8, np.int64))
    for a in (o, r, te, tr):
        assert torch.from_dlpack(a).data_ptr() == a.ctypes.data
        assert jnp.from_dlpack(a).unsafe_buffer_pointer() == a.ctypes.data


def test_the_jax_docs_page_blocks_run():
    # docs/jax.md's blocks are marked "not run" for tools/docs-check.py (no jax there); here
    # they run, in order, each in a fresh interpreter.
    import pathlib
    import re
    import subprocess
    import sys

    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "jax.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.M | re.S)
    assert len(blocks) == 3
    for code in blocks:
        assert "tests/test_jax.py runs" in code.splitlines()[0]
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]


def test_the_purejaxrl_ppo_benchmark_trains_on_kestrel_inside_one_jit(tmp_path, monkeypatch):
    """tools/compare/arc_ppo_jax.py's PureJaxRL PPO, its whole training one jitted scan over
    kestrel.jax's ARC env: it runs, its episodes end, and the handle moved by every step."""
    import importlib.util
    import json
    import pathlib
    import sys

    pytest.importorskip("flax")
    pytest.importorskip("optax")
    path = pathlib.Path(__file__).resolve().parents[3] / "tools" / "compare" / "arc_ppo_jax.py"
    spec = importlib.util.spec_from_file_location("arc_ppo_jax", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "arc_ppo_jax", mod)  # flax's dataclasses look their module up
    spec.loader.exec_module(mod)
    grid = [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 3, 3], [0, 0, 0, 3, 3]]
    out = [row[:] for row in grid]
    out[2][2] = 4
    (tmp_path / "task.json").write_text(json.dumps({"train": [{"input": grid, "output": out}],
                                                      "test": [{"input": grid, "output": out}]}))
    envs, steps, updates = 8, 16, 3
    config = {"LR": 2.5e-4, "NUM_ENVS": envs, "NUM_STEPS": steps, "TOTAL_TIMESTEPS": envs * steps * updates,
              "UPDATE_EPOCHS": 2, "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2,
              "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5}
    env = mod.KestrelArc(str(tmp_path), envs)
    h0 = env.params()
    result = jax.jit(mod.make_train(config, env))(jax.random.PRNGKey(0), h0)
    metric, ended = (np.asarray(x) for x in result["metrics"])
    assert ended.sum() >= envs * steps * updates // 20  # 20-step episodes
    assert np.isfinite(metric[ended > 0]).all()
    # One reset and a step a transition moved the env's version.
    assert int(env.params()[1]) == int(h0[1]) + 1 + steps * updates
