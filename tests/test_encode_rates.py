"""Encode rates for the leaderboard's cost figure: every row's method is timed through its own Embedder
(built untrained), in rounds against the last-token baseline of the same round; stored and read back by key."""

import numpy as np
import pandas as pd
import pytest

from repro.crosspaper import encode_rates, leaderboard
from repro.crosspaper.leaderboard import leaderboard_scores
from repro.store.paths import REPO_ROOT


def test_rates_are_medians_over_rounds_and_ratios_against_the_same_rounds_baseline(monkeypatch):
    rounds = {"last": iter([2.0, 4.0, 3.0]), "echo": iter([4.0, 8.0, 9.0])}
    monkeypatch.setattr(encode_rates, "rate_texts", lambda s, d: (["a b", "c"], ["d e f"]))
    monkeypatch.setattr(encode_rates, "text_tokens", lambda backbone, texts: 600)
    monkeypatch.setattr(encode_rates, "rate_encoder", lambda key, backbone: key)
    monkeypatch.setattr(encode_rates, "time_encode", lambda encode, s, d: next(rounds[encode]))
    rates = encode_rates.measure("smollm2-135m", ["echo"], repeats=3, progress=False).set_index("method")
    assert list(rates.index) == ["last", "echo"]  # the baseline is always timed, first in every round
    assert rates.loc["last", "seconds"] == 3.0 and rates.loc["echo", "seconds"] == 8.0
    assert rates.loc["echo", "text tokens/s"] == 600 / 8.0
    assert rates.loc["echo", "speed vs last token"] == pytest.approx(0.5)  # median of 2/4, 4/8, 3/9
    assert rates.loc["last", "speed vs last token"] == 1.0


def test_every_timed_encode_is_cold_even_for_texts_encoded_just_before(tiny, monkeypatch):
    from repro.core import encode as encode_module
    from repro.core.embedder import StatesEmbedder
    from repro.core.encode import EncodeConfig

    forwards = []  # texts run through the decoder (packed or padded)
    original = encode_module._forward_pooled
    monkeypatch.setattr(encode_module, "_forward_pooled", lambda backbone, items, *a: forwards.append(len(items))
                        or original(backbone, items, *a))
    embedder = StatesEmbedder(tiny, EncodeConfig(poolings=("last",), max_length=32), "last")
    sentences, documents = ["A man is playing a guitar.", "The cat sat on the mat."], ["Rain is expected."]
    embedder.encode(sentences + documents)  # memoised in memory and cached on disk before the timing
    assert sum(forwards) == 3
    for _ in range(2):
        forwards.clear()
        assert encode_rates.time_encode(lambda texts, role: embedder.encode(texts, role=role), sentences,
                                        documents) > 0
        assert sum(forwards) == 2 + 2 + 1  # the untimed warm-up texts, then every timed text: nothing reused
    forwards.clear()
    embedder.encode(sentences + documents)  # the states cache outside the timing is untouched
    assert forwards == []


def test_bad_settings_are_refused_before_anything_is_built():
    with pytest.raises(ValueError, match="unknown encode-rate method 'p1-model9'"):
        encode_rates.measure(keys=["p1-model9"])
    with pytest.raises(ValueError, match="unknown encode-rate method"):
        encode_rates.rate_encoder("echo+whiten/2", "smollm2-135m")
    with pytest.raises(ValueError, match="repeats must be a positive integer"):
        encode_rates.measure(keys=["last"], repeats=0)


def test_every_leaderboard_row_has_a_timed_method_and_stored_rates_are_read_by_its_key(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(REPO_ROOT / "results"))
    _, rows = leaderboard_scores("smollm2-135m")  # the committed results' rows
    assert {"echo+edge/2", "p1-model5"} <= set(rows.index)
    timed = rows["rate"].dropna()
    assert set(timed) <= set(encode_rates.LABELS)  # every key a row names is one the benchmark times
    assert rows.loc[rows["rate"].isna()].empty, rows.loc[rows["rate"].isna(), "label"]  # every row is timed
    monkeypatch.setenv("REPRO_RESULTS_DIR", str(tmp_path))
    assert encode_rates.rates_by_row(rows).isna().all()  # nothing stored yet
    assert "benchmarks/encode_rates.py" in encode_rates.describe_rates("smollm2-135m")
    stored = pd.DataFrame([{"method": key, "label": label, "seconds": 1.0, "text tokens": 700,
                            "text tokens/s": float(i + 1), "speed vs last token": 1.0}
                           for i, (key, label) in enumerate(encode_rates.LABELS.items())])
    encode_rates.store(stored, "smollm2-135m", repeats=1, sentences=2, documents=1, total_seconds=3.0)
    extra = leaderboard.row_table({"nobody": leaderboard.Row("a method nobody timed", "x", "-")})
    by_row = encode_rates.rates_by_row(pd.concat([rows, extra]))
    assert by_row[rows.index].notna().all(), by_row[by_row.isna()]
    assert np.isnan(by_row["nobody"])
    rate = dict(zip(stored["method"], stored["text tokens/s"]))
    # joined by key: the filtered rows are not read as their unfiltered methods
    assert by_row["echo+edge/2"] == rate["echo+edge/2"] != rate["echo"]
    assert by_row["prompteol"] == rate["prompteol"]
    assert encode_rates.stored_rates("gemma3-270m").empty
    described = encode_rates.describe_rates("smollm2-135m")
    assert "2 sentences + 1 documents (700 text tokens), the median of 1 round;" in described
    assert described.endswith("the untrained last token encodes 1 text tokens/s.")


@pytest.mark.integration
def test_each_kind_of_method_encodes_the_timed_texts():
    sentences, documents = encode_rates.rate_texts(3, 1)
    assert len(sentences) == 3 and len(documents) == 1 and len(documents[0]) > len(sentences[0])
    for key in ("last", "p1-model5", "p3-align", "minilm"):
        encode = encode_rates.rate_encoder(key, "smollm2-135m")
        assert np.isfinite(encode(sentences, "query")).all() and encode(documents, "document").shape[0] == 1
    assert encode_rates.time_encode(encode, sentences, documents) > 0
