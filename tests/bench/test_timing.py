"""The timing helpers' bookkeeping, without a GPU (the clock is faked)."""

import mlx.core as mx
import numpy as np
import pytest

from mlx_sgemm.bench import timing


def test_alternating_medians_visits_in_turn_and_keeps_each_median_round(monkeypatch):
    scripted = {"ours": [3.0, 1.0, 2.0], "theirs": [5.0, 9.0, 4.0]}
    order = []

    def median_seconds(fn, repeats, per_evaluation=None):
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


def test_one_at_a_time_evaluates_each_call_alone_and_waits(monkeypatch):
    """One product per evaluation, the device synchronized before the clock stops."""
    events = []
    monkeypatch.setattr(timing.mx, "eval", lambda *arrays: events.append(("eval", len(arrays))))
    monkeypatch.setattr(timing.mx, "synchronize", lambda *a: events.append(("synchronize",)))
    seconds = timing.one_call_seconds(lambda: "product", warmup=2, repeats=4)
    assert seconds >= 0
    assert events == [("eval", 1)] * 2 + [("synchronize",)] + [("eval", 1), ("synchronize",)] * 4


def test_independent_calls_evaluate_several_products_together(monkeypatch):
    evaluated = []
    monkeypatch.setattr(timing.mx, "eval", lambda *arrays: evaluated.append(len(arrays)))
    timing.median_seconds(lambda: "product", warmup=1, repeats=3, per_evaluation=5)
    assert evaluated == [1, 1, 5, 5, 5]  # warm-up, the call that sizes a sample, then the samples


@pytest.mark.parametrize("calls,timer", [(timing.ONE_AT_A_TIME, "one_call_seconds"),
                                         (timing.INDEPENDENT, "median_seconds")])
def test_alternating_rounds_time_the_way_asked(calls, timer, monkeypatch):
    used = []
    for name in ("one_call_seconds", "median_seconds"):
        monkeypatch.setattr(timing, name, lambda fn, name=name, **kw: used.append((name, kw)) or 1.0)
    timing.alternating_rounds({"ours": lambda: None}, rounds=2, repeats=7, calls=calls, per_evaluation=3)
    assert [name for name, _ in used] == [timer] * 2 and all(kw["repeats"] == 7 for _, kw in used)
    with pytest.raises(ValueError, match="calls must be one of"):
        timing.call_seconds(lambda: None, repeats=1, calls="overlapped")
