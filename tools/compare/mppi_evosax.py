#!/usr/bin/env python3
"""evosax's CMA_ES tuning MPPI in one jitted `lax.scan`, its fitness `kestrel.jax.evaluate` of
Kestrel's MPPI tuning cost, against jax-mppi 0.3.0's own evosax tuner on the same system and
budget: the time each takes to reach the same cost (issue 59 item 4).

The system is jax-mppi's `examples/autotuning/basic.py`: x' = x + 0.1u (nx=2, nu=1 broadcast),
cost |x|² + 0.01|u|², terminal 10|x|²; K=50 samples, horizon 15, λ₀=5, Σ₀=1; a candidate's
cost is its 20-step closed-loop episode from (1, -0.5), the running costs summed (Kestrel's
`mppi-tune` on system `basic`, in f32 as jax-mppi computes). λ and Σ are tuned, evosax 0.3.2's
`CMA_ES` with its default params, population `--pop`, `--generations` generations. Four
tuners, each (tuner, seed) its own process pinned to core 0 (one XLA thread, one rayon thread):

- `jax-mppi tuner, as shipped`: `autotune.Autotune` + `autotune_evosax.EvoSaxOptimizer("CMA_ES")`
  with the example's evaluate (20 un-jitted `mppi.command` calls). Slow (about 1 s a
  candidate), so it runs `--shipped-generations` generations of one seed: its time a generation.
- `jax-mppi tuner, jitted evaluate`: the same tuner, its evaluate one `jax.jit` of the 20-step
  episode (`lax.scan` over `mppi.command`, λ and Σ traced: one compile for the whole run), the
  fastest evaluate its tuner can call. It evaluates the population one candidate at a time, as
  `EvoSaxOptimizer.optimize_step` does, and searches λ and Σ² directly from (5, 1).
- `evosax scan, jit(vmap(jax-mppi episode))`: the whole ask/evaluate/tell loop one jitted
  `lax.scan` (jax-mppi's advice for speed), its fitness the episode above vmapped over the
  population; the search in Kestrel's coordinates (log λ, log σ, clipped to Kestrel's
  bounds), so the last two rows differ only in the evaluate call.
- `evosax scan, kestrel.jax.evaluate`: the same scan, fitness
  `kestrel.jax.evaluate(ProblemSpec.mppi_tune(...), pop, key)`.

Every tuner scores all its generations with one noise key (jax-mppi's tuner reuses its state's
key for every candidate; the scans pass the same key each generation: common random numbers),
so its "best so far" is a minimum, not a lucky draw. JAX and Kestrel draw different noise (two
generators), so their own costs of the same knobs differ by K=50's sampling noise. One judge
scores every answer instead: each generation's best knobs so far, costed by jax-mppi's episode
averaged over `REFEREE_KEYS` noise keys.

Reported: the judged cost of the final knobs (median over seeds), the time a generation, and
the time to the target: the jitted-evaluate jax-mppi tuner's median final judged cost (its
answer on this budget), each seed's first generation at or below it times its time a
generation. The scans' generations all cost the same (the fastest of three executions of the
compiled scan, divided); the tuner's clock counts its generations at their steady rate, its
first two (which compile evosax's ask and tell and the episode) counted as set-up, as the
scans' compile is. The as-shipped tuner's time to the target is its measured rate times the
jitted tuner's generation count (the same search: its evaluate computes the same episode).

Usage (from the repository root; the venvs are made on first use, and this checkout's Kestrel
is installed into tools/venv-sb3 first: the wheel `KESTREL_WHEEL` names, else a release build):
    python3 tools/compare/mppi_evosax.py [--pop 16] [--generations 30] [--seeds 5]
        [--shipped-generations 1] [--json runs/compare/mppi_evosax.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ONE_CORE, commit, cpu_model, install_kestrel, venv_python  # noqa: E402

START = (1.0, -0.5)
LAMBDA0, SIGMA0 = 5.0, 1.0
STEPS, K, T = 20, 50, 15
# Kestrel's knob bounds (crates/mppi/src/tune.rs `TuneSpec::from_names`): log-scale λ in
# [1e-3, 1e3], σ in [1e-3, 1e2].
LOG_LAMBDA = (-6.907755278982137, 6.907755278982137)
LOG_SIGMA = (-6.907755278982137, 4.605170185988092)


def jax_mppi_problem():
    """jax-mppi's basic example: its config, state and a jittable episode of (λ, Σ diag)."""
    import dataclasses

    import jax
    import jax.numpy as jnp
    from jax_mppi import mppi

    def dyn(x, u):
        return x + 0.1 * u

    def cost(x, u):
        return jnp.sum(x ** 2) + 0.01 * jnp.sum(u ** 2)

    def term(x, u):
        return 10.0 * jnp.sum(x ** 2)

    config, state = mppi.create(nx=2, nu=1, noise_sigma=jnp.eye(1), num_samples=K, horizon=T, lambda_=LAMBDA0)

    def episode(lam, var, key=None):
        # λ rides in the (static) config: replaced inside the trace it stays a tracer, so one
        # compile serves every candidate (jax-mppi's LambdaParameter would recompile).
        cfg = dataclasses.replace(config, lambda_=lam)
        st = dataclasses.replace(state, noise_sigma=jnp.diag(var), noise_sigma_inv=jnp.diag(1.0 / var))
        if key is not None:
            st = dataclasses.replace(st, key=key)

        def body(c, _):
            x, st, total = c
            a, st = mppi.command(cfg, st, x, dyn, cost, terminal_cost=term)
            x = dyn(x, a)
            return (x, st, total + cost(x, a)), None

        (_, _, total), _ = jax.lax.scan(body, (jnp.array(START), st, jnp.float32(0.0)), None, length=STEPS)
        return total

    return config, state, dyn, cost, term, episode


