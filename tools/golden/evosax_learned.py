"""Golden fixtures for kestrel-evo's learned strategies from evosax 0.3.2 with its own
meta-learned checkpoints: LES (`les.rs`, `ckpt/les/2023_10_les_v2.pkl`, evosax's default).
For each case: 24 generations of ask and tell with the standard normals each `_ask` draws
(so the Rust side injects them), random fitness with ties, each generation's state before
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evosax_more import GENERATIONS, f, finite, write_cases  # noqa: E402


def snapshot(name, s):
    out = {"generation": int(s.generation_counter), "mean": f(s.mean), "std": f(s.std)}
    if name == "les":
        out.update({"p_c": f(s.p_c), "p_std": f(s.p_std), "best": finite(s.best_fitness_shaped)})
    return out


def run(name, es, params, n, rng, extra):
    pop = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    mean = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    state = es.init(key, mean, params)
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        before = snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + 0.3 * rng.normal(size=pop)
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({"z": f(jax.random.normal(k_ask, (pop, n))), "population": f(x),
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
    write_cases(a.out, a.seed, cases)


if __name__ == "__main__":
    main()
