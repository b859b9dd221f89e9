#!/usr/bin/env python3
"""Side-by-side treasure hunt: sorrel 1.6.0 (torch pinned to one thread, logging and
animation off) and Kestrel on sorrel's `main.py` configuration (21×21, 2 agents, rgb
observations, IQN layer 250, batch 64, 12 quantiles, 1,001 epochs × 100 turns, one gradient
step per agent per epoch), in one launch:

  * environment turn, 2 agents, observation and action selection excluded: sorrel's
    `take_turn` sweep over its entity map plus both agents' `act` (random actions) vs
    `kestrel hunt bench`'s spawn + moves;
  * IQN update (batch 64, 12 × 12 quantiles): sorrel's `iRainbowModel.train_step` on a buffer
    filled by 10 epochs of its own play vs Kestrel's `IqnLearner::train_step` (and Kestrel's
    update against the same update's matrix products alone);
  * the whole default run for `--seeds` seeds: sorrel's `run_experiment` (CPU time, one
    process per seed, two at a time) vs `kestrel hunt train` (wall time on one core and on
    two), with the reward per epoch of both, mean over seeds, in one PNG
    (`--png`, default docs/benchmarks/hunt-curves.png).

Markdown on stdout. Uses tools/venv-sorrel (Python 3.12; see tools/golden/README.md).

Usage (from the repository root):
    python3 tools/compare/hunt.py [--seeds 5] [--epochs 1001] [--png PATH] [--parts-only]
"""
import argparse
import concurrent.futures
import json
import os
import platform
import shutil
import subprocess
import tempfile
import textwrap
import time

from common import ONE_THREAD, ROOT, commit, kestrel_release, venv_python

PEER = textwrap.dedent('''
    import json, random, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, torch
    torch.set_num_threads(1)
    from sorrel.agents import Agent
    from sorrel.examples.treasurehunt.entities import EmptyEntity
    from sorrel.examples.treasurehunt.env import TreasurehuntEnv
    from sorrel.examples.treasurehunt.world import TreasurehuntWorld
    import sorrel

    def make(seed, epochs):
        np.random.seed(seed); random.seed(seed); torch.manual_seed(seed)
        config = {
            "experiment": {"epochs": epochs, "max_turns": 100, "record_period": 50, "log_dir": "/tmp/sorrel-compare"},
            "model": {"agent_vision_radius": 2, "epsilon_decay": 0.0005, "observation_spec": "rgb"},
            "world": {"height": 21, "width": 21, "gem_value": 10, "food_value": 5, "bone_value": -10, "spawn_prob": 0.005},
        }
        world = TreasurehuntWorld(config=config, default_entity=EmptyEntity())
        return world, TreasurehuntEnv(world, config)

    def run(seed, epochs):
        world, env = make(seed, epochs - 1)          # run_experiment runs epochs + 1
        rewards = []
        end = env._model_end_epoch_action
        def record(agent, epoch):
            if agent is env.agents[0]:
                rewards.append(float(world.total_reward))
            end(agent, epoch)
        env._model_end_epoch_action = record
        c, w = time.process_time(), time.perf_counter()
        env.run_experiment(animate=False, logging=False, output_dir=__import__("pathlib").Path("/tmp/sorrel-compare"))
        return {"cpu_s": time.process_time() - c, "wall_s": time.perf_counter() - w, "rewards": rewards}

    def parts():
        world, env = make(0, 9)
        env.run_experiment(animate=False, logging=False, output_dir=__import__("pathlib").Path("/tmp/sorrel-compare"))
        model = env.agents[0].model
        for _ in range(5):
            model.train_step()
        n = 60
        c = time.process_time()
        for _ in range(n):
            model.train_step()
        update_ms = (time.process_time() - c) / n * 1e3
        # One turn as take_turn does it, minus observation and action choice: the entity
        # sweep, then each agent's act with a random action.
        env.reset()
        rng = random.Random(0)
        turns = 0
        c = time.process_time()
        for t in range(2000):
            if t % 100 == 0:
                env.reset()
            for _, x in np.ndenumerate(world.map):
                if x.has_transitions and not isinstance(x, Agent):
                    x.transition(world)
            for agent in env.agents:
                agent.act(world, rng.randrange(4))
            turns += 1
        turn_ms = (time.process_time() - c) / turns * 1e3
        return {"update_ms": update_ms, "turn_ms": turn_ms, "torch": torch.__version__,
                "sorrel": getattr(sorrel, "__version__", "1.6.0")}

    if sys.argv[1] == "parts":
        print(json.dumps(parts()))
    else:
        print(json.dumps(run(int(sys.argv[2]), int(sys.argv[3]))))
''')


