#!/usr/bin/env python3
"""E1 fidelity: Kestrel's faithful-profile distribution over seeds against the reference's
anchors (shared/data/actdyn-golden/e2e_seed{42,7}.json, float64 and the reference's float32).

Usage: python3 tools/compare/actdyn_e1_fidelity.py RUNS/actdyn-compare-random-... [--json PATH]

The folder is the output of
`kestrel actdyn compare --preset e1 --arms random --num-seeds 10 --base.steps 5000`.
Prints a markdown table: each column of the reference's §4.2 table, the four reference values,
Kestrel's median and range over its seeds, and whether every reference value lies inside that
range. Standard library only.
"""
import argparse
import json
import math
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
GOLDEN = HERE.parent.parent.parent / "shared" / "data" / "actdyn-golden"

COLUMNS = [
    # (comparison.json key, reference key, label)
    ("elbo_last100", "elbo_per_T_last100_mean", "ELBO/T, mean of last 100"),
    ("ll_last100", "ll_per_T_per_Ny_last100_mean", "LL/T/N_y"),
    ("kl_last100", "kl_per_T_per_D_last100_mean", "KL/T/D"),
    ("obs_r2_k0", "obs_r2_k0", "obs R² k=0"),
    ("obs_r2_k5", "obs_r2_k5", "obs R² k=5"),
    ("obs_r2_k10", "obs_r2_k10", "obs R² k=10"),
    ("latent_r2_0", "latent_r2_0", "latent R² dim 0"),
    ("latent_r2_1", "latent_r2_1", "latent R² dim 1"),
    ("log10_vf_rel_err", "log10_vf_rel_err", "log10 VF rel. error"),
]


def fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
        return f"{x:.2e}"
    return f"{x:.3f}"


def mann_whitney_p(a, b):
    """Exact two-sided p-value of the Mann-Whitney U statistic of b's ranks among a + b (ties
    counted half), by enumerating every way of choosing len(b) ranks."""
    import itertools
    pooled = sorted(a + b)

    def rank(v):
        lo = sum(1 for x in pooled if x < v)
        eq = sum(1 for x in pooled if x == v)
        return lo + (eq + 1) / 2

    ranks = [rank(v) for v in pooled]
    n, m = len(pooled), len(b)
    observed = sum(rank(v) for v in b)
    mean = m * (n + 1) / 2
    dev = abs(observed - mean)
    total = hits = 0
    for combo in itertools.combinations(range(n), m):
        total += 1
        if abs(sum(ranks[i] for i in combo) - mean) >= dev - 1e-9:
            hits += 1
    return hits / total


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("folder", help="the folder of `kestrel actdyn compare --preset e1 --arms random ...`")
    ap.add_argument("--json", help="also write the table's rows here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    comp = json.loads((pathlib.Path(a.folder) / "comparison.json").read_text())
    refs = []
    for seed in (42, 7):
        path = GOLDEN / f"e2e_seed{seed}.json"
        if not path.is_file():
            sys.exit(f"SKIP: {path} is absent")
        d = json.loads(path.read_text())
        refs.append((f"f64 s{seed}", d["float64"]))
        refs.append((f"f32 s{seed}", d["float32_reference_default"]))
    print("| column | reference (" + ", ".join(r[0] for r in refs) + ") | Kestrel median [min, max] over "
          f"{len(comp['elbo_last100']['random']['values'])} seeds | all reference values inside Kestrel's range | Kestrel's median inside the reference's range | Mann-Whitney p |")
    print("|---|---|---|---|---|---|")
    inside_all = True
    rows = []
    for key, rkey, label in COLUMNS:
        vals = [v for v in comp[key]["random"]["values"] if v is not None and not math.isnan(v)]
        vals.sort()
        lo, hi = vals[0], vals[-1]
        med = comp[key]["random"]["median"]
        rv = [r[1].get(rkey) for r in refs]
        ok = all(v is not None and lo <= v <= hi for v in rv)
        inside_all &= ok
        p = mann_whitney_p(vals, [v for v in rv if v is not None])
        med_in = min(rv) <= med <= max(rv)
        rows.append({"column": label, "reference": rv, "median": med, "min": lo, "max": hi,
                     "inside": sum(v is not None and lo <= v <= hi for v in rv), "median_inside": med_in, "p": p})
        print(f"| {label} | {', '.join(fmt(v) for v in rv)} | {fmt(med)} [{fmt(lo)}, {fmt(hi)}] | "
              f"{'yes' if ok else 'no'} | {'yes' if med_in else 'no'} | {p:.2f} |")
    print()
    print("every reference value inside Kestrel's range:", "yes" if inside_all else "no")
    if a.json:
        out = pathlib.Path(a.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"seeds": len(comp["elbo_last100"]["random"]["values"]), "rows": rows,
                                   "all_inside": inside_all}, indent=1))


if __name__ == "__main__":
    main()
