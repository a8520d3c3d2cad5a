"""Paper 3 under the budget rule, end to end on the tiny backbone: budget points from a run's snapshots (both
trainers), the dev-selected configurations at several seeds, compression only as the flat start of every
stage-2 curve, and the comparisons the page shows."""

import json
from dataclasses import replace

import numpy as np
import pytest
from test_autoregembed import _align, _compress

from repro.autoregembed import train as ar_runs
from repro.autoregembed.experiments import converged, earlier_budget
from repro.autoregembed.experiments.baselines import contrastive_config
from repro.autoregembed.experiments.scores import SCORES_EXPERIMENT, evaluate_autoreg_budget_points, score_identity
from repro.autoregembed.train import load_encoder, run_spec
from repro.core.scoring import stored_per_task, task_params
from repro.store.fingerprint import weights_digest
from repro.store.results import result_path
from repro.store.runs import ensure_trained
from repro.training import budget
from repro.training import evaluation as contrastive_scores
from repro.training.loop import load_snapshot
from repro.verdicts.rule import ONE_RUN
from repro.verdicts.seeds import seed_spread, seeded_claims

SUITE, TASKS = "smoke", ["STSBenchmark", "SciFact"]
EXTRA = ("STS12",)  # a leaderboard task the page does not read


@pytest.fixture
def tiny_search(tiny_dir, monkeypatch):
    """A tiny stage 2 and a tiny contrastive baseline under the budget rule, standing in for the search's picks,
    and a page base whose own stage 1 is another one (as when dev selects the search's LoRA run, which has its
    own stage 1): compression only must be the selected run's stage 1."""
    # (the book's template, as the page's runs: on this tiny model its seed 1 does not dev-select step 0)
    align = _align(tiny_dir, _compress(tiny_dir, template="book"), steps=20, eval_every=2, checkpoint_every=2,
                   stopping="dev", schedule="constant_with_warmup", data="nli-medi", fused=True, template="book")
    baseline = replace(contrastive_config("mean, in-batch + hard negative", align), eval_every=2, checkpoint_every=2,
                       max_length=24)
    picks = {"autoregembed": align, "baseline": baseline}
    monkeypatch.setattr(converged, "selected_config", lambda side, base: picks[side])
    base = replace(align, compress=_compress(tiny_dir, steps=4, template="book"))
    return base, align, baseline


