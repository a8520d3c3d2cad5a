"""``repro build --profile paper --dry-run``: every page of the ``paper`` profile resolved without downloading or
running anything (:mod:`repro.pages.paper_profile`), printed with its settings and a GPU-hour estimate."""

from __future__ import annotations

import pandas as pd

from repro.core.backbones import resolve
from repro.core.tasks import check_task_names
from repro.pages.paper_profile import ACCELERATE_CONFIG, GPU, NOT_CARRIED, PAPER_OF, SOURCES, page_work
from repro.pages.parameters import NOTEBOOKS, page_parameters


def dry_run(names=None):
    """Resolve every page of the ``paper`` profile without downloading anything: (page, settings, checks, GPU-hour
    estimate) rows, as a pandas frame."""
    rows = []
    for name in names or NOTEBOOKS:
        p = page_parameters(name, "paper")
        backbones = [b for key in ("backbone", "backbones", "reference_backbone") if key in p
                     for b in ([p[key]] if isinstance(p[key], str) else p[key])]
        for backbone in backbones:
            resolve(backbone)  # an HF id resolves to itself: nothing is fetched
        tasks = check_task_names(p["tasks"], "mteb") if p.get("tasks") else []
        work = page_work(name, p)
        rows.append({"page": name, "paper": PAPER_OF.get(name[:2], "-"), "backbones": ", ".join(backbones) or "-",
                     "tasks": len(tasks), "settings": {k: v for k, v in p.items() if k not in ("tasks", "profile")},
                     "gpu_hours": sum(w.gpu_hours for w in work),
                     "work": "; ".join(f"{w.kind} {w.what}: {w.gpu_hours:.1f} h" for w in work) or "reads stored results"})
    return pd.DataFrame(rows)


def print_dry_run(names=None) -> None:
    frame = dry_run(names)
    print(f"paper profile: {len(frame)} pages resolved (nothing downloaded). GPU-hours are an order-of-magnitude "
          f"FLOP estimate on {GPU['name']} at {GPU['utilisation']:.0%} of {GPU['tflops_bf16']:.0f} bf16 TFLOP/s, "
          f"not a measurement. Multi-GPU: accelerate launch --config_file {ACCELERATE_CONFIG}.\n")
    for row in frame.itertuples():
        print(f"== {row.page} (paper {row.paper}): ~{row.gpu_hours:,.1f} GPU-hours")
        print(f"   backbones: {row.backbones}; MTEB tasks: {row.tasks}")
        print(f"   settings: {row.settings}")
        print(f"   work: {row.work}")
    print(f"\ntotal: ~{frame['gpu_hours'].sum():,.0f} GPU-hours; settings from: " + " | ".join(
        f"paper {k}: {v}" for k, v in SOURCES.items()))
    for paper, text in NOT_CARRIED.items():
        print(f"not carried (paper {paper}): {text}")
