#!/usr/bin/env python3
"""Side-by-side ALLO: the reference algorithm in JAX on this CPU vs Kestrel, same map, batch
and network, one launch.

The paper code (`laplacian_dual_dynamics`, JAX + Haiku) is not on PyPI; as the reference
report did (shared/reference/allo-sorrel-actdyn.md §1.10), this script re-states its two hot
parts faithfully and times them:

  * replay: episodes kept as Python lists of per-step records holding the normalised (row,
    col) observation; `sample_pairs` (episode uniform, i uniform on 0..H-2, truncated-geometric
    offset by inverse CDF) and `sample_steps` (episode uniform, step uniform) one sample at a
    time in Python, then `np.stack` — one batch of 4 × 1024 (state, future state, two
    independent states);
  * update: the ALLO loss of §1.6a (graph term, stop-gradient inner products, tril error
    matrices, duals and barrier), an MLP 2-256-256-256-11 applied to the four sub-batches,
    optax Adam 1e-3, then the dual/barrier rules, all in one `jax.jit` (float32, the
    process pinned to one core: `common.ONE_CORE`).

Kestrel: `kestrel allo bench` (sampling the same 4 × 1024 draw; the training step with the
encoder run once over the batch's distinct states, and the plain 4 × 1024-row path).
Ratios as Markdown on stdout. Uses tools/venv-evosax (jax, optax).

Usage (from the repository root):
    python3 tools/compare/allo.py [--map PATH]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

from common import ONE_CORE, ONE_THREAD, ROOT, commit, kestrel_release, venv_python


PEER = textwrap.dedent('''
    import collections, json, math, random, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, jax, jax.numpy as jnp, optax
    path = sys.argv[1]
    lines = [l[:-1] if l.endswith("\\n") else l for l in open(path).readlines()]
    lines = [l for l in lines if len(l) == len(lines[0])]
    grid = np.array([[c not in "Xx" for c in l] for l in lines])
    cells = [tuple(x) for x in np.argwhere(grid)]
    H, W = grid.shape
    moves = [(1, 0), (0, 1), (-1, 0), (0, -1)]
    def step(rc, a):
        r = min(max(rc[0] + moves[a][0], 0), H - 1); c = min(max(rc[1] + moves[a][1], 0), W - 1)
        return (r, c) if grid[r, c] else rc
    Step = collections.namedtuple("Step", ["obs"])
    def obs(rc):
        return np.array([rc[0] / H - 0.5, rc[1] / W - 0.5], dtype=np.float32)
    rng = random.Random(0)
    episodes = []
    for _ in range(4000):                     # 200,000 steps in 50-step episodes
        rc = cells[rng.randrange(len(cells))]
        ep = [Step(obs(rc))]
        for _ in range(50):
            rc = step(rc, rng.randrange(4)); ep.append(Step(obs(rc)))
        episodes.append(ep)
    def discounted_sampling(n, g):
        if g == 0.0: return 0
        if g == 1.0: return int(n * np.random.rand())
        return int(np.floor(np.log(1 - (1 - g ** n) * np.random.rand()) / np.log(g)))
    def sample_steps(b):
        out = []
        for _ in range(b):
            ep = episodes[np.random.randint(len(episodes))]
            out.append(ep[np.random.randint(len(ep))].obs)
        return np.stack(out)
    def sample_pairs(b, g):
        s, f = [], []
        for _ in range(b):
            ep = episodes[np.random.randint(len(episodes))]
            i = np.random.randint(len(ep) - 1)
            k = discounted_sampling(len(ep) - 1 - i, g) + 1
            s.append(ep[i].obs); f.append(ep[i + k].obs)
        return np.stack(s), np.stack(f)
    def batch():
        s, f = sample_pairs(1024, 0.9)
        return s, f, sample_steps(1024), sample_steps(1024)
    def median(fn, n):
        for _ in range(3): fn()
        ts = []
        for _ in range(n):
            t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e6)
        return float(np.median(ts))
    out = {"sample_us": median(batch, 30)}
    d, sizes = 11, [2, 256, 256, 256, 11]
    def init(key):
        ps = []
        for i, o in zip(sizes[:-1], sizes[1:]):
            key, k = jax.random.split(key)
            ps.append((jax.random.truncated_normal(k, -2, 2, (i, o)) / np.sqrt(i), jnp.zeros(o)))
        return ps
    def enc(ps, x):
        for j, (w, b) in enumerate(ps):
            x = x @ w + b
            if j < len(ps) - 1: x = jax.nn.relu(x)
        return x
    opt = optax.adam(1e-3)
    def loss_fn(ps, duals, barrier, s, f, u1, u2):
        ps_, pf, p1, p2 = enc(ps, s), enc(ps, f), enc(ps, u1), enc(ps, u2)
        graph = ((ps_ - pf) ** 2).mean(0).sum()
        n = s.shape[0]
        a1 = p1.T @ jax.lax.stop_gradient(p1) / n
        a2 = p2.T @ jax.lax.stop_gradient(p2) / n
        e1 = jnp.tril(a1 - jnp.eye(d)); e2 = jnp.tril(a2 - jnp.eye(d))
        e = 0.5 * (e1 + e2); q = e1 * e2
        loss = graph + (jax.lax.stop_gradient(duals) * e).sum() + jax.lax.stop_gradient(barrier) * q.sum()
        return loss, (e, q)
    @jax.jit
    def update(state, s, f, u1, u2):
        ps, ost, duals, barrier, eema, qema = state
        (loss, (e, q)), g = jax.value_and_grad(loss_fn, has_aux=True)(ps, duals, barrier, s, f, u1, u2)
        up, ost = opt.update(g, ost, ps); ps = optax.apply_updates(ps, up)
        eema = eema + 1.0 * (e - eema); qema = qema + 0.1 * (q - qema)
        duals = jnp.tril(jnp.clip(duals + 1e-4 * jnp.tril(eema), -100, 100))
        barrier = jnp.clip(barrier + 0.01 * jnp.clip(qema, 0, None).mean(), 0, 10000)
        return (ps, ost, duals, barrier, eema, qema), loss
    ps = init(jax.random.PRNGKey(0))
    state = [(ps, opt.init(ps), jnp.zeros((d, d)), jnp.asarray(0.5), jnp.zeros((d, d)), jnp.zeros((d, d)))]
    bt = [jnp.asarray(x) for x in batch()]
    def one():
        state[0], l = update(state[0], *bt); l.block_until_ready()
    out["step_us"] = median(one, 30)
    out["jax"] = jax.__version__
    print(json.dumps(out))
''')




def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--map", default=os.path.join(ROOT, "..", "shared", "data", "laplacian-grids", "GridRoom-4.txt"))
    ap.add_argument("--json", help="also write both sides' timings here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    if not os.path.exists(a.map):
        sys.exit(f"{a.map}: not found (pass --map with a map in the paper's text format)")
    measured = commit()
    peer = json.loads(subprocess.run(ONE_CORE + [venv_python("venv-evosax", "tools/compare/requirements-evo.txt"), "-c", PEER, a.map], check=True, capture_output=True, text=True,
                                     env={**os.environ, **ONE_THREAD}).stdout.strip().splitlines()[-1])
    binary = kestrel_release()
    k = {}
    for t in (1,):
        out = subprocess.run(["taskset", "-c", "0", binary,
                              "allo", "bench", "--map", a.map, "--json"], cwd=ROOT, check=True, capture_output=True, text=True,
                             env={**os.environ, "RAYON_NUM_THREADS": str(t)})
        k[t] = json.loads(out.stdout.strip().splitlines()[-1])
    name = os.path.basename(a.map)
    print(f"### ALLO, {name}, batch 4×1024, MLP 2-256-256-256-11 — commit {measured}, {platform.processor() or platform.machine()}, JAX {peer['jax']}\n")
    print("| | reference restated (Python replay; jitted JAX update, 1 thread) µs | Kestrel µs | ratio |")
    print("|---|---:|---:|---:|")
    print(f"| replay sampling, one 4×1024 batch | {peer['sample_us']:,.0f} | {k[1]['sample_us']:,.1f} | {peer['sample_us'] / k[1]['sample_us']:,.0f}x |")
    # Kestrel's step times include its own sampling; the reference's update does not.
    print(f"| update (reference) vs whole step (Kestrel), encoder once per distinct state | {peer['step_us']:,.0f} | {k[1]['step_dedup_us']:,.0f} | {peer['step_us'] / k[1]['step_dedup_us']:.1f}x |")
    print(f"| the same, Kestrel's plain 4×1024-row encoder pass | {peer['step_us']:,.0f} | {k[1]['step_plain_us']:,.0f} | {peer['step_us'] / k[1]['step_plain_us']:.2f}x |")
    per_ref = peer['sample_us'] + peer['step_us']
    print(f"| whole step: sampling + update | {per_ref:,.0f} | {k[1]['step_dedup_us']:,.0f} | {per_ref / k[1]['step_dedup_us']:.1f}x |")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": measured, "cpu": platform.processor() or platform.machine(), "map": name,
                       "reference": peer, "kestrel": k[1]}, f, indent=1)


if __name__ == "__main__":
    main()
