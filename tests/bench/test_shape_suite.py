"""benchmarks/shape_suite.py on a faked Hopper GPU (conftest's fake_cuda) and
two small shapes: its arguments, the rows it records (dtype, calls, the errors
of both sides) and its CSV, which the readers of recorded suites take. Speed
is not checked here."""

import csv

import pytest

from mlx_sgemm.bench import results, timing

from . import benchmark_scripts

SMALL = [((), 3, 40, 24, False), ((), 5, 24, 40, True), ((2,), 4, 8, 16, False)]


@pytest.fixture
def suite(monkeypatch):
    module = benchmark_scripts.load("shape_suite")
    monkeypatch.setattr(module, "SHAPES", SMALL)
    monkeypatch.setenv("MLX_ENABLE_TF32", "0")  # main sets it; the tests' process keeps its own
    return module


def run(suite, tmp_path, *argv) -> list[dict]:
    path = tmp_path / "shapes-2026-11-28-test.csv"
    assert suite.main(["--repeats", "2", "--rounds", "1", "--csv", str(path), *argv]) == 0
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_one_at_a_time_is_the_default_and_each_dtype_gets_its_rows(suite, fake_cuda, tmp_path, monkeypatch):
    used = []
    timed = timing.alternating_medians
    monkeypatch.setattr(timing, "alternating_medians",
                        lambda fns, **kw: used.append(kw["calls"]) or timed(fns, **kw))
    rows = run(suite, tmp_path, "--dtype", "float32", "bfloat16")
    assert set(used) == {timing.ONE_AT_A_TIME}
    assert [(r["dtype"], r["calls"]) for r in rows] == [(d, "one at a time") for d in ("float32", "bfloat16")
                                                       for _ in SMALL]
    half = [r for r in rows if r["dtype"] == "bfloat16"]
    # Against float64 of the operands' values: the output's rounding to bfloat16, on both sides.
    assert all(0 < float(r["error"]) < 2**-7 and 0 < float(r["mx_matmul_error"]) < 2**-7 for r in half)
    assert all(float(r["error"]) < 1e-6 for r in rows if r["dtype"] == "float32")
    # Its readers: the benchmark's rows of the unbatched, row-major products.
    read = results.shape_suite_rows(tmp_path / "shapes-2026-11-28-test.csv")
    assert {(r["dtype"], r["calls"], r["M"]) for r in read} == {(d, "one at a time", 3) for d in ("float32", "bfloat16")}


def test_independent_calls_are_an_option(suite, fake_cuda, tmp_path):
    rows = run(suite, tmp_path, "--independent")
    assert {(r["dtype"], r["calls"]) for r in rows} == {("float32", "independent")}
    # A later run with the other way appends to the same file: the same columns.
    rows = run(suite, tmp_path, "--dtype", "float16")
    assert [r["calls"] for r in rows] == ["independent"] * len(SMALL) + ["one at a time"] * len(SMALL)


def test_half_dtypes_are_measured_at_float32_precision_only(suite, capsys):
    with pytest.raises(SystemExit) as stop:
        suite.main(["--precision", "tf32", "--dtype", "float16"])
    assert stop.value.code == 2 and "--precision float32" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        suite.main(["--independent", "--one-at-a-time"])
