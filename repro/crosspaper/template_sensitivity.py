"""Would AutoRegEmbed's official input template change a ledger verdict?

The book's Paper 3 pages run AutoRegEmbed with the book's input template (``template="book"``,
:data:`repro.autoregembed.config.TEMPLATES`); the official-template check
(:mod:`repro.autoregembed.experiments.template_check`) finds stage 1 much worse under the official template on this
backbone. The budget-rule page's own check tests its "alignment improves on compression only" under the official
template (:func:`repro.autoregembed.experiments.template_check.alignment_under_official`; its other statement,
against contrastive training, has one training run per method and no verdict under either template). Of the other pages
whose AutoRegEmbed runs give the ledger its Paper 3 rows, only the data-efficiency page tests with training runs as
units (Figure 3: the runs of each training-set size): the single-run pages (Tables 1-2, the ablations) give "one run
per method, no verdict" under either template, and the memory measurement does not depend on the template.

So the data-efficiency page is run again under the official template (:data:`OFFICIAL`: ``python -m
repro build --only p3_data_efficiency -p template=official``), and the whole ledger is computed again with
those runs in place of the book's (the same tests, the same Benjamini-Hochberg family): :func:`verdicts_under`
sets its verdicts beside the published ledger's, statement by statement. Read from the result store only.
"""

from __future__ import annotations

import pandas as pd

from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.data_efficiency import missing_autoreg
from repro.core.commands import build_command
from repro.crosspaper.ledger import claims_ledger
from repro.crosspaper.statements import statements, summary_counts
from repro.pages.parameters import page_parameters

PAGE = "p3_data_efficiency"
OFFICIAL = {PAGE: {"template": "official"}}  # the data-efficiency page's AutoRegEmbed runs under the official template
RERUN = build_command(PAGE, {"template": "official"})
COLUMNS = ["paper", "statement", "tier", "book template", "official template", "changed",
           "other pages (book template)"]  # the last: the statement's comparisons on pages not run again


def pending(profile: str = "standard") -> list[str]:
    """What the store lacks of the data-efficiency page under the official template (empty: complete)."""
    d = page_parameters(PAGE, profile, OFFICIAL[PAGE])
    _, base = page_configs(**d)
    if "AutoRegEmbed" not in d["methods"]:
        return []
    return missing_autoreg(base, d["sizes"], d["seeds"], d["epochs"], d["references"], d["suite"], d["tasks"])


def verdicts_under(profile: str = "standard", ledger: pd.DataFrame | None = None) -> pd.DataFrame:
    """The statements with a comparison on the data-efficiency page: the published ledger's verdict (``ledger``,
    computed if not given) beside the verdict of the same ledger with that page's runs under the official template,
    whether it changed, and the statement's other pages (their comparisons stay as published). Empty while
    :func:`pending` is not."""
    if pending(profile):
        return pd.DataFrame(columns=COLUMNS)
    published = statements(ledger if ledger is not None else claims_ledger(profile))
    other = statements(claims_ledger(profile, pages=OFFICIAL))
    headline = summary_counts(other[other["tier"] == "headline"].groupby("verdict").size())
    names = other["pages"].str.split(", ")
    other = other[names.map(lambda found: PAGE in found)].assign(**{
        "other pages (book template)": names.map(lambda found: ", ".join(n for n in found if n != PAGE))})
    keys = ["paper", "statement"]
    table = other.rename(columns={"verdict": "official template"}).merge(
        published[[*keys, "verdict"]].rename(columns={"verdict": "book template"}), on=keys, how="left")
    table["changed"] = table["book template"] != table["official template"]
    table = table[COLUMNS]
    table.attrs["headline"] = headline  # the whole ledger's headline counts under the official template
    return table


def sentence(table: pd.DataFrame, profile: str = "standard") -> str:
    """The answer in one sentence (without its final period): how many of the statements the data-efficiency runs
    test change verdict under the official template, and which."""
    if table.empty:
        todo = pending(profile)
        return ("the data-efficiency runs under the official template are not all stored yet (" + "; ".join(todo)
                + f"; `{RERUN}` runs them)") if todo else "no ledger statement rests on the data-efficiency runs"
    changed = table[table["changed"]]
    if changed.empty:
        return (f"with the data-efficiency runs made under the official template, none of the {len(table)} "
                "statements they test changes verdict")
    counts = table.attrs.get("headline")
    total = (f" (the headline count would read {counts['supported']} supported and {counts['contradicted']} "
             f"contradicted of {counts['tested']} tested)" if counts else "")
    return (f"with the data-efficiency runs made under the official template, {len(changed)} of the {len(table)} "
            "statements they test change verdict: " + "; ".join(
                f"\"{r['statement']}\" {r['book template']} → {r['official template']}" for _, r in changed.iterrows())
            + total)
