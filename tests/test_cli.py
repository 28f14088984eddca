"""The command line (bench and explain: arguments, the recorded view, JSON, a closed pipe) and\nthe benchmark's CSV schema, tables and plots; no GPU needed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlx_sgemm import cli
from mlx_sgemm.bench import measure, plots, results, sweep, tables

from .conftest import HAS_GPU


def fixture_rows(calls="one at a time"):
    """A made-up two-size run (device "Test GPU"), for exercising the outputs."""
    rows = []
    for n, scale in ((256, 1.0), (1024, 3.0)):
        for kernel, precision, gflops in (
            ("mx.matmul", "float32", 4000), ("naive", "float32", 500),
            ("tile_simdgroup", "float32", 2000), ("matmul", "tf32", 9000), ("mx.matmul", "tf32", 20000),
        ):
            rows.append(dict(
                device="Test GPU", mlx_version="0.32.4", date="2026-11-21", backend="cuda",
                kernel=kernel, precision=precision, M=n, N=n, K=n, seconds=2 * n**3 / (gflops * scale * 1e9),
                gflops=gflops * scale, pct_peak=None, x_matmul=1.0, error=1e-7 if n < 1024 else None,
                peak_kind="FP32", spread=0.02, mlx_sgemm_version="0.1.0", commit="0123abc",
                dtype="float32", calls=calls,
            ))
    return rows


def test_parser_defaults_and_shapes():
    args = cli.build_parser().parse_args(["bench", "--shapes", "1,4096,4096", "7x5x3"])
    assert args.shapes == [(1, 4096, 4096), (7, 5, 3)]
    assert args.kernels is None and args.precisions is None  # all of them
    assert args.sizes is None and args.repeats is None  # sweep.REPEATS for a live run
    assert args.dtypes == ["float32"] and args.independent is None  # float32, one at a time


@pytest.mark.parametrize("argv,dtypes,calls,per_evaluation", [
    ([], ["float32"], None, None),
    (["--dtype", "float32", "float16", "bfloat16"], ["float32", "float16", "bfloat16"], None, None),
    (["--independent"], ["float32"], "independent", None),
    (["--independent", "8", "--dtype", "bfloat16"], ["bfloat16"], "independent", 8),
])
def test_dtype_and_the_way_of_calling_reach_the_sweep(argv, dtypes, calls, per_evaluation, tmp_path, monkeypatch):
    asked = {}

    def collect(**kw):
        asked.update(kw)
        return sweep.Run(fixture_rows(), False, "a run", None, None, tmp_path / "bench.csv")

    monkeypatch.setattr(sweep, "collect", collect)
    assert cli.main(["bench", "--no-plots", "--out", str(tmp_path), *argv]) == 0
    assert (asked["dtypes"], asked["calls"], asked["per_evaluation"]) == (dtypes, calls, per_evaluation)


@pytest.mark.parametrize("argv,calls,name", [([], "one at a time", "bench-{date}.csv"),
                                             (["--independent", "3"], "independent", "bench-{date}-independent.csv")])
def test_a_live_run_records_each_dtype_and_the_way_of_calling(argv, calls, name, fake_cuda, tmp_path, capsys):
    """On a faked Hopper GPU: rows per dtype with mx.matmul beside them, the CSV
    named by the way of calling, so that both runs into one folder keep both."""
    import datetime

    assert cli.main(["bench", "--sizes", "16", "--kernels", "naive", "matmul", "--precisions", "float32",
                     "--dtype", "float32", "bfloat16", "--repeats", "2", "--out", str(tmp_path), "--no-plots",
                     "--json", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["csv"] == str(tmp_path / name.format(date=datetime.date.today().isoformat()))
    rows = results.read_csv(Path(doc["csv"]))
    assert rows == doc["rows"]
    assert {(r["dtype"], r["kernel"]) for r in rows} == {(d, k) for d in ("float32", "bfloat16")
                                                         for k in ("mx.matmul", "naive", "matmul")}
    assert {r["calls"] for r in rows} == {calls} and {r["precision"] for r in rows} == {"float32"}
    half_baseline = next(r for r in rows if r["dtype"] == "bfloat16" and r["kernel"] == "mx.matmul")
    assert half_baseline["peak_kind"] == "BF16" and half_baseline["error"] > 0
    timed = {"one at a time": "timed one at a time (", "independent": "timed as independent calls (3 products"}
    assert timed[calls] in doc["note"] and "operands float32, bfloat16" in doc["note"]


def help_text(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], ["bench"], ["explain"]])
def test_help_is_plain_text_with_the_defaults(argv, capsys):
    text = help_text(argv, capsys)
    assert "``" not in text and ":func:" not in text and ":mod:" not in text
    if argv == ["bench"]:
        assert f"(default: {sweep.REPEATS}; live runs only)" in text and "(default: outputs)" in text


def test_a_bare_command_prints_the_usage_and_exits_2(capsys):
    assert cli.main([]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("usage: mlx-sgemm") and "bench" in captured.err and "explain" in captured.err
    assert captured.out == ""


def test_csv_round_trip_and_schema(tmp_path):
    rows = fixture_rows()
    path = results.write_csv(rows, tmp_path / "bench-2026-11-21.csv")
    assert path.read_text().splitlines()[0].split(",") == measure.Measurement.columns()
    assert results.read_csv(path) == rows
    (tmp_path / "bad.csv").write_text("kernel,seconds\nnaive,1\n")
    with pytest.raises(ValueError, match="columns"):
        results.read_csv(tmp_path / "bad.csv")


def test_a_run_recorded_before_the_new_columns_is_read_with_units_peaks(tmp_path):
    """Old files: % of the FP32 peak for every row; read back, each row's % is of its units' peak."""
    rows = fixture_rows()
    old = tmp_path / "bench-old.csv"
    columns = measure.Measurement.columns()[:14]
    old.write_text(",".join(columns) + "\n" + "".join(
        ",".join("" if r[c] is None else str(r[c]) for c in columns).replace("Test GPU", "NVIDIA H100 80GB HBM3") + "\n"
        for r in rows))
    back = {(r["kernel"], r["precision"], r["M"]): r for r in results.read_csv(old)}
    tf32 = back[("matmul", "tf32", 256)]
    assert tf32["peak_kind"] == "TF32" and tf32["pct_peak"] == pytest.approx(100 * 9000 / 494_700)
    three = back[("tile_simdgroup", "float32", 256)]
    assert three["peak_kind"] == "3xTF32" and three["pct_peak"] == pytest.approx(100 * 2000 / (494_700 / 3))
    assert back[("naive", "float32", 256)]["pct_peak"] == pytest.approx(100 * 500 / 67_000)
    assert tf32["spread"] is None
    assert {(r["dtype"], r["calls"]) for r in back.values()} == {("float32", "independent")}


def test_a_run_recorded_before_dtype_and_calls_is_float32_timed_as_independent_calls(tmp_path):
    """What those runs measured: float32 operands, median_seconds' independent calls."""
    rows = fixture_rows()
    old = tmp_path / "bench-old.csv"
    columns = measure.Measurement.columns()[:18]
    assert columns[-1] == "commit"
    old.write_text(",".join(columns) + "\n" + "".join(",".join(str(r[c]) for c in columns if c) .replace("None", "")
                                                      + "\n" for r in rows))
    back = results.read_csv(old)
    assert back == [dict(r, dtype="float32", calls="independent") for r in rows]


