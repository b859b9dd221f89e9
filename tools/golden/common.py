"""Helpers shared by the golden-fixture scripts: generated grids and the fixture encoding
(one character per cell, chr(48 + value); masks as per-row bitmasks)."""
import numpy as np


def gen_grid(rng, h, w, dtype=np.int8):
    """Blocky random grid: a few rectangles over a background plus 10% noise, so flood
    fills and object moves meet interesting regions."""
    g = np.full((h, w), rng.integers(0, 10), dtype=dtype)
    for _ in range(rng.integers(0, 6)):
        r0, c0 = rng.integers(0, h), rng.integers(0, w)
        r1, c1 = rng.integers(r0, h), rng.integers(c0, w)
        g[r0:r1 + 1, c0:c1 + 1] = rng.integers(0, 10)
    noise = rng.random((h, w)) < 0.1
    g[noise] = rng.integers(0, 10, size=noise.sum())
    return g


def enc(g):
    return "".join(chr(48 + int(v)) for v in np.asarray(g).reshape(-1))


def bits(m):
    m = np.asarray(m)
    return [int(sum(1 << c for c in range(m.shape[1]) if m[r, c])) for r in range(m.shape[0])]
