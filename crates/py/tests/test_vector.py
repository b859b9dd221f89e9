"""Vector envs: our contract checker on every env, step-for-step equality with gymnasium's
SyncVectorEnv in all three autoreset modes, wrappers, shard/thread invariance, copy
semantics, async misuse, bad input, the GIL."""

import hashlib
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import gymnasium as gym
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import batch_space
from hypothesis import given, settings, strategies as st

import kestrel
from conftest import SINGLE, ids

MODES = [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP, AutoresetMode.DISABLED]
VEC = SINGLE + [("TreasureHunt-v0", {"num_agents": 3})]


def leaves(x):
    return list(x.values()) if isinstance(x, dict) else [x]


def check_vector_env(venv, steps=30, seed=3):
    """Gymnasium has no vector-env checker; this is ours."""
    n = venv.num_envs
    assert venv.observation_space == batch_space(venv.single_observation_space, n)
    assert venv.action_space == batch_space(venv.single_action_space, n)
    assert isinstance(venv.metadata["autoreset_mode"], AutoresetMode)
    o1, info = venv.reset(seed=seed)
    o1 = {k: v.copy() for k, v in o1.items()} if isinstance(o1, dict) else o1.copy()
    assert isinstance(info, dict)
    o2, _ = venv.reset(seed=seed)
    for a, b in zip(leaves(o1), leaves(o2)):
        np.testing.assert_array_equal(a, b)
    assert o2 in venv.observation_space
    venv.action_space.seed(0)
    prev = None
    for t in range(steps):
        out = venv.step(venv.action_space.sample())
        obs, rew, term, trunc, infos = out
        assert obs in venv.observation_space, t
        assert rew.shape == (n,) and rew.dtype == np.float32
        assert term.shape == (n,) and term.dtype == np.bool_
        assert trunc.shape == (n,) and trunc.dtype == np.bool_
        assert isinstance(infos, dict)
        if venv.copy and prev is not None:
            for a, b in zip(leaves(obs) + [rew, term, trunc], prev):
                assert not np.shares_memory(a, b)
        prev = leaves(obs) + [rew, term, trunc]
        if venv.metadata["autoreset_mode"] == AutoresetMode.DISABLED and (term | trunc).any():
            venv.reset(options={"reset_mask": term | trunc})
        if venv.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP and (term | trunc).any():
            assert set(infos) >= {"final_obs", "_final_obs", "final_info", "_final_info"}
            np.testing.assert_array_equal(infos["_final_obs"], term | trunc)


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("env_id,params", VEC, ids=ids(VEC))
def test_vector_contract_on_every_env_and_mode(env_id, params, mode):
    venv = kestrel.make_vec(env_id, 4, autoreset_mode=mode, **params)
    check_vector_env(venv)
    venv.close()


def test_arc_final_info_is_the_ending_steps_info():
    """Same-step reset: `final_info` holds ARC's columns of the step that ended each episode,
    marked where one ended. Next-step reset returns that step's info as the step's own, and
    both modes run the same episodes until a row first ends, so each row's first final info
    is the info next-step reset reported (both semantics, JaxARC's bugs and start modes)."""
    n, steps = 48, 12
    for env_id, kw in (("ARC-v0", {}), ("ARC-jaxarc-v0", {}),
                       ("ARC-jaxarc-v0", {"bugs": "all", "init": {"random_weight": 1.0, "permutation_weight": 1.0}})):
        params = dict(canvas=5, tasks_per_family=2, max_episode_steps=6, selection="bbox", **kw)
        same = kestrel.make_vec(env_id, n, autoreset_mode="same_step", **params)
        nxt = kestrel.make_vec(env_id, n, autoreset_mode="next_step", **params)
        same.reset(seed=4)
        nxt.reset(seed=4)
        rng = np.random.default_rng(1)
        first = np.zeros(n, bool)
        for _ in range(steps):
            a = {"operation": rng.integers(0, 35, n), "r1": rng.integers(0, 5, n), "c1": rng.integers(0, 5, n),
                 "r2": rng.integers(0, 5, n), "c2": rng.integers(0, 5, n)}
            _, _, t1, u1, i1 = same.step(a)
            _, _, t2, u2, i2 = nxt.step(a)
            ended = t1 | u1
            if not ended.any():
                assert "final_info" not in i1
                continue
            fin = i1["final_info"]
            assert set(fin) == {"similarity", "_similarity", "improvement", "_improvement", "operation",
                                "_operation", "step", "_step"}
            for k in ("similarity", "improvement", "operation", "step"):
                np.testing.assert_array_equal(fin["_" + k], ended)
            now = ended & ~first
            np.testing.assert_array_equal(now, (t2 | u2) & ~first)
            for k in ("similarity", "improvement", "operation", "step"):
                np.testing.assert_array_equal(fin[k][now], i2[k][now], err_msg=f"{env_id} {kw} {k}")
            first |= ended
        assert first.sum() > n // 2, (env_id, first.sum())