def test_the_page_reads_seeds_curves_and_verdicts_and_budget_points_come_from_the_snapshots(tiny_search, monkeypatch):
    from repro.autoregembed.experiments import search

    base, align, baseline = tiny_search
    args = dict(final_suite=SUITE, curve_suite=SUITE, tasks=TASKS, leaderboard_tasks=EXTRA)
    assert converged.missing_work(base, (0, 1), **args)[0] == f"AutoRegEmbed seed 0 on {SUITE}"
    todo = converged.compute(base, (0, 1), progress=False, **args)  # no budget points yet
    assert len(todo) == 2 and all(t.startswith(f"{label} budget points (seed 0, {SUITE}): steps ")
                                  for t, label in zip(todo, converged.LABELS.values()))
    assert converged.compute(base, (0, 1), budget_points=True, progress=False, **args) == []
    # every seed of both sides and compression only are also scored on the leaderboard's tasks (the final suite)
    for seed in (0, 1):  # (a seed whose dev selected step 0 is its stage 1: scored as compression only)
        own = set(stored_per_task(SCORES_EXPERIMENT, score_identity(converged.at_seed(align, seed)), SUITE,
                                  TASKS + list(EXTRA)))
        assert own == (set() if converged.selects_start(converged.at_seed(align, seed)) else set(TASKS) | set(EXTRA))
        assert set(stored_per_task(contrastive_scores.SCORES_EXPERIMENT,
                                   contrastive_scores.score_identity(converged.at_seed(baseline, seed)), SUITE,
                                   TASKS + list(EXTRA))) == set(TASKS) | set(EXTRA)
    assert set(stored_per_task(SCORES_EXPERIMENT, score_identity(align.compress), SUITE, list(EXTRA))) == set(EXTRA)
    # a seed whose weights are gone is never retrained for the leaderboard's tasks alone: it is listed instead
    import shutil

    more = ("STS13",)
    folder = ensure_trained(run_spec(converged.at_seed(align, 1), progress=False))[0]
    shutil.rmtree(folder)
    todo = converged.compute(base, (0, 1), progress=False, **(args | {"leaderboard_tasks": EXTRA + more}))
    assert f"{converged.AUTOREG} seed 1 on {SUITE}, the leaderboard's 2 other tasks" in todo
    assert f"{converged.AUTOREG} seed 0 on {SUITE}, the leaderboard's 2 other tasks" not in todo  # (weights here)
    assert not folder.exists()
    # compression only is the selected run's stage 1; the page base's own stage 1 was never trained or scored
    assert converged.compression_config(base) == align.compress
    assert stored_per_task(SCORES_EXPERIMENT, score_identity(base.compress), SUITE, TASKS) == {}
    stage1 = stored_per_task(SCORES_EXPERIMENT, score_identity(align.compress), SUITE, TASKS)
    start = json.loads((ensure_trained(run_spec(align, progress=False))[0] / "summary.json").read_text())
    assert {r["weights_sha256"] for r in stage1.values()} == {start["initial_digest"]}  # stage 2 starts from it

    frame, records = converged.final_scores(base, (0, 1), SUITE, TASKS)
    assert set(frame.model) == {converged.AUTOREG, converged.BASELINE, converged.COMPRESSION}
    assert frame.groupby("model").seed.nunique().to_dict() == {m: 2 for m in set(frame.model)}
    spread = seed_spread(frame)
    assert spread.loc[converged.COMPRESSION, "all tasks"] == 0  # one stage 1: the same weights at every seed
    assert (converged.AUTOREG, 1, "SciFact") in records
    claims = seeded_claims(frame, converged.CLAIMS)
    assert len(claims) == 4 and claims["verdict"].notna().all()
    curves = converged.budget_curves(base, 0, SUITE, TASKS)
    steps = sorted(set(curves[converged.AUTOREG][0].budget_step))
    flat = curves[converged.COMPRESSION][0]
    assert sorted(set(flat.budget_step)) == steps
    stage1_scores = {t: 100 * sum(r["main_score"] for r in rec["rows"]) / len(rec["rows"]) for t, rec in stage1.items()}
    assert all(abs(row.score - stage1_scores[row.task]) < 1e-9 for row in flat.itertuples())
    comparisons = converged.curve_comparisons(curves)
    assert set(comparisons) == {"AutoRegEmbed vs compression only", "AutoRegEmbed vs best contrastive baseline"}
    table, verdict = comparisons["AutoRegEmbed vs compression only"]
    assert list(table["budget step"]) == steps and table["tasks"].eq(2).all() and "budgets" in verdict
    trained = curves[converged.AUTOREG][0].groupby("budget_step").score.mean()
    for _, row in table.iterrows():
        assert abs(row["difference"] - (trained[row["budget step"]] - sum(stage1_scores.values()) / 2)) < 1e-9
    # the search's table and dev curves read the stored records as they are stored (history as rows)
    monkeypatch.setattr(search, "search_configs", lambda side, b: {"autoregembed": {"lr 1e-3": align},
                                                                    "baseline": {"lr 1e-4": baseline}}[side])
    table_s = search.search_table(base)
    assert table_s["stored"].all() and table_s["dev at step 0"].notna().all() and table_s["selected by dev"].sum() == 0  # (1 of 5 runs per side)
    assert set(search.search_dev_curves(base)["run"]) == {"lr 1e-3", "lr 1e-4"}
    # a stage 1 retrained elsewhere is other weights: compression only is then scored under a key of its own,
    # never mixed with (nor overwriting) the Tables 1-2 page's scores of the earlier stage 1
    tampered = result_path(SCORES_EXPERIMENT, task_params(score_identity(align.compress), SUITE, "SciFact"))
    record = json.loads(tampered.read_text())
    record["weights_sha256"] = "0" * 64
    tampered.write_text(json.dumps(record))
    digest = start["initial_digest"]
    assert "stage1_weights" in converged.compression_identity(align.compress, digest, SUITE, TASKS)
    assert converged.COMPRESSION not in set(converged.final_scores(base, (0, 1), SUITE, TASKS)[0].model)
    assert converged.missing_work(base, (0, 1), **args) == [f"compression only on {SUITE} (stage-1 weights "
                                                            f"{digest[:12]})"] * 2 + [
        f"compression only seed {s} on {SUITE}, the leaderboard's 1 other tasks" for s in (0, 1)]
    assert converged.compute(base, (0, 1), budget_points=True, progress=False, **args) == []
    again = converged.compression_scores(align.compress, digest, SUITE, TASKS)
    assert {r["weights_sha256"] for r in again.values()} == {digest}
    assert json.loads(tampered.read_text())["weights_sha256"] == "0" * 64  # the other page's record untouched
    runs = converged.run_table(base, (0, 1))
    assert set(runs.method) == {converged.AUTOREG, converged.BASELINE} and len(runs) == 4
    with pytest.raises(ValueError, match="unknown side"):
        converged.compute(base, (0,), sides=["both"], **args)

    # budget points: the run's snapshots at budget.budget_points, and the dev-selected snapshot is the final model
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
    model, _ = load_encoder(folder / "final")
    final = weights_digest(model)
    load_snapshot(folder, model, summary["selected_step"])
    assert weights_digest(model) == final
    if summary["selected_step"] in points:
        assert digests[summary["selected_step"]] == {final}
    with pytest.raises(ValueError, match="budget rule"):
        evaluate_autoreg_budget_points(replace(align, stopping="fixed"), SUITE, TASKS)
    contrastive = contrastive_scores.evaluate_budget_points(baseline, SUITE, TASKS, progress=False)
    assert len(contrastive) and set(contrastive["budget_step"]) and (contrastive["model"] == baseline.model).all()


