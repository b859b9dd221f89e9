"""evosax 0.3.2's own spread on free runs, for kestrel-evo's distribution test: each strategy
Kestrel has under evosax's name, 10 seeds each, on the 10-D sphere (start 1, 150 generations)
and the 10-D Rosenbrock (start 0, 300 generations), population 16, step size 0.5 (`std_init`,
or a constant `std_schedule`; gradientless descent keeps its radii), the final best fitness
of every seed (float32, as evosax computes it).

Usage (the venv of tools/golden/evosax_tell.py):
    tools/venv-evosax/bin/python tools/golden/evosax_spread.py --out tests/golden/evosax_spread.json
(`--only NAME ...` runs those names and keeps the others' entries from the file, so adding a
strategy leaves the old entries as they were.)
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from evosax import algorithms as A  # noqa: E402

NAMES = ["CMA_ES", "Sep_CMA_ES", "SNES", "SimpleES", "DES", "MA_ES", "LM_MA_ES", "ARS", "ESMC", "HillClimbing",
         "RandomSearch", "SimulatedAnnealing", "GradientlessDescent", "PSO", "SimpleGA", "MR15_GA", "SAMR_GA",
         "GESMR_GA", "PersistentES", "NoiseReuseES", "GuidedES", "ASEBO", "Rm_ES", "iAMaLGaM_Full",
         "iAMaLGaM_Univariate", "CR_FM_NES",
         "SV_Open_ES", "DiffusionEvolution", "SV_CMA_ES", "Open_ES", "PGPE", "xNES", "DifferentialEvolution",
         "LES", "LGA", "CMAAnchoredLES", "EvoTF_ES"]
# Population-based: evosax's init takes an evaluated first population (Kestrel's generation 0).
POPULATION_BASED = {"PSO", "SimpleGA", "MR15_GA", "SAMR_GA", "GESMR_GA", "DiffusionEvolution",
                    "DifferentialEvolution", "LGA"}
# Those that take their step size as a constant schedule rather than `std_init`.
SCHEDULED = {"ARS", "ESMC", "HillClimbing", "SimulatedAnnealing", "SimpleGA", "PersistentES", "NoiseReuseES",
             "GuidedES", "ASEBO", "iAMaLGaM_Full", "iAMaLGaM_Univariate",
             "SV_Open_ES"}
# Stein variational: Kestrel's default of 4 particles sharing the population, their means drawn
# around the start with the step size (Kestrel's `init` with one mean).
PARTICLES = {"SV_Open_ES": 4, "SV_CMA_ES": 4}
PROBLEMS = {
    "sphere": (lambda x: jnp.sum(x ** 2, axis=-1), 1.0, 150),
    "rosenbrock": (lambda x: jnp.sum(100 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1 - x[..., :-1]) ** 2, axis=-1),
                   0.0, 300),
}
POP, DIMS, SEEDS = 16, 10, 10


def final_bests(name, fn, x0, gens):
    """The final best fitness of seeds 0..SEEDS-1, the seeds run side by side (one compile)."""
    cls = A.algorithms[name]  # "DES" is DiscoveredES
    if name in PARTICLES:
        sched = {"std_schedule": optax.constant_schedule(0.5)} if name in SCHEDULED else {}
        es = cls(population_size=POP // PARTICLES[name], num_populations=PARTICLES[name], solution=jnp.zeros(DIMS),
                 **sched)
    elif name == "Open_ES":  # Kestrel's OpenAI-ES: Adam at 0.05 (evosax's default is SGD at 1e-3)
        es = cls(population_size=POP, solution=jnp.zeros(DIMS), optimizer=optax.adam(0.05),
                 std_schedule=optax.constant_schedule(0.5))
    elif name in SCHEDULED:
        es = cls(population_size=POP, solution=jnp.zeros(DIMS), std_schedule=optax.constant_schedule(0.5))
    elif name == "RandomSearch":  # Kestrel's random search: N(x0, 0.5²)
        es = cls(population_size=POP, solution=jnp.zeros(DIMS),
                 sampling_fn=lambda k: x0 + 0.5 * jax.random.normal(k, (DIMS,)))
    else:
        es = cls(population_size=POP, solution=jnp.zeros(DIMS))
    params = es.default_params
    if hasattr(params, "std_init"):
        params = params.replace(std_init=0.5)

    def step(state, key):
        k_ask, k_tell = jax.random.split(key)
        x, state = es.ask(k_ask, state, params)
        state, _ = es.tell(k_tell, x, fn(x), state, params)
        return state, None

    def run(seed):
        key = jax.random.PRNGKey(seed)
        if name in POPULATION_BASED:
            first = x0 + 0.5 * jax.random.normal(jax.random.fold_in(key, 2), (POP, DIMS))
            state = es.init(key, first, fn(first), params)
        elif name in PARTICLES:
            means = x0 + 0.5 * jax.random.normal(jax.random.fold_in(key, 3), (PARTICLES[name], DIMS))
            state = es.init(key, means, params)
        else:
            state = es.init(key, jnp.full(DIMS, x0), params)
        # Kestrel counts the evaluated first population as its generation 0, so the same budget
        # of populations is init plus gens - 1 generations here.
        steps = gens - 1 if name in POPULATION_BASED else gens
        state, _ = jax.lax.scan(step, state, jax.random.split(jax.random.fold_in(key, 1), steps))
        return jnp.min(state.best_fitness)

    return [float(v) for v in jax.jit(jax.vmap(run))(jnp.arange(SEEDS))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", help="run these names only, keeping the others from --out")
    a = ap.parse_args()
    out = {"peer": "evosax 0.3.2", "pop_size": POP, "num_dims": DIMS, "std_init": 0.5, "problems": {}}
    kept = {}
    if a.only:
        with open(a.out) as fh:
            kept = json.load(fh)["problems"]
    for prob, (fn, x0, gens) in PROBLEMS.items():
        best = {n: (final_bests(n, fn, x0, gens) if not a.only or n in a.only else kept[prob]["best"][n])
                for n in NAMES}
        out["problems"][prob] = {"x0": x0, "generations": gens, "best": best}
        print(prob, {n: min(v) for n, v in out["problems"][prob]["best"].items()})
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
