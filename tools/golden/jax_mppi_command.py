"""Golden fixtures for kestrel-mppi's `JaxMppi` convention from jax-mppi 0.3.0 `mppi.command`,
with x64 enabled and `jax.random.multivariate_normal` patched to return `mu + z L^T` for our
standard normals `z`. Cases: bounds with u_scale, null action, |noise| cost, non-zero mean,
u_per_command > 1 (shift by it), and a 2-D linear system with a full covariance; then SMPPI
(`smppi.command`) and KMPPI (`kmppi.command`) cases on the pendulum and the linear system.
KMPPI is run with `shift=False` and shifted afterwards with jax-mppi's own
`_shift_control_points`/`_kernel_interpolate`, so the recorded action is U[0] of the optimised
plan (jax-mppi's shifted `U[1]` is a peer defect Kestrel does not reproduce); the recorded
control points and plan are jax-mppi's shifted ones.

Usage (Python >= 3.12):
    ~/.pyenv/versions/3.12.1/bin/python -m venv tools/venv-jaxmppi
    tools/venv-jaxmppi/bin/pip install -r tools/golden/requirements-jaxmppi.txt
    tools/venv-jaxmppi/bin/python tools/golden/jax_mppi_command.py --out tests/golden/jax_mppi.json
"""
import argparse
import json
import math
import warnings

warnings.filterwarnings("ignore")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax_mppi import kmppi, mppi, smppi  # noqa: E402

Z = {"z": None}


def patched_mvn(key, mean, cov, shape=None, dtype=None, method=None):
    L = jnp.linalg.cholesky(cov)
    return mean + Z["z"] @ L.T


jax.random.multivariate_normal = patched_mvn


def pend_dyn(x, u):
    th, thdot = x[0], x[1]
    uu = jnp.clip(u[0], -2.0, 2.0)
    newthdot = jnp.clip(thdot + (3.0 * 10.0 / 2.0 * jnp.sin(th) + 3.0 * uu) * 0.05, -8.0, 8.0)
    return jnp.array([th + newthdot * 0.05, newthdot])


def pend_cost(x, u):
    a = x[0] + math.pi
    th = a - 2 * math.pi * jnp.floor(a / (2 * math.pi)) - math.pi
    return th ** 2 + 0.1 * x[1] ** 2 + 0.001 * u[0] ** 2


def lin_dyn(x, u):
    return jnp.array([x[0] + 0.1 * x[1] + 0.005 * u[0], x[1] + 0.1 * u[0], x[2] + 0.1 * x[3] + 0.005 * u[1], x[3] + 0.1 * u[1]])


def lin_cost(x, u):
    return jnp.sum(x ** 2) + 0.1 * jnp.sum(u ** 2)


def run(name, dyn, cost, nx, sigma, x0, steps, rng, **kw):
    nu = sigma.shape[0]
    cfg, st = mppi.create(nx, nu, jnp.array(sigma), **{k: (jnp.array(v) if isinstance(v, list) else v) for k, v in kw.items()})
    K, T = cfg.num_samples, cfg.horizon
    out, state = [], jnp.array(x0, dtype=jnp.float64)
    for s in range(steps):
        z = rng.standard_normal((K, T, nu))
        Z["z"] = jnp.array(z)
        a, st = mppi.command(cfg, st, state, pend_dyn if nx == 2 else lin_dyn, pend_cost if nx == 2 else lin_cost)
        out.append({"x": np.asarray(state).tolist(), "z": z.reshape(-1).tolist(), "action": np.asarray(a).reshape(-1).tolist(),
                    "u": np.asarray(st.U).reshape(-1).tolist()})
        state = dyn(state, jnp.asarray(a).reshape(-1, nu)[0])
    return {"name": name, "system": "pendulum" if nx == 2 else "linear", "nu": nu, "sigma": np.asarray(sigma).reshape(-1).tolist(),
            "params": kw, "steps": out}


