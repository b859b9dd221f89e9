"""Golden fixtures for kestrel-evo's model-building strategies from evosax 0.3.2: Rm-ES
(`rm_es.rs`), iAMaLGaM, full and univariate (`amalgam.rs`), CR-FM-NES (`cr_fm_nes.rs`) and
SV-OpenAI-ES (`sv_open_es.rs`), SV-CMA-ES (`sv_cma_es.rs`) and Diffusion Evolution
(`diffusion.rs`). For each case: 24 generations
of ask and tell with the draws each `_ask` makes recorded (so the Rust side injects them),
random fitness with ties, each generation's state before and after (SV-CMA-ES's "before" is the state `ask` returns:
its particles' covariances decomposed, as the CMA-ES golden records them).

Usage (the venv of tools/golden/evosax_tell.py):
    tools/venv-evosax/bin/python tools/golden/evosax_models.py --out tests/golden/evosax_models.json
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
from evosax.algorithms import (CR_FM_NES, SV_CMA_ES, SV_Open_ES, DiffusionEvolution, Rm_ES, iAMaLGaM_Full,  # noqa: E402
                               iAMaLGaM_Univariate)
from evosax.algorithms.population_based import diffusion_evolution as dfe  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evosax_more import GENERATIONS, f, finite, write_cases  # noqa: E402


def snapshot(name, s):
    out = {"generation": int(np.max(s.generation_counter))}
    if hasattr(s, "mean"):
        out["mean"] = f(s.mean)
    if name == "rm_es":
        out.update({"std": float(s.std), "p_c": f(s.p_c), "success": float(s.cumulative_rank_rate),
                    "paths": f(s.P), "path_times": f(s.t), "elite_fitness": f(s.fitness_elites_sorted)})
    elif name == "sv_open_es":
        pass
    elif name == "sv_cma_es":
        out.update({"std": f(s.std), "p_std": f(s.p_std), "p_c": f(s.p_c), "c": f(s.C), "b": f(s.B),
                    "d": f(s.D)})
    elif name == "diffusion":
        out.update({"population": f(s.population), "fitness": f(s.fitness),
                    "projection": f(s.latent_projection)})
    elif name == "cr_fm_nes":
        out.update({"std": float(s.std), "p_std": f(s.p_std), "p_c": f(s.p_c), "d": f(s.D), "v": f(s.v)})
    else:
        out.update({"c": f(s.C), "mean_shift": f(s.mean_shift), "nis_counter": int(s.nis_counter),
                    "c_mult": float(s.c_mult), "best": finite(s.best_fitness_shaped)})
    return out


def draws(name, es, k_ask, n):
    """The draws `_ask` makes from its key, in the order Kestrel's `ask_from_normals` reads."""
    if name == "diffusion":
        return {"z": f(jax.random.normal(k_ask, (es.population_size, n)))}
    if name == "sv_cma_es":
        keys = jax.random.split(k_ask, es.num_populations)
        return {"z": sum((f(jax.random.normal(k, (es.population_size, n))) for k in keys), [])}
    if name == "sv_open_es":
        keys = jax.random.split(k_ask, es.num_populations)
        return {"z": sum((f(jax.random.normal(k, (es.population_size // 2, n))) for k in keys), [])}
    if name == "cr_fm_nes":
        return {"z": f(jax.random.normal(k_ask, (es.population_size // 2, n)))}
    k_a, k_b = jax.random.split(k_ask)
    z = f(jax.random.normal(k_a, (es.population_size, n)))
    if name == "rm_es":
        return {"z": z, "r": f(jax.random.normal(k_b, (es.m,)))}
    ams = jax.random.choice(k_b, es.population_size, (es.ams_population_size,), replace=False)
    return {"z": z, "ams": [int(i) for i in np.asarray(ams)]}


def run(name, es, params, n, rng, extra):
    pop = getattr(es, "total_population_size", es.population_size)
    key = jax.random.PRNGKey(int(rng.integers(0, 2**31)))
    shape = (es.num_populations, n) if name in ("sv_open_es", "sv_cma_es") else (n,)
    mean = jnp.asarray(rng.normal(size=shape), dtype=jnp.float32)
    if name == "diffusion":  # population-based: init takes an evaluated population
        first = mean + extra["sigma"] * jnp.asarray(rng.normal(size=(pop, n)), dtype=jnp.float32)
        first_fit = jnp.asarray(np.sum(np.asarray(first, np.float64) ** 2, axis=1), dtype=jnp.float32)
        state = es.init(key, first, first_fit, params)
        extra = {**extra, "first": f(first), "first_fitness": f(first_fit)}
    else:
        state = es.init(key, mean, params)
    steps = []
    for g in range(GENERATIONS):
        key, k_ask, k_tell = jax.random.split(key, 3)
        before = snapshot(name, state)
        x, state = es.ask(k_ask, state, params)
        if name == "sv_cma_es":
            before = snapshot(name, state)
        fit = np.sum(np.asarray(x, dtype=np.float64) ** 2, axis=1) + 0.3 * rng.normal(size=pop)
        if g % 3 == 2:
            fit[1] = fit[0]  # a tie
        fit = jnp.asarray(fit, dtype=jnp.float32)
        new_state, _ = es.tell(k_tell, x, fit, state, params)
        steps.append({**draws(name, es, k_ask, n), "population": f(x),
                      "fitness": [float(v) for v in np.asarray(fit)],
                      "before": before, "after": snapshot(name, new_state)})
        state = new_state
    defaults = {k: (float(v) if np.ndim(v) == 0 else f(v)) for k, v in vars(params).items()}
    return {"strategy": name, "pop_size": pop, "num_dims": n, **extra, "params": defaults,
            "start": f(mean), "steps": steps}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=17)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    cases = []
    # Rm-ES: one path (evosax's default) and three (the thinning of the closest pair), then
    # three with a gap below one generation (every path shifts).
    for pop, n, m, gap in [(8, 4, 1, 20), (10, 6, 3, 20), (8, 5, 3, 0.5)]:
        es = Rm_ES(pop, jnp.zeros(n), m=m)
        params = es.default_params.replace(std_init=0.7, T=gap)
        cases.append(run("rm_es", es, params, n, rng, {"num_paths": m, "path_gap": gap, "sigma": 0.7}))
    for cls, name in [(iAMaLGaM_Full, "iamalgam_full"), (iAMaLGaM_Univariate, "iamalgam_univariate")]:
        for pop, n in [(8, 4), (13, 6)]:
            es = cls(pop, jnp.zeros(n), std_schedule=optax.constant_schedule(0.4))
            cases.append(run(name, es, es.default_params, n, rng, {"sigma": 0.4}))
    for pop, n, sigma in [(8, 6, 0.7), (12, 9, 0.3)]:
        es = CR_FM_NES(pop, jnp.zeros(n))
        params = es.default_params.replace(std_init=sigma)
        cases.append(run("cr_fm_nes", es, params, n, rng, {"sigma": sigma}))
    # SV-OpenAI-ES: particles close enough (kernel_std 2) for the kernel to couple them.
    for lam, k, n, lr in [(4, 3, 4, 0.05), (6, 4, 5, 0.2)]:
        es = SV_Open_ES(lam, k, jnp.zeros(n), optimizer=optax.sgd(lr), std_schedule=optax.constant_schedule(0.5))
        params = es.default_params.replace(kernel_std=2.0, alpha=0.7)
        cases.append(run("sv_open_es", es, params, n, rng, {"num_populations": k, "lr": lr, "sigma": 0.5}))
    # Diffusion Evolution: the default cosine schedule over 30 generations, the DDPM one over 16
    # (the schedule ends at generation 15, then the population stays) in a 2-D latent projection,
    # and the DDIM one.
    for pop, n, gens, sched, latent in [(8, 4, 30, "cosine", None), (10, 5, 16, "ddpm", 2),
                                        (6, 3, 40, "ddim", None)]:
        fn = {"cosine": dfe.cosine_schedule, "ddpm": dfe.ddpm_schedule, "ddim": dfe.ddim_schedule}[sched]
        es = DiffusionEvolution(pop, jnp.zeros(n), num_generations=gens, alpha_schedule=fn, num_latent_dims=latent)
        cases.append(run("diffusion", es, es.default_params, n, rng,
                         {"sigma": 0.8, "num_generations": gens, "schedule": sched, "latent_dims": latent}))
    # SV-CMA-ES: particles close enough (kernel_std 2) for the kernel to couple them, with
    # evosax's defaults for the rest; 3 particles of 6 rows and 4 of 5 (an odd block).
    for lam, k, n, sigma in [(6, 3, 4, 0.5), (5, 4, 3, 0.8)]:
        es = SV_CMA_ES(lam, k, jnp.zeros(n))
        params = es.default_params.replace(std_init=sigma, kernel_std=2.0, alpha=0.7)
        cases.append(run("sv_cma_es", es, params, n, rng, {"num_populations": k, "sigma": sigma}))
    write_cases(a.out, a.seed, cases)


if __name__ == "__main__":
    main()