def _pair(mode, n=5):
    params = dict(reset_noise=0.0, max_episode_steps=7)
    # SyncVectorEnv over plain envs has no episode statistics; neither does ours here.
    ours = kestrel.make_vec("Control-pendulum-v0", n, autoreset_mode=mode, episode_stats=False, **params)
    theirs = SyncVectorEnv([lambda: kestrel.make("Control-pendulum-v0", **params)] * n, autoreset_mode=mode)
    return ours, theirs


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_step_for_step_equal_to_sync_vector_env(mode):
    ours, theirs = _pair(mode)
    rng = np.random.default_rng(0)
    o1, _ = ours.reset(seed=0)
    o2, _ = theirs.reset(seed=0)
    np.testing.assert_array_equal(o1, o2)
    ended = 0
    for t in range(40):
        a = rng.uniform(-2, 2, (5, 1))
        r1, r2 = ours.step(a), theirs.step(a)
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x, y, err_msg=f"step {t}")
        if mode == AutoresetMode.SAME_STEP:
            assert set(r1[4]) == set(r2[4]), t
            if "final_obs" in r2[4]:
                np.testing.assert_array_equal(r1[4]["_final_obs"], r2[4]["_final_obs"])
                for i in np.flatnonzero(r2[4]["_final_obs"]):
                    np.testing.assert_array_equal(r1[4]["final_obs"][i], r2[4]["final_obs"][i])
        done = r1[2] | r1[3]
        ended += int(done.sum())
        if mode == AutoresetMode.DISABLED and done.any():
            mask = done.copy()
            mask[0] = True  # reset one more row than ended
            o1, _ = ours.reset(options={"reset_mask": mask})
            o2, _ = theirs.reset(options={"reset_mask": mask})
            np.testing.assert_array_equal(o1, o2)
    assert ended >= 5 * 4


def test_disabled_mode_refuses_stepping_ended_rows_and_bad_masks():
    ours, _ = _pair(AutoresetMode.DISABLED, 3)
    ours.reset(seed=0)
    for _ in range(7):
        out = ours.step(np.zeros((3, 1)))
    assert out[3].all()
    with pytest.raises(RuntimeError, match="reset_mask"):
        ours.step(np.zeros((3, 1)))
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        ours.reset(options={"reset_mask": np.ones(2, bool)})
    with pytest.raises(ValueError, match="dtype bool"):
        ours.reset(options={"reset_mask": np.ones(3, int)})
    with pytest.raises(TypeError):
        ours.reset(options={"reset_mask": [True, True, True]})
    with pytest.raises(ValueError, match="at least one"):
        ours.reset(options={"reset_mask": np.zeros(3, bool)})


def test_gymnasium_wrappers_work_on_a_next_step_env():
    # The wrapper adds its own `episode` key, so the env's built-in statistics are off.
    venv = kestrel.make_vec("CartPole-v1", 8, seed=0, episode_stats=False)
    venv = gym.wrappers.vector.RecordEpisodeStatistics(venv)
    venv = gym.wrappers.vector.NormalizeObservation(venv)
    venv.reset(seed=0)
    episodes = 0
    for _ in range(300):
        _, _, _, _, info = venv.step(np.zeros(8, np.int64))
        if "episode" in info:
            episodes += int(info["_episode"].sum())
            assert (info["episode"]["l"][info["_episode"]] > 0).all()
    assert episodes > 8


def test_vector_observation_wrapper_refuses_same_step_as_gymnasium_does():
    venv = kestrel.make_vec("CartPole-v1", 2, autoreset_mode="same_step")
    with pytest.raises(ValueError):
        gym.wrappers.vector.NormalizeObservation(venv)


def _rollout(venv, steps=60, seed=11):
    obs, _ = venv.reset(seed=seed)
    rng = np.random.default_rng(5)
    rows = [obs.copy()]
    for _ in range(steps):
        a = rng.integers(0, 2, 16)[: venv.num_envs]
        obs, rew, term, trunc, _ = venv.step(a)
        rows.append(np.concatenate([obs.reshape(venv.num_envs, -1), rew[:, None], term[:, None], trunc[:, None]], 1))
    return rows


