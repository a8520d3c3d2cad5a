"""Paper 3 under the budget rule, end to end on the tiny backbone: budget points from a run's snapshots (both
trainers), the dev-selected configurations at several seeds, compression only as the flat start of every
stage-2 curve, and the comparisons the page shows."""

import json
from dataclasses import replace

import pytest
from test_autoregembed import _align, _compress

from repro.autoregembed.experiments import converged
from repro.autoregembed.experiments.baselines import contrastive_config
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, evaluate_autoreg_budget_points, score_identity
from repro.autoregembed.train import run_spec
from repro.core.scoring import stored_per_task
from repro.core.seeds import seed_spread, seeded_claims
from repro.store.runs import ensure_trained
from repro.training import budget
from repro.training import evaluation as contrastive_scores

SUITE, TASKS = "smoke", ["STSBenchmark", "SciFact"]


@pytest.fixture
def tiny_search(tiny_dir, monkeypatch):
    """A tiny stage 2 and a tiny contrastive baseline under the budget rule, standing in for the search's picks."""
    align = _align(tiny_dir, _compress(tiny_dir), steps=20, eval_every=2, checkpoint_every=2, stopping="dev",
                   schedule="constant_with_warmup", data="nli-medi", fused=True)
    baseline = replace(contrastive_config("mean, in-batch + hard negative", align), eval_every=2, checkpoint_every=2,
                       max_length=24)
    picks = {"autoregembed": align, "baseline": baseline}
    monkeypatch.setattr(converged, "selected_config", lambda side, base: picks[side])
    return align, baseline


def test_the_page_reads_seeds_curves_and_verdicts_and_budget_points_come_from_the_snapshots(tiny_search):
    align, baseline = tiny_search
    args = dict(final_suite=SUITE, curve_suite=SUITE, tasks=TASKS)
    assert converged.missing_work(align, (0, 1), **args)[0].startswith("AutoRegEmbed seed 0")
    todo = converged.compute(align, (0, 1), budget_points=True, progress=False, **args)
    assert todo == []
    frame, records = converged.final_scores(align, (0, 1), SUITE, TASKS)
    assert set(frame.model) == {converged.AUTOREG, converged.BASELINE, converged.COMPRESSION}
    assert frame.groupby("model").seed.nunique().to_dict() == {m: 2 for m in set(frame.model)}
    spread = seed_spread(frame)
    assert spread.loc[converged.COMPRESSION, "all tasks"] == 0  # one stage 1: the same weights at every seed
    assert (converged.AUTOREG, 1, "SciFact") in records
    claims = seeded_claims(frame, converged.CLAIMS)
    assert len(claims) == 4 and claims["verdict at our scale"].notna().all()
    curves = converged.budget_curves(align, 0, SUITE, TASKS)
    steps = sorted(set(curves[converged.AUTOREG][0].budget_step))
    assert sorted(set(curves[converged.COMPRESSION][0].budget_step)) == steps
    # compression only is the start of stage 2: the same stored scores at every budget
    flat = curves[converged.COMPRESSION][0]
    assert flat.groupby("task").score.nunique().eq(1).all()
    comparisons = converged.curve_comparisons(curves)
    assert set(comparisons) == {"AutoRegEmbed vs compression only", "AutoRegEmbed vs best contrastive baseline"}
    table, verdict = comparisons["AutoRegEmbed vs compression only"]
    assert list(table["budget step"]) == steps and table["tasks"].eq(2).all() and verdict.startswith("significant at")
    runs = converged.run_table(align, (0, 1))
    assert set(runs.method) == {converged.AUTOREG, converged.BASELINE} and len(runs) == 4
    with pytest.raises(ValueError, match="unknown side"):
        converged.compute(align, (0,), sides=["both"], **args)

    # budget points: the run's snapshots at budget.budget_points, and the selected step is the saved final model
    frame = evaluate_autoreg_budget_points(align, SUITE, TASKS, progress=False)  # stored by compute(): read back
    folder, _ = ensure_trained(run_spec(align, progress=False))
    summary = json.loads((folder / "summary.json").read_text())
    steps = budget.budget_points(summary["selected_step"], [s for s, _ in budget.evaluations(summary["history"])])
    assert sorted(set(frame["budget_step"])) == steps and len(steps) >= 2
    points = {s: stored_per_task(SCORES_EXPERIMENT, {**score_identity(align), "budget_step": s}, SUITE, TASKS)
              for s in steps}
    digests = {s: {r["weights_sha256"] for r in found.values()} for s, found in points.items()}
    assert all(len(d) == 1 for d in digests.values())  # one set of weights per budget step, another at each
    assert len(set().union(*digests.values())) == len(steps)
    final = converged.evaluate_autoreg(align, SUITE, TASKS, progress=False)
    final_records = stored_per_task(SCORES_EXPERIMENT, score_identity(align), SUITE, TASKS)
    if summary["selected_step"] in points:  # the dev-selected checkpoint is the saved final model
        assert {r["weights_sha256"] for r in final_records.values()} == \
            {r["weights_sha256"] for r in points[summary["selected_step"]].values()}
    assert final["main_score"].notna().all()
    with pytest.raises(ValueError, match="budget rule"):
        evaluate_autoreg_budget_points(replace(align, stopping="fixed"), SUITE, TASKS)
    contrastive = contrastive_scores.evaluate_budget_points(baseline, SUITE, TASKS, progress=False)
    assert len(contrastive) and set(contrastive["budget_step"]) and (contrastive["model"] == baseline.model).all()


