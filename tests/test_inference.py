"""The one inference loop (repro.core.inference): every item once, longest first, outputs back in input order,
the model's mode restored; the three encoders run their inference through it."""

import inspect
from pathlib import Path

import numpy as np
import pytest
import torch

from repro.core.inference import batches, run_in_order

LENGTHS = [5, 70, 3, 12, 12, 40, 1, 64, 9, 30, 2, 18]


@pytest.mark.parametrize("grouping", ["padded", "tokens", "rows"])
def test_every_item_once_in_batches_within_the_budget(grouping):
    groups = batches(LENGTHS, grouping, batch_tokens=128, max_batch=4, row_tokens=64)
    assert sorted(i for g in groups for i in g) == list(range(len(LENGTHS)))
    for group in groups:
        if grouping == "padded":
            assert len(group) <= 4 and (len(group) == 1 or max(LENGTHS[i] for i in group) * len(group) <= 128)
        if grouping == "tokens":
            assert len(group) == 1 or sum(LENGTHS[i] for i in group) <= 128
    if grouping != "rows":  # longest first, ties in input order
        flat = [i for g in groups for i in g]
        assert flat == sorted(range(len(LENGTHS)), key=lambda i: -LENGTHS[i])


def test_unknown_grouping_is_one_clear_error():
    with pytest.raises(ValueError, match="unknown grouping 'sorted'"):
        batches(LENGTHS, "sorted")


@pytest.mark.parametrize("grouping", ["padded", "tokens", "rows"])
def test_outputs_come_back_in_input_order(grouping):
    seen = []

    def forward(group):
        seen.append(list(group))
        return np.array([[LENGTHS[i], i] for i in group], dtype=np.float32)

    out = run_in_order(LENGTHS, forward, grouping=grouping, batch_tokens=100, max_batch=3, row_tokens=64)
    np.testing.assert_array_equal(out, np.array([[n, i] for i, n in enumerate(LENGTHS)], dtype=np.float32))
    assert len(seen) == len(batches(LENGTHS, grouping, 100, 3, 64))


def test_a_dict_of_arrays_along_another_axis_and_the_progress_counts_tokens():
    class Bar:
        n = 0

        def update(self, k):
            self.n += k

    bar = Bar()
    out = run_in_order(LENGTHS, lambda g: {"a": np.array([[LENGTHS[i] for i in g]] * 2)}, axis=1, batch_tokens=64,
                       progress=bar)
    np.testing.assert_array_equal(out["a"], np.array([LENGTHS] * 2))
    assert bar.n == sum(LENGTHS)
    assert run_in_order([], lambda g: np.zeros((len(g), 2))) is None


def test_the_model_runs_in_eval_without_gradients_and_gets_its_mode_back():
    model = torch.nn.Dropout(0.5)
    model.train()
    modes = []

    def forward(group):
        x = torch.ones(len(group), 3, requires_grad=True)
        modes.append((model.training, torch.is_grad_enabled()))
        return model(x).detach().numpy()

    out = run_in_order([2, 3], forward, model=model)
    assert modes == [(False, False)] and model.training
    np.testing.assert_array_equal(out, np.ones((2, 3)))  # eval: dropout is the identity


def test_the_three_encoders_use_the_one_loop():
    from repro.autoregembed import model as autoreg
    from repro.core import encode
    from repro.training import contrastive

    for function in (encode._forward_pooled, contrastive.embed_texts, autoreg.embed_texts):
        source = inspect.getsource(function)
        assert "run_in_order(" in source and "length_batches(" not in source and "sorted(" not in source, function
    callers = [p for p in Path("repro").rglob("*.py")
               if "length_batches(" in p.read_text() and p.name != "inference.py"]
    assert callers == []