def test_rows_do_not_depend_on_the_batch_size_or_the_shard():
    whole = _rollout(kestrel.make_vec("CartPole-v1", 16))
    part = _rollout(kestrel.make_vec("CartPole-v1", 6))
    lo = _rollout(kestrel.make_vec("CartPole-v1", 10))
    for w, p in zip(whole, part):
        np.testing.assert_array_equal(w[:6], p)
    # a shard [10, 16) of the same batch, actions matched row by row
    obs_w, _ = kestrel.make_vec("CartPole-v1", 16).reset(seed=11)
    shard = kestrel.make_vec("CartPole-v1", 6, row_offset=10)
    obs_s, _ = shard.reset(seed=11)
    np.testing.assert_array_equal(obs_w[10:], obs_s)
    w = kestrel.make_vec("CartPole-v1", 16)
    w.reset(seed=11)
    rng = np.random.default_rng(2)
    for t in range(100):
        a = rng.integers(0, 2, 16)
        r1 = w.step(a)
        r2 = shard.step(a[10:])
        for x, y in zip(r1[:4], r2[:4]):
            np.testing.assert_array_equal(x[10:], y, err_msg=f"step {t}")


HASH = """
import hashlib, numpy as np, kestrel
v = kestrel.make_vec("ARC-v0", 64, tasks_per_family=2)
v.reset(seed=4)
v.action_space.seed(1)
h = hashlib.sha256()
for _ in range(20):
    o, r, te, tr, _ = v.step(v.action_space.sample())
    for x in [o["grid"], r, te, tr]:
        h.update(np.ascontiguousarray(x).tobytes())
print(h.hexdigest())
"""


def test_results_do_not_depend_on_the_thread_count():
    out = []
    for threads in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        out.append(subprocess.run([sys.executable, "-c", HASH], env=env, capture_output=True, text=True, check=True).stdout)
    assert out[0] == out[1] and len(out[0].strip()) == 64


THREADS = """
import hashlib, threading, numpy as np, kestrel
n = 3000  # several parallel chunks
made = {}
def make(name):
    made[name] = kestrel.make_vec("ARC-jaxarc-v0", n, canvas=5, tasks_per_family=2, selection="bbox", copy=False)
make("main")  # the first env: this thread becomes worker 0 of the pool it steps on
t = threading.Thread(target=make, args=("other",)); t.start(); t.join()
h = hashlib.sha256()
r = np.random.default_rng(0)
def acts():
    return {"operation": r.integers(0, 35, n), **{k: r.integers(0, 5, n) for k in ("r1", "c1", "r2", "c2")}}
def eat(out):
    for x in [out[0]["grid"], *out[1:4], out[4]["similarity"], out[4].get("episode", {}).get("r", np.zeros(1))]:
        h.update(np.ascontiguousarray(x).tobytes())
for v in made.values():
    v.reset(seed=2)
    for _ in range(3):
        eat(v.step(acts()))  # from this thread
    for _ in range(3):
        a = acts(); box = []
        t = threading.Thread(target=lambda: box.append(v.step(a))); t.start(); t.join()
        eat(box[0])  # from another thread
    for _ in range(3):
        v.step_async(acts()); eat(v.step_wait())  # on a background thread
print(h.hexdigest())
"""


def test_envs_step_alike_from_any_thread_in_any_pool():
    # The first thread that makes an env steps it in a pool it is worker 0 of; steps from other
    # threads and step_async take the global pool. No hang, and the same results for any
    # thread count (one thread: no pool of its own).
    out = []
    for threads in ("1", "2", "3"):
        env = dict(os.environ, RAYON_NUM_THREADS=threads)
        out.append(subprocess.run([sys.executable, "-c", THREADS], env=env, capture_output=True, text=True,
                                  check=True, timeout=300).stdout)
    assert out[0] == out[1] == out[2] and len(out[0].strip()) == 64


def test_copy_false_returns_the_same_arrays_written_in_place():
    venv = kestrel.make_vec("CartPole-v1", 4, copy=False)
    o0, _ = venv.reset(seed=0)
    o1, r1, *_ = venv.step(np.zeros(4, np.int64))
    snapshot = o1.copy()
    o2, r2, *_ = venv.step(np.ones(4, np.int64))
    assert o1 is o2 and r1 is r2 and o0 is o1
    assert not np.array_equal(snapshot, o2)


def test_step_async_and_misuse():
    venv = kestrel.make_vec("CartPole-v1", 4)
    with pytest.raises(RuntimeError, match="before reset"):
        venv.step(np.zeros(4, np.int64))
    venv.reset(seed=0)
    with pytest.raises(RuntimeError, match="without a pending"):
        venv.step_wait()
    venv.step_async(np.zeros(4, np.int64))
    with pytest.raises(RuntimeError, match="twice"):
        venv.step_async(np.zeros(4, np.int64))
    with pytest.raises(RuntimeError, match="in flight"):
        venv.step(np.zeros(4, np.int64))
    a = venv.step_wait()
    b = kestrel.make_vec("CartPole-v1", 4)
    b.reset(seed=0)
    for x, y in zip(a[:4], b.step(np.zeros(4, np.int64))[:4]):
        np.testing.assert_array_equal(x, y)
    venv.close()
    with pytest.raises(RuntimeError, match="closed"):
        venv.step(np.zeros(4, np.int64))


