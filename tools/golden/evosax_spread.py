"""evosax 0.3.2's own spread on free runs, for kestrel-evo's distribution test: each strategy
Kestrel has under evosax's name, 10 seeds each, on the 10-D sphere (start 1, 150 generations)
and the 10-D Rosenbrock (start 0, 300 generations), population 16, std_init 0.5, the final
best fitness of every seed (float32, as evosax computes it).

Usage (the venv of tools/golden/evosax_tell.py):
    tools/venv-evosax/bin/python tools/golden/evosax_spread.py --out tests/golden/evosax_spread.json
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from evosax import algorithms as A  # noqa: E402

NAMES = ["CMA_ES", "Sep_CMA_ES", "SNES", "SimpleES", "DES", "MA_ES", "LM_MA_ES"]
PROBLEMS = {
    "sphere": (lambda x: jnp.sum(x ** 2, axis=-1), 1.0, 150),
    "rosenbrock": (lambda x: jnp.sum(100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2, axis=-1),
                   0.0, 300),
}
POP, DIMS, SEEDS = 16, 10, 10


def final_bests(name, fn, x0, gens):
    """The final best fitness of seeds 0..SEEDS-1, the seeds run side by side (one compile)."""
    es = A.algorithms[name](population_size=POP, solution=jnp.zeros(DIMS))  # "DES" is DiscoveredES
    params = es.default_params.replace(std_init=0.5)

    def step(state, key):
        k_ask, k_tell = jax.random.split(key)
        x, state = es.ask(k_ask, state, params)
        state, _ = es.tell(k_tell, x, fn(x), state, params)
        return state, None

    def run(seed):
        key = jax.random.PRNGKey(seed)
        state = es.init(key, jnp.full(DIMS, x0), params)
        state, _ = jax.lax.scan(step, state, jax.random.split(jax.random.fold_in(key, 1), gens))
        return state.best_fitness

    return [float(v) for v in jax.jit(jax.vmap(run))(jnp.arange(SEEDS))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    out = {"peer": "evosax 0.3.2", "pop_size": POP, "num_dims": DIMS, "std_init": 0.5, "problems": {}}
    for prob, (fn, x0, gens) in PROBLEMS.items():
        out["problems"][prob] = {"x0": x0, "generations": gens,
                                 "best": {n: final_bests(n, fn, x0, gens) for n in NAMES}}
        print(prob, {n: min(v) for n, v in out["problems"][prob]["best"].items()})
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
