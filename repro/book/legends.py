"""Legends that cover data: :func:`covered_points` counts the plotted points (line vertices, scatter and marker
offsets) inside a legend's box, in display coordinates after the figure is drawn. The book's pages watch every
figure (``quiet`` sets matplotlib's ``figure.hooks`` to :func:`watch`): with ``REPRO_CHECK_LEGENDS=1`` (the smoke
book's test sets it; a published page never shows the line) a drawn figure whose legend covers its data prints a line
starting with :data:`MARK`, and the test fails on any such line."""

from __future__ import annotations

import os
import sys

import numpy as np
from matplotlib.collections import Collection
from matplotlib.figure import Figure

MARK = "legend covers data:"
CHECK_ENV = "REPRO_CHECK_LEGENDS"


def _points(ax) -> np.ndarray:
    """Every plotted point of ``ax`` in display coordinates (lines' vertices, collections' offsets)."""
    parts = [line.get_transform().transform(line.get_xydata()) for line in ax.get_lines()
             if line.get_visible() and len(line.get_xydata())]
    for collection in ax.collections:
        if isinstance(collection, Collection) and collection.get_visible() and len(collection.get_offsets()):
            parts.append(collection.get_offset_transform().transform(collection.get_offsets()))
    points = np.concatenate(parts) if parts else np.empty((0, 2))
    return points[np.isfinite(points).all(axis=1)]


def covered_points(fig: Figure) -> list[tuple[str, int]]:
    """(the axes' title or its position, how many of its points lie inside a legend's box) for each axes whose
    legend, or a figure legend, covers at least one of its points."""
    renderer = fig.canvas.get_renderer()
    found = []
    for i, ax in enumerate(fig.axes):
        legends = [legend for legend in (ax.get_legend(), *fig.legends) if legend is not None and legend.get_visible()]
        points = _points(ax)
        covered = 0
        for legend in legends:
            box = legend.get_window_extent(renderer)
            covered += int(((points[:, 0] > box.x0) & (points[:, 0] < box.x1) & (points[:, 1] > box.y0)
                            & (points[:, 1] < box.y1)).sum())
        if covered:
            found.append((ax.get_title() or f"axes {i + 1}", covered))
    return found


def _on_draw(event) -> None:
    # only the draw that writes the page's image (the inline backend's print_figure: canvas.is_saving()) is the
    # figure shown; seaborn draws a figure to place its legend before the page sets its scales and layout, and a
    # layout pass draws with rendering disabled (RendererBase._draw_disabled sets no-op draw_* methods)
    if (os.environ.get(CHECK_ENV) != "1" or not event.canvas.is_saving()
            or "draw_path" in vars(event.renderer)):
        return
    for title, n in covered_points(event.canvas.figure):
        print(f"{MARK} {n} plotted point(s) of '{title}' lie under its legend", file=sys.stderr)


def watch(fig: Figure) -> None:
    """matplotlib ``figure.hooks`` entry: check the figure's legends each time it is drawn (the page's PNG)."""
    fig.canvas.mpl_connect("draw_event", _on_draw)
