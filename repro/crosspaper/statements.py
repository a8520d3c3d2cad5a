"""The claims ledger's statements: one row per paper statement, in the paper's words, with one verdict from its
comparisons (:func:`statements`), counted per tier (:func:`verdict_counts`); how each verdict changed with the
verdict engine (:func:`verdict_changes`, against an earlier ledger stored by ``scripts/ledger_snapshot.py``) and
with superseded runs (:func:`history`). The comparisons come from :mod:`repro.crosspaper.ledger`."""

from __future__ import annotations

import re

import pandas as pd

from repro.crosspaper.ledger import all_comparisons, claims_ledger, statement_of
from repro.crosspaper.ledger_paper1 import LAST_LAYER
from repro.pooling_attention.claims import SENTENCES
from repro.store.results import all_results
from repro.verdicts.rule import (
    ALPHA,
    CONTRADICTED,
    INCONCLUSIVE,
    SAME_MODEL,
    SUPPORTED,
    adjusted_verdict,
    base_verdict,
    is_tested,
    statement_verdict,
    unit_of,
)

ANY = {LAST_LAYER}  # statements of existence: supported by any one of their comparisons
FEW_TASKS = 3  # a category statement resting on this many tasks or fewer says so in its verdict


def statements(ledger: pd.DataFrame) -> pd.DataFrame:
    """One row per paper statement: its tier, its comparisons, the range of their differences (a model against
    itself left out: its 0 is no measurement), the adjusted p that decides it (:func:`_deciding_p`), and one verdict (:func:`repro.verdicts.rule.statement_verdict`; a statement of :data:`ANY` is
    supported by any one supported comparison)."""
    rows = []
    frame = ledger.assign(statement=ledger["claim"].map(statement_of))
    for (paper, statement), part in frame.groupby(["paper", "statement"], sort=False):
        verdicts = _within_statement(part, statement in ANY)
        if statement in ANY:  # "not always": one supported comparison shows it; all contradicted refute it
            verdict = (SUPPORTED if SUPPORTED in verdicts else CONTRADICTED if set(verdicts) == {CONTRADICTED}
                       else statement_verdict([v for v in verdicts if v != CONTRADICTED]))
        else:
            verdict = statement_verdict(verdicts)
        verdict += _few_tasks(part) if is_tested(verdict) else ""
        rows.append({"paper": paper, "statement": statement, "tier": part["tier"].iloc[0],
                     "comparisons": len(part), "ours": ours_range(part), "paper (quoted)": _quotes(part["paper (quoted)"]),
                     "deciding p (BH)": _deciding_p(part, verdict),
                     "verdict": verdict, "power": _power_text(part) if base_verdict(verdict) == INCONCLUSIVE else "",
                     "MixedLM (sensitivity)": _mixed_model(part),
                     "pages": ", ".join(dict.fromkeys(part["page"]))})
    return pd.DataFrame(rows)


def ours_range(part: pd.DataFrame) -> str:
    """The range of a statement's differences (a model against itself left out: its 0 is no measurement), one range
    per unit where its comparisons measure in more than one (e.g. a correlation and a log frequency), each named."""
    ours = pd.to_numeric(part["difference"], errors="coerce").where(part["verdict"].ne(SAME_MODEL))  # 0 by definition
    metric = part["metric"].fillna("").astype(str) if "metric" in part else pd.Series("", index=part.index)
    ranges = []
    for family in dict.fromkeys(metric[ours.notna()]):
        values = ours[ours.notna() & metric.eq(family)]
        text = f"{values.min():+.2f}" if values.nunique() <= 1 else f"{values.min():+.2f} to {values.max():+.2f}"
        ranges.append(text + (f" ({unit_of(family)})" if metric[ours.notna()].nunique() > 1 or family else ""))
    return "; ".join(ranges)


QUOTES = " | "  # between the quotes of a statement's comparisons (e.g. PromptEOL's and Echo's gains, each labelled)


def _quotes(quoted: pd.Series) -> str:
    """A statement's quoted numbers: every distinct quote of its comparisons, each with its own label and source, in
    order (not only the first comparison's); "not quoted" only where none of them is quoted."""
    distinct = list(dict.fromkeys(q for q in quoted.astype(str) if q))
    quotes = [q for q in distinct if not q.startswith("not quoted")]
    return QUOTES.join(quotes) if quotes else (distinct[0] if distinct else "")


