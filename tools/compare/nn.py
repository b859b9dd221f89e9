#!/usr/bin/env python3
"""Side-by-side MLP training: jitted JAX (0.10.2 + optax, pinned to one core, the fastest peer
in shared/reference/nn-backends.md) vs kestrel-nn on the same workloads, one launch:

  (b) one training step of an MLP 64→256→256→16 (ReLU, MSE, Adam lr 1e-4) at batch 256;
  (c) eight independent such models at batch 64, one step each (JAX: jit(vmap(step)) over
      stacked parameters; Kestrel: `train_many`, one model per thread);
  (a) a batch-1 forward (JAX: numpy in, numpy out, as an actor pays it).

Medians of per-call times (state buffers donated on the JAX side, `block_until_ready`).
Ratios as Markdown on stdout. Uses tools/venv-evosax (jax, optax).

Usage (from the repository root):
    python3 tools/compare/nn.py [--json PATH]
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap

from common import ONE_CORE, ONE_THREAD, ROOT, commit, kestrel_release, venv_python


JAX = textwrap.dedent('''
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import numpy as np, jax, jax.numpy as jnp, optax
    sizes = [64, 256, 256, 16]
    def init(key):
        ps = []
        for i, o in zip(sizes[:-1], sizes[1:]):
            key, k1, k2 = jax.random.split(key, 3)
            b = 1.0 / np.sqrt(i)
            ps.append((jax.random.uniform(k1, (i, o), minval=-b, maxval=b), jax.random.uniform(k2, (o,), minval=-b, maxval=b)))
        return ps
    def fwd(ps, x):
        for j, (w, b) in enumerate(ps):
            x = x @ w + b
            if j < len(ps) - 1:
                x = jnp.maximum(x, 0.0)
        return x
    opt = optax.adam(1e-4)
    def step(ps, st, x, y):
        loss, g = jax.value_and_grad(lambda p: jnp.mean((fwd(p, x) - y) ** 2))(ps)
        up, st = opt.update(g, st, ps)
        return optax.apply_updates(ps, up), st, loss
    def median(f, seconds=2.0):
        for _ in range(20):
            f()
        ts, t0 = [], time.perf_counter()
        while time.perf_counter() - t0 < seconds or len(ts) < 20:
            t = time.perf_counter(); f(); ts.append((time.perf_counter() - t) * 1e6)
        return float(np.median(ts))
    rng = np.random.default_rng(0)
    out = {}
    ps = init(jax.random.PRNGKey(0)); st = opt.init(ps)
    x = jnp.asarray(rng.uniform(-1, 1, (256, 64)), jnp.float32); y = jnp.asarray(rng.uniform(-1, 1, (256, 16)), jnp.float32)
    jstep = jax.jit(step, donate_argnums=(0, 1))
    box = [ps, st]
    def one():
        box[0], box[1], l = jstep(box[0], box[1], x, y); l.block_until_ready()
    out["train_us"] = median(one)
    keys = jax.random.split(jax.random.PRNGKey(1), 8)
    pss = jax.vmap(init)(keys); sts = jax.vmap(opt.init)(pss)
    xs = jnp.asarray(rng.uniform(-1, 1, (8, 64, 64)), jnp.float32); ys = jnp.asarray(rng.uniform(-1, 1, (8, 64, 16)), jnp.float32)
    vstep = jax.jit(jax.vmap(step), donate_argnums=(0, 1))
    vbox = [pss, sts]
    def many():
        vbox[0], vbox[1], l = vstep(vbox[0], vbox[1], xs, ys); l.block_until_ready()
    out["train_many_us"] = median(many)
    jf = jax.jit(fwd)
    x1 = rng.uniform(-1, 1, (1, 64)).astype(np.float32)
    p1 = box[0]
    out["forward_b1_us"] = median(lambda: np.asarray(jf(p1, x1)), 1.0)
    out["jax"] = jax.__version__
    print(json.dumps(out))
''')




def kestrel(threads):
    out = subprocess.run([kestrel_release(), "nn", "bench", "--threads", str(threads), "--json"],
                         cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="also write both sides' medians here (tools/compare/all.py reads it)")
    a = ap.parse_args()
    measured = commit()
    j = json.loads(subprocess.run(ONE_CORE + [venv_python("venv-evosax", "tools/compare/requirements-evo.txt"), "-c", JAX], check=True, capture_output=True, text=True,
                                  env={**os.environ, **ONE_THREAD}).stdout.strip().splitlines()[-1])
    k1, k2 = kestrel(1), kestrel(2)
    print(f"### kestrel-nn vs jitted JAX {j['jax']} — commit {measured}, {platform.processor() or platform.machine()}, 2 cores\n")
    print("| workload | JAX µs (1 thread) | Kestrel 1 thread µs | ratio | Kestrel 2 threads µs | ratio |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, name in [("train_us", "train step, MLP 64-256-256-16, batch 256, MSE + Adam"),
                      ("train_many_us", "8 independent models, batch 64 each, one step each"),
                      ("forward_b1_us", "forward, batch 1 (host in, host out)")]:
        print(f"| {name} | {j[key]:,.1f} | {k1[key]:,.1f} | {j[key] / k1[key]:.2f}x | {k2[key]:,.1f} | {j[key] / k2[key]:.2f}x |")
    if a.json:
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"commit": measured, "cpu": platform.processor() or platform.machine(), "jax": j,
                       "kestrel_1_thread": k1, "kestrel_2_threads": k2}, f, indent=1)


if __name__ == "__main__":
    main()