def test_a_seed_whose_dev_selects_step_0_is_its_stage_1_and_reads_compression_only(tiny_search, monkeypatch):
    """Stage 2 at a rate too small to move a float32 weight: dev is flat, the earliest best (step 0) is selected,
    and the run's final weights are its start. Its scores are compression only's (same records, nothing scored
    under its own key); its budget points are still scored from its snapshots."""
    base, align, baseline = tiny_search
    still = replace(align, lr=1e-30)
    monkeypatch.setattr(converged, "selected_config", lambda side, b: {"autoregembed": still, "baseline": baseline}[side])
    args = dict(final_suite=SUITE, curve_suite=SUITE, tasks=TASKS, leaderboard_tasks=EXTRA)
    stored_at_call, score = [], converged.score_compression

    def spy(*a, **k):  # compression only is scored while seed 0's stage 1 is at hand, before seed 1 trains
        stored_at_call.append(len(converged.stage1_digests(base, (0, 1)) and converged.run_table(base, (0, 1))))
        return score(*a, **k)

    monkeypatch.setattr(converged, "score_compression", spy)
    todo = converged.compute(base, (0, 1), sides=["autoregembed"], budget_points=True, progress=False, **args)
    assert stored_at_call[0] == 1 and stored_at_call[-1] == 2
    assert converged.start_selected_seeds(base, (0, 1)) == [0, 1]
    assert not [t for t in todo if t.startswith(converged.AUTOREG) or t.startswith(converged.COMPRESSION)], todo
    for seed in (0, 1):
        assert stored_per_task(SCORES_EXPERIMENT, score_identity(converged.at_seed(still, seed)), SUITE, TASKS) == {}
    frame, records = converged.final_scores(base, (0, 1), SUITE, TASKS)
    scores = frame.set_index(["model", "seed", "task"]).score
    assert len(scores[converged.AUTOREG]) == 4 and (scores[converged.AUTOREG] - scores[converged.COMPRESSION]).abs().max() == 0
    assert records[(converged.AUTOREG, 0, "SciFact")] == records[(converged.COMPRESSION, 0, "SciFact")]
    board, _ = converged.final_scores(base, (0, 1), SUITE, TASKS + list(EXTRA))  # the leaderboard's tasks too
    assert set(board.loc[board.model == converged.AUTOREG, "task"]) == set(TASKS) | set(EXTRA)
    curve = converged.budget_curves(base, 0, SUITE, TASKS)[converged.AUTOREG][0]
    assert len(curve) and (curve.budget_step > 0).all()
    # EmbedFilter on such a seed's encoder (the leaderboard's combination) filters the stage-1 weights: its plain
    # side is compression only's stored scores (not re-encoded under the run's key), its filtered side beside them
    from repro.crosspaper import combinations

    seed0 = converged.at_seed(still, 0)
    combinations.evaluate_autoreg_filter(config=seed0, suite=SUITE, tasks=TASKS, progress=False)
    assert stored_per_task(SCORES_EXPERIMENT, score_identity(seed0), SUITE, TASKS) == {}
    filtered = stored_per_task(SCORES_EXPERIMENT, {**score_identity(still.compress), "filter": "edge/2"}, SUITE, TASKS)
    assert set(filtered) == set(TASKS)
    assert {r["weights_sha256"] for r in filtered.values()} == {converged.start_digest(seed0)}
    assert "the stage-1 encoder" in combinations.autoreg_source(seed0)
    # a run whose final weights are not its start cannot stand for compression only
    path = result_path(ar_runs.RUNS_EXPERIMENT, ar_runs.run_params(converged.at_seed(still, 1)))
    record = json.loads(path.read_text())
    record["summary"]["initial_digest"] = "0" * 16
    path.write_text(json.dumps(record))
    with pytest.raises(RuntimeError, match="differ from its start"):
        converged.check_start(converged.at_seed(still, 1))


def test_an_incomplete_search_is_named_and_nothing_is_trained(monkeypatch):
    from repro.autoregembed.experiments import search

    def incomplete(side, base):
        raise LookupError(f"the {side} search is not complete: lr 1e-06 not stored")

    monkeypatch.setattr(converged, "selected_config", incomplete)
    monkeypatch.setattr(converged, "evaluate_autoreg", lambda *a, **k: None)
    base = search.base_config()
    assert converged.missing_work(base) == [f"the {side} search (then its seeds, budget points and leaderboard tasks)"
                                            for side in ("autoregembed", "baseline")]
    assert converged.selected_configs(base) == {converged.AUTOREG: None, converged.BASELINE: None}
    frame, _ = converged.final_scores(base)
    assert frame.empty and converged.budget_curves(base) == {} and converged.curve_comparisons({}) == {}
    with pytest.raises(SystemExit, match="search --side autoregembed"):
        converged.main(["--seeds", "0"])


def test_the_earlier_verdicts_sit_beside_the_new_ones_matched_on_what_is_compared():
    import pandas as pd

    earlier = pd.DataFrame({
        "statement": ["compression alone beats the untrained last token", "alignment improves on compression only",
                          "AutoRegEmbed beats contrastive training", "AutoRegEmbed beats contrastive training"],
        "category": ["STS", "STS", "STS", "Retrieval"],
        "comparison": ["compression only vs last token", "AutoRegEmbed vs compression only",
                       "AutoRegEmbed vs mean, in-batch + hard negative", "AutoRegEmbed vs mean, in-batch + hard negative"],
        "difference": [3.0, -5.4, -6.0, -18.3],
        "verdict": ["supported", "contradicted", "not supported (no significant difference)", "untestable"]})
    now = pd.DataFrame({"comparison": ["AutoRegEmbed vs compression only", "AutoRegEmbed vs best contrastive baseline"],
                        "category": ["STS", "STS"],
                        "verdict": ["inconclusive (within the seed spread)", "contradicted"]})
    table = earlier_budget.with_earlier(earlier, now)
    assert list(table["comparison"]) == list(earlier["comparison"][1:])  # stage 1's claim is not this page's
    assert list(table["under the budget rule"]) == ["inconclusive (within the seed spread)", "contradicted",
                                                    "not scored yet"]
    assert (earlier_budget.with_earlier(earlier, pd.DataFrame())["under the budget rule"] == "not scored yet").all()