def test_bad_input_raises_with_the_shape():
    venv = kestrel.make_vec("CartPole-v1", 4096)
    venv.reset(seed=0)
    with pytest.raises(ValueError, match=r"expected shape \(4096,\), got \(3,\)"):
        venv.step(np.zeros(3, np.int64))
    with pytest.raises(TypeError, match="integers"):
        venv.step(np.zeros(4096, np.float32))
    with pytest.raises(ValueError, match="outside Discrete"):
        venv.step(np.full(4096, 7))
    with pytest.raises(TypeError, match="seed"):
        venv.reset(seed=float("nan"))
    with pytest.raises(ValueError, match="a list of 2 seeds for 4096 rows"):
        venv.reset(seed=[1, 2])
    with pytest.raises(ValueError, match="num_envs = -1"):
        kestrel.make_vec("CartPole-v1", -1)
    pend = kestrel.make_vec("Pendulum-v1", 2)
    pend.reset(seed=0)
    with pytest.raises(ValueError, match="not finite"):
        pend.step(np.array([[np.nan], [0.0]]))
    arc = kestrel.make_vec("ARC-v0", 2, tasks_per_family=1)
    arc.reset(seed=0)
    with pytest.raises(ValueError, match=r"selection'\]: expected shape \(2, 30, 30\)"):
        arc.step({"operation": np.zeros(2, int), "selection": np.zeros((2, 30, 29), np.int8)})
    with pytest.raises(TypeError, match="operation, selection"):
        arc.step(np.zeros(2))


DTYPES = [np.int8, np.int64, np.uint16, np.float32, np.float64, np.bool_, np.complex64, object]


@settings(max_examples=150, deadline=None)
@given(
    env=st.sampled_from(["CartPole-v1", "Pendulum-v1", "Control-nav2d-v0", "ARC-v0"]),
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
    dtype=st.sampled_from(DTYPES),
    as_dict=st.booleans(),
)
def test_random_shapes_and_dtypes_never_panic(env, shape, dtype, as_dict):
    venv = _cached(env)
    try:
        a = np.zeros(shape, dtype=dtype)
    except (TypeError, ValueError):
        return
    action = {"operation": a, "selection": a} if as_dict else a
    try:
        venv.step(action)
    except (ValueError, TypeError, RuntimeError):
        pass  # anything else (PanicException is a BaseException) fails the test


_CACHE = {}


def _cached(env):
    if env not in _CACHE:
        v = kestrel.make_vec(env, 3, autoreset_mode="same_step", **({"tasks_per_family": 1} if env.startswith("ARC") else {}))
        v.reset(seed=0)
        _CACHE[env] = v
    return _CACHE[env]


def test_the_gil_is_released_during_a_step():
    venv = kestrel.make_vec("ARC-v0", 16384, tasks_per_family=2)
    venv.reset(seed=0)
    venv.action_space.seed(0)
    kw = kestrel._spaces.action_kwargs(venv.single_action_space, venv.action_space.sample(), venv.num_envs)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    th = threading.Thread(target=spin)
    th.start()
    time.sleep(0.02)
    during = []
    for _ in range(5):
        before = count[0]
        t0 = time.perf_counter()
        venv._core.step(**kw)  # one Rust call: the spinning thread only moves if the GIL is free
        during.append((count[0] - before, time.perf_counter() - t0))
    stop.set()
    th.join()
    assert max(c for c, _ in during) > 1000, during


def test_num_threads_is_a_performance_knob_only():
    outs = []
    for threads in (1, 2, None):
        v = kestrel.make_vec("ARC-jaxarc-v0", 96, num_threads=threads, tasks_per_family=2)
        v.reset(seed=9)
        v.action_space.seed(3)
        h = hashlib.sha256()
        for _ in range(15):
            o, r, te, tr, _ = v.step(v.action_space.sample())
            for x in [o["grid"], r, te, tr]:
                h.update(np.ascontiguousarray(x).tobytes())
        outs.append(h.hexdigest())
    assert outs[0] == outs[1] == outs[2]
    with pytest.raises(ValueError, match="num_threads"):
        kestrel.make_vec("CartPole-v1", 2, num_threads=0)


