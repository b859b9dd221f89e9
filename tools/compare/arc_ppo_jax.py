#!/usr/bin/env python3
"""PureJaxRL's PPO on Mini-ARC, the whole training loop one jitted `lax.scan`, over Kestrel's env
(`kestrel.jax`, XLA FFI calls) and over JaxARC 1.0.3's own functional env, on this CPU (issue 59
item 4): environment steps per second including the learning, and the learning curves over
`--seeds` seeds.

The training code (`make_train`) is PureJaxRL's `ppo.py` (Lu et al. 2022,
github.com/luchris429/purejaxrl): flax `ActorCritic` (two tanh layers of 64, orthogonal init),
`optax.chain(clip_by_global_norm, adam)` with the annealed rate, GAE, `UPDATE_EPOCHS` passes
over `NUM_MINIBATCHES` shuffled minibatches, its `LogWrapper`'s episode statistics; the whole of
`train(rng)` one `jax.jit`. It reads the env only through a gymnax-shaped batched interface,
`reset(key, params) -> (state, obs)` and `step(key, state, action, params) -> (state, obs,
reward, done, info)`, of which there are two here, the only code that differs:

- `KestrelArc`: `kestrel.jax.make_vec("ARC-jaxarc-v0", ...)` with `bugs="all"` (JaxARC 1.0.3's
  behaviour), the mask form of the action; its state is the env's handle (`params` carries the
  first one into `train`), its autoreset Kestrel's own ("same_step").
- `JaxArc`: `jaxarc.envs.functional.step` vmapped over the batch, ended rows restarted as
  JaxARC's reset does with its "demo" grid initialisation (what `bugs="all"` does; the start
  states built by `jaxarc_states`, as `arc_ppo.py`'s `JaxArcVec`), the restarts drawn with
  `jax.random` inside the step.

Both: 5x5 canvas, 20-step episodes, no penalty for a wrong Submit (the CleanRL example's ARC
settings), JaxARC's reward config otherwise; the policy's action is one of 35 x 25 (operation,
cell), the cell a one-cell selection mask; the observation the working grid, one-hot over the
10 colours. The tasks: the first `--tasks` Mini-ARC tasks (ARCLE's bundled copy), JaxARC's paper
task first.

Each (engine, seed) is its own process on core 0 (one XLA thread, one rayon thread), the
engines alternated seed by seed. Timed: the compiled `train` alone (`jit(...).lower().compile()`
first, its time reported apart). Curves: PureJaxRL's metric, the mean return of the episodes
that ended in each update, mean and sd over seeds. Writes `results.json`, `table.md` and
`ppo-jax-curves.svg` to a folder under `--out`.

Usage (from the repository root; tools/venv-jaxppo is made on first use, and this checkout's
Kestrel installed into it: the wheel `KESTREL_WHEEL` names, else a release build of ./crates/py):
    python3 tools/compare/arc_ppo_jax.py [--seeds 5] [--timesteps 1000000] [--tasks 4]
        [--envs 64 --steps 64] [--out runs/arc-ppo-jax] [--figures docs/benchmarks/arc]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from typing import NamedTuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ONE_CORE, ROOT, commit, cpu_model, install_kestrel, venv_python  # noqa: E402

SIDE, OPS, STEPS = 5, 35, 20
REWARDS = {"unsolved_submission_penalty": 0.0}  # the CleanRL example's ARC_REWARDS


# --- the two envs, behind one batched interface --------------------------------------------

def decode(action):
    """Flat actions (35 x 25) as (operation, one-cell mask): JaxARC's flattened order."""
    import jax.numpy as jnp

    op, cell = action // (SIDE * SIDE), action % (SIDE * SIDE)
    mask = (jnp.arange(SIDE * SIDE)[None, :] == cell[:, None]).reshape(-1, SIDE, SIDE)
    return op.astype(jnp.int32), mask


