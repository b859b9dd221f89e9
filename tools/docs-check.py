#!/usr/bin/env python3
"""Runs the Python examples of the Python package's documentation (crates/py/docs/*.md).

    tools/venv-py/bin/python tools/docs-check.py            # every page
    tools/venv-py/bin/python tools/docs-check.py envs es    # some pages (by name)
    tools/venv-py/bin/python tools/docs-check.py -v         # also print each block's output

The interpreter that runs this script runs the examples, so it must have `kestrel` installed
(with numpy, gymnasium and pandas). For each page, the ```python blocks run in order in one
namespace (a later block may use an earlier block's names), inside a fresh temporary working
folder, so run folders and files land there and vanish afterwards. A block whose first line
starts with `# not run` is skipped (the Ray page's, for instance). Tracebacks point at the
page's own lines. On the first failure the page, the block, its first lines, its output and
the traceback are printed and the exit code is 1, as for a block that takes over a minute
(`BLOCK_BUDGET_S`); otherwise each page's count of blocks run.

Standard library only.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "crates" / "py" / "docs"
OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*python\b")
SKIP = "# not run"
# Each block runs within a minute on 2 cores (issue 57: the docs' blocks teach, they do not
# make a newcomer wait); a block over it fails the check.
BLOCK_BUDGET_S = 60


class Block:
    def __init__(self, number: int, line: int, code: str):
        self.number, self.line, self.code = number, line, code  # line: 1-based, first code line

    @property
    def skipped(self) -> bool:
        first = next((l for l in self.code.splitlines() if l.strip()), "")
        return first.lstrip().startswith(SKIP)

    def head(self, n: int = 4) -> str:
        lines = self.code.splitlines()
        more = f"\n    ... ({len(lines) - n} more lines)" if len(lines) > n else ""
        return "\n".join(f"    {l}" for l in lines[:n]) + more


def blocks(page: Path) -> list[Block]:
    """The page's ```python blocks in order (fences may be indented, e.g. inside a list)."""
    out, lines, i = [], page.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence = m["indent"], m["fence"]
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        start, body = i + 2, []
        i += 1
        while i < len(lines) and not close.match(lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i >= len(lines):
            raise SystemExit(f"{page}: the python block opened at line {start - 1} is never closed")
        out.append(Block(len(out) + 1, start, "\n".join(body) + "\n"))
        i += 1
    return out


def run_page(page: Path, verbose: bool) -> tuple[int, int, float, float] | None:
    """Runs a page's blocks; (ran, skipped, wall s, cpu s), or None after printing a failure."""
    bl = blocks(page)
    rel = page.relative_to(ROOT)
    ns: dict = {"__name__": "__main__", "__file__": str(page)}
    ran = skipped = 0
    here = os.getcwd()
    t0, c0 = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory(prefix=f"docs-{page.stem}-") as tmp:
        os.chdir(tmp)
        try:
            for b in bl:
                if b.skipped:
                    skipped += 1
                    continue
                # Blank lines in front, so that line numbers in tracebacks are the page's own.
                source = "\n" * (b.line - 1) + b.code
                t_block = time.perf_counter()
                out = io.StringIO()
                try:
                    code = compile(source, str(page), "exec")
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                        exec(code, ns)
                except (Exception, SystemExit) as e:  # noqa: BLE001 - reported, then the check fails
                    print(f"FAILED: {rel}, python block {b.number} of {len(bl)} (line {b.line}):")
                    print(b.head())
                    text = out.getvalue()
                    if text.strip():
                        print("  its output:")
                        print("\n".join(f"    {l}" for l in text.rstrip().splitlines()[-20:]))
                    print("  traceback:")
                    frames = e.__traceback__
                    while frames is not None and frames.tb_frame.f_code.co_filename == __file__:
                        frames = frames.tb_next  # this script's own frames say nothing
                    tb = "".join(traceback.format_exception(type(e), e, frames))
                    print("\n".join(f"    {l}" for l in tb.rstrip().splitlines()))
                    return None
                ran += 1
                took = time.perf_counter() - t_block
                if took > BLOCK_BUDGET_S:
                    print(f"FAILED: {rel}, python block {b.number} of {len(bl)} (line {b.line}) took "
                          f"{took:.0f} s, over the {BLOCK_BUDGET_S} s a page's block may take on 2 cores:")
                    print(b.head())
                    return None
                if verbose and out.getvalue().strip():
                    print(f"--- {rel}, block {b.number} (line {b.line}):")
                    print(out.getvalue().rstrip())
        finally:
            os.chdir(here)
    return ran, skipped, time.perf_counter() - t0, time.process_time() - c0


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    names = [a for a in argv if a != "-v"]
    if any(a.startswith("-") for a in names):
        print(__doc__.strip().split("\n\n")[1])
        return 0 if set(names) <= {"-h", "--help"} else 2
    pages = sorted(DOCS.glob("*.md"))
    if names:
        wanted = {n.removesuffix(".md") for n in names}
        missing = wanted - {p.stem for p in pages}
        if missing:
            print(f"docs-check: no page {', '.join(sorted(missing))} in {DOCS.relative_to(ROOT)}")
            return 2
        pages = [p for p in pages if p.stem in wanted]
    if not pages:
        print(f"docs-check: no pages in {DOCS}")
        return 2
    print(f"docs-check: {len(pages)} pages with {sys.executable}")
    results = []
    for page in pages:
        r = run_page(page, verbose)
        if r is None:
            return 1
        results.append((page, *r))
    total = 0
    for page, ran, skipped, wall, cpu in results:
        note = f", {skipped} marked not run" if skipped else ""
        print(f"  {page.relative_to(ROOT)}: {ran} blocks ran{note} ({wall:.1f} s, {cpu:.1f} s CPU)")
        total += ran
    print(f"docs-check: ok, {total} blocks ran on {len(results)} pages")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