def test_arc_selection_values_and_operation_names():
    ops = kestrel.arc_operations("o2arc")
    assert len(ops) == 35 and len(kestrel.arc_operations("jaxarc")) == 35
    v = kestrel.make_vec("ARC-v0", 2, tasks_per_family=1)
    v.reset(seed=0)
    sel = np.zeros((2, 30, 30), np.int8)
    sel[1, 4, 5] = -1
    with pytest.raises(ValueError, match=r"selection'\]\[1\]\[4\]\[5\]: byte value 255, not 0 or 1"):
        v.step({"operation": np.zeros(2, np.int64), "selection": sel})
    sel64 = np.zeros((2, 30, 30), np.int64)
    sel64[0, 0, 0] = 256
    with pytest.raises(ValueError, match="0 or 1"):
        v.step({"operation": np.zeros(2, np.int64), "selection": sel64})
    v.step({"operation": np.full(2, 34), "selection": np.ones((2, 30, 30), bool)})


@pytest.mark.parametrize("canvas", [5, 10])
def test_small_arc_canvases_on_the_lane_kernel_keep_rows_shards_and_threads(canvas):
    n, lo, hi = 200, 70, 140
    kw = dict(canvas=canvas, tasks_per_family=2, max_episode_steps=9)
    whole = kestrel.make_vec("ARC-jaxarc-v0", n, **kw)
    assert whole.single_observation_space["grid"].shape == (canvas, canvas)
    space = whole.action_space
    space.seed(5)
    acts = [space.sample() for _ in range(30)]
    part = lambda t: {k: v[lo:hi] for k, v in acts[t].items()}
    for mode in MODES:
        w = kestrel.make_vec("ARC-jaxarc-v0", n, autoreset_mode=mode, **kw)
        s = kestrel.make_vec("ARC-jaxarc-v0", hi - lo, autoreset_mode=mode, row_offset=lo, **kw)
        ow, _ = w.reset(seed=3)
        os_, _ = s.reset(seed=3)
        np.testing.assert_array_equal(ow["grid"][lo:hi], os_["grid"])
        for t in range(30):
            a = w.step(acts[t])
            b = s.step(part(t))
            np.testing.assert_array_equal(a[0]["grid"][lo:hi], b[0]["grid"], err_msg=f"{mode} {t}")
            for x, y in zip(a[1:4], b[1:4]):
                np.testing.assert_array_equal(x[lo:hi], y, err_msg=f"{mode} {t}")
            ended = a[2] | a[3]
            if mode == AutoresetMode.DISABLED and ended[lo:hi].any():
                ow, _ = w.reset(options={"reset_mask": ended})
                os_, _ = s.reset(options={"reset_mask": ended[lo:hi]})
                np.testing.assert_array_equal(ow["grid"][lo:hi], os_["grid"], err_msg=f"reset {t}")
            elif mode == AutoresetMode.DISABLED and ended.any():
                w.reset(options={"reset_mask": ended})
    outs = []
    for threads in (1, 2):
        v = kestrel.make_vec("ARC-jaxarc-v0", 96, num_threads=threads, **kw)
        v.reset(seed=9)
        h = hashlib.sha256()
        for t in range(15):
            o, r, te, tr, _ = v.step({k: x[:96] for k, x in acts[t].items()})
            for x in [o["grid"], r, te, tr]:
                h.update(np.ascontiguousarray(x).tobytes())
        outs.append(h.hexdigest())
    assert outs[0] == outs[1]


def test_arc_generator_knobs_reach_the_env():
    # Inputs up to max_side, from the families asked for; the same keys as the CLI's flags.
    v = kestrel.make_vec("ARC-v0", 64, max_side=4, families=["symmetry", "recolor"], tasks_per_family=3)
    obs, _ = v.reset(seed=0)
    assert obs["grid_dim"].max() <= 4 and obs["grid_dim"].min() >= 3
    assert kestrel.config("ARC-v0", families=["tile"])["families"] == ["tile"]
    wide = kestrel.make_vec("ARC-v0", 64, max_side=30, tasks_per_family=3)
    assert wide.reset(seed=0)[0]["grid_dim"].max() > 4


