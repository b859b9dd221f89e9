"""Golden fixtures for kestrel-evo's learned strategies from evosax 0.3.2 with its own
meta-learned checkpoints: LES (`les.rs`, `ckpt/les/2023_10_les_v2.pkl`, evosax's default)
LGA (`lga.rs`, `ckpt/lga/2023_04_lga_v4.pkl`, evosax's default up to 50 dimensions, from
an evaluated first population) and CMA-anchored LES (`cma_anchored_les.rs`,
`ckpt/cma_anchored_les/2026_10_cma_anchored_les.pkl`; its base and alternative normals) and
EvoTF (`evotf.rs`, `ckpt/evotf/2024_03_SNES_small.pkl`; 110 generations in one case, past its
100-generation context, with each generation's features). For each case: 24 generations of ask and tell with the draws
each `_ask` makes (LES's standard normals; LGA's parent indices and mutation normals, and the
elites' selection choices, read back from the state it returns), so the Rust side injects them, random fitness with ties, each generation's state before
and after. The checkpoints are read by the Rust test from `tools/evosax-ckpt`'s copy of the
same wheel; none is written here.

Usage (the venv of tools/golden/evosax_tell.py):
    tools/venv-evosax/bin/python tools/golden/evosax_learned.py --out tests/golden/evosax_learned.json
"""
import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from evosax.algorithms import LearnedES as LES  # noqa: E402
from evosax.algorithms import CMAAnchoredLES  # noqa: E402
from evosax.algorithms import EvoTF_ES  # noqa: E402
from evosax.algorithms import LearnedGA as LGA  # noqa: E402
from evosax.learned_evolution.lga_tools import tanh_age  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evosax_more import GENERATIONS, f, finite, write_cases  # noqa: E402


def snapshot(name, s):
    out = {"generation": int(s.generation_counter), "mean": f(s.mean), "std": f(s.std)}
    if name == "les":
        out.update({"p_c": f(s.p_c), "p_std": f(s.p_std), "best": finite(s.best_fitness_shaped)})
    if name == "cales":
        out.update({"sigma": float(s.sigma), "axis": f(s.axis_std), "p_sigma": f(s.p_sigma), "p_c": f(s.p_c),
                    "success": f(s.success_ema), "epoch_best": finite(s.epoch_best_fitness),
                    "stall": float(s.stall_counter), "best": finite(s.best_fitness_shaped),
                    "best_row": f(s.best_solution_shaped)})
    if name == "evotf":
        d = s.df_state
        out.update({"best": finite(s.sf_state.best_fitness), "best_row": f(s.sf_state.best_solution),
                    "ff_best": finite(s.ff_state.best_fitness),
                    "old_mean": f(d.old_mean), "old_std": f(d.old_std), "path_mean": f(d.evopath_mean),
                    "path_std": f(d.evopath_std), "mom_mean": f(d.momentum_mean), "mom_std": f(d.momentum_std)})
    return out


def lga_snapshot(s):
    return {"generation": int(s.generation_counter), "elites": f(s.population), "fitness": f(s.fitness),
            "std": f(s.std), "age": f(s.age), "best": finite(s.best_fitness_shaped)}


def lga_ask_draws(es, state, params, k_ask):
    """`LearnedGA._ask`'s draws: the parent probabilities and indices, and the mutation normals."""
    key_idx, key_eps = jax.random.split(k_ask)
    age = tanh_age(state.age, state.generation_counter + 1e-8)
    feats = es.fitness_features.apply(state.population, state.fitness, state.best_fitness_shaped)
    feats = jnp.concatenate([feats, age[..., None]], axis=-1)
    p = es.sampling_layer.apply(params.params["sampling"], feats)
    idx = jax.random.choice(key_idx, es.num_elites, (es.population_size,), p=p)
    eps = jax.random.normal(key_eps, (es.population_size, es.num_dims))
    return {"p": f(p), "parents": [int(i) for i in np.asarray(idx)], "eps": f(eps)}


