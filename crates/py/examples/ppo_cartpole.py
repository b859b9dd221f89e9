"""PPO on Kestrel's CartPole-v1, in plain numpy.

A short, self-contained PPO (clipped surrogate, GAE, minibatch epochs, Adam, global
gradient clipping) with a 2-layer tanh MLP actor and critic whose forward and backward
passes are written out by hand, so nothing beyond numpy and gymnasium is needed.

    python crates/py/examples/ppo_cartpole.py                 # ~150k steps, well under a minute
    python crates/py/examples/ppo_cartpole.py --check         # exit 1 if it did not learn
    python crates/py/examples/ppo_cartpole.py --total-steps 300000 --seed 3

Autoreset: Kestrel's vector envs default to Gymnasium's NEXT_STEP mode. When row i reports
`terminated | truncated` at step t, the observation it returns is the episode's *final*
observation, and step t+1 resets that row: its action is ignored and it returns reward 0
and the first observation of the new episode. So:
  * the transition stored at t+1 for that row is not a real transition: it is masked out of
    the loss (`valid = ~prev_done`), and GAE does not flow across it (`1 - done_t`);
  * at a truncation (CartPole's 500-step limit) the value of the final observation is
    bootstrapped -- it is exactly the observation stored at t+1, so
    delta_t = r_t + gamma * V(obs_{t+1}) * (1 - terminated_t) - V(obs_t).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

# The nets are tiny (64 units): one BLAS thread is fastest, and a multi-threaded BLAS that
# busy-waits is very slow when the machine is shared. Likewise 16 CartPole rows are too few
# to be worth Rayon's thread pool. Both must be set before numpy / kestrel are imported;
# set them in the environment to override.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


import numpy as np
import numpy.typing as npt
import gymnasium as gym
from gymnasium.wrappers.vector import RecordEpisodeStatistics

import kestrel  # noqa: F401  (registers the `kestrel/<id>` envs with gymnasium)


# ----------------------------------------------------------------------------------------
# A 2-hidden-layer tanh MLP with a hand-written backward pass
# ----------------------------------------------------------------------------------------


Array = npt.NDArray[np.float64]
Cache = tuple[Array, Array, Array]


def orthogonal(rng: np.random.Generator, n_in: int, n_out: int, gain: float) -> Array:
    a = rng.standard_normal((max(n_in, n_out), min(n_in, n_out)))
    q, r = np.linalg.qr(a)
    q *= np.sign(np.diag(r))
    w = q if n_in >= n_out else q.T
    out: Array = gain * w[:n_in, :n_out]
    return out


class MLP:
    """x -> tanh(x W1 + b1) -> tanh(. W2 + b2) -> . W3 + b3."""

    def __init__(self, rng: np.random.Generator, sizes: tuple[int, int, int, int], out_gain: float) -> None:
        n0, n1, n2, n3 = sizes
        self.params: dict[str, Array] = {
            "W1": orthogonal(rng, n0, n1, np.sqrt(2)), "b1": np.zeros(n1),
            "W2": orthogonal(rng, n1, n2, np.sqrt(2)), "b2": np.zeros(n2),
            "W3": orthogonal(rng, n2, n3, out_gain), "b3": np.zeros(n3),
        }

    def forward(self, x: Array) -> tuple[Array, Cache]:
        p = self.params
        h1 = np.tanh(x @ p["W1"] + p["b1"])
        h2 = np.tanh(h1 @ p["W2"] + p["b2"])
        return h2 @ p["W3"] + p["b3"], (x, h1, h2)

    def backward(self, dout: Array, cache: Cache) -> dict[str, Array]:
        """Gradients of the loss w.r.t. every parameter, given d loss / d output."""
        x, h1, h2 = cache
        p = self.params
        g = {"W3": h2.T @ dout, "b3": dout.sum(0)}
        dz2 = (dout @ p["W3"].T) * (1.0 - h2 * h2)
        g["W2"], g["b2"] = h1.T @ dz2, dz2.sum(0)
        dz1 = (dz2 @ p["W2"].T) * (1.0 - h1 * h1)
        g["W1"], g["b1"] = x.T @ dz1, dz1.sum(0)
        return g


class Adam:
    def __init__(self, params: dict[str, Array], lr: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-5) -> None:
        self.params, self.lr, self.betas, self.eps, self.t = params, lr, betas, eps, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, grads: dict[str, Array]) -> None:
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1.0 - b1**self.t, 1.0 - b2**self.t
        for k, g in grads.items():
            self.m[k] = b1 * self.m[k] + (1 - b1) * g
            self.v[k] = b2 * self.v[k] + (1 - b2) * g * g
            self.params[k] -= self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)


def log_softmax(z: Array) -> Array:
    z = z - z.max(axis=1, keepdims=True)
    out: Array = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return out


# ----------------------------------------------------------------------------------------
# PPO
# ----------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--total-steps", type=int, default=150_000, help="env steps over all rows")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=128, help="rollout length per env")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--minibatches", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--check", action="store_true", help="exit 1 if the final mean return is below 150")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rng = np.random.default_rng(args.seed)

    envs = gym.make_vec("kestrel/CartPole-v1", num_envs=args.num_envs, vectorization_mode="vector_entry_point")
    envs = RecordEpisodeStatistics(envs, buffer_length=20)
    n, T = args.num_envs, args.num_steps
    obs_space, act_space = envs.single_observation_space, envs.single_action_space
    assert isinstance(obs_space, gym.spaces.Box) and isinstance(act_space, gym.spaces.Discrete)
    obs_dim = obs_space.shape[0]
    n_act = int(act_space.n)

    actor = MLP(rng, (obs_dim, args.hidden, args.hidden, n_act), out_gain=0.01)
    critic = MLP(rng, (obs_dim, args.hidden, args.hidden, 1), out_gain=1.0)
    # One Adam over both nets (disjoint key names), so one global gradient norm clips both.
    params = {**{"pi." + k: v for k, v in actor.params.items()}, **{"v." + k: v for k, v in critic.params.items()}}
    opt = Adam(params, lr=args.lr)

    obs_buf = np.zeros((T, n, obs_dim))
    act_buf = np.zeros((T, n), np.int64)
    logp_buf = np.zeros((T, n))
    val_buf = np.zeros((T, n))
    rew_buf = np.zeros((T, n))
    term_buf = np.zeros((T, n), bool)
    done_buf = np.zeros((T, n), bool)
    valid_buf = np.zeros((T, n), bool)

    obs, _ = envs.reset(seed=args.seed)
    prev_done = np.zeros(n, bool)  # row i's next step is NEXT_STEP's reset step
    num_updates = max(1, args.total_steps // (n * T))
    global_step, t0 = 0, time.perf_counter()
    curve = []

    for update in range(1, num_updates + 1):
        opt.lr = args.lr * (1.0 - (update - 1) / num_updates)  # linear annealing

        # ---- rollout ----------------------------------------------------------------
        for t in range(T):
            x = obs.astype(np.float64)
            logits, _ = actor.forward(x)
            logp_all = log_softmax(logits)
            # Sample from the categorical with the Gumbel-max trick.
            a = np.argmax(logp_all - np.log(-np.log(rng.random(logp_all.shape))), axis=1)
            v, _ = critic.forward(x)

            obs_buf[t], act_buf[t], val_buf[t, :] = x, a, v[:, 0]
            logp_buf[t] = logp_all[np.arange(n), a]
            valid_buf[t] = ~prev_done

            obs, rew, term, trunc, _ = envs.step(a)
            rew_buf[t], term_buf[t] = rew, term
            done_buf[t] = term | trunc
            prev_done = term | trunc
            global_step += n

        # ---- GAE (bootstrap with V(next obs): the final obs after a truncation) --------
        next_val = critic.forward(obs.astype(np.float64))[0][:, 0]
        adv = np.zeros((T, n))
        last = np.zeros(n)
        for t in reversed(range(T)):
            nv = next_val if t == T - 1 else val_buf[t + 1]
            delta = rew_buf[t] + args.gamma * nv * (1.0 - term_buf[t]) - val_buf[t]
            last = delta + args.gamma * args.gae_lambda * (1.0 - done_buf[t]) * last
            # A reset step (valid = False) is a fake transition: it gets no advantage and
            # the (1 - done) factor above already stops the previous step from reading it.
            last = np.where(valid_buf[t], last, 0.0)
            adv[t] = last
        ret = adv + val_buf

        # ---- PPO epochs over the valid transitions --------------------------------------
        keep = valid_buf.reshape(-1)
        b_obs = obs_buf.reshape(-1, obs_dim)[keep]
        b_act, b_logp = act_buf.reshape(-1)[keep], logp_buf.reshape(-1)[keep]
        b_adv, b_ret = adv.reshape(-1)[keep], ret.reshape(-1)[keep]
        m = len(b_act)
        mb = max(1, m // args.minibatches)
        clipfracs = []
        for _ in range(args.epochs):
            perm = rng.permutation(m)
            for start in range(0, m - mb + 1, mb):
                idx = perm[start : start + mb]
                x, a, A, R = b_obs[idx], b_act[idx], b_adv[idx], b_ret[idx]
                A = (A - A.mean()) / (A.std() + 1e-8)
                k = len(idx)

                # actor: L = -mean(min(r A, clip(r) A)) - ent_coef * mean(H)
                logits, acache = actor.forward(x)
                logp_all = log_softmax(logits)
                probs = np.exp(logp_all)
                ratio = np.exp(logp_all[np.arange(k), a] - b_logp[idx])
                clipped = ((A > 0) & (ratio > 1 + args.clip)) | ((A < 0) & (ratio < 1 - args.clip))
                clipfracs.append(clipped.mean())
                onehot = np.eye(n_act)[a]
                dlogp = np.where(clipped, 0.0, -A * ratio) / k  # d L / d log pi(a|x)
                dlogits = dlogp[:, None] * (onehot - probs)
                if args.ent_coef:
                    H = -(probs * logp_all).sum(1, keepdims=True)
                    dlogits += args.ent_coef * probs * (logp_all + H) / k  # d(-c H)/d logits
                g_pi = actor.backward(dlogits, acache)

                # critic: vf_coef * 0.5 * mean((V - R)^2)
                v, ccache = critic.forward(x)
                g_v = critic.backward(args.vf_coef * (v - R[:, None]) / k, ccache)

                grads = {**{"pi." + k_: g for k_, g in g_pi.items()}, **{"v." + k_: g for k_, g in g_v.items()}}
                norm = np.sqrt(sum(float((g * g).sum()) for g in grads.values()))
                if norm > args.max_grad_norm:
                    grads = {k_: g * (args.max_grad_norm / norm) for k_, g in grads.items()}
                opt.step(grads)

        mean_ret = float(np.mean(envs.return_queue)) if envs.return_queue else float("nan")
        curve.append((global_step, mean_ret))
        if update % 5 == 0 or update == num_updates:
            ev = 1.0 - np.var(b_ret - val_buf.reshape(-1)[keep]) / (np.var(b_ret) + 1e-8)
            print(
                f"update {update:3d}/{num_updates}  steps {global_step:7d}  "
                f"mean return (last 20 eps) {mean_ret:6.1f}  episodes {envs.episode_count:5d}  "
                f"clipfrac {np.mean(clipfracs):.3f}  explained var {ev:+.2f}  "
                f"{time.perf_counter() - t0:5.1f}s",
                flush=True,
            )

    envs.close()
    final = float(np.mean(envs.return_queue)) if envs.return_queue else 0.0
    wall = time.perf_counter() - t0
    print(f"{global_step} env steps in {wall:.1f}s ({global_step / wall:,.0f} steps/s including training)")
    print(f"final mean return over last {len(envs.return_queue)} episodes: {final:.1f}")
    if args.check and not final >= 150.0:
        print(f"check failed: final mean return {final:.1f} < 150", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