def test_arc_canvas_must_be_compiled_in_and_bugs_named():
    for bad in (0, 7, 31):
        with pytest.raises(ValueError, match=r"canvas = %d: 5, 10 or 30" % bad):
            kestrel.make_vec("ARC-jaxarc-v0", 2, canvas=bad, tasks_per_family=1)
    with pytest.raises(ValueError, match=r'bugs = "some"`: unknown variant `some`, expected `none` or `all`'):
        kestrel.make_vec("ARC-jaxarc-v0", 2, bugs="some", tasks_per_family=1)
    with pytest.raises(ValueError, match=r"bugs = all: none in o2arc mode"):
        kestrel.make_vec("ARC-v0", 2, bugs="all", tasks_per_family=1)
    # JaxARC's bugs change what ops do (moves inverted, rotation about the canvas centre, ...):
    # the same actions from the same start give other grids with them on.
    grids = {}
    for bugs in ("none", "all"):
        for canvas in (5, 30):
            v = kestrel.make_vec("ARC-jaxarc-v0", 64, canvas=canvas, bugs=bugs, tasks_per_family=2)
            v.reset(seed=1)
            v.action_space.seed(2)
            grids[bugs, canvas] = [v.step(v.action_space.sample())[0]["grid"].copy() for _ in range(10)]
    for canvas in (5, 30):
        assert any((a != b).any() for a, b in zip(grids["none", canvas], grids["all", canvas])), canvas
    sel = np.zeros((2, 30, 30), np.int8)
    v = kestrel.make_vec("ARC-jaxarc-v0", 2, canvas=5, tasks_per_family=1)
    v.reset(seed=0)
    with pytest.raises(ValueError, match=r"selection'\]: expected shape \(2, 5, 5\)"):
        v.step({"operation": np.zeros(2, np.int64), "selection": sel})


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
@pytest.mark.parametrize("env_id", ["CartPole-v1", "Pendulum-v1", "TreasureHunt-v0"])
def test_built_in_episode_statistics_equal_gymnasiums_wrapper(env_id, mode, copy):
    # `infos["episode"]` counted in Rust equals what RecordEpisodeStatistics counts over the same
    # steps, in every autoreset mode (DISABLED: ended rows reset by mask, as its users do), for
    # a one-agent and a multi-agent env (one row per agent), handed out as the core's buffer
    # (copy=False) or copies of it (copy=True).
    kw = dict(seed=3, autoreset_mode=mode, copy=copy)
    if env_id == "TreasureHunt-v0":
        kw.update(max_turns=40)
    ours = kestrel.make_vec(env_id, 4, **kw)
    theirs = gym.wrappers.vector.RecordEpisodeStatistics(kestrel.make_vec(env_id, 4, episode_stats=False, **kw))
    ours.reset(seed=3)
    theirs.reset(seed=3)
    ours.action_space.seed(1)
    ended = 0
    for _ in range(600):
        a = ours.action_space.sample()
        _, r1, te1, tr1, i1 = ours.step(a)
        _, r2, te2, tr2, i2 = theirs.step(a)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(te1, te2)
        np.testing.assert_array_equal(tr1, tr2)
        assert ("episode" in i1) == ("episode" in i2)
        if "episode" in i1:
            np.testing.assert_array_equal(i1["_episode"], i2["_episode"])
            np.testing.assert_array_equal(i1["episode"]["r"], i2["episode"]["r"])
            np.testing.assert_array_equal(i1["episode"]["l"], i2["episode"]["l"])
            assert (i1["episode"]["t"] >= 0).all() and (i1["episode"]["t"][~i1["_episode"]] == 0).all()
            ended += int(i1["_episode"].sum())
        done = te1 | tr1
        if mode == "disabled" and done.any():
            mask = done.reshape(-1, ours.num_agents).any(axis=1).repeat(ours.num_agents)
            ours.reset(options={"reset_mask": mask})
            theirs.reset(options={"reset_mask": mask})
    assert ended >= 4


def test_gym_make_vec_reports_no_statistics_unless_asked_so_gymnasium_wrappers_compose():
    venv = gym.make_vec("kestrel/CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point")
    venv = gym.wrappers.vector.RecordEpisodeStatistics(venv)
    venv.reset(seed=0)
    seen = 0
    for _ in range(200):
        _, _, _, _, info = venv.step(np.zeros(8, np.int64))
        seen += int(info.get("_episode", np.zeros(8, bool)).sum())
    assert seen > 8
    own = gym.make_vec("kestrel/CartPole-v1", num_envs=8, vectorization_mode="vector_entry_point", episode_stats=True)
    own.reset(seed=0)
    assert any("episode" in own.step(np.zeros(8, np.int64))[4] for _ in range(200))


def test_seed_lists_in_gymnasiums_form_are_the_int_seed():
    """`reset(seed=[s, s+1, ...])` (what Gymnasium's vector envs make of `seed=s`) is `seed=s`;
    all-None is no seed; any other list is refused, saying why, before anything resets."""
    a, b = kestrel.make_vec("CartPole-v1", 4), kestrel.make_vec("CartPole-v1", 4)
    oa, _ = a.reset(seed=7)
    ob, _ = b.reset(seed=[7, 8, 9, 10])
    assert np.array_equal(oa, ob)
    b.reset(seed=np.arange(3, 7))
    assert np.array_equal(b.reset(seed=[None] * 4)[0].shape, (4, 4))
    for bad in ([7, 8, 9], [7, 9, 10, 11], [None, 1, 2, 3]):
        with pytest.raises(ValueError, match="seed"):
            b.reset(seed=bad)