def _within_statement(part: pd.DataFrame, existence: bool) -> list[str]:
    """The comparisons' verdicts as the statement reads them: a contradicted comparison (for a statement of
    existence, a supported one) counts only where its Holm p within the statement is below alpha as well
    (:func:`repro.crosspaper.ledger.with_holm`); otherwise it is inconclusive for the statement."""
    holm = part["p (Holm in statement)"] if "p (Holm in statement)" in part else pd.Series(0.0, index=part.index)
    union = SUPPORTED if existence else CONTRADICTED
    return [INCONCLUSIVE if base_verdict(v) == union and not (h < ALPHA) else v
            for v, h in zip(part["verdict"], holm.fillna(1.0))]


def _power_text(part: pd.DataFrame) -> str:
    """For an inconclusive statement, what its least decided comparison (the largest raw p) could show: its 90%
    interval, the effect detectable at 80% power with the units it has, and the units a side that twice the margin
    would need from the measured spreads."""
    tested = part[part["verdict"].map(is_tested) & part["p"].notna()]
    if not len(tested) or "detectable (80% power)" not in tested:
        return ""
    row = tested.loc[tested["p"].astype(float).idxmax()]
    tasks = "task" in str(row["test"]).lower() and "run" not in str(row["test"]).lower()  # deterministic methods
    parts = [f"90% CI {row['90% CI']}"] if isinstance(row["90% CI"], str) and row["90% CI"] else []
    if pd.notna(row["detectable (80% power)"]):
        parts.append(f"detectable at 80% power: {row['detectable (80% power)']:.1f}")
    needed = row["units a side for 2x margin"]
    if pd.notna(needed):
        count = "over 1000" if needed == float("inf") else str(int(needed))
        parts.append(f"{count} tasks would detect 2x the margin (no run noise: more runs do not help)" if tasks else
                     f"{count} runs a side would detect 2x the margin")
    return "; ".join(parts)


def _mixed_model(part: pd.DataFrame) -> str:
    """Does the mixed model over runs and tasks (``p (MixedLM)``, a sensitivity column of category statements about
    trained methods) decide the statement's gain comparisons as the runs test does (both at the raw p)? "" where it
    was not fitted."""
    if "p (MixedLM)" not in part:
        return ""
    rows = part[part["p (MixedLM)"].notna() & part["expected"].isin(["better", "worse"]) & part["verdict"].map(is_tested)]
    if not len(rows):
        return ""
    differ = []
    for _, r in rows.iterrows():
        welch, mixed = (adjusted_verdict(INCONCLUSIVE, r["expected"], float(r["difference"]), "", p)
                        for p in (r["p"], r["p (MixedLM)"]))
        if welch != mixed:
            differ.append(f"[{r['claim'].rsplit(' [', 1)[-1].rstrip(']')}]: the mixed model says {mixed}, the runs "
                          f"test {welch}")
    return (f"disagrees on {len(differ)} of {len(rows)}: " + "; ".join(differ)) if differ else \
        f"agrees on all {len(rows)}"


def _few_tasks(part: pd.DataFrame) -> str:
    """" (Clustering on 1 task)" for the categories of a statement's comparisons that rest on 3 tasks or fewer."""
    if "tasks" not in part:
        return ""
    few = part[pd.to_numeric(part["tasks"], errors="coerce").le(FEW_TASKS)]
    counts = dict(zip(few["category"], few["tasks"].astype(int)))
    text = "; ".join(f"{c} on {n} task{'s' if n != 1 else ''}" for c, n in counts.items())
    return f" ({text})" if text else ""


def _deciding_p(part: pd.DataFrame, verdict: str) -> float:
    """The adjusted p a statement's verdict rests on: a contradicted statement, its most significant contradicting
    comparison; a supported one, its least significant supporting comparison (a statement of existence: its most
    significant); otherwise the largest p among its comparisons."""
    verdict = base_verdict(verdict)
    deciding = part[part["verdict"].map(base_verdict) == verdict]["p (BH)"].dropna()
    if verdict == CONTRADICTED and len(deciding):
        return float(deciding.min())
    if verdict == SUPPORTED and len(deciding):
        return float(deciding.min() if part["claim"].map(statement_of).iloc[0] in ANY else deciding.max())
    return float(part["p (BH)"].max())


