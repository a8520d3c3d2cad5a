"""``python -m repro.autoregembed.experiments``: the command line of :mod:`repro.autoregembed.experiments.cli`."""

from repro.autoregembed.experiments.cli import main

main()