def test_the_recorded_runs_of_both_kinds_read_with_dtype_and_calls():
    for path in results.recorded_runs("bench-*.csv"):
        assert all(r["dtype"] in measure.DTYPES and r["calls"] in measure.CALLS for r in results.read_csv(path))
    for path in results.recorded_runs("shapes-*.csv"):
        rows = results.shape_suite_rows(path)
        assert rows and all(r["dtype"] in measure.DTYPES and r["calls"] in measure.CALLS for r in rows)


def test_recorded_tables_show_spread_and_the_units(capsys):
    assert cli.main(["bench", "--recorded", "--no-plots", "--sizes", "4096", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    pcts = {(r["kernel"], r["precision"]): r["pct_peak"] for r in rows}
    assert max(pcts.values()) < 100, "a row measured against a peak its units do not have"


def test_newest_recorded_picks_latest_date(tmp_path):
    for date in ("2026-01-02", "2026-11-21", "2025-12-31"):
        results.write_csv(fixture_rows(), tmp_path / f"bench-{date}.csv")
    assert results.newest_recorded([tmp_path]).name == "bench-2026-11-21.csv"
    assert results.newest_recorded([tmp_path / "none"]) is None


def test_a_run_recorded_again_the_same_day_is_the_newer():
    """Named as the first with a suffix ("-2", "-whole-lines"): later, though
    "-" sorts before ".csv"."""
    names = ["bench-2026-11-27-h100-whole-lines.csv", "bench-2026-11-27-h100.csv", "bench-2026-11-26-h100-x.csv"]
    assert [p.name for p in sorted(map(Path, names), key=results.oldest_first)] == [
        "bench-2026-11-26-h100-x.csv", "bench-2026-11-27-h100.csv", "bench-2026-11-27-h100-whole-lines.csv"]


def test_tables_and_plots_from_recorded_data(tmp_path, monkeypatch, capsys):
    path = results.write_csv(fixture_rows(), tmp_path / "rec" / "bench-2026-11-21.csv")
    monkeypatch.setattr(results, "newest_recorded", lambda: path)
    assert cli.main(["bench", "--recorded", "--out", str(tmp_path / "out"), "--peak-gflops", "67000",
                     "--bandwidth", "4800"]) == 0
    out = capsys.readouterr().out
    assert "Showing the newest run recorded on a real GPU: bench-2026-11-21.csv (Test GPU" in out
    assert "| `matmul (tf32)` |" in out and "256x256x256" in out and "1024x1024x1024" in out
    for name in plots.FILES:
        png = tmp_path / "out" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_table_formats_unknown_peak_and_missing_error():
    text = tables.table(fixture_rows()[5:6])
    assert "peak unknown" in text and "| - |" in text


def test_the_tables_name_the_way_of_calling_and_each_dtypes_rows():
    rows = fixture_rows() + [dict(r, dtype="float16") for r in fixture_rows() if r["precision"] == "float32"]
    rows += [dict(r, calls="independent") for r in fixture_rows()]
    text = tables.tables(rows)
    assert text.count("\n256x256x256 (") == 2
    assert "; timed one at a time (one product per evaluation, waited for))" in text
    assert "; timed as independent calls (several products per evaluation, which the GPU may overlap))" in text
    assert "| `mx.matmul (float16)` |" in text and "| `naive (float16)` |" in text
    first = text.split("\n256x256x256 (")[1]
    # Each dtype's block opens with its mx.matmul: float32's, then float16's.
    names = [line.split("`")[1] for line in first.splitlines() if line.startswith("| `")]
    assert names[0] == "mx.matmul" and names.index("mx.matmul (float16)") == names.index("naive (float16)") - 1


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU mode")
def test_no_gpu_shows_the_committed_recording(tmp_path, capsys):
    assert results.newest_recorded() is not None, "benchmarks/results/ has no recorded run"
    assert cli.main(["bench", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("No GPU:") and "recorded on a real GPU" in out
    assert all((tmp_path / name).exists() for name in plots.FILES)


# ---- validation: one line, exit status 2, the argument named ------------------------------

@pytest.mark.parametrize("argv,named", [
    (["bench", "--sizes", "-5"], "--sizes"), (["bench", "--sizes", "0"], "--sizes"),
    (["bench", "--sizes", "256", "x"], "--sizes"), (["bench", "--size", "x"], "--size"),
    (["bench", "--size", "5", "--sizes", "6"], "--sizes"), (["bench", "--repeats", "0"], "--repeats"),
    (["bench", "--shapes", "1,2"], "--shapes"), (["bench", "--shapes", "0,2,3"], "--shapes"),
    (["bench", "--shapes", "1,2,z"], "--shapes"), (["bench", "--kernels", "cublas"], "--kernels"),
    (["bench", "--precisions", "fp16"], "--precisions"), (["bench", "--peak-gflops", "-1"], "--peak-gflops"),
    (["bench", "--bandwidth", "nan"], "--bandwidth"), (["bench", "--bandwidth", "inf"], "--bandwidth"),
    (["bench", "--dtype", "float64"], "--dtype"), (["bench", "--dtype"], "--dtype"),
    (["bench", "--independent", "0"], "--independent"), (["bench", "--independent", "x"], "--independent"),
    (["explain", "1x2"], "MxNxK"), (["explain", "4x0x4"], "MxNxK"), (["explain", "axbxc"], "MxNxK"),
    (["explain", "4x4x4", "--precision", "fp16"], "--precision"),
    (["explain", "4x4x4", "--backend", "rocm"], "--backend"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, named, capsys, monkeypatch):
    monkeypatch.setattr(sweep, "collect", lambda **kw: pytest.fail("ran with a bad argument"))
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("mlx-sgemm: error: ") and named in line, line
    assert captured.out == ""


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_unusable_out_fails_before_any_work(where, tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker if where == "a file" else blocker / "sub"
    monkeypatch.setattr(sweep, "collect", lambda **kw: pytest.fail("ran before checking --out"))
    with pytest.raises(SystemExit) as stop:
        cli.main(["bench", "--out", str(out)])
    assert stop.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("mlx-sgemm: error: argument --out: ") and str(out) in line


def test_out_is_created_when_missing(recorded, tmp_path, capsys):
    assert cli.main([*recorded[:-1], "--out", str(tmp_path / "new" / "dir")]) == 0  # with plots
    assert all((tmp_path / "new" / "dir" / name).exists() for name in plots.FILES)


def test_a_recorded_view_writes_the_csv_of_what_it_shows(recorded, tmp_path, capsys):
    assert cli.main([*recorded, "--sizes", "1024", "--kernels", "naive"]) == 0
    written = tmp_path / "out" / "recorded-bench-2026-11-21.csv"
    assert f"The rows shown are written to {written} (recorded, not measured here)." in capsys.readouterr().out
    rows = results.read_csv(written)
    assert {mnk(r) for r in rows} == {(1024,) * 3} and {r["kernel"] for r in rows} == {"naive", "mx.matmul"}


def test_repeats_on_a_recorded_run_says_it_does_not_apply(recorded, capsys):
    assert cli.main([*recorded, "--repeats", "5"]) == 0
    assert f"--repeats applies to live runs only: the recorded rows are medians of {sweep.REPEATS}" in (
        capsys.readouterr().out)


def test_a_shape_of_the_recorded_shape_suite_is_served_from_it(tmp_path, monkeypatch, capsys):
    """The sweep records squares; the newest shape suite of the same GPU with
    rows of the dtype and way of calling shown holds model shapes."""
    suite = ("device,mlx_version,date,precision,dtype,calls,batch,M,N,K,b_transposed_view,matmul_s,mx_matmul_s,"
             "ratio,error,mx_matmul_error\n")
    row = "{device},0.32.4,{date},float32,{dtype},{calls},,1,4096,4096,False,2e-05,3e-05,1.5,1e-08,1e-08\n"
    (tmp_path / "shapes-2026-11-20-test.csv").write_text(suite + row.format(
        device="Test GPU", date="2026-11-20", dtype="float32", calls="one at a time"))
    (tmp_path / "shapes-2026-11-22-test.csv").write_text(suite + "".join(row.format(
        device=device, date="2026-11-22", dtype=dtype, calls=calls) for device, dtype, calls in (
        ("Test GPU", "float32", "independent"), ("Test GPU", "bfloat16", "one at a time"),
        ("Other GPU", "float32", "one at a time"))))
    argv = record(fixture_rows(), tmp_path, monkeypatch) + ["--shapes", "1,4096,4096"]
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])

    def served(*more):
        note, rows = note_and_rows([*argv, *more], capsys)
        return note, {(r["kernel"], mnk(r), r["device"], r["dtype"], r["calls"]) for r in rows}

    note, rows = served()
    assert rows == {(k, (1, 4096, 4096), "Test GPU", "float32", "one at a time") for k in ("matmul", "mx.matmul")}
    assert "from the shape suite shapes-2026-11-20-test.csv" in note
    note, rows = served("--independent")
    assert {r[-1] for r in rows} == {"independent"} and "shapes-2026-11-22-test.csv" in note
    assert {r[-2] for r in served("--dtype", "bfloat16")[1]} == {"bfloat16"}


def test_each_precision_of_a_shape_is_served_from_the_newest_suite_that_has_it(tmp_path, monkeypatch, capsys):
    """A newer suite recorded at TF32 alone serves TF32's rows; float32's come
    from the older suite, and the note names both."""
    suite = ("device,mlx_version,date,precision,dtype,calls,batch,M,N,K,b_transposed_view,matmul_s,mx_matmul_s,"
             "ratio,error,mx_matmul_error\n")
    row = "Test GPU,0.32.4,{date},{precision},float32,one at a time,,1,4096,4096,False,2e-05,{theirs},1.5,1e-08,1e-08\n"
    (tmp_path / "shapes-2026-11-20-test.csv").write_text(suite + "".join(
        row.format(date="2026-11-20", precision=p, theirs=3e-05) for p in ("float32", "tf32")))
    (tmp_path / "shapes-2026-11-22-test-tf32.csv").write_text(suite + row.format(
        date="2026-11-22", precision="tf32", theirs=4e-05))
    argv = record(fixture_rows(), tmp_path, monkeypatch) + ["--shapes", "1,4096,4096"]
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    note, rows = note_and_rows(argv, capsys)
    served = {(r["kernel"], r["precision"], r["date"]) for r in rows if mnk(r) == (1, 4096, 4096)}
    assert served == {(k, "float32", "2026-11-20") for k in ("matmul", "mx.matmul")} | {
        (k, "tf32", "2026-11-22") for k in ("matmul", "mx.matmul")}
    assert "from the shape suites shapes-2026-11-22-test-tf32.csv, shapes-2026-11-20-test.csv" in note


# ---- the recorded view: filtered, as JSON ---------------------------------------------------

@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """A recording of squares 256 and 1024 and of 1x1024x1024; the options for its view, no plots."""
    rows = fixture_rows()
    rows += [dict(r, M=1) for r in rows if r["M"] == 1024]
    path = results.write_csv(rows, tmp_path / "rec" / "bench-2026-11-21.csv")
    monkeypatch.setattr(results, "newest_recorded", lambda: path)
    return ["bench", "--recorded", "--out", str(tmp_path / "out"), "--no-plots"]


def shown(argv, capsys) -> list[dict]:
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"]


def mnk(row) -> tuple[int, int, int]:
    return row["M"], row["N"], row["K"]


def test_the_recorded_view_shows_only_the_rows_asked_for(recorded, capsys):
    assert {mnk(r) for r in shown(recorded, capsys)} == {(256,) * 3, (1024,) * 3, (1, 1024, 1024)}
    assert {mnk(r) for r in shown([*recorded, "--sizes", "1024"], capsys)} == {(1024,) * 3}
    assert {mnk(r) for r in shown([*recorded, "--size", "256"], capsys)} == {(256,) * 3}
    assert {mnk(r) for r in shown([*recorded, "--shapes", "1x1024x1024"], capsys)} == {(1, 1024, 1024)}
    assert {mnk(r) for r in shown([*recorded, "--sizes", "256", "--shapes", "1,1024,1024"], capsys)} == {
        (256,) * 3, (1, 1024, 1024)}
    # mx.matmul stays beside the kernels asked for: every ratio is to it.
    assert {r["kernel"] for r in shown([*recorded, "--kernels", "naive"], capsys)} == {"naive", "mx.matmul"}
    rows = shown([*recorded, "--precisions", "tf32"], capsys)
    assert {(r["kernel"], r["precision"]) for r in rows} == {("matmul", "tf32"), ("mx.matmul", "tf32")}


def test_the_recorded_tables_are_filtered_too(recorded, capsys):
    assert cli.main([*recorded, "--sizes", "1024", "--kernels", "naive"]) == 0
    out = capsys.readouterr().out
    assert "\n1024x1024x1024 (" in out and "256x256x256" not in out and "1x1024x1024" not in out
    assert "| `naive` |" in out and "| `mx.matmul` |" in out and "tile_simdgroup" not in out


def test_asked_shapes_the_recording_lacks_are_named(recorded, capsys):
    assert cli.main([*recorded, "--sizes", "256", "300"]) == 0
    assert "It has no rows for shapes 300x300x300." in capsys.readouterr().out


@pytest.mark.parametrize("argv,asked", [
    (["--sizes", "300"], "shapes 300x300x300"),
    (["--sizes", "300", "--shapes", "2,3,4", "--kernels", "naive"], "shapes 2x3x4, 300x300x300; kernels naive"),
    (["--kernels", "tile_32"], "kernels tile_32"),
    (["--kernels", "naive", "--precisions", "tf32"], "kernels naive; precisions tf32"),
    (["--dtype", "bfloat16"], "dtypes bfloat16"),
    (["--independent"], "calls independent"),
])
def test_a_filter_the_recording_cannot_serve_says_what_was_asked_and_what_it_has(recorded, argv, asked, capsys):
    assert cli.main([*recorded, *argv]) == 1
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line == (f"mlx-sgemm: the recorded run bench-2026-11-21.csv has no rows for {asked}; it has shapes "
                    "1x1024x1024, 256x256x256, 1024x1024x1024; kernels matmul, naive, tile_simdgroup; "
                    "precisions float32, tf32; dtypes float32; calls one at a time")
    assert captured.out == ""


def test_collect_filters_a_recorded_run_as_the_notebook_calls_it(recorded):
    run = sweep.collect(sizes=(256,), out=None, force_recorded=True, progress=False)
    assert run.recorded and {mnk(r) for r in run.rows} == {(256,) * 3}
    with pytest.raises(sweep.NoRecordedRows, match="300x300x300"):
        sweep.collect(sizes=(300,), force_recorded=True)


def test_json_output_is_the_rows_and_only_them(recorded, capsys):
    assert cli.main([*recorded, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recorded"] is True and doc["csv"].endswith("recorded-bench-2026-11-21.csv")
    written = results.read_csv(results.newest_recorded())
    assert doc["rows"] == written and doc["note"].startswith("Recorded results requested")


def test_json_still_writes_the_plots_and_keeps_stdout_json(recorded, tmp_path, capsys):
    assert cli.main([*recorded[:-1], "--json"]) == 0  # plots on
    json.loads(capsys.readouterr().out)
    assert all((tmp_path / "out" / name).exists() for name in plots.FILES)


def test_without_matplotlib_the_plots_are_skipped_with_the_extra_named(recorded, tmp_path, capsys, monkeypatch):
    import mlx_sgemm.bench

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # "import matplotlib" fails
    monkeypatch.delitem(sys.modules, "mlx_sgemm.bench.plots")
    monkeypatch.delattr(mlx_sgemm.bench, "plots")
    assert cli.main(recorded[:-1]) == 0
    captured = capsys.readouterr()
    assert 'pip install "mlx-sgemm[bench]"' in captured.err and len(captured.err.splitlines()) == 1
    assert "| `naive` |" in captured.out
    assert not any((tmp_path / "out" / name).exists() for name in plots.FILES)


# ---- the progress bar -----------------------------------------------------------------------

@pytest.mark.parametrize("terminal,flags,bar", [
    (True, [], True), (False, [], False), (True, ["--quiet"], False), (True, ["--json"], False),
])
def test_progress_only_on_a_terminal_and_not_when_quiet_or_json(terminal, flags, bar, tmp_path, capsys,
                                                                monkeypatch):
    asked = {}

    def collect(**kw):
        asked.update(kw)
        return sweep.Run(fixture_rows(), False, "a run", None, None, tmp_path / "bench.csv")

    monkeypatch.setattr(sweep, "collect", collect)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: terminal)
    assert cli.main(["bench", "--no-plots", "--out", str(tmp_path), *flags]) == 0
    assert asked["progress"] is bar


def test_progress_without_tqdm_is_no_bar(monkeypatch):
    shapes = [(1, 2, 3)]
    assert type(measure._progress(shapes, True)).__name__ == "tqdm"
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert measure._progress(shapes, True) is shapes


# ---- --version, explain ---------------------------------------------------------------------

def test_version(capsys):
    import mlx.core as mx

    import mlx_sgemm

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"mlx-sgemm {mlx_sgemm.__version__} (MLX {mx.__version__})\n"


def test_explain_verb(capsys):
    assert cli.main(["explain", "1x4096x4096", "4096,4096,4096", "--backend", "cuda", "--transposed-b"]) == 0
    out = capsys.readouterr().out
    assert out.count("kernel ") == 2 and "small_m" in out and "(x @ W.T)" in out
    assert "(1, 4096) @ (4096, 4096)" in out and "(4096, 4096) @ (4096, 4096)" in out


def test_explain_passes_its_options_through(capsys):
    import mlx_sgemm

    assert cli.main(["explain", "8x14336x4096", "--backend", "cuda", "--precision", "tf32", "--deterministic"]) == 0
    expected = mlx_sgemm.explain((8, 4096), (4096, 14336), precision="tf32", deterministic=True, backend="cuda")
    assert capsys.readouterr().out == f"{expected}\n"
    assert cli.main(["explain", "1x4096x4096", "--backend", "cuda", "--dtype", "bfloat16"]) == 0
    expected = mlx_sgemm.explain((1, 4096), (4096, 4096), backend="cuda", dtype="bfloat16")
    assert capsys.readouterr().out == f"{expected}\n"
    assert "bfloat16: read as it is straight into the tensor cores' registers" in str(expected)
    assert cli.main(["explain", "1x4096x4096", "--backend", "cuda", "--dtype", "bfloat16", "--layer"]) == 0
    expected = mlx_sgemm.explain((1, 4096), (4096, 4096), backend="cuda", dtype="bfloat16", layer=True)
    assert capsys.readouterr().out == f"{expected}\n" and "half_gemv_one_row" in str(expected)


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU advice")
def test_explain_without_a_gpu_tells_the_command_for_one(capsys):
    assert cli.main(["explain", "4096x4096x4096"]) == 0
    out = capsys.readouterr().out
    assert "mlx-sgemm explain 4096x4096x4096 --backend cuda" in out and "explain(" not in out


def test_explain_writes_large_numbers_as_shapes_and_one_name_per_thing(capsys):
    assert cli.main(["explain", "4096x4096x4096", "128x1024x4096", "--backend", "cuda", "--precision", "tf32"]) == 0
    out = capsys.readouterr().out
    assert "4096x4096x2048" in out and "34359738368" not in out
    assert "SPLIT=" not in out and "passes=1xTF32" in out and "K split      4 ways" in out


def test_explain_json(capsys):
    assert cli.main(["explain", "8x14336x4096", "2,3,4", "--backend", "metal", "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)
    assert [p["backend"] for p in plans] == ["metal", "metal"] and all(p["kernel"] for p in plans)
    assert plans[0]["shape"].startswith("(8, 4096) @ (4096, 14336)") and isinstance(plans[0]["parameters"], dict)


# ---- a closed pipe --------------------------------------------------------------------------

CONSOLE_SCRIPT = "import sys; from mlx_sgemm.cli import main; sys.exit(main())"


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("how,argv", [
    (["-m", "mlx_sgemm"], ["bench", "--recorded", "--no-plots"]),
    (["-c", CONSOLE_SCRIPT], ["bench", "--recorded", "--no-plots"]),
    (["-c", CONSOLE_SCRIPT], ["explain", "1x4096x4096"]),
    (["-c", CONSOLE_SCRIPT], ["--help"]),
], ids=["python -m", "console script", "explain", "--help"])
def test_a_closed_pipe_ends_quietly(how, argv, buffered):
    """``mlx-sgemm bench | head``: no traceback, no "Exception ignored". The
    reader is gone before the first write (``head -n 3`` would let the whole
    table into the pipe's buffer, and nothing would break). Buffered, as on a
    user's machine, the write fails at the last flush; unbuffered
    (PYTHONUNBUFFERED), at once. Exit status 1 shows it did fail and was
    caught; argparse itself ignores a failed write of --help, unbuffered."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([sys.executable, *how, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    proc.stdout.close()  # the reader goes away while the command is still starting
    err = proc.stderr.read()
    status = proc.wait(timeout=120)
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err == "" and status == (0 if argv == ["--help"] and not buffered else 1)


# ---- the recorded view: dtype and the way of calling ------------------------------------------

def record(rows, tmp_path, monkeypatch):
    path = results.write_csv(rows, tmp_path / "rec" / "bench-2026-11-21.csv")
    monkeypatch.setattr(results, "newest_recorded", lambda: path)
    return ["bench", "--recorded", "--out", str(tmp_path / "out"), "--no-plots"]


def note_and_rows(argv, capsys):
    assert cli.main([*argv, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    return doc["note"], doc["rows"]


def test_a_recording_of_both_ways_shows_one_at_a_time_unless_asked(tmp_path, monkeypatch, capsys):
    argv = record(fixture_rows() + fixture_rows("independent"), tmp_path, monkeypatch)
    note, rows = note_and_rows(argv, capsys)
    assert {r["calls"] for r in rows} == {"one at a time"} and "Timed one at a time (one product per" in note
    note, rows = note_and_rows([*argv, "--independent"], capsys)
    assert {r["calls"] for r in rows} == {"independent"} and "Timed as independent calls (several" in note


def test_a_recording_of_independent_calls_only_is_shown_and_says_so(tmp_path, monkeypatch, capsys):
    argv = record(fixture_rows("independent"), tmp_path, monkeypatch)
    note, rows = note_and_rows(argv, capsys)
    assert {r["calls"] for r in rows} == {"independent"}
    assert "It was timed as independent calls (several products per evaluation, which the GPU may overlap) " \
        "only, not one at a time." in note


def test_dtype_picks_a_recorded_runs_rows(tmp_path, monkeypatch, capsys):
    half = [dict(r, dtype="bfloat16", peak_kind="BF16" if r["kernel"] == "mx.matmul" else r["peak_kind"])
            for r in fixture_rows() if r["precision"] == "float32"]
    argv = record(fixture_rows() + half, tmp_path, monkeypatch)
    assert {r["dtype"] for r in note_and_rows(argv, capsys)[1]} == {"float32"}
    rows = note_and_rows([*argv, "--dtype", "bfloat16"], capsys)[1]
    assert {(r["dtype"], r["kernel"]) for r in rows} == {("bfloat16", k) for k in ("mx.matmul", "naive",
                                                                                    "tile_simdgroup")}
    both = note_and_rows([*argv, "--dtype", "float32", "bfloat16", "--sizes", "256"], capsys)[1]
    assert len(both) == 5 + 3
    assert cli.main([*argv, "--dtype", "float16"]) == 1
    assert "has no rows for dtypes float16; " in capsys.readouterr().err
