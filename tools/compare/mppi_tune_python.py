#!/usr/bin/env python3
"""Tuning a system written in Python, side by side (issue 32 item 3): pytorch-mppi 0.9.1's
`autotune.Autotune` (torch on the CPU, float64), jax-mppi 0.3.0's `autotune.Autotune` (as its
`examples/autotuning/basic.py` ships it: an un-jitted command loop) and `kestrel.mppi.tune(
dynamics=..., running_cost=...)` over numpy callbacks, on the same problem: jax-mppi's basic
system (x' = x + 0.1u, cost |x|^2 + 0.01|u|^2, terminal 10|x|^2), K=50, T=15, lambda0=5,
Sigma0=1, 20 closed-loop steps from (1, -0.5), tuning lambda and Sigma with CMA-ES. Every
process is pinned to core 0 with one thread; the three run one after another in one launch.

Each peer's CMA-ES re-evaluates its best candidate once per generation (pytorch-mppi's
`CMAESOpt.optimize_step`); the "episodes" column counts every episode each one ran.

Usage (from the repository root; needs tools/venv-torch with `cma`, tools/venv-jaxmppi, and
the kestrel wheel in tools/venv-py, which `tools/py-test` installs):
    python3 tools/compare/mppi_tune_python.py [--json out.json]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

from common import ONE_CORE, ONE_THREAD, ROOT, commit

TORCH = textwrap.dedent('''
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np, torch
torch.set_num_threads(1)
from pytorch_mppi import MPPI, autotune
d = torch.float64
def dyn(x, u):
    return x + 0.1 * u
def cost(x, u):
    return (x ** 2).sum(dim=-1) + 0.01 * (u ** 2).sum(dim=-1)
def term(x, u):
    return 10.0 * (x[..., -1, :] ** 2).sum(dim=-1).squeeze(0)
ctrl = MPPI(dyn, cost, 2, torch.eye(1, dtype=d), num_samples=50, horizon=15, lambda_=5.0,
            terminal_state_cost=term, device="cpu")
episodes = [0]
def evaluate():
    ctrl.reset()
    x, total = torch.tensor([1.0, -0.5], dtype=d), 0.0
    for _ in range(20):
        u = ctrl.command(x)
        x = dyn(x, u)
        total += float(cost(x, u))
    episodes[0] += 1
    return autotune.EvaluationResult(costs=torch.tensor([total]), rollouts=torch.zeros(1, 1, 2))
pop, gens = int(sys.argv[1]), int(sys.argv[2])
np.random.seed(0)
tuner = autotune.Autotune(params_to_tune=[autotune.LambdaParameter(ctrl), autotune.SigmaParameter(ctrl)],
                          evaluate_fn=evaluate, optimizer=autotune.CMAESOpt(population=pop, sigma=0.3))
t0 = time.perf_counter()
tuner.optimize_all(gens)
secs = time.perf_counter() - t0
best = tuner.get_best_result()
print(json.dumps({"seconds": secs, "episodes": episodes[0], "best_cost": float(best.costs.mean())}))
''')

JAX = textwrap.dedent('''
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import jax.numpy as jnp, numpy as np
from jax_mppi import mppi, autotune
def dyn(x, u):
    return x + 0.1 * u
def cost(x, u):
    return jnp.sum(x ** 2) + 0.01 * jnp.sum(u ** 2)
def term(x, u):
    return 10.0 * jnp.sum(x ** 2)
config, state = mppi.create(nx=2, nu=1, noise_sigma=jnp.eye(1), num_samples=50, horizon=15, lambda_=5.0)
holder = autotune.ConfigStateHolder(config, state)
episodes = [0]
def evaluate():
    x, st, total = jnp.array([1.0, -0.5]), holder.state, 0.0
    for _ in range(20):
        a, st = mppi.command(holder.config, st, x, dyn, cost, terminal_cost=term)
        x = dyn(x, a)
        total += float(cost(x, a))
    episodes[0] += 1
    return autotune.EvaluationResult(mean_cost=total, rollouts=jnp.zeros((1, 1, 2)), params={}, iteration=0)
pop, gens = int(sys.argv[1]), int(sys.argv[2])
np.random.seed(0)
tuner = autotune.Autotune(params_to_tune=[autotune.LambdaParameter(holder), autotune.NoiseSigmaParameter(holder)],
                          evaluate_fn=evaluate, optimizer=autotune.CMAESOpt(population=pop, sigma=0.3))
t0 = time.perf_counter()
best = tuner.optimize_all(gens)
secs = time.perf_counter() - t0
print(json.dumps({"seconds": secs, "episodes": episodes[0], "best_cost": float(best.mean_cost)}))
''')

KESTREL = textwrap.dedent('''
import json, sys, tempfile, time
import numpy as np
import kestrel
calls = [0]
def dyn(x, u, t):
    calls[0] += 1
    return x + 0.1 * u
def cost(x, u, t):
    return (x * x).sum(axis=1) + 0.01 * (u * u).sum(axis=1)
def term(x):
    return 10.0 * (x * x).sum(axis=1)
pop, gens = int(sys.argv[1]), int(sys.argv[2])
cfg = {"generations": gens, "pop_size": pop, "sigma": 0.3, "knobs": ["lambda", "sigma"],
       "run": {"steps": 20, "seed": 0, "mppi": {"num_samples": 50, "horizon": 15, "lambda": 5.0, "convention": "jax-mppi"}},
       "starts": {"states": [[1.0, -0.5]]}}
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter()
    r = kestrel.mppi.tune(cfg, dynamics=dyn, running_cost=cost, terminal_cost=term, nx=2, nu=1,
                          out_dir=d, threads=1, progress=None)
    secs = time.perf_counter() - t0
# The base params' episode (start_cost) and pop x gens candidates.
print(json.dumps({"seconds": secs, "episodes": pop * gens + 1, "best_cost": r.summary["best_cost"],
                  "dynamics_calls": calls[0]}))
''')


def run(py, code, pop, gens):
    env = {**os.environ, **ONE_THREAD}
    out = subprocess.run(ONE_CORE + [py, "-c", code, str(pop), str(gens)], check=True, capture_output=True,
                         text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    tpy = os.path.join(ROOT, "tools", "venv-torch", "bin", "python")
    jpy = os.path.join(ROOT, "tools", "venv-jaxmppi", "bin", "python")
    kpy = os.path.join(ROOT, "tools", "venv-py", "bin", "python")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    rows = []
    for pop, gens, peers in ((4, 3, ("pytorch-mppi", "jax-mppi")), (16, 5, ("pytorch-mppi",))):
        for name, py, code in (("pytorch-mppi", tpy, TORCH), ("jax-mppi", jpy, JAX), ("kestrel", kpy, KESTREL)):
            if name != "kestrel" and name not in peers:
                continue
            r = run(py, code, pop, gens)
            rows.append({"tuner": name, "pop_size": pop, "generations": gens, **r})
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(f"\n### Tuning a Python-defined system (commit `{commit()}`, {cpu}, core 0, one thread each)\n")
    print("| tuner | pop × generations | episodes | seconds | ms per episode | best cost | Kestrel's speed-up |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        k = next(x for x in rows if x["tuner"] == "kestrel" and x["pop_size"] == r["pop_size"])
        per = 1e3 * r["seconds"] / r["episodes"]
        kper = 1e3 * k["seconds"] / k["episodes"]
        print(f"| {r['tuner']} | {r['pop_size']} × {r['generations']} | {r['episodes']} | {r['seconds']:.3f} | "
              f"{per:.2f} | {r['best_cost']:.3f} | {per / kper:,.0f}x per episode |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
