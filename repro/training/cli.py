"""Command-line options from a config dataclass: one ``--option`` per field, parsed by the field's type."""

from __future__ import annotations

import argparse
from dataclasses import fields


def add_config_arguments(parser: argparse.ArgumentParser, config_class, skip: tuple[str, ...] = ()) -> None:
    """One ``--option`` per field of the dataclass ``config_class`` (except ``skip``), defaulting to the field's
    default and parsed by :func:`argument_type`."""
    for f in fields(config_class):
        if f.name in skip:
            continue
        parser.add_argument(f"--{f.name.replace('_', '-')}", type=argument_type(f.default), default=f.default)


def _parse_bool(text: str) -> bool:
    if text.lower() not in ("true", "false", "1", "0"):
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return text.lower() in ("true", "1")


def _parse_optional(text: str):
    """A field whose default is None (unset): ``none``, true/false, or a number."""
    if text.lower() == "none":
        return None
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected none, true, false or a number, got {text!r}") from None


def argument_type(default):
    """The command-line parser of a config field: ints, floats, strings, booleans as true/false
    (``bool("false")`` would be True), and fields unset by default (None) as none, true/false or a number;
    ``model`` takes a number or a baseline name."""
    if isinstance(default, bool):
        return _parse_bool
    if default is None:
        return _parse_optional
    if isinstance(default, int):
        return lambda text: int(text) if text.lstrip("-").isdigit() else text
    return type(default)