class KestrelArc:
    """Kestrel's ARC env through kestrel.jax; the state is the handle."""

    def __init__(self, task_dir: str, num_envs: int):
        import kestrel.jax as kj

        self.env = kj.make_vec("ARC-jaxarc-v0", num_envs, data=task_dir, canvas=SIDE, selection="mask",
                               max_episode_steps=STEPS, bugs="all", rewards=REWARDS)
        self.num_envs = num_envs

    def params(self):
        return self.env.handle

    def reset(self, key, handle):
        import jax
        import jax.numpy as jnp

        seed = jax.random.bits(key, dtype=jnp.uint32)
        handle, obs = self.env.reset(handle, seed)
        return handle, obs["grid"]

    def step(self, key, handle, action, params):
        op, mask = decode(action)
        handle, obs, reward, terminated, truncated = self.env.step(handle, {"operation": op, "selection": mask})
        return handle, obs["grid"], reward, terminated | truncated, {}


class JaxArc:
    """JaxARC 1.0.3's functional env, vmapped, with its demo-init reset of ended rows."""

    def __init__(self, files: list[str], num_envs: int):
        import jax.numpy as jnp
        import kestrel
        import numpy as np
        from jaxarc.configs.action_config import ActionConfig
        from jaxarc.configs.dataset_config import DatasetConfig
        from jaxarc.configs.grid_initialization_config import GridInitializationConfig
        from jaxarc.configs.reward_config import RewardConfig
        from jaxarc.types import EnvParams
        from jaxarc_states import pad, read_task, states

        rewards = {**kestrel.config("ARC-jaxarc-v0")["rewards"], **REWARDS}
        self.env_params = EnvParams(dataset=DatasetConfig(max_grid_height=SIDE, max_grid_width=SIDE),
                                    action=ActionConfig(), reward=RewardConfig(**rewards),
                                    grid_initialization=GridInitializationConfig(), max_episode_steps=STEPS,
                                    buffer=jnp.zeros(1), episode_mode=0)
        # One start state per (task, episode pair p, drawn pair q): the target p's output, the
        # working grid q's input (JaxARC's `_init_demo_grid`, Kestrel's `wrong_pair_init`).
        tasks = [read_task(f) for f in files]
        rows, first = [], []
        for t in tasks:
            first.append(len(rows))
            rows += [(*pad(q["input"], SIDE), *pad(p["output"], SIDE), *pad(p["input"], SIDE))
                     for p in t["train"] for q in t["train"]]
        self.first = jnp.asarray(first, jnp.int32)
        self.pairs = jnp.asarray([len(t["train"]) for t in tasks], jnp.int32)
        self.starts = states(*(np.stack([r[k] for r in rows]) for k in range(6)))
        self.num_envs = num_envs

    def params(self):
        return None

    def _draw(self, key):
        """A start per row: a random task, its episode pair and the working grid's pair."""
        import jax
        import jax.numpy as jnp

        kt, kp, kq = jax.random.split(key, 3)
        t = jax.random.randint(kt, (self.num_envs,), 0, self.pairs.shape[0])
        k = self.pairs[t]
        p = jnp.floor(jax.random.uniform(kp, (self.num_envs,)) * k).astype(jnp.int32)
        q = jnp.floor(jax.random.uniform(kq, (self.num_envs,)) * k).astype(jnp.int32)
        idx = self.first[t] + p * k + q
        return jax.tree_util.tree_map(lambda x: x[idx], self.starts)

    def reset(self, key, params):
        state = self._draw(key)
        return state, state.working_grid

    def step(self, key, state, action, params):
        import jax
        import jax.numpy as jnp
        from jaxarc.envs import functional
        from jaxarc.envs.actions import create_action

        op, mask = decode(action)
        state, ts = jax.vmap(lambda s, o, m: functional.step(self.env_params, s, create_action(o, m)))(state, op, mask)
        done = ts.step_type >= 2
        start = self._draw(key)
        state = jax.tree_util.tree_map(
            lambda x, y: jnp.where(done.reshape(done.shape + (1,) * (x.ndim - 1)), x, y), start, state)
        return state, state.working_grid, ts.reward.astype(jnp.float32), done, {}


# --- PureJaxRL's PPO -------------------------------------------------------------------------

class LogState(NamedTuple):
    env_state: object
    episode_returns: object
    episode_lengths: object


