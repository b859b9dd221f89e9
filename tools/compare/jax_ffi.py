"""The cost of stepping a Kestrel env from JAX, in one launch: the XLA FFI call inside a jitted
`lax.scan` (kestrel.jax), the same FFI step dispatched from a Python loop (one jitted call a
step), the numpy path (`kestrel.make_vec(...).step` from a Python loop), and the same numpy
step behind `jax.pure_callback` inside the jitted scan (what a JAX user writes without
kestrel.jax). CartPole-v1, 1 to 4,096 envs, one core (taskset -c 0, RAYON_NUM_THREADS=1, XLA's
CPU client on one thread); every path starts from `reset(seed=0)` and steps the same zero
actions, the four alternated round by round. Prints a markdown table (µs a step, and ratios
to the FFI scan).

    tools/venv-sb3/bin/python tools/compare/jax_ffi.py [--steps-budget N] [--rounds R] [--json PATH]
"""

import argparse
import json
import os
import subprocess
import sys
import time

from common import commit, cpu_model

if os.environ.get("KESTREL_PINNED") != "1":
    env = {**os.environ, "KESTREL_PINNED": "1", "RAYON_NUM_THREADS": "1",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false --xla_force_host_platform_device_count=1",
           "JAX_PLATFORMS": "cpu"}
    sys.exit(subprocess.call(["taskset", "-c", "0", sys.executable, *sys.argv], env=env))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import kestrel  # noqa: E402
import kestrel.jax as kj  # noqa: E402


def alternated(fs, rounds):
    """Each of `fs`' fastest of `rounds` timed calls, seconds, the calls alternated round by
    round (after one warm-up call each), so a slow spell of the machine hits every path."""
    for f in fs:
        f()
    out = [[] for _ in fs]
    for _ in range(rounds):
        for f, times in zip(fs, out):
            t = time.perf_counter()
            f()
            times.append(time.perf_counter() - t)
    return [min(t) for t in out]


def measure(n, steps, rounds):
    zeros_np = np.zeros(n, np.int64)

    # numpy: a Python loop over VectorEnv.step (copy=False: no array made a step).
    v = kestrel.make_vec("CartPole-v1", n, autoreset_mode="same_step", copy=False, episode_stats=False)
    v.reset(seed=0)

    def numpy_loop():
        for _ in range(steps):
            v.step(zeros_np)

    # FFI inside one jitted scan.
    env = kj.make_vec("CartPole-v1", n)
    zeros = jnp.zeros(n, jnp.int32)

    @jax.jit
    def scan(h):
        def body(h, _):
            h, obs, r, te, tr = env.step(h, zeros)
            return h, r[0]
        return jax.lax.scan(body, h, None, length=steps)

    state = {"h": env.reset(env.handle, 0)[0]}

    def ffi_scan():
        h, r = scan(state["h"])
        state["h"] = jax.block_until_ready(h)

    # The FFI step jitted, dispatched once a step from Python.
    step = jax.jit(env.step)

    def ffi_dispatch():
        h = state["h"]
        for _ in range(steps):
            h, obs, r, te, tr = step(h, zeros)
        state["h"] = jax.block_until_ready(h)

    # The numpy step behind jax.pure_callback inside the jitted scan.
    w = kestrel.make_vec("CartPole-v1", n, autoreset_mode="same_step", copy=False, episode_stats=False)
    w.reset(seed=0)
    shapes = (jax.ShapeDtypeStruct((n, 4), jnp.float32), jax.ShapeDtypeStruct((n,), jnp.float32))

    def host_step(a):
        obs, r, te, tr, _ = w.step(np.asarray(a, np.int64))
        return obs.copy(), r.copy()

    @jax.jit
    def cb_scan(a):
        def body(a, _):
            obs, r = jax.pure_callback(host_step, shapes, a)
            return a + (r[0] * 0).astype(jnp.int32), r[0]  # the next call depends on this one
        return jax.lax.scan(body, a, None, length=steps)

    def callback_scan():
        jax.block_until_ready(cb_scan(zeros))

    t_scan, t_dispatch, t_numpy, t_cb = alternated([ffi_scan, ffi_dispatch, numpy_loop, callback_scan], rounds)
    # The end states are sane: every path's observations finite, the FFI env's handle advanced.
    assert np.isfinite(v.step(zeros_np)[0]).all() and np.isfinite(w.step(zeros_np)[0]).all()
    assert int(state["h"][1]) > 1
    env.close()
    per = lambda t: 1e6 * t / steps  # noqa: E731
    return per(t_scan), per(t_dispatch), per(t_numpy), per(t_cb)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps-budget", type=int, default=400_000, help="env-steps per measurement")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="1,16,256,4096")
    ap.add_argument("--json", help="also write the rows here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    rows = []
    print(f"CPU: {cpu_model()}; commit {commit()}; jax {jax.__version__}; one core, best of {a.rounds} alternated rounds")
    print()
    print("| envs | FFI in jitted scan (µs/step) | FFI, jitted step from Python | numpy VectorEnv.step | "
          "numpy step via pure_callback in scan | numpy / FFI scan | pure_callback / FFI scan |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in map(int, a.sizes.split(",")):
        steps = max(100, min(5000, a.steps_budget // n))
        s, d, nump, cb = measure(n, steps, a.rounds)
        print(f"| {n} | {s:.2f} | {d:.2f} | {nump:.2f} | {cb:.2f} | {nump / s:.1f}x | {cb / s:.1f}x |", flush=True)
        rows.append({"envs": n, "ffi_scan_us": s, "ffi_dispatch_us": d, "numpy_us": nump, "pure_callback_us": cb})
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu_model(), "jax": jax.__version__, "rounds": a.rounds,
                       "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
