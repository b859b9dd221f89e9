#!/usr/bin/env python3
"""Side-by-side evolution strategies: evosax 0.3.2 (CMA-ES and Sep-CMA-ES, the whole loop
fused in jit(lax.scan)), pycma 4.5.0, cmaes 0.13.1 and Kestrel, per generation at pop 64 on
the sphere (one thread each; both sides time the same number of generations from the same
fresh start, x = 1 and sigma 0.3, alternated in rounds; the peers' end state is checked
finite and free of subnormals), and pyribs 0.12 vs Kestrel for CMA-ME; plus the behavioural
check: CMA-ES evaluations to reach 1e-8 on sphere, ellipsoid and Rosenbrock at 10 and 40
dimensions, median of 15 seeds, Kestrel vs pycma. One launch; ratios as Markdown.

Usage (from the repository root):
    python3 tools/compare/evo.py            # full
    python3 tools/compare/evo.py --quick    # fewer seeds and generations
"""
import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import textwrap

from common import ONE_CORE, ONE_THREAD

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, "tools", "venv-evosax")
REQ = os.path.join(ROOT, "tools", "compare", "requirements-evo.txt")


def py():
    p = os.path.join(VENV, "bin", "python")
    if not os.path.exists(p):
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([p, "-m", "pip", "install", "-q", "-r", REQ], check=True)
    return p


def run_py(code, *args):
    out = subprocess.run(ONE_CORE + [py(), "-c", code, *map(str, args)], check=True, capture_output=True, text=True,
                         env={**os.environ, **ONE_THREAD})
    return json.loads(out.stdout.strip().splitlines()[-1])


SPEED = textwrap.dedent('''
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np
    which, n, gens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    lam = 64
    sphere = lambda X: np.sum(np.asarray(X) ** 2, axis=-1)
    if which in ("evosax", "evosax-sep"):
        import jax, jax.numpy as jnp
        from evosax.algorithms import CMA_ES, Sep_CMA_ES
        es = (CMA_ES if which == "evosax" else Sep_CMA_ES)(population_size=lam, solution=jnp.zeros(n))
        params = es.default_params.replace(std_init=jnp.asarray(0.3))
        def body(carry, _):
            key, st = carry
            key, ka, kt = jax.random.split(key, 3)
            x, st = es.ask(ka, st, params)
            st, _ = es.tell(kt, x, jnp.sum(x ** 2, axis=-1), st, params)
            return (key, st), None
        @jax.jit
        def loop(key, st):
            (key, st), _ = jax.lax.scan(body, (key, st), None, length=gens)
            return st
        st = es.init(jax.random.PRNGKey(0), jnp.ones(n), params)
        # Compile on the fresh state, then time `gens` generations from that same fresh state
        # (states are values: `st` is unchanged). Timing from a converged state measured
        # subnormal float32 arithmetic, not the strategy.
        jax.block_until_ready(loop(jax.random.PRNGKey(1), st))
        t0 = time.perf_counter(); out = loop(jax.random.PRNGKey(2), st); jax.block_until_ready(out); el = time.perf_counter() - t0
        leaves = [np.asarray(v) for v in jax.tree_util.tree_leaves(out) if np.issubdtype(np.asarray(v).dtype, np.floating)]
        tiny = np.finfo(np.float32).tiny
        health = {"nonfinite": int(sum((~np.isfinite(v)).sum() for v in leaves)),
                  "subnormal": int(sum(((v != 0) & (np.abs(v) < tiny)).sum() for v in leaves))}
    elif which == "pycma":
        import cma
        es = cma.CMAEvolutionStrategy(np.ones(n), 0.3, {"popsize": lam, "verbose": -9, "seed": 1, "tolfun": 0, "tolx": 0, "tolfunhist": 0, "tolstagnation": 10**9, "maxiter": 10**9})
        t0 = time.perf_counter()
        for _ in range(gens):
            X = es.ask(); es.tell(X, sphere(X).tolist())
        el = time.perf_counter() - t0
    elif which == "cmaes":
        from cmaes import CMA
        opt = CMA(mean=np.ones(n), sigma=0.3, population_size=lam, seed=1)
        def gen():
            sols = []
            for _ in range(lam):
                x = opt.ask(); sols.append((x, float(np.sum(x ** 2))))
            opt.tell(sols)
        t0 = time.perf_counter()
        for _ in range(gens): gen()
        el = time.perf_counter() - t0
    elif which == "ribs":
        from ribs.archives import GridArchive
        from ribs.emitters import EvolutionStrategyEmitter
        from ribs.schedulers import Scheduler
        b = 5.12 * (n // 2)
        archive = GridArchive(solution_dim=n, dims=[20, 20], ranges=[(-b, b), (-b, b)], seed=1)
        em = EvolutionStrategyEmitter(archive, x0=np.zeros(n), sigma0=0.5, batch_size=lam, seed=1)
        sch = Scheduler(archive, [em])
        def clip(v):
            return np.where(np.abs(v) <= 5.12, v, 5.12 / v)
        def gen():
            X = sch.ask()
            f = np.sum((X - 0.4 * 5.12) ** 2, axis=1)
            m = np.stack([clip(X[:, : n // 2]).sum(1), clip(X[:, n // 2 :]).sum(1)], 1)
            sch.tell(-f, m)   # pyribs maximises
        for _ in range(3): gen()
        t0 = time.perf_counter()
        for _ in range(gens): gen()
        el = time.perf_counter() - t0
        print(json.dumps({"ms_per_gen": 1e3 * el / gens, "coverage": float(archive.stats.coverage)})); sys.exit()
    print(json.dumps({"ms_per_gen": 1e3 * el / gens, **(health if which.startswith("evosax") else {})}))
''')

