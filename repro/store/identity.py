"""The identity of a run's configuration: the dict its result keys and checkpoint checks are built from."""

from __future__ import annotations

from dataclasses import asdict, fields, is_dataclass


def config_identity(config) -> dict:
    """``asdict(config)`` without the fields the class added later (``ADDED_LATER``) while at their defaults
    (also in nested configs, e.g. an AutoRegEmbed stage 2's stage 1), so that adding a setting keeps the keys
    of every result stored before it."""
    values = asdict(config)
    for f in fields(config):
        if is_dataclass(getattr(config, f.name)):
            values[f.name] = config_identity(getattr(config, f.name))
    for name in getattr(config, "ADDED_LATER", ()):
        default = next(f.default for f in fields(config) if f.name == name)
        if values[name] == default:
            del values[name]
    return values
