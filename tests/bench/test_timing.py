"""The timing helpers' bookkeeping, without a GPU (the clock is faked)."""

import mlx.core as mx
import numpy as np

from mlx_sgemm.bench import timing


def test_alternating_medians_visits_in_turn_and_keeps_each_median_round(monkeypatch):
    scripted = {"ours": [3.0, 1.0, 2.0], "theirs": [5.0, 9.0, 4.0]}
    order = []

    def median_seconds(fn, repeats):
        name = fn()
        order.append(name)
        return scripted[name][sum(n == name for n in order) - 1]

    monkeypatch.setattr(timing, "median_seconds", median_seconds)
    medians = timing.alternating_medians({"ours": lambda: "ours", "theirs": lambda: "theirs"}, rounds=3)
    assert order == ["ours", "theirs"] * 3
    assert medians == {"ours": 2.0, "theirs": 5.0}


def test_one_at_a_time_chains_each_call_to_the_previous_result():
    a, b = mx.ones((3, 4)), mx.ones((4, 5))
    calls = []

    def product(x, y):
        calls.append(x)
        c = mx.matmul(x, y)
        return c * mx.nan if len(calls) == 1 else c  # the first result poisoned

    call = timing.one_at_a_time(product, a, b)
    assert np.isnan(np.asarray(call())).all()
    assert np.isnan(np.asarray(call())).all()  # its a carried the first result
    product_ok = timing.one_at_a_time(mx.matmul, a, b)
    for _ in range(3):
        assert np.array_equal(np.asarray(product_ok()), np.full((3, 5), 4.0, np.float32))
