"""Golden fixtures for kestrel-evo's Simple ES, DES, MA-ES, LM-MA-ES, ARS, ESMC, hill climbing,
random search, simulated annealing and gradientless descent from evosax 0.3.2: default
parameters, `ask` from known draws (the standard normals each one draws, and annealing's
uniform), and every `tell` over 24 generations with random (sometimes tied or NaN) fitness,
each generation's state before and after; PSO and SimpleGA from an evaluated first population
and the MR15, SAMR and GESMR GAs from an evaluated first population (evosax's
`init(population, fitness)`, Kestrel's generation 0).

Usage (the venv of tools/golden/evosax_tell.py):
    tools/venv-evosax/bin/python tools/golden/evosax_more.py --out tests/golden/evosax_more.json
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from evosax.algorithms import (ARS, ESMC, GESMR_GA, LM_MA_ES, MA_ES, MR15_GA, PSO, SAMR_GA,  # noqa: E402
                               DiscoveredES, GradientlessDescent, HillClimbing, RandomSearch, SimpleES,
                               SimpleGA, SimulatedAnnealing)

GENERATIONS = 24


def f(a):
    """An array as a flat list, NaN and inf as None (JSON has neither; the Rust side reads
    None back as NaN)."""
    return [v if np.isfinite(v) else None for v in np.asarray(a, dtype=np.float64).reshape(-1).tolist()]


def write_cases(path, seed, cases):
    """The fixture: evosax's version, the seed, the generations and the cases, compact JSON."""
    with open(path, "w") as fh:
        json.dump({"peer": "evosax 0.3.2", "seed": seed, "generations": GENERATIONS, "cases": cases}, fh,
                  separators=(",", ":"), allow_nan=False)
    print(f"{path}: {len(cases)} cases, {sum(len(c['steps']) for c in cases)} tells")


def snapshot(name, s):
    out = {"mean": f(s.mean), "generation": int(s.generation_counter)}
    if hasattr(s, "std"):
        out["std"] = f(s.std)
    if name in ("ma_es", "lm_ma_es"):
        out.update({"p_std": f(s.p_std), "m": f(s.M), "z": f(s.z)})
    if name in ("ars", "esmc"):
        adam = s.opt_state[0]
        out.update({"adam_m": f(adam.mu), "adam_v": f(adam.nu), "count": int(adam.count)})
    if name == "simulated_annealing":
        out.update({"fitness": finite(s.fitness), "temperature": float(s.temperature)})
    if name in ("hill_climbing", "random_search", "gradientless_descent"):
        out.update({"best": finite(s.best_fitness_shaped), "best_solution": f(s.best_solution_shaped)})
    return out


def finite(v):
    """A float, or None for +-inf and NaN (JSON has neither)."""
    v = float(v)
    return v if np.isfinite(v) else None


