"""Rendering as Gymnasium defines it: `rgb_array` frames (H, W, 3) uint8 on every env, `ansi`
text on the grids, Gymnasium's checker with rendering on, `gymnasium.make`'s render wrappers,
and the vector env's tuple of frames."""

import numpy as np
import pytest
import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import kestrel
from conftest import SINGLE, ids

ANSI = {"ARC-v0", "ARC-jaxarc-v0", "GridWorld-v0", "TreasureHunt-v0"}
PALETTE = {(0, 0, 0), (0, 116, 217), (255, 65, 54), (46, 204, 64), (255, 220, 0), (170, 170, 170),
           (240, 18, 190), (255, 133, 27), (127, 219, 255), (135, 12, 37)}


@pytest.mark.parametrize("env_id,params", SINGLE, ids=ids(SINGLE))
def test_every_env_renders_rgb_array_and_passes_the_checker(env_id, params):
    env = kestrel.make(env_id, render_mode="rgb_array", **params)
    check_env(env)
    env.reset(seed=3)
    frame = env.render()
    assert isinstance(frame, np.ndarray) and frame.dtype == np.uint8
    assert frame.ndim == 3 and frame.shape[2] == 3 and min(frame.shape[:2]) >= 100
    assert len(np.unique(frame.reshape(-1, 3), axis=0)) > 1  # a picture, not a blank canvas
    assert env.metadata["render_modes"][0] == "rgb_array" and env.metadata["render_fps"] > 0
    assert ("ansi" in env.metadata["render_modes"]) == (env_id in ANSI)
    env.close()


@pytest.mark.parametrize("env_id,params", [c for c in SINGLE if c[0] in ANSI], ids=ids([c for c in SINGLE if c[0] in ANSI]))
def test_the_grids_render_ansi_text(env_id, params):
    env = kestrel.make(env_id, render_mode="ansi", **params)
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and text.count("\n") >= 5
    env.close()


def test_the_frame_follows_the_state():
    env = kestrel.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=0, options={"state": [0.0, 0.0, 0.0, 0.0]})
    upright = env.render()
    assert upright.shape == (400, 600, 3)
    # Gymnasium's geometry: the cart centred at (x=300, y=300), the pole straight up above it.
    assert tuple(upright[305, 300]) == (0, 0, 0)
    assert tuple(upright[200, 300]) == (202, 152, 101)
    env.reset(seed=0, options={"state": [1.0, 0.0, 0.0, 0.0]})
    moved = env.render()
    assert tuple(moved[305, 300 + 125]) == (0, 0, 0) and tuple(moved[200, 300]) == (255, 255, 255)


def test_arc_frames_use_the_arc_palette():
    env = kestrel.make("ARC-v0", render_mode="rgb_array", canvas=10, tasks_per_family=2)
    env.reset(seed=4)
    frame = env.render()
    # Cell (0, 0) of the input panel (16 px margin, 28 px title, 24 px cells).
    assert tuple(frame[28 + 12, 16 + 12]) in PALETTE
    env.close()


def test_gymnasium_make_wrappers_render():
    env = gym.make("kestrel/CartPole-v1", render_mode="rgb_array_list")
    env.reset(seed=0)
    for _ in range(3):
        env.step(env.action_space.sample())
    frames = env.render()
    assert isinstance(frames, list) and len(frames) == 4 and frames[0].shape == (400, 600, 3)
    env.close()
    # Kestrel's own constructor records the render mode in the spec, so gym.make(spec) draws.
    env = kestrel.make("ARC-v0", render_mode="rgb_array", canvas=10, tasks_per_family=2)
    assert env.spec.kwargs["render_mode"] == "rgb_array"
    again = gym.make(env.spec)
    assert again.render_mode == "rgb_array"
    env.reset(seed=1)
    again.reset(seed=1)
    np.testing.assert_array_equal(env.render(), again.render())


