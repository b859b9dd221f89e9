import numpy as np
import kestrel


def test_imports_and_lists_envs():
    ids = kestrel.list_envs()
    assert "CartPole-v1" in ids and "ARC-v0" in ids
    assert kestrel.__version__
    # The release and the commit the extension was built from (`kestrel --version` prints both).
    import re
    assert re.fullmatch(r"\d+\.\d+\.\d+", kestrel.__version__), kestrel.__version__
    assert re.fullmatch(r"([0-9a-f]{12}(-dirty)?|unknown)", kestrel.__commit__), kestrel.__commit__


def test_jax_and_torch_stay_optional_extras():
    # A fresh interpreter: `import kestrel` imports neither, and where one is missing its
    # module says which extra to install.
    import subprocess
    import sys

    code = ("import sys, kestrel, kestrel.vector, kestrel.evo; "
            "print(sorted(m for m in ('jax', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr
    for mod in ("jax", "torch"):
        try:
            __import__(mod)
        except ModuleNotFoundError:
            import importlib

            import pytest

            with pytest.raises(ModuleNotFoundError, match=f'kestrel\\[{mod}\\]'):
                importlib.import_module(f"kestrel.{mod}")


def test_a_missing_input_skips_or_under_kestrel_require_data_fails(monkeypatch):
    """`conftest.require`, what every data- or binary-gated test calls: a skip, except where
    `.ci/run` sets KESTREL_REQUIRE_DATA=1, where it is a failure."""
    import pytest
    from conftest import require

    require(True, "never said")
    monkeypatch.delenv("KESTREL_REQUIRE_DATA", raising=False)
    with pytest.raises(pytest.skip.Exception, match="x is absent"):
        require(False, "x is absent")
    monkeypatch.setenv("KESTREL_REQUIRE_DATA", "1")
    with pytest.raises(pytest.fail.Exception, match="KESTREL_REQUIRE_DATA=1 and x is absent"):
        require(False, "x is absent")