def test_the_official_template_check_trains_its_stage_1_and_sets_it_beside_the_books(tiny_search):
    from repro.autoregembed.experiments import template_check

    base, align, _ = tiny_search
    args = dict(suite=SUITE, tasks=TASKS)
    converged.compute(base, (0,), sides=("autoregembed",), final_suite=SUITE, curve_suite=SUITE, tasks=TASKS,
                      leaderboard_tasks=(), progress=False)
    assert template_check.missing_work(base, **args) == [
        f"compression only, official template, on {SUITE}",
        f"compression only, official template, head and tail kept, on {SUITE}",
        f"compression only, official template, no BOS, on {SUITE}",
        f"compression only, official template, head and tail kept, no BOS, on {SUITE}",
        "the official template's stage 2 under the budget rule"]
    assert all(template_check.NOT_MEASURED in line for line in template_check.cause_findings(base, **args).values())
    assert template_check.compute(base, progress=False, **args) == []
    configs = template_check.template_configs(base)
    assert configs["book"] == align  # the page's seed-0 run, as stored
    official = configs["official"]
    assert (official.template, official.compress.template, official.lr, official.stopping) == (
        "official", "official", align.lr, "dev")
    cut, no_bos = configs[template_check.CUT_VARIANT], configs[template_check.BOS_VARIANT]
    assert (cut.compress.template, cut.compress.cut, cut.compress.bos) == ("official", "head_tail", "")
    assert (no_bos.compress.template, no_bos.compress.cut, no_bos.compress.bos) == ("official", "", "tokenizer")
    both = configs[template_check.BOTH_VARIANT]
    assert (both.compress.template, both.compress.cut, both.compress.bos) == ("official", "head_tail", "tokenizer")
    assert len({repr(c.compress) for c in configs.values()}) == len(configs)  # five stage 1s, none shared
    scores = template_check.template_scores(base, **args)
    names = {template_check.TEMPLATE_NAMES[t] for t in ("book", "official")}
    variants = {template_check.TEMPLATE_NAMES[v] for v in template_check.VARIANTS}  # a stage 1 each
    assert set(zip(scores.template, scores.stage)) == {(t, s) for t in names for s in template_check.STAGES} | {
        (v, converged.COMPRESSION) for v in variants}
    # the book's side is the page's own stored compression only and seed 0
    book = scores[scores.template == "book template"].pivot_table(index="task", columns="stage", values="score")
    page, _ = converged.final_scores(base, (0,), SUITE, TASKS)
    for stage in template_check.STAGES:
        expected = page[page.model == stage].set_index("task").score
        assert np.allclose(book[stage].sort_index(), expected.sort_index())
    table = template_check.template_comparison(scores)
    assert list(table.stage.unique()) == list(template_check.STAGES) and (table.n <= len(TASKS)).all()
    assert set(table.loc[table.stage == converged.COMPRESSION, "template"]) == (names | variants) - {"book template"}
    assert template_check.finding(base, **args).startswith("under the official template, compression only scores ")
    causes = template_check.cause_findings(base, **args)
    assert list(causes) == ["cut", "bos", "both", "additivity"]
    assert "keeping their head and tail instead of the right cut, the official" in causes["cut"]
    assert causes["bos"].startswith("Without the BOS token in front of every input (")
    finding = " ".join(causes.values())
    assert template_check.NOT_MEASURED not in finding and "computing" not in finding and not finding.endswith(".")
    # the additivity sentence's numbers are the variants' gains over the official template
    means = scores[scores.stage == converged.COMPRESSION].groupby("template").score.mean()
    gains = {v: means[template_check.TEMPLATE_NAMES[v]] - means["official template"] for v in template_check.VARIANTS}
    cut_gain, bos_gain, both_gain = (gains[v] for v in (template_check.CUT_VARIANT, template_check.BOS_VARIANT,
                                                          template_check.BOTH_VARIANT))
    assert (f"the two changes gain {cut_gain:+.2f} and {bos_gain:+.2f} points over the official template "
            f"({cut_gain + bos_gain:+.2f} summed), together {both_gain:+.2f}; ") in finding
    assert f"leaves {means['official template, head and tail kept, no BOS'] - means['book template']:+.2f}" in finding
    # more stage-2 seeds under the official template, each from the one stage 1: runs as units against it
    assert template_check.missing_work(base, seeds=(0, 1), **args) == ["the official template's stage 2 at seed 1"]
    assert template_check.compute(base, progress=False, seeds=(0, 1), **args) == []
    runs = template_check.official_runs(base, seeds=(0, 1), **args)
    assert set(zip(runs.model, runs.seed)) == {(converged.COMPRESSION, 0), (converged.AUTOREG, 0), (converged.AUTOREG, 1)}
    test = template_check.alignment_under_official(runs)
    assert list(test.category) == ["STS", "Retrieval"]  # two seeds from one stage 1: one independent run a side
    assert (test.units == "2 stage-2 seeds from one stage 1 vs that stage 1 (one independent run a side)").all()
    assert (test["verdict"] == ONE_RUN).all()
    steps = [template_check.selected_step(base, seed) for seed in (0, 1)]
    assert None not in steps and template_check.selected_step(base, 2) is None
    chosen = template_check.selections(base).set_index("template")["selected step"]
    if (chosen == 0).all():  # both templates' seed 0 kept its start: the page's conclusion stands, no runs clause
        assert "again dev-selected step 0, its start, as the book's did" in template_check.finding(base, **args)
    else:
        assert (f"over its 2 stage-2 seeds (dev selected step {steps[0]} at seed 0, step {steps[1]} at seed "
                "1; " in template_check.finding(base, **args))
        assert "no verdict: every seed starts from the one stage 1" in template_check.finding(base, **args)
    assert (test["mean second"] == runs[runs.model == converged.COMPRESSION].groupby("category").score.mean()[
        test.category].to_numpy()).all()
    assert table.loc[table.n == 1, "no difference?"].str.startswith("untestable").all()  # one task: no test
    assert set(template_check.selections(base).template) == names
    assert set(template_check.dev_curves(base).template) == names


