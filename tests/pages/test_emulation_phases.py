"""Chapter 7's generated phase table (mlx_sgemm.pages.emulation_phases), from
made-up recorded runs of benchmarks/fp16_emulation.py."""

import csv

from mlx_sgemm.bench import results
from mlx_sgemm.pages import emulation_phases

COLUMNS = ["device", "kernel", "precision", "M", "N", "K", "us", "gflops", "x_cublas_sgemm", "error", "note"]


def row(kernel, size, us, x="", note=""):
    return dict(device="Fake H200", kernel=kernel, precision="float32", M=size, N=size, K=size, us=us, gflops=1.0,
                x_cublas_sgemm=x, error="", note=note)


def write(path, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def test_a_row_per_phase_a_column_per_size_from_the_newest_timing_run(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "recorded_directories", lambda: [tmp_path])
    assert emulation_phases.phase_table() == emulation_phases.NONE_YET
    write(tmp_path / "fp16-emulation-2026-11-26-fake.csv", [row("matmul", 4096, 9000.0, 1.0)])
    # An accuracy run, newer, has no phases: the timing run is read.
    with open(tmp_path / "fp16-emulation-accuracy-2026-11-28-fake.csv", "w") as f:
        f.write("device,kind,K\nFake H200,normal,4096\n")
    write(tmp_path / "fp16-emulation-2026-11-27-fake.csv", [
        row("mx.matmul", 4096, 2950.1, 1.0), row("matmul", 4096, 744.8, 3.961),
        row("phase: products (wgmma, 3 float16 products)", 4096, 591.9, 4.98, "718 float16 TFLOP/s; 1.05x"),
        row("mx.matmul", 8192, 22158.7, 1.0), row("matmul", 8192, 5289.4, 4.189)])
    table = emulation_phases.phase_table()
    assert "`benchmarks/results/fp16-emulation-2026-11-27-fake.csv`" in table and table.startswith("Fake H200")
    assert "| M = N = K | 4096 | 8192 |" in table
    assert "| cuBLAS SGEMM (`mx.matmul`, float32) | 2,950 us | 22,159 us |" in table
    assert "| `matmul` (the launches replayed under `mx.compile`) | 745 us (3.96x) | 5,289 us (4.19x) |" in table
    # A phase timed at one size only, its note beside its time.
    assert "| phase: products (wgmma, 3 float16 products) | 592 us: 718 float16 TFLOP/s; 1.05x | - |" in table
