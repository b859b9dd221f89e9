"""Golden fixtures for the kestrel-evo strategies added after `evosax_more.py`, from evosax 0.3.2:
Persistent ES, Noise-Reuse ES, Guided ES and ASEBO (`gradient_es.rs`). For each case: the
default parameters, and 24 generations of ask and tell with the draws each `_ask` makes
recorded (so the Rust side injects them), random fitness with ties, each generation's state
before and after.

Usage (the venv of tools/golden/evosax_tell.py):
    tools/venv-evosax/bin/python tools/golden/evosax_rest.py --out tests/golden/evosax_rest.json
"""
import argparse
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from evosax.algorithms import ASEBO, GuidedES, NoiseReuseES, PersistentES  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evosax_more import GENERATIONS, f, write_cases  # noqa: E402


def snapshot(name, s):
    out = {"mean": f(s.mean), "generation": int(s.generation_counter)}
    if name in ("persistent_es", "noise_reuse_es", "asebo"):
        adam = s.opt_state[0]
        out.update({"adam_m": f(adam.mu), "adam_v": f(adam.nu), "count": int(adam.count)})
    if name == "persistent_es":
        out.update({"pert": f(s.pert_accum), "inner_step": int(s.inner_step_counter)})
    if name == "noise_reuse_es":
        out.update({"pert": f(s.pert), "inner_step": int(s.inner_step_counter)})
    if name in ("guided_es", "asebo"):
        out["archive"] = f(s.grad_subspace)
    if name == "asebo":
        out["alpha"] = float(s.alpha)
    return out


def draws(name, es, k_ask, n):
    """The normals `_ask` draws from its key, in the order Kestrel's `ask_from_normals` reads."""
    half = es.population_size // 2
    if name == "guided_es":
        k_full, k_sub = jax.random.split(k_ask, 2)
        full = jax.random.normal(k_full, shape=(n, half))
        sub = jax.random.normal(k_sub, shape=(es.subspace_dims, half))
        return f(full) + f(sub)
    return f(jax.random.normal(k_ask, (half, n)))


def run(name, es, params, n, rng, sigma, lr, extra):
    pop = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    mean = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    state = es.init(key, mean, params)
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        gradient = None
        if name == "guided_es" and g % 4 != 3:  # every fourth ask without one (evosax's NaN)
            gradient = jnp.asarray(2 * np.asarray(state.mean) + 0.3 * rng.normal(size=n), dtype=jnp.float32)
            state = state.replace(grad=gradient)
        before = snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + rng.normal(size=pop)
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({"z": draws(name, es, k_ask, n), "gradient": None if gradient is None else f(gradient),
                      "population": f(x), "fitness": [float(v) for v in np.asarray(fit)],
                      "before": before, "after": snapshot(name, new_state)})
        state = new_state
    return {"strategy": name, "pop_size": pop, "num_dims": n, "sigma": sigma, "lr": lr, **extra,
            "start": f(mean), "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=13)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    sched = optax.constant_schedule(0.6)
    cases = []
    # Inner problems of T = 30 steps unrolled K = 10 at a time: a new one every third tell.
    for cls, name in [(PersistentES, "persistent_es"), (NoiseReuseES, "noise_reuse_es")]:
        for pop, n, lr in [(8, 4, 1e-3), (6, 5, 0.05)]:
            es = cls(pop, jnp.zeros(n), optimizer=optax.adam(lr), std_schedule=sched)
            params = es.default_params.replace(T=30, K=10)
            cases.append(run(name, es, params, n, rng, 0.6, lr, {"inner_steps": 30, "unroll_steps": 10}))
    for pop, n, k, lr in [(8, 4, 1, 1e-3), (10, 5, 2, 0.02)]:
        es = GuidedES(pop, jnp.zeros(n), subspace_dims=k, optimizer=optax.sgd(lr), std_schedule=sched)
        params = es.default_params
        cases.append(run("guided_es", es, params, n, rng, 0.6, lr,
                         {"subspace_dims": k, "alpha": float(params.alpha), "beta": float(params.beta)}))
    for pop, n, k, lr in [(8, 4, 1, 1e-3), (10, 6, 2, 0.05)]:
        es = ASEBO(pop, jnp.zeros(n), subspace_dims=k, optimizer=optax.adam(lr), std_schedule=sched)
        cases.append(run("asebo", es, es.default_params, n, rng, 0.6, lr, {"subspace_dims": k}))
    write_cases(a.out, a.seed, cases)


if __name__ == "__main__":
    main()
