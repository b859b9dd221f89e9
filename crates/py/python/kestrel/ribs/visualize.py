"""pyribs' `grid_archive_heatmap` and `cvt_archive_heatmap`, drawn by Kestrel (no
matplotlib needed): the elites' objectives over the two measures, returned as an `(H, W, 3)`
uint8 picture, written as PNG to `path` when given, and shown in a matplotlib `ax` when one
is passed (as pyribs' first argument after the archive)."""

from __future__ import annotations

import os

__all__ = ["grid_archive_heatmap", "cvt_archive_heatmap"]


def grid_archive_heatmap(archive, ax=None, *, path=None, title="archive", labels=("measure 1", "measure 2"), **kwargs):
    """The archive's heat map. pyribs' matplotlib styling keywords (`cmap`, `vmin`, `df`, ...)
    are not implemented and are refused by name."""
    if kwargs:
        raise ValueError(f"{sorted(kwargs)[0]}: not implemented by Kestrel's heat map (it takes ax, path, title, labels)")
    if archive.measure_dim != 2:
        raise ValueError(f"archive: {archive.measure_dim} measures; a heat map draws 2")
    lo, hi = [float(v) for v in archive.lower_bounds], [float(v) for v in archive.upper_bounds]
    picture = archive._a.heatmap(lo, hi, [str(labels[0]), str(labels[1])], str(title), True,
                                 None if path is None else os.fspath(path))
    if ax is not None:
        ax.imshow(picture)
        ax.set_axis_off()
    return picture


cvt_archive_heatmap = grid_archive_heatmap
