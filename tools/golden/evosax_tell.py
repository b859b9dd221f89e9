"""Golden fixtures for kestrel-evo from evosax 0.3.2: default parameters, `ask` from known
standard normals, and one `tell` per generation for CMA_ES, Sep_CMA_ES, SNES, Open_ES (optax
Adam), xNES and PGPE (ClipUp), and DifferentialEvolution from an evaluated first population
with its index and crossover draws, over 24 generations with random (sometimes tied or NaN) fitness.

Usage:
    python3 -m venv tools/venv-evosax && tools/venv-evosax/bin/pip install -r tools/golden/requirements-evosax.txt
    tools/venv-evosax/bin/python tools/golden/evosax_tell.py --out tests/golden/evosax_tell.json
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from evosax.algorithms import CMA_ES, PGPE, SNES, DifferentialEvolution, Open_ES, Sep_CMA_ES, xNES  # noqa: E402


# Generations per case (the h_sigma case below keeps its 4).
GENS = 24


def f(a):
    return np.asarray(a, dtype=np.float64).reshape(-1).tolist()


def run(name, es, params, n, gens, rng, antithetic=False, linear=None, key_seed=None):
    pop_size = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)) if key_seed is None else key_seed)
    mean = jnp.asarray(rng.normal(size=n), dtype=jnp.float32) if key_seed is None else jnp.zeros(n)
    state = es.init(key, mean, params)
    steps = []
    for g in range(gens):
        key, k_ask, k_tell = jax.random.split(key, 3)
        if antithetic:
            zp = jax.random.normal(k_ask, (pop_size // 2, n))
            z = jnp.concatenate([zp, jnp.zeros_like(zp)])  # Kestrel mirrors the first half itself
        else:
            z = jax.random.normal(k_ask, (pop_size, n))
        x, state = es.ask(k_ask, state, params)
        if linear is not None:  # consistent steps: p_sigma sits near the h_sigma threshold
            fit = np.asarray(x, dtype=np.float64)[:, 0] + linear * rng.normal(size=pop_size)
        else:
            fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + rng.normal(size=pop_size)
            if g % 3 == 1:
                fit[rng.integers(0, pop_size)] = np.nan
            if g % 3 == 2:
                fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        before = snapshot(name, state)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({"z": f(z), "population": f(x), "fitness": [None if np.isnan(v) else float(v) for v in np.asarray(fit)],
                      "before": before, "after": snapshot(name, new_state)})
        state = new_state
    return {"strategy": name, "pop_size": pop_size, "num_dims": n, "params": params_of(name, params), "steps": steps}


def snapshot(name, s):
    out = {"mean": f(s.mean), "generation": int(s.generation_counter)}
    if name in ("cma_es", "sep_cma_es"):
        out.update({"sigma": float(s.std), "p_sigma": f(s.p_std), "p_c": f(s.p_c), "c": f(s.C), "d": f(s.D)})
        if name == "cma_es":
            out["b"] = f(s.B)
    elif name == "snes":
        out["sigma"] = f(s.std)
    elif name == "xnes":
        out.update({"sigma": float(s.std), "b": f(s.B)})
    elif name == "pgpe":
        out.update({"sigma": f(s.std), "velocity": f(s.opt_state[1].velocity)})
    else:
        adam = s.opt_state[0]
        out.update({"m": f(adam.mu), "v": f(adam.nu), "count": int(adam.count)})
    return out


def params_of(name, p):
    if name in ("cma_es", "sep_cma_es"):
        return {k: f(getattr(p, k)) for k in ("std_init", "weights", "mu_eff", "c_std", "d_std", "c_c", "c_1", "c_mu", "chi_n")}
    if name in ("snes", "xnes"):
        out = {"weights": f(p.weights), "lr_std_init": f(p.lr_std_init), "std_init": f(p.std_init)}
        if name == "xnes":
            out["lr_B"] = f(p.lr_B)
        return out
    if name == "pgpe":
        return {k: f(getattr(p, k)) for k in ("std_init", "std_lr", "std_max_change")}
    return {}


def de_draws(es, state, params, k_ask):
    """The draws DifferentialEvolution's `_ask` makes for each member, as indices: the base
    `a` (the best when elitist), the difference pair `b`, `c`, the forced crossover coordinate
    and the crossover uniforms (`_ask_member`'s key splits, one member at a time)."""
    lam, n = es.population_size, es.num_dims
    keys = jax.random.split(k_ask, lam)
    best = int(jnp.argmin(state.fitness))
    out = {"a": [], "b": [], "c": [], "forced": [], "r": []}
    for i in range(lam):
        key_a, key_R, key_r, key_ab = jax.random.split(keys[i], 4)
        p = jnp.ones(lam).at[i].set(0.0)
        a = best if params.elitism else int(jax.random.choice(key_a, lam, p=p))
        p = p.at[a].set(0.0)
        _, sub = jax.random.split(key_ab)
        b, c = (int(v) for v in jax.random.choice(sub, lam, (2,), replace=False, p=p))
        out["a"].append(a)
        out["b"].append(b)
        out["c"].append(c)
        out["forced"].append(int(jax.random.choice(key_R, n)))
        out["r"] += f(jax.random.uniform(key_r, (n,)))
    return out


def run_de(es, params, n, gens, rng):
    """DE from an evaluated first population (evosax's `init(key, population, fitness)`)."""
    lam = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    first = jnp.asarray(rng.normal(size=(lam, n)), dtype=jnp.float32)
    first_fit = jnp.asarray(np.sum(np.asarray(first, np.float64) ** 2, axis=1), dtype=jnp.float32)
    state = es.init(key, first, first_fit, params)
    steps = []
    for g in range(gens):
        key, k_ask, k_tell = jax.random.split(key, 3)
        before = {"population": f(state.population), "fitness": f(state.fitness)}
        draws = de_draws(es, state, params, k_ask)
        x, state = es.ask(k_ask, state, params)
        # The draws rebuild evosax's trial vectors (so the indices are the ones it used).
        pop = np.asarray(state.population)
        for i in range(lam):
            a, b, c = draws["a"][i], draws["b"][i], draws["c"][i]
            cross = np.asarray(draws["r"][i * n:(i + 1) * n]) < params.crossover_rate
            cross[draws["forced"][i]] = True
            want = np.where(cross, pop[a] + np.float32(params.differential_weight) * (pop[b] - pop[c]), pop[i])
            assert np.allclose(want, np.asarray(x[i]), rtol=1e-6, atol=1e-7), (g, i)  # XLA may fuse
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + 0.3 * rng.normal(size=lam)
        if g % 3 == 1:
            fit[rng.integers(0, lam)] = np.nan
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({**draws, "population": f(x),
                      "fitness": [None if np.isnan(v) else float(v) for v in np.asarray(fit)],
                      "before": before,
                      "after": {"population": f(new_state.population), "fitness": f(new_state.fitness)}})
        state = new_state
    return {"strategy": "de", "pop_size": lam, "num_dims": n,
            "params": {k: float(getattr(params, k)) for k in ("crossover_rate", "differential_weight")},
            "elitism": bool(params.elitism), "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    cases = []
    for pop, n in [(16, 5), (12, 10), (9, 3)]:
        es = CMA_ES(population_size=pop, solution=jnp.zeros(n))
        params = es.default_params.replace(std_init=jnp.asarray(0.7))
        cases.append(run("cma_es", es, params, n, GENS, rng))
    # A case where h_sigma's generation exponent matters (found by a sweep): evosax uses
    # 2(g + 2) where the tutorial has 2(g + 1), and the two disagree at generation 0 here.
    es = CMA_ES(population_size=16, solution=jnp.zeros(2))
    cases.append(run("cma_es", es, es.default_params, 2, 4, np.random.default_rng(1), linear=0.6, key_seed=3))
    es = Sep_CMA_ES(population_size=14, solution=jnp.zeros(6))
    cases.append(run("sep_cma_es", es, es.default_params.replace(std_init=jnp.asarray(0.5)), 6, GENS, rng))
    es = SNES(population_size=10, solution=jnp.zeros(4))
    cases.append(run("snes", es, es.default_params, 4, GENS, rng))
    es = Open_ES(population_size=8, solution=jnp.zeros(5), optimizer=optax.adam(0.05), std_schedule=optax.constant_schedule(0.3))
    cases.append(run("open_es", es, es.default_params, 5, GENS, rng, antithetic=True))
    # xNES as evosax runs it (Kestrel's `bugs = "all"`: B updated element-wise, from std_init I).
    es = xNES(population_size=12, solution=jnp.zeros(5))
    cases.append(run("xnes", es, es.default_params.replace(std_init=jnp.asarray(0.8)), 5, GENS, rng))
    es = PGPE(population_size=10, solution=jnp.zeros(6))
    cases.append(run("pgpe", es, es.default_params.replace(std_init=0.4), 6, GENS, rng, antithetic=True))
    for lam, n, elitism in [(10, 4, True), (8, 3, False)]:
        es = DifferentialEvolution(population_size=lam, solution=jnp.zeros(n))
        cases.append(run_de(es, es.default_params.replace(elitism=elitism), n, GENS, rng))
    with open(a.out, "w") as fh:
        json.dump({"peer": "evosax 0.3.2", "seed": a.seed, "cases": cases}, fh, separators=(",", ":"))
    print(f"{a.out}: {len(cases)} cases, {sum(len(c['steps']) for c in cases)} tells")


if __name__ == "__main__":
    main()