def make_train(config, env):
    """PureJaxRL's `make_train` (ppo.py), the env batched (no `vmap` over single envs) and its
    `LogWrapper` folded in; returns `train(rng, env_params)`."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax.linen.initializers import constant, orthogonal

    n_actions = OPS * SIDE * SIDE
    config["NUM_UPDATES"] = config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"]
    config["MINIBATCH_SIZE"] = config["NUM_ENVS"] * config["NUM_STEPS"] // config["NUM_MINIBATCHES"]

    class ActorCritic(nn.Module):
        action_dim: int

        @nn.compact
        def __call__(self, x):
            a = nn.tanh(nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(x))
            a = nn.tanh(nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(a))
            logits = nn.Dense(self.action_dim, kernel_init=orthogonal(0.01), bias_init=constant(0.0))(a)
            c = nn.tanh(nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(x))
            c = nn.tanh(nn.Dense(64, kernel_init=orthogonal(np.sqrt(2)), bias_init=constant(0.0))(c))
            value = nn.Dense(1, kernel_init=orthogonal(1.0), bias_init=constant(0.0))(c)
            return logits, jnp.squeeze(value, axis=-1)

    def features(grid):
        return jax.nn.one_hot(grid.astype(jnp.int32), 10).reshape(grid.shape[0], -1)

    def log_prob(logits, a):
        return jnp.take_along_axis(jax.nn.log_softmax(logits), a[..., None], axis=-1)[..., 0]

    def entropy(logits):
        lp = jax.nn.log_softmax(logits)
        return -jnp.sum(jnp.exp(lp) * lp, axis=-1)

    class Transition(NamedTuple):
        done: jnp.ndarray
        action: jnp.ndarray
        value: jnp.ndarray
        reward: jnp.ndarray
        log_prob: jnp.ndarray
        obs: jnp.ndarray
        ret: jnp.ndarray

    def linear_schedule(count):
        frac = 1.0 - (count // (config["NUM_MINIBATCHES"] * config["UPDATE_EPOCHS"])) / config["NUM_UPDATES"]
        return config["LR"] * frac

    def train(rng, env_params):
        network = ActorCritic(n_actions)
        rng, _rng = jax.random.split(rng)
        net_params = network.init(_rng, jnp.zeros((1, 10 * SIDE * SIDE)))
        tx = optax.chain(optax.clip_by_global_norm(config["MAX_GRAD_NORM"]),
                         optax.adam(learning_rate=linear_schedule, eps=1e-5))
        opt_state = tx.init(net_params)

        rng, _rng = jax.random.split(rng)
        env_state, obsv = env.reset(_rng, env_params)
        n = config["NUM_ENVS"]
        log = LogState(env_state, jnp.zeros(n), jnp.zeros(n, jnp.int32))

        def _update_step(runner_state, unused):
            def _env_step(runner_state, unused):
                net_params, opt_state, log, last_obs, rng = runner_state
                rng, _rng = jax.random.split(rng)
                logits, value = network.apply(net_params, features(last_obs))
                action = jax.random.categorical(_rng, logits)
                lp = log_prob(logits, action)
                rng, _rng = jax.random.split(rng)
                env_state, obsv, reward, done, _ = env.step(_rng, log.env_state, action, env_params)
                # PureJaxRL's LogWrapper: the return of each episode that ended this step.
                new_ret = log.episode_returns + reward
                ended_ret = jnp.where(done, new_ret, 0.0)
                log = LogState(env_state, new_ret * (1 - done), (log.episode_lengths + 1) * (1 - done))
                transition = Transition(done, action, value, reward, lp, last_obs, ended_ret)
                return (net_params, opt_state, log, obsv, rng), transition

            runner_state, traj_batch = jax.lax.scan(_env_step, runner_state, None, config["NUM_STEPS"])

            net_params, opt_state, log, last_obs, rng = runner_state
            _, last_val = network.apply(net_params, features(last_obs))

            def _calculate_gae(traj_batch, last_val):
                def _get_advantages(gae_and_next_value, transition):
                    gae, next_value = gae_and_next_value
                    done, value, reward = transition.done, transition.value, transition.reward
                    delta = reward + config["GAMMA"] * next_value * (1 - done) - value
                    gae = delta + config["GAMMA"] * config["GAE_LAMBDA"] * (1 - done) * gae
                    return (gae, value), gae

                _, advantages = jax.lax.scan(_get_advantages, (jnp.zeros_like(last_val), last_val), traj_batch,
                                             reverse=True, unroll=16)
                return advantages, advantages + traj_batch.value

            advantages, targets = _calculate_gae(traj_batch, last_val)

            def _update_epoch(update_state, unused):
                def _update_minbatch(train_state, batch_info):
                    net_params, opt_state = train_state
                    traj_batch, advantages, targets = batch_info

                    def _loss_fn(params, traj_batch, gae, targets):
                        logits, value = network.apply(params, features(traj_batch.obs))
                        lp = log_prob(logits, traj_batch.action)
                        value_pred_clipped = traj_batch.value + (value - traj_batch.value).clip(
                            -config["CLIP_EPS"], config["CLIP_EPS"])
                        value_losses = jnp.square(value - targets)
                        value_losses_clipped = jnp.square(value_pred_clipped - targets)
                        value_loss = 0.5 * jnp.maximum(value_losses, value_losses_clipped).mean()
                        ratio = jnp.exp(lp - traj_batch.log_prob)
                        gae = (gae - gae.mean()) / (gae.std() + 1e-8)
                        loss_actor1 = ratio * gae
                        loss_actor2 = jnp.clip(ratio, 1.0 - config["CLIP_EPS"], 1.0 + config["CLIP_EPS"]) * gae
                        loss_actor = -jnp.minimum(loss_actor1, loss_actor2).mean()
                        ent = entropy(logits).mean()
                        total_loss = loss_actor + config["VF_COEF"] * value_loss - config["ENT_COEF"] * ent
                        return total_loss, (value_loss, loss_actor, ent)

                    grad_fn = jax.value_and_grad(_loss_fn, has_aux=True)
                    total_loss, grads = grad_fn(net_params, traj_batch, advantages, targets)
                    updates, opt_state = tx.update(grads, opt_state, net_params)
                    net_params = optax.apply_updates(net_params, updates)
                    return (net_params, opt_state), total_loss

                net_params, opt_state, traj_batch, advantages, targets, rng = update_state
                rng, _rng = jax.random.split(rng)
                batch_size = config["MINIBATCH_SIZE"] * config["NUM_MINIBATCHES"]
                permutation = jax.random.permutation(_rng, batch_size)
                batch = (traj_batch, advantages, targets)
                batch = jax.tree_util.tree_map(lambda x: x.reshape((batch_size,) + x.shape[2:]), batch)
                shuffled = jax.tree_util.tree_map(lambda x: jnp.take(x, permutation, axis=0), batch)
                minibatches = jax.tree_util.tree_map(
                    lambda x: jnp.reshape(x, [config["NUM_MINIBATCHES"], -1] + list(x.shape[1:])), shuffled)
                (net_params, opt_state), total_loss = jax.lax.scan(_update_minbatch, (net_params, opt_state),
                                                                   minibatches)
                return (net_params, opt_state, traj_batch, advantages, targets, rng), total_loss

            update_state = (net_params, opt_state, traj_batch, advantages, targets, rng)
            update_state, loss_info = jax.lax.scan(_update_epoch, update_state, None, config["UPDATE_EPOCHS"])
            net_params, opt_state, _, _, _, rng = update_state
            # The metric PureJaxRL plots: the mean return of the episodes that ended.
            ended = traj_batch.done.sum()
            metric = jnp.where(ended > 0, traj_batch.ret.sum() / jnp.maximum(ended, 1), jnp.nan)
            return (net_params, opt_state, log, last_obs, rng), (metric, ended)

        rng, _rng = jax.random.split(rng)
        runner_state = (net_params, opt_state, log, obsv, _rng)
        runner_state, metric = jax.lax.scan(_update_step, runner_state, None, config["NUM_UPDATES"])
        return {"runner_state": runner_state, "metrics": metric}

    return train


# --- the launch ------------------------------------------------------------------------------

def worker(engine: str, seed: int, timesteps: int, task_dir: str, envs: int, steps: int) -> dict:
    import jax
    import numpy as np

    config = {"LR": 2.5e-4, "NUM_ENVS": envs, "NUM_STEPS": steps, "TOTAL_TIMESTEPS": timesteps, "UPDATE_EPOCHS": 4,
              "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01,
              "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5}
    if engine == "kestrel":
        env = KestrelArc(task_dir, envs)
    else:
        env = JaxArc(sorted(os.path.join(task_dir, f) for f in os.listdir(task_dir)), envs)
    train = jax.jit(make_train(config, env))
    rng = jax.random.PRNGKey(seed)
    t0 = time.perf_counter()
    compiled = train.lower(rng, env.params()).compile()
    compile_s = time.perf_counter() - t0
    params = env.params()  # the handle after compiling (unchanged: compiling runs nothing)
    t0 = time.perf_counter()
    out = jax.block_until_ready(compiled(rng, params))
    train_s = time.perf_counter() - t0
    metric, ended = (np.asarray(x) for x in out["metrics"])
    # End state sane: the trained network's parameters and every logged return finite.
    params = jax.tree_util.tree_leaves(out["runner_state"][0])
    if not all(np.isfinite(np.asarray(p)).all() for p in params) or not np.isfinite(metric[ended > 0]).all():
        raise SystemExit(f"{engine} seed {seed}: non-finite parameters or returns after training")
    done_steps = config["NUM_UPDATES"] * steps * envs
    return {"engine": engine, "seed": seed, "compile_s": compile_s, "train_s": train_s,
            "steps_per_s": done_steps / train_s, "steps": done_steps,
            "env_steps_per_s": env_alone(env, envs, max(1, config["NUM_UPDATES"] // 4) * steps, seed),
            "curve": [None if np.isnan(m) else float(m) for m in metric], "episodes": int(ended.sum())}


def env_alone(env, envs: int, length: int, seed: int) -> float:
    """Steps per second of the env alone in a jitted scan, uniform random actions (the part of
    the training loop the engines differ in)."""
    import jax

    def run(rng, params):
        rng, k = jax.random.split(rng)
        state, _ = env.reset(k, params)

        def body(carry, _):
            state, rng = carry
            rng, ka, ks = jax.random.split(rng, 3)
            action = jax.random.randint(ka, (envs,), 0, OPS * SIDE * SIDE)
            state, _, reward, _, _ = env.step(ks, state, action, params)
            return (state, rng), reward.sum()

        return jax.lax.scan(body, (state, rng), None, length)[1].sum()

    rng = jax.random.PRNGKey(seed)
    compiled = jax.jit(run).lower(rng, env.params()).compile()
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(rng, env.params()))
    return length * envs / (time.perf_counter() - t0)


def svg_curves(title, series, path):
    from arc_ppo import svg_curves as draw  # the torch comparison's plot, its label ours

    draw(title, series, path, ylabel="mean return of the episodes ended (10-update mean)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--timesteps", type=int, default=1_000_000)
    ap.add_argument("--tasks", type=int, default=4, help="Mini-ARC tasks in the set (JaxARC's paper task first)")
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--steps", type=int, default=64, help="steps per env between updates")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs", "arc-ppo-jax"))
    ap.add_argument("--figures", help="also copy the figure and table here (docs/benchmarks/arc)")
    ap.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        engine, seed, timesteps, tasks, envs, steps = a.worker
        print(json.dumps(worker(engine, int(seed), int(timesteps), tasks, int(envs), int(steps))))
        return
    if a.seeds < 1 or a.tasks < 1 or a.envs < 4 or a.steps < 1 or a.timesteps < a.envs * a.steps:
        ap.error("--seeds, --tasks >= 1, --envs >= 4 (the 4 minibatches), --timesteps >= one update")

    py = venv_python("venv-jaxppo", "tools/compare/requirements-jax-ppo.txt")
    env = {**os.environ, "PATH": os.path.dirname(py) + os.pathsep + os.environ["PATH"], "PYTHONWARNINGS": "ignore"}
    subprocess.run([py, "-m", "pip", "install", "-q", "-r", os.path.join(HERE, "requirements-jax-ppo.txt")],
                   check=True, env=env)
    install_kestrel(py, env)
    from arc_ppo import mini_arc_tasks

    folder = os.path.join(a.out, time.strftime("arc-ppo-jax-%Y%m%d-%H%M%S", time.gmtime()))
    os.makedirs(folder)
    tasks = mini_arc_tasks(a.tasks, "kestrel-arc-ppo-jax-")
    one = {**env, "RAYON_NUM_THREADS": "1", "JAX_PLATFORMS": "cpu",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    runs = []
    try:
        for seed in range(a.seeds):
            for engine in ("kestrel", "jaxarc"):
                out = subprocess.run(ONE_CORE + [py, os.path.abspath(__file__), "--worker", engine, str(seed),
                                                 str(a.timesteps), tasks, str(a.envs), str(a.steps)],
                                     check=True, capture_output=True, text=True, env=one).stdout
                r = json.loads(out.strip().splitlines()[-1])
                runs.append(r)
                print(f"{engine} seed {seed}: {r['steps_per_s']:,.0f} steps/s, compile {r['compile_s']:.1f} s, "
                      f"last return {next((c for c in reversed(r['curve']) if c is not None), float('nan')):.3f}",
                      file=sys.stderr)
    finally:
        shutil.rmtree(tasks, ignore_errors=True)

    import statistics as st

    updates = len(runs[0]["curve"])
    per_update = a.envs * a.steps
    series, rows = [], []
    table = [f"### PureJaxRL PPO on Mini-ARC, one jitted `lax.scan`, Kestrel (kestrel.jax) vs JaxARC 1.0.3 — "
             f"commit {commit()}, {cpu_model()}, one core each\n",
             f"{a.tasks} Mini-ARC tasks, {a.envs} envs x {a.steps} steps per update, {updates} updates "
             f"({updates * per_update:,} steps), {a.seeds} seeds.\n",
             "| engine | steps/s incl. learning (median) | min–max | env alone, steps/s (median) | compile (s) "
             "| mean return, last 10% of updates (mean ± sd over seeds) | episodes (median) |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for engine, colour in (("kestrel", "#1f77b4"), ("jaxarc", "#d62728")):
        rs = [r for r in runs if r["engine"] == engine]
        sps = [r["steps_per_s"] for r in rs]
        tail = max(1, updates // 10)
        finals = [st.fmean([c for c in r["curve"][-tail:] if c is not None]) for r in rs]
        sd = st.stdev(finals) if len(finals) > 1 else 0.0
        table.append(f"| {'Kestrel' if engine == 'kestrel' else 'JaxARC'} | {st.median(sps):,.0f} | "
                     f"{min(sps):,.0f}–{max(sps):,.0f} | {st.median(r['env_steps_per_s'] for r in rs):,.0f} | "
                     f"{st.median(r['compile_s'] for r in rs):.1f} | "
                     f"{st.fmean(finals):.3f} ± {sd:.3f} | {st.median(r['episodes'] for r in rs):,.0f} |")
        rows.append((engine, st.median(sps), st.median(r["env_steps_per_s"] for r in rs)))
        # A 10-update moving mean per seed, then mean and sd over seeds.
        curves = []
        for r in rs:
            c = [x if x is not None else float("nan") for x in r["curve"]]
            sm = []
            for i in range(len(c)):
                w = [x for x in c[max(0, i - 9): i + 1] if x == x]
                sm.append(st.fmean(w) if w else 0.0)
            curves.append(sm)
        xs = [(i + 1) * per_update for i in range(updates)]
        mean = [st.fmean(v) for v in zip(*curves)]
        sdv = [st.stdev(v) if len(v) > 1 else 0.0 for v in zip(*curves)]
        series.append((f"{'Kestrel' if engine == 'kestrel' else 'JaxARC 1.0.3'} ({a.seeds} seeds)", colour, xs, mean, sdv))
    (_, k_sps, k_env), (_, j_sps, j_env) = rows
    table.append(f"\nKestrel / JaxARC steps per second: {k_sps / j_sps:.2f}x with the learning, "
                 f"{k_env / j_env:.1f}x for the env alone.")
    text = "\n".join(table)
    print(text)
    with open(os.path.join(folder, "table.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump({"commit": commit(), "cpu": cpu_model(), "args": vars(a), "runs": runs}, f)
    svg = os.path.join(folder, "ppo-jax-curves.svg")
    svg_curves("PureJaxRL PPO on Mini-ARC: Kestrel vs JaxARC", series, svg)
    if a.figures:
        os.makedirs(a.figures, exist_ok=True)
        shutil.copy(svg, a.figures)
        shutil.copy(os.path.join(folder, "table.md"), os.path.join(a.figures, "ppo-jax-table.md"))
    print(f"wrote {folder}", file=sys.stderr)


if __name__ == "__main__":
    main()