@pytest.mark.parametrize("mode", ["next_step", "same_step", "disabled"])
def test_info_columns_are_the_same_with_and_without_copies_and_through_step_async(mode):
    """The core writes the episode statistics and ARC's info into buffers that copy=False's
    infos view: they equal copy=True's fresh arrays and step_async/step_wait's, after every
    step and every (masked) reset, and copy=False hands out the same arrays each time."""
    kw = dict(canvas=5, tasks_per_family=2, max_episode_steps=6, autoreset_mode=mode)
    envs = {name: kestrel.make_vec("ARC-jaxarc-v0", 8, copy=(name == "copy"), **kw)
            for name in ("copy", "views", "async")}
    infos = {name: v.reset(seed=5)[1] for name, v in envs.items()}
    rng = np.random.default_rng(2)
    keys = ("similarity", "improvement", "operation", "step")
    ended = 0
    views = None
    for k in range(40):
        acts = {"operation": rng.integers(0, 34, 8), "selection": rng.integers(0, 2, (8, 5, 5)).astype(np.uint8)}
        for name, v in envs.items():
            if name == "async":
                v.step_async(acts)
                out = v.step_wait()
            else:
                out = v.step(acts)
            infos[name] = out[4]
            done = out[2] | out[3]
        for name in ("views", "async"):
            for key in keys:
                np.testing.assert_array_equal(infos[name][key], infos["copy"][key], err_msg=f"{name} {key} {k}")
            assert ("episode" in infos[name]) == ("episode" in infos["copy"])
            if "episode" in infos["copy"]:
                for key in "rlt":
                    got, want = infos[name]["episode"][key], infos["copy"]["episode"][key]
                    np.testing.assert_array_equal(got[infos["copy"]["_episode"]] > 0, want[infos["copy"]["_episode"]] > 0)
                    if key != "t":  # wall seconds differ between the envs
                        np.testing.assert_array_equal(got, want)
                np.testing.assert_array_equal(infos[name]["_episode"], infos["copy"]["_episode"])
        if "episode" in infos["views"]:
            ended += int(infos["views"]["_episode"].sum())
            if views is not None:
                assert infos["views"]["episode"]["r"] is views  # the same array every step
            views = infos["views"]["episode"]["r"]
            assert (infos["copy"]["episode"]["l"][~infos["copy"]["_episode"]] == 0).all()
        assert infos["views"]["similarity"] is envs["views"]._arcbufs[0]
        assert not infos["views"]["similarity"].flags.writeable  # the core's buffer: read-only
        if mode == "disabled" and done.any():
            for name, v in envs.items():
                infos[name] = v.reset(options={"reset_mask": done})[1]
            for key in keys:
                np.testing.assert_array_equal(infos["views"][key], infos["copy"][key])
            assert (infos["views"]["step"][done] == 0).all()
    assert ended >= 8


@pytest.mark.parametrize("env_id,n,kw", [
    ("ARC-jaxarc-v0", 150, dict(canvas=5, tasks_per_family=2, max_episode_steps=6)),
    ("ARC-jaxarc-v0", 150, dict(canvas=5, tasks_per_family=2, max_episode_steps=6, selection="bbox")),
    ("ARC-v0", 20, dict(canvas=5, tasks_per_family=2, max_episode_steps=5, selection="point")),
    ("CartPole-v1", 70, dict(max_episode_steps=9)),
    ("TreasureHunt-v0", 6, dict(max_turns=5)),
], ids=["lanes-mask", "lanes-bbox", "o2arc-point", "cartpole", "hunt-agents"])
@pytest.mark.parametrize("mode", ["next_step", "same_step"])
def test_rollout_is_step_after_step(env_id, n, kw, mode):
    """`rollout` returns what as many `step` calls return, step by step (observations,
    rewards, flags, the episodes that ended, same-step final observations), and leaves the env
    where they leave it (the next step, ARC's info included, agrees): the lane kernel (each
    block through every step on one thread), the trait's loop (o2arc), actions filled in bulk
    (CartPole) and several agents an env."""
    steps = 12
    a = kestrel.make_vec(env_id, n, autoreset_mode=mode, **kw)
    b = kestrel.make_vec(env_id, n, autoreset_mode=mode, **kw)
    a.reset(seed=3)
    b.reset(seed=3)
    a.action_space.seed(4)
    acts = [a.action_space.sample() for _ in range(steps + 1)]
    stack = (lambda xs: {k: np.stack([x[k] for x in xs]) for k in xs[0]}) if isinstance(acts[0], dict) else np.stack
    obs, rew, term, trunc, info = a.rollout(stack(acts[:steps]))
    flat = (lambda o: o["grid"]) if isinstance(obs, dict) else (lambda o: o)
    assert rew.shape == term.shape == trunc.shape == (steps, a.num_envs)
    ended = 0
    for t in range(steps):
        o, r, te, tr, i = b.step(acts[t])
        np.testing.assert_array_equal(flat(obs)[t], flat(o), err_msg=f"obs {t}")
        np.testing.assert_array_equal(rew[t], r, err_msg=f"rewards {t}")
        np.testing.assert_array_equal(term[t], te, err_msg=f"terminated {t}")
        np.testing.assert_array_equal(trunc[t], tr, err_msg=f"truncated {t}")
        if "episode" in i:
            ended += i["_episode"].sum()
            np.testing.assert_array_equal(info["_episode"][t], i["_episode"])
            for k in "rl":
                np.testing.assert_array_equal(info["episode"][k][t][i["_episode"]], i["episode"][k][i["_episode"]])
        elif "_episode" in info:
            assert not info["_episode"][t].any()
        if "final_obs" in i:
            for row in np.flatnonzero(i["_final_obs"]):
                want = i["final_obs"][row]
                got = info["final_obs"]["grid"][t][row] if isinstance(want, dict) else info["final_obs"][t][row]
                np.testing.assert_array_equal(got, want["grid"] if isinstance(want, dict) else want)
    assert ended > 0, "episodes end within the rollout"
    x, y = a.step(acts[steps]), b.step(acts[steps])
    np.testing.assert_array_equal(flat(x[0]), flat(y[0]))
    for k in ("similarity", "improvement", "operation", "step"):
        if k in y[4]:
            np.testing.assert_array_equal(x[4][k], y[4][k], err_msg=k)


