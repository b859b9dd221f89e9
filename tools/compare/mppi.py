#!/usr/bin/env python3
"""Side-by-side MPPI `command`: pytorch-mppi 0.9.1 (torch on the CPU, one thread, float32 as
its examples, and float64) and jax-mppi 0.3.0 (jitted, float32; both peers pinned to one core) vs
Kestrel in both precisions (f64 bit-exact, f32 SIMD lanes) on the same gym-pendulum problem
(K=1000, T=20, Σ=1, |u| ≤ 2), peers and Kestrel alternated in one launch (medians of
`--rounds`), ratios as Markdown. Then jax-mppi's basic autotuning example as shipped (its `Autotune` with the pycma
`CMAESOpt`, un-jitted evaluate) against Kestrel's tuner on the same problem, population and
generations. jax-mppi needs Python ≥ 3.12 (`tools/venv-jaxmppi` with `cma`, see
tools/golden/README.md).

Usage (from the repository root):
    python3 tools/compare/mppi.py
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

from common import ONE_CORE

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, "tools", "venv-torch")
REQ = os.path.join(ROOT, "tools", "golden", "requirements-torch.txt")

PEER = textwrap.dedent('''
    import json, math, sys, time, warnings
    warnings.filterwarnings("ignore")
    import torch
    from pytorch_mppi import MPPI
    torch.set_num_threads(1)
    dtype = torch.float64 if sys.argv[1] == "f64" else torch.float32
    def dyn(x, u):
        th, thdot = x[:, 0:1], x[:, 1:2]
        uu = torch.clamp(u, -2.0, 2.0)
        newthdot = torch.clamp(thdot + (15.0 * torch.sin(th) + 3.0 * uu) * 0.05, -8.0, 8.0)
        return torch.cat((th + newthdot * 0.05, newthdot), dim=1)
    def cost(x, u):
        th = ((x[:, 0] + math.pi) % (2 * math.pi)) - math.pi
        return th ** 2 + 0.1 * x[:, 1] ** 2 + 0.001 * u[:, 0] ** 2
    ctrl = MPPI(dyn, cost, 2, torch.tensor(1.0, dtype=dtype), num_samples=1000, horizon=20,
                u_min=torch.tensor([-2.0], dtype=dtype), u_max=torch.tensor([2.0], dtype=dtype), device="cpu")
    x = torch.tensor([3.0, 0.0], dtype=dtype)
    for _ in range(10): ctrl.command(x)
    n = 200
    t0 = time.perf_counter()
    for _ in range(n): ctrl.command(x)
    print(json.dumps({"us_per_command": 1e6 * (time.perf_counter() - t0) / n}))
''')


JAX_PEER = textwrap.dedent('''
    import json, math, time, warnings
    warnings.filterwarnings("ignore")
    import jax, jax.numpy as jnp
    from jax_mppi import mppi
    def dyn(x, u):
        uu = jnp.clip(u[0], -2.0, 2.0)
        newthdot = jnp.clip(x[1] + (15.0 * jnp.sin(x[0]) + 3.0 * uu) * 0.05, -8.0, 8.0)
        return jnp.array([x[0] + newthdot * 0.05, newthdot])
    def cost(x, u):
        th = ((x[0] + math.pi) % (2 * math.pi)) - math.pi
        return th ** 2 + 0.1 * x[1] ** 2 + 0.001 * u[0] ** 2
    cfg, st = mppi.create(2, 1, jnp.array([[1.0]]), num_samples=1000, horizon=20, u_min=jnp.array([-2.0]), u_max=jnp.array([2.0]))
    step = jax.jit(lambda s, x: mppi.command(cfg, s, x, dyn, cost))
    x = jnp.array([3.0, 0.0])
    for _ in range(10):
        a, st = step(st, x)
    a.block_until_ready()
    n = 200
    t0 = time.perf_counter()
    for _ in range(n):
        a, st = step(st, x)
    a.block_until_ready()
    print(json.dumps({"us_per_command": 1e6 * (time.perf_counter() - t0) / n}))
''')


JAX_TUNE = textwrap.dedent('''
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import jax, jax.numpy as jnp, numpy as np
from jax_mppi import mppi, autotune
# jax-mppi's examples/autotuning/basic.py problem, evaluated as shipped (un-jitted command loop).
def dyn(x, u):
    return x + 0.1 * u
def cost(x, u):
    return jnp.sum(x ** 2) + 0.01 * jnp.sum(u ** 2)
def term(x, u):
    return 10.0 * jnp.sum(x ** 2)
config, state = mppi.create(nx=2, nu=1, noise_sigma=jnp.eye(1), num_samples=50, horizon=15, lambda_=5.0)
holder = autotune.ConfigStateHolder(config, state)
def evaluate():
    x, st, total = jnp.array([1.0, -0.5]), holder.state, 0.0
    for _ in range(20):
        a, st = mppi.command(holder.config, st, x, dyn, cost, terminal_cost=term)
        x = dyn(x, a)
        total += float(cost(x, a))
    return autotune.EvaluationResult(mean_cost=total, rollouts=jnp.zeros((1, 1, 2)), params={}, iteration=0)
pop, gens = int(sys.argv[1]), int(sys.argv[2])
tuner = autotune.Autotune(params_to_tune=[autotune.LambdaParameter(holder), autotune.NoiseSigmaParameter(holder)],
                          evaluate_fn=evaluate, optimizer=autotune.CMAESOpt(population=pop, sigma=0.3))
t0 = time.perf_counter()
best = tuner.optimize_all(gens)
secs = time.perf_counter() - t0
print(json.dumps({"pop_size": pop, "generations": gens, "seconds": secs, "us_per_candidate_episode": 1e6 * secs / (pop * gens), "best_cost": float(best.mean_cost)}))
''')


def tuning(jpy, jenv, exe, commit, cpu):
    """jax-mppi's basic autotuning example as shipped (pycma CMA-ES, un-jitted evaluate) vs
    `kestrel mppi bench --tune-pop`, same population and generations, in both precisions."""
    pop, gens = 4, 3
    peer = json.loads(subprocess.run([jpy, "-c", JAX_TUNE, str(pop), str(gens)], check=True, capture_output=True, text=True, env=jenv).stdout.strip().splitlines()[-1])
    k, big = {}, {}
    for pr in ("f64", "f32"):
        for th in (1, 2):
            out = subprocess.run([exe, "mppi", "bench", "--json", "--threads", str(th), "--precision", pr, "--tune-pop", str(pop), "--tune-generations", str(gens)], check=True, capture_output=True, text=True).stdout
            k[pr, th] = json.loads(out)
        big[pr] = json.loads(subprocess.run([exe, "mppi", "bench", "--json", "--threads", "2", "--precision", pr, "--tune-pop", "64", "--tune-generations", "100"], check=True, capture_output=True, text=True).stdout)
    print(f"\n### MPPI tuning, jax-mppi basic example (K=50, T=15, 20 steps; λ and Σ; CMA-ES pop {pop}, {gens} generations) — commit {commit}, {cpu}\n")
    print("| | seconds | µs per candidate episode | best cost | ratio vs jax-mppi |\n|---|---:|---:|---:|---:|")
    pu = peer["us_per_candidate_episode"]
    print(f"| jax-mppi `Autotune` + `CMAESOpt` (pycma), un-jitted evaluate as shipped, 1 thread | {peer['seconds']:.2f} | {pu:,.0f} | {peer['best_cost']:.3f} | 1x |")
    for pr in ("f64", "f32"):
        for th in (1, 2):
            r = k[pr, th]
            print(f"| Kestrel `tune`, CMA-ES, {pr}, {th} thread(s) | {r['seconds']:.4f} | {r['us_per_candidate_episode']:,.1f} | {r['best_cost']:.3f} | {pu / r['us_per_candidate_episode']:,.0f}x |")
    for pr in ("f64", "f32"):
        print(f"\nKestrel {pr}, 64 candidates × 100 generations, 2 threads: {big[pr]['seconds']:.3f} s ({big[pr]['us_per_candidate_episode']:.1f} µs per candidate episode, best cost {big[pr]['best_cost']:.3f}).")
    return {"pop_size": pop, "generations": gens, "peer": peer,
            "kestrel": {f"{pr} {th}": r for (pr, th), r in k.items()}, "kestrel_64x100_2_threads": big}


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3, help="peers and Kestrel alternated this many times; medians")
    ap.add_argument("--json", help="also write the medians here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    py = os.path.join(VENV, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "-r", REQ], check=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
    exe = os.path.join(ROOT, "target", "release", "kestrel")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    jpy = os.path.join(ROOT, "tools", "venv-jaxmppi", "bin", "python")
    jenv = {**env, "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    if not os.path.exists(jpy):
        print("jax-mppi venv missing (tools/venv-jaxmppi): its row is left out", file=sys.stderr)
    peers, k = {}, {}
    for _ in range(a.rounds):
        for dt in ("f32", "f64"):
            peer = json.loads(subprocess.run(ONE_CORE + [py, "-c", PEER, dt], check=True, capture_output=True, text=True, env=env).stdout.strip().splitlines()[-1])
            peers.setdefault(f"pytorch-mppi MPPI.command, torch {dt}, 1 thread", []).append(peer["us_per_command"])
        if os.path.exists(jpy):
            peer = json.loads(subprocess.run(ONE_CORE + [jpy, "-c", JAX_PEER], check=True, capture_output=True, text=True, env=jenv).stdout.strip().splitlines()[-1])
            peers.setdefault("jax-mppi mppi.command, jax.jit, float32, 1 thread", []).append(peer["us_per_command"])
        for pr in ("f64", "f32"):
            for th in (1, 2):
                out = subprocess.run([exe, "mppi", "bench", "--json", "--threads", str(th), "--precision", pr, "--commands", "1000"], check=True, capture_output=True, text=True).stdout
                k.setdefault((pr, th), []).append(json.loads(out)["us_per_command"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    km = {key: median(v) for key, v in k.items()}
    print(f"### MPPI command, gym pendulum, K=1000, T=20 — commit {commit}, {cpu}, {os.cpu_count()} cores, median of {a.rounds} alternated rounds\n")
    print("| peer | peer µs | Kestrel f64 1 thr µs | ratio | f64 2 thr µs | ratio | Kestrel f32 1 thr µs | ratio | f32 2 thr µs | ratio |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, v in peers.items():
        us = median(v)
        cells = " | ".join(f"{km[pr, th]:,.1f} | {us / km[pr, th]:.1f}x" for pr in ("f64", "f32") for th in (1, 2))
        print(f"| {name} | {us:,.0f} | {cells} |")
    print("\nRounds (µs): " + "; ".join(f"{n}: {', '.join(f'{x:.0f}' for x in v)}" for n, v in peers.items())
          + "; " + "; ".join(f"Kestrel {pr} {th} thr: {', '.join(f'{x:.1f}' for x in v)}" for (pr, th), v in k.items()))
    tuned = tuning(jpy, jenv, exe, commit, cpu) if os.path.exists(jpy) else None
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit, "cpu": cpu, "rounds": a.rounds,
                       "command_us": {"peers": {n: median(v) for n, v in peers.items()},
                                      "kestrel": {f"{pr} {th}": us for (pr, th), us in km.items()}},
                       "tuning": tuned}, f, indent=1)


if __name__ == "__main__":
    main()
