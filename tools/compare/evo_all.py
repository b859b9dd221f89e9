#!/usr/bin/env python3
"""Every strategy Kestrel has under an evosax 0.3.2 name, side by side with evosax on one core:
time per generation on the sphere at population 64, d = 10 and d = 100, from x = 1 and step
size 0.3 (evosax's `std_init`, or a constant `std_schedule` where that is how it takes one;
gradientless descent keeps its radii), in three forms:

- evosax "loop": a Python loop of the jitted `ask`, the jitted sphere and the jitted `tell`
  (generations after three warm-up ones, so the generation-2 re-trace is not timed);
- evosax "scan": all generations fused in one `jit(lax.scan)` (compiled on the fresh state,
  then timed from that same fresh state);
- Kestrel: `kestrel evo bench --strategy NAME` (ask, evaluate, tell through the driver, one
  thread), the release binary.

Both end states are checked sane (evosax's state leaves finite, NaN placeholders aside, and free
of float32 subnormals; Kestrel's best finite), or the script stops. Both sides under `taskset -c 0` with one BLAS/XLA thread, alternated in rounds (the median of
the rounds is reported); ratios are evosax's time over Kestrel's. One launch; Markdown out.

Usage (from the repository root):
    python3 tools/compare/evo_all.py            # 3 rounds
    python3 tools/compare/evo_all.py --quick    # 1 round, fewer generations
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import textwrap

from common import ONE_CORE, ONE_THREAD, ROOT, commit, kestrel_release, venv_python

# evosax name -> how it is built: "std" (std_init param), "sched" (std_schedule), "plain",
# "pop" (population-based: init takes an evaluated population), "rs" (random search), "sv" (Stein
# variational: 4 particles of 16, Kestrel's default for 64 rows, each starting at x = 1).
STRATEGIES = {
    "CMA_ES": "std", "Sep_CMA_ES": "std", "SNES": "std", "xNES": "std", "Open_ES": "open", "PGPE": "std",
    "DifferentialEvolution": "pop", "SimpleES": "std", "DES": "std", "MA_ES": "std", "LM_MA_ES": "std",
    "ARS": "sched", "ESMC": "sched", "HillClimbing": "sched", "RandomSearch": "rs", "SimulatedAnnealing": "sched",
    "GradientlessDescent": "plain", "PSO": "pop", "SimpleGA": "popsched", "MR15_GA": "popstd", "SAMR_GA": "popstd",
    "GESMR_GA": "popstd", "PersistentES": "sched", "NoiseReuseES": "sched", "GuidedES": "sched", "ASEBO": "sched",
    "Rm_ES": "std", "iAMaLGaM_Full": "sched", "iAMaLGaM_Univariate": "sched", "CR_FM_NES": "std", "SV_Open_ES": "sv",
    "DiffusionEvolution": "pop", "SV_CMA_ES": "svstd", "LES": "std", "LGA": "popstd", "CMAAnchoredLES": "std",
    "EvoTF_ES": "std",
}

# EvoTF's transformer reads the last 100 generations, so a run's first 100 are cheaper for
# Kestrel (which attends over the tokens so far) than the rest (evosax always runs the whole
# window): 400 generations, three quarters of them at the full window, at both sizes.
MIN_GENS = {"EvoTF_ES": 400}

# The learned strategies' weights: the file evosax's own class loads by default (learned_es.py,
# learned_ga.py: v7 above 50 dimensions, cma_anchored_les_tools.py), from the evosax package of
# the peer's venv, so both sides run the same weights.
WEIGHTS = {"LES": lambda n: "les/2023_10_les_v2.pkl",
           "LGA": lambda n: "lga/2023_04_lga_v7.pkl" if n > 50 else "lga/2023_04_lga_v4.pkl",
           "CMAAnchoredLES": lambda n: "cma_anchored_les/2026_10_cma_anchored_les.pkl",
           "EvoTF_ES": lambda n: "evotf/2024_03_SNES_small.pkl"}

PEER = textwrap.dedent('''
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import jax, jax.numpy as jnp, numpy as np, optax
    from evosax import algorithms as A
    name, how, n, gens, lam = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), 64
    cls = A.algorithms[name]
    sphere = lambda x: jnp.sum(x ** 2, axis=-1)
    kw = {}
    if how in ("sched", "popsched", "sv"):
        kw["std_schedule"] = optax.constant_schedule(0.3)
    if how == "open":
        kw = {"optimizer": optax.adam(0.05), "std_schedule": optax.constant_schedule(0.3)}
    if how == "rs":
        kw["sampling_fn"] = lambda k: 1.0 + 0.3 * jax.random.normal(k, (n,))
    if how in ("sv", "svstd"):
        es = cls(population_size=lam // 4, num_populations=4, solution=jnp.zeros(n), **kw)
    else:
        es = cls(population_size=lam, solution=jnp.zeros(n), **kw)
    params = es.default_params
    if hasattr(params, "std_init"):
        params = params.replace(std_init=0.3)
    key = jax.random.PRNGKey(0)
    if how.startswith("pop"):
        first = 1.0 + 0.3 * jax.random.normal(jax.random.PRNGKey(5), (lam, n))
        st0 = es.init(key, first, sphere(first), params)
    elif how in ("sv", "svstd"):
        st0 = es.init(key, jnp.ones((4, n)), params)
    else:
        st0 = es.init(key, jnp.ones(n), params)
    ask, tell, f = jax.jit(es.ask), jax.jit(es.tell), jax.jit(sphere)
    def body(carry, _):
        k, st = carry
        k, ka, kt = jax.random.split(k, 3)
        x, st = es.ask(ka, st, params)
        st, _ = es.tell(kt, x, sphere(x), st, params)
        return (k, st), None
    @jax.jit
    def scan(k, st):
        (k, st), _ = jax.lax.scan(body, (k, st), None, length=gens)
        return st
    jax.block_until_ready(scan(jax.random.PRNGKey(1), st0))
    t0 = time.perf_counter(); out = scan(jax.random.PRNGKey(2), st0); jax.block_until_ready(out)
    scan_us = (time.perf_counter() - t0) / gens * 1e6
    st, k = st0, jax.random.PRNGKey(3)
    def gen(k, st):
        k, ka, kt = jax.random.split(k, 3)
        x, st = ask(ka, st, params)
        st, _ = tell(kt, x, f(x), st, params)
        return k, st
    for _ in range(3):
        k, st = gen(k, st)
    jax.block_until_ready(st)
    t0 = time.perf_counter()
    for _ in range(gens):
        k, st = gen(k, st)
    jax.block_until_ready(st)
    loop_us = (time.perf_counter() - t0) / gens * 1e6
    # The end states must be sane: finite, and free of subnormals (float32 arithmetic on
    # subnormals is slow and would time the hardware, not the strategy).
    tiny = np.finfo(np.float32).tiny
    leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves((out, st))
              if np.issubdtype(np.asarray(v).dtype, np.floating)]
    health = {"nonfinite": int(sum((~np.isfinite(v[~np.isnan(v)])).sum() for v in leaves)),
              "subnormal": int(sum(((v != 0) & (np.abs(v) < tiny)).sum() for v in leaves))}
    print(json.dumps({"scan_us": scan_us, "loop_us": loop_us, "best": float(jnp.min(out.best_fitness)), **health}))
''')


def peer(py, name, how, n, gens):
    out = subprocess.run(ONE_CORE + [py, "-c", PEER, name, how, str(n), str(gens)], check=True, capture_output=True,
                         text=True, env={**os.environ, **ONE_THREAD})
    return json.loads(out.stdout.strip().splitlines()[-1])


def ours(exe, name, n, gens, ckpt):
    weights = ["--params-path", os.path.join(ckpt, WEIGHTS[name](n))] if name in WEIGHTS else []
    out = subprocess.run(ONE_CORE + [exe, "evo", "bench", "--json", "--strategy", name, "--num-dims", str(n),
                                     "--pop-size", "64", "--generations", str(gens)] + weights,
                         check=True, capture_output=True, text=True, env={**os.environ, **ONE_THREAD})
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(xs):
    xs = sorted(xs)
    return 0.5 * (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", nargs="*", help="evosax names to run (default: all)")
    ap.add_argument("--rounds", type=int, help="alternated rounds (default 3, --quick 1)")
    ap.add_argument("--json", help="also write the rows here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    py = venv_python("venv-evosax", "tools/golden/requirements-evosax.txt")
    exe = kestrel_release()
    ckpt = subprocess.run([py, "-c", "import importlib.util, os; print(os.path.join("
                           "importlib.util.find_spec('evosax').submodule_search_locations[0], 'algorithms', 'ckpt'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    rounds = a.rounds or (1 if a.quick else 3)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.processor())
    print(f"evosax 0.3.2 vs Kestrel {commit()}, {cpu}, one core each, population 64, sphere, {rounds} round(s)\n")
    print("| strategy | d | evosax loop µs | evosax scan µs | Kestrel µs | vs scan | vs loop |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rows = []
    for name, how in STRATEGIES.items():
        if a.only and name not in a.only:
            continue
        for n, gens in [(10, 100 if a.quick else 300), (100, 30 if a.quick else 100)]:
            gens = max(gens, MIN_GENS.get(name, 0))
            ps, ls, ks = [], [], []
            for _ in range(rounds):
                p = peer(py, name, how, n, gens)
                k = ours(exe, name, n, gens, ckpt)
                if p["nonfinite"] or p["subnormal"] or not math.isfinite(p["best"]):
                    sys.exit(f"evosax {name} d={n}: end state not sane: {p}")
                if not math.isfinite(k["best"]):
                    sys.exit(f"kestrel {name} d={n}: best {k['best']} is not finite")
                ps.append(p["scan_us"])
                ls.append(p["loop_us"])
                ks.append(k["gen_us"])
            s, l, k = median(ps), median(ls), median(ks)
            rows.append({"strategy": name, "d": n, "loop_us": l, "scan_us": s, "kestrel_us": k})
            print(f"| {name} | {n} | {l:.1f} | {s:.1f} | {k:.1f} | {s / k:.1f}x | {l / k:.1f}x |", flush=True)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu, "rounds": rounds, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
