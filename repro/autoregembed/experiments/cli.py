"""Command line: train and score one AutoRegEmbed stage, or the untrained baselines.

    python -m repro.autoregembed.experiments.cli --stage align --steps 100 --suite compact"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import MISSING, fields

from repro.autoregembed.config import TEMPLATE_SETTINGS, AlignConfig, CompressConfig
from repro.autoregembed.experiments.baselines import evaluate_untrained
from repro.autoregembed.experiments.scores import evaluate_autoreg
from repro.training.cli import argument_type

SHARED = ("backbone", "finetune", "compression_tokens", "template", "cut", "bos")  # stage 1 takes these from stage 2's options


def config_from_arguments(args: dict) -> CompressConfig | AlignConfig:
    """A stage-1 or stage-2 configuration from flat ``--option`` values (stage 1 options prefixed compress_)."""
    stage = args.pop("stage")
    compress = {f.name: args.pop(f"compress_{f.name}") for f in fields(CompressConfig)}
    for name in SHARED:  # shared; stage 1 keeps its own seed
        compress[name] = args[name]
    compress_config = CompressConfig(**compress)
    if stage == "compress":
        return compress_config
    without = args.pop("no_compression")
    return AlignConfig(compress=None if without else compress_config, **args)


def _default(f):
    return f.default_factory() if f.default is MISSING else f.default


def _text(value) -> str:
    """A value as its option parses it back (:func:`repro.training.cli.argument_type`)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "none"}[value]
    return repr(float(value)) if isinstance(value, float) else str(value)  # a numpy float prints as one too


def _flags(config, prefix: str, skip: tuple[str, ...]) -> list[str]:
    """``--option value`` for each field of ``config`` that differs from its default (and from its template's
    setting, which the parser fills in), in field order."""
    settings = TEMPLATE_SETTINGS[config.template] if isinstance(config, AlignConfig) else {}
    out = []
    for f in fields(config):
        value = getattr(config, f.name)
        if f.name in skip or value == _default(f) or settings.get(f.name, MISSING) == value:
            continue
        if value is None and _default(f) is not None:
            raise ValueError(f"{f.name}=None has no command-line form (its option takes a {type(_default(f)).__name__})")
        out += [f"--{prefix}{f.name.replace('_', '-')}", shlex.quote(_text(value))]
    return out


def command_for(config: CompressConfig | AlignConfig, suite: str = "compact") -> str:
    """The command line that trains and scores ``config`` (the inverse of :func:`config_from_arguments`: only the
    options that differ from the defaults, so a printed command reproduces the run it names)."""
    if isinstance(config, CompressConfig):
        flags = ["--stage", "compress"] + _flags(config, "compress-", SHARED) + _shared_flags(config)
    else:
        flags = ["--stage", "align"] + _flags(config, "", ("compress",))
        if config.compress is None:
            flags.append("--no-compression")
        else:  # the shared options are stage 2's (AlignConfig checks that stage 1 has the same)
            flags += _flags(config.compress, "compress-", SHARED)
    return " ".join(["python -m repro.autoregembed.experiments.cli", *flags, "--suite", suite])


def _shared_flags(config: CompressConfig) -> list[str]:
    """Stage 1's shared options (backbone, template, ...), which a stage-1 command sets through stage 2's flags."""
    defaults = {f.name: _default(f) for f in fields(AlignConfig)}
    return [part for name in SHARED if getattr(config, name) != defaults[name]
            for part in (f"--{name.replace('_', '-')}", shlex.quote(_text(getattr(config, name))))]


def add_arguments(parser: argparse.ArgumentParser) -> None:

    parser.add_argument("--stage", choices=("compress", "align"), default="align")
    parser.add_argument("--no-compression", action="store_true", help="stage 2 from the raw backbone (ablation)")
    for f in fields(AlignConfig):
        if f.name != "compress":
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=argument_type(f.default), default=f.default)
    for f in fields(CompressConfig):
        if f.name not in SHARED:
            parser.add_argument(f"--compress-{f.name.replace('_', '-')}", dest=f"compress_{f.name}",
                                type=argument_type(f.default), default=f.default)
    for name in SHARED:
        parser.set_defaults(**{f"compress_{name}": None})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--suite", default="compact")
    parser.add_argument("--tasks", nargs="*")
    parser.add_argument("--untrained", action="store_true", help="score the untrained baselines instead")
    args = vars(parser.parse_args(argv))
    suite, tasks = args.pop("suite"), args.pop("tasks")
    if args.pop("untrained"):
        frame = evaluate_untrained(args["backbone"], suite, tasks)
        print(frame.groupby(["method", "task"])["main_score"].mean().to_string())
        return
    frame = evaluate_autoreg(config_from_arguments(args), suite, tasks)
    print(frame.groupby("task")["main_score"].mean().to_string())


if __name__ == "__main__":
    main()