def test_the_fair_chance_chain_table_and_finding_read_each_seeds_own_records(monkeypatch):
    """The fair-chance section reads each seed's stage-1 and stage-2 records by their configurations (independent
    seeds: stage 2 of seed s starts from stage 1 of seed s only) and says what each stage selected."""
    from repro.autoregembed.experiments import independent

    def record(config):
        if config.seed == 2:
            return None
        if config == independent.stage2_config(config.seed).compress:  # stage 1 under the rule on its loss
            rows = [{"step": 0, "validation_loss": 12.0, "validation_sts": 52.0, "examples_seen": 0},
                    {"step": 30, "validation_loss": 8.0, "validation_sts": 49.0, "examples_seen": 240},
                    {"step": 60, "validation_loss": 7.0 - config.seed, "validation_sts": 32.0, "examples_seen": 480}]
            return {"rows": rows, "summary": {"steps": 60, "stopped_early": True, "selected_step": 60,
                                              "selected_examples_seen": 480}}
        assert config.compress == independent.stage1_config(config.seed)  # its own seed's stage 1
        return {"rows": [], "summary": {"steps": 75, "selected_step": 25 * config.seed, "selected_signal": 40.0,
                                        "initial_digest": f"d{config.seed}"}}

    monkeypatch.setattr(converged, "run_record", record)
    table = independent.chain_table()
    assert list(table.seed) == [0, 1, 2] and table.loc[2].drop("seed").isna().all()
    assert list(table["loss selected"][:2]) == [7.0, 6.0] and list(table["stage 2 selected step"][:2]) == [0, 25]
    curves = independent.stage1_curves()
    assert len(curves) == 6 and curves.groupby("seed").selected.sum().tolist() == [1, 1]
    text = independent.finding()
    assert text.startswith("2 of 3 independent seeds are stored: seed 0's stage 1 stopped by the rule at step 60")
    assert "its stage 2 dev-selected its start (step 0): not adopted" in text
    assert "its stage 2 dev-selected step 25 (dev 40.00): adopted" in text
    assert independent.stored_chain(1)["start_digest"] == "d1"
    assert independent.adoption() == ("dev adopted stage 2 (selected a step past its start) in 1 of the 2 "
                                      "independent chains stored")
    monkeypatch.setattr(converged, "run_record", lambda config: None if config.seed else record(config))
    assert independent.adoption().endswith("in 0 of the 1 independent chain stored, so AutoRegEmbed is its "
                                           "compression stage alone in every one")
    monkeypatch.setattr(converged, "run_record", lambda config: None)
    assert independent.adoption() == "no independent chain's stage 2 is stored yet (0 of 3 seeds)"
    with pytest.raises(ValueError, match="unknown stage"):
        independent.run([0], ["stage3"])
    with pytest.raises(ValueError, match="unknown ablation"):
        independent.run([0], ["ablations"], ablations=["kl", "no-such-variant"])


