"""Command line: train and score one AutoRegEmbed stage, or the untrained baselines.

    python -m repro.autoregembed.experiments.cli --stage align --steps 100 --suite compact"""

from __future__ import annotations

import argparse
from dataclasses import fields

from repro.autoregembed.config import AlignConfig, CompressConfig
from repro.autoregembed.experiments.baselines import evaluate_untrained
from repro.autoregembed.experiments.scores import evaluate_autoreg
from repro.training.cli import argument_type

SHARED = ("backbone", "finetune", "compression_tokens", "template")  # stage 1 takes these from stage 2's options


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