def draws(name, es, k_ask, k_tell, n):
    """The draws ask and tell make from their keys, as each algorithm's `_ask` makes them."""
    pop = es.population_size
    if name == "random_search":
        z = jnp.stack([jax.random.normal(k, (n,)) for k in jax.random.split(k_ask, pop)])
    elif name == "ars":
        z = jax.random.normal(k_ask, (pop // 2, n))
    elif name == "esmc":
        z = jax.random.normal(k_ask, (pop // 2 - 1, n))
    else:
        z = jax.random.normal(k_ask, (pop, n))
    out = {"z": f(z)}
    if name == "simulated_annealing":
        out["u"] = float(jax.random.uniform(k_tell))
    return out


def params_of(name, p):
    out = {k: f(getattr(p, k)) for k in ("weights", "std_init", "mu_eff", "c_std", "d_std", "c_1", "c_mu",
                                          "chi_n", "c_d", "c_c", "lr_std", "temperature_init",
                                          "temperature_limit", "temperature_decay", "boltzmann_constant",
                                          "radius_min", "radius_max", "radius_decay") if hasattr(p, k)}
    return out


def run(name, es, params, n, rng, sigma=None):
    pop_size = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    mean = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    state = es.init(key, mean, params)
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        before = snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + rng.normal(size=pop_size)
        if g % 3 == 1 and name not in ("ars", "esmc"):  # their means turn NaN on a NaN fitness
            fit[rng.integers(0, pop_size)] = np.nan
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({**draws(name, es, k_ask, k_tell, n), "population": f(x),
                      "fitness": [None if np.isnan(v) else float(v) for v in np.asarray(fit)],
                      "before": before, "after": snapshot(name, new_state)})
        state = new_state
    return {"strategy": name, "pop_size": pop_size, "num_dims": n, "params": params_of(name, params),
            "sigma": sigma, "start": f(mean), "steps": steps}


def pop_snapshot(name, s):
    out = {"members": f(s.population), "fitness": f(s.fitness)}
    if name in ("mr15_ga", "samr_ga", "gesmr_ga"):
        out["sigma"] = f(s.std)
    if name == "pso":
        out.update({"personal_best": f(s.population_best), "personal_fitness": f(s.fitness_best),
                    "velocity": f(s.velocity)})
    return out


def noisy_sphere(x, rng, g):
    fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + rng.normal(size=len(x))
    if g % 3 == 1:
        fit[rng.integers(0, len(x))] = np.nan
    if g % 3 == 2:
        fit[1] = fit[0]  # a tie
    return jnp.asarray(fit, dtype=jnp.float32)


def run_population(name, es, params, n, rng, sigma, nan_ok=True):
    pop = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    start = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    key, k0 = jax.random.split(key)
    z0 = jax.random.normal(k0, (pop, n))
    x0 = start + sigma * z0
    f0 = noisy_sphere(x0, rng, 1)
    state = es.init(key, x0, f0, params)
    first = {"z": f(z0), "population": f(x0), "fitness": [None if np.isnan(v) else float(v) for v in np.asarray(f0)],
             "after": pop_snapshot(name, state)}
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        if name == "pso":
            d = {"uniforms": f(jnp.stack([jax.random.uniform(k, (2,)) for k in jax.random.split(k_ask, pop)]))}
        elif name == "mr15_ga":
            d = {"normals": f(jnp.stack([jax.random.normal(k, (n,)) for k in jax.random.split(k_ask, pop)]))}
        elif name == "samr_ga":
            k_idx, k_std, k_x = jax.random.split(k_ask, 3)
            d = {"picks": [int(i) for i in jax.random.choice(k_idx, es.num_elites, (pop - 1,))],
                 "uniforms": f(jax.random.uniform(k_std, (pop,), minval=-1, maxval=1)),
                 "normals": f(jax.random.normal(k_x, (pop, n)))}
        elif name == "gesmr_ga":
            k_idx, k_eps = jax.random.split(k_ask)
            t_idx, t_eps = jax.random.split(k_tell)
            g = es.num_groups
            d = {"picks": [int(i) for i in jax.random.choice(k_idx, es.num_elites, (pop - 1,))],
                 "normals": f(jax.random.normal(k_eps, (pop, n))),
                 "tell_picks": [int(i) for i in jax.random.choice(t_idx, es.num_std_elites, (g - 1,))],
                 "tell_uniforms": f(jax.random.uniform(t_eps, (g,), minval=-1, maxval=1))}
        else:
            kc, km, k1, k2 = jax.random.split(k_ask, 4)
            p = jnp.arange(pop) < es.num_elites
            parents = jnp.concatenate([jax.random.choice(k1, pop, (pop,), p=p), jax.random.choice(k2, pop, (pop,), p=p)])
            d = {"parents": [int(i) for i in parents],
                 "uniforms": f(jnp.stack([jax.random.uniform(k, (n,)) for k in jax.random.split(kc, pop)])),
                 "normals": f(jnp.stack([jax.random.normal(k, (n,)) for k in jax.random.split(km, pop)]))}
        before = pop_snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        fit = noisy_sphere(x, rng, g if nan_ok else 0)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({**d, "population": f(x), "fitness": [None if np.isnan(v) else float(v) for v in np.asarray(fit)],
                      "before": before, "after": pop_snapshot(name, new_state)})
        state = new_state
    return {"strategy": name, "pop_size": pop, "num_dims": n, "params": {}, "sigma": sigma, "start": f(start),
            "first": first, "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=11)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    cases = []
    for cls, name, shapes in [(SimpleES, "simple_es", [(10, 4), (7, 6)]), (DiscoveredES, "des", [(12, 5), (9, 3)]),
                              (MA_ES, "ma_es", [(10, 4), (8, 6)]),
                              # λ ≤ n: evosax's c_c,0 = λ / n stays at most 1 (see ma_es.rs).
                              (LM_MA_ES, "lm_ma_es", [(8, 10), (6, 6)])]:
        for pop, n in shapes:
            es = cls(population_size=pop, solution=jnp.zeros(n))
            params = es.default_params.replace(std_init=0.6)
            cases.append(run(name, es, params, n, rng))
    # The others take their step size as a constant `std_schedule` (0.6 here); random search
    # samples N(start, 0.6²), the sampling function Kestrel's random search is.
    sched = optax.constant_schedule(0.6)
    for name, make, shapes in [
        ("ars", lambda p, n: ARS(p, jnp.zeros(n), std_schedule=sched), [(10, 4), (8, 6)]),
        ("esmc", lambda p, n: ESMC(p, jnp.zeros(n), std_schedule=sched), [(10, 4), (8, 3)]),
        ("hill_climbing", lambda p, n: HillClimbing(p, jnp.zeros(n), std_schedule=sched), [(6, 4)]),
        ("simulated_annealing", lambda p, n: SimulatedAnnealing(p, jnp.zeros(n), std_schedule=sched),
         [(6, 4), (5, 2)]),
        ("gradientless_descent", lambda p, n: GradientlessDescent(p, jnp.zeros(n)), [(9, 4)]),
    ]:
        for pop, n in shapes:
            es = make(pop, n)
            cases.append(run(name, es, es.default_params, n, rng, sigma=0.6))
    for pop, n in [(6, 4)]:
        start = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
        es = RandomSearch(pop, jnp.zeros(n), sampling_fn=lambda k, s=start: s + 0.6 * jax.random.normal(k, s.shape))
        case = run("random_search", es, es.default_params, n, rng, sigma=0.6)
        case["start"] = f(start)  # it samples around this, whatever the mean
        cases.append(case)
    for pop, n in [(8, 4), (6, 3)]:
        es = PSO(pop, jnp.zeros(n))
        cases.append(run_population("pso", es, es.default_params, n, rng, 0.6))
    for pop, n, rate in [(8, 4, 0.0), (7, 3, 0.4)]:
        es = SimpleGA(pop, jnp.zeros(n), std_schedule=sched)
        cases.append(run_population("simple_ga", es, es.default_params.replace(crossover_rate=rate), n, rng, 0.6))
        cases[-1]["params"] = {"crossover_rate": [rate]}
    for pop, n in [(8, 4), (6, 3)]:
        es = MR15_GA(pop, jnp.zeros(n))
        cases.append(run_population("mr15_ga", es, es.default_params.replace(std_init=0.6), n, rng, 0.6))
        es = SAMR_GA(pop, jnp.zeros(n))
        cases.append(run_population("samr_ga", es, es.default_params.replace(std_init=0.6), n, rng, 0.6))
    # One group with NaN fitness; three without (evosax's segment_min of a NaN is NaN, Kestrel's
    # ranks the group by its other members).
    for pop, n, groups in [(7, 4, 1), (10, 3, 3)]:
        es = GESMR_GA(pop, jnp.zeros(n), num_groups=groups)
        cases.append(run_population("gesmr_ga", es, es.default_params.replace(std_init=0.6), n, rng, 0.6,
                                    nan_ok=groups == 1))
        cases[-1]["params"] = {"num_groups": [groups]}
    write_cases(a.out, a.seed, cases)


if __name__ == "__main__":
    main()