def test_chain_ablations_are_runs_of_their_own_chain_and_a_start_selected_variant_is_compression_only(monkeypatch):
    """The chains' ablations: each variant is a stage 2 from its own chain's stage 1 (one change to that chain's
    full loss); one that dev-selected its start is that chain's compression only (so against compression only it is
    not testable), one trained without stage 1 is its own unit, and a statement with 3 chains a side is tested."""
    import numpy as np
    import pandas as pd

    from repro.autoregembed.experiments import chain_ablations, independent
    from repro.autoregembed.experiments.ablations import COMPRESSION_ONLY, LABELS
    from repro.verdicts.seeds import seeded_claims

    tasks = ["STSBenchmark", "SICK-R", "STS12"]
    configs = {seed: independent.ablation_configs(seed) for seed in independent.SEEDS}
    for seed, variants in configs.items():  # one change each to the chain's own full loss
        full = independent.stage2_config(seed)
        assert variants["kl"].compress == full.compress == independent.stage1_config(seed)
        assert variants["kl"].divergence == "kl" and variants["no-compression"].compress is None
        assert variants["tau1.0-beta0.1"].temperature == 1.0 and variants["tau1.0-beta0.1"].seed == seed
    rng = np.random.default_rng(0)
    chains = pd.concat([pd.DataFrame({"model": model, "seed": seed, "unit": f"stage 1 d{seed}", "task": tasks,
                                      "category": "STS", "score": 50.0 + seed + rng.normal(0, 0.1, 3)})
                        for seed in independent.SEEDS for model in (converged.COMPRESSION, converged.AUTOREG)])
    chains.loc[chains.model == converged.AUTOREG, "score"] = chains.loc[chains.model == converged.COMPRESSION,
                                                                        "score"].to_numpy()  # stage 2 kept stage 1
    monkeypatch.setattr(independent, "final_scores", lambda *a, **k: (chains, {}))

    def record(config):  # KL kept its start everywhere; JS adopted step 25; no-compression its own runs; rest: none
        if config.divergence == "kl":
            return {"summary": {"selected_step": 0, "selected_signal": 40.0}}
        if config.divergence == "js" or config.compress is None:
            return {"summary": {"selected_step": 25, "selected_signal": 41.0}}
        return None if config.compress is not None and config != independent.stage2_config(config.seed) else {
            "summary": {"selected_step": 0, "selected_signal": 40.0}}

    def stored(config, suite, tasks_):
        shift = -20.0 if config.divergence == "js" else -30.0
        return {t: {"rows": [{"main_score": (50.0 + config.seed + shift + i * 0.01) / 100}]} for i, t in enumerate(tasks_)}

    monkeypatch.setattr(converged, "run_record", record)
    monkeypatch.setattr(converged, "stored_scores", stored)
    status = chain_ablations.status()
    assert (status.loc[LABELS["kl"]] == "start (= compression only)").all()
    assert (status.loc[LABELS["js"]] == "step 25 (dev 41.00)").all()
    assert (status.loc[LABELS["tanh"]] == "not trained").all()
    frame = chain_ablations.scores(tasks=tasks)
    kl = frame[frame.model == LABELS["kl"]].set_index(["seed", "task"]).score
    assert kl.equals(frame[frame.model == COMPRESSION_ONLY].set_index(["seed", "task"]).score)
    units = frame.groupby("model").unit.nunique()
    assert units[LABELS["js"]] == 3 and units[LABELS["no-compression"]] == 3
    assert not set(frame[frame.model == LABELS["no-compression"]].unit) & set(chains.unit)  # its own runs
    table = seeded_claims(frame, chain_ablations.claims(frame)).set_index("comparison")
    assert table.loc[f"{LABELS['kl']} vs {LABELS['full']}", "verdict"].startswith("not testable")
    js = table.loc[f"{LABELS['js']} vs {LABELS['full']}"]
    assert js["units"] == "3 vs 3 runs" and js["verdict"].startswith("supported")
    assert chain_ablations.finding().startswith("9 of the 42 ablation runs on the independent chains are trained")
    assert "3 dev-selected their start" in chain_ablations.finding() and "6 adopted" in chain_ablations.finding()
    # a variant trained from a retrained stage 1 (other weights than the scored compression only) is its own unit
    # and, where it kept its start, never stands in for that compression only
    monkeypatch.setattr(converged, "run_record", lambda config: (
        {"summary": {"selected_step": 0 if config.divergence == "kl" else 25, "selected_signal": 40.0,
                     "initial_digest": "other"}} if config.divergence in ("kl", "js") and config.seed == 2
        else record(config)))
    frame = chain_ablations.scores(tasks=tasks)
    assert sorted(frame[frame.model == LABELS["kl"]].seed.unique()) == [0, 1]
    assert set(frame[(frame.model == LABELS["js"]) & (frame.seed == 2)].unit) == {"stage 1 other"}


def test_chain_ablation_dev_curves_show_every_stored_runs_budget_rule_curve(monkeypatch):
    from repro.autoregembed.experiments import chain_ablations, independent

    def record(config):
        if config == independent.stage2_config(config.seed):  # the chain's full loss: stored at every seed
            return {"rows": [{"step": 0, "validation_sts": 50.0}, {"step": 1, "train_loss": 1.0},
                             {"step": 25, "validation_sts": 49.0}], "summary": {"selected_step": 0}}
        if config.divergence == "js" and config.seed == 2:
            return {"rows": [{"step": 0, "validation_sts": 50.0}, {"step": 25, "validation_sts": 52.0}],
                    "summary": {"selected_step": 25}}
        return None

    monkeypatch.setattr(converged, "run_record", record)
    curves = chain_ablations.dev_curves()
    assert sorted(curves.run.unique()) == sorted([f"full (Eq. 2, sigmoid), seed {s}" for s in (0, 1, 2)]
                                                 + ["JS divergence, seed 2"])
    assert len(curves) == 8 and curves.validation_sts.notna().all()  # training-loss rows are not evaluations
    assert curves[curves.selected].set_index("run").step.to_dict()["JS divergence, seed 2"] == 25
    monkeypatch.setattr(converged, "run_record", lambda config: None)
    assert chain_ablations.dev_curves().empty


