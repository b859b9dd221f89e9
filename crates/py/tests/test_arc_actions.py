"""ARC's action forms for RL libraries: point and bbox selections beside masks, and the
flattened Discrete / MultiDiscrete spaces (JaxARC's FlattenActionWrapper encoding), each the
same step as the equivalent mask."""

import numpy as np
import pytest
import gymnasium as gym
from gymnasium.utils.env_checker import check_env

import kestrel

SMALL = dict(canvas=10, tasks_per_family=2)


def _mask(side, cells):
    m = np.zeros((side, side), np.uint8)
    for r, c in cells:
        m[r, c] = 1
    return m


def _rect(side, r1, c1, r2, c2):
    m = np.zeros((side, side), np.uint8)
    m[min(r1, r2):max(r1, r2) + 1, min(c1, c2):max(c1, c2) + 1] = 1
    return m


@pytest.mark.parametrize("env_id", ["ARC-v0", "ARC-jaxarc-v0"])
@pytest.mark.parametrize("selection,flatten", [("point", None), ("bbox", None), ("point", "discrete"),
                                               ("bbox", "discrete"), ("point", "multi_discrete"),
                                               ("bbox", "multi_discrete")])
def test_every_form_steps_as_its_mask(env_id, selection, flatten):
    n, S = 16, 10
    form = kestrel.make_vec(env_id, n, selection=selection, flatten=flatten, **SMALL)
    mask = kestrel.make_vec(env_id, n, **SMALL)
    space = form.single_action_space
    if flatten == "discrete":
        assert isinstance(space, gym.spaces.Discrete) and space.n == 35 * S ** (2 if selection == "point" else 4)
    elif flatten == "multi_discrete":
        assert isinstance(space, gym.spaces.MultiDiscrete)
        assert list(space.nvec) == [35] + [S] * (2 if selection == "point" else 4)
    else:
        keys = ["operation", "row", "col"] if selection == "point" else ["operation", "r1", "c1", "r2", "c2"]
        assert list(space.spaces) == keys
    o1, _ = form.reset(seed=5)
    o2, _ = mask.reset(seed=5)
    form.action_space.seed(1)
    for _ in range(25):
        a = form.action_space.sample()
        # The same actions as ops + coordinates, decoded by hand from the documented encoding.
        if flatten == "discrete":
            rest, cols = np.asarray(a, np.int64), []
            for radix in reversed([35] + [S] * (2 if selection == "point" else 4)):
                rest, d = np.divmod(rest, radix)
                cols.append(d)
            cols = np.stack(cols[::-1], 1)
        elif flatten == "multi_discrete":
            cols = np.asarray(a)
        else:
            cols = np.stack([np.asarray(a[k]) for k in space.spaces], 1)
        ops, xy = cols[:, 0], cols[:, 1:]
        if selection == "point":
            sel = np.stack([_mask(S, [tuple(p)]) for p in xy])
        else:
            sel = np.stack([_rect(S, *b) for b in xy])
        r1 = form.step(a)
        r2 = mask.step({"operation": ops, "selection": sel})
        for k in r1[0]:
            np.testing.assert_array_equal(r1[0][k], r2[0][k])
        for x, y in zip(r1[1:4], r2[1:4]):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("selection,flatten", [("point", "discrete"), ("bbox", "multi_discrete"), ("bbox", None)])
def test_the_single_env_passes_the_checker_in_each_form(selection, flatten):
    env = kestrel.make("ARC-jaxarc-v0", selection=selection, flatten=flatten, **SMALL)
    check_env(env, skip_render_check=True)
    again = gym.make(env.spec)  # the form is in the spec's kwargs
    assert again.action_space == env.action_space


def test_bad_forms_and_actions_are_clear_errors():
    with pytest.raises(ValueError, match="selection = 'lasso'"):
        kestrel.make("ARC-v0", selection="lasso", **SMALL)
    with pytest.raises(ValueError, match="flatten = 'discrete' with selection = 'mask'"):
        kestrel.make("ARC-v0", flatten="discrete", **SMALL)
    with pytest.raises(ValueError, match="only ARC envs"):
        kestrel.make("CartPole-v1", selection="point")
    v = kestrel.make_vec("ARC-v0", 2, selection="bbox", **SMALL)
    v.reset(seed=0)
    good = {"operation": np.zeros(2, np.int64), "r1": np.zeros(2, np.int64), "c1": np.zeros(2, np.int64),
            "r2": np.ones(2, np.int64), "c2": np.ones(2, np.int64)}
    v.step(good)
    with pytest.raises(ValueError, match=r"actions\[\"r2\"\]\[1\] = 10: outside the 10x10 canvas"):
        v.step({**good, "r2": np.array([1, 10])})
    with pytest.raises(TypeError, match="keys operation, r1, c1, r2, c2"):
        v.step({"operation": good["operation"], "selection": np.zeros((2, 10, 10), np.uint8)})
    with pytest.raises(TypeError, match="expected integers"):
        v.step({**good, "c1": np.zeros(2)})
    d = kestrel.make_vec("ARC-v0", 2, selection="point", flatten="discrete", **SMALL)
    d.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[1\] = 3500: outside Discrete\(3500\)"):
        d.step(np.array([0, 3500]))
    with pytest.raises(ValueError, match=r"expected shape \(2,\)"):
        d.step(np.array([[0, 1]]))