def tuner_worker(seed: int, pop: int, generations: int, jitted: bool) -> dict:
    """jax-mppi's `Autotune` + `EvoSaxOptimizer("CMA_ES")`: the clock read every generation."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax_mppi import autotune, mppi
    from jax_mppi.autotune_evosax import EvoSaxOptimizer

    config, state, dyn, cost, term, episode = jax_mppi_problem()
    holder = autotune.ConfigStateHolder(config, state)
    ep = jax.jit(episode)

    best_knobs = {"cost": np.inf, "knobs": None}

    def evaluate():
        lam, var = float(holder.config.lambda_), float(jnp.diag(holder.state.noise_sigma)[0])
        if jitted:
            total = float(ep(jnp.float32(holder.config.lambda_), jnp.diag(holder.state.noise_sigma)))
        else:  # the example as shipped
            x, st, total = jnp.array(START), holder.state, 0.0
            for _ in range(STEPS):
                a, st = mppi.command(holder.config, st, x, dyn, cost, terminal_cost=term)
                x = dyn(x, a)
                total += float(cost(x, a))
        if total < best_knobs["cost"]:  # the knobs as applied (jax-mppi clamps them)
            best_knobs.update(cost=total, knobs=[lam, var])
        return autotune.EvaluationResult(mean_cost=total, rollouts=jnp.zeros((1, 1, 2)), params={}, iteration=0)

    def make(key):
        holder.config, holder.state = config, state
        opt = EvoSaxOptimizer(strategy="CMA_ES", population=pop)
        tuner = autotune.Autotune(params_to_tune=[autotune.LambdaParameter(holder),
                                                  autotune.NoiseSigmaParameter(holder)],
                                  evaluate_fn=evaluate, optimizer=opt)
        opt.rng_key = key  # setup_optimization fixes PRNGKey(0)
        return tuner

    tuner = make(jax.random.PRNGKey(seed))
    best_knobs.update(cost=np.inf, knobs=None)
    curve, knobs, clock = [], [], []
    t0 = time.perf_counter()
    for _ in range(generations):
        tuner.optimize_step()
        clock.append(time.perf_counter() - t0)
        curve.append(float(best_knobs["cost"]))
        knobs.append(best_knobs["knobs"])
    # Its first generations compile (evosax's ask and tell are jitted per strategy object, the
    # episode once per argument signature): about 2 s, once a tuner. As the scans' compile,
    # that is reported apart: the clock counts every generation at the steady rate (the median
    # generation after the first two), the rest is set-up.
    steps = [b - a for a, b in zip([0.0] + clock, clock)]
    steady = sorted(steps[2:] or steps)[len(steps[2:] or steps) // 2]
    return {"best": curve, "knobs": knobs, "clock": [steady * (g + 1) for g in range(generations)],
            "raw_clock": clock, "setup_s": clock[-1] - steady * generations}


def scan_worker(seed: int, pop: int, generations: int, kestrel_fitness: bool) -> dict:
    """evosax CMA_ES, ask/evaluate/tell in one jitted `lax.scan`; the evaluate Kestrel's or the
    vmapped jax-mppi episode, both over (log λ, log σ)."""
    import jax
    import jax.numpy as jnp
    from evosax.algorithms import CMA_ES

    if kestrel_fitness:
        import kestrel.dist
        import kestrel.jax as kj

        # The episodes' noise comes from the evaluate key: the run's own (`spec.key(g)`, the
        # same every generation: common random numbers), from its seed.
        spec = kestrel.dist.ProblemSpec.mppi_tune(kestrel_config(1000 + seed))
        assert spec.num_dims == 2, spec.num_dims
        noise = kj.key_array(spec.key(0))

        def fitness(x):
            return kj.evaluate(spec, x, noise)
    else:
        *_, episode = jax_mppi_problem()
        noise = jax.random.PRNGKey(1000 + seed)

        def one(z):
            lam = jnp.exp(jnp.clip(z[0], *LOG_LAMBDA))
            sd = jnp.exp(jnp.clip(z[1:], *LOG_SIGMA))
            return episode(lam, sd * sd, noise)

        fitness = jax.vmap(one)

    es = CMA_ES(population_size=pop, solution=jnp.zeros(2))
    params = es.default_params
    mean0 = jnp.log(jnp.array([LAMBDA0, SIGMA0], jnp.float32))

    def run(key):
        k0, key = jax.random.split(key)
        st = es.init(k0, mean0, params)

        def gen(carry, k):
            st, best_f, best_x = carry
            ka, kt = jax.random.split(k)
            x, st = es.ask(ka, st, params)
            f = fitness(x)  # the only line that differs between the two scans
            st, _ = es.tell(kt, x, f, st, params)
            i = jnp.argmin(f)
            better = f[i] < best_f
            best_f, best_x = jnp.where(better, f[i], best_f), jnp.where(better, x[i], best_x)
            return (st, best_f, best_x), (best_f, best_x)

        carry = (st, jnp.float32(jnp.inf), mean0)
        return jax.lax.scan(gen, carry, jax.random.split(key, generations))[1]

    t0 = time.perf_counter()
    compiled = jax.jit(run).lower(jax.random.key(seed)).compile()
    compile_s = time.perf_counter() - t0
    runs = []
    for _ in range(3):  # the fastest of three executions
        t0 = time.perf_counter()
        best, xs = jax.block_until_ready(compiled(jax.random.key(seed)))
        runs.append(time.perf_counter() - t0)
    per = min(runs) / generations
    lam = jnp.exp(jnp.clip(xs[:, 0], *LOG_LAMBDA))
    sd = jnp.exp(jnp.clip(xs[:, 1], *LOG_SIGMA))
    return {"best": best.tolist(), "knobs": jnp.stack([lam, sd * sd], 1).tolist(),
            "clock": [per * (g + 1) for g in range(generations)], "compile_s": compile_s}


def referee_worker(path: str) -> dict:
    """jax-mppi's episode cost of every listed knob pair (λ, Σ), the mean over `REFEREE_KEYS`
    noise keys: one judge of every tuner's answers."""
    import jax
    import jax.numpy as jnp

    *_, episode = jax_mppi_problem()
    with open(path) as f:
        knobs = jnp.asarray(json.load(f), jnp.float32)
    keys = jax.random.split(jax.random.PRNGKey(12345), REFEREE_KEYS)
    per_key = jax.vmap(lambda k: jax.vmap(lambda kn: episode(kn[0], kn[1:], k))(knobs))
    return {"cost": jax.jit(per_key)(keys).mean(axis=0).tolist()}