def test_figure3_on_the_chains_starts_each_seed_from_its_own_stage1_and_its_units_are_the_weights(monkeypatch):
    """Figure 3 on the independent chains: at every size a seed's AutoRegEmbed starts from that seed's own stage 1
    (the principled template, the page's stage 2 otherwise: data, learning rate, steps per size), the contrastive
    baselines are the page's own configurations (so the page's stored seeds are reused), and a point's unit is the
    stage-1 weights its run started from: distinct chains are distinct units, a point without its run or a task is
    not read."""
    from repro.autoregembed.experiments import chain_efficiency, independent
    from repro.autoregembed.experiments import converged as conv
    from repro.autoregembed.experiments.baselines import contrastive_config
    from repro.autoregembed.experiments.configs import page_configs
    from repro.autoregembed.experiments.data_efficiency import data_efficiency_configs
    from repro.pages.parameters import page_parameters

    params = page_parameters("p3_data_efficiency", "standard")
    _, page_base = page_configs(**params)
    sizes, epochs, methods = [64, 128], 1.0, ["AutoRegEmbed", "mean, in-batch"]
    page = data_efficiency_configs(page_base, sizes, [0, 1, 2], epochs)
    for seed in independent.SEEDS:
        configs = chain_efficiency.chain_configs(seed, page_base, sizes, epochs)
        for size, config in configs.items():
            assert config.compress == independent.stage1_config(seed) and config.seed == seed
            assert (config.template, config.cut, config.bos) == tuple(independent.PRINCIPLED.values())
            assert (config.data, config.lr, config.steps) == (page_base.data, page_base.lr, page[size, seed].steps)
            assert contrastive_config("mean, in-batch", config) == contrastive_config("mean, in-batch", page[size, seed])
    tasks = ["STSBenchmark", "STS12"]
    monkeypatch.setattr(conv, "run_record", lambda config: None if (config.seed, config.train_examples) == (1, 128)
                        else {"summary": {"initial_digest": f"d{config.seed}"}})
    monkeypatch.setattr(chain_efficiency, "stored_per_task", lambda experiment, identity, suite, tasks_: {
        t: {"task": t, "rows": [{"main_score": 0.5}]} for t in (tasks_ if "compress" in json.dumps(identity, default=str)
                                                                 or identity.get("train", {}).get("seed") != 2 else [])})
    points = chain_efficiency.curve(page_base, sizes, epochs, methods, tasks=tasks)
    autoreg = points[points.method == "AutoRegEmbed"]
    assert sorted(autoreg.unit.unique()) == ["stage 1 d0", "stage 1 d1", "stage 1 d2"]
    assert len(autoreg) == 5  # seed 1's 128-triplet run is not stored
    baseline = points[points.method == "mean, in-batch"]
    assert sorted(baseline.seed.unique()) == [0, 1]  # seed 2's baseline scores are not stored
    table = chain_efficiency.status(page_base, sizes, epochs, methods, tasks=tasks)
    assert table.loc["AutoRegEmbed", 128] == "2 of 3" and table.loc["mean, in-batch", 64] == "2 of 3"


def test_figure3_on_the_chains_is_tested_with_runs_as_units_once_every_point_is_stored(monkeypatch):
    """Once every method has every size at the three chains' seeds (and each chain its compression only), the
    data-efficiency statements are tested on them: AutoRegEmbed against each baseline and against compression only
    with 3 independent runs a side (compression only: one per chain's stage 1, not one shared run, paired with the
    chain's own AutoRegEmbed); before, None."""
    import numpy as np
    import pandas as pd

    from repro.autoregembed.experiments import chain_efficiency
    from repro.autoregembed.experiments import converged as conv
    from repro.autoregembed.experiments.configs import page_configs
    from repro.pages.parameters import page_parameters

    _, page_base = page_configs(**page_parameters("p3_data_efficiency", "standard"))
    sizes, methods, tasks = [64, 128], ["AutoRegEmbed", "mean, in-batch"], ["STSBenchmark", "STS12"]
    rng = np.random.default_rng(0)
    missing = {"seed": 2}

    def fake_curve(*args, **kwargs):
        return pd.DataFrame([{"method": m, "examples": n, "seed": s, "steps": n // 8,
                              "unit": f"stage 1 d{s}" if m == "AutoRegEmbed" else f"run {s}",
                              "STS average": (60.0 if m == "AutoRegEmbed" else 50.0) + rng.normal(0, 0.3)}
                             for m in methods for n in sizes for s in (0, 1, 2)
                             if not (m == "mean, in-batch" and s == missing["seed"])], columns=chain_efficiency.COLUMNS)

    monkeypatch.setattr(chain_efficiency, "curve", fake_curve)
    monkeypatch.setattr(conv, "run_record", lambda config: {"summary": {"initial_digest": f"d{config.seed}"}})
    monkeypatch.setattr(conv, "compression_scores", lambda stage1, digest, suite, tasks_: {
        t: {"task": t, "rows": [{"main_score": 0.55 + 0.01 * int(digest[1:])}]} for t in tasks_})
    assert chain_efficiency.tested(page_base, sizes, 1.0, methods, tasks=tasks) is None  # a baseline seed missing
    missing["seed"] = None
    claims = chain_efficiency.tested(page_base, sizes, 1.0, methods, references=pd.Series({"PromptEOL": 40.0}),
                                     tasks=tasks)
    rows = claims.set_index(["comparison", "category"])
    against = rows.loc[("AutoRegEmbed vs compression only", "64 triplets")]  # paired by chain: one stage 1 each
    assert against["units"] == "3 paired runs" and against["verdict"].startswith("supported")
    assert (rows.loc[("AutoRegEmbed vs mean, in-batch", "128 triplets"), "units"] == "3 vs 3 runs").all()
    assert rows.loc[("AutoRegEmbed vs PromptEOL", "64 triplets"), "verdict"].startswith("supported")  # fixed value
    assert "compression only" not in " ".join(claims["statement"][claims["statement"].str.contains("Figure 1")])