def test_bbox_columns_in_any_layout_step_alike():
    # Columns of an (n, 5) array (strided views, read in place by Rust), int32 columns and
    # reversed views step exactly as contiguous int64 columns; a bad value in a strided column
    # is named by its key and row.
    n, keys = 24, ["operation", "r1", "c1", "r2", "c2"]
    envs = [kestrel.make_vec("ARC-jaxarc-v0", n, selection="bbox", **SMALL) for _ in range(4)]
    for v in envs:
        v.reset(seed=3)
    r = np.random.default_rng(0)
    for _ in range(20):
        a = np.column_stack([r.integers(0, 35, n), r.integers(0, 10, (n, 4))]).astype(np.int64)
        contiguous = {k: np.ascontiguousarray(a[:, j]) for j, k in enumerate(keys)}
        strided = {k: a[:, j] for j, k in enumerate(keys)}
        small = {k: a[:, j].astype(np.int32) for j, k in enumerate(keys)}
        flipped = {k: np.ascontiguousarray(a[::-1, j])[::-1] for j, k in enumerate(keys)}
        assert not strided["r1"].flags.c_contiguous and flipped["r1"].strides[0] < 0
        out = [v.step(x) for v, x in zip(envs, [contiguous, strided, small, flipped])]
        for o in out[1:]:
            for k in out[0][0]:
                np.testing.assert_array_equal(o[0][k], out[0][0][k])
            for x, y in zip(o[1:4], out[0][1:4]):
                np.testing.assert_array_equal(x, y)
    bad = np.zeros((n, 5), np.int64)
    bad[7, 3] = -1
    with pytest.raises(ValueError, match=r"actions\[\"r2\"\]\[7\] = -1: outside the 10x10 canvas"):
        envs[1].step({k: bad[:, j] for j, k in enumerate(keys)})
    with pytest.raises(ValueError, match=r"actions\['operation'\]\[2\] = 35: outside Discrete\(35\)"):
        bad[2, 0] = 35
        bad[7, 3] = 0
        envs[1].step({k: bad[:, j] for j, k in enumerate(keys)})


def test_start_grids_follow_init_as_jaxarc_names_it():
    """`init` is JaxARC's `grid_initialization` with its keys: empty starts are zeros over
    the area with -1 padding (0 padding and training pair 0's area under `bugs="all"`),
    random starts colour 1-9 inside the area only; bad keys and values, and `ARC-v0`, are
    refused naming the key."""
    empty = {"demo_weight": 0, "empty_weight": 1}
    v = kestrel.make_vec("ARC-jaxarc-v0", 64, init=empty, **SMALL)
    obs, _ = v.reset(seed=0)
    grid, dims = obs["grid"], obs["grid_dim"]
    for g, (h, w) in zip(grid, dims):
        assert (g[:h, :w] == 0).all() and (g[h:, :] == -1).all() and (g[:, w:] == -1).all()
    b = kestrel.make_vec("ARC-jaxarc-v0", 64, init=empty, bugs="all", **SMALL)
    assert (b.reset(seed=0)[0]["grid"] == 0).all(), "JaxARC writes 0 into the padding"
    rnd = kestrel.make_vec("ARC-jaxarc-v0", 64, init={"demo_weight": 0, "random_weight": 1,
                                                      "random_density": 0.5}, **SMALL)
    obs, _ = rnd.reset(seed=1)
    inside = np.concatenate([g[:h, :w].ravel() for g, (h, w) in zip(obs["grid"], obs["grid_dim"])])
    assert set(np.unique(inside)) <= set(range(10)) and 0.35 < (inside > 0).mean() < 0.65
    assert kestrel.config("ARC-jaxarc-v0")["init"]["demo_weight"] == 1.0
    with pytest.raises(ValueError, match="init.random_density = 2: 0 to 1"):
        kestrel.make("ARC-jaxarc-v0", init={"random_density": 2.0}, **SMALL)
    with pytest.raises(ValueError, match="demo_wieght.*demo_weight"):
        kestrel.make("ARC-jaxarc-v0", init={"demo_wieght": 1.0}, **SMALL)
    with pytest.raises(ValueError, match="o2arc"):
        kestrel.make("ARC-v0", init=empty, **SMALL)
