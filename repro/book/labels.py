"""Point labels that do not overlap: a scatter's names placed beside their points, stacked where points crowd.

Matplotlib draws an annotation where it is told, so methods sharing an x value (every 576-dimension method of the
leaderboard's dims panel) or a score (a method and its stage 1) print on top of each other. :func:`label_points`
places each label to the right of its point (to the left where it would leave the axes), then moves a label up,
in pixels, until its box clears every label already placed and every other point's marker, with a thin leader
line back to its point.
"""
from __future__ import annotations

from collections.abc import Sequence

import matplotlib as mpl
import numpy as np
from matplotlib.font_manager import FontProperties


def _box(x: float, y: float, width: float, height: float, right: bool) -> tuple[float, float, float, float]:
    """(left, right, bottom, top) in pixels of a label starting at ``x`` (ending there if not ``right``), centred
    on ``y``."""
    return (x if right else x - width, x + width if right else x, y - height / 2, y + height / 2)


def _overlaps(a: tuple, b: tuple) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]


def label_points(ax, xs: Sequence[float], ys: Sequence[float], labels: Sequence[str], fontsize: float = 8,
                 marker: float | None = None) -> list:
    """Annotate each point ``(xs[i], ys[i])`` of ``ax`` with ``labels[i]``, no two label boxes overlapping and no
    label over a point (a square of half-side ``marker`` points around it, by default the radius of matplotlib's
    default marker; ``s ** 0.5 / 2`` for ``scatter(s=s)``). Call it after the axes' scales and the figure's layout
are set (``tight_layout``): it works in display pixels. Points with a NaN
    coordinate are skipped. Returns the annotations."""
    if not len(xs) == len(ys) == len(labels):
        raise ValueError(f"label_points: {len(xs)} xs, {len(ys)} ys and {len(labels)} labels")
    ax.get_xlim(), ax.get_ylim()  # settle autoscaling before reading the transform
    dpi = ax.figure.dpi
    marker = (mpl.rcParams["lines.markersize"] / 2 if marker is None else marker) * dpi / 72
    pad = marker + 2 * dpi / 72  # a label starts just clear of its own point
    height = fontsize * dpi / 72 * 1.25
    renderer, font = ax.figure.canvas.get_renderer(), FontProperties(size=fontsize)
    right_edge = ax.get_window_extent().x1
    placed, out = [], []
    points = [(x, y, str(label)) for x, y, label in zip(xs, ys, labels) if np.isfinite(x) and np.isfinite(y)]
    pixels = ax.transData.transform([(x, y) for x, y, _ in points]) if points else np.empty((0, 2))
    markers = [(px - marker, px + marker, py - marker, py + marker) for px, py in pixels]
    for (x, y, label), (px, py) in sorted(zip(points, pixels), key=lambda item: (item[1][1], item[1][0])):
        width = renderer.get_text_width_height_descent(label, font, ismath=False)[0] + 2  # measured, in pixels
        right = px + pad + width <= right_edge
        tx = px + pad if right else px - pad
        ty = py
        box = _box(tx, ty, width, height, right)
        while any(_overlaps(box, other) for other in placed + markers):
            ty += height / 2
            box = _box(tx, ty, width, height, right)
        placed.append(box)
        moved = ty - py > 1
        out.append(ax.annotate(label, (x, y), xytext=(tx - px, ty - py), textcoords="offset pixels",
                               fontsize=fontsize, ha="left" if right else "right", va="center",
                               arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5"} if moved else None))
    return out
