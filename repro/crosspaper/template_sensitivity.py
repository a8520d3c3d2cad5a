"""Would an official input template change a ledger verdict? Two checks, one rule: the whole ledger computed again
with some pages' runs under the official template (the same tests, the same Benjamini-Hochberg family), each
statement's verdict set beside the published one. Paper 3's check is below; Paper 2's (:data:`P2`) reruns the
sweep pages' PromptEOL under the template of EmbedFilter's official scripts (``run4*_prompteol.py``: "Summarize
the sentence", the book's ``prompteol-summarize``) where the book uses PromptEOL's original "This sentence".

Paper 3: would AutoRegEmbed's official input template change a ledger verdict?

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

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from repro.autoregembed.experiments.configs import page_configs
from repro.autoregembed.experiments.data_efficiency import missing_autoreg
from repro.core.commands import build_command
from repro.crosspaper.ledger import claims_ledger
from repro.crosspaper.statements import statements, summary_counts
from repro.embedfilter.sweep import stored_scores
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


@dataclass(frozen=True)
class Check:
    """One template check: the pages run again (``overrides``: page -> parameters), what they are called in the
    answer (``runs``), the alternative's column (``label``), what the store lacks of them (``pending``) and the
    command that runs them (``rerun``)."""
    overrides: dict[str, dict]
    runs: str
    label: str
    pending: Callable[[str], list[str]]
    rerun: str


P2_PROMPTS = ["prompteol-summarize", "echo"]  # PromptEOL under the official scripts' template; Echo's is the same
# the sweep pages' current scope with the official template's PromptEOL; no earlier scope (history is not re-judged)
P2_OVERRIDES = {page: {"prompts": P2_PROMPTS, "earlier_tasks": []} for page in ("p2_main_table", "p2_filter_types")}
P2_RERUN = "scripts/p2_sweeps.sh " + " ".join(f"{b}:prompteol-summarize" for b in
                                              ("smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"))


def p2_pending(profile: str = "standard") -> list[str]:
    """What the store lacks of the sweep pages' runs under the official scripts' PromptEOL template: each backbone
    whose "prompteol-summarize" sweep has fewer tasks than its PromptEOL sweep of the same scope."""
    main = page_parameters("p2_main_table", profile)
    scores = stored_scores(main["suite"], tokenization=main.get("tokenization", "pieces"))
    todo = []
    for backbone in main["backbones"]:
        tasks = {p: set(scores.loc[(scores.backbone == backbone) & (scores.prompt == p), "task"]) if len(scores)
                 else set() for p in ("prompteol", "prompteol-summarize")}
        wanted = set(main["tasks"]) if main["tasks"] else tasks["prompteol"]
        if not wanted or not wanted <= tasks["prompteol-summarize"]:
            todo.append(f"{backbone}: {len(wanted & tasks['prompteol-summarize'])} of {len(wanted)} tasks")
    return todo


def verdicts_under(profile: str = "standard", ledger: pd.DataFrame | None = None, check: Check | None = None
                   ) -> pd.DataFrame:
    """The statements with a comparison on the check's pages (Paper 3's data-efficiency page unless ``check`` is
    given): the published ledger's verdict (``ledger``, computed if not given) beside the verdict of the same ledger
    with those pages' runs under the official template, whether it changed, and the statement's other pages (their
    comparisons stay as published). Empty while the check's runs are pending."""
    check = check or P3
    if check.pending(profile):
        return pd.DataFrame(columns=check_columns(check))
    published = statements(ledger if ledger is not None else claims_ledger(profile))
    other = statements(claims_ledger(profile, pages=check.overrides))
    headline = summary_counts(other[other["tier"] == "headline"].groupby("verdict").size())
    names = other["pages"].str.split(", ")
    checked = set(check.overrides)
    other = other[names.map(lambda found: bool(checked & set(found)))].assign(**{
        "other pages (book template)": names.map(lambda found: ", ".join(n for n in found if n not in checked))})
    keys = ["paper", "statement"]
    table = other.rename(columns={"verdict": check.label}).merge(
        published[[*keys, "verdict"]].rename(columns={"verdict": "book template"}), on=keys, how="left")
    table["changed"] = table["book template"] != table[check.label]
    table = table[check_columns(check)]
    table.attrs["headline"] = headline  # the whole ledger's headline counts under the official template
    return table


def check_columns(check: Check) -> list[str]:
    return [c if c != "official template" else check.label for c in COLUMNS]


def sentence(table: pd.DataFrame, profile: str = "standard", check: Check | None = None) -> str:
    """The answer in one sentence (without its final period): how many of the statements the check's runs test
    change verdict under the official template, and which."""
    check = check or P3
    if table.empty:
        todo = check.pending(profile)
        return (f"{check.runs} under the official template are not all stored yet (" + "; ".join(todo)
                + f"; `{check.rerun}` runs them)") if todo else f"no ledger statement rests on {check.runs}"
    changed = table[table["changed"]]
    if changed.empty:
        return (f"with {check.runs} made under the official template, none of the {len(table)} "
                "statements they test changes verdict")
    counts = table.attrs.get("headline")
    total = (f" (the headline count would read {counts['supported']} supported and {counts['contradicted']} "
             f"contradicted of {counts['tested']} tested)" if counts else "")
    return (f"with {check.runs} made under the official template, {len(changed)} of the {len(table)} "
            f"statements they test {'changes' if len(changed) == 1 else 'change'} verdict: " + "; ".join(
                f"\"{r['statement']}\" {r['book template']} → {r[check.label]}" for _, r in changed.iterrows())
            + total)


# Paper 3's check: the data-efficiency page's AutoRegEmbed runs; its pending list is read when it is asked for
P3 = Check(OFFICIAL, "the data-efficiency runs", "official template", lambda profile: pending(profile), RERUN)
P2 = Check(P2_OVERRIDES, "the sweep pages' PromptEOL runs", "official scripts' template",
           lambda profile: p2_pending(profile), P2_RERUN)
