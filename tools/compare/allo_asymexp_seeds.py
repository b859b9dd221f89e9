#!/usr/bin/env python3
"""Seed spread of the public reference ALLO (tarod13/asymexp `exp_alcl/allo.py`): its own training,
end to end, for seeds 0..N-1 on the configuration of the golden fixture run
(shared/data/allo-asymexp-golden, README §3 (e)), so that Kestrel's curves can be judged against
the reference's seed-to-seed variation rather than against one seed.

Nothing of the reference is copied here: the tree is extracted at run time into the git-ignored
cache (helpers shared with allo_asymexp.py: cache, mirror, venv, pinning) and its own
`learn_eigenvectors(Args)` is called unchanged, once per seed.

Configuration (the fixture's, only the seed varies): the `small` map (9x8, 34 states; the exact
`map_text` of `configs.C1_small_T50` in {thr,final}_collect.json, written byte for byte to a
temporary file and passed as `env_type='file'`, `env_file=...` -- the 4deb141 parser does not strip,
so no newline is added), `num_envs` 50, `num_steps` 200, `max_episode_length` 200,
`num_gradient_steps` 500, `log_freq` 50 (the script also logs the last step, 499),
`save_model` False, `plot_freq` / `checkpoint_freq` beyond the run (the script still writes its
unconditional last-step checkpoint and metrics file), `results_dir` a temporary folder removed
afterwards. Everything else is the script's default (batch 256, lr 3e-4, sampling discount 0.2 --
`geometric_gamma` at 4deb141, `gamma` at ba956b1 --, d 10, encoder 256 x (3+1), duals -2,
barrier 0.5, no perturbation, threshold off).

Per seed the script's own `metrics_history` is read back from the `metrics_history.json` it
writes into its results folder (the folder `learn_eigenvectors` returns), so every logged key is
kept (`sps`, its throughput field, included). Timings per seed: `wall_s` (the whole
`learn_eigenvectors` call), `collect_s` (its `collect_data_and_compute_eigenvectors`, split into the JAX scan
collection incl. its compilation, the ground truth, and the rest: canonical conversion and buffer
fill), `loop_s` (the gradient-step loop, incl. the logging and the final checkpoint),
`first_update_s` (its first `update_encoder` call: compilation) and `import_s` of the process. By default every seed runs in a fresh process (like separate invocations of the
script: each pays its own compilation); --one-process runs them in one.

Golden check (on by default): seed 42 is run too and its curves compared with the fixture's
`curves_f32_script` ({thr,final}_e2e.json); with the same package versions they agree bit for bit,
which confirms the configuration above is the fixture's. It is not part of the seed statistics.

Output: one JSON file (--out) {"config", "seeds": [{"seed", "curves", "wall_s", ...}],
"versions", "golden_check"} and a Markdown table: mean, sd (n-1), min, max over the seeds of the
main metrics at steps 100, 250 and 499, and of the timings.

Usage (from the repository root; the venv as in allo_asymexp.py):
    taskset -c 0 python3 tools/compare/allo_asymexp_seeds.py [--seeds-e2e 10] [--variant thr|final]
        [--out /tmp/asymexp_seeds.json] [--one-process] [--no-golden-check]
"""
import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile

from allo_asymexp import (ALLO_BLOB, FINAL_ALLO_BLOB, FINAL_TREE, TREE, add_source_args, asymexp_source,
                          checked_blob, cpu_model, import_allo, package_versions, run_worker)
from common import ROOT, commit

GOLDEN = "/work/shared/data/allo-asymexp-golden"
VARIANTS = {  # name -> (tree, allo.py blob, golden file prefix, cosine keys: the script's main target first)
    "thr": (TREE, ALLO_BLOB, "thr", ("cosine_sim_avg",)),
    "final": (FINAL_TREE, FINAL_ALLO_BLOB, "final",
              ("cosine_sim_avg_invweighted", "cosine_sim_avg_simple", "cosine_sim_avg_weighted")),
}
GOLDEN_SEED = 42
# The run's settings besides the map file and the seed; the rest stays at the script's defaults.
OVERRIDES = {"env_type": "file", "num_envs": 50, "num_steps": 200, "max_episode_length": 200,
             "num_gradient_steps": 500, "log_freq": 50, "save_model": False,
             "plot_freq": 10 ** 9, "checkpoint_freq": 10 ** 9, "plot_during_training": False}