def test_an_incomplete_search_is_named_and_nothing_is_trained(monkeypatch):
    from repro.autoregembed.experiments import search

    def incomplete(side, base):
        raise LookupError(f"the {side} search is not complete: lr 1e-06 not stored")

    monkeypatch.setattr(converged, "selected_config", incomplete)
    monkeypatch.setattr(converged, "evaluate_autoreg", lambda *a, **k: None)
    base = search.base_config()
    assert converged.missing_work(base) == ["the autoregembed search", "the baseline search"]
    assert converged.selected_configs(base) == {converged.AUTOREG: None, converged.BASELINE: None}
    frame, _ = converged.final_scores(base)
    assert frame.empty and converged.budget_curves(base) == {} and converged.curve_comparisons({}) == {}
    with pytest.raises(SystemExit, match="search --side autoregembed"):
        converged.main(["--seeds", "0"])


def test_the_earlier_verdicts_sit_beside_the_new_ones_matched_on_what_is_compared():
    import pandas as pd

    earlier = pd.DataFrame({
        "claim (paper)": ["compression alone beats the untrained last token", "alignment improves on compression only",
                          "AutoRegEmbed beats contrastive training", "AutoRegEmbed beats contrastive training"],
        "category": ["STS", "STS", "STS", "Retrieval"],
        "comparison": ["compression only vs last token", "AutoRegEmbed vs compression only",
                       "AutoRegEmbed vs mean, in-batch + hard negative", "AutoRegEmbed vs mean, in-batch + hard negative"],
        "difference": [3.0, -5.4, -6.0, -18.3],
        "verdict at our scale": ["supported", "contradicted", "not supported (no significant difference)", "untestable"]})
    now = pd.DataFrame({"comparison": ["AutoRegEmbed vs compression only", "AutoRegEmbed vs best contrastive baseline"],
                        "category": ["STS", "STS"],
                        "verdict at our scale": ["inconclusive (within the seed spread)", "contradicted"]})
    table = converged.with_earlier(earlier, now)
    assert list(table["comparison"]) == list(earlier["comparison"][1:])  # stage 1's claim is not this page's
    assert list(table["under the budget rule"]) == ["inconclusive (within the seed spread)", "contradicted",
                                                    "not scored yet"]
    assert (converged.with_earlier(earlier, pd.DataFrame())["under the budget rule"] == "not scored yet").all()
