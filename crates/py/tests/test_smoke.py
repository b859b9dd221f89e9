import numpy as np
import kestrel


def test_imports_and_lists_envs():
    ids = kestrel.list_envs()
    assert "CartPole-v1" in ids and "ARC-v0" in ids
    assert kestrel.__version__
