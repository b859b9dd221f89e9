import os
import warnings
from pathlib import Path

import pytest

import kestrel

# Every single-agent env id with the params that make it a gymnasium.Env.
SINGLE = [(i, {}) for i in kestrel.list_envs() if i not in ("TreasureHunt-v0", "ARC-v0", "ARC-jaxarc-v0")]
SINGLE += [("TreasureHunt-v0", {"num_agents": 1})]
SINGLE += [(a, {"layout": l, "tasks_per_family": 2}) for a in ("ARC-v0", "ARC-jaxarc-v0") for l in ("compact", "full")]
# Small canvases: jaxarc on the lane kernel (both layouts at 5x5, compact at 10x10), o2arc per env.
SINGLE += [("ARC-jaxarc-v0", {"canvas": c, "layout": l, "tasks_per_family": 2}) for c, l in ((5, "compact"), (5, "full"), (10, "compact"))]
SINGLE += [("ARC-v0", {"canvas": 5, "tasks_per_family": 2})]


def ids(cases):
    return [f"{i}-{'-'.join(f'{k}={v}' for k, v in p.items())}" if p else i for i, p in cases]


def pytest_configure(config):
    config.addinivalue_line("markers", "ray: kestrel.dist on Ray (run by tools/py-test in tools/venv-ray)")
    config.addinivalue_line("markers", "sb3: kestrel.sb3 with Stable-Baselines3 (run by tools/py-test in tools/venv-sb3)")
    config.addinivalue_line("markers", "jax: kestrel.jax, kestrel.torch and DLPack (run by tools/py-test in tools/venv-sb3)")


@pytest.fixture(autouse=True)
def no_unexpected_warnings(request):
    if request.node.get_closest_marker("ray"):  # Ray's own warnings are not ours to police
        yield
        return
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        yield
    bad = [str(x.message) for x in w if "Box" not in str(x.message) and "infinite" not in str(x.message).lower()]
    assert not bad, bad


# evosax 0.3.2's meta-learned weights, which Kestrel never commits: tools/evosax-ckpt (run by
# tools/test-all) unpacks them from evosax's wheel; KESTREL_EVOSAX_CKPT names another copy.
EVOSAX_CKPT = Path(os.environ.get("KESTREL_EVOSAX_CKPT",
                                  Path(__file__).resolve().parents[3] / "tools/.cache/evosax-0.3.2/ckpt"))


def require(present: bool, missing: str) -> None:
    """Skips the calling test when something it needs from outside the project (data, or a
    binary an earlier step builds) is absent, saying what (`missing`); under
    KESTREL_REQUIRE_DATA=1, as `.ci/run` sets it, fails it instead, so CI never passes by
    skipping."""
    if present:
        return
    if os.environ.get("KESTREL_REQUIRE_DATA") == "1":
        pytest.fail(f"KESTREL_REQUIRE_DATA=1 and {missing}")
    pytest.skip(missing)


@pytest.fixture
def learned_kw():
    """`learned_kw(kind)`: the keywords a strategy needs to be built here: a learned one's
    `params_path` (evosax's weights; absent, the test is skipped, or fails under
    KESTREL_REQUIRE_DATA=1), nothing for the others."""
    def kw(kind, num_dims=6):
        rel = kestrel._kestrel.evosax_weights(kind, num_dims)
        if rel is None:
            return {}
        path = EVOSAX_CKPT / rel
        require(path.is_file(), f"evosax's {rel} is absent ({path}; tools/evosax-ckpt fetches it)")
        return {"params_path": str(path)}
    return kw
