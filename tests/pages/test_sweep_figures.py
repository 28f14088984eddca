"""The pages' figures of the newest sweep when it holds both ways of calling
and half-dtype rows (a made-up run, written here): quoted one at a time, of
float32 operands in the README's tables, every dtype in the every-size
table, the way of calling named in each caption; a run recorded before the
dtype and calls columns is quoted as the independent calls it timed."""

import csv

import pytest

from mlx_sgemm.bench import measure, results
from mlx_sgemm.pages import recorded_summaries, sweep_figures, sweep_tables

from ..test_cli import fixture_rows

H100 = "NVIDIA H100 80GB HBM3"


def made_up(calls: str, scale: float, dtype: str = "float32") -> list[dict]:
    """fixture_rows on an H100, with a matmul row per precision beside the baseline, times scaled."""
    rows = [dict(r, device=H100, calls=calls, dtype=dtype, gflops=r["gflops"] * scale) for r in fixture_rows(calls)]
    rows += [dict(r, kernel="matmul") for r in rows if r["kernel"] == "mx.matmul" and r["precision"] == "float32"]
    rows = [dict(r, x_matmul=2.0 * scale if r["kernel"] == "matmul" else r["x_matmul"]) for r in rows]
    if dtype != "float32":
        rows = [r for r in rows if r["precision"] == "float32"]
    return rows


@pytest.fixture
def newest(tmp_path, monkeypatch):
    def record(rows, columns=measure.Measurement.columns()):
        path = tmp_path / "bench-2026-11-28-h100.csv"
        with open(path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({k: "" if v is None else v for k, v in r.items()} for r in rows)
        monkeypatch.setattr(results, "newest_recorded", lambda: path)
        sweep_figures.newest.cache_clear()
        return sweep_figures.newest()

    yield record
    sweep_figures.newest.cache_clear()


def test_a_run_timed_both_ways_is_quoted_one_at_a_time(newest):
    s = newest(made_up("independent", 3.0) + made_up("one at a time", 1.0) + made_up("one at a time", 1.0, "float16"))
    assert s.calls == "one at a time" and s.dtypes() == ["float32", "float16"]
    assert s.both("matmul", "float32", "x_matmul", sweep_figures.ratio) == "2.00x / 2.00x"  # not the 6.00x
    headline = sweep_tables.headline()
    assert "| 2.00x / 2.00x |" in headline and "timed one at a time (one product per evaluation" in headline
    every = sweep_tables.every_size()
    assert "| `matmul` (float16) |" in every and "| `mx.matmul` (float16) |" in every
    assert "float16" not in sweep_tables.every_size(("float32",))
    assert "timed one at a time (" in sweep_tables.results_table()


def test_a_run_recorded_before_the_columns_is_quoted_as_independent_calls(newest):
    s = newest(made_up("independent", 1.0), measure.Measurement.columns()[:18])  # no dtype, no calls
    assert s.calls == "independent" and s.dtypes() == ["float32"]
    assert "timed as independent calls (several products" in sweep_tables.headline()


def test_the_shape_suite_summary_has_a_row_per_dtype_and_way_of_calling(tmp_path, monkeypatch):
    header = "device,mlx_version,date,precision,dtype,calls,batch,M,N,K,b_transposed_view,matmul_s,mx_matmul_s,ratio\n"
    (tmp_path / "shapes-2026-11-28-h100.csv").write_text(header + "".join(
        f"{H100},0.32.4,2026-11-28,float32,{dtype},{calls},,{m},4096,4096,False,1,{r},{r}\n"
        for dtype, calls, r in (("float16", "one at a time", 0.5), ("bfloat16", "one at a time", 0.9),
                                ("float16", "independent", 1.5))
        for m in (1, 8)))
    (tmp_path / "shapes-2026-11-27-h100.csv").write_text(
        "device,mlx_version,date,precision,calls,batch,M,N,K,b_transposed_view,matmul_s,mx_matmul_s,ratio\n"
        f"{H100},0.32.4,2026-11-27,float32,independent,,1,4096,4096,False,1,2,2\n")
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    lines = recorded_summaries.shape_suites().splitlines()[2:]
    cells = [[c.strip() for c in line.strip("|").split("|")][:5] for line in lines]
    assert cells == [
        [H100, "independent", "float32", "float32", "1/1"],  # the suite without a dtype column
        [H100, "independent", "float16", "float32", "2/2"],
        [H100, "one at a time", "float16", "float32", "0/2"],
        [H100, "one at a time", "bfloat16", "float32", "2/2"],
    ]


def test_a_suite_of_one_precision_leaves_the_other_precisions_rows_to_older_suites(tmp_path, monkeypatch):
    """A newer suite recorded at TF32 alone is the TF32 row; float32's stays the
    older suite's, which has both."""
    header = "device,mlx_version,date,precision,dtype,calls,batch,M,N,K,b_transposed_view,matmul_s,mx_matmul_s,ratio\n"
    row = "{d},0.32.4,2026-11-27,{p},float32,one at a time,,{m},4096,4096,False,1,{r},{r}\n"
    (tmp_path / "shapes-2026-11-27-h100.csv").write_text(header + "".join(
        row.format(d=H100, p=p, m=m, r=2.0) for p in ("float32", "tf32") for m in (1, 8)))
    (tmp_path / "shapes-2026-11-27-h100-tf32-again.csv").write_text(header + "".join(
        row.format(d=H100, p="tf32", m=m, r=0.5) for m in (1, 8)))
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    lines = recorded_summaries.shape_suites().splitlines()[2:]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert [(c[3], c[4], c[-1]) for c in cells] == [
        ("float32", "2/2", "`shapes-2026-11-27-h100.csv`"), ("tf32", "0/2", "`shapes-2026-11-27-h100-tf32-again.csv`")]
