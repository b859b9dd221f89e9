#!/usr/bin/env python3
"""Side-by-side ARC environment benchmark: ARCLE 0.2.6, JaxARC 1.0.3 and Kestrel, same
workloads, one launch, ratios printed as a Markdown table for BENCHMARKS.md.

Workloads (random valid actions, sampling inside the timed loop, as in the peers' own
benchmarks; episodes auto-reset at termination or at 150 steps):
  A. ARC-AGI-1 training tasks on a 30x30 canvas, mask selections (`action_space.sample()`):
     ARCLE O2ARCv2Env (1 env; its vector envs were slower) vs Kestrel `o2arc`;
     JaxARC jit(vmap(scan)) vs Kestrel `jaxarc` (all bug switches on) at several batch sizes.
  B. JaxARC's paper setup: one 5x5 Mini-ARC task (Most_Common_color_l6ab0lf3xztbyxsu3p,
     read from ARCLE's bundled Mini-ARC), bbox selections: JaxARC vs Kestrel `jaxarc`,
     and ARCLE O2ARCv2Env (max_grid_size 5x5) vs Kestrel `o2arc`.

JaxARC side: its own jitted `functional.step` under jit(vmap(lax.scan)), as JaxARC's
`benchmarks/arcle_vs_jaxarc.py` runs it; each env starts from a state built from its task
(JaxARC's `make()` needs ~0.55 s per task just to load, 226 s for ARC-AGI-1), and its
auto-reset returns to that start state instead of drawing a new task. Compile time is
excluded and reported.

Usage (from the repository root; creates the venvs under tools/ on first use):
    python3 tools/compare/arc.py --data ../shared/data/arc-agi-1/training
    python3 tools/compare/arc.py --quick      # smaller batches and budgets
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENVS = {
    "arcle": (os.path.join(ROOT, "tools", "venv-arcle"), os.path.join(ROOT, "tools", "golden", "requirements-arcle.txt")),
    "jaxarc": (os.path.join(ROOT, "tools", "venv-jaxarc"), os.path.join(ROOT, "tools", "golden", "requirements-jaxarc.txt")),
}


def venv_python(name):
    path, req = VENVS[name]
    py = os.path.join(path, "bin", "python")
    if not os.path.exists(py):
        subprocess.run([sys.executable, "-m", "venv", path], check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "-r", req], check=True)
    return py


def run_py(name, code, *args):
    out = subprocess.run([venv_python(name), "-c", code, *args], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(out.stdout.strip().splitlines()[-1])


ARCLE_CODE = textwrap.dedent('''
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, gymnasium as gym
    from arcle.envs import O2ARCv2Env
    from arcle.loaders import ARCLoader, Loader
    mode, steps, minitask = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    class One(Loader):
        def get_path(self, **kw): return [minitask]
        def parse(self, **kw):
            p = json.loads(open(minitask).read().replace("null", '"0"'))
            g = lambda x: np.array(x, dtype=np.int8)
            return [([g(d["input"]) for d in p["train"]], [g(d["output"]) for d in p["train"]],
                     [g(d["input"]) for d in p["test"]], [g(d["output"]) for d in p["test"]], {"id": "mini"})]
    if mode == "agi1_mask":
        env = gym.make("ARCLE/O2ARCv2Env-v0", max_episode_steps=150)   # bundled ARC-AGI-1 training
        S = 30
    else:
        env = gym.make("ARCLE/O2ARCv2Env-v0", data_loader=One(), max_grid_size=(5, 5), max_episode_steps=150)
        S = 5
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    def bbox():
        r1, r2 = sorted(rng.integers(0, S, 2)); c1, c2 = sorted(rng.integers(0, S, 2))
        sel = np.zeros((S, S), dtype=np.int8); sel[r1:r2 + 1, c1:c2 + 1] = 1
        return {"selection": sel, "operation": int(rng.integers(0, 35))}
    sample = env.action_space.sample if mode == "agi1_mask" else bbox
    for _ in range(200):
        _, _, te, tr, _ = env.step(sample())
        if te or tr: env.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, te, tr, _ = env.step(sample())
        if te or tr: env.reset()
    el = time.perf_counter() - t0
    print(json.dumps({"steps_per_s": steps / el}))
''')

JAXARC_CODE = textwrap.dedent('''
    import json, os, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, jax, jax.numpy as jnp
    sys.path.insert(0, "@COMPARE@")
    from jaxarc_states import pad, read_task, states
    from jaxarc.configs.action_config import ActionConfig
    from jaxarc.configs.dataset_config import DatasetConfig
    from jaxarc.configs.grid_initialization_config import GridInitializationConfig
    from jaxarc.configs.reward_config import RewardConfig
    from jaxarc.envs import functional
    from jaxarc.envs.actions import create_action
    from jaxarc.types import EnvParams
    from jaxarc.wrappers.action_wrappers import _bbox_to_mask
    sel_kind, S, batches, steps, files = sys.argv[1], int(sys.argv[2]), [int(b) for b in sys.argv[3].split(",")], int(sys.argv[4]), sys.argv[5:]
    tasks = [read_task(f) for f in files]
    params = EnvParams(dataset=DatasetConfig(max_grid_height=S, max_grid_width=S), action=ActionConfig(),
        reward=RewardConfig(step_penalty=-0.005, success_bonus=10.0, similarity_weight=1.0, unsolved_submission_penalty=-1.0),
        grid_initialization=GridInitializationConfig(), max_episode_steps=150, buffer=jnp.zeros(1), episode_mode=0)
    rng = np.random.default_rng(0)
    padded = {}
    def start_states(b):
        # Env i starts from a random train pair of a random task (the draws in env order).
        rows = []
        for _ in range(b):
            ti = int(rng.integers(0, len(tasks))); pj = int(rng.integers(0, len(tasks[ti]["train"])))
            if (ti, pj) not in padded:
                p = tasks[ti]["train"][pj]
                padded[ti, pj] = (*pad(p["input"], S), *pad(p["output"], S))
            rows.append(padded[ti, pj])
        wg, wm, tg, tm = (np.stack([r[k] for r in rows]) for k in range(4))
        return states(wg, wm, tg, tm, wg, wm)
    def single(s0, key):
        def body(carry, _):
            st, k, last = carry
            st = jax.tree_util.tree_map(lambda a, b: jnp.where(last, a, b), s0, st)
            k, k1, k2 = jax.random.split(k, 3)
            op = jax.random.randint(k1, (), 0, 35)
            if sel_kind == "mask":
                sel = jax.random.bernoulli(k2, 0.5, (S, S))
            else:
                c = jax.random.randint(k2, (4,), 0, S)
                sel = _bbox_to_mask({"operation": op, "r1": c[0], "c1": c[1], "r2": c[2], "c2": c[3]}, (S, S)).selection
            st, ts = functional.step(params, st, create_action(op, sel))
            return (st, k, ts.step_type >= 2), None
        (st, _, _), _ = jax.lax.scan(body, (s0, key, jnp.array(False)), None, length=steps)
        return st.step_count
    out = []
    for b in batches:
        s0 = start_states(b)
        keys = jax.random.split(jax.random.PRNGKey(1), b)
        fn = jax.jit(jax.vmap(single))
        t0 = time.perf_counter(); comp = fn.lower(s0, keys).compile(); ct = time.perf_counter() - t0
        comp(s0, keys).block_until_ready()
        t0 = time.perf_counter(); comp(s0, keys).block_until_ready(); el = time.perf_counter() - t0
        out.append({"num_envs": b, "steps_per_s": b * steps / el, "compile_s": ct})
    print(json.dumps(out))
''').replace("@COMPARE@", os.path.dirname(os.path.abspath(__file__)))


def mini_batches(n, count=8, seed=1):
    """`count` batches of random bbox selections on JaxARC's 5x5 paper task for `n` envs, as
    masks (`{"operation", "selection"}`) and as the same boxes in the bbox form (`{"operation",
    "r1", "c1", "r2", "c2"}`: four coordinates a row, no mask). Needs numpy (a venv's python)."""
    import numpy as np
    r, idx = np.random.default_rng(seed), np.arange(5)

    def bbox_batch():
        rr, cc = np.sort(r.integers(0, 5, (n, 2)), 1), np.sort(r.integers(0, 5, (n, 2)), 1)
        rows = (idx[None] >= rr[:, :1]) & (idx[None] <= rr[:, 1:])
        cols = (idx[None] >= cc[:, :1]) & (idx[None] <= cc[:, 1:])
        return {"operation": r.integers(0, 35, n), "selection": rows[:, :, None] & cols[:, None, :]}

    def corners(b):
        rows, cols = b["selection"].any(2), b["selection"].any(1)
        return {"operation": b["operation"], "r1": rows.argmax(1), "c1": cols.argmax(1),
                "r2": 4 - rows[:, ::-1].argmax(1), "c2": 4 - cols[:, ::-1].argmax(1)}

    masks = [bbox_batch() for _ in range(count)]
    return masks, [corners(b) for b in masks]


def mini_task():
    """The path of JaxARC's paper task, read from ARCLE's bundled Mini-ARC."""
    return subprocess.run([venv_python("arcle"), "-c", "import arcle, os; print(os.path.join(os.path.dirname(arcle.__file__), "
                           "'arcs/Mini-ARC/data/MiniARC/Most_Common_color_l6ab0lf3xztbyxsu3p.json'))"],
                          check=True, capture_output=True, text=True).stdout.strip()


def kestrel(args):
    exe = os.path.join(ROOT, "target", "release", "kestrel")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "kestrel"], cwd=ROOT, check=True)
    out = subprocess.run([exe, "arc", "bench", "--json", "--no-ops", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "arc-agi-1", "training"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", help="also write the rows here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    batches = [1, 64, 1024] if a.quick else [1, 64, 1024, 4096]
    jsteps = 50 if a.quick else 100
    secs = "0.5" if a.quick else "2"
    files = sorted(os.path.join(a.data, f) for f in os.listdir(a.data) if f.endswith(".json"))
    mini = mini_task()
    rows = []

    def add(workload, peer, peer_sps, kes_sps, note=""):
        rows.append((workload, peer, peer_sps, kes_sps, kes_sps / peer_sps, note))
        print(f"{workload:<44} {peer:<22} {peer_sps:>14,.0f} {kes_sps:>16,.0f} {kes_sps / peer_sps:>9.1f}x {note}", flush=True)

    print(f"{'workload':<44} {'peer':<22} {'peer steps/s':>14} {'kestrel steps/s':>16} {'ratio':>10}")
    # A. ARC-AGI-1, 30x30, mask
    arcle_a = run_py("arcle", ARCLE_CODE, "agi1_mask", "5000" if a.quick else "20000", mini)
    k1 = kestrel(["--data", a.data, "--sel", "mask", "--mode", "o2arc", "--threads", "1", "--num-envs", "1", "--seconds", secs])
    kb = kestrel(["--data", a.data, "--sel", "mask", "--mode", "o2arc", "--threads", "2", "--num-envs", "1024", "--seconds", secs])
    add("AGI-1 30x30 mask, o2arc, 1 env 1 thread", "ARCLE O2ARCv2Env", arcle_a["steps_per_s"], k1["batches"][0]["steps_per_s"])
    add("AGI-1 30x30 mask, o2arc, 1024 envs 2 thr", "ARCLE O2ARCv2Env (1 env)", arcle_a["steps_per_s"], kb["batches"][0]["steps_per_s"])
    jax_a = run_py("jaxarc", JAXARC_CODE, "mask", "30", ",".join(map(str, batches)), str(jsteps), *files)
    ka = kestrel(["--data", a.data, "--sel", "mask", "--mode", "jaxarc", "--bugs", "all", "--threads", "2",
                  "--num-envs", ",".join(map(str, batches)), "--seconds", secs])
    for j, k in zip(jax_a, ka["batches"]):
        add(f"AGI-1 30x30 mask, jaxarc, {j['num_envs']} envs", "JaxARC jit(vmap(scan))", j["steps_per_s"], k["steps_per_s"],
            f"(JAX compile {j['compile_s']:.1f} s)")
    # B. Mini-ARC 5x5, one task, bbox
    jax_b = run_py("jaxarc", JAXARC_CODE, "bbox", "5", ",".join(map(str, batches)), str(jsteps * 10), mini)
    # Kestrel's two batched kernels: the structure-of-arrays lanes (the default at this canvas)
    # and VecEnv's rows.
    for kern in ("lanes", "rows"):
        kbx = kestrel(["--data", mini, "--canvas", "5", "--sel", "bbox", "--mode", "jaxarc", "--bugs", "all", "--threads", "2",
                       "--num-envs", ",".join(map(str, batches)), "--seconds", secs, "--kernel", kern])
        for j, k in zip(jax_b, kbx["batches"]):
            add(f"Mini-ARC 5x5 bbox, jaxarc, {j['num_envs']} envs, {kern}", "JaxARC jit(vmap(scan))", j["steps_per_s"],
                k["steps_per_s"], f"(JAX compile {j['compile_s']:.1f} s)")
    arcle_b = run_py("arcle", ARCLE_CODE, "mini_bbox", "5000" if a.quick else "20000", mini)
    kmo = kestrel(["--data", mini, "--canvas", "5", "--sel", "bbox", "--mode", "o2arc", "--threads", "1", "--num-envs", "1", "--seconds", secs])
    add("Mini-ARC 5x5 bbox, o2arc, 1 env 1 thread", "ARCLE O2ARCv2Env", arcle_b["steps_per_s"], kmo["batches"][0]["steps_per_s"])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
    print(f"\n### ARC environment, commit {commit}, {cpu}, {os.cpu_count()} cores\n")
    print("| workload | peer | peer steps/s | Kestrel steps/s | Kestrel / peer |")
    print("|---|---|---:|---:|---:|")
    for w, p, ps, ks, r, note in rows:
        print(f"| {w} | {p} {note} | {ps:,.0f} | {ks:,.0f} | {r:,.1f}x |")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": commit, "cpu": cpu, "rows": [
                {"workload": w, "peer": p, "peer_steps_per_s": ps, "kestrel_steps_per_s": ks, "note": note}
                for w, p, ps, ks, _, note in rows]}, f, indent=1)


if __name__ == "__main__":
    main()
