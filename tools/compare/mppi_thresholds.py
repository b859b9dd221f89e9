"""The closed-loop bounds of `crates/mppi/tests/systems.rs`, measured on the reference.

plain MPPI with Σ = I jitters around its goal, so the Rust tests judge the distribution over
seeds (the median and the worst) instead of one draw. This script runs pytorch-mppi 0.9.1 on
the same three workloads, with the same parameters and the same closed loops, so the bounds
are justified by what the reference itself does (issue 33 item 7):

- double integrator, 2 dimensions, K = 200, T = 20, Σ = I, λ = 1, 60 steps from rest at the
  origin, goal at 1: the worst coordinate's error of the mean of the last 10 positions, 30 seeds;
- Nav2d (pytorch-mppi's Toy2DEnvironment), K = 500, T = 20, |u| ≤ 1, 40 steps from (−3, −2):
  the closest approach to the goal and the mean distance over the last 10 steps, 30 seeds;
- the same with K = 300 from starts perturbed by U[−0.5, 0.5] per coordinate, 32 episodes
  (the vec-env test's 8 seeds × 4 envs).

The nominal sequence starts at zeros, as Kestrel's (pytorch-mppi's default draws it from the
noise; `--noise-init` runs that instead). Kestrel's distributions come from the Rust tests
themselves:

    cargo test --release -p kestrel-mppi --test systems -- --nocapture

Usage (torch on the CPU, one thread; the venv of tools/golden/README.md):

    tools/venv-torch/bin/python tools/compare/mppi_thresholds.py [--json out.json]
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
import torch  # noqa: E402
from pytorch_mppi import MPPI  # noqa: E402

torch.set_num_threads(1)
D = torch.float64
GOAL = torch.tensor([2.0, 2.0], dtype=D)
HILL = torch.tensor([-0.5, -1.0], dtype=D)
START = [-3.0, -2.0]


def di_dyn(x, u, t=None):
    # kestrel_dynamics::DoubleIntegrator: v' = v + 0.1 a, p' = p + 0.1 v'.
    v = x[:, 2:] + 0.1 * u
    return torch.cat((x[:, :2] + 0.1 * v, v), dim=1)


def di_cost(x, u, t=None):
    return ((x[:, :2] - 1.0) ** 2).sum(1) + 0.1 * (x[:, 2:] ** 2).sum(1) + 0.01 * (u ** 2).sum(1)


def nav_dyn(x, u, t=None):
    # x' = x + B u, B = [[0.5, 0], [0, -0.5]].
    return torch.stack((x[:, 0] + 0.5 * u[:, 0], x[:, 1] - 0.5 * u[:, 1]), dim=1)


def nav_state_cost(x):
    d = HILL - x
    q = 0.1 * d[..., 0] ** 2 + 0.1 * d[..., 0] * d[..., 1] + 0.1 * d[..., 1] ** 2
    return ((GOAL - x) ** 2).sum(-1) + 200.0 * torch.exp(-2.5 * q)


def nav_cost(x, u, t=None):
    return nav_state_cost(x) + 0.01 * (u ** 2).sum(1)


def nav_terminal(states, actions):
    return 10.0 * nav_state_cost(states[..., -1, :])


def closed_loop(seed, dyn, cost, x0, steps, noise_init, **kw):
    torch.manual_seed(seed)
    nu = kw.pop("nu")
    ctrl = MPPI(dyn, cost, len(x0), torch.eye(nu, dtype=D), device="cpu", **kw)
    if not noise_init:
        ctrl.U = torch.zeros_like(ctrl.U)
    x = torch.tensor(x0, dtype=D)
    path = [x]
    for _ in range(steps):
        u = torch.as_tensor(ctrl.command(x)).reshape(1, nu)
        x = dyn(x.view(1, -1), u)[0]
        path.append(x)
    return torch.stack(path).numpy()


def nav_metrics(path):
    d = np.hypot(path[:, 0] - 2.0, path[:, 1] - 2.0)
    return float(d.min()), float(d[-10:].mean())


def summary(v):
    v = np.sort(np.asarray(v))
    return {"median": float(np.median(v)), "max": float(v[-1]), "sorted": [round(float(x), 4) for x in v]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--noise-init", action="store_true", help="pytorch-mppi's default U_init (noise) instead of zeros")
    ap.add_argument("--json", help="write the distributions here")
    a = ap.parse_args()
    bounded = dict(u_min=torch.tensor([-1.0, -1.0], dtype=D), u_max=torch.tensor([1.0, 1.0], dtype=D))

    di = []
    for seed in range(30):
        p = closed_loop(seed, di_dyn, di_cost, [0.0] * 4, 60, a.noise_init, nu=2, num_samples=200, horizon=20)
        m = p[-10:, :2].mean(0)
        di.append(float(np.abs(m - 1.0).max()))

    nav = [nav_metrics(closed_loop(seed, nav_dyn, nav_cost, START, 40, a.noise_init, nu=2, num_samples=500,
                                   horizon=20, terminal_state_cost=nav_terminal, **bounded)) for seed in range(30)]

    rng = np.random.default_rng(11)
    vec = []
    for ep in range(32):
        x0 = [s + 0.5 * (2.0 * rng.random() - 1.0) for s in START]
        vec.append(nav_metrics(closed_loop(100 + ep, nav_dyn, nav_cost, x0, 40, a.noise_init, nu=2, num_samples=300,
                                           horizon=20, terminal_state_cost=nav_terminal, **bounded)))

    out = {
        "peer": f"pytorch-mppi 0.9.1, torch {torch.__version__}, float64, U_init {'noise' if a.noise_init else 'zeros'}",
        "double_integrator_worst_coordinate": summary(di),
        "nav2d_closest": summary([c for c, _ in nav]),
        "nav2d_last10": summary([t for _, t in nav]),
        "nav2d_perturbed_closest": summary([c for c, _ in vec]),
        "nav2d_perturbed_last10": summary([t for _, t in vec]),
    }
    print(out["peer"])
    for k, v in out.items():
        if k != "peer":
            print(f"{k:36s} median {v['median']:.4f}  max {v['max']:.4f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