def peer(py, *args):
    out = subprocess.run([py, "-c", PEER, *args], check=True, capture_output=True, text=True,
                         env={**os.environ, **ONE_THREAD})
    return json.loads(out.stdout.strip().splitlines()[-1])


def kestrel_run(binary, seed, epochs, threads, out_dir):
    cmd = [binary, "hunt", "train", "--epochs", str(epochs), "--seed", str(seed), "--threads", str(threads),
           "--record-every", "0", "--checkpoint-every", "0", "--out-dir", out_dir]
    if threads == 1:
        cmd = ["taskset", "-c", "0"] + cmd
    t = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t
    run = max((os.path.join(out_dir, d) for d in os.listdir(out_dir)), key=os.path.getmtime)
    rewards = [json.loads(l)["total_reward"] for l in open(os.path.join(run, "metrics.jsonl"))]
    shutil.rmtree(run)
    return {"wall_s": wall, "rewards": rewards}


def mean_last(v, n=100):
    s = v[-n:]
    return sum(s) / len(s)


def smooth(v, n=50):
    return [sum(v[max(0, i - n + 1):i + 1]) / len(v[max(0, i - n + 1):i + 1]) for i in range(len(v))]


def mean_sd(xs):
    m = sum(xs) / len(xs)
    sd = (sum((x - m) ** 2 for x in xs) / max(1, len(xs) - 1)) ** 0.5
    return m, sd


