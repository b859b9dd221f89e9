"""kestrel.sb3.VecEnv: SB3's VecEnv conventions on one Kestrel batch, and SB3's PPO trained on
it to CartPole-v1's reward threshold; the CleanRL-style torch example (examples/torch/). Run by
tools/py-test in tools/venv-sb3 (SB3 + torch on the CPU); there a missing SB3 is a failure,
elsewhere these tests are skipped."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

if os.environ.get("KESTREL_REQUIRE_SB3") == "1":
    import stable_baselines3  # noqa: F401
else:
    pytest.importorskip("stable_baselines3")

import torch  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.evaluation import evaluate_policy  # noqa: E402
from stable_baselines3.common.monitor import Monitor  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv as SB3VecEnv  # noqa: E402

import gymnasium as gym  # noqa: E402
import kestrel  # noqa: E402
import kestrel.sb3  # noqa: E402

pytestmark = pytest.mark.sb3


def test_is_an_sb3_vecenv_with_dummyvecenvs_conventions():
    n, steps = 6, 400
    venv = kestrel.sb3.VecEnv("CartPole-v1", num_envs=n, seed=3, max_episode_steps=30)
    assert isinstance(venv, SB3VecEnv) and venv.num_envs == n
    assert venv.observation_space == gym.make("CartPole-v1").observation_space
    assert venv.env_is_wrapped(Monitor) == [True] * n and venv.get_attr("render_mode") == [None] * n
    obs = venv.reset()
    assert obs.shape == (n, 4) and obs.dtype == np.float32
    rng = np.random.default_rng(0)
    ret, length = np.zeros(n), np.zeros(n, int)
    prev, ended, truncated = obs, 0, 0
    for _ in range(steps):
        a = rng.integers(0, 2, n)
        obs, rew, dones, infos = venv.step(a)
        assert obs is not prev, "a fresh observation array each step (SB3 keeps the last one)"
        assert dones.dtype == np.bool_ and len(infos) == n
        ret += rew
        length += 1
        for i in range(n):
            info = infos[i]
            assert ("terminal_observation" in info) == bool(dones[i]) == ("episode" in info)
            if dones[i]:
                ended += 1
                # The terminal observation is the last state, the returned one a fresh start.
                assert info["terminal_observation"].shape == (4,)
                assert np.all(np.abs(obs[i]) <= 0.05), obs[i]
                ep = info["episode"]
                assert ep["l"] == length[i] and ep["r"] == pytest.approx(ret[i]) and ep["t"] >= 0
                assert info["TimeLimit.truncated"] == (length[i] == 30 and abs(info["terminal_observation"][2]) <= 0.2095 and abs(info["terminal_observation"][0]) <= 2.4)
                truncated += info["TimeLimit.truncated"]
                ret[i], length[i] = 0, 0
            else:
                assert info == {"TimeLimit.truncated": False}
        prev = obs
    assert ended > n and truncated > 0
    venv.close()


def test_seeding_as_sb3_does_replays_the_same_episodes():
    def rollout(seed):
        venv = kestrel.sb3.VecEnv("CartPole-v1", num_envs=4)
        venv.seed(seed)
        out = [venv.reset()]
        for t in range(50):
            out.append(venv.step(np.full(4, t % 2))[0])
        venv.close()
        return np.stack(out)

    assert np.array_equal(rollout(11), rollout(11))
    assert not np.array_equal(rollout(11), rollout(12))


def test_sb3_ppo_reaches_cartpoles_reward_threshold(tmp_path, monkeypatch):
    # RL Zoo's PPO hyper-parameters for CartPole-v1 (hyperparams/ppo.yml), on 8 Kestrel envs.
    monkeypatch.setenv("SB3_LOGDIR", str(tmp_path))  # SB3's logger folder, else /tmp/SB3-<date>
    torch.set_num_threads(1)
    threshold = gym.spec("CartPole-v1").reward_threshold  # 475
    venv = kestrel.sb3.VecEnv("CartPole-v1", num_envs=8, seed=0)
    lin = lambda v: (lambda progress: progress * v)  # noqa: E731
    model = PPO("MlpPolicy", venv, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                ent_coef=0.0, learning_rate=lin(0.001), clip_range=lin(0.2), seed=0, device="cpu")
    model.learn(100_000)
    assert len(model.ep_info_buffer) > 0, "SB3 read the episode statistics from infos"
    eval_env = kestrel.sb3.VecEnv("CartPole-v1", num_envs=4, seed=1000)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=20, deterministic=True)
    print(f"PPO on kestrel.sb3.VecEnv CartPole-v1: mean return {mean:.1f} ± {std:.1f} over 20 episodes")
    assert mean >= threshold, (mean, std)


def test_gym_make_through_dummyvecenv_still_works():
    venv = DummyVecEnv([lambda: Monitor(gym.make("kestrel/CartPole-v1"))])
    obs = venv.reset()
    assert obs.shape == (1, 4)
    venv.step(np.array([1]))
    venv.close()


TORCH_EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "torch" / "cleanrl_ppo.py"


def _example(*args, cwd=None):
    return subprocess.run([sys.executable, str(TORCH_EXAMPLE), *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def test_cleanrl_example_learns_a_5x5_arc_task():
    # 150k steps: the curve in BENCHMARKS.md is past 5 (most episodes solved) from ~60k on.
    out = _example("--env-id", "ARC-jaxarc-v0", "--total-timesteps", "150000", "--check")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def test_cleanrl_example_runs_on_cartpole(tmp_path):
    # The full run (CleanRL's 500k steps, return 500) is timed in BENCHMARKS.md. CleanRL's
    # flags and its TensorBoard log (issue 57): `runs/{env}__{exp_name}__{seed}__{time}`.
    out = _example("--total-timesteps", "8192", "--exp-name", "check", "--seed", "3", cwd=tmp_path)
    assert out.returncode == 0 and "mean episode return" in out.stdout, out.stdout[-3000:] + out.stderr[-3000:]
    (run,) = (tmp_path / "runs").glob("CartPole-v1__check__3__*")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    tags = EventAccumulator(str(run)).Reload().Tags()["scalars"]
    for tag in ["charts/episodic_return", "charts/episodic_length", "charts/learning_rate", "charts/SPS",
                "losses/value_loss", "losses/policy_loss", "losses/entropy", "losses/approx_kl", "losses/clipfrac"]:
        assert tag in tags, (tag, tags)
    # --capture-video: the trained agent's episode, as CleanRL records it (Gymnasium's RecordVideo).
    out = _example("--total-timesteps", "2048", "--exp-name", "video", "--capture-video", cwd=tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (video,) = (tmp_path / "videos").glob("CartPole-v1__video__1__*/*.mp4")
    assert video.stat().st_size > 1000
    bad = _example("--env-id", "ARC-jaxarc-v0", "--capture-video", cwd=tmp_path)
    assert bad.returncode == 2 and "--capture-video" in bad.stderr


def test_the_example_trains_on_the_batch_a_caller_makes(tmp_path, monkeypatch):
    # tools/compare/arc_ppo.py runs this same loop over JaxARC by passing its own `make`.
    import importlib.util
    spec = importlib.util.spec_from_file_location("cleanrl_ppo", TORCH_EXAMPLE)
    ppo = importlib.util.module_from_spec(spec)
    # Registered before it runs: its dataclass looks its module up (as an import does).
    monkeypatch.setitem(sys.modules, "cleanrl_ppo", ppo)
    spec.loader.exec_module(ppo)
    made = []

    def make(args):
        made.append(args)
        return kestrel.make_vec("CartPole-v1", args.num_envs, seed=args.seed, autoreset_mode="same_step"), 4, 2

    csv = tmp_path / "curve.csv"
    assert ppo.main(["--total-timesteps", "4096", "--csv", str(csv)], make=make) == 0
    assert len(made) == 1 and made[0].num_envs == 4
    rows = csv.read_text().splitlines()
    assert rows[0] == "global_step,mean_return_last20,seconds" and len(rows) > 2
    step, ret, secs = map(float, rows[-1].split(","))
    assert step == 4096 and ret > 0 and secs > 0


def test_the_torch_example_type_checks_strictly(tmp_path):
    # torch leaves some of its own functions unannotated (Tensor.backward, Categorical.sample).
    env = {**os.environ, "MYPY_CACHE_DIR": str(pathlib.Path(__file__).resolve().parents[3] / "target" / "mypy-cache-torch")}
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--untyped-calls-exclude=torch", str(TORCH_EXAMPLE)],
                         capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path)
    assert out.returncode == 0 and "Success" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]


def test_options_reach_the_batch_or_are_refused():
    venv = kestrel.sb3.VecEnv("CartPole-v1", num_envs=2, seed=0)
    venv.reset()
    venv.set_options({"reset_mask": np.array([True, False])})
    venv.reset()
    venv.set_options([{"reset_mask": np.array([True, False])}, {"reset_mask": np.array([True, False])}])
    venv.reset()
    venv.set_options([{"reset_mask": np.array([True, False])}, {}])
    with pytest.raises(ValueError, match="one options dict"):
        venv.reset()
    venv.close()


def test_env_info_keys_reach_each_rows_dict_when_asked():
    n = 8
    kw = dict(canvas=5, tasks_per_family=2, max_episode_steps=4, selection="point", flatten="discrete")
    plain = kestrel.sb3.VecEnv("ARC-jaxarc-v0", num_envs=n, seed=1, **kw)
    plain.reset()
    assert plain.reset_infos == [{}] * n
    venv = kestrel.sb3.VecEnv("ARC-jaxarc-v0", num_envs=n, seed=1, info=True, **kw)
    venv.reset()
    assert all(set(d) >= {"similarity", "improvement", "operation", "step"} for d in venv.reset_infos)
    assert all(d["step"] == 0 and d["operation"] == -1 for d in venv.reset_infos)
    rng = np.random.default_rng(0)
    seen_end = False
    for _ in range(6):
        # Operations below Submit (34), any point: the flattened action is op * 25 + point.
        a = rng.integers(0, 34, n) * 25 + rng.integers(0, 25, n)
        _, _, dones, infos = venv.step(a)
        for i in range(n):
            if dones[i]:
                seen_end = True
                # The final step's info (no Submit: truncated at the 4-step limit).
                assert "terminal_observation" in infos[i] and infos[i]["TimeLimit.truncated"]
                assert infos[i]["step"] == 4 and infos[i]["operation"] == a[i] // 25
                assert 0.0 <= infos[i]["similarity"] <= 1.0
                assert venv.reset_infos[i]["step"] == 0 and venv.reset_infos[i]["operation"] == -1
            else:
                assert infos[i]["step"] >= 1 and 0.0 <= infos[i]["similarity"] <= 1.0
                assert infos[i]["operation"] == a[i] // 25
    assert seen_end