def history(profile: str = "standard", recompute: bool = False) -> pd.DataFrame:
    """How the verdicts changed: each statement tested on a superseded run (the earlier fixed training budget,
    Paper 3's single-run Tables page), its verdict there and its current verdict (or "not tested now")."""
    rows = all_comparisons(profile, recompute)
    old = rows[~rows["current"].astype(bool)]
    # a superseded run's rows were one run per method: what its test over tasks found, at the raw p
    old = old.assign(verdict=old["verdict"].str.replace(r"^one run per method, no verdict \(over tasks: (.*)\)$",
                                                          r"\1", regex=True), **{"p (BH)": float("nan")})
    old = statements(old)
    now = statements(claims_ledger(profile, recompute)).set_index(["paper", "statement"])["verdict"]
    if old.empty:
        return old
    old["current verdict"] = [now.get((p, s), "not tested now") for p, s in zip(old["paper"], old["statement"])]
    return old[["paper", "statement", "pages", "verdict", "current verdict"]].rename(
        columns={"verdict": "superseded (one run, over tasks)", "pages": "superseded page"})


HISTORY = "ledger_history"  # the ledger as earlier code computed it (scripts/ledger_snapshot.py)
ALIASES = {"'tanh' is worse than the full loss": "tanh performs similarly to the sigmoid",
           "'strategy 1: q as target' is worse than the full loss": "strategy 1 performs similarly to the original loss"}


def _key(claim: str) -> str:
    """A statement's wording without its parenthetical sources and scope qualifiers, so an earlier ledger's rows
    find the statement they tested (``ALIASES``: statements the earlier ledger misread)."""
    text = ALIASES.get(statement_of(claim), statement_of(claim))
    text = re.sub(r"\s*\([^()]*\)", "", text)
    return re.sub(r", (at every size|across backbones and prompts)$", "", text).strip()


def _reasons(before: list[str], part: pd.DataFrame) -> str:
    """Why a statement's verdict differs from the earlier ledger's (``part``: its current comparisons)."""
    reasons = []
    if any("seed" in v or v.startswith("inconclusive (within") for v in before) or part["test"].str.contains(
            "runs").any():
        reasons.append("runs as units")
    if part["expected"].isin(["no gain", "equal"]).any():
        reasons.append("equivalence against the margin")
    raw = [adjusted_verdict(v if is_tested(v) else v, e, d, m, p) if is_tested(v) else v
           for v, e, d, m, p in zip(part["verdict"], part["expected"], pd.to_numeric(part["difference"], errors="coerce"),
                                    part["margin side"], part["p"])]
    if raw != part["verdict"].tolist():
        reasons.append("multiplicity (BH over the ledger)")
    if part["verdict"].str.startswith("one run").any():
        reasons.append("one run per method: no verdict")
    if part["verdict"].eq("significant but below the margin").any():
        reasons.append("below the margin")
    if len(part) > 1 or len(set(before)) > 1:
        reasons.append("one verdict per statement")
    return "; ".join(reasons) or "the test's data"


def verdict_changes(ledger: pd.DataFrame) -> pd.DataFrame:
    """Each current statement whose verdict differs from the one an earlier ledger (stored in
    ``results/ledger_history``, the newest commit stored) gave its rows: the earlier verdicts (counted), the
    current one, and why (runs as units, equivalence, multiplicity, one run per method, the statement-level rule)."""
    history = all_results(HISTORY)
    if not history:
        return pd.DataFrame(columns=["paper", "statement", "before", "after", "why"])
    record = max(history, key=lambda r: r["provenance"].get("date", ""))
    old = pd.DataFrame(record["rows"])
    old_by_key = old.groupby(old["claim"].map(_key))["verdict"].apply(list)
    table = statements(ledger)
    frame = ledger.assign(statement=ledger["claim"].map(statement_of))
    rows = []
    for r in table.itertuples():
        before = old_by_key.get(_key(r.statement), [])
        summary = ", ".join(f"{v} x{n}" if n > 1 else v for v, n in pd.Series(before).value_counts().items())
        if before and set(before) == {r.verdict}:
            continue
        part = frame[(frame["paper"] == r.paper) & (frame["statement"] == r.statement)]
        rows.append({"paper": r.paper, "statement": r.statement, "before": summary or "not on the earlier ledger",
                     "after": r.verdict, "why": _reasons(before, part) if before else "a new statement"})
    return pd.DataFrame(rows, columns=["paper", "statement", "before", "after", "why"])


def verdict_counts(statements_table: pd.DataFrame) -> pd.DataFrame:
    """Per paper and tier: how many statements got each verdict."""
    verdicts = statements_table["verdict"].map(base_verdict)
    return statements_table.assign(verdict=verdicts).groupby(["paper", "tier", "verdict"]).size().unstack(fill_value=0)