def run_variant(kind, name, nx, sigma, x0, steps, rng, **kw):
    nu = sigma.shape[0]
    dyn, cost = (pend_dyn, pend_cost) if nx == 2 else (lin_dyn, lin_cost)
    args = {k: (jnp.array(v) if isinstance(v, list) else v) for k, v in kw.items()}
    if kind == "smppi":
        cfg, st = smppi.create(nx, nu, jnp.array(sigma), **args)
        pts = cfg.horizon
    else:
        cfg, st, kern = kmppi.create(nx, nu, jnp.array(sigma), **args)
        pts = cfg.num_support_pts
    K = cfg.num_samples
    null = kw.get("sample_null_action", False)
    out, state = [], jnp.array(x0, dtype=jnp.float64)
    for s in range(steps):
        z = rng.standard_normal((K, pts, nu))
        Z["z"] = jnp.array(z[1:] if null else z)
        if kind == "smppi":
            a, st = smppi.command(cfg, st, state, dyn, cost, terminal_cost=term_cost)
            rec = {"u": np.asarray(st.U).reshape(-1).tolist(), "actions": np.asarray(st.action_sequence).reshape(-1).tolist()}
        else:
            a, st = kmppi.command(cfg, st, state, dyn, cost, kern, terminal_cost=term_cost, shift=False)
            theta = kmppi._shift_control_points(st.theta, st.Tk, st.u_init, cfg.u_per_command, kern)
            U, _ = kmppi._kernel_interpolate(st.Hs, st.Tk, theta, kern)
            st = kmppi.replace(st, theta=theta, U=U)
            rec = {"u": np.asarray(st.U).reshape(-1).tolist(), "theta": np.asarray(st.theta).reshape(-1).tolist()}
        out.append({"x": np.asarray(state).tolist(), "z": z.reshape(-1).tolist(), "action": np.asarray(a).reshape(-1).tolist(), **rec})
        state = dyn(state, jnp.asarray(a).reshape(-1, nu)[0])
    return {"name": name, "controller": kind, "system": "pendulum" if nx == 2 else "linear", "nu": nu,
            "sigma": np.asarray(sigma).reshape(-1).tolist(), "params": kw, "steps": out}


def term_cost(x, u):
    # Kestrel's terminal cost takes the state only; jax-mppi passes (x_T, u_{T-1}).
    return 10.0 * jnp.sum(x ** 2) if x.shape[0] == 4 else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(33)
    s1 = np.array([[1.0]])
    cases = [
        run("bounded-scaled", pend_dyn, pend_cost, 2, s1, [math.pi, 0.0], 4, rng, num_samples=64, horizon=12, u_min=[-2.0], u_max=[2.0], u_scale=2.0),
        run("null-abs-mu", pend_dyn, pend_cost, 2, s1 * 4, [2.0, 0.5], 4, rng, num_samples=50, horizon=10, sample_null_action=True, noise_abs_cost=True, lambda_=0.5, noise_mu=[0.3]),
        run("per-command-3", pend_dyn, pend_cost, 2, s1 * 0.5, [-1.0, 1.0], 4, rng, num_samples=40, horizon=8, u_per_command=3, u_min=[-1.5], u_max=[1.0]),
        run("full-covariance", lin_dyn, lin_cost, 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng, num_samples=80, horizon=10, lambda_=2.0),
    ]
    rng = np.random.default_rng(34)
    variants = [
        run_variant("smppi", "smppi-bounded", 2, s1 * 0.5, [math.pi, 0.0], 4, rng, num_samples=48, horizon=10, u_min=[-1.0], u_max=[1.0],
                    action_min=[-2.0], action_max=[2.0], w_action_seq_cost=0.5, delta_t=0.5),
        run_variant("smppi", "smppi-null-abs-scaled", 2, s1, [2.0, 0.5], 4, rng, num_samples=40, horizon=8, sample_null_action=True,
                    noise_abs_cost=True, u_scale=2.0, u_min=[-1.0], u_max=[1.0], action_min=[-2.0], action_max=[2.0], lambda_=0.5, noise_mu=[0.1]),
        run_variant("smppi", "smppi-per-command-2", 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng, num_samples=60,
                    horizon=9, u_per_command=2, u_min=[-3.0, -3.0], u_max=[3.0, 3.0], action_min=[-5.0, -5.0], action_max=[5.0, 5.0], lambda_=2.0),
        run_variant("kmppi", "kmppi-bounded", 2, s1, [math.pi, 0.0], 4, rng, num_samples=64, horizon=12, num_support_pts=5,
                    u_min=[-2.0], u_max=[2.0]),
        run_variant("kmppi", "kmppi-null-abs-scaled", 2, s1 * 2, [2.0, 0.5], 4, rng, num_samples=40, horizon=10, num_support_pts=4,
                    sample_null_action=True, noise_abs_cost=True, u_scale=2.0, u_min=[-2.0], u_max=[2.0], lambda_=0.5, noise_mu=[0.2]),
        run_variant("kmppi", "kmppi-per-command-3", 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng, num_samples=60,
                    horizon=12, num_support_pts=6, u_per_command=3, lambda_=2.0),
    ]
    with open(a.out, "w") as f:
        json.dump({"peer": f"jax-mppi 0.3.0 (jax {jax.__version__}, x64)", "cases": cases, "variants": variants}, f, separators=(",", ":"))
    print(f"{a.out}: {len(cases)} MPPI cases, {sum(len(c['steps']) for c in cases)} commands; "
          f"{len(variants)} SMPPI/KMPPI cases, {sum(len(c['steps']) for c in variants)} commands")


if __name__ == "__main__":
    main()