def test_a_chain_ablation_is_compared_with_its_own_chains_full_loss_only(monkeypatch):
    """An ablation is one change to its chain's full loss: a variant stored on one chain is compared with that
    chain's full loss, not with the mean over chains whose levels differ (here by 10 points a seed), which would pass
    the stage-1 spread off as the variant's effect."""
    import pandas as pd

    from repro.autoregembed.experiments import chain_ablations
    from repro.autoregembed.experiments.ablations import LABELS

    tasks = ["STSBenchmark", "SICK-R", "STS12"]
    rows = [{"model": model, "seed": seed, "unit": f"stage 1 d{seed}", "task": t, "category": "STS",
             "score": 40.0 + 10 * seed + i * 0.1}
            for seed in (0, 1, 2) for model in (chain_ablations.COMPRESSION_ONLY, chain_ablations.FULL_VARIANT)
            for i, t in enumerate(tasks)]
    rows += [{"model": LABELS["js"], "seed": 2, "unit": "stage 1 d2", "task": t, "category": "STS",
              "score": 40.0 + 20 - 3.0 + i * 0.1} for i, t in enumerate(tasks)]
    monkeypatch.setattr(chain_ablations, "scores", lambda *a, **k: pd.DataFrame(rows))
    table = chain_ablations.tested()
    js = table[table["comparison"] == f"{LABELS['js']} vs {LABELS['full']}"].iloc[0]
    assert abs(float(js["difference"]) - (-3.0)) < 1e-9  # against the mean of three chains: +7.0
    assert js["units"] == "1 paired run" and not js["verdict"].startswith(("supported", "contradicted"))
    # on three chains, 3 points below each chain's own full loss: the paired test decides it; Welch's, which counts
    # the chains' 10-point spread as noise, would not
    rows += [{**r, "seed": s, "unit": f"stage 1 d{s}", "score": r["score"] + 10 * (s - 2) + 0.05 * s}
             for s in (0, 1) for r in rows if r["model"] == LABELS["js"] and r["seed"] == 2]
    js = chain_ablations.tested()
    js = js[js["comparison"] == f"{LABELS['js']} vs {LABELS['full']}"].iloc[0]
    assert js["units"] == "3 paired runs" and js["test"].startswith("paired t-test")
    assert js["verdict"].startswith("supported") and abs(float(js["difference"]) + 2.95) < 0.1
    from repro.verdicts.rule import decide, runs_test

    frame = pd.DataFrame(rows)
    means = frame[frame["model"].isin([LABELS["js"], chain_ablations.FULL_VARIANT])].groupby(["model", "seed"])[
        "score"].mean()
    assert not decide(runs_test(means.loc[LABELS["js"]], means.loc[chain_ablations.FULL_VARIANT]),
                      "worse").startswith("supported")


def test_the_chains_pair_autoregembed_with_its_own_compression_only_and_nothing_else():
    """Within a chain AutoRegEmbed and compression only share the chain's stage 1: their comparison pairs the two
    runs of each chain (a 3-point gain decided across chains 10 points apart); AutoRegEmbed against the contrastive
    baseline (independent runs) stays Welch's test."""
    import pandas as pd

    from repro.autoregembed.experiments import independent
    from repro.verdicts.seeds import seeded_claims

    tasks = ["STSBenchmark", "SICK-R", "STS12"]
    rows = []
    for seed in (0, 1, 2):
        for model, shift in ((converged.COMPRESSION, 0.0), (converged.AUTOREG, 3.0 + 0.05 * seed),
                             (converged.BASELINE, 5.0 + 0.3 * seed)):
            unit = f"stage 1 d{seed}" if model != converged.BASELINE else f"run {seed}"
            rows += [{"model": model, "seed": seed, "unit": unit, "task": t, "category": "STS",
                      "score": 40.0 + 10 * seed * (model != converged.BASELINE) + shift + i * 0.1}
                     for i, t in enumerate(tasks)]
    frame = pd.DataFrame(rows)
    claims = [c for c in independent.CLAIMS if {c[1], c[2]} <= set(frame.model) and c[3] == "STS"]
    table = seeded_claims(frame, claims, paired=independent.PAIRED).set_index("comparison")
    alignment = table.loc[f"{converged.AUTOREG} vs {converged.COMPRESSION}"]
    assert alignment["units"] == "3 paired runs" and alignment["verdict"].startswith("supported")
    assert table.loc[f"{converged.AUTOREG} vs {converged.BASELINE}", "units"] == "3 vs 3 runs"


def test_the_gemma3_check_trains_one_stage1_per_template_and_reads_each_against_the_principled(monkeypatch):
    """Whether SmolLM2's template gap is its chat token: one stage 1 per template on gemma3-270m under the
    fair-chance runs' budget rule; until stored, the finding names what is missing and the command; once scored,
    each other template is set against the principled one over the page's tasks, with no ledger verdict."""
    import pandas as pd

    from repro.autoregembed.experiments import backbone_templates as bt
    from repro.autoregembed.experiments import independent
    from repro.core.tasks import TASKS as ALL

    configs = bt.configs()
    assert configs["principled"] == independent.stage1_config(0, "gemma3-270m")  # the chains' rule and template
    assert {c.backbone for c in configs.values()} == {"gemma3-270m"}
    assert len({run_spec(c).name for c in configs.values()}) == 3  # three trainings
    assert (configs["official"].template, configs["official"].bos, configs["book"].template) == ("official", "", "book")
    assert len(bt.missing()) == 3 and bt.COMMAND in bt.finding()  # this test's empty store
    tasks = converged.TASKS
    scores = pd.DataFrame([{"template": bt.NAMES[form], "task": t, "category": ALL[t].category,
                            "score": 50.0 + shift + (i % 3)} for form, shift in (("principled", 0.0), ("book", 2.0),
                                                                                  ("official", -0.1))
                           for i, t in enumerate(tasks)])
    table = bt.comparison(scores).set_index(["template", "tasks"])
    assert table.loc[(bt.NAMES["book"], "all"), "− principled"] == pytest.approx(2.0)
    assert table.loc[(bt.NAMES["official"], "all"), "no difference?"] == "supported"  # -0.1 a task: within ±1
    monkeypatch.setattr(bt, "missing", lambda *a, **k: [])
    monkeypatch.setattr(bt, "scores", lambda *a, **k: scores)
    text = bt.finding()
    assert "+2.00" in text and "-0.10" in text and "no ledger verdict" in text
