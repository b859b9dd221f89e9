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