def run_lga(es, params, n, rng, sigma):
    pop = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    start = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    z0 = jax.random.normal(jax.random.fold_in(key, 7), (pop, n))
    first = start + sigma * z0
    first_fit = jnp.asarray(np.sum(np.asarray(first, np.float64) ** 2, axis=1), dtype=jnp.float32)
    state = es.init(key, first, first_fit, params)
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        before = lga_snapshot(state)
        draws = lga_ask_draws(es, state, params, k_ask)
        x, state = es.ask(k_ask, state, params)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + 0.3 * rng.normal(size=pop)
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        # Each elite's choice, read back: a reset age is a child taken (the first child with
        # its row), otherwise the elite kept itself (index pop).
        xs, new = np.asarray(x), np.asarray(new_state.population)
        choice = []
        for e in range(es.num_elites):
            if float(new_state.age[e]) == 0.0:
                c = [c for c in range(pop) if np.array_equal(xs[c], new[e])]
                assert c, (g, e)
                choice.append(c[0])
            else:
                choice.append(pop)
        steps.append({**draws, "population": f(x), "fitness": [float(v) for v in np.asarray(fit)],
                      "child_std": f(state.std_C), "choice": choice,
                      "before": before, "after": lga_snapshot(new_state)})
        state = new_state
    return {"strategy": "lga", "pop_size": pop, "num_dims": n, "sigma": sigma, "ckpt": "lga/2023_04_lga_v4.pkl",
            "start": f(start), "z0": f(z0), "first_fitness": f(first_fit), "steps": steps}


def run(name, es, params, n, rng, extra, gens=GENERATIONS, flat=False):
    pop = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    mean = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    state = es.init(key, mean, params)
    steps = []
    for g in range(gens):
        key, k_ask, k_tell = jax.random.split(key, 3)
        before = snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + 0.3 * rng.normal(size=pop)
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        if flat:  # a plateau: every row ties, the stall counter runs out
            fit = np.ones(pop)
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        if name == "cales":  # `_ask`'s two draws: base rows and the unmirrored rows' own
            k_base, k_alt = jax.random.split(k_ask)
            pb = (pop + 1) // 2
            z = {"base": f(jax.random.normal(k_base, (pb, n))), "alt": f(jax.random.normal(k_alt, (pop - pb, n)))}
        else:
            z = {"z": f(jax.random.normal(k_ask, (pop, n)))}
        if name == "evotf":  # the generation's features, as the context holds them
            idx = min(g, es.max_context_len - 1)
            z.update({"sfeat": f(new_state.solution_context[0, idx]), "ffeat": f(new_state.fitness_context[0, idx]),
                      "dfeat": f(new_state.distribution_context[0, idx])})
        steps.append({**z, "population": f(x),
                      "fitness": [float(v) for v in np.asarray(fit)],
                      "before": before, "after": snapshot(name, new_state)})
        state = new_state
    return {"strategy": name, "pop_size": pop, "num_dims": n, **extra, "start": f(mean), "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=23)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    cases = []
    for pop, n, sigma in [(8, 4, 0.5), (13, 7, 1.0)]:
        es = LES(pop, jnp.zeros(n))
        params = es.default_params.replace(std_init=sigma)
        cases.append(run("les", es, params, n, rng, {"sigma": sigma, "ckpt": "les/2023_10_les_v2.pkl"}))
    for pop, n, sigma in [(8, 3, 0.5), (12, 6, 1.0)]:
        es = LGA(pop, jnp.zeros(n))
        cases.append(run_lga(es, es.default_params.replace(std_init=sigma), n, rng, sigma))
    # CMA-anchored LES: an odd population (one unpaired row) and an even one; evosax's
    # default step 0.05 and a wider one.
    for pop, n, sigma in [(9, 4, 0.05), (12, 6, 0.3)]:
        es = CMAAnchoredLES(pop, jnp.zeros(n))
        params = es.default_params.replace(std_init=sigma)
        cases.append(run("cales", es, params, n, rng,
                         {"sigma": sigma, "ckpt": "cma_anchored_les/2026_10_cma_anchored_les.pkl"}))
    # A plateau for 140 generations: the stall counter reaches 120 + 30 * 4 / 9 at generation
    # 134 and the re-expansion re-anchors at the incumbent.
    es = CMAAnchoredLES(9, jnp.zeros(4))
    cases.append(run("cales", es, es.default_params, 4, rng,
                     {"sigma": 0.05, "ckpt": "cma_anchored_les/2026_10_cma_anchored_les.pkl"}, gens=140, flat=True))
    # EvoTF: 110 generations past its 100-generation context (the window slides from
    # generation 100), and two shorter shapes (more coordinates than rows in one).
    for pop, n, sigma, gens in [(8, 3, 1.0, 110), (12, 5, 0.5, GENERATIONS), (6, 9, 0.3, GENERATIONS)]:
        es = EvoTF_ES(pop, jnp.zeros(n))
        params = es.default_params.replace(std_init=sigma)
        cases.append(run("evotf", es, params, n, rng, {"sigma": sigma, "ckpt": "evotf/2024_03_SNES_small.pkl"},
                         gens=gens))
    write_cases(a.out, a.seed, cases)


if __name__ == "__main__":
    main()
