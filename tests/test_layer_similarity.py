import numpy as np
import pytest

from repro.layer_similarity import layer_similarity, linear_cka, rsa


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
