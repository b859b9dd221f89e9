"""Every python block of the README runs as printed, within a minute on 2 cores (issue 57,
item 3), each in a fresh folder. A block whose first line says `# needs the [sb3] extra` runs
with the `sb3`-marked tests (tools/venv-sb3), `[jax] extra` and `[torch] extra` with the
`jax` ones (there too), `[ray] extra` with the `ray` ones
(tools/venv-ray); one whose first line starts `# not run` is skipped, its reason on that line."""
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
BUDGET_S = 60


def readme_blocks():
    text = (ROOT / "README.md").read_text()
    out = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
        line = text.count("\n", 0, m.start()) + 2
        out.append((line, m.group(1)))
    return out


def params():
    for line, code in readme_blocks():
        first = code.splitlines()[0] if code.strip() else ""
        marks = []
        if first.startswith("# not run"):
            marks.append(pytest.mark.skip(reason=f"README line {line}: {first}"))
        elif "[sb3] extra" in first:
            marks.append(pytest.mark.sb3)
        elif "[ray] extra" in first:
            marks.append(pytest.mark.ray)
        elif "[jax] extra" in first or "[torch] extra" in first:
            marks.append(pytest.mark.jax)
        yield pytest.param(line, code, id=f"README-line-{line}", marks=marks)


def test_the_readme_has_its_blocks():
    lines = [line for line, _ in readme_blocks()]
    assert len(lines) >= 4, lines


@pytest.mark.parametrize("line,code", list(params()))
def test_readme_block_runs_within_its_budget(line, code, tmp_path):
    env = {**os.environ, "RAYON_NUM_THREADS": os.environ.get("RAYON_NUM_THREADS", "2"), "MPLBACKEND": "Agg"}
    env.pop("RAY_ADDRESS", None)  # the Ray block starts its own local Ray, as a reader's would
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                         timeout=BUDGET_S * 3, env=env)
    took = time.perf_counter() - t0
    assert out.returncode == 0, f"README line {line}:\n{out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    assert took < BUDGET_S, f"README line {line} took {took:.0f} s (budget {BUDGET_S} s)"
