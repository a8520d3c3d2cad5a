"""The training-seed spread shown for scale beside a Paper 3 page's single-run comparisons (which get no verdict:
runs are the units), read from the stored data-efficiency curve (never trained here: a page that only needs the
spread does not run the curve)."""

from __future__ import annotations

from repro.autoregembed.claims import measured_spread
from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.data_efficiency import stored_autoreg_curve
from repro.pages.parameters import page_parameters


def paper3_seed_spread(profile: str = "standard", data_efficiency: dict | None = None) -> tuple[float, str]:
    """AutoRegEmbed's measured seed spread (:func:`repro.autoregembed.claims.measured_spread`) on the stored
    points of the data-efficiency page (its ``profile`` parameters, ``data_efficiency`` overriding some), and the
    sentence that names it; NaN when fewer than two seeds of a size are stored."""
    d = page_parameters("p3_data_efficiency", profile, data_efficiency)
    _, base = page_configs(**(d | {"recompute": False}))
    return measured_spread(stored_autoreg_curve(base, d["sizes"], d["seeds"], d["epochs"], d["suite"], d["tasks"]))
