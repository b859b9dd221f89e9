#!/usr/bin/env python3
"""Side-by-side timing: ALLO as the public reference tarod13/asymexp writes it
(`exp_alcl/allo.py`, JAX + Flax, tree 4deb141678f0 = the "thresholded" version) against
Kestrel, same map and sizes, one core each.

Nothing of the reference is copied here. Its source is extracted at run time from the git
mirror into a git-ignored cache (tools/.cache/asymexp-4deb141, made if missing), or taken from
an existing checkout given with --asymexp-src, and imported unchanged inside the peer venv.

What runs on the reference side
-------------------------------
`learn_eigenvectors(args)` itself, with the reference's own `Args` (defaults: env room4,
1000 envs x 1000 steps collection, max_episode_length 1000, batch 256, geometric_gamma 0.2,
d = 10, hidden 256, num_hidden_layers 3, lr 3e-4, seed 42), only `num_gradient_steps` (warm-up
+ timed steps + 1) and `results_dir` (a temporary folder, deleted afterwards) changed. So the
environment, the data collection, the replay buffer, the ground truth, the encoder, the
TrainState, the masked optax chain and the jitted `update_encoder` are all built by the
reference's code, the way a normal run builds them.

Why this way: `update_encoder` is a closure defined inside `learn_eigenvectors` (it reads
`encoder` and `args` from that scope), so it cannot be imported, and re-creating it from the
source text is ruled out. Instead, a few names in the *allo module's namespace only* are
replaced by thin timing wrappers before the call (no file of the reference is edited, nothing
changes what it computes):

  * `jax` -> a proxy that forwards every attribute to the real jax, except that `jit` of a
    function named `update_encoder` returns the real jitted function wrapped in a timer
    (call + `jax.block_until_ready` on everything it returns; the loop's own
    `block_until_ready(encoder_state.params)` right after is then a no-op);
  * `EpisodicReplayBuffer` -> a subclass whose `sample` records its entry time;
  * `tqdm` -> a generator over the same range that records the start of each loop iteration
    (and so also removes the progress bar), and, when the loop ends, copies the loop's own
    `timing_samples` from the caller's frame as a cross-check;
  * `collect_data_and_compute_eigenvectors`, `collect_transition_counts_and_episodes`,
    `get_symmetrized_transition_matrix`, `compute_symmetrized_eigendecomposition` -> the
    same functions with a wall-clock timer (and `block_until_ready` on their result).

Per step i of the loop (warm-up steps and the last step, which saves a checkpoint, excluded):

  * sample   = entry of update_encoder - entry of the step's first `replay_buffer.sample`:
               two `sample(256, discount=0.2)` calls, three `jnp.array`, three coordinate
               gathers (the same span the loop's own `sample_time` covers); the JSON line
               also splits it into the two numpy `sample` calls and the JAX remainder;
  * update   = the jitted `update_encoder` call until its outputs are ready;
  * step     = sample + update;
  * loop_iteration = one whole iteration of the reference loop (adds its logging every
               `log_freq` = 100 steps, the metrics dump at step 1000 and its bookkeeping;
               median and mean).

Plus `collect`: wall time of `collect_data_and_compute_eigenvectors` (JAX scan collection
including its compilation, conversion of the episodes to canonical indices and the buffer
fill, ground-truth eigendecomposition), with those three parts.

Process: the venv's python, pinned to core 0 (`taskset -c 0`), XLA/BLAS/OpenMP single-thread
flags (common.ONE_THREAD), JAX_PLATFORMS=cpu. The reference's own prints go to stderr.

Output: JSON lines on stdout (`{"side": "asymexp", "workload": ..., "median": ..., ...}`, a
`meta` line, and the Kestrel line when run), then a Markdown table.

Kestrel side: `kestrel_side(args)` runs --kestrel-cmd (a shell string, pinned to core 0 with
the same thread variables; empty = skipped) and takes the last stdout line that is a JSON
object with any of the keys sample_ms, update_ms, step_ms, loop_iteration_ms, collect_s
(and optionally steps = the number of steps timed).

Venv (once; from the repository root):
    python3 -m venv tools/venv-asymexp && tools/venv-asymexp/bin/pip install -r tools/compare/asymexp-requirements.txt

Usage (from the repository root):
    python3 tools/compare/allo_asymexp.py [--steps 2000] [--warmup 50]
        [--asymexp-src DIR] [--kestrel-cmd '...'] [--verbose]

The reference's seed spread on the golden fixture run (its own training end to end, seeds
0..N-1, either tree) is allo_asymexp_seeds.py, which shares the source/venv helpers below.
"""
import argparse
import hashlib
import json
from pathlib import Path
import os
import shutil
import subprocess
import sys
import tempfile