# Module-level functions `collect_data_and_compute_eigenvectors` calls for the ground truth
# (4deb141: the first two; ba956b1: all but the first); each is timed when the module has it.
GROUND_TRUTH_FNS = ("get_symmetrized_transition_matrix", "get_transition_matrix", "compute_sampling_distribution",
                    "compute_symmetrized_laplacian", "compute_weighted_symmetrized_laplacian",
                    "compute_inverse_weighted_laplacian", "compute_symmetrized_eigendecomposition")
TABLE_STEPS = (100, 250, 499)
METRICS = ["allo", "graph_loss", "dual_loss", "barrier_loss", "total_error", "approx_eigenvalue_sum", "grad_norm"]


# ----------------------------------------------------------------------------------------------
# Worker: runs inside tools/venv-asymexp (`python allo_asymexp_seeds.py --_seeds-worker CFG`)
# ----------------------------------------------------------------------------------------------

def seeds_worker(cfg):
    import contextlib
    import dataclasses
    import time

    clock = time.perf_counter
    t_import = clock()
    allo = import_allo(cfg["asymexp_src"])
    import jax
    t_import = clock() - t_import
    out = sys.stdout

    phase = {}

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = clock()
            res = fn(*a, **k)
            jax.block_until_ready(res)
            phase[name] = phase.get(name, 0.0) + clock() - t0
            return res
        return wrapper

    def timed_loop(iterable, *a, **k):   # replaces tqdm in the module: no progress bar, loop timed
        t0 = clock()
        yield from iterable
        phase["loop"] = phase.get("loop", 0.0) + clock() - t0

    class JaxInAllo:
        """The real jax, except that jit(update_encoder) records the first call (compilation)."""

        def __getattr__(self, name):
            return getattr(jax, name)

        def jit(self, fun=None, **kw):
            if fun is None:
                return lambda f: self.jit(f, **kw)
            jitted = jax.jit(fun, **kw)
            if getattr(fun, "__name__", "") != "update_encoder":
                return jitted

            def update(*a, **k):
                if "first_update" in phase:
                    return jitted(*a, **k)
                t0 = clock()
                res = jax.block_until_ready(jitted(*a, **k))
                phase["first_update"] = clock() - t0
                return res
            return update

    allo.jax = JaxInAllo()
    allo.collect_data_and_compute_eigenvectors = timed("collect", allo.collect_data_and_compute_eigenvectors)
    allo.collect_transition_counts_and_episodes = timed("scan", allo.collect_transition_counts_and_episodes)
    for name in GROUND_TRUTH_FNS:   # the ground-truth steps `collect_data_and_compute_eigenvectors` calls
        if hasattr(allo, name):
            setattr(allo, name, timed("ground_truth", getattr(allo, name)))
    allo.tqdm = timed_loop

    names = {f.name for f in dataclasses.fields(allo.Args)}
    missing = sorted(set(cfg["overrides"]) - names)
    if missing:
        raise SystemExit(f"the reference's Args has no field(s) {missing}")
    scratch = tempfile.mkdtemp(prefix="asymexp-seeds-")
    try:
        env_file = os.path.join(scratch, "small.txt")
        with open(env_file, "w", newline="") as f:
            f.write(cfg["map_text"])
        for seed in cfg["seeds"]:
            results = os.path.join(scratch, f"results-{seed}")
            args = dataclasses.replace(allo.Args(), **cfg["overrides"], env_file=env_file, seed=seed,
                                       results_dir=results)
            phase.clear()
            t0 = clock()
            with contextlib.redirect_stdout(sys.stderr):
                _, run_dir = allo.learn_eigenvectors(args)
            wall = clock() - t0
            with open(os.path.join(str(run_dir), "metrics_history.json")) as f:
                curves = json.load(f)
            shutil.rmtree(results, ignore_errors=True)
            resolved = {k: v for k, v in dataclasses.asdict(args).items()
                        if k not in ("seed", "results_dir", "env_file")}
            coll = phase.get("collect", 0.0)
            parts = {"scan_collection_incl_compile": phase.get("scan"), "ground_truth": phase.get("ground_truth"),
                     "canonical_conversion_buffer_fill_and_rest":
                         coll - phase.get("scan", 0.0) - phase.get("ground_truth", 0.0)}
            out.write(json.dumps({"seed": seed, "curves": curves, "wall_s": wall,
                                  "collect_s": phase.get("collect"), "collect_parts_s": parts,
                                  "loop_s": phase.get("loop"), "first_update_s": phase.get("first_update"),
                                  "import_s": t_import, "args": resolved}) + "\n")
            out.flush()
            t_import = 0.0   # paid once per process
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out.write(json.dumps({"versions": {**package_versions(), "devices": [str(d) for d in jax.devices()],
                                       "affinity": sorted(os.sched_getaffinity(0)),
                                       "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}}) + "\n")
    out.flush()


# ----------------------------------------------------------------------------------------------
# Driver (stdlib only)
# ----------------------------------------------------------------------------------------------

def golden(prefix, name):
    with open(os.path.join(GOLDEN, f"{prefix}_{name}.json")) as f:
        return json.load(f)


def compare_curves(ours, ref):
    """Max |difference| per key over the steps both logged (the timing field `sps` ignored)."""
    by_step = {m["gradient_step"]: m for m in ours}
    steps = [m["gradient_step"] for m in ref]
    if sorted(by_step) != steps:
        return {"identical": False, "error": f"logged steps {sorted(by_step)} vs fixture {steps}"}
    worst, diff_keys = 0.0, {}
    for r in ref:
        o = by_step[r["gradient_step"]]
        for k, v in r.items():
            if k == "sps":
                continue
            if k not in o:
                diff_keys[k] = "missing"
                continue
            d = abs(o[k] - v) if not (math.isnan(o[k]) and math.isnan(v)) else 0.0
            if d > 0:
                diff_keys[k] = max(diff_keys.get(k, 0.0), d)
            worst = max(worst, d)
    extra = sorted(set(ours[0]) - set(ref[0]) - {"sps"})
    return {"identical": not diff_keys and not extra, "max_abs_diff": worst,
            "keys_differing": diff_keys, "keys_not_in_fixture": extra, "steps": steps}


def stats(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return None
    return {"mean": statistics.fmean(xs), "sd": statistics.stdev(xs) if len(xs) > 1 else 0.0,
            "min": min(xs), "max": max(xs), "n": len(xs)}


def summary(seeds, cos_keys):
    keys = list(cos_keys) + METRICS
    out = {}
    for step in TABLE_STEPS:
        rows = {}
        for k in keys:
            vals = []
            for s in seeds:
                m = next((m for m in s["curves"] if m["gradient_step"] == step), None)
                vals.append(m.get(k) if m else None)
            rows[k] = stats(vals)
        out[str(step)] = rows
    timing = {k: [s.get(k) for s in seeds] for k in ("wall_s", "collect_s", "loop_s", "first_update_s", "import_s")}
    for part in seeds[0].get("collect_parts_s", {}):
        timing["collect: " + part] = [s["collect_parts_s"].get(part) for s in seeds]
    out["timing_s"] = {k: stats(v) for k, v in timing.items()}
    return out


def fmt(x):
    if x is None:
        return "—"
    a = abs(x)
    return f"{x:.4f}" if a < 10 else f"{x:.2f}" if a < 1e4 else f"{x:.4g}"


def print_table(res):
    c = res["config"]
    print(f"\n### asymexp `exp_alcl/allo.py` @ {c['tree'][:7]} ({c['variant']}): {len(res['seeds'])} seeds "
          f"({', '.join(str(s['seed']) for s in res['seeds'])}), small map, {c['overrides']['num_envs']}×"
          f"{c['overrides']['num_steps']} collection, {c['overrides']['num_gradient_steps']} steps\n")
    v = res["versions"]
    print(f"CPU: {c['cpu']} (core 0) · kestrel commit {c['commit']} · Python {v.get('python')}, jax {v.get('jax')}, "
          f"flax {v.get('flax')}, optax {v.get('optax')}, numpy {v.get('numpy')} · "
          f"{'one process' if c['one_process'] else 'one process per seed'}\n")
    print("| step | metric | mean | sd | min | max |")
    print("|---:|---|---:|---:|---:|---:|")
    for step in TABLE_STEPS:
        for k, st in res["summary"][str(step)].items():
            if st:
                print(f"| {step} | {k} | {fmt(st['mean'])} | {fmt(st['sd'])} | {fmt(st['min'])} | {fmt(st['max'])} |")
    print()
    print("| timing (s) | mean | sd | min | max |")
    print("|---|---:|---:|---:|---:|")
    for k, st in res["summary"]["timing_s"].items():
        if st:
            print(f"| {k} | {st['mean']:.2f} | {st['sd']:.2f} | {st['min']:.2f} | {st['max']:.2f} |")
    g = res.get("golden_check")
    if g:
        if g["identical"]:
            verdict = "bit-identical to the fixture"
        else:
            verdict = (f"NOT identical to the fixture: max |Δ| {g.get('max_abs_diff')}, keys "
                       f"{sorted(g.get('keys_differing', {}))[:8]} {g.get('error', '')}")
        print(f"\ngolden check (seed {GOLDEN_SEED} vs {c['golden_prefix']}_e2e.json curves_f32_script, "
              f"steps {g.get('steps')}): {verdict}; wall {g['wall_s']:.1f} s")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--_seeds-worker":
        seeds_worker(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds-e2e", type=int, default=10, metavar="N", help="run seeds 0..N-1 (default 10)")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default="thr",
                    help="thr = tree 4deb141 (default), final = tree ba956b1")
    ap.add_argument("--out", help="JSON output (default /tmp/asymexp_seeds.json; /tmp/asymexp_seeds_final.json "
                                  "for --variant final)")
    ap.add_argument("--one-process", action="store_true", help="all seeds in one worker process")
    ap.add_argument("--no-golden-check", action="store_true", help=f"skip the seed-{GOLDEN_SEED} fixture check")
    ap.add_argument("--asymexp-final-src", help="an existing checkout at ba956b1 (default: the cache)")
    add_source_args(ap)
    a = ap.parse_args()
    if a.seeds_e2e < 1:
        ap.error("--seeds-e2e must be >= 1")
    out = a.out or ("/tmp/asymexp_seeds.json" if a.variant == "thr" else "/tmp/asymexp_seeds_final.json")

    tree, want_blob, prefix, cos_keys = VARIANTS[a.variant]
    cos_key = cos_keys[0]
    src = asymexp_source(a, tree, a.asymexp_final_src if a.variant == "final" else None)
    blob = checked_blob(src, tree, want_blob)
    map_text = golden(prefix, "collect")["configs"]["C1_small_T50"]["config"]["map_text"]
    e2e = None if a.no_golden_check else golden(prefix, "e2e")
    if e2e is not None:
        fc = e2e["config"]
        for k in ("num_envs", "num_steps", "max_episode_length", "num_gradient_steps", "log_freq"):
            if fc.get(k) != OVERRIDES[k]:
                sys.exit(f"fixture config {k}={fc.get(k)} differs from this script's {OVERRIDES[k]}")
        if fc.get("map_text") != map_text:
            sys.exit("the e2e fixture's map differs from C1_small_T50's")

    base = {"asymexp_src": src, "overrides": OVERRIDES, "map_text": map_text}
    seeds = list(range(a.seeds_e2e))
    all_seeds = seeds + ([GOLDEN_SEED] if e2e is not None else [])
    groups = [all_seeds] if a.one_process else [[s] for s in all_seeds]
    results, versions = [], {}
    for g in groups:
        for line in run_worker(a, __file__, "--_seeds-worker", {**base, "seeds": g}):
            if "versions" in line:
                versions = line["versions"]
            else:
                results.append(line)
                print(f"seed {line['seed']}: wall {line['wall_s']:.1f} s (collect {line['collect_s']:.1f} s, "
                      f"loop {line['loop_s']:.1f} s incl. first update {line['first_update_s']:.1f} s, import {line['import_s']:.1f} s); step 499 "
                      f"{cos_key} {line['curves'][-1].get(cos_key)}", file=sys.stderr, flush=True)
    if [r["seed"] for r in results] != all_seeds:
        sys.exit(f"worker returned seeds {[r['seed'] for r in results]}, expected {all_seeds}")
    ours, golden_run = results[:len(seeds)], results[len(seeds):]
    res_args = ours[0].pop("args")
    for r in results:
        r.pop("args", None)
    res = {
        "config": {"variant": a.variant, "tree": tree, "allo_blob": blob, "golden_prefix": prefix,
                   "map_text": map_text, "env_file": "small.txt (temporary copy of map_text)",
                   "overrides": OVERRIDES, "args_resolved": res_args, "seeds": seeds,
                   "one_process": a.one_process, "cpu": cpu_model(), "commit": commit(),
                   "cosine_keys": cos_keys,
                   "notes": "curves = the script's own metrics_history.json (sps = its throughput field); "
                            "loss/aux are evaluated on the parameters before each step's update, the cosine "
                            "metric after it"},
        "seeds": ours,
        "versions": {**versions, "tree": tree, "allo_blob": blob},
        "summary": summary(ours, cos_keys),
    }
    if e2e is not None:
        gr = golden_run[0]
        res["golden_check"] = {**compare_curves(gr["curves"], e2e["curves_f32_script"]), "seed": GOLDEN_SEED,
                               "wall_s": gr["wall_s"], "fixture_versions": e2e["meta"].get("versions")}
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print_table(res)
    print(f"\nJSON: {out}")


if __name__ == "__main__":
    main()
