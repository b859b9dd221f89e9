"""PPO in PyTorch on a Kestrel batch, as CleanRL writes it: one file, top to bottom.

The algorithm is CleanRL's `ppo.py` (Huang et al., "The 37 Implementation Details of PPO",
ICLR blog track 2022): orthogonal init, Adam with a linearly annealed learning rate, GAE,
advantage normalisation per minibatch, the clipped surrogate and clipped value loss, an
entropy bonus, global gradient clipping, and CleanRL's defaults. What changes is the env:
`kestrel.torch.make_vec` steps all envs in one Rust call and speaks torch (it takes the action
tensor and returns tensors that are views of the env's arrays: no copies, no numpy in the
loop), and its `info["episode"]` (counted in Rust, Gymnasium's `RecordEpisodeStatistics`
format) gives the episode returns.

    python crates/py/examples/torch/cleanrl_ppo.py                           # CartPole-v1
    python crates/py/examples/torch/cleanrl_ppo.py --env-id ARC-jaxarc-v0    # a 5x5 ARC task
    python crates/py/examples/torch/cleanrl_ppo.py --check                   # exit 1 unless it learned

The ARC run is JaxARC's env on a 5 x 5 canvas (Mini-ARC's size) with point selections and the
flattened `Discrete(35 * 25)` action space, on one task or a set (`--task PATH`: an ARC JSON
task that fits 5 x 5, e.g. one of Mini-ARC's, or a folder of them; by default a small task
written on the spot: recolour the centre cell, then Submit; `--bugs all` runs JaxARC 1.0.3's
behaviour, bugs included). The grid is one-hot encoded for the MLP. Needs torch (`pip install torch`);
`--csv FILE` writes the learning curve (global step, mean episode return, seconds since the
first step); `--gymnasium` runs the same loop on Gymnasium's own env and `SyncVectorEnv`
(CartPole-v1), for a timing beside it.

CleanRL's own flags and logs: every run writes TensorBoard events to `runs/{run_name}`
(`{env_id}__{exp_name}__{seed}__{time}`: CleanRL's `charts/episodic_return`,
`charts/episodic_length`, `charts/learning_rate`, `charts/SPS` and `losses/*`, and the
hyper-parameters as text; `tensorboard --logdir runs`), `--track` also syncs them to Weights &
Biases (`--wandb-project-name`, `--wandb-entity`), `--capture-video` records the trained
agent's episode to `videos/{run_name}` (Gymnasium's `RecordVideo`, which needs moviepy), and
`--exp-name`, `--torch-deterministic` are CleanRL's. Needs `tensorboard` (or `tensorboardX`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.categorical import Categorical

import kestrel
import kestrel.torch


@dataclass
class Args:
    exp_name: str = "cleanrl_ppo"
    torch_deterministic: bool = True
    track: bool = False
    wandb_project_name: str = "cleanRL"
    wandb_entity: str | None = None
    capture_video: bool = False
    env_id: str = "CartPole-v1"
    seed: int = 1
    total_timesteps: int = 500_000
    learning_rate: float = 2.5e-4
    num_envs: int = 4
    num_steps: int = 128
    anneal_lr: bool = True
    gamma: float = 0.99
    gae_lambda: float = 0.95
    num_minibatches: int = 4
    update_epochs: int = 4
    norm_adv: bool = True
    clip_coef: float = 0.2
    clip_vloss: bool = True
    ent_coef: float = 0.01
    vf_coef: float = 0.5
    max_grad_norm: float = 0.5
    task: str | None = None
    bugs: str = "none"
    gymnasium: bool = False
    check: bool = False
    csv: str | None = None


def parse_args(argv: list[str] | None = None) -> Args:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, default in vars(Args()).items():
        flag = "--" + name.replace("_", "-")
        if isinstance(default, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            p.add_argument(flag, type=type(default) if default is not None else str, default=default)
    # Flags left unset take the env's defaults below (None until then).
    for name in ("total_timesteps", "num_envs", "num_steps"):
        p.set_defaults(**{name: None})
    raw: dict[str, Any] = vars(p.parse_args(argv))
    arc = raw["env_id"].startswith("ARC")
    if arc and raw["capture_video"]:
        p.error("--capture-video: the ARC batch's task and canvas are this file's; record ARC with "
                "kestrel.make(..., render_mode='rgb_array') instead")
    # ARC is a harder exploration problem than CartPole: 875 actions, most of them harmless.
    defaults: dict[str, Any] = {"total_timesteps": 300_000, "num_envs": 16, "num_steps": 64} if arc else {
        "total_timesteps": Args.total_timesteps, "num_envs": Args.num_envs, "num_steps": Args.num_steps}
    return Args(**{k: (defaults[k] if v is None and k in defaults else v) for k, v in raw.items()})


# The default ARC task: the output is the input with its centre cell recoloured.
_IN = [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 3, 3], [0, 0, 0, 3, 3]]
_OUT = [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 4, 0, 0], [0, 0, 0, 3, 3], [0, 0, 0, 3, 3]]
TASK = {"train": [{"input": _IN, "output": _OUT}], "test": [{"input": _IN, "output": _OUT}]}
# The ARC episode: at most 20 steps; without JaxARC's -1 for a wrong Submit, the agent keeps
# submitting while it explores instead of learning to stop.
ARC_STEPS = 20
ARC_REWARDS = {"unsolved_submission_penalty": 0.0}


def make_envs(args: Args) -> tuple[Any, int, int]:
    """The batch, the flat observation size and the number of actions."""
    envs: Any
    if args.env_id.startswith("ARC"):
        task = args.task
        if task is None:
            fd, task = tempfile.mkstemp(suffix=".json")
            with os.fdopen(fd, "w") as f:
                json.dump(TASK, f)
        try:
            envs = kestrel.torch.make_vec(args.env_id, args.num_envs, seed=args.seed, data=task, canvas=5,
                                          selection="point", flatten="discrete", max_episode_steps=ARC_STEPS,
                                          bugs=args.bugs, rewards=ARC_REWARDS,
                                          autoreset_mode="same_step")
        finally:
            if args.task is None:
                os.unlink(task)  # read at construction
        assert isinstance(envs.single_action_space, gym.spaces.Discrete)
        return envs, 10 * 5 * 5, int(envs.single_action_space.n)
    if args.gymnasium:
        # The same loop on Gymnasium's own env and SyncVectorEnv, for a side-by-side timing.
        envs = gym.wrappers.vector.RecordEpisodeStatistics(gym.make_vec(
            args.env_id, args.num_envs, vectorization_mode="sync",
            vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP}))
    else:
        envs = kestrel.torch.make_vec(args.env_id, args.num_envs, seed=args.seed, autoreset_mode="same_step")
    space, actions = envs.single_observation_space, envs.single_action_space
    assert isinstance(space, gym.spaces.Box) and isinstance(actions, gym.spaces.Discrete), (space, actions)
    return envs, int(np.prod(space.shape)), int(actions.n)


def summary_writer(log_dir: str) -> Any:
    """CleanRL's `SummaryWriter` (torch's, which needs the tensorboard package)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as e:
        raise ImportError("the TensorBoard log needs tensorboard: pip install tensorboard") from e
    return SummaryWriter(log_dir)


