"""Golden fixture for kestrel-envs Pendulum: Gymnasium 1.4.0 `Pendulum-v1` with random float32
torques (some beyond the ±2 limit), state set after reset (sync once); records observation
and reward (float32 bit patterns) for 200 steps per episode.

Usage:
    tools/venv-arcle/bin/python tools/golden/gym_pendulum.py --out tests/golden/gym_pendulum.json
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402


def bits(x):
    return [int(v) for v in np.asarray(x, dtype=np.float32).reshape(-1).view(np.uint32)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--episodes", type=int, default=12)
    a = ap.parse_args()
    rng = np.random.default_rng(5)
    env = gym.make("Pendulum-v1").unwrapped
    episodes = []
    for e in range(a.episodes):
        env.reset(seed=e)
        start = [float(rng.uniform(-np.pi, np.pi)), float(rng.uniform(-1, 1))]
        env.state = np.array(start)
        steps = []
        for _ in range(200):
            u = np.array([rng.uniform(-2.5, 2.5)], dtype=np.float32)
            obs, r, *_ = env.step(u)
            steps.append({"u": bits(u)[0], "obs": bits(obs), "r": bits(np.float32(r))[0]})
        episodes.append({"start": start, "steps": steps})
    with open(a.out, "w") as f:
        json.dump({"peer": f"gymnasium {gym.__version__} Pendulum-v1", "episodes": episodes}, f, separators=(",", ":"))
    print(f"{a.out}: {len(episodes)} episodes, {sum(len(e['steps']) for e in episodes)} steps")


if __name__ == "__main__":
    main()
