#!/usr/bin/env python3
"""PPO on Mini-ARC over Kestrel and over JaxARC 1.0.3 on this CPU (issue 32 item 2; the Mini-ARC
learning curve of issue 30 item 3): the same loop, CleanRL's PPO in
`crates/py/examples/torch/cleanrl_ppo.py`, run by its own `main` on both engines.

- Kestrel: `kestrel.make_vec("ARC-jaxarc-v0", ...)` as the example makes it (5x5 canvas, point
  selections, the flattened `Discrete(35 * 25)` action space, 20-step episodes, no penalty for
  a wrong Submit, same-step autoreset), with `bugs="all"`: JaxARC 1.0.3's behaviour.
- JaxARC: `JaxArcVec` below, the same batch over `jaxarc.envs.functional.step`: one
  jit(vmap) call per batch step decodes the flattened actions (JaxARC's FlattenActionWrapper
  order, point selections as its PointActionWrapper masks), steps, and starts ended rows as
  JaxARC's reset does with its "demo" grid initialisation (the episode pair's target, the
  working grid from a train pair drawn on its own: what Kestrel's `bugs="all"` does); episode
  returns and lengths are counted as Gymnasium's RecordEpisodeStatistics counts them. The
  rewards are the same config. Under a random policy both give the same mean return per
  task (e.g. -0.124 and -0.127 over 3,195 episodes of JaxARC's paper task).
- The task set: the first `--tasks` Mini-ARC tasks (ARCLE's bundled copy) by file name, with
  JaxARC's paper task first.

Each (engine, seed) is its own process on core 0, one torch thread, one XLA thread. Reported:
the learning curve (mean episode return of the last 20 episodes against environment steps),
mean and sd over the seeds; training throughput (environment steps per second including the
learning, on the loop's own clock from its first logged iteration to its last; JaxARC's
compile time is left out and reported apart). Writes `results.json`, `table.md` and `ppo-curves.svg` to a folder under `--out`.

Usage (from the repository root; tools/venv-torch is made on first use, the release wheel
of ./crates/py is installed into it):
    python3 tools/compare/arc_ppo.py [--seeds 5] [--timesteps 300000] [--tasks 4]
        [--envs 16 --steps 64] [--out runs/arc-ppo] [--figures docs/benchmarks/arc]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ROOT, commit, install_kestrel, venv_python  # noqa: E402

EXAMPLE = os.path.join(ROOT, "crates", "py", "examples", "torch")
PAPER_TASK = "Most_Common_color_l6ab0lf3xztbyxsu3p.json"


class JaxArcVec:
    """`n` JaxARC 1.0.3 envs behind the part of Gymnasium's vector API the PPO loop uses:
    `reset(seed)` and `step(actions)` with same-step autoreset, `{"grid": (n, 5, 5)}`
    observations and `info["episode"]` when episodes end; `single_action_space` is the
    flattened `Discrete(35 * S * S)`."""

    def __init__(self, files: list[str], n: int, seed: int, steps: int, rewards: dict, side: int = 5):
        import gymnasium as gym
        import jax
        import jax.numpy as jnp
        import numpy as np
        from jaxarc.configs.action_config import ActionConfig
        from jaxarc.configs.dataset_config import DatasetConfig
        from jaxarc.configs.grid_initialization_config import GridInitializationConfig
        from jaxarc.configs.reward_config import RewardConfig
        from jaxarc.envs import functional
        from jaxarc.envs.actions import create_action
        from jaxarc.types import EnvParams
        from jaxarc_states import pad, read_task, states

        S = side
        self.np, self.n, self.num_envs = np, n, n
        self.single_action_space = gym.spaces.Discrete(35 * S * S)
        params = EnvParams(dataset=DatasetConfig(max_grid_height=S, max_grid_width=S), action=ActionConfig(),
                           reward=RewardConfig(**rewards), grid_initialization=GridInitializationConfig(),
                           max_episode_steps=steps, buffer=jnp.zeros(1), episode_mode=0)

        # Every start state, stacked; a reset takes one by index. JaxARC's reset with its grid
        # initialisation in "demo" mode (`_init_demo_grid`, weight 1: Kestrel has not the other
        # three modes yet): the target is the episode pair's output, the working grid the input
        # of a train pair drawn on its own (Kestrel's `wrong_pair_init` bug switch), the input
        # grid the episode pair's. So one state per (task, episode pair, drawn pair).
        tasks = [read_task(f) for f in files]
        rows, self.first = [], []
        for t in tasks:
            self.first.append(len(rows))
            rows += [(*pad(q["input"], S), *pad(p["output"], S), *pad(p["input"], S))
                     for p in t["train"] for q in t["train"]]
        self.pairs = [len(t["train"]) for t in tasks]
        starts = states(*(np.stack([r[k] for r in rows]) for k in range(6)))

        def step_one(state, a, restart):
            op, cell = a // (S * S), a % (S * S)
            mask = jnp.zeros((S, S), bool).at[cell // S, cell % S].set(True)
            st, ts = functional.step(params, state, create_action(op.astype(jnp.int32), mask))
            done = ts.step_type >= 2
            start = jax.tree_util.tree_map(lambda x: x[restart], starts)
            st = jax.tree_util.tree_map(lambda x, y: jnp.where(done, x, y), start, st)
            return st, ts.reward, ts.step_type == 2, ts.step_type == 3, st.working_grid

        self._step = jax.jit(jax.vmap(step_one, in_axes=(0, 0, 0)))
        self._start = jax.jit(lambda idx: jax.tree_util.tree_map(lambda x: x[idx], starts))
        self.rng = np.random.default_rng(seed)
        self.state = None
        # Compile now (the loop's clock starts after the env is made); the time is reported.
        t0 = time.perf_counter()
        s = self._start(self._draw())
        jax.block_until_ready(self._step(s, jnp.zeros(n, jnp.int32), self._draw()))
        self.compile_s = time.perf_counter() - t0

    def _draw(self):
        """A start index per row: a random task, a random train pair of it (the episode's)
        and another drawn on its own (the working grid's)."""
        np = self.np
        t = self.rng.integers(0, len(self.pairs), self.n)
        k = np.asarray(self.pairs)[t]
        p = (self.rng.random(self.n) * k).astype(np.int64)
        q = (self.rng.random(self.n) * k).astype(np.int64)
        return np.asarray(self.first)[t] + p * k + q

    def reset(self, seed: int | None = None):
        np = self.np
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.state = self._start(self._draw())
        self.ret, self.len = np.zeros(self.n), np.zeros(self.n, np.int64)
        return {"grid": np.asarray(self.state.working_grid)}, {}

    def step(self, actions):
        np = self.np
        self.state, r, te, tr, grid = self._step(self.state, np.asarray(actions, np.int32), self._draw())
        r, te, tr = np.asarray(r, np.float32), np.asarray(te), np.asarray(tr)
        self.ret += r
        self.len += 1
        done = te | tr
        info = {}
        if done.any():
            info = {"episode": {"r": np.where(done, self.ret, 0.0), "l": np.where(done, self.len, 0),
                                "t": np.zeros(self.n)}, "_episode": done}
            self.ret[done], self.len[done] = 0.0, 0
        return {"grid": np.asarray(grid)}, r, te, tr, info

    def close(self):
        pass


def worker(engine: str, seed: int, timesteps: int, task_dir: str, csv: str, envs: int, steps: int) -> dict:
    """One training run in this process; returns its timing."""
    sys.path.insert(0, EXAMPLE)
    import cleanrl_ppo as ppo
    import kestrel

    argv = ["--env-id", "ARC-jaxarc-v0", "--seed", str(seed), "--total-timesteps", str(timesteps),
            "--task", task_dir, "--bugs", "all", "--csv", csv, "--num-envs", str(envs), "--num-steps", str(steps)]
    made: dict = {}

    def make(args):
        t0 = time.perf_counter()
        if engine == "kestrel":
            out = ppo.make_envs(args)
        else:
            rewards = {**kestrel.config("ARC-jaxarc-v0")["rewards"], **ppo.ARC_REWARDS}
            files = sorted(os.path.join(task_dir, f) for f in os.listdir(task_dir))
            envs = JaxArcVec(files, args.num_envs, args.seed, ppo.ARC_STEPS, rewards)
            made["compile_s"] = envs.compile_s
            out = (envs, 10 * 5 * 5, envs.single_action_space.n)
        made["make_s"] = time.perf_counter() - t0
        return out

    rc = ppo.main(argv, make=make)
    # Throughput from the loop's own clock, after the first logged iteration (torch's first
    # calls and JAX's first dispatch are not the steady state).
    curve = read_curve(csv)
    (s0, _, t0), (s1, _, t1) = curve[0], curve[-1]
    return {"rc": rc, "train_s": t1, "steps_per_s": (s1 - s0) / (t1 - t0), "compile_s": made.get("compile_s")}


def svg_curves(title, series, path, width=640, height=400, ylabel="mean episode return (last 20)"):
    """Mean curves with a band of one sd: `series` is [(label, colour, xs, mean, sd)]."""
    left, right, top, bottom = 70, 20, 40, 50
    xs_all = [x for s in series for x in s[2]]
    lo = min(m - d for s in series for m, d in zip(s[3], s[4]))
    hi = max(m + d for s in series for m, d in zip(s[3], s[4]))
    x0, x1 = 0, max(xs_all)
    hi = hi if hi > lo else lo + 1

    def px(x):
        return left + (x - x0) / (x1 - x0) * (width - left - right)

    def py(y):
        return height - bottom - (y - lo) / (hi - lo) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(5):
        y = lo + (hi - lo) * i / 4
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{py(y):.1f}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        x = x0 + (x1 - x0) * i / 4
        out.append(f'<text x="{px(x):.1f}" y="{height - bottom + 18}" text-anchor="middle">{int(x):,}</text>')
    out.append(f'<text x="{width / 2}" y="{height - 10}" text-anchor="middle">environment steps</text>')
    out.append(f'<text x="16" y="{height / 2}" text-anchor="middle" transform="rotate(-90 16 {height / 2})">'
               f'{ylabel}</text>')
    for k, (label, colour, xs, mean, sd) in enumerate(series):
        band = [(px(x), py(m + d)) for x, m, d in zip(xs, mean, sd)] + \
               [(px(x), py(m - d)) for x, m, d in reversed(list(zip(xs, mean, sd)))]
        out.append('<polygon fill="{}" fill-opacity="0.15" points="{}"/>'.format(
            colour, " ".join(f"{a:.1f},{b:.1f}" for a, b in band)))
        out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
            colour, " ".join(f"{px(x):.1f},{py(m):.1f}" for x, m in zip(xs, mean))))
        out.append(f'<text x="{left + 10}" y="{top + 16 + 16 * k}" fill="{colour}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def mini_arc_tasks(count: int, prefix: str) -> str:
    """A temporary folder holding the first `count` Mini-ARC tasks (ARCLE's bundled copy) by
    file name, JaxARC's paper task first; the caller removes it."""
    import arc as arcbench

    mini = os.path.dirname(arcbench.mini_task())
    names = sorted(f for f in os.listdir(mini) if f.endswith(".json"))
    tasks = tempfile.mkdtemp(prefix=prefix)
    for f in [PAPER_TASK] + [f for f in names if f != PAPER_TASK][: count - 1]:
        shutil.copy(os.path.join(mini, f), tasks)
    return tasks


def read_curve(path):
    with open(path) as f:
        next(f)
        return [tuple(float(v) for v in line.split(",")) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--timesteps", type=int, default=300_000)
    ap.add_argument("--tasks", type=int, default=4, help="Mini-ARC tasks in the set (JaxARC's paper task first)")
    ap.add_argument("--envs", type=int, default=16, help="envs in the batch (the example's ARC default)")
    ap.add_argument("--steps", type=int, default=64, help="steps per env between updates (the example's ARC default)")
    ap.add_argument("--out", default=os.path.join(ROOT, "runs", "arc-ppo"))
    ap.add_argument("--figures", help="also copy the figure and table here (docs/benchmarks/arc)")
    ap.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        engine, seed, steps, tasks, csv, envs, per = a.worker
        print(json.dumps(worker(engine, int(seed), int(steps), tasks, csv, int(envs), int(per))))
        return
    if a.seeds < 1 or a.tasks < 1 or a.envs < 1 or a.steps < 4 or a.timesteps < 4 * a.envs * a.steps:
        ap.error("--seeds, --tasks, --envs >= 1, --steps >= 4 (the 4 minibatches), --timesteps >= 4 updates")

    py = venv_python("venv-torch", "tools/golden/requirements-torch.txt")
    env = {**os.environ, "PATH": os.path.dirname(py) + os.pathsep + os.environ["PATH"], "PYTHONWARNINGS": "ignore"}
    subprocess.run([py, "-m", "pip", "install", "-q", "-r", os.path.join(HERE, "requirements-arc-ppo.txt")],
                   check=True, env=env)
    install_kestrel(py, env)
    folder = os.path.join(a.out, time.strftime("arc-ppo-%Y%m%d-%H%M%S", time.gmtime()))
    os.makedirs(folder)
    tasks = mini_arc_tasks(a.tasks, "kestrel-arc-ppo-")
    one = {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1",
           "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"}
    runs = []
    try:
        for seed in range(1, a.seeds + 1):
            for engine in ("kestrel", "jaxarc"):
                csv = os.path.join(folder, f"{engine}-seed{seed}.csv")
                out = subprocess.run(["taskset", "-c", "0", py, os.path.abspath(__file__), "--worker", engine,
                                      str(seed), str(a.timesteps), tasks, csv, str(a.envs), str(a.steps)],
                                     check=True, capture_output=True, text=True, env=one)
                r = {"engine": engine, "seed": seed, **json.loads(out.stdout.strip().splitlines()[-1])}
                r["curve"] = read_curve(csv)
                runs.append(r)
                print(f"{engine} seed {seed}: {r['steps_per_s']:.0f} steps/s, final {r['curve'][-1][1]:.3f}", flush=True)
    finally:
        shutil.rmtree(tasks)

    # Curves on a common grid of steps (each run logs after every iteration: the same steps).
    rows, series = [], []
    import statistics as st
    for engine, label, colour in (("kestrel", "Kestrel (ARC-jaxarc-v0, bugs=all)", "#d62728"),
                                  ("jaxarc", "JaxARC 1.0.3 (functional.step, jit(vmap))", "#1f77b4")):
        rs = [r for r in runs if r["engine"] == engine]
        n = min(len(r["curve"]) for r in rs)
        xs = [rs[0]["curve"][i][0] for i in range(n)]
        ys = [[r["curve"][i][1] for r in rs] for i in range(n)]
        mean = [st.mean(v) for v in ys]
        sd = [st.stdev(v) if len(v) > 1 else 0.0 for v in ys]
        series.append((label, colour, xs, mean, sd))
        sps = [r["steps_per_s"] for r in rs]
        finals = [r["curve"][-1][1] for r in rs]
        comp = [r["compile_s"] for r in rs if r["compile_s"] is not None]
        rows.append({"engine": engine, "label": label, "seeds": len(rs), "steps_per_s_mean": st.mean(sps),
                     "steps_per_s_sd": st.stdev(sps) if len(sps) > 1 else 0.0, "final_mean": st.mean(finals),
                     "final_sd": st.stdev(finals) if len(finals) > 1 else 0.0, "final_min": min(finals),
                     "compile_s_mean": st.mean(comp) if comp else None})
    meta = {"commit": commit(), "cpu": platform.processor() or platform.machine(), "seeds": a.seeds,
            "timesteps": a.timesteps, "envs": a.envs, "steps": a.steps, "tasks": chosen, "command": " ".join(["tools/compare/arc_ppo.py", *sys.argv[1:]])}
    try:
        meta["cpu"] = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump({"meta": meta, "summary": rows, "runs": runs}, f, indent=1)
    k, j = rows
    lines = [f"PPO on {len(chosen)} Mini-ARC tasks, {a.envs} envs x {a.steps} steps, {a.timesteps:,} steps, "
             f"{a.seeds} seeds; {meta['cpu']}, "
             f"core 0, one thread; commit {meta['commit']}.", "",
             "| engine | env steps/s incl. learning (mean ± sd) | final mean return (mean ± sd, min) | compile (s) |",
             "|---|---:|---:|---:|"]
    for r in rows:
        comp = f"{r['compile_s_mean']:.1f}" if r["compile_s_mean"] is not None else "-"
        lines.append(f"| {r['label']} | {r['steps_per_s_mean']:,.0f} ± {r['steps_per_s_sd']:,.0f} | "
                     f"{r['final_mean']:.3f} ± {r['final_sd']:.3f} ({r['final_min']:.3f}) | {comp} |")
    lines += ["", f"Kestrel trains {k['steps_per_s_mean'] / j['steps_per_s_mean']:.1f}x faster (env steps per second "
              "including PPO's updates)."]
    with open(os.path.join(folder, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    svg_curves(f"PPO on Mini-ARC ({len(chosen)} tasks), mean ± sd over {a.seeds} seeds", series,
               os.path.join(folder, "ppo-curves.svg"))
    if a.figures:
        os.makedirs(a.figures, exist_ok=True)
        shutil.copy(os.path.join(folder, "ppo-curves.svg"), a.figures)
        shutil.copy(os.path.join(folder, "table.md"), os.path.join(a.figures, "ppo-table.md"))
    print("\n".join(lines))
    print(f"run folder: {folder}")


if __name__ == "__main__":
    main()
