"""pyribs' `grid_archive_heatmap` and `cvt_archive_heatmap`, drawn by Kestrel (no
matplotlib): the elites' objectives over the two measures, as an `(H, W, 3)` uint8 picture,
written as PNG to `path` when given."""

from __future__ import annotations

import os

__all__ = ["grid_archive_heatmap", "cvt_archive_heatmap"]


def grid_archive_heatmap(archive, path=None, *, title="archive", labels=("measure 1", "measure 2"), **_ignored):
    """The archive's heat map (pyribs' matplotlib keywords such as `ax` and `cmap` are
    accepted and ignored)."""
    if archive.measure_dim != 2:
        raise ValueError(f"archive: {archive.measure_dim} measures; a heat map draws 2")
    lo, hi = [float(v) for v in archive.lower_bounds], [float(v) for v in archive.upper_bounds]
    return archive._a.heatmap(lo, hi, [str(labels[0]), str(labels[1])], str(title), True,
                              None if path is None else os.fspath(path))


cvt_archive_heatmap = grid_archive_heatmap