def capture_video(args: Args, agent: Agent, run_name: str) -> None:
    """One episode of the trained agent on one env, rendered, to `videos/{run_name}`."""
    env: Any = gym.wrappers.RecordVideo(gym.make(f"kestrel/{args.env_id}", render_mode="rgb_array"),
                                   f"videos/{run_name}", episode_trigger=lambda _: True, disable_logger=True)
    raw, _ = env.reset(seed=args.seed)
    done = False
    while not done:
        with torch.no_grad():
            batch = obs_tensor({k: v[None] for k, v in raw.items()} if isinstance(raw, dict) else raw[None])
            action = int(agent.get_action_and_value(batch)[0][0])
        raw, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    env.close()


def obs_tensor(obs: Any) -> torch.Tensor:
    """Observations as a float batch: ARC's grid one-hot over its 10 colours, others as they are."""
    if isinstance(obs, dict):
        grid = torch.as_tensor(obs["grid"], dtype=torch.int64).clamp(0, 9)
        return nn.functional.one_hot(grid, 10).flatten(1).float()
    return torch.as_tensor(obs, dtype=torch.float32).flatten(1)


def layer_init(layer: nn.Linear, std: float = float(np.sqrt(2)), bias_const: float = 0.0) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_size: int, num_actions: int) -> None:
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_size, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_size, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, num_actions), std=0.01),
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.critic(x)
        return out

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        probs = Categorical(logits=self.actor(x))
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