def test_vector_env_returns_one_frame_per_env_equal_to_the_single_env():
    venv = kestrel.make_vec("Pendulum-v1", 3, render_mode="rgb_array")
    venv.reset(seed=7)
    frames = venv.render()
    assert isinstance(frames, tuple) and len(frames) == 3 and frames[0].shape == (500, 500, 3)
    env = kestrel.make("Pendulum-v1", render_mode="rgb_array")
    env.reset(seed=7)
    np.testing.assert_array_equal(frames[0], env.render())
    venv.close()
    hunt = kestrel.make_vec("TreasureHunt-v0", 2, render_mode="ansi")
    hunt.reset(seed=0)
    texts = hunt.render()
    # One per agent row (Gymnasium's render wrappers expect num_envs), each world's shared.
    assert len(texts) == hunt.num_envs == 4 and texts[0] == texts[1] and all(isinstance(t, str) for t in texts)
    venv2 = gym.make_vec("kestrel/GridWorld-v0", num_envs=2, vectorization_mode="vector_entry_point", render_mode="rgb_array")
    venv2.reset(seed=0)
    assert len(venv2.render()) == 2


def test_bad_render_modes_and_misuse_are_clear():
    with pytest.raises(ValueError, match="render_mode = 'ansi': CartPole-v1 renders 'rgb_array'"):
        kestrel.make("CartPole-v1", render_mode="ansi")
    with pytest.raises(ValueError, match="render_mode = 'video'"):
        kestrel.make_vec("ARC-v0", 2, render_mode="video", canvas=5, tasks_per_family=2)
    env = kestrel.make("Pendulum-v1", render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="before reset"):
        env.render()
    plain = kestrel.make("Pendulum-v1")
    plain.reset(seed=0)
    with pytest.warns(UserWarning, match="without specifying any render mode"):
        assert plain.render() is None


def _random_arc_actions(rng, n, side):
    return {"operation": rng.integers(0, 34, n), "selection": rng.integers(0, 2, (n, side, side)).astype(np.uint8)}


@pytest.mark.parametrize("canvas", [5, 30])
def test_arc_info_matches_jaxarcs_reward(canvas):
    # JaxARC's reward on the train split is similarity_weight (1) x the improvement plus the
    # step penalty (-0.005) off Submit (op 34, excluded here): the info's improvement must be
    # the reward's own term, and the similarity its running sum.
    venv = kestrel.make_vec("ARC-jaxarc-v0", 64, canvas=canvas, tasks_per_family=2, max_episode_steps=12,
                            autoreset_mode="same_step")
    rng = np.random.default_rng(0)
    _, info = venv.reset(seed=3)
    assert set(info) >= {"similarity", "_similarity", "improvement", "operation", "step"}
    assert np.all(info["step"] == 0) and np.all(info["operation"] == -1) and np.all(info["improvement"] == 0)
    sim = info["similarity"].copy()
    moved = 0
    for _ in range(30):
        acts = _random_arc_actions(rng, 64, canvas)
        _, rew, term, trunc, info = venv.step(acts)
        live = info["step"] > 0
        np.testing.assert_allclose(info["improvement"][live], rew[live] + 0.005, atol=1e-6)
        np.testing.assert_allclose(info["similarity"][live], sim[live] + info["improvement"][live], atol=1e-6)
        np.testing.assert_array_equal(info["operation"][live], acts["operation"][live])
        assert np.all(info["operation"][~live] == -1) and np.all((term | trunc)[~live])
        assert np.all((0 <= info["similarity"]) & (info["similarity"] <= 1))
        moved += int(np.count_nonzero(info["improvement"]))
        sim = info["similarity"].copy()
    assert moved > 0
    venv.close()


def test_arc_info_on_the_single_env_and_off_elsewhere():
    env = kestrel.make("ARC-v0", canvas=10, tasks_per_family=2)
    _, info = env.reset(seed=0)
    assert info["step"] == 0 and info["operation"] == -1 and 0 <= info["similarity"] <= 1
    _, _, _, _, info = env.step({"operation": 3, "selection": np.ones((10, 10), np.uint8)})
    assert info["step"] == 1 and info["operation"] == 3
    assert isinstance(info["similarity"], float) and isinstance(info["operation"], int)
    off = kestrel.make_vec("ARC-v0", 2, canvas=10, tasks_per_family=2, arc_info=False)
    assert "similarity" not in off.reset(seed=0)[1]
    assert kestrel.make("CartPole-v1").reset(seed=0)[1] == {}
