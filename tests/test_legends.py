"""A legend over plotted points is found (repro.book.legends); the book's pages report it when a figure is drawn."""

import io
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from repro.book.legends import CHECK_ENV, MARK, covered_points  # noqa: E402


def _drawn(fig):
    fig.savefig(io.BytesIO())
    return fig


def test_a_legend_over_points_is_counted_and_one_beside_them_is_not():
    fig, ax = plt.subplots()
    ax.plot(range(10), [5] * 9 + [0], "o", label="a")
    ax.legend(loc="upper left")
    assert covered_points(_drawn(fig)) == [("axes 1", 1)]
    fig, ax = plt.subplots()
    ax.scatter(range(10), [5] * 9 + [0], label="b")
    ax.set_title("scatter")
    ax.legend(loc="upper left")
    assert covered_points(_drawn(fig)) == [("scatter", 1)]
    fig, ax = plt.subplots()
    ax.plot(range(10), [5] * 9 + [0], "o", label="a")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # outside the axes
    assert covered_points(_drawn(fig)) == []
    plt.close("all")


def test_a_page_kernel_reports_a_covered_legend_when_the_figure_is_drawn():
    """quiet() sets matplotlib's figure.hooks: any figure made with pyplot prints the mark when it is drawn."""
    code = ("import io, matplotlib; matplotlib.use('Agg'); from repro.book.notebook import quiet; quiet()\n"
            "import matplotlib.pyplot as plt\n"
            "fig, ax = plt.subplots(); ax.plot(range(10), [5] * 9 + [0], 'o', label='a'); ax.legend(loc='upper left')\n"
            "fig.savefig(io.BytesIO())")
    import os

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, CHECK_ENV: "1"})
    assert MARK in done.stderr
    quiet_page = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                env={k: v for k, v in os.environ.items() if k != CHECK_ENV})
    assert MARK not in quiet_page.stderr  # a published page never shows the line


def test_only_the_saved_image_is_checked_not_a_draw_before_the_page_set_its_layout():
    """seaborn draws a figure to place its legend before the page moves it: that draw is not the figure shown."""
    import os

    code = ("import io, matplotlib; matplotlib.use('Agg'); from repro.book.notebook import quiet; quiet()\n"
            "import matplotlib.pyplot as plt\n"
            "fig, ax = plt.subplots(); ax.plot(range(10), [5] * 9 + [0], 'o', label='a'); ax.legend(loc='upper left')\n"
            "fig.canvas.draw()  # an intermediate draw with the legend over the points\n"
            "ax.get_legend().set_bbox_to_anchor((1.02, 1)); fig.savefig(io.BytesIO(), bbox_inches='tight')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, CHECK_ENV: "1"})
    assert MARK not in done.stderr  # the saved image's legend is beside the axes
    covered = code.replace("set_bbox_to_anchor((1.02, 1))", "set_bbox_to_anchor((0, 1))")
    done = subprocess.run([sys.executable, "-c", covered], capture_output=True, text=True, check=True,
                          env={**os.environ, CHECK_ENV: "1"})
    assert MARK in done.stderr
