"""Golden fixture for kestrel-envs' treasure hunt from sorrel 1.6.0's treasurehunt example:
sorrel's own world, entities and agents, driven turn by turn as `Environment.take_turn` does
(every transitioning entity in `ndenumerate` order, then each agent in list order), with the
agents' actions injected and the spawning draws (`np.random.random`, then the item index of
`np.random.choice`) recorded. Per turn: the draws, each agent's observation just before it
acts (`agent.pov`), its action and reward, and the positions after the turn.

Usage (Python >= 3.12):
    ~/.pyenv/versions/3.12.1/bin/python -m venv tools/venv-sorrel
    tools/venv-sorrel/bin/pip install -r tools/golden/requirements-sorrel.txt
    tools/venv-sorrel/bin/python tools/golden/sorrel_treasure.py --out tests/golden/sorrel_treasure.json
"""
import argparse
import json
import random
import warnings

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
from sorrel.agents import Agent  # noqa: E402
from sorrel.examples.treasurehunt.entities import EmptyEntity  # noqa: E402
from sorrel.examples.treasurehunt.env import TreasurehuntEnv  # noqa: E402
from sorrel.examples.treasurehunt.world import TreasurehuntWorld  # noqa: E402

DRAWS = []
_random, _choice = np.random.random, np.random.choice


def recorded_random(*a, **k):
    v = _random(*a, **k)
    if not a and not k:
        DRAWS.append(float(v))
    return v


def recorded_choice(a, *args, **kw):
    # The spawn draw is `np.random.choice(array of 3 entities)`; record its index as -1 - i
    # (uniforms are recorded as themselves, in [0, 1)).
    if not args and not kw and isinstance(a, np.ndarray) and a.dtype == object:
        i = int(np.random.randint(len(a)))
        DRAWS.append(-1.0 - i)
        return a[i]
    return _choice(a, *args, **kw)


np.random.random = recorded_random
np.random.choice = recorded_choice


def case(name, obs, height, width, agents, spawn_prob, turns, seed):
    np.random.seed(seed)
    rng = random.Random(seed)
    config = {
        "experiment": {"epochs": 1, "max_turns": turns, "record_period": 50, "log_dir": "/tmp/sorrel-golden"},
        "model": {"agent_vision_radius": 2, "epsilon_decay": 0.0005, "observation_spec": obs, "num_agents": agents},
        "world": {"height": height, "width": width, "gem_value": 10, "food_value": 5, "bone_value": -10, "spawn_prob": spawn_prob},
    }
    world = TreasurehuntWorld(config=config, default_entity=EmptyEntity())
    env = TreasurehuntEnv(world, config)
    env.reset()
    out = {"name": name, "obs": obs, "height": height, "width": width, "spawn_prob": spawn_prob,
           "agents": [list(map(int, a.location[:2])) for a in env.agents], "turns": []}
    for _ in range(turns):
        DRAWS.clear()
        for _, x in np.ndenumerate(world.map):
            if x.has_transitions and not isinstance(x, Agent):
                x.transition(world)
        t = {"draws": list(DRAWS), "obs": [], "actions": [], "rewards": []}
        for agent in env.agents:
            t["obs"].append([float(v) for v in agent.pov(world).reshape(-1)])
            a = rng.randrange(4)
            t["actions"].append(a)
            t["rewards"].append(float(agent.act(world, a)))
        t["positions"] = [list(map(int, a.location[:2])) for a in env.agents]
        out["turns"].append(t)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cases = [
        case("onehot-2-agents", "onehot", 21, 21, 2, 0.05, 60, 1),
        case("rgb-2-agents", "rgb", 21, 21, 2, 0.05, 60, 2),
        case("onehot-3-agents-small", "onehot", 7, 9, 3, 0.1, 80, 3),
        case("rgb-default-spawn", "rgb", 21, 21, 2, 0.005, 40, 4),
    ]
    with open(a.out, "w") as f:
        json.dump({"peer": "sorrel 1.6.0 treasurehunt", "cases": cases}, f, separators=(",", ":"))
    print(f"{a.out}: {len(cases)} cases, {sum(len(c['turns']) for c in cases)} turns")


if __name__ == "__main__":
    main()