def test_rollout_refusals_change_nothing():
    kw = dict(canvas=5, tasks_per_family=2, max_episode_steps=6)
    a = kestrel.make_vec("ARC-jaxarc-v0", 70, **kw)
    b = kestrel.make_vec("ARC-jaxarc-v0", 70, **kw)
    a.reset(seed=1)
    b.reset(seed=1)
    ops = np.zeros((3, 70), np.int64)
    sel = np.zeros((3, 70, 5, 5), np.uint8)
    bad = sel.copy()
    bad[2, 69, 4, 4] = 2
    with pytest.raises(ValueError, match="step 2"):
        a.rollout({"operation": ops, "selection": bad})
    with pytest.raises(ValueError, match=r"expected shape \(steps, 70"):
        a.rollout({"operation": ops[:, :69], "selection": sel[:, :69]})
    with pytest.raises(ValueError, match="same number of steps"):
        a.rollout({"operation": ops[:2], "selection": sel})
    np.testing.assert_array_equal(a.rollout({"operation": ops, "selection": sel})[0]["grid"],
                                  b.rollout({"operation": ops, "selection": sel})[0]["grid"])
    d = kestrel.make_vec("CartPole-v1", 4, autoreset_mode="disabled")
    d.reset(seed=0)
    with pytest.raises(RuntimeError, match="DISABLED"):
        d.rollout(np.zeros((2, 4), np.int64))


def test_rollout_copy_false_reuses_its_arrays_and_clears_old_episodes():
    """copy=False: each rollout of the same length returns the same arrays, overwritten, with
    no episode entry left from the one before; the values are copy=True's."""
    kw = dict(canvas=5, tasks_per_family=2, max_episode_steps=4)
    a = kestrel.make_vec("ARC-jaxarc-v0", 70, copy=False, **kw)
    b = kestrel.make_vec("ARC-jaxarc-v0", 70, **kw)
    a.reset(seed=2)
    b.reset(seed=2)
    a.action_space.seed(3)
    plan = [a.action_space.sample() for _ in range(10)]
    acts = {k: np.stack([p[k] for p in plan]) for k in plan[0]}
    first = a.rollout(acts)
    b.rollout(acts)
    firsts = [first[0]["grid"], first[1], first[4]["episode"]["r"], first[4]["_episode"]]
    for _ in range(2):
        x, y = a.rollout(acts), b.rollout(acts)
        # (a dict observation's entries are views of the one reused buffer)
        assert np.shares_memory(x[0]["grid"], firsts[0]) and x[1] is firsts[1] and x[4]["_episode"] is firsts[3]
        np.testing.assert_array_equal(x[0]["grid"], y[0]["grid"])
        np.testing.assert_array_equal(x[1], y[1])
        for k in "rlt":
            got, want = x[4]["episode"][k], y[4]["episode"][k]
            np.testing.assert_array_equal(got != 0, want != 0, err_msg=k)
        np.testing.assert_array_equal(x[4]["episode"]["r"], y[4]["episode"]["r"])
        np.testing.assert_array_equal(x[4]["_episode"], y[4]["_episode"])