REFEREE_KEYS = 64


def kestrel_config(seed: int) -> dict:
    """Kestrel's `mppi-tune` config of the same problem: system `basic` (jax-mppi's), its
    K, T, λ₀ and Σ₀, jax-mppi's convention (its noise cost, cost on x_t, zero initial plan)
    in f32, 20 steps from the system's start (1, -0.5), the noise keyed by `seed`."""
    return {"run": {"system": "basic", "steps": STEPS, "seed": seed, "controller": "mppi",
                    "mppi": {"num_samples": K, "horizon": T, "lambda": LAMBDA0, "noise_sigma": [SIGMA0],
                             "precision": "f32", "convention": "jax-mppi"}},
            "knobs": ["lambda", "sigma"]}


WORKERS = {
    "shipped": lambda s, p, g: tuner_worker(s, p, g, jitted=False),
    "tuner": lambda s, p, g: tuner_worker(s, p, g, jitted=True),
    "jax-scan": lambda s, p, g: scan_worker(s, p, g, kestrel_fitness=False),
    "kestrel-scan": lambda s, p, g: scan_worker(s, p, g, kestrel_fitness=True),
}
LABELS = {
    "shipped": "jax-mppi `Autotune` + `EvoSaxOptimizer(\"CMA_ES\")`, evaluate as shipped (un-jitted)",
    "tuner": "jax-mppi `Autotune` + `EvoSaxOptimizer(\"CMA_ES\")`, jitted evaluate",
    "jax-scan": "evosax `CMA_ES` in one jitted `lax.scan`, fitness `jit(vmap(jax-mppi episode))`",
    "kestrel-scan": "evosax `CMA_ES` in one jitted `lax.scan`, fitness `kestrel.jax.evaluate`",
}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pop", type=int, default=16)
    ap.add_argument("--generations", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--shipped-generations", type=int, default=1,
                    help="generations of the as-shipped tuner (one seed; a few seconds a candidate)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--referee", help=argparse.SUPPRESS)
    ap.add_argument("--from-json", help="render the table of a launch saved with --json, without running")
    a = ap.parse_args()
    if a.from_json:
        with open(a.from_json) as f:
            d = json.load(f)
        res = {n: (v["runs"] if isinstance(v, dict) else v) for n, v in d["results"].items()}
        print(render(res, d["pop"], d["generations"], d["seeds"], d["commit"], d["cpu"]))
        return
    if a.worker:
        name, seed, pop, gens = a.worker
        print(json.dumps(WORKERS[name](int(seed), int(pop), int(gens))))
        return
    if a.referee:
        print(json.dumps(referee_worker(a.referee)))
        return
    if a.pop < 4 or a.generations < 1 or a.seeds < 1 or a.shipped_generations < 0:
        ap.error("--pop >= 4, --generations >= 1, --seeds >= 1, --shipped-generations >= 0")

    jm = venv_python("venv-jaxmppi", "tools/golden/requirements-jaxmppi.txt")
    kpy = venv_python("venv-sb3", "crates/py/requirements-sb3.txt")
    install_kestrel(kpy)  # this checkout's build, not whatever the venv last got
    env = {**os.environ, "RAYON_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}

    def launch(py, *args):
        out = subprocess.run(ONE_CORE + [py, os.path.abspath(__file__), *args],
                             check=True, capture_output=True, text=True, env=env).stdout
        return json.loads(out.strip().splitlines()[-1])

    res = {n: [] for n in WORKERS}
    for seed in range(a.seeds):  # the tuners alternated seed by seed
        for name in ("tuner", "jax-scan", "kestrel-scan"):
            py = kpy if name == "kestrel-scan" else jm
            res[name].append(launch(py, "--worker", name, str(seed), str(a.pop), str(a.generations)))
            print(f"{name} seed {seed}: own best {res[name][-1]['best'][-1]:.4f} in {res[name][-1]['clock'][-1]:.3f} s",
                  file=sys.stderr)
    if a.shipped_generations:
        res["shipped"].append(launch(jm, "--worker", "shipped", "0", str(a.pop), str(a.shipped_generations)))

    # One judge for every answer: each generation's best knobs so far, scored by jax-mppi's
    # episode averaged over REFEREE_KEYS noise draws.
    flat = [k for rs in res.values() for r in rs for k in r["knobs"]]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(flat, f)
    try:
        judged = iter(launch(jm, "--referee", f.name)["cost"])
    finally:
        os.unlink(f.name)
    for rs in res.values():
        for r in rs:
            r["judged"] = [next(judged) for _ in r["knobs"]]
            # End state sane: every answer's knobs and costs finite.
            if not all(math.isfinite(v) for v in [*r["judged"], *r["best"], *(k for ks in r["knobs"] for k in ks)]):
                raise SystemExit(f"non-finite knobs or costs in a run: {r['best'][-1]}, {r['knobs'][-1]}")

    print(render(res, a.pop, a.generations, a.seeds, commit(), cpu_model()))
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu_model(), "pop": a.pop, "generations": a.generations,
                       "seeds": a.seeds, "results": res}, f, indent=1)


