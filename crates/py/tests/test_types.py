"""Types an IDE and a type checker see: the package ships `py.typed` and a stub of its
compiled module, the stub matches the built module (mypy's `stubtest`), and the examples a
researcher copies type-check under `mypy --strict` against the installed package."""

import os
import pathlib
import subprocess
import sys

import kestrel

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
CACHE = HERE.parents[2] / "target" / "mypy-cache"


def _mypy(*args):
    # Run from the cache folder: stubtest keeps its cache in the working folder.
    CACHE.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MYPY_CACHE_DIR": str(CACHE)}
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, timeout=600, env=env,
                          cwd=CACHE)


def test_the_package_is_typed():
    pkg = pathlib.Path(kestrel.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_kestrel.pyi").exists()


def test_the_stub_matches_the_built_module():
    out = _mypy("mypy.stubtest", "kestrel._kestrel")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_examples_type_check_strictly():
    # examples/torch/ needs torch: test_sb3.py checks it in tools/venv-sb3.
    out = _mypy("mypy", "--strict", "--exclude", "/torch/", str(EXAMPLES))
    assert out.returncode == 0 and "Success" in out.stdout, out.stdout[-4000:] + out.stderr[-2000:]
