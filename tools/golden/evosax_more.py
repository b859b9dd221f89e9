"""Golden fixtures for kestrel-evo's Simple ES, DES, MA-ES and LM-MA-ES from evosax 0.3.2:
default parameters, `ask` from known standard normals, and every `tell` over 24 generations
with random (sometimes tied or NaN) fitness, each generation's state before and after.

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
from evosax.algorithms import LM_MA_ES, MA_ES, DiscoveredES, SimpleES  # noqa: E402

GENERATIONS = 24


def f(a):
    return np.asarray(a, dtype=np.float64).reshape(-1).tolist()


def snapshot(name, s):
    out = {"mean": f(s.mean), "generation": int(s.generation_counter), "std": f(s.std)}
    if name in ("ma_es", "lm_ma_es"):
        out.update({"p_std": f(s.p_std), "m": f(s.M), "z": f(s.z)})
    return out


def params_of(name, p):
    out = {"weights": f(p.weights), "std_init": f(p.std_init)}
    if name in ("ma_es", "lm_ma_es"):
        out.update({k: f(getattr(p, k)) for k in ("mu_eff", "c_std", "d_std", "c_1", "c_mu", "chi_n")})
    if name == "lm_ma_es":
        out.update({"c_d": f(p.c_d), "c_c": f(p.c_c)})
    if name == "simple_es":
        out["c_std"] = f(p.c_std)
    if name == "des":
        out["lr_std"] = f(p.lr_std)
    return out


def run(name, es, params, n, rng):
    pop_size = es.population_size
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    mean = jnp.asarray(rng.normal(size=n), dtype=jnp.float32)
    state = es.init(key, mean, params)
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        z = jax.random.normal(k_ask, (pop_size, n))  # what every one of these four draws in ask
        before = snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + rng.normal(size=pop_size)
        if g % 3 == 1:
            fit[rng.integers(0, pop_size)] = np.nan
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({"z": f(z), "population": f(x),
                      "fitness": [None if np.isnan(v) else float(v) for v in np.asarray(fit)],
                      "before": before, "after": snapshot(name, new_state)})
        state = new_state
    return {"strategy": name, "pop_size": pop_size, "num_dims": n, "params": params_of(name, params),
            "steps": steps}


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
    with open(a.out, "w") as fh:
        json.dump({"peer": "evosax 0.3.2", "seed": a.seed, "generations": GENERATIONS, "cases": cases}, fh,
                  separators=(",", ":"))
    print(f"{a.out}: {len(cases)} cases, {sum(len(c['steps']) for c in cases)} tells")


if __name__ == "__main__":
    main()
