"""The identity of a run's configuration: the dict its result keys and checkpoint checks are built from."""

from __future__ import annotations

from dataclasses import asdict, fields, is_dataclass


def legacy_value(cls_or_config, name: str):
    """The value a setting added later stands for in identities stored before it existed: the class's ``LEGACY``
    entry (a setting whose default for new runs differs from what the earlier runs did), else its default."""
    legacy = getattr(cls_or_config, "LEGACY", {})
    if name in legacy:
        return legacy[name]
    return next(f.default for f in fields(cls_or_config) if f.name == name)


def config_identity(config) -> dict:
    """``asdict(config)`` without the fields the class added later (``ADDED_LATER``) while at their legacy values
    (:func:`legacy_value`; also in nested configs, e.g. an AutoRegEmbed stage 2's stage 1), so that adding a
    setting keeps the keys of every result stored before it."""
    values = asdict(config)
    for f in fields(config):
        if is_dataclass(getattr(config, f.name)):
            values[f.name] = config_identity(getattr(config, f.name))
    for name in getattr(config, "ADDED_LATER", ()):
        if values[name] == legacy_value(config, name):
            del values[name]
    return values


def config_from_identity(cls, identity: dict):
    """The config of class ``cls`` a stored identity stands for: a setting added later that the identity leaves
    out takes its legacy value (:func:`legacy_value`), not the default of new runs; unknown names are ignored."""
    names = {f.name for f in fields(cls)}
    values = {name: value for name, value in identity.items() if name in names}
    for name in getattr(cls, "ADDED_LATER", ()):
        if name not in values:
            values[name] = legacy_value(cls, name)
    return cls(**values)
