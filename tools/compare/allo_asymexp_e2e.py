#!/usr/bin/env python3
"""The asymexp fixture's end-to-end run in distribution: Kestrel's `allo asymexp` and the
reference `exp_alcl/allo.py`, each over the same seeds, on the fixture's configuration
(../shared/data/allo-asymexp-golden/README.md §3 (e): the `small` map, 50 environments × 200
steps, 500 gradient steps, the script's defaults otherwise). The seeds draw different data,
initialisations and batches in each (JAX threefry and numpy there, Kestrel's keys here), so the
two are compared as distributions: mean, sd, min and max of each logged number at reference
steps 100, 250 and 499 (Kestrel's step g + 1: the reference counts steps from 0), and the
difference of the means in units of their standard error.

    python3 tools/compare/allo_asymexp_seeds.py --seeds-e2e 10 --out /tmp/asymexp_seeds.json
    python3 tools/compare/allo_asymexp_e2e.py --reference /tmp/asymexp_seeds.json

Stdlib only; builds target/release/kestrel if missing.
"""
import argparse
import json
import math
import statistics as st
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEYS = ["cosine_sim_avg", "allo", "graph_loss", "dual_loss", "barrier_loss", "total_error",
        "approx_eigenvalue_sum", "grad_norm"]
STEPS = [100, 250, 499]


def kestrel_runs(exe, ref, seeds, out):
    cfg = ref["config"]
    a = cfg["args_resolved"]
    version = "thresholded" if cfg["variant"] == "thr" else "final"
    map_file = out / "small.txt"
    map_file.write_text(cfg["map_text"])
    runs = []
    for seed in seeds:
        cmd = [exe, "allo", "asymexp", "--map", str(map_file), "--seed", str(seed),
               "--steps", str(a["num_gradient_steps"]), "--out-dir", str(out),
               "--set", f"num_samples={a['num_envs'] * a['num_steps']}",
               "--set", f"num_envs={a['num_envs']}",
               "--set", f"max_episode_length={a['max_episode_length']}",
               "--set", f"learner.version=\"{version}\"",
               "--set", "log_every=1", "--set", "eval_every=1", "--set", "checkpoint_every=0"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"kestrel failed for seed {seed}: {r.stderr.strip()[-2000:]}")
        folder = Path(r.stdout.strip().split("run folder ")[-1])
        lines = [json.loads(l) for l in (folder / "metrics.jsonl").read_text().splitlines()]
        by_step = {l["global_step"]: l for l in lines}
        curves = []
        for g in STEPS:
            l = by_step[g + 1]
            row = {k: l[k] for k in KEYS if k in l}
            row["cosine_sim_avg"] = l["cosine_similarity"]
            curves.append(row)
        runs.append(curves)
    return runs


def summary(values):
    return (st.mean(values), st.stdev(values) if len(values) > 1 else 0.0, min(values), max(values))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="the JSON of allo_asymexp_seeds.py --seeds-e2e")
    ap.add_argument("--seeds", type=int, help="Kestrel seeds (default: as many as the reference's)")
    ap.add_argument("--kestrel", default=str(ROOT / "target" / "release" / "kestrel"))
    ap.add_argument("--json", help="also write the table's rows here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    ref = json.loads(Path(a.reference).read_text())
    if not Path(a.kestrel).exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
    seeds = list(range(a.seeds or len(ref["seeds"])))
    with tempfile.TemporaryDirectory() as tmp:
        ours = kestrel_runs(a.kestrel, ref, seeds, Path(tmp))
    suffix = "" if ref["config"]["variant"] == "thr" else "_invweighted"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    print(f"asymexp e2e configuration ({ref['config']['variant']}), reference {len(ref['seeds'])} seeds, "
          f"Kestrel {len(seeds)} seeds, commit {commit}\n")
    print("| step | quantity | reference mean (sd) [min, max] | Kestrel mean (sd) [min, max] | difference / SE |")
    print("|---:|---|---|---|---:|")
    rows = []
    for i, g in enumerate(STEPS):
        for k in KEYS:
            rk = k + suffix if k == "cosine_sim_avg" else k
            rv = [next(c for c in s["curves"] if c["gradient_step"] == g)[rk] for s in ref["seeds"]]
            kv = [run[i][k] for run in ours if k in run[i]]
            if not kv:
                continue
            (rm, rs, rlo, rhi), (km, ks, klo, khi) = summary(rv), summary(kv)
            se = math.sqrt(rs ** 2 / len(rv) + ks ** 2 / len(kv)) or float("nan")
            rows.append({"step": g, "quantity": k, "reference": [rm, rs, rlo, rhi], "kestrel": [km, ks, klo, khi],
                         "diff_se": (km - rm) / se})
            print(f"| {g} | {k} | {rm:.4g} ({rs:.3g}) [{rlo:.4g}, {rhi:.4g}] | {km:.4g} ({ks:.3g}) "
                  f"[{klo:.4g}, {khi:.4g}] | {(km - rm) / se:+.2f} |")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps({"commit": commit, "variant": ref["config"]["variant"],
                                            "reference_seeds": len(ref["seeds"]), "kestrel_seeds": len(seeds),
                                            "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