def print_parts(parts, k, measured, what):
    print(f"### Treasure hunt, sorrel 1.6.0 (torch {parts['torch']}, 1 thread) vs Kestrel — commit {measured}, "
          f"{platform.processor() or platform.machine()}, {what}\n")
    print("| | sorrel | Kestrel | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| environment turn, 2 agents (spawn sweep + moves), CPU µs | {parts['turn_ms'] * 1e3:,.0f} | {k['turn_us']:.2f} | {parts['turn_ms'] * 1e3 / k['turn_us']:,.0f}x |")
    print(f"| IQN update, batch 64, 12×12 quantiles, layer 250, 1 thread, µs | {parts['update_ms'] * 1e3:,.0f} | {k['iqn_update_us']:,.0f} | {parts['update_ms'] * 1e3 / k['iqn_update_us']:.2f}x |")
    print(f"| Kestrel's update against its own matrix products alone (same shapes, same GEMM) | | {k['gemm_only_us']:,.0f} µs of GEMM | {k['update_over_gemm']:.2f}x the GEMM time |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=1001)
    ap.add_argument("--png", default=os.path.join(ROOT, "docs", "benchmarks", "hunt-curves.png"))
    ap.add_argument("--parts-only", action="store_true",
                    help="time the environment turn and the IQN update only (no whole runs, no PNG)")
    ap.add_argument("--json", help="also write the figures here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    measured = commit()
    py = venv_python("venv-sorrel", "tools/golden/requirements-sorrel.txt")
    binary = kestrel_release()
    parts = peer(py, "parts")
    k = json.loads(subprocess.run(["taskset", "-c", "0", binary, "hunt", "bench", "--json"], cwd=ROOT, check=True,
                                  capture_output=True, text=True).stdout.strip().splitlines()[-1])
    saved = {"commit": measured, "cpu": platform.processor() or platform.machine(), "sorrel": parts, "kestrel": k}

    def save():
        if a.json:
            os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
            with open(a.json, "w") as f:
                json.dump(saved, f, indent=1)
    if a.parts_only:
        print_parts(parts, k, measured, "parts only")
        save()
        return
    # Whole runs: sorrel's seeds two at a time (CPU time is what is compared), then Kestrel's
    # alone on the machine.
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        s_runs = list(ex.map(lambda s: peer(py, "run", str(s), str(a.epochs)), range(a.seeds)))
    tmp = tempfile.mkdtemp(prefix="kestrel-hunt-compare-")
    k1 = [kestrel_run(binary, s, a.epochs, 1, tmp) for s in range(a.seeds)]
    k2 = [kestrel_run(binary, s, a.epochs, 2, tmp) for s in range(a.seeds)]
    shutil.rmtree(tmp)

    print_parts(parts, k, measured, f"{a.seeds} seeds × {a.epochs} epochs")
    s_cpu = mean_sd([r["cpu_s"] for r in s_runs])
    k1w, k2w = mean_sd([r["wall_s"] for r in k1]), mean_sd([r["wall_s"] for r in k2])
    print(f"| whole default run, s (sorrel CPU time; Kestrel wall, 1 core) | {s_cpu[0]:,.1f} ± {s_cpu[1]:.1f} | {k1w[0]:.2f} ± {k1w[1]:.2f} | {s_cpu[0] / k1w[0]:.1f}x |")
    print(f"| whole default run, s (Kestrel wall, 2 threads) | | {k2w[0]:.2f} ± {k2w[1]:.2f} | {s_cpu[0] / k2w[0]:.1f}x |")
    s_last = mean_sd([mean_last(r["rewards"]) for r in s_runs])
    k_last = mean_sd([mean_last(r["rewards"]) for r in k2])
    print(f"| total reward per epoch, mean of the last 100 epochs (mean ± sd over seeds) | {s_last[0]:.1f} ± {s_last[1]:.1f} | {k_last[0]:.1f} ± {k_last[1]:.1f} | |")
    same = all(r1["rewards"] == r2["rewards"] for r1, r2 in zip(k1, k2))
    print(f"\nKestrel's curves on 1 and 2 threads identical: {same}. sorrel wall time per run: "
          f"{mean_sd([r['wall_s'] for r in s_runs])[0]:,.1f} s (two runs sharing the machine).")
    print("\nPer seed, mean total reward over the last 100 epochs: sorrel " +
          ", ".join(f"{mean_last(r['rewards']):.1f}" for r in s_runs) + "; Kestrel " +
          ", ".join(f"{mean_last(r['rewards']):.1f}" for r in k2))
    import subprocess as sp
    plot = textwrap.dedent('''
        import json, sys
        import matplotlib; matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        d = json.load(open(sys.argv[1]))
        fig, ax = plt.subplots(figsize=(9, 5))
        for name, runs, col in [("sorrel 1.6.0", d["sorrel"], "tab:blue"), ("Kestrel", d["kestrel"], "tab:red")]:
            n = min(len(r) for r in runs)
            mean = [sum(r[i] for r in runs) / len(runs) for i in range(n)]
            sm = [sum(mean[max(0, i - 49):i + 1]) / len(mean[max(0, i - 49):i + 1]) for i in range(n)]
            ax.plot(mean, color=col, alpha=0.25, lw=0.8)
            ax.plot(sm, color=col, lw=2, label=f"{name} (mean of {len(runs)} seeds, 50-epoch average)")
        ax.set_xlabel("epoch"); ax.set_ylabel("total reward per epoch (2 agents)")
        ax.set_title(d["title"]); ax.legend(); fig.tight_layout(); fig.savefig(sys.argv[2], dpi=110)
    ''')
    data = os.path.join(tempfile.gettempdir(), "kestrel-hunt-curves.json")
    json.dump({"sorrel": [r["rewards"] for r in s_runs], "kestrel": [r["rewards"] for r in k2],
               "title": f"Treasure hunt learning curves, commit {measured}"}, open(data, "w"))
    sp.run([py, "-c", plot, data, a.png], check=True)
    print(f"\nLearning curves: `{os.path.relpath(a.png, ROOT)}`.")
    saved["runs"] = {"seeds": a.seeds, "epochs": a.epochs, "sorrel_cpu_s": s_cpu, "kestrel_wall_s_1_thread": k1w,
                     "kestrel_wall_s_2_threads": k2w, "sorrel_last100_reward": s_last, "kestrel_last100_reward": k_last}
    save()


if __name__ == "__main__":
    main()
