"""The timing helpers' bookkeeping, without a GPU (the clock is faked)."""

from mlx_sgemm import timing


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
