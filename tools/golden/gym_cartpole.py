"""Golden fixture for kestrel-envs CartPole: Gymnasium 1.4.0 `CartPole-v1` driven with random
actions from states set after reset (sync once), recording the observation (float32 bit
patterns), reward and terminated flag of every step to the end of each episode.

Usage:
    tools/venv-arcle/bin/python tools/golden/gym_cartpole.py --out tests/golden/gym_cartpole.json
(the ARCLE venv carries gymnasium==1.4.0, pinned in requirements-arcle.txt)
"""
import argparse
import json
import warnings

warnings.filterwarnings("ignore")
import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--episodes", type=int, default=40)
    a = ap.parse_args()
    rng = np.random.default_rng(11)
    env = gym.make("CartPole-v1").unwrapped
    episodes = []
    for e in range(a.episodes):
        env.reset(seed=e)
        start = [float(v) for v in rng.uniform(-0.05, 0.05, size=4)]
        env.state = np.array(start, dtype=np.float64)
        # A biased random policy gives long and short episodes alike.
        p_right = rng.uniform(0.2, 0.8)
        steps = []
        for _ in range(500):
            act = int(rng.random() < p_right)
            obs, r, term, trunc, _ = env.step(act)
            steps.append({"a": act, "obs": [int(v) for v in np.asarray(obs, dtype=np.float32).view(np.uint32)], "r": float(r), "term": bool(term)})
            if term:
                break
        episodes.append({"start": start, "steps": steps})
    with open(a.out, "w") as f:
        json.dump({"peer": f"gymnasium {gym.__version__} CartPole-v1", "episodes": episodes}, f, separators=(",", ":"))
    print(f"{a.out}: {len(episodes)} episodes, {sum(len(e['steps']) for e in episodes)} steps")


if __name__ == "__main__":
    main()
