"""The declared margins, by metric family: a task category's main score (:data:`MARGINS`, points x100, with the
metric each category's main score is: :data:`METRICS`) and the statistics that are not scores
(:data:`STATISTIC_MARGINS`, each in its own unit: :data:`UNITS`), with the reasons the glossary shows beside the
run-to-run SDs measured here (:mod:`repro.crosspaper.margins`). :mod:`repro.verdicts.rule` decides with them."""

from __future__ import annotations

MARGIN = 1.0  # points x100 on a mean over mixed categories, or a statistic with no family of its own
# per metric family (a task category's main score, x100): the margin, and why (the glossary shows both beside the
# run-to-run SDs measured here, repro.crosspaper.margins)
MARGINS = {"STS": 1.0, "Summarization": 1.0, "Classification": 1.0, "Clustering": 1.0, "PairClassification": 1.0,
           "Reranking": 1.0, "Retrieval": 2.0}
METRICS = {"STS": "Spearman (cosine)", "Summarization": "Spearman (cosine)", "Classification": "accuracy",
           "Clustering": "V-measure", "PairClassification": "average precision", "Reranking": "MAP",
           "Retrieval": "nDCG@10"}
MARGIN_REASONS = {
    "STS": "Tang & Yang call gains under a point 'no meaningful gain'; EmbedFilter's quoted STS gains are 1.7-6.5; "
           "AutoRegEmbed calls its 0.05-0.2-point ablation differences 'similar'",
    "Summarization": "a Spearman correlation like STS's",
    "Classification": "the papers report classification differences of a point or more as findings",
    "Clustering": "the papers report clustering differences of a point or more as findings",
    "PairClassification": "the papers report pair-classification differences of a point or more as findings",
    "Reranking": "the papers report reranking differences of a point or more as findings",
    "Retrieval": "nDCG@10 on our capped corpora varies by 3-11 points between runs of one design: a 1-point margin "
                 "could not be resolved with 3-5 runs; the papers' retrieval findings are several points",
}
# statistics that are not task scores, by family: the margin, the unit the ledger's "difference" is in, and why (the
# glossary's margins table shows them beside the score families)
STATISTIC_MARGINS = {"CKA": 1.0, "rho": 0.0, "log-frequency": 0.0, "band-alignment": 0.0}
UNITS = {"CKA": "linear CKA x100", "rho": "Spearman rho (token logit vs log corpus frequency)",
         "log-frequency": "mean log corpus frequency of a sentence's top tokens (nats)",
         "band-alignment": "Spearman rho x100, the removed band's minus the random bands' mean"}
SHORT_UNITS = {"CKA": "CKA x100", "rho": "rho", "log-frequency": "nats", "band-alignment": "rho x100"}  # in tables
STATISTIC_REASONS = {
    "CKA": "the same 1-point (0.01) resolution as a score x100; Tang & Yang's Figure 1 contrasts adjacent layers "
           "(CKA near 1) with distant ones tens of points lower, so the margin sits far below the effect claimed",
    "rho": "EmbedFilter's observation is directional (raw embeddings align with frequent tokens; the filter lowers "
           "it) and quotes no size: none is declared, a significant shift in the claimed direction counts; the "
           "difference is in its own unit, never compared with a score margin",
    "log-frequency": "as for rho: a directional observation with no quoted size, in its own unit (nats)",
    "band-alignment": "a one-sided rank against 1,000 random bands of the same size: the claim is that the removed "
                      "band is more aligned than chance, with no quoted size",
}


def margin_for(category: str | None) -> float:
    """The declared margin of a category's main score (:data:`MARGINS`) or of a statistic family that is not a score
    (:data:`STATISTIC_MARGINS`); :data:`MARGIN` for a mixed mean."""
    return MARGINS.get(str(category), STATISTIC_MARGINS.get(str(category), MARGIN))


def unit_of(family: str | None) -> str:
    """The short unit of a difference in ``family``, as a table shows it: a statistic family's own
    (:data:`SHORT_UNITS`; in full: :data:`UNITS`), else points x100 of a score (a task category's main score, or a
    mean over categories)."""
    return SHORT_UNITS.get(str(family), "points x100")
