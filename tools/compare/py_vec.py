#!/usr/bin/env python3
"""Kestrel from Python against the Python peers, one launch, Markdown table for BENCHMARKS.md.

Workloads (2 threads for every env engine; BLAS/XLA pinned to one thread):
  A. CartPole-v1, random actions (a pool of 64 pre-drawn action batches cycled, the same for
     every engine), 8 / 64 / 1024 / 4096 envs: Kestrel `make_vec` (copy=False and copy=True,
     and copy=False with the built-in episode statistics off: their cost, alternated twice)
     vs gymnasium 1.4 SyncVectorEnv and AsyncVectorEnv (8 and 64 envs only: one process per
     env) and EnvPool 1.2.5 (sync `step`, and async send/recv with batch_size = num_envs / 2).
     Also the per-call time of `step` at 8 envs.
  B. ARC 30x30, ARC-AGI-1 training tasks, o2arc, random mask selections, 1024 envs: Kestrel
     from Python (pre-drawn actions) vs Kestrel's Rust-only `kestrel arc bench` (sampling
     fused in the step) vs ARCLE 0.2.6 (one env, its own `action_space.sample()`).
  C. ES ask + tell per generation (sphere evaluated in numpy, outside the timing), CMA-ES at
     d = 10 and 100 with the default population: Kestrel from Python vs pycma 4.5.0 and
     evosax 0.3.2 (jit-compiled ask and tell, compile excluded).
  D. JaxARC's paper setup from Python: one 5x5 Mini-ARC task, jaxarc with JaxARC 1.0.3's bugs,
     bbox selections, 1024 and 4096 envs: Kestrel from Python (`canvas=5`: the lane kernel;
     pre-drawn batches of bbox masks; NEXT_STEP autoreset) vs Kestrel's Rust-only lanes (`kestrel arc bench
     --kernel lanes`, bboxes drawn in the kernel) vs JaxARC jit(vmap(scan)) (arc.py's code);
     also Kestrel's `VectorEnv.rollout` (64 and 32 pre-drawn steps stacked, one call), masks and
     bboxes (at 4,096 envs a 64-step call reads 8.6-10.5 MB of actions twice, by the check and
     by the steps; a 32-step call half that); and Rust's rollout from action arrays (`kestrel env
     bench --rollout 64`: uniform ops and 0/1 masks) against Python's rollout of the same kind of
     masks, which tells the arrays' cost from Python's.
     Three rounds, each the Rust-only bench then every Python form, each figure its best round
     (the Rust-only figure moved 7-17% between launches minutes apart when it ran first alone).

Usage: python3 tools/compare/py_vec.py [--quick] [--workloads ABCD]   (creates
tools/venv-pyvec on first use and installs the release wheel of ./crates/py into it)
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ONE_THREAD, ROOT, commit, kestrel_release, venv_python  # noqa: E402

BODY = textwrap.dedent(r'''
import json, os, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
quick = sys.argv[1] == "1"
data = sys.argv[2]
mini = sys.argv[3]
work = sys.argv[4]
sys.path.insert(0, sys.argv[5])  # tools/compare, for arc.py's Mini-ARC batches
exe = sys.argv[6]  # the release `kestrel`, for the Rust-only figure between the Python ones
from arc import mini_batches
out = {}
budget = 0.4 if quick else 1.5

def timed(step, n_rows, budget=budget, warm=3):
    for _ in range(warm):
        step()
    reps = []
    for _ in range(3):
        k, t0 = 0, time.perf_counter()
        while True:
            step(); k += 1
            el = time.perf_counter() - t0
            if el > budget / 3:
                break
        reps.append(k * n_rows / el)
    return float(np.median(reps))

# A. CartPole
import gymnasium as gym, kestrel
rng = np.random.default_rng(0)
for n in ([8, 64, 1024] if quick else [8, 64, 1024, 4096]) if "A" in work else []:
    import envpool
    acts = [rng.integers(0, 2, n).astype(np.int64) for _ in range(64)]
    it = {"i": 0}
    def nxt():
        it["i"] = (it["i"] + 1) % 64
        return acts[it["i"]]
    row = {}
    # The built-in episode statistics (infos["episode"]) on and off, alternated in one launch.
    for rep in range(2):
        for copy, stats in ((False, True), (True, True), (False, False)):
            v = kestrel.make_vec("CartPole-v1", n, copy=copy, episode_stats=stats)
            v.reset(seed=0)
            key = f"kestrel_copy_{copy}" + ("" if stats else "_nostats")
            row[key] = max(row.get(key, 0.0), timed(lambda: v.step(nxt()), n))
    if n == 8:
        for copy in (False, True):
            row[f"kestrel_us_per_call_copy_{copy}"] = 1e6 * n / row[f"kestrel_copy_{copy}"]
    s = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n)
    s.reset(seed=0)
    row["gym_sync"] = timed(lambda: s.step(nxt()), n, budget=budget / 2)
    s.close()
    if n <= 64:
        a = gym.vector.AsyncVectorEnv([lambda: gym.make("CartPole-v1")] * n)
        a.reset(seed=0)
        row["gym_async"] = timed(lambda: a.step(nxt()), n, budget=budget / 2)
        a.close()
    e = envpool.make_gymnasium("CartPole-v1", num_envs=n, num_threads=2, seed=0)
    e.reset()
    row["envpool_sync"] = timed(lambda: e.step(nxt()), n)
    half = n // 2
    ea = envpool.make_gymnasium("CartPole-v1", num_envs=n, batch_size=half, num_threads=2, seed=0)
    ea.async_reset()
    def astep():
        o, r, te, tr, info = ea.recv()
        ea.send(nxt()[:half], info["env_id"])
    row["envpool_async"] = timed(astep, half)
    out[f"cartpole_{n}"] = row
    print(json.dumps({f"cartpole_{n}": row}), file=sys.stderr, flush=True)

# B. ARC from Python, 1024 envs
def pooled(v, pool):
    it = {"i": 0}
    def step():
        it["i"] = (it["i"] + 1) % len(pool)
        v.step(pool[it["i"]])
    return step

if "B" in work:
    n = 1024
    # ARC's info columns (similarity, improvement, operation, step) on and off, alternated.
    for rep in range(2):
        for info in (True, False):
            v = kestrel.make_vec("ARC-v0", n, data=data, copy=False, autoreset_mode="same_step", arc_info=info)
            v.reset(seed=0)
            v.action_space.seed(0)
            key = "arc_python_1024" + ("" if info else "_noinfo")
            out[key] = max(out.get(key, 0.0), timed(pooled(v, [v.action_space.sample() for _ in range(8)]), n))

# D. Mini-ARC 5x5 on the lane kernel from Python
def mini_rust(n):
    """Rust-only lanes (`kestrel arc bench --kernel lanes`, bboxes drawn in the kernel)."""
    import subprocess
    r = subprocess.run([exe, "arc", "bench", "--json", "--no-ops", "--data", mini, "--canvas", "5", "--sel", "bbox",
                        "--mode", "jaxarc", "--bugs", "all", "--threads", "2", "--num-envs", str(n),
                        "--seconds", "0.5" if quick else "1.5", "--kernel", "lanes"], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["batches"][0]["steps_per_s"]

def mini_rust_arrays(n):
    """Rust rollouts from action arrays (`kestrel env bench --rollout 64`: uniformly random ops
    and 0/1 masks drawn into arrays, every step's columns written, the episodes counted: the
    path of `VectorEnv.rollout` without Python)."""
    import subprocess
    r = subprocess.run([exe, "env", "bench", "ARC-jaxarc-v0", "--json", "--set", f"data={mini}", "--set", "canvas=5",
                        "--set", "bugs=all", "--threads", "2", "--num-envs", str(n), "--rollout", "64",
                        "--seconds", "0.5" if quick else "1.5"], check=True, capture_output=True, text=True)
    return json.loads(r.stdout)["batches"][0]["steps_per_s"]

for n in [1024, 4096] if "D" in work else []:
    # Masks, and the same boxes in JaxARC's bbox form (tools/compare/arc.py).
    pool, box_pool = mini_batches(n)
    # NEXT_STEP (gymnasium's default): SAME_STEP adds gymnasium's per-row `final_obs` object
    # array, built in Python for the ~3% of rows that end each step. ARC's info columns on
    # and off, and the mask and bbox forms, alternated, and the Rust-only bench between them
    # (each round: Rust-only, then every Python form), so the machine's drift within the
    # launch hits the ratio's two sides alike; each figure is its best round.
    # `VectorEnv.rollout` of 64 and of 32 steps (the pool cycled, stacked before timing) in both
    # forms.
    # And 64 steps of the same distribution as `env bench`'s draws (uniform ops, 0/1 masks; the
    # form "uniform"), for the ratio of Python's rollout to Rust's over the same kind of arrays.
    rng = np.random.default_rng(3)
    uniform = [{"operation": rng.integers(0, 35, n), "selection": rng.integers(0, 2, (n, 5, 5)).astype(bool)}
               for _ in range(64)]
    for rep in range(3):
        out[f"mini_rust_{n}"] = max(out.get(f"mini_rust_{n}", 0.0), mini_rust(n))
        out[f"mini_rust_arrays_{n}"] = max(out.get(f"mini_rust_arrays_{n}", 0.0), mini_rust_arrays(n))
        for info, form, roll in ((True, "mask", 0), (False, "mask", 0), (True, "bbox", 0), (True, "mask", 64),
                                 (True, "bbox", 64), (True, "mask", 32), (True, "bbox", 32), (True, "uniform", 64)):
            v = kestrel.make_vec("ARC-jaxarc-v0", n, data=mini, canvas=5, bugs="all", copy=False,
                                 autoreset_mode="next_step", arc_info=info, selection="bbox" if form == "bbox" else "mask")
            v.reset(seed=0)
            key = f"mini_python_{n}" + ("" if info else "_noinfo") + ("_bboxform" if form == "bbox" else "")
            src = {"mask": pool, "bbox": box_pool, "uniform": uniform}[form]
            if roll:
                stacked = {k: np.stack([src[t % len(src)][k] for t in range(roll)]) for k in src[0]}
                key = key + "_rollout" + ("" if roll == 64 else f"{roll}") + ("_uniform" if form == "uniform" else "")
                out[key] = max(out.get(key, 0.0), timed(lambda: v.rollout(stacked), roll * n, warm=1))
            else:
                out[key] = max(out.get(key, 0.0), timed(pooled(v, src), n))

# C. ES ask/tell
for d in (10, 100) if "C" in work else []:
    import cma, jax, jax.numpy as jnp
    from evosax.algorithms import CMA_ES
    es = kestrel.evo.CMAES(d, seed=0)
    def k_gen():
        x = es.ask(); es.tell(x, (x.astype(np.float64) ** 2).sum(1))
    out[f"es_kestrel_{d}"] = timed(k_gen, 1, budget=budget / 2)
    pc = cma.CMAEvolutionStrategy(np.zeros(d), 0.5, {"popsize": es.pop_size, "seed": 1, "verbose": -9})
    def c_gen():
        X = pc.ask(); pc.tell(X, [float((x ** 2).sum()) for x in X])
    out[f"es_pycma_{d}"] = timed(c_gen, 1, budget=budget / 2)
    ev = CMA_ES(population_size=es.pop_size, solution=jnp.zeros(d))
    params = ev.default_params
    key = jax.random.key(0)
    st = {"s": ev.init(key, jnp.zeros(d), params), "k": key}
    ask = jax.jit(ev.ask); tell = jax.jit(ev.tell)
    def e_gen():
        st["k"], k1, k2 = jax.random.split(st["k"], 3)
        x, s = ask(k1, st["s"], params)
        f = np.asarray((np.asarray(x) ** 2).sum(1))
        s, _ = tell(k2, x, jnp.asarray(f), s, params)
        st["s"] = jax.block_until_ready(s)
    out[f"es_evosax_{d}"] = timed(e_gen, 1, budget=budget / 2)
    out[f"es_pop_{d}"] = es.pop_size
print(json.dumps(out))
''')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "arc-agi-1", "training"))
    ap.add_argument("--workloads", default="ABCD", help="which of the workloads A-D to run")
    ap.add_argument("--json", help="also write every figure here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    work = a.workloads.upper()
    py = venv_python("venv-pyvec", "tools/compare/requirements-pyvec.txt")
    env = {**os.environ, **ONE_THREAD, "RAYON_NUM_THREADS": "2", "PATH": os.path.dirname(py) + os.pathsep + os.environ["PATH"]}
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--force-reinstall", "--no-deps",
                    os.path.join(ROOT, "crates", "py")], check=True, env=env)
    # Rust-only ARC figures, ARCLE and JaxARC, outside the Python process.
    exe = kestrel_release()
    secs = "0.5" if a.quick else "2"
    import arc as arcbench
    mini = arcbench.mini_task()
    bench = lambda *args: json.loads(subprocess.run([exe, "arc", "bench", "--json", "--no-ops", *args], check=True,
                                                    capture_output=True, text=True).stdout)["batches"]
    if "B" in work:
        rust = bench("--data", a.data, "--sel", "mask", "--mode", "o2arc", "--threads", "2", "--num-envs", "1024",
                     "--seconds", secs)[0]["steps_per_s"]
        arcle = arcbench.run_py("arcle", arcbench.ARCLE_CODE, "agi1_mask", "3000" if a.quick else "10000", "-")["steps_per_s"]
    if "D" in work:
        mini_jax = arcbench.run_py("jaxarc", arcbench.JAXARC_CODE, "bbox", "5", "1024,4096", "500" if a.quick else "1000", mini)
    here = os.path.dirname(os.path.abspath(__file__))
    res = json.loads(subprocess.run([py, "-c", BODY, "1" if a.quick else "0", a.data, mini, work, here, exe], check=True,
                                    capture_output=True, text=True, env=env).stdout.strip().splitlines()[-1])
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    print(f"\ncommit {commit()}, {cpu}, {os.cpu_count()} cores, 2 threads per engine\n")
    print("| CartPole-v1, random actions | Kestrel copy=False | Kestrel copy=True | Kestrel copy=False, episode stats off | gymnasium Sync | gymnasium Async | EnvPool sync | EnvPool async | Kestrel / EnvPool (best) | Kestrel / Sync | stats on / off |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted((k for k in res if k.startswith("cartpole_")), key=lambda k: int(k.split("_")[1])):  # A
        r = res[key]
        best_pool = max(r["envpool_sync"], r["envpool_async"])
        kf = r["kestrel_copy_False"]
        ga = f"{r['gym_async'] / 1e3:,.0f} k" if "gym_async" in r else "-"
        off = r["kestrel_copy_False_nostats"]
        print(f"| {key.split('_')[1]} envs | {kf / 1e6:.2f} M | {r['kestrel_copy_True'] / 1e6:.2f} M | {off / 1e6:.2f} M | {r['gym_sync'] / 1e3:,.0f} k | {ga} "
              f"| {r['envpool_sync'] / 1e6:.2f} M | {r['envpool_async'] / 1e6:.2f} M | {kf / best_pool:.1f}x | {kf / r['gym_sync']:,.0f}x | {kf / off:.3f} |")
    if "A" in work:
        r8 = res["cartpole_8"]
        print(f"\nPer `step` call at 8 envs: {r8['kestrel_us_per_call_copy_False']:.2f} µs (copy=False), "
              f"{r8['kestrel_us_per_call_copy_True']:.2f} µs (copy=True).")
    if "B" in work:
        py_arc = res["arc_python_1024"]
        print(f"\n| ARC 30x30, AGI-1 training, o2arc, mask, 1024 envs | steps/s |\n|---|---|\n"
              f"| Kestrel from Python (pre-drawn actions) | {py_arc / 1e6:.2f} M |\n"
              f"| the same, ARC info off (`arc_info=False`) | {res['arc_python_1024_noinfo'] / 1e6:.2f} M |\n| Kestrel Rust-only `arc bench` | {rust / 1e6:.2f} M |\n"
              f"| ARCLE 0.2.6 O2ARCv2Env (1 env) | {arcle / 1e3:.1f} k |\n\nPython / Rust-only: {py_arc / rust:.2f}; "
              f"info on / off: {py_arc / res['arc_python_1024_noinfo']:.3f}; "
              f"Python / ARCLE: {py_arc / arcle:,.0f}x")
    if "D" in work:
        print("\n| Mini-ARC 5x5, one task, bbox, jaxarc with JaxARC's bugs | Kestrel from Python (lanes), masks | the same, ARC info off "
              "| Kestrel from Python, `selection=\"bbox\"` | `VectorEnv.rollout` (64 steps), masks | the same, bbox form "
              "| Kestrel Rust-only lanes | JaxARC jit(vmap(scan)) | Python (masks) / JaxARC "
              "| Python / Rust-only: masks, bbox form | rollout / Rust-only: masks, bbox form "
              "| 32-step rollout / Rust-only: masks, bbox form | info on / off "
              "| Rust rollout from arrays (uniform masks) | Python rollout, the same masks | Python / Rust, the same arrays |"
              "\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n, jx in zip((1024, 4096), mini_jax):
            kp, kr, jx = res[f"mini_python_{n}"], res[f"mini_rust_{n}"], jx["steps_per_s"]
            off, box = res[f"mini_python_{n}_noinfo"], res[f"mini_python_{n}_bboxform"]
            rm, rb = res[f"mini_python_{n}_rollout"], res[f"mini_python_{n}_bboxform_rollout"]
            rm32, rb32 = res[f"mini_python_{n}_rollout32"], res[f"mini_python_{n}_bboxform_rollout32"]
            ra, ru = res[f"mini_rust_arrays_{n}"], res[f"mini_python_{n}_rollout_uniform"]
            print(f"| {n} envs | {kp / 1e6:.1f} M | {off / 1e6:.1f} M | {box / 1e6:.1f} M | {rm / 1e6:.1f} M | {rb / 1e6:.1f} M "
                  f"| {kr / 1e6:.1f} M | {jx / 1e6:.2f} M | {kp / jx:.0f}x | {kp / kr:.2f}, {box / kr:.2f} "
                  f"| {rm / kr:.2f}, {rb / kr:.2f} | {rm32 / kr:.2f}, {rb32 / kr:.2f} | {kp / off:.3f} "
                  f"| {ra / 1e6:.1f} M | {ru / 1e6:.1f} M | {ru / ra:.2f} |")
    if "C" in work:
        print("\n| CMA-ES ask+tell per generation (from Python) | Kestrel | pycma | evosax (jit) | vs pycma | vs evosax |\n|---|---|---|---|---|---|")
    for d in (10, 100) if "C" in work else []:
        k, c, e = res[f"es_kestrel_{d}"], res[f"es_pycma_{d}"], res[f"es_evosax_{d}"]
        print(f"| d={d}, pop {res[f'es_pop_{d}']} | {1e6 / k:.1f} µs | {1e6 / c:.1f} µs | {1e6 / e:.1f} µs | {k / c:.1f}x | {k / e:.1f}x |")
    json.dump(res, open(os.path.join(ROOT, "target", "py_vec.json"), "w"), indent=1)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu, "workloads": work, "python": res,
                       "arc_rust_1024": rust if "B" in work else None, "arcle": arcle if "B" in work else None,
                       "mini_jaxarc": mini_jax if "D" in work else None}, f, indent=1)


if __name__ == "__main__":
    main()
