"""`python -m kestrel.dist sweep SPEC [--out-dir D] [--address A] [--threads N] [--engine ray|local]`:
the Ray engine behind `kestrel sweep --engine ray`."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m kestrel.dist")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="run a sweep spec (kestrel sweep's format) on Ray")
    s.add_argument("spec")
    s.add_argument("--out-dir", default="runs/sweeps")
    s.add_argument("--address", default=None, help="Ray cluster address (default: a local Ray instance)")
    s.add_argument("--threads", type=int, default=1, help="CPUs (and Kestrel threads) per run")
    s.add_argument("--engine", choices=["ray", "local"], default="ray")
    s.add_argument("--max-retries", type=int, default=3)
    a = ap.parse_args(argv)
    from . import sweep

    def progress(done, total, cell, outcome):
        print(f"[{done}/{total}] {cell}: {outcome}", flush=True)

    try:
        r = sweep(a.spec, out_dir=a.out_dir, engine=a.engine, threads=a.threads, address=a.address,
                  max_retries=a.max_retries, progress=progress)
    except (ValueError, RuntimeError, ImportError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(r.markdown, end="")
    print(f"sweep folder {r.dir} (table.md, table.csv, table.json, curves.png)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