from common import ONE_CORE, ONE_THREAD, ROOT, commit, cpu_model

TREE = "4deb141678f0a7ad750addd2f57d45e952ca880f"
# git blob id of exp_alcl/allo.py at TREE (the thresholded version the golden fixtures use).
ALLO_BLOB = "60ba2cc33f0d7b32f9f77c5fe5e150a88b670ded"
# The golden fixtures' second variant ("final": no threshold, SR Laplacian ground truth).
FINAL_TREE = "ba956b1e3fa486cd2c31899184dd8ea5058a6873"
FINAL_ALLO_BLOB = "a5627d44bd9530cfd492c23fc5c40821fd0c2385"
MIRROR = "/work/.mirror/tarod13+asymexp/repo"


def cache_dir(tree):
    return os.path.join(ROOT, "tools", ".cache", "asymexp-" + tree[:7])


CACHE = cache_dir(TREE)
VENV = os.path.join(ROOT, "tools", "venv-asymexp")
REQUIREMENTS = os.path.join("tools", "compare", "asymexp-requirements.txt")

# (key, description, unit) in table order; the peer and Kestrel report under these keys.
WORKLOADS = [
    ("sample", "sampling: 2 × `sample(256, 0.2)` + coordinate gather, per step", "ms"),
    ("update", "update: one jitted `update_encoder` (until ready), per step", "ms"),
    ("step", "whole step: sampling + update", "ms"),
    ("loop_iteration", "one reference loop iteration (incl. logging every 100 steps)", "ms"),
    ("collect", "data collection + buffer fill + ground truth (one-off)", "s"),
]


# ----------------------------------------------------------------------------------------------
# Peer part: runs inside tools/venv-asymexp (invoked as `python allo_asymexp.py --_peer-worker CFG`)
# ----------------------------------------------------------------------------------------------

