import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Text

from repro.book.labels import label_points


def _boxes(fig, annotations):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [Text.get_window_extent(a, renderer) for a in annotations]  # the text itself, not its leader line


def test_labels_of_points_at_one_place_do_not_overlap():
    fig, ax = plt.subplots(figsize=(6, 4))
    xs, ys = [576, 576, 576, 576, 288], [60.5, 60.6, 46.44, 46.44, 62.0]
    ax.scatter(xs, ys)
    annotations = label_points(ax, xs, ys, ["P1 model 4", "P3 baseline", "AutoRegEmbed", "compression only", "EF"])
    boxes = _boxes(fig, annotations)
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            assert not boxes[i].overlaps(boxes[j]), (annotations[i].get_text(), annotations[j].get_text())
    plt.close(fig)


def test_a_label_that_would_leave_the_axes_goes_left_and_nan_points_are_skipped():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 10)
    annotations = label_points(ax, [9.9, np.nan, 1.0], [1.0, 2.0, 3.0], ["a long label at the edge", "gone", "b"])
    assert [a.get_text() for a in annotations] == ["a long label at the edge", "b"]
    assert annotations[0].get_horizontalalignment() == "right" and annotations[1].get_horizontalalignment() == "left"
    with pytest.raises(ValueError, match="labels"):
        label_points(ax, [1.0], [1.0], [])
    plt.close(fig)


def test_a_label_never_covers_another_point():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 10)
    xs, ys = [2.0, 3.0, 2.5], [5.0, 5.0, 5.05]  # the second and third points sit where the first's label would go
    ax.scatter(xs, ys)
    labels = ["a label long enough to reach", "b", "c"]
    annotations = label_points(ax, xs, ys, labels)
    points = ax.transData.transform(list(zip(xs, ys)))
    radius = matplotlib.rcParams["lines.markersize"] / 2 * fig.dpi / 72  # the drawn marker, in pixels
    for annotation, box in zip(annotations, _boxes(fig, annotations)):
        for (px, py), label in zip(points, labels):  # its own point too
            clear = box.x1 <= px - radius or box.x0 >= px + radius or box.y1 <= py - radius or box.y0 >= py + radius
            assert clear, (annotation.get_text(), label)
    plt.close(fig)

