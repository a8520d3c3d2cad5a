"""The papers the book replicates, one entry each: the seam a fourth paper plugs into.

A :class:`Paper` names its package (``repro.<name>``, which imports the core, the store and training only, never
another paper: ``tests/test_layout.py`` reads its rule from here), its book pages (its summary first), and the
function that builds its claims-ledger rows from the stored results of its pages (``rows``, as
``"module:function"``, imported when the ledger is built, or a function). The ledger (:mod:`repro.crosspaper.ledger`)
and the titles every page shows (:data:`repro.crosspaper.ledger_schema.PAPERS`) loop over :data:`REGISTRY`;
:func:`registered` adds a paper for the duration of a block (a test's toy paper, a paper being built). The README's
"Adding a paper" section is the recipe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

from repro.pages.parameters import page_parameters

if TYPE_CHECKING:  # type hints only: the `repro` command reads the registry and need not load pandas
    import pandas as pd


@dataclass(frozen=True)
class Paper:
    number: int
    title: str  # as every page and the ledger's "paper" column show it
    package: str  # repro.<name>
    pages: tuple[str, ...]  # its book pages, its summary first
    rows: str | Callable[..., pd.DataFrame]  # (profile, recompute[, pages]) -> ledger comparison rows
    ledger_pages: tuple[str, ...] = ()  # its pages whose parameters the ledger may take others for
    commands: tuple[tuple[str, str], ...] = ()  # its `repro` commands: (name, "module[:function]" running it)
    facts: str | Callable[[str], dict] = ""  # its summary's scope, what was hard, and the scale: (profile) -> dict
    leaderboard: str | Callable[[str], dict] = ""  # its leaderboard rows: (backbone) -> {row id: (Row, scores)}
    training_free: bool = False  # its methods train nothing (the leaderboard lists those first)
    hours: str | Callable[[str], dict] = ""  # its trained rows' training hours: (backbone) -> {row id: hours}

    @property
    def summary(self) -> str:
        return self.pages[0]

    def summary_facts(self, profile: str = "standard") -> dict[str, str]:
        """Its summary's ``scope``, ``hard`` and ``scale`` (:func:`repro.crosspaper.summaries.scope_and_scale`)."""
        if not self.facts:
            raise ValueError(f"paper {self.number} ({self.title}) registers no summary facts")
        return _resolve(self.facts)(profile)

    def leaderboard_rows(self, backbone: str) -> dict:
        """Its methods' leaderboard rows on ``backbone`` (:mod:`repro.crosspaper.leaderboard`)."""
        return _resolve(self.leaderboard)(backbone) if self.leaderboard else {}

    def training_hours(self, backbone: str) -> dict[str, float]:
        """The training wall-clock hours behind its leaderboard rows on ``backbone``, by row id (none: trains
        nothing, or registers no hours)."""
        return _resolve(self.hours)(backbone) if self.hours else {}

    def ledger_rows(self, profile: str = "standard", recompute: bool = False,
                    pages: dict[str, dict] | None = None) -> pd.DataFrame:
        """Its comparison rows (the ledger's schema), titled with this paper."""
        build = _resolve(self.rows)
        if self.ledger_pages:  # the pages it takes other parameters for (the rest are other papers')
            rows = build(profile, recompute, {k: v for k, v in (pages or {}).items() if k in self.ledger_pages})
        else:
            rows = build(profile, recompute)
        return rows.assign(paper=self.title)


def _resolve(target: str | Callable) -> Callable:
    """A ``"module:function"`` imported (when the ledger or a summary is built), or the function itself."""
    if callable(target):
        return target
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)


REGISTRY: dict[int, Paper] = {paper.number: paper for paper in (
    Paper(1, "Pooling and Attention (Tang & Yang, arXiv 2409.02727)", "repro.pooling_attention",
          ("p1_summary", "p1_layer_correlation", "p1_layerwise_mteb", "p1_train", "p1_tables", "p1_converged",
           "p1_robustness"), "repro.crosspaper.ledger_paper1:paper1_rows",
          commands=(("train", "repro.pooling_attention.trained"), ("layerwise", "repro.pooling_attention.layerwise")),
          facts="repro.crosspaper.summaries:paper1_facts",
          leaderboard="repro.crosspaper.leaderboard:paper1_leaderboard",
          hours="repro.crosspaper.leaderboard_costs:paper1_hours"),
    Paper(2, "EmbedFilter (Wu et al., arXiv 2606.07502)", "repro.embedfilter",
          ("p2_summary", "p2_main_table", "p2_filter_types", "p2_vocab_probe", "p2_spectrum", "p2_dimension_cost"),
          "repro.crosspaper.ledger_paper2:paper2_rows", ledger_pages=("p2_main_table", "p2_filter_types"),
          commands=(("embedfilter", "repro.embedfilter.sweep"),), facts="repro.crosspaper.summaries:paper2_facts",
          leaderboard="repro.crosspaper.leaderboard:paper2_leaderboard", training_free=True),
    Paper(3, "AutoRegEmbed (Deng et al., arXiv 2502.11401)", "repro.autoregembed",
          ("p3_summary", "p3_tables", "p3_converged", "p3_data_efficiency", "p3_ablations", "p3_memory"),
          "repro.crosspaper.ledger_paper3:paper3_rows",
          ledger_pages=("p3_tables", "p3_data_efficiency", "p3_ablations", "p3_memory"),
          commands=(("autoreg", "repro.autoregembed.experiments.cli"),
                    ("objective-cost", "repro.autoregembed.objective_cost")),
          facts="repro.crosspaper.summaries:paper3_facts",
          leaderboard="repro.crosspaper.leaderboard_paper3:paper3_leaderboard",
          hours="repro.crosspaper.leaderboard_paper3:paper3_hours"),
)}


def papers() -> list[Paper]:
    """The registered papers in their order."""
    return [REGISTRY[n] for n in sorted(REGISTRY)]


@contextmanager
def registered(paper: Paper) -> Iterator[Paper]:
    """``paper`` in the registry for the block (its number must be free)."""
    if not isinstance(paper, Paper):
        raise TypeError(f"register a repro.crosspaper.registry.Paper, got {type(paper).__name__}")
    if paper.number in REGISTRY:
        raise ValueError(f"paper {paper.number} is registered already ({REGISTRY[paper.number].title})")
    REGISTRY[paper.number] = paper
    try:
        yield paper
    finally:
        del REGISTRY[paper.number]


def page_overrides(pages: dict[str, dict] | None, profile: str = "standard") -> dict[str, dict]:
    """``pages`` (page name -> parameters overriding the book's) checked before anything is read: only a registered
    paper's ``ledger_pages`` take other parameters in the ledger, and only parameters they have."""
    if pages is None:
        return {}
    if not isinstance(pages, dict):
        raise TypeError(f"pages must be a dict of page name -> parameters, got {type(pages).__name__}")
    allowed = [name for paper in papers() for name in paper.ledger_pages]
    unknown = set(pages) - set(allowed)
    if unknown:
        raise ValueError(f"the ledger takes other parameters only for {', '.join(allowed)}; got "
                         f"{', '.join(sorted(unknown))}")
    for name, params in pages.items():
        page_parameters(name, profile, params)  # an unknown parameter or a non-dict fails here
    return pages
