"""The benchmark command: arguments, CSV schema, tables and plots (no GPU needed)."""

import json
import shlex
import subprocess
import sys

import pytest

from mlx_sgemm import cli
from mlx_sgemm.bench import measure, plots, results, tables

from .conftest import HAS_GPU


def fixture_rows():
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
            ))
    return rows


def test_parser_defaults_and_shapes():
    args = cli.build_parser().parse_args(["bench", "--shapes", "1,4096,4096", "7,5,3"])
    assert args.shapes == [(1, 4096, 4096), (7, 5, 3)]
    assert args.kernels == list(measure.KERNELS) and args.precisions == list(measure.PRECISIONS)
    assert args.sizes is None and args.repeats == 20


@pytest.mark.parametrize("bad", [["--shapes", "1,2"], ["--shapes", "0,2,3"], ["--kernels", "cublas"],
                                 ["--peak-gflops", "-1"], ["--precisions", "fp16"]])
def test_parser_rejects_bad_arguments(bad):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["bench", *bad])


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


@pytest.mark.skipif(HAS_GPU, reason="checks the no-GPU mode")
def test_no_gpu_shows_the_committed_recording(tmp_path, capsys):
    assert results.newest_recorded() is not None, "benchmarks/results/ has no recorded run"
    assert cli.main(["bench", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("No GPU:") and "recorded on a real GPU" in out
    assert all((tmp_path / name).exists() for name in plots.FILES)


# ---- validation: one line, exit status 2, the argument named ------------------------------

@pytest.mark.parametrize("bad,named", [
    (["--sizes", "-5"], "--sizes"), (["--sizes", "0"], "--sizes"), (["--size", "x"], "--size"),
    (["--repeats", "0"], "--repeats"), (["--shapes", "1,2"], "--shapes"), (["--shapes", "0,2,3"], "--shapes"),
    (["--kernels", "cublas"], "--kernels"), (["--precisions", "fp16"], "--precisions"),
    (["--peak-gflops", "-1"], "--peak-gflops"), (["--bandwidth", "nan"], "--bandwidth"),
])
def test_bad_arguments_are_one_line_and_exit_2(bad, named, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["bench", *bad])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("mlx-sgemm bench: error: argument ") and named in err[-1]
    assert "Traceback" not in "\n".join(err)


def test_an_unwritable_out_fails_before_any_work(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr("mlx_sgemm.bench.sweep.collect", lambda **kw: pytest.fail("ran before checking --out"))
    with pytest.raises(SystemExit) as stop:
        cli.main(["bench", "--out", str(blocker / "sub")])
    assert stop.value.code == 2
    assert "argument --out" in capsys.readouterr().err


# ---- the recorded view: filtered, as JSON ---------------------------------------------------

@pytest.fixture
def recorded(tmp_path, monkeypatch):
    path = results.write_csv(fixture_rows(), tmp_path / "rec" / "bench-2026-11-21.csv")
    monkeypatch.setattr(results, "newest_recorded", lambda: path)
    return ["bench", "--recorded", "--no-plots", "--out", str(tmp_path / "out")]


def test_the_recorded_view_honours_sizes_kernels_precisions(recorded, capsys):
    assert cli.main([*recorded, "--sizes", "1024", "--kernels", "naive"]) == 0
    out = capsys.readouterr().out
    assert "1024x1024x1024" in out and "256x256x256" not in out
    assert "| `naive` |" in out and "`tile_simdgroup`" not in out and "| `mx.matmul` |" in out
    assert cli.main([*recorded, "--precisions", "tf32", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows and {r["precision"] for r in rows} == {"tf32"}


def test_a_filter_the_recording_cannot_serve_says_what_it_has(recorded, capsys):
    assert cli.main([*recorded, "--sizes", "300"]) == 1
    err = capsys.readouterr().err
    assert "no rows for these options" in err and "256x256x256" in err


def test_json_output_is_the_rows_and_only_them(recorded, capsys):
    assert cli.main([*recorded, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recorded"] is True and doc["csv"].endswith("bench-2026-11-21.csv")
    assert len(doc["rows"]) == len(fixture_rows()) and doc["rows"][0]["device"] == "Test GPU"


def test_version(capsys):
    import mlx.core as mx

    import mlx_sgemm

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"mlx-sgemm {mlx_sgemm.__version__} (MLX {mx.__version__})"


def test_explain_verb(capsys):
    assert cli.main(["explain", "1x4096x4096", "4096,4096,4096", "--backend", "cuda", "--transposed-b"]) == 0
    out = capsys.readouterr().out
    assert out.count("kernel ") == 2 and "small_m" in out and "(x @ W.T)" in out
    assert cli.main(["explain", "8x14336x4096", "--backend", "metal", "--json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)
    assert plan["backend"] == "metal" and plan["kernel"]
    with pytest.raises(SystemExit) as stop:
        cli.main(["explain", "1x2"])
    assert stop.value.code == 2


def test_a_closed_pipe_ends_quietly(tmp_path):
    """`mlx-sgemm bench | head`: no traceback, no 'Exception ignored'. The
    command runs as the console script does (``sys.exit(cli.main())``);
    ``head -n 0`` closes the pipe before the first write (``head -n 3`` would
    let the whole table into the pipe's buffer, and nothing would break)."""
    reader = "head -n 0"
    script = "import sys; from mlx_sgemm.cli import main; sys.exit(main())"
    command = (f"{shlex.quote(sys.executable)} -c {shlex.quote(script)} bench --recorded --no-plots "
               f"--out {shlex.quote(str(tmp_path))} | {reader}")
    run = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    assert len(run.stdout.splitlines()) == int(reader.split()[-1])
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr
