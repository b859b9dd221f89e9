"""Golden fixtures for kestrel-mppi from pytorch-mppi 0.9.1 `MPPI.command`, with the standard
normals injected (its `_sample_noise` returns `mu + L z` for our `z`), float64 throughout.

Cases cover: control bounds, sample_null_action, noise_abs_cost, a non-zero noise mean,
specific action samplers (fixed sequences and one computed from the state),
u_scale, u_per_command > 1, lambda != 1 on the gym pendulum; and a 2-D linear system with a
full (non-diagonal) noise covariance; and rollout_samples > 1 (a pendulum ensemble whose
member m has gravity 10 + 0.5 m, with the variance cost), for MPPI and SMPPI. Each case runs several consecutive commands (the
nominal sequence shifts between them) and records the state, z, returned action(s), the
updated nominal sequence and the cost of every sample.

Usage:
    python3 -m venv tools/venv-torch && tools/venv-torch/bin/pip install -r tools/golden/requirements-torch.txt
    tools/venv-torch/bin/python tools/golden/pytorch_mppi_command.py --out tests/golden/pytorch_mppi.json
"""
import argparse
import json
import math
import warnings

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
import torch  # noqa: E402
from pytorch_mppi import KMPPI, MPPI, SMPPI  # noqa: E402
from pytorch_mppi.mppi import SpecificActionSampler  # noqa: E402

torch.set_num_threads(1)
D = torch.float64


def pend_dyn(x, u, t=None):
    th, thdot = x[:, 0:1], x[:, 1:2]
    uu = torch.clamp(u, -2.0, 2.0)
    newthdot = torch.clamp(thdot + (3.0 * 10.0 / 2.0 * torch.sin(th) + 3.0 * uu) * 0.05, -8.0, 8.0)
    return torch.cat((th + newthdot * 0.05, newthdot), dim=1)


def pend_cost(x, u, t=None):
    th = ((x[:, 0] + math.pi) % (2 * math.pi)) - math.pi
    return th ** 2 + 0.1 * x[:, 1] ** 2 + 0.001 * u[:, 0] ** 2


def ensemble_pend_dyn(K):
    """Pendulum ensemble for rollout_samples > 1: rows m*K..(m+1)*K are member m, with
    gravity 10 + 0.5 m (member 0 is pend_dyn)."""
    def dyn(x, u, t=None):
        m = torch.div(torch.arange(x.shape[0]), K, rounding_mode="floor").to(D).unsqueeze(1)
        g = 10.0 + 0.5 * m
        th, thdot = x[:, 0:1], x[:, 1:2]
        uu = torch.clamp(u, -2.0, 2.0)
        newthdot = torch.clamp(thdot + (3.0 * g / 2.0 * torch.sin(th) + 3.0 * uu) * 0.05, -8.0, 8.0)
        return torch.cat((th + newthdot * 0.05, newthdot), dim=1)
    return dyn


A = torch.tensor([[1.0, 0.1, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0.1], [0, 0, 0, 1.0]], dtype=D)
B = torch.tensor([[0.005, 0], [0.1, 0], [0, 0.005], [0, 0.1]], dtype=D)


def lin_dyn(x, u, t=None):
    return x @ A.T + u @ B.T


def lin_cost(x, u, t=None):
    return (x ** 2).sum(1) + 0.1 * (u ** 2).sum(1)


def drive(cls, noise_rows, extra, name, dyn, cost, nx, sigma, x0, steps, rng, system=None, zero_u=True, **kw):
    """Runs `steps` commands of `cls` with injected normals (`noise_rows(ctrl)` rows of noise
    per sample) and records, per command, the state, z, action(s), U, costs and `extra(ctrl)`."""
    nu = sigma.shape[0]
    ctrl = cls(dyn, cost, nx, torch.tensor(sigma, dtype=D), device="cpu", **kw)
    if zero_u:
        ctrl.U = torch.zeros_like(ctrl.U)  # Kestrel's init: u_init repeated (zeros here)
    K, R = ctrl.K, noise_rows(ctrl)
    chol = torch.linalg.cholesky(torch.tensor(sigma, dtype=D))
    mu = ctrl.noise_mu
    out, state = [], torch.tensor(x0, dtype=D)
    for s in range(steps):
        z = torch.tensor(rng.standard_normal((K, R, nu)), dtype=D)
        ctrl._sample_noise = lambda shape, z=z: z @ chol.T + mu
        a = ctrl.command(state)
        out.append({"x": state.tolist(), "z": z.reshape(-1).tolist(), "action": torch.as_tensor(a).reshape(-1).tolist(),
                    "u": ctrl.U.reshape(-1).tolist(), **extra(ctrl), "costs": ctrl.cost_total.tolist()})
        state = dyn(state.view(1, -1), torch.as_tensor(a).reshape(-1, nu)[:1] * kw.get("u_scale", 1))[0]
    params = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in kw.items()}
    return {"name": name, "system": system or ("pendulum" if nx == 2 else "linear"), "nu": nu, "sigma": np.asarray(sigma).reshape(-1).tolist(),
            "params": params, "steps": out}


def run(*a, **kw):
    return drive(MPPI, lambda c: c.T, lambda c: {}, *a, **kw)


def run_smppi(*a, **kw):
    # SMPPI keeps its own initial U (zeros).
    return drive(SMPPI, lambda c: c.T, lambda c: {"actions": c.action_sequence.reshape(-1).tolist()}, *a, zero_u=False, **kw)


def run_kmppi(*a, **kw):
    r = drive(KMPPI, lambda c: c.num_support_pts, lambda c: {"theta": c.theta.reshape(-1).tolist()}, *a, **kw)
    p = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in kw.items() if k != "kernel"}
    p["num_support_pts"] = len(r["steps"][0]["theta"]) // r["nu"]
    p["kernel_sigma"] = kw["kernel"].sigma if "kernel" in kw else 1.0
    r["params"] = p  # the kernel object is replaced by its sigma
    return r


class Recorded(SpecificActionSampler):
    """A specific action sampler: `f(state)` gives the sequences; the last ones are kept."""

    def __init__(self, f):
        super().__init__()
        self.f, self.last = f, None

    def sample_trajectories(self, state, info):
        self.last = self.f(state)
        return self.last


def run_specific(name, f, fixed, *a, **kw):
    """MPPI with a specific action sampler; each command records the sequences it tried
    (`specific`); `fixed` ones also go in the params as `specific_actions`."""
    sampler = Recorded(f)
    r = drive(MPPI, lambda c: c.T, lambda c: {"specific": sampler.last.reshape(-1).tolist()}, name, *a,
              specific_action_sampler=sampler, **kw)
    del r["params"]["specific_action_sampler"]
    if fixed:
        r["params"]["specific_actions"] = [row.reshape(-1).tolist() for row in f(None)]
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rng = np.random.default_rng(21)
    s1 = np.array([[1.0]])
    cases = [
        run("bounded", pend_dyn, pend_cost, 2, s1, [math.pi, 0.0], 4, rng, num_samples=64, horizon=12, u_min=torch.tensor([-2.0], dtype=D), u_max=torch.tensor([2.0], dtype=D)),
        run("null-action-abs-cost", pend_dyn, pend_cost, 2, s1 * 4, [2.0, 0.5], 4, rng, num_samples=50, horizon=10, sample_null_action=True, noise_abs_cost=True, lambda_=0.5),
        run("mu-scale-multi", pend_dyn, pend_cost, 2, s1 * 0.25, [-1.0, 1.0], 4, rng, num_samples=40, horizon=8, noise_mu=torch.tensor([0.3], dtype=D), u_scale=2.0, u_per_command=3, u_min=torch.tensor([-1.5], dtype=D), u_max=torch.tensor([1.0], dtype=D)),
        run("full-covariance", lin_dyn, lin_cost, 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng, num_samples=80, horizon=10, lambda_=2.0),
        run("ensemble-var-cost", ensemble_pend_dyn(40), pend_cost, 2, s1, [2.5, -0.5], 4, rng, system="ensemble", num_samples=40, horizon=10, rollout_samples=3, rollout_var_cost=0.5, rollout_var_discount=0.9, u_min=torch.tensor([-2.0], dtype=D), u_max=torch.tensor([2.0], dtype=D)),
        run("ensemble-scale-null", ensemble_pend_dyn(30), pend_cost, 2, s1 * 0.5, [-2.0, 1.0], 4, rng, system="ensemble", num_samples=30, horizon=8, rollout_samples=5, rollout_var_cost=2.0, u_scale=1.5, sample_null_action=True),
    ]
    smppi = [
        run_smppi("smppi-bounded", pend_dyn, pend_cost, 2, s1, [math.pi, 0.0], 4, rng, num_samples=64, horizon=12, u_min=torch.tensor([-1.0], dtype=D), u_max=torch.tensor([1.0], dtype=D), action_min=torch.tensor([-2.0], dtype=D), action_max=torch.tensor([2.0], dtype=D), w_action_seq_cost=5.0, delta_t=0.5),
        run_smppi("smppi-scale-null", pend_dyn, pend_cost, 2, s1 * 2, [1.0, -0.5], 4, rng, num_samples=40, horizon=8, u_scale=1.5, sample_null_action=True, lambda_=0.7, delta_t=1.0),
        run_smppi("smppi-ensemble", ensemble_pend_dyn(40), pend_cost, 2, s1, [2.0, 0.0], 4, rng, system="ensemble", num_samples=40, horizon=10, rollout_samples=4, rollout_var_cost=1.0, delta_t=0.5, action_min=torch.tensor([-2.0], dtype=D), action_max=torch.tensor([2.0], dtype=D)),
        run_smppi("smppi-full-covariance", lin_dyn, lin_cost, 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng, num_samples=60, horizon=10, w_action_seq_cost=2.0, delta_t=0.2, action_min=torch.tensor([-3.0, -3.0], dtype=D)),
    ]
    from pytorch_mppi.mppi import RBFKernel
    kmppi = [
        run_kmppi("kmppi-bounded", pend_dyn, pend_cost, 2, s1 * 2, [math.pi, 0.0], 4, rng, num_samples=64, horizon=12, u_min=torch.tensor([-2.0], dtype=D), u_max=torch.tensor([2.0], dtype=D)),
        run_kmppi("kmppi-rbf2-support4", lin_dyn, lin_cost, 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng, num_samples=50, horizon=10, num_support_pts=4, kernel=RBFKernel(sigma=2.0), lambda_=2.0),
    ]
    # After every other case, so their draws are unchanged.
    T = 10
    fixed = torch.stack([torch.full((T, 1), 1.5, dtype=D), torch.linspace(-2.5, 2.5, T, dtype=D).reshape(T, 1)])
    specific = [
        run_specific("specific-fixed-null-bounded", lambda state: fixed, True, pend_dyn, pend_cost, 2, s1, [2.0, 0.5], 4, rng,
                     num_samples=30, horizon=T, sample_null_action=True, u_min=torch.tensor([-2.0], dtype=D),
                     u_max=torch.tensor([2.0], dtype=D), lambda_=0.5),
        run_specific("specific-from-state", lambda state: (-0.8 * state[0] * torch.ones(1, 8, 2, dtype=D)), False,
                     lin_dyn, lin_cost, 4, np.array([[1.0, 0.3], [0.3, 0.5]]), [1.0, 0.0, -1.0, 0.5], 4, rng,
                     num_samples=40, horizon=8, lambda_=2.0),
    ]
    with open(a.out, "w") as f:
        json.dump({"peer": "pytorch-mppi 0.9.1 (torch %s, float64)" % torch.__version__, "cases": cases, "smppi_cases": smppi, "kmppi_cases": kmppi,
                   "specific_cases": specific}, f, separators=(",", ":"))
    print(f"{a.out}: {len(cases)} MPPI, {len(smppi)} SMPPI, {len(kmppi)} KMPPI, {len(specific)} specific-sampler cases, "
          f"{sum(len(c['steps']) for c in cases + smppi + kmppi + specific)} commands")


if __name__ == "__main__":
    main()