def summary_counts(counts: pd.Series) -> dict:
    """One paper's (or tier's) row of :func:`verdict_counts` as :func:`repro.crosspaper.summaries.summary_markdown`'s
    counts: supported, tested (every verdict but untestable, missing and no-verdict ones), untestable."""
    untested = int(sum(n for v, n in counts.items() if not is_tested(str(v))))
    measured = int(sum(n for v, n in counts.items() if str(v).startswith("measured")))
    counts = counts.groupby(counts.index.map(lambda v: base_verdict(str(v)))).sum()
    return {"supported": int(counts.get(SUPPORTED, 0)), "contradicted": int(counts.get(CONTRADICTED, 0)),
            "tested": int(counts.sum()) - untested, "untestable": untested - measured, "measured": measured}


def outcome_sentence(verdicts: pd.Series, noun: str) -> str:
    """How the tested ``noun`` (e.g. "Paper 1 statements") came out: supported, contradicted, and decided neither
    way (inconclusive, or significant but below the margin), the last two being what did not reproduce."""
    counts = summary_counts(verdicts.astype(str).map(base_verdict).value_counts())
    neither = counts["tested"] - counts["supported"] - counts["contradicted"]
    return (f"Of the {counts['tested']} tested {noun}, {counts['supported']} are supported, {counts['contradicted']} "
            f"contradicted and {neither} decided neither way (inconclusive at our runs, or significant but below the "
            f"margin); the {counts['contradicted'] + neither} not supported are listed here.")


MARKS = {SUPPORTED: "✓", CONTRADICTED: "✗"}  # anything else a test decided: "~"; no test: "–"


def mark(verdict: str) -> str:
    """A verdict as the intro's one-character mark: ✓ supported, ✗ contradicted, ~ decided otherwise (inconclusive,
    significant but below the margin), – not tested (one run per method, untestable, missing)."""
    return MARKS.get(base_verdict(verdict), "~" if is_tested(verdict) else "–")


DAGGER = "†"  # a verdict a named choice changes (the template, the tokenization, the budget): see where it is shown


def tally(statements_table: pd.DataFrame, tier: str = "headline") -> dict[str, str]:
    """Per paper, its statements of ``tier`` counted by mark: "✓ 1 · ✗ 2 · ~ 2 · – 2", and the measured ones apart
    ("(and 1 measured)"), as the intro shows above each paper's rows."""
    part = statements_table[statements_table["tier"] == tier]
    out = {}
    for paper, rows in part.groupby("paper", sort=False):
        measured = rows["verdict"].astype(str).str.startswith("measured")
        marks = rows.loc[~measured, "verdict"].map(mark).value_counts()
        text = " · ".join(f"{m} {int(marks.get(m, 0))}" for m in ("✓", "✗", "~", "–"))
        out[paper] = text + (f" (and {int(measured.sum())} measured)" if measured.any() else "")
    return out


def answer_table(statements_table: pd.DataFrame, tier: str = "headline",
                 caveats: dict[str, str] | None = None) -> pd.DataFrame:
    """The book's answer, one row per statement of ``tier``: the paper, the verdict as a mark (under the header
    "verdict"; † where ``caveats`` maps the statement to the page that shows the verdict a named choice gives), the
    statement, our difference(s), the paper's number (quoted, or "-"), the verdict in words and the pages that test
    it (from :func:`statements`)."""
    caveats = caveats or {}
    part = statements_table[statements_table["tier"] == tier]
    quoted = part["paper (quoted)"].where(~part["paper (quoted)"].str.startswith("not quoted"), "-")
    inner = r"(?:[^()]|\([^()]*\))*"  # text with at most one level of parentheses inside
    quoted = quoted.map(lambda q: QUOTES.join(re.sub(rf" \({inner}quoted{inner}\)$", "", one)  # sources: on the ledger
                                              for one in q.split(QUOTES)))
    # where the reading of a statement (one-sided or parity) rests on the paper's own sentence, it is quoted beside it
    statement = part["statement"].map(lambda s: f"{s}. The paper: {SENTENCES[s]}" if s in SENTENCES else s)
    marks = [mark(v) + (DAGGER if s in caveats else "") for v, s in zip(part["verdict"], part["statement"])]
    return pd.DataFrame({"paper": part["paper"], "verdict": marks, "statement": statement,
                         "ours": part["ours"], "paper (quoted)": quoted, "in words": part["verdict"],
                         "caveat": [caveats.get(s, "") for s in part["statement"]],
                         "pages": part["pages"]}).reset_index(drop=True)
