"""Task suites: how much of each task a run evaluates (seeded caps), so that a suite fits this machine.

``smoke`` (tests: tens of examples), ``small`` (many trained runs of a sweep), ``compact`` (sweeps over many
backbones x prompts; the leaderboard), ``standard`` (the book's default), ``full`` (uncapped), ``mteb`` (the real
MTEB tasks, online). The caps and the sampling seed are part of every result's key (:func:`describe_suite`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Caps:
    """Size caps of one suite (``None`` = uncapped). Sampling is seeded and recorded."""

    sts_pairs: int | None = None
    cls_test: int | None = None
    cls_train: int | None = None
    clustering_docs: int | None = None
    clustering_subsets: int = 10
    pairs: int | None = None
    queries: int | None = None
    corpus: int | None = None
    seed: int = 0


SUITES: dict[str, Caps] = {
    "smoke": Caps(sts_pairs=24, cls_test=32, cls_train=64, clustering_docs=60, clustering_subsets=2,
                  pairs=32, queries=8, corpus=40),
    "standard": Caps(sts_pairs=1500, cls_test=2000, cls_train=None, clustering_docs=None,
                     clustering_subsets=10, pairs=2000, queries=200, corpus=500),
    # compact: every task, smaller samples, for sweeps over several backbones x prompts (EmbedFilter)
    "compact": Caps(sts_pairs=500, cls_test=300, cls_train=1000, clustering_docs=None,
                    clustering_subsets=3, pairs=500, queries=50, corpus=200),
    # small: for the many trained runs of a sweep (Paper 3's data-efficiency curves and ablations), read on STS
    "small": Caps(sts_pairs=200, cls_test=200, cls_train=500, clustering_docs=None, clustering_subsets=2,
                  pairs=300, queries=30, corpus=150),
    "full": Caps(),
    # mteb: the real MTEB tasks, downloaded by mteb (needs a network), uncapped: the `paper` profile's suite
    "mteb": Caps(),
}
ONLINE_SUITES = ("mteb",)
# IMDB reviews are ~300 tokens each: the capped suites cap its test split harder.
LONG_TEXT_TEST_CAP = {"standard": 300, "compact": 60, "small": 40}


def suite_caps(suite: str) -> Caps:
    if suite not in SUITES:
        raise ValueError(f"unknown suite '{suite}'; valid: {', '.join(SUITES)}")
    return SUITES[suite]


def describe_suite(suite: str) -> dict:
    """The suite's caps as stored in result keys (never change its output: keys are built from it)."""
    return {"suite": suite, **asdict(suite_caps(suite)),
            "imdb_test_cap": LONG_TEXT_TEST_CAP.get(suite)}


_CAP_WORDS = (("sts_pairs", "STS pairs"), ("cls_test", "classification test examples"),
              ("cls_train", "classification training examples"), ("clustering_docs", "clustering documents"),
              ("clustering_subsets", "clustering subsets"), ("pairs", "pair-classification pairs"),
              ("queries", "retrieval queries"),
              ("corpus", "corpus documents (the sampled queries' relevant ones first)"))


def suite_caps_text(suite: str) -> str:
    """The caps of ``suite`` in words, for a page's scale line (the facts of
    :func:`describe_suite`, which keys results): ``"at most 500 STS pairs, 300 classification test
    examples, ...; sampling seed 0"``."""
    caps = suite_caps(suite)
    parts = [f"{getattr(caps, field):,} {words}" for field, words in _CAP_WORDS if getattr(caps, field) is not None]
    uncapped = [words for field, words in _CAP_WORDS if getattr(caps, field) is None]
    long_cap = LONG_TEXT_TEST_CAP.get(suite)
    text = f"at most {', '.join(parts)} per task" if parts else "nothing capped"
    if long_cap is not None:
        text += f", {long_cap:,} Imdb test texts"
    if parts and uncapped:
        text += f"; uncapped: {', '.join(uncapped)}"
    return f"{text}; sampling seed {caps.seed}"
