#!/usr/bin/env python3
"""kestrel.dist on Ray against in-process Kestrel, one launch, Markdown for BENCHMARKS.md.

  A. Per-generation cost of evaluating a Neuro-CartPole population (the CLI's `problem =
     "cartpole"`: 58 parameters, 500-step episodes) of 64 / 256 / 1024 random candidates:
     in-process (`EvoProblem.evaluate` on 1 and 2 threads) against `kestrel.dist.evaluate` with
     1 and 2 shards of one thread each on a local Ray instance (2 CPUs). The difference is
     Ray's per-generation overhead; the break-even generation time follows from it.
  B. The floor of that overhead: a 1-row generation (the evaluation itself ~µs) through Ray,
     and the bytes a generation moves (population out once through the object store,
     fitness back, the pickled task arguments).
  C. Sweep throughput: 8 short ALLO runs (2 maps x 4 seeds) through `kestrel.dist.sweep` with
     the local engine (one run after another, 2 threads each) and the Ray engine (2 tasks of
     one thread at a time).
  D. A model of multi-machine speed-up (this machine cannot measure it): for M machines,
     T(M) = T1 / M + overhead(M), overhead from A/B plus the stated network assumptions.

Usage: python3 tools/compare/dist.py [--quick]  (creates tools/venv-raybench from
crates/py/requirements-ray.txt and installs a release wheel of ./crates/py into it)
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ONE_THREAD, ROOT, commit, venv_python  # noqa: E402

BODY = textwrap.dedent(r'''
import json, os, pickle, sys, tempfile, time
import numpy as np, ray
import kestrel.dist as kd
quick = sys.argv[1] == "1"
reps = 5 if quick else 15
out = {}
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)

def med(f, reps=reps):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return float(np.median(ts))

spec = kd.ProblemSpec.evo(problem="cartpole", seed=0)
p = spec.build()
for pop in (64, 256, 1024):
    x = np.random.default_rng(pop).normal(size=(pop, spec.num_dims)).astype(np.float32)
    k = spec.key(0)
    r = {"local_1": med(lambda: p.evaluate(x, k, 0, 1)), "local_2": med(lambda: p.evaluate(x, k, 0, 2))}
    for s in (1, 2):
        r[f"ray_{s}"] = med(lambda: kd.evaluate(spec, x, num_shards=s))
    r["bytes_out"] = x.nbytes
    r["bytes_back"] = pop * 4
    out[f"gen_{pop}"] = r
x1 = np.zeros((1, spec.num_dims), np.float32)
out["floor_1row_local"] = med(lambda: p.evaluate(x1, spec.key(0), 0, 1), reps=50)
out["floor_1row_ray_1"] = med(lambda: kd.evaluate(spec, x1, num_shards=1), reps=50)
for n in (2, 4, 8, 16):
    xn = np.zeros((n, spec.num_dims), np.float32)
    out[f"floor_ray_{n}"] = med(lambda: kd.evaluate(spec, xn, num_shards=n), reps=30)
# The driver's own cost per task: submitting 64 one-row tasks (not waiting), then gathering.
x64 = np.zeros((64, spec.num_dims), np.float32)
subs, gets = [], []
for _ in range(10):
    ref = ray.put(x64)
    t = time.perf_counter()
    fs = [kd._submit(kd._eval_rows, "", spec, ref, i, i + 1, spec.key(0).raw, 0, 1, num_cpus=1) for i in range(64)]
    subs.append((time.perf_counter() - t) / 64)
    ray.wait(fs, num_returns=64)
    t = time.perf_counter(); ray.get(fs); gets.append((time.perf_counter() - t) / 64)
out["submit_per_task"] = float(np.median(subs))
out["get_per_task"] = float(np.median(gets))
out["task_arg_bytes"] = len(pickle.dumps((kd._eval_rows, os.getcwd(), spec, 0, 1, spec.key(0).raw, 0, 1)))

spec_text = """
kind = "allo"
name = "bench"
seeds = 4
[base]
num_samples = 20000
batch_size = 256
num_eigenvectors = 6
steps = %d
eval_every = 500
checkpoint_every = 0
[grid]
map = ["builtin:rooms-2-5", "builtin:open-7"]
""" % (300 if quick else 1500)
with tempfile.TemporaryDirectory() as d:
    t = time.perf_counter(); kd.sweep(spec_text, out_dir=os.path.join(d, "local"), engine="local", threads=2)
    out["sweep_local"] = time.perf_counter() - t
    t = time.perf_counter(); kd.sweep(spec_text, out_dir=os.path.join(d, "ray"), engine="ray", threads=1)
    out["sweep_ray"] = time.perf_counter() - t
    a = json.load(open(os.path.join(d, "local", "bench", "table.json")))
    b = json.load(open(os.path.join(d, "ray", "bench", "table.json")))
    out["sweep_same_table"] = a == b
print(json.dumps(out))
''')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="also write the measurements here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    py = venv_python("venv-raybench", "crates/py/requirements-ray.txt")
    env = {**os.environ, **ONE_THREAD, "PATH": os.path.dirname(py) + os.pathsep + os.environ["PATH"],
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--force-reinstall", "--no-deps",
                    os.path.join(ROOT, "crates", "py")], check=True, env=env)
    res = json.loads(subprocess.run([py, "-c", BODY, "1" if a.quick else "0"], check=True, capture_output=True,
                                    text=True, env=env, cwd="/tmp").stdout.strip().splitlines()[-1])
    cpu = platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    print(f"\ncommit {commit()}, {cpu}, {os.cpu_count()} cores, Ray {ray_version(py)} local instance (2 CPUs), "
          f"median of {5 if a.quick else 15} generations\n")
    print("| Neuro-CartPole generation | in-process, 1 thread | in-process, 2 threads | Ray, 1 shard | Ray, 2 shards "
          "| Ray overhead (1 shard − in-process 1 thread) | bytes out / back |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    overheads = []
    for pop in (64, 256, 1024):
        r = res[f"gen_{pop}"]
        o = r["ray_1"] - r["local_1"]
        overheads.append(o)
        print(f"| {pop} candidates | {ms(r['local_1'])} | {ms(r['local_2'])} | {ms(r['ray_1'])} | {ms(r['ray_2'])} "
              f"| {ms(o)} | {r['bytes_out']:,} / {r['bytes_back']:,} |")
    f1 = res["floor_1row_ray_1"]
    fl = {n: res[f"floor_ray_{n}"] for n in (2, 4, 8, 16)}
    # Fixed cost a + b * tasks, least squares over 1..16 tasks.
    ns = [1.0, 2.0, 4.0, 8.0, 16.0]
    ts = [f1] + [fl[n] for n in (2, 4, 8, 16)]
    mn, mt = sum(ns) / 5, sum(ts) / 5
    b = sum((n - mn) * (t - mt) for n, t in zip(ns, ts)) / sum((n - mn) ** 2 for n in ns)
    a0 = mt - b * mn
    print(f"\nFloor: a 1-row generation costs {res['floor_1row_local'] * 1e6:.1f} µs in-process and through Ray "
          f"{ms(f1)} (1 task), {ms(fl[2])} (2), {ms(fl[4])} (4), {ms(fl[8])} (8), {ms(fl[16])} (16 tasks, one row each): "
          f"≈ {ms(a0)} + {b * 1e3:.3f} ms per task. A task's pickled arguments are {res['task_arg_bytes']} bytes besides "
          f"the population's object-store reference.")
    sp = res["submit_per_task"] + res["get_per_task"]
    print(f"\nThe driver's own cost per task (submitting 64 tasks, then fetching their results): "
          f"{res['submit_per_task'] * 1e3:.3f} ms + {res['get_per_task'] * 1e3:.3f} ms. The slope above is larger "
          "because the tasks queue for this machine's 2 worker slots; on M machines they run side by side.")
    print(f"\nBreak-even on this machine: Ray's fixed cost per generation is about {ms(f1)}; spreading a generation "
          f"over M workers pays when T_gen (1 - 1/M) > {ms(a0)} + M x {b * 1e3:.3f} ms, i.e. from T_gen ≈ "
          f"{ms(2 * (a0 + 2 * b))} for M = 2.")
    sl, sr = res["sweep_local"], res["sweep_ray"]
    print(f"\nSweep of 8 ALLO runs (2 maps x 4 seeds): local engine {sl:.2f} s (one after another, 2 threads each), "
          f"Ray engine {sr:.2f} s (2 one-thread tasks at a time, ray.init excluded): {sl / sr:.2f}x; "
          f"identical tables: {res['sweep_same_table']}.")
    # D. model
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu, "ray": ray_version(py), "measured": res}, f, indent=1)
    print("\nModel (assumptions: the generation's work splits evenly over M machines of this core count, one task "
          f"each; per-generation cost {ms(a0)} (one task's round trip, measured) + per task {sp * 1e3:.3f} ms "
          f"(the driver's submit and fetch, measured; first figure) or {b * 1e3:.3f} ms (the slope measured on this "
          "machine, where tasks queue: a pessimistic bound; second figure); 10 Gbit/s links; "
          "the driver sends the population once per machine and receives 4 bytes per candidate; ask/tell "
          "on the driver as measured in-process):\n")
    print("| generation in-process (2 threads) | M = 4 | M = 16 | M = 64 |\n|---|---:|---:|---:|")
    for tgen, label in ((0.01, "10 ms"), (0.1, "100 ms"), (1.0, "1 s"), (10.0, "10 s")):
        cells = []
        for m in (4, 16, 64):
            bytes_gen = m * 1024 * 58 * 4 + 1024 * 4
            net = bytes_gen * 8 / 10e9
            fast, slow = tgen / m + a0 + sp * m + net, tgen / m + a0 + b * m + net
            cells.append(f"{tgen / fast:.1f}x / {tgen / slow:.1f}x")
        print(f"| {label} | " + " | ".join(cells) + " |")


def ray_version(py):
    return subprocess.run([py, "-c", "import ray; print(ray.__version__)"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
