"""The benchmark command: arguments, CSV schema, tables and plots (no GPU needed)."""

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
