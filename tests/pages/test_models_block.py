"""The README's Models block: the recorded models-*.csv as a table, a row per
GPU, model, dtype and precision from the newest run that measured it, or one
line when none is recorded. CSVs are written here, in a temporary folder."""

import csv

import pytest

from mlx_sgemm.pages import models_table


def write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=models_table.COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow(r)


def row(phase, ours, mlx, model="Qwen3-0.6B", precision="float32", device="NVIDIA H100 80GB HBM3"):
    return dict(date="2026-11-28", device=device, mlx="0.32.4", commit="abc1234", model=model,
                dtype="float32", precision=precision, phase=phase, tokens=512, ours_s=ours, mlx_s=mlx,
                ratio=mlx / ours)


def test_no_run_is_one_line(tmp_path):
    assert models_table.block([tmp_path]) == models_table.NONE_YET and "\n" not in models_table.NONE_YET


def test_a_row_per_model_dtype_and_precision(tmp_path):
    write(tmp_path / "models-2026-11-28-h100.csv", [
        row("prefill", 0.010, 0.021), row("decode", 0.002, 0.0025), row("generate", 0.002, 0.0019),
        row("first_forward_new_process", 3.5, 0.5), row("first_forward_cached", 0.4, 0.3),
        row("first_decode_new_process", 1.25, 0.2), row("first_decode_cached", 0.05, 0.04),
        row("prefill", 0.010, 0.012, precision="tf32"),
    ])
    text = models_table.block([tmp_path])
    lines = text.splitlines()
    assert "models-2026-11-28-h100.csv" in text and "commit `abc1234`" in text
    (f32,) = [line for line in lines if "| float32 | float32 |" in line]
    assert ("| 2.10x | 1.25x | 0.95x | 3.50 s (500.0 ms) / 400.0 ms (300.0 ms) | 1.25 s (200.0 ms) / 50.0 ms (40.0 ms) |"
            in f32)
    (tf32,) = [line for line in lines if "| tf32 |" in line]
    assert "| 1.20x | - | - | - / - | - / - |" in tf32  # a run without decode or generate
    assert "MLX_ENABLE_TF32=0" in text


def test_each_row_from_the_newest_run_that_measured_it(tmp_path):
    """A run that measures one configuration again (after a change, or on
    another GPU) replaces that row alone; the others keep their older rows,
    and the note names each run a row came from."""
    write(tmp_path / "models-2026-11-20-h200.csv", [
        row("prefill", 1.0, 2.0, device="NVIDIA H200"), row("prefill", 1.0, 1.5, precision="tf32", device="NVIDIA H200"),
        row("prefill", 1.0, 3.0, model="gone", device="NVIDIA H200")])
    write(tmp_path / "models-2026-11-25-h200.csv", [
        row("prefill", 1.0, 0.5, precision="tf32", device="NVIDIA H200"),
        row("prefill", 1.0, 3.0, model="gone", device="NVIDIA H200")])
    write(tmp_path / "models-2026-11-28-h100.csv", [row("prefill", 1.0, 0.9, precision="tf32")])
    lines = models_table.block([tmp_path]).splitlines()
    rows = [line for line in lines if line.startswith("| NVIDIA")]
    assert len(rows) == 4, rows
    assert any("| NVIDIA H200 | `Qwen3-0.6B` | float32 | float32 | 2.00x |" in r for r in rows)  # kept
    assert any("| NVIDIA H200 | `Qwen3-0.6B` | float32 | tf32 | 0.50x |" in r for r in rows)  # replaced
    assert any("| NVIDIA H100 80GB HBM3 | `Qwen3-0.6B` | float32 | tf32 | 0.90x |" in r for r in rows)  # its GPU's
    note = lines[-1]
    assert all(f"models-2026-11-{day}.csv" in note for day in ("28-h100", "25-h200", "20-h200")), note


def test_a_file_of_other_columns_is_an_error(tmp_path):
    (tmp_path / "models-2026-11-28-h100.csv").write_text("model,ratio\nx,1\n")
    with pytest.raises(ValueError, match="columns"):
        models_table.block([tmp_path])