def peer_worker(cfg):
    import contextlib
    import dataclasses
    import importlib
    import platform
    import statistics
    import time

    out = sys.stdout

    def emit(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    t_import = time.perf_counter()
    allo = import_allo(cfg["asymexp_src"])
    t_import = time.perf_counter() - t_import
    import jax
    import numpy as np

    clock = time.perf_counter
    rec = {"iter": [], "sample": [], "update": [], "phase": {}}
    own = {}

    class JaxInAllo:
        """The real jax, except that jit(update_encoder) is timed."""

        def __getattr__(self, name):
            return getattr(jax, name)

        def jit(self, fun=None, **kw):
            if fun is None:
                return lambda f: self.jit(f, **kw)
            jitted = jax.jit(fun, **kw)
            if getattr(fun, "__name__", "") != "update_encoder":
                return jitted

            def timed_update(*a, **k):
                t0 = clock()
                res = jitted(*a, **k)
                jax.block_until_ready(res)
                rec["update"].append((t0, clock()))
                return res
            return timed_update

    class TimedBuffer(allo.EpisodicReplayBuffer):
        def sample(self, *a, **k):
            t0 = clock()
            res = super().sample(*a, **k)
            rec["sample"].append((t0, clock()))
            return res

    def timed_loop(iterable, *a, **k):
        for i in iterable:
            rec["iter"].append(clock())
            yield i
        rec["iter"].append(clock())
        caller = sys._getframe(1)
        if caller.f_code.co_name == "learn_eigenvectors":
            ts = caller.f_locals.get("timing_samples") or {}
            own.update({key: list(v) for key, v in ts.items()})

    def timed(name, fn):
        def wrapper(*a, **k):
            t0 = clock()
            res = fn(*a, **k)
            jax.block_until_ready(res)
            rec["phase"][name] = rec["phase"].get(name, 0.0) + clock() - t0
            return res
        return wrapper

    allo.jax = JaxInAllo()
    allo.EpisodicReplayBuffer = TimedBuffer
    allo.tqdm = timed_loop
    for name in ("collect_data_and_compute_eigenvectors", "collect_transition_counts_and_episodes",
                 "get_symmetrized_transition_matrix", "compute_symmetrized_eigendecomposition"):
        setattr(allo, name, timed(name, getattr(allo, name)))

    warmup, steps = cfg["warmup"], cfg["steps"]
    n = warmup + steps + 1
    results = tempfile.mkdtemp(prefix="asymexp-allo-")
    args = dataclasses.replace(allo.Args(), num_gradient_steps=n, results_dir=results, **cfg["overrides"])
    t0 = clock()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            allo.learn_eigenvectors(args)
    finally:
        shutil.rmtree(results, ignore_errors=True)
    t_run = clock() - t0

    it, sm, up = rec["iter"], rec["sample"], rec["update"]
    if not (len(it) == n + 1 and len(sm) == 2 * n and len(up) == n):
        raise SystemExit(f"unexpected call counts: {len(it)} iterations, {len(sm)} sample calls, "
                         f"{len(up)} update_encoder calls for {n} steps")
    win = range(warmup, warmup + steps)
    sample = [1e3 * (up[i][0] - sm[2 * i][0]) for i in win]
    # of which the two numpy `sample` calls; the rest is jnp.array + the three gathers
    buffer = [1e3 * (sm[2 * i][1] - sm[2 * i][0] + sm[2 * i + 1][1] - sm[2 * i + 1][0]) for i in win]
    update = [1e3 * (up[i][1] - up[i][0]) for i in win]
    step = [s + u for s, u in zip(sample, update)]
    loop = [1e3 * (it[i + 1] - it[i]) for i in win]
    med = statistics.median
    common_fields = {"side": "asymexp", "unit": "ms", "n": steps, "warmup": warmup}
    emit({**common_fields, "workload": "sample", "median": med(sample), "p10": _q(sample, .1), "p90": _q(sample, .9),
          "two_sample_calls_median": med(buffer),
          "jnp_array_and_gather_median": med([x - b for x, b in zip(sample, buffer)])})
    emit({**common_fields, "workload": "update", "median": med(update), "p10": _q(update, .1), "p90": _q(update, .9),
          "first_call_ms_incl_compile": 1e3 * (up[0][1] - up[0][0])})
    emit({**common_fields, "workload": "step", "median": med(step), "p10": _q(step, .1), "p90": _q(step, .9)})
    emit({**common_fields, "workload": "loop_iteration", "median": med(loop), "mean": statistics.fmean(loop)})
    ph = rec["phase"]
    total = ph["collect_data_and_compute_eigenvectors"]
    coll = ph["collect_transition_counts_and_episodes"]
    gt = ph["get_symmetrized_transition_matrix"] + ph["compute_symmetrized_eigendecomposition"]
    emit({"side": "asymexp", "workload": "collect", "unit": "s", "median": total, "n": 1,
          "parts_s": {"jax_scan_collection_incl_compile": coll, "ground_truth": gt,
                      "canonical_conversion_buffer_fill_and_rest": total - coll - gt}})
    # The loop's own `timing_samples` (time.time(); last <= 1000 steps; the final step dropped).
    k = max(0, min(len(own.get("sample", [])) - 1, steps))
    if k:
        emit({"side": "asymexp", "workload": "reference_timing_samples", "unit": "ms", "n": k,
              **{f"{key}_median": 1e3 * med(v[-k - 1:-1]) for key, v in own.items()}})
    import flax
    import optax
    emit({"side": "asymexp", "meta": {
        "tree": cfg["tree"], "allo_blob": cfg["allo_blob"], "python": platform.python_version(),
        "jax": jax.__version__, "jaxlib": importlib.import_module("jaxlib").__version__,
        "flax": flax.__version__, "optax": optax.__version__, "numpy": np.__version__,
        "devices": [str(d) for d in jax.devices()], "args": dataclasses.asdict(args),
        "import_s": t_import, "learn_eigenvectors_s": t_run,
        "affinity": sorted(os.sched_getaffinity(0)),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS", "")}})


def import_allo(src):
    """Worker side: the reference's `exp_alcl.allo` module from checkout `src`, unchanged (its
    import-time prints go to stderr; tools/compare is taken off sys.path so that no module of
    ours shadows one of the reference's)."""
    import contextlib
    import importlib
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [src] + [p for p in sys.path if os.path.abspath(p or ".") != here]
    with contextlib.redirect_stdout(sys.stderr):
        return importlib.import_module("exp_alcl.allo")


def package_versions():
    """Worker side: the interpreter and numeric packages the reference ran with."""
    import importlib.metadata
    import platform
    out = {"python": platform.python_version()}
    for name in ("jax", "jaxlib", "flax", "optax", "numpy", "chex", "flashbax"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def _q(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


# ----------------------------------------------------------------------------------------------
# Driver (stdlib only)
# ----------------------------------------------------------------------------------------------

def git_blob(path):
    data = open(path, "rb").read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def extract_tree(tree, mirror):
    """tools/.cache/asymexp-<tree[:7]>: the reference tree, extracted from the git mirror if missing."""
    cache = cache_dir(tree)
    if os.path.isfile(os.path.join(cache, "exp_alcl", "allo.py")):
        return cache
    if not os.path.isdir(mirror):
        sys.exit(f"asymexp source not found: neither {cache} nor the mirror {mirror} exists.\n"
                 f"Pass --asymexp-src DIR (a tarod13/asymexp checkout at {tree}) or --asymexp-mirror GITDIR.")
    os.makedirs(os.path.dirname(cache), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".asymexp-extract-", dir=os.path.dirname(cache))
    try:
        arch = subprocess.Popen(["git", "-C", mirror, "archive", tree], stdout=subprocess.PIPE)
        tar = subprocess.run(["tar", "-x", "-C", tmp], stdin=arch.stdout)
        arch.stdout.close()
        if arch.wait() != 0 or tar.returncode != 0:
            sys.exit(f"extracting {tree[:7]} from {mirror} failed")
        os.rename(tmp, cache)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"extracted asymexp {tree[:7]} into {cache}", file=sys.stderr)
    return cache


def asymexp_source(a, tree=TREE, src=None):
    """The reference checkout: `src` (default --asymexp-src) if given, else the cache for `tree`,
    extracted from --asymexp-mirror if missing."""
    src = a.asymexp_src if src is None and tree == TREE else src
    if src:
        src = os.path.abspath(src)
        if not os.path.isfile(os.path.join(src, "exp_alcl", "allo.py")):
            sys.exit(f"{src}: no exp_alcl/allo.py there (want a tarod13/asymexp checkout at {tree[:7]})")
        return src
    return extract_tree(tree, a.asymexp_mirror)


def checked_blob(src, tree=TREE, want=ALLO_BLOB):
    """git blob id of src/exp_alcl/allo.py; warns when it is not the expected one."""
    blob = git_blob(os.path.join(src, "exp_alcl", "allo.py"))
    if blob != want:
        print(f"warning: {src}/exp_alcl/allo.py is blob {blob[:12]}, not {want[:12]} (tree {tree[:7]}); "
              "running it anyway", file=sys.stderr)
    return blob


def run_worker(a, script, flag, cfg):
    """Runs `script flag CFG-JSON` with the peer venv's python, pinned to core 0 with the
    single-thread variables and JAX_PLATFORMS=cpu; returns the JSON-object lines of its stdout."""
    py = os.path.join(a.venv, "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"peer venv missing: {a.venv}\nCreate it (from the repository root) with:\n"
                 f"  python3 -m venv tools/venv-asymexp && tools/venv-asymexp/bin/pip install -r {REQUIREMENTS}")
    pin = ONE_CORE if shutil.which(ONE_CORE[0]) else []
    if not pin:
        print("warning: taskset not found; the peer runs unpinned", file=sys.stderr)
    env = {**os.environ, **ONE_THREAD, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run(pin + [py, os.path.abspath(script), flag, json.dumps(cfg)],
                          cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
                          stderr=None if a.verbose else subprocess.PIPE)
    if proc.returncode != 0:
        if proc.stderr:
            sys.stderr.write(proc.stderr[-6000:])
        sys.exit(f"peer part failed (exit {proc.returncode})")
    return [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]


def add_source_args(ap):
    """The reference-source and venv options every asymexp script takes."""
    ap.add_argument("--asymexp-src", help="an existing tarod13/asymexp checkout at 4deb141 (default: the cache, "
                                          "extracted from --asymexp-mirror if missing)")
    ap.add_argument("--asymexp-mirror", default=MIRROR, help="git dir of the asymexp mirror")
    ap.add_argument("--venv", default=VENV, help="the peer venv (default tools/venv-asymexp)")
    ap.add_argument("--verbose", action="store_true", help="show the reference's own output (stderr)")


def peer_side(a):
    src = asymexp_source(a)
    blob = checked_blob(src)
    cfg = {"asymexp_src": src, "tree": TREE, "allo_blob": blob, "warmup": a.warmup, "steps": a.steps,
           "overrides": {"env_type": a.env_type, "num_envs": a.num_envs, "num_steps": a.num_steps,
                         "max_episode_length": a.max_episode_length, "batch_size": a.batch_size,
                         "geometric_gamma": a.geometric_gamma, "num_eigenvectors": a.num_eigenvectors,
                         "hidden_dim": a.hidden_dim, "num_hidden_layers": a.num_hidden_layers,
                         "learning_rate": a.learning_rate, "seed": a.seed}}
    lines = run_worker(a, __file__, "--_peer-worker", cfg)
    for l in lines:
        print(json.dumps(l), flush=True)
    return lines


# ======================================== Kestrel side ========================================
def kestrel_side(args):
    """Runs Kestrel's ALLO timing for the same workload and returns {key: value} keyed like
    WORKLOADS (sample_ms, update_ms, step_ms, loop_iteration_ms, collect_s, steps), or None.

    By default `kestrel allo bench --profile asymexp --json` on the reference's room4 layout
    (`builtin:four-rooms`) with the same collection, batch and steps; --kestrel-cmd replaces it. It runs from
    the repository root through `sh -c`, pinned to core 0 with the same single-thread variables
    as the peer, and prints (as its last JSON line on stdout) one object such as
        {"sample_ms": 0.05, "update_ms": 1.9, "step_ms": 1.95, "collect_s": 0.4, "steps": 2000}
    """
    if args.kestrel_cmd == "none":
        print("Kestrel side skipped (--kestrel-cmd none)", file=sys.stderr)
        return None
    if not args.kestrel_cmd:
        exe = Path(ROOT) / "target" / "release" / "kestrel"
        if not exe.exists():
            subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
        if args.env_type != "room4":
            sys.exit(f"the default Kestrel command times room4 (builtin:four-rooms); give --kestrel-cmd for {args.env_type}")
        args.kestrel_cmd = (f"{exe} allo bench --profile asymexp --map builtin:four-rooms --batch-size {args.batch_size} "
                            f"--num-envs {args.num_envs} --num-steps {args.num_steps} --steps {args.steps} --json")
    pin = ONE_CORE if shutil.which(ONE_CORE[0]) else []
    proc = subprocess.run(pin + ["sh", "-c", args.kestrel_cmd], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                          env={**os.environ, **ONE_THREAD, "RAYON_NUM_THREADS": "1"})
    if proc.returncode != 0:
        sys.exit(f"--kestrel-cmd failed (exit {proc.returncode})")
    for line in reversed(proc.stdout.splitlines()):
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            print(json.dumps({"side": "kestrel", **obj}), flush=True)
            return obj
    sys.exit("--kestrel-cmd printed no JSON object line")
# ==============================================================================================


def table(peer, kestrel, a):
    by = {l["workload"]: l for l in peer if "workload" in l}
    meta = next((l["meta"] for l in peer if "meta" in l), {})
    print()
    print(f"### ALLO, asymexp `exp_alcl/allo.py` @ {TREE[:7]} vs Kestrel — env {a.env_type}, "
          f"{a.num_envs}×{a.num_steps} collection, batch {a.batch_size}, d {a.num_eigenvectors}, "
          f"MLP {a.hidden_dim}×({a.num_hidden_layers}+1)\n")
    print(f"CPU: {cpu_model()} (1 core, `taskset -c 0`) · commit {commit()} · Python {meta.get('python', '?')}, "
          f"jax {meta.get('jax', '?')}, flax {meta.get('flax', '?')}, optax {meta.get('optax', '?')}, "
          f"numpy {meta.get('numpy', '?')} · steps timed: {by.get('step', {}).get('n', '?')} after "
          f"{a.warmup} warm-up (medians)\n")
    print("| workload | asymexp (JAX) | Kestrel | ratio (asymexp / Kestrel) |")
    print("|---|---:|---:|---:|")
    for key, desc, unit in WORKLOADS:
        p = by.get(key, {}).get("median")
        k = (kestrel or {}).get(f"{key}_{unit}")
        ps = f"{p:,.3f} {unit}" if p is not None else "—"
        ks = f"{k:,.3f} {unit}" if k is not None else "—"
        r = f"{p / k:,.2f}×" if p is not None and k else "—"
        print(f"| {desc} | {ps} | {ks} | {r} |")
    parts = by.get("collect", {}).get("parts_s")
    if parts:
        print("\nasymexp collect parts (s): " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--_peer-worker":
        peer_worker(json.loads(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=2000, help="steps timed (after the warm-up)")
    ap.add_argument("--warmup", type=int, default=50, help="steps run first and not timed (compilation)")
    ap.add_argument("--env-type", default="room4")
    ap.add_argument("--num-envs", type=int, default=1000)
    ap.add_argument("--num-steps", type=int, default=1000)
    ap.add_argument("--max-episode-length", type=int, default=1000)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--geometric-gamma", type=float, default=0.2)
    ap.add_argument("--num-eigenvectors", type=int, default=10)
    ap.add_argument("--hidden-dim", type=int, default=256)
    ap.add_argument("--num-hidden-layers", type=int, default=3)
    ap.add_argument("--learning-rate", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=42)
    add_source_args(ap)
    ap.add_argument("--kestrel-cmd", default="",
                    help="shell command timing Kestrel (default: kestrel allo bench --profile asymexp; 'none' skips)")
    ap.add_argument("--skip-peer", action="store_true", help="only the Kestrel side")
    ap.add_argument("--json", help="also write both sides' lines here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < 1:
        ap.error("--steps and --warmup must be >= 1")
    peer = [] if a.skip_peer else peer_side(a)
    kestrel = kestrel_side(a)
    table(peer, kestrel, a)
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit(), "cpu": cpu_model(), "steps": a.steps, "peer": peer, "kestrel": kestrel},
                      f, indent=1)


if __name__ == "__main__":
    main()
