"""``python -m repro``: the ``repro`` command (:mod:`repro.cli`)."""

from repro.cli import main

main()
