import numpy as np
import pytest
import torch

from repro.core.encode import EncodeConfig, Tokenizer, encode
from repro.core.prompts import get_prompt
from repro.embedfilter.filters import (
    FILTER_TYPES,
    embedfilter,
    filter_indices,
    kept_dims,
    make_filter,
    parse_variant,
    random_projection,
    svd_spectrum,
    sweep_variants,
    truncation,
    unembedding_spectrum,
    whitening,
)

TEXTS = ["A man is playing a guitar.", "The cat sat on the mat.", "Rain tomorrow.", "A woman slices a tomato."]


def _cos(x):
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


@pytest.mark.parametrize("d,ratio", [(576, 2), (640, 4), (896, 8), (7, 2), (64, 1)])
def test_filter_indices_keep_k_distinct_rows_where_each_type_says(d, ratio):
    k = kept_dims(d, ratio)
    assert k == d // ratio
    for kind in FILTER_TYPES:
        idx = filter_indices(kind, d, k, seed=3)
        assert len(idx) == k and len(set(idx.tolist())) == k and idx.min() >= 0 and idx.max() < d
    assert filter_indices("tail", d, k).tolist() == list(range(k))
    assert filter_indices("head", d, k).tolist() == list(range(d - k, d))
    edge = filter_indices("edge", d, k)
    assert edge[0] == (d - k) // 2 and abs(edge[0] - (d - 1 - edge[-1])) <= 1  # centred window
    mid = filter_indices("mid", d, k).tolist()
    assert mid[: k // 2] == list(range(k // 2)) and mid[k // 2:] == list(range(d - (k - k // 2), d))
    np.testing.assert_array_equal(filter_indices("rand", d, k, seed=1), filter_indices("rand", d, k, seed=1))


def test_bad_ratios_and_names_are_rejected():
    for bad in (0, -2, 2.0, "2", True, 1000):
        with pytest.raises(ValueError):
            kept_dims(576, bad)
    for bad in ("edgy/2", "edge", "edge/x", "whiten/-1", ""):
        with pytest.raises(ValueError):
            parse_variant(bad)
    with pytest.raises(ValueError, match="unknown filter type"):
        filter_indices("middle", 10, 5)
    assert parse_variant("raw") == ("raw", None) and parse_variant("mid/4") == ("mid", 4)
    names = sweep_variants()
    assert names[0] == "raw" and "edge/8" in names and "whiten/2" in names and len(names) == len(set(names))


def test_svd_spectrum_is_the_svd_of_lm_head(tiny):
    spectrum = unembedding_spectrum(tiny)
    w = tiny.model.lm_head.weight.detach().double().numpy()
    s = np.linalg.svd(w, compute_uv=False)
    np.testing.assert_allclose(spectrum.singular_values, s, rtol=1e-4)
    assert np.all(np.diff(spectrum.singular_values) <= 0)
    np.testing.assert_allclose(spectrum.vh @ spectrum.vh.T, np.eye(tiny.hidden_size), atol=1e-4)
    # the cached copy is the same spectrum
    again = unembedding_spectrum(tiny)
    np.testing.assert_array_equal(again.vh, spectrum.vh)
    assert again is spectrum  # memoized on the backbone: the matrix is not hashed again
    with torch.no_grad():
        tiny.model.lm_head.weight.mul_(2.0)  # changed in place: the memo must not serve the old spectrum
    np.testing.assert_allclose(unembedding_spectrum(tiny).singular_values, 2 * spectrum.singular_values, rtol=1e-4)
    with pytest.raises(ValueError):
        svd_spectrum(np.zeros((3, 8)))  # vocab < d


@pytest.mark.parametrize("prompt,pooling", [("echo", "mean"), ("prompteol", "last")])
def test_filtering_token_states_then_pooling_equals_filtering_the_pooled_state(tiny, prompt, pooling):
    """EmbedFilter is defined on every token's final state before pooling; the book filters the
    cached pooled state. They agree because the map is linear."""
    spectrum = unembedding_spectrum(tiny)
    fmap = embedfilter(spectrum, "edge", 2)
    config = EncodeConfig(prompt=prompt, poolings=(pooling,), layers=(tiny.num_layers,))
    pooled = encode(tiny, TEXTS, config, cache=False, progress=False)[pooling][0]
    tokenize = Tokenizer(tiny.tokenizer, get_prompt(prompt), config)
    for i, text in enumerate(TEXTS):
        item = tokenize(text)
        ids = torch.tensor([item.ids])
        with torch.no_grad():
            final = tiny.hidden_states(ids, torch.ones_like(ids))[-1][0].numpy()  # [T, d], post-norm
        filtered_tokens = fmap(final)  # filter every token state
        expected = filtered_tokens[-1] if pooling == "last" else filtered_tokens[item.mean_start:].mean(0)
        np.testing.assert_allclose(fmap(pooled[i:i + 1])[0], expected, atol=1e-5)


def test_ratio_one_is_a_rotation_so_cosine_similarities_are_unchanged(tiny):
    spectrum = unembedding_spectrum(tiny)
    x = np.random.default_rng(0).normal(size=(20, tiny.hidden_size)).astype(np.float32)
    for kind in FILTER_TYPES:
        np.testing.assert_allclose(_cos(embedfilter(spectrum, kind, 1)(x)), _cos(x), atol=1e-5)
    # at ratio 2 the filters differ from each other and from the raw states
    halves = {kind: _cos(embedfilter(spectrum, kind, 2)(x)) for kind in ("edge", "tail", "head")}
    assert not np.allclose(halves["edge"], halves["tail"], atol=1e-3)
    assert not np.allclose(halves["edge"], _cos(x), atol=1e-3)


def test_baselines_have_k_dims_and_do_what_they_say():
    rng = np.random.default_rng(0)
    fit = rng.normal(size=(500, 64)) @ rng.normal(size=(64, 64)) + 3.0
    w = whitening(fit, 2)
    z = w(fit)
    assert z.shape == (500, 32)
    np.testing.assert_allclose(z.mean(0), 0, atol=1e-4)
    np.testing.assert_allclose(np.cov(z, rowvar=False), np.eye(32), atol=0.02)
    x = rng.normal(size=(5, 64)).astype(np.float32)
    np.testing.assert_array_equal(truncation(64, 4)(x), x[:, :16])
    p1, p2 = random_projection(64, 2, seed=0), random_projection(64, 2, seed=0)
    assert p1(x).shape == (5, 32)
    np.testing.assert_array_equal(p1.matrix, p2.matrix)
    assert not np.array_equal(p1.matrix, random_projection(64, 2, seed=1).matrix)
    with pytest.raises(ValueError, match="at least"):
        whitening(fit[:10], 2)
    with pytest.raises(ValueError, match="width"):
        truncation(64, 2)(np.zeros((2, 65)))
    with pytest.raises(ValueError, match="needs states"):
        make_filter("whiten/2", d=64)
    assert make_filter("raw") is None


def test_lens_projector_counts_and_search_cost(tiny):
    from repro.embedfilter.search_cost import measure
    from repro.embedfilter.vocab_lens import subspace_projector, token_frequencies

    vh = unembedding_spectrum(tiny).vh
    p = subspace_projector(vh, "edge", 2)
    np.testing.assert_allclose(p @ p, p, atol=1e-5)  # a projector
    np.testing.assert_allclose(p, p.T, atol=1e-6)
    assert round(float(np.trace(p))) == tiny.hidden_size // 2
    x = np.random.default_rng(0).normal(size=(3, tiny.hidden_size)).astype(np.float32)
    # the projected state carries exactly the filtered coordinates
    np.testing.assert_allclose((x @ p) @ embedfilter(unembedding_spectrum(tiny), "edge", 2).matrix,
                               embedfilter(unembedding_spectrum(tiny), "edge", 2)(x), atol=1e-4)
    counts = token_frequencies(tiny.tokenizer, ["The cat sat on the mat.", "The cat"], len(tiny.tokenizer))
    ids = tiny.tokenizer(["The cat sat on the mat.", "The cat"], add_special_tokens=False)["input_ids"]
    assert counts.sum() == sum(len(i) for i in ids) and counts[ids[1][0]] >= 2
    cost = measure([64, 32], corpus_sizes=(500,), n_queries=8, repeats=2)
    assert list(cost["dims"]) == [64, 32] and cost["index_megabytes"].iloc[0] == 2 * cost["index_megabytes"].iloc[1]


def test_bootstrap_p_is_two_sided_and_counts_the_observed_sample():
    from repro.embedfilter.vocab_lens import bootstrap_p

    rng = np.random.default_rng(0)
    assert bootstrap_p(rng.normal(5, 1, 999)) == pytest.approx(2 / 1000)  # never 0: (0 + 1) / (n + 1), twice
    assert bootstrap_p(-rng.normal(5, 1, 999)) == pytest.approx(2 / 1000)  # either side
    assert bootstrap_p(rng.normal(0, 1, 999)) > 0.5  # centred on 0
    shifted = rng.normal(1.0, 1, 999)  # 1 SD from 0: about 16% of resamples at or below it, p about 0.32
    assert 0.25 < bootstrap_p(shifted) < 0.4
    assert bootstrap_p(np.zeros(10)) == 1.0


def _probe(raw_rho, filtered_rho, raw_p, difference_p, shift, n=60, seed=0):
    rng = np.random.default_rng(seed)
    raw = rng.normal(8, 1, n)
    filtered = raw - shift + rng.normal(0, 0.1, n)
    from repro.core.stats import wilcoxon_over_tasks

    token = {"spearman_raw": raw_rho, "spearman_filtered": filtered_rho}
    token |= {"raw_p": raw_p, "difference_p": difference_p} if raw_p is not None else {}
    return {"params": {"n_sentences": n, "filter": "edge/2"}, "per_token": token,
            "per_sentence": {"raw_mean_log_freq_top": raw.tolist(), "filtered_mean_log_freq_top": filtered.tolist(),
                             "test": wilcoxon_over_tasks(raw, filtered, unit="sentences")}}


def test_frequency_claims_need_all_three_shifts_and_no_margin():
    from repro.embedfilter.claims import frequency_claims
    from repro.verdicts.multiplicity import with_adjusted_p
    from repro.verdicts.rule import statement_verdict

    aligned = frequency_claims({"a": _probe(0.4, 0.1, 0.002, 0.002, 0.5)})
    assert len(aligned) == 3 and set(aligned["verdict"]) == {"supported"}
    # the differences are a correlation and a log frequency, far below the score margin of 1 point: still decided
    assert (aligned["difference"].abs() < 1).all() and (aligned["margin"] == 0).all()
    # each row names its family, whose margin is the declared one, and the glossary's table lists each family
    from repro.crosspaper.margins import margins_table
    from repro.verdicts.rule import STATISTIC_MARGINS

    assert aligned["metric"].tolist() == ["rho", "rho", "log-frequency"]
    assert [STATISTIC_MARGINS[m] for m in aligned["metric"]] == aligned["margin"].tolist()
    table = margins_table().set_index("metric family")
    assert {"CKA", "rho", "log-frequency", "band-alignment"} <= set(table.index)
    assert table.loc["log-frequency", "metric"].endswith("(nats)") and table.loc["rho", "margin"] == 0
    assert set(with_adjusted_p(aligned)["verdict"]) == {"supported"}
    reversed_ = frequency_claims({"b": _probe(0.4, 0.6, 0.002, 0.002, -0.5)})
    assert statement_verdict(reversed_["verdict"]) == "contradicted"
    unsure = frequency_claims({"c": _probe(0.4, 0.35, 0.002, 0.4, 0.5)})
    assert statement_verdict(unsure["verdict"]) == "inconclusive"
    old = frequency_claims({"d": _probe(0.4, 0.1, None, None, 0.5)})  # stored before the bootstrap p was kept
    assert old["verdict"].str.startswith("untestable").sum() == 2


def test_storage_claim_holds_only_if_the_index_falls_and_the_largest_ratio_searches_faster():
    from repro.embedfilter.claims import storage_claim

    def record(times):
        return {"rows": [{"corpus_size": 1000, "dims": 64 // r, "ratio": r, "index_megabytes": 1000 * 64 // r * 4 / 2**20,
                          "search_ms_per_query": t} for r, t in zip((1, 2, 4, 8), times)]}

    held = storage_claim({64: record([4.0, 2.1, 1.2, 0.7])})
    assert held["verdict"] == "holds (measured)" and held["search speed-up at ratio 8"] == [5.71]
    assert held["search time falls at every step"]
    noisy = storage_claim({64: record([4.0, 2.1, 2.3, 0.7])})  # a step up: reported, the end-to-end claim holds
    assert noisy["verdict"] == "holds (measured)" and not noisy["search time falls at every step"]
    assert storage_claim({64: record([4.0, 2.1, 2.3, 4.1])})["verdict"] == "does not hold (measured)"


def test_the_deviation_table_follows_the_pages_settings():
    from repro.embedfilter.deviations import deviation_table

    official = deviation_table("official", "mteb", "compact").set_index("aspect")
    pieces = deviation_table("pieces", "official", "compact").set_index("aspect")
    assert official.loc["tokenization", "deviates"] == "no" and pieces.loc["tokenization", "deviates"] == "yes"
    assert official.loc["scoring", "deviates"] == "yes" and pieces.loc["scoring", "deviates"] == "no"
    assert "19 tasks" in official.loc["tasks", "ours"] and "49 MTEB datasets" in official.iloc[1, 0]
    with pytest.raises(ValueError, match="unknown tokenization"):
        deviation_table("words")
    with pytest.raises(ValueError, match="unknown protocol"):
        deviation_table("official", "sklearn")
