"""The README's Models block: the newest models-*.csv as a table, or one line
when none is recorded. CSVs are written here, in a temporary folder."""

import csv

import pytest

from mlx_sgemm.pages import models_table


def write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=models_table.COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow(r)


def row(phase, ours, mlx, model="Qwen3-0.6B", precision="float32"):
    return dict(date="2026-11-28", device="NVIDIA H100 80GB HBM3", mlx="0.32.4", commit="abc1234", model=model,
                dtype="float32", precision=precision, phase=phase, tokens=512, ours_s=ours, mlx_s=mlx,
                ratio=mlx / ours)


def test_no_run_is_one_line(tmp_path):
    assert models_table.block([tmp_path]) == models_table.NONE_YET and "\n" not in models_table.NONE_YET


def test_the_newest_run_is_a_row_per_model_dtype_and_precision(tmp_path):
    write(tmp_path / "models-2026-11-20-h100.csv", [row("prefill", 1.0, 1.0, model="old")])
    write(tmp_path / "models-2026-11-28-h100.csv", [
        row("prefill", 0.010, 0.021), row("decode", 0.002, 0.0025),
        row("first_forward_new_process", 3.5, 0.5), row("first_forward_cached", 0.4, 0.3),
        row("first_decode_new_process", 1.25, 0.2), row("first_decode_cached", 0.05, 0.04),
        row("prefill", 0.010, 0.012, precision="tf32"),
    ])
    text = models_table.block([tmp_path])
    lines = text.splitlines()
    assert "old" not in text and "models-2026-11-28-h100.csv" in text and "commit `abc1234`" in text
    (f32,) = [line for line in lines if "| float32 | float32 |" in line]
    assert "| 2.10x | 1.25x | 3.50 s (500.0 ms) / 400.0 ms (300.0 ms) | 1.25 s (200.0 ms) / 50.0 ms (40.0 ms) |" in f32
    (tf32,) = [line for line in lines if "| tf32 |" in line]
    assert "| 1.20x | - | - / - | - / - |" in tf32
    assert "MLX_ENABLE_TF32=0" in text


def test_a_file_of_other_columns_is_an_error(tmp_path):
    (tmp_path / "models-2026-11-28-h100.csv").write_text("model,ratio\nx,1\n")
    with pytest.raises(ValueError, match="columns"):
        models_table.block([tmp_path])
