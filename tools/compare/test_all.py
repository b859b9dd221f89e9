#!/usr/bin/env python3
"""Tests of tools/compare/all.py that need no peer and no build: the table rendered from a small
fixture of saved results (tools/compare/testdata/all/), its row and ratio formatting, the
replacement between the markers, every script and flag `all.py` names, the table in
BENCHMARKS.md against all.py's rows, and every relative link of BENCHMARKS.md and
docs/benchmarks/history/ (files and GitHub heading anchors).

    python3 tools/compare/test_all.py          # or: python3 -m unittest tools/compare/test_all.py

Standard library only.
"""
import ast
import io
import os
import re
import shutil
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import all as A  # noqa: E402

FIXTURE = os.path.join(HERE, "testdata", "all")
DOC = f"""# Doc

Intro.

{A.BEGIN}

Rows as recorded.

| {" | ".join(A.HEADER)} |
|{"---|" * len(A.HEADER)}
| {A.ROWS[0][1]} | old peer | 1 | 2 | 2.0x | Old CPU | `0000000` | [x](#x) |
| {A.ROWS[-1][1]} | kept peer | 3 | 4 | 1.33x | Old CPU | `1111111` | [y](#y) |
{A.END}

Tail.
"""


def slugs(path):
    """The GitHub anchors of a Markdown file's headings (outside code fences), duplicates numbered."""
    seen, out, fence = {}, set(), False
    for line in open(path, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = re.sub(r"[^\w\- ]", "", m.group(2).replace("`", "").lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    for m in re.finditer(r'<a (?:id|name)="([^"]+)"', open(path, encoding="utf-8").read()):
        out.add(m.group(1))
    return out


def links(path):
    """(line number, target) of every inline Markdown link outside code fences and code spans."""
    out, fence = [], False
    for i, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        text = re.sub(r"`[^`]*`", "", line)
        out += [(i, m.group(1)) for m in re.finditer(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)]
    return out


def script_flags(path):
    """The option strings of every `add_argument` call in a script, and in the sibling modules
    of tools/compare/ it imports names from (allo_asymexp_seeds.py takes allo_asymexp's)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    flags = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
            flags |= {a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("-")}
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            sibling = os.path.join(HERE, node.module + ".py")
            if os.path.exists(sibling) and os.path.abspath(sibling) != os.path.abspath(path):
                flags |= script_flags(sibling)
    return flags


class Formatting(unittest.TestCase):
    def test_ratios(self):
        self.assertEqual(A.fx(1.0512), "1.05x")
        self.assertEqual(A.fx(2.345), "2.3x")
        self.assertEqual(A.fx(98.44), "98.4x")
        self.assertEqual(A.fx(39118.2), "39,118x")
        self.assertEqual(A.fx(None), "—")
        self.assertEqual(A.fx(float("nan")), "—")

    def test_figures(self):
        self.assertEqual(A.num(0.3512), "0.35")
        self.assertEqual(A.num(130.7), "130.7")
        self.assertEqual(A.num(27417.2), "27,417")
        self.assertEqual(A.rate(31_630_000), "31.63 M")
        self.assertEqual(A.rate(72_400), "72.4 k")
        self.assertEqual(A.span([3.0, 1.0, 2.0]), "1.00–3.00")


class Render(unittest.TestCase):
    def setUp(self):
        self.fresh, self.launch = A.render(FIXTURE)

    def test_fixture_rows(self):
        f = self.fresh
        self.assertEqual(set(f), {"jax-callback", "jax-numpy", "evosax-all", "evosax-cmaes", "nn-train", "nn-many",
                                  "actdyn-planner", "actdyn-train"})
        self.assertEqual(A.cells_of(f["jax-callback"])[2:5],
                         ["0.35 / 130.7 (`kestrel.jax` FFI in a jitted scan)", "34.8 / 299.2", "99.5x / 2.3x"])
        self.assertEqual(A.cells_of(f["jax-callback"])[1], "`jax.pure_callback` over the numpy step (jax 0.10.2)")
        self.assertEqual(A.cells_of(f["jax-numpy"])[4], "7.2x / 1.91x")
        self.assertEqual(A.cells_of(f["nn-train"])[2:5], ["506.9", "684.6", "1.35x"])
        self.assertEqual(A.cells_of(f["nn-many"])[2:5], ["1,293 / 673.0", "1,522", "1.18x / 2.3x"])
        self.assertEqual(A.cells_of(f["actdyn-planner"])[2:5], ["1.86", "410–480", "220–258x"])
        self.assertEqual(A.cells_of(f["actdyn-train"])[2:5], ["79.0 µs", "12.3 ms", "156x"])
        self.assertEqual(A.cells_of(f["evosax-cmaes"])[2:5], ["13.1 / 146.8", "49.2 / 876.6", "3.8x / 6.0x"])
        all_cells = A.cells_of(f["evosax-all"])
        self.assertEqual(all_cells[2], "faster than the fused form on 3 of 4 (strategy, d) pairs (2 strategies)")
        self.assertEqual(all_cells[3], "faster on ASEBO d=100 (0.70x)")
        self.assertEqual(all_cells[4], "median 3.8x (0.70x–6.0x) / median 22.2x (2.7x–82.5x)")

    def test_row_shape(self):
        for rid, line in self.fresh.items():
            cells = A.cells_of(line)
            self.assertEqual(len(cells), len(A.HEADER), rid)
            spec = dict((r[0], r) for r in A.ROWS)[rid]
            self.assertEqual(cells[0], spec[1])
            self.assertEqual(cells[5], "AMD EPYC 9B45 (fixture)")
            self.assertEqual(cells[6], "`abc1234`")
            self.assertEqual(cells[7], f"[{spec[3]}](#{spec[4]})")

    def test_merge_replaces_between_the_markers_only(self):
        new = A.merge(DOC, self.fresh, self.launch)
        self.assertTrue(new.startswith("# Doc\n\nIntro.\n\n" + A.BEGIN))
        self.assertTrue(new.endswith(A.END + "\n\nTail.\n"))
        body = new.split(A.BEGIN)[1].split(A.END)[0]
        rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| workload |")]
        self.assertEqual([A.cells_of(r)[0] for r in rows], [r[1] for r in A.ROWS])  # every row, in order
        self.assertIn(self.fresh["jax-callback"], rows)   # a fresh row replaces the old one of its workload
        self.assertIn(f"| {A.ROWS[-1][1]} | kept peer | 3 | 4 | 1.33x | Old CPU | `1111111` | [y](#y) |", rows)
        self.assertIn("Rows at `abc1234` were re-run by `python3 tools/compare/all.py --only fixture` on 2026-12-04 "
                      "(AMD EPYC 9B45 (fixture))", body)
        self.assertEqual(A.merge(new, self.fresh, self.launch), new)   # idempotent

    def test_merge_without_fresh_rows_keeps_the_stamp(self):
        new = A.merge(DOC, {}, self.launch)
        self.assertIn("Rows as recorded.", new)
        self.assertNotIn("abc1234", new)

    def test_merge_needs_the_markers(self):
        with self.assertRaises(SystemExit):
            A.merge("no markers", self.fresh, self.launch)

    def test_from_json_writes_the_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = os.path.join(tmp, "B.md")
            with open(doc, "w") as f:
                f.write(DOC)
            saved = os.path.join(tmp, "saved")
            shutil.copytree(FIXTURE, saved)
            with redirect_stdout(io.StringIO()):
                rc = A.main(["--from-json", saved, "--benchmarks", doc, "--write"])
            self.assertEqual(rc, 0)
            text = open(doc).read()
            self.assertIn(self.fresh["nn-train"], text)
            self.assertTrue(os.path.exists(os.path.join(saved, "table.md")))
            # The fixture is a quick launch: without --write the document stays as it was.
            with open(doc, "w") as f:
                f.write(DOC)
            with redirect_stdout(io.StringIO()):
                A.main(["--from-json", saved, "--benchmarks", doc])
            self.assertEqual(open(doc).read(), DOC)


class Commands(unittest.TestCase):
    def test_every_script_and_flag_exists(self):
        checked = 0
        for c in A.COMPARISONS:
            for form in (c.full, c.quick or []):
                for step in form:
                    argv = step["argv"]
                    scripts = [t for t in argv if t.startswith("tools/") and not t.startswith("tools/venv-")]
                    if not scripts:
                        continue  # cargo and the kestrel binary
                    script = scripts[0]
                    path = os.path.join(ROOT, script)
                    self.assertTrue(os.path.isfile(path), f"{c.name}: {script} does not exist")
                    known = script_flags(path)
                    for t in argv[argv.index(script) + 1:]:
                        if t.startswith("--"):
                            self.assertIn(t.split("=", 1)[0], known, f"{c.name}: {script} has no {t}")
                    checked += 1
        self.assertGreater(checked, 30)

    def test_every_row_is_filled_or_kept(self):
        ids = [r[0] for r in A.ROWS]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(len({r[1] for r in A.ROWS}), len(A.ROWS), "workload cells are the rows' keys")
        for c in A.COMPARISONS:
            self.assertIn(c.name, A.RENDER)
            for rid in c.rows:
                self.assertIn(rid, ids, c.name)
        self.assertEqual(A.KEPT, ["ppo-cartpole-gym"])

    def test_every_comparison_script_is_known(self):
        named = {os.path.basename(t) for c in A.COMPARISONS for s in c.full + (c.quick or []) for t in s["argv"]
                 if t.startswith("tools/compare/")}
        for f in os.listdir(HERE):
            if f.endswith(".py"):
                self.assertTrue(f in named or f in A.NOT_RUN, f"{f}: neither run by all.py nor in NOT_RUN")

    def test_list_and_dry_run(self):
        for argv in (["--list"], ["--dry-run"], ["--dry-run", "--quick"], ["--dry-run", "--only", "nn,allo"]):
            buf = io.StringIO()
            with redirect_stdout(buf):
                self.assertEqual(A.main(argv), 0)
            self.assertIn("nn.py", buf.getvalue())
        with self.assertRaises(SystemExit):
            A.main(["--dry-run", "--only", "nope"])


class Benchmarks(unittest.TestCase):
    def test_the_table_has_every_row(self):
        text = open(A.BENCHMARKS, encoding="utf-8").read()
        self.assertEqual(text.count(A.BEGIN), 1)
        self.assertEqual(text.count(A.END), 1)
        body = text.split(A.BEGIN)[1].split(A.END)[0]
        rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| workload |")]
        self.assertEqual([A.cells_of(r)[0] for r in rows], [r[1] for r in A.ROWS])
        for r in rows:
            self.assertEqual(len(A.cells_of(r)), len(A.HEADER), r)
        self.assertEqual(A.merge(text, {}, {}), text)   # re-rendering nothing changes nothing

    def test_links_resolve(self):
        pages = [A.BENCHMARKS] + [os.path.join(ROOT, "docs", "benchmarks", "history", f)
                                  for f in sorted(os.listdir(os.path.join(ROOT, "docs", "benchmarks", "history")))
                                  if f.endswith(".md")]
        checked = 0
        for page in pages:
            for line, target in links(page):
                if re.match(r"^[a-z]+:", target):
                    continue
                file, _, anchor = target.partition("#")
                path = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
                self.assertTrue(os.path.exists(path), f"{os.path.relpath(page, ROOT)}:{line}: {target}: no such file")
                if anchor:
                    self.assertIn(anchor, slugs(path), f"{os.path.relpath(page, ROOT)}:{line}: {target}: no such heading")
                checked += 1
        self.assertGreater(checked, 60)


if __name__ == "__main__":
    unittest.main()