def render(res: dict, pop: int, generations: int, seeds: int, at: str, cpu: str) -> str:
    """The markdown table of one launch's results (`--from-json` renders a saved one)."""
    target = median([r["judged"][-1] for r in res["tuner"]])
    per = {n: median([r["clock"][-1] / len(r["clock"]) for r in res[n]]) for n in res if res[n]}

    def first_hit(r, level):
        return next((g for g, c in enumerate(r["judged"]) if c <= level), None)

    def reach(rs, level):
        hits = [r["clock"][g] for r in rs if (g := first_hit(r, level)) is not None]
        if not hits:
            return f"not reached (0/{len(rs)})"
        return f"{median(hits):.4f} ({len(hits)}/{len(rs)})"

    out = [f"### evosax CMA_ES tuning MPPI inside `jit`, against jax-mppi's evosax tuner — commit {at}, {cpu}, "
           "one core each\n",
           f"jax-mppi basic example (K={K}, T={T}, {STEPS} steps; λ and Σ), population {pop}, {generations} "
           f"generations, {seeds} seeds. Costs judged by jax-mppi's episode averaged over {REFEREE_KEYS} noise "
           f"draws; target {target:.4f} (the jitted-evaluate jax-mppi tuner's median final answer).\n",
           "| tuner | time a generation (ms) | per generation, to Kestrel | judged cost of the final knobs "
           "(median; min–max) | time to the target (median s; seeds that reach it) | time to within 0.1% of it "
           "| compile or set-up (s) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in ("shipped", "tuner", "jax-scan", "kestrel-scan"):
        rs = res.get(name)
        if not rs:
            continue
        if name == "shipped":
            def extrapolated(level):
                gens = median([(first_hit(r, level) if first_hit(r, level) is not None else generations - 1) + 1
                               for r in res["tuner"]])
                return f"{per[name] * gens:,.1f} (extrapolated: {gens:g} generations)"
            strict, loose, judged = extrapolated(target), extrapolated(1.001 * target), "—"
        else:
            strict, loose = reach(rs, target), reach(rs, 1.001 * target)
            finals = [r["judged"][-1] for r in rs]
            judged = f"{median(finals):.4f} ({min(finals):.4f}–{max(finals):.4f})"
        setup = median([r.get("compile_s", r.get("setup_s", 0.0)) for r in rs])
        out.append(f"| {LABELS[name]} | {1e3 * per[name]:,.2f} | {per[name] / per['kestrel-scan']:,.1f}x | {judged} "
                   f"| {strict} | {loose} | {setup:.2f} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
