"""bench.notebook: the notebook's mode switch, each chapter's table and
ceilings, the accuracy section's sources, on the recorded run (no GPU needed)."""

import pytest

from mlx_sgemm.bench import notebook, peaks, plots, precision_modes, timing
from mlx_sgemm.dispatch import device


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv(notebook.RECORDED_ENV, "1")
    return notebook.collect(tmp_path)


def test_the_mode_is_live_on_a_gpu_unless_the_recorded_run_is_asked_for(monkeypatch):
    monkeypatch.delenv(notebook.RECORDED_ENV, raising=False)
    monkeypatch.setattr(device, "backend", lambda stream=None: device.CUDA)
    assert notebook.mode() == "live"
    monkeypatch.setenv(notebook.RECORDED_ENV, "1")
    assert notebook.mode() == "recorded"
    monkeypatch.setenv(notebook.RECORDED_ENV, "0")
    assert notebook.mode() == "live"
    monkeypatch.setattr(device, "backend", lambda stream=None: device.CPU_FALLBACK)
    assert notebook.mode() == "recorded"


def test_live_sizes_from_the_environment(monkeypatch):
    monkeypatch.delenv(notebook.SIZES_ENV, raising=False)
    assert notebook.live_sizes() == notebook.LIVE_SIZES
    monkeypatch.setenv(notebook.SIZES_ENV, "256, 512")
    assert notebook.live_sizes() == (256, 512)
    monkeypatch.setenv(notebook.SIZES_ENV, "0")
    with pytest.raises(ValueError, match=notebook.SIZES_ENV):
        notebook.live_sizes()


def test_the_recorded_mode_says_so_and_names_its_file(run):
    assert run.recorded
    text = notebook.mode_text(run)
    assert text.startswith("**Mode: recorded**") and f"`{run.source.name}`" in text
    assert run.rows[0]["device"] in text
    assert f"timed {timing.TIMED[run.rows[0]['calls']]}" in text  # how its products were called


def test_every_chapter_has_a_row_per_size_and_its_units_ceiling(run):
    peak = peaks.lookup(run.rows[0]["device"])
    sizes = sorted({r["M"] for r in run.rows if r["M"] == r["N"] == r["K"]})
    for name, chapter in notebook.CHAPTERS.items():
        lines = notebook.table(run, chapter).splitlines()
        assert len(lines) == 2 + len(sizes), name
        assert [line.split(" | ")[0].strip("| ") for line in lines[2:]] == [str(n) for n in sizes]
        assert all(f"`{k}` TFLOP/s" in lines[0] for k in chapter.kernels)
        assert notebook.ceiling_text(run, chapter).startswith(f"At {sizes[-1]}^3 on {run.rows[0]['device']}")
    ceilings = {name: dict(notebook.ceilings(run, chapter)) for name, chapter in notebook.CHAPTERS.items()}
    assert ceilings["naive"] == {"FP32 peak": peak.fp32_gflops, "device memory, no reuse": peak.bandwidth_gbs / 4}
    assert ceilings["tile_threads"] == {"FP32 peak": peak.fp32_gflops}
    assert ceilings["tile_async"] == {"3xTF32 peak": pytest.approx(peak.tf32_gflops / 3)}
    # matmul: the pipeline's units below the float16 split's bounds, the split's above them.
    kinds = {r["peak_kind"] for r in run.rows if r["kernel"] == "matmul" and r["M"] == r["N"] == r["K"]}
    assert {"3xTF32", "TF32"} <= kinds <= {"3xTF32", "TF32", "3xFP16", "FP16"}
    rate = {"3xTF32": peak.tf32_gflops / 3, "TF32": peak.tf32_gflops}
    if peak.fp16_gflops:
        rate |= {"3xFP16": peak.fp16_gflops / 3, "FP16": peak.fp16_gflops}
    assert ceilings["matmul"] == {f"{kind} peak": pytest.approx(rate[kind]) for kind in kinds}


def test_a_chapter_table_holds_the_recorded_figures(run):
    row = next(r for r in run.rows if r["kernel"] == "tile_threads" and r["M"] == 4096)
    base = next(r for r in run.rows if r["kernel"] == "mx.matmul" and r["M"] == 4096 and r["precision"] == "float32")
    line = next(x for x in notebook.table(run, notebook.CHAPTERS["tile_threads"]).splitlines() if x.startswith("| 4096 "))
    assert line == (f"| 4096 | {base['gflops'] / 1000:.1f} | {row['gflops'] / 1000:.1f} | {row['x_matmul']:.2f}x | "
                    f"{row['pct_peak']:.0f}% FP32 |")


def test_chapter_and_error_figures_are_written(run, tmp_path):
    chapter = notebook.CHAPTERS["matmul"]
    plots.chapter(run.rows, chapter.kernels, tmp_path / "c.png", True, notebook.ceilings(run, chapter), chapter.earlier)
    rows, _ = notebook.accuracy_rows(run)
    plots.errors(rows, tmp_path / "e.png", True)
    for name in ("c.png", "e.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_accuracy_comes_from_a_recorded_modes_run_else_the_sweep(run, tmp_path, monkeypatch):
    monkeypatch.setattr(precision_modes, "newest_recorded", lambda: None)
    rows, where = notebook.accuracy_rows(run)
    assert {r["inputs"] for r in rows} == {"normal"} and "No run on wide-range inputs" in where
    assert len(rows) == sum(r["error"] is not None for r in run.rows)
    table = notebook.accuracy_table(rows).splitlines()
    assert table[0] == "| 8192^3 | normal inputs |" and len(table) == 2 + len({(r["kernel"], r["precision"]) for r in rows})

    recorded = [{**r, "inputs": kind} for r in rows for kind in precision_modes.INPUTS]
    path = precision_modes.write_csv(recorded, tmp_path / "precision-modes-2026-11-26-test.csv")
    monkeypatch.setattr(precision_modes, "newest_recorded", lambda: path)
    rows, where = notebook.accuracy_rows(run)
    assert path.name in where and {r["inputs"] for r in rows} == set(precision_modes.INPUTS)
    assert notebook.accuracy_table(rows).splitlines()[0] == "| 8192^3 | normal inputs | wide-range inputs |"


def test_markdown_table():
    rows = [{"layer": "a", "share": 0.5}, {"layer": "b", "share": 1.0}]
    assert notebook.markdown_table(rows, {"share": "{:.0%}"}) == (
        "| layer | share |\n|---|---|\n| a | 50% |\n| b | 100% |")
