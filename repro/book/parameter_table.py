"""What each page parameter accepts: the rerun page's second table (its type from
:data:`repro.pages.parameters.PARAMETER_TYPES`, the values the library names, the pages that take it)."""

from __future__ import annotations

import pandas as pd

from repro.autoregembed.config import TEMPLATES
from repro.autoregembed.experiments.ablations import VARIANTS
from repro.core.backbones import PACKAGED
from repro.core.encode import TOKENIZATIONS
from repro.core.prompts import PROMPTS
from repro.core.suites import SUITES
from repro.pages.parameters import NOTEBOOKS, PARAMETER_TYPES


def _allowed() -> dict[str, str]:
    """The values a parameter accepts where the library names them."""
    backbones = ", ".join(PACKAGED) + " (offline); any Hugging Face id with a network"
    return {"backbone": backbones, "backbones": backbones, "reference_backbone": backbones,
            "table5_backbones": backbones, "suite": ", ".join(SUITES), "budget_suite": ", ".join(SUITES),
            "tokenization": ", ".join(TOKENIZATIONS), "earlier_tokenization": ", ".join(TOKENIZATIONS),
            "prompt": ", ".join(PROMPTS), "prompts": ", ".join(PROMPTS), "model": "1-5", "models": "1-5",
            "variants": ", ".join(VARIANTS), "profile": "smoke, standard, paper",
            "tasks": "task names of repro.core.tasks (None: every task of the suite)",
            "template": ", ".join(TEMPLATES) + " (AutoRegEmbed's inputs: the official code's, or the book's earlier runs')"}


def _type_text(spec: tuple) -> str:
    kind, may_be_none = spec
    if isinstance(kind, tuple) and kind[0] is list:
        item = kind[1]
        text = "list of " + (item.__name__ if isinstance(item, type) else " or ".join(t.__name__ for t in item))
    else:
        text = kind.__name__ if isinstance(kind, type) else " or ".join(t.__name__ for t in kind)
    return text + (" or None" if may_be_none else "")


def parameter_table() -> pd.DataFrame:
    """Every page parameter: its type (:data:`repro.pages.parameters.PARAMETER_TYPES`), the values it accepts where the
    library names them, and the pages that take it."""
    allowed = _allowed()
    pages: dict[str, list[str]] = {}
    for name, profiles in NOTEBOOKS.items():
        for parameter in profiles["standard"]:
            pages.setdefault(parameter, []).append(name)
    return pd.DataFrame([{"parameter": parameter, "type": _type_text(PARAMETER_TYPES[parameter]),
                          "values": allowed.get(parameter, ""), "changing it": changing(parameter),
                          "pages": ", ".join(names)}
                         for parameter, names in pages.items()]).set_index("parameter")


SELECTS = ("selects from the store: a subset or reordering of the book's value reads the stored results (each is "
           "stored per unit, or found under a stored superset); only a value the store lacks computes")
COMPUTES = ("computes unless the store holds that setting: it changes what is computed (a new result, estimated "
            "by the page's cost on this page)")


def changing(parameter: str) -> str:
    """Whether changing ``parameter`` only selects among stored results or computes new ones (the rerun page's
    column; ``REPRO_COMPUTE=refuse`` turns any computation into a one-line error naming it)."""
    kind = PARAMETER_TYPES[parameter][0]
    if parameter == "recompute":
        return "True computes every result of the page again"
    if parameter == "profile":
        return "selects the book's parameter set (smoke or standard: both stored)"
    return SELECTS if isinstance(kind, tuple) and kind[0] is list else COMPUTES