EVALS = textwrap.dedent('''
    import json, sys, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, cma
    fname, n, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    def f(x):
        x = np.asarray(x, dtype=float)
        if fname == "sphere": return float(np.sum(x * x))
        if fname == "ellipsoid": return float(np.sum(10 ** (6 * np.arange(n) / (n - 1)) * x * x))
        return float(np.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2))
    x0 = np.zeros(n) if fname == "rosenbrock" else np.ones(n)
    out = []
    for s in range(1, seeds + 1):
        es = cma.CMAEvolutionStrategy(x0, 0.5, {"verbose": -9, "seed": s, "ftarget": 1e-8, "maxfevals": 2e5, "tolfun": 0, "tolx": 0, "tolfunhist": 0})
        while not es.stop():
            X = es.ask(); es.tell(X, [f(x) for x in X])
        out.append(es.result.evaluations if es.result.fbest <= 1e-8 else None)
    print(json.dumps(out))
''')


def kestrel(*args):
    exe = os.path.join(ROOT, "target", "release", "kestrel")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
    return subprocess.run([exe, *args], check=True, capture_output=True, text=True).stdout


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="also write the rows here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    gens = 100 if a.quick else 300
    seeds = 5 if a.quick else 15
    rows = []
    rounds = 1 if a.quick else 3
    print(f"== time per generation, pop 64, sphere from x = 1, sigma 0.3, {gens} generations from the fresh "
          f"state on both sides, one thread, peer and Kestrel alternated, median of {rounds} rounds", flush=True)
    for n in (10, 100):
        for peer, label, ks in [("evosax", "evosax CMA_ES, jit(lax.scan) fused", "cma-es"),
                                ("evosax-sep", "evosax Sep_CMA_ES, jit(lax.scan) fused", "sep-cma-es"),
                                ("pycma", "pycma CMAEvolutionStrategy", "cma-es"),
                                ("cmaes", "cmaes CMA (64 asks + tell)", "cma-es")]:
            ps, kss = [], []
            for _ in range(rounds):
                k = json.loads(kestrel("evo", "bench", "--json", "--num-dims", str(n), "--generations", str(gens),
                                       "--strategy", ks).splitlines()[-1])
                if not math.isfinite(k["best"]):
                    sys.exit(f"kestrel {ks} d={n}: best {k['best']} is not finite")
                kss.append(k["gen_us"])
                r = run_py(SPEED, peer, n, gens)
                if r.get("nonfinite", 0) or r.get("subnormal", 0):
                    sys.exit(f"{peer} d={n}: end state has {r['nonfinite']} non-finite and {r['subnormal']} subnormal values")
                ps.append(r["ms_per_gen"] * 1e3)
            p, kus = median(ps), median(kss)
            rows.append((f"{ks} generation, d={n}", label, p, kus))
            print(f"  d={n:<4} {label:<42} {p:>10.1f} µs   kestrel {kus:>8.1f} µs   {p / kus:>6.1f}x   "
                  f"(rounds: peer {', '.join(f'{x:.0f}' for x in ps)}; kestrel {', '.join(f'{x:.0f}' for x in kss)})", flush=True)
        r = run_py(SPEED, "ribs", n, gens)
        with tempfile.TemporaryDirectory() as td:
            kestrel("evo", "qd", "--out-dir", td, "--num-dims", str(n), "--generations", str(gens),
                    "--set", "num_emitters=1", "--set", "batch_size=64", "--set", "cells=20", "--set", "sigma=0.5")
            d = os.path.join(td, os.listdir(td)[0])
            last = open(os.path.join(d, "metrics.jsonl")).read().strip().splitlines()[-1]
            m = json.loads(last)
            kus = 1e6 * m["wall_time"] / gens  # the run writer's wall time since the launch started
        rows.append((f"CMA-ME generation (20x20 grid, batch 64), d={n}", "pyribs EvolutionStrategyEmitter", r["ms_per_gen"] * 1e3, kus))
        print(f"  d={n:<4} {'pyribs CMA-ME':<42} {r['ms_per_gen'] * 1e3:>10.1f} µs   kestrel {kus:>8.1f} µs   coverage ribs {r['coverage']:.3f} / kestrel {m['coverage']:.3f}", flush=True)
    print("== CMA-ES evaluations to 1e-8 (median of %d seeds), default population, sigma0 0.5" % seeds, flush=True)
    evals = []
    with tempfile.TemporaryDirectory() as td:
        for fname in ("sphere", "ellipsoid", "rosenbrock"):
            for n in (10, 40):
                pc = run_py(EVALS, fname, n, seeds)
                ke = []
                for s in range(1, seeds + 1):
                    x0 = "0.0" if fname == "rosenbrock" else "1.0"
                    out = kestrel("evo", "run", "--problem", fname, "--num-dims", str(n), "--seed", str(s), "--sigma", "0.5",
                                  "--generations", "100000", "--set", f"x0={x0}", "--threads", "1", "--out-dir", td)
                    best = float(out.split("best ")[1].split()[0]); ev = int(out.split("after ")[1].split()[0])
                    ke.append(ev if best <= 1e-8 else None)
                mp, mk = median(pc), median(ke)
                evals.append((fname, n, mp, mk, sum(x is not None for x in pc), sum(x is not None for x in ke)))
                print(f"  {fname:<11} d={n:<3} pycma {mp:>8}  kestrel {mk:>8}  kestrel/pycma {mk / mp:>5.2f}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"\n### Evolution strategies, commit {commit}, {cpu}, {os.cpu_count()} cores, one thread per library\n")
    print("| workload | peer | peer µs | Kestrel µs | peer / Kestrel |\n|---|---|---:|---:|---:|")
    for w, p, ps, ks in rows:
        print(f"| {w} | {p} | {ps:,.1f} | {ks:,.1f} | {ps / ks:,.1f}x |")
    print("\n| function | d | pycma median evals | Kestrel median evals | Kestrel / pycma | runs reaching 1e-8 (pycma, Kestrel) |\n|---|---:|---:|---:|---:|---|")
    for fname, n, mp, mk, sp, sk in evals:
        print(f"| {fname} | {n} | {mp} | {mk} | {mk / mp:.2f} | {sp}/{seeds}, {sk}/{seeds} |")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit, "cpu": cpu, "rounds": rounds, "generations": gens, "seeds": seeds,
                       "rows": [{"workload": w, "peer": p, "peer_us": ps, "kestrel_us": ks} for w, p, ps, ks in rows],
                       "evals": [{"function": fn, "d": n, "pycma": mp, "kestrel": mk, "pycma_reached": sp,
                                  "kestrel_reached": sk} for fn, n, mp, mk, sp, sk in evals]}, f, indent=1)


if __name__ == "__main__":
    main()
