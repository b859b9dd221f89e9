"""The documentation site builds with warnings as errors, and every python block on its pages
runs (tools/docs-check.py: each page's blocks in order, in a fresh folder)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_the_site_builds_strictly():
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet"], cwd=ROOT / "crates" / "py",
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert (ROOT / "target" / "py-docs" / "api" / "index.html").exists()


def test_every_code_block_on_the_pages_runs():
    env = {**os.environ, "RAYON_NUM_THREADS": os.environ.get("RAYON_NUM_THREADS", "2")}
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "docs-check.py")], capture_output=True, text=True,
                         timeout=600, env=env)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]


def test_the_api_page_lists_every_public_class_and_function():
    """Issue 57: every public class and function of the package's modules has its entry on the
    API page (evosax-spelled aliases are the entries they alias), and a docstring."""
    import importlib
    import inspect
    import re

    api = (ROOT / "crates" / "py" / "docs" / "api.md").read_text()
    listed = set(re.findall(r"^::: (\S+)", api, re.M))
    mods = ["kestrel", "kestrel.envs", "kestrel.vector", "kestrel.evo", "kestrel.mppi", "kestrel.allo", "kestrel.hunt",
            "kestrel.actdyn", "kestrel.loggers", "kestrel.ribs.archives", "kestrel.ribs.emitters",
            "kestrel.ribs.schedulers", "kestrel.ribs.visualize", "kestrel.dist"]
    missing, undocumented = [], []
    for name in mods:
        mod = importlib.import_module(name)
        for n, o in vars(mod).items():
            if n.startswith("_") or not (inspect.isclass(o) or inspect.isfunction(o)):
                continue
            if getattr(o, "__module__", None) != name or o.__name__ != n:
                continue  # imported from elsewhere, or an alias
            if f"{name}.{n}" not in listed and name not in listed:
                missing.append(f"{name}.{n}")
            if not (o.__doc__ or "").strip():
                undocumented.append(f"{name}.{n}")
    assert not missing, f"not on docs/api.md: {missing}"
    assert not undocumented, f"no docstring: {undocumented}"
