"""Single envs: gymnasium's checker on every env, equality with gymnasium's own CartPole and
Pendulum from the same start states, registration."""

import numpy as np
import pytest
import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import kestrel
from conftest import SINGLE, ids


@pytest.mark.parametrize("env_id,params", SINGLE, ids=ids(SINGLE))
def test_check_env_passes_on_every_env(env_id, params):
    env = kestrel.make(env_id, **params)
    check_env(env, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("env_id,params", SINGLE, ids=ids(SINGLE))
def test_gymnasium_make_and_make_vec_work_for_every_id(env_id, params):
    env = gym.make(f"kestrel/{env_id}", **params)
    obs, _ = env.reset(seed=1)
    assert obs in env.observation_space
    env.step(env.action_space.sample())
    env.close()
    venv = gym.make_vec(f"kestrel/{env_id}", num_envs=3, vectorization_mode="vector_entry_point", **params)
    obs, _ = venv.reset(seed=1)
    assert obs in venv.observation_space
    venv.step(venv.action_space.sample())
    venv.close()


def _same_start(ours, theirs, state, steps, actions):
    theirs.reset(seed=0)
    theirs.unwrapped.state = np.array(state, dtype=np.float64)
    obs, _ = ours.reset(seed=0, options={"state": state})
    for t in range(steps):
        a = actions(t)
        o1, r1, te1, tr1, _ = ours.step(a)
        o2, r2, te2, tr2, _ = theirs.step(a)
        np.testing.assert_array_equal(o1, o2, err_msg=f"step {t}")
        # Kestrel's reward column is float32 (documented): gymnasium's f64 reward rounded.
        assert (np.float32(r1), te1, tr1) == (np.float32(r2), te2, tr2), t
        if te1 or tr1:
            return t + 1
    return steps


def test_cartpole_equals_gymnasium_from_the_same_start_states():
    ours, theirs = kestrel.make("CartPole-v1"), gym.make("CartPole-v1").unwrapped
    rng = np.random.default_rng(0)
    lengths = []
    for ep in range(20):
        state = rng.uniform(-0.05, 0.05, 4)
        acts = rng.integers(0, 2, 600)
        lengths.append(_same_start(ours, theirs, state, 600, lambda t: int(acts[t])))
    assert max(lengths) > 20  # episodes ended by the pole falling, compared step by step


def test_pendulum_equals_gymnasium_from_the_same_start_states():
    ours, theirs = kestrel.make("Pendulum-v1"), gym.make("Pendulum-v1").unwrapped
    rng = np.random.default_rng(1)
    for ep in range(10):
        state = [rng.uniform(-np.pi, np.pi), rng.uniform(-1, 1)]
        acts = rng.uniform(-2, 2, (200, 1)).astype(np.float32)
        _same_start(ours, theirs, state, 199, lambda t: acts[t])


def test_pendulum_clips_torques_as_gymnasium_and_refuses_nan():
    """docs/envs.md: Pendulum's torque is clipped to [-2, 2] where Gymnasium clips it (the same
    steps as Gymnasium's with torques of ±5), and a NaN torque is refused by name."""
    ours, theirs = kestrel.make("Pendulum-v1"), gym.make("Pendulum-v1").unwrapped
    acts = np.array([[5.0], [-7.5], [2.5], [-2.0]] * 10, np.float32)
    _same_start(ours, theirs, [0.3, -0.2], len(acts), lambda t: acts[t])
    ours.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        ours.step(np.array([np.nan], np.float32))


def test_out_of_range_actions_raise_instead_of_mapping():
    env = kestrel.make("CartPole-v1")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(2)
    with pytest.raises(TypeError, match="integers"):
        env.step(0.5)


def test_multi_agent_needs_one_agent_for_a_single_env():
    with pytest.raises(ValueError, match="num_agents"):
        kestrel.make("TreasureHunt-v0")


def test_unknown_params_and_ids_name_the_accepted():
    with pytest.raises(ValueError, match="unknown key `forse_mag`; the closest valid key is `force_mag`"):
        kestrel.make("CartPole-v1", forse_mag=3.0)
    with pytest.raises(ValueError, match="unknown env id .*did you mean `CartPole-v1`.*one of: .*Pendulum-v1"):
        kestrel.make("CartPol-v1")
    with pytest.raises(ValueError, match="tau = nan"):
        kestrel.make("CartPole-v1", tau=float("nan"))


def test_env_params_come_from_the_registry_with_config_files_and_dicts(tmp_path):
    """Every env's params are its registry config: `kestrel.config(id)` gives the defaults,
    `config=` takes a dict or the TOML `kestrel config ID` prints, keywords go over it."""
    d = kestrel.config("Pendulum-v1")
    assert (d["g"], d["max_episode_steps"], d["dt"]) == (10.0, 200, 0.05)
    assert kestrel.config("ARC-jaxarc-v0")["rewards"]["step_penalty"] == -0.005
    for env_id in kestrel.list_envs():
        text = kestrel.config_toml(env_id)
        path = tmp_path / f"{env_id}.toml"
        path.write_text(text)
        assert kestrel.config(env_id, config=str(path)) == kestrel.config(env_id), env_id
    # A key that only the registry exposed (Pendulum's mass) changes the dynamics.
    (tmp_path / "heavy.toml").write_text("m = 4.0\n")
    runs = []
    for cfg in (None, tmp_path / "heavy.toml", {"m": 4.0}):
        e = kestrel.make("Pendulum-v1", config=cfg)
        e.reset(seed=3)
        runs.append(e.step(np.array([1.0], dtype=np.float32))[0])
    assert not np.array_equal(runs[0], runs[1]) and np.array_equal(runs[1], runs[2])
    # Keywords go over the file.
    e = kestrel.make("Pendulum-v1", config=tmp_path / "heavy.toml", m=1.0)
    e.reset(seed=3)
    assert np.array_equal(e.step(np.array([1.0], dtype=np.float32))[0], runs[0])
    v = kestrel.make_vec("CartPole-v1", 2, config={"max_episode_steps": 3})
    v.reset(seed=0)
    for _ in range(3):
        _, _, term, trunc, _ = v.step(np.zeros(2, dtype=np.int64))
    assert trunc.all() and not term.any()
    with pytest.raises(ValueError, match="max_episode_steps = 0: at least 1"):
        kestrel.make("CartPole-v1", max_episode_steps=0)
    with pytest.raises(ValueError, match="neither a run kind nor an env id .*CartPole-v1"):
        kestrel.config("CartPol-v1")


def test_specs_report_the_limit_and_the_reference_threshold():
    """`spec` is complete however the env is made: the env's own time limit (no second
    `TimeLimit` wrapper), Gymnasium's reward threshold where it registers one, and the kwargs."""
    import gymnasium as gym

    e = gym.make("kestrel/CartPole-v1")
    assert (e.spec.id, e.spec.max_episode_steps, e.spec.reward_threshold) == ("kestrel/CartPole-v1", 500, 475.0)
    assert not any(isinstance(w, gym.wrappers.TimeLimit) for w in _wrappers(e))
    e = gym.make("kestrel/Pendulum-v1", max_episode_steps=-1)
    assert (e.spec.max_episode_steps, e.spec.reward_threshold) == (200, None)
    k = kestrel.make("CartPole-v1", max_episode_steps=7)
    assert (k.spec.max_episode_steps, k.spec.kwargs) == (7, {"max_episode_steps": 7})
    v = kestrel.make_vec("CartPole-v1", 3)
    assert (v.spec.id, v.spec.max_episode_steps, v.spec.reward_threshold) == ("kestrel/CartPole-v1", 500, 475.0)
    gv = gym.make_vec("kestrel/TreasureHunt-v0", num_envs=2, vectorization_mode="vector_entry_point", num_agents=1)
    assert gv.spec.max_episode_steps == 100 and gv.spec.reward_threshold is None


def _wrappers(env):
    while hasattr(env, "env"):
        yield env
        env = env.env
