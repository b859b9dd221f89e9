#!/usr/bin/env python3
"""Reproduction of the ALLO paper's Table 1 ((x, y) input, average cosine similarity) with
Kestrel: all 12 paper maps, the paper's hyper-parameters (`kestrel allo train` defaults:
d 11, encoder 2-256-256-256-11, batch 1024, Adam 1e-3, discount 0.9, b₀ 0.5, barrier rate
0.01, dual rate 1e-4, 3,000,000 transition samples as `exp2.sh`), N steps and S seeds per map (default
20,000 and 3; the paper trains 200,000 steps with 60 seeds). Runs two trainings at a time
(one thread each) and prints a Markdown table next to the paper's numbers.

Usage (from the repository root; needs ../shared/data/laplacian-grids):
    python3 tools/compare/allo_repro.py [--steps 20000] [--seeds 3] [--jobs 2] [--maps GridRoom-4,...]
"""
import argparse
import concurrent.futures as cf
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAPS = os.path.join(ROOT, "..", "shared", "data", "laplacian-grids")
# Table 1 of Gomez, Bowling, Machado (ICLR 2024): ALLO mean (sd) over 60 seeds.
PAPER = {
    "GridMaze-7": (0.9996, 0.0002), "GridMaze-9": (0.9989, 0.0007), "GridMaze-17": (0.9994, 0.0002),
    "GridMaze-19": (0.9989, 0.0006), "GridMaze-26": (0.9984, 0.0007), "GridMaze-32": (0.9908, 0.0161),
    "GridRoom-1": (0.9912, 0.0003), "GridRoom-4": (0.9965, 0.0052), "GridRoom-16": (0.9990, 0.0004),
    "GridRoom-32": (0.9982, 0.0010), "GridRoom-64": (0.9917, 0.0059), "GridRoomSym-4": (0.8411, 0.0742),
}


def run(name, seed, steps, out):
    p = subprocess.run([os.path.join(ROOT, "target", "release", "kestrel"), "allo", "train", "--map",
                        os.path.join(MAPS, f"{name}.txt"), "--steps", str(steps), "--seed", str(seed),
                        "--eval-every", str(steps), "--out-dir", out], capture_output=True, text=True, check=True)
    m = re.search(r"average cosine similarity ([0-9.]+) after \d+ steps \(([0-9.]+) ms/step\)", p.stdout)
    return name, seed, float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--maps", default=",".join(PAPER))
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    names = a.maps.split(",")
    results = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as out, cf.ThreadPoolExecutor(a.jobs) as ex:
        futs = [ex.submit(run, n, s, a.steps, out) for n in names for s in range(a.seeds)]
        for f in cf.as_completed(futs):
            n, s, cos, ms = f.result()
            results[n].append((cos, ms))
    print(f"### ALLO reproduction, {a.steps:,} steps, {a.seeds} seeds per map — commit {commit}\n")
    print("| map | Kestrel mean (sd) | min | paper Table 1 (200,000 steps, 60 seeds) | difference | ms/step |")
    print("|---|---:|---:|---:|---:|---:|")
    for n in names:
        cs = [c for c, _ in results[n]]
        sd = statistics.stdev(cs) if len(cs) > 1 else 0.0
        pm, psd = PAPER.get(n, (float("nan"), float("nan")))
        ms = statistics.mean(m for _, m in results[n])
        print(f"| {n} | {statistics.mean(cs):.4f} ({sd:.4f}) | {min(cs):.4f} | {pm:.4f} ({psd:.4f}) | {statistics.mean(cs) - pm:+.4f} | {ms:.2f} |")


if __name__ == "__main__":
    main()
