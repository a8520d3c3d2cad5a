import numpy as np
import pytest

from repro.pooling_attention.layer_similarity import layer_similarity, linear_cka, rsa


def test_cka_is_one_for_rotations_and_scaling_and_low_for_independent_noise():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 16))
    q, _ = np.linalg.qr(rng.normal(size=(16, 16)))
    assert linear_cka(x, 3.0 * x @ q) == pytest.approx(1.0)
    assert linear_cka(x, rng.normal(size=(200, 16))) < 0.2


def test_rsa_is_one_for_the_same_geometry_and_nan_for_constant_states():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 8))
    assert rsa(x, 2 * x) == pytest.approx(1.0)
    assert np.isnan(rsa(np.ones((50, 8)), x))


def test_layer_matrix_is_symmetric_with_unit_diagonal():
    rng = np.random.default_rng(2)
    base = rng.normal(size=(60, 8))
    states = np.stack([base, base + 0.1 * rng.normal(size=base.shape), rng.normal(size=base.shape)])
    for measure in ("linear_cka", "rsa"):
        m = layer_similarity(states, measure)
        assert np.allclose(m, m.T) and np.allclose(np.diag(m), 1)
        assert m[0, 1] > 0.9 > m[0, 2]
    with pytest.raises(ValueError, match="linear_cka, rsa"):
        layer_similarity(states, "cosine")


def test_paired_bootstrap_detects_a_real_difference_and_not_a_fake_one():
    from repro.core.stats import paired_bootstrap_spearman, wilcoxon_over_tasks

    rng = np.random.default_rng(0)
    gold = rng.normal(size=400)
    good = gold + 0.3 * rng.normal(size=400)
    bad = gold + 3.0 * rng.normal(size=400)
    assert paired_bootstrap_spearman(gold, good, bad, n_resamples=300)["verdict"] == "first better"
    assert paired_bootstrap_spearman(gold, good, good + 1e-9 * rng.normal(size=400),
                                     n_resamples=300)["verdict"] == "not significant"
    # the vectorised bootstrap draws the same resamples as a loop over scipy's spearmanr (ties included)
    from scipy import stats

    ties = np.round(gold * 2)
    fast = paired_bootstrap_spearman(ties, good, bad, n_resamples=200, seed=3)
    slow = stats.bootstrap((ties, good, bad), lambda g, x, y: stats.spearmanr(g, x)[0] - stats.spearmanr(g, y)[0],
                           paired=True, vectorized=False, n_resamples=200, method="percentile", random_state=3)
    np.testing.assert_allclose([fast["ci_low"], fast["ci_high"]],
                               [slow.confidence_interval.low, slow.confidence_interval.high], rtol=1e-10)
    small = wilcoxon_over_tasks([1, 2, 3, 4, 5], [0, 1, 2, 3, 4])
    assert small["verdict"].startswith("untestable") and small["min_attainable_p"] == 2 / 32
    assert wilcoxon_over_tasks(np.arange(10) + 1.0, np.arange(10))["verdict"] == "significant: first better"


def test_arrays_round_trip_through_the_result_store_encoding():
    from repro.store.results import decode_array, encode_array

    x = np.linspace(-1, 1, 101).astype(np.float32)
    assert np.allclose(decode_array(encode_array(x)), x, atol=1e-3)


def test_bootstrap_on_a_constant_embedding_is_undefined_not_a_verdict():
    from repro.core.stats import paired_bootstrap_spearman

    gold = np.arange(20.0)
    assert paired_bootstrap_spearman(gold, np.ones(20), gold)["verdict"].startswith("undefined")