def main(argv: list[str] | None = None, make: Callable[[Args], tuple[Any, int, int]] = make_envs) -> int:
    """Trains on `make(args)`'s batch (default `make_envs`; `tools/compare/arc_ppo.py` passes
    one over JaxARC to run this same loop there)."""
    args = parse_args(argv)
    batch_size = args.num_envs * args.num_steps
    minibatch_size = batch_size // args.num_minibatches
    num_iterations = args.total_timesteps // batch_size
    run_name = f"{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
    if args.track:
        wandb: Any = importlib.import_module("wandb")  # optional, as in CleanRL
        wandb.init(project=args.wandb_project_name, entity=args.wandb_entity, sync_tensorboard=True,
                   config=vars(args), name=run_name, save_code=True)
    writer = summary_writer(f"runs/{run_name}")
    writer.add_text("hyperparameters",
                    "|param|value|\n|-|-|\n%s" % ("\n".join(f"|{k}|{v}|" for k, v in vars(args).items())))
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    torch.set_num_threads(1)

    envs, obs_size, num_actions = make(args)
    agent = Agent(obs_size, num_actions)
    optimizer = optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)

    obs = torch.zeros((args.num_steps, args.num_envs, obs_size))
    actions = torch.zeros((args.num_steps, args.num_envs), dtype=torch.int64)
    logprobs = torch.zeros((args.num_steps, args.num_envs))
    rewards = torch.zeros((args.num_steps, args.num_envs))
    dones = torch.zeros((args.num_steps, args.num_envs))
    values = torch.zeros((args.num_steps, args.num_envs))

    global_step, start = 0, time.time()
    raw, _ = envs.reset(seed=args.seed)
    next_obs, next_done = obs_tensor(raw), torch.zeros(args.num_envs)
    curve: list[tuple[int, float, float]] = []
    recent: list[float] = []
    for iteration in range(1, num_iterations + 1):
        if args.anneal_lr:
            optimizer.param_groups[0]["lr"] = (1.0 - (iteration - 1.0) / num_iterations) * args.learning_rate
        for step in range(args.num_steps):
            global_step += args.num_envs
            obs[step], dones[step] = next_obs, next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step], logprobs[step] = action, logprob
            # Same-step autoreset (CleanRL's assumption): an ended row returns its next
            # episode's first observation, and `done` cuts the bootstrap below.
            # kestrel.torch takes and returns tensors; Gymnasium's env (--gymnasium) numpy.
            raw, reward, terminations, truncations, infos = envs.step(action.numpy() if args.gymnasium else action)
            rewards[step] = torch.as_tensor(reward)
            next_obs = obs_tensor(raw)
            next_done = (torch.as_tensor(terminations) | torch.as_tensor(truncations)).float()
            if "episode" in infos:
                ended = infos["_episode"]
                for r, length in zip(infos["episode"]["r"][ended], infos["episode"]["l"][ended]):
                    recent.append(float(r))
                    writer.add_scalar("charts/episodic_return", float(r), global_step)
                    writer.add_scalar("charts/episodic_length", int(length), global_step)

        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = torch.zeros(args.num_envs)
            for t in reversed(range(args.num_steps)):
                if t == args.num_steps - 1:
                    nextnonterminal, nextvalues = 1.0 - next_done, next_value
                else:
                    nextnonterminal, nextvalues = 1.0 - dones[t + 1], values[t + 1]
                delta = rewards[t] + args.gamma * nextvalues * nextnonterminal - values[t]
                lastgaelam = delta + args.gamma * args.gae_lambda * nextnonterminal * lastgaelam
                advantages[t] = lastgaelam
            returns = advantages + values

        b_obs, b_logprobs, b_actions = obs.reshape(-1, obs_size), logprobs.reshape(-1), actions.reshape(-1)
        b_advantages, b_returns, b_values = advantages.reshape(-1), returns.reshape(-1), values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs = []
        for _epoch in range(args.update_epochs):
            np.random.shuffle(b_inds)
            for lo in range(0, batch_size, minibatch_size):
                mb = torch.as_tensor(b_inds[lo:lo + minibatch_size])
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb], b_actions[mb])
                logratio = newlogprob - b_logprobs[mb]
                ratio = logratio.exp()
                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs.append(((ratio - 1.0).abs() > args.clip_coef).float().mean().item())
                mb_adv = b_advantages[mb]
                if args.norm_adv:
                    mb_adv = (mb_adv - mb_adv.mean()) / (mb_adv.std() + 1e-8)
                pg_loss = torch.max(-mb_adv * ratio, -mb_adv * torch.clamp(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
                newvalue = newvalue.view(-1)
                if args.clip_vloss:
                    v_clipped = b_values[mb] + torch.clamp(newvalue - b_values[mb], -args.clip_coef, args.clip_coef)
                    v_loss = 0.5 * torch.max((newvalue - b_returns[mb]) ** 2, (v_clipped - b_returns[mb]) ** 2).mean()
                else:
                    v_loss = 0.5 * ((newvalue - b_returns[mb]) ** 2).mean()
                loss = pg_loss - args.ent_coef * entropy.mean() + v_loss * args.vf_coef
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()

        y_pred, y_true = b_values.numpy(), b_returns.numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], global_step)
        writer.add_scalar("losses/value_loss", v_loss.item(), global_step)
        writer.add_scalar("losses/policy_loss", pg_loss.item(), global_step)
        writer.add_scalar("losses/entropy", entropy.mean().item(), global_step)
        writer.add_scalar("losses/old_approx_kl", old_approx_kl.item(), global_step)
        writer.add_scalar("losses/approx_kl", approx_kl.item(), global_step)
        writer.add_scalar("losses/clipfrac", float(np.mean(clipfracs)), global_step)
        writer.add_scalar("losses/explained_variance", explained_var, global_step)
        writer.add_scalar("charts/SPS", int(global_step / (time.time() - start)), global_step)
        if recent:
            mean = float(np.mean(recent[-20:]))
            curve.append((global_step, mean, time.time() - start))
            if iteration % max(1, num_iterations // 20) == 0 or iteration == num_iterations:
                sps = int(global_step / (time.time() - start))
                print(f"step {global_step:>7}  mean episode return (last 20) {mean:8.3f}  {sps} steps/s", flush=True)
    envs.close()
    if args.capture_video:
        capture_video(args, agent, run_name)
    writer.close()
    print(f"TensorBoard events in runs/{run_name}", flush=True)

    if args.csv:
        with open(args.csv, "w") as f:
            f.write("global_step,mean_return_last20,seconds\n")
            f.writelines(f"{s},{r},{t:.3f}\n" for s, r, t in curve)
    final = curve[-1][1] if curve else float("-inf")
    if args.check:
        # CartPole: Gymnasium's reward threshold; ARC: the task solved (success bonus 10).
        target = 475.0 if args.env_id == "CartPole-v1" else 5.0
        if final < target:
            print(f"did not learn: final mean return {final:.3f} < {target}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
