#!/usr/bin/env python3
"""Kestrel against itself across a change: runs the `bench` commands whose code a refactor
moved with two `kestrel` binaries, alternating them (A, B, A, B, ...) in one launch so machine
drift hits both alike, and prints each figure's median over the repeats and the ratio B/A
(time-like figures: above 1 means B is slower). Prints Markdown for BENCHMARKS.md.

Usage (from the repository root, after building both binaries):
    python3 tools/compare/before_after.py OLD_BINARY NEW_BINARY [--repeats 5] [--cases MLP,IQN]
"""
import argparse
import json
import statistics
import subprocess

# (label, argv, JSON field, "time" or "rate"); each command prints one JSON object per line.
CASES = [
    ("CMA-ES generation, pop 64, d=10 (µs)", ["evo", "bench", "--num-dims", "10", "--json"], "gen_us", "time"),
    ("CMA-ES generation, pop 64, d=100 (µs)", ["evo", "bench", "--num-dims", "100", "--json"], "gen_us", "time"),
    ("Sep-CMA-ES generation, pop 64, d=100 (µs)", ["evo", "bench", "--strategy", "sep-cma-es", "--num-dims", "100", "--json"], "gen_us", "time"),
    ("MPPI command, pendulum K=1000 T=20, 1 thread (µs)", ["mppi", "bench", "--threads", "1", "--json"], "us_per_command", "time"),
    ("MPPI command, pendulum K=1000 T=20, 2 threads (µs)", ["mppi", "bench", "--threads", "2", "--json"], "us_per_command", "time"),
    ("MPPI tuning, basic, pop 16, per candidate episode (µs)", ["mppi", "bench", "--tune-pop", "16", "--tune-generations", "50", "--json"], "us_per_candidate_episode", "time"),
    ("ARC 30x30 o2arc, 1024 envs, 2 threads (steps/s)", ["arc", "bench", "--num-envs", "1024", "--no-ops", "--seconds", "1", "--json"], "batches", "rate"),
    ("ARC 10x10 jaxarc, lane kernel, 1024 envs, 2 threads (steps/s)", ["arc", "bench", "--mode", "jaxarc", "--canvas", "10", "--kernel", "lanes", "--num-envs", "1024", "--no-ops", "--seconds", "1", "--json"], "batches", "rate"),
    ("ARC 10x10 jaxarc, lane kernel, 64 envs, 2 threads (steps/s)", ["arc", "bench", "--mode", "jaxarc", "--canvas", "10", "--kernel", "lanes", "--num-envs", "64", "--no-ops", "--seconds", "1", "--json"], "batches", "rate"),
    ("ARC 10x10 jaxarc, VecEnv rows, 1024 envs, 2 threads (steps/s)", ["arc", "bench", "--mode", "jaxarc", "--canvas", "10", "--kernel", "rows", "--num-envs", "1024", "--no-ops", "--seconds", "1", "--json"], "batches", "rate"),
    ("ALLO step, rooms-2-5, batch 1024 (µs)", ["allo", "bench", "--steps", "50", "--json"], "step_dedup_us", "time"),
    ("IQN update, treasure hunt (µs)", ["hunt", "bench", "--reps", "60", "--json"], "iqn_update_us", "time"),
    ("IQN update's matrix products alone (µs)", ["hunt", "bench", "--reps", "60", "--json"], "gemm_only_us", "time"),
    ("IQN greedy action, batch 1 (µs)", ["hunt", "bench", "--reps", "60", "--json"], "act_us", "time"),
    ("ALLO asymexp update, four-rooms, median of 2,000 steps (ms)", ["allo", "bench", "--profile", "asymexp", "--map", "builtin:four-rooms", "--steps", "2000", "--json"], "update_ms", "time"),
    ("ALLO asymexp sampling, two batches of 256 (ms)", ["allo", "bench", "--profile", "asymexp", "--map", "builtin:four-rooms", "--steps", "2000", "--json"], "sample_ms", "time"),
    ("Neuroevolution generation, CartPole MLP, pop 256, 1 thread (ms)", ["evo", "bench", "--neuro", "--pop-size", "256", "--json"], "neuro_ms_1_thread", "time"),
    ("ALLO plain step, 4 x 1024 rows (µs)", ["allo", "bench", "--steps", "30", "--json"], "step_plain_us", "time"),
    ("MLP train step 64-256-256-16, batch 256, 1 thread (µs)", ["nn", "bench", "--threads", "1", "--seconds", "1", "--json"], "train_us", "time"),
    ("MLP 8 models x batch 64, one step each, 1 thread (µs)", ["nn", "bench", "--threads", "1", "--seconds", "1", "--json"], "train_many_us", "time"),
    ("MLP forward, batch 1 (µs)", ["nn", "bench", "--threads", "1", "--seconds", "1", "--json"], "forward_b1_us", "time"),
    ("actdyn training step E1, MLP dynamics (ms)", ["actdyn", "bench", "--reps", "50", "--threads", "1", "--json"], "train_mlp_ms", "time"),
    ("actdyn training step E2, RBF dynamics (ms)", ["actdyn", "bench", "--reps", "50", "--threads", "1", "--json"], "train_rbf_ms", "time"),
    ("actdyn planner call E2, 1 thread (ms)", ["actdyn", "bench", "--reps", "50", "--threads", "1", "--json"], "planner_ms", "time"),
    ("actdyn environment step + belief (µs)", ["actdyn", "bench", "--reps", "50", "--threads", "1", "--json"], "env_belief_us", "time"),
]


def figure(binary, argv, field):
    out = subprocess.run([binary] + argv, check=True, capture_output=True, text=True).stdout
    v = json.loads(out.strip().splitlines()[-1])[field]
    return v[0]["steps_per_s"] if field == "batches" else v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cases", default="", help="comma-separated label substrings; only the cases matching one")
    a = ap.parse_args()
    keys = [c.strip() for c in a.cases.split(",") if c.strip()]
    print("| workload | before | after | after/before |")
    print("|---|---:|---:|---:|")
    for label, argv, field, kind in CASES:
        if keys and not any(k in label for k in keys):
            continue
        old, new = [], []
        for _ in range(a.repeats):
            old.append(figure(a.old, argv, field))
            new.append(figure(a.new, argv, field))
        o, n = statistics.median(old), statistics.median(new)
        ratio = n / o if kind == "time" else o / n
        print(f"| {label} | {o:,.1f} | {n:,.1f} | {ratio:.2f}x {'time' if kind == 'time' else 'inverse rate'} |", flush=True)


if __name__ == "__main__":
    main()
