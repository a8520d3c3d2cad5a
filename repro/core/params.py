"""Parameter checking for whatever a user typed (papermill page parameters, a paper's page configurations): one
clear TypeError per bad value, naming the parameter and the form that works."""

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
            item = expected[1]
            if not isinstance(value, list) or not all(isinstance(v, item) and not _bool_for_number(v, item)
                                                      for v in value):
                raise TypeError(f"parameter '{name}' must be a list of {_type_names(item)}, got {value!r}: "
                                f"{list_hint(name)}")
            continue
        if _bool_for_number(value, expected):
            raise TypeError(f"parameter '{name}' must be {_type_names(expected)}, got {value!r}")
        if not isinstance(value, expected):
            raise TypeError(f"parameter '{name}' must be {_type_names(expected)}, got {type(value).__name__} {value!r}")


def list_hint(name: str) -> str:
    """How to give a list parameter on the command line, in the forms that work: papermill's ``-p`` always passes
    a string, so lists go through ``-y`` (YAML); ``repro build -p`` parses a Python/JSON literal."""
    return (f"with papermill, give lists as YAML: -y '{name}: [a, b]'; "
            f"with the build: repro build --only PAGE -p '{name}=[\"a\", \"b\"]'")


def _type_names(expected) -> str:
    return expected.__name__ if isinstance(expected, type) else " or ".join(t.__name__ for t in expected)


def _bool_for_number(value, expected) -> bool:
    """True/False where a number is expected (bool is an int subclass, so isinstance would let it through)."""
    types = expected if isinstance(expected, tuple) else (expected,)
    return isinstance(value, bool) and bool not in types and any(t in (int, float) for t in types)
