"""Helpers for the thin notebooks: parameter checking (papermill passes whatever the user typed)."""

from __future__ import annotations


def check_params(**specs) -> None:
    """``check_params(name=(value, expected_type_or_tuple, allow_none))``: one clear TypeError per bad value.

    ``list[str]``-style checks: pass ``(value, (list, str))`` to require a list whose items are str.
    """
    for name, spec in specs.items():
        value, expected, *rest = spec
        allow_none = bool(rest and rest[0])
        if value is None and allow_none:
            continue
        if isinstance(expected, tuple) and len(expected) == 2 and expected[0] is list:
            if not isinstance(value, list) or not all(isinstance(v, expected[1]) for v in value):
                raise TypeError(f"parameter '{name}' must be a list of {expected[1].__name__}, got {value!r} "
                                f"(papermill: -p {name} '[\"a\", \"b\"]' or -y '{name}: [a, b]')")
            continue
        if isinstance(value, bool) and expected is int:
            raise TypeError(f"parameter '{name}' must be an integer, got {value!r}")
        if not isinstance(value, expected):
            names = expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)
            raise TypeError(f"parameter '{name}' must be {names}, got {type(value).__name__} {value!r}")


def quiet() -> None:
    """Keep rendered pages clean: no progress bars or library warnings in cell outputs."""
    import logging
    import os
    import warnings

    os.environ["TQDM_DISABLE"] = "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    warnings.filterwarnings("ignore")
    logging.getLogger("mteb").setLevel(logging.ERROR)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover
        pass
    try:
        import datasets

        datasets.disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass


def say(text: str, width: int = 78) -> None:
    """Print a long statement (e.g. a page's scale) wrapped, so the rendered page needs no scrolling."""
    import textwrap

    print(textwrap.fill(text, width=width, break_long_words=False, break_on_hyphens=False))
